"""Theory of the normalisation schemes (MATH.md §6): equiangular ODE, drho/dt(0), late times, linear growth."""

import json
import math

import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp
from scipy.special import iv

from meanfield import InputError, Model
from meanfield.cli import main
from meanfield.normalization import SCHEMES, Normalization
from meanfield.normalization_theory import (attention_time, effective_growth_rate, equiangular_rhs,
                                            equiangular_solution, initial_rate, late_time_decay,
                                            log_mode_amplitude_factor, mode_amplitude_factor, uniform_divisor,
                                            uniform_output)
from meanfield.theory import growth_rates
from meanfield.solvers.schemes.interaction import DirectInteraction

N, BETA, R0, ALPHA, TAU = 6, 3.0, 1.5, 0.7, 0.8


def scheme(name):
    return Normalization(name, r0=R0, alpha=ALPHA, mix_switch=TAU)


def closed_form(name, attention, n=N, beta=BETA):
    """MATH.md §6's list (SA) and its USA versions (Z = n; Peri and nGPT do not depend on Z)."""
    e, e2 = math.exp(beta), math.exp(2 * beta)
    post = 2 / (e + n - 1) if attention == "sa" else 2 / n
    return {"post": post, "mix": post, "lnscale": post, "pre": post / R0,
            "peri": 2 / (R0 * math.sqrt(e2 + n - 1)), "ngpt": 2 * ALPHA / math.sqrt(e2 + n - 1)}[name]


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("name", SCHEMES)
def test_initial_rate_is_the_closed_form_the_rhs_and_the_slope_of_the_solution(name, attention):
    rate = initial_rate(scheme(name), N, BETA, attention)
    assert rate == pytest.approx(closed_form(name, attention), rel=1e-14)
    assert abs(equiangular_rhs(scheme(name), N, BETA, 0.0, 0.0, R0, attention)[0] - rate) < 1e-14
    h = 1e-3   # fourth-order one-sided difference of the integrated rho
    rho = equiangular_solution(scheme(name), N, BETA, h * np.arange(5), attention).rho
    slope = (-25 * rho[0] + 48 * rho[1] - 36 * rho[2] + 16 * rho[3] - 3 * rho[4]) / (12 * h)
    assert abs(slope - rate) < 1e-8


def test_initial_rate_does_not_overflow_at_large_beta():
    assert initial_rate("post", 4, 800.0) == pytest.approx(2 * math.exp(-800.0), rel=1e-13)
    assert initial_rate(Normalization("ngpt", alpha=2.0), 4, 800.0) == pytest.approx(4 * math.exp(-800.0), rel=1e-13)
    assert initial_rate("lnscale", 4, 5.0, "usa") == 0.5


def particle_rhs(norm, n, d, beta, attention):
    """Tokens ``r_j theta_j`` moved by the table of meanfield.normalization (MATH.md §6), Q = K = V = I."""
    def rhs(t, y):
        theta, radius = y[:n * d].reshape(n, d), y[n * d:]
        logits = beta * theta @ theta.T
        weights = np.exp(logits - logits.max(axis=1, keepdims=True)) if attention == "sa" else np.exp(logits) / n
        if attention == "sa":
            weights /= weights.sum(axis=1, keepdims=True)
        out = weights @ theta
        radial = np.sum(out * theta, axis=1)
        norm_a = np.linalg.norm(out, axis=1)
        s = norm.divisor(t, radius=radius, norm=norm_a)
        dtheta = (out - radial[:, None] * theta) / np.reshape(s, (-1, 1) if np.ndim(s) else ())
        return np.concatenate([dtheta.ravel(), norm.radial_rate(t, radial, norm_a) * np.ones(n)])
    return rhs


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_equiangular_ode_follows_orthonormal_particles(attention):
    n, d, t_final = N, 8, 5.0
    start = np.concatenate([np.eye(n, d).ravel(), np.full(n, R0)])
    for name in SCHEMES:
        norm = scheme(name)
        pieces = [(Normalization("post"), 0, TAU), (Normalization("pre"), TAU, t_final)] if name == "mix" \
            else [(norm, 0, t_final)]
        y = start
        for piece, a, b in pieces:
            y = solve_ivp(particle_rhs(piece, n, d, BETA, attention), (a, b), y, method="DOP853",
                          rtol=1e-12, atol=1e-14).y[:, -1]
        theta = y[:n * d].reshape(n, d)
        theta /= np.linalg.norm(theta, axis=1, keepdims=True)
        gram = (theta @ theta.T)[~np.eye(n, dtype=bool)]
        solution = equiangular_solution(norm, n, BETA, [0.0, t_final], attention)
        assert np.ptp(gram) < 1e-9
        assert abs(gram.mean() - solution.rho[-1]) < 1e-9, name
        assert np.allclose(y[n * d:], solution.radius[-1], rtol=1e-9, atol=0), name
        assert solution.rho[0] == 0 and solution.radius[0] == R0


