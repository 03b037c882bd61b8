"""Clusters: one definition for every geometry, for densities and for tokens (MATH.md §5; DESIGN.md "Clusters").

A *cluster* of a measure ``mu`` on the circle or the sphere, seen at a resolution of cells, is a connected piece
of the region where ``mu`` is more than :data:`LEVEL` (2) times as dense as the uniform measure of the same
mass, holding at least :data:`MIN_MASS` (1 %) of the mass.  Step by step:

1. **Cells.**  The mass of ``mu`` is gathered in cells.  A density on a grid uses its own grid: each grid point
   is a cell whose volume is its quadrature weight (circle: ``2 pi / N``; S^2: the Gauss–Legendre weight of its
   row; zonal: its Gauss–Gegenbauer weight; finite volumes: ``cell_volume``).  Atoms (tokens, Lagrangian nodes)
   are binned: ``N`` equal arcs of the circle; ``N/2`` equal-area bands in ``z`` times ``N`` equal longitudes on
   S^2; ``N/2`` equal polar bands for zonal rings on S^{d-1} (a piece that holds a pole's cell is a cap on that
   pole and is centred on it).  On S^{d-1}, ``d >= 4``, which has no practical grid,
   the cells are the groups of atoms linked at angles below ``2 pi / N`` and a cell's volume is that of a cap of
   that angular radius.
2. **Dense cells.**  A cell is dense when its mass exceeds ``LEVEL`` times the uniform measure's mass in it:
   ``m_c > LEVEL * M * |c| / |S^{d-1}|`` (``M`` the total mass).  For a density that is ``rho > 2 mean(rho)``.
3. **Connected.**  Dense cells that touch (share a side or a corner, across ``theta = 0`` and the date line, and
   around a pole) belong to one piece.
4. **Clusters.**  The pieces holding at least ``MIN_MASS * M``.  A cluster's *centre* is the mass-weighted mean
   direction of its dense cells' mass; its *mass* is that of its *basin*, the cells (atoms) nearer to its centre
   than to any other centre, so the masses of the clusters add up to ``M``; its *peak* is its largest cell
   density over the mean density.

A uniform density has no cluster; ``k`` separated bumps rising above twice the mean are ``k`` clusters.  The
resolution matters where clusters are close: two clusters within about two cells of each other are one.  For
atoms the default is ``N = 256`` cells around a great circle, fewer for few atoms (the uniform share of a cell
must hold several atoms, :func:`atom_resolution`); with 1 % of the mass a cluster, fewer than a few thousand
i.i.d. uniform tokens show a chance cluster now and then (measured on S^2: 0.1 per snapshot at 1000 tokens,
0.05 at 2000, none in 20 snapshots from 4000 on).  Every count the package reports uses this definition: the
command line, ``cluster_count(time)`` of runs that track clusters, the plots, the demo and the studies.  A
*merge* is an event, recorded when two clusters' centres come within 1e-3 rad
(:mod:`meanfield.solvers.clusters`); two clusters closing in count as one a little earlier, when their cells touch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import require
from .geometry import sphere_area
from .point_groups import link_groups, merge_points

#: A cell is dense when it holds more than this many times the uniform measure's mass in it.
LEVEL = 2.0
#: Smallest mass of a cluster, relative to the total.
MIN_MASS = 1e-2
#: Cells around a great circle when atoms are binned (at most; :func:`atom_resolution`).
ATOM_CELLS = 256
#: The uniform share of a cell holds at least this many atoms (:func:`atom_resolution`).
ATOMS_PER_CELL = 8
#: Fewest cells around a great circle.
MIN_CELLS = 8


@dataclass(frozen=True)
class Clusters:
    """The clusters of one measure (module docstring): ``centres`` (``(k, d)`` unit vectors), basin ``masses``,
    ``dense_masses`` (the mass of each cluster's dense cells), ``peaks`` (largest cell density / mean) and
    ``cells`` (the cells around a great circle the measure was seen at)."""

    centres: np.ndarray
    masses: np.ndarray
    dense_masses: np.ndarray
    peaks: np.ndarray
    cells: int

    @property
    def count(self) -> int:
        return int(self.masses.size)

    @property
    def angles(self) -> np.ndarray:
        """On the circle: the centres' angles in ``[0, 2 pi)``; for zonal rings: their polar angles."""
        require(self.centres.shape[1] == 2, "angles are the centres of circle clusters or zonal rings (2-D)")
        return np.mod(np.arctan2(self.centres[:, 1], self.centres[:, 0]), 2 * math.pi)


# ------------------------------------------------------------------------------------------------ grids
@dataclass(frozen=True)
class _Grid:
    """Cells in a 1-D or 2-D array, each with a volume and a direction; how they touch."""

    volumes: np.ndarray        # shape of the array of cells
    directions: np.ndarray     # shape + (d,)
    periodic: bool             # the last axis wraps (circle; longitudes)
    polar_rows: bool           # 2-D: the first and last rows each surround a pole (they touch across it)
    dim: int
    rings: bool = False        # zonal rings by polar angle: a piece holding the first (last) cell is a cap on a pole


def _circle_grid(angles: np.ndarray, volumes: np.ndarray) -> _Grid:
    return _Grid(volumes, np.stack((np.cos(angles), np.sin(angles)), axis=-1), True, False, 2)


def _sphere_grid(lat_deg: np.ndarray, lon_deg: np.ndarray, row_volumes: np.ndarray) -> _Grid:
    lat, lon = np.meshgrid(np.radians(lat_deg), np.radians(lon_deg), indexing="ij")
    directions = np.stack((np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)), axis=-1)
    volumes = np.broadcast_to(np.asarray(row_volumes, dtype=float)[:, None], lat.shape)
    return _Grid(volumes, directions, True, True, 3)


