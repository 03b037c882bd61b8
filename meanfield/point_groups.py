"""Points on the unit sphere linked into groups, and a group merged into one weighted point (MATH.md §5).

Two points are *linked* when their chord distance is below ``2 sin(radius / 2)`` (angle ``radius``); a *group* is
a connected component of the links (:func:`link_groups`: each distinct point linked to at most
:data:`LINK_NEIGHBOURS` neighbours, identical points first made one, then groups whose centres are within the
radius joined until none are).  :func:`merge_points` replaces each group by one point carrying its summed weight
at its weighted mean direction: exact for coincident nodes or tokens, which move together for ever (MATH.md §5,
"Merging coincident nodes is exact").  The solvers collapse coincident nodes and follow merges with these
(:mod:`meanfield.solvers.tracking.clusters`), and :mod:`meanfield.cluster_detection` uses the groups as the cells of
S^{d-1}, ``d >= 4`` (``meanfield`` does not import ``solvers``, DESIGN.md *Layout*).

Cost when nothing happens.  Every check starts from the pairs closer than a chord (:func:`close_pairs`: one sort
of the first coordinate, then one-coordinate filters, no tree unless the points are clustered); a run's accepted
state is searched once for its collapse check, the next step's merge check and its step bound
(:class:`meanfield.memo.ArrayMemo`, asked by ``remember``), and with no close pair each check ends there.
"""

from __future__ import annotations

import math

import numpy as np

from .geometry import row_norms
from .memo import ArrayMemo

#: The tight radius (rad) of the merge bookkeeping (:class:`meanfield.solvers.tracking.clusters.ClusterTracker`): a cluster
#: is followed for merges once its nodes are linked within it; :data:`SHARED_CHORD` is its chord.
TIGHT_RADIUS = 1e-6
#: Up to this many points, :func:`link_groups` checks the all-apart case by direct distances.
SMALL_GROUP = 64
#: Neighbours each node links to when grouping (bounds the cost when thousands of nodes coincide).
LINK_NEIGHBOURS = 16


def link_groups(points: np.ndarray, radius: float, remember: bool = False, pairs=None) -> tuple[np.ndarray, int]:
    """Group labels of unit vectors linked at chord distance < ``2 sin(radius / 2)`` (see the module docstring).
    ``remember``: a run's state, never changed in place, whose close pairs later checks may reuse (:func:`close_pairs`);
    ``pairs``: the pairs closer than that chord when the caller has them (:func:`close_pairs_by_sorting`)."""
    from scipy.spatial import cKDTree

    if points.shape[0] < 2:
        return np.zeros(points.shape[0], dtype=int), points.shape[0]
    chord = 2 * math.sin(radius / 2)
    if points.shape[0] <= SMALL_GROUP and _all_apart(points, chord):   # a few point clusters: no tree needed
        return np.arange(points.shape[0]), points.shape[0]
    close = pairs if pairs is not None else close_pairs(points, chord, remember)   # in O(n log n), no tree
    if close is None:
        close = pairs_within(points, chord)
    if close is None:
        nearest, _ = cKDTree(points).query(points, k=2)
        apart = bool(nearest[:, 1].min() >= chord)
    else:
        apart = close.shape[0] == 0
    if apart:                                        # every node is its own group (the common case)
        return np.arange(points.shape[0]), points.shape[0]
    points, positions = unique_rows(points)          # identical positions first
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
        pairs = close_pairs_by_sorting(centres, chord)
        pairs = pairs_within(centres, chord) if pairs is None else pairs
        if pairs is None:
            pairs = cKDTree(centres).query_pairs(chord, output_type="ndarray")
        if pairs.shape[0] == 0:
            break
        joined, outer = _components(pairs[:, 0], pairs[:, 1], count)
        if joined == count:
            break
        labels, count = outer[labels], joined
    return labels[positions], count



