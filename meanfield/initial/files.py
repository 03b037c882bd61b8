"""Densities a user saved in files, as ``--init`` reads them.

* ``.npy`` (numpy's ``save``), ``.txt`` and ``.csv`` (one value per grid point or cell, numpy's ``savetxt``; a
  ``.csv`` separated by commas; on S^2 one row per latitude): the values on the scheme's own input grid, exactly as
  the same array given to :func:`meanfield.solve`;
* ``.nc`` (netCDF) or ``.zarr`` (a Zarr store, a folder) holding a ``density`` variable on the geometry's coordinates
  (``theta``; ``lat`` and ``lon`` in degrees; ``polar``), as a DataArray written by xarray (``to_netcdf``,
  ``to_zarr``): read as that DataArray (its coordinates and units checked, remapped onto the scheme's grid), not as
  a run file (a run file has ``geometry`` and ``time``).

:func:`is_density_file` says whether ``init`` names such a file (a ``.nc`` file is opened to tell it from a run
file); :func:`read_density_file` reads it, refusing in one line naming ``--init`` a missing, unreadable, non-numeric
or frame-holding file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import InputError, require

#: Suffixes of plain arrays.
ARRAY_SUFFIXES = (".npy", ".txt", ".csv")
#: Suffixes of xarray datasets holding a ``density`` variable: netCDF files and Zarr stores.
DATASET_SUFFIXES = (".nc", ".zarr")


def _open(path: Path):
    """The dataset at ``path``: a netCDF file, or a Zarr store (a folder; with or without consolidated metadata,
    whose notices about the store's format are not the user's concern here)."""
    import warnings

    import xarray as xr

    if path.suffix != ".zarr":
        return xr.open_dataset(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(path)


def _path(init) -> Path | None:
    if isinstance(init, os.PathLike) or isinstance(init, str):
        return Path(os.fspath(init).strip())
    return None


def is_density_file(init) -> bool:
    """Whether ``init`` names a density file (module docstring) rather than a text spec or a run file."""
    path = _path(init)
    if path is None or path.suffix not in ARRAY_SUFFIXES + DATASET_SUFFIXES:
        return False
    if path.suffix in ARRAY_SUFFIXES or path.suffix == ".zarr":
        return True
    if not path.is_file():            # missing, a folder or a named pipe (which would block the open for ever)
        return False
    try:
        with _open(path) as handle:
            return "geometry" not in handle.attrs and "time" not in handle.dims and "density" in handle
    except Exception:  # missing or unreadable: the run-file reader says so in its own line
        return False


def read_density_file(init, label: str):
    """The density in the file ``init`` names: a numpy array (``.npy``, ``.txt``, ``.csv``) or a DataArray
    (``.nc``); one line naming ``label`` otherwise."""
    from ..app.input_files import regular_file

    path = _path(init)
    require(path.exists(), f"{label}: no such file")
    if path.suffix == ".zarr":
        require(path.is_dir(), f"{label}: a Zarr store is a folder (xarray's to_zarr writes one)")
    else:
        regular_file(path, label)
    try:
        if path.suffix == ".npy":
            values = np.load(path, allow_pickle=False)
        elif path.suffix in (".txt", ".csv"):
            values = np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None, ndmin=1)
        else:
            with _open(path) as handle:
                require("geometry" not in handle.attrs and "time" not in handle.dims and "density" in handle,
                        f"{label}: holds no density variable without a time axis (a density DataArray saved by "
                        f"xarray is needed; a run's frames: give the run file)")
                density = handle["density"].load()
            require(density.ndim in (1, 2), f"{label}: its density has dims {density.dims}; one density on the "
                                            f"geometry's coordinates is needed (theta; lat, lon; polar)")
            return density
    except InputError:
        raise
    except Exception as exc:  # corrupt, not numbers, not an array
        raise InputError(f"{label}: not a readable density file ({type(exc).__name__})") from None
    require(values.dtype.kind in "iuf" and values.ndim in (1, 2),
            f"{label}: holds {values.dtype} values of shape {values.shape}; real numbers on the grid are needed")
    return np.asarray(values, dtype=float)
