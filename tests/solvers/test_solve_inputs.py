"""``solve()`` and ``simulate()`` take densities as arrays, DataArrays, callables and runs
(meanfield.solvers.runs.initial_state), and their defaults are the command line's (meanfield.defaults)."""

import math

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.cli import cli
from meanfield.defaults import GEOMETRY_DEFAULTS
from meanfield.initial.circle import von_mises
from meanfield.solvers.runs.particle_run import simulate

RUN = {"beta": 4.0, "resolution": 64, "t_final": 1.0, "save_every": 0.5}


def test_an_array_a_function_and_a_dataarray_start_the_same_run_as_the_text_spec():
    spec = meanfield.solve("circle", init="vonmises:4@1", **RUN)
    theta = spec["theta"].values
    from_array = meanfield.solve("circle", init=von_mises(theta, 4.0, 1.0), **RUN)
    from_function = meanfield.solve("circle", init=lambda t: von_mises(t, 4.0, 1.0), **RUN)
    fine = np.linspace(0, 2 * math.pi, 256, endpoint=False)
    from_dataarray = meanfield.solve("circle", init=xr.DataArray(von_mises(fine, 4.0, 1.0), coords={"theta": fine},
                                                                 dims="theta"), **RUN)
    np.testing.assert_array_equal(from_array["density"].values, spec["density"].values)
    np.testing.assert_allclose(from_function["density"].values, spec["density"].values, rtol=0, atol=1e-14)
    # resampled from a finer grid: the start agrees to rounding, the run to the stepper's tolerance
    np.testing.assert_allclose(from_dataarray["density"].values[0], spec["density"].values[0], rtol=0, atol=1e-13)
    # both runs are within a few rtol (1e-8) of the exact flow at the save times: 1e-7 (measured 3.8e-12; the spectral
    # runs stop on resolution loss near t = 0.63 and keep their last states, at times of their own)
    scheduled = spec.time.values[spec.time.values <= RUN["t_final"] / 2]
    np.testing.assert_allclose(from_dataarray["density"].sel(time=scheduled).values,
                               spec["density"].sel(time=scheduled).values, rtol=1e-7)
    assert from_array.attrs["command"] == "meanfield rerun FILE" and spec.attrs["command"].startswith("meanfield solve")
    assert "numpy array" in from_array.attrs["init"]


def test_a_clustered_finite_volume_run_moves_to_another_grid_conservatively():
    clustered = meanfield.solve("circle", scheme="fv", beta=9.0, resolution=128, init="perturbed:1e-2", seed=1,
                                t_final=30.0, save_every=10.0)
    assert clustered["density"].values[-1].max() > 10 / (2 * math.pi)  # clusters have formed
    finer = meanfield.solve("circle", scheme="fv", beta=9.0, resolution=384, init=clustered, t_final=31.0,
                            save_every=0.5)
    assert finer.attrs["restart"] == "remap" and finer.attrs["t_start"] == 30.0
    assert finer.attrs["stop_reason"] == "completed"
    assert abs(float(finer["mass"].values[0]) - float(clustered["mass"].values[-1])) < 1e-13
    assert finer["density"].values.min() >= 0.0


def test_particles_sample_a_dataarray_density():
    theta = np.linspace(0, 2 * math.pi, 128, endpoint=False)
    density = xr.DataArray(von_mises(theta, 2.0, 0.0), coords={"theta": theta}, dims="theta")
    run = simulate(dim=2, n=4000, beta=1.0, init=density, seed=0, t_final=0.1, save_every=0.1)
    first_moment = np.mean(np.cos(run["theta"].values[0]))
    expected = 0.6977746579640081  # I_1(2) / I_0(2)
    assert abs(first_moment - expected) < 4 * math.sqrt(0.5 / 4000)


@pytest.mark.parametrize("geometry", sorted(GEOMETRY_DEFAULTS))
def test_the_api_and_the_command_line_share_their_defaults(geometry):
    params = {p.name: p.default for p in cli.commands["solve"].commands[geometry].params}
    assert params["dim"] in (None, GEOMETRY_DEFAULTS[geometry]["dim"])
    if params["resolution"] is not None:
        assert params["resolution"] == GEOMETRY_DEFAULTS[geometry]["resolution"]
    run = meanfield.solve(geometry, beta=1.0, t_final=0.01, init="uniform")
    assert run.attrs["resolution"] == GEOMETRY_DEFAULTS[geometry]["resolution"]
    assert params["cfl"] is None and run.attrs["cfl"] == 0.5            # the scheme's default (spectral, Galerkin)
    assert run.attrs["rtol"] == params["rtol"]
    assert run.attrs["resolution_tol"] == params["resolution_tol"] and run.attrs["seed"] == params["seed"]
