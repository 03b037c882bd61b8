"""One run, whatever its scheme (py-pde's Controller is the model): the scheme built, the stepper made, the state
restored from a run file or set up afresh, the trackers resumed, the loop run (:mod:`.runloop`), and the Dataset
assembled with its restart and start records (:mod:`meanfield.solvers.records`).

The drivers (:mod:`.solve` for densities and the causal PDE, :mod:`.particle_run` for tokens) only turn their
arguments into a :class:`RunPlan` (what to build, how to start, the clock) and their run's attributes: every
cross-cutting feature of a run (restarts, trackers, noise schedules, Mix-LN's switch, the records) lives here or in
the modules it calls, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from meanfield.app.storage import build_run_dataset

from ..records import checkpoint
from ..records.run_record import add_schedule_records, add_tracker_records, finish_dataset
from ..steppers.steppers import make_stepper
from .run_setup import save_targets
from .runloop import RunRecord, run_switching


def _nothing(scheme) -> None:
    """No preparation of a built scheme."""


def _never(scheme) -> bool:
    return False


def _own_trackers(scheme) -> list:
    return scheme.trackers()


@dataclass
class RunPlan:
    """What a driver decided (module docstring).  Callables receive the built scheme."""

    #: The scheme, built afresh (an exact restart also tries its record on a second, throwaway one).
    build: Callable[[], Any]
    #: The time stepper's name and its options (:func:`meanfield.solvers.steppers.steppers.make_stepper`).
    stepper: Callable[[Any], str]
    stepper_options: Callable[[Any], dict]
    #: A new run's first state.
    initial_state: Callable[[Any], np.ndarray]
    t_start: float
    t_final: float
    save_every: float | None
    save_log: int | None
    #: The run file a restart reads (``None``: a new run), whether it continues it exactly, and the shape its
    #: restored state must have (``None``: any).
    source: Any = None
    exact: Callable[[Any], bool] = _never
    restore_shape: Callable[[Any], tuple] | None = None
    #: What the built scheme is told, or checked for, before its stepper is made (a noise schedule, the band).
    prepare: Callable[[Any], None] = _nothing
    #: The run's own trackers, then the user's.
    trackers: Callable[[Any], list] = _own_trackers
    user_trackers: list = field(default_factory=list)
    #: Mix-LN's switch time (``None``: none).
    switch: float | None = None
    progress: bool = False


@dataclass
class Ran:
    """A run done: its scheme, stepper (and its name), whether it continued a file exactly, the loop's record, the
    trackers and the record of its start."""

    scheme: Any
    stepper: Any
    stepper_name: str
    exact: bool
    record: RunRecord
    trackers: list
    start: Any


def execute(plan: RunPlan) -> Ran:
    """Build, start and run ``plan`` (module docstring)."""
    scheme = plan.build()
    plan.prepare(scheme)
    name = plan.stepper(scheme)
    stepper = make_stepper(name, scheme, **plan.stepper_options(scheme))
    scheme.follow_stepper(stepper)
    exact = plan.source is not None and plan.exact(scheme)
    if exact:
        shape = None if plan.restore_shape is None else plan.restore_shape(scheme)
        state = checkpoint.restore_checked(plan.source, plan.build, scheme, stepper, shape=shape)
    else:
        state = plan.initial_state(scheme)
    trackers = plan.trackers(scheme) + list(plan.user_trackers)
    for tracker in trackers if exact else ():
        tracker.resume(plan.source)
    start = checkpoint.capture(scheme, stepper, state, plan.t_start)
    record = run_switching(scheme, stepper, state, plan.t_final, plan.save_every,
                           save_targets(plan.t_final, plan.save_log), plan.switch, plan.t_start,
                           progress=plan.progress, trackers=trackers)
    return Ran(scheme, stepper, name, exact, record, trackers, start)


def assemble(ran: Ran, attrs: dict, *, dims=None, coords=None, static=None, schedule=None):
    """The run's Dataset (DESIGN.md "Data contract"): its frames on the scheme's ``dims`` and ``coords`` (or those
    given), ``attrs``, the scheme's static variables (or ``static``), run and variable attributes, the noise
    schedule's records, the trackers' records and the restart and start records."""
    scheme = ran.scheme
    dataset = build_run_dataset(ran.record.times, ran.record.frames, scheme.dims() if dims is None else dims,
                                scheme.coords() if coords is None else coords, attrs)
    dataset.update(scheme.static_variables() if static is None else static)     # one merge, not one per variable
    dataset.attrs.update(scheme.run_attrs())
    for name, extra_attrs in scheme.variable_attrs().items():
        dataset[name].attrs.update(extra_attrs)
    add_schedule_records(dataset, schedule)
    dataset = dataset.assign_coords(ran.stepper.frame_coords(dataset["time"].values))   # e.g. a layered run's layer
    return finish_dataset(add_tracker_records(dataset, ran.trackers), ran.record, scheme, ran.stepper, ran.start)
