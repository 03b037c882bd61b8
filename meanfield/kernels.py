"""Spectral coefficients of the attention kernel ``exp(beta <x, y>)`` (MATH.md §2.1–2.2).

All coefficients are computed with exponentially scaled Bessel functions
(``scipy.special.ive``), so they are finite for any ``beta`` (tested to 1000):

    exp(-beta) kappa_l = (2 pi)^{d/2} beta^{-(d-2)/2} ive(l + (d-2)/2, beta)    (MATH.md §2.2)

On the circle (``d = 2``) this is ``2 pi ive(|k|, beta)`` (MATH.md §2.1).  The
kernel is numerically band-limited: :func:`band_limit` computes the degree past
which every coefficient is below ``tol`` relative to the degree-0 one.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ive

from .errors import require


def _order(degree, dim: int):
    return np.abs(np.asarray(degree, dtype=float)) + (dim - 2) / 2.0


def scaled_funk_hecke(degree, beta: float, dim: int = 2) -> np.ndarray:
    """``exp(-beta) kappa_l`` for the kernel ``exp(beta t)`` on S^{dim-1} (MATH.md §2.2).

    ``degree`` may be an array (negative Fourier modes on the circle use ``|k|``).
    At ``beta = 0`` this is the limit: ``|S^{d-1}|`` at degree 0 and 0 elsewhere.
    """
    require(beta >= 0, f"beta must be >= 0 (got {beta:g})")
    degree = np.asarray(degree)
    if beta == 0.0:
        from .geometry import sphere_area
        return np.where(degree == 0, sphere_area(dim), 0.0)
    prefactor = (2.0 * math.pi) ** (dim / 2.0) * beta ** (-(dim - 2) / 2.0)
    return prefactor * ive(_order(degree, dim), beta)


def scaled_funk_hecke_over_beta(degree, beta: float, dim: int = 2) -> np.ndarray:
    """``exp(-beta) kappa_l / beta`` for ``l >= 1``, with its finite limit at ``beta = 0``.

    This is the multiplier of the velocity field (MATH.md §2: ``X = grad(K * rho) / beta``
    for USA, and the numerator of SA's ``grad log(K * rho) / beta``).  As ``beta -> 0``
    only degree 1 survives: ``kappa_1 / beta -> |S^{d-1}| / d``.  Degree 0 is returned
    as 0 because the gradient annihilates it.
    """
    degree = np.asarray(degree)
    if beta == 0.0:
        from .geometry import sphere_area
        return np.where(np.abs(degree) == 1, sphere_area(dim) / dim, 0.0)
    return np.where(degree == 0, 0.0, scaled_funk_hecke(degree, beta, dim) / beta)


def scaled_funk_hecke_beta_derivative(degree, beta: float, dim: int = 2) -> np.ndarray:
    """``exp(-beta) d kappa_l / d beta``: the Funk–Hecke coefficients of ``t exp(beta t)`` (MATH.md §2.2, §6).

    From ``kappa_l = (2 pi)^{d/2} beta^{-(d-2)/2} I_{l+(d-2)/2}(beta)`` and
    ``I_mu' = I_{mu+1} + (mu / beta) I_mu``:

        exp(-beta) kappa_l' = (2 pi)^{d/2} beta^{-(d-2)/2} [ive(l + d/2, beta) + (l / beta) ive(l + (d-2)/2, beta)]

    (two positive terms: no cancellation).  ``sum_l kappa_l' rho_l Y_l`` is ``d/dbeta (K * rho)``, the
    numerator of the radial attention ``<theta, A>`` (MATH.md §6); at the uniform state the ratio to
    ``kappa_0`` is ``I_{d/2}(beta) / I_{d/2-1}(beta)``.  At ``beta = 0`` the limit: ``|S^{d-1}| / d``
    at degree 1 and 0 elsewhere.
    """
    require(beta >= 0, f"beta must be >= 0 (got {beta:g})")
    degree = np.abs(np.asarray(degree))
    if beta == 0.0:
        from .geometry import sphere_area
        return np.where(degree == 1, sphere_area(dim) / dim, 0.0)
    order = _order(degree, dim)
    prefactor = (2.0 * math.pi) ** (dim / 2.0) * beta ** (-(dim - 2) / 2.0)
    return prefactor * (ive(order + 1.0, beta) + degree / beta * ive(order, beta))


def band_limit(beta: float, dim: int = 2, tol: float = 1e-15) -> int:
    """Numerical band limit ``M(beta, tol)`` of the kernel (MATH.md §2.1).

    The smallest ``M`` with ``kappa_l / kappa_0 < tol`` for every ``l > M``
    (the ratio decreases in ``l``).  Computed from ``ive``, never guessed.
    """
    require(0 < tol < 1, f"tol must be in (0, 1) (got {tol:g})")
    if beta == 0.0:
        return 1
    # I_nu(beta) ~ (beta/2)^nu / Gamma(nu+1) decays faster than geometrically past nu ~ beta:
    # search a range that certainly contains the crossing.
    top = int(2 * beta + 60 + 10 * math.sqrt(beta))
    ratio = funk_hecke_ratio(np.arange(top + 1), beta, dim)
    below = np.nonzero(ratio < tol)[0]
    if below.size == 0:
        return top
    return int(below[0]) - 1


def representable(beta: float, dim: int) -> bool:
    """Whether ``exp(-beta) kappa_0`` and its prefactor ``(2 pi)^{d/2} beta^{-(d-2)/2}`` are ordinary doubles
    (``beta > 0``): false at large ``d`` with small ``beta``, where the coefficients leave double precision."""
    from .bessel import SMALLEST

    if (dim / 2.0) * math.log(2.0 * math.pi) - (dim - 2) / 2.0 * math.log(beta) > 700.0:
        return False
    with np.errstate(under="ignore"):
        return float(ive((dim - 2) / 2.0, beta)) >= SMALLEST


def funk_hecke_ratio(degree, beta: float, dim: int = 2) -> np.ndarray:
    """``kappa_l / kappa_0 = I_{l+nu}(beta) / I_nu(beta)``, ``nu = (d - 2) / 2``, for ``beta > 0``.

    From :func:`scaled_funk_hecke` where the coefficients are :func:`representable`; otherwise (large ``d``
    with small ``beta``, where that would be ``0 / 0`` or overflow) from the ratios themselves
    (:func:`meanfield.bessel.bessel_ratios`).
    """
    from .bessel import bessel_ratios

    if representable(beta, dim):
        return scaled_funk_hecke(degree, beta, dim) / scaled_funk_hecke(0, beta, dim)
    orders = np.abs(np.asarray(degree)).astype(int)
    return bessel_ratios((dim - 2) / 2.0, beta, int(orders.max()) + 1)[orders]
