"""Initial data of every kind, turned into a scheme's initial state (``init=`` of :func:`meanfield.solve`).

``initial_state(init, geometry, scheme, seed)`` returns what the run loop steps.  ``init`` is one of

* a **text spec** (``--init``): :mod:`meanfield.initial` (circle), :mod:`meanfield.initial_sphere`,
  :mod:`meanfield.initial_zonal`; the density integrates to 1 and is handed to
  ``scheme.state_from_density`` as before;
* a **numpy array** of values on the scheme's own grid, the grid of the ``density`` its runs
  save (``scheme.dims()["density"]`` with ``scheme.coords()``): circle ``theta_j = 2 pi j / N``;
  sphere the Gauss–Legendre ``(lat, lon)`` grid; zonal the ``polar`` angles.  For spectral,
  Galerkin and Lagrangian schemes these are point values of the density; for a
  **finite-volume** scheme they are its **cell averages** (the state itself, what an fv run
  saves).  Any other shape is refused with the expected shape and its coordinates;
* an ``xarray.DataArray`` with its coordinates, in the units of the run files: circle ``theta``
  (radians, ``[0, 2 pi)``), sphere ``lat``/``lon`` (degrees north/east), zonal ``polar``
  (radians from the pole, ``[0, pi]``), on any grid; other dimensions are refused (select a
  frame, e.g. ``.isel(time=-1)``).  Its values are point values, or cell averages when its
  ``cell_methods`` attribute says ``mean`` (CF convention; cells bounded halfway between
  neighbouring coordinates, by the poles at the ends of ``polar``);
* a **callable**: ``f(theta)`` (circle), ``f(lat, lon)`` (sphere, degrees, called with 2-D arrays),
  ``f(polar)`` (zonal), evaluated once on arrays of points (vectorised; it must return one
  value per point, or a scalar);
* an ``xarray.Dataset`` (a run: its last density frame with its coordinates) or the path of a
  ``.nc`` run file.  Finite-volume runs, and Lagrangian frames flagged ``density_resolved = 0``,
  hold cell averages; other runs point values.

A remap.  Data not on the scheme's own grid are brought onto it (the exact restart of a run of
the same geometry, scheme and resolution is not done here, :mod:`meanfield.solvers.solve` does it):

* spectral, Galerkin and Lagrangian targets take point values: circle by spectral resampling
  from an equispaced source (:func:`meanfield.initial.periodic_resample`, any offset; as for run
  files before) or a periodic cubic spline; sphere by analysis on the source grid when it is
  the Gauss–Legendre grid of a run (:func:`meanfield.initial_sphere.resample_grid`), else a
  bicubic spline continued across the poles; zonal Galerkin from a run file by today's
  Gegenbauer least-squares re-expansion (:func:`meanfield.initial_zonal.resample_run`), else a
  cubic spline in the polar angle continued evenly across the poles.  Cell averages going
  there are read as point values at the cell centres (second order; a clustered frame is then
  refused as negative or unresolved: remap it onto a finite-volume or circle Lagrangian scheme);
* **finite-volume targets: a conservative remap.**  The source is a piecewise function, constant
  on its cells (cell averages) or linear between its points (point values, constant beyond the
  end points in ``polar``); the new cell averages are its exact integrals over the target cells
  (Gauss–Legendre on the pieces between the merged break points, exact to round-off; zonal
  cells with the measure ``|S^{d-2}| sin^{d-2} th dth``, MATH.md §2.2) divided by the cell
  volumes.  The mass is the source's to round-off and non-negative data stay non-negative,
  so clustered data move to a coarser or finer grid (``scheme.state_from_cell_averages``).
  A callable is averaged over each cell by Gauss–Legendre quadrature (20 points).  The circle
  Lagrangian scheme takes cell averages the same way (its nodes' weights are the masses of
  the arcs centred on them).

Checks, the same for every kind: finite, non-negative (to ``1e-12 x mean``), positive mass,
and for grid values resolved on the grid (:func:`meanfield.initial.check_density`,
``check_sphere_density``, ``check_zonal_density``); cell averages need no resolution.  Each
failure is one :class:`InputError` line naming ``init`` (``init=<numpy array of shape ...>``,
``--init run.nc``, ``--init 'SPEC'``) and what was wrong.  Text specs integrate to 1; **arrays, functions and
runs keep their mass** (nothing is renormalised).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.special import roots_legendre

from .errors import InputError, require
from .geometry import sphere_area
from .initial import check_density, check_sign_and_mass, circle_density, circle_values, init_label
from .initial_sphere import check_sphere_density, latlon_values, resample_grid, sphere_density
from .initial_zonal import check_zonal_density, polar_values, resample_run, zonal_density
from .storage import last_valid_density, load_run

#: The text-spec readers: ``geometry -> (spec, scheme, seed) -> density`` on the scheme's input grid.
TEXT_SPECS = {"circle": lambda spec, scheme, seed: circle_density(spec, scheme.resolution, seed),
              "sphere": lambda spec, scheme, seed: sphere_density(spec, scheme.basis, seed),
              "zonal": lambda spec, scheme, seed: zonal_density(spec, scheme.basis, seed)}

#: Coordinates of a density, in the order of the run files, and their units.
COORDINATES = {"circle": ("theta",), "sphere": ("lat", "lon"), "zonal": ("polar",)}
UNITS = {"theta": "radians in [0, 2 pi)", "lat": "degrees north in [-90, 90]", "lon": "degrees east",
         "polar": "radians from the pole in [0, pi]"}
KINDS = "a text spec, a numpy array, an xarray DataArray or Dataset, a function, or a .nc run file"

#: Gauss–Legendre points per piece of the conservative remap (as meanfield.solvers.finite_volume.zonal_cell_volumes).
QUADRATURE_POINTS = 20


@dataclass
class GridSource:
    """A density given at the points (or on the cells) of a grid: sorted coordinates, values."""

    label: str
    values: np.ndarray
    coords: tuple
    cell_averages: bool
    run: xr.Dataset | None = None


# -- naming and kinds ---------------------------------------------------------------------------------
def _is_path(init) -> bool:
    return isinstance(init, os.PathLike) or (isinstance(init, str) and init.strip().endswith(".nc"))


def describe_init(init) -> str:
    """A short text for ``init`` (the run's ``init`` attribute and messages)."""
    if isinstance(init, (str, os.PathLike)):
        return str(init).strip() if isinstance(init, str) else os.fspath(init)
    if isinstance(init, np.ndarray):
        return f"numpy array of shape {init.shape}"
    if isinstance(init, xr.DataArray):
        sizes = ", ".join(f"{dim}: {size}" for dim, size in init.sizes.items())
        return f"DataArray {init.name or ''}({sizes})"
    if isinstance(init, xr.Dataset):
        attrs = init.attrs
        time = float(init["time"].values[-1]) if "time" in init.coords and init.sizes.get("time") else math.nan
        return f"Dataset: {attrs.get('geometry', '?')} {attrs.get('scheme', '?')} run, last frame t = {time:.6g}"
    if callable(init):
        return f"function {getattr(init, '__qualname__', type(init).__name__)}"
    return type(init).__name__


def label_of(init) -> str:
    """How messages name ``init``: ``--init 'TEXT'`` for text and paths, ``init=<description>`` otherwise."""
    if isinstance(init, (str, os.PathLike)):
        return init_label(describe_init(init))
    return f"init=<{describe_init(init)}>"


def kind_of(init) -> str:
    """``text``, ``path``, ``array``, ``dataarray``, ``dataset`` or ``function``; anything else is refused."""
    if _is_path(init):
        return "path"
    if isinstance(init, str):
        return "text"
    for kind, cls in (("dataset", xr.Dataset), ("dataarray", xr.DataArray), ("array", np.ndarray)):
        if isinstance(init, cls):
            return kind
    if callable(init):
        return "function"
    raise InputError(f"init must be {KINDS} (got {type(init).__name__})")


# -- reading arrays, functions and runs ---------------------------------------------------------------------
def as_values(values, label: str) -> np.ndarray:
    """Real float values, finite, non-negative to ``1e-12 x`` their mean (one-line refusals)."""
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
    """``function(*points)`` checked: one real finite value per point (a scalar is broadcast)."""
    try:
        values = function(*points)
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
    if dim is not None and geometry == "zonal":
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


# -- the conservative remap (finite-volume targets) ------------------------------------------------------------
@dataclass
class Piecewise:
    """A function on an interval or the circle, smooth between its ``breaks``."""

    breaks: np.ndarray
    evaluate: object


def interval_faces(centres: np.ndarray, low: float, high: float) -> np.ndarray:
    """Cell faces halfway between sorted centres on ``[low, high]``, closed by ``low`` and ``high``."""
    return np.concatenate(([low], 0.5 * (centres[1:] + centres[:-1]), [high]))


def periodic_faces(centres: np.ndarray, period: float) -> np.ndarray:
    """Faces halfway between sorted periodic centres: face ``j`` between cells ``j`` and ``j + 1`` (the last wraps)."""
    return 0.5 * (centres + np.append(centres[1:], centres[0] + period))


def piecewise(source: GridSource, geometry: str) -> Piecewise:
    """The source's piecewise representation: constant on its cells or linear between its points."""
    (x,), values = source.coords, source.values
    if geometry == "circle":
        if not source.cell_averages:
            return Piecewise(x, lambda t: np.interp(t, x, values, period=2 * math.pi))
        faces = periodic_faces(x, 2 * math.pi)
        start = faces[-1] - 2 * math.pi

        def cells(t):
            return values[np.searchsorted(faces, start + np.mod(t - start, 2 * math.pi), side="right")
                          % values.size]
        return Piecewise(faces, cells)
    if not source.cell_averages:
        return Piecewise(x, lambda t: np.interp(t, x, values))
    faces = interval_faces(x, 0.0, math.pi)
    return Piecewise(faces, lambda t: values[np.clip(np.searchsorted(faces, t, side="right") - 1, 0, x.size - 1)])


def conservative_averages(function: Piecewise, faces: np.ndarray, volumes: np.ndarray, weight=None,
                          period: float | None = None) -> np.ndarray:
    """``int_cell f w / volume`` over the cells ``[faces_i, faces_{i+1}]``, exact for piecewise-smooth ``f``.

    The cells are cut at ``function.breaks`` (taken modulo ``period`` into the cells' range) and each
    piece integrated by Gauss–Legendre with :data:`QUADRATURE_POINTS` points; ``weight`` is the
    measure's density (``None``: ``dx``).  ``function.evaluate`` is called once, on all points.
    """
    low, high = faces[0], faces[-1]
    breaks = np.asarray(function.breaks, dtype=float)
    if period is not None:
        breaks = low + np.mod(breaks - low, period)
    edges = np.union1d(faces, breaks[(breaks > low) & (breaks < high)])
    nodes, weights = roots_legendre(QUADRATURE_POINTS)
    left, width = edges[:-1, None], np.diff(edges)[:, None]
    points = left + 0.5 * width * (nodes + 1.0)
    integrand = function.evaluate(points)
    if weight is not None:
        integrand = integrand * weight(points)
    pieces = np.sum(0.5 * width * weights * integrand, axis=1)
    owner = np.searchsorted(faces, edges[:-1], side="right") - 1
    return np.bincount(owner, weights=pieces, minlength=faces.size - 1) / volumes


def target_cells(geometry: str, scheme):
    """``(faces, volumes, weight, period)`` of the cells whose averages the scheme takes (module docstring)."""
    if geometry == "circle":
        h = 2 * math.pi / scheme.resolution
        faces = scheme.basis.theta[0] - h / 2 + h * np.arange(scheme.resolution + 1)
        volumes = scheme.fv.volumes if scheme.takes_cell_averages else np.full(scheme.resolution, h)
        return faces, volumes, None, 2 * math.pi
    dim = scheme.model.dim
    return scheme.faces, scheme.fv.volumes, lambda th: sphere_area(dim - 1) * np.sin(th) ** (dim - 2), None


# -- onto the scheme's grid -------------------------------------------------------------------------------------
def _gauss_legendre_basis(lat: np.ndarray, lon: np.ndarray):
    """The :class:`meanfield.solvers.sphere.SphereBasis` whose grid is ``lat x lon`` (sorted), or ``None``."""
    from meanfield.solvers.sphere import SphereBasis
    for lmax in range(max(1, (2 * lat.size) // 3 - 2), (2 * lat.size) // 3 + 1):
        basis = SphereBasis(lmax)
        if (basis.shape == (lat.size, lon.size) and np.allclose(lat[::-1], basis.lat, rtol=0, atol=1e-9)
                and np.allclose(lon, basis.lon, rtol=0, atol=1e-9)):
            return basis
    return None


def grid_values(source: GridSource, geometry: str, scheme) -> np.ndarray:
    """Point values on the scheme's input grid (module docstring: the remap for non-fv targets)."""
    if geometry == "circle":
        return circle_values(source.coords[0], source.values, scheme.resolution)
    basis = scheme.basis
    if geometry == "sphere":
        lat, lon = source.coords
        old = _gauss_legendre_basis(lat, lon)
        if old is not None:
            return resample_grid(source.values[::-1], old, basis)
        return latlon_values(source.values, lat, lon, basis.lat, basis.lon)
    if source.run is not None:
        return resample_run(source.run, basis, source.label)
    return polar_values(source.coords[0], source.values, basis.polar)


def own_grid(scheme) -> tuple[tuple, str]:
    """The shape of the scheme's density grid and a line describing it (for refusals)."""
    coords, dims = scheme.coords(), scheme.dims()["density"]
    shape = tuple(np.size(coords[name][1]) for name in dims)
    parts = []
    for name in dims:
        values, attrs = np.asarray(coords[name][1]), coords[name][2] if len(coords[name]) > 2 else {}
        parts.append(f"{name} = {values[0]:.4g} .. {values[-1]:.4g} {attrs.get('units', '')}".rstrip())
    what = "cell averages of the cells centred" if scheme.takes_cell_averages else "point values"
    return shape, f"{what} at {' x '.join(parts)} (the scheme's coords())"


def _grid_points(geometry: str, scheme):
    basis = scheme.basis
    if geometry == "circle":
        return (basis.theta,)
    if geometry == "sphere":
        return tuple(np.meshgrid(basis.lat, basis.lon, indexing="ij"))
    return (basis.polar,)


def _checked_density_state(density: np.ndarray, geometry: str, scheme, label: str):
    check = {"circle": lambda: check_density(density, label, scheme.resolution),
             "sphere": lambda: check_sphere_density(density, label, scheme.basis),
             "zonal": lambda: check_zonal_density(density, label, scheme.basis)}
    check[geometry]()
    return scheme.state_from_density(density)


def _checked_average_state(averages: np.ndarray, volumes: np.ndarray, scheme, label: str):
    check_sign_and_mass(averages, label, float(volumes @ averages), float(volumes.sum()))
    return scheme.state_from_cell_averages(averages)


def initial_state(init, geometry: str, scheme, seed=None):
    """The initial state of ``scheme`` (a discretisation of ``geometry``) from ``init`` (module docstring)."""
    from meanfield.solvers.contract import conform  # solvers is imported inside the call (DESIGN.md "Layout")

    require(geometry in COORDINATES, f"geometry must be one of {', '.join(COORDINATES)} (got {geometry!r})")
    scheme = conform(scheme)
    kind = kind_of(init)
    if kind == "text":
        return scheme.state_from_density(TEXT_SPECS[geometry](init, scheme, seed))
    label = label_of(init)
    fv = scheme.takes_cell_averages
    lagrangian_circle = geometry == "circle" and scheme.name == "lagrangian"
    if kind == "array":
        shape, what = own_grid(scheme)
        values = as_values(init, label)
        require(values.shape == shape, f"{label}: expected shape {shape}: {what}")
        if fv:
            return _checked_average_state(values, target_cells(geometry, scheme)[1], scheme, label)
        return _checked_density_state(values, geometry, scheme, label)
    if kind == "function":
        if fv:
            faces, volumes, weight, period = target_cells(geometry, scheme)
            wrap = (lambda t: np.mod(t, period)) if period else (lambda t: t)
            function = Piecewise(np.empty(0), lambda t: evaluate(init, label, wrap(t)))
            return _checked_average_state(conservative_averages(function, faces, volumes, weight, period),
                                          volumes, scheme, label)
        values = evaluate(init, label, *_grid_points(geometry, scheme))
        return _checked_density_state(values, geometry, scheme, label)
    source = read_source(init, geometry, label, scheme.model.dim)
    if fv or (lagrangian_circle and source.cell_averages):
        faces, volumes, weight, period = target_cells(geometry, scheme)
        averages = conservative_averages(piecewise(source, geometry), faces, volumes, weight, period)
        return _checked_average_state(averages, volumes, scheme, label)
    return _checked_density_state(grid_values(source, geometry, scheme), geometry, scheme, label)
