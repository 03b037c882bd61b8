"""Hardmax self-attention (``beta = inf``) for tokens in R^d, integrated exactly, and its finite-beta softmax twin.

The dynamics (docs/MATH.md "12. Hardmax attention"), in the residual Frank–Wolfe form of Alcalde–Geshkovski–
Ruiz-Balet ("Attention's forward pass and Frank–Wolfe", 2025) and Alcalde–Fantuzzi–Zuazua (SIAM J. Math. Data
Sci. 2025), tokens ``x_1..x_n`` in R^d, no projection, ``A = Q^T K``::

    S_i(x) = argmax_j <Q x_i, K x_j> = argmax_j x_i^T A x_j          (ties: the whole set)
    dx_i/dt = m_i(x) - x_i,      m_i(x) = (sum_{j in S_i} w_j x_j) / (sum_{j in S_i} w_j)

with token weights ``w`` (uniform by default). While the sets ``S_i`` do not change the system is linear,
``x' = (P - I) x`` with ``P`` the row-stochastic selection matrix, so ``x(t) = expm((P - I)(t - t_0)) x(t_0)``
exactly. A set changes when a score difference ``x_i^T A (x_j - x_k)`` (``k`` in ``S_i``, ``j`` not) reaches
zero; each such function is a finite sum of (complex) exponentials in ``t`` whose rates are sums of two
eigenvalues of ``P - I`` (in the disk ``|lambda + 1| <= 1``, so real parts in ``[-4, 0]``, frequencies at most 2),
bracketed on a grid of step ``bracket`` over the first time unit of a segment and ``bracket * t`` after it (where
only the non-oscillating part survives) and dated by Brent's method to ``1e-14``; the sets after an event are those the old motion reaches ``1e-9`` later. Two crossings
closer than the grid step (a tangency) are not seen; a Filippov sliding mode (a token whose new set's motion takes
it straight back) or ``2n`` events within ``1e-6`` of time raise :class:`HardmaxError`.

The finite-beta dynamics replaces ``S_i`` by the softmax weights
``P_ij = w_j e^{beta x_i^T A x_j} / sum_k w_k e^{beta x_i^T A x_k}`` in the same equation."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.integrate import solve_ivp
from scipy.linalg import expm
from scipy.optimize import brentq

from .token_kernel import row_softmax

TIE = 1e-12          # scores within this fraction of the largest |score| of the maximum are tied


class HardmaxError(RuntimeError):
    """The event-driven hardmax integration cannot continue (a sliding mode, or too many events). Raised by
    :func:`hardmax_trajectory`, it carries what was computed before: ``positions`` (the frames at the times before
    the failure, exact) and ``events`` (the event times dated so far)."""

    positions: np.ndarray = np.empty((0, 0, 0))
    events: tuple = ()


def argmax_sets(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``(n, n)`` booleans: ``S[i, j]`` when ``x_i^T A x_j`` is the maximum over ``j`` (ties up to ``TIE``)."""
    scores = x @ a @ x.T
    top = scores.max(axis=1, keepdims=True)
    return scores >= top - TIE * float(np.abs(scores).max())


