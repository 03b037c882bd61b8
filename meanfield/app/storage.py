"""Run datasets: build, write and read them (DESIGN.md data contract); safe output files.

Every run is one ``xarray.Dataset`` with ``time`` as the leading dimension and
provenance attributes sufficient to re-run it.  Files are netCDF4: the science in the root group, the records of
a restart and a re-run in the group ``restart`` (:mod:`meanfield.app.run_records`).

Every file the package writes goes through :func:`write_atomic`: the writer fills a hidden
temporary file in the destination's folder, which is then renamed onto the destination
(``os.replace``, atomic on POSIX).  So an existing file is only ever replaced by a complete
new one, a failed write leaves the old file as it was and no temporary file behind, and a
destination that another process holds open (xarray keeps netCDF files open) does not stop
the write.  :func:`check_output_file` and :func:`check_output_folder` refuse a destination
that cannot be written *before* anything is computed.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from ..version import __version__
from ..errors import InputError, require
from .input_files import regular_file
from .run_records import GROUP, keep, read, science_and_records, split
from .output_paths import (IMAGE_FORMATS, MOVIE_SUFFIXES, RUN_SUFFIXES, _can_create_files_in,  # noqa: F401 - storage's API
                           check_name_lengths, check_output_file, check_output_folder, expanded, image_suffixes,
                           name_max)

#: Attributes every run file carries (DESIGN.md).
REQUIRED_ATTRS = ("geometry", "attention", "beta", "nu", "dim", "scheme", "stepper", "resolution",
                  "seed", "init", "package_version", "command", "stop_reason", "wall_time")

VARIABLE_ATTRS = {
    "mean": {"long_name": "mean alpha of the Gaussian token distribution"},
    "covariance": {"long_name": "covariance Sigma = L L^T"},
    "density": {"long_name": "token density rho with respect to arc length / surface measure"},
    "mass": {"long_name": "total mass int rho"},
    "energy": {"long_name": "scaled interaction energy exp(-beta) E(rho), E as in MATH.md section 2",
               "note": "the constant factor exp(beta) is omitted so that large beta does not overflow"},
    "mode_amplitude": {"long_name": "spectral amplitude |rho_hat_k| (circle) or sqrt(sum_m |rho_lm|^2)"},
    "positions": {"long_name": "token / node positions on the unit sphere (Cartesian components)"},
    "theta": {"long_name": "token angles in [0, 2 pi)"},
    "node_theta": {"long_name": "Lagrangian node angles in [0, 2 pi) (theta is the grid of density)"},
    "density_resolved": {"long_name": "1: density is the flow map's band-limited projection (resolved); "
                                      "0: unresolved, density holds non-negative mass-exact cell averages"},
    "flow_map_tail": {"long_name": "top-sixth spectral tail of the Lagrangian node displacement"},
    "cluster_count": {"long_name": "number of clusters: basins of the maxima of the attention field K * mu that "
                                   "stand out (prominence >= 1/2 or concentration >= 1/4), with mass >= "
                                   "min_cluster_mass (meanfield.cluster_detection, MATH.md section 10)"},
    "cluster_energy": {"long_name": "exp(-beta) E of the clusters collapsed to points (MATH.md section 5): "
                                    "the energy of a plateau"},
}


def package_version() -> str:
    """The installed ``meanfield`` version (:mod:`meanfield.version`), recorded by every run."""
    return __version__


#: Integers netCDF stores as attributes (int64); larger ones are written as text.
INT64 = (-2 ** 63, 2 ** 63 - 1)


def netcdf_safe(attrs: dict) -> dict:
    """Attributes converted to types netCDF stores (None -> 'none', bool -> int, ints beyond
    int64 and anything else -> text)."""
    out = {}
    for key, value in attrs.items():
        if value is None:
            value = "none"
        elif isinstance(value, (bool, np.bool_)):
            value = int(value)
        elif isinstance(value, (np.integer, np.floating)):
            value = value.item()
        elif not isinstance(value, (int, float, str)):
            value = str(value)
        if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
            value = str(value)
        out[key] = value
    return out


def build_run_dataset(times, frames: list[dict], dims: dict, coords: dict, attrs: dict) -> xr.Dataset:
    """Stack per-frame records into the DESIGN.md Dataset."""
    data_vars = {}
    for name in frames[0]:
        values = np.stack([np.asarray(frame[name]) for frame in frames])
        data_vars[name] = (("time",) + tuple(dims.get(name, ())), values, VARIABLE_ATTRS.get(name, {}))
    coords = dict(coords)
    coords["time"] = ("time", np.asarray(times, dtype=float), {"long_name": "time"})
    return xr.Dataset(data_vars, coords=coords, attrs=netcdf_safe(attrs))


# ------------------------------------------------------------------------------------------ safe writes
def _make_folders(folder: Path) -> list[Path]:
    """``mkdir -p folder``; returns the folders it created, outermost first."""
    created = []
    for parent in reversed((folder, *folder.parents)):
        if not parent.exists():
            created.append(parent)
    folder.mkdir(parents=True, exist_ok=True)
    return created


#: The hidden temporary files of :func:`write_atomic`: ``.STEM.PID-HEX.tmpSUFFIX`` (STEM possibly shortened).
TEMPORARY_NAME = re.compile(r"^\.(?P<stem>.*)\.(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp(?P<suffix>\.[^.]*)?$")


def _temporary_name(path: Path) -> str:
    """``.STEM.PID-HEX.tmpSUFFIX``, STEM cut so that the name fits where ``path``'s own name fits."""
    tail = f".{os.getpid()}-{secrets.token_hex(4)}.tmp{path.suffix}"
    room = name_max(path.parent) - 1 - len(tail.encode())
    stem = path.stem.encode()[:max(room, 0)].decode(errors="ignore")
    return f".{stem}{tail}"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True             # someone else's process (or not a pid we can ask about): leave its file alone
    return True


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the temporary files that writers killed in mid-write (``kill -9``, a machine that went down) left in
    ``folder``: names of :data:`TEMPORARY_NAME` whose process is gone.  A live writer's file is left alone (its pid
    is alive; on a folder shared between machines a pid says nothing, so such folders are the user's to tidy)."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            match = TEMPORARY_NAME.match(entry.name)
            if match and entry.is_file(follow_symlinks=False) and not _process_alive(int(match["pid"])):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def _replacing(path: Path):
    """A temporary path next to ``path`` (same suffix, so writers infer the format); renamed onto
    ``path`` when the block succeeds, removed (with any folders made for it) when it fails."""
    created = _make_folders(path.parent)
    remove_stale_temporaries(path.parent)
    temporary = path.with_name(_temporary_name(path))
    try:
        yield temporary
        if path.exists():
            shutil.copymode(path, temporary)   # a replaced file keeps its permissions
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


