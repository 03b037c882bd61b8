"""Clusters as weighted points: the K-point ODE, its merges and the plateau estimate (MATH.md §5).

Weighted Dirac masses ``mu = sum_a m_a delta_{y_a}`` are exact weak solutions of the PDE without
noise; their centres follow the weighted particle system

    SA:   dy_a/dt = P_{y_a}( sum_b m_b exp(beta <y_a, y_b>) y_b / sum_b m_b exp(beta <y_a, y_b>) )
    USA:  dy_a/dt = P_{y_a}( sum_b m_b exp(beta <y_a, y_b>) y_b )

on ``S^{d-1}`` (any ``d``; on the circle pass angles).  :func:`cluster_history` integrates it and
joins two points the first time they come within ``merge_distance`` (1e-3 rad; its ``merge_times``);
:meth:`ClusterHistory.observed_merges` dates the merges as runs do, by the cluster observable on the dense
output (MATH.md §10: two points become one hill of the attention field, earlier).  Two joined points are
replaced by one point carrying the summed mass at their weighted mean direction (their internal
motion conserves that mean to leading order), and the integration goes on with ``K - 1`` points,
until one point is left or ``t_final``.  Integration: SciPy's DOP853 with an event per pair
(an independent implementation from the solvers' Dormand–Prince, on purpose).

A well separated pair at angle ``D`` moves at ``~ (m_b / m_a) exp(-beta (1 - cos D)) sin D``
(SA on the circle), so the plateau before it merges lasts a time of order
``exp(beta (1 - cos D))`` (:func:`plateau_estimate`).  Energies are scaled by ``exp(-beta)``
as everywhere in the package: ``exp(-beta) E = (1 / 2 beta) sum_ab m_a m_b exp(beta (<y_a, y_b> - 1))``
(:func:`point_energy`).

Zonal densities on ``S^{d-1}`` (MATH.md §2.2, §5): a zonal cluster is a *ring*, the uniform
probability on ``{x : <x, e> = cos th_a}`` carrying mass ``m_a`` (a point at a pole when
``th_a = 0`` or ``pi``).  Rings stay rings under the zonal dynamics and are exact weak solutions
without noise; averaging ``exp(beta <x, y>)`` over a ring gives the closed form

    (K * ring_b)(th) = m_b exp(beta cos th cos th_b) Lambda_nu(beta sin th sin th_b),
    Lambda_nu(z) = Gamma(nu + 1) (2 / z)^nu I_nu(z),   nu = (d - 3) / 2

(the mean of ``exp(z <w, w'>)`` over ``w'`` uniform on ``S^{d-2}``), and the polar speed of ring
``a`` is ``d th_a / dt = d/dth log(K * mu) / beta`` (SA) or ``d/dth (K * mu) / beta`` (USA) at
``th_a`` (:func:`ring_velocity`, an implementation independent of the solvers' Gegenbauer sums).
:func:`cluster_history` with ``dim=d`` integrates rings given by their polar angles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .attention_kind import attention_kind
from .errors import require

#: Two cluster centres closer than this (radians) have merged (MATH.md §5 bookkeeping).
MERGE_DISTANCE = 1e-3


def as_unit_vectors(centres) -> np.ndarray:
    """Angles (1-D, the circle) or vectors (``K x d``) as unit vectors ``K x d``."""
    centres = np.asarray(centres, dtype=float)
    if centres.ndim == 1:
        return np.stack((np.cos(centres), np.sin(centres)), axis=-1)
    require(centres.ndim == 2 and centres.shape[1] >= 2, "centres must be angles or a K x d array of vectors")
    norms = np.linalg.norm(centres, axis=-1, keepdims=True)
    require(bool(np.all(norms > 0)) and bool(np.all(np.isfinite(centres))), "centres must be finite, non-zero")
    return centres / norms


def angles_between(points: np.ndarray) -> np.ndarray:
    """Pairwise geodesic distances ``2 asin(|y_a - y_b| / 2)`` of unit vectors (accurate at small angles)."""
    chord = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)
    return 2 * np.arcsin(np.minimum(chord / 2, 1.0))


def point_energy(centres, masses, beta: float) -> float:
    """``exp(-beta) E`` of point masses (MATH.md §5): ``sum_ab m_a m_b exp(beta (<y_a, y_b> - 1)) / 2 beta``."""
    points = as_unit_vectors(centres)
    masses = np.asarray(masses, dtype=float)
    gram = np.clip(points @ points.T, -1.0, 1.0)
    return float(masses @ np.exp(beta * (gram - 1.0)) @ masses / (2 * beta))


def cluster_velocity(points: np.ndarray, masses: np.ndarray, beta: float, attention: str = "sa") -> np.ndarray:
    """Tangent velocities of weighted points on the sphere (MATH.md §5; ``exp(beta)`` explicit for USA)."""
    gram = points @ points.T
    kernel = np.exp(beta * (gram - 1.0)) * masses[None, :]
    pull = attention_kind(attention, "attention").output(kernel @ points, kernel.sum(axis=1, keepdims=True), beta)
    return pull - np.sum(pull * points, axis=1, keepdims=True) * points


def _ring_log_kernel(th_a, th_b, beta: float, dim: int):
    """``log(exp(-beta) K * ring_b)`` per unit mass at ``th_a`` and its ``th_a``-derivative (closed form above)."""
    from scipy.special import ive, gammaln

    nu = (dim - 3) / 2
    cos_a, sin_a = np.cos(th_a)[:, None], np.sin(th_a)[:, None]
    cos_b, sin_b = np.cos(th_b)[None, :], np.sin(th_b)[None, :]
    z = beta * sin_a * sin_b
    small = z < 1e-6                  # the series: log Lambda = z^2 / 4 (nu + 1) + O(z^4), ratio = z / 2 (nu + 1)
    safe = np.where(small, 1.0, z)
    # log Lambda_nu(z) = log Gamma(nu + 1) + nu log(2 / z) + log ive(nu, z) + z; Lambda_nu(0) = 1
    log_lambda = np.where(small, z * z / (4 * (nu + 1)),
                          gammaln(nu + 1) + nu * np.log(2 / safe) + np.log(ive(nu, safe)) + safe)
    # Lambda_nu'(z) / Lambda_nu(z) = I_{nu+1}(z) / I_nu(z)
    ratio = np.where(small, z / (2 * (nu + 1)), ive(nu + 1, safe) / ive(nu, safe))
    log_kernel = beta * (cos_a * cos_b - 1.0) + log_lambda
    slope = beta * (-sin_a * cos_b) + ratio * beta * cos_a * sin_b
    return log_kernel, slope


def ring_velocity(th: np.ndarray, masses: np.ndarray, beta: float, dim: int, attention: str = "sa") -> np.ndarray:
    """Polar speeds ``d th_a / dt`` of zonal rings on ``S^{dim-1}`` (module docstring; ``exp(beta)`` explicit for USA)."""
    log_kernel, slope = _ring_log_kernel(th, th, beta, dim)
    weights = np.exp(log_kernel) * masses[None, :]
    pull = np.sum(weights * slope, axis=1) / beta
    return attention_kind(attention, "attention").output(pull, weights.sum(axis=1), beta)


def ring_energy(th, masses, beta: float, dim: int) -> float:
    """``exp(-beta) E`` of zonal rings: ``(1 / 2 beta) sum_ab m_a m_b exp(-beta) (K * ring_b)(th_a) / m_b``."""
    th, masses = np.asarray(th, dtype=float), np.asarray(masses, dtype=float)
    log_kernel, _ = _ring_log_kernel(th, th, beta, dim)
    return float(masses @ np.exp(log_kernel) @ masses / (2 * beta))


def plateau_estimate(centres, beta: float) -> float:
    """``exp(beta (1 - cos D))`` for the nearest pair at angle ``D`` (MATH.md §5): the order of the
    time before that pair merges (``inf`` for fewer than two centres)."""
    points = as_unit_vectors(centres)
    if points.shape[0] < 2:
        return math.inf
    gaps = angles_between(points)
    np.fill_diagonal(gaps, np.inf)
    return math.exp(beta * (1.0 - math.cos(float(gaps.min()))))


def merge_time_estimate(centres, masses, beta: float) -> float:
    """The two-cluster plateau law for the nearest pair (MATH.md §5): a pair of masses ``m_a, m_b`` at angle
    ``D`` closes at ``dD/dt = -(m_a / m_b + m_b / m_a) exp(-beta (1 - cos D)) sin D``, so it merges after
    about ``exp(beta (1 - cos D)) / ((m_a / m_b + m_b / m_a) beta sin^2 D)`` (the integral is dominated by
    its start; other clusters ignored).  ``inf`` for fewer than two centres."""
    points = as_unit_vectors(centres)
    masses = np.asarray(masses, dtype=float)
    if points.shape[0] < 2:
        return math.inf
    gaps = angles_between(points)
    np.fill_diagonal(gaps, np.inf)
    a, b = np.unravel_index(int(np.argmin(gaps)), gaps.shape)
    angle = float(gaps[a, b])
    ratio = masses[a] / masses[b] + masses[b] / masses[a]
    return math.exp(beta * (1.0 - math.cos(angle))) / (ratio * beta * math.sin(angle) ** 2)


def _join_close(points: np.ndarray, masses: np.ndarray, merge_distance: float):
    """Centres already within ``merge_distance`` at the start have merged: one point each (mass-weighted)."""
    while points.shape[0] > 1:
        gaps = angles_between(points)
        np.fill_diagonal(gaps, np.inf)
        a, b = np.unravel_index(int(np.argmin(gaps)), gaps.shape)
        if gaps[a, b] >= merge_distance:
            break
        points, masses = _join(points, masses, a, b)
    return points, masses


def _join(points: np.ndarray, masses: np.ndarray, a: int, b: int):
    """Points ``a`` and ``b`` replaced by one point with their summed mass at their weighted mean direction."""
    merged = masses[a] * points[a] + masses[b] * points[b]
    keep = [i for i in range(points.shape[0]) if i not in (a, b)]
    return np.vstack((points[keep], merged / np.linalg.norm(merged))), np.append(masses[keep], masses[a] + masses[b])


def _polar(points: np.ndarray) -> np.ndarray:
    """Polar angles in ``[0, pi]`` of rings carried as ``(cos th, sin th)``: a ring is its own mirror image, and
    a ring the integrator carries a round-off past a pole (``sin th < 0``) is the ring at ``|th|``."""
    return np.abs(np.arctan2(points[:, 1], points[:, 0]))


def snap_to_poles(th: np.ndarray, distance: float) -> np.ndarray:
    """Polar angles of rings, those within ``distance`` of a pole put on it (a ring contracting onto a pole
    never reaches it, as two merging points never meet; the finite-volume points do the same)."""
    return np.where(th <= distance, 0.0, np.where(th >= math.pi - distance, math.pi, th))


def _snap_to_poles(points: np.ndarray, distance: float) -> np.ndarray:
    """Rings (as ``(cos th, sin th)``) within ``distance`` of a pole put on it (:func:`snap_to_poles`)."""
    th = snap_to_poles(_polar(points), distance)
    return np.stack((np.cos(th), np.sin(th)), axis=-1)


def _settled_at_poles(points: np.ndarray) -> bool:
    """Every ring is a pole point, one per pole at most: nothing moves any more."""
    th = _polar(points)
    return bool(np.all((th == 0.0) | (th == math.pi))) and points.shape[0] <= 2


def _pole_events(points: np.ndarray, distance: float) -> list:
    """Terminal events: a ring off the poles comes within ``distance`` of one (it becomes a pole point)."""
    events = []
    for a in np.flatnonzero((_polar(points) != 0.0) & (_polar(points) != math.pi)):
        def event(_, y, a=a):
            th = abs(math.atan2(y[2 * a + 1], y[2 * a]))
            return min(th, math.pi - th) - distance
        event.terminal, event.direction = True, -1
        events.append(event)
    return events


@dataclass
class ClusterHistory:
    """What :func:`cluster_history` found: each merge's time, the two masses, the count after it."""

    merge_times: list = field(default_factory=list)
    mass_a: list = field(default_factory=list)
    mass_b: list = field(default_factory=list)
    count_after: list = field(default_factory=list)
    points: np.ndarray | None = None
    masses: np.ndarray | None = None
    t_end: float = 0.0
    # (time, count, exp(-beta) E) at the start of every plateau, the first at t_start
    plateaus: list = field(default_factory=list)
    beta: float = math.nan
    # (t0, t1, dense solution, masses) of every integrated segment
    segments: list = field(default_factory=list)
    dynamics: object = None

    def energy_at(self, t: float) -> float:
        """``exp(-beta) E`` of the points at time ``t`` (within the integrated span), from the dense output."""
        for t0, t1, solution, masses in self.segments:
            if t0 <= t <= t1:
                points = solution(t).reshape(masses.size, -1)
                return self.dynamics.energy(as_unit_vectors(points), masses)
        return self.plateaus[-1][2]

    def observed_merges(self) -> list[tuple[float, int]]:
        """``(time, count after)`` of every merge the package's cluster observable sees (MATH.md §10: the count of
        the points' attention field falls), located by bisection on each segment's dense output, as a run's cluster
        tracker locates them on its stepper's: the times to set against a run's ``merge_time``.  The ODE joins two
        points later, at ``merge_distance``; the observable joins them once they are one hill of ``A``."""
        from .cluster_detection import clusters_of_atoms

        zonal = self.dynamics.dim is not None

        def count(solution, masses, t):
            points = as_unit_vectors(solution(t).reshape(masses.size, -1))
            polar = np.abs(np.arctan2(points[:, 1], points[:, 0])) if zonal else None
            return clusters_of_atoms(polar if zonal else points, masses, beta=self.beta, dim=self.dynamics.dim,
                                     zonal=zonal, refine=False).count

        found = []
        for t0, t1, solution, masses in self.segments:
            start, end = count(solution, masses, t0), count(solution, masses, t1)
            for after in range(start - 1, end - 1, -1):     # the first time the count is at most `after`
                low, high = t0, t1
                while high - low > 1e-12 * max(1.0, abs(high)):
                    middle = 0.5 * (low + high)
                    if count(solution, masses, middle) <= after:
                        high = middle
                    else:
                        low = middle
                found.append((high, after))
        return found

    def approach_times(self, distance: float = MERGE_DISTANCE, min_mass: float = 0.0) -> list:
        """The times at which two points of mass ``>= min_mass`` come within ``distance`` (from above), found
        by bisection on each segment's dense output: the run trackers' definition of a merge
        (:class:`meanfield.solvers.tracking.clusters.ClusterTracker`) applied to a history integrated with a smaller
        ``merge_distance`` (the points it joins are the trackers' tight groups).  Several rings contracting onto
        one pole together come within ``distance`` of each other pairwise before any joins; this counts each
        such approach, as a run does."""
        times = []
        for t0, t1, solution, masses in self.segments:
            heavy = np.flatnonzero(masses >= min_mass)

            def gaps(t, heavy=heavy, solution=solution, masses=masses):
                points = as_unit_vectors(solution(t).reshape(masses.size, -1))[heavy]
                return angles_between(points)

            start, end = gaps(t0), gaps(t1)
            for a, b in zip(*np.nonzero(np.triu((start >= distance) & (end < distance), 1))):
                low, high = t0, t1
                while high - low > 1e-13 * max(1.0, abs(high)):
                    middle = 0.5 * (low + high)
                    if gaps(middle)[a, b] < distance:
                        high = middle
                    else:
                        low = middle
                times.append(high)
        return sorted(times)


