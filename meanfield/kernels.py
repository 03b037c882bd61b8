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


def _log_prefactor(beta: float, dim: int) -> float:
    """``log((2 pi)^{d/2} beta^{-(d-2)/2})``, the Funk–Hecke prefactor of MATH.md §2.2."""
    return dim / 2.0 * math.log(2.0 * math.pi) - (dim - 2) / 2.0 * math.log(beta)


def _prefactor(beta: float, dim: int) -> float:
    """``(2 pi)^{d/2} beta^{-(d-2)/2}`` from its logarithm: either power alone overflows at large ``d`` (``d = 4096``:
    ``(2 pi)^2048``) where their product is an ordinary number (inf only where :func:`representable` is false)."""
    with np.errstate(over="ignore"):
        return float(np.exp(_log_prefactor(beta, dim)))


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
    prefactor = _prefactor(beta, dim)
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
    prefactor = _prefactor(beta, dim)
    return prefactor * (ive(order + 1.0, beta) + degree / beta * ive(order, beta))


def band_limit(beta: float, dim: int = 2, tol: float = 1e-15) -> int:
    """Numerical band limit ``M(beta, tol)`` of the kernel (MATH.md §2.1).

    The smallest ``M`` with ``kappa_l / kappa_0 < tol`` for every ``l > M``
    (the ratio decreases in ``l``).  Computed from ``ive``, never guessed.
    """
    require(0 < tol < 1, f"tol must be in (0, 1) (got {tol:g})")
    if beta == 0.0:
        return 1
    # The ratio falls like exp(-l (l + d - 2) / (2 beta)) while l << beta, and faster than geometrically
    # past l ~ beta: the crossing lies near sqrt(2 beta log(1/tol)).  Start a little beyond that and double
    # until the ratio at the top is below tol (it decreases in l), so the range certainly holds the crossing
    # at a cost of O(sqrt(beta)) coefficients, not O(beta).
    top = int(2 * math.sqrt(2 * beta * math.log(1 / tol))) + 60
    while funk_hecke_ratio(np.array([top]), beta, dim)[0] >= tol:
        top *= 2
    ratio = funk_hecke_ratio(np.arange(top + 1), beta, dim)
    below = np.nonzero(ratio < tol)[0]
    if below.size == 0:
        return top
    return int(below[0]) - 1


def representable(beta: float, dim: int) -> bool:
    """Whether ``exp(-beta) kappa_0`` and its prefactor ``(2 pi)^{d/2} beta^{-(d-2)/2}`` are ordinary doubles
    (``beta > 0``): false at large ``d``, where the coefficients leave double precision (small ``beta``: the
    prefactor overflows; large ``beta``: it underflows, ``d = 4096, beta = 1e4`` gives ``10^-6553``)."""
    from .bessel import SMALLEST

    log_prefactor = _log_prefactor(beta, dim)
    if not math.log(SMALLEST) <= log_prefactor <= 700.0:
        return False
    with np.errstate(under="ignore"):
        scaled = float(ive((dim - 2) / 2.0, beta))
    return scaled >= SMALLEST and log_prefactor + math.log(scaled) >= math.log(SMALLEST)


def funk_hecke_ratio(degree, beta: float, dim: int = 2) -> np.ndarray:
    """``kappa_l / kappa_0 = I_{l+nu}(beta) / I_nu(beta)``, ``nu = (d - 2) / 2``, for ``beta > 0``.

    From :func:`scaled_funk_hecke` where the coefficients are :func:`representable`; where only their prefactor
    is not (large ``d`` and ``beta``) from ``ive(l + nu, beta) / ive(nu, beta)``; otherwise (large ``d`` with
    small ``beta``, where ``ive`` itself underflows and that would be ``0 / 0``) from the ratios themselves
    (:func:`meanfield.bessel.bessel_ratios`, whose cost grows like ``beta``).
    """
    from .bessel import SMALLEST, bessel_ratios

    if representable(beta, dim):
        return scaled_funk_hecke(degree, beta, dim) / scaled_funk_hecke(0, beta, dim)
    nu = (dim - 2) / 2.0
    orders = np.abs(np.asarray(degree)).astype(int)
    with np.errstate(under="ignore"):
        base = float(ive(nu, beta))
        if base >= SMALLEST:      # only the prefactor left double precision (large d and beta): ive's own ratio
            return ive(orders + nu, beta) / base
    return bessel_ratios(nu, beta, int(orders.max()) + 1)[orders]
