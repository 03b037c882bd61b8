"""One run loop for every scheme (DESIGN.md): step, save on a time cadence, check, stop.

The loop saves a frame at every multiple of ``save_every`` and at ``t_final``, or
on a log time axis (:func:`log_save_times`); everything else is a tracker
(:mod:`meanfield.solvers.tracking.trackers`).  The validity monitor checks the scheme's validity
(finiteness, positivity, resolution) after every step, and the run stops at the first
failure with the reason in ``stop_reason`` while keeping every frame saved before it.
After every accepted step each tracker sees the step (``after_step``; the merge
bookkeeping of :mod:`meanfield.solvers.tracking.clusters`, the progress bar) and adds to every frame
(``frame``); then a scheme that collapses coincident nodes (``collapse``, MATH.md §5)
may shrink the state (``post_step``), and the stepper restarts from it.  A tracker may
also stop the run at a save time (``at_save``: a steady state).  Ctrl-C stops the run the same way
(``stop_reason = "interrupted ..."``), so the caller can still write the partial
result.  A run that stops early also saves its last valid state as a final frame
(``RunRecord.off_schedule``) when that state is later than the last saved frame, so
nothing computed is lost.  Floating-point overflow inside a step is not an exception
here: the validity check reports it as lost finiteness.  Nor does a run go on for ever: a stepper stops
it on a step within round-off of the clock (:class:`meanfield.solvers.steppers.steppers.StepSizeUnderflow`), and the
:class:`StepBudget` when the steps it still needs to reach ``t_final`` exceed :data:`MAX_STEPS`.

A continued run (:mod:`meanfield.solvers.records.checkpoint`) starts its clock at ``t_start``: its save
times are those of a run from 0 that lie after ``t_start``, so 0 -> 5 -> 10 saves, and
computes, what 0 -> 10 does.
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field

import numpy as np

from meanfield.app import signals
from meanfield.errors import InputError

from ..schemes.contract import conform
from ..steppers.steppers import StopRun
from ..tracking.trackers import Collapse, Progress, SaveSchedule, Tracker, ValidityMonitor

COMPLETED = "completed"
#: Most steps a run may still need to reach its end, projected from its steps (:class:`StepBudget`): 1e15 steps are
#: centuries at any step's cost (10 us at the least), and valid runs stay far below (measured: the 512-cell finite
#: volume staircase to t = 1e9 projects at most 9e10 in its first steps, which then grow by orders of magnitude).
MAX_STEPS = 1e15
#: Steps between two projections of :class:`StepBudget`.
STEP_WINDOW = 1000


@dataclass
class RunRecord:
    """What the loop produced: saved times and frames, and why it stopped."""

    times: list = field(default_factory=list)
    frames: list = field(default_factory=list)
    stop_reason: str = COMPLETED
    t_reached: float = 0.0
    wall_time: float = 0.0
    steps: int = 0
    rejected_steps: int = 0
    state: object = None
    #: the last frame is the last valid state of a run that stopped early, not a save time
    off_schedule: bool = False
    #: the state the stepper stands at when the run ended inside a step (frames from dense output): its restart
    #: record, at the clock ``stepper.state_time``; ``None``: ``state`` itself
    restart_state: object = None


def save_times(t_final: float, save_every: float) -> np.ndarray:
    """``save_every, 2 save_every, ...`` up to ``t_final``, ending exactly at ``t_final``."""
    count = max(1, int(math.floor(t_final / save_every * (1 + 1e-12))))
    times = save_every * np.arange(1, count + 1)
    if times[-1] < t_final * (1 - 1e-12):
        return np.append(times, t_final)
    times[-1] = t_final
    return times


#: First frame of a log time axis (the frames before it say little: nothing has grown yet).
LOG_SAVE_START = 1e-2


def log_save_times(t_final: float, per_decade: int) -> np.ndarray:
    """``10^(j / per_decade)`` from :data:`LOG_SAVE_START` up to ``t_final``, ending exactly at ``t_final``."""
    first = math.ceil(math.log10(LOG_SAVE_START) * per_decade - 1e-9)
    last = math.floor(math.log10(t_final) * per_decade + 1e-9)
    times = 10.0 ** (np.arange(first, last + 1) / per_decade)
    times = times[times < t_final * (1 - 1e-12)]
    return np.append(times, t_final)


def steps_to_cover(distance: float, step: float, growth: float, window: int) -> float:
    """Steps that cover ``distance`` from a step ``step`` growing by the factor ``growth`` every ``window`` steps
    (``distance / step`` when it does not grow; a geometric sum when it does)."""
    if not step > 0.0:
        return math.inf
    if not growth > 1.0:
        return distance / step
    return window * math.log1p(distance * (growth - 1.0) / (window * step)) / math.log1p(growth - 1.0)


class StepBudget(Tracker):
    """Stops a run that cannot reach its end (the run loop always has it): every :data:`STEP_WINDOW` steps it projects
    the steps still needed from the window's largest step and its growth over the previous window
    (:func:`steps_to_cover`), and stops the run when they exceed :data:`MAX_STEPS`.  A state at rest up to round-off
    steps at ``cfl / (L max|v|)`` with ``max|v| ~ 1e-17``: particles to ``t = 1e300`` took steps of 2e10 for ever."""

    def start(self, scheme, stepper, state, t: float, schedule) -> None:
        self.t_final, self.count, self.largest, self.previous, self.reason = schedule.t_final, 0, 0.0, None, None

    def after_step(self, scheme, stepper, before, t0: float, after, t1: float) -> None:
        self.count, self.largest = self.count + 1, max(self.largest, t1 - t0)
        if self.count < STEP_WINDOW:
            return
        growth = self.largest / self.previous if self.previous else 1.0
        needed = steps_to_cover(self.t_final - t1, self.largest, growth, STEP_WINDOW)
        if needed > MAX_STEPS:
            trend = f" growing x {growth:.3g} per {STEP_WINDOW} steps" if growth > 1.0 else ""
            self.reason = (f"too many steps: at t = {t1:.6g}, with steps of at most {self.largest:.3g}{trend}, reaching "
                           f"t = {self.t_final:.6g} takes {needed:.3g} more steps, over the limit of {MAX_STEPS:g}")
        self.count, self.largest, self.previous = 0, 0.0, self.largest

    def check(self, scheme, state, t: float) -> str | None:
        return self.reason


def _frame(scheme, state, trackers, scheme_frames: bool = True) -> dict:
    frame = scheme.frame(state) if scheme_frames else {}
    for tracker in trackers:
        frame.update(tracker.frame(scheme, state, frame))
    return frame


def _check(trackers, scheme, state, t: float) -> str | None:
    """The first tracker's reason to stop at ``state`` (the validity monitor comes first), or ``None``."""
    for tracker in trackers:
        reason = tracker.check(scheme, state, t)
        if reason is not None:
            return reason
    return None


