"""Clusters as the attention field sees them: one observable for every representation (MATH.md §10).

Both attentions move a token up the attention field ``A = K * mu`` (USA: velocity ``grad A / beta``; SA:
``grad log A / beta``; the same maxima).  A *cluster* of a measure ``mu`` at the model's ``beta`` is:

1. **A basin.**  Every local maximum of ``A`` owns the set of places that the gradient flow of ``A``, frozen at
   that time, carries to it (its *basin*; computed by steepest ascent on the sampling graph of
   :mod:`meanfield.attention_field`, which resolves ``A`` at a tenth of the kernel's width).
2. **Standing out.**  The maxima are taken from the lowest to the highest along the saddles that join their
   basins, highest saddle first (the order in which a falling level separates them).  Where a maximum meets a
   higher one over a saddle of height ``s``, it *stands out* when either its *prominence* ``1 - s / A_max`` is at
   least :data:`PROMINENCE` (1/2: the field falls to half its peak before it can rise to a higher one), or its
   *concentration* ``c = -Laplace A / ((d - 1) beta A)`` at the maximum is at least :data:`CONCENTRATION` (1/4: the
   mass under it is at most ``sqrt(3)`` kernel widths wide; ``c = 1`` for a point, about ``1 / (1 + beta s^2)`` for a
   cluster of angular spread ``s``, ``O(eps)`` for a perturbation ``eps`` of the uniform state).
   A maximum that does not stand out is no cluster of its own: its basin joins the basin across that saddle.
   The highest maximum of each connected piece is measured against the lowest value of ``A`` on the piece.
3. **Enough mass.**  A basin that stands out is a cluster when it holds at least :data:`MIN_MASS` (1 %) of the
   mass.  Its *position* is the maximum of ``A`` (refined between nodes), its *mass* the mass of its basin.

Mass outside every cluster's basin (a uniform state's, a light basin's) belongs to no cluster (``labels == -1``), and
so does mass at a *flat* node, where ``A`` differs from every neighbour's value by at most :data:`FLAT` (``1e-12``) of
its maximum: there the direction of ascent is below the rounding of ``A`` (e.g. a valley between clusters at large
``beta``, where the clusters' tails are ``exp(-beta (1 - cos d))`` below the background's constant field, ``1e-26`` at
``beta = 64``, ``d = 1.5``), so which cluster it would join is decided by the last bits of the sums, and the velocity
carrying it there is as small.
Both thresholds are dimensionless and read off ``A`` alone, so the count does not depend on the grid, the cells or
the atoms the measure is given on: a uniform density and a perturbation of it have no cluster, ``k`` separated
point masses are ``k`` clusters, and two clusters closer than about ``2.4 / sqrt(beta)`` are one (they are one hill
of ``A``, which is what the dynamics does with them).  Every count the package reports uses this definition: the
command line, ``cluster_count(time)`` of runs that track clusters, plot titles, the demo and the studies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .attention_field import FIELDS, SampledField, field_of
from .circle_clusters import COMPILED
from .errors import require
from .geometries import geometry_of, run_geometry

#: A maximum stands out when its prominence ``1 - saddle / peak`` is at least this ...
PROMINENCE = 0.5
#: ... or when its concentration ``-Laplace A / ((d - 1) beta A)`` is at least this.
CONCENTRATION = 0.25
#: Smallest mass of a cluster, relative to the total.
MIN_MASS = 1e-2
#: A sampling node is *flat* when ``A`` differs from it by at most this fraction of ``max |A|`` at every neighbour.
FLAT = 1e-12


@dataclass(frozen=True)
class Clusters:
    """The clusters of one measure (module docstring), heaviest first.

    ``centres``: ``(k, d)`` unit vectors (zonal rings: ``(cos th, sin th)``, ``th`` the polar angle); ``masses``:
    their basins' masses; ``concentrations`` and ``prominences`` at their maxima (NaN prominence: an isolated atom
    cluster with no sampled value below it, which stands out by its concentration); ``basin_sizes``: how many of the
    given masses (atoms, grid nodes, cells) each basin holds; ``labels``: the cluster of each given mass (-1: none);
    ``beta``: the field's inverse temperature; ``tops``: for each
    cluster the given place where ``A`` is highest in its basin (the place nearest its maximum, which moves with it:
    what :mod:`meanfield.cluster_lineage` follows from one state to the next).
    """

    centres: np.ndarray
    masses: np.ndarray
    concentrations: np.ndarray
    prominences: np.ndarray
    basin_sizes: np.ndarray
    labels: np.ndarray
    beta: float
    tops: np.ndarray

    @property
    def count(self) -> int:
        return int(self.masses.size)

    @property
    def angles(self) -> np.ndarray:
        """On the circle: the centres' angles in ``[0, 2 pi)``; for zonal rings: their polar angles."""
        require(self.centres.shape[1] == 2, "angles are the centres of circle clusters or zonal rings (2-D)")
        return np.mod(np.arctan2(self.centres[:, 1], self.centres[:, 0]), 2 * math.pi)


