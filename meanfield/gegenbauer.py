"""The Gegenbauer polynomials normalised on S^{d-1}, the zonal basis of MATH.md §2.2.

``P_l = C_l^lam / ||C_l^lam||`` (``lam = (d - 2) / 2``), orthonormal on the sphere:
``int_{S^{d-1}} P_l(x_d) P_k(x_d) dsigma = delta_lk`` (MATH.md §2.2, *Zonal densities*).  The zonal Galerkin
scheme and the finite volumes (:mod:`meanfield.solvers.schemes.zonal`, :mod:`meanfield.solvers.schemes.finite_volume`) and
:func:`meanfield.analysis.zonal_point_coefficients` share them (``meanfield`` does not import ``solvers``,
DESIGN.md *Layout*).
"""

from __future__ import annotations

import math

import numpy as np

from .errors import require
from .geometry import sphere_area


def normalised_gegenbauer(t, lmax: int, dim: int, derivative: bool = False):
    """``P_l(t)`` (and ``P_l'(t)``), ``l = 0..lmax``, as arrays of shape ``t.shape + (lmax+1,)``.

    Three-term recurrence of the orthonormal polynomials (MATH.md §2.2) for the weight
    ``|S^{d-2}| (1 - t^2)^{(d-3)/2}`` on ``[-1, 1]``:
    ``t P_l = a_{l+1} P_{l+1} + a_l P_{l-1}``, ``a_l^2 = l (l + 2 lam - 1) / (4 (l + lam)(l + lam - 1))``,
    ``P_0 = 1 / sqrt(|S^{d-1}|)``; the derivative follows by differentiating the recurrence.
    """
    require(dim >= 3, f"--dim must be >= 3 for the zonal solver (got {dim})")
    t = np.asarray(t, dtype=float)
    lam = (dim - 2) / 2.0
    ell = np.arange(1, lmax + 2, dtype=float)
    a = np.sqrt(ell * (ell + 2 * lam - 1) / (4 * (ell + lam) * (ell + lam - 1)))  # a[l-1] = a_l
    p = np.zeros(t.shape + (lmax + 1,))
    dp = np.zeros_like(p)
    p[..., 0] = 1.0 / math.sqrt(sphere_area(dim))
    if lmax >= 1:
        p[..., 1] = t * p[..., 0] / a[0]
        dp[..., 1] = p[..., 0] / a[0]
    for l in range(1, lmax):
        p[..., l + 1] = (t * p[..., l] - a[l - 1] * p[..., l - 1]) / a[l]
        dp[..., l + 1] = (t * dp[..., l] + p[..., l] - a[l - 1] * dp[..., l - 1]) / a[l]
    return (p, dp) if derivative else p
