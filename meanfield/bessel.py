"""Bessel ratios without Bessel functions, for the kernel at large ``d`` (MATH.md §2.2, §2.3).

The linear theory on ``S^{d-1}`` needs ``I_{l + nu}(beta) / I_nu(beta)`` with ``nu = (d - 2) / 2``, and USA
the sphere mean ``Gamma(nu + 1) (2 / beta)^nu I_nu(beta)``.  At large ``d`` and small ``beta`` both Bessel
functions are below the smallest double (``scipy.special.ive`` returns 0 and the ratio is ``0 / 0``), while
the ratio and the mean are ordinary numbers.  :func:`bessel_ratios` and :func:`scaled_mean` compute them
directly; :data:`SMALLEST` is where ``ive`` stops being trustworthy.
"""

from __future__ import annotations

import math

import numpy as np

#: Below this ``ive`` has lost digits to gradual underflow.
SMALLEST = 1e-290


def bessel_ratios(nu: float, x: float, count: int) -> np.ndarray:
    """``I_{nu+l}(x) / I_nu(x)`` for ``l = 0 .. count - 1`` (``nu >= 0``, ``x > 0``), to a few ulps times ``l``.

    The consecutive ratios ``r_k = I_{k+1}(x) / I_k(x)`` satisfy ``r_k = x / (2 (k + 1) + x r_{k+1})``
    (the recurrence of ``I``), which is stable run downwards (Gauss's continued fraction): started at
    ``r = 0`` far enough above ``nu + count`` that the start is forgotten, then multiplied up.  No Bessel
    function is formed, so nothing under- or overflows.
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