# ------------------------------------------------------------------------------------------------ the observable
def _saddles(field: SampledField, basin: np.ndarray):
    """For each pair of touching basins ``(a, b)``, ``a < b``: the highest pass between them (the highest
    ``min(A(u), A(v))`` over the graph's edges ``u`` in ``a``, ``v`` in ``b``), highest first."""
    values, table = field.values, field.neighbours
    u = np.repeat(np.arange(values.size), table.shape[1])
    v = table.reshape(-1)
    across = basin[u] != basin[v]
    u, v = u[across], v[across]
    if u.size == 0:
        return np.zeros((0, 2), dtype=np.intp), np.zeros(0)
    a, b = np.minimum(basin[u], basin[v]), np.maximum(basin[u], basin[v])
    height = np.minimum(values[u], values[v])
    order = np.lexsort((-height, b, a))
    a, b, height = a[order], b[order], height[order]
    first = np.ones(a.size, dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    pairs, heights = np.stack((a[first], b[first]), axis=1), height[first]
    order = np.argsort(-heights, kind="stable")
    return pairs[order], heights[order]


def clusters_of_field(field: SampledField, masses: np.ndarray, *, prominence: float = PROMINENCE,
                      concentration: float = CONCENTRATION, min_mass: float = MIN_MASS,
                      refine: bool = True) -> Clusters:
    """The clusters (module docstring) of ``masses`` sitting at ``field.place`` on the sampled ``field``.
    ``refine=False``: centres at the sampling nodes of the maxima (and concentrations there, unless a decision
    needed the exact value), for a caller that needs the count, masses and labels only."""
    masses = np.asarray(masses, dtype=float)
    roots = field.ascent_roots()
    peaks, basin = np.unique(roots, return_inverse=True)            # elementary basins 0 .. p-1
    count = peaks.size
    flat = field.flat_nodes(FLAT)
    node_mass = np.bincount(field.place, masses, minlength=field.values.size)
    node_mass[flat] = 0.0                                               # flat nodes hold no cluster's mass
    basin_mass = np.bincount(basin, node_mass, minlength=count)
    owner = np.arange(count)            # the territory each elementary basin belongs to now
    piece = np.arange(count)            # union-find over connected pieces
    top = np.arange(count)              # the undecided territory at the top of each piece (by its root)
    closed: dict[int, float] = {}       # territory -> its prominence, for the ones that stand out
    refined: dict[int, tuple] = {}      # peak node -> (refined maximum, its concentration), each computed once

    def peak_of(t):
        node = int(peaks[t])
        if node not in refined:
            refined[node] = field.peak(node)
        return refined[node]

    def stands_out(t, saddle):
        """Whether territory ``t``'s maximum stands out over ``saddle`` (module docstring), and its prominence."""
        top_value = float(field.values[peaks[t]])
        rise = 1.0 - saddle / top_value if top_value > 0 else 0.0
        return rise >= prominence or peak_of(t)[1] >= concentration, rise

    def find(a):
        while piece[a] != a:
            piece[a] = piece[piece[a]]
            a = piece[a]
        return a

    def territory(e):
        while owner[e] != e:
            owner[e] = owner[owner[e]]
            e = owner[e]
        return e

    pairs, heights = _saddles(field, basin)
    for (a, b), height in zip(pairs, heights):
        pa, pb = find(a), find(b)
        if pa == pb:
            continue
        ta, tb = top[pa], top[pb]
        if field.values[peaks[ta]] < field.values[peaks[tb]] or (
                field.values[peaks[ta]] == field.values[peaks[tb]] and peaks[ta] < peaks[tb]):
            pa, pb, ta, tb, a, b = pb, pa, tb, ta, b, a                  # the lower piece is pb, its top tb
        stands, rise = stands_out(tb, float(height))
        if stands:
            closed[tb] = rise
        else:
            owner[tb] = territory(a)                                     # its basin joins the one across the saddle
        piece[pb] = pa
    roots = np.array([find(e) for e in range(count)])
    lowest = np.full(count, np.inf)
    np.minimum.at(lowest, roots[basin], field.values)                    # the lowest A on each piece
    for root in np.unique(roots):                                        # each piece's highest maximum
        stands, rise = stands_out(top[root], float(lowest[root]))
        if stands:                # a piece with no lower node (an isolated atom and its maximum) has no measured
            closed[top[root]] = rise if rise >= 1e-3 else math.nan      # prominence: it stood out by concentration
    final = np.array([territory(e) for e in range(count)])
    territory_mass = np.bincount(final, basin_mass, minlength=count)
    kept = [t for t in closed if territory_mass[t] >= min_mass * float(masses.sum())]
    kept.sort(key=lambda t: (-territory_mass[t], peaks[t]))
    cluster_of_basin = np.full(count, -1)
    for index, t in enumerate(kept):
        cluster_of_basin[final == t] = index
    labels = np.where(flat[field.place], -1, cluster_of_basin[basin[field.place]])
    dim = field.directions.shape[1]
    found = [peak_of(t) if refine or int(peaks[t]) in refined else
             (field.directions[peaks[t]], float(field.concentration[peaks[t]])) for t in kept]
    centres = np.array([direction for direction, _ in found]).reshape(-1, dim)
    tops = _tops(labels, field.values[field.place], len(kept))
    return Clusters(centres, np.bincount(labels[labels >= 0], masses[labels >= 0], minlength=len(kept)),
                    np.array([value for _, value in found]),
                    np.array([closed[t] for t in kept]),
                    np.bincount(labels[labels >= 0], minlength=len(kept)), labels, field.beta, tops)


def _tops(labels: np.ndarray, height: np.ndarray, count: int) -> np.ndarray:
    """For each cluster ``0 .. count - 1`` the first place of its label where ``height`` is largest."""
    inside = np.flatnonzero(labels >= 0)
    best = np.full(count, -np.inf)
    np.maximum.at(best, labels[inside], height[inside])
    at_best = inside[height[inside] == best[labels[inside]]]
    _, first = np.unique(labels[at_best], return_index=True)
    return at_best[first].astype(np.intp)


def _checked(masses, prominence: float, concentration: float, min_mass: float) -> tuple[np.ndarray, float]:
    """The masses as floats and their total, checked with the thresholds."""
    masses = np.asarray(masses, dtype=float)
    total = float(masses.sum()) if masses.size else math.nan
    require(math.isfinite(total), "cluster detection needs finite masses (a finite density) with a finite sum")
    require(total > 0, "cluster detection needs a positive total mass")
    require(0 < prominence < 1, f"prominence must be in (0, 1) (got {prominence:g})")
    require(0 < concentration <= 1, f"concentration must be in (0, 1] (got {concentration:g})")
    require(0 < min_mass < 1, f"min_mass must be in (0, 1) (got {min_mass:g})")
    return masses, total


def clusters_of_masses(places, masses, beta: float, *, geometry: str, dim: int = 2, prominence: float = PROMINENCE,
                       concentration: float = CONCENTRATION, min_mass: float = MIN_MASS,
                       refine: bool = True) -> Clusters:
    """The clusters of ``masses`` at ``places`` (the module docstring; :func:`meanfield.attention_field.field_of`
    says what ``places`` are for each ``geometry``)."""
    masses, total = _checked(masses, prominence, concentration, min_mass)
    require(isinstance(beta, (int, float, np.floating)) and math.isfinite(beta) and beta > 0,
            f"beta must be a finite number > 0 for clusters (got {beta!r})")
    compiled = COMPILED.get(geometry)
    if compiled is not None:
        centres, concentrations, prominences, cluster_masses, sizes, labels, tops = compiled(
            np.ascontiguousarray(places, dtype=float), masses, float(beta), least_mass=min_mass * total,
            prominence=prominence, concentration=concentration, flat=FLAT, refine=refine)
        return Clusters(centres, cluster_masses, concentrations, prominences, sizes, labels, float(beta), tops)
    field = field_of(places, masses, float(beta), geometry=geometry, dim=dim)
    return clusters_of_field(field, masses, prominence=prominence, concentration=concentration, min_mass=min_mass,
                             refine=refine)


# ------------------------------------------------------------------------------------------------ densities
def clusters_of_density(density, *, beta: float, geometry: str = "circle", theta=None, lat=None, lon=None,
                        polar=None, volumes=None, dim: int | None = None, points=None, point_masses=None,
                        prominence: float = PROMINENCE, concentration: float = CONCENTRATION,
                        min_mass: float = MIN_MASS, refine: bool = True) -> Clusters:
    """The clusters of a density on its grid or cells (module docstring).

    Parameters
    ----------
    density : array
        Values on the grid: ``(N,)`` on the circle, ``(lat, lon)`` on S^2, ``(polar,)`` for a zonal density.
    beta : float
        The model's inverse temperature (the field is ``K * rho`` at this ``beta``).
    geometry : {"circle", "sphere", "zonal"}
        Where the density lives.
    theta : array, optional
        Circle: the grid's angles or cell centres (default ``2 pi j / N``).
    lat, lon : array
        S^2: the grid's latitudes and longitudes in degrees.
    polar : array
        Zonal: the nodes' (cells') polar angles on S^{dim-1}.
    volumes : array, optional
        Each node's quadrature weight or cell's volume: circle ``(N,)`` (default ``2 pi / N``); S^2 one per
        latitude row; zonal ``(polar,)``.
    dim : int, optional
        Zonal: the ambient dimension.
    points, point_masses : array, optional
        Circle and zonal cells: point clusters (angles; polar angles of rings) whose masses the density already
        holds in the cells that contain them (a finite-volume frame's ``point_position``, ``point_mass``; NaN slots
        unused): they are taken out of their cells and put at their own places for the field.  The labels and tops
        stay the cells' (a point counted in its cell, as the density holds it), so that they mean the same places
        whatever slot a point occupies.
    prominence, concentration, min_mass : float
        The thresholds (module docstring).
    refine : bool
        Refine the centres between sampling nodes (:func:`clusters_of_field`).

    Returns
    -------
    Clusters
        ``count``, ``centres``, ``masses``, ``concentrations``, ``prominences``, ``basin_sizes``, ``labels``.
    """
    thresholds = dict(prominence=prominence, concentration=concentration, min_mass=min_mass, refine=refine)
    density = np.asarray(density, dtype=float)
    shape = geometry_of(geometry)
    geometry = shape.name
    places, masses, dim = shape.density_masses(density, theta=theta, lat=lat, lon=lon, polar=polar, volumes=volumes,
                                               dim=dim)
    if points is None or point_masses is None:
        return clusters_of_masses(places, masses, beta, geometry=geometry, dim=int(dim), **thresholds)
    require(FIELDS[geometry].one_angle, "point clusters are given on the circle or as zonal rings")
    cells = masses.size
    mixed_places, mixed, home = points_out_of_cells(places, masses, np.asarray(points, dtype=float),
                                                     np.asarray(point_masses, dtype=float), FIELDS[geometry].periodic)
    found = clusters_of_masses(mixed_places, mixed, beta, geometry=geometry, dim=int(dim), **thresholds)
    labels = found.labels[:cells]
    tops = np.where(found.tops < cells, found.tops, home[np.maximum(found.tops - cells, 0)])   # a point: its cell
    return replace(found, labels=labels, tops=tops,
                   basin_sizes=np.bincount(labels[labels >= 0], minlength=found.count))


def points_out_of_cells(centres, masses, points, point_masses, periodic: bool):
    """The cells and the points as places, the cells' masses without the points they hold followed by the points'
    (unused NaN slots: no mass), and each point's cell; the cells are equal, so a point's cell is the one with the
    nearest centre."""
    used = np.isfinite(points) & np.isfinite(point_masses)
    points, point_masses = np.where(used, points, centres[0]), np.where(used, point_masses, 0.0)
    spacing = (centres[-1] - centres[0]) / (centres.size - 1)
    cell = np.rint((points - centres[0]) / spacing).astype(np.intp)
    cell = np.mod(cell, centres.size) if periodic else np.clip(cell, 0, centres.size - 1)
    return (np.concatenate((centres, points)),
            np.concatenate((masses - np.bincount(cell, point_masses, minlength=centres.size), point_masses)), cell)


# ------------------------------------------------------------------------------------------------ atoms
def clusters_of_atoms(points, weights=None, *, beta: float, dim: int | None = None, zonal: bool = False,
                      prominence: float = PROMINENCE, concentration: float = CONCENTRATION,
                      min_mass: float = MIN_MASS, refine: bool = True) -> Clusters:
    """The clusters of weighted atoms (tokens, nodes, point clusters) on S^{d-1} (module docstring).

    Parameters
    ----------
    points : array
        Unit vectors ``(n, d)``; on the circle also angles ``(n,)``; with ``zonal=True`` the polar angles ``(n,)``
        of rings on S^{dim-1} (or unit vectors, whose last axis is the pole).
    weights : array, optional
        The atoms' masses (default ``1/n`` each).
    beta : float
        The model's inverse temperature.
    dim : int, optional
        The ambient dimension (required with ``zonal``).
    zonal : bool
        The atoms are zonal rings (or are read as their zonal average).
    prominence, concentration, min_mass : float
        The thresholds (module docstring).
    refine : bool
        Refine the centres between sampling nodes (:func:`clusters_of_field`).

    Returns
    -------
    Clusters
        ``count``, ``centres``, ``masses``, ``concentrations``, ``prominences``, ``basin_sizes``, ``labels``.
    """
    thresholds = dict(prominence=prominence, concentration=concentration, min_mass=min_mass, refine=refine)
    points = np.asarray(points, dtype=float)
    require(points.ndim in (1, 2) and points.shape[0] >= 1, "points must be (n,) angles or (n, d) unit vectors")
    n = points.shape[0]
    weights = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=float)
    require(weights.shape == (n,), "weights must have one entry per point")
    if zonal:
        require(dim is not None and dim >= 3, "zonal atoms need dim >= 3")
        polar = points if points.ndim == 1 else np.arccos(np.clip(points[:, -1], -1.0, 1.0))
        return clusters_of_masses(polar, weights, beta, geometry="zonal", dim=int(dim), **thresholds)
    if points.ndim == 1:
        return clusters_of_masses(points, weights, beta, geometry="circle", **thresholds)
    d = points.shape[1]
    require(d >= 2 and (dim is None or dim == d), f"points must be (n, {dim or 'd'}) unit vectors")
    if d == 2:
        return clusters_of_masses(np.arctan2(points[:, 1], points[:, 0]), weights, beta, geometry="circle",
                                  **thresholds)
    return clusters_of_masses(points, weights, beta, geometry="sphere" if d == 3 else "atoms", dim=d, **thresholds)


