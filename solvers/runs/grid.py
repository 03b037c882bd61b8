"""The points a PDE run's initial data live on: :func:`grid`, ``meanfield.grid``.

A callable ``init`` of :func:`meanfield.solve` is called on these points, and an array ``init`` must hold one value
per point, in this layout (:mod:`meanfield.solvers.runs.initial_state`).  They are the scheme's own: :func:`grid`
builds the discretisation :func:`meanfield.solve` would build and reads them from it
(:func:`meanfield.solvers.runs.initial_state.input_points`, the basis's ``grid_points()``), so they are the bits a
run of that scheme saves in its coordinates.
"""

from __future__ import annotations

import numpy as np

from meanfield.errors import require
from meanfield.limits import check_solve_size
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.schemes import SCHEMES
from meanfield.settings import Monitor

from .initial_state import input_points
from .solve import _discretisation, build_scheme, scheme_class


def grid(geometry: str = "circle", resolution: int | None = None, scheme: str | None = None, *,
         dim: int | None = None):
    """The coordinates a callable ``init`` receives and an array ``init`` must match, for a run of ``geometry`` at
    ``resolution`` with ``scheme`` (the points of that run's ``density``).

    Parameters
    ----------
    geometry : {"circle", "sphere", "zonal"}
        As for :func:`meanfield.solve`.
    resolution : int, optional
        Circle grid points or cells ``N``, sphere degree ``L``, zonal degree or cells; default the solver's
        (:data:`meanfield.defaults.GEOMETRY_DEFAULTS`: 256, 63, 64).
    scheme : str, optional
        As for :func:`meanfield.solve`; default the geometry's first (:data:`meanfield.schemes.SCHEMES`: ``spectral``,
        ``spectral``, ``galerkin``).
    dim : int, optional
        The ambient dimension of zonal densities (default 3): the Gauss–Gegenbauer nodes depend on it.

    Returns
    -------
    numpy.ndarray or tuple of numpy.ndarray
        * circle: ``theta``, shape ``(N,)``, radians: the grid points ``2 pi k / N`` (spectral, Lagrangian), or the
          cell centres, also ``2 pi k / N`` (``fv``: cell ``k`` is ``[2 pi (k - 1/2) / N, 2 pi (k + 1/2) / N]``,
          an array holds its cell averages and a callable is averaged over it);
        * sphere: ``(theta, phi)``, each ``(nlat, nlon)``: the colatitude in ``[0, pi]`` (rows from the north pole,
          Gauss–Legendre) and the longitude ``2 pi j / nlon`` in ``[0, 2 pi)``, radians (MATH.md §2.2); a callable is
          called ``f(theta, phi)`` on them;
        * zonal: ``polar``, radians from the pole in ``[0, pi]``: the Gauss–Gegenbauer nodes (``galerkin``) or the
          cell centres ``pi (i + 1/2) / N`` (``fv``, cell averages as on the circle).

        Fresh arrays, bit for bit the coordinates of the run's file (a sphere run saves them as
        ``lat = 90 - degrees(theta)`` and ``lon = degrees(phi)``).

    Raises
    ------
    meanfield.InputError
        One line naming the parameter, as :func:`meanfield.solve` would.

    Examples
    --------
    >>> density = lambda theta, phi: (1 + 0.1 * np.sin(theta) * np.cos(phi)) / (4 * np.pi)
    >>> theta, phi = meanfield.grid("sphere", 31)
    >>> a = meanfield.solve("sphere", beta=4.0, resolution=31, t_final=1.0, init=density)
    >>> b = meanfield.solve("sphere", beta=4.0, resolution=31, t_final=1.0, init=density(theta, phi))  # a, bit for bit
    """
    require(geometry in SCHEMES, f"geometry must be one of {', '.join(SCHEMES)} (got {geometry!r})")
    scheme, resolution, dim = _discretisation(None, geometry, scheme, resolution, dim)
    model = Model(dim=dim)
    check_solve_size(scheme_class(geometry, scheme), f"the {geometry} {scheme} scheme", resolution, model.dim, 1.0, 1.0)
    built = build_scheme(geometry, scheme, model, resolution, None, Monitor(), Normalization(), {})
    points = tuple(np.array(values, dtype=float) for values in input_points(built).values())
    return points[0] if len(points) == 1 else points
