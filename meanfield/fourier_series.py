"""Fourier series on the circle in MATH.md §2.1's normalisation, for one-off transforms of any length.

``rho_hat_k = (1/2 pi) int rho(t) exp(-i k t) dt``, i.e. ``(1/N) sum_j rho_j exp(-i k theta_j)`` on the grid
``theta_j = 2 pi j / N``, stored for ``k = 0 .. N/2`` (real data, Hermitian symmetry).  The schemes' repeated
transforms go through :class:`meanfield.solvers.bases.fourier.FourierBasis` (planned FFTW buffers), whose one-off
transforms are these functions; everything else in ``meanfield`` (initial data, sampling, diagnostics)
calls them directly (``meanfield`` does not import ``solvers``, DESIGN.md *Layout*).
"""

from __future__ import annotations

import numpy as np

#: ``|exp(i k theta)|^2`` integrated over the circle: the squared norm of MATH.md §2.1's basis functions.
CIRCLE_NORM = 2.0 * np.pi


def coefficients(values) -> np.ndarray:
    """``rho_hat_k``, ``k = 0 .. N/2``, of the grid values ``rho(theta_j)`` (a fresh array)."""
    return np.fft.rfft(values, norm="forward")


def synthesis(coeffs, n: int) -> np.ndarray:
    """``sum_k rho_hat_k exp(i k theta_j)`` on ``n`` points (truncated or zero-padded; a fresh array)."""
    return np.fft.irfft(coeffs, n, norm="forward")


def sums(values, axis: int = -1) -> np.ndarray:
    """The unnormalised sums ``N rho_hat_k = sum_j rho_j exp(-i k theta_j)``, ``k = 0 .. N/2`` (a fresh array)."""
    return np.fft.rfft(values, axis=axis)


def values_from_sums(series, n: int, axis: int = -1) -> np.ndarray:
    """Grid values on ``n`` points from unnormalised sums (the inverse of :func:`sums`: divides by ``n``)."""
    return np.fft.irfft(series, n, axis=axis)


def filtered(values, multiplier) -> np.ndarray:
    """The grid values of ``sum_k multiplier_k rho_hat_k exp(i k theta)``: a Fourier multiplier (a convolution,
    a cell average) applied to grid values, ``k = 0 .. N/2``."""
    return values_from_sums(sums(values) * multiplier, len(values))


def dealiased_band(n: int) -> int:
    """``kmax = (N - 1) // 3``: the modes a 2/3-rule grid of N points keeps."""
    return (n - 1) // 3


def multiplicity(count: int, n: int) -> np.ndarray:
    """How often each stored ``rho_hat_k``, ``k = 0 .. count-1``, of a real density on ``n`` points stands in the
    full series: once for ``k = 0`` and the Nyquist mode ``2k = n``, twice (with its conjugate) otherwise."""
    k = np.arange(count)
    return np.where((k == 0) | (2 * k == n), 1.0, 2.0)
