"""Cluster identities and events between states (meanfield/cluster_lineage.py, MATH.md §10)."""

import math

import numpy as np
import pytest

from meanfield.cluster_detection import Clusters, clusters_of_atoms
from meanfield.cluster_lineage import COUNT_CHANGE, ClusterLineage, destinations
from meanfield.errors import InputError


def _clusters(labels, weights=None):
    """Clusters labelled on the given places, each one's top its first place (centres and the per-cluster numbers do
    not matter here)."""
    labels = np.asarray(labels)
    weights = np.full(labels.size, 1.0 / labels.size) if weights is None else np.asarray(weights, dtype=float)
    count = int(labels.max(initial=-1)) + 1
    masses = np.bincount(labels[labels >= 0], weights[labels >= 0], minlength=count)
    tops = np.array([int(np.flatnonzero(labels == c)[0]) for c in range(count)], dtype=np.intp)   # first place
    return Clusters(np.zeros((count, 2)), masses, np.ones(count), np.ones(count),
                    np.bincount(labels[labels >= 0], minlength=count), labels, 1.0, tops)


def test_ids_follow_the_mass_and_a_merge_keeps_the_heavier_id():
    first = _clusters([0, 0, 0, 1, 1, 2, 2, -1])          # masses 3/8, 2/8, 2/8
    lineage = ClusterLineage(first)
    assert lineage.ids.tolist() == [0, 1, 2]
    # same places, clusters renumbered by the detector (heaviest first): ids follow the mass, not the order
    moved = _clusters([1, 1, 1, 0, 0, 2, 2, -1], [0.1, 0.1, 0.1, 0.2, 0.2, 0.05, 0.05, 0.2])
    assert destinations(first, moved).tolist() == [1, 0, 2]
    assert lineage.advance(moved, lambda change: 1.0) == [] and lineage.ids.tolist() == [1, 0, 2]
    # clusters 1 and 2 (ids 0 and 2, masses 0.3 and 0.1) become one: a merge naming both, the heavier one's id
    # survives
    merged = _clusters([0, 0, 0, 1, 1, 0, 0, -1], [0.1, 0.1, 0.1, 0.2, 0.2, 0.05, 0.05, 0.2])
    events = lineage.advance(merged, lambda change: 2.5)
    assert [(e.kind, e.id_a, e.id_b, e.count_after, e.time) for e in events] == [("merge", 0, 2, 2, 2.5)]
    assert events[0].mass_a == pytest.approx(0.3) and events[0].mass_b == pytest.approx(0.1)
    assert lineage.ids.tolist() == [0, 1]


def test_formation_and_dissolution_get_new_ids_and_keep_the_count_in_step():
    lineage = ClusterLineage(_clusters([-1] * 6))
    assert lineage.ids.size == 0
    formed = _clusters([0, 0, -1, -1, 1, 1])
    events = lineage.advance(formed, lambda change: 3.0 - change.formed)     # cluster 1 forms first
    assert [(e.kind, e.id_a, e.count_after) for e in events] == [("formation", 0, 1), ("formation", 1, 2)]
    assert [e.time for e in events] == [2.0, 3.0]                 # time order; ids numbered in that order
    assert lineage.ids.tolist() == [1, 0]
    gone = _clusters([0, 0, -1, -1, -1, -1])
    events = lineage.advance(gone, lambda change: 4.0)
    assert [(e.kind, e.id_a, e.count_after) for e in events] == [("dissolution", 0, 1)]
    assert lineage.ids.tolist() == [1] and lineage.next_id == 2
    total = sum(COUNT_CHANGE[e.kind] for e in lineage.events)
    assert total == gone.count                                    # the count is the events' sum at every state


def test_a_change_is_seen_exactly_when_its_state_shows_it():
    earlier = _clusters([0, 0, 1, 1, 2, 2])
    between = _clusters([0, 0, 0, 0, 1, 1])                     # 0 and 1 merged, 2 not yet
    later = _clusters([0, 0, 0, 0, 0, 0])
    lineage = ClusterLineage(earlier)
    changes, _ = lineage.changes(later)
    assert sorted(c.kind for c in changes) == ["merge", "merge"]
    located = {(c.a, c.b): c.happened(earlier, between) for c in changes}
    assert located == {(0, 1): True, (0, 2): False}


def test_places_must_be_the_same():
    with pytest.raises(InputError, match="same places"):
        destinations(_clusters([0, 0, 1]), _clusters([0, 0, 1, 1]))


