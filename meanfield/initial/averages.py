"""The conservative remap: exact cell averages of a piecewise-smooth density (MATH.md §2.2 measure).

A source on a grid is a piecewise function (:func:`piecewise`): constant on its cells (cell
averages) or linear between its points (point values, constant beyond the end points in
``polar``).  :func:`conservative_averages` integrates such a function over target cells by
Gauss–Legendre on the pieces between the merged break points, exact to round-off, so mass is kept
and non-negative data stay non-negative.  Which cells a scheme takes is the scheme's own
(``cells()`` of :mod:`meanfield.solvers.schemes.contract`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import roots_legendre

from ..geometries import geometry_of
from .sources import GridSource

#: Gauss–Legendre points per piece of the conservative remap (as meanfield.solvers.schemes.finite_volume.zonal_cell_volumes).
QUADRATURE_POINTS = 20


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


def piecewise(source: GridSource, geometry) -> Piecewise:
    """The source's piecewise representation: constant on its cells or linear between its points (the circle's
    periodic, a zonal density's on ``[0, pi]``; ``geometry`` a one-axis geometry or its name)."""
    (x,), values = source.coords, source.values
    shape = geometry_of(geometry)
    if shape.periodic:
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
    faces = interval_faces(x, *shape.span)
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
