"""Cluster identities over time: which cluster of one state each cluster of the next one continues (MATH.md §10).

Two states ``mu_0`` (earlier) and ``mu_1`` whose masses sit at the same places (the nodes of a grid, the cells, the
original tokens or nodes of a run) have clusters labelled place by place (:class:`meanfield.cluster_detection.Clusters`,
``labels``).  The *destination* of a cluster ``i`` of ``mu_0`` is the cluster of ``mu_1`` whose basin holds ``i``'s
top place (the place nearest its maximum: the maximum moves continuously up the field, while whole territories of
weak maxima can change basin at once and carry most of a basin's mass with them).  Read cluster by cluster of
``mu_1``:

* one cluster of ``mu_0`` goes there: the same cluster, it keeps its id;
* none: a **formation** (a new id);
* two or more: **merges**; the heaviest keeps its id and each other one merges into it (one event per pair).

A cluster of ``mu_0`` whose destination is ``-1`` **dissolves** (noise spreading it below the thresholds).  Each
event carries the two ids, their masses just before, the time (located between the two states by the caller: on a
run's dense output, :class:`meanfield.solvers.tracking.clusters.ClusterTracker`) and the count just after it, so that the
count of every state is the first state's count plus formations minus merges and dissolutions up to its time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cluster_detection import Clusters
from .errors import require

FORMATION, MERGE, DISSOLUTION = "formation", "merge", "dissolution"
#: How each kind of event changes the count.
COUNT_CHANGE = {FORMATION: +1, MERGE: -1, DISSOLUTION: -1}


@dataclass(frozen=True)
class ClusterEvent:
    """One event (module docstring): ``id_a`` the cluster that formed, survives the merge or dissolves; ``id_b`` the
    one merged into it (``-1`` otherwise); their masses just before (a formation: the new cluster's mass just
    after); ``count_after`` the count once it happened."""

    time: float
    kind: str
    id_a: int
    id_b: int
    mass_a: float
    mass_b: float
    count_after: int


def destinations(earlier: Clusters, later: Clusters) -> np.ndarray:
    """For each cluster of ``earlier``, the cluster of ``later`` whose basin holds its top place (the place nearest
    its maximum, ``Clusters.tops``), or ``-1`` when no cluster's does; both labelled on the same places."""
    require(earlier.labels.shape == later.labels.shape,
            f"cluster identities need the same places in both states (got {earlier.labels.size} and "
            f"{later.labels.size})")
    return later.labels[earlier.tops] if earlier.count else np.zeros(0, dtype=np.intp)


@dataclass(frozen=True)
class Change:
    """An event found between two states, before its time is located: ``kind``, the earlier clusters involved
    (``a``, ``b``; indices into the earlier state), or the later cluster that formed (``formed``) and the rank of
    that formation among the interval's (``rank``: the ``rank``-th new cluster, heaviest first)."""

    kind: str
    a: int = -1
    b: int = -1
    formed: int = -1
    rank: int = 0

    def happened(self, earlier: Clusters, at: Clusters) -> bool:
        """Whether the change has happened by the state whose clusters are ``at`` (between ``earlier`` and the state
        it was found in): the pair shares a destination; the cluster has none; at least ``rank`` clusters of ``at``
        continue none of the earlier ones (clusters forming in one interval are told apart by their number: the
        first to form may hold, for a while, the places of all of them)."""
        going = destinations(earlier, at)
        if self.kind == MERGE:
            return bool(going[self.a] == going[self.b] != -1)
        if self.kind == DISSOLUTION:
            return bool(going[self.a] == -1)
        return at.count - np.unique(going[going >= 0]).size >= self.rank


def _basin(clusters, counted: Clusters, index: int) -> int:
    """The cluster of ``clusters`` whose basin holds the top place of ``counted``'s cluster ``index`` (-1: none, or
    no ``clusters``)."""
    if clusters is None:
        return -1
    return int(clusters.labels[counted.tops[index]])


