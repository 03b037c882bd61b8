"""The distance between two runs of one geometry at their common times (MATH.md §4): ``meanfield compare``.

Any two runs whose frames are measures on the same sphere can be compared: a particle run and a PDE run (the
mean-field limit, MATH.md §4), two schemes or resolutions of the PDE, two particle runs.  Each frame is read as the
measure it holds (the readers below; the distances are :mod:`meanfield.analysis`'s):

* **circle**: a density as the trigonometric series through its grid values on ``2 pi j / N`` (MATH.md §2.1; a
  finite-volume frame's cell values too, with its point clusters as atoms; a Lagrangian frame's density), tokens
  (``theta``, ``weights``) as weighted atoms;
* **S^2**: a spectral frame by its exact coefficients from the file's quadrature weights
  (:func:`~meanfield.analysis.sphere_frame_coefficients`), tokens and Lagrangian nodes by their atoms' coefficients
  (:func:`~meanfield.analysis.sphere_point_coefficients`);
* **zonal S^{d-1}**: a Galerkin frame by its exact coefficients (:func:`~meanfield.analysis.zonal_frame_coefficients`),
  a finite-volume frame by its cells' masses at the cell centres (second order in the cell width) and its rings,
  tokens of a particle run in ``R^d`` by the zonal part of their measure (their average over the rotations that fix
  the pole, :func:`~meanfield.analysis.zonal_point_coefficients`): the distance is then between zonal parts.

Particle runs take the geometry of their dimension (2: the circle, 3: S^2, d >= 4: zonal parts on S^{d-1}); a particle
run and a zonal run of the same ``dim`` compare zonal parts.

Distances: ``w1`` (the circle's default) is the exact ``W1`` between the two measures scaled to mass 1
(:func:`~meanfield.analysis.wasserstein1_circle_between`; for tokens against a density it is
:func:`~meanfield.analysis.wasserstein1_circle` itself, to the bit); ``sobolev`` (the spheres' default) is
``||mu - nu||_{H^-s}`` of the measures as they are, over the degrees (circle: Fourier modes) ``1 .. lmax``
(:mod:`meanfield.analysis`: ``(1 + l (l + d - 2))^-s`` per degree, degree 0, the mass, left out).  ``lmax`` defaults
to the fewest degrees either run's grid holds exactly (a spectral or Galerkin run's resolution; a circle grid of
``N`` values: ``(N - 1) // 2`` modes); atoms hold every degree, so two token runs take the geometry's default
resolution.

Common times: a frame of the first run and one of the second whose times differ by at most :data:`TIME_TOLERANCE`
times ``max(1, |t|)`` (runs saved every ``--save-every`` share them to round-off).  None in common is one
:class:`~meanfield.errors.InputError` line, as are runs of different geometries or dimensions and files that are
not runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from . import fourier_series
from .analysis import (SOBOLEV_S, CircleMeasure, circle_negative_sobolev_norm, negative_sobolev_norm,
                       sphere_frame_coefficients, sphere_point_coefficients, wasserstein1_circle_between,
                       zonal_frame_coefficients, zonal_negative_sobolev_norm, zonal_point_coefficients)
from .cluster_detection import points_out_of_cells
from .diagnostics import empirical_coefficients
from .errors import InputError, require
from .geometries import Geometry, atoms_geometry, geometry_of, run_geometry
from .limits import check_option

#: The distances :func:`compare_runs` computes (module docstring).
METRICS = ("w1", "sobolev")
#: Two frames are at a common time when their times differ by at most this times ``max(1, |t|)``.
TIME_TOLERANCE = 1e-9
#: Token coefficients on the circle and zonal S^{d-1} are summed over blocks of at most this many (token, degree)
#: entries.
BLOCK_ENTRIES = 2 ** 22


# ------------------------------------------------------------------------------------------------ frames
class _Frames:
    """One run's frames as measures on its geometry (module docstring): :meth:`coefficients` (H^-s); :attr:`held` is
    the highest degree its grid holds exactly (``None``: atoms).  One subclass per geometry, :data:`FRAMES`, answers
    what differs: the reading, the default metric and degree, the norm and how the place is named."""

    #: The distance by default (module docstring); ``w1`` only where :meth:`measure` exists (the circle).
    metric = "sobolev"
    #: A note on the comparison when tokens enter it (``None``: nothing to say).
    token_note = None

    def __init__(self, run: xr.Dataset, label: str, space: Geometry, dim: int):
        self.run, self.label, self.space, self.dim = run, label, space, dim
        self.grid = "density" in run and run_geometry(run.attrs) is not None
        self.held = int(run.attrs["resolution"]) if self.grid and "quadrature_weight" in run else None
        self._check()

    def _check(self) -> None:
        """Refuse, on one line, a grid this reader cannot read (nothing to refuse by default)."""

    @staticmethod
    def default_lmax(resolution: int) -> int:
        """The degrees a run at ``resolution`` holds (two token runs take the geometry's default resolution)."""
        return resolution

    @staticmethod
    def where(dim: int) -> str:
        return f"on S^{dim - 1}"

    @staticmethod
    def norm(dim: int, s: float):
        """``(mu, nu) -> ||mu - nu||_{H^-s}`` from this geometry's coefficients (:mod:`meanfield.analysis`)."""
        return lambda mu, nu: negative_sobolev_norm(mu, nu, s)

    def frame(self, name: str, index: int, finite: bool = True) -> np.ndarray:
        """The run variable ``name`` at frame ``index`` (or as it is, without a time axis); checked finite."""
        variable = self.run[name]
        values = np.asarray(variable.values[index] if "time" in variable.dims else variable.values, dtype=float)
        require(not finite or bool(np.all(np.isfinite(values))),
                f"{self.label}: {name} at t = {float(self.run['time'].values[index]):g} is not finite")
        return values

    def _split(self, index: int, centres: np.ndarray, cell_masses: np.ndarray):
        """A finite-volume frame as places and masses: its cells without the point clusters they hold (the recorded
        density holds each point's mass in its cell, MATH.md §5), then the points (unused slots: no mass)
        (:func:`meanfield.cluster_detection.points_out_of_cells`); ``(centres, cell_masses)`` without points."""
        if "point_position" not in self.run:
            return centres, cell_masses
        places, masses, _ = points_out_of_cells(centres, cell_masses, self.frame("point_position", index, False),
                                                self.frame("point_mass", index, False), self.space.periodic)
        return places, masses


class _CircleFrames(_Frames):
    """Circle frames: a grid density's trigonometric series (with a finite-volume frame's points as atoms), tokens
    as weighted atoms; W1 by default."""

    metric = "w1"

    def __init__(self, run: xr.Dataset, label: str, space: Geometry, dim: int):
        super().__init__(run, label, space, dim)
        if self.grid:
            self.held = (run.sizes["theta"] - 1) // 2

    def _check(self) -> None:
        if not self.grid:
            return
        count = self.run.sizes["theta"]
        require(np.allclose(self.run["theta"].values, 2 * np.pi * np.arange(count) / count, rtol=0.0, atol=1e-9),
                f"{self.label}: its theta grid is not 2 pi j / N (j = 0 .. N - 1), the grid a circle density is "
                f"read on")

    @staticmethod
    def default_lmax(resolution: int) -> int:
        return (resolution - 1) // 2

    @staticmethod
    def where(dim: int) -> str:
        return "on the circle"

    @staticmethod
    def norm(dim: int, s: float):
        return lambda mu, nu: circle_negative_sobolev_norm(mu, nu, s)

    def _circle_split(self, index: int):
        """The circle grid's density without the points it holds, and the points (angle, mass)."""
        density = self.frame("density", index)
        if "point_position" not in self.run:
            return density, np.zeros(0), np.zeros(0)
        width = 2 * np.pi / density.size
        places, masses = self._split(index, self.run["theta"].values, density * width)
        return masses[:density.size] / width, places[density.size:], masses[density.size:]

    def measure(self, index: int) -> CircleMeasure:
        if self.grid:
            density, places, masses = self._circle_split(index)
            return CircleMeasure(places, masses, density=density)
        return CircleMeasure(self.frame("theta", index), self.frame("weights", index))

    def coefficients(self, index: int, lmax: int) -> np.ndarray:
        """The ``rho_hat_k`` of MATH.md §2.1 up to ``lmax``."""
        modes = np.arange(lmax + 1)
        if not self.grid:
            return _blocked(lambda places, weights: empirical_coefficients(places, weights, modes),
                            self.frame("theta", index), self.frame("weights", index), lmax)
        density, places, masses = self._circle_split(index)
        return fourier_series.coefficients(density)[:lmax + 1] + empirical_coefficients(places, masses, modes)


class _SphereFrames(_Frames):
    """S^2 frames: a spectral frame's exact coefficients, tokens' and Lagrangian nodes' atoms."""

    def _check(self) -> None:
        require(not self.grid or "quadrature_weight" in self.run or ("positions" in self.run and "weights" in self.run),
                f"{self.label}: a sphere run without quadrature_weight or nodes (an older file); solve it again")

    def coefficients(self, index: int, lmax: int) -> np.ndarray:
        """The ``rho_lm`` of MATH.md §2.2 up to ``lmax``."""
        if self.grid and "quadrature_weight" in self.run:
            return sphere_frame_coefficients(self.run, index, lmax)
        return sphere_point_coefficients(self.frame("positions", index), self.frame("weights", index), lmax)


class _ZonalFrames(_Frames):
    """Zonal S^{d-1} frames: a Galerkin frame's exact coefficients, a finite-volume frame's cells and rings, the
    zonal part of tokens."""

    token_note = "tokens enter by their zonal part: their average over the rotations that fix the pole"

    @staticmethod
    def norm(dim: int, s: float):
        return lambda mu, nu: zonal_negative_sobolev_norm(mu, nu, dim, s)

    def coefficients(self, index: int, lmax: int) -> np.ndarray:
        """The ``g_l`` of MATH.md §2.2 up to ``lmax``."""
        if not self.grid:
            return _blocked(lambda places, weights: zonal_point_coefficients(places, weights, self.dim, lmax),
                            self.frame("positions", index), self.frame("weights", index), lmax)
        if "quadrature_weight" in self.run:
            return zonal_frame_coefficients(self.run, index)[:lmax + 1]
        places, masses = self._split(index, self.frame("polar", index),
                                     self.frame("density", index) * self.frame("cell_volume", index))
        return zonal_point_coefficients(places, masses, self.dim, lmax)


#: The frames' reader of each geometry, by its name.
FRAMES = {"circle": _CircleFrames, "sphere": _SphereFrames, "zonal": _ZonalFrames}


def frames_of(run: xr.Dataset, label: str, space: Geometry, dim: int) -> _Frames:
    """The reader of ``run``'s frames as measures on ``space`` (:data:`FRAMES`)."""
    return FRAMES[space.name](run, label, space, dim)


def _blocked(function, places: np.ndarray, weights: np.ndarray, lmax: int) -> np.ndarray:
    """``function(places, weights)`` summed over blocks of tokens, so that its (tokens x degrees) table stays within
    :data:`BLOCK_ENTRIES` (one call when the tokens fit)."""
    step = max(1, BLOCK_ENTRIES // (lmax + 1))
    if places.shape[0] <= step:
        return function(places, weights)
    return sum(function(places[k:k + step], weights[k:k + step]) for k in range(0, places.shape[0], step))


def _where(run: xr.Dataset, label: str) -> tuple[Geometry, int, bool]:
    """``(geometry, dim, tokens)``: the sphere a run's frames live on, and whether they are tokens (module
    docstring); one line naming ``label`` for a run whose frames are not measures on one sphere."""
    attrs = run.attrs
    shape = run_geometry(attrs)
    if shape is not None:
        density = run["density"] if "density" in run else None
        require(density is not None and density.ndim == 1 + len(shape.grid_variables),
                f"{label}: a causal kinetic run (a density per token position s) or a run without density frames; "
                f"compare takes one measure per frame")
        return shape, int(attrs["dim"]), False
    require(attrs.get("geometry") == "particles" and "positions" in run and "weights" in run,
            f"{label}: a {attrs.get('geometry')} run; compare takes circle, sphere, zonal and particle runs")
    dim = int(run["positions"].shape[-1])
    return atoms_geometry(dim) or geometry_of("zonal"), dim, True


def _common_space(first: tuple, second: tuple, labels) -> tuple[Geometry, int]:
    """The geometry both runs' frames live on (a token run and a zonal run of one ``dim``: zonal parts)."""
    (shape_a, dim_a, tokens_a), (shape_b, dim_b, tokens_b) = first, second
    if dim_a == dim_b and shape_a is shape_b:
        return shape_a, dim_a
    if dim_a == dim_b and (shape_a.rings and tokens_b or shape_b.rings and tokens_a):
        return (shape_a if shape_a.rings else shape_b), dim_a
    raise InputError(f"{labels[0]} is {_place(*first)}, {labels[1]} {_place(*second)}: compare runs of one geometry "
                     f"and dimension (particles --dim 2: circle, 3: sphere, d: zonal --dim d)")


def _place(shape: Geometry, dim: int, tokens: bool) -> str:
    where = FRAMES[shape.name].where(dim)
    return f"tokens {where} (dim {dim})" if tokens else f"a {shape.name} run {where} (dim {dim})"


def common_times(first, second, tolerance: float = TIME_TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(i, j)`` of the frames of two runs at common times: ``|t_i - t_j| <= tolerance max(1, |t_i|)``
    (for each frame of the first, the nearest of the second), in the first run's order."""
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    order = np.argsort(second, kind="stable")
    if second.size == 0 or first.size == 0:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    place = np.clip(np.searchsorted(second[order], first), 1, second.size) - 1
    right = np.minimum(place + 1, second.size - 1)
    nearer = np.abs(second[order][right] - first) < np.abs(second[order][place] - first)
    nearest = order[np.where(nearer, right, place)]
    close = np.abs(second[nearest] - first) <= tolerance * np.maximum(1.0, np.abs(first))
    return np.nonzero(close)[0], nearest[close]


# ------------------------------------------------------------------------------------------------ runs
def run_description(attrs) -> str:
    """A run in a few words: ``particles, n = 4000, iid, seed 1`` or ``spectral, resolution 128``."""
    if attrs.get("geometry") == "particles":
        return f"particles, n = {attrs.get('n', '?')}, {attrs.get('sampling', 'iid')}, seed {attrs.get('seed', '?')}"
    return f"{attrs.get('scheme', '?')}, resolution {attrs.get('resolution', '?')}"


#: The model attributes a description adds when the two runs differ in them, with the value of a run without one.
MODEL_ATTRS = {"attention": "?", "beta": "?", "nu": "?", "init": "?", "normalization": "post", "mask": "none"}


def _descriptions(first, second) -> tuple[str, str]:
    differ = [key for key, absent in MODEL_ATTRS.items() if str(first.get(key, absent)) != str(second.get(key, absent))]

    def described(attrs):
        extra = "".join(f", {key} = {attrs.get(key, MODEL_ATTRS[key])}" for key in differ)
        return run_description(attrs) + extra

    return described(first), described(second)


def _loaded(run, label: str):
    if isinstance(run, xr.Dataset):
        return run, label
    from .app.storage import load_run

    return load_run(run), str(run)


def _lmax(lmax, frames: list[_Frames], space: Geometry) -> int:
    """``lmax`` checked against the runs' grids; by default the fewest degrees a grid holds (two token runs: those
    of a run at the geometry's default resolution)."""
    holders = sorted((f for f in frames if f.held is not None), key=lambda f: f.held)
    if lmax is None:
        resolution = space.default_resolution
        return holders[0].held if holders else FRAMES[space.name].default_lmax(resolution)
    lmax = check_option("--lmax", lmax)
    require(not holders or lmax <= holders[0].held,
            f"--lmax must be <= {holders[0].held if holders else 0}, the highest {space.mode_word} "
            f"{holders[0].label if holders else ''} holds (got {lmax})")
    return lmax


def _metric(metric, space: Geometry) -> str:
    default = FRAMES[space.name].metric
    if metric is None:
        return default
    require(metric in METRICS, f"--metric must be one of {', '.join(METRICS)} (got {metric!r})")
    require(metric == "sobolev" or default == "w1",
            "--metric w1 is computed on the circle only (exact W1, MATH.md §4); on S^2 and zonal S^{d-1} use "
            "--metric sobolev")
    return metric


def _span(run: xr.Dataset, label: str) -> str:
    times = run["time"].values
    return f"{label} has t = {float(times[0]):g} .. {float(times[-1]):g} ({times.size} frames)" if times.size else \
        f"{label} has no frame"


def compare_runs(first, second, *, metric: str | None = None, s: float | None = None,
                 lmax: int | None = None) -> xr.Dataset:
    """The distance between two runs of one geometry at each common time (module docstring; MATH.md §4).

    Parameters
    ----------
    first, second : str, path or xarray.Dataset
        Run files (or runs) of :func:`meanfield.solve` or :func:`meanfield.simulate_particles`, on one geometry and
        dimension.
    metric : {"w1", "sobolev"}
        ``w1``: the exact Wasserstein-1 distance (circle only, its default); ``sobolev``: the ``H^-s`` norm (the
        default on S^2 and zonal S^{d-1}).
    s : float
        The Sobolev order, in ``[0, 100]`` (default :data:`meanfield.analysis.SOBOLEV_S`; ``sobolev`` only).
    lmax : int
        The highest degree (circle: Fourier mode) of the ``H^-s`` sum (default: the fewest either run holds).

    Returns
    -------
    xarray.Dataset
        ``distance(time)`` at the common times (the first run's times), with attributes ``metric``, ``s`` and
        ``lmax`` (``sobolev``), the runs' ``files`` and ``descriptions``, ``geometry`` and ``dim``.
    """
    (a, label_a), (b, label_b) = _loaded(first, "first"), _loaded(second, "second")
    space, dim = _common_space(_where(a, label_a), _where(b, label_b), (label_a, label_b))
    metric = _metric(metric, space)
    frames = [frames_of(a, label_a, space, dim), frames_of(b, label_b, space, dim)]
    index_a, index_b = common_times(a["time"].values, b["time"].values)
    require(index_a.size > 0, f"{label_a} and {label_b} share no saved time (to a relative {TIME_TOLERANCE:g}): "
                              f"{_span(a, label_a)}, {_span(b, label_b)}")
    attrs = {"metric": metric, "geometry": space.name, "dim": dim}
    if metric == "w1":
        require(s is None and lmax is None, "--s and --lmax belong to --metric sobolev; --metric w1 takes neither")
        values = [wasserstein1_circle_between(frames[0].measure(i), frames[1].measure(j))
                  for i, j in zip(index_a, index_b)]
        long_name = "W1 distance between the runs' measures scaled to mass 1 (MATH.md section 4)"
    else:
        s = SOBOLEV_S if s is None else check_option("--s", s)
        lmax = _lmax(lmax, frames, space)
        norm = FRAMES[space.name].norm(dim, s)
        values = [norm(frames[0].coefficients(i, lmax), frames[1].coefficients(j, lmax))
                  for i, j in zip(index_a, index_b)]
        attrs |= {"s": s, "lmax": lmax}
        long_name = f"H^-{s:g} norm of the difference of the runs' measures, degrees 1 .. {lmax}"
    descriptions = _descriptions(a.attrs, b.attrs)
    attrs |= {"first_file": label_a, "second_file": label_b, "first_description": descriptions[0],
              "second_description": descriptions[1], "time_tolerance": TIME_TOLERANCE}
    if frames[0].token_note and not all(f.grid for f in frames):
        attrs["note"] = frames[0].token_note
    if all(str(run.attrs.get("save_log", "none")) != "none" for run in (a, b)):
        attrs["save_log"] = a.attrs["save_log"]
    variable = {"long_name": long_name} | {key: attrs[key] for key in ("metric", "s", "lmax") if key in attrs}
    return xr.Dataset({"distance": ("time", np.asarray(values, dtype=float), variable)},
                      coords={"time": ("time", a["time"].values[index_a], {"long_name": "time t (the first run's)"})},
                      attrs=attrs)


# ------------------------------------------------------------------------------------------------ output
def default_figure_path(first, second) -> Path:
    """``A_vs_B.png`` beside ``A`` (as ``meanfield plot RUN`` writes ``RUN.png`` beside its run)."""
    first, second = Path(first), Path(second)
    return first.with_name(f"{first.stem}_vs_{second.stem}.png")


def _heading(comparison) -> str:
    attrs = comparison.attrs
    if attrs["metric"] == "w1":
        return "W1 distance (MATH.md §4; both measures scaled to mass 1)"
    word = geometry_of(attrs["geometry"]).mode_word
    return f"H^-{float(attrs['s']):g} distance ({word}s 1 .. {int(attrs['lmax'])}; MATH.md §4)"


def format_comparison(comparison) -> str:
    """The table ``meanfield compare`` prints: the distance, both runs, then one line per common time."""
    attrs = comparison.attrs
    lines = [f"{_heading(comparison)} between",
             f"  A: {attrs['first_file']}  ({attrs['first_description']})",
             f"  B: {attrs['second_file']}  ({attrs['second_description']})"]
    if "note" in attrs:
        lines.append(f"  ({attrs['note']})")
    lines.append(f"at {comparison.sizes['time']} common time{'s' if comparison.sizes['time'] != 1 else ''}:")
    lines.append(f"{'time':>12}  {'distance':>12}")
    lines += [f"{float(t):>12.6g}  {float(d):>12.4e}" for t, d in zip(comparison["time"].values,
                                                                     comparison["distance"].values)]
    return "\n".join(lines)


def comparison_record(comparison, figure=None) -> dict:
    """What ``meanfield compare --json`` prints: the attributes, the times and distances, the figure's path."""
    attrs = comparison.attrs
    record = {key: attrs[key] for key in ("metric", "s", "lmax", "geometry", "dim", "note") if key in attrs}
    return record | {"files": [attrs["first_file"], attrs["second_file"]],
                     "descriptions": [attrs["first_description"], attrs["second_description"]],
                     "time": comparison["time"].values.tolist(), "distance": comparison["distance"].values.tolist(),
                     "figure": None if figure is None else str(figure)}
