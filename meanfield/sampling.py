"""Initial tokens for particle runs, drawn from the same laws as the PDE's ``init``.

``sample_tokens(init, n, dim, seed, resolution, sampling)`` returns positions ``(n, d)`` on
S^{d-1} and weights ``(n,)`` (summing to 1 for the laws below; a particle file keeps its own):

``uniform``
    i.i.d. uniform on S^{d-1} (normalised Gaussians), any d.
``perturbed:EPS``, ``vmf:..`` (or ``vonmises:..``, circle)
    i.i.d. samples of the density that ``meanfield solve circle --init SPEC --resolution R --seed S``
    starts from (same ``R`` and ``S``), by exact rejection sampling of its trigonometric series; for
    ``perturbed:EPS`` that is one function at every ``R >= 49`` (MATH.md §2.4).
``orthogonal``
    ``n <= d`` pairwise orthogonal tokens, randomly rotated (MATH.md §1).
``run.nc`` or a ``Dataset``
    a particle run's last positions and weights (also a Lagrangian run's nodes and weights when
    ``--n``, ``--dim`` are theirs), or samples of a circle (``--dim 2``) or sphere (``--dim 3``)
    density run's last frame.

Densities from the Python API (:mod:`meanfield.initial.sources` reads them, with the same checks and
one-line refusals as the PDE's ``init=``; the mass need not be 1, samples follow the normalised law):

* circle (``dim = 2``): a numpy array of values at ``theta_j = 2 pi j / M`` (``M`` its length), a
  function ``f(theta)`` (evaluated at ``2 pi j / R``, ``R = resolution``), a DataArray with
  ``theta`` (equispaced: its own trigonometric series; otherwise a periodic cubic spline onto
  ``2 pi j / R``), a circle run.  Point values are sampled from their trigonometric series, the
  law of the spectral PDE started from them (exact rejection sampling, :class:`TrigonometricDensity`);
  they must be resolved on their grid as for ``solve``.  Cell averages (a finite-volume run, an
  unresolved Lagrangian frame, a DataArray with ``cell_methods`` ``mean``) are a piecewise-constant
  law (:class:`CellDensity`): a cell is drawn with probability ``average x width``, then a point
  uniformly inside it, so clustered data sample correctly.
* sphere (``dim = 3``): a DataArray with ``lat``/``lon`` (degrees, the run files' coordinates), a function
  ``f(theta, phi)`` of the colatitude ``theta`` in ``[0, pi]`` and the longitude ``phi`` in ``[0, 2 pi)``, radians
  (MATH.md §2.2; evaluated at the centres of ``R x 2R`` equal-angle cells; one written for degrees is refused
  naming the convention, :func:`meanfield.initial.sphere.sphere_function_values`), a sphere run.  The values are
  read as constant on cells bounded halfway between neighbouring latitudes (the poles close the
  first and last band) and longitudes: a cell is drawn with probability ``value x area``, then a
  point uniformly (in area) inside it (:func:`sample_latlon_cells`).

``sampling="quadrature"`` (circle densities only) replaces i.i.d. samples by the
deterministic nodes ``theta_j = 2 pi (j + 1/2) / n`` with weights ``rho(theta_j)``
(normalised): a weighted particle system whose empirical measure is the trapezoidal
rule of the density, so it converges far faster than ``n^{-1/2}``.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import require
from .fourier_series import coefficients, synthesis
from .initial.sources import as_values, evaluate, load_init_run, read_source
from .initial.averages import interval_faces, periodic_faces, piecewise
from .initial.files import read_density_file
from .initial.kinds import kind_of, label_of
from .initial.circle import INIT_HELP, check_density, circle_density, circle_values
from .initial.spec import check_sign_and_mass
from .seeding import stream

SAMPLINGS = ("iid", "quadrature")


def uniform_sphere(n: int, dim: int, rng) -> np.ndarray:
    x = rng.standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def orthogonal_tokens(n: int, dim: int, rng) -> np.ndarray:
    require(n <= dim, f"--init orthogonal needs --n <= --dim (got n = {n}, d = {dim})")
    q, _ = np.linalg.qr(rng.standard_normal((dim, n)))
    return q.T.copy()


def on_circle(theta: np.ndarray) -> np.ndarray:
    return np.stack((np.cos(theta), np.sin(theta)), axis=1)


class TrigonometricDensity:
    """A circle density given by its Fourier coefficients, evaluated anywhere."""

    def __init__(self, grid_density: np.ndarray):
        self.coeffs = coefficients(grid_density)
        self.n = grid_density.size
        self.coeffs[self.n // 2] = 0.0 if self.n % 2 == 0 else self.coeffs[self.n // 2]

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        k = np.arange(self.coeffs.size)
        weights = np.where(k == 0, 1.0, 2.0) * self.coeffs
        out = np.zeros(theta.shape)
        for start in range(0, theta.size, 4096):
            block = theta[start:start + 4096]
            out[start:start + 4096] = (np.exp(1j * np.outer(block, k)) @ weights).real
        return out

    def upper_bound(self) -> float:
        fine = synthesis(self.coeffs, 8 * self.n)
        return 1.05 * float(fine.max())

    def sample(self, n: int, rng) -> np.ndarray:
        """Exact rejection sampling against the uniform proposal."""
        bound, accepted = self.upper_bound(), []
        count = 0
        while count < n:
            proposal = rng.uniform(0.0, 2 * math.pi, size=max(2 * (n - count), 64))
            keep = proposal[rng.uniform(0.0, bound, size=proposal.size) < self(proposal)]
            accepted.append(keep)
            count += keep.size
        return np.concatenate(accepted)[:n]


class CellDensity:
    """A piecewise-constant circle density: ``values[j]`` on the arc between the faces around ``centres[j]``."""

    def __init__(self, source, label: str):
        self.law = piecewise(source, "circle")
        faces = self.law.breaks                           # face j between cells j and j + 1
        self.left = np.roll(faces, 1)
        self.left[0] -= 2 * math.pi
        masses = source.values * (faces - self.left)
        check_sign_and_mass(source.values, label, float(masses.sum()), 2 * math.pi)
        self.p = masses / masses.sum()

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        return self.law.evaluate(theta)

    def sample(self, n: int, rng) -> np.ndarray:
        cell = rng.choice(self.p.size, size=n, p=self.p)
        return np.mod(self.left[cell] + rng.uniform(size=n) * (self.law.breaks[cell] - self.left[cell]), 2 * math.pi)


def latlon_cells(lat: np.ndarray, lon: np.ndarray) -> tuple:
    """The cells of a sorted ``lat x lon`` grid (degrees), bounded halfway between the coordinates (the poles close
    the first and last band): ``(sin_edges, lon_west, width, area)``, the sines of the band edges, the west edge of
    each sector (degrees), its width (radians) and the areas ``(lat, lon)``."""
    sin_edges = np.sin(np.radians(interval_faces(lat, -90.0, 90.0)))
    lon_mid = periodic_faces(lon, 360.0)                                 # east edge of each sector
    lon_west = np.append(lon_mid[-1] - 360.0, lon_mid[:-1])
    width = np.radians(lon_mid - lon_west)
    return sin_edges, lon_west, width, np.diff(sin_edges)[:, None] * width[None, :]


def sample_latlon_cells(values: np.ndarray, lat: np.ndarray, lon: np.ndarray, n: int, rng, label: str):
    """``n`` i.i.d. points of S^2 from values on a sorted ``lat x lon`` grid (degrees), constant on cells
    bounded halfway between the coordinates (module docstring): cell by ``value x area``, then uniform in it."""
    sin_edges, lon_west, width, area = latlon_cells(lat, lon)
    masses = values * area
    check_sign_and_mass(values, label, float(masses.sum()), 4 * math.pi)
    cell = rng.choice(masses.size, size=n, p=(masses / masses.sum()).ravel())
    row, column = np.divmod(cell, lon.size)
    z = sin_edges[row] + rng.uniform(size=n) * (sin_edges[row + 1] - sin_edges[row])
    phi = np.radians(lon_west[column]) + rng.uniform(size=n) * width[column]
    rho = np.sqrt(np.clip(1.0 - z * z, 0.0, None))
    return np.stack((rho * np.cos(phi), rho * np.sin(phi), z), axis=1)


def _trigonometric(values: np.ndarray, label: str) -> TrigonometricDensity:
    require(values.ndim == 1 and values.size >= 4,
            f"{label}: circle grid values must be a 1-D array of at least 4 values (got shape {values.shape})")
    check_density(values, label, values.size)
    return TrigonometricDensity(values)


def _circle_law(init, kind: str, label: str, resolution: int, seed):
    """The law of circle tokens for every kind of ``init`` (module docstring)."""
    if kind == "text":
        return TrigonometricDensity(circle_density(init, resolution, seed))
    if kind == "array":
        return _trigonometric(as_values(init, label), label)
    if kind == "function":
        return _trigonometric(evaluate(init, label, 2 * math.pi * np.arange(resolution) / resolution), label)
    source = read_source(init, "circle", label)
    if source.cell_averages:
        return CellDensity(source, label)
    theta, values = source.coords[0], source.values
    return _trigonometric(circle_values(theta, values, max(resolution, theta.size)), label)


def _particle_tokens(dataset, label: str, n: int, dim: int):
    """A run's last positions and weights: a particle run, or a Lagrangian run's nodes when ``n`` and
    ``dim`` are theirs (``None``: a density run to sample)."""
    if "positions" not in dataset:
        return None
    positions = np.asarray(dataset["positions"].values[-1], dtype=float)
    if "density" in dataset and positions.shape != (n, dim):
        return None
    require(positions.shape == (n, dim),
            f"{label}: holds {positions.shape[0]} tokens in dimension {positions.shape[1]}, "
            f"but --n {n} --dim {dim} were asked for")
    require(bool(np.all(np.isfinite(positions))), f"{label}: the last positions are not finite")
    return positions, np.asarray(dataset["weights"].values, dtype=float)


def sample_tokens(init, n: int, dim: int, seed=None, resolution: int = 256, sampling: str = "iid"):
    """Positions ``(n, dim)`` and weights ``(n,)`` for ``init`` (see the module docstring)."""
    require(not isinstance(init, str) or init.strip() != "", f"--init must be one of: {INIT_HELP}, orthogonal")
    require(sampling in SAMPLINGS, f"--sampling must be one of {', '.join(SAMPLINGS)} (got {sampling!r})")
    kind = kind_of(init)
    init = init.strip() if isinstance(init, str) else init
    label = label_of(init)
    if kind == "file":                  # a density saved by numpy or xarray: sampled as the array or DataArray
        init = read_density_file(init, label)
        kind = kind_of(init)
    rng = stream(seed, "sampling")
    uniform_weights = np.full(n, 1.0 / n)
    if kind in ("path", "dataset"):
        dataset = init if kind == "dataset" else load_init_run(init)
        tokens = _particle_tokens(dataset, label, n, dim)
        if tokens is not None:
            return tokens
        init, kind = dataset, "dataset"
    if kind == "text" and init == "orthogonal":
        require(sampling == "iid", "--sampling quadrature needs a circle density --init")
        return orthogonal_tokens(n, dim, rng), uniform_weights
    if kind == "text" and init == "uniform" and dim > 2:
        require(sampling == "iid", "--sampling quadrature is defined on the circle (--dim 2) only")
        return uniform_sphere(n, dim, rng), uniform_weights
    if dim == 3 and kind != "text":
        require(sampling == "iid", f"{label}: --sampling quadrature is defined on the circle (--dim 2) only")
        return _sphere_tokens(init, kind, label, n, resolution, rng), uniform_weights
    if kind == "text":
        require(dim == 2, f"--init {init!r} is a circle density: it needs --dim 2 (on S^{{d-1}}, d >= 3, "
                          f"use uniform or orthogonal)")
    else:
        require(dim == 2, f"{label}: densities are sampled on the circle (--dim 2) or S^2 (--dim 3), not --dim {dim}")
    law = _circle_law(init, kind, label, resolution, seed)
    if sampling == "quadrature":
        theta = 2 * math.pi * (np.arange(n) + 0.5) / n
        return on_circle(theta), law(theta) / law(theta).sum()
    return on_circle(law.sample(n, rng)), uniform_weights


def _sphere_tokens(init, kind: str, label: str, n: int, resolution: int, rng) -> np.ndarray:
    """I.i.d. tokens on S^2 from a DataArray, a function or a sphere run (module docstring)."""
    require(kind != "array", f"{label}: a numpy array is read as circle grid values (--dim 2); on S^2 give a "
                             f"DataArray with lat/lon (degrees) or a function f(theta, phi) (colatitude, longitude "
                             f"in radians)")
    if kind == "function":
        from .initial.sphere import sphere_function_values    # here: a circle run loads no sphere module

        lat = -90.0 + 180.0 * (np.arange(resolution) + 0.5) / resolution
        lon = 360.0 * (np.arange(2 * resolution) + 0.5) / (2 * resolution)
        area = latlon_cells(lat, lon)[-1]
        values = sphere_function_values(
            init, label, *np.meshgrid(np.radians(90.0 - lat), np.radians(lon), indexing="ij"),
            lambda given: check_sign_and_mass(given, label, float(np.sum(given * area)), 4 * math.pi),
            f"at the centres of {resolution} x {2 * resolution} equal-angle cells, --resolution {resolution}")
    else:
        source = read_source(init, "sphere", label)
        values, (lat, lon) = source.values, source.coords
    return sample_latlon_cells(values, lat, lon, n, rng, label)