def _polar_grid(polar: np.ndarray, volumes: np.ndarray, dim: int) -> _Grid:
    directions = np.stack((np.cos(polar), np.sin(polar)), axis=-1)     # the ring's point in a meridian half-plane
    return _Grid(volumes, directions, False, False, dim, rings=True)


def _labels(dense: np.ndarray, grid: _Grid) -> tuple[np.ndarray, int]:
    """Connected pieces of the dense cells (labels 1..count, 0 elsewhere)."""
    from scipy import ndimage

    structure = np.ones((3,) * dense.ndim, dtype=bool)
    labels, count = ndimage.label(dense, structure=structure)
    if count == 0:
        return labels, 0
    parent = np.arange(count + 1)

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def join(a, b):
        if a and b:
            parent[find(a)] = find(b)

    if grid.periodic:                       # the last axis wraps: the last column touches the first
        first, last = labels[..., 0], labels[..., -1]
        if labels.ndim == 1:
            join(int(first), int(last))
        else:
            for shift in (-1, 0, 1):
                for a, b in zip(last, np.roll(first, shift)):
                    join(int(a), int(b))
    if labels.ndim == 2 and grid.polar_rows:   # the cells of a polar row all meet at the pole
        for row in (labels[0], labels[-1]):
            present = row[row > 0]
            for a in present[1:]:
                join(int(a), int(present[0]))
    roots = np.array([find(a) for a in range(count + 1)])
    _, compact = np.unique(roots, return_inverse=True)     # 0 stays 0: root of 0 is 0, the smallest
    return compact.reshape(-1)[labels], int(compact.max())


def _clusters(masses: np.ndarray, grid: _Grid, cells: int, level: float, min_mass: float) -> Clusters:
    """The definition (module docstring) on cells with ``masses`` (same shape as ``grid.volumes``)."""
    masses = _checked(masses, level, min_mass)
    total = float(masses.sum())
    dense = masses > level * total / float(grid.volumes.sum()) * grid.volumes   # (no mass: no cluster, _summary)
    labels, count = _labels(dense, grid)
    return _summary(masses.reshape(-1), grid, labels.reshape(-1), count, cells, min_mass)


def _checked(masses, level: float, min_mass: float) -> np.ndarray:
    masses = np.asarray(masses, dtype=float)
    require(bool(np.all(np.isfinite(masses))), "cluster detection needs a finite density (or finite masses)")
    require(level > 1, f"level must be > 1 (got {level:g})")
    require(0 < min_mass < 1, f"min_mass must be in (0, 1) (got {min_mass:g})")
    return masses


