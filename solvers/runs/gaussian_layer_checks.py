"""Residual layers on Gaussian data (MATH.md §3.1) against sampled tokens and against the moment ODE; shared by the
tests and ``validate depth``.

- :func:`gaussian_layers_against_particles`: ``n`` tokens drawn from ``N(m_0, Sigma_0)`` pushed through the same
  layers by the R^d particle engine (:class:`meanfield.solvers.schemes.particles.ParticleScheme`, ``sphere=False``,
  :func:`meanfield.solvers.steppers.layers.run_layers`), their empirical moments against the exact moment map
  (:func:`meanfield.gaussian_layers.gaussian_layers`).  The tokens feel the field of their *empirical* measure, so
  they differ from the map by ``O(n^{-1/2})``; to leading order that difference is the initial sampling error of the
  moments carried through the map (:func:`sampling_band`), which predicts the root mean square error
  ``C n^{-1/2}`` with ``C`` computed, not fitted.
- :func:`gaussian_layers_against_flow`: ``L`` layers of step ``T / L`` against the moment ODE at ``T``
  (:func:`meanfield.gaussian.solve`): order 1 in ``1 / L`` (a layer is an Euler step of the ODE) and the Richardson
  limit equal to the ODE.

The moment error is ``sqrt(|m - m'|^2 + ||Sigma - Sigma'||_F^2)``.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy.optimize import minimize_scalar

from meanfield.errors import require
from meanfield.gaussian import RTOL, head_list, initial_factor
from meanfield.gaussian_layers import gaussian_layers, layer_problem, layer_states
from meanfield.model import Model
from meanfield.settings import Attention

from ..schemes.particles import ParticleScheme
from ..steppers.layers import run_layers
from .gaussian_run import solve as solve_moments
from .layer_checks import fitted_layer_order

#: meanfield.gaussian's attention -> the particle engine's kernel
PARTICLE_KERNELS = {"softmax": "dot", "l2": "l2", "sinkhorn": "sinkhorn"}
#: Token counts of the particle comparison (2^8 ... 2^13).
SIZES = tuple(2 ** k for k in range(8, 14))
#: Draws per size, halved as n doubles (the same cost, n^2 per draw and layer, at every size): a log RMS over s
#: draws varies by ~ 1 / sqrt(2 s nu), nu ~ 3 (:func:`sampling_band`), and the weighted slope (:func:`rms_slope`) by
#: ~ 0.032 over 2^8 ... 2^13, a third of the +-0.1 the slope is held to.
SEEDS = (128, 64, 32, 16, 8, 4)
#: Layer counts of the flow comparison.
LAYER_COUNTS = (8, 16, 32, 64, 128, 256)
#: Probability outside the stated band, each side (per size for the RMS; per run for a single error).
BAND_PROBABILITY = 1e-4
#: Relative step of the central differences that give the map's Jacobian (error ~ step^2, far below the band).
JACOBIAN_STEP = 1e-5


def particle_scheme(n: int, dim: int, V, Q, K, beta: float, attention: str, eps: float, weights=None):
    """The R^d particle engine with the moment map's attention: SA, the kernel of ``attention``, ``beta``, one head or
    the summed heads of the lists ``V, Q, K``; ``weights`` per token (``None``: uniform)."""
    heads = list(zip(head_list(Q), head_list(K), head_list(V)))
    extra = {"sinkhorn_eps": eps} if attention == "sinkhorn" else {}
    if len(heads) == 1:
        q, k, v = heads[0]
        settings = Attention("sa", Q=q, K=k, V=v, kernel=PARTICLE_KERNELS[attention], **extra)
    else:
        settings = Attention("sa", heads=heads, kernel=PARTICLE_KERNELS[attention], **extra)
    return ParticleScheme(Model("sa", beta, 0.0, dim), n, settings, weights=weights, sphere=False)


def weighted_moments(x: np.ndarray, weights=None):
    """Mean ``(..., d)`` and covariance ``(..., d, d)`` of the tokens ``x`` ``(..., n, d)`` (weights summing to 1;
    ``None``: uniform, i.e. the empirical measure, ddof 0)."""
    weights = np.full(x.shape[-2], 1.0 / x.shape[-2]) if weights is None else np.asarray(weights)
    mean = np.einsum("n,...ni->...i", weights, x)
    centred = x - mean[..., None, :]
    return mean, np.einsum("n,...ni,...nj->...ij", weights, centred, centred)


def moment_error(mean_a, cov_a, mean_b, cov_b) -> np.ndarray:
    """``sqrt(|m_a - m_b|^2 + ||Sigma_a - Sigma_b||_F^2)`` over the trailing axes."""
    return np.sqrt(np.sum((mean_a - mean_b) ** 2, axis=-1) + np.sum((cov_a - cov_b) ** 2, axis=(-2, -1)))


def _final_moments(problem: tuple, mean, cov) -> np.ndarray:
    """``(m, vec Sigma)`` after the layers of ``problem`` from ``N(mean, cov)``."""
    _, _, heads, attention, alpha, layers, eps = problem
    states = layer_states(mean, initial_factor(cov), heads, attention, eps, alpha, layers)
    require(states.shape[0] == layers + 1, "the moments overflowed: lower alpha, layers or the matrices")
    factor = states[-1, mean.size:].reshape(mean.size, mean.size)
    return np.concatenate([states[-1, :mean.size], (factor @ factor.T).ravel()])


def sampling_band(problem: tuple) -> np.ndarray:
    """The eigenvalues ``lambda_k`` of ``G = J Omega J^T``: ``n`` times the covariance of the final moments' error.

    The sample mean and covariance of ``n`` draws of ``N(m, Sigma)`` err by ``delta`` with covariance ``Omega / n``:
    ``Cov(m) = Sigma``, ``Cov(S_ij, S_kl) = Sigma_ik Sigma_jl + Sigma_il Sigma_jk``, ``Cov(m, S) = 0`` (no third
    moments).  Carried through the map (Jacobian ``J``, by central differences) the final moments err by ``J delta``,
    asymptotically ``N(0, G / n)``: ``n |J delta|^2`` is ``sum_k lambda_k chi^2_1`` and ``n E[error^2] -> C^2 =
    sum_k lambda_k``.  What this leaves out (the tokens feel their empirical measure, not the Gaussian of its
    moments) is the smaller part of the particles' error (MATH.md §3.1)."""
    mean, sigma = problem[0], problem[1]
    dim = mean.size
    pairs = [(i, j) for i in range(dim) for j in range(i, dim)]
    omega = np.zeros((dim + len(pairs),) * 2)
    omega[:dim, :dim] = sigma
    for a, (i, j) in enumerate(pairs):
        for b, (k, l) in enumerate(pairs):
            omega[dim + a, dim + b] = sigma[i, k] * sigma[j, l] + sigma[i, l] * sigma[j, k]
    columns = []
    scale = max(float(np.max(np.abs(sigma))), float(np.max(np.abs(mean))), 1e-300) * JACOBIAN_STEP
    for a in range(omega.shape[0]):
        shift_mean, shift_cov = np.zeros(dim), np.zeros((dim, dim))
        if a < dim:
            shift_mean[a] = scale
        else:
            i, j = pairs[a - dim]
            shift_cov[i, j] = shift_cov[j, i] = scale
        plus = _final_moments(problem, mean + shift_mean, sigma + shift_cov)
        minus = _final_moments(problem, mean - shift_mean, sigma - shift_cov)
        columns.append((plus - minus) / (2 * scale))
    jacobian = np.array(columns).T
    return np.clip(np.linalg.eigvalsh(jacobian @ omega @ jacobian.T), 0.0, None)[::-1]


