"""Hostile inputs, round two (issue 35): runs that never ended, frame counts that took minutes, files that block.

A step below round-off of the clock (``--cfl 1e-300``, ``--dt-max 1e-300``) stops the run with its reason (exit 3)
in every stepper; a run that cannot reach its end in any number of steps the machine could take stops the same way;
``--t-final`` beyond what a field at rest reaches and frame counts beyond what the bookkeeping can do in minutes
are refused in one line before computing; a named pipe or a device given as a file is refused before it is opened,
and a ``--qkv`` archive's arrays are checked from their headers before their data is read; a ``--scheduler``
address where something other than Dask answers is its own line, not "out of memory".
"""

import io
import math
import os
import socket
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest
import xarray as xr

from tests.meanfield.error_lines import one_error_line
from meanfield.cli import exit_status, main
from meanfield.errors import InputError
from meanfield.limits import MAX_FRAMES, MAX_T_FINAL
from meanfield.qkv import qkv_file
from meanfield.solvers.runs.runloop import MAX_STEPS, steps_to_cover

CIRCLE = ["solve", "circle", "--beta", "9", "--resolution", "64", "--no-progress"]
PARTICLES = ["particles", "--n", "8", "--beta", "1", "--no-progress"]




def _refused(capsys, args, out) -> str:
    """The one error line of a command refused with status 2 that left no output behind."""
    code = main(args + ["--out", str(out)])
    line = one_error_line(capsys)
    assert code == 2 and "out of memory" not in line, line
    assert not out.exists() and not out.parent.exists()
    return line


