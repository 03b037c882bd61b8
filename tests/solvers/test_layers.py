"""Discrete Post-LN layers (solvers/steppers/layers.py, MATH.md §11): the per-layer growth of a mode near the uniform
state is ``g_l = 1 + alpha lambda_l / (1 + alpha c_0)`` (theory.layer_growth_factors), measured on quadrature nodes to
EPS = 1e-7 relative (the perturbation's own O(EPS) nonlinear share is what the linear theory leaves: measured 1e-10 to
1.4e-8); and L layers of step T / L approach the flow at T at order 1 (Euler to first order in alpha)."""

import functools
import math

import numpy as np
import pytest
from scipy.special import iv

from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.settings import Attention
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.layer_checks import (circle_mode_growth, fitted_layer_order, layer_errors, richardson_limit,
                                                 sphere_degree_growth)
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.solvers.steppers.layers import run_layers
from meanfield.theory import layer_growth_factors, uniform_radial_output

EPS = 1e-7        # the perturbation
#: Relative tolerance on g_l: the linear theory neglects the perturbation's own share, O(EPS) relative (measured
#: 1e-10 to 1.4e-8); the issue asks for 1e-6, the theory for EPS.
TOLERANCE = EPS


@pytest.mark.parametrize("alpha", [0.1, 1.0])
@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_a_layer_multiplies_a_circle_mode_by_the_linear_factor(attention, alpha):
    for beta in (3.0, 9.0):
        for k in (2, 4):
            factor = layer_growth_factors(Model(attention, beta, 0.0, 2), [k], alpha)[0]
            assert np.max(np.abs(circle_mode_growth(attention, beta, k, alpha, eps=EPS) / factor - 1)) < TOLERANCE
            # the layer's own normalisation matters: the flow's factor 1 + alpha lambda_k is far off
            flow_step = 1 + alpha * (factor - 1) * (1 + alpha * uniform_radial_output(Model(attention, beta, 0.0, 2)))
            assert abs(flow_step / factor - 1) > 100 * TOLERANCE


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_a_layer_multiplies_a_sphere_degree_by_the_linear_factor(attention):
    for beta, degree, alpha in ((3.0, 2, 0.1), (9.0, 4, 1.0), (3.0, 4, 1.0)):
        factor = layer_growth_factors(Model(attention, beta, 0.0, 3), [degree], alpha)[0]
        assert np.max(np.abs(sphere_degree_growth(attention, beta, degree, alpha, eps=EPS) / factor - 1)) < TOLERANCE


def test_the_radial_part_at_the_uniform_state():
    """c_0: SA I_1 / I_0 on the circle, I_{3/2} / I_{1/2} = coth(beta) - 1 / beta on S^2; USA I_1(beta) (the package's
    USA scale, the plain kernel sum over a probability measure); 0 at beta = 0."""
    beta = 2.5
    assert uniform_radial_output(Model("sa", beta, 0.0, 2)) == pytest.approx(iv(1, beta) / iv(0, beta), rel=1e-14)
    assert uniform_radial_output(Model("sa", beta, 0.0, 3)) == pytest.approx(1 / math.tanh(beta) - 1 / beta, rel=1e-14)
    assert uniform_radial_output(Model("usa", beta, 0.0, 2)) == pytest.approx(iv(1, beta), rel=1e-14)
    assert uniform_radial_output(Model("sa", 0.0, 0.0, 2)) == 0.0


def test_layers_refuse_noise_and_a_step_that_is_not_positive():
    with pytest.raises(InputError, match="nu must be 0 for layers"):
        layer_growth_factors(Model("sa", 3.0, 0.1, 2), [2], 0.5)
    for alpha in (0.0, -1.0, math.nan):
        with pytest.raises(InputError, match="step must be > 0"):
            layer_growth_factors(Model("sa", 3.0, 0.0, 2), [2], alpha)


def _tokens(n: int = 48, dim: int = 2, seed: int = 7) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1)[:, None]


FINAL = 2.0   # the flow's end time T of the layers-against-flow tests


