"""Diagnostics of densities and runs: clusters and fitted growth rates.

Cluster detection (documented criterion, used by the demo and the metastability studies):
a *cluster* is a maximal arc of the circle on which the density exceeds ``level`` times
the mean density ``mass / 2 pi`` (default ``level = 2``).  Each cluster's *basin* runs
from the density minimum between it and its left neighbour to the minimum between it
and its right neighbour, so basins tile the circle and cluster masses add up to the
total mass.  The *centre* is the density-weighted circular mean of the arc above the
level.  A uniform density has no cluster; a density with ``k`` well-separated peaks
that rise above twice the mean has ``k``.

Interaction energy on the circle (MATH.md §2.1): ``E = (2 pi^2 / beta) sum_k I_|k|(beta) |rho_hat_k|^2``,
computed scaled by ``exp(-beta)`` so that it never overflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import require
from . import fourier_series
from .kernel_operator import KernelOperator

DEFAULT_CLUSTER_LEVEL = 2.0


@dataclass(frozen=True)
class Clusters:
    """Clusters of one density: ``count``, and per cluster ``centres`` (rad), ``masses``, ``peaks``."""

    centres: np.ndarray
    masses: np.ndarray
    peaks: np.ndarray

    @property
    def count(self) -> int:
        return int(self.centres.size)


def _runs_above(mask: np.ndarray) -> list[np.ndarray]:
    """Index arrays of the maximal runs of True in a periodic mask that has a False somewhere."""
    start = int(np.argmin(mask))  # a False: unroll the circle there
    order = (np.arange(mask.size) + start) % mask.size
    rolled = mask[order]
    edges = np.diff(np.concatenate(([0], rolled.astype(int), [0])))
    begins, ends = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]
    return [order[b:e] for b, e in zip(begins, ends)]


def _basin_bounds(density: np.ndarray, arcs: list[np.ndarray]) -> list[np.ndarray]:
    """Split the circle at the density minimum between consecutive arcs."""
    n = density.size
    cuts = []
    for arc, following in zip(arcs, arcs[1:] + arcs[:1]):
        gap = (np.arange(arc[-1] + 1, arc[-1] + 1 + (following[0] - arc[-1] - 1) % n)) % n
        cuts.append(int(gap[np.argmin(density[gap])]) if gap.size else int((arc[-1] + 1) % n))
    basins = []
    for i in range(len(arcs)):
        begin, end = cuts[i - 1], cuts[i]
        basins.append((np.arange(begin, begin + (end - begin) % n or n)) % n)
    return basins


def detect_clusters(density: np.ndarray, level: float = DEFAULT_CLUSTER_LEVEL) -> Clusters:
    """Clusters of a density sampled on ``theta_j = 2 pi j / N`` (see module docstring)."""
    density = np.asarray(density, dtype=float)
    require(density.ndim == 1 and density.size >= 3, "density must be a 1-D array of at least 3 samples")
    require(level > 1, f"level must be > 1 (got {level:g})")
    n = density.size
    cell = 2 * math.pi / n
    theta = cell * np.arange(n)
    mask = density > level * np.mean(density)
    if not mask.any():
        empty = np.zeros(0)
        return Clusters(empty, empty, empty)
    arcs = _runs_above(mask)
    basins = _basin_bounds(density, arcs) if len(arcs) > 1 else [np.arange(n)]
    centres = np.array([math.atan2(np.sum(density[a] * np.sin(theta[a])), np.sum(density[a] * np.cos(theta[a])))
                        % (2 * math.pi) for a in arcs])
    masses = np.array([np.sum(density[b]) * cell for b in basins])
    peaks = np.array([np.max(density[a]) for a in arcs])
    return Clusters(centres, masses, peaks)


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


def cluster_counts(dataset, level: float = DEFAULT_CLUSTER_LEVEL) -> np.ndarray:
    """Number of clusters in every saved frame of a circle run."""
    return np.array([detect_clusters(frame, level).count for frame in np.asarray(dataset["density"].values)])


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