class Unwritable(InputError):
    """A file could not be written (disk full, no permission, read-only file system...)."""


def _failure(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc) or type(exc).__name__


def write_atomic(path, writer) -> Path:
    """Call ``writer(temporary_path)``, then rename the temporary file onto ``path`` (module docstring).

    A failure of the file system (``OSError``: disk full, permissions; netCDF reports a full disk as a
    ``RuntimeError`` "NetCDF: HDF error") becomes a one-line :class:`Unwritable`; the old ``path``, if
    any, is untouched and no temporary file remains.
    """
    path = expanded(path, "the output path")
    try:
        with _replacing(path) as temporary:
            writer(temporary)
    except (OSError, RuntimeError) as exc:
        raise Unwritable(f"cannot write {path}: {_failure(exc)}") from None
    return path


#: Where a run goes when its own destination cannot be written: ``$MEANFIELD_FALLBACK_DIR``, the
#: temporary folder, the home folder (the first that can be written).
FALLBACK_VARIABLE = "MEANFIELD_FALLBACK_DIR"


def fallback_folders() -> list[Path]:
    """The folders :func:`save_run` tries, in order, when the destination cannot be written."""
    folders = [os.environ.get(FALLBACK_VARIABLE, ""), tempfile.gettempdir(), str(Path.home())]
    return [Path(folder) for folder in folders if folder]