@functools.lru_cache(maxsize=None)
def _flow_case(dim: int, attention: str, beta: float):
    """64 seeded tokens, their flow at T = FINAL (dopri5 at rtol 1e-13) and the scheme the layers use: computed once
    for both tests that compare layers with the flow."""
    x = _tokens(64, dim, 5)
    flow = simulate(dim=dim, n=64, attention=attention, beta=beta, positions=x, t_final=FINAL, save_every=FINAL,
                    rtol=1e-13, collapse_tol=0).positions.values[-1]
    return x, flow, ParticleScheme(Model(attention, beta, 0.0, dim), 64)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("attention, beta", [("sa", 4.0), ("usa", 1.0)])
def test_layers_approach_the_flow_at_order_one(dim, attention, beta):
    """L layers of step T / L against the flow at T = 2 (dopri5 at rtol 1e-13), L = 8 ... 256: the order p of the
    tokens' root mean square error E = C L^-p (1 + c / L), fitted as log E = log C - p log L + c / L, is 1 within 0.05
    (measured 0.992 to 0.999; a plain log-log fit, blind to the c / L term, reads 0.92 to 0.94 at these L)."""
    x, flow, scheme = _flow_case(dim, attention, beta)
    layers = [8, 16, 32, 64, 128, 256]
    assert abs(fitted_layer_order(layers, layer_errors(scheme, x, flow, FINAL, layers)) - 1) < 0.05
    frames = run_layers(scheme, x, FINAL / 8, 8)
    assert np.max(np.abs(np.linalg.norm(frames, axis=-1) - 1)) < 8 * np.finfo(float).eps   # tokens stay unit vectors


# ------------------------------------------------------------------------------------------- layered runs


def test_a_layered_run_is_the_layer_map_with_a_layer_coordinate():
    x = _tokens()
    run = simulate(dim=2, n=48, beta=4.0, positions=x, stepper="layers", dt_max=0.25, t_final=2.0, save_every=0.25)
    frames = run_layers(ParticleScheme(Model("sa", 4.0, 0.0, 2), 48), x, 0.25, 8)
    assert np.array_equal(run["positions"].values, frames)
    assert run["layer"].values.tolist() == list(range(9)) and run.attrs["steps"] == 8


def test_the_command_line_layers_restart_and_rerun_bit_for_bit(tmp_path, capsys):
    import shlex

    from meanfield.app.storage import load_run
    from meanfield.cli import main

    common = ["--dim", "3", "--n", "64", "--beta", "5", "--seed", "2", "--no-progress"]
    whole, first = tmp_path / "whole.nc", tmp_path / "first.nc"
    assert main(["particles", *common, "--layers", "6", "--step", "0.4", "--out", str(whole)]) == 0
    assert main(["particles", *common, "--layers", "3", "--step", "0.4", "--out", str(first)]) == 0
    straight = load_run(whole)
    assert straight["layer"].values.tolist() == list(range(7))
    # a restart at a layer boundary, through the API: the same bits as the straight run
    continued = simulate(dim=3, n=64, init=str(first), stepper="layers", dt_max=0.4, t_final=2.4, save_every=0.4)
    assert continued.attrs["restart"] == "exact"
    assert np.array_equal(continued["positions"].values, straight["positions"].values[3:])
    # the recorded command repeats the run
    again = tmp_path / "again.nc"
    words = shlex.split(straight.attrs["command"])[1:] + ["--out", str(again), "--no-progress"]
    assert "--dt-max" in words and main(words) == 0
    assert np.array_equal(load_run(again)["positions"].values, straight["positions"].values)
    capsys.readouterr()
    for extra, words in ((["--layers", "3"], "--layers and --step go together"),
                         (["--layers", "3", "--step", "0.5", "--t-final", "2"], "--layers sets --t-final"),
                         (["--layers", "3", "--step", "0.5", "--nu", "0.1"], "--nu must be 0 for layers"),
                         (["--layers", "4", "--step", "0.5", "--save-every", "0.25"], "a whole number of layers"),
                         (["--layers", "4", "--step", "0.5", "--normalization", "mix", "--mix-switch", "0.3"],
                          "--mix-switch must be a whole number of layers")):
        assert main(["particles", *common, *extra, "--out", str(tmp_path / "refused.nc")]) == 2
        assert words in capsys.readouterr().err


