"""Re-run a run from its file alone, bit for bit (``meanfield rerun RUN.nc``, :func:`meanfield.rerun`).

Every PDE and particle run stores, besides its restart record, the record of its start
(:data:`meanfield.solvers.records.checkpoint.INITIAL`: the state the stepper started from, the scheme's fields, the
stepper's first step proposal and the noise generator, at the clock ``t_start``).  A re-run rebuilds
the scheme and stepper from the file's attributes (model, scheme, resolution, stepper and its
tolerances, normalisation, save times, ``t_final``), restores that record, and runs: whatever the run
started from (a text spec, an array, an ``xarray.DataArray``, a function, another run file that may
since have changed or gone), the frames, merges and final state are the same bits.  Particle runs also
take ``Q``, ``K``, ``V`` (and heads) from the file's variables, so a ``--qkv FILE.npz`` need not
travel with it.

A run whose numbers depend on the thread count (BLAS sums: ``bit_reproducible_across_threads = 0``,
:mod:`meanfield.app.threads`) is re-run on the file's ``threads`` when this machine has that many cores; on
a machine with fewer, its BLAS sums may differ in the last bits (the new ``threads`` attribute says so).

A run whose noise followed a schedule (``nu_schedule``, :mod:`meanfield.noise_schedule`) keeps it: a spec is read
from the file; a Python function, which a file cannot hold, is passed again (``rerun(FILE, nu_schedule=f)``).

The file is input like an option (DESIGN.md "Command line"): its settings are checked against the option ranges and
the registries (:func:`meanfield.solvers.records.checkpoint.check_recorded_settings`), against its own arrays and its record
of its start (:func:`meanfield.solvers.records.checkpoint.restore_checked`), and its matrices
(:func:`meanfield.solvers.runs.particle_run.recorded_matrices`), all before anything is computed; a refusal is one line
naming the file.

The new Dataset's attributes are the new run's, with ``init``, ``restart`` and ``override`` as the file recorded
them (one line of text each) and ``rerun_of`` naming the file.  Its ``command`` is never copied from the file: the
driver builds it from the validated settings (``shlex.join``), with the start typed as the file's ``init`` when the
file says its start was typed; that line is kept when it is the file's own command, else the new file records
``meanfield rerun FILE``, which repeats it from its own record of its start (:func:`_command`).
"""

from __future__ import annotations

import math
import shlex
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield.errors import InputError, require
from meanfield.schemes import SCHEMES
from meanfield.app.storage import load_run
from meanfield.app.threads import available_cores, thread_count, use_threads

from ..records import checkpoint
from .particle_run import simulate
from ..records.run_record import RERUN_COMMAND
from ..steppers.layer_weights import recorded_layer_weights
from .solve import solve

#: Attributes copied from the re-run file onto the new run (they describe how the original started): one line of
#: text each, ``restart`` one of these.
KEPT_ATTRS = ("init", "restart", "override")
RESTARTS = ("exact", "remap", "none")
#: Attributes without which a run cannot be rebuilt exactly, by the kind of run.
NEEDED = {"particles": ("n", "dim", "t_final"), "solve": ("scheme", "resolution", "dim", "t_final")}
#: Variables of a particle run that the start of its re-run carries (its matrices,
#: :func:`meanfield.solvers.runs.particle_run.recorded_matrices`).
MATRICES = ("Q", "K", "V")


def _setting(attrs: dict, name: str):
    """An attribute, with netCDF's ``"none"`` read back as ``None`` (:func:`meanfield.app.storage.netcdf_safe`)."""
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


def _check_file(dataset: xr.Dataset, label: str) -> None:
    """A solve or particle run whose recorded settings are valid (:func:`checkpoint.check_recorded_settings`) and
    hold what a re-run needs (:data:`NEEDED`), before anything is built from them."""
    geometry = dataset.attrs.get("geometry")
    require(geometry in SCHEMES or geometry == "particles",
            f"rerun {label}: a {geometry} run; `meanfield rerun` repeats solve and particle runs")
    checkpoint.check_recorded_settings(dataset, f"rerun {label}")
    for name in NEEDED["particles" if geometry == "particles" else "solve"]:
        require(name in dataset.attrs, f"rerun {label}: the file has no attribute {name}, which a re-run needs")


