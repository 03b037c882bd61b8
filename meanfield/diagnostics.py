"""Diagnostics of densities and runs: clusters and fitted growth rates.

Cluster detection: :func:`detect_clusters` is the package's one definition of a cluster
(:mod:`meanfield.cluster_detection`: the basins of the maxima of the attention field ``K * rho`` at the model's
``beta`` that stand out, MATH.md §10) for a circle density on its grid.

Interaction energy on the circle (MATH.md §2.1): ``E = (2 pi^2 / beta) sum_k I_|k|(beta) |rho_hat_k|^2``,
computed scaled by ``exp(-beta)`` so that it never overflows.
"""

from __future__ import annotations

import math

import numpy as np

from .cluster_detection import Clusters, clusters_in_frame, clusters_of_density
from .errors import require
from . import fourier_series
from .kernel_operator import KernelOperator


def detect_clusters(density: np.ndarray, beta: float) -> Clusters:
    """Clusters of a circle density sampled on ``theta_j = 2 pi j / N`` at inverse temperature ``beta``: the
    package's one definition (:mod:`meanfield.cluster_detection`); ``.angles`` are the centres in ``[0, 2 pi)``."""
    return clusters_of_density(density, beta=beta)


def empirical_coefficients(theta: np.ndarray, weights: np.ndarray, modes) -> np.ndarray:
    """Fourier coefficients ``mu_hat_k = sum_j w_j exp(-i k theta_j) / 2 pi`` of weighted tokens on the
    circle, for each ``k`` in ``modes`` (MATH.md §2.1 normalisation: a density's ``rho_hat_k``)."""
    return np.exp(-1j * np.outer(modes, theta)) @ weights / (2 * math.pi)


def scaled_energy_from_coefficients(coeffs: np.ndarray, beta: float, n: int) -> float:
    """``exp(-beta) E`` from the coefficients ``rho_hat_k``, ``k = 0 .. len-1``, of a real density on N points.

    ``E = (2 pi^2 / beta) sum_{k in Z} I_|k|(beta) |rho_hat_k|^2`` (MATH.md §2.1); the
    negative modes are the conjugates of the positive ones (and the Nyquist mode of an
    even N appears once).
    """
    require(beta > 0, f"beta must be > 0 for the interaction energy (got {beta:g})")
    kernel = KernelOperator(np.arange(len(coeffs)), beta, 2)
    return kernel.energy(coeffs, fourier_series.multiplicity(len(coeffs), n), fourier_series.CIRCLE_NORM)


def interaction_energy(density: np.ndarray, beta: float, scaled: bool = True) -> float:
    """Interaction energy ``E(rho) = (1/2 beta) int int exp(beta cos(s - t)) rho(s) rho(t)`` of a
    circle density sampled on ``theta_j = 2 pi j / N`` (MATH.md §2, §2.1).

    ``scaled=True`` returns ``exp(-beta) E`` (what run files store); ``scaled=False`` the energy
    itself, which overflows to ``inf`` for ``beta`` beyond ~700.
    """
    density = np.asarray(density, dtype=float)
    value = scaled_energy_from_coefficients(fourier_series.coefficients(density), beta, density.size)
    return value if scaled else value * math.exp(beta) if beta < 709 else math.inf


def cluster_counts(dataset) -> np.ndarray:
    """Number of clusters in every saved frame of a run (:func:`meanfield.cluster_detection.clusters_in_frame`)."""
    return np.array([clusters_in_frame(dataset, index).count for index in range(dataset.sizes["time"])])


def fit_growth_rates(dataset, modes, t_max: float | None = None) -> np.ndarray:
    """Least-squares slopes of ``log mode_amplitude(t, k)`` over saved times ``t <= t_max``.

    In the linear regime these are the rates ``lambda_k`` of MATH.md §2.3.
    """
    amplitude = dataset["mode_amplitude"].sel(mode=list(modes))
    if t_max is not None:
        amplitude = amplitude.sel(time=slice(None, t_max))
    times = amplitude["time"].values
    require(times.size >= 2, "need at least two saved times to fit growth rates")
    return np.polyfit(times, np.log(amplitude.values), 1)[0]
