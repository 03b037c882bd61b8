"""Initial densities from a text spec (the ``--init`` flag), on the circle.

Specs (MATH.md §2.1 normalisation; every density integrates to 1 unless read from a file):

``uniform``               ``1 / (2 pi)``.
``perturbed:EPS``         ``(1 + EPS * noise) / (2 pi)``; ``noise`` is a real Fourier series with
                          independent standard Gaussian coefficients in every mode 1..kmax
                          (``kmax = (N-1)//3``, the dealiased band), scaled to unit RMS on the
                          circle, drawn from ``--seed``.
``vonmises:KAPPA@MU``     ``exp(KAPPA cos(theta - MU)) / (2 pi I_0(KAPPA))`` (``@MU`` optional, 0).
``A+B+...``               the equal-weight mixture of the terms, e.g. ``vonmises:4@0+vonmises:4@3.14``.
``run.nc``                the last frame of an earlier circle run, resampled spectrally to N.

Anything else, a density that is negative somewhere, or one that does not integrate to a
positive number, is refused with one line.  So is a density that the grid cannot resolve
(spectral content above ``kmax`` larger than 1e-3 of the mean; smaller content is
dropped by the dealiasing projection).
"""

from __future__ import annotations

import math
import re

import numpy as np
from scipy.special import ive

from .errors import InputError, require
from .storage import last_valid_density, load_run

INIT_HELP = "uniform, perturbed:EPS, vonmises:KAPPA@MU (sums with '+'), or an earlier run's .nc file"

#: Density resolved on the grid when its content past the dealiased band is below this (x mean).
UNRESOLVED_TOL = 1e-3


def dealiased_band(n: int) -> int:
    """``kmax = (N - 1) // 3``: the modes a 2/3-rule grid of N points keeps."""
    return (n - 1) // 3


def random_fourier_noise(n: int, seed) -> np.ndarray:
    """Unit-RMS real Fourier series with i.i.d. Gaussian coefficients in modes 1..kmax, on N points."""
    kmax = dealiased_band(n)
    rng = np.random.default_rng(seed)
    cos_sin = rng.standard_normal((kmax, 2))
    rms = math.sqrt(float(np.sum(cos_sin ** 2)) / 2.0)
    coeffs = np.zeros(n // 2 + 1, dtype=complex)
    coeffs[1:kmax + 1] = (cos_sin[:, 0] - 1j * cos_sin[:, 1]) / (2.0 * rms)
    return np.fft.irfft(coeffs, n, norm="forward")


def von_mises(theta: np.ndarray, kappa: float, mu: float) -> np.ndarray:
    """Normalised von Mises density on the circle, overflow-free via ``ive``."""
    return np.exp(kappa * (np.cos(theta - mu) - 1.0)) / (2.0 * math.pi * ive(0, kappa))


def _number(text: str, what: str, expected: str = INIT_HELP) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"--init: {what} must be a number (got {text!r}); expected {expected}") from None
    require(math.isfinite(value), f"--init: {what} must be finite (got {text!r})")
    return value


def _term(term: str, theta: np.ndarray, seed) -> np.ndarray:
    name, _, arg = term.partition(":")
    name = name.strip().lower()
    if name == "uniform" and not arg:
        return np.full(theta.shape, 1.0 / (2 * math.pi))
    if name == "perturbed" and arg:
        eps = _number(arg, "perturbed:EPS")
        require(eps >= 0, f"--init: perturbed:EPS needs EPS >= 0 (got {eps:g})")
        return (1.0 + eps * random_fourier_noise(theta.size, seed)) / (2 * math.pi)
    if name == "vonmises" and arg:
        kappa_text, _, mu_text = arg.partition("@")
        kappa = _number(kappa_text, "vonmises:KAPPA")
        mu = _number(mu_text, "vonmises:KAPPA@MU") if mu_text else 0.0
        require(kappa >= 0, f"--init: vonmises:KAPPA needs KAPPA >= 0 (got {kappa:g})")
        return von_mises(theta, kappa, mu)
    raise InputError(f"--init: unknown initial condition {term!r}; expected {INIT_HELP}")


def _from_file(path: str, n: int) -> np.ndarray:
    dataset = load_run(path, geometry="circle")
    density = last_valid_density(dataset, path)
    coeffs = np.fft.rfft(density, norm="forward")
    resampled = np.zeros(n // 2 + 1, dtype=complex)
    keep = min(len(coeffs), len(resampled))
    resampled[:keep] = coeffs[:keep]
    return np.fft.irfft(resampled, n, norm="forward")


def density_from_spec(spec: str, help_text: str, read_file, term) -> tuple[str, np.ndarray]:
    """``(stripped spec, density)``: ``read_file(path)`` for a ``.nc`` spec, else the equal-weight
    mixture of ``term(text)`` over the ``+``-separated terms (split only before a letter)."""
    require(isinstance(spec, str) and spec.strip() != "", f"--init must be one of: {help_text}")
    spec = spec.strip()
    if spec.endswith(".nc"):
        return spec, read_file(spec)
    terms = re.split(r"\+(?=[A-Za-z])", spec)
    return spec, sum(term(t) for t in terms) / len(terms)


def check_sign_and_mass(density: np.ndarray, spec: str, mass: float, area: float) -> float:
    """Refuse a non-finite, massless or negative density; returns its mean ``mass / area``."""
    require(bool(np.all(np.isfinite(density))) and math.isfinite(mass), f"--init {spec!r}: the density is not finite")
    require(mass > 0, f"--init {spec!r}: the density must integrate to a positive number (got {mass:.3g})")
    mean = mass / area
    low = float(np.min(density))
    require(low >= -1e-12 * mean,
            f"--init {spec!r}: the density is negative somewhere (min {low:.3g}); lower EPS or use another start")
    return mean


def require_resolved(unresolved: float, spec: str, resolution: int, band: str) -> None:
    """Refuse a start whose content past the kept band exceeds ``UNRESOLVED_TOL`` x mean."""
    require(unresolved <= UNRESOLVED_TOL,
            f"--init {spec!r}: not resolved at --resolution {resolution} (content {unresolved:.2g} x mean past "
            f"{band}); increase --resolution")


def circle_density(spec: str, n: int, seed=None) -> np.ndarray:
    """The initial density of ``spec`` on the N-point grid ``theta_j = 2 pi j / N``."""
    theta = 2 * math.pi * np.arange(n) / n
    spec, density = density_from_spec(spec, INIT_HELP, lambda path: _from_file(path, n),
                                      lambda text: _term(text, theta, seed))
    check_density(density, spec, n)
    return density


def check_density(density: np.ndarray, spec: str, n: int) -> None:
    """Refuse a density that is not finite, negative, massless, or unresolved on the grid."""
    mean = check_sign_and_mass(density, spec, 2 * math.pi * float(np.mean(density)), 2 * math.pi)
    coeffs = np.abs(np.fft.rfft(density, norm="forward"))
    require_resolved(float(np.max(coeffs[dealiased_band(n) + 1:], initial=0.0)) / mean, spec, n,
                     f"mode {dealiased_band(n)}")
