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
clipping.  ``(alpha, L)`` is integrated by scipy's DOP853 inside the package's one run loop
(:func:`meanfield.solvers.runloop.run` with :class:`meanfield.solvers.steppers.ScipyStepper`, step for step what
``scipy.integrate.solve_ivp`` does; every step is saved by :class:`meanfield.solvers.trackers.StepRecorder`),
and the Dataset is built by :func:`meanfield.storage.build_run_dataset` with the run attributes of
every run (``command``, ``package_version``, ``stop_reason``, ``wall_time``, ...).
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
import xarray as xr
from scipy.integrate import OdeSolution

from .defaults import GAUSSIAN_DEFAULTS
from .errors import require
from .storage import build_run_dataset, package_version

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


def _head_list(value) -> list:
    """A single matrix, or a list/tuple (or 3-D array) of per-head matrices."""
    if isinstance(value, (list, tuple)) and value and all(np.ndim(item) == 2 for item in value):
        return list(value)
    if np.ndim(value) == 3:
        return list(np.asarray(value))
    return [value]


def _build_heads(V, Q, K, dim: int, scaled: bool) -> list[Head]:
    values, queries, keys = _head_list(V), _head_list(Q), _head_list(K)
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
    c = 2.0 * b / (1.0 + np.sqrt(1.0 + 4.0 * b * b))
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
    alpha, sigma, heads, attention = _validated(mean, cov, V, Q, K, attention, scaled)
    c, M = affine_field(alpha, _initial_factor(sigma), heads, attention, _positive("eps", eps))
    return c + np.asarray(x, dtype=float) @ M.T


def moment_rhs(alpha: np.ndarray, sigma: np.ndarray, heads: list[Head], attention: str, eps: float = 1.0):
    """``(d alpha/dt, d Sigma/dt)`` of MATH.md §3."""
    c, M = affine_field(alpha, _initial_factor(sigma), heads, attention, eps)
    return c + M @ alpha, M @ sigma + sigma @ M.T


# ---------------------------------------------------------------- integration

def _initial_factor(cov: np.ndarray) -> np.ndarray:
    """``L`` with ``L L^T = cov`` (symmetric square root; handles singular covariances)."""
    values, vectors = np.linalg.eigh(cov)
    return vectors * np.sqrt(np.maximum(values, 0.0))  # rounding-level negatives of a PSD input


def _unpack(y: np.ndarray, dim: int):
    return y[:dim], y[dim:].reshape(dim, dim)


def _factor_rhs(dim: int, heads: list[Head], attention: str, eps: float):
    def rhs(_t, y):
        alpha, L = _unpack(y, dim)
        if attention == "sinkhorn":  # d alpha/dt = V alpha, dL/dt = V L Ct^T: no pseudo-inverse needed
            drift = sum(_factor_drift(L, head, eps) for head in heads)
            return np.concatenate([sum(head.V for head in heads) @ alpha, drift.ravel()])
        c, M = affine_field(alpha, L, heads, attention)
        return np.concatenate([c + M @ alpha, (M @ L).ravel()])
    return rhs


def _cov_norm(y: np.ndarray, dim: int) -> float:
    return float(np.linalg.norm(_unpack(y, dim)[1], 2) ** 2)


def _blowup_event(dim: int, threshold: float):
    def event(_t, y):
        return _cov_norm(y, dim) / threshold - 1.0
    event.terminal = True
    event.direction = 1
    return event


def extrapolate_blowup(times: np.ndarray, norms: np.ndarray) -> float:
    """Zero of the straight line fitted to ``1 / norms`` over the last steps (NaN if it does not fall)."""
    t = np.asarray(times[-EXTRAPOLATION_POINTS:], dtype=float)
    inverse = 1.0 / np.asarray(norms[-EXTRAPOLATION_POINTS:], dtype=float)
    slope, intercept = np.polyfit(t - t[-1], inverse, 1)
    return t[-1] - intercept / slope if slope < 0 else math.nan


