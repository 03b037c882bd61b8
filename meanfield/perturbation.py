"""The random initial perturbation of ``perturbed:EPS``: one law, the same function at every resolution.

MATH.md §2.4.  The relative perturbation of the uniform density ``rho_0 = 1 / |S^{d-1}|`` is

    rho / rho_0 - 1 = EPS * sum_{l=1..L0} sum_i xi_{l,i} phi_{l,i}(x),   xi_{l,i} i.i.d. N(0, 1),

where ``phi_{l,i}`` is an orthonormal basis of the degree-``l`` functions for the *probability* measure
``sigma / |S^{d-1}|`` (each has unit RMS), and the band ``L0`` is fixed (:data:`BANDS`):

* circle (``L0 = 16``): ``phi = sqrt 2 cos(k theta), sqrt 2 sin(k theta)``; in MATH.md §2.1's coefficients
  ``rho_hat_k = rho_0 EPS (a_k - i b_k) / sqrt 2``;
* sphere S^2 (``L0 = 12``): ``phi = sqrt(4 pi)`` times the real orthonormal spherical harmonics
  (``Y_l0``, ``sqrt 2 Re Y_lm``, ``sqrt 2 Im Y_lm``, ``m = 1..l``);
* zonal S^{d-1} (``L0 = 12``): ``phi = sqrt(|S^{d-1}|) P_l(x_d)``, one per degree, ``P_l`` the normalised
  Gegenbauer polynomials of :mod:`meanfield.solvers.schemes.zonal`.

The normals are drawn from ``numpy.random.default_rng(seed)`` in one fixed order whatever the grid:
the circle ``a_1, b_1, a_2, b_2, ..., a_16, b_16``; the sphere degree by degree, in each the ``m = 0``
number and then ``(x, y)`` for ``m = 1..l``; zonal ``c_1 .. c_12``.  A grid that holds the band (circle
``N >= 49``, the dealiased band ``(N - 1) // 3 >= 16``; sphere ``lmax >= 12``; zonal Galerkin ``L >= 12``,
zonal finite volume ``N >= 37`` cells) therefore starts from the same function for the same seed; a
coarser grid starts from its truncation to the degrees it holds (the lower degrees unchanged).
The bands are small enough that the quadratic products of the band (degrees up to ``2 L0``) stay below
the top sixth of the band that the spectral schemes' resolution monitor watches (DESIGN.md *Stopping*)
on the circle from ``N = 128`` and on the sphere and zonal from degree 31, and large enough to hold the
dominant degree and its competitors for ``beta`` up to about 64 on the circle (``k* = 11``) and about
30 on spheres.

The density must stay positive: ``EPS`` times the depth of the noise's minimum must be below 1.  The
minimum is taken on a fixed fine grid (:data:`FINE_CIRCLE_POINTS` angles, the Gauss–Legendre grid of
degree :data:`FINE_SPHERE_DEGREE`, :data:`FINE_ZONAL_POINTS` polar angles), so the decision does not
depend on the run's resolution; a larger ``EPS`` is refused with one line giving the allowed range.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import InputError
from .fourier_series import synthesis
from .geometry import harmonic_multiplicity, sphere_area

#: The band ``L0`` of the law on each geometry (MATH.md §2.4).
BANDS = {"circle": 16, "sphere": 12, "zonal": 12}
#: Angles of the fine circle grid on which the noise's minimum is found: a degree-16 series ``f`` has
#: ``|f''| <= 16^2 max|f|`` (Bernstein), so the sampled minimum is within ``2e-6 max|f|`` of the true one.
FINE_CIRCLE_POINTS = 2 ** 15
#: Degree of the Gauss–Legendre grid of the sphere's check (about 32 points per wavelength of degree 12: the
#: sampled minimum is within about 1e-2 max|f| of the true one).
FINE_SPHERE_DEGREE = 128
#: Equally spaced polar angles, poles included, of the zonal check (within 1e-5 max|f| for degree 12).
FINE_ZONAL_POINTS = 4097


def standard_normals(seed, count: int) -> np.ndarray:
    """The law's ``count`` i.i.d. N(0, 1) numbers, in its fixed order, from ``numpy.random.default_rng(seed)``."""
    return np.random.default_rng(seed).standard_normal(count)


def circle_noise(seed, kmax: int) -> np.ndarray:
    """MATH.md §2.1 coefficients ``noise_hat_k = (a_k - i b_k) / sqrt 2``, ``k = 0 .. min(L0, kmax)`` (MATH.md §2.4).

    ``noise(theta) = sqrt 2 sum_k (a_k cos k theta + b_k sin k theta)``: all ``2 L0`` numbers are drawn,
    the modes above ``kmax`` (a grid too coarse for the band) are dropped.
    """
    band = BANDS["circle"]
    a, b = standard_normals(seed, 2 * band).reshape(band, 2).T
    coeffs = np.zeros(band + 1, dtype=complex)
    coeffs[1:] = (a - 1j * b) / math.sqrt(2.0)
    return coeffs[:min(band, kmax) + 1]


