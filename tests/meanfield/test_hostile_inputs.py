"""Hostile inputs and faults (issue 21): signals, full disks, killed writers, long names, damaged run files.

Ctrl-C and SIGTERM at any moment of a run or of its write end the command within seconds with the run
saved and exit 130 / 143; a write that fails for space or permission keeps the run in a fallback folder it
names; temporaries of a killed writer are removed by the next write; names up to the system limit work;
a damaged run file given to ``--init`` is one line, exit 2, nothing computed or written.
"""

import errno
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from tests.meanfield.error_lines import one_error_line
from tests.run_files import flat, write
from meanfield.app import signals, storage
from meanfield.cli import exit_status, main
from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.app.storage import (FALLBACK_VARIABLE, Unwritable, build_run_dataset, check_output_file,
                               remove_stale_temporaries, save_run)
from meanfield.solvers.runs.solve import solve

SMALL_RUN = ["solve", "circle", "--scheme", "fv", "--beta", "9", "--resolution", "64", "--no-progress"]


def _small_dataset():
    return build_run_dataset([0.0, 1.0], [{"mass": 1.0}, {"mass": 1.0}], {"mass": ()}, {},
                             {"geometry": "circle", "stop_reason": "completed"})




@pytest.fixture
def command_line_signals():
    signals.install()
    yield
    signals.uninstall()


# -- meanfield.app.signals in this process -----------------------------------------------------------------------
def test_sigterm_stops_a_run_between_steps_like_ctrl_c(command_line_signals):
    timer = __import__("threading").Timer(0.8, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    run = solve("circle", scheme="fv", beta=9.0, resolution=128, init="perturbed:1e-4", seed=0, t_final=1e5,
                save_every=1.0)
    timer.join()
    assert run.attrs["stop_reason"].startswith("interrupted by SIGTERM at t = ")
    assert 0 < float(run.time[-1]) < 1e5 and np.all(np.isfinite(run["density"].values))
    assert exit_status(run.attrs["stop_reason"]) == 143


def test_a_signal_after_the_run_waits_for_the_write_and_sets_the_exit_status(command_line_signals):
    signals.save_runs_whole()
    os.kill(os.getpid(), signal.SIGINT)                 # remembered, not raised
    os.kill(os.getpid(), signal.SIGTERM)
    assert signals.release() == 143                     # SIGTERM wins over Ctrl-C
    assert signals.release() is None                    # once


def test_a_signal_held_between_two_legs_stops_the_second_at_once(command_line_signals):
    signals.save_runs_whole()
    os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt) as caught:
        signals.check()
    assert not isinstance(caught.value, signals.Terminated)
    with pytest.raises(KeyboardInterrupt):               # still remembered: the next leg stops too
        signals.check()
    os.kill(os.getpid(), signal.SIGTERM)
    with pytest.raises(signals.Terminated):
        signals.check()


def test_commands_that_do_not_save_one_run_and_the_library_hold_nothing():
    signals.save_runs_whole()                           # not installed: Python's own Ctrl-C
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)
    signals.install()
    try:
        signals.check()                                 # installed, but no save_runs_whole(): a study, a sweep
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
    finally:
        signals.uninstall()


@pytest.mark.parametrize("reason, status", [("completed", 0), ("interrupted at t = 3", 130),
                                            ("interrupted by SIGTERM at t = 3", 143),
                                            ("resolution lost at t = 3", 3)])
def test_exit_status_of_a_stop_reason(reason, status):
    assert exit_status(reason) == status


# -- killed writers ----------------------------------------------------------------------------------------------
def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_next_write_removes_a_killed_writers_temporary_and_nothing_else(tmp_path):
    dead = tmp_path / f".run.{_dead_pid()}-0a1b2c3d.tmp.nc"
    alive = tmp_path / f".run.{os.getpid()}-0a1b2c3d.tmp.nc"          # a writer still at work
    others = [tmp_path / ".run.nc", tmp_path / "run.123-0a1b2c3d.tmp.nc", tmp_path / ".x.12-zz.tmp.nc"]
    for path in (dead, alive, *others):
        path.write_bytes(b"partial")
    save_run(_small_dataset(), tmp_path / "new.nc")
    assert not dead.exists() and alive.exists() and all(path.exists() for path in others)
    assert remove_stale_temporaries(tmp_path) == []


def test_a_killed_writer_leaves_a_temporary_that_the_next_run_removes(tmp_path):
    script = ("import os, xarray as xr, numpy as np\n"
              "from meanfield.app.storage import save_run\n"
              "def stop(path): os.kill(os.getpid(), 9)\n"
              "xr.Dataset.to_netcdf = lambda self, path, **kw: (open(path, 'wb').write(b'x' * 1000), stop(path))\n"
              f"save_run(xr.Dataset({{'a': ('t', np.zeros(3))}}), {str(tmp_path / 'a.nc')!r})\n")
    killed = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[2])
    assert killed.returncode == -9
    assert [path.name.endswith(".tmp.nc") for path in tmp_path.iterdir()] == [True]
    save_run(_small_dataset(), tmp_path / "b.nc")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["b.nc"]


