"""The geometries a density lives on (MATH.md §2): the circle, the sphere S^2 and zonal densities on S^{d-1}.

A :class:`Geometry` owns what differs between them outside the solvers' bases: its defaults (dimension, resolution,
the largest dimension its solvers reach), the coordinate a one-dimensional density is drawn against (``theta`` on the
circle, ``polar`` for zonal densities; S^2 densities are maps), the word for a degree of its harmonics, where a
cluster sits in its own coordinates, how a density frame's cells or quadrature nodes become weighted places for the
cluster count (MATH.md §10), and the zonal harmonic a causal run starts from (MATH.md §8).  Each solver basis owns its
grid and transforms (:mod:`meanfield.solvers.bases`).

:data:`GEOMETRIES` registers each by the name ``meanfield solve GEOMETRY`` takes and run files record in their
``geometry`` attribute; :func:`geometry_of` looks one up, :func:`run_geometry` reads a run's (``None`` for particle and
Gaussian runs, which have no density grid).  A new geometry is a subclass added to :data:`GEOMETRIES`
(``docs/extending.md``).
"""

from __future__ import annotations

import math

import numpy as np

from .defaults import GEOMETRY_DEFAULTS
from .errors import registered, require
from .limits import MAX_ZONAL_DIM


class Geometry:
    """What a geometry owns (module docstring); subclasses set the class attributes and the methods."""

    name: str = ""
    #: The coordinate a one-dimensional density is drawn against (``None``: a map).
    axis: str | None = None
    #: Whether the density's cells wrap around (the circle).
    periodic: bool = False
    #: The range of :attr:`axis` (the period of a periodic one).
    span: tuple | None = None
    #: Whether atoms of this geometry are zonal rings (polar angles) rather than points.
    rings: bool = False
    #: Whether its harmonics are Fourier modes ``k`` (else degrees ``l``).
    fourier: bool = False
    #: How a figure's title names a density of this geometry (before "on S^{d-1}").
    title_word: str = ""
    #: The variables a density frame is drawn from (besides ``density`` and ``mass``).
    grid_variables: tuple = ()

    @property
    def default_dim(self) -> int:
        return GEOMETRY_DEFAULTS[self.name]["dim"]

    @property
    def default_resolution(self) -> int:
        return GEOMETRY_DEFAULTS[self.name]["resolution"]

    @property
    def max_dim(self) -> int:
        """The largest ``--dim`` its density solvers compute correctly."""
        return self.default_dim

    @property
    def mode_word(self) -> str:
        """The index of its harmonics, as tables and messages name it."""
        return "mode" if self.fourier else "degree"

    @property
    def free_dim(self) -> bool:
        """Whether ``--dim`` chooses the sphere S^{d-1} (zonal densities), rather than being fixed."""
        return self.max_dim > self.default_dim

    @property
    def curve(self) -> bool:
        """Whether a density frame is a curve against :attr:`axis` (else a map)."""
        return self.axis is not None

    def position(self, centre: np.ndarray) -> dict:
        """A cluster centre (unit vector) in the geometry's own coordinates."""
        raise NotImplementedError

    def density_masses(self, density: np.ndarray, *, theta, lat, lon, polar, volumes, dim):
        """``(places, masses, dim)`` of a density frame on its grid or cells (MATH.md §10): the places the cluster
        count's field reads (angles, unit vectors, polar angles) and the mass each holds."""
        raise NotImplementedError

    def frame_density(self, value, attrs) -> dict:
        """The grid arguments of :func:`meanfield.cluster_detection.clusters_of_density` for a run frame whose
        variables ``value(name)`` gives (``None`` when absent)."""
        raise NotImplementedError

    def zonal_profile(self, dim: int, degree: int):
        """``phi(*grid coordinates)``: the degree-``degree`` zonal harmonic about the pole, ``phi(pole) = 1``."""
        from scipy.special import eval_gegenbauer

        lam = (dim - 2) / 2.0
        top = float(eval_gegenbauer(degree, lam, 1.0))
        return lambda polar: eval_gegenbauer(degree, lam, np.cos(polar)) / top

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _unit_circle_places(density: np.ndarray, theta, volumes):
    n = density.size
    places = 2 * math.pi * np.arange(n) / n if theta is None else np.asarray(theta, dtype=float)
    volumes = np.full(n, 2 * math.pi / n) if volumes is None else np.asarray(volumes, dtype=float)
    require(volumes.shape == density.shape and places.shape == density.shape,
            "theta and volumes must match the density's grid")
    return places, volumes


