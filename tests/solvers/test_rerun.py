"""Every run repeats from its own file, bit for bit (issue 21 item 4; solvers/runs/rerun.py).

A run started from data that cannot be typed (an array, a DataArray, a function, positions, a run file that is
later deleted) stores the record of its start; ``meanfield.rerun`` / ``meanfield rerun`` must reproduce every
frame, merge and restart record exactly.  What would fail: a setting not carried back from the attributes
(stepper, tolerances, normalisation parameters, save times, backend), a field of the scheme not in the start
record, the noise generator not restored, Q, K, V not taken from the file.
"""

import math

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.cli import main
from meanfield.errors import InputError
from meanfield.solvers.records.run_record import RERUN_COMMAND

THETA = 2 * math.pi * np.arange(128) / 128
BUMPY = (1 + 0.02 * np.cos(3 * THETA) + 0.01 * np.sin(5 * THETA)) / (2 * math.pi)
NOT_COMPARED = {"wall_time", "rerun_of", "threads", "blas_threads"}


def assert_same_run(first: xr.Dataset, again: xr.Dataset) -> None:
    """Every variable (frames, merges, and in ``meanfield.restart`` the restart and start records) equal bit for bit,
    and the attributes that describe the run (not the wall time)."""
    for mine, theirs in ((first, again), (first.meanfield.restart, again.meanfield.restart)):
        assert set(mine.data_vars) == set(theirs.data_vars)
        for name in mine.data_vars:
            np.testing.assert_array_equal(theirs[name].values, mine[name].values, err_msg=name, strict=True)
        for key, value in mine.attrs.items():
            if key not in NOT_COMPARED:
                assert theirs.attrs[key] == value or (value != value and theirs.attrs[key] != theirs.attrs[key]), key
    assert first.meanfield.restart.data_vars                      # the records are there to compare
    np.testing.assert_array_equal(again["time"].values, first["time"].values, strict=True)


def saved_and_rerun(dataset: xr.Dataset, path) -> xr.Dataset:
    meanfield.save_run(dataset, path)
    first = meanfield.load_run(path)
    again = meanfield.rerun(path)
    assert again.attrs["rerun_of"] == str(path)
    assert_same_run(first, again)
    return again


@pytest.mark.parametrize("scheme, init, settings", [                          # settings away from the defaults
    ("spectral", BUMPY, {"rtol": 1e-9, "atol": 1e-12, "backend": "scipy"}),  # an array
    ("fv", xr.DataArray(BUMPY, coords={"theta": THETA}, dims="theta"), {"cfl": 0.3}),         # a DataArray
    ("lagrangian", lambda t: 1 + 0.02 * np.cos(3 * t), {"stepper": "rk4", "collapse_tol": 1e-9}),  # a function
])
def test_circle_runs_from_data_in_memory_repeat_bit_for_bit(tmp_path, scheme, init, settings):
    run = meanfield.solve("circle", scheme=scheme, beta=5.0, resolution=128, init=init, t_final=2.0, save_every=1.0,
                          **settings)
    assert run.attrs["command"] == RERUN_COMMAND and "command_reproduces_run" not in run.attrs
    saved_and_rerun(run, tmp_path / "run.nc")


def test_a_noisy_run_repeats_its_noise_and_a_continued_run_outlives_its_source(tmp_path):
    """nu > 0: the start record holds the generator; the restart's start is the source's restart record,
    so it repeats after the source file is gone."""
    source = tmp_path / "source.nc"
    meanfield.save_run(meanfield.solve("circle", beta=5.0, nu=0.05, resolution=128, init=BUMPY, t_final=1.0,
                                       save_every=0.5), source)
    continued = meanfield.solve("circle", init=str(source), t_final=2.0)
    assert continued.attrs["restart"] == "exact"
    source.unlink()
    saved_and_rerun(continued, tmp_path / "continued.nc")


def test_zonal_and_sphere_runs_from_functions_repeat_bit_for_bit(tmp_path):
    zonal = meanfield.solve("zonal", dim=5, beta=4.0, resolution=48, init=lambda p: 1 + 0.02 * np.cos(2 * p),
                            t_final=1.0, save_log=3, resolution_tol=1e-4, positivity_tol=1e-6)
    saved_and_rerun(zonal, tmp_path / "zonal.nc")
    sphere = meanfield.solve("sphere", beta=3.0, resolution=24, t_final=0.5, save_every=0.25,
                             init=lambda theta, phi: 1 + 0.02 * np.sin(theta) * np.sin(phi))
    saved_and_rerun(sphere, tmp_path / "sphere.nc")


def test_a_mix_ln_run_repeats_across_its_switch(tmp_path):
    """The normalisation and its parameters come back from the attributes (MATH.md §6)."""
    run = meanfield.solve("circle", scheme="lagrangian", beta=5.0, resolution=64, init=BUMPY[::2] * 1.0,
                          normalization="mix", r0=1.3, mix_switch=0.7, t_final=1.5, save_every=0.5)
    saved_and_rerun(run, tmp_path / "mix.nc")


