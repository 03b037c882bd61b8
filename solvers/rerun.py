"""Re-run a run from its file alone, bit for bit (``meanfield rerun RUN.nc``, :func:`meanfield.rerun`).

Every PDE and particle run stores, besides its restart record, the record of its start
(:data:`meanfield.solvers.checkpoint.INITIAL`: the state the stepper started from, the scheme's fields, the
stepper's first step proposal and the noise generator, at the clock ``t_start``).  A re-run rebuilds
the scheme and stepper from the file's attributes (model, scheme, resolution, stepper and its
tolerances, normalisation, save times, ``t_final``), restores that record, and runs: whatever the run
started from (a text spec, an array, an ``xarray.DataArray``, a function, another run file that may
since have changed or gone), the frames, merges and final state are the same bits.  Particle runs also
take ``Q``, ``K``, ``V`` (and heads) from the file's variables, so a ``--qkv FILE.npz`` need not
travel with it.

A run whose numbers depend on the thread count (BLAS sums: ``bit_reproducible_across_threads = 0``,
:mod:`meanfield.threads`) is re-run on the file's ``threads`` when this machine has that many cores; on
a machine with fewer, its BLAS sums may differ in the last bits (the new ``threads`` attribute says so).

A run whose noise followed a schedule (``nu_schedule``, :mod:`meanfield.noise_schedule`) keeps it: a spec is read
from the file; a Python function, which a file cannot hold, is passed again (``rerun(FILE, nu_schedule=f)``).

The new Dataset's attributes are the new run's, with ``init``, ``command``, ``restart`` and
``override`` as the file recorded them and ``rerun_of`` naming the file.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield.errors import InputError, require
from meanfield.schemes import SCHEMES
from meanfield.storage import load_run
from meanfield.threads import available_cores, thread_count, use_threads

from . import checkpoint
from .particle_run import recorded_matrices, simulate
from .run_record import RERUN_COMMAND
from .solve import solve

#: Attributes copied from the re-run file onto the new run (they describe how the original started).
KEPT_ATTRS = ("init", "command", "restart", "override")


def _setting(attrs: dict, name: str):
    """An attribute, with netCDF's ``"none"`` read back as ``None`` (:func:`meanfield.storage.netcdf_safe`)."""
    value = attrs.get(name)
    if isinstance(value, str) and value == "none":
        return None
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def _load(run) -> tuple[xr.Dataset, str]:
    """The run Dataset and how messages name it."""
    if isinstance(run, xr.Dataset):
        return run, str(run.encoding.get("source", "run"))
    require(isinstance(run, (str, Path)), f"rerun needs a run file or Dataset (got {type(run).__name__})")
    try:
        dataset = load_run(str(run))
    except InputError as error:
        raise InputError(f"rerun {error}") from None
    dataset.encoding.setdefault("source", str(run))
    return dataset, str(run)


def start_source(dataset: xr.Dataset, label: str) -> xr.Dataset:
    """A run Dataset that continues exactly from the start of ``dataset``: its attributes, and the record of its
    start as the restart record (no frames).  A file without that record (written before it existed) is refused in
    one line; its ``command`` re-runs it when its start can be typed."""
    start = checkpoint.from_dataset(dataset, checkpoint.INITIAL, label=f"rerun {label}")
    command = str(dataset.attrs.get("command", ""))
    how = f"its command re-runs it: {command}" if command.startswith("meanfield ") and command != RERUN_COMMAND \
        else "it cannot be re-run"
    require(start is not None, f"rerun {label}: the file holds no record of its start (written by an older "
                               f"meanfield, or the record was removed); {how}")
    attrs = {key: value for key, value in dataset.attrs.items()
             if not key.startswith((checkpoint.PREFIX, checkpoint.INITIAL))}
    source = checkpoint.add_to_dataset(xr.Dataset(attrs=attrs), start)
    source.encoding["source"] = label
    source.encoding["label"] = f"rerun {label}"      # how its checks name it (meanfield.solvers.checkpoint.source_label)
    return source


def _save_settings(attrs: dict) -> dict:
    """``t_final`` and the save cadence as the run had them (a log axis, or every ``save_every``)."""
    save_log = _setting(attrs, "save_log")
    settings = {"t_final": float(attrs["t_final"])}
    if save_log is not None:
        return dict(settings, save_log=int(save_log))
    return dict(settings, save_every=_setting(attrs, "save_every"))