def chernoff_band(weights, dof: int, probability: float) -> tuple[float, float]:
    """``(low, high)`` with ``P(Q < low) <= probability`` and ``P(Q > high) <= probability`` for
    ``Q = sum_k w_k chi^2_dof`` (independent): the Chernoff bounds ``P(Q > x) <= min_t e^{-t x} E e^{t Q}``,
    ``E e^{t Q} = prod_k (1 - 2 t w_k)^{-dof/2}``, solved for ``x`` (and the same with ``-t`` below)."""
    weights = np.asarray(weights, dtype=float)
    weights = weights[weights > 0]
    rate, top = math.log(1 / probability), float(weights.max())
    above = lambda u: (rate - 0.5 * dof * np.sum(np.log1p(-u * weights / top))) / (u / (2 * top))
    below = lambda v: -(0.5 * dof * np.sum(np.log1p(math.exp(v) * weights / top)) - rate) / (math.exp(v) / (2 * top))
    high = minimize_scalar(above, bounds=(1e-9, 1 - 1e-9), method="bounded", options={"xatol": 1e-12}).fun
    low = -minimize_scalar(below, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-10}).fun
    return max(low, 0.0), float(high)


def rms_slope(sizes, rms, dof) -> float:
    """The slope of ``log rms`` against ``log n`` when ``rms^2`` is ``sigma^2 chi^2_k / k`` with ``k = dof`` per size
    (draws times ``nu``): ``log rms`` has variance ``~ 1 / (2 k)`` and mean ``log sigma - 1 / (2 k)``, so the fit is
    least squares weighted by ``k`` of ``log rms + 1 / (2 k)``."""
    dof = np.asarray(dof, dtype=float)
    return float(np.polyfit(np.log(sizes), np.log(rms) + 0.5 / dof, 1, w=np.sqrt(dof))[0])


