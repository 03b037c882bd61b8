"""Initial data of every kind put onto a scheme: its initial state (``init=`` of :func:`meanfield.solve`).

``initial_state(init, geometry, scheme, seed)`` returns what the run loop steps.  ``init`` is one of

* a **text spec** (``--init``): :mod:`meanfield.initial.circle`, :mod:`meanfield.initial.sphere`,
  :mod:`meanfield.initial.zonal`; the density integrates to 1 and is handed to
  ``scheme.state_from_density`` as before;
* a **numpy array** of values on the scheme's own grid, the grid of the ``density`` its runs
  save, laid out on the points :func:`meanfield.grid` returns (:func:`input_points`): circle
  ``theta_j = 2 pi j / N`` (also the centres of the finite-volume cells); sphere the Gauss–Legendre
  ``(theta, phi)`` grid, colatitude and longitude in radians, rows from the north pole; zonal the ``polar``
  angles (the Gauss–Gegenbauer nodes, or the finite-volume cell centres).  For spectral,
  Galerkin and Lagrangian schemes these are point values of the density; for a
  **finite-volume** scheme they are its **cell averages** (the state itself, what an fv run
  saves).  Any other shape is refused with the expected shape and its coordinates;
* an ``xarray.DataArray`` with its coordinates, in the units of the run files: circle ``theta``
  (radians, ``[0, 2 pi)``), sphere ``lat``/``lon`` (degrees north/east), zonal ``polar``
  (radians from the pole, ``[0, pi]``), on any grid; other dimensions are refused (select a
  frame, e.g. ``.isel(time=-1)``).  Its values are point values, or cell averages when its
  ``cell_methods`` attribute says ``mean`` (CF convention; cells bounded halfway between
  neighbouring coordinates, by the poles at the ends of ``polar``);
* a **callable**: ``f(theta)`` (circle), ``f(theta, phi)`` (sphere: colatitude in ``[0, pi]`` and longitude in
  ``[0, 2 pi)``, radians, MATH.md §2.2, called with 2-D arrays), ``f(polar)`` (zonal, radians from the pole),
  evaluated once on the arrays of :func:`meanfield.grid` (vectorised; it must return one value per point, or a
  scalar; the basis's ``function_density``).  A sphere callable written for degrees ``f(lat, lon)`` is refused
  in one line naming the convention (:func:`meanfield.initial.sphere.sphere_function_values`);
* an ``xarray.Dataset`` (a run: its last density frame with its coordinates) or the path of a
  ``.nc`` run file.  Finite-volume runs, and Lagrangian frames flagged ``density_resolved = 0``,
  hold cell averages; other runs point values.

What ``init`` is and how messages name it is :mod:`meanfield.initial.kinds`; arrays, DataArrays,
functions and runs are read by :mod:`meanfield.initial.sources`.  This module puts them onto the
scheme, asking it only what the contract (:mod:`meanfield.solvers.schemes.contract`) declares: its grid
(``basis``, ``coords()``, ``dims()``), whether its state is cell averages
(``takes_cell_averages``), whether it takes a source given as cell averages as cell averages
(``remaps_cell_averages``), and the cells whose averages it takes (``cells()``).

A remap.  Data not on the scheme's own grid are brought onto it (the exact restart of a run of
the same geometry, scheme and resolution is not done here, :mod:`meanfield.solvers.runs.solve` does it):

* spectral, Galerkin and Lagrangian targets take point values: circle by spectral resampling
  from an equispaced source (:func:`meanfield.initial.circle.periodic_resample`, any offset; as
  for run files before) or a periodic cubic spline; sphere by analysis on the source grid when
  it is the Gauss–Legendre grid of a run (:func:`meanfield.initial.sphere.resample_grid`), else a
  bicubic spline continued across the poles; zonal Galerkin from a run file by today's
  Gegenbauer least-squares re-expansion (:func:`meanfield.initial.zonal.resample_run`), else a
  cubic spline in the polar angle continued evenly across the poles.  Cell averages going
  there are read as point values at the cell centres (second order; a clustered frame is then
  refused as negative or unresolved: remap it onto a finite-volume or circle Lagrangian scheme);
* **finite-volume targets: a conservative remap** (:mod:`meanfield.initial.averages`) onto the
  scheme's ``cells()``.  The source is a piecewise function, constant on its cells (cell
  averages) or linear between its points (point values, constant beyond the end points in
  ``polar``); the new cell averages are its exact integrals over the target cells
  (Gauss–Legendre on the pieces between the merged break points, exact to round-off; zonal
  cells with the measure ``|S^{d-2}| sin^{d-2} th dth``, MATH.md §2.2) divided by the cell
  volumes.  The mass is the source's to round-off and non-negative data stay non-negative,
  so clustered data move to a coarser or finer grid (``scheme.state_from_cell_averages``).
  A callable is averaged over each cell by Gauss–Legendre quadrature (20 points).  A scheme
  that declares ``remaps_cell_averages`` (the circle Lagrangian scheme) takes a source given as
  cell averages the same way (its nodes' weights are the masses of the arcs centred on them).

Checks, the same for every kind: finite, non-negative (to ``1e-12 x mean``), positive mass,
and for grid values resolved on the grid (:func:`meanfield.initial.circle.check_density`,
``check_sphere_density``, ``check_zonal_density``); cell averages need no resolution.  Each
failure is one :class:`meanfield.errors.InputError` line naming ``init``
(``init=<numpy array of shape ...>``, ``--init run.nc``, ``--init 'SPEC'``) and what was wrong.
Text specs integrate to 1; **arrays, functions and runs keep their mass** (nothing is
renormalised).
"""

