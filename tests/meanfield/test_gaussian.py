"""Gaussian moment ODEs (MATH.md §3): exact solution, blow-up, heads, quadrature checks, input errors."""

import math

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss

from meanfield.errors import InputError
from meanfield.gaussian import _build_heads, moment_rhs, solve, velocity_field
from meanfield.app.storage import load_run, package_version, save_run

I2 = np.eye(2)
SIGMA0 = np.array([[1.0, 0.3], [0.3, 0.5]])


def _random(rng, shape, scale=0.5):
    return scale * rng.standard_normal(shape)


def _spd(rng, d):
    B = rng.standard_normal((d, d))
    return B @ B.T / d + 0.2 * np.eye(d)


def _exact(sigma0, t):
    return sigma0 @ np.linalg.inv(np.eye(len(sigma0)) - 2 * t * sigma0)


# ---------------------------------------------------------------- exact solution and blow-up

@pytest.mark.parametrize("sigma0", [SIGMA0, _spd(np.random.default_rng(3), 3)])
def test_exact_solution_and_blowup_time(sigma0):
    d = len(sigma0)
    eye = np.eye(d)
    t_star = 1 / (2 * np.linalg.eigvalsh(sigma0)[-1])
    ds = solve(np.zeros(d), sigma0, V=eye, Q=eye, K=eye, t_final=2 * t_star)
    assert ds.attrs["stop_reason"] == "blowup"
    assert abs(ds.attrs["blowup_time"] - t_star) < 1e-3
    assert abs(ds.attrs["blowup_time"] - t_star) < 1e-8 * t_star  # the extrapolation is exact here
    times = ds["time"].values
    keep = times <= 0.99 * t_star
    assert keep.sum() > 10
    for t, cov in zip(times[keep], ds["covariance"].values[keep]):
        exact = _exact(sigma0, t)
        assert np.max(np.abs(cov - exact)) <= 1e-8 * np.max(np.abs(exact))
    early = times <= 0.9 * t_star
    assert np.max(np.abs(ds["covariance"].values[early] - [_exact(sigma0, t) for t in times[early]])) < 1e-8
    np.testing.assert_array_equal(ds["mean"].values, 0.0)


def test_covariance_stays_symmetric_psd_from_rank_one():
    rng = np.random.default_rng(7)
    u = rng.standard_normal(3)
    cov0 = np.outer(u, u)
    ds = solve(np.zeros(3), cov0, V=_random(rng, (3, 3)), Q=_random(rng, (3, 3)), K=_random(rng, (3, 3)),
               t_final=1.0, save_every=0.1)
    covs = ds["covariance"].values
    np.testing.assert_array_equal(covs, np.swapaxes(covs, 1, 2))
    for cov in covs:
        values = np.linalg.eigvalsh(cov)
        assert values[0] >= -1e-12 * values[-1]
        assert values[1] <= 1e-12 * values[-1]  # rank one is preserved: dL/dt = M L


def test_exponential_growth_is_not_called_blowup():
    # L2 with V = Q = K = I: S -> I as Sigma grows, so Sigma grows like exp(2t), no finite-time blow-up.
    ds = solve(np.zeros(2), I2, V=I2, Q=I2, K=I2, t_final=15.0, attention="l2")
    assert ds.attrs["stop_reason"] == "threshold"
    assert ds.attrs["blowup_time"] == "none"


def test_negative_definite_symmetric_part_converges():
    A = np.array([[-1.0, 2.0], [-2.0, -1.0]])  # A + A^T = -2 I
    cov0 = np.array([[2.0, 0.5], [0.5, 1.0]])
    ds = solve(np.zeros(2), cov0, V=I2, Q=A, K=I2, t_final=50.0, save_every=1.0)
    assert ds.attrs["stop_reason"] == "completed"
    assert ds.attrs["blowup_time"] == "none"
    norms = [np.linalg.norm(c, 2) for c in ds["covariance"].values]
    assert max(norms) <= norms[0] * (1 + 1e-12)
    assert norms[-1] < 0.011  # ~ 1 / (2 t) decay
    assert ds["time"].values[-1] == 50.0


# ---------------------------------------------------------------- multi-head