def gaussian_layers_against_particles(mean, cov, *, V, Q, K, alpha, layers, beta=1.0, attention="softmax",
                                      eps=1.0, sizes=SIZES, seeds=SEEDS, seed=0) -> xr.Dataset:
    """Tokens against the exact moment map after ``layers`` residual layers of step ``alpha``: errors against ``n``.

    Arguments as :func:`meanfield.gaussian_layers.gaussian_layers` (``scaled`` is not offered: the particle engine
    has no ``1 / sqrt(k)``); ``sizes``: token counts; ``seeds``: draws per size, one number or one per
    size (draw ``s`` of ``n`` tokens from the generator seeded ``[seed, n, s]``; the draws of one size run as one
    stack of systems).

    Returns
    -------
    xarray.Dataset
        ``error(n, seed)`` (NaN where a size has fewer draws); ``rms(n)`` over the draws; ``predicted(n) =
        C n^{-1/2}``, ``C^2 = sum_k lambda_k`` (:func:`sampling_band`); ``rms_low(n)``, ``rms_high(n)``: where the
        RMS of ``seeds(n)`` draws falls outside with probability at most ``BAND_PROBABILITY`` on each side, and
        ``error_high(n)``: the same for one error (:func:`chernoff_band` of the linearised error
        ``sum_k lambda_k chi^2 / n``); attrs ``slope`` (:func:`rms_slope`; theory ``-1/2``), ``constant`` ``C``,
        ``dof`` ``nu = (sum lambda)^2 / sum lambda^2`` (the error's effective degrees of freedom) and the settings.
    """
    problem = layer_problem(mean, cov, V, Q, K, alpha, layers, beta, attention, False, eps)
    start_mean, start_cov, _, attention, alpha, layers, eps = problem
    sizes = np.asarray(sizes, dtype=int)
    require(sizes.ndim == 1 and sizes.size >= 2 and bool(np.all(sizes >= 2)),
            "sizes must list at least two token counts >= 2")
    seeds = np.broadcast_to(np.asarray(seeds), sizes.shape)
    require(seeds.dtype.kind in "iu" and bool(np.all(seeds >= 2)),
            f"seeds must be an integer >= 2, or one per size (got {seeds.tolist()})")
    exact = gaussian_layers(start_mean, start_cov, V=V, Q=Q, K=K, alpha=alpha, layers=layers, beta=beta,
                            attention=attention, eps=eps)
    require(exact.attrs["stop_reason"] == "completed", f"the moments overflowed: {exact.attrs['stop_reason']}")
    final_mean, final_cov = exact["mean"].values[-1], exact["covariance"].values[-1]
    errors = np.full((sizes.size, int(seeds.max())), np.nan)
    for row, (n, count) in enumerate(zip(sizes, seeds)):
        x = np.stack([np.random.default_rng([seed, int(n), s]).multivariate_normal(start_mean, start_cov, size=n)
                      for s in range(count)])
        scheme = particle_scheme(int(n), start_mean.size, V, Q, K, float(beta), attention, eps)
        tokens = run_layers(scheme, x, alpha, layers)[-1]
        errors[row, :count] = moment_error(*weighted_moments(tokens), final_mean, final_cov)
    eigenvalues = sampling_band(problem)
    constant, dof = math.sqrt(eigenvalues.sum()), float(eigenvalues.sum() ** 2 / np.sum(eigenvalues ** 2))
    predicted = constant / np.sqrt(sizes)
    rms_band = np.array([chernoff_band(eigenvalues, int(count), BAND_PROBABILITY) for count in seeds]) / seeds[:, None]
    error_band = chernoff_band(eigenvalues, 1, BAND_PROBABILITY)[1]
    rms = np.sqrt(np.nanmean(errors ** 2, axis=1))
    return xr.Dataset(
        {"error": (("n", "seed"), errors), "rms": ("n", rms), "predicted": ("n", predicted),
         "rms_low": ("n", np.sqrt(rms_band[:, 0] / sizes)), "rms_high": ("n", np.sqrt(rms_band[:, 1] / sizes)),
         "error_high": ("n", np.sqrt(error_band / sizes)), "seeds": ("n", seeds.copy())},
        coords={"n": sizes, "seed": np.arange(errors.shape[1])},
        attrs={"slope": rms_slope(sizes, rms, seeds * dof), "constant": constant, "dof": dof, "alpha": alpha,
               "layers": layers, "beta": float(beta), "attention": attention, "band_probability": BAND_PROBABILITY})