# ------------------------------------------------------------------------------------------------ run files
def _run_beta(attrs) -> float:
    beta = attrs.get("beta")
    require(beta is not None, "clusters of a run file need its beta attribute (not a meanfield run?)")
    return float(beta)


def clusters_in_frame(run, index: int = -1, *, prominence: float = PROMINENCE, concentration: float = CONCENTRATION,
                      min_mass: float = MIN_MASS) -> Clusters:
    """The clusters of frame ``index`` of a run file, whatever produced it (module docstring).

    Parameters
    ----------
    run : xarray.Dataset
        A run of :func:`meanfield.solve` or :func:`meanfield.simulate_particles` (or its file, loaded).
    index : int
        The frame (default the last).
    prominence, concentration, min_mass : float
        The thresholds (module docstring).

    Returns
    -------
    Clusters
        Of the density on its grid or cells for PDE runs (a finite-volume run's point clusters are in their cells), of the atoms
        (``positions``, ``weights``) for particle and Lagrangian runs: the count ``cluster_count`` records.
    """
    def value(name):
        if name not in run:
            return None
        variable = run[name]
        return variable.values[index] if "time" in variable.dims else variable.values

    return clusters_of_variables(value, run.attrs, prominence=prominence, concentration=concentration,
                                 min_mass=min_mass)