def _noise(settings: dict, nu_schedule) -> dict:
    """``settings`` with the schedule given again (a Python function) in place of the recorded ``nu = 0``; without
    one, the file's schedule spec is kept by the continuation (:func:`meanfield.solvers.continuation.resolve_schedule`)."""
    if nu_schedule is None:
        return settings
    return {key: value for key, value in settings.items() if key != "nu"} | {"nu_schedule": nu_schedule}


def _solve_again(dataset: xr.Dataset, source: xr.Dataset, progress: bool, nu_schedule=None) -> xr.Dataset:
    attrs = dataset.attrs
    settings = {name: _setting(attrs, name) for name in ("attention", "beta", "nu", "dim", "scheme", "stepper",
                                                          "resolution", "seed", "rtol", "atol", "cfl",
                                                          "resolution_tol", "positivity_tol", "collapse_tol")}
    backend = _setting(attrs, "transform_backend")
    return solve(str(attrs["geometry"]), init=source, progress=progress, backend=backend,
                 **_noise(settings, nu_schedule), **_save_settings(attrs))       # the normalisation: the file's (meanfield.solvers.continuation)


def _simulate_again(dataset: xr.Dataset, source: xr.Dataset, progress: bool, nu_schedule=None) -> xr.Dataset:
    attrs = dataset.attrs
    settings = {name: _setting(attrs, name) for name in ("dim", "n", "attention", "beta", "nu", "seed", "sampling",
                                                          "resolution", "stepper", "rtol", "cfl", "dt_max",
                                                          "collapse_tol")}
    settings["interaction"] = str(attrs.get("interaction_path", "auto"))
    if settings["dt_max"] is not None and not math.isfinite(settings["dt_max"]):
        settings["dt_max"] = None            # no cap was set (noise-free runs record inf)
    matrices = recorded_matrices(dataset)
    if "qkv" not in matrices:
        source.attrs["qkv"] = "custom"       # the file's matrices stand in for the file they were read from
    return simulate(init=source, progress=progress, **_noise(settings, nu_schedule), **matrices,
                    **_save_settings(attrs))


def _threads(attrs: dict) -> int:
    """The file's thread count when its numbers depend on it (BLAS sums, ``bit_reproducible_across_threads = 0``;
    :mod:`meanfield.threads`) and this machine has that many cores; else the setting in effect."""
    threads = attrs.get("threads")
    if attrs.get("bit_reproducible_across_threads", 1) != 0 or not isinstance(threads, (int, np.integer)):
        return thread_count()
    return int(threads) if 1 <= threads <= available_cores() else thread_count()


def rerun(run, progress: bool = False, nu_schedule=None) -> xr.Dataset:
    """Run a solve or particle run again from the record of its start (module docstring).

    Parameters
    ----------
    run : str, pathlib.Path or xarray.Dataset
        A run file's path, or a run Dataset.
    progress : bool
        Show a progress bar.
    nu_schedule : callable, optional
        The noise schedule of a run whose ``nu_schedule`` was a Python function (``python:NAME``), which the file
        cannot hold (:mod:`meanfield.noise_schedule`); a run with a spec needs nothing (the file's is kept).

    Returns
    -------
    xarray.Dataset
        The new run: bit for bit the same frames, merges and final state; ``init``, ``command``, ``restart`` and
        ``override`` as the file recorded them, ``rerun_of`` naming it.

    Raises
    ------
    meanfield.InputError
        One line, for a file that is not a solve or particle run or whose record of its start is missing or damaged.
    """
    dataset, label = _load(run)
    geometry = dataset.attrs.get("geometry")
    require(geometry in SCHEMES or geometry == "particles",
            f"rerun {label}: a {geometry} run; `meanfield rerun` repeats solve and particle runs")
    source = start_source(dataset, label)
    with use_threads(_threads(dataset.attrs)):
        again = (_simulate_again if geometry == "particles" else _solve_again)(dataset, source, progress,
                                                                                 nu_schedule)
    for key in KEPT_ATTRS:
        if key in dataset.attrs:
            again.attrs[key] = dataset.attrs[key]
    if geometry == "particles":
        again.attrs["qkv"] = dataset.attrs["qkv"]
    again.attrs["rerun_of"] = label
    return again
