"""The cluster count at formation predicted by the linear theory, on every geometry (MATH.md §2.4, §10).

A ``perturbed:EPS`` start is ``rho_0 (1 + EPS sum_l f_l)`` with ``f_l`` the law's random degree-``l`` part (MATH.md
§2.4, :mod:`meanfield.perturbation`: the circle's modes 1..16, S^2's degrees 1..12, the zonal degrees 1..12).  The
linear theory grows each degree by its rate (MATH.md §2.3, SA or USA, with noise): ``rho_lin(t) = rho_0 (1 + EPS sum_l
exp(lambda_l t) f_l)``.  It ends at ``t_0``, the first time ``rho_lin`` touches zero; the clusters form about then
(the runs' first formation events lie an e-fold or so before ``t_0``, MATH.md §10).  The *predicted count* of a draw
is the package's cluster observable (:mod:`meanfield.cluster_detection`) applied to ``rho_lin`` one e-fold of the
fastest degree later, ``t_0 + 1 / lambda_max``: the maxima of the linear pattern that stand out once the pattern has
grown to the clusters' size (at ``t_0`` itself the field's hills are still too shallow to stand out; measured on the
circle at beta = 9 over 30 seeds: the runs' count at formation is this prediction in 28 cases, the dominant degree
in 24, the count at ``t_0`` in 11).  Over many draws of the law this gives the *distribution* of the count
(:func:`count_distribution`, Monte Carlo: each draw is a seed of the law, so draw ``s`` is exactly the start of a run
with ``--seed s``).  On the circle it replaces the dominant-mode probabilities of the near-tie analysis
(:func:`meanfield.theory.dominance_probabilities`), which count the dominant mode's maxima only.

The count of a run at formation (:func:`count_at_formation`) is its count just before its first merge (after the
formation events; the final count when nothing merges).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .cluster_detection import clusters_of_masses
from .errors import require
from .geometry import sphere_area
from .model import Model
from .perturbation import BANDS, circle_noise, law_geometry, sphere_noise, sphere_normals, zonal_noise
from .theory import growth_rates

#: The count is read this many e-folds of the fastest degree after the linear solution touches zero.
EFOLDS_AFTER_ZERO = 1.0
#: Sampling of the linear solution: circle nodes, S^2 Gauss-Legendre rows, zonal polar cells.
CIRCLE_NODES, SPHERE_ROWS, ZONAL_CELLS = 512, 64, 512


@dataclass(frozen=True)
class LawPattern:
    """The degree-``l`` parts ``f_l`` of one draw of the ``perturbed:`` law at fixed places, with their masses' weights:
    ``rho_lin(t)`` at the places is ``rho_0 (1 + eps sum_l exp(lambda_l t) f_l)``."""

    places: np.ndarray
    volumes: np.ndarray
    parts: np.ndarray            # (L0, places)
    geometry: str
    dim: int

    def density(self, eps: float, rates: np.ndarray, t: float) -> np.ndarray:
        rho0 = 1.0 / sphere_area(self.dim)
        return rho0 * (1.0 + eps * (np.exp(rates * t) @ self.parts))


@lru_cache(maxsize=8)
def _zonal_cells(dim: int):
    faces = np.linspace(0.0, math.pi, ZONAL_CELLS + 1)
    polar = 0.5 * (faces[1:] + faces[:-1])
    volumes = sphere_area(dim - 1) * np.sin(polar) ** (dim - 2) * np.diff(faces)
    volumes *= sphere_area(dim) / volumes.sum()                      # the midpoint rule, made exact for constants
    return polar, volumes


@lru_cache(maxsize=2)
def _sphere_grid():
    import ducc0

    colatitude = np.asarray(ducc0.misc.GL_thetas(SPHERE_ROWS), dtype=float)
    nlon = 2 * SPHERE_ROWS
    longitude = 2 * math.pi * np.arange(nlon) / nlon
    weights = np.asarray(ducc0.misc.GL_weights(SPHERE_ROWS, nlon), dtype=float)
    sin_c = np.sin(colatitude)[:, None]
    places = np.stack(np.broadcast_arrays(sin_c * np.cos(longitude), sin_c * np.sin(longitude),
                                          np.cos(colatitude)[:, None]), axis=-1).reshape(-1, 3)
    return places, np.repeat(weights, nlon)


def _circle_pattern(dim: int, seed: int) -> LawPattern:
    """The circle law's modes 1..16 at :data:`CIRCLE_NODES` equispaced angles."""
    theta = 2 * math.pi * np.arange(CIRCLE_NODES) / CIRCLE_NODES
    coeffs = circle_noise(seed, BANDS["circle"])
    k = np.arange(1, coeffs.size)
    parts = 2 * (coeffs[1:, None] * np.exp(1j * k[:, None] * theta[None, :])).real
    return LawPattern(theta, np.full(theta.size, 2 * math.pi / theta.size), parts, "circle", 2)


def _sphere_pattern(dim: int, seed: int) -> LawPattern:
    """S^2's degrees 1..12 on the Gauss–Legendre grid of :data:`SPHERE_ROWS` rows (ducc0 synthesis, degree by degree)."""
    import ducc0

    from .harmonics import m_major_layout

    band = BANDS["sphere"]
    places, volumes = _sphere_grid()
    degree, order = m_major_layout(band)
    coeffs = math.sqrt(4 * math.pi) * sphere_noise(sphere_normals(seed), degree, order)
    parts = np.empty((band, places.shape[0]))
    for l in range(1, band + 1):
        grid = np.empty((1, SPHERE_ROWS, 2 * SPHERE_ROWS))
        ducc0.sht.synthesis_2d(alm=np.where(degree == l, coeffs, 0.0)[None], map=grid, lmax=band, geometry="GL",
                               spin=0, nthreads=1)
        parts[l - 1] = grid.reshape(-1)
    return LawPattern(places, volumes, parts, "sphere", 3)


