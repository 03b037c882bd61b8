"""Time-dependent noise ``nu(t)`` (``--nu-schedule``, meanfield/noise_schedule.py; issue 24 item 3).

What would fail: an integral that is not exact for the piecewise-linear ``nu`` (trapezoids, gaps, reversed
limits); a stepper whose integrating factor is not ``exp(L int nu)`` between the right stage times (a constant
schedule would then differ from ``--nu``, and the linear theory's mode growth ``exp(int lambda_k(nu(t)) dt)``,
MATH.md §2.3, would not be met); particles whose random-walk variance is not ``2 int nu``; a schedule lost by a
restart, a re-run or the ``command``.
"""

import math
import shlex

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.cli import main
from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.noise_schedule import FunctionSchedule, NoiseSchedule, as_schedule
from meanfield.plotting.run_data import theory_curves
from meanfield.solvers.records.checkpoint import INITIAL, PREFIX
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.solvers.records.run_record import RERUN_COMMAND
from meanfield.solvers.steppers.steppers import make_stepper
from meanfield.theory import linear_noise_threshold, growth_rates

from .test_rerun import assert_same_run

LOOP = "ramp:0.3>0.1@0..500,ramp:0.1>0.3@500..1000"
#: USA on the circle at beta = 4: nu_sharp = I_1(4) / 4 = 2.4399 (MATH.md §2.3); 3 is above it (stable)
CIRCLE = dict(attention="usa", beta=4.0, resolution=64, init="perturbed:1e-3", seed=0)


# --------------------------------------------------------------------------------------------- the schedule

def without_checkpoint(dataset):
    """The Dataset without its restart and initial records."""
    return dataset.drop_vars([name for name in dataset.data_vars if name.startswith((PREFIX, INITIAL))])

def test_a_spec_gives_its_values_and_exact_integrals():
    schedule = NoiseSchedule.parse(" ramp:0.3>0.1@0..500 , ramp:0.1>0.3@500..1000")
    assert schedule.spec == LOOP and NoiseSchedule.parse(schedule.spec) == schedule
    assert [schedule.value(t) for t in (-5, 0, 250, 500, 750, 1000, 2000)] == \
        pytest.approx([0.3, 0.3, 0.2, 0.1, 0.2, 0.3, 0.3], rel=1e-15)
    assert schedule.max_value() == 0.3
    assert schedule.integral(0, 1000) == pytest.approx(200.0, rel=1e-15)         # two trapezoids of mean 0.2
    assert schedule.integral(-10, 0) == pytest.approx(3.0, rel=1e-15)           # A before the first segment
    assert schedule.integral(1000, 1010) == pytest.approx(3.0, rel=1e-15)       # B after the last
    assert schedule.integral(900, 100) == -schedule.integral(100, 900)
    # against a fine quadrature of the values: the integral is exact for the piecewise-linear nu
    for a, b in [(100.0, 900.0), (499.5, 500.25), (-3.0, 1003.0), (12.3, 12.3)]:
        grid = np.union1d(np.linspace(a, b, 20001), [x for x in (0.0, 500.0, 1000.0) if a < x < b])
        values = schedule.values(grid)
        reference = float(np.sum((values[1:] + values[:-1]) / 2 * np.diff(grid)))
        assert schedule.integral(a, b) == pytest.approx(reference, rel=1e-12, abs=1e-15)


def test_a_gap_between_segments_holds_the_nearer_end():
    schedule = NoiseSchedule([(1, 2, 0, 1), (4, 3, 3, 5)])       # the API form (A, B, T0, T1)
    assert schedule.spec == "ramp:1>2@0..1,ramp:4>3@3..5"
    assert (schedule.value(1.9), schedule.value(2.1), schedule.value(4), schedule.value(9)) == (2, 4, 3.5, 3)
    # 1.5 on the ramp, 2 and 4 on the gap's halves, 7 on the second ramp, 3 a unit of time after it
    assert schedule.integral(0, 10) == pytest.approx(1.5 + 2 + 4 + 7 + 15, rel=1e-15)


def test_a_function_schedule_integrates_by_quadrature():
    def nu(t):
        return 0.1 + 0.01 * t ** 3

    schedule = as_schedule(nu)
    assert isinstance(schedule, FunctionSchedule) and schedule.spec.endswith("nu") and schedule.max_value() == math.inf
    assert schedule.integral(1.0, 3.0) == pytest.approx(0.2 + 0.01 * (81 - 1) / 4, rel=1e-14)
    with pytest.raises(InputError, match="nu_schedule"):
        as_schedule(lambda t: -1.0).value(0.0)


