"""Sinkhorn attention (kernel="sinkhorn") in the R^d particle engine (meanfield.solvers.schemes.interaction).

The plan ``P_ij = w_i w_j exp(beta <Q x_i, K x_j> / eps + f_i + g_j)`` has both marginals equal
to the weights; tokens move by the conditional mean ``sum_j (P_ij / w_i) V x_j``.  For Gaussian
tokens N(alpha, Sigma = L L^T) the continuum field is affine: with ``B = beta Q^T K / eps``,
``Bt = L^T B L = U diag(b) W^T`` and ``c = (sqrt(1 + 4 b^2) - 1) / (2 b)``, ``Ct = U diag(c) W^T``,
``Gamma(x) = V (alpha + L Ct^T L^{-1} (x - alpha))`` (the entropic self-coupling of a Gaussian).
"""

import numpy as np
import pytest

from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.settings import Attention
from meanfield.solvers.schemes.interaction import DirectInteraction
from meanfield.solvers.schemes.particles import ParticleScheme

D = 2


def sinkhorn_gaussian_field(x, alpha, cov, Q, K, V, beta, eps):
    """The affine continuum Sinkhorn velocity of N(alpha, cov) at the points ``x`` (n, d)."""
    L = np.linalg.cholesky(cov)
    Bt = L.T @ (beta * Q.T @ K / eps) @ L
    U, b, Wt = np.linalg.svd(Bt)
    safe = np.where(b > 0, b, 1.0)
    c = np.where(b > 0, (np.sqrt(1 + 4 * b ** 2) - 1) / (2 * safe), 0.0)
    M = L @ (U @ np.diag(c) @ Wt).T @ np.linalg.inv(L)
    return (alpha + (x - alpha) @ M.T) @ V.T


def _relative_rms(v, ref):
    return float(np.sqrt(np.mean((v - ref) ** 2) / np.mean(ref ** 2)))


def _gaussian_sample(n, seed):
    rng = np.random.default_rng(seed)
    factor = rng.standard_normal((D, D))
    cov = factor @ factor.T / 2 + 0.3 * np.eye(D)
    Q, K, V = 0.5 * rng.standard_normal((3, D)), 0.5 * rng.standard_normal((3, D)), 0.5 * rng.standard_normal((D, D))
    x = rng.multivariate_normal(np.array([0.3, -0.2]), cov, size=n)
    return x, Q, K, V


def _weights(kind, n, rng):
    if kind == "uniform":
        return np.full(n, 1.0 / n)
    w = rng.uniform(0.1, 1.0, n)
    w[3] = 0.0                                            # a massless token: zero row and column
    return w / w.sum()


@pytest.mark.parametrize("weights", ["uniform", "random"])
@pytest.mark.parametrize("layout, max_logit", [("spread", 40.0), ("offset", 1000.0)])
def test_plan_marginals_equal_the_weights(weights, layout, max_logit):
    """Both marginals to 1e-10 (relative to the weights), B = 2, dense and blocked paths: tokens spread
    with logits up to +-40 (a nearly deterministic plan, ~10^3 iterations), or tokens far from the
    origin with logits up to +-1000 (exp overflows without the maxima subtracted; well conditioned)."""
    rng = np.random.default_rng(10)
    n, eps = 50, 0.5
    w = _weights(weights, n, rng)
    Q, K = rng.standard_normal((3, D)), rng.standard_normal((3, D))
    if layout == "spread":
        x = rng.standard_normal((2, n, D))
    else:
        x = 30.0 * rng.standard_normal((2, 1, D)) + 0.5 * rng.standard_normal((2, n, D))
    logits = np.einsum("bid,bjd->bij", x @ Q.T, x @ K.T)
    beta = max_logit * eps / np.max(np.abs(logits))       # max |beta <Qx, Ky> / eps| = max_logit
    plans = []
    for dense_bytes in (2 ** 28, 0):                      # stored n x n matrices, then row blocks
        inter = DirectInteraction(beta, "sa", Q, K, np.eye(D), w, kernel="sinkhorn", sinkhorn_eps=eps,
                                  sinkhorn_dense_bytes=dense_bytes, block_bytes=4000)
        plan = inter.sinkhorn_plan(x)
        assert np.all(np.isfinite(plan))
        for axis in (1, 2):
            np.testing.assert_allclose(plan.sum(axis=axis), np.broadcast_to(w, (2, n)), rtol=1e-10, atol=1e-15)
        # the velocity is the plan's conditional mean
        velocity = inter.velocity(x)
        mean = (plan @ x) / np.where(w > 0, w, 1.0)[:, None]
        massive = w > 0
        np.testing.assert_allclose(velocity[:, massive], mean[:, massive], rtol=0,
                                   atol=1e-9 * np.max(np.abs(x)))
        plans.append(plan)
    np.testing.assert_allclose(plans[0], plans[1], rtol=0, atol=1e-10 / n)