def _stopped(capsys, args, out) -> str:
    """The stop reason of a command that ran, stopped early with status 3 and saved what it computed."""
    code = main(args + ["--out", str(out)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and len(captured.err.strip().splitlines()) == 1, captured.err
    assert captured.err.startswith("meanfield: the run did not complete (")
    with xr.open_dataset(out) as run:
        reason = run.attrs["stop_reason"]
        assert run.sizes["time"] >= 1
    assert code == 3 == exit_status(reason), reason
    return reason


# -- 1a: a step within round-off of the clock stops every stepper ---------------------------------------------------
@pytest.mark.parametrize("scheme, stepper", [("fv", "ssprk3"), ("spectral", "rk4"), ("spectral", "ssprk3"),
                                             ("spectral", "etdrk4"), ("spectral", "dopri5")])
def test_a_cfl_below_round_off_stops_the_run_at_once(tmp_path, capsys, scheme, stepper):
    """``--cfl 1e-300`` stepped for ever (fixed steps had no guard; t = 1.2e-293 after 15 s)."""
    reason = _stopped(capsys, CIRCLE + ["--scheme", scheme, "--stepper", stepper, "--t-final", "1", "--cfl", "1e-300"],
                      tmp_path / "run.nc")
    assert reason.startswith("step size underflow (h = ") and "at t = 0:" in reason
    assert "the scheme's step bound at cfl = 1e-300 is within round-off of the clock" in reason


@pytest.mark.parametrize("stepper", ["rk4", "dopri5"])
def test_a_dt_max_below_round_off_stops_a_particle_run(tmp_path, capsys, stepper):
    reason = _stopped(capsys, PARTICLES + ["--stepper", stepper, "--t-final", "1", "--dt-max", "1e-300"],
                      tmp_path / "p.nc")
    assert reason.startswith("step size underflow") and "dt_max = 1e-300 is within round-off" in reason


def test_round_off_is_relative_to_the_clock():
    """The guard is ``h <= 1e-14 max(|t|, 1)``: a step of 1e-3 is fine at t = 1 and round-off at t = 1e12."""
    from meanfield.solvers.schemes.contract import Scheme
    from meanfield.solvers.steppers.steppers import RK4, StepSizeUnderflow

    class Still(Scheme):
        """The least scheme: nothing moves, every step bound is 1e-3."""
        name, linear, state_scale, noise_schedule, power_of_two_steps = "still", None, 1.0, None, False
        rhs = staticmethod(lambda state, t: np.zeros_like(state))
        stable_dt = staticmethod(lambda cfl: 1e-3)
        validity = staticmethod(lambda state, t: None)
        frame = staticmethod(lambda state: {})
        dims = coords = staticmethod(lambda: {})
        after_step = staticmethod(lambda state, h: state)

    stepper = RK4(Still(), cfl=0.5)
    assert stepper.step(np.ones(2), 1.0, 1.0)[1] == 1.001
    with pytest.raises(StepSizeUnderflow, match=r"h = 0.001\) at t = 1e\+12"):
        stepper.step(np.ones(2), 1e12, 1.0)


# -- 1b: an end time no step of a field at rest reaches --------------------------------------------------------------
def test_an_end_time_beyond_the_steps_of_a_field_at_rest_is_refused(tmp_path, capsys):
    """A Lagrangian run to 1e308 took 2e8 steps of 5e299 (its rates are floored at 1e-300): ~a day for nothing."""
    line = _refused(capsys, CIRCLE + ["--scheme", "lagrangian", "--t-final", "1e308", "--save-every", "1e307"],
                    tmp_path / "out" / "run.nc")
    assert f"--t-final must be a finite number in (0, {MAX_T_FINAL:g}]" in line


def test_the_latest_end_time_is_reached_by_a_run_at_rest(tmp_path):
    code = main(CIRCLE + ["--scheme", "lagrangian", "--t-final", "1e300", "--save-every", "1e299",
                          "--out", str(tmp_path / "run.nc")])
    assert code == 0
    with xr.open_dataset(tmp_path / "run.nc") as run:
        assert float(run.time[-1]) == 1e300 and run.attrs["stop_reason"] == "completed"


def test_a_run_at_rest_up_to_round_off_stops_when_its_end_is_out_of_reach(tmp_path, capsys):
    """One particle's speed is round-off (~1e-17), so its steps stay near 1e10: 1e290 steps to t = 1e300."""
    reason = _stopped(capsys, PARTICLES + ["--t-final", "1e300", "--save-every", "1e299"], tmp_path / "p.nc")
    assert reason.startswith("too many steps: at t = ") and f"over the limit of {MAX_STEPS:g}" in reason


def test_steps_to_cover_counts_growing_steps_geometrically():
    assert steps_to_cover(1e6, 1.0, 1.0, 1000) == 1e6
    assert steps_to_cover(1e6, 0.0, 1.0, 1000) == math.inf
    # steps doubling every 1000: 1000 (2^k - 1) cover 1e6 at k = log2(1001)
    assert steps_to_cover(1e6, 1.0, 2.0, 1000) == pytest.approx(1000 * math.log2(1001))
    assert steps_to_cover(1e300, 1e-300, 5.0, 1000) == math.inf


# -- 1c: frames bounded in time as in memory ------------------------------------------------------------------------
@pytest.mark.parametrize("command", [CIRCLE, PARTICLES])
def test_frames_beyond_what_the_bookkeeping_does_in_minutes_are_refused(tmp_path, capsys, command):
    """``--save-log 1000 --t-final 1e300`` asked for 3e5 frames, each a step and its record (minutes)."""
    line = _refused(capsys, command + ["--save-log", "1000", "--t-final", "1e300"], tmp_path / "out" / "r.nc")
    assert f"--save-log 1000 saves 3.02e+05 frames up to --t-final 1e+300; at most {MAX_FRAMES} frames" in line
    assert "(--save-log <= 662)" in line
    line = _refused(capsys, command + ["--save-every", "1e-6", "--t-final", "1"], tmp_path / "out" / "r.nc")
    assert f"at most {MAX_FRAMES} frames" in line and "(--save-every >= 5e-06)" in line


# -- 1d: files that are not regular files ------------------------------------------------------------------------------
@pytest.fixture
def fifo(tmp_path):
    """Named pipes (``fifo(name)``), and a watchdog that opens them for writing after 5 s: a reader blocked on one
    then reads nothing and fails, so a regression fails this test instead of hanging the suite."""
    pipes, released = [], []

    def make(name):
        pipes.append(tmp_path / name)
        os.mkfifo(pipes[-1])
        return pipes[-1]

    def release():
        for path in pipes:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                released.append(path)
            except OSError:                          # nobody reading: nothing to release
                pass

    watchdog = threading.Timer(5.0, release)
    watchdog.start()
    yield make
    watchdog.cancel()
    assert not released, "a reader blocked on the named pipe"


def test_a_named_pipe_given_to_qkv_is_refused_before_it_is_opened(fifo, tmp_path, capsys):
    pipe = fifo("qkv.npz")
    line = _refused(capsys, PARTICLES + ["--dim", "3", "--qkv", str(pipe), "--t-final", "1"], tmp_path / "x" / "p.nc")
    assert line == f"meanfield: error: --qkv {pipe}: not a regular file (a named pipe); give a file"


@pytest.mark.parametrize("kind", ["folder.npz", "null.npz"])
def test_other_special_files_given_to_qkv_are_refused(tmp_path, kind):
    path = tmp_path / kind
    if kind == "folder.npz":
        path.mkdir()
    else:
        path.symlink_to("/dev/null")
    with pytest.raises(InputError, match=r"not a regular file \(a (folder|character device)\)"):
        qkv_file(path, 3)


@pytest.mark.parametrize("args", [["solve", "circle", "--init", "{fifo}", "--t-final", "2", "--no-progress"],
                                  ["particles", "--n", "8", "--init", "{fifo}", "--t-final", "2", "--no-progress"],
                                  ["rerun", "{fifo}", "--no-progress"]])
def test_a_named_pipe_given_as_a_run_file_is_refused(fifo, tmp_path, capsys, args):
    pipe = fifo("run.nc")
    line = _refused(capsys, [arg.format(fifo=pipe) for arg in args], tmp_path / "x" / "r.nc")
    assert str(pipe) in line


@pytest.mark.parametrize("command", [["clusters"], ["plot"]])
def test_reading_commands_refuse_a_named_pipe(fifo, capsys, command):
    pipe = fifo("run.nc")
    code = main(command + [str(pipe)])
    assert code == 2 and str(pipe) in one_error_line(capsys)
    assert sorted(path.name for path in pipe.parent.iterdir()) == ["run.nc"]      # no run.png


def test_a_named_pipe_in_a_sweep_store_is_refused_before_it_is_opened(fifo, tmp_path, capsys):
    """The sweep reads the chunks it finds in --store: a named pipe with a chunk's name blocked that read."""
    pipe = fifo("chunk-d2-b0.nc")
    code = main(["sweep", "phase-diagram", "--store", str(tmp_path), "--quick", "--scheduler", "synchronous",
                 "--no-progress"])
    assert code == 2 and f"{pipe}: not a regular file" in one_error_line(capsys)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["chunk-d2-b0.nc"]


# -- 2: --qkv arrays checked from their headers ---------------------------------------------------------------------
def _declared_archive(path, shapes: dict, dim: int = 3):
    """A small archive whose members declare ``shapes`` (the others ``dim x dim``) and hold 1 kB of data at most."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in "QKV":
            header = io.BytesIO()
            shape = shapes.get(name, (dim, dim))
            np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
            data = np.eye(dim).tobytes() if name not in shapes else bytes(1000)
            archive.writestr(f"{name}.npy", header.getvalue() + data)
    return path


@pytest.mark.parametrize("shape", [(8000, 8000), (100000, 100000), (2, 7, 7), (9,)])
def test_a_declared_shape_that_does_not_fit_is_refused_from_the_header(tmp_path, capsys, shape):
    """An 8000 x 8000 Q in a small compressed file took 500 MB before its shape was checked (1e5 x 1e5: "out of
    memory"); the header says the shape, and nothing more is read."""
    path = _declared_archive(tmp_path / "qkv.npz", {"Q": shape})
    line = _refused(capsys, PARTICLES + ["--dim", "3", "--qkv", str(path), "--t-final", "1"], tmp_path / "x" / "p.nc")
    assert f"--qkv {path}: Q is declared {' x '.join(map(str, shape))}, but --dim 3 needs 3 x 3 or HEADS x 3 x 3" \
        in line
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="Q is declared"):
            qkv_file(path, 3)
        assert tracemalloc.get_traced_memory()[1] < 2 ** 20
    finally:
        tracemalloc.stop()


def test_heads_beyond_memory_are_refused_from_the_headers(tmp_path):
    many = (10 ** 12, 3, 3)
    with pytest.raises(InputError, match="Q, K and V must have the same number of heads"):
        qkv_file(_declared_archive(tmp_path / "a.npz", {"Q": many}), 3)
    with pytest.raises(InputError, match=r"1000000000000 heads of 3 x 3 matrices take .*more than half"):
        qkv_file(_declared_archive(tmp_path / "b.npz", {"Q": many, "K": many, "V": many}), 3)


def test_valid_archives_read_as_before(tmp_path):
    rng = np.random.default_rng(5)
    one = {name: rng.standard_normal((3, 3)) for name in "QKV"}
    np.savez_compressed(tmp_path / "one.npz", **one)
    assert all(np.array_equal(read, one[name]) for read, name in zip(qkv_file(tmp_path / "one.npz", 3)[0], "QKV"))
    heads = {name: rng.standard_normal((2, 3, 3)).astype(np.float32) for name in "QKV"}
    np.savez(tmp_path / "two.npz", **heads)
    read = qkv_file(tmp_path / "two.npz", 3)
    assert len(read) == 2 and read[1][2].dtype == np.float64 and np.array_equal(read[1][2], heads["V"][1])


# -- 2: --scheduler where something else answers ----------------------------------------------------------------------
@pytest.fixture
def not_a_scheduler():
    """A local server that answers every connection with an HTTP error, as a web server or a proxy would."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def answer():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:                          # closed: the test is over
                return
            with connection:
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)

    threading.Thread(target=answer, daemon=True).start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    server.close()


def test_a_scheduler_address_where_something_else_answers_is_its_own_line(not_a_scheduler, tmp_path, capsys):
    """Dask read the HTTP reply as a frame length of exabytes: the MemoryError said "out of memory: lower
    --resolution, --n, --dim or the number of frames"."""
    store = tmp_path / "store"
    code = main(["sweep", "phase-diagram", "--store", str(store), "--quick", "--scheduler", not_a_scheduler,
                 "--no-progress"])
    line = one_error_line(capsys)
    assert code == 2 and "out of memory" not in line and not store.exists()
    assert line.startswith(f"meanfield: error: --scheduler {not_a_scheduler}: what answers there is not a Dask "
                           f"scheduler") and "--scheduler takes synchronous, threads, processes or" in line
    xr.Dataset({"a": ("x", np.zeros(2))}).to_netcdf(tmp_path / "after.nc")   # asked the failed client for a lock


def test_tasks_still_run_on_a_scheduler_given_by_its_address():
    """The client of an address is no longer the process's default; the tasks go to it all the same."""
    from distributed import LocalCluster

    from meanfield.validation.tasks import run_tasks

    saved = {}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        run_tasks(pow, [(2, 3), (3, 2)], saved.__setitem__, scheduler=cluster.scheduler_address, workers=1)
    assert saved == {(2, 3): 8, (3, 2): 9}