def mass_at(clusters, counted: Clusters, index: int) -> float:
    """The mass, in the state whose clusters are ``clusters``, of ``counted``'s cluster ``index``: that of the basin
    holding its top place; ``counted``'s own where none does (or no ``clusters`` is given)."""
    basin = _basin(clusters, counted, index)
    return float(clusters.masses[basin] if basin >= 0 else counted.masses[index])


def _same_basin(clusters, counted: Clusters, a: int, b: int) -> bool:
    """Whether ``counted``'s clusters ``a`` and ``b`` fall in one basin of ``clusters`` (then not yet apart there)."""
    basin = _basin(clusters, counted, a)
    return basin >= 0 and basin == _basin(clusters, counted, b)


class ClusterLineage:
    """The ids of the clusters of successive states and the events between them (module docstring).

    ``ids``: the id of each cluster of the latest state (its order); ``events``: every :class:`ClusterEvent` so far,
    in time order.
    """

    def __init__(self, first: Clusters):
        self.latest = first
        self.ids = np.arange(first.count)
        self.next_id = first.count
        self.events: list[ClusterEvent] = []

    def changes(self, later: Clusters) -> tuple[list[Change], np.ndarray]:
        """The changes from the latest state to ``later`` (unlocated) and the id of each cluster of ``later``
        (``-1`` for the ones that formed, numbered when they are recorded)."""
        earlier = self.latest
        going = destinations(earlier, later)
        found: list[Change] = []
        ids = np.full(later.count, -1)
        for j in range(later.count):                  # heaviest first: the formations' ranks
            sources = np.flatnonzero(going == j)
            if sources.size == 0:
                found.append(Change(FORMATION, formed=j, rank=1 + sum(c.kind == FORMATION for c in found)))
                continue
            keeper = sources[np.argmax(earlier.masses[sources])]
            ids[j] = self.ids[keeper]
            found += [Change(MERGE, int(keeper), int(other)) for other in sources if other != keeper]
        found += [Change(DISSOLUTION, int(i)) for i in np.flatnonzero(going == -1)]
        return found, ids

    def advance(self, later: Clusters, locate) -> list[ClusterEvent]:
        """Move to the state whose clusters are ``later``; ``locate(change)`` gives the time of each change (between
        the two states), or ``(time, before, after)`` with the clusters of the states just before and just after it
        (the ends of the bracket that located it), from which the event's masses are read: each cluster's mass
        there is that of the basin holding its top place (:func:`mass_at`), the counted state's mass where no basin
        holds it.  Returns the new events (also appended to ``events``)."""
        earlier = self.latest
        found, ids = self.changes(later)
        located = []
        for index, change in enumerate(found):
            where = locate(change)
            time, before, after = (where if isinstance(where, tuple) else (where, None, None))
            located.append((float(time), index, change, before, after))
        located.sort(key=lambda item: item[:2])
        count, new = earlier.count, []
        for time, _, change, before, after in located:
            count += COUNT_CHANGE[change.kind]
            if change.kind == FORMATION:
                ids[change.formed] = self.next_id
                self.next_id += 1
                event = ClusterEvent(time, FORMATION, int(ids[change.formed]), -1,
                                     mass_at(after, later, change.formed), 0.0, count)
            else:
                b = int(self.ids[change.b]) if change.kind == MERGE else -1
                masses = (mass_at(before, earlier, change.a),
                          mass_at(before, earlier, change.b) if change.kind == MERGE else 0.0)
                if change.kind == MERGE and _same_basin(before, earlier, change.a, change.b):
                    masses = (float(earlier.masses[change.a]), float(earlier.masses[change.b]))
                event = ClusterEvent(time, change.kind, int(self.ids[change.a]), b, *masses, count)
            new.append(event)
        self.events += new
        self.latest, self.ids = later, ids
        return new