def selection_matrix(sets: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The row-stochastic ``P``: row ``i`` holds ``w_j / sum_{S_i} w`` on ``S_i``."""
    p = sets * weights[None, :]
    return p / p.sum(axis=1, keepdims=True)


def _first_crossing(x0: np.ndarray, a: np.ndarray, gen: np.ndarray, sets: np.ndarray, horizon: float,
                    bracket: float) -> float | None:
    """The first time in ``(0, horizon]`` at which a non-member's score reaches a member's, or ``None``."""
    members = sets.copy()

    def gaps(t: float) -> np.ndarray:
        y = expm(gen * t) @ x0
        scores = y @ a @ y.T
        best = np.where(members, scores, np.inf).min(axis=1, keepdims=True)
        overtaken = np.where(members, -np.inf, scores - best).max(axis=1)    # > 0 once an outsider overtakes
        split = np.where(members, scores, -np.inf).max(axis=1) - best[:, 0] - TIE * np.abs(scores).max()
        return np.maximum(overtaken, split)                                  # > 0 once tied members part

    early = np.arange(bracket, min(horizon, 1.0), bracket)
    late = np.geomspace(1.0, horizon, 2 + int(np.log(horizon) / np.log1p(bracket))) if horizon > 1.0 else []
    times = np.append(np.append(early, late), horizon)
    t_before = 1e-9 * bracket                     # just inside the segment: no set may already be left
    before = gaps(t_before)
    if (before > TIE * np.abs(x0 @ a @ x0.T).max()).any():    # beyond rounding: a tie left the wrong way
        raise HardmaxError("a token leaves its new argmax set at once (a sliding mode), which this exact "
                           "integration does not follow")
    for t in times:
        now = gaps(t)
        crossed = np.flatnonzero((now >= 0) & (before < 0))
        if crossed.size:
            return min(brentq(lambda s, i=i: gaps(s)[i], t_before, t, xtol=1e-14, rtol=1e-15) for i in crossed)
        before, t_before = now, t
    return None


def hardmax_trajectory(x0: np.ndarray, a: np.ndarray, times: np.ndarray, weights: np.ndarray | None = None,
                       bracket: float = 0.02, max_events: int = 10_000) -> tuple[np.ndarray, list[float]]:
    """Positions ``(len(times), n, d)`` at the sorted ``times`` (from ``t = 0``), and the event times."""
    x = np.array(x0, dtype=float)
    n = len(x)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    times = np.asarray(times, dtype=float)
    out = np.empty((len(times),) + x.shape)
    events: list[float] = []
    start, k, sets = 0.0, 0, argmax_sets(x, a)
    try:
        while k < len(times):
            gen = selection_matrix(sets, w) - np.eye(n)
            end = _first_crossing(x, a, gen, sets, times[-1] - start, bracket) if times[-1] > start else None
            stop = np.inf if end is None else start + end
            while k < len(times) and times[k] <= stop:
                out[k] = expm(gen * (times[k] - start)) @ x
                k += 1
            if end is None:
                break
            events.append(stop)
            if len(events) > max_events or (len(events) > 2 * n and stop - events[-2 * n] < 1e-6 * max(1.0, stop)):
                raise HardmaxError(f"the argmax sets change {len(events)} times by t = {stop:.15g}, accumulating: "
                                   "a Zeno point or sliding mode, which this exact integration does not follow")
            x = expm(gen * end) @ x
            nudge = 1e-9 * max(1.0, stop)                 # the sets just after the event
            after = argmax_sets(expm(gen * nudge) @ x, a)      # the old motion continued a moment past it
            if np.array_equal(after, sets):
                raise HardmaxError(f"the argmax sets change and change back at t = {stop:.15g}: a sliding mode")
            start, sets = stop, after
    except HardmaxError as error:               # keep the frames and the events computed before it
        error.positions, error.events = out[:k].copy(), tuple(events)
        raise
    return out, events


def softmax_velocity(x: np.ndarray, a: np.ndarray, beta: float, weights: np.ndarray) -> np.ndarray:
    """``sum_j P_ij x_j - x_i`` with the softmax weights ``P`` at inverse temperature ``beta`` (stable form)."""
    return row_softmax(beta * (x @ a @ x.T), weights) @ x - x


def softmax_trajectory(x0: np.ndarray, a: np.ndarray, beta: float, times: np.ndarray,
                       weights: np.ndarray | None = None, rtol: float = 1e-11, atol: float = 1e-13) -> np.ndarray:
    """Positions ``(len(times), n, d)`` of the finite-beta dynamics (DOP853 at ``rtol``, ``atol``)."""
    x0 = np.asarray(x0, dtype=float)
    shape = x0.shape
    w = np.ones(shape[0]) if weights is None else np.asarray(weights, dtype=float)
    times = np.asarray(times, dtype=float)

    def rhs(_t, y):
        return softmax_velocity(y.reshape(shape), a, beta, w).ravel()

    done = solve_ivp(rhs, (0.0, float(times[-1])), x0.ravel(), method="DOP853", t_eval=times, rtol=rtol, atol=atol)
    if not done.success:
        raise HardmaxError(f"the softmax integration failed: {done.message}")
    return done.y.T.reshape((len(times),) + shape)


def hardmax_run(x0: np.ndarray, q: np.ndarray, k: np.ndarray, times, weights: np.ndarray | None = None,
                beta: float = np.inf) -> xr.Dataset:
    """A particle run in R^d (dims ``time, particle, component``; variable ``positions``): hardmax for
    ``beta = inf`` (exact, event-driven; the event times in ``attrs["events"]``), softmax otherwise."""
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    a = q.T @ k
    times = np.asarray(times, dtype=float)
    attrs = {"model": "hardmax" if np.isinf(beta) else "softmax-rd", "beta": float(beta),
             "Q": q.ravel().tolist(), "K": k.ravel().tolist(), "dim": int(np.shape(x0)[1]),
             "n_particles": int(np.shape(x0)[0])}
    if np.isinf(beta):
        positions, events = hardmax_trajectory(x0, a, times, weights)
        attrs["events"] = list(events)
    else:
        positions = softmax_trajectory(x0, a, beta, times, weights)
    return xr.Dataset({"positions": (("time", "particle", "component"), positions)},
                      coords={"time": times}, attrs=attrs)
