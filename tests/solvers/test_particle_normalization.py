"""Particles under the normalisation schemes of MATH.md §6 (meanfield.solvers.schemes.particles, meanfield.solvers.runs.particle_run)."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.normalization import SCHEMES, Normalization
from meanfield.settings import Attention
from meanfield.solvers.schemes.interaction import CircleFourierInteraction, DirectInteraction
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.schemes.particles import ParticleScheme

N, D, BETA, R0, T = 6, 8, 3.0, 1.5, 5.0
TAU = 1.0


def equiangular_rhs(scheme: Normalization, n: int, beta: float):
    """The orthonormal-start ODE of MATH.md §6 for ``(rho, r)`` (reference, independent of the solver)."""
    def rhs(t, y):
        rho, r = y
        z = math.exp(beta) + (n - 1) * math.exp(beta * rho)
        b = math.exp(beta * rho) / z
        radial = (math.exp(beta) + (n - 1) * rho * math.exp(beta * rho)) / z
        norm = math.sqrt(math.exp(2 * beta) + 2 * (n - 1) * rho * math.exp(beta * (1 + rho))
                         + (n - 1) * (1 + (n - 2) * rho) * math.exp(2 * beta * rho)) / z
        name = scheme.acts_as(t)
        s = {"post": 1.0, "pre": r, "peri": r * norm, "ngpt": norm / scheme.alpha,
             "lnscale": math.sqrt(t + 1)}[name]
        dr = {"pre": radial, "peri": radial / norm}.get(name, 0.0)
        return [2 / s * b * (1 - rho) * (1 + (n - 1) * rho), dr]
    return rhs


def reference(scheme: Normalization, times):
    """``(rho(t), r(t))`` at ``times``; Mix-LN integrated in two pieces (the jump at ``tau``)."""
    rhs = equiangular_rhs(scheme, N, BETA)
    pieces = [(0.0, TAU), (TAU, T)] if scheme.name == "mix" else [(0.0, T)]
    y, out = [0.0, scheme.r0], []
    for start, end in pieces:
        inside = [t for t in times if start <= t <= end]
        sol = solve_ivp(rhs, (start, end), y, method="DOP853", rtol=1e-13, atol=1e-14, t_eval=inside)
        out += [(t, *sol.y[:, i]) for i, t in enumerate(sol.t) if not out or t > out[-1][0]]
        y = sol.y[:, -1]
    return np.array(out)


@pytest.mark.parametrize("name", SCHEMES)
def test_orthonormal_start_follows_the_equiangular_ode(name):
    options = {k: v for k, v in Normalization(name, r0=R0, mix_switch=TAU).options().items() if v is not None}
    run = simulate(dim=D, n=N, beta=BETA, init="orthogonal", t_final=T, save_every=1.0, rtol=1e-12, **options)
    assert run.attrs["stop_reason"] == "completed" and run.attrs["normalization"] == name
    x = run.positions.values
    gram = np.einsum("tid,tjd->tij", x, x)
    off = gram[:, ~np.eye(N, dtype=bool)]
    assert np.ptp(off, axis=1).max() < 1e-13            # the start stays equiangular (a symmetry: rounding only, 3e-15)
    expected = reference(Normalization(name, r0=R0, mix_switch=TAU), run.time.values)
    np.testing.assert_allclose(expected[:, 0], run.time.values, atol=1e-14)
    # run rtol 1e-12, reference 1e-13: global errors of tens of steps' 1e-12; measured <= 1e-12 for every scheme
    assert np.max(np.abs(off.mean(axis=1) - expected[:, 1])) < 1e-10
    assert ("radius" in run) == (name in ("pre", "mix", "peri"))
    if "radius" in run:
        radius = run.radius.values
        assert np.ptp(radius, axis=1).max() < 1e-12
        assert np.max(np.abs(radius[:, 0] - expected[:, 2])) < 1e-10   # measured <= 4e-12
        assert radius[-1, 0] > R0 + 1                   # the radius grows (Pre-LN: linearly)
    assert (expected[-1, 1] > 0.1) and (expected[-1, 1] < 1 - 1e-3)   # the test sees the dynamics


def orthonormal_state(carries: bool):
    theta = np.eye(D)[:N][None]
    return np.concatenate((theta, np.full((1, N, 1), R0)), -1) if carries else theta


@pytest.mark.parametrize("name, closed", [
    ("post", 2 / (math.exp(BETA) + N - 1)),
    ("pre", 2 / (R0 * (math.exp(BETA) + N - 1))),
    ("mix", 2 / (math.exp(BETA) + N - 1)),
    ("peri", 2 / (R0 * math.sqrt(math.exp(2 * BETA) + N - 1))),
    ("ngpt", 2 * 0.7 / math.sqrt(math.exp(2 * BETA) + N - 1)),
    ("lnscale", 2 / (math.exp(BETA) + N - 1)),
])
def test_initial_rate_matches_the_closed_forms(name, closed):
    scheme_choice = Normalization(name, r0=R0, alpha=0.7)
    scheme = ParticleScheme(Model(attention="sa", beta=BETA, dim=D), N, normalization=scheme_choice)
    x = orthonormal_state(scheme_choice.carries_radius)
    v = scheme.rhs(x, 0.0)[0, :, :D]
    theta = x[0, :, :D]
    rates = v @ theta.T + theta @ v.T                   # d<theta_i, theta_j>/dt
    off = rates[~np.eye(N, dtype=bool)]
    assert np.max(np.abs(off - closed)) < 1e-12


def test_post_ln_is_unchanged_bit_for_bit():
    # numbers from this code (frames from dopri5's dense output; a few ulps allowed: the BLAS of
    # another numpy release rounds the same sums differently), and within the frames' tolerance of those the code
    # before the normalisation schemes gave (commit 2ce9737, whose steps landed on every frame; rtol 1e-8: they
    # differ by 6.8e-11 and 1.6e-10); any change of the dynamics itself moves them by far more
    a = simulate(dim=2, n=40, beta=4, init="uniform", seed=3, t_final=2, save_every=1)
    b = simulate(dim=3, n=30, beta=2, attention="usa", init="uniform", seed=5, t_final=2, save_every=1,
                 qkv="random", normalization="post")
    ulps = 1e-15
    assert np.allclose(a.positions.values[-1, :2], [[0.9561568406712396, 0.29285507685132245],
                                                    [-0.9231814832924544, -0.3843643439575836]], rtol=0, atol=ulps)
    assert np.allclose(b.positions.values[-1, :2], [
        [0.10663045999788652, 0.9085074527320417, -0.4040348417289977],
        [0.3595197313523782, 0.6045078029181772, -0.7108557371079957]], rtol=0, atol=ulps)
    assert np.allclose(a.positions.values[-1, :2], [[0.9561568406821441, 0.2928550768157194],
                                                    [-0.9231814832640448, -0.38436434402581904]], rtol=0, atol=1e-9)
    assert np.allclose(b.positions.values[-1, :2], [
        [0.10663046002929878, 0.9085074527191955, -0.4040348417495932],
        [0.35951973151191635, 0.604507802956447, -0.7108557369947639]], rtol=0, atol=1e-9)
    assert (a.attrs["steps"], b.attrs["steps"]) == (16, 34)
    assert "--normalization" not in a.attrs["command"] and "radius" not in a


def test_mix_ln_is_post_then_pre():
    common = dict(dim=3, n=12, beta=2.0, seed=4, rtol=1e-11, save_every=0.5)
    mix = simulate(init="uniform", t_final=2.5, normalization="mix", mix_switch=1.2, r0=R0, **common)
    post = simulate(init="uniform", t_final=1.2, normalization="post", collapse_tol=0, **common)
    assert 1.2 in mix.time.values                       # a frame (and a step) lands on tau
    before = mix.sel(time=post.time.values)
    np.testing.assert_allclose(before.positions.values, post.positions.values, rtol=0, atol=3e-12)
    assert np.all(before.radius.values == R0)           # no radial motion under Post-LN
    pre = simulate(init="uniform", positions=post.positions.values[-1], t_final=1.3, normalization="pre",
                   r0=R0, **common)
    # the first step after tau moves as Pre-LN from its first stage (scheme.after_switch); Mix-LN lands a step on
    # tau, the Post-LN run's frame there is dopri5's dense output: the two agree to the runs' rtol = 1e-11
    np.testing.assert_allclose(mix.positions.values[-1], pre.positions.values[-1], rtol=0, atol=3e-12)
    np.testing.assert_allclose(mix.radius.values[-1], pre.radius.values[-1], rtol=common["rtol"], atol=0)
    assert np.all(mix.radius.values[-1] > R0 + 0.5)


def test_pre_ln_restart_is_bit_for_bit():
    common = dict(dim=3, n=16, beta=2.0, seed=2, save_every=0.5, normalization="pre", r0=0.8)
    whole = simulate(init="uniform", t_final=4.0, **common)
    first = simulate(init="uniform", t_final=2.0, **common)
    second = simulate(init=first, t_final=4.0, **common)
    assert second.attrs["restart"] == "exact"
    assert np.array_equal(whole.radius.values[-1], second.radius.values[-1])
    assert np.array_equal(whole.positions.values[-1], second.positions.values[-1])
    assert np.array_equal(whole.time.values[4:], second.time.values)


@pytest.mark.parametrize("name", ["pre", "peri", "ngpt", "lnscale"])
@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_circle_fast_path_agrees_with_the_direct_sums(name, attention):
    rng = np.random.default_rng(7)
    angle = rng.uniform(0, 2 * math.pi, 30)
    weights = rng.uniform(0.5, 1.0, 30)
    scheme_choice = Normalization(name, r0=1.3)
    x = np.stack((np.cos(angle), np.sin(angle)), -1)[None]
    if scheme_choice.carries_radius:
        x = np.concatenate((x, rng.uniform(0.5, 2.0, (1, 30, 1))), -1)
    model = Model(attention=attention, beta=5.0, dim=2)
    fast = ParticleScheme(model, 30, weights=weights, normalization=scheme_choice)
    direct = ParticleScheme(model, 30, Attention(model.attention, interaction="direct"), weights=weights,
                            normalization=scheme_choice)
    assert isinstance(fast.interaction, CircleFourierInteraction)
    assert isinstance(direct.interaction, DirectInteraction)
    v_fast, v_direct = fast.rhs(x, 0.4), direct.rhs(x, 0.4)
    assert np.max(np.abs(v_fast - v_direct)) < 1e-13 * np.max(np.abs(v_direct))


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_general_matrices_follow_the_table(attention):
    """Peri-LN with random Q, K, V and weights against the formulas written out (MATH.md §6)."""
    rng = np.random.default_rng(3)
    n, d, beta = 9, 4, 1.7
    Q, K, V = (rng.standard_normal((d, d)) / 2 for _ in range(3))
    w = rng.uniform(0.2, 1.0, n)
    w /= w.sum()
    theta = rng.standard_normal((n, d))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    r = rng.uniform(0.5, 2.0, n)
    kernel = w * np.exp(beta * (theta @ Q.T) @ (theta @ K.T).T)
    A = kernel @ (theta @ V.T)
    if attention == "sa":
        A /= kernel.sum(axis=1, keepdims=True)
    radial, norm = np.sum(A * theta, 1), np.linalg.norm(A, axis=1)
    expected_theta = (A - radial[:, None] * theta) / (r * norm)[:, None]
    scheme = ParticleScheme(Model(attention=attention, beta=beta, dim=d), n, Attention(attention, Q=Q, K=K, V=V),
                            weights=w, normalization=Normalization("peri"))
    v = scheme.rhs(np.concatenate((theta, r[:, None]), 1)[None], 0.0)[0]
    np.testing.assert_allclose(v[:, :d], expected_theta, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(v[:, d], radial / norm, rtol=1e-12, atol=1e-14)


def test_qkv_file_and_its_checks(tmp_path):
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((3, 3)) / 2 for _ in range(3))
    good = tmp_path / "qkv.npz"
    np.savez(good, Q=Q, K=K[None], V=V)
    common = dict(dim=3, n=10, beta=1.0, t_final=0.5, save_every=0.5, normalization="pre")
    from_file = simulate(qkv=str(good), **common)
    from_arrays = simulate(Q=Q, K=K, V=V, **common)
    assert np.array_equal(from_file.positions.values, from_arrays.positions.values)
    assert f"--qkv {good}" in from_file.attrs["command"]
    bad = {"heads": dict(Q=np.stack((Q, Q)), K=K, V=V), "shape": dict(Q=Q[:2], K=K, V=V),
           "nan": dict(Q=Q, K=np.full((3, 3), np.nan), V=V), "missing": dict(Q=Q, K=K)}
    for label, arrays in bad.items():
        path = tmp_path / f"{label}.npz"
        np.savez(path, **arrays)
        with pytest.raises(InputError, match="qkv") as info:
            simulate(qkv=str(path), **common)
        assert "\n" not in str(info.value)


def test_radius_carrying_schemes_refuse_noise_and_collapse():
    with pytest.raises(InputError, match="nu 0"):
        simulate(dim=3, n=8, beta=1.0, nu=0.1, t_final=0.1, normalization="mix")
    with pytest.raises(InputError, match="collapse_tol 0"):
        simulate(dim=3, n=8, beta=1.0, t_final=0.1, normalization="peri", collapse_tol=1e-9)
    run = simulate(dim=3, n=8, beta=1.0, nu=0.1, t_final=0.1, save_every=0.1, normalization="ngpt")
    assert run.attrs["stop_reason"] == "completed" and "radius" not in run


@pytest.mark.parametrize("normalization", ["post", "pre", "ngpt"])
def test_a_qkv_file_with_a_head_axis_sums_the_heads(tmp_path, normalization):
    """Two heads (Q, K, V) and (Q, K, V') move the tokens as one head (Q, K, V + V'): SA outputs add."""
    rng = np.random.default_rng(2)
    Q, K, V, W = (rng.standard_normal((3, 3)) / 2 for _ in range(4))
    path = tmp_path / "heads.npz"
    np.savez(path, Q=np.stack((Q, Q)), K=np.stack((K, K)), V=np.stack((V, W)))
    common = dict(dim=3, n=12, beta=1.5, t_final=1.0, save_every=0.5, rtol=1e-12, normalization=normalization)
    two = simulate(qkv=str(path), **common)
    one = simulate(Q=Q, K=K, V=V + W, **common)
    np.testing.assert_allclose(two.positions.values, one.positions.values, rtol=0, atol=1e-10)
    assert two["V"].dims == ("head", "row", "column") and two.sizes["head"] == 2