def _classify(status: int, message, sol, dim: int):
    """``(stop_reason, blowup_time or None)`` of a run that ended with the integrator's ``status``
    (``0`` reached ``t_final``, ``1`` the blow-up event, ``-1`` failed with ``message``)."""
    if status == -1:
        return f"failed: {message}", None
    if status == 0:
        return "completed", None
    norms = [_cov_norm(y, dim) for y in sol.y.T]
    estimate = extrapolate_blowup(sol.t, norms)
    if math.isfinite(estimate) and estimate - sol.t[-1] <= FINITE_TIME_GAP * estimate:
        return "blowup", float(estimate)
    return "threshold", None


def _save_times(sol, save_every):
    if save_every is None:
        return sol.t
    times = np.arange(0.0, sol.t[-1], save_every)
    return times if math.isclose(times[-1], sol.t[-1]) else np.append(times, sol.t[-1])


def _validated(mean, cov, V, Q, K, attention, scaled):
    require(isinstance(attention, str) and attention.lower() in ATTENTIONS,
            f"attention must be one of {', '.join(ATTENTIONS)} (got {attention!r})")
    require(isinstance(scaled, (bool, np.bool_)), f"scaled must be True or False (got {scaled!r})")
    alpha = _finite_array("mean", mean, 1)
    require(alpha.size >= 1, "mean must have at least one entry")
    sigma = _check_covariance(cov, alpha.size)
    return alpha, sigma, _build_heads(V, Q, K, alpha.size, bool(scaled)), attention.lower()


def _positive(name: str, value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        require(False, f"{name} must be a number (got {value!r})")
    require(math.isfinite(value) and value > 0, f"{name} must be finite and > 0 (got {value!r})")
    return value


def solve(mean, cov, *, V, Q, K, t_final, attention: str = GAUSSIAN_DEFAULTS["attention"],
          save_every=GAUSSIAN_DEFAULTS["save_every"], scaled: bool = GAUSSIAN_DEFAULTS["scaled"],
          eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]) -> xr.Dataset:
    """Integrate the moment ODEs of MATH.md §3 from ``N(mean, cov)`` up to ``t_final``.

    Parameters
    ----------
    mean : array, shape (d,)
        The initial mean.
    cov : array, shape (d, d)
        The initial covariance (symmetric positive semi-definite).
    V, Q, K : array or list of arrays
        ``V`` (d x d), ``Q``, ``K`` (k x d, k may differ between heads): one matrix each, or lists of per-head
        matrices (multi-head: fields summed).
    t_final : float
        The end time, > 0.
    attention : {"softmax", "l2", "sinkhorn"}
        The kernel; ``sinkhorn`` with entropic parameter ``eps`` (log-kernel ``<Qx, Ky> / eps``).
    save_every : float or None
        Output spacing (``None``: every accepted step).
    scaled : bool
        Divide the logits by ``sqrt(k)``, as in transformers.
    eps : float
        The entropic parameter of ``sinkhorn``, > 0.

    Returns
    -------
    xarray.Dataset
        ``mean(time, i)``, ``covariance(time, i, j)`` and attrs ``stop_reason`` (``completed``, ``blowup``,
        ``threshold`` or ``failed: ...``) and ``blowup_time`` (estimated blow-up time, or ``"none"``).
    """
    alpha, sigma, heads, attention = _validated(mean, cov, V, Q, K, attention, scaled)
    t_final = _positive("t_final", t_final)
    eps = _positive("eps", eps)
    if save_every is not None:
        save_every = _positive("save_every", save_every)
    from meanfield.solvers.runloop import run  # solvers is imported inside the call (DESIGN.md "Layout")
    from meanfield.solvers.steppers import ScipyStepper
    from meanfield.solvers.trackers import StepRecorder

    dim = alpha.size
    y0 = np.concatenate([alpha, _initial_factor(sigma).ravel()])
    norm0 = float(np.linalg.norm(sigma, 2))
    events = [_blowup_event(dim, BLOWUP_FACTOR * norm0)] if norm0 > 0 else []
    moments = GaussianMoments(dim, heads, attention, eps)
    stepper = ScipyStepper(moments, "DOP853", 0.0, y0, t_final, RTOL, ATOL, events)
    recorder = StepRecorder()
    record = run(moments, stepper, y0, t_final, t_final, trackers=[recorder])
    sol = _Solution(np.array(recorder.times), np.vstack(recorder.states).T,
                    OdeSolution(np.array(recorder.times), recorder.interpolants) if recorder.interpolants else None)
    if record.stop_reason.startswith("interrupted"):  # Ctrl-C: what was computed is kept
        stop_reason, blowup_time = record.stop_reason, None
    else:
        stop_reason, blowup_time = _classify(stepper.status, stepper.message, sol, dim)
    times = _save_times(sol, save_every)
    states = sol.y if save_every is None else sol.sol(times)
    settings = {"attention": attention, "dim": dim, "t_final": t_final, "save_every": save_every,
                "scaled": bool(scaled), "eps": eps if attention == "sinkhorn" else None}
    attrs = {"geometry": "gaussian", "attention": attention, "scaled": bool(scaled), "t_final": t_final,
             "eps": eps if attention == "sinkhorn" else "none",
             "dim": dim, "heads": len(heads), "stop_reason": stop_reason, "blowup_time": blowup_time,
             "stepper": "scipy solve_ivp DOP853 on (alpha, L), Sigma = L L^T", "rtol": RTOL, "atol": ATOL,
             "blowup_factor": BLOWUP_FACTOR, "package_version": package_version(),
             "command": "meanfield.gaussian.solve(mean, cov, V=V, Q=Q, K=K, "
                        + ", ".join(f"{key}={value!r}" for key, value in settings.items() if value is not None) + ")",
             "t_reached": float(sol.t[-1]), "steps": record.steps,
             "rejected_steps": record.rejected_steps, "wall_time": record.wall_time}
    return _dataset(np.asarray(times), states, dim, attrs)