def sphere_normals(seed) -> np.ndarray:
    """The sphere law's ``L0 (L0 + 2)`` normals in their fixed order (MATH.md §2.4)."""
    band = BANDS["sphere"]
    return standard_normals(seed, band * (band + 2))


def sphere_noise(normals: np.ndarray, degree_of_index, m_of_index) -> np.ndarray:
    """Complex orthonormal coefficients ``f_lm`` (``m >= 0``, in the given layout) of the sphere's noise
    divided by ``sqrt(4 pi)`` (MATH.md §2.4): ``f_l0 = x_l0``, ``f_lm = (x_lm - i y_lm) / sqrt 2``, for the
    degrees ``1 .. L0`` the layout holds (zero elsewhere).

    ``normals`` from :func:`sphere_normals`; the fixed order puts degree ``l`` at offset ``l^2 - 1``:
    ``x_l0``, then ``x_lm, y_lm`` for ``m = 1..l``.
    """
    band = BANDS["sphere"]
    l, m = np.asarray(degree_of_index), np.asarray(m_of_index)
    inside = (l >= 1) & (l <= band)
    offset = np.where(inside, l * l - 1, 0)
    x = normals[offset + np.where(m > 0, 2 * m - 1, 0) * inside]
    y = normals[offset + 2 * m * inside]
    coeffs = np.where(m == 0, x + 0j, (x - 1j * y) / math.sqrt(2.0))
    return np.where(inside, coeffs, 0.0)


def zonal_noise(seed, lmax: int) -> np.ndarray:
    """Coefficients ``c_l``, ``l = 0 .. lmax``, of the zonal noise ``sum_l c_l sqrt(|S^{d-1}|) P_l`` (MATH.md §2.4):
    ``c_1 .. c_min(L0, lmax)`` i.i.d. N(0, 1), the rest zero."""
    band = BANDS["zonal"]
    coeffs = np.zeros(lmax + 1)
    keep = min(band, lmax)
    coeffs[1:keep + 1] = standard_normals(seed, band)[:keep]
    return coeffs


def require_positive(eps: float, lowest: float, seed) -> None:
    """Refuse ``EPS`` when ``1 + EPS * noise`` would be negative somewhere: ``EPS * (-lowest) < 1`` (MATH.md §2.4)."""
    depth = max(-float(lowest), 0.0)
    if eps * depth < 1.0:
        return
    digits = 10 ** (3 - math.floor(math.log10(1.0 / depth)))          # 4 significant digits, rounded down
    draw = "this draw (no --seed)" if seed is None else f"--seed {seed}"
    raise InputError(f"--init: perturbed:EPS needs EPS in [0, {math.floor(digits / depth) / digits:.4g}) for {draw} "
                     f"(got {eps:g}): the drawn noise dips to {lowest:.4g}, so a larger EPS makes the density negative")


def circle_lowest(coeffs: np.ndarray) -> float:
    """The minimum of the circle noise with coefficients ``coeffs`` on :data:`FINE_CIRCLE_POINTS` angles."""
    return float(np.min(synthesis(coeffs, FINE_CIRCLE_POINTS)))


def sphere_lowest(normals: np.ndarray, basis) -> float:
    """The minimum of the sphere noise (degrees ``<= basis.lmax``) on the fine grid of a basis of the same kind."""
    fine = type(basis)(FINE_SPHERE_DEGREE)
    coeffs = sphere_noise(normals, fine.degree_of_index, fine.m_of_index)
    coeffs[np.asarray(fine.degree_of_index) > basis.lmax] = 0.0
    return float(np.min(fine.synthesise(math.sqrt(4 * math.pi) * coeffs)))


def zonal_lowest(coeffs: np.ndarray, basis) -> float:
    """The minimum of the zonal noise ``sum_l coeffs_l sqrt(|S^{d-1}|) P_l`` on :data:`FINE_ZONAL_POINTS` angles."""
    t = np.cos(np.linspace(0.0, math.pi, FINE_ZONAL_POINTS))
    values = basis.polynomials(t, coeffs.size - 1) @ coeffs
    return float(np.min(values)) * math.sqrt(sphere_area(basis.dim))


def law_geometry(dim: int, zonal: bool = False) -> str:
    """Which law (:data:`BANDS`) a start on S^{dim-1} draws: the circle's, the zonal one, or S^2's for any other
    sphere."""
    return "circle" if dim == 2 else "zonal" if zonal else "sphere"


def law_band(dim: int, zonal: bool = False) -> int:
    """The band ``L0`` of the law on S^{dim-1} (:func:`law_geometry`)."""
    return BANDS[law_geometry(dim, zonal)]


def coefficients_per_degree(degree: int, dim: int, zonal: bool = False) -> int:
    """How many i.i.d. normals the law puts in degree ``l >= 1`` (MATH.md §2.4): 1 for zonal densities, else
    every spherical harmonic of the degree (:func:`meanfield.geometry.harmonic_multiplicity`)."""
    return 1 if zonal else harmonic_multiplicity(degree, dim)
