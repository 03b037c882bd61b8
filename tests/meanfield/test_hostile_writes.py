"""Signals, full disks, killed writers and long names (issue 21, item 1; meanfield.signals, meanfield.storage).

Ctrl-C and SIGTERM at any moment of a run or of its write end the command within seconds with the run
saved and exit 130 / 143; a write that fails for space or permission keeps the run in a fallback folder it
names; temporaries of a killed writer are removed by the next write; names up to the system limit work.
"""

import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from meanfield import signals, storage
from meanfield.cli import exit_status, main
from meanfield.errors import InputError
from meanfield.storage import (FALLBACK_VARIABLE, Unwritable, build_run_dataset, check_output_file,
                               remove_stale_temporaries, save_run)
from solvers.solve import solve

SMALL_RUN = ["solve", "circle", "--scheme", "fv", "--beta", "9", "--resolution", "64", "--no-progress"]


def _small_dataset():
    return build_run_dataset([0.0, 1.0], [{"mass": 1.0}, {"mass": 1.0}], {"mass": ()}, {},
                             {"geometry": "circle", "stop_reason": "completed"})


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("meanfield: error: ")
    return lines[0]


@pytest.fixture
def command_line_signals():
    signals.install()
    yield
    signals.uninstall()


# -- meanfield.signals in this process -----------------------------------------------------------------------
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
    signals.hold()                                      # what the run loop does when it returns
    os.kill(os.getpid(), signal.SIGINT)                 # remembered, not raised
    os.kill(os.getpid(), signal.SIGTERM)
    assert signals.release() == 143                     # SIGTERM wins over Ctrl-C
    assert signals.release() is None                    # once


def test_a_signal_held_between_two_legs_stops_the_second_at_once(command_line_signals):
    signals.save_runs_whole()
    signals.hold()
    os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt) as caught:
        signals.resume()
    assert not isinstance(caught.value, signals.Terminated)
    signals.hold()
    os.kill(os.getpid(), signal.SIGTERM)
    with pytest.raises(signals.Terminated):
        signals.resume()


def test_commands_that_do_not_save_one_run_and_the_library_hold_nothing():
    signals.hold()                                      # not installed: Python's own Ctrl-C
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)
    signals.install()
    try:
        signals.hold()                                  # installed, but no save_runs_whole(): a study, a sweep
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
              "from meanfield.storage import save_run\n"
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
    line = _one_error_line(capsys)
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
    line = _one_error_line(capsys)
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
    line = _one_error_line(capsys)
    assert code == 2 and "--qkv" in line and "allow_pickle" not in line
    assert not out.exists()


# -- signals sent to the command line at random moments (subprocesses) -------------------------------------------
def _launch(folder: Path, t_final: str, save_every: str):
    return subprocess.Popen([sys.executable, "-m", "meanfield.cli", *SMALL_RUN, "--t-final", t_final,
                             "--save-every", save_every, "--out", str(folder / "run.nc")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=Path(__file__).parents[2])


def _writing(folder: Path) -> bool:
    return any(entry.name.endswith(".tmp.nc") for entry in folder.iterdir())


def _cpu_seconds(process) -> float:
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")        # utime + stime


#: CPU seconds after which a command has certainly finished its imports and is stepping (the imports take
#: about 2 s here; the long run it starts takes minutes)
STARTUP_CPU = 3.0


def test_signals_at_random_moments_of_runs_and_writes_save_the_run(tmp_path):
    draw = random.Random(21)
    trials = []
    for index, (moment, sig) in enumerate([("run", signal.SIGINT), ("run", signal.SIGTERM),
                                           ("write", signal.SIGINT), ("write", signal.SIGTERM)]):
        folder = tmp_path / f"trial{index}"
        folder.mkdir()
        # long runs are interrupted while stepping; short runs with many frames while their file is written
        process = _launch(folder, "1e5", "1") if moment == "run" else _launch(folder, "1", "0.001")
        trials.append(dict(moment=moment, sig=sig, folder=folder, process=process, at=None, sent=None))
    end = time.monotonic() + 120
    while any(trial["sent"] is None for trial in trials) and time.monotonic() < end:
        now = time.monotonic()
        for trial in trials:
            process = trial["process"]
            if trial["sent"] is not None or process.poll() is not None:
                continue
            if trial["at"] is None:
                ready = _writing(trial["folder"]) if trial["moment"] == "write" else _cpu_seconds(process) >= STARTUP_CPU
                if ready:
                    trial["at"] = now + (draw.uniform(0.0, 0.004) if trial["moment"] == "write" else draw.uniform(0, 0.5))
            elif now >= trial["at"]:
                process.send_signal(trial["sig"])
                trial["sent"] = now
        time.sleep(0.0005)
    for trial in trials:
        moment, sig, folder, process = trial["moment"], trial["sig"], trial["folder"], trial["process"]
        assert trial["sent"] is not None, (moment, sig, process.poll())          # the moment was caught
        _, err = process.communicate(timeout=30)
        assert time.monotonic() - trial["sent"] < 15               # ends within seconds
        # the signal may land once the command has finished: the process then ends by the signal itself
        assert process.returncode in (128 + sig, -sig), (moment, sig, process.returncode, err)
        assert sorted(entry.name for entry in folder.iterdir()) == ["run.nc"], err   # saved, no temporary
        with xr.open_dataset(folder / "run.nc") as run:
            reason = run.attrs["stop_reason"]
            frames = run.sizes["time"]
        if moment == "run":
            assert reason.startswith("interrupted" + (" by SIGTERM" if sig == signal.SIGTERM else "") + " at t = ")
            assert frames >= 2
        else:
            assert reason == "completed" and frames == 1001


# -- distributed safety (issue 21, item 6) -------------------------------------------------------------------------
def test_the_local_dask_cluster_and_its_dashboard_listen_on_loopback_only():
    from urllib.parse import urlparse

    from validation.tasks import LOOPBACK, dask_client

    with dask_client("processes", 1) as client:
        assert urlparse(client.scheduler.address).hostname == LOOPBACK
        assert urlparse(client.dashboard_link).hostname == LOOPBACK
        assert all(urlparse(worker).hostname == LOOPBACK for worker in client.scheduler_info()["workers"])
        dashboard = client.cluster.scheduler.services.get("dashboard")
        if dashboard is not None:                        # bokeh installed: the dashboard's own sockets
            hosts = {sock.getsockname()[0] for sock in dashboard._sockets.values()}
            assert hosts == {LOOPBACK}