@dataclass
class _Solution:
    """What ``solve_ivp`` would return: the step times ``t``, the states ``y`` (columns) and the dense output."""

    t: np.ndarray
    y: np.ndarray
    sol: OdeSolution | None


class GaussianMoments:
    """The moment ODEs as a scheme of the run loop (the contract of ``meanfield.solvers.contract``): the state is
    ``(alpha, L)`` flattened; no validity check of its own (the integrator reports failures)."""

    name = geometry = "gaussian"
    linear = None
    state_scale = 1.0

    def __init__(self, dim: int, heads: list[Head], attention: str, eps: float):
        self.dim, self._rhs = dim, _factor_rhs(dim, heads, attention, eps)

    def rhs(self, y: np.ndarray, t: float) -> np.ndarray:
        return self._rhs(t, y)

    def stable_dt(self, cfl: float) -> float:
        return math.inf

    def validity(self, y: np.ndarray, t: float) -> None:
        return None

    def frame(self, y: np.ndarray) -> dict:
        """Nothing: the run saves every step (``StepRecorder``), and the Dataset is built from those."""
        return {}

    def dims(self) -> dict:
        return {"mean": ("i",), "covariance": ("i", "j")}

    def coords(self) -> dict:
        return {"i": np.arange(self.dim), "j": np.arange(self.dim)}


def _dataset(times: np.ndarray, states: np.ndarray, dim: int, attrs: dict) -> xr.Dataset:
    means = states[:dim].T
    factors = states[dim:].T.reshape(-1, dim, dim)
    covariances = factors @ np.swapaxes(factors, 1, 2)
    covariances = 0.5 * (covariances + np.swapaxes(covariances, 1, 2))  # exact symmetry of L L^T
    frames = [{"mean": mean, "covariance": covariance} for mean, covariance in zip(means, covariances)]
    dims = {"mean": ("i",), "covariance": ("i", "j")}
    return build_run_dataset(times, frames, dims, {"i": np.arange(dim), "j": np.arange(dim)}, attrs)