def clusters_of_variables(value, attrs, *, prominence: float = PROMINENCE, concentration: float = CONCENTRATION,
                          min_mass: float = MIN_MASS, refine: bool = True) -> Clusters:
    """The clusters of one frame given by its variables: ``value(name)`` is the frame's array of the run variable
    ``name`` (``positions``, ``weights``, ``density``, ``theta``, ``lat``, ``lon``, ``polar``, ``cell_volume``,
    ``quadrature_weight``, ``node_theta``) or ``None``; ``attrs`` the run's ``geometry``, ``beta`` and ``dim``.
    What :func:`clusters_in_frame` reads from a file and a run's cluster tracker from a state's frame (``refine``:
    :func:`clusters_of_field`)."""
    thresholds = dict(prominence=prominence, concentration=concentration, min_mass=min_mass, refine=refine)
    shape, beta = run_geometry(attrs), _run_beta(attrs)
    positions, weights = value("positions"), value("weights")
    if positions is not None and weights is not None:
        points = np.asarray(positions, dtype=float)
        zonal = shape is not None and shape.rings
        return clusters_of_atoms(points if not zonal else np.asarray(value("node_theta")), weights, beta=beta,
                                 dim=int(attrs.get("dim", points.shape[-1])), zonal=zonal, **thresholds)
    density = value("density")
    require(density is not None, "clusters_in_frame needs a run with density, or positions and weights")
    density = np.asarray(density, dtype=float)
    shape = geometry_of(attrs.get("geometry"), "a density run's geometry")
    return clusters_of_density(density, beta=beta, geometry=shape, **shape.frame_density(value, attrs), **thresholds)