@pytest.mark.parametrize("attention", ["softmax", "l2"])
def test_identical_heads_equal_summed_values(attention):
    rng = np.random.default_rng(11)
    Q, K = _random(rng, (3, 2)), _random(rng, (3, 2))
    V1, V2 = _random(rng, (2, 2)), _random(rng, (2, 2))
    alpha, cov = np.array([0.4, -0.2]), _spd(rng, 2)
    heads = _build_heads([V1, V2], [Q, Q], [K, K], 2, False)
    single = _build_heads(V1 + V2, Q, K, 2, False)
    for a, b in zip(moment_rhs(alpha, cov, heads, attention), moment_rhs(alpha, cov, single, attention)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)
    kwargs = dict(t_final=1.0, attention=attention, save_every=0.1)
    multi = solve(alpha, cov, V=[V1, V2], Q=[Q, Q], K=[K, K], **kwargs)
    one = solve(alpha, cov, V=V1 + V2, Q=Q, K=K, **kwargs)
    assert multi.attrs["heads"] == 2 and one.attrs["heads"] == 1
    for name in ("mean", "covariance"):
        np.testing.assert_allclose(multi[name].values, one[name].values, rtol=0, atol=1e-10)


def test_heads_with_different_widths_are_accepted():
    rng = np.random.default_rng(2)
    ds = solve(np.zeros(2), I2, V=[I2, I2], Q=[_random(rng, (1, 2)), _random(rng, (4, 2))],
               K=[_random(rng, (1, 2)), _random(rng, (4, 2))], t_final=0.1, scaled=True)
    assert ds.attrs["stop_reason"] == "completed"


# ---------------------------------------------------------------- right-hand sides

def _quadrature_field(x, alpha, cov, V, Q, K, attention, scaled, n=80):
    """Exact weighted average of V y, y ~ N(alpha, cov), by tensor Gauss–Hermite quadrature (d = 2)."""
    z, w = hermegauss(n)
    Z = np.stack(np.meshgrid(z, z, indexing="ij"), -1).reshape(-1, 2)
    W = np.outer(w, w).ravel()
    Y = alpha + Z @ np.linalg.cholesky(cov).T
    qx, ky = Q @ x, Y @ K.T
    logits = ky @ qx if attention == "softmax" else -0.5 * np.sum((qx - ky) ** 2, axis=1)
    if scaled:
        logits = logits / math.sqrt(Q.shape[0])
    weights = W * np.exp(logits - logits.max())
    return V @ (weights @ Y) / weights.sum()


@pytest.mark.parametrize("attention", ["softmax", "l2"])
@pytest.mark.parametrize("scaled", [False, True])
def test_affine_field_matches_quadrature(attention, scaled):
    rng = np.random.default_rng(5)
    V, Q, K = _random(rng, (2, 2), 1.0), _random(rng, (3, 2)), _random(rng, (3, 2))
    alpha, cov = np.array([0.3, -0.5]), _spd(rng, 2)
    points = rng.standard_normal((5, 2))
    field = velocity_field(points, alpha, cov, V=V, Q=Q, K=K, attention=attention, scaled=scaled)
    for x, value in zip(points, field):
        reference = _quadrature_field(x, alpha, cov, V, Q, K, attention, scaled)
        np.testing.assert_allclose(value, reference, rtol=0, atol=1e-11)


def test_moment_rhs_matches_math_md_formulas():
    rng = np.random.default_rng(9)
    V, Q, K = _random(rng, (3, 3), 1.0), _random(rng, (2, 3)), _random(rng, (2, 3))
    alpha, cov = rng.standard_normal(3), _spd(rng, 3)
    A, eye = K.T @ Q, np.eye(3)
    heads = _build_heads(V, Q, K, 3, False)
    d_alpha, d_cov = moment_rhs(alpha, cov, heads, "softmax")
    np.testing.assert_allclose(d_alpha, V @ (eye + cov @ A) @ alpha, atol=1e-13)
    np.testing.assert_allclose(d_cov, V @ cov @ A @ cov + cov @ A.T @ cov @ V.T, atol=1e-13)
    S = np.linalg.inv(np.linalg.inv(cov) + K.T @ K)
    M = V @ S @ A
    d_alpha, d_cov = moment_rhs(alpha, cov, heads, "l2")
    np.testing.assert_allclose(d_alpha, V @ S @ (np.linalg.inv(cov) + A) @ alpha, atol=1e-12)
    np.testing.assert_allclose(d_cov, M @ cov + cov @ M.T, atol=1e-12)