@pytest.mark.parametrize("eps", [1.0, 0.3])
def test_velocity_matches_the_gaussian_field(eps):
    """n = 4000 Gaussian samples against the affine formula at the sample moments (measured: 0.2-1.6 %),
    and the error falls when n grows 4x (1000 -> 4000, three draws averaged)."""
    errors = {}
    for n in (1000, 4000):
        errors[n] = []
        for seed in range(3):
            x, Q, K, V = _gaussian_sample(n, seed)
            alpha, cov = x.mean(axis=0), np.cov(x.T, bias=True)
            scheme = ParticleScheme(Model("sa", 1.0, dim=D), n,
                                    Attention("sa", Q=Q, K=K, V=V, kernel="sinkhorn", sinkhorn_eps=eps), sphere=False)
            v = scheme.rhs(x[None], 0.0)[0]
            errors[n].append(_relative_rms(v, sinkhorn_gaussian_field(x, alpha, cov, Q, K, V, 1.0, eps)))
    assert max(errors[4000]) < 0.03
    assert np.mean(errors[4000]) < 0.75 * np.mean(errors[1000])


@pytest.mark.parametrize("eps", [1.0, 0.3])
def test_weighted_grid_matches_the_gaussian_field_exactly(eps):
    """No sampling error: 60 x 60 trapezoid nodes of N(alpha, Sigma) weighted by the density (moments
    from the weights) reproduce the affine field to round-off (measured 1e-13), even where b > 2."""
    _, Q, K, V = _gaussian_sample(10, 2)
    cov = np.array([[1.0, 0.4], [0.4, 0.6]])
    L = np.linalg.cholesky(cov)
    s = np.linspace(-9.0, 9.0, 60)
    u = np.stack([g.ravel() for g in np.meshgrid(s, s)], axis=1)
    w = np.exp(-0.5 * np.sum(u * u, axis=1))
    w /= w.sum()
    x = np.array([0.3, -0.2]) + u @ L.T
    alpha = w @ x
    sigma = (x - alpha).T @ ((x - alpha) * w[:, None])
    scheme = ParticleScheme(Model("sa", 2.0, dim=D), x.shape[0],
                            Attention("sa", Q=Q, K=K, V=V, kernel="sinkhorn", sinkhorn_eps=eps), weights=w,
                            sphere=False)
    v = scheme.rhs(x[None], 0.0)[0]
    ref = sinkhorn_gaussian_field(x, alpha, sigma, Q, K, V, 2.0, eps)
    assert np.linalg.svd(L.T @ (2.0 * Q.T @ K / eps) @ L)[1][0] > (0.5 if eps == 1.0 else 1.5)
    error = np.sqrt(w @ np.sum((v - ref) ** 2, axis=1) / (w @ np.sum(ref ** 2, axis=1)))
    assert error < 1e-10


def test_large_eps_approaches_softmax():
    """eps -> infinity: Sinkhorn = softmax with logits / eps plus the column potential
    eps g_j ~ -sum_i w_i L_ij, so to first order it is softmax with centred queries:
    eps (v_sinkhorn - v_softmax) -> -V Sigma A^T mean (A = beta Q^T K), and the difference to the
    centred-query softmax is O(1/eps^2)."""
    n, beta = 400, 1.0
    x, Q, K, V = _gaussian_sample(n, 5)
    x = x[None]
    alpha, cov = x[0].mean(axis=0), np.cov(x[0].T, bias=True)
    A = beta * Q.T @ K
    leading = -(V @ cov @ A.T @ alpha)
    first, second = [], []
    for eps in (32.0, 64.0, 128.0, 256.0):
        sinkhorn = ParticleScheme(Model("sa", beta, dim=D), n,
                                  Attention("sa", Q=Q, K=K, V=V, kernel="sinkhorn", sinkhorn_eps=eps),
                                  sphere=False).rhs(x, 0.0)[0]
        softmax = ParticleScheme(Model("sa", beta / eps, dim=D), n, Attention("sa", Q=Q, K=K, V=V),
                                 sphere=False).rhs(x, 0.0)[0]
        logits = (x[0] - alpha) @ A @ x[0].T / eps
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        centred = (weights @ x[0] @ V.T) / weights.sum(axis=1, keepdims=True)
        difference = np.max(np.abs(sinkhorn - softmax))
        first.append((difference, np.max(np.abs(eps * (sinkhorn - softmax) - leading))))
        second.append(np.max(np.abs(sinkhorn - centred)))
    differences, remainders = np.array(first).T
    # measured: differences 3.3e-4 ... 3.8e-5 (ratios 2.11, 2.03, 2.01); remainders 7.6e-4 ... 5.0e-5
    # (ratios 3.3, 2.2, 2.1) against |leading| = 9.7e-3; centred gap 2.4e-5 ... 1.6e-7 (7.7, 4.5, 4.3)
    np.testing.assert_allclose(differences[:-1] / differences[1:], 2.0, rtol=0.1)     # ~ 1/eps
    assert np.all(remainders[:-1] / remainders[1:] > 1.9)                             # leading term exact
    assert remainders[-1] < 0.01 * np.max(np.abs(leading))
    second = np.array(second)
    assert np.all(second[:-1] / second[1:] > 3.6) and second[-1] < 0.01 * differences[-1]
    np.testing.assert_allclose(second[-2] / second[-1], 4.0, rtol=0.15)               # ~ 1/eps^2


