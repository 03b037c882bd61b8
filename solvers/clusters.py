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
  (:mod:`meanfield.cluster_detection`: connected cells more than twice as dense as uniform, holding at least
  ``min_mass`` = :data:`MIN_CLUSTER_MASS` = 1e-2 of the mass; atoms binned at ``cluster_cells`` cells around a
  great circle, finite volumes on their own cells), and ``cluster_energy(time)`` is the point-cluster energy of
  MATH.md §5 of the groups of atoms linked within 1e-3 rad (``exp(-beta)`` scaled, like ``energy``), the value the
  energy takes on a plateau; it is NaN while more than :data:`MAX_ENERGY_ATOMS` atoms or
  :data:`MAX_ENERGY_GROUPS` groups remain (clusters not yet collapsed; the grouping and an O(K^2) sum not paid);
* a *merge* is the first time two cluster centres come within 1e-3 rad.  A cluster is followed
  for merges once it is *tight*: its nodes linked within :data:`TIGHT_RADIUS` (1e-6 rad, reached
  a few tens of time units after formation; merges of the loose fragments of a forming cluster
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
(:func:`close_pairs`: one sort of the first coordinate, then one-coordinate filters, no tree unless the
state is clustered), found once per accepted state for the collapse check, the next step's merge check
and its step bound (:class:`meanfield.solvers.memo.ArrayMemo`); with no close pair each check ends there.
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

from .memo import ArrayMemo
from .trackers import Tracker

DEFAULT_COLLAPSE_TOL = 256 * float(np.finfo(float).eps)
#: The smallest cluster mass (relative to the total): the one definition's (:mod:`meanfield.cluster_detection`).
MIN_CLUSTER_MASS = MIN_MASS
TIGHT_RADIUS = 1e-6
MAX_ENERGY_GROUPS = 512
#: ``cluster_energy`` is NaN while more atoms than this remain (before collapse; the grouping is then not paid).
MAX_ENERGY_ATOMS = 8 * MAX_ENERGY_GROUPS
#: Up to this many points, :func:`link_groups` checks the all-apart case by direct distances.
SMALL_GROUP = 64
#: Neighbours each node links to when grouping (bounds the cost when thousands of nodes coincide).
LINK_NEIGHBOURS = 16


def resolve_collapse_tol(collapse_tol, nu: float) -> float:
    """The collapse distance a run uses: the default without noise, 0 (off) with noise; refuse bad values."""
    if collapse_tol is None:
        return DEFAULT_COLLAPSE_TOL if nu == 0 else 0.0
    check_option("--collapse-tol", collapse_tol)
    require(collapse_tol == 0 or nu == 0,
            f"--collapse-tol needs --nu 0 (got nu = {nu:g}): with noise coincident tokens separate again")
    return float(collapse_tol)


def link_groups(points: np.ndarray, radius: float, remember: bool = False) -> tuple[np.ndarray, int]:
    """Group labels of unit vectors linked at chord distance < ``2 sin(radius / 2)`` (see the module docstring).
    ``remember``: a run's state, never changed in place, whose close pairs later checks may reuse (:func:`close_pairs`)."""
    from scipy.spatial import cKDTree

    if points.shape[0] < 2:
        return np.zeros(points.shape[0], dtype=int), points.shape[0]
    chord = 2 * math.sin(radius / 2)
    if points.shape[0] <= SMALL_GROUP and _all_apart(points, chord):   # a few point clusters: no tree needed
        return np.arange(points.shape[0]), points.shape[0]
    if apart_by_sorting(points, chord, remember):    # the common case, in O(n log n) without a tree
        return np.arange(points.shape[0]), points.shape[0]
    close = pairs_within(points, chord)
    if close is None:
        nearest, _ = cKDTree(points).query(points, k=2)
        apart = bool(nearest[:, 1].min() >= chord)
    else:
        apart = close.shape[0] == 0
    if apart:                                        # every node is its own group
        return np.arange(points.shape[0]), points.shape[0]
    points, positions = np.unique(points, axis=0, return_inverse=True)   # identical positions first
    positions = positions.ravel()
    n = points.shape[0]
    if n < 2:
        return np.zeros(positions.size, dtype=int), 1
    known = None
    if close is not None and n == positions.size:     # no identical positions: the close pairs, renumbered
        known = np.sort(positions[close], axis=1)
    links = sparse_links(points, chord, known)        # every pair within chord, when few (no tree)
    if links is None:
        neighbours = min(LINK_NEIGHBOURS + 1, n)
        distance, index = cKDTree(points).query(points, k=neighbours, distance_upper_bound=chord)
        rows = np.repeat(np.arange(n), neighbours).reshape(n, neighbours)
        linked = np.isfinite(distance)
        links = rows[linked], index[linked]
    count, labels = _components(*links, n)
    while count > 1:     # groups whose centres are within the radius are one group (dense sub-clusters)
        centres, _ = merge_points(points, np.ones(n), labels, count)
        pairs = pairs_within(centres, chord)
        if pairs is None:
            pairs = cKDTree(centres).query_pairs(chord, output_type="ndarray")
        if pairs.shape[0] == 0:
            break
        joined, outer = _components(pairs[:, 0], pairs[:, 1], count)
        if joined == count:
            break
        labels, count = outer[labels], joined
    return labels[positions], count


#: Candidate pairs per point beyond which :func:`apart_by_sorting` and :func:`pairs_within` give up (the tree is
#: then cheaper).
SORT_CANDIDATES = 8
#: Smallest chord :func:`pairs_within` bins by (cell indices of the unit sphere must fit an int64 key).
SMALLEST_CELL = 1e-5


def _cross(starts_a, counts_a, starts_b, counts_b):
    """Every pair (one member of cell a, one of cell b) of the sorted points, for each listed cell pair."""
    sizes = counts_a * counts_b
    pair = np.repeat(np.arange(sizes.size), sizes)
    within = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return starts_a[pair] + within // counts_b[pair], starts_b[pair] + within % counts_b[pair]


def pairs_within(points: np.ndarray, chord: float, candidates: int = SORT_CANDIDATES) -> np.ndarray | None:
    """Every pair ``i < j`` of ``points`` (in R^3) closer than ``chord``, as a ``(m, 2)`` array, found by binning
    into cubes of side ``chord`` (a close pair lies in the same or adjacent cubes); ``None`` when the chord is
    below :data:`SMALLEST_CELL`, the points are not 3-D, or there are more than ``candidates`` candidate pairs per
    point (clustered states: the tree is then cheaper)."""
    n = points.shape[0]
    if chord < SMALLEST_CELL or points.ndim != 2 or points.shape[1] != 3:
        return None
    base = int(2.0 / chord) + 4
    cells = np.floor(points / chord).astype(np.int64) + base // 2
    keys = (cells[:, 0] * base + cells[:, 1]) * base + cells[:, 2]
    order = np.argsort(keys, kind="stable")
    unique, starts, counts = np.unique(keys[order], return_index=True, return_counts=True)
    left, right = [], []
    offsets = [(dx, dy, dz) for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1) if (dx, dy, dz) > (0, 0, 0)]
    total = int(np.sum(counts * (counts - 1) // 2))
    a, b = _cross(starts, counts, starts, counts)            # within a cell: i < j only
    keep = a < b
    left.append(a[keep]), right.append(b[keep])
    for dx, dy, dz in offsets:
        target = unique + (dx * base + dy) * base + dz
        where = np.minimum(np.searchsorted(unique, target), unique.size - 1)
        found = np.nonzero(unique[where] == target)[0]
        total += int(np.sum(counts[found] * counts[where[found]]))
        if total > candidates * n:
            return None
        a, b = _cross(starts[found], counts[found], starts[where[found]], counts[where[found]])
        left.append(a), right.append(b)
    i, j = order[np.concatenate(left)], order[np.concatenate(right)]
    close = np.sum((points[i] - points[j]) ** 2, axis=-1) < chord * chord
    pairs = np.stack((np.minimum(i, j), np.maximum(i, j)), axis=-1)[close]
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def sparse_links(points: np.ndarray, chord: float, pairs=None):
    """``(rows, columns)`` of the links :func:`link_groups` makes (each distinct point to its nearest
    ``LINK_NEIGHBOURS`` within ``chord``, itself included) when every point has at most that many neighbours within
    ``chord``, so the links are all the close pairs (:func:`pairs_within`, or ``pairs`` already found); else
    ``None`` (ask the tree)."""
    pairs = pairs_within(points, chord) if pairs is None else pairs
    if pairs is None:
        return None
    degree = np.bincount(pairs.ravel(), minlength=points.shape[0])
    if degree.size and degree.max() > LINK_NEIGHBOURS:
        return None
    diagonal = np.arange(points.shape[0])
    return np.concatenate((diagonal, pairs[:, 0])), np.concatenate((diagonal, pairs[:, 1]))


#: The close pairs of the last state looked at (:func:`close_pairs`): an accepted state's collapse check, the next
#: step's merge check and its step bound all look at the same array, so the pairs are found once per step.
_pairs_memo = ArrayMemo()
#: :func:`close_pairs` finds at least the pairs within this chord (that of :data:`TIGHT_RADIUS`), so the collapse
#: check's pairs also serve the merge check and the step bound.
SHARED_CHORD = 2 * math.sin(TIGHT_RADIUS / 2)


def close_pairs(points: np.ndarray, chord: float, remember: bool = False):
    """:func:`close_pairs_by_sorting` of ``points`` at ``chord``.  With ``remember`` (a run's states, which are never
    changed in place) they are found at least within :data:`SHARED_CHORD` and remembered for the array
    (:class:`meanfield.solvers.memo.ArrayMemo`), so that the next remembering call on it, at this chord or less,
    filters them instead of sorting again."""
    if not remember:
        return close_pairs_by_sorting(points, chord)
    known = _pairs_memo.get(points)
    if known is not None and chord <= known[0] and known[1] is not None:
        pairs = known[1]
    else:
        wide = max(chord, SHARED_CHORD)
        pairs = close_pairs_by_sorting(points, wide)
        _pairs_memo.put(points, (wide, pairs))
        if pairs is None:               # too many candidates at the wide chord: ask at the chord itself
            return close_pairs_by_sorting(points, chord) if wide > chord else None
    i, j = pairs[:, 0], pairs[:, 1]
    return pairs[np.sum((points[i] - points[j]) ** 2, axis=-1) < chord * chord]


def close_pairs_by_sorting(points: np.ndarray, chord: float, candidates: int = SORT_CANDIDATES):
    """Every pair ``(i, j)`` of ``points`` closer than ``chord``, found among the pairs whose first coordinates
    differ by less than ``chord`` (one sort; exact, no pair is missed), as an ``(m, 2)`` array; ``None`` when there
    are more than ``candidates`` such pairs per point (clustered states: the caller asks a tree)."""
    n = points.shape[0]
    columns = [np.ascontiguousarray(points[:, k]) for k in range(points.shape[1])]
    order = np.argsort(columns[0])                    # any order of ties will do
    first = columns[0][order]
    starts = np.nonzero(np.diff(first) < chord)[0]   # a value with no close successor has no close later one
    runs = np.searchsorted(first, first[starts] + chord, side="left") - starts - 1
    total = int(runs.sum())
    if total > candidates * n:
        return None
    if total == 0:
        return np.zeros((0, 2), dtype=np.intp)
    left = np.repeat(starts, runs)
    right = left + 1 + np.arange(total) - np.repeat(np.cumsum(runs) - runs, runs)
    i, j = order[left], order[right]
    for column in columns[1:]:                        # cheap one-coordinate filters before the distance
        near = np.abs(column[i] - column[j]) < chord
        i, j = i[near], j[near]
    close = np.sum((points[i] - points[j]) ** 2, axis=-1) < chord * chord
    return np.stack((i[close], j[close]), axis=-1)


def apart_by_sorting(points: np.ndarray, chord: float, remember: bool = False) -> bool:
    """Whether every pair of ``points`` is certainly at least ``chord`` apart (:func:`close_pairs_by_sorting`);
    ``False`` also when there are too many candidate pairs to decide so: the caller then asks the tree.  At n = 1e6
    tokens on S^2 this costs about 0.2 s against 2.3 s for building and querying a k-d tree."""
    pairs = close_pairs(points, chord, remember)
    return pairs is not None and pairs.shape[0] == 0


def _all_apart(points: np.ndarray, chord: float) -> bool:
    """Whether every pair of the (few) points is at least ``chord`` apart (the tree's common case, directly)."""
    gaps = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)
    np.fill_diagonal(gaps, np.inf)
    return bool(gaps.min() >= chord)


def _components(rows: np.ndarray, columns: np.ndarray, size: int) -> tuple[int, np.ndarray]:
    """Connected components of the undirected graph with edges ``(rows[i], columns[i])``."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(rows.size), (rows, columns)), shape=(size, size))
    return connected_components(graph, directed=False)


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


def merge_points(points: np.ndarray, weights: np.ndarray, labels: np.ndarray, count: int):
    """Per group: summed weight, and the weighted mean direction as a unit vector (the plain mean for a
    massless group, e.g. Lagrangian nodes where the initial density vanishes)."""
    masses = np.bincount(labels, weights, minlength=count)
    massless = (masses <= 0)[labels]
    factor = np.where(massless, 1.0, weights)
    sums = np.stack([np.bincount(labels, factor * points[:, i], minlength=count)
                     for i in range(points.shape[1])], axis=-1)
    return sums / np.linalg.norm(sums, axis=-1, keepdims=True), masses


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
                 dim: int | None = None, counter=None, cells: int | None = None):
        self.beta, self.merge_distance, self.min_mass = beta, merge_distance, min_mass
        #: the energy of the groups: points, or zonal rings on S^{dim-1} given as (cos th, sin th) (``dim``)
        self.dynamics = PointDynamics(beta, "sa", dim)
        self.merges: list[tuple[float, float, float, int]] = []
        #: ``counter(scheme, state, record)``: the clusters of a state (``record``: its frame, or ``None``) by the
        #: package's one definition (:mod:`meanfield.cluster_detection`); default: the scheme's atoms at ``cells``
        self.counter = counter if counter is not None else self._atom_clusters
        self.cells = cells

    def _atom_clusters(self, scheme, state, record):
        from meanfield.cluster_detection import clusters_of_atoms

        return clusters_of_atoms(scheme.points(state), scheme.weights, cells=self.cells, min_mass=self.min_mass)

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
        """The bookkeeping's settings (``cluster_cells``: the resolution atoms were counted at, 0 for a grid's own)."""
        return {"merge_distance": self.merge_distance, "min_cluster_mass": self.min_mass,
                "cluster_cells": int(self.cells or 0)}

    def variables(self) -> dict:
        """``merge_time(merge)``, ``merge_mass_a``, ``merge_mass_b``, ``clusters_after_merge``."""
        merges = np.array(self.merges, dtype=float).reshape(-1, 4)
        attrs = {"definition": f"first time two cluster centres come within {self.merge_distance:g} rad"}
        return {"merge_time": ("merge", merges[:, 0], dict(attrs, long_name="time of the merge")),
                "merge_mass_a": ("merge", merges[:, 1], {"long_name": "mass of the first merging cluster"}),
                "merge_mass_b": ("merge", merges[:, 2], {"long_name": "mass of the second merging cluster"}),
                "clusters_after_merge": ("merge", merges[:, 3].astype(int),
                                         {"long_name": "number of clusters after the merge"})}