def gaussian_layers_against_flow(mean, cov, *, V, Q, K, t_final, counts=LAYER_COUNTS, beta=1.0,
                                 attention="softmax", scaled=False, eps=1.0) -> xr.Dataset:
    """``L`` layers of step ``t_final / L`` against the moment ODE at ``t_final``.

    The ODE is :func:`meanfield.gaussian.solve` (DOP853 at ``meanfield.gaussian.RTOL``) with ``Q, K`` times ``sqrt(beta)`` (the same
    weights, module docstring of :mod:`meanfield.gaussian_layers`).  Arguments as
    :func:`meanfield.gaussian_layers.gaussian_layers`; ``counts``: the layer counts ``L`` (at least three).

    Returns
    -------
    xarray.Dataset
        ``error(layers)``; attrs ``order`` (``p`` of ``E = C L^-p (1 + c / L)``, fitted as ``log E = log C - p log L
        + c / L``; theory 1), ``richardson_error`` (the moments at ``4L_max``, ``8L_max``, ``16L_max`` extrapolated
        twice to ``L -> infinity``, against the ODE) and ``ode_tolerance`` (the ODE's ``rtol``).
    """
    counts = np.asarray(counts, dtype=int)
    require(counts.ndim == 1 and counts.size >= 3 and bool(np.all(counts >= 1)),
            "counts must list at least three layer counts >= 1")
    t_final = float(t_final)
    require(math.isfinite(t_final) and t_final > 0, f"t_final must be finite and > 0 (got {t_final!r})")
    require(math.isfinite(float(beta)) and beta >= 0, f"beta must be finite and >= 0 (got {beta!r})")
    root = math.sqrt(float(beta))
    flow = solve_moments(mean, cov, V=V, Q=[root * np.asarray(q, dtype=float) for q in head_list(Q)],
                         K=[root * np.asarray(k, dtype=float) for k in head_list(K)], t_final=t_final,
                         attention=attention, scaled=scaled, eps=eps, save_every=t_final)
    require(flow.attrs["stop_reason"] == "completed", f"the moment ODE stopped early: {flow.attrs['stop_reason']}")
    target = np.concatenate([flow["mean"].values[-1], flow["covariance"].values[-1].ravel()])

    def final(count: int) -> np.ndarray:
        run = gaussian_layers(mean, cov, V=V, Q=Q, K=K, alpha=t_final / count, layers=int(count), beta=beta,
                              attention=attention, scaled=scaled, eps=eps)
        require(run.attrs["stop_reason"] == "completed", f"the moments overflowed: {run.attrs['stop_reason']}")
        return np.concatenate([run["mean"].values[-1], run["covariance"].values[-1].ravel()])

    errors = np.array([np.linalg.norm(final(count) - target) for count in counts])
    finest = 4 * int(counts.max())
    coarse, middle, fine = (final(count) for count in (finest, 2 * finest, 4 * finest))
    limit = (4 * (2 * fine - middle) - (2 * middle - coarse)) / 3
    return xr.Dataset({"error": ("layers", errors)}, coords={"layers": counts},
                      attrs={"order": fitted_layer_order(counts, errors),
                             "richardson_error": float(np.linalg.norm(limit - target)), "t_final": t_final,
                             "beta": float(beta), "attention": str(attention), "ode_tolerance": RTOL})