def _summary(masses: np.ndarray, grid: _Grid, labels: np.ndarray, count: int, cells: int,
             min_mass: float, area: float | None = None) -> Clusters:
    """Clusters from the cells' ``masses`` and the labels ``1..count`` of their dense pieces (0: not dense), all flat:
    the pieces of at least ``min_mass`` of the total, their centres, basin masses and peaks (``area``: of the
    whole sphere, default the cells' total volume)."""
    dim = grid.directions.shape[-1]
    total = float(masses.sum())
    piece_mass = np.bincount(labels, masses, minlength=count + 1)[1:]
    keep = np.nonzero(piece_mass >= min_mass * total)[0] if total > 0 else np.zeros(0, dtype=int)
    if keep.size == 0:
        return Clusters(np.zeros((0, dim)), np.zeros(0), np.zeros(0), np.zeros(0), cells)
    directions, volumes = grid.directions.reshape(-1, dim), grid.volumes.reshape(-1)
    sums = np.stack([np.bincount(labels, masses * directions[:, i], minlength=count + 1)[1:]
                     for i in range(dim)], axis=-1)[keep]
    centres = sums / np.linalg.norm(sums, axis=-1, keepdims=True)
    if grid.rings:      # a cap on a pole is centred on it (its mean in R^d is the pole), before the basins are drawn
        for end, pole in ((0, (1.0, 0.0)), (-1, (-1.0, 0.0))):
            centres[keep == labels[end] - 1] = pole
    mean_density = total / (float(volumes.sum()) if area is None else area)
    density = masses / np.maximum(volumes, 1e-300)
    peak = np.zeros(count + 1)
    np.maximum.at(peak, labels, density)
    nearest = np.argmax(directions @ centres.T, axis=1)                # basins: the nearest centre
    return Clusters(centres, np.bincount(nearest, masses, minlength=keep.size), piece_mass[keep],
                    peak[1:][keep] / mean_density, cells)


# ------------------------------------------------------------------------------------------------ densities
def clusters_of_density(density, *, geometry: str = "circle", theta=None, lat=None, lon=None, polar=None,
                        volumes=None, dim: int | None = None, level: float = LEVEL,
                        min_mass: float = MIN_MASS) -> Clusters:
    """The clusters of a density on its grid (module docstring).

    Parameters
    ----------
    density : array
        Values on the grid: ``(N,)`` on the circle, ``(lat, lon)`` on S^2, ``(polar,)`` for a zonal density.
    geometry : {"circle", "sphere", "zonal"}
        Where the density lives.
    theta : array, optional
        Circle: the grid's angles (default ``2 pi j / N``).
    lat, lon : array
        S^2: the grid's latitudes and longitudes in degrees.
    polar : array
        Zonal: the nodes' polar angles on S^{dim-1}.
    volumes : array, optional
        Each cell's volume: circle ``(N,)`` (default ``2 pi / N``); S^2 one per latitude row (the run's
        ``quadrature_weight``); zonal ``(polar,)`` (``quadrature_weight`` or ``cell_volume``).
    dim : int, optional
        Zonal: the ambient dimension.
    level : float
        A cell is dense above this many times the mean density (> 1; default 2).
    min_mass : float
        Smallest cluster mass, relative to the total (in (0, 1); default 0.01).

    Returns
    -------
    Clusters
        ``count``, ``centres``, basin ``masses``, ``dense_masses``, ``peaks``; ``angles`` on the circle.
    """
    density = np.asarray(density, dtype=float)
    require(geometry in ("circle", "sphere", "zonal"), f"geometry must be circle, sphere or zonal (got {geometry!r})")
    if geometry == "circle":
        require(density.ndim == 1 and density.size >= 3, "density must be a 1-D array of at least 3 samples")
        n = density.size
        theta = 2 * math.pi * np.arange(n) / n if theta is None else np.asarray(theta, dtype=float)
        volumes = np.full(n, 2 * math.pi / n) if volumes is None else np.asarray(volumes, dtype=float)
        grid, cells = _circle_grid(theta, volumes), n
    elif geometry == "sphere":
        require(density.ndim == 2 and lat is not None and lon is not None and volumes is not None,
                "a sphere density needs its (lat, lon) grid and the quadrature weight of each row")
        grid, cells = _sphere_grid(np.asarray(lat), np.asarray(lon), volumes), density.shape[1]
    else:
        require(density.ndim == 1 and polar is not None and volumes is not None and dim is not None,
                "a zonal density needs its polar nodes, their volumes and dim")
        grid, cells = _polar_grid(np.asarray(polar, dtype=float), np.asarray(volumes, dtype=float), int(dim)), \
            2 * density.size
    require(grid.volumes.shape == density.shape, "volumes must match the density's grid")
    return _clusters(density * grid.volumes, grid, cells, level, min_mass)


