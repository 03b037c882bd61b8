"""What a driver starts from (:mod:`meanfield.solvers.runs.solve`, :mod:`meanfield.solvers.runs.particle_run`): the clock of a
new or continued run and its save times (:func:`run_clock`, :func:`save_targets`), the seed (:func:`draw_seed`), the
keyword settings a caller gave (:func:`given`) and the user's trackers (:func:`user_trackers`)."""

from __future__ import annotations

import math

import numpy as np

from meanfield.errors import require
from meanfield.limits import check_seed
from meanfield.settings import Saving, check_run_length, check_save_log

from ..records.checkpoint import restart_time
from .runloop import log_save_times


def start_time(source) -> float:
    """The clock of a continued run: the file's restart time, or the time of its last frame."""
    if source is None:
        return 0.0
    clock = restart_time(source)
    return float(source["time"].values[-1] if clock is None else clock)


def inherited_cadence(source, save_every, save_log):
    """``(save_every, save_log)``; when neither is given, a continued run saves as its file did."""
    if source is None or save_every is not None or save_log is not None:
        return save_every, save_log
    every, per_decade = source.attrs.get("save_every"), source.attrs.get("save_log")
    if isinstance(per_decade, (int, np.integer)) and not isinstance(per_decade, bool):
        return None, int(per_decade)
    if isinstance(every, (float, np.floating)) and math.isfinite(every) and every > 0:
        return float(every), None
    return None, None


def run_clock(source, saving: Saving):
    """``(t_start, t_final, save_every, save_log)`` of a run: a continued run starts at its file's time and,
    unless told otherwise, saves as its file did; ``save_every`` is ``None`` on a log axis."""
    t_start = start_time(source)
    save_every, save_log = inherited_cadence(source, saving.save_every, saving.save_log)
    save_log = check_save_log(save_log, save_every)
    t_final, save_every = check_run_length(saving.t_final, save_every, t_start)
    return t_start, t_final, (None if save_log is not None else save_every), save_log


def save_targets(t_final: float, save_log: int | None):
    """The run loop's save times for a log axis, or ``None`` for the regular cadence."""
    return None if save_log is None else log_save_times(t_final, save_log)


def draw_seed(seed) -> int:
    """An integer in ``[0, 2**63 - 1]`` (:func:`meanfield.limits.check_seed`); ``None`` draws one from
    fresh entropy, so that the run records the seed it used and its ``command`` repeats it."""
    seed = check_seed(seed)
    return int(np.random.SeedSequence().entropy % 2**63) if seed is None else int(seed)


def given(**settings) -> dict:
    """The keyword settings a caller gave (``None``: not given), for :func:`meanfield.settings.gather`."""
    return {name: value for name, value in settings.items() if value is not None}


def user_trackers(trackers) -> list:
    """``trackers=``: :class:`meanfield.solvers.tracking.trackers.Tracker` instances, run after the package's own (one-line refusal
    of anything else)."""
    from ..tracking.trackers import Tracker

    trackers = list(trackers or ())
    for tracker in trackers:
        require(isinstance(tracker, Tracker), f"trackers must be meanfield.solvers.tracking.trackers.Tracker instances "
                                              f"(got {type(tracker).__name__})")
    return trackers
