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

Bookkeeping (:class:`ClusterTracker`, run by every density, Lagrangian and particle scheme; one definition used by
the solvers and the theory of :mod:`meanfield.cluster_dynamics`):

* the clusters of the state at every saved frame (the steps between are kept for their dense output; a step cut by
  frames taken from dense output is kept as its pieces, :class:`meanfield.solvers.steppers.steppers.StepPiece`), and, for
  Lagrangian nodes and particles whose collapse renumbers the nodes, before every collapse that merges
  (``will_merge`` of the scheme), by the package's one definition
  (:mod:`meanfield.cluster_detection`: the basins of the maxima of the attention field ``K * mu`` that stand out,
  holding at least ``min_mass`` = :data:`MIN_CLUSTER_MASS` = 1e-2 of the mass; MATH.md §10), read from the
  variables its frame would save (:class:`StateClusters`; ``cluster_variables`` of the scheme);
* *identities and events* (:mod:`meanfield.cluster_lineage`): each cluster continues the one of the previous count
  whose top place (the place nearest its maximum) its basin holds; a formation, a merge (two become one: the heavier
  keeps its id) or a dissolution
  found between two counts is located first among the steps between (bisection over their ends), then inside its
  step by bisection on the stepper's dense output (Hermite steps with the next step's first slope; the straight line
  between the step's ends for a stepper with a linear part, or a step whose end slope is unknown), the observable
  applied to each state tried, to 1e-10 of the time; its masses are read at the ends of that bracket (just before a
  merge or dissolution, just after a formation).  So ``cluster_count(time)`` is the first frame's count plus the
  events' changes up to each frame, and a merge is dated when the count falls;
* ``cluster_energy(time)`` (schemes with points): the point-cluster energy of MATH.md §5 of the groups of atoms
  linked within ``merge_distance`` = 1e-3 rad (``exp(-beta)`` scaled, like ``energy``), the value the energy takes
  on a plateau; it is NaN while more than :data:`MAX_ENERGY_ATOMS` atoms or :data:`MAX_ENERGY_GROUPS` groups remain
  (clusters not yet collapsed; the grouping and an O(K^2) sum not paid).  A frame whose points keep the last
  frame's groups, provably (:func:`meanfield.point_groups.kept_groups`: each group within a quarter chord of one
  member, the groups farther apart than a chord), reuses them, with the labels :func:`link_groups` would give.

Cost: one count per saved frame (and per merging collapse; centres not refined between sampling nodes but at
frames) and about 35 per event; counting costs 9.5 right-hand sides on the circle's finite volumes at
N = 512 and 0.7 for S^2 particles (``meanfield validate bench-clusters``); the steps kept for a later count hold at
most :attr:`ClusterTracker.PENDING_BYTES` (counted early beyond that).

Step bound after collapse (:func:`closing_rate`): two distinct nodes that are about to coincide
contract at the rate ``|v_i - v_j| / |x_i - x_j|`` (~1 inside a cluster); an explicit step must
resolve it, or the error controller lets the pair hover at the tolerance instead of merging.  Only
pairs closer than :func:`closing_distance` (``100 rtol``, at least 1e-6 rad) can hover; farther pairs move
relative to each other by far more than the tolerance and the error control resolves them.

Cost when nothing happens.  Every check is vectorised and starts from the pairs closer than a chord
(:func:`meanfield.point_groups.close_pairs`: one sort of the first coordinate, then one-coordinate filters, no tree
unless the state is clustered), found once per accepted state for the collapse check and the next step's bound (:class:`meanfield.memo.ArrayMemo`); with no close pair each check ends there.
At n = 1e6 tokens on S^2 that is about 0.15 s per step against 3 s of right-hand sides
(``meanfield validate bench-particles``, table 8).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.cluster_detection import MIN_MASS
from meanfield.cluster_dynamics import MERGE_DISTANCE, PointDynamics
from meanfield.cluster_lineage import FORMATION, MERGE, ClusterLineage
from meanfield.errors import require
from meanfield.geometry import row_norms
from meanfield.limits import check_option
from meanfield.point_groups import (TIGHT_RADIUS, close_pairs, close_pairs_by_sorting, fewest_groups, kept_groups,
                                   link_groups, merge_points)

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
        self._grouped = None          # (points, labels, count) of the last grouping (:meth:`would_merge`)

    @property
    def enabled(self) -> bool:
        return self.tol > 0

    def regroup(self, labels: np.ndarray) -> None:
        """Old active node ``i`` became new active node ``labels[i]``."""
        self.owner = labels[self.owner]
        self.merged = True

    def _groups(self, points: np.ndarray) -> tuple:
        """The groups of ``points`` within ``tol``, kept for the same array (asked first by :meth:`would_merge`)."""
        owner = points if points.base is None else points.base       # x[0] of a particle state is a new view
        if self._grouped is None or self._grouped[0] is not owner or self._grouped[1].shape[0] != points.shape[0]:
            self._grouped = (owner, *link_groups(points, self.tol, remember=True))
        return self._grouped[1:]

    def would_merge(self, points: np.ndarray) -> bool:
        """Whether :meth:`collapse_points` of these points merges any (the grouping is kept for it)."""
        return self.enabled and self._groups(points)[1] < points.shape[0]

    def collapse_points(self, points: np.ndarray, weights: np.ndarray):
        """``(points, weights)`` after merging the nodes within ``tol``; the same objects if none are."""
        labels, count = self._groups(points)
        self._grouped = None
        if count == points.shape[0]:
            return points, weights
        self.regroup(labels)
        return merge_points(points, weights, labels, count)


