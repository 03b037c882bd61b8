"""Trackers in the one run loop (meanfield.solvers.tracking.trackers): when they are called and what they record or stop."""

import numpy as np
import pytest

from meanfield.diagnostics import empirical_coefficients
from meanfield.model import Model
from meanfield.solvers.schemes.circle import CircleSpectral
from meanfield.solvers.runs.runloop import run
from meanfield.solvers.steppers.steppers import make_stepper
from meanfield.solvers.tracking.trackers import STATIONARY, ModeAmplitudes, Observer, SteadyState, Tracker


class Counting(Tracker):
    def __init__(self, interrupt_after=None):
        self.calls = {"start": 0, "check": 0, "after_step": 0, "post_step": 0, "frame": 0, "at_save": 0, "finish": 0}
        self.interrupt_after = interrupt_after

    def start(self, *args):
        self.calls["start"] += 1

    def check(self, *args):
        self.calls["check"] += 1

    def after_step(self, *args):
        self.calls["after_step"] += 1
        if self.calls["after_step"] == self.interrupt_after:
            raise KeyboardInterrupt

    def post_step(self, scheme, stepper, state):
        self.calls["post_step"] += 1
        return state

    def frame(self, scheme, state, record):
        self.calls["frame"] += 1
        assert "density" in record  # the scheme's record comes first
        return {"calls": self.calls["after_step"]}

    def at_save(self, *args):
        self.calls["at_save"] += 1

    def finish(self, record):
        self.calls["finish"] += 1


def _circle(nu=0.0, beta=4.0, n=64):
    scheme = CircleSpectral(Model(beta=beta, nu=nu), n)
    theta = scheme.basis.theta
    return scheme, scheme.state_from_density((1 + 0.05 * np.cos(3 * theta)) / (2 * np.pi))


def test_the_loop_calls_each_tracker_at_its_points():
    scheme, state = _circle()
    tracker = Counting()
    record = run(scheme, make_stepper("rk4", scheme), state, 2.0, 0.5, trackers=[tracker])
    calls = tracker.calls
    assert record.stop_reason == "completed" and len(record.times) == 5
    assert calls["start"] == calls["finish"] == 1
    assert calls["after_step"] == calls["post_step"] == record.steps >= 4
    assert calls["check"] == record.steps + 1          # every new state and the initial one
    assert calls["frame"] == 5 and calls["at_save"] == 4  # the initial frame is not a save time
    assert [frame["calls"] for frame in record.frames][-1] == record.steps


def test_an_interrupt_inside_a_tracker_stops_the_run_and_still_finishes_every_tracker():
    scheme, state = _circle()
    tracker = Counting(interrupt_after=3)
    record = run(scheme, make_stepper("rk4", scheme), state, 2.0, 0.5, trackers=[tracker])
    assert record.stop_reason.startswith("interrupted") and tracker.calls["finish"] == 1
    # the third step was interrupted in its bookkeeping, so it was not taken: the run stays at t = 1
    assert record.off_schedule is False and record.t_reached == record.times[-1] == 1.0


def test_steady_state_stops_a_run_once_the_order_parameter_settles():
    """Above the linear noise threshold nu_# the perturbation decays: the top mode amplitude stops changing."""
    scheme, state = _circle(nu=1.0, beta=1.0)
    top = lambda s, x: float(np.max(s.mode_amplitudes(x)[1:]))
    record = run(scheme, make_stepper("dopri5", scheme), state, 200.0, 5.0,
                 trackers=[SteadyState(top, tol=1e-3, floor=1e-6)])
    assert record.stop_reason.startswith(STATIONARY)
    assert 5.0 < record.t_reached < 200.0 and record.times[-1] == record.t_reached and not record.off_schedule
    amplitudes = [float(np.max(frame["mode_amplitude"][1:])) for frame in record.frames]
    assert abs(amplitudes[-1] - amplitudes[-2]) <= 1e-3 * max(amplitudes[-1], 1e-6)
    assert abs(amplitudes[-2] - amplitudes[-3]) > 1e-3 * max(amplitudes[-2], 1e-6)  # the first settled save


def test_observer_and_mode_amplitudes_add_to_every_frame():
    from meanfield.solvers.schemes.particles import ParticleScheme
    scheme = ParticleScheme(Model(beta=2.0, dim=2), 16, seed=0)
    angles = np.linspace(0, 2 * np.pi, 16, endpoint=False) + 0.01 * np.arange(16)
    x = np.stack([np.cos(angles), np.sin(angles)], axis=-1)[None]
    modes = np.arange(5)
    record = run(scheme, make_stepper("dopri5", scheme), x, 1.0, 0.5,
                 trackers=[Observer(lambda state: {"first": state[0, 0].copy()}), ModeAmplitudes(modes)])
    assert len(record.frames) == 3
    for frame in record.frames:
        np.testing.assert_array_equal(frame["first"], frame["positions"][0])
        expected = np.abs(empirical_coefficients(frame["theta"], scheme.token_weights, modes))
        np.testing.assert_array_equal(frame["mode_amplitude"], expected)
    assert record.frames[0]["mode_amplitude"][0] == pytest.approx(1 / (2 * np.pi))


def test_an_observer_alone_records_only_what_it_observes():
    """``Observer`` with ``scheme_frames=False`` (what replaces ``ParticleScheme(observe=...)``): frames hold
    the observed numbers only, the same bits as computed from a run that keeps the scheme's frames."""
    from meanfield.settings import Attention
    from meanfield.solvers.schemes.particles import ParticleScheme
    x = np.random.default_rng(3).standard_normal((1, 24, 3))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    fraction = lambda y: {"near": float(np.mean(np.einsum("bnd,bmd->bnm", y, y) > 0.9))}
    runs = []
    for trackers, scheme_frames in (([], True), ([Observer(fraction)], False)):
        model = Model(beta=3.0, dim=3)
        scheme = ParticleScheme(model, 24, Attention(model.attention, interaction="direct"))
        runs.append(run(scheme, make_stepper("dopri5", scheme), x, 4.0, 1.0, trackers=trackers,
                        scheme_frames=scheme_frames))
    assert [fraction(frame["positions"][None]) for frame in runs[0].frames] == runs[1].frames
    assert [set(frame) for frame in runs[1].frames] == [{"near"}] * 5
    assert runs[1].frames[-1]["near"] > runs[1].frames[0]["near"]  # the tokens gather
