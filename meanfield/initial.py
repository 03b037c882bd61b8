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


def circle_density(spec: str, n: int, seed=None) -> np.ndarray:
    """The initial density of ``spec`` on the N-point grid ``theta_j = 2 pi j / N``."""
    require(isinstance(spec, str) and spec.strip() != "", f"--init must be one of: {INIT_HELP}")
    spec = spec.strip()
    theta = 2 * math.pi * np.arange(n) / n
    if spec.endswith(".nc"):
        density = _from_file(spec, n)
    else:
        terms = [t for t in re.split(r"\+(?=[A-Za-z])", spec)]
        density = sum(_term(t, theta, seed) for t in terms) / len(terms)
    check_density(density, spec, n)
    return density


def check_density(density: np.ndarray, spec: str, n: int) -> None:
    """Refuse a density that is not finite, negative, massless, or unresolved on the grid."""
    require(bool(np.all(np.isfinite(density))), f"--init {spec!r}: the density is not finite")
    mean = float(np.mean(density))
    require(mean > 0, f"--init {spec!r}: the density must integrate to a positive number (got {2 * math.pi * mean:.3g})")
    low = float(np.min(density))
    require(low >= -1e-12 * mean,
            f"--init {spec!r}: the density is negative somewhere (min {low:.3g}); lower EPS or use another start")
    coeffs = np.abs(np.fft.rfft(density, norm="forward"))
    unresolved = float(np.max(coeffs[dealiased_band(n) + 1:], initial=0.0)) / mean
    require(unresolved <= UNRESOLVED_TOL,
            f"--init {spec!r}: not resolved at --resolution {n} (content {unresolved:.2g} x mean past mode "
            f"{dealiased_band(n)}); increase --resolution")
