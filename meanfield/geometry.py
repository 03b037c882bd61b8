"""Elementary geometry of the unit sphere S^{d-1} (MATH.md §2)."""

import math


def sphere_area(dim: int) -> float:
    """Surface measure ``|S^{d-1}| = 2 pi^{d/2} / Gamma(d/2)`` of the unit sphere in R^dim.

    ``sphere_area(2) = 2 pi`` (the circle), ``sphere_area(3) = 4 pi``.
    """
    if dim / 2.0 < GAMMA_FINITE:
        return 2.0 * math.pi ** (dim / 2.0) / math.gamma(dim / 2.0)
    return math.exp(math.log(2.0) + dim / 2.0 * math.log(math.pi) - math.lgamma(dim / 2.0))   # Gamma overflows


#: ``math.gamma(x)`` is finite for ``x < 171.6``; above it :func:`sphere_area` uses ``lgamma`` (the area itself is
#: below 1e-221 there and underflows to 0 from d = 456, where callers must work with ratios of areas).
GAMMA_FINITE = 171.0


def laplace_eigenvalue(degree, dim: int):
    """``l (l + d - 2)``: minus the Laplace–Beltrami eigenvalue of degree ``l`` on S^{d-1} (MATH.md §2.2)."""
    return degree * (degree + dim - 2)


def harmonic_multiplicity(degree: int, dim: int) -> int:
    """How many independent spherical harmonics of degree ``l`` live on S^{d-1} (MATH.md §2.4):
    ``C(l+d-2, d-2) + C(l+d-3, d-2)`` for ``l >= 1`` (2 on the circle, ``2 l + 1`` on S^2), 1 for ``l = 0``."""
    if degree == 0:
        return 1
    return math.comb(degree + dim - 2, dim - 2) + math.comb(degree + dim - 3, dim - 2)