class PointDynamics:
    """The velocity and energy of the weighted points (``dim=None``) or of zonal rings on ``S^{dim-1}``
    given by their polar angles, the rings carried as unit vectors ``(cos th, sin th)`` so that distances,
    merges and joins are the points' (module docstring)."""

    def __init__(self, beta: float, attention: str, dim: int | None):
        self.beta, self.attention, self.dim = beta, attention, dim

    def velocity(self, points: np.ndarray, masses: np.ndarray) -> np.ndarray:
        if self.dim is None:
            return cluster_velocity(points, masses, self.beta, self.attention)
        signed = np.arctan2(points[:, 1], points[:, 0])
        speed = ring_velocity(np.abs(signed), masses, self.beta, self.dim, self.attention)
        speed = np.where(signed < 0, -speed, speed)            # the mirror image of a ring moves as its mirror
        return speed[:, None] * np.stack((-np.sin(signed), np.cos(signed)), axis=-1)

    def energy(self, points: np.ndarray, masses: np.ndarray) -> float:
        if self.dim is None:
            return point_energy(points, masses, self.beta)
        return ring_energy(_polar(points), masses, self.beta, self.dim)


def cluster_history(centres, masses, beta: float, attention: str = "sa", t_start: float = 0.0,
                    t_final: float = math.inf, merge_distance: float = MERGE_DISTANCE,
                    rtol: float = 1e-10, atol: float = 1e-13, dim: int | None = None) -> ClusterHistory:
    """Integrate the K-point ODE of MATH.md §5 from ``t_start`` and record every merge (module docstring).

    Parameters
    ----------
    centres : array
        The clusters' positions: angles ``(K,)`` on the circle or unit vectors ``(K, d)``; with ``dim``, the zonal
        rings' polar angles in ``[0, pi]``.
    masses : array, shape (K,)
        Their masses.
    beta : float
        Inverse temperature, > 0.
    attention : {"sa", "usa"}
        The model's attention.
    t_start, t_final : float
        The clock at ``centres`` and the end (``inf``: until one point is left, or reported as it is at
        ``t = 1e15`` if it does not merge by then).
    merge_distance : float
        Two points closer than this (rad) merge (the run files' ``merge_distance``).
    rtol, atol : float
        Tolerances of the integration (``scipy.integrate.solve_ivp``, DOP853).
    dim : int, optional
        Zonal rings on ``S^{dim-1}`` (``dim >= 3``): the dynamics is :func:`ring_velocity`'s and the history's
        ``points`` are ``(cos th, sin th)``.

    Returns
    -------
    ClusterHistory
        Every merge's time, the two masses and the count after it; the plateaus; the dense solution.
    """
    from scipy.integrate import solve_ivp

    require(dim is None or (isinstance(dim, (int, np.integer)) and dim >= 3),
            f"dim must be None (points) or an integer >= 3 (zonal rings; got {dim!r})")
    if dim is not None:
        polar = np.asarray(centres, dtype=float)
        require(polar.ndim == 1 and bool(np.all((polar >= 0) & (polar <= math.pi))),
                "zonal ring centres must be polar angles in [0, pi]")
    dynamics = PointDynamics(beta, attention, dim)
    points = as_unit_vectors(centres)
    masses = np.asarray(masses, dtype=float).copy()
    require(masses.shape == (points.shape[0],) and bool(np.all(masses > 0)),
            "masses must be positive, one per centre")
    attention_kind(attention, "attention")
    require(beta > 0 and merge_distance > 0, "beta and merge_distance must be > 0")
    end = min(t_final, 1e15)
    history = ClusterHistory(beta=beta, dynamics=dynamics)
    t = float(t_start)
    points, masses = _join_close(points, masses, merge_distance)
    history.plateaus.append((t, points.shape[0], dynamics.energy(points, masses)))
    rings = dim is not None
    while points.shape[0] > 1 and t < end:
        if rings:
            points = _snap_to_poles(points, merge_distance)
            if _settled_at_poles(points):          # pole points do not move; two at opposite poles never merge
                break
        count, width = points.shape

        def rhs(_, y, masses=masses, count=count, width=width):
            p = y.reshape(count, width)
            p = p / np.linalg.norm(p, axis=1, keepdims=True)
            return dynamics.velocity(p, masses).ravel()

        pairs = [(a, b) for a in range(count) for b in range(a + 1, count)]
        events = []
        for a, b in pairs:
            def event(_, y, a=a, b=b, width=width):
                ya, yb = y[a * width:(a + 1) * width], y[b * width:(b + 1) * width]
                chord = np.linalg.norm(ya / np.linalg.norm(ya) - yb / np.linalg.norm(yb))
                return 2 * math.asin(min(chord / 2, 1.0)) - merge_distance
            event.terminal, event.direction = True, -1
            events.append(event)
        poles = _pole_events(points, merge_distance) if rings else []
        solution = solve_ivp(rhs, (t, end), points.ravel(), method="DOP853", rtol=rtol, atol=atol,
                             events=events + poles, dense_output=True)
        history.segments.append((t, float(solution.t[-1]), solution.sol, masses.copy()))
        state = solution.y[:, -1].reshape(count, width)
        t = float(solution.t[-1])
        points = state / np.linalg.norm(state, axis=1, keepdims=True)
        hit = [i for i, times in enumerate(solution.t_events) if times.size]
        if not hit:
            break
        if hit[0] >= len(pairs):                   # a ring reached a pole: it is a pole point from now on
            points = _snap_to_poles(points, merge_distance)
            gaps = angles_between(points)
            np.fill_diagonal(gaps, np.inf)
            if gaps.min() >= merge_distance:         # no pole point there: nothing merged
                continue
            a, b = np.unravel_index(int(np.argmin(gaps)), gaps.shape)
        else:
            a, b = pairs[hit[0]]
        history.merge_times.append(t)
        history.mass_a.append(float(masses[a]))
        history.mass_b.append(float(masses[b]))
        points, masses = _join(points, masses, a, b)
        points, masses = _join_close(points, masses, merge_distance)
        history.count_after.append(points.shape[0])
        history.plateaus.append((t, points.shape[0], dynamics.energy(points, masses)))
    history.points, history.masses, history.t_end = points, masses, t
    return history