@pytest.mark.parametrize("attention, power", [("softmax", 0.5), ("l2", 0.25)])
def test_scaling_divides_the_logits(attention, power):
    rng = np.random.default_rng(4)
    Q, K = _random(rng, (4, 2)), _random(rng, (4, 2))
    alpha, cov = np.array([0.2, 0.1]), _spd(rng, 2)
    kwargs = dict(t_final=0.5, attention=attention, save_every=0.1)
    scaled = solve(alpha, cov, V=I2, Q=Q, K=K, scaled=True, **kwargs)
    # softmax depends on A = K^T Q only; L2 on Q and K: scale both by k^(-1/4).
    k_factor = 4 ** -power
    manual = solve(alpha, cov, V=I2, Q=k_factor * Q, K=K if attention == "softmax" else k_factor * K, **kwargs)
    np.testing.assert_allclose(scaled["covariance"].values, manual["covariance"].values, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- dataset contract

def test_dataset_attributes_and_netcdf_roundtrip(tmp_path):
    ds = solve([0.1, 0.2], SIGMA0, V=I2, Q=-I2, K=I2, t_final=1.0, attention="l2", save_every=0.25)
    assert ds["mean"].dims == ("time", "i")
    assert ds["covariance"].dims == ("time", "i", "j")
    np.testing.assert_allclose(ds["time"].values, [0, 0.25, 0.5, 0.75, 1.0], atol=1e-15)
    np.testing.assert_allclose(ds["covariance"].values[0], SIGMA0, atol=1e-15)
    attrs = ds.attrs
    assert attrs["attention"] == "l2" and attrs["scaled"] == 0 and attrs["t_final"] == 1.0
    assert attrs["stop_reason"] == "completed" and attrs["blowup_time"] == "none"
    assert attrs["package_version"] == package_version()
    loaded = load_run(save_run(ds, tmp_path / "g.nc"), geometry="gaussian")
    np.testing.assert_array_equal(loaded["covariance"].values, ds["covariance"].values)
    assert loaded.attrs["stop_reason"] == "completed"


# ---------------------------------------------------------------- input errors

BAD_INPUTS = [
    ("cov", dict(cov=[[1.0, 0.2], [0.0, 1.0]])),                 # not symmetric
    ("cov", dict(cov=[[1.0, 2.0], [2.0, 1.0]])),                 # indefinite
    ("cov", dict(cov=np.eye(3))),                                # shape mismatch with mean
    ("cov", dict(cov=[[1.0, np.nan], [np.nan, 1.0]])),
    ("mean", dict(mean=[np.nan, 0.0])),
    ("V[0]", dict(V=np.eye(3))),
    ("V[0]", dict(V=[[1.0, np.inf], [0.0, 1.0]])),
    ("Q[0]", dict(Q=np.ones((2, 3)))),
    ("K[0]", dict(K=np.ones((3, 2)))),
    ("V, Q, K", dict(V=[I2, I2])),
    ("attention", dict(attention="sinkhorns")),
    ("eps", dict(attention="sinkhorn", eps=0.0)),
    ("t_final", dict(t_final=-1.0)),
    ("t_final", dict(t_final=float("nan"))),
    ("save_every", dict(save_every=0.0)),
]


@pytest.mark.parametrize("name, change", BAD_INPUTS)
def test_bad_input_is_refused_with_one_line(name, change):
    arguments = dict(mean=[0.0, 0.0], cov=I2, V=I2, Q=I2, K=I2, t_final=1.0)
    arguments.update(change)
    mean, cov = arguments.pop("mean"), arguments.pop("cov")
    with pytest.raises(InputError) as info:
        solve(mean, cov, **arguments)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(name)


# ---------------------------------------------------------------- Sinkhorn attention

def _discrete_sinkhorn_field(alpha, cov, V, Q, K, eps, order=48):
    """Conditional mean of the discrete entropic plan of a Gauss–Hermite discretisation of N(alpha, cov)
    with itself (independent of the closed form): ``(nodes, V E[y | x] at the nodes)``."""
    t, w = hermegauss(order)
    w = w / w.sum()
    grid = np.stack(np.meshgrid(t, t, indexing="ij"), -1).reshape(-1, 2)
    weights = np.outer(w, w).ravel()
    keep = weights > 1e-14
    grid, weights = grid[keep], weights[keep] / weights[keep].sum()
    nodes = alpha + grid @ np.linalg.cholesky(cov).T
    logits = (nodes @ Q.T) @ (nodes @ K.T).T / eps
    f, g = np.zeros(len(nodes)), np.zeros(len(nodes))
    log_w = np.log(weights)

    def lse(z, axis):
        top = z.max(axis=axis, keepdims=True)
        return (top + np.log(np.exp(z - top).sum(axis=axis, keepdims=True))).squeeze(axis)

    for _ in range(20000):  # Sinkhorn in the log domain: P_ij = w_i w_j exp(f_i + g_j + logits_ij)
        f = -lse(logits + (g + log_w)[None, :], 1)
        new_g = -lse(logits + (f + log_w)[:, None], 0)
        if np.max(np.abs(new_g - g)) < 1e-14:
            g = new_g
            break
        g = new_g
    plan = np.exp(logits + f[:, None] + g[None, :] + log_w[None, :])
    plan /= plan.sum(axis=1, keepdims=True)
    return nodes, (plan @ nodes) @ V.T, weights


@pytest.mark.parametrize("eps", [1.0, 0.25])
def test_sinkhorn_field_matches_a_discrete_entropic_plan(eps):
    rng = np.random.default_rng(11)
    V, Q, K = _random(rng, (2, 2), 1.0), _random(rng, (3, 2), 0.7), _random(rng, (3, 2), 0.7)
    alpha, cov = np.array([0.2, -0.1]), 0.5 * _spd(rng, 2)
    nodes, discrete, weights = _discrete_sinkhorn_field(alpha, cov, V, Q, K, eps)
    central = weights > 1e-4 * weights.max()
    closed = velocity_field(nodes[central], alpha, cov, V=V, Q=Q, K=K, attention="sinkhorn", eps=eps)
    np.testing.assert_allclose(closed, discrete[central], rtol=0, atol=1e-7)


def test_sinkhorn_tends_to_softmax_with_scaled_logits():
    rng = np.random.default_rng(12)
    V, Q, K = _random(rng, (2, 2), 1.0), _random(rng, (2, 2)), _random(rng, (2, 2))
    alpha, cov, x = np.array([0.4, 0.1]), _spd(rng, 2), rng.standard_normal((4, 2))
    gaps = []
    for eps in (10.0, 100.0, 1000.0):  # the linear parts agree; the marginal constraint centres Sinkhorn at alpha
        fields = [velocity_field(np.vstack([x, alpha]), alpha, cov, V=V, Q=Q / scale, K=K, attention=kind, eps=eps)
                  for kind, scale in (("sinkhorn", 1.0), ("softmax", eps))]
        sinkhorn, softmax = (field[:-1] - field[-1] for field in fields)
        gaps.append(np.max(np.abs(sinkhorn - softmax)) / np.max(np.abs(softmax)))
    assert gaps[-1] < 1e-5 and 50 < gaps[0] / gaps[1] < 200 and 50 < gaps[1] / gaps[2] < 200  # O(1/eps^2)


def test_sinkhorn_moments_keep_the_mean_direction_and_a_singular_covariance():
    V = np.array([[0.3, -0.2], [0.1, 0.1]])
    alpha, cov = np.array([1.0, -0.5]), np.array([[1.0, 1.0], [1.0, 1.0]])        # rank one
    ds = solve(alpha, cov, V=V, Q=I2, K=I2, t_final=1.0, attention="sinkhorn", eps=0.5)
    assert ds.attrs["stop_reason"] == "completed" and ds.attrs["eps"] == 0.5
    from scipy.linalg import expm
    np.testing.assert_allclose(ds["mean"].values[-1], expm(V) @ alpha, rtol=1e-9)      # d alpha/dt = V alpha
    final = ds["covariance"].values[-1]
    assert abs(np.linalg.det(final)) < 1e-12 * np.linalg.norm(final) ** 2
