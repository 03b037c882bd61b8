"""Metastable clusters on the circle: what the linear theory predicts, and how runs are read.

Predictions (MATH.md §2.3, Bruno et al.).  From ``rho = 1/2pi + sum_k a_k exp(i k theta)``
with small ``a_k``, each mode grows like ``exp(lambda_k t)``; the dominant mode ``k*`` takes over
and about ``k*`` clusters form.

* formation time of the theory: ``log(1/A) / lambda_{k*}`` (:func:`meanfield.theory.formation_time`), ``A`` the
  initial amplitude of mode ``k*`` or, from ``perturbed:EPS``, its typical value under the law (MATH.md §2.4);
* formation time from the actual initial amplitude of mode ``k*``: the time at which the linear
  amplitude ``2 pi |a_{k*}| exp(lambda_{k*} t)`` reaches ``threshold = 1/2`` (the density's peak
  then reaches twice the mean, the cluster criterion of :mod:`meanfield.diagnostics`):
  ``log(threshold / (2 pi |a_{k*}(0)|)) / lambda_{k*}``; and from all the initial amplitudes, the first
  time the linearised solution shows ``k*`` clusters (:func:`linear_formation_time`);
* cluster angles from the initial phase of mode ``k*``: the maxima of ``Re(a_{k*} exp(i k* theta))``,
  ``theta_m = (2 pi m - arg a_{k*}) / k*``;
* cluster angles of the whole linearised solution ``sum_k a_k exp(lambda_k t) exp(i k theta)`` at a
  time ``t`` (neighbouring modes ``k* +- 1`` grow almost as fast and shift the maxima).

Reading runs.  :func:`plateaus` splits a cluster-count time series into plateaus (maximal
intervals of constant count, flickers shorter than ``min_duration`` absorbed), and records
the energy at each plateau's end (the staircase) and the first merge.  :func:`smoothed_density`
turns weighted tokens into a grid density (heat-kernel smoothing: positive, unimodal per point
mass, relative fluctuations ``~ (sqrt(pi) / (width n))^{1/2}``) for the same cluster criterion.
:func:`meanfield.cluster_dynamics.point_energy` is the energy of clusters collapsed to points
(MATH.md §5): the value a plateau's energy approaches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .diagnostics import detect_clusters, empirical_coefficients
from .errors import require
from .fourier_series import synthesis
from .model import Model
from .theory import growth_rates

FORMATION_THRESHOLD = 0.5


def kstar_angles(coefficient: complex, k: int) -> np.ndarray:
    """Maxima of ``Re(coefficient exp(i k theta))`` in ``[0, 2 pi)``, sorted (MATH.md §2.3)."""
    require(k >= 1, f"mode must be >= 1 (got {k})")
    return np.sort((2 * math.pi * np.arange(k) - np.angle(coefficient)) / k % (2 * math.pi))


def refined_formation_time(coefficient: complex, rate: float, threshold: float = FORMATION_THRESHOLD) -> float:
    """When ``2 pi |a_{k*}| exp(lambda t)`` reaches ``threshold`` (``inf`` if ``rate <= 0``)."""
    amplitude = 2 * math.pi * abs(coefficient)
    if rate <= 0 or amplitude <= 0:
        return math.inf
    return max(0.0, math.log(threshold / amplitude) / rate)


def linearised_density(coefficients: np.ndarray, model: Model, t: float, points: int,
                       growing_only: bool = True) -> np.ndarray:
    """``1/2pi + sum_k a_k exp(lambda_k t) exp(i k theta)`` on ``theta_j = 2 pi j / points`` (MATH.md §2.3).

    ``coefficients``: ``a_k``, ``k = 0 .. K`` (as from :func:`meanfield.fourier_series.coefficients`); modes above
    ``points / 2`` are dropped; with ``growing_only`` so are the modes growing at less than half the
    fastest rate (they stay at their initial size: with i.i.d. tokens, noise that would add spurious maxima).
    """
    coefficients = np.asarray(coefficients, dtype=complex)[: points // 2 + 1]
    modes = np.arange(1, coefficients.size)
    grown = coefficients.copy()
    rates = growth_rates(model, modes)
    grown[1:] *= np.exp(rates * t)
    if growing_only:
        grown[1:][rates < 0.5 * np.max(rates)] = 0.0
    return synthesis(grown, points)


def linear_formation_time(coefficients: np.ndarray, model: Model, count: int, points: int,
                          tol: float = 1e-6) -> float:
    """First time the linearised solution of all growing modes (:func:`linearised_density`) shows ``count``
    clusters (:func:`meanfield.diagnostics.detect_clusters`: the maxima of ``K * rho`` that stand out, MATH.md §10),
    MATH.md §2.3-2.4.

    Unlike :func:`refined_formation_time` (mode ``k*`` alone) it sees the other modes of the start: with a
    near tie (MATH.md §2.4) clusters cross the level one after another.  Found by a scan of steps
    ``0.01 / lambda_max`` (until the linear peak passes 10 x the mean: ``inf`` then) and bisection to ``tol``.
    """
    require(count >= 1, f"count must be >= 1 (got {count})")
    coefficients = np.asarray(coefficients, dtype=complex)
    rate = float(np.max(growth_rates(model, np.arange(1, min(coefficients.size, points // 2 + 1)))))
    if rate <= 0:
        return math.inf
    def enough(t):
        density = linearised_density(coefficients, model, t, points)
        return detect_clusters(density, model.beta).count >= count
    step, t = 0.01 / rate, 0.0
    while not enough(t):
        t += step
        if np.max(linearised_density(coefficients, model, t, points)) * 2 * math.pi > 10.0:
            return math.inf
    low, high = max(0.0, t - step), t
    if high == 0.0:
        return 0.0
    while high - low > tol:
        middle = 0.5 * (low + high)
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def local_maxima_angles(density: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` highest local maxima of a periodic grid density, as sorted angles.

    Each maximum is refined by the vertex of the parabola through it and its neighbours.
    """
    density = np.asarray(density, dtype=float)
    n = density.size
    left, right = np.roll(density, 1), np.roll(density, -1)
    peaks = np.nonzero((density > left) & (density >= right))[0]
    peaks = peaks[np.argsort(density[peaks])[::-1][:count]]
    curvature = left[peaks] - 2 * density[peaks] + right[peaks]
    shift = np.where(curvature < 0, 0.5 * (left[peaks] - right[peaks]) / np.where(curvature < 0, curvature, -1.0), 0.0)
    return np.sort((peaks + shift) * 2 * math.pi / n % (2 * math.pi))