def test_equiangular_ode_follows_the_packages_usa_particles():
    """meanfield.solvers.runs.particle_run (USA, weights 1/n) from an orthonormal start, every scheme, to 1e-10."""
    from meanfield.solvers.runs.particle_run import simulate
    for name in SCHEMES:
        run = simulate(dim=8, n=N, beta=BETA, attention="usa", init="orthogonal", t_final=1.0, save_every=0.25,
                       rtol=1e-12, **Normalization(name, r0=R0, alpha=ALPHA, mix_switch=TAU).options())
        x = run.positions.values
        gram = np.einsum("tid,tjd->tij", x, x)[:, ~np.eye(N, dtype=bool)]
        solution = equiangular_solution(scheme(name), N, BETA, run.time.values, "usa")
        assert np.max(np.abs(gram.mean(axis=1) - solution.rho)) < 1e-10, name
        if "radius" in run:
            assert np.max(np.abs(run.radius.values[:, 0] - solution.radius)) < 1e-10, name


def test_usa_is_the_packages_usa():
    """The USA output used above is meanfield.solvers.schemes.interaction's USA with weights 1/n (MATH.md §1)."""
    rng = np.random.default_rng(3)
    theta = rng.standard_normal((N, 8))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    package = DirectInteraction(BETA, "usa", weights=np.full(N, 1 / N)).velocity(theta[None])[0]
    ours = np.exp(BETA * theta @ theta.T) @ theta / N
    assert np.allclose(package, ours, rtol=1e-13)


def test_equiangular_solution_takes_any_nondecreasing_times():
    times = [0.0, 0.5, 0.5, TAU, 2.0, 2.0]
    solution = equiangular_solution(scheme("mix"), N, BETA, times)
    once = equiangular_solution(scheme("mix"), N, BETA, [2.0])
    assert solution.rho[1] == solution.rho[2] and solution.rho[4] == solution.rho[5]
    assert abs(solution.rho[-1] - once.rho[0]) < 1e-12 and solution.radius[3] == R0 < solution.radius[-1]
    with pytest.raises(InputError, match="t must be"):
        equiangular_solution("post", N, BETA, [1.0, 0.5])
    with pytest.raises(InputError, match="n must be an integer >= 2"):
        equiangular_solution("post", 1, BETA, [1.0])


#: (scheme, attention, fitting window): late times, where the law is asymptotic.
LATE = [("post", "sa", np.linspace(10, 30, 20)), ("ngpt", "sa", np.linspace(10, 30, 20)),
        ("pre", "sa", np.geomspace(1e3, 1e4, 20)), ("mix", "sa", np.geomspace(1e3, 1e4, 20)),
        ("peri", "sa", np.geomspace(1e3, 1e4, 20)), ("lnscale", "sa", np.linspace(100, 400, 20)),
        ("post", "usa", np.linspace(2, 4, 20)), ("lnscale", "usa", np.linspace(2, 4, 20)),
        ("pre", "usa", np.geomspace(1e3, 1e4, 20))]


