"""Gaussian data in R^d: mean and covariance ODEs of attention dynamics (MATH.md §3).

Tokens live in ``R^d`` and move by ``dx/dt = Gamma_mu(x)``; for every attention
treated here ``Gamma_mu`` is *affine* in ``x`` when ``mu = N(alpha, Sigma)``, so a
Gaussian stays Gaussian (Castin–Ablin–Carrillo–Peyré, seed 004) and the PDE reduces
to ODEs for the moments.

Derivation (exponential tilt of a Gaussian)
-------------------------------------------
If ``mu = N(alpha, Sigma)`` and ``w(y) = exp(<b, y> - y^T P y / 2)`` with ``P`` positive
semi-definite, then ``w mu / int w dmu = N(m, S)`` with

    S = (Sigma^{-1} + P)^{-1} = B Sigma,   m = S (Sigma^{-1} alpha + b) = B alpha + S b,
    B = (I + Sigma P)^{-1}.

(complete the square in the exponent).  The right-hand forms never invert
``Sigma``: they hold for singular (low-rank) covariances too, and ``I + Sigma P``
is invertible because its eigenvalues are those of
``I + Sigma^{1/2} P Sigma^{1/2} >= I``.  With ``A = K^T Q``:

* softmax, weights ``exp(<Qx, Ky>) = exp(<A x, y>)``: ``b = A x``, ``P = 0``, so
  ``Gamma_mu(x) = V (alpha + Sigma A x)``.
* L2, weights ``exp(-|Qx - Ky|^2 / 2)``: up to a factor independent of ``y``,
  ``b = A x``, ``P = K^T K``, so ``Gamma_mu(x) = V S (Sigma^{-1} alpha + A x)
  = V B alpha + V S A x``  (MATH.md §3).

Write the field as ``Gamma(x) = c + M x``: softmax ``c = V alpha``, ``M = V Sigma A``;
L2 ``c = V B alpha``, ``M = V S A``.  Pushing ``N(alpha, Sigma)`` along an affine
field gives

    d alpha / dt = E[Gamma(x)] = c + M alpha,
    d Sigma / dt = M Sigma + Sigma M^T,

which for softmax is ``V (I + Sigma A) alpha`` and ``V Sigma A Sigma + Sigma A^T Sigma V^T``,
for L2 ``V S (Sigma^{-1} + A) alpha`` and ``M Sigma + Sigma M^T`` — the formulas of MATH.md §3.

Sinkhorn attention (Sander et al.'s Sinkformers; entropic parameter ``eps``): the weights
``exp(<Qx, Ky> / eps)`` are rescaled to a doubly stochastic plan ``pi`` with both marginals
``mu`` (the entropic optimal-transport plan of ``mu`` with itself for the cost
``-<Qx, Ky>``), and ``Gamma_mu(x) = V E_pi[y | x]``.  For ``mu = N(alpha, L L^T)`` write
``x = alpha + L u``, ``y = alpha + L v``: the log-kernel is ``u^T Bt v`` plus terms in ``u``
or ``v`` alone (absorbed by the Sinkhorn potentials), ``Bt = L^T A^T L / eps``.  A Gaussian
coupling of ``u, v ~ N(0, I)`` has these marginals and, when its precision matrix has
off-diagonal block ``-Bt``, exactly this density ratio; Sinkhorn's solution being unique,
it is the plan.  Its cross-covariance ``Ct`` solves ``(I - Ct Ct^T)^{-1} Ct = Bt``: with the
SVD ``Bt = U diag(b) W^T``, ``Ct = U diag(c) W^T``, ``c = 2b / (1 + sqrt(1 + 4 b^2))``.  Then
``E[v | u] = Ct^T u``, so ``Gamma(x) = V alpha + V L Ct^T L^+ (x - alpha)``: the mean moves by
``d alpha/dt = V alpha`` and the factor by ``dL/dt = V L Ct^T``.  For ``eps -> oo``,
``Ct ~ Bt`` and this is the softmax field with ``A / eps``; for ``eps -> 0``, ``c -> 1``.

Multi-head attention sums the fields of the heads ``(V_h, Q_h, K_h)``, hence sums
``c_h`` and ``M_h``.  Identical ``(Q_h, K_h)`` give identical ``Sigma A`` (softmax) and
``B, S A`` (L2), so the heads collapse into one head with ``V = sum_h V_h``.

Scaling (``scaled=True``): the logits are divided by ``sqrt(k)`` (``k`` = number of
rows of ``Q_h``, ``K_h``), as in transformers.  For softmax that is ``A = K^T Q / sqrt(k)``;
for L2 it is the weight ``exp(-|Qx - Ky|^2 / (2 sqrt(k)))``, i.e. ``Q`` and ``K`` both
multiplied by ``k^{-1/4}`` (so again ``A = K^T Q / sqrt(k)``, and ``P = K^T K / sqrt(k)``).
Castin et al.'s own code uses ``sqrt(d)`` and L2 weights without the 1/2 (MATH.md §3).

Integration
-----------
``Sigma = L L^T`` with ``dL/dt = M L`` solves ``dSigma/dt = M Sigma + Sigma M^T``,
so the covariance is symmetric positive semi-definite by construction, with no
clipping.  The run itself (scipy's DOP853 on ``(alpha, L)`` inside the package's run loop, the Dataset and its
attributes) is :func:`meanfield.solvers.runs.gaussian_run.solve`, reached as ``meanfield.gaussian.solve``.
A terminal event fires when ``||Sigma||_2`` exceeds ``BLOWUP_FACTOR * ||Sigma_0||_2``.
The blow-up time is estimated by extrapolating ``1 / ||Sigma||_2`` linearly to zero
from the last accepted steps: for the exact solution ``Sigma(t) = Sigma_0 (I - 2 t Sigma_0)^{-1}``
(``V = A = I``, ``alpha = 0``) ``1 / lambda_max = 1 / lambda_0 - 2 t`` is linear, and near any
Riccati-type blow-up ``||Sigma|| ~ c / (t* - t)``.  If the extrapolated time lies far
beyond the stopping time (relative gap above ``FINITE_TIME_GAP``) the growth is not a
finite-time blow-up (e.g. exponential): the run stops with ``stop_reason = "threshold"``
and ``blowup_time = "none"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .defaults import GAUSSIAN_DEFAULTS
from .errors import require
from .fits import fit_line

ATTENTIONS = ("softmax", "l2", "sinkhorn")
RTOL = 1e-10
ATOL = 1e-13
#: Stop when ||Sigma|| exceeds this multiple of ||Sigma_0||.
BLOWUP_FACTOR = 1e8
#: Steps used for the linear extrapolation of 1 / ||Sigma|| to zero.
EXTRAPOLATION_POINTS = 4
#: Largest (t_blowup - t_stop) / t_blowup still called a finite-time blow-up.
FINITE_TIME_GAP = 1e-4
#: Relative tolerance for symmetry and positive semi-definiteness of the input covariance.
INPUT_TOL = 1e-10


@dataclass(frozen=True)
class Head:
    """One attention head reduced to what the moment equations need: V, A = K^T Q, P = K^T K."""

    V: np.ndarray
    A: np.ndarray
    P: np.ndarray


# ---------------------------------------------------------------- validation

def _finite_array(name: str, value, ndim: int) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        require(False, f"{name} must be a numeric array (got {type(value).__name__})")
    require(array.ndim == ndim, f"{name} must be {ndim}-dimensional (got shape {array.shape})")
    require(bool(np.all(np.isfinite(array))), f"{name} must be finite (contains NaN or inf)")
    return array


def _check_covariance(cov, dim: int) -> np.ndarray:
    cov = _finite_array("cov", cov, 2)
    require(cov.shape == (dim, dim), f"cov must have shape ({dim}, {dim}) to match mean (got {cov.shape})")
    scale = max(float(np.max(np.abs(cov))), 1e-300)
    asym = float(np.max(np.abs(cov - cov.T)))
    require(asym <= INPUT_TOL * scale, f"cov must be symmetric (max |cov - cov^T| = {asym:.3g})")
    lowest = float(np.linalg.eigvalsh(cov)[0])
    require(lowest >= -INPUT_TOL * scale,
            f"cov must be positive semi-definite (smallest eigenvalue {lowest:.3g})")
    return cov


def head_list(value) -> list:
    """A single matrix, or a list/tuple (or 3-D array) of per-head matrices."""
    if isinstance(value, (list, tuple)) and value and all(np.ndim(item) == 2 for item in value):
        return list(value)
    if np.ndim(value) == 3:
        return list(np.asarray(value))
    return [value]


def _build_heads(V, Q, K, dim: int, scaled: bool) -> list[Head]:
    values, queries, keys = head_list(V), head_list(Q), head_list(K)
    require(len(values) == len(queries) == len(keys),
            f"V, Q, K must list the same number of heads (got {len(values)}, {len(queries)}, {len(keys)})")
    return [_build_head(h, v, q, k, dim, scaled) for h, (v, q, k) in enumerate(zip(values, queries, keys))]


def _build_head(h: int, v, q, k, dim: int, scaled: bool) -> Head:
    v, q, k = (_finite_array(f"{name}[{h}]", m, 2) for name, m in (("V", v), ("Q", q), ("K", k)))
    require(v.shape == (dim, dim), f"V[{h}] must have shape ({dim}, {dim}) (got {v.shape})")
    require(q.shape[1] == dim, f"Q[{h}] must have {dim} columns (got shape {q.shape})")
    require(k.shape == q.shape, f"K[{h}] must have the shape of Q[{h}], {q.shape} (got {k.shape})")
    factor = q.shape[0] ** -0.25 if scaled else 1.0
    q, k = factor * q, factor * k
    return Head(V=v, A=k.T @ q, P=k.T @ k)


# ---------------------------------------------------------------- the affine field

def _tilt(sigma: np.ndarray, head: Head, attention: str):
    """(B, S) of the tilted Gaussian: B = (I + Sigma P)^{-1}, S = B Sigma (softmax: P = 0)."""
    if attention == "softmax":
        return None, sigma
    B = np.linalg.inv(np.eye(sigma.shape[0]) + sigma @ head.P)
    return B, B @ sigma


def sinkhorn_coupling(factor: np.ndarray, head: Head, eps: float) -> np.ndarray:
    """Whitened cross-covariance ``Ct`` of the entropic plan of ``N(alpha, L L^T)`` with itself.

    Log-kernel ``<Q x, K y> / eps = x^T B y``, ``B = A^T / eps``; with ``x = alpha + L u``,
    ``y = alpha + L v`` it is ``u^T Bt v`` (+ terms absorbed by the Sinkhorn potentials),
    ``Bt = L^T B L``.  The plan is the Gaussian coupling of ``u, v ~ N(0, I)`` with
    cross-covariance ``Ct`` whose precision has off-diagonal block ``-Bt``:
    ``(I - Ct Ct^T)^{-1} Ct = Bt``.  With ``Bt = U diag(b) W^T``: ``Ct = U diag(c) W^T``,
    ``c / (1 - c^2) = b``, i.e. ``c = 2 b / (1 + sqrt(1 + 4 b^2))`` in ``[0, 1)`` (MATH.md §3).
    """
    Bt = factor.T @ head.A.T @ factor / eps
    U, b, Wt = np.linalg.svd(Bt)
    large = b > 1e150                        # 4 b^2 overflows: the same c, divided through by b (c -> 1 as b grows)
    safe = np.where(large, 0.0, b)
    c = 2.0 * safe / (1.0 + np.sqrt(1.0 + 4.0 * safe * safe))
    inverse = 1.0 / np.where(large, b, 1.0)
    c = np.where(large, 2.0 / (inverse + np.sqrt(inverse * inverse + 4.0)), c)
    return (U * c) @ Wt


def _factor_drift(factor: np.ndarray, head: Head, eps: float) -> np.ndarray:
    """``M L = V L Ct^T`` for Sinkhorn (no inverse of ``L``: valid for singular covariances)."""
    return head.V @ factor @ sinkhorn_coupling(factor, head, eps).T


def affine_field(alpha: np.ndarray, factor: np.ndarray, heads: list[Head], attention: str, eps: float = 1.0):
    """``(c, M)`` with ``Gamma_mu(x) = c + M x`` for ``mu = N(alpha, L L^T)``, summed over heads.

    Sinkhorn: ``E[y | x] = alpha + L Ct^T L^+ (x - alpha)`` (``L^+``: pseudo-inverse), so
    ``M = V L Ct^T L^+`` and ``c = V alpha - M alpha``.
    """
    c = np.zeros_like(alpha)
    M = np.zeros_like(factor)
    sigma = factor @ factor.T
    for head in heads:
        if attention == "sinkhorn":
            head_M = _factor_drift(factor, head, eps) @ np.linalg.pinv(factor, rcond=1e-13)
            c += head.V @ alpha - head_M @ alpha
            M += head_M
            continue
        B, S = _tilt(sigma, head, attention)
        c += head.V @ (alpha if B is None else B @ alpha)
        M += head.V @ S @ head.A
    return c, M


def velocity_field(x, mean, cov, *, V, Q, K, attention: str = GAUSSIAN_DEFAULTS["attention"],
                   scaled: bool = GAUSSIAN_DEFAULTS["scaled"],
                   eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]) -> np.ndarray:
    """The particle velocity ``Gamma_mu(x)`` for ``mu = N(mean, cov)`` at points ``x`` (shape (n, d) or (d,))."""
    alpha, sigma, heads, attention = validated_problem(mean, cov, V, Q, K, attention, scaled)
    c, M = affine_field(alpha, initial_factor(sigma), heads, attention, positive_number("eps", eps))
    return c + np.asarray(x, dtype=float) @ M.T


def moment_rhs(alpha: np.ndarray, sigma: np.ndarray, heads: list[Head], attention: str, eps: float = 1.0):
    """``(d alpha/dt, d Sigma/dt)`` of MATH.md §3."""
    c, M = affine_field(alpha, initial_factor(sigma), heads, attention, eps)
    return c + M @ alpha, M @ sigma + sigma @ M.T


# ---------------------------------------------------------------- integration

def initial_factor(cov: np.ndarray) -> np.ndarray:
    """``L`` with ``L L^T = cov`` (symmetric square root; handles singular covariances)."""
    values, vectors = np.linalg.eigh(cov)
    return vectors * np.sqrt(np.maximum(values, 0.0))  # rounding-level negatives of a PSD input


def moment_frames(states: np.ndarray, dim: int) -> list[dict]:
    """``{"mean", "covariance"}`` per row of ``states`` (rows ``(alpha, L)`` flattened): ``Sigma = L L^T``, symmetrised
    to exact symmetry (the names of a Gaussian run's variables)."""
    states = np.asarray(states)
    factors = states[:, dim:].reshape(-1, dim, dim)
    with np.errstate(over="ignore", invalid="ignore"):          # an overflowed last state is kept as it is
        covariances = factors @ np.swapaxes(factors, 1, 2)
    covariances = 0.5 * (covariances + np.swapaxes(covariances, 1, 2))
    return [{"mean": mean, "covariance": covariance} for mean, covariance in zip(states[:, :dim], covariances)]


def _unpack(y: np.ndarray, dim: int):
    return y[:dim], y[dim:].reshape(dim, dim)


def factor_rhs(dim: int, heads: list[Head], attention: str, eps: float):
    def rhs(_t, y):
        alpha, L = _unpack(y, dim)
        if attention == "sinkhorn":  # d alpha/dt = V alpha, dL/dt = V L Ct^T: no pseudo-inverse needed
            drift = sum(_factor_drift(L, head, eps) for head in heads)
            return np.concatenate([sum(head.V for head in heads) @ alpha, drift.ravel()])
        c, M = affine_field(alpha, L, heads, attention)
        return np.concatenate([c + M @ alpha, (M @ L).ravel()])
    return rhs


def covariance_norm(y: np.ndarray, dim: int) -> float:
    return float(np.linalg.norm(_unpack(y, dim)[1], 2) ** 2)


def blowup_event(dim: int, threshold: float):
    def event(_t, y):
        return covariance_norm(y, dim) / threshold - 1.0
    event.terminal = True
    event.direction = 1
    return event


def extrapolate_blowup(times: np.ndarray, norms: np.ndarray) -> float:
    """Zero of the straight line fitted to ``1 / norms`` over the last steps (NaN if it does not fall)."""
    t = np.asarray(times[-EXTRAPOLATION_POINTS:], dtype=float)
    inverse = 1.0 / np.asarray(norms[-EXTRAPOLATION_POINTS:], dtype=float)
    slope, intercept = fit_line(t - t[-1], inverse)
    return t[-1] - intercept / slope if slope < 0 else math.nan


def validated_problem(mean, cov, V, Q, K, attention, scaled):
    require(isinstance(attention, str) and attention.lower() in ATTENTIONS,
            f"attention must be one of {', '.join(ATTENTIONS)} (got {attention!r})")
    require(isinstance(scaled, (bool, np.bool_)), f"scaled must be True or False (got {scaled!r})")
    alpha = _finite_array("mean", mean, 1)
    require(alpha.size >= 1, "mean must have at least one entry")
    sigma = _check_covariance(cov, alpha.size)
    return alpha, sigma, _build_heads(V, Q, K, alpha.size, bool(scaled)), attention.lower()


def positive_number(name: str, value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        require(False, f"{name} must be a number (got {value!r})")
    require(math.isfinite(value) and value > 0, f"{name} must be finite and > 0 (got {value!r})")
    return value


def __getattr__(name: str):
    """``meanfield.gaussian.solve``: the Gaussian driver :func:`meanfield.solvers.runs.gaussian_run.solve`, imported on first
    use (an entry point of the layer rule, pyproject's import-linter contract, so that this model module imports no
    solver when it is imported)."""
    if name == "solve":
        from .solvers.runs.gaussian_run import solve as function
        globals()["solve"] = function
        return function
    raise AttributeError(f"module 'meanfield.gaussian' has no attribute {name!r}")
