"""Coincident nodes and cluster bookkeeping for Lagrangian nodes and particles (MATH.md §5).

Collapse.  Without noise, nodes (or tokens) at the same point have the same velocity for ever,
so nodes closer than ``collapse_tol`` are replaced by one node carrying their summed weight at
their weighted mean direction (:class:`NodeCollapse`): exact to that distance, and the
stiff contraction inside a cluster (rate ~1) disappears with the distinct nodes that made it, so
an adaptive step can follow the slow K-point dynamics.  The default tolerance,
:data:`DEFAULT_COLLAPSE_TOL` = 256 machine epsilons (5.7e-14 rad), is the distance at which two
positions of order 1 differ only in their last few bits: the collapsing clusters of a run reach
it a few tens of time units after they form (nodes contract like ``exp(-t)``), and moving mass
by that much changes nothing a double-precision run can resolve.  ``owner`` maps every original
node to the node that now carries it, so frames still report one position per original node.

Bookkeeping (:class:`ClusterTracker`, one definition used by the solvers and the theory of
:mod:`meanfield.cluster_dynamics`):

* ``cluster_count(time)`` counts the clusters of every frame by the package's one definition
  (:mod:`meanfield.cluster_detection`: the basins of the maxima of the attention field ``K * mu`` that stand out,
  holding at least ``min_mass`` = :data:`MIN_CLUSTER_MASS` = 1e-2 of the mass; MATH.md §10), and ``cluster_energy(time)`` is the point-cluster energy of
  MATH.md §5 of the groups of atoms linked within 1e-3 rad (``exp(-beta)`` scaled, like ``energy``), the value the
  energy takes on a plateau; it is NaN while more than :data:`MAX_ENERGY_ATOMS` atoms or
  :data:`MAX_ENERGY_GROUPS` groups remain (clusters not yet collapsed; the grouping and an O(K^2) sum not paid);
* a *merge* is the first time two cluster centres come within 1e-3 rad.  A cluster is followed
  for merges once it is *tight*: its nodes linked within :data:`meanfield.point_groups.TIGHT_RADIUS` (1e-6 rad,
  reached a few tens of time units after formation; merges of the loose fragments of a forming cluster
  are not merges of clusters), with mass >= ``min_mass``; its centre is its nodes' weighted mean
  direction.  After every step the pairs of tight clusters whose centres were >= 1e-3 apart at
  its start and are < 1e-3 apart at its end are located inside the step by bisection on the
  stepper's dense output, and recorded with the two masses and the cluster count after the merge (the
  clusters at the end of that step by the one definition, one more for each later merge within the step).

Step bound after collapse (:func:`closing_rate`): two distinct nodes that are about to coincide
contract at the rate ``|v_i - v_j| / |x_i - x_j|`` (~1 inside a cluster); an explicit step must
resolve it, or the error controller lets the pair hover at the tolerance instead of merging.  Only
pairs closer than :func:`closing_distance` (``100 rtol``, at least 1e-6 rad) can hover; farther pairs move
relative to each other by far more than the tolerance and the error control resolves them.

Cost when nothing happens.  Every check is vectorised and starts from the pairs closer than a chord
(:func:`meanfield.point_groups.close_pairs`: one sort of the first coordinate, then one-coordinate filters, no tree
unless the state is clustered), found once per accepted state for the collapse check, the next step's merge check
and its step bound (:class:`meanfield.memo.ArrayMemo`); with no close pair each check ends there.
At n = 1e6 tokens on S^2 that is about 0.15 s per step against 3 s of right-hand sides
(``meanfield validate bench-particles``, table 8).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.cluster_detection import MIN_MASS
from meanfield.cluster_dynamics import MERGE_DISTANCE, PointDynamics, angles_between
from meanfield.errors import require
from meanfield.limits import check_option
from meanfield.point_groups import TIGHT_RADIUS, close_pairs, link_groups, merge_points

from .trackers import Tracker

DEFAULT_COLLAPSE_TOL = 256 * float(np.finfo(float).eps)
#: The smallest cluster mass (relative to the total): the one definition's (:mod:`meanfield.cluster_detection`).
MIN_CLUSTER_MASS = MIN_MASS
MAX_ENERGY_GROUPS = 512
#: ``cluster_energy`` is NaN while more atoms than this remain (before collapse; the grouping is then not paid).
MAX_ENERGY_ATOMS = 8 * MAX_ENERGY_GROUPS


def resolve_collapse_tol(collapse_tol, nu: float) -> float:
    """The collapse distance a run uses: the default without noise, 0 (off) with noise; refuse bad values."""
    if collapse_tol is None:
        return DEFAULT_COLLAPSE_TOL if nu == 0 else 0.0
    check_option("--collapse-tol", collapse_tol)
    require(collapse_tol == 0 or nu == 0,
            f"--collapse-tol needs --nu 0 (got nu = {nu:g}): with noise coincident tokens separate again")
    return float(collapse_tol)


#: Pairs closer than this (rad) bound the step after collapse (:func:`closing_rate`) for the default ``rtol``.
CLOSING_DISTANCE = TIGHT_RADIUS


def closing_distance(rtol: float) -> float:
    """How close a pair must be for its closing rate to bound the step: ``100 rtol`` within ``[1e-6, 1e-3]``.
    A pair farther apart than a hundred error tolerances moves relative to itself by far more than the tolerance
    in a step, so the error control itself resolves its approach; only about the tolerance could a pair hover
    instead of merging (the default ``rtol = 1e-8`` gives 1e-6, the merge bookkeeping's tight radius)."""
    return float(min(1e-3, max(TIGHT_RADIUS, 100 * rtol)))


def closing_rate(points: np.ndarray, velocities: np.ndarray, within: float = CLOSING_DISTANCE,
                 remember: bool = False) -> float:
    """``max |v_i - v_j| / |x_i - x_j|`` over the pairs of nodes closer than ``within`` (rad): the rate at which the
    pairs about to coincide contract (0 when none is that close, or for fewer than two nodes).  Found by sorting
    (:func:`close_pairs`; ``remember`` when ``points`` is a run's accepted state, whose pairs the checks share);
    when that cannot decide, by a tree over every node's nearest neighbour."""
    if points.shape[0] < 2:
        return 0.0
    chord = 2 * math.sin(within / 2)
    pairs = close_pairs(points, chord, remember) if points.ndim == 2 else None
    if pairs is None:
        from scipy.spatial import cKDTree

        distance, index = cKDTree(points).query(points, k=2, distance_upper_bound=chord)
        near = np.isfinite(distance[:, 1])
        pairs = np.stack((np.nonzero(near)[0], index[near, 1]), axis=-1)
    if pairs.shape[0] == 0:
        return 0.0
    i, j = pairs[:, 0], pairs[:, 1]
    distance = np.linalg.norm(points[i] - points[j], axis=-1)
    closing = np.linalg.norm(velocities[i] - velocities[j], axis=-1)
    return float(np.max(closing / np.maximum(distance, 1e-300)))


def frame_clusters(dataset, index: int, merge_distance: float = MERGE_DISTANCE, min_mass: float = MIN_CLUSTER_MASS):
    """The point clusters of frame ``index`` of a run that saved ``positions`` and ``weights`` (Lagrangian nodes,
    particles): centres (unit vectors) and masses of the groups of atoms linked within ``merge_distance`` that carry
    at least ``min_mass``, the points the K-point ODE of MATH.md §5 starts from on a plateau (and what a merge joins).
    Not a cluster count: counts use the package's one definition (:mod:`meanfield.cluster_detection`), which on a
    plateau finds the same clusters (its masses add the stray atoms of each basin)."""
    points = np.asarray(dataset["positions"].values[index], dtype=float)
    labels, count = link_groups(points, merge_distance)
    centres, masses = merge_points(points, np.asarray(dataset["weights"].values, dtype=float), labels, count)
    keep = masses >= min_mass
    return centres[keep], masses[keep]


class ClosingPairsStep:
    """What the schemes whose step is bounded by approaching pairs share (particles, Lagrangian nodes; MATH.md §5):
    the pairs closer than ``closing_within`` (rad) bound the step (:func:`closing_rate`), the distance set from the
    stepper's tolerance (:func:`closing_distance`) by the contract's ``follow_stepper``."""

    closing_within = CLOSING_DISTANCE

    def follow_stepper(self, stepper) -> None:
        """The pairs whose approach bounds the step: those within the stepper's tolerance."""
        self.closing_within = closing_distance(stepper.rtol)


class NodeCollapse:
    """Which node carries each original node (``owner``), and the merging of coincident unit vectors."""

    def __init__(self, n: int, tol: float):
        self.tol = float(tol)
        self.owner = np.arange(n)
        self.merged = False

    @property
    def enabled(self) -> bool:
        return self.tol > 0

    def regroup(self, labels: np.ndarray) -> None:
        """Old active node ``i`` became new active node ``labels[i]``."""
        self.owner = labels[self.owner]
        self.merged = True

    def collapse_points(self, points: np.ndarray, weights: np.ndarray):
        """``(points, weights)`` after merging the nodes within ``tol``; the same objects if none are."""
        labels, count = link_groups(points, self.tol, remember=True)
        if count == points.shape[0]:
            return points, weights
        self.regroup(labels)
        return merge_points(points, weights, labels, count)


class ClusterTracker(Tracker):
    """Cluster count, point-cluster energy and merges of a run (module docstring).

    Works with any scheme that has ``points(state)`` (the nodes as unit vectors, shape ``(K, d)``)
    and ``weights`` (their masses).  A tracker of the run loop (:mod:`meanfield.solvers.trackers`): ``frame`` adds
    ``cluster_count`` and ``cluster_energy``, ``after_step`` finds the merges, ``variables()`` returns the
    Dataset's ``merge`` variables and ``attrs()`` the settings.
    """

    def __init__(self, beta: float, merge_distance: float = MERGE_DISTANCE, min_mass: float = MIN_CLUSTER_MASS,
                 dim: int | None = None, counter=None):
        self.beta, self.merge_distance, self.min_mass = beta, merge_distance, min_mass
        #: the energy of the groups: points, or zonal rings on S^{dim-1} given as (cos th, sin th) (``dim``)
        self.dynamics = PointDynamics(beta, "sa", dim)
        self.merges: list[tuple[float, float, float, int]] = []
        #: ``counter(scheme, state, record)``: the clusters of a state (``record``: its frame, or ``None``) by the
        #: package's one definition (:mod:`meanfield.cluster_detection`); default: the scheme's weighted atoms
        self.counter = counter if counter is not None else self._atom_clusters

    def _atom_clusters(self, scheme, state, record):
        from meanfield.cluster_detection import clusters_of_atoms

        return clusters_of_atoms(scheme.points(state), scheme.weights, beta=self.beta, min_mass=self.min_mass)

    def groups(self, points: np.ndarray, weights: np.ndarray):
        """Centres and masses of the groups linked at ``merge_distance``."""
        labels, count = link_groups(points, self.merge_distance)
        return merge_points(points, weights, labels, count)

    def frame(self, scheme, state, record: dict) -> dict:
        """``cluster_count``: the clusters of the frame (:mod:`meanfield.cluster_detection`); ``cluster_energy``: the
        point energy (MATH.md §5) of the groups linked within ``merge_distance``, once at most
        :data:`MAX_ENERGY_ATOMS` atoms remain and they make at most :data:`MAX_ENERGY_GROUPS` groups."""
        energy = math.nan
        if scheme.weights.size <= MAX_ENERGY_ATOMS:      # more atoms: clusters not collapsed yet; no grouping paid
            centres, masses = self.groups(scheme.points(state), scheme.weights)
            energy = self.dynamics.energy(centres, masses) if masses.size <= MAX_ENERGY_GROUPS else math.nan
        return {"cluster_count": self.counter(scheme, state, record).count, "cluster_energy": energy}

    def after_step(self, scheme, stepper, before, t0: float, after, t1: float) -> None:
        weights, start_points = scheme.weights, scheme.points(before)
        labels, count = link_groups(start_points, TIGHT_RADIUS, remember=True)
        masses = np.bincount(labels, weights, minlength=count)
        tight = np.nonzero(masses >= self.min_mass)[0]
        if tight.size < 2:
            return

        def centres(points):
            return merge_points(points, weights, labels, count)[0][tight]

        start, end = angles_between(centres(start_points)), angles_between(centres(scheme.points(after)))
        a_list, b_list = np.nonzero(np.triu((start >= self.merge_distance) & (end < self.merge_distance), 1))
        if a_list.size == 0:
            return
        found = []
        for a, b in zip(a_list, b_list):
            time = self._locate(lambda fraction: centres(scheme.points(stepper.dense(fraction)))[[a, b]], t0, t1)
            found.append((time, float(masses[tight[a]]), float(masses[tight[b]])))
        after_count = self.counter(scheme, after, None).count     # the clusters at the end of the step
        for index, (time, mass_a, mass_b) in enumerate(sorted(found)):  # one more left for each later merge
            self.merges.append((time, mass_a, mass_b, max(after_count + len(found) - 1 - index, 1)))

    def _locate(self, pair_at, t0: float, t1: float) -> float:
        """The time in ``[t0, t1]`` when the two centres ``pair_at(fraction)`` come within ``merge_distance``
        (bisection on the dense output)."""
        def gap(fraction):
            return float(angles_between(pair_at(fraction))[0, 1]) - self.merge_distance

        low, high = 0.0, 1.0
        for _ in range(60):
            middle = 0.5 * (low + high)
            if gap(middle) < 0:
                high = middle
            else:
                low = middle
            if (high - low) * (t1 - t0) <= 1e-12 * max(1.0, t1):
                break
        return t0 + high * (t1 - t0)

    def attrs(self) -> dict:
        """The bookkeeping's settings."""
        return {"merge_distance": self.merge_distance, "min_cluster_mass": self.min_mass}

    def variables(self) -> dict:
        """``merge_time(merge)``, ``merge_mass_a``, ``merge_mass_b``, ``clusters_after_merge``."""
        merges = np.array(self.merges, dtype=float).reshape(-1, 4)
        attrs = {"definition": f"first time two cluster centres come within {self.merge_distance:g} rad"}
        return {"merge_time": ("merge", merges[:, 0], dict(attrs, long_name="time of the merge")),
                "merge_mass_a": ("merge", merges[:, 1], {"long_name": "mass of the first merging cluster"}),
                "merge_mass_b": ("merge", merges[:, 2], {"long_name": "mass of the second merging cluster"}),
                "clusters_after_merge": ("merge", merges[:, 3].astype(int),
                                         {"long_name": "number of clusters after the merge"})}