class StateClusters:
    """The clusters of a scheme's states by the package's one definition (MATH.md §10): the variables a state's frame
    would save (the scheme's ``cluster_variables``), with its coordinates and static variables, read as a run file's
    frame is read (:func:`meanfield.cluster_detection.clusters_of_variables`), so the count a run records is the
    count of its saved frame."""

    def __init__(self, scheme, beta: float, min_mass: float):
        self.fixed = {name: spec[1] for name, spec in {**scheme.coords(), **scheme.static_variables()}.items()}
        self.attrs = {"geometry": getattr(scheme, "geometry", None), "beta": beta, "dim": scheme.model.dim}
        self.min_mass = min_mass

    def __call__(self, scheme, state, record: dict | None = None, refine: bool = False):
        from meanfield.cluster_detection import clusters_of_variables

        record = dict(scheme.cluster_variables(state) if record is None else record)
        if "positions" in record:         # a dense-output state lies off the sphere by the step's error
            positions = np.asarray(record["positions"], dtype=float)
            record["positions"] = positions / row_norms(positions, keepdims=True)
        return clusters_of_variables(lambda name: record[name] if name in record else self.fixed.get(name),
                                     self.attrs, min_mass=self.min_mass, refine=refine)


def dense_state(stepper, before, after, fraction: float, step=None, end_slope=None):
    """The state at ``fraction`` of a step (``step``: the stepper's :attr:`last_step` then, ``end_slope`` the
    right-hand side at its end when known; default its last step): the stepper's dense output, or, where it has none
    (a linear part; a Hermite extension of an earlier step whose end slope is unknown), the straight line between
    the step's ends."""
    try:
        return stepper.dense(fraction, step, end_slope)
    except (RuntimeError, AttributeError, TypeError):
        return before + fraction * (after - before)


def _same(a, b) -> bool:
    """The same state: the same array, or equal values (a post-step hook may copy a state it leaves unchanged)."""
    return a is b or (a.shape == b.shape and bool(np.array_equal(a, b)))


def _new_bytes(item, seen: set) -> int:
    """Memory held by the arrays in a (nested) tuple or list that are not in ``seen`` (their ids, which it gains): a
    step's start is the previous step's end, and the stepper's record of a step holds both again."""
    total, items = 0, [item]
    while items:
        part = items.pop()
        if isinstance(part, np.ndarray):
            if id(part) not in seen:
                seen.add(id(part))
                total += part.nbytes
        elif isinstance(part, (tuple, list)):
            items.extend(part)
    return total


#: What a merge is, recorded with ``merge_time``.
MERGE_DEFINITION = "the attention field's clusters (MATH.md §10): two become one; located on the stepper's dense output"
#: ``(name, dimension, Event field, dtype, long_name, extra attributes)`` of each event and merge variable.
EVENT_VARIABLES = (("event_time", "event", "time", float, "time of the cluster event", {}),
                   ("event_kind", "event", "kind", str, "formation, merge or dissolution", {}),
                   ("event_cluster_a", "event", "id_a", int,
                    "id of the cluster that formed, survives the merge or dissolves", {}),
                   ("event_cluster_b", "event", "id_b", int, "id of the cluster merged into cluster a (-1: none)", {}),
                   ("event_mass_a", "event", "mass_a", float,
                    "mass of cluster a just before the event (formation: just after)", {}),
                   ("event_mass_b", "event", "mass_b", float, "mass of cluster b just before the merge", {}),
                   ("clusters_after_event", "event", "count_after", int, "number of clusters after the event", {}),
                   ("merge_time", "merge", "time", float, "time of the merge", {"definition": MERGE_DEFINITION}),
                   ("merge_mass_a", "merge", "mass_a", float, "mass of the surviving cluster", {}),
                   ("merge_mass_b", "merge", "mass_b", float, "mass of the cluster merged into it", {}),
                   ("clusters_after_merge", "merge", "count_after", int, "number of clusters after the merge", {}))


