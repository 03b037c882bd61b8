"""Trackers: what the one run loop (:func:`meanfield.solvers.runs.runloop.run`) does besides stepping (DESIGN.md).

A tracker is an object the loop calls at fixed points of a run (py-pde's trackers are the model):

``start(scheme, stepper, state, t, schedule)``
    before the first step;
``check(scheme, state, t)``
    after every step and at the start: ``None``, or why the
    run must stop (the new state is then rejected);
``after_step(scheme, stepper, before, t0, after, t1)``
    after every accepted step;
``post_step(scheme, stepper, state)``
    may replace the accepted state (nodes merged);
``frame(scheme, state, record)``
    what it adds to a saved frame (``record``: the frame so far);
``at_save(scheme, state, t)``
    after a frame is saved: ``None``, or why to stop (steady state);
``finish(record)``
    when the run ends, however it ends;
``variables()``, ``attrs()``
    what it adds to the run's Dataset;
``resume(source)``
    before ``start`` of an exact restart of the run file ``source`` (carry what it recorded there).

:class:`Tracker` gives every call a default that does nothing.  The loop always runs the
:class:`ValidityMonitor` (the scheme's ``validity``: finiteness, positivity, resolution), the
:class:`Collapse` of coincident nodes (MATH.md §5) and the :class:`Progress` bar, around the
trackers the caller passes: :class:`meanfield.solvers.tracking.clusters.ClusterTracker` (cluster count, energy and
merges), :class:`ModeAmplitudes` (particle mode amplitudes on the circle), :class:`Observer`
(any ``callable(state) -> dict`` recorded in every frame) and :class:`SteadyState` (stop once a
quantity stops changing).  Saving itself is the loop's schedule (:class:`SaveSchedule`: every
``save_every`` or on a log axis).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meanfield.diagnostics import empirical_coefficients

#: ``stop_reason`` prefix of a run that :class:`SteadyState` stopped.
STATIONARY = "stationary"


class Tracker:
    """A tracker whose every call does nothing (module docstring); trackers override what they need."""

    def start(self, scheme, stepper, state, t: float, schedule) -> None:
        pass

    def check(self, scheme, state, t: float) -> str | None:
        return None

    def after_step(self, scheme, stepper, before, t0: float, after, t1: float) -> None:
        pass

    def post_step(self, scheme, stepper, state):
        return state

    def frame(self, scheme, state, record: dict) -> dict:
        return {}

    def at_save(self, scheme, state, t: float) -> str | None:
        return None

    def finish(self, record) -> None:
        pass

    def variables(self) -> dict:
        return {}

    def attrs(self) -> dict:
        return {}

    def resume(self, source) -> None:
        pass


@dataclass
class SaveSchedule:
    """The save times after ``t_start`` and whether they lie on a log axis (progress then counts frames)."""

    targets: np.ndarray
    log_axis: bool
    t_final: float


class ValidityMonitor(Tracker):
    """The scheme's validity check (:meth:`meanfield.solvers.schemes.density_scheme.DensityScheme.validity` and the like)."""

    def check(self, scheme, state, t: float) -> str | None:
        return scheme.validity(state, t)


class Collapse(Tracker):
    """Merges coincident nodes after each accepted step (``scheme.collapse``, MATH.md §5); when the state
    changed, the stepper forgets its stored slope."""

    def post_step(self, scheme, stepper, state):
        merged = scheme.collapse(state)
        if merged is not state:
            stepper.restart()
        return merged


class Progress(Tracker):
    """A progress bar (:func:`meanfield.app.progress.progress_bar`): run time on a regular axis, frames on a log axis."""

    def __init__(self, enabled: bool):
        self.enabled, self.bar, self.log_axis, self.t = enabled, None, False, 0.0

    def start(self, scheme, stepper, state, t: float, schedule) -> None:
        from meanfield.app.progress import progress_bar
        self.log_axis, self.t = schedule.log_axis, t
        if self.log_axis:
            self.bar = progress_bar(schedule.targets.size, enabled=self.enabled, unit="frame", desc="run")
        else:
            self.bar = progress_bar(schedule.t_final - t, enabled=self.enabled, unit="t", desc="run",
                                    bar_format="{l_bar}{bar}| t={n:.4g}/{total:.4g} [{elapsed}<{remaining}]")

    def after_step(self, scheme, stepper, before, t0: float, after, t1: float) -> None:
        if not self.log_axis:
            self.bar.update(t1 - t0)

    def at_save(self, scheme, state, t: float) -> None:
        if self.log_axis:
            self.bar.update(1)

    def finish(self, record) -> None:
        if self.bar is not None:
            self.bar.close()


class Observer(Tracker):
    """Records ``observe(state)`` (a dict) in every saved frame."""

    def __init__(self, observe):
        self.observe = observe

    def frame(self, scheme, state, record: dict) -> dict:
        return self.observe(state)


class ModeAmplitudes(Tracker):
    """``mode_amplitude(time, mode)`` of tokens on the circle: ``|sum_j w_j exp(-i k theta_j)| / 2 pi``
    (:func:`meanfield.diagnostics.empirical_coefficients`) from the frame's ``theta``."""

    def __init__(self, modes: np.ndarray):
        self.modes = np.asarray(modes)

    def frame(self, scheme, state, record: dict) -> dict:
        return {"mode_amplitude": np.abs(empirical_coefficients(record["theta"], scheme.token_weights, self.modes))}


class StepRecorder(Tracker):
    """Saves every accepted step: ``times``, ``states`` and, from a stepper that has them
    (:class:`meanfield.solvers.steppers.steppers.ScipyStepper`), the steps' dense outputs ``interpolants`` (a step ending
    where the previous one ended replaces it, as in ``scipy.integrate.solve_ivp``)."""

    def start(self, scheme, stepper, state, t: float, schedule) -> None:
        self.times, self.states, self.interpolants = [t], [state], []

    def after_step(self, scheme, stepper, before, t0: float, after, t1: float) -> None:
        self.interpolants.append(stepper.interpolant)
        if len(self.times) > 1 and self.times[-1] == t1:
            self.interpolants.pop()
            return
        self.times.append(t1)
        self.states.append(after)


class SteadyState(Tracker):
    """Stops the run at a save time once ``quantity(scheme, state)`` (a number) changed by at most
    ``tol x max(|value|, floor)`` since the previous save time (``stop_reason`` starts with
    :data:`STATIONARY`)."""

    def __init__(self, quantity, tol: float, floor: float = 0.0):
        self.quantity, self.tol, self.floor, self.previous = quantity, tol, floor, None

    def at_save(self, scheme, state, t: float) -> str | None:
        value = float(self.quantity(scheme, state))
        previous, self.previous = self.previous, value
        if previous is not None and abs(value - previous) <= self.tol * max(abs(value), self.floor):
            return f"{STATIONARY} at t = {t:.6g}"
        return None
