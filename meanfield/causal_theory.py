"""Causal attention: the exact linear theory of the uniform state (MATH.md §8).

Under a causal mask (token ``j`` attends to tokens ``k <= j``, with an ALiBi bias of slope
``lambda >= 0`` in mean-field units) the tokens carry a position ``s`` in ``[0, 1]``, and each position
averages the kernel over the earlier positions with the weight
``w(s, s') = m'(s') / m(s)``, ``m(s) = e^{lambda s} - 1`` (``lambda = 0``: ``m(s) = s``).  About the
uniform state every degree ``l`` (Fourier mode on the circle) of the perturbation evolves on its own
(MATH.md §8)::

    d u_l / dt (s) = lambda_l W[u_l](s) - nu l (l + d - 2) u_l(s),    W[h](s) = int_0^s w(s, s') h(s') ds',

with ``lambda_l`` the *noise-free* rate of MATH.md §2.3 (:func:`mode_rates`; note that
:func:`meanfield.theory.growth_rates` includes the noise term ``-nu l (l + d - 2)``, which here is a
separate factor ``e^{-nu l (l + d - 2) t}``).  In the variable ``m`` the average ``W`` is the Cesàro
operator ``(1 / m) int_0^m h dm``, and its exponential is explicit::

    u_l(t, s) = e^{-nu l (l + d - 2) t} [ u_l(0, s) + int_0^s G_c(s, s') u_l(0, s') ds' ],   c = lambda_l t,
    G_c(s, s') = (m'(s') / m(s)) psi_c(log(m(s) / m(s'))),   psi_c(y) = sqrt(c / y) I_1(2 sqrt(c y)).

:func:`evolve_mode` evaluates it, :func:`green` is ``G_c``, :func:`psi` is ``psi_c``.  "Lost in the middle"
(Duerinckx–Geshkovski–Rossi 2026): the last token's response to a perturbation placed at position ``s``
with angular profile ``sum_k omega_k cos(k theta)`` is :func:`lost_in_the_middle`, and the slope of that
profile at ``s = 1`` changes sign at :func:`t_crit`.

Numerics.  Every exponential is taken in log form: ``m`` and ``G`` are formed from ``log m(s)``
(``lambda s + log(1 - e^{-lambda s})``), so no ``lambda`` overflows, and ``psi`` from the scaled Bessel
function ``ive``; values beyond double precision come out as ``inf`` without a floating-point error.
The integral of :func:`evolve_mode` is taken in ``z = sqrt(y)``, ``y = log(m(s) / m(s'))``, where it is
``2 a e^{c} int_0^oo e^{-(z - a)^2} ive(1, 2 a z) u0(s'(z^2)) dz`` (``a = sqrt(c)``): a Gaussian bump at
``z = a`` times a bounded smooth factor, for every ``c``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq
from scipy.special import ive, roots_legendre

from .errors import require
from .geometry import laplace_eigenvalue
from .limits import MAX_MODES, is_integer
from .model import Model
from .theory import interaction_rate

#: ``log`` of the largest double: exponentials above it are returned as ``inf``.
LOG_MAX = math.log(np.finfo(float).max)
#: Width (in ``z = sqrt(y)``) of one Gauss–Legendre panel of :func:`evolve_mode` before refinement.
PANEL_WIDTH = 3.0
#: Gauss–Legendre nodes per panel.
PANEL_NODES = 20
#: The quadrature of :func:`evolve_mode` covers ``0 <= z <= sqrt(c) + TAIL`` (the weight is ``e^{-TAIL^2} = 7e-36``
#: of its peak beyond).
TAIL = 9.0
#: Halvings of the panels :func:`evolve_mode` may take before it gives up on a ``u0`` it cannot resolve.
MAX_REFINEMENTS = 7
#: Largest number of (position, node) pairs :func:`evolve_mode` evaluates ``u0`` on at once.
BLOCK_VALUES = 2 ** 21
#: Points of the scan :func:`t_crit` makes for the first sign change of the end slope when ``nu > 0``.
SCAN_POINTS = 256
#: Default profile width ``M`` of the ``theory --mask causal`` command (the 2026 paper's).
DEFAULT_PROFILE_WIDTH = 8.0
#: Below this profile width ``M`` every ``omega_k = exp(-pi^2 k^2 / (2 M^2))`` underflows to 0 (``omega_1`` is
#: the smallest subnormal double, ``e^{-744.4}``, at ``M = pi / sqrt(2 * 744.4)``).
MIN_PROFILE_WIDTH = math.pi / math.sqrt(2.0 * 744.4)


# ------------------------------------------------------------------------------------------ checks
def _check_alibi(alibi) -> float:
    ok = isinstance(alibi, (int, float, np.integer, np.floating)) and not isinstance(alibi, (bool, np.bool_))
    require(ok and math.isfinite(float(alibi)) and float(alibi) >= 0,
            f"alibi must be a finite number >= 0 (the ALiBi slope lambda; got {alibi!r})")
    return float(alibi)


def _check_nonnegative(value, name: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        require(False, f"{name} must be finite numbers >= 0 (got {value!r})")
    require(bool(np.all(np.isfinite(array)) and np.all(array >= 0)), f"{name} must be finite and >= 0")
    return array


def _check_positions(value, name: str = "s") -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        require(False, f"{name} must be positions in [0, 1] (got {value!r})")
    require(bool(np.all(np.isfinite(array)) and np.all(array >= 0) and np.all(array <= 1)),
            f"{name} must be positions in [0, 1]")
    return array


def _check_scalar_time(t) -> float:
    array = _check_nonnegative(t, "t")
    require(array.ndim == 0, "t must be one time >= 0")
    return float(array)


def _check_weights(weights) -> np.ndarray:
    weights = _check_nonnegative(weights, "weights")
    require(weights.ndim == 1 and 1 <= weights.size <= MAX_MODES,
            f"weights must be a list of 1 to {MAX_MODES} numbers (one per mode k = 1, 2, ...)")
    return weights


def _as_output(array: np.ndarray):
    return float(array) if array.ndim == 0 else array


# ------------------------------------------------------------------------------------------ exponentials
def _exp(x: np.ndarray) -> np.ndarray:
    """``e^x``, ``inf`` above :data:`LOG_MAX` without a floating-point error."""
    x = np.asarray(x, dtype=float)
    return np.where(x > LOG_MAX, np.inf, np.exp(np.minimum(x, LOG_MAX)))


def _log_m(s: np.ndarray, alibi: float) -> np.ndarray:
    """``log m(s)``, ``-inf`` at ``s = 0``: ``log s`` (``lambda = 0``), else ``lambda s + log(1 - e^{-lambda s})``."""
    s = np.asarray(s, dtype=float)
    positive = s > 0
    safe = np.where(positive, s, 1.0)
    if alibi == 0:
        value = np.log(safe)
    else:
        value = alibi * safe + np.log(-np.expm1(-alibi * safe))
    return np.where(positive, value, -np.inf)


def _from_log_m(log_m: np.ndarray, alibi: float) -> np.ndarray:
    """``m^{-1}(e^L)``: ``e^L`` (``lambda = 0``), else ``log(1 + e^L) / lambda`` in softplus form (any ``L``,
    ``-inf`` included)."""
    if alibi == 0:
        return np.exp(log_m)
    softplus = np.maximum(log_m, 0.0) + np.log1p(np.exp(-np.abs(log_m)))
    return softplus / alibi


# ------------------------------------------------------------------------------------------ positions
def position_map(s, alibi: float):
    """``m(s) = e^{lambda s} - 1`` (``lambda = alibi``; ``lambda = 0``: ``m(s) = s``), MATH.md §8.

    The positional average of MATH.md §8 is the mean over ``[0, m(s)]`` in this variable.

    Parameters
    ----------
    s : array_like
        Positions in ``[0, 1]``.
    alibi : float
        The ALiBi slope ``lambda >= 0`` in mean-field units.

    Returns
    -------
    float or numpy.ndarray
        ``m(s)``; ``inf`` where it exceeds double precision (``lambda s > 709.78``).
    """
    alibi, s = _check_alibi(alibi), _check_positions(s)
    if alibi == 0:
        return _as_output(s.copy())
    small = alibi * s <= 1.0
    value = np.where(small, np.expm1(np.where(small, alibi * s, 0.0)), _exp(_log_m(s, alibi)))
    return _as_output(value)


def position_map_derivative(s, alibi: float):
    """``m'(s) = lambda e^{lambda s}`` (``lambda = 0``: 1), MATH.md §8.

    Parameters
    ----------
    s : array_like
        Positions in ``[0, 1]``.
    alibi : float
        The ALiBi slope ``lambda >= 0``.

    Returns
    -------
    float or numpy.ndarray
        ``m'(s)``; ``inf`` beyond double precision.
    """
    alibi, s = _check_alibi(alibi), _check_positions(s)
    if alibi == 0:
        return _as_output(np.ones_like(s))
    return _as_output(_exp(math.log(alibi) + alibi * s))


def position_map_inverse(m, alibi: float):
    """``m^{-1}(m) = log(1 + m) / lambda`` (``lambda = 0``: the identity), MATH.md §8.

    Parameters
    ----------
    m : array_like
        Values ``>= 0`` of ``m`` (``inf`` is allowed and gives ``inf``).
    alibi : float
        The ALiBi slope ``lambda >= 0``.

    Returns
    -------
    float or numpy.ndarray
        The positions ``s >= 0`` with ``m(s) = m``.
    """
    alibi = _check_alibi(alibi)
    m = np.asarray(m, dtype=float)
    require(bool(np.all(m >= 0)), "m must be >= 0")
    if alibi == 0:
        return _as_output(m.copy())
    return _as_output(np.log1p(m) / alibi)


def position_weight(s, s_prime, alibi: float):
    """The positional weight ``w(s, s') = m'(s') / m(s)`` of MATH.md §8, for ``0 <= s' <= s``, ``s > 0``.

    ``int_0^s w(s, s') ds' = 1``; ``lambda = 0``: ``1 / s``.  Evaluated as
    ``lambda e^{lambda (s' - s)} / (1 - e^{-lambda s})`` (no overflow at any ``lambda``).

    Parameters
    ----------
    s, s_prime : array_like
        Positions in ``[0, 1]`` (they broadcast).
    alibi : float
        The ALiBi slope ``lambda >= 0``.

    Returns
    -------
    float or numpy.ndarray
        ``w(s, s')``; 0 where ``s' > s`` or ``s = 0`` (outside the average).
    """
    alibi = _check_alibi(alibi)
    s, s_prime = np.broadcast_arrays(_check_positions(s), _check_positions(s_prime, "s_prime"))
    inside = (s > 0) & (s_prime <= s)
    safe_s = np.where(inside, s, 1.0)
    safe_t = np.where(inside, s_prime, 1.0)
    if alibi == 0:
        value = 1.0 / safe_s
    else:
        value = alibi * np.exp(alibi * (safe_t - safe_s)) / -np.expm1(-alibi * safe_s)
    return _as_output(np.where(inside, value, 0.0))


# ------------------------------------------------------------------------------------------ psi and G
def _log_psi(c: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log psi_c(y)`` for ``c > 0``, ``y >= 0``: ``log c + x + log(2 ive(1, x) / x)``, ``x = 2 sqrt(c y)``."""
    x = 2.0 * np.sqrt(c * y)
    tiny = x < 1e-150                                   # 2 I_1(x) / x = 1 + x^2 / 8 + ...: 1 in double precision
    safe = np.where(tiny, 1.0, x)
    ratio = np.where(tiny, 0.0, np.log(2.0 * ive(1, safe) / safe))
    return np.log(c) + x + ratio


def psi(c, y):
    """``psi_c(y) = sqrt(c / y) I_1(2 sqrt(c y)) = sum_{k >= 0} c^{k+1} y^k / (k! (k+1)!)`` (MATH.md §8).

    The kernel of ``exp(c W) - 1`` in the logarithmic variable ``y = log(m(s) / m(s'))``;
    ``psi_c(0) = c``, ``psi_c'(0) = c^2 / 2`` and ``int_0^oo e^{-y} psi_c(y) dy = e^c - 1``.  Computed as
    ``c e^{x} 2 ive(1, x) / x`` with ``x = 2 sqrt(c y)`` in log form, vectorised.

    Parameters
    ----------
    c : array_like
        ``c = lambda_l t >= 0``.
    y : array_like
        ``y >= 0`` (broadcasts with ``c``).

    Returns
    -------
    float or numpy.ndarray
        ``psi_c(y)``: the limit ``c`` at ``y = 0``, 0 at ``c = 0``, ``inf`` where the value exceeds double
        precision (no floating-point error).
    """
    c, y = np.broadcast_arrays(_check_nonnegative(c, "c"), _check_nonnegative(y, "y"))
    positive = c > 0
    log_value = _log_psi(np.where(positive, c, 1.0), y)
    return _as_output(np.where(positive, _exp(log_value), 0.0))


def green(c, s, s_prime, alibi: float):
    """The Green's function ``G_c(s, s') = (m'(s') / m(s)) psi_c(log(m(s) / m(s')))`` of MATH.md §8.

    ``exp(c W) h = h + int_0^s G_c(s, s') h(s') ds'`` for the positional average ``W``.  ``G_c`` is
    defined for ``0 < s' <= s``; as ``s' -> 0`` it grows without bound (slowly: like
    ``exp(2 sqrt(c log(1 / s')))``, an integrable singularity), and that limit, ``inf``, is returned at
    ``s' = 0 < s`` when ``c > 0``.

    Parameters
    ----------
    c : array_like
        ``c = lambda_l t >= 0``.
    s, s_prime : array_like
        Positions in ``[0, 1]``; ``c``, ``s`` and ``s_prime`` broadcast.
    alibi : float
        The ALiBi slope ``lambda >= 0``.

    Returns
    -------
    float or numpy.ndarray
        ``G_c(s, s')``: 0 where ``s' > s``, where ``s = 0`` and where ``c = 0``; ``inf`` beyond double
        precision.
    """
    alibi = _check_alibi(alibi)
    c, s, s_prime = np.broadcast_arrays(_check_nonnegative(c, "c"), _check_positions(s),
                                        _check_positions(s_prime, "s_prime"))
    inside = (c > 0) & (s_prime > 0) & (s_prime <= s)
    at_origin = (c > 0) & (s_prime == 0) & (s > 0)
    safe_c, safe_s, safe_t = (np.where(inside, value, 1.0) for value in (c, s, s_prime))
    y = np.maximum(_log_m(safe_s, alibi) - _log_m(safe_t, alibi), 0.0)
    if alibi == 0:
        log_factor = -np.log(safe_s)
    else:
        log_factor = math.log(alibi) + alibi * (safe_t - safe_s) - np.log(-np.expm1(-alibi * safe_s))
    value = _exp(log_factor + _log_psi(safe_c, y))
    return _as_output(np.where(inside, value, np.where(at_origin, np.inf, 0.0)))


# ------------------------------------------------------------------------------------------ one mode
def _panel_rule(top: float, panels: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights of :data:`PANEL_NODES` points on each of ``panels`` equal panels of
    ``[0, top]``."""
    x, w = roots_legendre(PANEL_NODES)
    edges = np.linspace(0.0, top, panels + 1)
    half = 0.5 * np.diff(edges)
    middle = 0.5 * (edges[1:] + edges[:-1])
    return (middle[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()


def _u_values(u0, points: np.ndarray) -> np.ndarray:
    values = np.asarray(u0(points), dtype=float)
    require(values.shape == points.shape, f"u0 must return an array of the shape of its argument "
                                          f"(got {values.shape} for {points.shape})")
    require(bool(np.all(np.isfinite(values))), "u0 must be finite on [0, s]")
    return values


def _scaled_average(u0, s: np.ndarray, u_s: np.ndarray, alibi: float, c: float, tol: float) -> np.ndarray:
    """``e^{-c} int_0^oo e^{-y} psi_c(y) u0(s'(y)) dy`` at each of the positions ``s`` (1-D), with
    ``s'(y) = m^{-1}(m(s) e^{-y})``: composite Gauss–Legendre in ``z = sqrt(y)`` on ``[0, sqrt(c) + TAIL]``,
    the panels halved until two successive rules agree to ``tol`` (relative to ``e^{-c} |u0(s)|`` plus
    ``(1 - e^{-c}) max |u0|`` over the nodes, the scale of the terms)."""
    a = math.sqrt(c)
    top = a + TAIL
    panels = math.ceil(top / PANEL_WIDTH)
    log_m = _log_m(s, alibi)
    result = np.empty_like(s)
    active = np.arange(s.size)
    previous = None
    for level in range(MAX_REFINEMENTS + 1):
        z, weights = _panel_rule(top, panels * 2 ** level)
        kernel = weights * 2.0 * a * ive(1, 2.0 * a * z) * np.exp(-(z - a) ** 2)
        estimate = np.empty(active.size)
        largest = np.empty(active.size)
        block = max(1, BLOCK_VALUES // z.size)
        for start in range(0, active.size, block):
            rows = active[start:start + block]
            points = np.minimum(_from_log_m(log_m[rows, None] - z * z, alibi), s[rows, None])
            values = _u_values(u0, points)
            estimate[start:start + block] = values @ kernel
            largest[start:start + block] = np.max(np.abs(values), axis=1)
        if previous is not None:
            scale = math.exp(-c) * np.abs(u_s[active]) + -math.expm1(-c) * largest
            done = np.abs(estimate - previous) <= tol * scale
            result[active[done]] = estimate[done]
            active, estimate = active[~done], estimate[~done]
            if active.size == 0:
                return result
        previous = estimate
    require(False, f"u0 is not resolved by the quadrature to tol = {tol:g} at c = {c:g} after {MAX_REFINEMENTS} "
                   f"halvings of the panels (give a smoother u0 or a larger tol)")


def evolve_mode(u0, s, t, rate: float, alibi: float, damping: float = 0.0, *, tol: float = 1e-12):
    """The exact linear evolution of one degree's profile along the positions (MATH.md §8).

    ``u_l(t, s) = e^{-damping t} [u0(s) + int_0^s G_c(s, s') u0(s') ds']`` with ``c = rate t``: the solution
    of ``du/dt = rate W[u] - damping u``.  Use ``rate`` = the noise-free ``lambda_l`` (:func:`mode_rates`)
    and ``damping = nu l (l + d - 2)``.  Constants grow at the ordinary rate (``u0 = 1`` gives ``e^c``,
    ``s = 0`` gives ``u0(0) e^c``), and ``m(s)^alpha`` is an eigenfunction of ``W`` with eigenvalue
    ``1 / (1 + alpha)``.

    The integral is ``int_0^oo e^{-y} psi_c(y) u0(s'(y)) dy``, ``s'(y) = m^{-1}(m(s) e^{-y})``, taken in
    ``z = sqrt(y)``: ``2 a e^c int e^{-(z - a)^2} ive(1, 2 a z) u0(s'(z^2)) dz``, ``a = sqrt(c)``, by
    20-point Gauss–Legendre on panels of width 3 over ``[0, a + 9]``, halved until two successive rules
    agree to ``tol`` relative to the scale ``|u0(s)| + (e^c - 1) max |u0|`` of the terms (at most
    :data:`MAX_REFINEMENTS` times; an :class:`~meanfield.errors.InputError` if ``u0`` is still not resolved).
    Power-law behaviour of ``u0`` at ``s = 0`` (``u0 = s^alpha``) becomes ``e^{-alpha z^2}``: smooth.
    Measured (``lambda`` from 0 to 50, positions 0 to 1): ``u0 = 1`` gives ``e^c`` to a relative 1.1e-15 for ``c``
    from 1e-3 to 700; ``u0 = m^alpha`` (``alpha = 0.5, 1, 2``) gives ``m^alpha e^{c / (1 + alpha)}`` to 1e-14 for
    ``c <= 30`` and 4e-14 at ``c = 700`` (the rounding of the exponent), at the first refinement.

    Parameters
    ----------
    u0 : callable
        The initial profile ``u_l(0, .)``: called with arrays of positions in ``[0, s]`` of any shape,
        returns finite values of the same shape.  Grid data: :func:`profile_from_grid`.
    s : array_like
        Positions in ``[0, 1]``.
    t : array_like
        Times ``>= 0``.
    rate : float
        ``lambda_l >= 0``, the noise-free rate of the degree (MATH.md §2.3).
    alibi : float
        The ALiBi slope ``lambda >= 0``.
    damping : float, optional
        ``nu l (l + d - 2) >= 0``.
    tol : float, optional
        Target accuracy of the quadrature (see above), in ``(0, 1)``.

    Returns
    -------
    float or numpy.ndarray
        ``u_l(t, s)``, of shape ``shape(t) + shape(s)``; ``inf`` beyond double precision (``c > 709``).
    """
    require(callable(u0), "u0 must be a callable of the positions s")
    alibi = _check_alibi(alibi)
    s = _check_positions(s)
    times = _check_nonnegative(t, "t")
    rate = float(_check_nonnegative(rate, "rate"))
    damping = float(_check_nonnegative(damping, "damping"))
    require(isinstance(tol, (int, float)) and 0 < tol < 1, f"tol must be in (0, 1) (got {tol!r})")
    flat = s.ravel()
    u_s = _u_values(u0, flat)
    out = np.empty((times.size, flat.size))
    for row, time in enumerate(times.ravel()):
        c = rate * time
        decay = math.exp(-damping * time)
        out[row] = decay * u_s
        if c == 0 or flat.size == 0:
            continue
        average = _scaled_average(u0, flat, u_s, alibi, c, tol)
        nonzero = average != 0
        growth = _exp(c - damping * time + np.log(np.abs(average[nonzero])))
        out[row, nonzero] += np.sign(average[nonzero]) * growth
    return _as_output(out.reshape(times.shape + s.shape))


def profile_from_grid(s, values):
    """A callable ``u0`` for :func:`evolve_mode` from values on a grid of positions: a cubic spline.

    Parameters
    ----------
    s : array_like
        Increasing positions in ``[0, 1]``, the first 0 (``evolve_mode`` evaluates ``u0`` down to 0), at
        least 4 of them.
    values : array_like
        ``u0`` at those positions (finite).

    Returns
    -------
    scipy.interpolate.CubicSpline
        The not-a-knot cubic spline through the data (callable on arrays of any shape).  Its error is
        ``O(h^4)``; the quadrature of :func:`evolve_mode` converges only algebraically on a spline (its third
        derivative jumps at the knots), so pass a ``tol`` near the data's accuracy, e.g. ``1e-8``.
    """
    s = _check_positions(s)
    values = np.asarray(values, dtype=float)
    require(s.ndim == 1 and s.size >= 4 and values.shape == s.shape,
            "s and values must be 1-D arrays of the same length >= 4")
    require(s[0] == 0 and bool(np.all(np.diff(s) > 0)), "s must increase from 0")
    require(bool(np.all(np.isfinite(values))), "values must be finite")
    return CubicSpline(s, values)


# ------------------------------------------------------------------------------------------ modes and profile
def mode_rates(model: Model, degrees) -> np.ndarray:
    """The noise-free rates ``lambda_l = l (l + d - 2) x`` (interaction part) of MATH.md §2.3, SA or USA, any ``d``.

    :func:`meanfield.theory.growth_rates` returns ``lambda_l - nu l (l + d - 2)``; the causal theory of
    MATH.md §8 needs the two parts apart, the noise being the factor ``e^{-nu l (l + d - 2) t}``.

    Parameters
    ----------
    model : Model
        Attention, ``beta``, ``dim`` (its ``nu`` is not used).
    degrees : array_like
        Degrees ``l >= 1`` (Fourier modes on the circle).

    Returns
    -------
    numpy.ndarray
        ``lambda_l >= 0``, one per degree.
    """
    degrees = np.asarray(degrees)
    require(degrees.size > 0 and all(is_integer(l) for l in degrees.ravel()) and bool(np.all(degrees >= 1)),
            "degrees must be integers >= 1 (degree 0 is the conserved mass)")
    return laplace_eigenvalue(degrees, model.dim) * interaction_rate(model, degrees)


def profile_weights(width: float, modes: int) -> np.ndarray:
    """``omega_k = exp(-pi^2 k^2 / (2 M^2))``, ``k = 1..K``: the angular profile of MATH.md §8.

    ``sum_k omega_k cos(k theta)`` is (up to the mean) a wrapped Gaussian of width ``pi / M``, the
    perturbation of Duerinckx–Geshkovski–Rossi (2026), whose figures take ``M = 8``, ``K = 20``.  Below
    ``M ~ 0.08`` every ``omega_k`` underflows to 0.

    Parameters
    ----------
    width : float
        ``M > 0``.
    modes : int
        ``K``, in ``[1, MAX_MODES]``.

    Returns
    -------
    numpy.ndarray
        ``omega_1, ..., omega_K``.
    """
    ok = isinstance(width, (int, float, np.integer, np.floating)) and not isinstance(width, (bool, np.bool_))
    require(ok and math.isfinite(float(width)) and float(width) > 0,
            f"width must be a finite number > 0 (the profile width M; got {width!r})")
    require(is_integer(modes) and 1 <= modes <= MAX_MODES,
            f"modes must be an integer in [1, {MAX_MODES}] (got {modes!r})")
    k = np.arange(1, int(modes) + 1, dtype=float)
    with np.errstate(under="ignore"):
        return np.exp(-0.5 * (math.pi * k / float(width)) ** 2)


def _modes(model: Model, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    degrees = np.arange(1, weights.size + 1)
    return mode_rates(model, degrees), model.nu * laplace_eigenvalue(degrees, model.dim)


def lost_in_the_middle(model: Model, alibi: float, t: float, s, weights):
    """The last token's response ``S_t(s)`` to a perturbation at position ``s`` (MATH.md §8).

    ``S_t(s) = sum_k omega_k e^{-nu k (k + d - 2) t} G_{lambda_k t}(1, s)``: a perturbation placed at
    position ``s`` with angular profile ``sum_k omega_k cos(k theta)`` (circle; on ``S^{d-1}``, ``k`` is the
    degree ``l`` with the rates of MATH.md §2.3 and ``omega_l`` multiplies a zonal harmonic of degree ``l``),
    read at the last position ``s = 1``, the part carried by the positional average (the direct term,
    a delta at ``s = 1``, is left out).  ``lambda_k`` are the noise-free rates (:func:`mode_rates`); the
    noise damps each mode by its own factor.  For small ``t`` and ``lambda > 0`` it is U-shaped in ``s``
    (infinite at ``s = 0``, rising again towards ``s = 1``): lost in the middle; after :func:`t_crit` the
    rise at the end is gone.

    Parameters
    ----------
    model : Model
        Attention, ``beta``, ``nu``, ``dim``.
    alibi : float
        The ALiBi slope ``lambda >= 0``.
    t : float
        Time ``>= 0`` (the package's time: MATH.md §1's velocity).
    s : array_like
        Positions in ``[0, 1]``.
    weights : array_like
        ``omega_1, ..., omega_K >= 0`` (:func:`profile_weights`).

    Returns
    -------
    float or numpy.ndarray
        ``S_t(s)``, shaped like ``s``: ``inf`` at ``s = 0`` when ``t > 0``, 0 everywhere at ``t = 0``.
    """
    alibi, t = _check_alibi(alibi), _check_scalar_time(t)
    s, weights = _check_positions(s), _check_weights(weights)
    rates, damping = _modes(model, weights)
    with np.errstate(under="ignore"):
        coefficients = weights * np.exp(-damping * t)
    keep = (coefficients > 0) & (rates * t > 0)
    total = np.zeros(s.size)
    block = max(1, BLOCK_VALUES // max(s.size, 1))
    c_all, w_all = rates[keep] * t, coefficients[keep]
    for start in range(0, c_all.size, block):
        values = green(c_all[start:start + block, None], 1.0, s.ravel()[None, :], alibi)
        total = total + np.sum(w_all[start:start + block, None] * values, axis=0)
    return _as_output(total.reshape(s.shape))


def _slope_factors(alibi: float) -> tuple[float, float]:
    """``(a, b)`` with ``dS_t/ds(1) = sum_k omega_k D_k (a c_k - b c_k^2 / 2)``: ``a = m''(1) / m(1)``,
    ``b = (m'(1) / m(1))^2`` (``lambda = 0``: ``0, 1``)."""
    if alibi == 0:
        return 0.0, 1.0
    ratio = alibi / -math.expm1(-alibi)            # m'(1) / m(1) = lambda / (1 - e^{-lambda})
    return alibi * ratio, ratio * ratio


def end_slope(model: Model, alibi: float, t: float, weights) -> float:
    """The exact slope ``dS_t/ds`` of :func:`lost_in_the_middle` at ``s = 1`` (MATH.md §8).

    From ``psi_c(0) = c`` and ``psi_c'(0) = c^2 / 2``:
    ``dS_t/ds(1) = sum_k omega_k e^{-nu k (k + d - 2) t} (a c_k - b c_k^2 / 2)``, ``c_k = lambda_k t``,
    ``a = m''(1) / m(1) = lambda^2 / (1 - e^{-lambda})``, ``b = (m'(1) / m(1))^2 = (lambda / (1 - e^{-lambda}))^2``
    (``lambda = 0``: ``a = 0``, ``b = 1``, so the slope is negative at every ``t > 0``).

    Parameters
    ----------
    model : Model
        Attention, ``beta``, ``nu``, ``dim``.
    alibi : float
        The ALiBi slope ``lambda >= 0``.
    t : float
        Time ``>= 0``.
    weights : array_like
        ``omega_1, ..., omega_K >= 0``.

    Returns
    -------
    float
        The slope: positive while the end of the context is favoured (recency), negative after.
    """
    alibi, t = _check_alibi(alibi), _check_scalar_time(t)
    weights = _check_weights(weights)
    rates, damping = _modes(model, weights)
    a, b = _slope_factors(alibi)
    c = rates * t
    with np.errstate(under="ignore"):
        coefficients = weights * np.exp(-damping * t)
    return float(np.sum(coefficients * (a * c - 0.5 * b * c * c)))


def t_crit(model: Model, alibi: float, weights) -> float:
    """The time at which the slope of :func:`lost_in_the_middle` at ``s = 1`` changes sign (MATH.md §8).

    Without noise, ``t_crit = 2 (1 - e^{-lambda}) sum_k omega_k lambda_k / sum_k omega_k lambda_k^2``
    (:func:`end_slope` divided by ``t`` is linear in ``t``).  Before it ``S_t`` rises towards ``s = 1``
    (recency: U-shaped, lost in the middle); after it, it falls there.  ``S_t`` then becomes monotone, at once
    or a little later: on the circle (SA, ``beta = 4``, ``lambda = 1``, ``M = 8``, ``K = 10``) it is decreasing
    on ``(0, 1]`` at ``1.01 t_crit``; on ``S^2`` (``beta = 9``, ``lambda = 3``) its minimum is still inside,
    at ``s = 0.36``, at ``1.01 t_crit``, and gone by ``2 t_crit``.  ``lambda = 0`` (a plain causal mask)
    gives 0: the slope is negative from the start and ``S_t`` is monotone at every ``t > 0``.  With noise
    (``nu > 0``) each mode carries its damping ``e^{-nu k (k + d - 2) t}`` and ``t_crit`` is the first zero of
    ``end_slope / t``, found by a scan of :data:`SCAN_POINTS` points up to ``2 (1 - e^{-lambda}) / min_k lambda_k``
    (where every term is negative) and refined by Brent's method.  Times are the package's (MATH.md §1's
    velocity); the 2026 paper's code runs ``beta`` times faster, so its time is ``t_crit / beta``.

    Parameters
    ----------
    model : Model
        Attention, ``beta``, ``nu``, ``dim``.
    alibi : float
        The ALiBi slope ``lambda >= 0``.
    weights : array_like
        ``omega_1, ..., omega_K >= 0``, some ``omega_k lambda_k > 0``.

    Returns
    -------
    float
        ``t_crit >= 0``.
    """
    alibi, weights = _check_alibi(alibi), _check_weights(weights)
    rates, damping = _modes(model, weights)
    used = (weights > 0) & (rates > 0)
    require(bool(np.any(used)), "weights must give some mode k with omega_k lambda_k > 0 (a --profile-width below "
                                "~0.08 underflows every omega_k)")
    if alibi == 0:
        return 0.0
    weights, rates, damping = weights[used] / np.max(weights[used]), rates[used], damping[used]
    a, b = _slope_factors(alibi)
    if model.nu == 0:
        scaled = rates / np.max(rates)                 # USA rates reach 1e300: their squares would overflow
        return float(2.0 * a / b / np.max(rates) * np.sum(weights * scaled) / np.sum(weights * scaled * scaled))

    def reduced(time: float) -> float:                 # end_slope / t
        with np.errstate(under="ignore"):
            return float(np.sum(weights * np.exp(-damping * time) * rates * (a - 0.5 * b * rates * time)))

    last = 2.0 * a / (b * float(np.min(rates)))
    grid = last * np.arange(1, SCAN_POINTS + 1) / SCAN_POINTS
    values = np.array([reduced(time) for time in grid])
    first = int(np.argmax(values <= 0))
    if values[first] == 0:
        return float(grid[first])
    low = 0.0 if first == 0 else float(grid[first - 1])
    return float(brentq(reduced, low, float(grid[first]), xtol=1e-15 * last, rtol=4 * np.finfo(float).eps))


# ------------------------------------------------------------------------------------------ report
#: Positions at which ``meanfield theory --mask causal`` shows the profile ``S_t(s)``.
PROFILE_POSITIONS = tuple(round(0.1 * i, 10) for i in range(11))
MASKS = ("causal", "strict")


def causal_report(model: Model, alibi: float, width: float = DEFAULT_PROFILE_WIDTH, modes: int = 10,
                  time: float | None = None, mask: str = "causal") -> dict:
    """What ``meanfield theory --mask causal`` reports (MATH.md §8), as a JSON-ready dictionary.

    Parameters
    ----------
    model : Model
        Attention, ``beta``, ``nu``, ``dim``.
    alibi : float
        The ALiBi slope ``lambda >= 0``.
    width : float, optional
        The profile width ``M > 0`` of :func:`profile_weights`.
    modes : int, optional
        The profile's modes ``k = 1..K``.
    time : float or None, optional
        The time of the profile; default ``t_crit / 2``, or 1 when ``t_crit = 0``.
    mask : str, optional
        ``"causal"`` (``k <= j``) or ``"strict"`` (``k < j``): the same mean field (the masks differ by
        ``O(1 / n)``).

    Returns
    -------
    dict
        ``mask``, ``alibi``, ``t_crit``, ``profile_width``, ``profile_modes`` (``K``), ``profile_time``,
        ``profile_s`` (:data:`PROFILE_POSITIONS`), ``profile`` (``S_t`` there; ``None`` where it is infinite,
        at ``s = 0`` when ``t > 0``) and ``noise_free_rates`` (``lambda_k``, ``k = 1..K``).
    """
    require(mask in MASKS, f"mask must be one of {', '.join(MASKS)} (got {mask!r})")
    alibi = _check_alibi(alibi)
    weights = profile_weights(width, modes)
    crit = t_crit(model, alibi, weights)
    time = (crit / 2.0 if crit > 0 else 1.0) if time is None else _check_scalar_time(time)
    positions = np.array(PROFILE_POSITIONS)
    profile = lost_in_the_middle(model, alibi, time, positions, weights)
    return {"mask": mask, "alibi": alibi, "t_crit": crit, "profile_width": float(width), "profile_modes": int(modes),
            "profile_time": time, "profile_s": list(PROFILE_POSITIONS),
            "profile": [float(value) if math.isfinite(value) else None for value in profile],
            "noise_free_rates": mode_rates(model, np.arange(1, int(modes) + 1)).tolist()}


def causal_report_lines(report: dict, model: Model) -> list[str]:
    """The lines ``meanfield theory --mask causal`` prints for :func:`causal_report` ``report``."""
    word = "mode" if model.dim == 2 else "degree"
    lam = report["alibi"]
    lines = [f"{report['mask']} mask (token j attends to tokens k {'<=' if report['mask'] == 'causal' else '<'} j), "
             f"ALiBi slope lambda = {lam:g} (MATH.md §8)"]
    if report["mask"] == "strict":
        lines.append("  the strict mask has the mean field of the causal one (the two differ by O(1/n))")
    if model.nu > 0:
        rates = ", ".join(f"{rate:.6g}" for rate in report["noise_free_rates"][:10])
        more = ", ..." if len(report["noise_free_rates"]) > 10 else ""
        lines.append(f"noise-free rates lambda_k of {word}s 1..{report['profile_modes']} (each {word} also decays "
                     f"by exp(-nu k (k + d - 2) t)): {rates}{more}")
    lines.append(f"lost in the middle: profile omega_k = exp(-pi^2 k^2 / (2 M^2)), M = {report['profile_width']:g}, "
                 f"{word}s k = 1..{report['profile_modes']}")
    crit = report["t_crit"]
    if crit == 0:
        lines.append("t_crit = 0: with lambda = 0 the slope of S_t at s = 1 is negative from the start "
                     "(no recency bias)")
    else:
        paper = f"; the 2026 paper's time (its code runs beta times faster): {crit / model.beta:.8g}" \
            if model.beta > 0 else ""
        lines.append(f"t_crit = {crit:.8g} (the slope of S_t at s = 1 changes sign: recency bias before, none "
                     f"after{paper})")
    lines.append(f"S_t(s), the last token's response to a perturbation at position s, at t = "
                 f"{report['profile_time']:.6g}:")
    lines.append(f"{'s':>6}  {'S_t(s)':>14}")
    for position, value in zip(report["profile_s"], report["profile"]):
        lines.append(f"{position:>6.1f}  {'inf' if value is None else format(value, '14.8g'):>14}")
    return lines
