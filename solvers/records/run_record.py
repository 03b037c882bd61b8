"""What a run records, built in one place for the PDE, particle, causal and Gaussian drivers
(:mod:`meanfield.solvers.runs.solve`, :mod:`meanfield.solvers.runs.particle_run`, :mod:`meanfield.solvers.runs.gaussian_run`,
the stationary branch of :mod:`meanfield.solvers.stationary.branch`;
DESIGN.md "Data contract").

- :func:`run_attrs`: a run's attributes are the settings that re-run it, then what every run says of itself
  (``geometry``, ``package_version``, the reproducing ``command``, ``stop_reason``, ``wall_time``; a time-stepped
  run also ``t_reached``, ``steps``, ``rejected_steps``, :func:`loop_attrs`), then what its driver and its scheme add (the clock it started from, thread counts,
  the transform backend, ...), which may also refine a common one (the Gaussian driver classifies its own stop);
  :func:`restart_attrs`: where a continued run started.
- the ``command`` (:func:`run_command`, :func:`canonical_command`; :data:`RERUN_COMMAND` when the start cannot be
  typed) and the ``init`` label (:func:`init_label`);
- the records added after the run: the trackers' (:func:`add_tracker_records`), a noise schedule's
  (:func:`add_schedule_records`), the restart record and the record of the start (:func:`finish_dataset`).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from meanfield.initial.kinds import describe_init
from meanfield.app.storage import package_version

from . import checkpoint


def run_attrs(settings: dict, geometry: str, command: str, *, stop_reason: str, wall_time: float, **specific) -> dict:
    """The attributes of a run (module docstring): ``settings``, then ``geometry``, ``package_version``, ``command``,
    ``stop_reason`` and ``wall_time``, then ``specific`` (for a time-stepped run :func:`loop_attrs` among them)."""
    attrs = dict(settings, geometry=geometry, package_version=package_version(), command=command,
                 stop_reason=stop_reason, wall_time=wall_time)
    attrs.update(specific)
    return attrs


def loop_attrs(record) -> dict:
    """What the run loop's ``record`` (:class:`meanfield.solvers.runs.runloop.RunRecord`) says of a time-stepped run: its
    ``stop_reason``, ``t_reached``, ``wall_time``, ``steps`` and ``rejected_steps``."""
    return {"stop_reason": record.stop_reason, "t_reached": record.t_reached, "wall_time": record.wall_time,
            "steps": record.steps, "rejected_steps": record.rejected_steps}


def restart_attrs(t_start: float, restart: str, override: str) -> dict:
    """Where a continued run started (``t_start``), how (``restart``: ``exact``, ``remap`` or ``none``) and which
    recorded settings it was told to change (``override``; :mod:`meanfield.solvers.runs.restart`)."""
    return {"t_start": t_start, "restart": restart, "override": override}


#: The ``command`` of a run whose start cannot be typed: FILE is the file that holds the run (:mod:`meanfield.solvers.runs.rerun`).
RERUN_COMMAND = "meanfield rerun FILE"


def canonical_command(subcommand: list[str], settings: dict) -> str:
    """The ``meanfield`` command line (``subcommand`` words, then flags) that reproduces a run."""
    words = ["meanfield", *subcommand]
    for key, value in settings.items():
        if value is not None:
            words += [f"--{key.replace('_', '-')}", str(value)]
    return shlex.join(words)


def run_command(subcommand: list[str], settings: dict, init, changes: str) -> str:
    """The ``command`` attribute: the command line of the run when its start can be typed (a text spec or a run
    file's path), else :data:`RERUN_COMMAND`, which repeats it from the record of its start in its own file."""
    if not isinstance(init, (str, Path)):
        return RERUN_COMMAND
    return canonical_command(subcommand, settings) + (" --override" if changes else "")


def schedule_command(settings: dict, schedule) -> dict:
    """The settings of the run's ``command``: with a schedule, ``--nu-schedule SPEC`` instead of ``--nu``."""
    if schedule is None:
        return settings
    return {key: value for key, value in settings.items() if key != "nu"}


def init_label(init) -> str:
    """What the ``init`` attribute records: the spec or path, or a description of an in-memory value."""
    return str(init) if isinstance(init, (str, Path)) else describe_init(init)


def add_tracker_records(dataset, trackers):
    """The variables and attributes the run's trackers (:mod:`meanfield.solvers.tracking.trackers`) add, e.g. the merges and the
    bookkeeping settings of :class:`meanfield.solvers.tracking.clusters.ClusterTracker`."""
    for tracker in trackers:
        dataset.update(tracker.variables())     # one merge per tracker, not one per variable
        dataset.attrs.update(tracker.attrs())
    return dataset


def add_schedule_records(dataset, schedule):
    """A run that followed a noise schedule: the variable ``nu(time)`` (the noise at each frame) and the attribute
    ``nu_schedule`` (its spec); returns the dataset."""
    if schedule is not None:
        dataset["nu"] = ("time", schedule.values(dataset["time"].values),
                         {"long_name": "noise strength nu(t) at the frame", "nu_schedule": schedule.spec})
        dataset.attrs["nu_schedule"] = schedule.spec
    return dataset


def finish_dataset(dataset, record, scheme, stepper, start: checkpoint.Checkpoint):
    """The flag of an off-schedule last frame, the restart record and the record of the run's ``start``
    (:func:`meanfield.solvers.records.checkpoint.capture` before the first step; :mod:`meanfield.solvers.runs.rerun`)."""
    dataset.attrs["last_frame_off_schedule"] = int(record.off_schedule)
    checkpoint.add_to_dataset(dataset, start, checkpoint.INITIAL)
    return checkpoint.add_to_dataset(dataset, checkpoint.capture(
        scheme, stepper, record.state if record.restart_state is None else record.restart_state, record.t_reached))