class ClusterTracker(Tracker):
    """Cluster count, identities, events and point-cluster energy of a run (module docstring).

    Works with every scheme that has a ``model`` and ``cluster_variables(state)`` (the variables its clusters
    read: a density on the scheme's grid or cells, or the positions of its atoms).  A tracker of the run loop
    (:mod:`meanfield.solvers.tracking.trackers`): ``after_step`` follows the clusters from step to step
    (:class:`meanfield.cluster_lineage.ClusterLineage`) and locates each event inside the step, ``frame`` adds
    ``cluster_count`` and ``cluster_energy``, ``variables()`` returns the Dataset's events, merges and per-frame
    cluster table and ``attrs()`` the settings and the formation time.
    """

    #: Steps held for a later count at most this much memory (bytes; each array once): at n = 1e6 tokens on S^2 a
    #: dopri5 step holds 190 MB (its end and seven stage slopes), so about five steps are counted at once.
    PENDING_BYTES = 2 ** 30
    #: Count after every step instead of at frames and before merging collapses (the reference the tests compare the
    #: lazy count with).
    every_step = False

    def __init__(self, beta: float, merge_distance: float = MERGE_DISTANCE, min_mass: float = MIN_CLUSTER_MASS,
                 dim: int | None = None, energy: bool = True):
        self.beta, self.merge_distance, self.min_mass = beta, merge_distance, min_mass
        #: the energy of the groups: points, or zonal rings on S^{dim-1} given as (cos th, sin th) (``dim``)
        self.dynamics = PointDynamics(beta, "sa", dim) if energy else None
        self.lineage = None
        self.view = None
        self.t = math.nan
        self.table: list = []            # (ids, masses, centres) of every saved frame
        self._continuing = False
        self._refined = False            # whether the latest count refined its centres (a saved frame's did)
        self._resumed = None             # (ids of the last frame, next id, formation time) of a continued file
        self.pending: list = []          # steps not counted yet: (before, t0, after, t1, the stepper's last_step)
        self._pending_bytes = 0
        self.stepper = None
        self._energy_groups = None       # (labels, count) of the last frame's energy groups (:meth:`groups`)

    def resume(self, source) -> None:
        """An exact restart keeps the ids of the file's last frame, its next id and its formation time."""
        if "cluster_id" not in source:
            return
        ids = np.asarray(source["cluster_id"].values)
        last = ids[-1][ids[-1] >= 0]
        numbered = np.concatenate([ids.ravel(), np.asarray(source["event_cluster_a"].values).ravel()
                                   if "event_cluster_a" in source else np.zeros(0, dtype=int)])
        self._resumed = (last, int(numbered.max(initial=-1)) + 1,
                         float(source.attrs.get("formation_time", math.nan)))
    def start(self, scheme, stepper, state, t: float, schedule) -> None:
        """The clusters of the first state; a run continued from where this tracker stopped (Mix-LN's second leg,
        whose first frame the loop drops) keeps its lineage."""
        self.view = StateClusters(scheme, self.beta, self.min_mass)
        self.stepper, self.pending, self._pending_bytes, self._scheme = stepper, [], 0, scheme
        self._held: set = set()          # ids of the arrays the pending steps hold (counted once)
        #: count at saved frames (the steps between kept for their dense output), and, when a collapse changes how a
        #: state is read (merged nodes), before each collapse that merges (:meth:`post_step`)
        self.reads_state_alone = bool(getattr(scheme, "clusters_read_state_alone", True))
        self._continuing = self.lineage is not None and t == self.t
        self._leg_rows, self._unrowed = len(self.table), 0     # the table's rows before this leg; see finish
        if not self._continuing:
            self.lineage, self.t = ClusterLineage(self.view(scheme, state, refine=True)), float(t)
            self._refined = True
            if self._resumed is not None and self._resumed[0].size == self.lineage.ids.size:
                self.lineage.ids, self.lineage.next_id = self._resumed[0].copy(), self._resumed[1]

    def after_step(self, scheme, stepper, before, t0: float, after, t1: float) -> None:
        step = getattr(stepper, "last_step", None)
        self.pending.append((before, t0, after, t1, step))
        self._pending_bytes += _new_bytes((before, after, step), self._held)
        if self.every_step or self._pending_bytes > self.PENDING_BYTES:
            self._settle(scheme, after)

    def post_step(self, scheme, stepper, state):
        """Count the steps held before a collapse that merges nodes (run before the loop's collapse): the states
        held are read through the node map it changes."""
        if self.pending and not self.reads_state_alone and scheme.will_merge(state):
            self._settle(scheme, state)
        return state

    def _end_slope(self, scheme, index: int, steps: list, current):
        """The right-hand side at the end of pending step ``index`` (before the post-step map: at the stepper's
        ``new``) for its Hermite extension: the next step's first stage when that step started from this one's end
        unmoved, the scheme's rhs when nothing changed the scheme since (the last step, ``current`` still its end),
        else unknown (``None``)."""
        before, t0, after, t1, step = steps[index]
        if step is None:
            return None
        if index + 1 < len(steps):
            following = steps[index + 1]
            unmoved = following[4] is not None and _same(step[4], after) and _same(following[0], after)
            return following[4][3][0] if unmoved else None
        return scheme.rhs(step[4], t1) if current is not None and _same(current, after) else None

    def _settle(self, scheme, current=None, refine: bool = False) -> None:
        """Count the state at the end of the pending steps (its centres refined with ``refine``: a saved frame's) and
        locate each event found since the last count: first the step whose end shows it (bisection over the steps'
        ends), then the time inside it (bisection on that step's dense output), the observable applied to each
        state tried."""
        if not self.pending:
            return
        steps, self.pending, self._pending_bytes, self._held = self.pending, [], 0, set()
        earlier = self.lineage.latest
        later = self.view(scheme, steps[-1][2], refine=refine)
        self._refined = refine
        ends = {len(steps) - 1: later}
        inside: dict = {}                                       # (step, fraction) -> clusters, shared by the changes

        def end(index):
            if index not in ends:
                ends[index] = self.view(scheme, steps[index][2])
            return ends[index]

        def locate(change):
            low, high = -1, len(steps) - 1                  # the end of `high` shows the change, that of `low` not
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (low, middle) if change.happened(earlier, end(middle)) else (middle, high)
            before, t0, after, t1, step = steps[high]
            inside[(high, 1.0)] = end(high)

            def at(fraction):
                if (high, fraction) not in inside:
                    if ("slope", high) not in inside:
                        inside[("slope", high)] = self._end_slope(scheme, high, steps, current)
                    state = dense_state(self.stepper, before, after, fraction, step, inside[("slope", high)])
                    inside[(high, fraction)] = self.view(scheme, state)
                return inside[(high, fraction)]

            first, last = 0.0, 1.0
            while (last - first) * (t1 - t0) > 1e-10 * max(1.0, abs(t1)) and last - first > 1e-15:
                middle = 0.5 * (first + last)
                first, last = (first, middle) if change.happened(earlier, at(middle)) else (middle, last)
            before = at(first) if first > 0.0 else (end(high - 1) if high > 0 else earlier)
            return t0 + last * (t1 - t0), before, at(last)     # the event's masses are read just before and after

        self.lineage.advance(later, locate)
        self.t = float(steps[-1][3])

    def finish(self, record) -> None:
        """Count what the run stepped since its last frame; forget the row of a frame the run did not keep (Ctrl-C or
        SIGTERM between this tracker's row and the run loop's record of the frame)."""
        if self.view is not None:
            self._settle(self._scheme, getattr(record, "state", None))
        frames = getattr(record, "frames", None)
        if frames is not None:
            del self.table[self._leg_rows + max(0, len(frames) - self._unrowed):]

    def groups(self, points: np.ndarray, weights: np.ndarray, pairs=None):
        """Centres and masses of the groups linked at ``merge_distance`` (``pairs``: the points' pairs closer than its
        chord, when known): the last frame's groups when they provably still hold
        (:func:`meanfield.point_groups.kept_groups`, the same labels), else linked afresh."""
        last = self._energy_groups
        labels = kept_groups(points, *last, self.merge_distance) if last is not None else None
        count = last[1] if labels is not None else None
        if labels is None:
            labels, count = link_groups(points, self.merge_distance, pairs=pairs)
        self._energy_groups = (labels, count)
        return merge_points(points, weights, labels, count)

    def frame(self, scheme, state, record: dict) -> dict:
        """``cluster_count``: the clusters of the latest state (:mod:`meanfield.cluster_detection`), the frame's;
        ``cluster_energy``: the point energy (MATH.md §5) of the groups linked within ``merge_distance``, once at
        most :data:`MAX_ENERGY_ATOMS` atoms remain and they make at most :data:`MAX_ENERGY_GROUPS` groups."""
        self._settle(scheme, state, refine=True)
        latest = self.lineage.latest
        if self._continuing:
            self._continuing = False
            self._unrowed = 1             # a continued run's first frame is its file's last: no row of its own
        else:                             # the centres refined between sampling nodes (a step's count does not)
            centres = latest.centres
            if not self._refined:
                refined = self.view(scheme, state, refine=True)
                centres = refined.centres if refined.count == latest.count else centres
            self.table.append((self.lineage.ids.copy(), latest.masses.copy(), centres.copy()))
        found = {"cluster_count": latest.count}
        if self.dynamics is not None:
            energy = math.nan
            # more atoms, or more groups than that certainly (one sort): clusters not collapsed yet, no grouping paid
            points = scheme.points(state) if scheme.weights.size <= MAX_ENERGY_ATOMS else None
            pairs = close_pairs_by_sorting(points, 2 * math.sin(self.merge_distance / 2)) if points is not None else None
            if points is not None and fewest_groups(points, self.merge_distance, pairs) <= MAX_ENERGY_GROUPS:
                centres, masses = self.groups(points, scheme.weights, pairs)
                energy = self.dynamics.energy(centres, masses) if masses.size <= MAX_ENERGY_GROUPS else math.nan
            found["cluster_energy"] = energy
        return found

    def attrs(self) -> dict:
        """The bookkeeping's settings and ``formation_time``: the first formation event's time (NaN: none)."""
        formed = [event.time for event in self.lineage.events if event.kind == FORMATION]
        earlier = self._resumed[2] if self._resumed is not None else math.nan
        return {"merge_distance": self.merge_distance, "min_cluster_mass": self.min_mass,
                "formation_time": earlier if math.isfinite(earlier) else (formed[0] if formed else math.nan)}

    def variables(self) -> dict:
        """The events (``event_time(event)``, ``event_kind``, ``event_cluster_a``/``_b``, ``event_mass_a``/``_b``,
        ``clusters_after_event``), the merges among them (``merge_time(merge)``, ``merge_mass_a``, ``merge_mass_b``,
        ``clusters_after_merge``) and every frame's clusters (``cluster_id(time, cluster)``, ``cluster_mass``,
        ``cluster_centre(time, cluster, centre_component)``; -1 and NaN in unused slots)."""
        events = self.lineage.events
        merges = [event for event in events if event.kind == MERGE]
        found = {name: (dim, np.array([getattr(e, field) for e in (merges if dim == "merge" else events)],
                                      dtype=kind), dict(attrs, long_name=long_name))
                 for name, dim, field, kind, long_name, attrs in EVENT_VARIABLES}
        return {**found, **self._table_variables()}

    def _table_variables(self) -> dict:
        width = max([ids.size for ids, _, _ in self.table] + [1])
        component = max([centres.shape[1] for _, _, centres in self.table if centres.ndim == 2] + [2])
        frames = len(self.table)
        ids, masses = np.full((frames, width), -1), np.full((frames, width), np.nan)
        centres = np.full((frames, width, component), np.nan)
        for row, (frame_ids, frame_masses, frame_centres) in enumerate(self.table):
            ids[row, :frame_ids.size], masses[row, :frame_masses.size] = frame_ids, frame_masses
            centres[row, :frame_ids.size] = frame_centres.reshape(frame_ids.size, component)
        return {"cluster_id": (("time", "cluster"), ids, {"long_name": "cluster id (kept from frame to frame)"}),
                "cluster_mass": (("time", "cluster"), masses, {"long_name": "mass of the cluster's basin"}),
                "cluster_centre": (("time", "cluster", "centre_component"), centres,
                                   {"long_name": "cluster position: the maximum of the attention field (unit "
                                                 "vector; zonal rings: (cos, sin) of the polar angle)"})}