def _snapped(t: float, target: float) -> float:
    """``target`` when ``t`` is within 1e-12 of it (a step meant to land there), else ``t``."""
    return target if abs(t - target) <= 1e-12 * max(1.0, target) else t


def _feed(trackers, scheme, stepper, before, t0: float, after, t1: float) -> None:
    for tracker in trackers:
        tracker.after_step(scheme, stepper, before, t0, after, t1)


class _Loop:
    """The state of one :func:`run`: the stepper's state ``(state, t)``, what the trackers saw last ``(seen, t_seen)``
    (a frame inside a step, else the stepper's state), the save times still ahead and the record."""

    def __init__(self, scheme, stepper, trackers, record, targets, dense: bool, land_at_end: bool,
                 scheme_frames: bool):
        self.scheme, self.stepper, self.trackers, self.record = scheme, stepper, trackers, record
        self.targets, self.next = list(targets), 0
        self.dense, self.land_at_end, self.scheme_frames = dense, land_at_end, scheme_frames
        self.state = self.seen = None
        self.t = self.t_seen = math.nan
        self.inside = None        # the stepper's snapshot while frames inside a step are being saved
        self.pending = None       # the step that crossed a continued run's start (:meth:`join`)

    def save(self, state, t: float) -> str | None:
        """Record a frame of ``state`` at ``t`` (built whole before it is recorded); a tracker's reason to stop."""
        frame = _frame(self.scheme, state, self.trackers, self.scheme_frames)
        self.record.times.append(t)
        self.record.frames.append(frame)
        self.next += 1
        reason = None
        for tracker in self.trackers:
            reason = tracker.at_save(self.scheme, state, t) or reason
        return reason

    def _landing(self) -> bool:
        return not self.dense or (self.land_at_end and self.next == len(self.targets) - 1)

    def step(self, until: float, landing: bool, trackers=None):
        """One accepted step from ``(state, t)`` toward ``until`` (landed on it with ``landing``); a step that crosses
        ``until`` and fails the checks (of ``trackers``; default the run's) is retaken landing on it.  Returns
        ``(new state, new t, reason, snapshot)``."""
        target, trackers = until, self.trackers if trackers is None else trackers
        snapshot = self.stepper.snapshot() if self.dense else None
        new_state, new_t = self.stepper.step(self.state, self.t, target - self.t if landing else math.inf)
        new_t = _snapped(new_t, target)
        reason = _check(trackers, self.scheme, new_state, new_t)
        if reason is not None and self.dense and new_t > target:   # frames inside a failed step: retake it landing
            self.stepper.rewind(snapshot)
            snapshot = self.stepper.snapshot()
            new_state, new_t = self.stepper.step(self.state, self.t, target - self.t)
            new_t = _snapped(new_t, target)
            reason = _check(trackers, self.scheme, new_state, new_t)
        return new_state, new_t, reason, snapshot

    def dense_state(self, time: float, new_t: float):
        """The frame state at ``time`` inside the step from ``t`` to ``new_t``, and its fraction of the step."""
        fraction = (time - self.t) / (new_t - self.t)
        return self.scheme.frame_state(self.stepper.dense(fraction)), fraction

    def join(self, t_start: float):
        """A restored stepper whose state lies before the run's start (a run that ended inside a step): step to the
        start without the trackers; returns the start's state, and the step that crossed it is kept for
        :meth:`advance` (as ``pending``)."""
        while True:
            new_state, new_t, reason, snapshot = self.step(t_start, False, self.trackers[:1])   # validity alone
            if reason is not None:
                raise InputError(f"the run file's restart record could not reach the continued run's start "
                                 f"t = {t_start:.6g} again: {reason}")
            if new_t >= t_start:
                break
            self.state, self.t = new_state, new_t
        if new_t == t_start:
            self.pending = None
            self.state, self.t = new_state, new_t
            return new_state
        start_state, fraction = self.dense_state(t_start, new_t)
        self.pending = (new_state, new_t, snapshot, fraction)
        return start_state

    def advance(self) -> str | None:
        """Take one step and save the frames it reaches; the reason to stop, or ``None``."""
        if self.pending is not None:     # the step that crossed a continued run's start (:meth:`join`)
            new_state, new_t, snapshot, start = self.pending
            self.pending, reason = None, None
        else:
            signals.check()              # Ctrl-C / SIGTERM on the command line stop here, between steps
            start = 0.0
            new_state, new_t, reason, snapshot = self.step(self.targets[self.next], self._landing())
            if reason is not None:
                return reason
        self.inside = snapshot
        while self.next < len(self.targets) and self.targets[self.next] < new_t:   # frames from dense output
            time = self.targets[self.next]
            frame_state, fraction = self.dense_state(time, new_t)
            with self.stepper.piece(start, fraction, self.seen, frame_state):
                _feed(self.trackers, self.scheme, self.stepper, self.seen, self.t_seen, frame_state, time)
            self.seen, self.t_seen, start = frame_state, time, fraction
            reason = self.save(frame_state, time)
            if reason is not None or self.next == len(self.targets):
                self.stepper.rewind(snapshot)          # the run ends inside the step: the stepper stands before it
                self.stepper.state_time = self.t
                self.inside = None
                return reason
        if start > 0.0:
            with self.stepper.piece(start, 1.0, self.seen, new_state):
                _feed(self.trackers, self.scheme, self.stepper, self.seen, self.t_seen, new_state, new_t)
        else:
            _feed(self.trackers, self.scheme, self.stepper, self.state, self.t, new_state, new_t)
        self.inside = None
        state = new_state
        for tracker in self.trackers:
            state = tracker.post_step(self.scheme, self.stepper, state)
        self.state, self.t = self.seen, self.t_seen = state, new_t
        if self.next < len(self.targets) and new_t == self.targets[self.next]:
            return self.save(state, new_t)
        return None

    def interrupted(self) -> None:
        """Ctrl-C while frames inside a step were saved: the stepper stands before the step."""
        if self.inside is not None:
            self.stepper.rewind(self.inside)
            self.stepper.state_time = self.t
            self.inside = None