def angle_errors(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """For each measured angle, the circular distance to the nearest predicted one."""
    measured, predicted = np.asarray(measured, dtype=float), np.asarray(predicted, dtype=float)
    if measured.size == 0 or predicted.size == 0:
        return np.full(measured.size, math.nan)
    gap = np.abs((measured[:, None] - predicted[None, :] + math.pi) % (2 * math.pi) - math.pi)
    return gap.min(axis=1)


def smoothed_density(theta: np.ndarray, weights: np.ndarray, width: float, points: int) -> np.ndarray:
    """Weighted tokens convolved with the heat kernel of standard deviation ``width`` (rad), on ``points`` angles.

    ``sum_k exp(-k^2 width^2 / 2) mu_hat_k exp(i k theta)``, ``mu_hat_k = sum_j w_j exp(-i k theta_j) / 2 pi``
    (MATH.md §2.1), modes kept while the factor exceeds 1e-17.  The wrapped Gaussian is positive and
    unimodal: one point mass gives one peak of height ``~ mass / (sqrt(2 pi) width)``, never side
    lobes (a Fejér mean's side lobes reach ``~0.45 K / pi^2`` times the mean and would count as clusters).
    """
    require(width > 0, f"width must be > 0 (got {width!r})")
    modes = min(points // 2, int(math.ceil(math.sqrt(2 * math.log(1e17)) / width)))
    k = np.arange(modes + 1)
    coefficients = empirical_coefficients(theta, weights, k)
    coefficients *= np.exp(-0.5 * (k * width) ** 2)
    spectrum = np.zeros(points // 2 + 1, dtype=complex)
    spectrum[: modes + 1] = coefficients
    return synthesis(spectrum, points)


@dataclass(frozen=True)
class Plateau:
    """An interval ``[start, end]`` of constant cluster ``count``; ``energy`` at its end."""

    count: int
    start: float
    end: float
    energy: float


def plateaus(times, counts, energies, min_duration: float) -> list[Plateau]:
    """Plateaus of a cluster-count series (see the module docstring), in time order.

    Runs of constant count shorter than ``min_duration`` (flickers while a cluster forms or two
    merge) are absorbed, shortest first: dropped, and equal neighbours joined.  A plateau starts
    at its first frame and ends at its last; the last run is always kept.
    """
    times = np.asarray(times, dtype=float)
    counts = np.asarray(counts, dtype=int)
    energies = np.asarray(energies, dtype=float)
    require(times.size == counts.size == energies.size, "times, counts and energies must have the same length")
    change = np.nonzero(np.diff(counts))[0] + 1
    bounds = np.concatenate(([0], change, [counts.size]))
    runs = [[int(counts[a]), int(a), int(b) - 1] for a, b in zip(bounds[:-1], bounds[1:])]
    while True:  # drop the shortest flicker (never the last run), then join equal neighbours
        durations = [times[last] - times[first] for _, first, last in runs[:-1]]
        if not durations or min(durations) >= min_duration:
            break
        i = int(np.argmin(durations))
        del runs[i]
        if 0 < i < len(runs) and runs[i - 1][0] == runs[i][0]:
            runs[i - 1][2] = runs[i][2]
            del runs[i]
    merged = runs
    return [Plateau(count, float(times[first]), float(times[last]), float(energies[last]))
            for count, first, last in merged]


def first_merge_time(found: list[Plateau]) -> float:
    """Start of the first plateau whose count is below its predecessor's (``nan`` if none)."""
    for before, after in zip(found, found[1:]):
        if 0 < after.count < before.count:
            return after.start
    return math.nan
