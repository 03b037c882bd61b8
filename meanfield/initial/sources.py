"""Initial data given on a grid, read into a :class:`GridSource`: numpy values, DataArrays, functions and runs.

A DataArray carries the coordinates of its geometry (:data:`COORDINATES`, in the :data:`UNITS` of
the run files) on any grid; its values are point values, or cell averages when its
``cell_methods`` attribute says ``mean``.  A run (an ``xarray.Dataset`` or a ``.nc`` path) gives its
last density frame: finite-volume runs, and Lagrangian frames flagged ``density_resolved = 0``,
hold cell averages.  Values are checked to be real, finite and non-negative (:func:`as_values`);
a function is called once on arrays of points (:func:`evaluate`).  Putting a source onto a
scheme is :mod:`meanfield.solvers.runs.initial_state`'s job.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..errors import InputError, require
from ..geometries import geometry_of
from ..app.storage import last_valid_density, load_run

#: Coordinates of a density, in the order of the run files, and their units.
COORDINATES = {"circle": ("theta",), "sphere": ("lat", "lon"), "zonal": ("polar",)}
UNITS = {"theta": "radians in [0, 2 pi)", "lat": "degrees north in [-90, 90]", "lon": "degrees east",
         "polar": "radians from the pole in [0, pi]"}


@dataclass
class GridSource:
    """A density given at the points (or on the cells) of a grid: sorted coordinates, values."""

    label: str
    values: np.ndarray
    coords: tuple
    cell_averages: bool
    run: xr.Dataset | None = None


def as_values(values, label: str) -> np.ndarray:
    """Real float values, finite, non-negative to ``1e-12 x`` their mean (one-line refusals).  A masked array is
    refused: its mask would be dropped silently (the masked values read as they are)."""
    require(not isinstance(values, np.ma.MaskedArray),
            f"{label}: a masked array; give plain values (np.ma.filled(values, fill) says what a masked point holds)")
    values = np.asarray(values)
    require(values.dtype != object and not np.iscomplexobj(values) and values.dtype.kind in "biuf",
            f"{label}: the values must be real numbers (got dtype {values.dtype})")
    values = values.astype(float)
    require(bool(np.all(np.isfinite(values))), f"{label}: the density is not finite (NaN or inf values)")
    if values.size:
        low = float(values.min())
        require(low >= -1e-12 * abs(float(values.mean())), f"{label}: the density is negative somewhere "
                                                           f"(min {low:.3g}); a density is >= 0")
    return values


def evaluate(function, label: str, *points: np.ndarray) -> np.ndarray:
    """``function(*points)`` checked: one real finite value per point (a scalar is broadcast).  The function gets
    copies of the grid, so one that writes into its argument cannot change the run's coordinates."""
    try:
        values = function(*(np.array(point, dtype=float) for point in points))
    except Exception as exc:  # the user's function: report its failure in one line
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError(f"{label}: calling it on the grid failed ({type(exc).__name__}: {detail})") from None
    values = np.asarray(values)
    shape = np.shape(points[0])
    if values.ndim == 0:
        values = np.broadcast_to(values, shape)
    require(values.shape == shape, f"{label}: returned shape {values.shape} for points of shape {shape}; it must "
                                   f"return one value per point (vectorised over numpy arrays)")
    return as_values(values, label)


def checked_function_values(function, label: str, points: tuple, check) -> np.ndarray:
    """``function(*points)`` read by :func:`evaluate` and accepted by ``check(values)`` (which raises
    :class:`meanfield.errors.InputError`)."""
    values = evaluate(function, label, *points)
    check(values)
    return values


def _check_units(name: str, attrs, label: str) -> None:
    units = str(attrs.get("units", "")).lower()
    wrong = ("deg" in units) if name in ("theta", "polar") else units.startswith("rad")
    require(not wrong, f"{label}: coordinate {name!r} has units {units!r}; it must be in {UNITS[name]}")