# ------------------------------------------------------------------------------------------------ atoms
def atom_resolution(n: int, dim: int, cells: int | None = None) -> int:
    """Cells around a great circle for ``n`` atoms on S^{dim-1}: ``cells`` if given, else :data:`ATOM_CELLS`, fewer
    when the uniform share of a cell would hold fewer than :data:`ATOMS_PER_CELL` atoms (circle ``N <= n / 8``;
    S^2 ``N^2 / 2 <= n / 8``), at least :data:`MIN_CELLS`, even (S^2 and zonal rings use ``N / 2`` bands)."""
    if cells is not None:
        require(isinstance(cells, (int, np.integer)) and cells >= MIN_CELLS,
                f"cells must be an integer >= {MIN_CELLS} (got {cells!r})")
        return int(cells)
    budget = n / ATOMS_PER_CELL
    most = budget if dim == 2 else math.sqrt(2 * budget) if dim == 3 else 2 * budget
    return int(max(MIN_CELLS, min(ATOM_CELLS, 2 * (int(most) // 2))))


def _cap_fraction(angle: float, dim: int) -> float:
    """The fraction of S^{dim-1} within ``angle`` of a point: ``I_{sin^2 a}((d-1)/2, 1/2) / 2`` for ``a <= pi/2``."""
    from scipy.special import betainc

    angle = min(angle, math.pi)
    half = 0.5 * float(betainc((dim - 1) / 2, 0.5, math.sin(min(angle, math.pi / 2)) ** 2))
    return half if angle <= math.pi / 2 else 1.0 - 0.5 * float(betainc((dim - 1) / 2, 0.5, math.sin(angle) ** 2))


def _zonal_band_volumes(bands: int, dim: int) -> np.ndarray:
    """Surface measure of ``bands`` equal polar bands of S^{dim-1}."""
    edges = np.array([_cap_fraction(a, dim) for a in np.linspace(0.0, math.pi, bands + 1)])
    return np.diff(edges) * sphere_area(dim)


def clusters_of_atoms(points, weights=None, *, dim: int | None = None, zonal: bool = False, cells: int | None = None,
                      level: float = LEVEL, min_mass: float = MIN_MASS) -> Clusters:
    """The clusters of weighted atoms (tokens, nodes) on S^{d-1} (module docstring).

    Parameters
    ----------
    points : array
        Unit vectors ``(n, d)``; on the circle also angles ``(n,)``; with ``zonal=True`` the polar angles ``(n,)``
        of rings on S^{dim-1} (or unit vectors, whose last axis is the pole).
    weights : array, optional
        The atoms' masses (default ``1/n`` each).
    dim : int, optional
        The ambient dimension (required with ``zonal``).
    zonal : bool
        Count the atoms' zonal rings (polar bands) instead of the atoms themselves.
    cells : int, optional
        The resolution: cells around a great circle (>= 8; default :func:`atom_resolution` of ``n``).
    level : float
        A cell is dense above this many times the uniform measure's mass in it (> 1; default 2).
    min_mass : float
        Smallest cluster mass, relative to the total (in (0, 1); default 0.01).

    Returns
    -------
    Clusters
        ``count``, ``centres``, basin ``masses``, ``dense_masses``, ``peaks``, ``cells``.
    """
    points = np.asarray(points, dtype=float)
    require(points.ndim in (1, 2) and points.shape[0] >= 1, "points must be (n,) angles or (n, d) unit vectors")
    n = points.shape[0]
    weights = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=float)
    require(weights.shape == (n,), "weights must have one entry per point")
    if points.ndim == 1 and not zonal:
        points = np.stack((np.cos(points), np.sin(points)), axis=-1)
    if zonal:
        require(dim is not None and dim >= 3, "zonal atoms need dim >= 3")
        polar = points if points.ndim == 1 else np.arccos(np.clip(points[:, -1], -1.0, 1.0))
        resolution = atom_resolution(n, 2, cells)
        bands = resolution // 2
        index = np.minimum((polar / (math.pi / bands)).astype(int), bands - 1)
        centres = (np.arange(bands) + 0.5) * math.pi / bands
        grid = _polar_grid(centres, _zonal_band_volumes(bands, int(dim)), int(dim))
        return _clusters(np.bincount(index, weights, minlength=bands), grid, resolution, level, min_mass)
    d = points.shape[1]
    require(d >= 2 and (dim is None or dim == d), f"points must be (n, {dim or 'd'}) unit vectors")
    resolution = atom_resolution(n, d, cells)
    if d == 2:
        step = 2 * math.pi / resolution
        angle = np.mod(np.arctan2(points[:, 1], points[:, 0]), 2 * math.pi)
        index = np.minimum((angle / step).astype(int), resolution - 1)
        grid = _circle_grid((np.arange(resolution) + 0.5) * step, np.full(resolution, step))
        return _clusters(np.bincount(index, weights, minlength=resolution), grid, resolution, level, min_mass)
    if d == 3:
        bands, longitudes = resolution // 2, resolution
        band = np.minimum(((points[:, 2] + 1.0) * 0.5 * bands).astype(int), bands - 1)
        column = np.minimum((np.mod(np.arctan2(points[:, 1], points[:, 0]), 2 * math.pi)
                             / (2 * math.pi / longitudes)).astype(int), longitudes - 1)
        masses = np.bincount(band * longitudes + column, weights, minlength=bands * longitudes)
        z = -1.0 + (np.arange(bands) + 0.5) * 2.0 / bands
        lat = np.degrees(np.arcsin(z))
        lon = (np.arange(longitudes) + 0.5) * 360.0 / longitudes
        grid = _sphere_grid(lat, lon, np.full(bands, 4 * math.pi / (bands * longitudes)))
        return _clusters(masses.reshape(bands, longitudes), grid, resolution, level, min_mass)
    return _linked_clusters(points, weights, resolution, level, min_mass)


def _linked_clusters(points: np.ndarray, weights: np.ndarray, resolution: int, level: float,
                     min_mass: float) -> Clusters:
    """S^{d-1}, d >= 4: the cells are the groups of atoms linked below ``2 pi / resolution`` (module docstring)."""
    weights = _checked(weights, level, min_mass)
    radius = 2 * math.pi / resolution
    labels, count = link_groups(np.ascontiguousarray(points), radius)
    centres, masses = merge_points(points, weights, labels, count)
    d = points.shape[1]
    volumes = np.full(count, _cap_fraction(radius, d) * sphere_area(d))
    grid = _Grid(volumes, centres, False, False, d)
    dense = masses > level * float(masses.sum()) / sphere_area(d) * volumes
    pieces = np.where(dense, np.arange(1, count + 1), 0)
    return _summary(masses, grid, pieces, count, resolution, min_mass, area=sphere_area(d))


# ------------------------------------------------------------------------------------------------ run files
def clusters_in_frame(run, index: int = -1, *, cells: int | None = None, level: float = LEVEL,
                      min_mass: float = MIN_MASS) -> Clusters:
    """The clusters of frame ``index`` of a run file, whatever produced it (module docstring).

    Parameters
    ----------
    run : xarray.Dataset
        A run of :func:`meanfield.solve` or :func:`meanfield.simulate_particles` (or its file, loaded).
    index : int
        The frame (default the last).
    cells : int, optional
        Atoms' resolution (default: the run's ``cluster_cells``, else :func:`atom_resolution`).
    level, min_mass : float
        As :func:`clusters_of_density`.

    Returns
    -------
    Clusters
        Of the density on its grid for PDE runs (spectral, finite volumes: points included), of the atoms
        (``positions``, ``weights``) for particle and Lagrangian runs: the count ``cluster_count`` records.
    """
    geometry = run.attrs.get("geometry")
    if cells is None and int(run.attrs.get("cluster_cells", 0) or 0) > 0:
        cells = int(run.attrs["cluster_cells"])          # the resolution the run's cluster_count was taken at
    if "positions" in run and "weights" in run:
        points = np.asarray(run["positions"].values[index], dtype=float)
        zonal = geometry == "zonal"
        return clusters_of_atoms(points if not zonal else np.asarray(run["node_theta"].values[index]),
                                 run["weights"].values, dim=int(run.attrs.get("dim", points.shape[-1])), zonal=zonal,
                                 cells=cells, level=level, min_mass=min_mass)
    require("density" in run, "clusters_in_frame needs a run with density, or positions and weights")
    density = np.asarray(run["density"].values[index], dtype=float)
    volumes = run["cell_volume"].values if "cell_volume" in run else (
        run["quadrature_weight"].values if "quadrature_weight" in run else None)
    if geometry == "circle":
        return clusters_of_density(density, theta=run["theta"].values, volumes=volumes, level=level,
                                   min_mass=min_mass)
    if geometry == "sphere":
        require(volumes is not None, "a sphere run needs quadrature_weight for its clusters (older files lack it)")
        return clusters_of_density(density, geometry="sphere", lat=run["lat"].values, lon=run["lon"].values,
                                   volumes=volumes, level=level, min_mass=min_mass)
    require(geometry == "zonal" and volumes is not None,
            "a zonal run needs quadrature_weight or cell_volume for its clusters (older files lack them)")
    return clusters_of_density(density, geometry="zonal", polar=run["polar"].values, volumes=volumes,
                               dim=int(run.attrs["dim"]), level=level, min_mass=min_mass)
