"""Frames from dopri5's dense output (meanfield.solvers.runs.runloop): the steps follow the error control alone,
the frames agree with steps landed on the frame times to the stepper's tolerance, and a run that ends inside a step
keeps the stepper's state as its restart record."""

import math

import numpy as np
import pytest

from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.initial.circle import circle_density
from meanfield.solvers.records import checkpoint
from meanfield.solvers.schemes.circle import CircleSpectral
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.runloop import run
from meanfield.solvers.runs.solve import solve
from meanfield.solvers.steppers.steppers import Dopri5, make_stepper
from meanfield.app.storage import save_run

RTOL = 1e-8


def _circle_runs(dense: bool):
    """SA at beta = 4 from a perturbed start, through the growth of its clusters (the density's peak reaches 1.33 times its mean),
    40 frames."""
    scheme = CircleSpectral(Model("sa", 4.0, 0.0, 2), 128)
    if not dense:
        scheme.dense_frames = False          # the steps land on every frame time (as fixed-step and noisy runs do)
    stepper = make_stepper("dopri5", scheme, rtol=RTOL)
    density = circle_density("perturbed:1e-3", scheme.resolution, seed=2)
    return run(scheme, stepper, scheme.state_from_density(density), 6.0, 0.15), scheme


def test_circle_frames_from_dense_output_agree_with_landed_steps_to_the_tolerance():
    dense, scheme = _circle_runs(True)
    landed, _ = _circle_runs(False)
    assert dense.stop_reason == landed.stop_reason == "completed"
    np.testing.assert_array_equal(dense.times, landed.times)
    # the dense run's steps follow the error control alone: fewer than the landed run's, which took every frame
    assert dense.steps <= landed.steps - 10                     # measured 44 against 57
    densities = [np.array([frame["density"] for frame in r.frames]) for r in (dense, landed)]
    scale = np.max(np.abs(densities[1]))
    error = np.max(np.abs(densities[0] - densities[1])) / scale
    # two dopri5 solutions at rtol 1e-8 and a fourth-order interpolant: measured 1.5e-9; a wrong fraction of the
    # step (the piece's, not the step's) or a third-order (Hermite) frame is off by 1e-6 or more
    assert error < 10 * RTOL


def test_particle_frames_from_dense_output_agree_with_landed_steps_and_stay_on_the_sphere():
    settings = dict(dim=3, n=300, beta=4.0, init="uniform", seed=1, t_final=6.0, rtol=RTOL)
    dense = simulate(save_every=0.1, **settings)
    two_frames = simulate(save_every=6.0, **settings)
    assert dense.attrs["steps"] == two_frames.attrs["steps"]       # the frames do not touch the steps
    single = [simulate(save_every=t, **dict(settings, t_final=t)) for t in (1.5, 4.0)]
    norms = np.linalg.norm(dense.positions.values, axis=-1)
    assert np.max(np.abs(norms - 1)) < 1e-14                      # frame_state put them back on the sphere
    for run_to in single:
        t = float(run_to.time.values[-1])
        frame = dense.positions.sel(time=t, method="nearest")
        assert abs(float(frame.time) - t) < 1e-12
        # each is dense output of a different last step; both within the tolerance of the flow
        assert float(np.max(np.abs(frame.values - run_to.positions.values[-1]))) < 10 * RTOL


def test_a_run_ending_inside_a_step_keeps_the_state_before_it_and_its_continuation_is_bit_for_bit(tmp_path):
    settings = dict(resolution=64, beta=4.0, seed=2)
    whole = solve("circle", t_final=2.0, save_every=0.25, init="perturbed:1e-3", **settings)
    first = solve("circle", t_final=1.0, save_every=0.25, init="perturbed:1e-3", **settings)
    assert whole.attrs["stop_reason"] == first.attrs["stop_reason"] == "completed"
    record = first.meanfield.restart.attrs
    start = record["restart_step_start"]
    assert start < record["restart_time"] == 1.0       # the last frame lay inside a step
    assert start + record["restart_step_size"] > 1.0    # which the restart retakes
    second = solve("circle", t_final=2.0, init=str(save_run(first, tmp_path / "first.nc")), **settings)
    assert second.attrs["restart"] == "exact" and second.attrs["steps"] + first.attrs["steps"] == whole.attrs["steps"]
    np.testing.assert_array_equal(second.density.values[0], first.density.values[-1])
    np.testing.assert_array_equal(whole.density.values[4:], second.density.values)
    np.testing.assert_array_equal(whole.time.values[4:], second.time.values)


def test_a_run_ending_inside_its_first_step_continues_bit_for_bit(tmp_path):
    """No step proposal yet (the step was rewound): the record has step_size NaN, and the restart retakes the step
    from the controller's first guess, as the straight run did."""
    settings = dict(resolution=8, beta=1.0, seed=2, save_every=0.0025)
    whole = solve("circle", t_final=1.0, init="perturbed:1e-3", **settings)
    first = solve("circle", t_final=0.01, init="perturbed:1e-3", **settings)
    assert first.attrs["steps"] == 0 and math.isnan(first.meanfield.restart.attrs["restart_step_size"])
    second = solve("circle", t_final=1.0, init=str(save_run(first, tmp_path / "first.nc")), **settings)
    assert second.attrs["restart"] == "exact"
    np.testing.assert_array_equal(whole.density.values[4:], second.density.values)


def test_a_restart_record_whose_step_start_is_not_before_its_clock_is_refused_in_one_line():
    run_file = solve("circle", resolution=32, beta=4.0, t_final=1.0, save_every=0.5)
    assert "restart_step_start" in run_file.meanfield.restart.attrs
    for bad in (1.0, 2.0, -1.0, math.nan):
        broken = run_file.copy()
        broken.meanfield.restart = run_file.meanfield.restart.assign_attrs(restart_step_start=bad)
        with pytest.raises(InputError, match="restart_step_start must be in"):
            checkpoint.from_dataset(broken)


def test_noise_and_fixed_steps_still_land_on_every_frame():
    noisy = solve("circle", resolution=32, beta=4.0, nu=0.05, t_final=1.0, save_every=0.25)
    fixed = solve("circle", resolution=32, beta=4.0, stepper="rk4", t_final=1.0, save_every=0.25)
    particles = simulate(dim=3, n=50, beta=2.0, nu=0.05, t_final=0.5, save_every=0.25, seed=1)
    for landed in (noisy, fixed, particles):
        assert "restart_step_start" not in landed.meanfield.restart.attrs
    stepper = make_stepper("dopri5", CircleSpectral(Model("sa", 4.0, 0.05, 2), 32))
    assert not stepper.dense_frames                    # a linear part: the Lawson interpolant would grow
    assert make_stepper("dopri5", CircleSpectral(Model("sa", 4.0, 0.0, 2), 32)).dense_frames


def test_the_interpolants_stability_function_ends_at_the_steps():
    z = np.array([0.05, 0.3, -0.7])
    np.testing.assert_allclose(Dopri5.dense_stability(z, 1.0), Dopri5.stability(z), rtol=1e-14)
    np.testing.assert_allclose(Dopri5.dense_stability(z, 0.0), 1.0, rtol=0, atol=1e-15)
    # fourth order inside the step: |log R_s(z) - s z| shrinks by ~2^5 when z halves
    offsets = [max(abs(np.log(Dopri5.dense_stability(h, s)) - s * h) for s in np.linspace(0, 1, 101))
               for h in (0.2, 0.1)]
    assert 20 < offsets[0] / offsets[1] < 40