def test_the_figure_of_a_layered_run_draws_the_layers_theory():
    """Panel (c) of a layered run: |rho_k(0)| g_k^l at layer l (not the flow's e^{lambda_k t}); the title says so."""
    import meanfield
    from meanfield.plotting.run_data import observed_amplitudes, theory_curves

    run = simulate(dim=2, n=256, beta=9.0, seed=1, stepper="layers", dt_max=0.5, t_final=3.0, save_every=0.5)
    factors = layer_growth_factors(Model("sa", 9.0, 0.0, 2), [2, 4], 0.5)
    expected = observed_amplitudes(run, [2, 4])[0] * factors ** run["layer"].values[:, None]
    np.testing.assert_allclose(theory_curves(run, [2, 4]), expected, rtol=1e-12)
    assert "6 Post-LN layers of step 0.5" in meanfield.plot_run(run)._suptitle.get_text()


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("attention, beta", [("sa", 4.0), ("usa", 1.0)])
def test_the_layers_limit_is_the_flow(dim, attention, beta):
    """L -> infinity: the layers' error expansion C_1 / L + C_2 / L^2 + ... removed twice by Richardson extrapolation
    from L = 256, 512, 1024 (T = 2) leaves the flow's tokens to 1e-6 (measured 1.0e-7 to 2.2e-7; the layers at
    L = 1024 alone are 1e-3 away, once extrapolated 1e-5)."""
    x, flow, scheme = _flow_case(dim, attention, beta)
    limit, once_fine = richardson_limit(scheme, x, FINAL, 256)
    assert np.max(np.abs(limit - flow)) < 1e-6 < np.max(np.abs(once_fine - flow))


def _leaders_steps(x0: np.ndarray, a: np.ndarray, v: np.ndarray, dt: float, steps: int) -> np.ndarray:
    """The stepping of leaders.py (borjanG/2023-transformers), rewritten with seeded inputs and no plotting: token by
    token, the weight of ``x_j`` for ``x_i`` is ``1 / sum_k exp(<A x_i, x_k - x_j>)`` and ``x_i`` takes the Euler
    step ``dt sum_j weight_ij V x_j``; scalar loops, as the script sums."""
    n = x0.shape[0]
    x = np.zeros((steps + 1,) + x0.shape)
    x[0] = x0
    for step in range(steps):
        tokens = x[step]
        for i in range(n):
            query = a @ tokens[i]
            weights = [1.0 / sum(math.exp(query @ (tokens[k] - tokens[j])) for k in range(n)) for j in range(n)]
            x[step + 1, i] = tokens[i] + dt * sum(weights[j] * (v @ tokens[j]) for j in range(n))
    return x


def test_residual_layers_in_r_d_reproduce_the_reference_euler_loop():
    """leaders.py (V and A symmetric positive semidefinite, 20 tokens uniform in [-1, 1]^2, dt = 0.1) against the
    package's residual layers of the R^d scheme with Q = A, K = I, V, beta = 1: the same tokens to 1e-12 relative
    (measured 2e-16), over 30 steps (the script's 100 overflow its exp as the tokens grow like e^{t lambda_max(V)})."""
    rng = np.random.default_rng(3)
    n, d, dt, steps = 20, 2, 0.1, 30
    v = 2 * rng.random((d, d)) - 1
    v = v @ v.T
    a = 2 * rng.random((d, d)) - 1
    a = a @ a.T
    x0 = rng.uniform(-1, 1, (n, d))
    reference = _leaders_steps(x0, a, v, dt, steps)
    scheme = ParticleScheme(Model("sa", 1.0, 0.0, d), n, Attention("sa", Q=a, K=np.eye(d), V=v), sphere=False)
    layers = run_layers(scheme, x0, dt, steps)
    assert np.max(np.abs(layers - reference)) <= 1e-12 * np.max(np.abs(reference))
    assert np.max(np.abs(reference[-1])) > 5 * np.max(np.abs(x0))      # the tokens moved: not a trivial agreement