@pytest.mark.parametrize("name, attention, window", LATE, ids=[f"{a}-{b}" for a, b, _ in LATE])
def test_late_time_law_matches_the_ode(name, attention, window):
    law = late_time_decay(scheme(name), BETA, attention)
    expected = {"post": 2.0, "ngpt": 2 * ALPHA, "lnscale": 4.0}.get(name, 2.0)
    if attention == "usa" and name in ("post", "lnscale"):
        expected *= math.exp(BETA)
    assert law.kind == {"post": "exponential", "ngpt": "exponential", "lnscale": "stretched"}.get(name, "power")
    assert law.rate == pytest.approx(expected, rel=1e-15)
    solution = equiangular_solution(scheme(name), N, BETA, window, attention)
    assert law.fit(window, solution.one_minus_rho) == pytest.approx(law.rate, rel=0.01)


MODEL = Model("sa", 2.0, 0.0, 2)


def test_uniform_output_is_the_funk_hecke_ratio():
    assert uniform_output(Model("sa", 2.0, 0, 2)) == pytest.approx(iv(1, 2.0) / iv(0, 2.0), rel=1e-14)
    assert uniform_output(Model("sa", 2.0, 0, 6)) == pytest.approx(iv(3, 2.0) / iv(2, 2.0), rel=1e-14)
    # USA on S^2: (1 / 4 pi) int exp(beta <theta, y>) <theta, y> dsigma(y) = (1/2) int_{-1}^{1} e^{beta x} x dx
    direct = 0.5 * quad(lambda x: math.exp(2.0 * x) * x, -1, 1, epsabs=1e-15)[0]
    assert uniform_output(Model("usa", 2.0, 0, 3)) == pytest.approx(direct, rel=1e-13)
    assert uniform_output(Model("sa", 0.0, 0, 3)) == 0.0


@pytest.mark.parametrize("model", [MODEL, Model("usa", 2.0, 0.03, 3)], ids=["sa-circle", "usa-sphere-noise"])
@pytest.mark.parametrize("name", SCHEMES)
def test_amplitude_factor_integrates_the_effective_rate(name, model):
    degrees, t = np.arange(1, 5), 3.0
    closed = log_mode_amplitude_factor(scheme(name), model, degrees, t)
    for degree, value in zip(degrees, closed):
        pieces = [0, TAU, t] if name == "mix" else [0, t]
        integral = sum(quad(lambda s: float(effective_growth_rate(scheme(name), model, degree, s)), a, b,
                            epsabs=1e-13, epsrel=1e-13)[0] for a, b in zip(pieces[:-1], pieces[1:]))
        assert value == pytest.approx(integral, rel=1e-10)
    assert np.allclose(effective_growth_rate(scheme(name), model, degrees, 0.0),
                       growth_rates(model, degrees) if name in ("post", "mix", "lnscale") else
                       (growth_rates(model, degrees) + model.nu * degrees * (degrees + model.dim - 2))
                       / uniform_divisor(scheme(name), model, 0.0) - model.nu * degrees * (degrees + model.dim - 2),
                       rtol=1e-14)


def test_amplitude_factors_are_the_closed_forms_of_math_md():
    lam, a, t = growth_rates(MODEL, [2])[0], uniform_output(MODEL), 3.0
    expected = {"post": math.exp(lam * t), "pre": (1 + a * t / R0) ** (lam / a), "peri": (1 + t / R0) ** (lam / a),
                "ngpt": math.exp(lam * ALPHA * t / a), "lnscale": math.exp(2 * lam * (math.sqrt(t + 1) - 1)),
                "mix": math.exp(lam * TAU) * (1 + a * (t - TAU) / R0) ** (lam / a)}
    for name, value in expected.items():
        assert mode_amplitude_factor(scheme(name), MODEL, 2, t) == pytest.approx(value, rel=1e-13), name
    # Pre-LN with a = 0 (beta = 0): the radius stays r0 and the growth is exp(lambda t / r0)
    flat = Model("sa", 0.0, 0.0, 2)
    assert attention_time(scheme("pre"), flat, 2.0) == pytest.approx(2.0 / R0, rel=1e-15)
    with pytest.raises(InputError, match="beta must be > 0 for normalization ngpt"):
        mode_amplitude_factor(scheme("ngpt"), flat, 1, 1.0)