def _sorted_coordinate(name: str, values: np.ndarray, label: str):
    """The coordinate in its standard range, sorted, with the order that sorts it; refuses duplicates."""
    require(bool(np.all(np.isfinite(values))), f"{label}: coordinate {name!r} is not finite")
    if name == "theta":
        slack = 1e-12 * 2 * math.pi
        require(bool(values.max() - values.min() <= 2 * math.pi + slack and values.max() <= 2 * math.pi + slack
                     and values.min() >= -2 * math.pi - slack),
                f"{label}: coordinate 'theta' spans {values.min():.6g} .. {values.max():.6g}; it must be "
                f"{UNITS[name]} (degrees? multiply by pi / 180)")
        values = np.mod(values, 2 * math.pi)
    elif name == "lon":
        values = np.mod(values, 360.0)
    else:
        top = 90.0 if name == "lat" else math.pi
        bottom = -90.0 if name == "lat" else 0.0
        slack = 1e-12 * top
        require(bool(np.all((values >= bottom - slack) & (values <= top + slack))),
                f"{label}: coordinate {name!r} must be {UNITS[name]} (got {values.min():.6g} .. {values.max():.6g})")
        values = np.clip(values, bottom, top)
    order = np.argsort(values, kind="stable")
    values = values[order]
    least = 4 if name != "lat" else 2
    require(values.size >= least, f"{label}: coordinate {name!r} needs at least {least} points (got {values.size})")
    require(bool(np.all(np.diff(values) > 0)), f"{label}: coordinate {name!r} has repeated points")
    return values, order


def as_values_coordinate(values, name: str, label: str) -> np.ndarray:
    values = np.asarray(values)
    require(values.dtype.kind in "iuf", f"{label}: coordinate {name!r} must be numbers ({UNITS[name]})")
    return values.astype(float)


def dataarray_source(data: xr.DataArray, geometry: str, label: str, cell_averages: bool | None = None) -> GridSource:
    """A :class:`GridSource` from a DataArray with the coordinates of ``geometry`` (module docstring)."""
    names = COORDINATES[geometry]
    hint = "; select one frame, e.g. .isel(time=-1)" if "time" in data.dims else ""
    require(data.ndim == len(names) and set(data.dims) == set(names),
            f"{label}: dims {tuple(data.dims)}; a {geometry} density needs dims {names} "
            f"({'; '.join(f'{n}: {UNITS[n]}' for n in names)}){hint}")
    for name in names:
        require(name in data.coords, f"{label}: dimension {name!r} has no coordinate values ({UNITS[name]})")
        _check_units(name, data[name].attrs, label)
    data = data.transpose(*names)
    values = as_values(data.values, label)
    coords = []
    for axis, name in enumerate(names):
        raw = as_values_coordinate(data[name].values, name, label)
        coordinate, order = _sorted_coordinate(name, raw, label)
        values = np.take(values, order, axis=axis)
        coords.append(coordinate)
    if cell_averages is None:
        cell_averages = "mean" in str(data.attrs.get("cell_methods", "")).lower()
    return GridSource(label, values, tuple(coords), bool(cell_averages))


def run_source(dataset: xr.Dataset, geometry: str, label: str, dim: int | None = None) -> GridSource:
    """The last density frame of a run (module docstring: which runs hold cell averages)."""
    kind = dataset.attrs.get("geometry", geometry)          # a Dataset built by hand may carry no attributes
    require("density" in dataset, f"{label}: holds no density (a {kind} run); a {geometry} density run is needed")
    require(kind == geometry, f"{label}: a {kind} run, but a {geometry} density is needed")
    if dim is not None and geometry_of(geometry).free_dim:
        require(int(dataset.attrs.get("dim", dim)) == dim,
                f"{label}: a zonal run in dimension {dataset.attrs.get('dim')}, but --dim is {dim}")
    last_valid_density(dataset, label)
    scheme = dataset.attrs.get("scheme")
    averages = scheme == "fv" or (scheme == "lagrangian" and "density_resolved" in dataset
                                  and not bool(np.asarray(dataset["density_resolved"].values)[-1]))
    source = dataarray_source(dataset["density"].isel(time=-1), geometry, label, cell_averages=True if averages else None)
    source.run = dataset
    return source


def read_source(init, geometry: str, label: str, dim: int | None = None) -> GridSource:
    """A :class:`GridSource` from a DataArray, a Dataset or a ``.nc`` path."""
    if isinstance(init, xr.DataArray):
        return dataarray_source(init, geometry, label)
    if isinstance(init, xr.Dataset):
        return run_source(init, geometry, label, dim)
    return run_source(load_init_run(init), geometry, label, dim)


def load_init_run(path) -> xr.Dataset:
    """The run file ``path`` names (a ``.nc`` ``init``); a file that cannot be read is one line naming ``--init``."""
    try:
        return load_run(os.fspath(path).strip())
    except InputError as exc:
        raise InputError(f"--init {exc}") from None
