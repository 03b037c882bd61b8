"""Initial densities from a text spec (the ``--init`` flag), on the circle.

Specs (MATH.md §2.1 normalisation; every density integrates to 1 unless read from a file):

``uniform``
    ``1 / (2 pi)``.
``perturbed:EPS``
    ``(1 + EPS * noise) / (2 pi)``, ``noise = sqrt 2 sum_{k=1..16} (a_k cos k theta +
    b_k sin k theta)`` with ``a_k, b_k`` i.i.d. standard normal drawn from ``--seed``
    in a fixed order (MATH.md §2.4, :mod:`meanfield.perturbation`): the same
    function at every ``N >= 49``; a coarser grid keeps the modes up to its
    dealiased band ``(N - 1) // 3``.  Refused (one line) when ``EPS`` is so large
    that the density would be negative somewhere.
``vmf:KAPPA@MU``
    ``exp(KAPPA cos(theta - MU)) / (2 pi I_0(KAPPA))`` (``@MU`` optional, 0): the von
    Mises(–Fisher) density.  ``vmf`` is the one spelling on every geometry (the circle,
    the sphere, zonal); ``vonmises`` is accepted for it everywhere (:data:`meanfield.initial.spec.VON_MISES`).
``A+B+...``
    the equal-weight mixture of the terms, e.g. ``vmf:4@0+vmf:4@3.14``.
``run.nc``
    the last frame of an earlier circle run, resampled spectrally to N.

Numpy arrays, ``xarray`` objects and functions are read by :mod:`meanfield.initial.sources` and put
onto a scheme by :mod:`meanfield.solvers.runs.initial_state`, which uses :func:`circle_values` to bring
values given at other angles onto the grid.

Anything else, a density that is negative somewhere, or one that does not integrate to a
positive number, is refused with one line (:mod:`meanfield.initial.spec`).  So is a density that the grid cannot resolve
(spectral content above ``kmax`` larger than 1e-3 of the mean; smaller content is
dropped by the dealiasing projection).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.special import ive

from ..errors import InputError, require
from ..fourier_series import coefficients, dealiased_band, synthesis
from ..perturbation import circle_lowest, circle_noise, require_positive
from ..app.storage import last_valid_density, load_run
from .spec import VON_MISES, check_sign_and_mass, density_from_spec, parse_number, require_resolved

INIT_HELP = "uniform, perturbed:EPS, vmf:KAPPA@MU (or vonmises:; sums with '+'), or an earlier run's .nc file"


def perturbed_density(eps: float, n: int, seed) -> np.ndarray:
    """``(1 + EPS noise) / (2 pi)`` on ``theta_j = 2 pi j / N`` (MATH.md §2.4), the noise in the modes up to
    ``min(16, (N - 1) // 3)``; refused when ``EPS`` would make it negative."""
    coeffs = circle_noise(seed, dealiased_band(n))
    require_positive(eps, circle_lowest(coeffs), seed)
    return (1.0 + eps * synthesis(coeffs, n)) / (2 * math.pi)


def von_mises(theta: np.ndarray, kappa: float, mu: float) -> np.ndarray:
    """Normalised von Mises density on the circle, overflow-free via ``ive``."""
    return np.exp(kappa * (np.cos(theta - mu) - 1.0)) / (2.0 * math.pi * ive(0, kappa))


def _number(text: str, what: str) -> float:
    return parse_number(text, what, INIT_HELP)


def _term(term: str, theta: np.ndarray, seed) -> np.ndarray:
    name, _, arg = term.partition(":")
    name = name.strip().lower()
    if name == "uniform" and not arg:
        return np.full(theta.shape, 1.0 / (2 * math.pi))
    if name == "perturbed" and arg:
        eps = _number(arg, "perturbed:EPS")
        require(eps >= 0, f"--init: perturbed:EPS needs EPS >= 0 (got {eps:g})")
        return perturbed_density(eps, theta.size, seed)
    if name in VON_MISES and arg:
        kappa_text, at, mu_text = arg.partition("@")
        kappa = _number(kappa_text, f"{name}:KAPPA")
        mu = _number(mu_text, f"{name}:KAPPA@MU") if at else 0.0        # "vonmises:4@" names no MU: refused
        require(kappa >= 0, f"--init: {name}:KAPPA needs KAPPA >= 0 (got {kappa:g})")
        return von_mises(theta, kappa, mu)
    raise InputError(f"--init: unknown initial condition {term!r}; expected {INIT_HELP}")


def periodic_resample(values: np.ndarray, theta0: float, n: int) -> np.ndarray:
    """The trigonometric interpolant of ``values`` at ``theta0 + 2 pi j / M`` evaluated at ``2 pi j / n``.

    MATH.md §2.1 coefficients ``rho_hat_k exp(-i k theta0)``, truncated or zero-padded; an even
    ``M``'s Nyquist term is the symmetric ``rho_hat_{M/2} cos(M/2 (theta - theta0))`` (halved when it
    becomes an interior mode), so the result equals ``values`` at the old points when ``n = p M``.
    """
    m = values.size
    coeffs = coefficients(values) * np.exp(-1j * np.arange(m // 2 + 1) * theta0)
    resampled = np.zeros(n // 2 + 1, dtype=complex)
    keep = min(len(coeffs), len(resampled))
    resampled[:keep] = coeffs[:keep]
    if m % 2 == 0 and m // 2 < keep and (n % 2 or m // 2 != n // 2):
        resampled[m // 2] *= 0.5
    return synthesis(resampled, n)


def circle_values(theta: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Values at ``2 pi j / n`` of the periodic interpolant of ``values`` given at angles ``theta`` (radians).

    Equispaced ``theta`` (any offset): spectral resampling (:func:`periodic_resample`, exact
    for band-limited data); otherwise a periodic cubic spline through the points.
    """
    theta = np.mod(np.asarray(theta, dtype=float), 2 * math.pi)
    order = np.argsort(theta, kind="stable")
    theta, values = theta[order], np.asarray(values, dtype=float)[order]
    m = theta.size
    gaps = np.diff(np.append(theta, theta[0] + 2 * math.pi))
    if np.all(np.abs(gaps - 2 * math.pi / m) <= 1e-9 * 2 * math.pi / m):
        return periodic_resample(values, float(theta[0]), n)
    spline = CubicSpline(np.append(theta, theta[0] + 2 * math.pi), np.append(values, values[0]),
                         bc_type="periodic")
    return spline(theta[0] + np.mod(2 * math.pi * np.arange(n) / n - theta[0], 2 * math.pi))


def _from_file(path: str, n: int) -> np.ndarray:
    dataset = load_run(path, geometry="circle")
    return periodic_resample(last_valid_density(dataset, path), 0.0, n)


def circle_density(spec: str, n: int, seed=None) -> np.ndarray:
    """The initial density of ``spec`` on the N-point grid ``theta_j = 2 pi j / N``."""
    theta = 2 * math.pi * np.arange(n) / n
    return density_from_spec(spec, INIT_HELP, lambda path: _from_file(path, n), lambda text: _term(text, theta, seed),
                             lambda density, text: check_density(density, text, n))


def check_density(density: np.ndarray, spec: str, n: int) -> None:
    """Refuse a density that is not finite, negative, massless, or unresolved on the grid."""
    mean = check_sign_and_mass(density, spec, 2 * math.pi * float(np.mean(density)), 2 * math.pi)
    coeffs = np.abs(coefficients(density))
    require_resolved(float(np.max(coeffs[dealiased_band(n) + 1:], initial=0.0)) / mean, spec, n,
                     f"mode {dealiased_band(n)}")