def test_particle_runs_from_positions_and_matrices_repeat_bit_for_bit(tmp_path):
    rng = np.random.default_rng(7)
    positions = rng.standard_normal((40, 3))
    positions /= np.linalg.norm(positions, axis=1, keepdims=True)
    noisy = meanfield.simulate_particles(dim=3, n=40, attention="usa", beta=2.0, nu=0.05, positions=positions,
                                         seed=3, t_final=1.0, save_every=0.5, dt_max=0.05, rtol=1e-7)
    assert noisy.attrs["command"] == RERUN_COMMAND
    saved_and_rerun(noisy, tmp_path / "noisy.nc")
    custom = meanfield.simulate_particles(dim=3, n=24, beta=2.0, Q=0.4 * rng.standard_normal((3, 3)),
                                          t_final=1.0, save_every=0.5)
    saved_and_rerun(custom, tmp_path / "custom.nc")
    heads = [tuple(0.5 * rng.standard_normal((3, 3)) for _ in range(3)) for _ in range(2)]
    multi = meanfield.simulate_particles(dim=3, n=16, beta=1.0, heads=heads, t_final=0.5, save_every=0.25)
    saved_and_rerun(multi, tmp_path / "heads.nc")


def test_the_command_line_reruns_and_refuses_a_damaged_start_record(tmp_path, capsys):
    path = tmp_path / "run.nc"
    meanfield.save_run(meanfield.solve("circle", scheme="fv", beta=5.0, resolution=64, init=BUMPY[::2],
                                       t_final=1.0, save_every=0.5), path)
    assert main(["rerun", str(path), "--out", str(tmp_path / "again.nc"), "--no-progress"]) == 0
    assert_same_run(meanfield.load_run(path), meanfield.load_run(tmp_path / "again.nc"))

    first = meanfield.load_run(path)
    records = first.meanfield.restart
    damaged = {"nan-state": records.assign(initial_state=records["initial_state"].where(
                   np.arange(records.sizes["initial_state_value"]) != 3)),
               "clock": records.assign_attrs(initial_time=0.25),
               "no-record": records.drop_vars("initial_state")}
    for name, changed in damaged.items():
        bad = tmp_path / f"{name}.nc"
        dataset = first.copy()
        dataset.meanfield.restart = changed
        meanfield.save_run(dataset, bad)
        out = tmp_path / f"{name}-out.nc"
        capsys.readouterr()
        assert main(["rerun", str(bad), "--out", str(out), "--no-progress"]) == 2 and not out.exists(), name
        message = capsys.readouterr().err.strip()
        assert message.count("\n") == 0 and message.startswith(f"meanfield: error: rerun {bad}"), message
    first.meanfield.restart = damaged["no-record"]
    with pytest.raises(InputError, match="no record of its start"):
        meanfield.rerun(first)


def test_a_blas_run_is_rerun_on_the_thread_count_it_recorded(tmp_path):
    """Particle sums go through BLAS, whose threaded results change with the count (meanfield.app.threads): the
    re-run takes the file's ``threads``, not the setting in effect."""
    from meanfield.app.threads import available_cores, thread_count, use_threads

    with use_threads(1):
        run = meanfield.simulate_particles(dim=3, n=600, beta=1.0, init="uniform", seed=2, t_final=0.2,
                                           save_every=0.1, interaction="direct")
    assert run.attrs["threads"] == 1 and run.attrs["bit_reproducible_across_threads"] == 0
    with use_threads(available_cores()):
        again = saved_and_rerun(run, tmp_path / "blas.nc")
        assert thread_count() == available_cores()
    assert again.attrs["threads"] == 1


def test_rerun_runs_on_to_a_later_end_bit_for_bit_and_names_its_file(tmp_path):
    """``rerun --t-final T`` is the run started to T (frames on the file's cadence); without --out it writes
    RUN-rerun.nc beside RUN, never over it."""
    from meanfield.app.storage import save_run

    for first, straight, name in (
            (meanfield.solve("circle", beta=4.0, resolution=64, t_final=2.0, save_every=0.5),
             meanfield.solve("circle", beta=4.0, resolution=64, t_final=4.0, save_every=0.5), "density"),
            (meanfield.simulate_particles(dim=3, n=64, beta=4.0, seed=3, t_final=2.0, save_every=0.5),
             meanfield.simulate_particles(dim=3, n=64, beta=4.0, seed=3, t_final=4.0, save_every=0.5), "positions")):
        path = save_run(first, tmp_path / f"{name}.nc")
        assert main(["rerun", str(path), "--t-final", "4", "--no-progress"]) == 0
        with xr.open_dataset(tmp_path / f"{name}-rerun.nc") as again:
            assert again.attrs["t_final"] == 4.0
            np.testing.assert_array_equal(again["time"].values, straight["time"].values)
            assert np.array_equal(again[name].values, straight[name].values)
