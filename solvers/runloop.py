"""One run loop for every scheme (DESIGN.md): step, save on a time cadence, check, stop.

The loop saves a frame at every multiple of ``save_every`` and at ``t_final``,
checks the scheme's validity (finiteness, positivity, resolution) after every
step, and stops at the first failure with the reason in ``stop_reason`` while
keeping every frame saved before it.  Ctrl-C stops the run the same way
(``stop_reason = "interrupted ..."``), so the caller can still write the partial
result.  Floating-point overflow inside a step is not an exception here: the
validity check reports it as lost finiteness.
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field

import numpy as np

from .steppers import StepSizeUnderflow

COMPLETED = "completed"


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


def save_times(t_final: float, save_every: float) -> np.ndarray:
    """``save_every, 2 save_every, ...`` up to ``t_final``, ending exactly at ``t_final``."""
    count = max(1, int(math.floor(t_final / save_every * (1 + 1e-12))))
    times = save_every * np.arange(1, count + 1)
    if times[-1] < t_final * (1 - 1e-12):
        return np.append(times, t_final)
    times[-1] = t_final
    return times


def _progress_bar(total: float, enabled: bool):
    from tqdm.auto import tqdm
    return tqdm(total=total, disable=None if enabled else True, unit="t", leave=False,
                bar_format="{l_bar}{bar}| t={n:.4g}/{total:.4g} [{elapsed}<{remaining}]")


def run(scheme, stepper, state, t_final: float, save_every: float, progress: bool = False) -> RunRecord:
    """Integrate ``state`` to ``t_final`` with ``stepper``; see the module docstring."""
    record = RunRecord()
    start = _time.perf_counter()
    record.times.append(0.0)
    record.frames.append(scheme.frame(state))
    reason = scheme.validity(state, 0.0)
    t = 0.0
    targets = save_times(t_final, save_every)
    bar = _progress_bar(t_final, progress)
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            for target in targets:
                while reason is None and t < target:
                    new_state, new_t = stepper.step(state, t, target - t)
                    if abs(new_t - target) <= 1e-12 * max(1.0, target):
                        new_t = target
                    reason = scheme.validity(new_state, new_t)
                    if reason is None:
                        bar.update(new_t - t)
                        state, t = new_state, new_t
                if reason is not None:
                    break
                record.times.append(t)
                record.frames.append(scheme.frame(state))
    except KeyboardInterrupt:
        reason = f"interrupted at t = {t:.6g}"
    except StepSizeUnderflow as exc:
        reason = str(exc)
    finally:
        bar.close()
    record.stop_reason = reason or COMPLETED
    record.t_reached = t
    record.state = state
    record.steps, record.rejected_steps = stepper.steps, getattr(stepper, "rejected", 0)
    record.wall_time = _time.perf_counter() - start
    return record