def run(scheme, stepper, state, t_final: float, save_every: float | None = None, progress: bool = False,
        targets=None, trackers=(), t_start: float = 0.0, scheme_frames: bool = True,
        land_at_end: bool = False) -> RunRecord:
    """Integrate ``state`` from ``t_start`` to ``t_final`` with ``stepper``; see the module docstring.

    ``targets``: the save times (default :func:`save_times` of ``save_every``); a log axis
    (:func:`log_save_times`) shows progress in frames instead of time.  Only targets after
    ``t_start`` are used.  ``trackers``: :class:`meanfield.solvers.tracking.trackers.Tracker` objects, run between
    the validity monitor and the collapse and progress trackers the loop always has.
    ``scheme_frames=False``: frames hold only what the trackers record (e.g. an
    :class:`meanfield.solvers.tracking.trackers.Observer` of a few numbers in a large sweep), not the scheme's own record.
    ``land_at_end``: the last step lands on ``t_final`` even when frames come from dense output (a jump of the
    right-hand side there: Mix-LN's switch).
    """
    scheme = conform(scheme)
    record = RunRecord()
    start = _time.perf_counter()
    log_axis = targets is not None
    targets = save_times(t_final, save_every) if targets is None else np.asarray(targets, dtype=float)
    schedule = SaveSchedule(targets[targets > t_start], log_axis, t_final)
    trackers = [ValidityMonitor(), *trackers, Collapse(), StepBudget(), Progress(progress)]
    dense = bool(getattr(stepper, "dense_frames", False)) and bool(scheme.dense_frames)
    loop = _Loop(scheme, stepper, trackers, record, schedule.targets, dense, land_at_end, scheme_frames)
    behind = getattr(stepper, "state_time", None)
    loop.state, loop.t, reason, started = state, float(t_start), None, []
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            if behind is not None:
                stepper.state_time, loop.t = None, float(behind)
                if behind < t_start:
                    state = loop.join(float(t_start))
        loop.seen, loop.t_seen = state, float(t_start)
        for tracker in trackers:
            tracker.start(scheme, stepper, state, float(t_start), schedule)
            started.append(tracker)
        frame = _frame(scheme, state, trackers, scheme_frames)
        record.times.append(float(t_start))
        record.frames.append(frame)
        signals.check()               # a signal remembered during the set-up or an earlier leg stops this one now
        reason = _check(trackers, scheme, state, t_start)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            while reason is None and loop.next < len(loop.targets):
                reason = loop.advance()
    except KeyboardInterrupt as interrupt:          # Ctrl-C, or SIGTERM on the command line (meanfield.app.signals)
        loop.interrupted()
        reason = f"interrupted{getattr(interrupt, 'note', '')} at t = {loop.t_seen:.6g}"
    except StopRun as exc:  # the stepper cannot go on (step size underflow, an integrator's terminal event)
        loop.interrupted()
        reason = str(exc)
    finally:
        record.state = loop.seen
        for tracker in started:
            tracker.finish(record)
    if not record.times:             # stopped before its first frame (Ctrl-C while the trackers started): nothing to keep
        raise KeyboardInterrupt(reason)
    if reason is not None and loop.t_seen > record.times[-1]:
        record.times.append(loop.t_seen)
        record.frames.append(_frame(scheme, loop.seen, trackers, scheme_frames))
        record.off_schedule = True
    record.stop_reason = reason or COMPLETED
    record.t_reached = loop.t_seen
    record.state = loop.seen
    record.restart_state = loop.state if loop.state is not loop.seen else None
    record.steps, record.rejected_steps = stepper.steps, stepper.rejected
    record.wall_time = _time.perf_counter() - start
    return record


