"""Exact restarts (meanfield.solvers.records.checkpoint): 0 -> T/2 from a file, then T/2 -> T, is 0 -> T bit for bit.

The half-way time is a save time of the whole run, so the run loop lands a step on it in
both runs; everything after it (adaptive step size, collapse owner map and merged weights,
the noise generator, the resolution monitor's reference) must come back from the file.
"""

import numpy as np
import pytest

import meanfield
from meanfield.errors import InputError
from meanfield.app.storage import save_run
from meanfield.solvers.runs.particle_run import simulate


def _frames_equal(whole, first, second) -> None:
    """``whole``'s frames are ``first``'s followed by ``second``'s (whose first frame repeats the join)."""
    np.testing.assert_array_equal(whole.time.values, np.concatenate([first.time.values, second.time.values[1:]]))
    assert second.attrs["t_start"] == first.time.values[-1] == first.attrs["t_final"]
    compared = [name for name in whole.data_vars if "time" in whole[name].dims]
    assert {"energy"} <= set(compared)
    width = whole.sizes.get("cluster", 0)           # the cluster table is as wide as each run's largest count
    if width:
        fill = {"cluster_id": -1, "cluster_mass": np.nan, "cluster_centre": np.nan}
        first, second = (part.pad(cluster=(0, width - part.sizes["cluster"]), constant_values=fill)
                         for part in (first, second))
    for name in compared:
        joined = np.concatenate([first[name].values, second[name].values[1:]])
        np.testing.assert_array_equal(whole[name].values, joined, err_msg=name)
        np.testing.assert_array_equal(first[name].values[-1], second[name].values[0], err_msg=name)


def _split(run, tmp_path, half: float, whole_time: float, **settings):
    whole = run(t_final=whole_time, **settings)
    first = run(t_final=half, **settings)
    path = save_run(first, tmp_path / "first.nc")
    second = run(t_final=whole_time, **dict(settings, init=str(path)))
    assert second.attrs["restart"] == "exact"
    return whole, first, second


PDE_CASES = [
    ("circle", {"scheme": "spectral", "stepper": "dopri5", "resolution": 64, "beta": 4.0}),
    ("circle", {"scheme": "spectral", "stepper": "rk4", "resolution": 64, "beta": 4.0}),
    ("circle", {"scheme": "spectral", "stepper": "etdrk4", "resolution": 64, "beta": 4.0, "nu": 0.02}),
    ("circle", {"scheme": "spectral", "stepper": "ssprk3", "resolution": 64, "beta": 4.0, "cfl": 0.2}),
    ("circle", {"scheme": "fv", "stepper": "ssprk3", "resolution": 64, "beta": 4.0}),
    ("circle", {"scheme": "fv", "stepper": "dopri5", "resolution": 64, "beta": 4.0, "nu": 0.01}),
    ("circle", {"scheme": "lagrangian", "stepper": "dopri5", "resolution": 64, "beta": 4.0}),
    ("sphere", {"scheme": "spectral", "stepper": "dopri5", "resolution": 11, "beta": 2.0, "nu": 0.01}),
    ("sphere", {"scheme": "lagrangian", "stepper": "dopri5", "resolution": 7, "beta": 2.0}),
    ("zonal", {"scheme": "galerkin", "stepper": "dopri5", "resolution": 16, "beta": 2.0, "dim": 5}),
    ("zonal", {"scheme": "fv", "stepper": "ssprk3", "resolution": 32, "beta": 2.0}),
]


@pytest.mark.parametrize("geometry, settings", PDE_CASES,
                         ids=[f"{g}-{s['scheme']}-{s['stepper']}" for g, s in PDE_CASES])
def test_pde_restart_from_a_file_is_bit_for_bit(tmp_path, geometry, settings):
    # perturbed:1e-5: the coarse spectral grids (N = 64, L = 16) keep their monitored tail below 1e-6 to t = 6
    run = lambda **kw: meanfield.solve(geometry, init=kw.pop("init", "perturbed:1e-5"), seed=3, save_every=1.0, **kw)
    whole, first, second = _split(run, tmp_path, 3.0, 6.0, **settings)
    assert whole.attrs["stop_reason"] == "completed"


def test_lagrangian_restart_after_merges_keeps_the_collapsed_nodes(tmp_path):
    """Circle nodes merge before the join: the owner map, merged weights and seam offsets come back."""
    run = lambda **kw: meanfield.solve("circle", scheme="lagrangian", resolution=64, beta=9.0,
                                       init=kw.pop("init", "perturbed:1e-3"), seed=0, save_log=5, **kw)
    whole, first, second = _split(run, tmp_path, 100.0, 1e4)
    assert int(first["cluster_count"].values[-1]) < 64 and bool(first.meanfield.restart["restart_collapser__merged"].values[0])
    assert int(whole["cluster_count"].values[-1]) == int(second["cluster_count"].values[-1]) == 2
    assert second.sizes["merge"] >= 2  # the two late merges (t ~ 440 and 1436) happen after the join
    np.testing.assert_array_equal(np.concatenate([first["merge_time"].values, second["merge_time"].values]),
                                  whole["merge_time"].values)


@pytest.mark.parametrize("settings", [
    {"dim": 2, "n": 128, "beta": 9.0, "init": "perturbed:1e-3", "save_log": 5},      # collapse and merges
    {"dim": 3, "n": 64, "beta": 2.0, "nu": 0.05, "save_every": 0.5},                  # noise: the generator
    {"dim": 4, "n": 32, "beta": 3.0, "qkv": "random", "stepper": "rk4", "save_every": 0.5},
], ids=["circle-collapse", "noise", "random-qkv-rk4"])
def test_particle_restart_from_a_file_is_bit_for_bit(tmp_path, settings):
    init = settings.pop("init", "uniform")
    half, end = (30.0, 3000.0) if "save_log" in settings else (2.0, 4.0)
    run = lambda **kw: simulate(seed=1, init=kw.pop("init", init), **kw, **settings)
    whole, first, second = _split(run, tmp_path, half, end)
    assert second.attrs["restart"] == "exact"


def test_a_dataset_continues_in_memory_and_the_clock_goes_on():
    first = meanfield.solve("circle", resolution=64, beta=4.0, init="perturbed:1e-5", t_final=2.0, save_every=0.5)
    second = meanfield.solve("circle", init=first, t_final=3.0, save_every=0.5)
    assert second.attrs["resolution"] == 64 and second.attrs["scheme"] == "spectral"  # taken from the run
    np.testing.assert_allclose(second.time.values, [2.0, 2.5, 3.0])
    with pytest.raises(InputError, match="t_final is the end time"):
        meanfield.solve("circle", init=first, t_final=1.0)


def test_a_run_that_stops_early_keeps_its_last_valid_state_as_a_flagged_frame():
    # too coarse a grid for beta = 9: the resolution monitor stops the run between save times
    run = meanfield.solve("circle", resolution=48, beta=9.0, init="perturbed:1e-3", t_final=50.0, save_every=10.0)
    assert run.attrs["stop_reason"].startswith("resolution lost")
    assert run.attrs["last_frame_off_schedule"] == 1
    last = float(run.time.values[-1])
    assert last not in (0.0, 10.0, 20.0, 30.0, 40.0, 50.0) and last == run.attrs["t_reached"]
    assert last == run.meanfield.restart.attrs["restart_time"]
    complete = meanfield.solve("circle", resolution=64, beta=4.0, t_final=1.0)
    assert complete.attrs["last_frame_off_schedule"] == 0