def _zonal_pattern(dim: int, seed: int) -> LawPattern:
    """The zonal law's degrees 1..12 on S^{dim-1} at :data:`ZONAL_CELLS` equal polar cells."""
    from .gegenbauer import normalised_gegenbauer

    band = BANDS["zonal"]
    polar, volumes = _zonal_cells(dim)
    coeffs = zonal_noise(seed, band)
    parts = (normalised_gegenbauer(np.cos(polar), band, dim)[:, 1:] * coeffs[1:]).T * math.sqrt(sphere_area(dim))
    return LawPattern(polar, volumes, parts, "zonal", dim)


#: The pattern of each law (:data:`meanfield.perturbation.BANDS`), made as ``pattern(dim, seed)``, and the
#: dimension it samples (``None``: any; S^{d-1}, d >= 4, draws S^2's law on a sphere this module does not grid).
PATTERNS = {"circle": (_circle_pattern, 2), "sphere": (_sphere_pattern, 3), "zonal": (_zonal_pattern, None)}


def pattern_geometry(dim: int, zonal: bool = False) -> str | None:
    """The pattern (:data:`PATTERNS`) of the law a start on S^{dim-1} draws, or ``None`` when none samples it."""
    geometry = law_geometry(dim, zonal)
    return geometry if PATTERNS[geometry][1] in (None, dim) else None


def law_pattern(geometry: str, dim: int, seed: int) -> LawPattern:
    """The ``perturbed:`` law's draw ``seed`` split by degree at the sampling places of ``geometry`` (a name of
    :data:`PATTERNS`)."""
    require(geometry in PATTERNS and PATTERNS[geometry][1] in (None, dim) and dim >= 2,
            f"geometry must be one of {', '.join(PATTERNS)} at its dim (got {geometry}, dim {dim})")
    return PATTERNS[geometry][0](dim, seed)


def linear_count(model: Model, eps: float, seed: int, geometry: str = "circle") -> tuple[int, float]:
    """The predicted count of draw ``seed`` of ``perturbed:EPS`` (module docstring) and the time ``t_0`` at which the
    linear solution touches zero (``inf``, count 0, when the uniform state is linearly stable)."""
    pattern = law_pattern(geometry, model.dim, seed)
    rates = growth_rates(model, np.arange(1, pattern.parts.shape[0] + 1))
    fastest = float(np.max(rates))
    if fastest <= 0:
        return 0, math.inf

    def touches(t):
        return float(np.min(pattern.density(eps, rates, t))) <= 0.0

    step, t = 0.05 / fastest, 0.0
    while not touches(t):
        t += step
    low, high = max(0.0, t - step), t
    while high - low > 1e-6 / fastest:
        middle = 0.5 * (low + high)
        low, high = (low, middle) if touches(middle) else (middle, high)
    density = pattern.density(eps, rates, high + EFOLDS_AFTER_ZERO / fastest)
    clusters = clusters_of_masses(pattern.places, density * pattern.volumes, model.beta, geometry=geometry,
                                  dim=pattern.dim, refine=False)
    return clusters.count, high


@dataclass(frozen=True)
class CountDistribution:
    """The predicted count at formation over ``draws`` draws of the law: ``counts`` (ascending), their
    ``probabilities`` and Monte Carlo ``standard_errors`` (``sqrt(p (1 - p) / draws)``), and the draws' counts in
    seed order (``per_draw``)."""

    counts: np.ndarray
    probabilities: np.ndarray
    standard_errors: np.ndarray
    draws: int
    per_draw: np.ndarray

    def probability(self, count: int) -> float:
        hit = np.flatnonzero(self.counts == count)
        return float(self.probabilities[hit[0]]) if hit.size else 0.0


def count_distribution(model: Model, eps: float, *, geometry: str = "circle", draws: int = 200,
                       first_seed: int = 0) -> CountDistribution:
    """The distribution of the predicted count at formation from ``perturbed:EPS`` (module docstring), by Monte Carlo
    over the law's draws ``first_seed .. first_seed + draws - 1`` (draw ``s`` is the start of ``--seed s``)."""
    require(isinstance(draws, (int, np.integer)) and 1 <= draws <= 100_000, f"draws must be in [1, 100000] (got {draws})")
    require(math.isfinite(eps) and 0 < eps < 1, f"eps must be in (0, 1) (got {eps:g})")
    per_draw = np.array([linear_count(model, eps, first_seed + s, geometry)[0] for s in range(draws)])
    counts, hits = np.unique(per_draw, return_counts=True)
    p = hits / draws
    return CountDistribution(counts, p, np.sqrt(p * (1 - p) / draws), int(draws), per_draw)


def count_at_formation(run) -> int:
    """A run's count at formation: its count just before its first merge (its final count when nothing merges),
    from the events it recorded (:class:`meanfield.solvers.tracking.clusters.ClusterTracker`)."""
    require("event_kind" in run and "cluster_count" in run, "the run has no cluster events (an older file?)")
    kinds, after = run["event_kind"].values, run["clusters_after_event"].values
    merges = np.flatnonzero(kinds == "merge")
    if merges.size == 0:
        return int(run["cluster_count"].values[-1])
    return int(after[merges[0] - 1]) if merges[0] > 0 else int(run["cluster_count"].values[0])
