"""Initial densities on the sphere S^2 from a text spec (the ``--init`` flag).

Specs (every density integrates to 1 over S^2 unless read from a file):

``uniform``
    ``1 / (4 pi)``.
``perturbed:EPS``
    ``(1 + EPS * noise) / (4 pi)``; ``noise = sqrt(4 pi) sum`` of the real orthonormal
    spherical harmonics of degrees ``1..12`` (every order) with i.i.d. standard
    normal coefficients drawn from ``--seed`` in a fixed order (MATH.md §2.4,
    :mod:`meanfield.perturbation`): the same function at every ``lmax >= 12``, its
    truncation below.  Refused when ``EPS`` would make the density negative.
``vmf:KAPPA@LAT,LON``
    the von Mises–Fisher density ``kappa / (4 pi sinh kappa) exp(kappa <x, mu>)``
    centred at latitude ``LAT``, longitude ``LON`` (degrees; ``@LAT,LON``
    optional, default the north pole), computed without overflow (``vonmises:`` is
    accepted for ``vmf:``).
``A+B+...``
    the equal-weight mixture of the terms (split only at '+' followed by a letter).
``run.nc``
    the last frame of an earlier sphere run, resampled spectrally to ``lmax``.

Anything else, a density that is negative somewhere or does not integrate to a positive
number, and a density the basis cannot resolve (it differs from its degree-``lmax``
projection by more than 1e-3 of the mean density) is refused with one line naming
``--init``.  Values given on another latitude/longitude grid (``xarray``, run files:
:mod:`meanfield.solvers.runs.initial_state`) come onto the grid by :func:`resample_grid` (a
Gauss–Legendre grid of a run: spectral) or :func:`latlon_values` (any other grid: bicubic).

Coordinates (MATH.md §2.2): the text spec's ``@LAT,LON`` and the DataArrays of run files speak latitude and
longitude in degrees; a user's callable is called ``f(theta, phi)``, colatitude in ``[0, pi]`` and longitude in
``[0, 2 pi)``, radians, and one written for degrees is refused naming the convention
(:func:`sphere_function_values`).  This
module never imports :mod:`solvers`: it works with the basis object it is given (grid
``basis.colatitude`` x ``basis.longitude``, ``analyse``/``synthesise``/``integrate``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.interpolate import CubicSpline, RectBivariateSpline

from ..errors import InputError, require
from ..perturbation import require_positive, sphere_lowest, sphere_noise, sphere_normals
from ..app.storage import last_valid_density, load_run
from .sources import evaluate
from .spec import VON_MISES, check_sign_and_mass, density_from_spec, parse_number, require_resolved

SPHERE_INIT_HELP = ("uniform, perturbed:EPS, vmf:KAPPA@LAT,LON (centre at latitude LAT, longitude LON, in degrees; "
                    "sums with '+'), or an earlier sphere run's .nc file")


def _number(text: str, what: str) -> float:
    return parse_number(text, what, SPHERE_INIT_HELP)


def unit_vectors(basis) -> np.ndarray:
    """Cartesian coordinates ``(3, nlat, nlon)`` of the grid points of ``basis``."""
    theta = np.asarray(basis.colatitude)[:, None]
    phi = np.asarray(basis.longitude)[None, :]
    return np.stack(np.broadcast_arrays(np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi),
                                        np.cos(theta) + 0.0 * phi))


def direction(lat_deg: float, lon_deg: float) -> np.ndarray:
    """The unit vector at latitude ``lat_deg`` and longitude ``lon_deg`` (degrees)."""
    lat, lon = math.radians(lat_deg), math.radians(lon_deg)
    return np.array([math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon), math.sin(lat)])


def von_mises_fisher(basis, kappa: float, mu: np.ndarray) -> np.ndarray:
    """``kappa / (4 pi sinh kappa) exp(kappa <x, mu>)`` on the grid, overflow-free:
    ``= kappa / (2 pi (1 - exp(-2 kappa))) exp(kappa (<x, mu> - 1))``; ``1 / (4 pi)`` at ``kappa = 0``."""
    cosine = np.tensordot(mu, unit_vectors(basis), axes=1)
    if kappa == 0.0:
        return np.full(cosine.shape, 1.0 / (4 * math.pi))
    return kappa / (2.0 * math.pi * -math.expm1(-2.0 * kappa)) * np.exp(kappa * (np.minimum(cosine, 1.0) - 1.0))


def perturbed_density(eps: float, basis, seed) -> np.ndarray:
    """``(1 + EPS noise) / (4 pi)`` on the grid of ``basis`` (MATH.md §2.4), the noise in the degrees up to
    ``min(12, lmax)``; refused when ``EPS`` would make it negative."""
    normals = sphere_normals(seed)
    require_positive(eps, sphere_lowest(normals, basis), seed)
    coeffs = sphere_noise(normals, basis.degree_of_index, basis.m_of_index)
    return (1.0 + eps * basis.synthesise(math.sqrt(4 * math.pi) * coeffs)) / (4 * math.pi)


def _term(term: str, basis, seed) -> np.ndarray:
    name, _, arg = term.partition(":")
    name = name.strip().lower()
    if name == "uniform" and not arg:
        return np.full((basis.colatitude.size, basis.longitude.size), 1.0 / (4 * math.pi))
    if name == "perturbed" and arg:
        eps = _number(arg, "perturbed:EPS")
        require(eps >= 0, f"--init: perturbed:EPS needs EPS >= 0 (got {eps:g})")
        return perturbed_density(eps, basis, seed)
    if name in VON_MISES and arg:
        kappa_text, at, where = arg.partition("@")
        kappa = _number(kappa_text, f"{name}:KAPPA")
        require(kappa >= 0, f"--init: {name}:KAPPA needs KAPPA >= 0 (got {kappa:g})")
        lat, lon = 90.0, 0.0
        if at:
            parts = where.split(",")
            require(len(parts) == 2, f"--init: {name}:KAPPA@LAT,LON needs two numbers after '@' (got {where!r})")
            lat, lon = _number(parts[0], f"{name} LAT"), _number(parts[1], f"{name} LON")
            require(-90.0 <= lat <= 90.0, f"--init: {name} LAT must be in [-90, 90] degrees (got {lat:g})")
        return von_mises_fisher(basis, kappa, direction(lat, lon))
    raise InputError(f"--init: unknown initial condition {term!r}; expected {SPHERE_INIT_HELP}")


def resample_grid(density: np.ndarray, old, basis) -> np.ndarray:
    """A density on the grid of the basis ``old`` (another ``lmax``) analysed there and synthesised on ``basis``."""
    return basis.synthesise(old.resample(old.analyse(density), basis.lmax))


def _pole_rows(values: np.ndarray, lat: np.ndarray, lon: np.ndarray, north: bool, rows: int = 3):
    """Rows beyond a pole by reflection, latitude increasing: ``f(180 - lat, lon) = f(lat, lon + 180)``
    (south: ``-180 - lat``), from the ``rows`` latitudes nearest the pole (a row at the pole is not repeated)."""
    inner = np.flatnonzero(np.abs(lat) < 90.0)
    pick = inner[-rows:][::-1] if north else inner[:rows][::-1]
    spline = CubicSpline(np.append(lon, lon[0] + 360.0), np.concatenate((values[pick], values[pick, :1]), axis=1),
                         axis=1, bc_type="periodic")
    shifted = lon[0] + np.mod(lon + 180.0 - lon[0], 360.0)
    return (180.0 if north else -180.0) - lat[pick], spline(shifted)


def latlon_values(values: np.ndarray, lat: np.ndarray, lon: np.ndarray, lat_out: np.ndarray,
                  lon_out: np.ndarray) -> np.ndarray:
    """Bicubic interpolant of ``values[i, j]`` at ``(lat[i], lon[j])`` (degrees) on the grid ``lat_out x lon_out``.

    Longitude is periodic (three columns wrapped on each side); beyond the last latitude the
    data are continued across the pole (:func:`_pole_rows`), so the interpolant is smooth there.
    ``lat`` and ``lon`` must be strictly increasing, ``lon`` in ``[0, 360)``, at least 4 longitudes.
    """
    wrap = min(3, lon.size)
    lon_pad = np.concatenate((lon[-wrap:] - 360.0, lon, lon[:wrap] + 360.0))
    south_lat, south = _pole_rows(values, lat, lon, north=False)
    north_lat, north = _pole_rows(values, lat, lon, north=True)
    lat_pad = np.concatenate((south_lat, lat, north_lat))
    rows = np.concatenate((south, values, north))
    rows = np.concatenate((rows[:, -wrap:], rows, rows[:, :wrap]), axis=1)
    spline = RectBivariateSpline(lat_pad, lon_pad, rows, kx=3, ky=3, s=0)
    lat_order, lon_order = np.argsort(lat_out), np.argsort(np.mod(lon_out, 360.0))
    out = np.empty((lat_out.size, lon_out.size))
    out[np.ix_(lat_order, lon_order)] = spline(lat_out[lat_order], np.mod(lon_out, 360.0)[lon_order])
    return out


#: How a sphere callable is called (MATH.md §2.2): the words of every refusal of one.
SPHERE_CALLABLE = ("the sphere callable is called f(theta, phi) with colatitude theta in [0, pi] and longitude phi in "
                   "[0, 2 pi) radians")
#: What a refusal of a callable written for degrees adds, and how to call it.
IN_DEGREES = ("its values look like it expects degrees (latitude, longitude): pass "
              "`lambda theta, phi: f(90 - np.degrees(theta), np.degrees(phi))` or write it in radians")
#: A jump across the longitude seam larger than this many times every other step between neighbouring columns, and
#: than this fraction of the largest value, is not the seam of a function on S^2 (:func:`seam_jump`).
SEAM_RATIO, SEAM_FLOOR = 4.0, 1e-9


def seam_jump(values: np.ndarray) -> bool:
    """Whether values on a grid ``(ntheta, nphi)`` of equispaced increasing longitudes around the circle jump across
    the seam (the last column to the first) by more than :data:`SEAM_RATIO` times the largest step between any other
    two neighbouring columns.  A function on S^2 is ``2 pi``-periodic in ``phi``, so its seam is a step like the
    others; a function periodic in 360 (written for degrees) called with radians sees longitudes 0 .. 6.28 degrees,
    whose two ends the seam joins."""
    if values.ndim != 2 or values.shape[1] < 4:
        return False
    inner = float(np.max(np.abs(np.diff(values, axis=1))))
    seam = float(np.max(np.abs(values[:, -1] - values[:, 0])))
    return seam > SEAM_RATIO * inner and seam > SEAM_FLOOR * float(np.max(np.abs(values)))


def _takes_degrees(function, label: str, theta: np.ndarray, phi: np.ndarray, accept) -> bool:
    """Whether ``function`` called as ``f(lat, lon)`` in degrees at the same points (``lat = 90 - theta``, ``lon =
    phi`` in degrees) gives values that ``accept`` takes and that do not jump across the seam: it was written for
    degrees.  Never raises (a failure there says nothing about degrees)."""
    try:
        with np.errstate(all="ignore"):
            values = evaluate(function, label, 90.0 - np.degrees(theta), np.degrees(phi))
        accept(values)
    except Exception:  # the user's function, called where it was not asked to be: no evidence either way
        return False
    return not seam_jump(values)


def sphere_function_values(function, label: str, theta: np.ndarray, phi: np.ndarray, accept, where: str) -> np.ndarray:
    """``function(theta, phi)`` at the points ``theta`` (colatitude) and ``phi`` (longitude), radians (MATH.md §2.2;
    :func:`meanfield.initial.sources.evaluate`), accepted by ``accept(values)`` (which raises
    :class:`meanfield.errors.InputError`); ``where`` says where the points come from.

    A function written for degrees, ``f(lat, lon)``, is refused in one line naming the convention
    (:data:`SPHERE_CALLABLE`, :data:`IN_DEGREES`) when called with radians it is refused (unresolved: the seam and the
    poles of the tiny patch of degrees it then sees) or its values jump across the longitude seam
    (:func:`seam_jump`), while the same points in degrees give values ``accept`` takes without a seam jump.  Any other
    refusal of a callable recalls the convention, so the advice to increase the resolution is not the only hint.
    A degrees function that does not depend on the longitude and still resolves called with radians is not seen.
    """
    in_degrees = f"{label}: {SPHERE_CALLABLE} ({where}); {IN_DEGREES}"
    try:
        values = evaluate(function, label, theta, phi)
        accept(values)
    except InputError as refusal:
        message = in_degrees if _takes_degrees(function, label, theta, phi, accept) else f"{refusal} ({SPHERE_CALLABLE})"
        raise InputError(message) from None
    require(not (seam_jump(values) and _takes_degrees(function, label, theta, phi, accept)), in_degrees)
    return values


def _from_file(path: str, basis) -> np.ndarray:
    dataset = load_run(path, geometry="sphere")
    density = last_valid_density(dataset, path)
    require("mode" in dataset.coords, f"{path}: the run has no 'mode' coordinate (degrees)")
    lmax_old = int(dataset["mode"].values.max())
    old = type(basis)(lmax_old)
    require(density.shape == (old.colatitude.size, old.longitude.size),
            f"--init {path}: density grid {density.shape} is not the grid of a degree-{lmax_old} sphere run")
    return resample_grid(density, old, basis)


def sphere_density(spec: str, basis, seed=None) -> np.ndarray:
    """The initial density of ``spec`` on the grid of ``basis`` (``nlat x nlon``)."""
    return density_from_spec(spec, SPHERE_INIT_HELP, lambda path: _from_file(path, basis),
                             lambda text: _term(text, basis, seed),
                             lambda density, text: check_sphere_density(density, text, basis))


def check_sphere_density(density: np.ndarray, spec: str, basis) -> None:
    """Refuse a density that is not finite, negative, massless, or unresolved at ``basis.lmax``."""
    mean = check_sign_and_mass(density, spec, basis.integrate(density), 4 * math.pi)
    residual = float(np.max(np.abs(density - basis.synthesise(basis.analyse(density))))) / mean
    require_resolved(residual, spec, basis.lmax, f"degree {basis.lmax}")