# -- full disks and refused writes -------------------------------------------------------------------------------
@pytest.fixture
def failing_folder(tmp_path, monkeypatch):
    """Writes into tmp_path/"out" fail as a full disk does; tmp_path/"spare" is the fallback folder."""
    target, spare = tmp_path / "out", tmp_path / "spare"
    target.mkdir()
    spare.mkdir()
    monkeypatch.setenv(FALLBACK_VARIABLE, str(spare))
    original = xr.Dataset.to_netcdf
    failure = {"error": OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))}

    def to_netcdf(self, path, *args, **kwargs):
        if Path(path).parent == target:
            Path(path).write_bytes(b"half a file")
            raise failure["error"]
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(xr.Dataset, "to_netcdf", to_netcdf)
    return target, spare, failure


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
                                   OSError(errno.EACCES, os.strerror(errno.EACCES)),
                                   OSError(errno.EROFS, os.strerror(errno.EROFS)),
                                   RuntimeError("NetCDF: HDF error")])
def test_a_run_that_cannot_be_written_is_saved_in_the_fallback_folder(failing_folder, error):
    target, spare, failure = failing_folder
    failure["error"] = error
    with pytest.raises(Unwritable) as caught:
        save_run(_small_dataset(), target / "run.nc")
    message = str(caught.value)
    assert "\n" not in message and f"cannot write {target / 'run.nc'}" in message
    saved = list(spare.iterdir())
    assert len(saved) == 1 and str(saved[0]) in message
    with xr.open_dataset(saved[0]) as back:
        assert back.attrs["stop_reason"] == "completed"
    assert list(target.iterdir()) == []                  # no half file, no temporary


def test_the_command_line_names_the_fallback_and_exits_2(failing_folder, capsys):
    target, spare, _ = failing_folder
    code = main(SMALL_RUN + ["--t-final", "1", "--out", str(target / "run.nc")])
    line = one_error_line(capsys)
    assert code == 2 and "No space left on device" in line and "saved to" in line
    saved = list(spare.iterdir())
    assert len(saved) == 1 and str(saved[0]) in line
    with xr.open_dataset(saved[0]) as back:
        assert back.attrs["stop_reason"] == "completed" and float(back.time[-1]) == 1.0
    assert list(target.iterdir()) == []


def test_no_writable_fallback_is_said_in_one_line(failing_folder, monkeypatch):
    target, spare, _ = failing_folder
    monkeypatch.setattr(storage, "fallback_folders", lambda: [target])
    with pytest.raises(Unwritable, match="no fallback folder could hold it"):
        save_run(_small_dataset(), target / "run.nc")