def save_run(dataset: xr.Dataset, path, encoding: dict | None = None) -> Path:
    """Write a run to netCDF safely (:func:`write_atomic`; parent folders are created): its science in the root
    group, its records in the group ``restart`` (:mod:`meanfield.app.run_records`; ``encoding`` is the root's).

    A run that cannot be written where asked (disk full, permissions) is not lost: it is written to the
    first writable folder of :func:`fallback_folders` under a new name, and :class:`Unwritable` says
    where in one line.
    """
    out, records = science_and_records(dataset)
    out.attrs = netcdf_safe(out.attrs)   # attributes added after build_run_dataset, too
    if records is not None:
        records = records.copy(deep=False)
        records.attrs = netcdf_safe(records.attrs)

    def writer(temporary):   # both groups into the one temporary file, renamed into place when whole
        out.to_netcdf(temporary, encoding=encoding)
        if records is not None:
            records.to_netcdf(temporary, mode="a", group=GROUP)

    try:
        return write_atomic(path, writer)
    except Unwritable as failure:
        destination = expanded(path, "the output path")
        for folder in fallback_folders():
            spare = folder / f"{destination.stem}-unsaved-{os.getpid()}-{secrets.token_hex(3)}{destination.suffix}"
            if folder.resolve() == destination.parent.resolve() or not _can_create_files_in(folder):
                continue
            try:
                write_atomic(spare, writer)
            except Unwritable:
                continue
            raise Unwritable(f"{failure}; the run was saved to {spare} instead") from None
        raise Unwritable(f"{failure}; no fallback folder could hold it either ({FALLBACK_VARIABLE}, "
                         f"{tempfile.gettempdir()}, {Path.home()})") from None


def _check_size(handle: xr.Dataset, path) -> None:
    """The variables' unpacked size (shape x item size, read from the header) within the memory budget."""
    from ..limits import describe_bytes, memory_budget

    unpacked = sum(variable.size * variable.dtype.itemsize for variable in handle.variables.values())
    require(unpacked <= memory_budget(),
            f"{path}: its variables unpack to {describe_bytes(unpacked)}, more than the "
            f"{describe_bytes(memory_budget())} a run may use (half the memory)")


def load_run(path, geometry: str | None = None) -> xr.Dataset:
    """Read a run written by :func:`save_run`; refuse anything else with one line.  Its records (the group
    ``restart``, or the root's record variables and attributes of a file written before the group) are kept apart
    from its science, in ``dataset.meanfield.restart`` (:mod:`meanfield.app.run_records`)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    regular_file(path, "the run file")                   # a named pipe would block open_dataset for ever
    try:
        # both groups in one open, each checked from its header: a small compressed file may unpack to gigabytes
        dataset, records = read(path, lambda part: _check_size(part, path))
    except InputError:
        raise
    except Exception as exc:  # corrupt, truncated or not netCDF at all
        raise InputError(f"{path}: not a readable netCDF file ({type(exc).__name__})") from None
    if records is None:                     # written before the group: its records at the root, moved aside
        dataset, records = split(dataset)
    keep(dataset, records)
    missing = [name for name in ("geometry", "stop_reason") if name not in dataset.attrs]
    if missing or "time" not in dataset.dims:
        raise InputError(f"{path}: not a meanfield run file (missing {', '.join(missing) or 'time'})")
    if geometry is not None and dataset.attrs["geometry"] != geometry:
        raise InputError(f"{path}: a {dataset.attrs['geometry']} run, but a {geometry} run is needed")
    return dataset


def last_valid_density(dataset: xr.Dataset, path) -> np.ndarray:
    """The last saved density frame of a run, checked finite."""
    if "density" not in dataset or dataset.sizes.get("time", 0) == 0:
        raise InputError(f"{path}: the run has no density frames")
    density = np.asarray(dataset["density"].isel(time=-1).values, dtype=float)
    if not np.all(np.isfinite(density)):
        raise InputError(f"{path}: the last density frame is not finite")
    return density