def lagrangian_rhs(norm, nodes, beta, attention):
    """Equispaced nodes on the circle carrying a radius (exact quadrature of the band-limited kernel)."""
    def rhs(t, y):
        angle, radius = y[:nodes], y[nodes:]
        gap = angle[None, :] - angle[:, None]
        kernel = np.exp(beta * np.cos(gap)) / nodes
        tangential, radial = (kernel * np.sin(gap)).sum(1), (kernel * np.cos(gap)).sum(1)
        if attention == "sa":
            total = kernel.sum(1)
            tangential, radial = tangential / total, radial / total
        norm_a = np.hypot(tangential, radial)
        return np.concatenate([tangential / norm.divisor(t, radius=radius, norm=norm_a),
                               norm.radial_rate(t, radial, norm_a) * np.ones(nodes)])
    return rhs


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_linear_growth_matches_lagrangian_nodes_on_the_circle(attention):
    """A mode-2 displacement of 64 equispaced nodes grows by mode_amplitude_factor under every scheme."""
    nodes, k, eps, t_final = 64, 2, 1e-8, 3.0
    model = Model(attention, 2.0, 0.0, 2)
    base = 2 * np.pi * np.arange(nodes) / nodes
    start = np.concatenate([base + eps * np.sin(k * base), np.full(nodes, R0)])
    amplitude = lambda angle: abs(np.exp(-1j * k * angle).mean())  # noqa: E731
    for name in SCHEMES:
        pieces = [(Normalization("post"), 0, TAU), (Normalization("pre"), TAU, t_final)] if name == "mix" \
            else [(scheme(name), 0, t_final)]
        y = start
        for piece, a, b in pieces:
            y = solve_ivp(lagrangian_rhs(piece, nodes, model.beta, attention), (a, b), y, method="DOP853",
                          rtol=1e-11, atol=1e-16).y[:, -1]
        measured = amplitude(y[:nodes]) / amplitude(start[:nodes])
        assert measured == pytest.approx(mode_amplitude_factor(scheme(name), model, k, t_final), rel=2e-6), name


def test_cli_prints_the_scheme(capsys):
    args = ["theory", "--dim", "8", "--beta", "3", "--normalization", "pre", "--r0", "1.5", "--n", "6", "--t", "5"]
    assert main(args + ["--modes", "3"]) == 0
    out = capsys.readouterr().out
    assert "normalization: pre" in out and "drho/dt(0) = 0.0531514767819" in out and "t^-2" in out
    assert main(args + ["--modes", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    model = Model("sa", 3.0, 0.0, 8)
    assert result["normalization"] == "pre" and result["r0"] == 1.5 and result["n"] == 6
    assert result["initial_rate"] == pytest.approx(2 / (1.5 * (math.exp(3) + 5)), rel=1e-14)
    assert result["late_time_kind"] == "power" and result["late_time_rate"] == 2.0
    assert np.allclose(result["amplitude_factors"],
                       mode_amplitude_factor(Normalization("pre", r0=1.5), model, np.arange(1, 4), 5.0), rtol=1e-15)
    assert np.allclose(result["effective_growth_rates"], growth_rates(model, np.arange(1, 4)) / 1.5, rtol=1e-14)
    assert main(["theory", "--beta", "3", "--normalization", "ngpt", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 2 and result["t"] == 10.0 and result["alpha"] == 1.0