def _kept(dataset: xr.Dataset, label: str) -> dict:
    """:data:`KEPT_ATTRS` as the file recorded them, each one line of printable text (``restart``: one of
    :data:`RESTARTS`)."""
    kept = {key: dataset.attrs[key] for key in KEPT_ATTRS if key in dataset.attrs}
    for key, value in kept.items():
        require(isinstance(value, str) and value.isprintable(),
                f"rerun {label}: attribute {key} = {checkpoint.shown(value)} is not allowed; it must be one line of "
                f"text")
    require(kept.get("restart", "none") in RESTARTS, f"rerun {label}: attribute restart = {kept['restart']!r} is "
                                                     f"not allowed; it must be one of {', '.join(RESTARTS)}")
    return kept


def _quoted(command) -> str | None:
    """A file's ``command`` as one ``meanfield`` command line, every word quoted (``shlex``), to be shown: pasted into
    a shell it runs ``meanfield`` and nothing else (``...; rm -rf /`` becomes words of it); ``None`` for anything
    that is not a ``meanfield`` command other than ``meanfield rerun FILE``."""
    try:
        words = shlex.split(command) if isinstance(command, str) else []
    except ValueError:              # unbalanced quotes
        words = []
    return shlex.join(words) if words[:1] == ["meanfield"] and command != RERUN_COMMAND else None


def start_source(dataset: xr.Dataset, label: str) -> xr.Dataset:
    """A run Dataset that continues exactly from the start of ``dataset``: its attributes, coordinates and matrices,
    and the record of its start as the restart record (no frames; their layout in ``encoding["frames"]``, which the
    restored start must give).  A file without that record (written before it existed) is refused in one line; its
    ``command`` (shown quoted, :func:`_quoted`) re-runs it when its start can be typed."""
    start = checkpoint.from_dataset(dataset, checkpoint.INITIAL, label=f"rerun {label}")
    command = _quoted(dataset.attrs.get("command"))
    how = f"its command re-runs it: {command}" if command is not None else "it cannot be re-run"
    require(start is not None, f"rerun {label}: the file holds no record of its start (written by an older "
                               f"meanfield, or the record was removed); {how}")
    attrs = {key: value for key, value in dataset.attrs.items()
             if not key.startswith((checkpoint.PREFIX, checkpoint.INITIAL))}
    matrices = {name: dataset[name] for name in MATRICES if name in dataset}
    grid = {name: coordinate for name, coordinate in dataset.coords.items() if "time" not in coordinate.dims}
    source = checkpoint.add_to_dataset(xr.Dataset(matrices, coords=grid, attrs=attrs), start)
    source.encoding["source"] = label
    source.encoding["label"] = f"rerun {label}"      # how its checks name it (meanfield.solvers.records.checkpoint.source_label)
    source.encoding["record"] = "record of its start"
    source.encoding["frames"] = checkpoint.frame_layout(dataset)
    return source


def _typed(dataset: xr.Dataset, source: xr.Dataset, kept: dict):
    """The ``init`` to give the driver: ``source`` typed as the file's ``init`` when the file says its start was
    typed (:class:`meanfield.solvers.records.checkpoint.TypedStart`: the new ``command`` is then the driver's command line of
    the validated settings), else ``source`` itself (``command``: ``meanfield rerun FILE``)."""
    if "init" not in kept or dataset.attrs.get("command") == RERUN_COMMAND:
        return source
    return checkpoint.TypedStart(kept["init"], source)


def _save_settings(attrs: dict, t_final=None) -> dict:
    """``t_final`` (the run's, or the later one given) and the save cadence as the run had them (a log axis, or every
    ``save_every``)."""
    save_log = _setting(attrs, "save_log")
    settings = {"t_final": float(attrs["t_final"]) if t_final is None else t_final}
    if save_log is not None:
        return dict(settings, save_log=int(save_log))
    return dict(settings, save_every=_setting(attrs, "save_every"))


def _noise(settings: dict, nu_schedule) -> dict:
    """``settings`` with the schedule given again (a Python function) in place of the recorded ``nu = 0``; without
    one, the file's schedule spec is kept by the restart (:func:`meanfield.solvers.runs.restart.resolve_schedule`)."""
    if nu_schedule is None:
        return settings
    return {key: value for key, value in settings.items() if key != "nu"} | {"nu_schedule": nu_schedule}


def _command(rebuilt: str, dataset: xr.Dataset, kept: dict) -> str:
    """The new run's ``command``: ``rebuilt``, the driver's command line of the validated settings (with
    ``--override`` where the original had one, :func:`meanfield.solvers.records.run_record.run_command`), when the file
    recorded that same line; else ``meanfield rerun FILE``, which repeats the new file from its own record of its
    start.  The file's command is compared, never copied: one that says more than its settings (``meanfield solve
    circle; rm -rf /``) or other settings does not describe this run."""
    if kept.get("override") and rebuilt != RERUN_COMMAND:
        rebuilt += " --override"
    return rebuilt if rebuilt == dataset.attrs.get("command") else RERUN_COMMAND


