"""Particle systems (MATH.md §1): exact solutions, invariants, symmetry, paths that must agree."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from meanfield import InputError, Model
from meanfield.app.storage import save_run
from meanfield.sampling import TrigonometricDensity, sample_tokens, uniform_sphere
from meanfield.settings import Attention
from meanfield.initial.circle import circle_density
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.solvers.runs.runloop import run
from meanfield.solvers.tracking.trackers import Observer
from meanfield.solvers.steppers.steppers import make_stepper


def equiangular_rhs(attention, beta, n):
    """MATH.md §1, orthogonal start: the common inner product g(t)."""
    if attention == "sa":
        return lambda t, g: 2 * np.exp(beta * g) * (1 - g) * (1 + (n - 1) * g) / (np.exp(beta) + (n - 1) * np.exp(beta * g))
    return lambda t, g: (2 / n) * np.exp(beta * g) * (1 - g) * (1 + (n - 1) * g)


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_orthogonal_start_follows_the_equiangular_ode(attention):
    n, dim, beta = 4, 6, 2.0
    ds = simulate(dim=dim, n=n, attention=attention, beta=beta, init="orthogonal", seed=1, t_final=5.0,
                  save_every=0.25, rtol=1e-12)
    x = ds["positions"].values
    gram = np.einsum("tid,tjd->tij", x, x)
    exact = solve_ivp(equiangular_rhs(attention, beta, n), (0, 5), [0.0], t_eval=ds.time.values,
                      method="DOP853", rtol=1e-13, atol=1e-15).y[0]
    off_diagonal = ~np.eye(n, dtype=bool)
    assert np.max(np.abs(gram[:, off_diagonal] - exact[:, None])) < 1e-8
    assert exact[-1] > 0.5  # the test covers real motion, not a near-constant


@pytest.mark.parametrize("dim, qkv", [(3, "identity"), (3, "random"), (5, "repulsive"), (2, "random")])
def test_tokens_stay_on_the_sphere(dim, qkv):
    ds = simulate(dim=dim, n=300, beta=4.0, init="uniform", seed=2, qkv=qkv, t_final=2.0, save_every=0.5)
    assert ds.attrs["stop_reason"] == "completed"
    assert np.max(np.abs(np.linalg.norm(ds["positions"].values, axis=-1) - 1)) < 1e-12


@pytest.mark.parametrize("attention, dim", [("sa", 2), ("sa", 3), ("usa", 3), ("usa", 2)])
def test_energy_never_decreases(attention, dim):
    ds = simulate(dim=dim, n=400, attention=attention, beta=3.0, init="uniform", seed=3, t_final=4.0,
                  save_every=0.1)
    energy = ds["energy"].values
    assert np.all(np.diff(energy) >= -1e-13 * energy[0]) and energy[-1] > energy[0] * 1.01


def test_permuting_the_input_permutes_the_output(rng):
    n, dim = 64, 4
    x = uniform_sphere(n, dim, rng)
    weights = rng.uniform(0.5, 1.5, n)
    perm = rng.permutation(n)
    common = dict(dim=dim, n=n, beta=2.0, qkv="random", seed=4, t_final=1.0, save_every=0.5)
    a = simulate(positions=x, weights=weights, **common)
    b = simulate(positions=x[perm], weights=weights[perm], **common)
    assert np.max(np.abs(a["positions"].values[:, perm] - b["positions"].values)) < 1e-12


@pytest.mark.parametrize("attention, beta", [("sa", 0.0), ("sa", 1.0), ("sa", 9.0), ("sa", 40.0),
                                             ("usa", 0.0), ("usa", 1.0), ("usa", 9.0)])
def test_circle_fourier_path_equals_direct_sums(attention, beta, rng):
    n = 257
    theta = rng.uniform(0, 2 * math.pi, n)
    x = np.stack((np.cos(theta), np.sin(theta)), -1)[None]
    weights = rng.uniform(0.1, 1.0, n)
    model = Model(attention, beta, 0.0, 2)
    fast = ParticleScheme(model, n, weights=weights)
    direct = ParticleScheme(model, n, Attention(model.attention, interaction="direct"), weights=weights)
    v_fast, v_direct = fast.rhs(x, 0.0), direct.rhs(x, 0.0)
    assert np.max(np.abs(v_fast - v_direct)) < 1e-13 * max(1.0, np.max(np.abs(v_direct)))
    if beta > 0:
        assert fast.scaled_energy(x)[0] == pytest.approx(direct.scaled_energy(x)[0], rel=1e-13)


def test_beta_zero_is_the_projected_mean(rng):
    n, dim = 50, 3
    x = uniform_sphere(n, dim, rng)[None]
    V = rng.standard_normal((dim, dim))
    weights = rng.uniform(0.2, 1.0, n)
    scheme = ParticleScheme(Model("sa", 0.0, 0.0, dim), n, Attention("sa", V=V), weights=weights)
    mean = (weights / weights.sum()) @ (x[0] @ V.T)
    expected = mean - np.sum(mean * x[0], axis=1, keepdims=True) * x[0]
    assert np.allclose(scheme.rhs(x, 0.0)[0], expected, atol=1e-15)


def test_row_blocks_do_not_change_the_result(rng):
    n, dim = 300, 3
    x = uniform_sphere(n, dim, rng)[None]
    model = Model("sa", 5.0, 0.0, dim)
    whole = ParticleScheme(model, n).rhs(x, 0.0)
    scheme = ParticleScheme(model, n, block_bytes=16 * n * 7)
    assert scheme.interaction.block_rows(1, n) == 16  # the minimum block
    blocked = scheme.rhs(x, 0.0)
    assert np.max(np.abs(whole - blocked)) < 1e-15


def test_noise_alone_is_brownian_motion_on_the_sphere():
    """With V = 0 only the geodesic random walk moves tokens: E <x(t), x(0)> = exp(-nu (d-1) t).

    400 independent systems of 50 tokens (the batch axis) give 20000 samples cheaply.
    """
    batch, n, dim, nu, t = 400, 50, 3, 0.5, 0.5
    scheme = ParticleScheme(Model("sa", 1.0, nu, dim), n, Attention("sa", V=np.zeros((dim, dim))), seed=5)
    x0 = uniform_sphere(batch * n, dim, np.random.default_rng(5)).reshape(batch, n, dim)
    record = run(scheme, make_stepper("dopri5", scheme, dt_max=0.025), x0, t_final=t, save_every=t,
                 trackers=[Observer(lambda x: {"x": x.copy()})], scheme_frames=False)
    correlation = np.mean(np.sum(record.frames[0]["x"] * record.frames[-1]["x"], axis=-1))
    assert correlation == pytest.approx(math.exp(-nu * (dim - 1) * t), abs=0.012)


def test_samples_follow_the_pde_initial_law():
    n = 20000
    x, weights = sample_tokens("vonmises:2@1", n, 2, seed=6, resolution=256)
    theta = np.sort(np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * math.pi))
    grid = np.linspace(0, 2 * math.pi, 2001)
    density = TrigonometricDensity(circle_density("vonmises:2@1", 256))(grid)
    cdf = np.concatenate(([0.0], np.cumsum((density[1:] + density[:-1]) / 2 * np.diff(grid))))
    empirical = np.searchsorted(theta, grid) / n
    assert np.max(np.abs(empirical - cdf)) < 1.6 / math.sqrt(n)  # Kolmogorov-Smirnov, ~1% level
    assert np.allclose(weights, 1 / n)


def test_quadrature_nodes_carry_the_density_as_weights():
    x, weights = sample_tokens("vonmises:1@2", 128, 2, resolution=256, sampling="quadrature")
    theta = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * math.pi)
    assert np.allclose(np.diff(theta), 2 * math.pi / 128)
    expected = np.exp(np.cos(theta - 2))
    assert np.allclose(weights, expected / expected.sum(), rtol=1e-10)


def test_restart_from_a_particle_file(tmp_path):
    first = simulate(dim=3, n=20, beta=2.0, init="uniform", seed=7, t_final=1.0, save_every=1.0)
    path = tmp_path / "p.nc"
    save_run(first, path)                     # with its records (xarray's to_netcdf writes the science alone)
    second = simulate(dim=3, n=20, beta=2.0, init=str(path), t_final=1.5, save_every=0.5)
    assert np.array_equal(second["positions"].values[0], first["positions"].values[-1])
    np.testing.assert_array_equal(second.time.values, [1.0, 1.5])  # the clock goes on from the file
    with pytest.raises(InputError, match="holds 20 tokens"):
        simulate(dim=3, n=21, beta=2.0, init=str(path), t_final=0.5)


@pytest.mark.parametrize("kwargs, words", [
    ({"init": "orthogonal", "n": 5, "dim": 3}, "n <= dim"),
    ({"init": "vonmises:1", "dim": 3}, "needs dim 2"),
    ({"n": 0}, "n must be an integer >= 1"),
    ({"qkv": "diagonal"}, "qkv"),
    ({"sampling": "sobol"}, "sampling"),
    ({"init": "uniform", "dim": 3, "sampling": "quadrature"}, "sampling quadrature"),
])
def test_bad_particle_inputs(kwargs, words):
    settings = dict(dim=2, n=10, beta=1.0, t_final=1.0) | kwargs
    with pytest.raises(InputError, match=words):
        simulate(**settings)


def test_euclidean_tokens_see_the_gaussian_affine_field(rng):
    """In R^d, for mu = N(alpha, Sigma): Gamma_mu(x) = V (alpha + Sigma A x), A = K^T Q (MATH.md §3)."""
    n, dim = 6000, 2
    alpha, sigma = np.array([0.3, -0.2]), np.array([[0.2, 0.05], [0.05, 0.1]])
    samples = rng.multivariate_normal(alpha, sigma, size=n)
    Q, K, V = (np.eye(dim) + 0.3 * rng.standard_normal((dim, dim)) for _ in range(3))
    scheme = ParticleScheme(Model("sa", 1.0, 0.0, dim), n, Attention("sa", Q=Q, K=K, V=V), sphere=False)
    velocity = scheme.rhs(samples[None], 0.0)[0]
    exact = (alpha + samples @ (sigma @ K.T @ Q).T) @ V.T
    assert np.sqrt(np.mean(np.sum((velocity - exact) ** 2, axis=1))) < 0.05 * np.sqrt(np.mean(exact ** 2))
    assert np.array_equal(scheme.after_step(samples[None], 0.1), samples[None])  # no projection in R^d
