"""Distances between token clouds and densities, and the coefficients they are made of (MATH.md §4).

The analysis a user needs to check the mean-field limit, public (it was in the validation studies):

* **circle W1**, exact: :func:`wasserstein1_circle` between weighted atoms and a grid density read as its
  trigonometric series, ``W1 = min_c int |F_mu - F_nu - c|`` (MATH.md §4), with :func:`trig_coefficients`
  and the exact CDF :func:`cdf_and_density_at`, :func:`cdf_and_density_on_grid`; between any two measures
  (densities, token clouds, mixtures: :class:`CircleMeasure`) :func:`wasserstein1_circle_between`, which
  ``meanfield compare`` uses (:mod:`meanfield.run_comparison`);
* **negative Sobolev norms** ``||mu - rho||_{H^-s}^2 = sum_{l >= 1} (1 + lambda_l)^{-s} sum_m |mu_lm - rho_lm|^2``
  in an orthonormal basis of ``L^2`` of the sphere (``lambda_l = l (l + d - 2)`` the Laplacian's eigenvalue;
  degree 0, the mass, left out): on the circle :func:`circle_negative_sobolev_norm` from MATH.md §2.1's
  ``rho_hat_k`` (``e^{ik theta} / sqrt(2 pi)`` is orthonormal, so ``|.|^2`` carries ``2 pi``; ``k`` and ``-k``
  both count), on S^2 :func:`negative_sobolev_norm` from m-major ``rho_lm`` (``m > 0`` counts twice), zonal
  on S^{d-1} :func:`zonal_negative_sobolev_norm` from the normalised Gegenbauer coefficients ``g_l``;
* **coefficients of run files**: :func:`sphere_frame_coefficients` (spectral S^2) and :func:`zonal_frame_coefficients`
  (zonal Galerkin), exact, from the file's ``quadrature_weight``;
* **coefficients of tokens**: circle :func:`meanfield.diagnostics.empirical_coefficients`, S^2
  :func:`sphere_point_coefficients` (ducc0's adjoint non-uniform synthesis), zonal S^{d-1}
  :func:`zonal_point_coefficients` (tokens or rings against a zonal density), and the point-mass norm
  :func:`point_mass_norm` and i.i.d. expectation :func:`iid_mean_square` that make the S^2 error's theory.

Tests check each distance against closed forms (point masses, shifted bumps) and brute-force sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import fourier_series
from .errors import require
from .gegenbauer import normalised_gegenbauer
from .geometries import Sphere2, Zonal, run_geometry
from .harmonics import SHT_EPSILON, m_major_layout, point_mass_coefficients, sphere_locations

#: The Sobolev order of the weak norms by default: ``s > (d - 1) / 2`` makes a point mass finite on S^2.
SOBOLEV_S = 2.0

#: Default points of the uniform sub-grid on which the W1 integrand is resolved.
W1_GRID_POINTS = 2 ** 15
#: Fourier coefficients below this fraction of ``rho_hat_0`` are dropped (``|error in F| < 1e-13``).
COEFF_TRIM = 1e-15
#: Intervals on which ``F_mu - F_nu`` varies less than this count as constant for the median.
FLAT_WIDTH = 1e-12

# ------------------------------------------------------------------------------------- W1 on the circle
def trig_coefficients(density) -> np.ndarray:
    """``rho_hat_k`` (k = 0..K) of the trigonometric series through grid values, normalised to mass 1.

    The Nyquist mode is dropped (as :class:`meanfield.sampling.TrigonometricDensity` does) and
    the tail below ``COEFF_TRIM * rho_hat_0`` is trimmed.
    """
    density = np.asarray(density, dtype=float)
    require(density.ndim == 1 and density.size >= 2, "density must be a 1-D array of grid values")
    coeffs = fourier_series.coefficients(density)
    if density.size % 2 == 0:
        coeffs[-1] = 0.0
    require(coeffs[0].real > 0, "density must have positive mass")
    coeffs = coeffs / (2 * math.pi * coeffs[0].real)
    kept = np.nonzero(np.abs(coeffs) > COEFF_TRIM * coeffs[0].real)[0]
    return coeffs[:kept[-1] + 1]


def _cdf_parts(coeffs: np.ndarray):
    """``b_k = rho_hat_k / (i k)`` and the constant ``-2 Re sum b_k`` so that ``F(0) = 0``."""
    k = np.arange(1, coeffs.size)
    b = coeffs[1:] / (1j * k)
    return b, -2.0 * float(np.sum(b).real)


def cdf_and_density_at(coeffs: np.ndarray, theta: np.ndarray, block: int = 2048):
    """Exact ``F(theta) = int_0^theta rho`` and ``rho(theta)`` of the series at scattered angles."""
    theta = np.asarray(theta, dtype=float)
    b, offset = _cdf_parts(coeffs)
    k = np.arange(1, coeffs.size)
    table = np.stack((b, coeffs[1:]), axis=1)
    sums = np.zeros((theta.size, 2), dtype=complex)
    for start in range(0, theta.size, block):
        phases = np.exp(1j * np.outer(theta[start:start + block], k))
        sums[start:start + block] = phases @ table
    rho0 = coeffs[0].real
    return rho0 * theta + 2 * sums[:, 0].real + offset, rho0 + 2 * sums[:, 1].real


def cdf_and_density_on_grid(coeffs: np.ndarray, points: int):
    """``F`` and ``rho`` on ``2 pi m / points`` by inverse FFT (``points > 2 K``)."""
    require(points // 2 > coeffs.size - 1, "the sub-grid must resolve every Fourier mode")
    b, offset = _cdf_parts(coeffs)
    padded = np.zeros(points // 2 + 1, dtype=complex)
    padded[1:coeffs.size] = b
    grid = 2 * math.pi * np.arange(points) / points
    cdf = coeffs[0].real * grid + fourier_series.synthesis(padded, points) + offset
    padded[1:coeffs.size] = coeffs[1:]
    density = coeffs[0].real + fourier_series.synthesis(padded, points)
    return cdf, density


def _breakpoints(theta, weights, coeffs, grid_points, series_mass=1.0):
    """Merged, sorted breakpoints with ``F_mu`` (right-continuous), ``F_nu`` and ``rho`` there.

    The last breakpoint is ``2 pi`` (``F_nu = series_mass``, 1 for a probability density); between consecutive
    breakpoints ``F_mu`` is constant and ``F_nu`` smooth.
    """
    points = max(grid_points, 1 << int(math.ceil(math.log2(4 * coeffs.size))))
    grid_cdf, grid_rho = cdf_and_density_on_grid(coeffs, points)
    atom_cdf, atom_rho = cdf_and_density_at(coeffs, theta)
    x = np.concatenate((2 * math.pi * np.arange(points) / points, theta, [2 * math.pi]))
    f_nu = np.concatenate((grid_cdf, atom_cdf, [series_mass]))
    rho = np.concatenate((grid_rho, atom_rho, [grid_rho[0]]))
    mass = np.concatenate((np.zeros(points), weights, [0.0]))
    order = np.argsort(x, kind="stable")
    return x[order], np.cumsum(mass[order]), f_nu[order], rho[order]


def _weighted_median(g_left, g_right, lengths) -> float:
    """The ``c`` with ``|{G < c}| = |{G > c}|`` for ``G`` linear on each interval (exact, by sorting).

    ``m(c) = |{G < c}|`` is piecewise linear in ``c``: each interval adds a ramp of height
    ``length`` between its end values (a jump when they differ by less than ``FLAT_WIDTH``).
    """
    lo, hi = np.minimum(g_left, g_right), np.maximum(g_left, g_right)
    ramp = hi - lo > FLAT_WIDTH
    rate = lengths[ramp] / (hi[ramp] - lo[ramp])
    zeros = np.zeros(int(np.count_nonzero(~ramp)))
    pos = np.concatenate((lo[ramp], hi[ramp], lo[~ramp]))
    order = np.argsort(pos, kind="stable")
    pos = pos[order]
    if pos.size < 2:
        return float(pos[0])
    slope = np.cumsum(np.concatenate((rate, -rate, zeros))[order])
    jump = np.concatenate((np.zeros(2 * rate.size), lengths[~ramp]))[order]
    rise = slope[:-1] * np.diff(pos)
    after = np.cumsum(jump) + np.concatenate(([0.0], np.cumsum(rise)))     # m just after each knot
    before_next = after[:-1] + rise                                         # m just before the next knot
    knots = np.repeat(pos, 2)[1:-1]
    levels = np.maximum.accumulate(np.column_stack((after[:-1], before_next)).ravel())
    return float(np.interp(0.5 * float(np.sum(lengths)), levels, knots))


def _hermite(s, ga, gb, da, db):
    """The cubic Hermite interpolant on ``[0, 1]`` (``da, db`` already times the interval length)."""
    return (((2 * s - 3) * s * s + 1) * ga + ((s - 2) * s + 1) * s * da + (3 - 2 * s) * s * s * gb
            + (s - 1) * s * s * db)


def _hermite_integral(s, ga, gb, da, db):
    """``int_0^s`` of :func:`_hermite` (per unit interval length)."""
    s2, s3, s4 = s * s, s ** 3, s ** 4
    return ((s4 / 2 - s3 + s) * ga + (s4 / 4 - 2 * s3 / 3 + s2 / 2) * da + (s3 - s4 / 2) * gb
            + (s4 / 4 - s3 / 3) * db)


def _cubic_root(ga, gb, da, db, iterations: int = 60):
    """The root in ``(0, 1)`` of the Hermite cubic where ``ga`` and ``gb`` differ in sign (bisection)."""
    left, right = np.zeros_like(ga), np.ones_like(ga)
    sign_left = np.sign(ga)
    for _ in range(iterations):
        mid = 0.5 * (left + right)
        same = np.sign(_hermite(mid, ga, gb, da, db)) == sign_left
        left, right = np.where(same, mid, left), np.where(same, right, mid)
    return 0.5 * (left + right)


def _integral_of_abs(ga, gb, da, db, lengths) -> float:
    """``sum_i int |g|`` over the intervals, ``g`` the Hermite cubic of each interval."""
    whole = _hermite_integral(1.0, ga, gb, da, db)
    total = np.abs(whole)
    cross = ga * gb < 0
    if np.any(cross):
        a, b, p, q = ga[cross], gb[cross], da[cross], db[cross]
        root = _cubic_root(a, b, p, q)
        total[cross] = np.sign(a) * (2 * _hermite_integral(root, a, b, p, q) - whole[cross])
    return float(np.sum(total * lengths))


def wasserstein1_circle(theta, weights, density, grid_points: int = W1_GRID_POINTS) -> float:
    """W1 between the weighted atoms ``(theta, weights)`` and the grid density ``density`` (MATH.md §4).

    ``theta``: angles (taken mod ``2 pi``); ``weights``: non-negative, normalised here to sum 1;
    ``density``: values on ``2 pi j / N``, read as the trigonometric series through them
    (normalised to mass 1).  ``W1 = min_c int_0^{2 pi} |F_mu - F_nu - c|``: ``F_nu`` is the
    exact CDF of the series, ``F_mu`` the step CDF; on each interval between consecutive
    breakpoints (atoms and a uniform sub-grid of ``grid_points``) ``F_mu`` is constant and
    ``F_nu`` is replaced by its cubic Hermite interpolant from the exact ``F_nu, rho`` at
    the ends (error ``h^4 max|rho'''| / 384``, ``h = 2 pi / grid_points``), whose ``|.|``
    is integrated exactly (roots by bisection).  ``c`` is the length-weighted median of
    ``F_mu - F_nu`` with ``F_nu`` linear per interval; its error enters ``W1`` at second order.
    """
    theta = _angles(theta)
    weights = np.asarray(weights, dtype=float).ravel()
    require(weights.shape == theta.shape, "theta and weights must have the same length")
    require(bool(np.all(weights >= 0)) and weights.sum() > 0, "weights must be non-negative with a positive sum")
    return _w1_of_difference(theta, weights / weights.sum(), trig_coefficients(density), 1.0, grid_points)


def _angles(theta) -> np.ndarray:
    """Angles as a flat float array in ``[0, 2 pi)``."""
    theta = np.mod(np.asarray(theta, dtype=float).ravel(), 2 * math.pi)
    theta[theta >= 2 * math.pi] = 0.0
    return theta


def _w1_of_difference(theta, weights, coeffs, series_mass, grid_points) -> float:
    """``min_c int_0^{2 pi} |F_mu - F_nu - c|`` for the atoms ``(theta, weights)`` (signed weights allowed) and
    the trigonometric series ``coeffs`` of total mass ``series_mass`` (:func:`wasserstein1_circle`, MATH.md §4)."""
    x, f_mu, f_nu, rho = _breakpoints(theta, weights, coeffs, grid_points, series_mass)
    lengths = np.diff(x)
    g_left, g_right = f_mu[:-1] - f_nu[:-1], f_mu[:-1] - f_nu[1:]
    c = _weighted_median(g_left, g_right, lengths)
    return _integral_of_abs(g_left - c, g_right - c, -rho[:-1] * lengths, -rho[1:] * lengths, lengths)


@dataclass(frozen=True)
class CircleMeasure:
    """A non-negative measure on the circle: weighted atoms at the angles ``theta`` (tokens, a finite-volume run's
    point clusters) and, optionally, a grid density on ``2 pi j / N`` read as its trigonometric series (MATH.md
    §2.1), as :func:`wasserstein1_circle` reads it.  A token cloud has no density, a spectral frame no atoms."""

    theta: np.ndarray = field(default_factory=lambda: np.zeros(0))
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    density: np.ndarray | None = None

    def parts(self):
        """``(angles, atom masses, series coefficients, series mass)`` of the measure scaled to mass 1: the atoms'
        and the series' shares of the total mass, the series' ``rho_hat_k`` (:func:`trig_coefficients`) scaled to
        its share."""
        theta, weights = _angles(self.theta), np.asarray(self.weights, dtype=float).ravel()
        require(weights.shape == theta.shape and bool(np.all(weights >= 0)),
                "a circle measure's atoms need one non-negative weight per angle")
        if self.density is None:
            require(weights.sum() > 0, "a circle measure needs atoms of positive mass or a density")
            return theta, weights / weights.sum(), np.zeros(1, dtype=complex), 0.0
        coeffs = trig_coefficients(self.density)
        series = 2 * math.pi * float(fourier_series.coefficients(np.asarray(self.density, dtype=float))[0].real)
        total = series + float(weights.sum())
        return theta, weights / total, coeffs * (series / total), series / total


def wasserstein1_circle_between(first: CircleMeasure, second: CircleMeasure,
                                grid_points: int = W1_GRID_POINTS) -> float:
    """W1 between two measures on the circle, each scaled to mass 1 (MATH.md §4): tokens and a density (the
    number :func:`wasserstein1_circle` gives, to the bit, in either order), two densities, two token clouds, or
    mixtures of atoms and a density.

    ``F_first - F_second`` is the step CDF of the signed atoms (the first's weights, minus the second's) minus
    the exact CDF of the difference of the series (the second's minus the first's), integrated as in
    :func:`wasserstein1_circle`; between atoms alone it is piecewise constant and the integral is exact."""
    if first.density is not None and second.density is None:
        first, second = second, first                 # W1 is symmetric: the atoms first, as wasserstein1_circle
    theta_a, weights_a, coeffs_a, mass_a = first.parts()
    theta_b, weights_b, coeffs_b, mass_b = second.parts()
    coeffs = np.zeros(max(coeffs_a.size, coeffs_b.size), dtype=complex)
    coeffs[:coeffs_b.size] = coeffs_b
    coeffs[:coeffs_a.size] -= coeffs_a
    return _w1_of_difference(np.concatenate((theta_a, theta_b)), np.concatenate((weights_a, -weights_b)), coeffs,
                             mass_b - mass_a, grid_points)


# ------------------------------------------------------------------------------------- H^-s on S^2
def lmax_of(coefficients: np.ndarray) -> int:
    """``lmax`` of an m-major coefficient array of length ``(lmax + 1)(lmax + 2) / 2``."""
    lmax = int(round((math.sqrt(8 * len(coefficients) + 1) - 3) / 2))
    require((lmax + 1) * (lmax + 2) // 2 == len(coefficients), "coefficients must fill an m-major layout")
    return lmax


def sobolev_weights(lmax: int, s: float = SOBOLEV_S) -> np.ndarray:
    """Per stored coefficient: ``(1 + l(l+1))^-s`` times 2 for ``m > 0`` (the ``-m`` twin), 0 at ``l = 0``."""
    degree, order = m_major_layout(lmax)
    return np.where(degree == 0, 0.0, np.where(order == 0, 1.0, 2.0) * (1.0 + degree * (degree + 1.0)) ** -s)


def negative_sobolev_norm(mu_lm: np.ndarray, rho_lm: np.ndarray, s: float = SOBOLEV_S) -> float:
    """``||mu - rho||_{H^-s}`` on S^2 over degrees ``1 .. lmax`` of two real fields' m-major orthonormal
    coefficients (module docstring)."""
    mu_lm, rho_lm = np.asarray(mu_lm), np.asarray(rho_lm)
    require(mu_lm.shape == rho_lm.shape, "both coefficient arrays must have the same lmax")
    return math.sqrt(float(np.sum(sobolev_weights(lmax_of(mu_lm), s) * np.abs(mu_lm - rho_lm) ** 2)))


def point_mass_norm(lmax: int, s: float = SOBOLEV_S) -> float:
    """``||delta_x - 1/(4 pi)||_{H^-s}`` (any ``x``) by the addition theorem: ``sum_m |Y_lm(x)|^2 = (2l+1)/(4 pi)``."""
    degree = np.arange(1, lmax + 1, dtype=float)
    return math.sqrt(float(np.sum((1.0 + degree * (degree + 1.0)) ** -s * (2 * degree + 1) / (4 * math.pi))))


def iid_mean_square(rho_lm: np.ndarray, s: float = SOBOLEV_S) -> float:
    """``n E ||mu_n - rho||^2_{H^-s}`` for ``n`` i.i.d. tokens of law ``rho`` on S^2:
    ``sum_{l >= 1} (1 + l(l+1))^{-s} ((2l + 1) / (4 pi) - sum_m |rho_lm|^2)`` (the variance of ``Y_lm(x)`` under
    ``rho``, summed by the addition theorem)."""
    lmax = lmax_of(rho_lm)
    degree, order = m_major_layout(lmax)
    power = np.bincount(degree, weights=np.where(order == 0, 1.0, 2.0) * np.abs(rho_lm) ** 2, minlength=lmax + 1)
    l = np.arange(1, lmax + 1, dtype=float)
    return float(np.sum((1.0 + l * (l + 1.0)) ** -s * ((2 * l + 1) / (4 * math.pi) - power[1:])))


def sphere_point_coefficients(x: np.ndarray, weights: np.ndarray, lmax: int) -> np.ndarray:
    """``mu_lm = sum_j w_j conj(Y_lm(x_j))``, ``l <= lmax``, of unit vectors ``x`` (n, 3): the adjoint
    non-uniform synthesis of :meth:`meanfield.solvers.schemes.lagrangian.SphereLagrangian.coefficients` (same locations,
    accuracy; :mod:`meanfield.harmonics`, MATH.md §2.2)."""
    x = np.ascontiguousarray(x, dtype=float)
    weights = np.ascontiguousarray(weights, dtype=float)
    require(x.ndim == 2 and x.shape[1] == 3 and weights.shape == (x.shape[0],), "x must be (n, 3), weights (n,)")
    return point_mass_coefficients(weights, sphere_locations(x)[0], lmax, SHT_EPSILON)[0]


# ------------------------------------------------------------------------------------- H^-s on the circle and S^{d-1}
def circle_negative_sobolev_norm(mu_hat: np.ndarray, rho_hat: np.ndarray, s: float = SOBOLEV_S) -> float:
    """``||mu - rho||_{H^-s}`` on the circle from MATH.md §2.1 coefficients ``rho_hat_k``, ``k = 0 .. K`` (the
    ``-k`` ones are the conjugates): ``2 pi sum_{k != 0} (1 + k^2)^{-s} |mu_hat_k - rho_hat_k|^2``, square-rooted."""
    mu_hat, rho_hat = np.asarray(mu_hat), np.asarray(rho_hat)
    require(mu_hat.shape == rho_hat.shape and mu_hat.ndim == 1, "both coefficient arrays must have the same modes")
    k = np.arange(mu_hat.size, dtype=float)
    weights = np.where(k == 0, 0.0, 2.0 * (1.0 + k * k) ** -s)
    return math.sqrt(2 * math.pi * float(np.sum(weights * np.abs(mu_hat - rho_hat) ** 2)))


def zonal_negative_sobolev_norm(mu_l: np.ndarray, rho_l: np.ndarray, dim: int, s: float = SOBOLEV_S) -> float:
    """``||mu - rho||_{H^-s}`` of zonal measures on S^{dim-1} from their coefficients on the Gegenbauer
    polynomials normalised in ``L^2`` of the sphere (MATH.md §2.2, the zonal solvers' ``g_l``), ``l = 0 .. L``."""
    mu_l, rho_l = np.asarray(mu_l, dtype=float), np.asarray(rho_l, dtype=float)
    require(mu_l.shape == rho_l.shape and mu_l.ndim == 1, "both coefficient arrays must have the same degrees")
    require(isinstance(dim, (int, np.integer)) and dim >= 3, f"dim must be an integer >= 3 (got {dim!r})")
    l = np.arange(mu_l.size, dtype=float)
    weights = np.where(l == 0, 0.0, (1.0 + l * (l + dim - 2)) ** -s)
    return math.sqrt(float(np.sum(weights * (mu_l - rho_l) ** 2)))


def sphere_frame_coefficients(run, index: int = -1, lmax: int | None = None) -> np.ndarray:
    """The m-major orthonormal coefficients ``rho_lm``, ``l <= lmax`` (default: the run's), of frame ``index`` of a
    spectral S^2 run file, from its grid and ``quadrature_weight`` alone: exact for the band-limited frames the
    Gauss–Legendre grid holds (to ducc0's ``SHT_EPSILON``)."""
    require(isinstance(run_geometry(run.attrs), Sphere2) and "quadrature_weight" in run,
            "sphere_frame_coefficients needs a spectral S^2 run file with quadrature_weight (older files lack it)")
    lmax = int(run.attrs["resolution"]) if lmax is None else int(lmax)
    lat, lon = np.radians(run["lat"].values), np.radians(run["lon"].values)
    density = np.asarray(run["density"].values[index], dtype=float)
    weight = np.broadcast_to(np.asarray(run["quadrature_weight"].values, dtype=float)[:, None], density.shape)
    lat_grid, lon_grid = np.meshgrid(lat, lon, indexing="ij")
    points = np.stack((np.cos(lat_grid) * np.cos(lon_grid), np.cos(lat_grid) * np.sin(lon_grid), np.sin(lat_grid)),
                      axis=-1).reshape(-1, 3)
    return sphere_point_coefficients(points, (density * weight).ravel(), lmax)


def zonal_point_coefficients(points, weights, dim: int, lmax: int) -> np.ndarray:
    """``g_l = sum_i w_i P_l(x_i . e_d)``, ``l = 0 .. lmax``, on the ``L^2``-normalised Gegenbauer polynomials
    (MATH.md §2.2): the zonal coefficients of weighted tokens on S^{dim-1}, the pole being the last axis.

    ``points``: unit vectors, shape ``(n, dim)``, or their polar angles, shape ``(n,)`` (zonal rings, e.g. a zonal
    run's nodes).  For tokens that are not zonal these are the coefficients of their average over the rotations
    that fix the pole, so :func:`zonal_negative_sobolev_norm` of them against a zonal density is the distance
    between the zonal parts (the rest of the tokens' distance is in the non-zonal harmonics)."""
    points, weights = np.asarray(points, dtype=float), np.asarray(weights, dtype=float)
    require(isinstance(dim, (int, np.integer)) and dim >= 3, f"dim must be an integer >= 3 (got {dim!r})")
    require(isinstance(lmax, (int, np.integer)) and lmax >= 0, f"lmax must be an integer >= 0 (got {lmax!r})")
    if points.ndim == 2:
        require(points.shape[1] == dim, f"points must be (n, dim) = (n, {dim}) unit vectors or (n,) polar angles")
        cosine = points[:, -1]
    else:
        require(points.ndim == 1, "points must be (n, dim) unit vectors or (n,) polar angles")
        cosine = np.cos(points)
    require(weights.shape == cosine.shape, "weights must have one entry per point")
    return normalised_gegenbauer(np.clip(cosine, -1.0, 1.0), int(lmax), int(dim)).T @ weights


def zonal_frame_coefficients(run, index: int = -1) -> np.ndarray:
    """The coefficients ``g_l``, ``l = 0 .. lmax``, on the ``L^2``-normalised Gegenbauer polynomials (MATH.md §2.2)
    of frame ``index`` of a zonal Galerkin run file, from its polar nodes and ``quadrature_weight`` alone: exact for
    the frames its Gauss–Gegenbauer rule holds (degree ``<= lmax``, the run's resolution)."""
    require(isinstance(run_geometry(run.attrs), Zonal) and "quadrature_weight" in run,
            "zonal_frame_coefficients needs a zonal Galerkin run file with quadrature_weight (older files lack it)")
    masses = np.asarray(run["density"].values[index], dtype=float) * np.asarray(run["quadrature_weight"].values)
    return zonal_point_coefficients(np.asarray(run["polar"].values, dtype=float), masses, int(run.attrs["dim"]),
                                    int(run.attrs["resolution"]))
