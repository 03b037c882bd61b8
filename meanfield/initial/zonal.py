"""Initial zonal densities on S^{d-1} from a text spec (the ``--init`` flag), d >= 3.

Densities are returned as values at the nodes of a zonal basis (``meanfield.solvers.bases.zonal_basis.ZonalBasis``
or anything with ``nodes``, ``lmax``, ``dim``, ``synthesise``, ``polynomials`` and
``interpolant_coeffs``),
ordered as the basis orders them.  Specs (MATH.md §2.2 normalisation; every density
integrates to 1 over S^{d-1} unless read from a file):

``uniform``
    ``1 / |S^{d-1}|``.
``perturbed:EPS``
    ``(1 + EPS * noise) / |S^{d-1}|``; ``noise = sqrt(|S^{d-1}|) sum_{l=1..12} c_l P_l(x_d)``
    (normalised Gegenbauer ``P_l``) with ``c_l`` i.i.d. standard normal drawn from
    ``--seed`` in a fixed order (MATH.md §2.4, :mod:`meanfield.perturbation`): the same
    function at every ``lmax >= 12``, its truncation below.  Refused when ``EPS``
    would make the density negative.
``vmf:KAPPA``
    von Mises–Fisher centred on the pole (``vonmises:KAPPA`` is accepted too):
    ``kappa^{d/2-1} exp(KAPPA x_d) / ((2 pi)^{d/2} I_{d/2-1}(KAPPA))``, via ``ive``.
``A+B+...``
    the equal-weight mixture of the terms.
``run.nc``
    the last frame of an earlier zonal run in the same dimension, resampled spectrally.

Anything else, a density that is negative somewhere, massless, or unresolved (content past
degree lmax larger than 1e-3 of the mean) is refused with one line naming ``--init``.
Values given at other polar angles (numpy, ``xarray``, functions:
:mod:`meanfield.solvers.runs.initial_state`) come onto the nodes by :func:`polar_values`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.special import ive

from ..errors import InputError, require
from ..geometry import sphere_area
from ..perturbation import require_positive, zonal_lowest, zonal_noise
from ..app.storage import last_valid_density, load_run
from .spec import VON_MISES, check_sign_and_mass, density_from_spec, init_label, parse_number, require_resolved

INIT_HELP = "uniform, perturbed:EPS, vmf:KAPPA (sums with '+'), or an earlier zonal run's .nc file"


def von_mises_fisher(t: np.ndarray, kappa: float, dim: int) -> np.ndarray:
    """Normalised von Mises–Fisher density on S^{dim-1} at ``x_d = t``, overflow-free via ``ive``."""
    if kappa == 0.0:
        return np.full(np.shape(t), 1.0 / sphere_area(dim))
    order = dim / 2.0 - 1.0
    log_norm = order * math.log(kappa) - (dim / 2.0) * math.log(2 * math.pi) - math.log(ive(order, kappa))
    return np.exp(kappa * (np.asarray(t) - 1.0) + log_norm)


def perturbed_density(eps: float, basis, seed) -> np.ndarray:
    """``(1 + EPS noise) / |S^{d-1}|`` at the nodes of ``basis`` (MATH.md §2.4), the noise in the degrees up to
    ``min(12, lmax)``; refused when ``EPS`` would make it negative."""
    coeffs = zonal_noise(seed, basis.lmax)
    require_positive(eps, zonal_lowest(coeffs, basis), seed)
    area = sphere_area(basis.dim)
    return (1.0 + eps * math.sqrt(area) * basis.synthesise(coeffs)) / area


def _term(term: str, basis, seed) -> np.ndarray:
    name, _, arg = term.partition(":")
    name = name.strip().lower()
    area = sphere_area(basis.dim)
    if name == "uniform" and not arg:
        return np.full(basis.nodes.shape, 1.0 / area)
    if name == "perturbed" and arg:
        eps = parse_number(arg, "perturbed:EPS", INIT_HELP)
        require(eps >= 0, f"--init: perturbed:EPS needs EPS >= 0 (got {eps:g})")
        return perturbed_density(eps, basis, seed)
    if name in VON_MISES and arg:
        kappa = parse_number(arg, f"{name}:KAPPA", INIT_HELP)
        require(kappa >= 0, f"--init: {name}:KAPPA needs KAPPA >= 0 (got {kappa:g})")
        return von_mises_fisher(basis.nodes, kappa, basis.dim)
    raise InputError(f"--init: unknown initial condition {term!r} for zonal densities; expected {INIT_HELP}")


def polar_values(polar: np.ndarray, values: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Cubic spline through ``values`` at polar angles ``polar`` (radians in ``[0, pi]``, increasing),
    at ``targets``.  A zonal density is even about both poles, so the data are continued by
    reflection (``th -> -th``, ``th -> 2 pi - th``, three points each) and the spline is smooth there."""
    low = np.flatnonzero(polar > 0.0)[:3]
    high = np.flatnonzero(polar < math.pi)[-3:]
    angles = np.concatenate((-polar[low][::-1], polar, 2 * math.pi - polar[high][::-1]))
    data = np.concatenate((values[low][::-1], values, values[high][::-1]))
    return CubicSpline(angles, data)(np.asarray(targets, dtype=float))


def resample_run(dataset, basis, path) -> np.ndarray:
    """The last density of an earlier zonal run, re-expanded in degrees <= its lmax at the new nodes."""
    old_dim = int(dataset.attrs.get("dim", basis.dim))
    require(old_dim == basis.dim,
            f"--init {path}: a zonal run in dimension {old_dim}, but --dim is {basis.dim}")
    density = last_valid_density(dataset, path)
    require("polar" in dataset.coords, f"--init {path}: the run has no polar-angle coordinate")
    t_old = np.cos(np.asarray(dataset["polar"].values, dtype=float))
    old_lmax = int(dataset.attrs.get("resolution", t_old.size - 1))
    degree = min(old_lmax, t_old.size - 1)
    old = basis.polynomials(t_old, degree)
    coeffs, *_ = np.linalg.lstsq(old, density, rcond=None)
    return basis.polynomials(basis.nodes, degree) @ coeffs


def _resample(path: str, basis) -> np.ndarray:
    return resample_run(load_run(path, geometry="zonal"), basis, path)


def zonal_density(spec: str, basis, seed=None) -> np.ndarray:
    """The initial density of ``spec`` at the nodes of ``basis`` (see the module docstring)."""
    return density_from_spec(spec, INIT_HELP, lambda path: _resample(path, basis),
                             lambda text: _term(text, basis, seed),
                             lambda density, text: check_zonal_density(density, text, basis))


def check_zonal_density(density: np.ndarray, spec: str, basis) -> None:
    """Refuse a density that is not finite, negative, massless, or unresolved by the basis."""
    require(bool(np.all(np.isfinite(density))), f"{init_label(spec)}: the density is not finite")
    coeffs = basis.interpolant_coeffs(density)
    mass = float(coeffs[0]) * math.sqrt(sphere_area(basis.dim))  # g_0 = mass / sqrt(|S^{d-1}|)
    check_sign_and_mass(density, spec, mass, sphere_area(basis.dim))
    require_resolved(float(np.max(np.abs(coeffs[basis.lmax + 1:]), initial=0.0)) / abs(coeffs[0]), spec,
                     basis.lmax, f"degree {basis.lmax}")