def run_switching(scheme, stepper, state, t_final, save_every, targets, switch, t_start, **kw) -> RunRecord:
    """:func:`run`, but with a step landing on ``switch`` (Mix-LN's ``tau``) when it lies
    inside the run: a frame is saved there and the stepper restarts, so no step (nor a reused last
    stage) straddles the jump of the right-hand side; from then on (and in a run continued from
    ``t >= switch``) ``scheme.after_switch`` makes every stage, the first at ``switch`` too, Pre-LN."""
    scheme.after_switch = switch is not None and t_start >= switch
    if switch is None or not t_start < switch < t_final:
        return run(scheme, stepper, state, t_final, save_every, targets=targets, t_start=t_start, **kw)
    times = save_times(t_final, save_every) if targets is None else np.asarray(targets, dtype=float)
    times = np.union1d(times, [switch])
    first = run(scheme, stepper, state, switch, targets=times[times <= switch], t_start=t_start, land_at_end=True, **kw)
    if first.stop_reason != "completed":
        return first
    stepper.restart()
    scheme.after_switch = True
    second = run(scheme, stepper, first.state, t_final, targets=times[times > switch], t_start=switch, **kw)
    return RunRecord(times=first.times + second.times[1:], frames=first.frames + second.frames[1:],
                     stop_reason=second.stop_reason, t_reached=second.t_reached,
                     wall_time=first.wall_time + second.wall_time, steps=second.steps,
                     rejected_steps=second.rejected_steps, state=second.state, off_schedule=second.off_schedule,
                     restart_state=second.restart_state)