class Circle(Geometry):
    """The circle S^1 (Fourier; ``dim`` 2): densities on ``N`` equispaced nodes or cells, angles in ``[0, 2 pi)``."""

    name, axis, periodic, fourier, span = "circle", "theta", True, True, (0.0, 2 * math.pi)
    grid_variables = ("theta",)

    def position(self, centre: np.ndarray) -> dict:
        return {"angle": math.atan2(centre[1], centre[0]) % (2 * math.pi)}

    def density_masses(self, density, *, theta, lat, lon, polar, volumes, dim):
        require(density.ndim == 1 and density.size >= 3, "density must be a 1-D array of at least 3 samples")
        places, volumes = _unit_circle_places(density, theta, volumes)
        return places, density * volumes, 2

    def frame_density(self, value, attrs) -> dict:
        return dict(theta=value("theta"), volumes=_volumes(value), points=value("point_position"),
                    point_masses=value("point_mass"))

    def zonal_profile(self, dim: int, degree: int):
        return lambda theta: np.cos(degree * theta)


class Sphere2(Geometry):
    """The sphere S^2 (spherical harmonics; ``dim`` 3): densities on a Gauss–Legendre (lat, lon) grid in degrees."""

    name = "sphere"
    grid_variables = ("lat", "lon")

    def position(self, centre: np.ndarray) -> dict:
        return {"lat": math.degrees(math.asin(max(-1.0, min(1.0, centre[2])))),
                "lon": math.degrees(math.atan2(centre[1], centre[0])) % 360.0, "vector": centre.tolist()}

    def density_masses(self, density, *, theta, lat, lon, polar, volumes, dim):
        require(density.ndim == 2 and lat is not None and lon is not None and volumes is not None,
                "a sphere density needs its (lat, lon) grid and the quadrature weight of each row")
        la, lo = np.meshgrid(np.radians(np.asarray(lat, dtype=float)), np.radians(np.asarray(lon, dtype=float)),
                             indexing="ij")
        require(la.shape == density.shape, "lat and lon must match the density's grid")
        places = np.stack((np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)), axis=-1).reshape(-1, 3)
        return places, (density * np.asarray(volumes, dtype=float).reshape(-1, 1)).reshape(-1), 3

    def frame_density(self, value, attrs) -> dict:
        volumes = _volumes(value)
        require(volumes is not None, "a sphere run needs quadrature_weight for its clusters (older files lack it)")
        return dict(lat=value("lat"), lon=value("lon"), volumes=volumes)

    def zonal_profile(self, dim: int, degree: int):
        from scipy.special import eval_gegenbauer

        return lambda theta, phi: eval_gegenbauer(degree, 0.5, np.cos(theta)) + 0.0 * phi


class Zonal(Geometry):
    """Zonal densities on S^{d-1} (Gegenbauer; any ``dim >= 3`` up to :data:`meanfield.limits.MAX_ZONAL_DIM`):
    functions of the polar angle from the pole, ``[0, pi]``; their atoms are rings."""

    name, axis, rings, span, title_word = "zonal", "polar", True, (0.0, math.pi), "zonal density"
    grid_variables = ("polar",)

    @property
    def max_dim(self) -> int:
        return MAX_ZONAL_DIM

    def position(self, centre: np.ndarray) -> dict:
        return {"polar_angle": abs(math.atan2(centre[1], centre[0]))}

    def density_masses(self, density, *, theta, lat, lon, polar, volumes, dim):
        require(density.ndim == 1 and polar is not None and volumes is not None and dim is not None,
                "a zonal density needs its polar nodes, their volumes and dim")
        places, volumes = np.asarray(polar, dtype=float), np.asarray(volumes, dtype=float)
        require(places.shape == density.shape == volumes.shape, "polar and volumes must match the density's grid")
        return places, density * volumes, dim

    def frame_density(self, value, attrs) -> dict:
        volumes = _volumes(value)
        require(volumes is not None,
                "a zonal run needs quadrature_weight or cell_volume for its clusters (older files lack them)")
        return dict(polar=value("polar"), volumes=volumes, dim=int(attrs["dim"]), points=value("point_position"),
                    point_masses=value("point_mass"))


def _volumes(value):
    """A frame's cell volumes, or else its quadrature weights (``None``: neither)."""
    volumes = value("cell_volume")
    return value("quadrature_weight") if volumes is None else volumes


#: The registered geometries, by name.
GEOMETRIES: dict[str, Geometry] = {geometry.name: geometry for geometry in (Circle(), Sphere2(), Zonal())}


def geometry_of(name, option: str = "geometry") -> Geometry:
    """The geometry registered as ``name`` (a geometry passes through); one line naming ``option`` otherwise."""
    return registered(GEOMETRIES, name, option, Geometry)


def atoms_geometry(dim: int) -> Geometry | None:
    """The geometry whose points are unit vectors of R^dim (the circle, S^2; ``None`` beyond)."""
    return next((geometry for geometry in GEOMETRIES.values() if not geometry.rings and geometry.default_dim == dim),
                None)


def run_geometry(attrs) -> Geometry | None:
    """The density geometry a run's attributes record (``None``: particles, Gaussian data or none recorded)."""
    return GEOMETRIES.get(attrs.get("geometry")) if hasattr(attrs, "get") else None