def kept_groups(points: np.ndarray, labels: np.ndarray, count: int, radius: float) -> np.ndarray | None:
    """The labels :func:`link_groups` gives ``points`` at ``radius`` when the groups ``labels`` (``count`` of them,
    fewer than the points; e.g. the previous frame's) still hold, numbered as it numbers them; ``None`` when that
    is not proved (the caller then links afresh).  Proved, in O(n log n), when every group lies within a quarter
    chord of its first member (so all its pairs are linked, and the centres of any parts the neighbour links left
    apart are joined) and each two groups' first members are farther apart than a chord plus twice the two
    quarter-chord radii (so no pair across is linked).  :func:`link_groups` numbers a group by the
    lexicographically smallest of its points (the order of ``numpy.unique``), and so does this."""
    n = points.shape[0]
    if n < 2 or count >= n or labels.shape != (n,):
        return None
    chord = 2 * math.sin(radius / 2)
    first = np.full(count, n)
    np.minimum.at(first, labels, np.arange(n))
    if first.max() >= n:                            # an empty label: not a grouping of these points
        return None
    anchors = points[first]
    spread = np.zeros(count)
    np.maximum.at(spread, labels, row_norms(points - anchors[labels]))
    if not spread.max() < chord / 4 * (1 - 1e-9):
        return None
    reach = chord * (1 + 1e-9) + 2 * spread.max() * 2
    pairs = close_pairs_by_sorting(anchors, reach, candidates=count) if count > 1 else np.zeros((0, 2), np.intp)
    if pairs is None:
        return None
    a, b = pairs[:, 0], pairs[:, 1]
    gaps = row_norms(anchors[a] - anchors[b])
    if np.any(gaps < chord * (1 + 1e-9) + 2 * (spread[a] + spread[b])):
        return None
    order = np.lexsort(points.T[::-1])
    _, smallest = np.unique(labels[order], return_index=True)     # each group's first place in that order
    number = np.empty(count, dtype=np.intp)
    number[np.argsort(smallest)] = np.arange(count)
    return number[labels]

def unique_rows(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(points, axis=0, return_inverse=True)`` (the distinct rows in lexicographic order, and each
    row's index among them) by one lexicographic sort."""
    order = np.lexsort(points.T[::-1])
    ordered = points[order]
    new = np.ones(ordered.shape[0], dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    positions = np.empty(ordered.shape[0], dtype=np.intp)
    positions[order] = np.cumsum(new) - 1
    return ordered[new], positions

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
    (:class:`meanfield.memo.ArrayMemo`), so that the next remembering call on it, at this chord or less,
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


def fewest_groups(points: np.ndarray, radius: float, pairs=None) -> int:
    """A lower bound on the groups :func:`link_groups` makes of ``points`` at ``radius``, in one sort: each link
    joins at most two groups, so there are at least ``n`` minus the pairs closer than the chord (and groups whose
    centres are close only join groups already counted); ``1`` (no bound) when the pairs are too many to list by
    sorting.  ``pairs``: :func:`close_pairs_by_sorting` at that chord, when the caller has it."""
    if points.shape[0] < 2:
        return points.shape[0]
    pairs = close_pairs_by_sorting(points, 2 * math.sin(radius / 2)) if pairs is None else pairs
    return 1 if pairs is None else max(1, points.shape[0] - pairs.shape[0])


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


def merge_points(points: np.ndarray, weights: np.ndarray, labels: np.ndarray, count: int):
    """Per group: summed weight, and the weighted mean direction as a unit vector (the plain mean for a
    massless group, e.g. Lagrangian nodes where the initial density vanishes): one point for the group's coincident
    nodes (MATH.md §5)."""
    masses = np.bincount(labels, weights, minlength=count)
    massless = (masses <= 0)[labels]
    factor = np.where(massless, 1.0, weights)
    sums = np.stack([np.bincount(labels, factor * points[:, i], minlength=count)
                     for i in range(points.shape[1])], axis=-1)
    return sums / np.linalg.norm(sums, axis=-1, keepdims=True), masses