from __future__ import annotations

import numpy as np

from meanfield.errors import require
from meanfield.geometries import geometry_of
from meanfield.initial.averages import Piecewise, conservative_averages, piecewise
from meanfield.initial.files import read_density_file
from meanfield.initial.kinds import kind_of, label_of
from meanfield.initial.sources import COORDINATES, GridSource, as_values, evaluate, read_source
from meanfield.initial.spec import check_sign_and_mass

from ..records import checkpoint
from ..schemes.contract import conform

def grid_values(source: GridSource, scheme) -> np.ndarray:
    """Point values on the scheme's input grid (module docstring: the remap for non-fv targets; the scheme's basis
    does it, :meth:`meanfield.solvers.bases.fourier.FourierBasis.density_from` and its peers)."""
    return scheme.basis.density_from(source)


def input_points(scheme) -> dict:
    """The coordinates a callable ``init`` receives and an array ``init`` is laid out on (:func:`meanfield.grid`), by
    name: its basis's ``grid_points()`` (circle ``theta``; sphere ``theta, phi``, colatitude and longitude in radians,
    ``(nlat, nlon)`` each; zonal ``polar``), or for a scheme whose state is cell averages the centres of its cells,
    the coordinate its runs save (a callable is then averaged over the cells)."""
    if scheme.takes_cell_averages:
        coords = scheme.coords()
        return {name: np.asarray(coords[name][1]) for name in scheme.dims()["density"]}
    return dict(zip(scheme.basis.point_names, scheme.basis.grid_points()))


def grid_call(scheme) -> str:
    """The :func:`meanfield.grid` call that gives the points of ``scheme`` (for messages)."""
    dim = f", dim={scheme.model.dim}" if geometry_of(scheme.geometry).free_dim else ""
    return f"meanfield.grid({scheme.geometry!r}, {scheme.resolution}, {scheme.name!r}{dim})"


def own_grid(scheme) -> tuple[tuple, str]:
    """The shape of the scheme's density grid and a line describing it in the coordinates of :func:`input_points`
    (for refusals)."""
    coords, dims = scheme.coords(), scheme.dims()["density"]
    shape = tuple(np.size(coords[name][1]) for name in dims)
    parts = []
    for axis, (name, values) in enumerate(input_points(scheme).items()):
        along = np.moveaxis(values, axis, 0).reshape(values.shape[axis], -1)[:, 0]
        parts.append(f"{name} = {along[0]:.4g} .. {along[-1]:.4g} rad")
    what = "cell averages of the cells centred" if scheme.takes_cell_averages else "point values"
    return shape, f"{what} at {' x '.join(parts)} ({grid_call(scheme)} gives them)"


def _checked_density_state(density: np.ndarray, scheme, label: str):
    scheme.basis.check_density(density, label)
    return scheme.state_from_density(density)


def _checked_average_state(averages: np.ndarray, volumes: np.ndarray, scheme, label: str):
    check_sign_and_mass(averages, label, float(volumes @ averages), float(volumes.sum()))
    return scheme.state_from_cell_averages(averages)


def _check_claimed_grid(run, scheme) -> None:
    """A run file whose attributes name this scheme and resolution (the run took them as its defaults) holds its
    frames on this scheme's grid (:func:`meanfield.solvers.records.checkpoint.check_grid`): an edited ``resolution`` is one
    line, not a run on a grid the file's data are not on."""
    attrs = run.attrs
    if attrs.get("scheme") == scheme.name and attrs.get("resolution") == scheme.resolution:
        checkpoint.check_grid(scheme, run, checkpoint.source_label(run))


def initial_state(init, geometry: str, scheme, seed=None):
    """The initial state of ``scheme`` (a discretisation of ``geometry``) from ``init`` (module docstring)."""
    require(geometry in COORDINATES, f"geometry must be one of {', '.join(COORDINATES)} (got {geometry!r})")
    scheme = conform(scheme)
    kind = kind_of(init)
    if kind == "text":
        return scheme.state_from_density(scheme.basis.text_density(init, seed))
    label = label_of(init)
    if kind == "file":                      # a density saved by numpy or xarray: read as the array or DataArray
        init = read_density_file(init, label)
        kind = kind_of(init)
    fv = scheme.takes_cell_averages
    if kind == "array":
        shape, what = own_grid(scheme)
        values = as_values(init, label)
        require(values.shape == shape, f"{label}: expected shape {shape}: {what}")
        if fv:
            return _checked_average_state(values, scheme.cells()[1], scheme, label)
        return _checked_density_state(values, scheme, label)
    if kind == "function":
        if fv:
            faces, volumes, weight, period = scheme.cells()
            wrap = (lambda t: np.mod(t, period)) if period else (lambda t: t)
            function = Piecewise(np.empty(0), lambda t: evaluate(init, label, wrap(t)))
            return _checked_average_state(conservative_averages(function, faces, volumes, weight, period),
                                          volumes, scheme, label)
        return scheme.state_from_density(scheme.basis.function_density(init, label))
    if kind == "dataset":
        _check_claimed_grid(init, scheme)
    source = read_source(init, geometry, label, scheme.model.dim)
    if fv or (scheme.remaps_cell_averages and source.cell_averages):
        faces, volumes, weight, period = scheme.cells()
        averages = conservative_averages(piecewise(source, geometry), faces, volumes, weight, period)
        return _checked_average_state(averages, volumes, scheme, label)
    return _checked_density_state(grid_values(source, scheme), scheme, label)