def _two_point_count(d: float, masses, beta: float) -> int:
    """The observable's count for point masses at 0 and ``d`` on the circle, computed directly (MATH.md §10): the
    field on 20000 nodes, its maxima, and the lower one's prominence over the saddle and exact concentration."""
    theta = 2 * math.pi * np.arange(20000) / 20000
    field = masses[0] * np.exp(beta * (np.cos(theta) - 1)) + masses[1] * np.exp(beta * (np.cos(theta - d) - 1))
    peaks = np.flatnonzero((field > np.roll(field, 1)) & (field >= np.roll(field, -1)))
    if peaks.size < 2:
        return 1
    low, high = sorted(peaks, key=lambda i: field[i])
    span = np.arange(min(low, high), max(low, high) + 1)
    saddle = max(field[span].min(), field[np.setdiff1d(np.arange(theta.size), span[1:-1])].min())
    t = theta[low]
    second = sum(m * beta * (beta * math.sin(t - c) ** 2 - math.cos(t - c)) * math.exp(beta * (math.cos(t - c) - 1))
                 for m, c in zip(masses, (0.0, d)))
    stands = 1 - saddle / field[low] >= 0.5 or -second / (beta * field[low]) >= 0.25
    return 2 if stands else 1


def test_two_points_drawn_together_are_one_merge_of_the_observable():
    """Two weighted points on the circle at beta = 9 moved towards each other by hand: the lineage of their
    observable clusters records one merge, at the separation where a direct evaluation of the definition on a fine
    grid stops counting two (within the 0.025 rad steps of the separation)."""
    beta, masses = 9.0, np.array([0.6, 0.4])
    separations = np.linspace(1.5, 0.05, 60)
    states = [clusters_of_atoms(np.array([0.0, d]), masses, beta=beta) for d in separations]
    lineage = ClusterLineage(states[0])
    for index, state in enumerate(states[1:], start=1):
        lineage.advance(state, lambda change, index=index: float(separations[index]))
    assert [(e.kind, e.id_a, e.id_b, e.count_after) for e in lineage.events] == [("merge", 0, 1, 1)]
    direct = [_two_point_count(d, masses, beta) for d in separations]
    assert [state.count for state in states] == direct
    assert direct.index(1) == list(separations).index(lineage.events[0].time)


def test_a_territory_changing_basin_is_no_event():
    """Most of a basin's mass may change sides at once (a weak maximum's territory joins the other hill when the
    saddles' order flips; seen while clusters form) while both maxima stay put: the clusters follow their tops, so
    no event, and each keeps its id (a rule by mass read a merge and a formation at one instant)."""
    earlier = _clusters([0, 0, 0, 0, 1, 1])                      # cluster 0 holds the territory at places 2, 3
    later = _clusters([1, 1, 0, 0, 0, 0])                        # ... which now joins cluster 1's side
    lineage = ClusterLineage(earlier)
    assert lineage.advance(later, lambda change: 1.0) == []
    assert lineage.ids.tolist() == [1, 0]                        # relabelled heaviest first, ids kept


def test_event_masses_are_read_just_before_and_after_the_located_time():
    """A locate that also gives the clusters at the ends of its bracket: a merge's masses are those just before it,
    a formation's just after, each cluster found by the basin holding its top place (the counted states' masses were
    those of the counts, a frame or more away)."""
    weights = np.full(8, 1.0 / 8)
    lineage = ClusterLineage(_clusters([0, 0, 0, 1, 1, -1, -1, -1], weights))          # 3/8 and 2/8
    merged = _clusters([0, 0, 0, 0, 0, 0, 0, -1], weights)                          # later: one cluster of 7/8
    before = _clusters([0, 0, 0, 1, 1, 1, 1, -1], weights)                          # just before: 3/8 and 4/8
    after = _clusters([0, 0, 0, 0, 0, 0, -1, -1], weights)
    event, = lineage.advance(merged, lambda change: (4.0, before, after))
    assert (event.kind, event.time) == ("merge", 4.0)
    assert (event.mass_a, event.mass_b) == (pytest.approx(3 / 8), pytest.approx(4 / 8))
    # a bracket where the two are not yet apart (or none given): the counted state's masses
    lineage = ClusterLineage(_clusters([0, 0, 0, 1, 1, -1, -1, -1], weights))
    event, = lineage.advance(merged, lambda change: (4.0, merged, merged))
    assert (event.mass_a, event.mass_b) == (pytest.approx(3 / 8), pytest.approx(2 / 8))
    # a formation: the mass just after it, not at the next count
    lineage = ClusterLineage(_clusters([-1] * 8, weights))
    grown = _clusters([0, 0, 0, 0, 0, 0, -1, -1], weights)                          # 6/8 when counted
    event, = lineage.advance(grown, lambda change: (1.0, None, _clusters([0, 0, -1, -1, -1, -1, -1, -1], weights)))
    assert event.kind == "formation" and event.mass_a == pytest.approx(2 / 8)
