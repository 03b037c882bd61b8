"""``log I_nu(x)`` for any order and argument, where ``scipy.special.ive`` underflows (MATH.md §2.2, §2.3).

The linear theory on ``S^{d-1}`` needs ``I_{l + nu}(beta) / I_nu(beta)`` with ``nu = (d - 2) / 2``: at large
``d`` and small ``beta`` both Bessel functions are below the smallest double, and their ratio (an ordinary
number) comes out as ``0 / 0``.  In logarithms nothing underflows:

* ``ive`` itself, where its value is a normal double (``log I = log ive + x``);
* the power series ``I_nu(x) = (x/2)^nu / Gamma(nu + 1) sum_k (x^2/4)^k / (k! (nu + 1)_k)`` when ``x^2 / 4``
  is small against ``nu + 1`` (terms to ``k = 4``: relative error below ``(x^2 / 4 (nu + 1))^5``);
* otherwise Debye's uniform expansion for large order (DLMF 10.41.3), with ``z = x / nu``,
  ``t = 1 / sqrt(1 + z^2)``, ``eta = sqrt(1 + z^2) + log(z / (1 + sqrt(1 + z^2)))``:
  ``I_nu(nu z) ~ exp(nu eta) / sqrt(2 pi nu) (1 + z^2)^{-1/4} (1 + u_1(t) / nu + u_2(t) / nu^2 + u_3(t) / nu^3)``
  (the next term is below ``1e-5 / nu^4``: used where ``ive`` underflows, which needs ``nu > 40``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, ive

#: Below this ``ive`` has lost digits to gradual underflow; the expansions take over.
SMALLEST = 1e-290


def _debye(nu: np.ndarray, x: np.ndarray) -> np.ndarray:
    z = x / nu
    root = np.sqrt(1.0 + z * z)
    t = 1.0 / root
    eta = root + np.log(z / (1.0 + root))
    t2 = t * t
    u1 = t * (3.0 - 5.0 * t2) / 24.0
    u2 = t2 * (81.0 - 462.0 * t2 + 385.0 * t2 * t2) / 1152.0
    u3 = t * t2 * (30375.0 - 369603.0 * t2 + 765765.0 * t2 * t2 - 425425.0 * t2 ** 3) / 414720.0
    series = 1.0 + u1 / nu + u2 / nu ** 2 + u3 / nu ** 3
    return nu * eta - 0.5 * np.log(2.0 * math.pi * nu) - 0.25 * np.log1p(z * z) + np.log(series)


def _power_series(nu: np.ndarray, x: np.ndarray) -> np.ndarray:
    q = x * x / 4.0
    term, total = np.ones_like(x), np.ones_like(x)
    for k in range(1, 5):
        term = term * q / (k * (nu + k))
        total = total + term
    return nu * np.log(x / 2.0) - gammaln(nu + 1.0) + np.log(total)


def log_bessel_i(nu, x) -> np.ndarray:
    """``log I_nu(x)`` for ``nu >= 0``, ``x > 0`` (broadcast; module docstring)."""
    nu, x = np.broadcast_arrays(np.asarray(nu, dtype=float), np.asarray(x, dtype=float))
    with np.errstate(under="ignore"):
        scaled = ive(nu, x)
    out = np.empty(nu.shape)
    direct = scaled >= SMALLEST
    out[direct] = np.log(scaled[direct]) + x[direct]
    rest = ~direct
    small = rest & (x * x / 4.0 <= 1e-3 * (nu + 1.0))
    out[small] = _power_series(nu[small], x[small])
    large = rest & ~small
    out[large] = _debye(nu[large], x[large])
    return out


def bessel_ratios(nu: float, x: float, count: int) -> np.ndarray:
    """``I_{nu+l}(x) / I_nu(x)`` for ``l = 0 .. count - 1`` (``nu >= 0``, ``x > 0``), to a few ulps times ``l``.

    The consecutive ratios ``r_k = I_{k+1}(x) / I_k(x)`` satisfy ``r_k = x / (2 (k + 1) + x r_{k+1})``
    (the recurrence of ``I``), which is stable run downwards (Gauss's continued fraction): started at
    ``r = 0`` far enough above ``nu + count`` that the start is forgotten, then multiplied up.  No Bessel
    function is formed, so nothing under- or overflows (unlike ``exp`` of a difference of two large logarithms).
    """
    start = int(nu + count + 2.0 * x + 40.0 + 10.0 * math.sqrt(x + 1.0))
    ratio = 0.0
    consecutive = np.empty(count)
    for k in range(start, -1, -1):
        ratio = x / (2.0 * (nu + k + 1.0) + x * ratio)
        if k < count:
            consecutive[k] = ratio
    out = np.ones(count)
    out[1:] = np.cumprod(consecutive[:-1])
    return out


def scaled_mean(nu: float, x: float) -> float:
    """``Gamma(nu + 1) (2 / x)^nu I_nu(x)``: the mean of ``exp(x <u, e>)`` over ``S^{2 nu + 1}`` (its series
    ``sum_k (x^2 / 4)^k / (k! (nu + 1)_k)``, positive terms, summed until they stop counting)."""
    q = x * x / 4.0
    term, total, k = 1.0, 1.0, 0
    while True:
        k += 1
        term *= q / (k * (nu + k))
        total += term
        if term <= 1e-17 * total and k > q / (nu + 1.0):
            return total