# -- long names ----------------------------------------------------------------------------------------------------
def test_a_name_at_the_file_system_limit_is_written(tmp_path):
    path = tmp_path / ("a" * 252 + ".nc")
    assert len(path.name.encode()) == 255
    check_output_file(path, "--out", (".nc",))
    save_run(_small_dataset(), path)               # the temporary name is shortened to fit
    assert [entry.name for entry in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize("name", ["a" * 253 + ".nc", "é" * 127 + ".nc", "b" * 300 + "/run.nc"])
def test_names_beyond_the_limit_are_refused_before_computing(tmp_path, capsys, name):
    code = main(SMALL_RUN + ["--t-final", "1", "--out", str(tmp_path / name)])
    line = one_error_line(capsys)
    assert code == 2 and "--out" in line and "bytes" in line
    assert list(tmp_path.iterdir()) == []


def test_a_path_beyond_the_system_limit_is_refused(tmp_path):
    deep = tmp_path.joinpath(*["d" * 200] * 25) / "run.nc"
    with pytest.raises(InputError, match="the path is .* bytes long"):
        check_output_file(deep, "--out", (".nc",))


# -- --qkv files never advise unpickling -------------------------------------------------------------------------
@pytest.mark.parametrize("content", ["garbage", "object array", "single array"])
def test_qkv_files_that_are_not_numeric_archives_get_our_own_line(tmp_path, capsys, content):
    path = tmp_path / "qkv.npz"
    if content == "garbage":
        path.write_bytes(b"not an archive")
    elif content == "object array":
        np.savez(path, Q=np.array([{"a": 1}], dtype=object), K=np.eye(3), V=np.eye(3))
    else:
        with open(path, "wb") as handle:
            np.save(handle, np.eye(3))
    out = tmp_path / "p.nc"
    code = main(["particles", "--dim", "3", "--n", "8", "--beta", "1", "--qkv", str(path), "--t-final", "1",
                 "--out", str(out), "--no-progress"])
    line = one_error_line(capsys)
    assert code == 2 and "--qkv" in line and "allow_pickle" not in line
    assert not out.exists()


# -- signals sent to the command line at random moments (subprocesses) -------------------------------------------
def test_signals_at_random_moments_of_runs_and_writes_save_the_run(tmp_path):
    """Eight trials, two of each kind (validation/benchmarks/signal_trials.py; `meanfield validate bench-signals` runs 40)."""
    from meanfield.validation.benchmarks.signal_trials import format_rows, run_trials

    rows = run_trials(8, tmp_path)
    assert not any(row["problem"] for row in rows), format_rows(rows)


# -- distributed safety (issue 21, item 6) -------------------------------------------------------------------------
def test_the_local_dask_cluster_and_its_dashboard_listen_on_loopback_only():
    from urllib.parse import urlparse

    from meanfield.validation.tasks import LOOPBACK, dask_client

    with dask_client("processes", 1) as client:
        assert urlparse(client.scheduler.address).hostname == LOOPBACK
        assert urlparse(client.dashboard_link).hostname == LOOPBACK
        assert all(urlparse(worker).hostname == LOOPBACK for worker in client.scheduler_info()["workers"])
        dashboard = client.cluster.scheduler.services.get("dashboard")
        if dashboard is not None:                        # bokeh installed: the dashboard's own sockets
            hosts = {sock.getsockname()[0] for sock in dashboard._sockets.values()}
            assert hosts == {LOOPBACK}


# -- run files are input too (issue 21, item 2) --------------------------------------------------------------------
@pytest.fixture(scope="module")
def fv_run_file(tmp_path_factory):
    """A finite-volume run with points (so every kind of restart field is there), saved."""
    path = tmp_path_factory.mktemp("runs") / "fv.nc"
    run = solve("circle", scheme="fv", beta=9.0, resolution=64, init="perturbed:1e-2", seed=0, t_final=12.0,
                save_every=4.0)
    save_run(run, path)
    return path


def _damaged(source: Path, folder: Path, damage) -> Path:
    """``source`` with ``damage`` done to it, its records edited by name (tests/run_files.py) and kept in their
    group."""
    run = flat(source)
    damage(run)
    return write(run, folder / "damaged.nc")


def _set_attr(variable, name, value):
    def damage(run):
        target = run if variable is None else run[variable]
        target.attrs[name] = value
    return damage


def _set_values(variable, change):
    def damage(run):
        values = run[variable].values.copy()
        change(values)
        run[variable] = (run[variable].dims, values, run[variable].attrs)
    return damage


def _rename_fields(fields):
    def damage(run):
        run.attrs["restart_fields"] = fields
        if "interaction.beta" in fields:
            run["restart_interaction__beta"] = ("restart_interaction__beta_value", np.array([40.0]),
                                                {"stored_dtype": "float64", "stored_shape": "[]"})
    return damage


def _shorter_state(run):
    name = "restart_state"
    values = run[name].values[:-3]
    run = run.drop_vars(name)
    run[name] = ("short_value", values, {"stored_dtype": "float64", "stored_shape": json.dumps([values.size])})
    return run


RUN_FILE_DAMAGE = {
    "stored_shape does not match the values": (_set_attr("restart_state", "stored_shape", "[7, 7]"), "stored_shape"),
    "stored_shape is not a list of sizes": (_set_attr("restart_state", "stored_shape", "[-1]"), "stored_shape"),
    "stored_dtype is not a type": (_set_attr("restart_state", "stored_dtype", "int-ish"), "stored_dtype"),
    "stored_dtype is not numeric": (_set_attr("restart_state", "stored_dtype", "<U3"), "stored_dtype"),
    "the state holds a NaN": (_set_values("restart_state", lambda v: v.__setitem__(3, np.nan)), "not finite"),
    "a field holds an infinity": (_set_values("restart_initial_mass", lambda v: v.__setitem__(0, np.inf)),
                                  "not finite"),
    "negative step size": (_set_attr(None, "restart_step_size", -0.1), "restart_step_size"),
    "infinite step size": (_set_attr(None, "restart_step_size", np.inf), "restart_step_size"),
    "clock not finite": (_set_attr(None, "restart_time", np.nan), "restart_time"),
    "clock negative": (_set_attr(None, "restart_time", -1.0), "restart_time"),
    "clock not the last frame's time": (_set_attr(None, "restart_time", 11.0), "last frame"),
    "a field the scheme does not restore": (_rename_fields("initial_mass,interaction.beta"), "interaction.beta"),
    "a field without its variable": (_rename_fields("initial_mass,weights,no_such_field"), "no_such_field"),
    "an integer field stored as floats": (_set_attr("restart_clusters__owned", "stored_dtype", "float64"),
                                          "clusters.owned"),
    "a generator state that is not one": (_set_attr(None, "restart_rng", "{not json"), "restart_rng"),
}


def _rename_initial_fields(fields):
    def damage(run):
        run.attrs["initial_fields"] = fields
        run["initial_interaction__beta"] = ("initial_interaction__beta_value", np.array([40.0]),
                                            {"stored_dtype": "float64", "stored_shape": "[]"})
    return damage


#: The record of a run's start, which `meanfield rerun` repeats it from (solvers/runs/rerun.py), damaged.
START_RECORD_DAMAGE = {
    "the start holds a NaN": (_set_values("initial_state", lambda v: v.__setitem__(3, np.nan)), "not finite"),
    "the start's shape is wrong": (_set_attr("initial_state", "stored_shape", "[7, 7]"), "stored_shape"),
    "the start's clock is not the first frame's": (_set_attr(None, "initial_time", 4.0), "first frame"),
    "a negative first step": (_set_attr(None, "initial_step_size", -1.0), "initial_step_size"),
    "a start field the scheme does not restore": (_rename_initial_fields("interaction.beta"), "interaction.beta"),
    "no start record": (lambda run: run.attrs.pop("initial_time"), "no record of its start"),
}


@pytest.mark.parametrize("case", sorted(START_RECORD_DAMAGE))
def test_a_damaged_start_record_is_one_line_and_nothing_is_rerun(fv_run_file, tmp_path, capsys, case):
    damage, words = START_RECORD_DAMAGE[case]
    source = _damaged(fv_run_file, tmp_path, damage)
    out = tmp_path / "out"
    code = main(["rerun", str(source), "--no-progress", "--out", str(out / "again.nc")])
    line = one_error_line(capsys)
    assert code == 2 and f"rerun {source}" in line and words in line, line
    assert not out.exists()


def test_a_run_from_an_array_records_a_command_that_reruns_it(tmp_path, capsys):
    """Runs from arrays recorded `--init 'numpy array of shape (1024,)'`, which cannot run, and an undocumented
    command_reproduces_run = 0; now their command is `meanfield rerun FILE` and it repeats them bit for bit."""
    theta = 2 * np.pi * np.arange(64) / 64
    run = solve("circle", scheme="fv", beta=9.0, resolution=64, init=(1 + 0.01 * np.cos(4 * theta)) / (2 * np.pi),
                t_final=2.0, save_every=1.0)
    path = tmp_path / "array.nc"
    save_run(run, path)
    assert run.attrs["command"] == "meanfield rerun FILE" and "command_reproduces_run" not in run.attrs
    command = run.attrs["command"].split()[1:]
    assert main([*command[:-1], str(path), "--no-progress", "--out", str(tmp_path / "again.nc")]) == 0
    again = xr.load_dataset(tmp_path / "again.nc")
    np.testing.assert_array_equal(again["density"].values, run["density"].values, strict=True)


#: Option values outside the range table (meanfield.limits.RANGES) or malformed, on every command that reads them.
OPTION_CASES = [
    (["theory", "--beta", "1e10"], "--beta must be a finite number in [0, 1e+09]"),      # ran for ever
    (["theory", "--beta", "nan"], "--beta must be finite"),
    (["theory", "--beta", "inf"], "--beta must be finite"),
    (["theory", "--beta", "1", "--modes", "1000001"], "--modes must be an integer in [1, 1000000]"),
    (["theory", "--beta", "1", "--eps", "1"], "--eps must be a finite number in (0, 1)"),
    (["solve", "circle", "--beta", "2e9", "--t-final", "1"], "--beta must be a finite number in [0, 1e+09]"),
    (["solve", "circle", "--beta", "800", "--attention", "usa", "--t-final", "1"], "--beta must be <= 700"),
    (["solve", "circle", "--beta", "9", "--t-final", "1", "--cfl", "0"], "--cfl must be a finite number in (0, 2]"),
    (["solve", "circle", "--beta", "9", "--t-final", "1", "--rtol", "1"], "--rtol must be a finite number in (0, 1)"),
    (["solve", "circle", "--beta", "9", "--t-final", "1", "--save-log", "1001"], "--save-log must be an integer"),
    (["solve", "circle", "--beta", "9", "--t-final", "1", "--seed", str(2 ** 63)], "--seed must be an integer"),
    (["solve", "circle", "--beta", "9", "--t-final", "1", "--scheme", "lagrangian", "--collapse-tol", "0.1"],
     "--collapse-tol must be a finite number in [0, 0.1)"),
    (["solve", "circle", "--beta", "9", "--t-final", "1", "--init", "perturbed:"], "--init"),
    (["solve", "circle", "--beta", "9", "--t-final", "1", "--init", "vonmises:4@"], "--init"),
    (["solve", "circle", "--beta", "9", "--t-final", "1", "--init", "no-such-run.nc"], "no such file"),
    (["particles", "--n", "4", "--beta", "1", "--dim", "4097", "--t-final", "1"], "--dim must be an integer in [2, 4096]"),
    (["particles", "--n", "0", "--beta", "1", "--t-final", "1"], "--n must be an integer >= 1"),
    (["particles", "--n", "4", "--beta", "1", "--t-final", "1", "--dt-max", "0"], "--dt-max must be a finite number > 0"),
    (["particles", "--n", "4", "--beta", "1", "--t-final", "1", "--normalization", "mix", "--mix-switch", "-1"],
     "--mix-switch must be a finite number >= 0"),
    (["gaussian", "--attention", "sinkhorn", "--sinkhorn-eps", "0", "--t-final", "1"],
     "--sinkhorn-eps must be a finite number > 0"),
]


@pytest.mark.parametrize("argv, words", OPTION_CASES, ids=[" ".join(argv) for argv, _ in OPTION_CASES])
def test_an_option_outside_its_range_is_one_line_and_nothing_is_written(tmp_path, capsys, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    writes = argv[0] in ("solve", "particles", "gaussian")
    code = main(argv + (["--out", str(tmp_path / "out" / "run.nc")] if writes else []))
    line = one_error_line(capsys)
    assert code == 2 and words in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", sorted(RUN_FILE_DAMAGE))
def test_a_damaged_run_file_is_one_line_and_nothing_is_computed(fv_run_file, tmp_path, capsys, case):
    damage, words = RUN_FILE_DAMAGE[case]
    source = _damaged(fv_run_file, tmp_path, damage)
    out = tmp_path / "out"
    code = main(["solve", "circle", "--init", str(source), "--beta", "9", "--t-final", "16", "--no-progress",
                 "--out", str(out / "next.nc")])
    line = one_error_line(capsys)
    assert code == 2 and "--init" in line and words in line, line
    assert not out.exists()


def test_a_restart_state_that_does_not_fit_the_scheme_is_refused(fv_run_file, tmp_path, capsys):
    source = write(_shorter_state(flat(fv_run_file)), tmp_path / "short.nc")
    code = main(["solve", "circle", "--init", str(source), "--beta", "9", "--t-final", "16", "--no-progress",
                 "--out", str(tmp_path / "out" / "next.nc")])
    line = one_error_line(capsys)
    assert code == 2 and "does not fit" in line
    assert not (tmp_path / "out").exists()


def test_an_undamaged_file_still_continues_bit_for_bit(fv_run_file, tmp_path):
    straight = solve("circle", scheme="fv", beta=9.0, resolution=64, init="perturbed:1e-2", seed=0, t_final=16.0,
                     save_every=4.0)
    resumed = solve("circle", init=str(fv_run_file), beta=9.0, t_final=16.0)
    assert resumed.attrs["restart"] == "exact"
    assert np.array_equal(resumed["density"].values[-1], straight["density"].values[-1])


def test_a_run_of_another_geometry_is_named_as_such(tmp_path, capsys):
    sphere = tmp_path / "sphere.nc"
    save_run(solve("sphere", beta=2.0, resolution=7, init="uniform", t_final=0.5), sphere)
    code = main(["solve", "circle", "--init", str(sphere), "--beta", "2", "--t-final", "0.2", "--no-progress",
                 "--out", str(tmp_path / "out" / "c.nc")])
    line = one_error_line(capsys)
    assert code == 2 and "a sphere run" in line and "--t-final" not in line


def test_a_small_file_that_unpacks_beyond_memory_is_refused_before_reading(tmp_path, capsys, monkeypatch):
    import meanfield.limits as limits

    path = tmp_path / "bomb.nc"
    run = _small_dataset()
    run["filler"] = ("cell", np.zeros(4_000_000))         # 32 MB of zeros, a few kB compressed
    run.to_netcdf(path, encoding={"filler": {"zlib": True, "complevel": 9}})
    assert path.stat().st_size < 1_000_000
    monkeypatch.setattr(limits, "memory_budget", lambda: 16_000_000)     # as if the machine had 32 MB
    for command in (["plot", str(path), "--out", str(tmp_path / "out" / "p.png")],
                    ["solve", "circle", "--init", str(path), "--beta", "9", "--t-final", "2", "--no-progress",
                     "--out", str(tmp_path / "out" / "r.nc")]):
        code = main(command)
        line = one_error_line(capsys)
        assert code == 2 and "unpack to" in line and "bomb.nc" in line
    assert not (tmp_path / "out").exists()


# -- a restart keeps its model (issue 21, item 3) -------------------------------------------------------------
@pytest.fixture(scope="module")
def noisy_run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("noisy") / "noisy.nc"
    save_run(solve("circle", scheme="fv", attention="usa", beta=5.0, nu=0.02, resolution=64, init="perturbed:1e-2",
                   seed=0, t_final=2.0, save_every=1.0), path)
    return path


def test_a_continuation_without_model_options_keeps_the_files_model(noisy_run_file, tmp_path):
    out = tmp_path / "next.nc"
    assert main(["solve", "circle", "--init", str(noisy_run_file), "--t-final", "3", "--no-progress",
                 "--out", str(out)]) == 0
    straight = solve("circle", scheme="fv", attention="usa", beta=5.0, nu=0.02, resolution=64, init="perturbed:1e-2",
                     seed=0, t_final=3.0, save_every=1.0)
    with xr.open_dataset(out) as run:
        assert (run.attrs["attention"], run.attrs["beta"], run.attrs["nu"]) == ("usa", 5.0, 0.02)
        assert run.attrs["restart"] == "exact" and run.attrs["override"] == ""
        assert np.array_equal(run["density"].values[-1], straight["density"].values[-1])


@pytest.mark.parametrize("option, value, recorded", [("--beta", "9", "5.0"), ("--nu", "0", "0.02"),
                                                     ("--attention", "sa", "usa")])
def test_a_continuation_that_changes_the_model_is_refused(noisy_run_file, tmp_path, capsys, option, value, recorded):
    out = tmp_path / "out" / "next.nc"
    code = main(["solve", "circle", "--init", str(noisy_run_file), option, value, "--t-final", "3", "--no-progress",
                 "--out", str(out)])
    line = one_error_line(capsys)
    assert code == 2 and f"{option[2:]} = " in line and recorded in line and "--override" in line
    assert not out.parent.exists()


def test_override_allows_the_change_and_records_it(noisy_run_file, tmp_path):
    out = tmp_path / "next.nc"
    assert main(["solve", "circle", "--init", str(noisy_run_file), "--beta", "6", "--override", "--t-final", "3",
                 "--no-progress", "--out", str(out)]) == 0
    with xr.open_dataset(out) as run:
        assert run.attrs["beta"] == 6.0 and run.attrs["override"] == "beta: 5.0 -> 6.0"
        assert run.attrs["command"].endswith("--override")


def test_the_api_keeps_the_model_too(noisy_run_file):
    with pytest.raises(InputError, match="nu = 0.0 differs from 0.02"):
        solve("circle", init=str(noisy_run_file), nu=0.0, t_final=3.0)
    run = solve("circle", init=str(noisy_run_file), nu=0.0, override=True, t_final=3.0)
    assert run.attrs["nu"] == 0.0 and run.attrs["override"] == "nu: 0.02 -> 0.0"


def test_beta_is_required_without_a_run_file(tmp_path, capsys):
    code = main(["solve", "circle", "--t-final", "1", "--no-progress", "--out", str(tmp_path / "out" / "r.nc")])
    line = one_error_line(capsys)
    assert code == 2 and "--beta is required" in line
    assert not (tmp_path / "out").exists()


# -- the documented ranges are the real ones (issue 21, item 5: the theory at large d) ------------------------------
#: I_{nu+l}(x) / I_nu(x) from mpmath (40 digits), independent of scipy and of meanfield.bessel; most of these
#: Bessel functions are below the smallest double
BESSEL_RATIO_REFERENCE = {(2047, 9.0, 1): 0.0021972550219334095, (2047, 9.0, 3): 1.0592671118849197e-08,
                          (229, 9.0, 2): 0.000380851587758674, (383, 1.0, 1): 0.0013020811314952971,
                          (2047, 0.001, 2): 5.957555514884601e-14, (1023, 700.0, 5): 0.0028014632413729686,
                          (0.5, 700.0, 40): 0.3097658145625788, (99, 1e-30, 1): 5e-33}

#: lambda_l from mpmath (40 digits): SA l (l + d - 2) I_{l+nu} / (beta I_nu), USA with Gamma(nu+1) (2/beta)^nu
GROWTH_REFERENCE = {("sa", 4096, 9.0, 1): 0.9997510349797014, ("sa", 4096, 9.0, 3): 1.4466057857975052e-05,
                    ("sa", 460, 9.0, 2): 0.03893149563755334, ("sa", 768, 1.0, 1): 0.9986962278568929,
                    ("sa", 4096, 0.001, 2): 4.880429477793465e-07, ("usa", 256, 0.001, 1): 0.9960937519304143,
                    ("usa", 4096, 700.0, 1): 3.9779170846075155e+25, ("usa", 1024, 50.0, 4): 0.0015461812420875457}


@pytest.mark.parametrize("case", sorted(BESSEL_RATIO_REFERENCE))
def test_bessel_ratios_where_ive_underflows(case):
    from meanfield.bessel import bessel_ratios

    order, x, degree = case
    assert float(bessel_ratios(order, x, degree + 1)[degree]) == pytest.approx(BESSEL_RATIO_REFERENCE[case],
                                                                                 rel=1e-13)


@pytest.mark.parametrize("case", sorted(GROWTH_REFERENCE))
def test_growth_rates_up_to_the_largest_dimension(case):
    from meanfield.theory import growth_rates

    attention, dim, beta, degree = case
    rate = float(growth_rates(Model(attention, beta, 0.0, dim), [degree])[0])
    assert rate == pytest.approx(GROWTH_REFERENCE[case], rel=1e-12)       # was NaN or an OverflowError


#: I_{nu+l}(beta) / I_nu(beta), nu = (d - 2) / 2, from mpmath (40 digits), where only the coefficients' prefactor
#: leaves double precision (large d and beta): ``funk_hecke_ratio`` takes ive's own ratio there
FUNK_HECKE_RATIO_REFERENCE = {(4096, 1e4, 1): 0.81598806295869719, (4096, 1e4, 5): 0.36140449792635693,
                              (4096, 1e4, 100): 9.0761846453922251e-10, (4096, 1e9, 100): 0.99979032198540351,
                              (2000, 3e3, 5): 0.19400477783994697, (2000, 3e3, 100): 1.2766668410875974e-15}


@pytest.mark.parametrize("case", sorted(FUNK_HECKE_RATIO_REFERENCE))
def test_funk_hecke_ratios_where_only_the_prefactor_underflows(case):
    """Was NaN (0 / 0 of underflowed coefficients: `theory --dim 4096 --beta 1e4`) and, through the continued
    fraction whose length grows like beta, a hang at beta = 1e9."""
    from meanfield.kernels import funk_hecke_ratio, representable

    dim, beta, degree = case
    assert not representable(beta, dim)
    assert float(funk_hecke_ratio(np.array([degree]), beta, dim)[0]) == pytest.approx(
        FUNK_HECKE_RATIO_REFERENCE[case], rel=1e-12)


@pytest.mark.parametrize("dim", [2, 3, 4096])
def test_the_band_limit_at_large_beta_is_the_gaussian_width(dim):
    """kappa_l / kappa_0 ~ exp(-l (l + d - 2) / (2 beta)) for l << beta (MATH.md §2.1): the band at tol is
    near sqrt(2 beta log(1/tol)) - (d - 2) / 2, found in O(sqrt(beta)) work (it searched O(beta) orders:
    `theory --beta 1e10` ran for ever and `particles --beta 1e6` spent a minute)."""
    from meanfield.kernels import band_limit

    beta, tol = 1e9, 1e-12
    width = math.sqrt(2 * beta * math.log(1 / tol) + ((dim - 2) / 2) ** 2) - (dim - 2) / 2
    assert abs(band_limit(beta, dim, tol) - width) <= 0.01 * width


def test_theory_at_the_largest_beta_prints_numbers(capsys):
    """At beta = MAX_BETA the dominant mode is sqrt(2 beta) (l (l + d - 2) ~ 2 beta; rate 2 / e)."""
    assert main(["theory", "--beta", "1e9", "--dim", "4096"]) == 0
    out = capsys.readouterr().out
    assert "dominant mode: 42721 (rate 0.73575888)" in out


def test_theory_at_the_dimension_limit_prints_numbers(capsys):
    assert main(["theory", "--dim", "4096", "--beta", "9"]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\bnan\b", out.lower()) and "dominant mode: 1 (rate 0.99975103)" in out


def test_zonal_dimensions_beyond_the_solvers_range_are_one_line(tmp_path, capsys):
    code = main(["solve", "zonal", "--dim", "400", "--beta", "9", "--t-final", "1", "--no-progress",
                 "--out", str(tmp_path / "out" / "z.nc")])
    line = one_error_line(capsys)
    assert code == 2 and "--dim must be <= 256" in line          # was an OverflowError traceback
    assert not (tmp_path / "out").exists()


def test_the_kernel_operator_refuses_coefficients_beyond_double_precision():
    from meanfield.kernel_operator import KernelOperator, largest_representable_dim

    assert 256 < largest_representable_dim(9.0) < 4096
    with pytest.raises(InputError, match="leave double precision"):
        KernelOperator([0, 1], 9.0, 4096)


def test_weights_without_positions_are_refused():
    from meanfield import simulate_particles

    with pytest.raises(InputError, match="weights= needs positions="):
        simulate_particles(dim=3, n=4, beta=1.0, weights=np.full(4, 0.25), t_final=0.1)


@pytest.mark.parametrize("units", [None, "degrees"])
def test_a_dataarray_in_degrees_is_refused(units):
    degrees = np.arange(0.0, 360.0, 360.0 / 64)
    data = xr.DataArray(1.0 + 0.1 * np.cos(np.radians(degrees)), coords={"theta": degrees}, dims="theta")
    if units:
        data["theta"].attrs["units"] = units
    with pytest.raises(InputError, match="theta"):
        solve("circle", beta=1.0, scheme="fv", resolution=64, init=data, t_final=0.1)


def test_a_sweep_beyond_the_beta_limit_is_refused_before_any_chunk(tmp_path, capsys):
    store = tmp_path / "store"
    code = main(["sweep", "phase-diagram", "--store", str(store), "--quick", "--betas", "1,701",
                 "--scheduler", "synchronous", "--no-progress"])
    line = one_error_line(capsys)
    assert code == 2 and "--betas must be <= 700" in line
    assert not store.exists() or list(store.iterdir()) == []


def test_matrix_entries_beyond_the_range_are_one_line_and_the_largest_allowed_run(tmp_path, capsys):
    """Entries of 1e200 made the logits overflow, the velocities NaN and the step loop for ever; the range table
    allows |entry| <= 1e100, where beta <Qx, Ky> = 1e200 <x, y> is still a finite (hard) softmax whose stiffness
    the step size follows down until it underflows: the run stops and says so, with finite frames."""
    from meanfield import simulate_particles

    path = tmp_path / "huge.npz"
    np.savez(path, Q=np.eye(3) * 1e200, K=np.eye(3) * 1e200, V=np.eye(3))
    code = main(["particles", "--dim", "3", "--n", "8", "--beta", "1", "--qkv", str(path), "--t-final", "1",
                 "--no-progress", "--out", str(tmp_path / "x" / "p.nc")])
    line = one_error_line(capsys)
    assert code == 2 and "Q: entries must be at most 1e+100 in magnitude (got 1e+200)" in line
    assert not (tmp_path / "x").exists()
    run = simulate_particles(dim=3, n=8, beta=1.0, Q=np.eye(3) * 1e100, K=np.eye(3) * 1e100, t_final=1.0,
                             save_every=0.5, interaction="direct")
    assert run.attrs["stop_reason"].startswith("step size underflow")
    assert np.all(np.isfinite(run["positions"].values))


def test_a_right_hand_side_that_is_not_finite_stops_the_run_instead_of_looping(monkeypatch):
    """A NaN right-hand side (a bug, or overflow the range table missed) stops the run with its reason and keeps
    every finite frame; it looped for ever on a NaN step size."""
    from meanfield import simulate_particles
    from meanfield.solvers.schemes.particles import ParticleScheme

    original = ParticleScheme.rhs

    def poisoned(self, x, t):
        change = original(self, x, t)
        return change * np.nan if t > 0.3 else change        # every stage after t = 0.3

    monkeypatch.setattr(ParticleScheme, "rhs", poisoned)
    run = simulate_particles(dim=3, n=8, beta=1.0, t_final=1.0, save_every=0.25, interaction="direct")
    assert run.attrs["stop_reason"].startswith(("step size is not a positive number", "step size underflow"))
    assert run.sizes["time"] >= 2 and np.all(np.isfinite(run["positions"].values))


def test_a_particle_continuation_keeps_its_matrices(tmp_path, capsys):
    first = tmp_path / "p5.nc"
    common = ["particles", "--dim", "3", "--n", "16", "--beta", "2", "--qkv", "random", "--no-progress"]
    assert main(common + ["--seed", "5", "--t-final", "1", "--out", str(first)]) == 0
    capsys.readouterr()
    code = main(common + ["--seed", "6", "--init", str(first), "--t-final", "2", "--out", str(tmp_path / "x" / "p.nc")])
    line = one_error_line(capsys)
    assert code == 2 and "seed = 6 differs from 5" in line and not (tmp_path / "x").exists()   # Q, K, V swapped before
    code = main(common + ["--seed", "5", "--nu", "0.1", "--init", str(first), "--t-final", "2",
                          "--out", str(tmp_path / "x" / "p.nc")])
    assert code == 2 and "nu = 0.1 differs from 0.0" in one_error_line(capsys)
    assert main(common + ["--seed", "6", "--override", "--init", str(first), "--t-final", "2",
                          "--out", str(tmp_path / "p6.nc")]) == 0
    with xr.open_dataset(tmp_path / "p6.nc") as run:
        assert run.attrs["override"] == "seed: 5 -> 6" and run.attrs["restart"] == "exact"


def test_a_continuation_keeps_its_normalisation_and_its_parameters(tmp_path, capsys):
    """Continuing a Peri-LN Lagrangian run without --normalization continued as Post-LN (a remap: the model
    changed without a word); now the scheme and r0 come from the file and a different one is refused."""
    first = tmp_path / "peri.nc"
    common = ["solve", "circle", "--scheme", "lagrangian", "--resolution", "32", "--no-progress"]
    assert main(common + ["--beta", "3", "--normalization", "peri", "--r0", "1.5", "--t-final", "1",
                          "--out", str(first)]) == 0
    assert main(common + ["--init", str(first), "--t-final", "2", "--out", str(tmp_path / "next.nc")]) == 0
    with xr.open_dataset(tmp_path / "next.nc") as run:
        assert (run.attrs["normalization"], run.attrs["r0"], run.attrs["restart"]) == ("peri", 1.5, "exact")
    capsys.readouterr()
    for change in (["--normalization", "post"], ["--r0", "2"]):
        code = main(common + change + ["--init", str(first), "--t-final", "2", "--out", str(tmp_path / "x" / "r.nc")])
        line = one_error_line(capsys)
        assert code == 2 and "differs from peri, r0 = 1.5, the --init run's" in line and not (tmp_path / "x").exists()
    code = main(["solve", "circle", "--scheme", "fv", "--init", str(first), "--t-final", "2", "--no-progress",
                 "--out", str(tmp_path / "x" / "fv.nc")])
    line = one_error_line(capsys)           # the scheme came from the file: the message says so and what to do
    assert code == 2 and "ran --normalization peri" in line and "--normalization post --override" in line


def test_a_particle_continuation_needs_no_option_its_file_records(tmp_path):
    """--beta was required and --attention, --nu, --qkv, --seed and --normalization took their defaults, so a
    restart had to repeat them all; now the file supplies them, Q, K, V from a .npz file included (the .npz
    may be gone), and the continued run equals one uninterrupted run bit for bit."""
    matrices = tmp_path / "qkv.npz"
    rng = np.random.default_rng(3)
    np.savez(matrices, Q=0.5 * rng.standard_normal((3, 3)), K=0.5 * rng.standard_normal((3, 3)), V=np.eye(3))
    common = ["particles", "--dim", "3", "--n", "12", "--no-progress", "--save-every", "0.5"]
    model = ["--attention", "usa", "--beta", "2", "--nu", "0", "--qkv", str(matrices), "--seed", "4",
             "--normalization", "ngpt", "--alpha", "0.5"]
    assert main(common + model + ["--t-final", "1", "--out", str(tmp_path / "a.nc")]) == 0
    assert main(common + model + ["--t-final", "2", "--out", str(tmp_path / "whole.nc")]) == 0
    matrices.unlink()
    assert main(common + ["--init", str(tmp_path / "a.nc"), "--t-final", "2", "--out", str(tmp_path / "b.nc")]) == 0
    with xr.open_dataset(tmp_path / "b.nc") as continued, xr.open_dataset(tmp_path / "whole.nc") as whole:
        assert continued.attrs["restart"] == "exact" and continued.attrs["override"] == ""
        for key in ("attention", "beta", "nu", "normalization", "alpha"):
            assert continued.attrs[key] == whole.attrs[key], key
        np.testing.assert_array_equal(continued["positions"].values[-1], whole["positions"].values[-1])


def test_a_large_beta_on_the_sphere_decides_the_particle_path_before_building_its_tables():
    """`particles --beta 1e6` spent over a minute building S^2 harmonic tables (band 7e3: 2.7e7 coefficients)
    for a path `auto` then did not take; the band is now weighed first and nothing is built."""
    from meanfield.solvers.schemes.particles import ParticleScheme

    scheme = ParticleScheme(Model("sa", 1e6, 0.0, 3), 50)
    assert scheme.interaction_path == "direct" and not hasattr(scheme, "_sphere_harmonic")