@pytest.mark.parametrize("spec, says", [
    ("ramp:0.3>-0.1@0..1", "finite and >= 0"),
    ("ramp:nan>0.1@0..1", "finite and >= 0"),
    ("ramp:inf>0.1@0..1", "finite and >= 0"),
    ("ramp:0.3>0.1@1..0", "T0 < T1"),
    ("ramp:0.3>0.1@0..inf", "finite with T0 < T1"),
    ("ramp:0.3>0.1@0..2,ramp:0.1>0.3@1..3", "follow one another"),
    ("ramp:x>0.1@0..1", "not a number"),
    ("ramp:0.3>0.1", "form ramp:A>B@T0..T1"),
    ("linear:0.3>0.1@0..1", "form ramp:A>B@T0..T1"),
    ("", "spec such as"),
    ("python:f", "Python function"),
])
def test_a_bad_spec_is_refused_in_one_line(spec, says):
    with pytest.raises(InputError) as error:
        as_schedule(spec)
    assert "nu_schedule" in str(error.value) and says in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("args", [
    ["solve", "circle", "--beta", "4", "--nu-schedule", "ramp:0.3>-1@0..1"],
    ["solve", "circle", "--beta", "4", "--nu-schedule", "ramp:0.3@0..1"],
    ["solve", "circle", "--beta", "4", "--nu", "0.1", "--nu-schedule", "ramp:0.3>0.1@0..1"],
    ["solve", "circle", "--beta", "4", "--scheme", "fv", "--nu-schedule", "ramp:0.3>0.1@0..1"],
    ["solve", "circle", "--beta", "4", "--stepper", "etdrk4", "--nu-schedule", "ramp:0.3>0.1@0..1"],
    ["particles", "--n", "8", "--beta", "1", "--nu-schedule", "ramp:0.3>0.1@0..nan"],
    ["particles", "--n", "8", "--beta", "1", "--nu", "0.1", "--nu-schedule", "ramp:0.3>0.1@0..1"],
    ["particles", "--n", "8", "--beta", "1", "--collapse-tol", "1e-9", "--nu-schedule", "ramp:0.3>0.1@0..1"],
])
def test_the_command_line_refuses_in_one_line_and_writes_nothing(tmp_path, capsys, args):
    out = tmp_path / "run.nc"
    code = main(args + ["--t-final", "1", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("meanfield: error: ") and err.count("\n") == 1
    assert "--nu-schedule" in err and not out.exists() and list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------- a constant schedule
@pytest.mark.parametrize("stepper", ["dopri5", "rk4", "ssprk3"])
def test_a_constant_schedule_is_the_ordinary_noisy_circle_run(stepper):
    settings = dict(CIRCLE, t_final=2.0, save_every=0.5, stepper=stepper)
    ordinary = meanfield.solve("circle", nu=3.0, **settings)
    scheduled = meanfield.solve("circle", nu_schedule="ramp:3>3@0..1", **settings)
    assert scheduled.attrs["stop_reason"] == "completed" and scheduled.attrs["nu"] == 0.0
    scale = float(np.max(np.abs(ordinary.density.values - 1 / (2 * math.pi))))     # the perturbation, ~1e-3
    assert np.max(np.abs(scheduled.density.values - ordinary.density.values)) <= 1e-10 * scale
    np.testing.assert_array_equal(scheduled["nu"].values, 3.0)
    assert scheduled["nu"].dims == ("time",) and scheduled.attrs["nu_schedule"] == "ramp:3>3@0..1"


@pytest.mark.parametrize("geometry, settings", [("zonal", dict(dim=4, resolution=16)), ("sphere", dict(resolution=15))])
def test_a_constant_schedule_is_the_ordinary_noisy_run_on_spheres(geometry, settings):
    settings = dict(settings, attention="usa", beta=2.0, init="perturbed:1e-3", seed=0, t_final=0.5, save_every=0.25)
    ordinary = meanfield.solve(geometry, nu=0.7, **settings)
    scheduled = meanfield.solve(geometry, nu_schedule=NoiseSchedule([(0.7, 0.7, 0.0, 1.0)]), **settings)
    scale = float(np.max(np.abs(ordinary.density.values - ordinary.density.values.mean())))
    assert np.max(np.abs(scheduled.density.values - ordinary.density.values)) <= 1e-10 * scale


def test_a_constant_schedule_is_the_ordinary_noisy_particle_run():
    """Variance ``2 int nu = 2 nu h`` to round-off: the same draws give the same tokens to round-off."""
    settings = dict(dim=3, n=64, attention="sa", beta=2.0, init="uniform", seed=3, t_final=1.0, save_every=0.25)
    ordinary = meanfield.simulate_particles(nu=0.2, **settings)
    scheduled = meanfield.simulate_particles(nu_schedule="ramp:0.2>0.2@0..1", **settings)
    assert scheduled.attrs["steps"] == ordinary.attrs["steps"] and scheduled.attrs["dt_max"] == 0.01
    assert scheduled.attrs["collapse_tol_used"] == 0.0
    assert np.max(np.abs(scheduled.positions.values - ordinary.positions.values)) < 1e-13


def test_particles_diffuse_by_the_integral_of_the_schedule():
    """A lone token on S^2 has no drift (``P_x x = 0``): a geodesic random walk whose law tends to Brownian motion
    with ``E <x(t), x(0)> = exp(-2 int_0^t nu)`` (the heat kernel's degree-1 factor, Laplace eigenvalue
    ``-l (l + 1) = -2``; weak order 1, bias ~ (nu h)^2 per step, ~1e-3 here).  ``B = 8000`` independent tokens in
    the scheme's batch axis, the ramp 0.4 -> 0 on [0, 1]: ``int_0^0.5 nu = 0.15``, ``int_0^1 nu = 0.2``; a constant
    0.4 would give 0.2 and 0.4 (0.07 and 0.22 lower means, 25 and 70 standard errors)."""
    batch, schedule = 8000, as_schedule("ramp:0.4>0@0..1")
    scheme = ParticleScheme(Model(beta=1.0, dim=3), 1, seed=1, nu_schedule=schedule)
    stepper = make_stepper("rk4", scheme, dt_max=0.01)        # h = 1/128: lands on 0.5 and 1
    state, t, seen = np.tile([0.0, 0.0, 1.0], (batch, 1, 1)), 0.0, {}
    while t < 1.0:
        state, t = stepper.step(state, t, 1.0 - t)
        if t in (0.5, 1.0):
            seen[t] = state[:, 0, 2].copy()
    assert stepper.steps == 128 and sorted(seen) == [0.5, 1.0]
    for when, z in seen.items():
        standard_error = z.std() / math.sqrt(batch)
        assert abs(z.mean() - math.exp(-2 * schedule.integral(0.0, when))) <= 4 * standard_error + 2e-3


# --------------------------------------------------------------------------------------------- a ramp through nu_sharp
def test_a_ramp_below_the_linear_noise_threshold_destabilises_the_uniform_state():
    """USA on the circle, beta = 4: ``nu`` falls from 3.5 to 1 over ``[0, 5]`` and stays at 1.  In the linear regime
    (start 1e-6 from uniform) each mode follows ``log a_k(t) / a_k(0) = k^2 (I_k / beta) t - k^2 int_0^t nu``
    (MATH.md §2.3), so the order parameter ``2 pi max_k |rho_hat_k|`` falls while ``nu > nu_sharp`` and grows once
    ``nu`` has passed it, with its minimum where mode 1 turns, ``nu(t_c) = nu_sharp``."""
    model = Model(attention="usa", beta=4.0, dim=2)
    nu_sharp = linear_noise_threshold(model)
    schedule = NoiseSchedule.parse("ramp:3.5>1@0..5")
    t_c = (3.5 - nu_sharp) / 0.5
    run = meanfield.solve("circle", nu_schedule=schedule, **dict(CIRCLE, init="perturbed:1e-6"), t_final=9.0,
                          save_every=0.125)
    assert run.attrs["stop_reason"] == "completed"
    times, amplitudes = run.time.values, run.mode_amplitude.values[:, 1:]
    order = 2 * math.pi * amplitudes.max(axis=1)
    above = schedule.values(times) > nu_sharp
    assert np.all(np.diff(order[above]) < 0)                  # stable: every mode decays
    lowest = times[np.argmin(order)]
    assert abs(lowest - t_c) <= 0.125
    assert order[-1] > 100 * order.min() and np.all(np.diff(order[times >= t_c + 0.5]) > 0)
    # mode 1 against the linear theory of the time-dependent rate (quadratic feed ~ 1e-6 relative)
    bare = float(growth_rates(model, np.array([1]))[0])        # nu = 0: I_1 / beta
    theory = np.exp(bare * times - np.array([schedule.integral(0.0, t) for t in times]))
    np.testing.assert_allclose(amplitudes[:, 0] / amplitudes[0, 0], theory, rtol=1e-5)
    # the figure's dashed line (meanfield.plotting.theory_curves) follows nu(t) too
    np.testing.assert_allclose(theory_curves(run, [1])[:, 0], amplitudes[:, 0], rtol=1e-5)


# --------------------------------------------------------------------------------------------- records and re-runs
def test_a_scheduled_run_reruns_bit_for_bit_and_its_command_repeats_it(tmp_path):
    path = tmp_path / "loop.nc"
    run = meanfield.solve("circle", nu_schedule="ramp:3.5>2@0..1,ramp:2>3.5@1..2", **CIRCLE, t_final=2.0,
                          save_every=0.25)
    meanfield.save_run(run, path)
    first = meanfield.load_run(path)
    assert "--nu-schedule 'ramp:3.5>2@0..1,ramp:2>3.5@1..2'" in first.attrs["command"]
    assert "--nu " not in first.attrs["command"]
    assert_same_run(first, meanfield.rerun(path))
    again = tmp_path / "again.nc"
    words = shlex.split(first.attrs["command"])
    assert main(words[1:] + ["--out", str(again), "--no-progress"]) == 0
    typed = meanfield.load_run(again)
    for name in ("density", "nu", "mode_amplitude"):
        np.testing.assert_array_equal(typed[name].values, first[name].values, strict=True)


def test_a_scheduled_particle_run_reruns_bit_for_bit(tmp_path):
    path = tmp_path / "particles.nc"
    run = meanfield.simulate_particles(dim=2, n=32, beta=4.0, init="perturbed:1e-2", seed=2, t_final=0.5,
                                       save_every=0.125, nu_schedule="ramp:0.5>0.05@0..0.5")
    meanfield.save_run(run, path)
    assert_same_run(meanfield.load_run(path), meanfield.rerun(path))


def test_a_function_schedule_is_rerun_when_given_again(tmp_path):
    def nu(t):
        return 3.0 + math.sin(t)

    path = tmp_path / "function.nc"
    run = meanfield.solve("circle", nu_schedule=nu, **CIRCLE, t_final=1.0, save_every=0.5)
    assert run.attrs["command"] == RERUN_COMMAND and run.attrs["nu_schedule"].startswith("python:")
    np.testing.assert_allclose(run["nu"].values, 3.0 + np.sin(run.time.values), rtol=1e-15)
    meanfield.save_run(run, path)
    with pytest.raises(InputError, match="Python function"):
        meanfield.rerun(path)
    assert_same_run(meanfield.load_run(path), meanfield.rerun(path, nu_schedule=nu))


def test_a_continued_run_keeps_its_schedule_and_refuses_another(tmp_path):
    spec = "ramp:3.5>2@0..2"
    whole = meanfield.solve("circle", nu_schedule=spec, **CIRCLE, t_final=2.0, save_every=0.5)
    half = meanfield.solve("circle", nu_schedule=spec, **CIRCLE, t_final=1.0, save_every=0.5)
    path = tmp_path / "half.nc"
    meanfield.save_run(half, path)
    rest = meanfield.solve("circle", init=str(path), t_final=2.0)        # model and schedule from the file
    assert rest.attrs["restart"] == "exact" and rest.attrs["nu_schedule"] == spec
    np.testing.assert_array_equal(rest["nu"].values, whole["nu"].values[2:])
    np.testing.assert_allclose(rest.density.values[-1], whole.density.values[-1], rtol=1e-12, atol=0)
    for change in ({"nu_schedule": "ramp:3>2@0..2"}, {"nu": 0.5}):
        with pytest.raises(InputError, match="a restart keeps its model"):
            meanfield.solve("circle", init=str(path), t_final=2.0, **change)
    changed = meanfield.solve("circle", init=str(path), t_final=2.0, nu=3.0, override=True)
    assert "nu" not in changed and "nu_schedule" not in changed.attrs
    assert changed.attrs["override"] == f"nu: 0.0 -> 3.0; nu_schedule: {spec} -> none" and changed.attrs["nu"] == 3.0
    assert xr.Dataset.equals(without_checkpoint(rest).drop_vars("nu").isel(time=0),
                             without_checkpoint(changed).isel(time=0))