def test_identical_heads_equal_one_head_with_summed_values():
    x, Q, K, V1 = _gaussian_sample(600, 7)
    V2 = np.random.default_rng(8).standard_normal((D, D))
    model = Model("sa", 1.0, dim=D)
    two = ParticleScheme(model, 600, Attention("sa", kernel="sinkhorn", sinkhorn_eps=0.5,
                                               heads=[(Q, K, V1), (Q, K, V2)]), sphere=False).rhs(x[None], 0.0)
    one = ParticleScheme(model, 600, Attention("sa", Q=Q, K=K, V=V1 + V2, kernel="sinkhorn", sinkhorn_eps=0.5),
                         sphere=False).rhs(x[None], 0.0)
    np.testing.assert_allclose(two, one, rtol=0, atol=1e-12 * np.max(np.abs(one)))


def test_batch_warm_start_and_paths_agree():
    """B systems at once equal B separate runs; the warm start changes nothing beyond the tolerance
    and cuts the iterations on a nearby state (measured 241 -> 177 half-steps after a step 1e-3 v); the blocked path and
    the dense path in chunks of one system equal the dense one."""
    rng = np.random.default_rng(11)
    n = 300
    x = rng.standard_normal((3, n, D))
    Q, K, V = rng.standard_normal((3, D)), rng.standard_normal((3, D)), rng.standard_normal((D, D))
    make = lambda **kw: DirectInteraction(2.0, "sa", Q, K, V, np.full(n, 1.0 / n), kernel="sinkhorn", **kw)
    batch = make().velocity(x)
    for b in range(3):
        np.testing.assert_allclose(batch[b], make().velocity(x[b:b + 1])[0], rtol=0, atol=1e-11)
    blocked = make(sinkhorn_dense_bytes=0, block_bytes=20000)
    np.testing.assert_allclose(blocked.velocity(x), batch, rtol=0, atol=1e-11)
    chunked = make(sinkhorn_dense_bytes=2 * 8 * n * n)                  # one system per dense chunk
    np.testing.assert_allclose(chunked.velocity(x), batch, rtol=0, atol=1e-11)
    for got, want in zip(chunked.sinkhorn_potentials(x), make().sinkhorn_potentials(x)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-11)
    warm = make()
    warm.velocity(x)
    cold_steps = warm.sinkhorn_iterations[0]
    nearby = x + 1e-3 * batch
    np.testing.assert_allclose(warm.velocity(nearby), make().velocity(nearby), rtol=0, atol=1e-11)
    assert warm.sinkhorn_iterations[0] < 0.9 * cold_steps   # linear convergence: saves log(distance) only
    blocked.velocity(x)
    np.testing.assert_allclose(blocked.velocity(nearby), make().velocity(nearby), rtol=0, atol=1e-11)


def test_refusals():
    model = Model("sa", 1.0, dim=2)
    for eps in (0.0, -1.0, float("inf"), float("nan"), "1"):
        with pytest.raises(InputError):
            ParticleScheme(model, 10, Attention("sa", kernel="sinkhorn", sinkhorn_eps=eps), sphere=False)
    with pytest.raises(InputError):
        ParticleScheme(Model("usa", 1.0, dim=2), 10, Attention("usa", kernel="sinkhorn"), sphere=False)
    with pytest.raises(InputError):
        ParticleScheme(model, 10, Attention("sa", kernel="sinkhorn"))            # sphere
    with pytest.raises(InputError, match="Sinkhorn did not reach"):
        x = np.random.default_rng(0).standard_normal((1, 40, 2))
        DirectInteraction(50.0, "sa", weights=np.full(40, 1 / 40), kernel="sinkhorn",
                          sinkhorn_max_iter=10).velocity(x)
    scheme = ParticleScheme(model, 10, Attention("sa", kernel="sinkhorn"), sphere=False)
    with pytest.raises(InputError):
        scheme.scaled_energy(np.zeros((1, 10, 2)))
    assert np.isfinite(scheme.stable_dt(0.5)) and "energy" not in scheme.frame(np.zeros((1, 10, 2)))
