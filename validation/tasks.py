"""Resumable task stores and their execution, shared by the sweep (validation/studies/phase_diagram.py) and the
Gaussian study (validation/studies/gaussian.py).

A store is a folder of finished tasks, one compressed netCDF file each (:func:`write_compressed`,
atomic), whose attributes carry every setting that determines its numbers; a re-run reads the
tasks it finds (:func:`read_attrs` refuses a file that is not readable) and computes the rest with
:func:`run_tasks`, here or on Dask (:func:`dask_client`), saving each task as it completes.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import xarray as xr

from meanfield.errors import InputError
from meanfield.app.storage import save_run

#: Run the tasks in this process, without Dask.
SYNCHRONOUS = "synchronous"
#: What ``--scheduler`` takes, as its refusals say it.
SCHEDULER_CHOICES = f"{SYNCHRONOUS}, threads, processes or the address of a running Dask scheduler, such as tcp://host:8786"


def write_compressed(dataset: xr.Dataset, path) -> Path:
    """Write compressed, safely (:func:`meanfield.app.storage.save_run`: temporary file renamed into place)."""
    encoding = {name: {"zlib": True, "complevel": 4} for name in dataset.data_vars
                if dataset[name].dtype.kind == "f"}
    return save_run(dataset, path, encoding=encoding)


def read_attrs(path: Path, what: str) -> dict:
    """The attributes of a stored task; a file that cannot be read is refused with one line (it was not
    written here, since every write is atomic, so it is never overwritten), and so is anything that is not a regular
    file, before it is opened (a named pipe would block the open for ever)."""
    if not Path(path).is_file():
        raise InputError(f"{path}: not a regular file, so not a {what}; move it away to recompute it")
    try:
        with xr.open_dataset(path) as handle:
            return dict(handle.attrs)
    except Exception as exc:
        raise InputError(f"{path}: not a readable {what} ({type(exc).__name__}); "
                         f"move it away to recompute it") from None


def machine_cores() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


#: The only interface a local Dask cluster listens on.
LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def dask_client(scheduler, workers: int):
    """A ``distributed.Client``: on a new ``LocalCluster`` (``scheduler`` ``None`` or ``"processes"``:
    ``workers`` processes of one thread; ``"threads"``: ``workers`` threads in this process) or
    connected to ``scheduler`` (an address).  Closes what it opened."""
    import dask
    from distributed import Client, LocalCluster

    _collect_failed_clients()
    with contextlib.ExitStack() as stack:
        if scheduler in (None, "processes", "threads"):
            stack.enter_context(dask.config.set({"distributed.nanny.pre-spawn-environ": _worker_environ()}))
            # scheduler and dashboard on the loopback interface only: nobody else on the network can submit work
            # (Dask's protocol unpickles what it is sent) or read the dashboard
            processes = scheduler != "threads"          # threads talk in-process (no host)
            cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                                                       **({"host": LOOPBACK} if processes else {}),
                                                       dashboard_address=f"{LOOPBACK}:0", silence_logs=logging.ERROR))
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(_connect(scheduler))
        yield client


def _collect_failed_clients() -> None:
    """Collect a ``Client`` that failed to connect (an unreachable ``--scheduler``) now, outside any other Client's
    start: its ``__del__`` closes its loop runner, which waits for the lock a starting Client holds (a deadlock seen
    in the suite: ``Client.__init__`` -> gc -> ``Client.__del__`` -> ``LoopRunner.stop``)."""
    import gc

    gc.collect()


def _connect(address: str):
    """A ``distributed.Client`` of the running scheduler at ``address``; what fails is one line naming
    ``--scheduler`` and what it takes.  Nothing answering is an ``OSError``; a server of another protocol (a web
    server, a proxy) has its first reply bytes read by Dask as a frame length, an allocation of exabytes whose
    ``MemoryError`` the command line reported as a run out of memory ("lower --resolution"); ``inproc://`` of another
    process, ``tls://`` without certificates and ``ucx://`` without ucx-py fail with ``ValueError``/``TypeError``.
    The client is not made the process's default (the tasks are submitted to it by name): a default client that
    failed to connect stayed registered, with dask's scheduler set to it, and the next netCDF write in the process
    asked it for a lock (and read the same exabytes)."""
    from distributed import Client

    try:
        return Client(address, set_as_default=False)
    except OSError as exc:
        problem = f"cannot connect ({exc})"
    except MemoryError:
        problem = "what answers there is not a Dask scheduler (its reply is not Dask's protocol)"
    except (ValueError, TypeError) as exc:
        problem = f"not an address Dask can connect to from here ({type(exc).__name__}: {exc})"
    _collect_failed_clients()
    raise InputError(f"--scheduler {address}: {' '.join(problem.split())}; --scheduler takes {SCHEDULER_CHOICES}")


def _worker_environ() -> dict:
    """Dask's worker environment (one BLAS thread) without ``MALLOC_TRIM_THRESHOLD_``.

    Setting it turns off glibc's adaptive mmap threshold, so each multi-MB array the stepper
    allocates costs an ``mmap`` and fresh page faults: measured 25-30 % slower per chunk.
    """
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}))
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return environ


def run_tasks(function, tasks: list, save, scheduler=SYNCHRONOUS, workers: int | None = None,
              keep_going: bool = False) -> None:
    """``save(args, function(*args))`` for every ``args`` of ``tasks`` as it completes.

    ``scheduler``: :data:`SYNCHRONOUS` (in this process, in order), ``None`` or ``"processes"`` (a
    local cluster of ``workers`` single-threaded processes), ``"threads"`` or a scheduler address.
    With ``keep_going`` a task that raises does not stop the others: they are computed and saved,
    then the first exception is raised.  On Ctrl-C the tasks saved so far stay saved.
    """
    errors: list[Exception] = []

    def finish(args, result) -> None:
        if not keep_going:
            save(args, result())
            return
        try:
            value = result()
        except Exception as exc:  # noqa: BLE001 - re-raised after the other tasks
            errors.append(exc)
            return
        save(args, value)

    if scheduler == SYNCHRONOUS:
        for args in tasks:
            finish(args, lambda: function(*args))
    elif tasks:
        from distributed import as_completed

        with dask_client(scheduler, workers or min(machine_cores(), len(tasks))) as client:
            futures = {client.submit(function, *args, pure=False): args for args in tasks}
            for future in as_completed(futures, loop=client.loop):    # the client's loop: it may not be the default
                finish(futures[future], future.result)
    if errors:  # every other task is saved; the first failure is the caller's to see
        raise errors[0]