def _solve_again(dataset: xr.Dataset, init, progress: bool, nu_schedule=None, t_final=None) -> xr.Dataset:
    attrs = dataset.attrs
    settings = {name: _setting(attrs, name) for name in ("attention", "beta", "nu", "dim", "scheme", "stepper",
                                                          "resolution", "seed", "rtol", "atol", "cfl", "dt_max",
                                                          "resolution_tol", "positivity_tol", "collapse_tol")}
    backend = _setting(attrs, "transform_backend")
    return solve(str(attrs["geometry"]), init=init, progress=progress, backend=backend,
                 **_noise(settings, nu_schedule), **_save_settings(attrs, t_final))  # the normalisation: the file's


def _interaction(attrs: dict) -> str:
    """The particle run's ``interaction`` setting: the path it took when its command forced it (a forced path joins
    the command, :mod:`meanfield.solvers.runs.particle_run`; only that is read from the command), else ``auto``, under
    which an exact restart keeps the file's path: the same sums, and the same command line."""
    path = str(attrs.get("interaction_path", "auto"))
    return path if f" --interaction {path}" in str(attrs.get("command", "")) else "auto"


def _simulate_again(dataset: xr.Dataset, init, progress: bool, nu_schedule=None, t_final=None) -> xr.Dataset:
    """The particle run again; its ``qkv`` and matrices are the start's, which a restart keeps
    (:func:`meanfield.solvers.runs.particle_run.recorded_matrices`)."""
    attrs = dataset.attrs
    settings = {name: _setting(attrs, name) for name in ("dim", "n", "attention", "beta", "nu", "seed", "sampling",
                                                          "resolution", "stepper", "rtol", "cfl", "dt_max",
                                                          "collapse_tol")}
    settings["interaction"] = _interaction(attrs)
    settings["layer_weights"] = recorded_layer_weights(dataset, "rerun")    # per-layer attention (MATH.md §11)
    if settings["dt_max"] is not None and not math.isfinite(settings["dt_max"]):
        settings["dt_max"] = None            # no cap was set (noise-free runs record inf)
    return simulate(init=init, progress=progress, **_noise(settings, nu_schedule), **_save_settings(attrs, t_final))


def _threads(attrs: dict) -> int:
    """The file's thread count when its numbers depend on it (BLAS sums, ``bit_reproducible_across_threads = 0``;
    :mod:`meanfield.app.threads`) and this machine has that many cores; else the setting in effect."""
    threads = attrs.get("threads")
    if attrs.get("bit_reproducible_across_threads", 1) != 0 or not isinstance(threads, (int, np.integer)):
        return thread_count()
    return int(threads) if 1 <= threads <= available_cores() else thread_count()


def rerun(run, progress: bool = False, nu_schedule=None, t_final: float | None = None) -> xr.Dataset:
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
    t_final : float, optional
        Run on to this later end time (default: the file's): the same run as one started to ``t_final``, bit for
        bit, frames on the file's cadence.

    Returns
    -------
    xarray.Dataset
        The new run: bit for bit the same frames, merges and final state; ``init``, ``restart`` and ``override`` as
        the file recorded them, ``command`` rebuilt from its validated settings (module docstring), ``rerun_of``
        naming it.

    Raises
    ------
    meanfield.InputError
        One line naming the file, for a file that is not a solve or particle run, whose settings are out of their
        ranges or do not fit its arrays, or whose record of its start is missing or damaged; nothing is computed.
    """
    dataset, label = _load(run)
    _check_file(dataset, label)
    kept = _kept(dataset, label)
    init = _typed(dataset, start_source(dataset, label), kept)
    again_from = _simulate_again if dataset.attrs["geometry"] == "particles" else _solve_again
    try:
        with use_threads(_threads(dataset.attrs)):
            again = again_from(dataset, init, progress, nu_schedule, t_final)
    except InputError as error:      # everything a re-run is given comes from the file: name it
        message = str(error)
        raise InputError(message if message.startswith(f"rerun {label}") else f"rerun {label}: {message}") from None
    again.attrs.update(kept, command=_command(again.attrs["command"], dataset, kept), rerun_of=label)
    return again
