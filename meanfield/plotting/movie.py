"""Movies of runs: one frame per saved time (at most :data:`MAX_FRAMES`, evenly sampled), as .gif or .mp4.

:func:`write_movie` draws, frame by frame, what the standard figure (:mod:`meanfield.plotting.runs`)
shows as a whole, on the same scales:

* circle and zonal densities: ``rho / rho_bar - 1`` against the angle on a symmetric log axis
  (linear near 0, so the perturbation before formation shows, logarithmic beyond, so the clusters do);
* sphere densities: Mollweide maps of the same deviation, one colour scale for the whole movie;
* Lagrangian nodes on S^2 and tokens on S^2: markers on a Mollweide map, coincident nodes grouped,
  marker area proportional to mass; tokens on the circle: the same on the unit circle;
* tokens on S^{d-1}, d >= 4: the distribution of their pairwise inner products;
* Gaussian runs: the mean and 1-sigma covariance ellipse in the (x_1, x_2) plane;

beside the energy (Gaussian runs: the covariance spectrum) against time, with the present time marked.

Frames are drawn by blitting: the still parts of the figure are rendered once, and each frame
redraws only the artists that move (a full redraw per frame costs ten times more), then hands
the pixels to the writer.  A .gif is written by matplotlib's Pillow writer; an .mp4 by the ffmpeg binary that the
``imageio-ffmpeg`` package ships (``imageio_ffmpeg.get_ffmpeg_exe()``: no system install, nothing
downloaded).  The file is written to a temporary file in the same folder and renamed into place
(:func:`meanfield.app.storage.write_atomic`).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from ..errors import require
from ..geometries import run_geometry
from ..geometry import sphere_area
from ..app.storage import MOVIE_SUFFIXES, check_output_file, write_atomic
from .gaussian import covariance_ellipse, gaussian_end, gaussian_profile
from .particles import pair_inner_products
from .run_data import PLOTTABLE, frame_indices, require_run
from .runs import run_title
from .sphere import (NODE_COLOUR, has_nodes, lon_lat, marker_areas, mass_legend, mollweide_style, node_groups,
                     sphere_deviation_maps)
from .style import (ANGLE_AXES, DEVIATION_COLORMAP, deviation_colorbar, deviation_norm, deviation_ticks, linear_label,
                    linear_range, log_time_axis, mean_density, relative_deviation, symlog)

#: At most this many frames, sampled evenly from the saved ones.
MAX_FRAMES = 200
MAX_FPS = 60
#: Movie size: inches at :data:`MOVIE_DPI` (1000 x 420 pixels; even, as the H.264 encoder needs).
MOVIE_SIZE = (10.0, 4.2)
MOVIE_DPI = 100
#: Bins of the inner-product histogram of tokens on S^{d-1}, d >= 4.
INNER_PRODUCT_BINS = 100
#: Every geometry has a movie, as it has a figure.
GEOMETRIES = PLOTTABLE


def _needs(dataset) -> tuple[str, ...]:
    """The variables the movie of ``dataset`` reads."""
    geometry, shape = dataset.attrs.get("geometry"), run_geometry(dataset.attrs)
    if geometry == "particles" or (shape is not None and not shape.curve and has_nodes(dataset)):
        return ("positions", "weights")
    return ("density", *shape.grid_variables, "mass") if shape is not None else ("mean", "covariance")


def check_movie_dataset(dataset) -> None:
    """One line if ``dataset`` is not a run a movie can be made of (unknown geometry, missing variables, no frames)."""
    geometry = dataset.attrs.get("geometry", "unknown")
    require(geometry in GEOMETRIES, f"movie: geometry {geometry} is not supported (one of {', '.join(GEOMETRIES)})")
    needs = _needs(dataset)
    require_run(dataset, "movie", "movie", needs, needs[0])


# ------------------------------------------------------------------------------------------ side panel
class _TimeSeries:
    """The energy (or another series) against time, the present time marked by a dot and a line."""

    def __init__(self, ax, dataset, values, label: str, log_y: bool = False):
        self.times = np.asarray(dataset["time"].values, dtype=float)
        self.values = np.asarray(values, dtype=float)
        keep = self.times > 0 if log_time_axis(dataset) else np.ones(self.times.size, dtype=bool)
        ax.plot(self.times[keep], self.values[keep], color="0.4", lw=1.2)
        if log_time_axis(dataset):
            ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel("time $t$" + (" (log scale)" if log_time_axis(dataset) else ""))
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        self.line = ax.axvline(self.times[0], color="tab:red", lw=1)
        self.dot, = ax.plot([], [], "o", color="tab:red", ms=5)
        self.artists = [self.line, self.dot]

    def draw(self, index: int) -> None:
        self.line.set_xdata([self.times[index]] * 2)
        self.dot.set_data([self.times[index]], [self.values[index]])


def _energy_panel(ax, dataset):
    if "energy" not in dataset.variables:
        ax.set_axis_off()
        return None
    panel = _TimeSeries(ax, dataset, dataset["energy"].values, r"$e^{-\beta} E(\rho)$")
    ax.set_title("scaled interaction energy")
    return panel


# ------------------------------------------------------------------------------------------ main panels
class _DensityLine:
    """``rho / rho_bar - 1`` against the angle (circle: theta; zonal: polar angle), symmetric log axis."""

    def __init__(self, fig, ax, dataset, indices):
        axis = run_geometry(dataset.attrs).axis
        self.x = np.asarray(dataset[axis].values, dtype=float)
        self.deviation = relative_deviation(dataset["density"].values, mean_density(dataset))
        linear = linear_range(self.deviation[0])
        shown = self.deviation[indices]
        finite = shown[np.isfinite(shown)]
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
        self.line, = ax.plot(self.x, self.deviation[indices[0]], color="k", lw=1.2)
        self.artists = [self.line]
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_yscale("symlog", linthresh=linear, linscale=1.0)
        ax.set_ylim(min(low * 1.2, -linear), max(high * 1.5, linear))
        ax.set_yticks(*deviation_ticks(shown, linear))
        ax.minorticks_off()
        ax.grid(True, alpha=0.3)
        ANGLE_AXES[axis](ax)
        ax.set_ylabel(rf"$\rho/\bar\rho - 1$ (log scale beyond {linear_label(linear)})")
        ax.set_title("density relative to uniform")

    def draw(self, index: int) -> None:
        self.line.set_ydata(self.deviation[index])


class _SphereMap:
    """Mollweide map of ``rho / rho_bar - 1``, one colour scale for every frame."""

    def __init__(self, fig, ax, dataset, indices):
        lon_edges, lat_edges, self.scaled, deviation, linear = sphere_deviation_maps(dataset, indices)
        self.position = {int(index): k for k, index in enumerate(indices)}
        self.mesh = ax.pcolormesh(lon_edges, lat_edges, self.scaled[0], shading="flat", cmap=DEVIATION_COLORMAP,
                                  norm=deviation_norm(self.scaled), rasterized=True)
        deviation_colorbar(fig, self.mesh, linear, deviation, ax=ax, shrink=0.8, pad=0.02)
        ax.set_title("density relative to uniform (Mollweide map)")
        self.artists = [self.mesh]

    def draw(self, index: int) -> None:
        self.mesh.set_array(self.scaled[self.position[int(index)]])


class _Nodes:
    """Nodes or tokens as markers, coincident ones grouped (:func:`~meanfield.plotting.sphere.node_groups`), marker area
    proportional to mass, heavy groups drawn first so light ones stay visible on top."""

    def __init__(self, ax, dataset):
        self.positions = dataset["positions"]
        self.weights = np.asarray(dataset["weights"].values, dtype=float)
        self.total = float(self.weights.sum())
        self.scatter = ax.scatter(np.zeros(1), np.zeros(1), s=[0.0], color=NODE_COLOUR, alpha=0.7, linewidths=0)
        self.artists = [self.scatter]
        mass_legend(ax, self.total, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)

    def coordinates(self, centres) -> np.ndarray:
        return centres[:, :2]

    def draw(self, index: int) -> None:
        centres, masses = node_groups(self.positions.values[index], self.weights)
        order = np.argsort(masses)[::-1]
        self.scatter.set_offsets(self.coordinates(centres[order]))
        self.scatter.set_sizes(marker_areas(masses[order], self.total))


class _SphereNodes(_Nodes):
    """Lagrangian nodes or tokens on S^2 on a Mollweide map."""

    def __init__(self, fig, ax, dataset, indices):
        super().__init__(ax, dataset)
        what = "tokens" if dataset.attrs["geometry"] == "particles" else "Lagrangian nodes"
        ax.set_title(f"{what} (Mollweide map)")

    def coordinates(self, centres) -> np.ndarray:
        return np.column_stack(lon_lat(centres))


class _CircleTokens(_Nodes):
    """Tokens on the circle as markers on the unit circle."""

    def __init__(self, fig, ax, dataset, indices):
        angle = np.linspace(0.0, 2 * math.pi, 361)
        ax.plot(np.cos(angle), np.sin(angle), color="0.8", lw=1)
        super().__init__(ax, dataset)
        ax.set_aspect("equal")
        ax.set_xlim(-1.25, 1.25)
        ax.set_ylim(-1.25, 1.25)
        ax.set_axis_off()
        ax.set_title(f"tokens on the circle (n = {dataset.sizes['particle']})")


class _InnerProducts:
    """Tokens on S^{d-1}, d >= 4: the histogram of pairwise inner products ``<x_i, x_j>``, i != j."""

    def __init__(self, fig, ax, dataset, indices):
        self.edges = np.linspace(-1.0, 1.0, INNER_PRODUCT_BINS + 1)
        self.histograms = {int(index): self._histogram(dataset["positions"].values[index]) for index in indices}
        values = np.concatenate(list(self.histograms.values()))
        positive = values[values > 0]
        self.line = ax.stairs(self.histograms[int(indices[0])], self.edges, color="k")
        self.artists = [self.line]
        ax.set_yscale("log")
        if positive.size:
            ax.set_ylim(0.5 * positive.min(), 2 * positive.max())
        ax.set_xlim(-1, 1)
        ax.set_xlabel(r"$\langle x_i, x_j \rangle$")
        ax.set_ylabel("probability density (log scale)")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"pairwise inner products (n = {dataset.sizes['particle']}, d = {dataset.attrs.get('dim')})")

    def _histogram(self, frame) -> np.ndarray:
        return np.histogram(pair_inner_products(frame), self.edges, density=True)[0]

    def draw(self, index: int) -> None:
        self.line.set_data(self.histograms[int(index)])


class _GaussianEllipse:
    """Mean and 1-sigma covariance ellipse of the first two coordinates (tokens in R^1: the density)."""

    def __init__(self, fig, ax, dataset, indices):
        self.mean = np.asarray(dataset["mean"].values, dtype=float)[:, :2]
        self.covariance = np.asarray(dataset["covariance"].values, dtype=float)[:, :2, :2]
        self.line1d = self.mean.shape[1] == 1
        curves = [self._curve(index) for index in indices]
        points = np.concatenate(curves, axis=1)
        finite = points[:, np.all(np.isfinite(points), axis=0)]
        self.line, = ax.plot(*curves[0], color="tab:blue", lw=1.6)
        self.dot, = ax.plot(*self._centre(indices[0]), "o", color="tab:blue", ms=4)
        self.artists = [self.line, self.dot]
        ax.grid(True, alpha=0.3)
        if self.line1d:
            if finite.size:
                ax.set_xlim(finite[0].min(), finite[0].max())
                ax.set_ylim(0.0, 1.05 * finite[1].max())
            ax.set_xlabel("token coordinate $x$")
            ax.set_ylabel(r"density of $N(\alpha, \Sigma)$")
            ax.set_title(r"law of the tokens, $N(\alpha(t), \Sigma(t))$")
            return
        if finite.size:
            centre, half = finite.mean(axis=1), 0.55 * np.ptp(finite, axis=1).max() + 1e-12
            ax.set_xlim(centre[0] - half, centre[0] + half)
            ax.set_ylim(centre[1] - half, centre[1] + half)
        ax.set_aspect("equal")
        ax.set_xlabel("token coordinate $x_1$")
        ax.set_ylabel("token coordinate $x_2$")
        ax.set_title(r"mean $\alpha$ and 1-$\sigma$ ellipse of $\Sigma$")

    def _curve(self, index: int) -> np.ndarray:
        if self.line1d:
            return np.stack(gaussian_profile(self.mean[index, 0], self.covariance[index, 0, 0]))
        return self.mean[index][:, None] + covariance_ellipse(self.covariance[index])

    def _centre(self, index: int) -> tuple[list, list]:
        if self.line1d:
            return [self.mean[index, 0]], [0.0]
        return [self.mean[index, 0]], [self.mean[index, 1]]

    def draw(self, index: int) -> None:
        self.line.set_data(*self._curve(index))
        self.dot.set_data(*self._centre(index))


class _PositionMap:
    """Causal kinetic runs (MATH.md §8): ``f / f_bar - 1`` over (direction, position ``s``) on the symmetric log scale,
    one colour scale for every frame; on S^2 the degree amplitudes over (degree, ``s``), log scale."""

    def __init__(self, fig, ax, dataset, indices):
        shape, s = run_geometry(dataset.attrs), dataset["s"].values
        if not shape.curve:
            x = dataset["mode"].values
            self.values = np.log10(np.maximum(np.asarray(dataset["mode_amplitude"].values, dtype=float), 1e-300))
            top = float(self.values[indices].max())
            self.mesh = ax.pcolormesh(x, s, self.values[indices[0]], shading="nearest", cmap="magma", vmin=top - 8,
                                      vmax=top, rasterized=True)
            fig.colorbar(self.mesh, ax=ax, label=r"$\log_{10}$ degree amplitude", pad=0.02)
            ax.set_xlabel("degree $l$")
            ax.set_title("degree amplitudes over position")
        else:
            x = np.asarray(dataset[shape.axis].values, dtype=float)
            mean = np.asarray(dataset["slice_mass"].values, dtype=float) / sphere_area(int(dataset.attrs.get("dim", 2)))
            deviation = np.asarray(dataset["density"].values, dtype=float) / mean[..., None] - 1.0
            linear = linear_range(deviation[0])
            self.values = symlog(deviation, linear)
            self.mesh = ax.pcolormesh(x, s, self.values[indices[0]], shading="nearest", cmap=DEVIATION_COLORMAP,
                                      norm=deviation_norm(self.values[indices]), rasterized=True)
            deviation_colorbar(fig, self.mesh, linear, deviation[indices], ax=ax, pad=0.02)
            ANGLE_AXES[shape.axis](ax)
            ax.set_title("density relative to uniform, per position")
        ax.set_ylabel("token position $s$")
        self.artists = [self.mesh]

    def draw(self, index: int) -> None:
        self.mesh.set_array(self.values[index])


def _main_panel(dataset):
    """The class drawing the main panel of ``dataset`` and whether its axis is a Mollweide map."""
    geometry = dataset.attrs["geometry"]
    if "density" in dataset and "s" in dataset["density"].dims:
        return _PositionMap, False
    if geometry == "gaussian":
        return _GaussianEllipse, False
    shape = run_geometry(dataset.attrs)
    if shape is not None:
        if shape.curve:
            return _DensityLine, False
        return (_SphereNodes, True) if has_nodes(dataset) else (_SphereMap, True)
    dim = dataset["positions"].shape[-1]
    return {2: (_CircleTokens, False), 3: (_SphereNodes, True)}.get(dim, (_InnerProducts, False))


def _side_panel(ax, dataset):
    if dataset.attrs["geometry"] != "gaussian":
        return _energy_panel(ax, dataset)
    eigenvalues = np.linalg.eigvalsh(np.asarray(dataset["covariance"].values, dtype=float))
    largest = np.where(eigenvalues[:, -1] > 0, eigenvalues[:, -1], np.nan)
    panel = _TimeSeries(ax, dataset, largest, r"largest eigenvalue of $\Sigma(t)$", log_y=True)
    ax.set_title("covariance spectrum")
    return panel


def _gaussian_indices(dataset, frames: int) -> np.ndarray:
    """The frames up to :func:`~meanfield.plotting.gaussian.gaussian_end` (before a blow-up the last tenth of the time
    span is left out: the ellipse is unbounded there)."""
    times = np.asarray(dataset["time"].values, dtype=float)
    count = int(np.searchsorted(times, gaussian_end(times, dataset), side="right"))
    return frame_indices(max(count, 1), frames)


def _writer(suffix: str, fps: int):
    """matplotlib's Pillow (.gif) or FFMpeg (.mp4, the ffmpeg of ``imageio-ffmpeg``) writer, taking frames as
    RGBA pixel arrays (:meth:`add`) instead of redrawing the figure."""
    from matplotlib import animation

    if suffix == ".gif":
        class GifWriter(animation.PillowWriter):
            def add(self, rgba: np.ndarray) -> None:
                from PIL import Image
                # a GIF holds 256 colours: keep each frame as such, a third of the memory of RGB
                self._frames.append(Image.fromarray(rgba[..., :3]).quantize(colors=256,
                                                                            method=Image.Quantize.FASTOCTREE))

        return GifWriter(fps=fps)
    import imageio_ffmpeg

    mpl.rcParams["animation.ffmpeg_path"] = imageio_ffmpeg.get_ffmpeg_exe()

    class Mp4Writer(animation.FFMpegWriter):
        def add(self, rgba: np.ndarray) -> None:
            self._proc.stdin.write(np.ascontiguousarray(rgba).tobytes())

    return Mp4Writer(fps=fps, codec="libx264", extra_args=["-pix_fmt", "yuv420p"])


class _Blitter:
    """Renders the still parts of ``fig`` once; :meth:`frame` redraws only ``artists`` over them."""

    def __init__(self, fig: Figure, artists: list):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.fig, self.artists = fig, artists
        self.canvas = FigureCanvasAgg(fig)
        for artist in artists:
            artist.set_animated(True)
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(fig.bbox)

    def frame(self) -> np.ndarray:
        self.canvas.restore_region(self.background)
        for artist in self.artists:
            self.fig.draw_artist(artist)
        return np.asarray(self.canvas.buffer_rgba())


def _check_settings(fps, frames) -> None:
    for name, value, top in (("fps", fps, MAX_FPS), ("frames", frames, MAX_FRAMES)):
        require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 1 <= value <= top,
                f"movie: {name} must be an integer in 1..{top} (got {value!r})")


def write_movie(dataset, path, fps: int = 10, frames: int = MAX_FRAMES) -> Path:
    """Write a movie of ``dataset`` (a run of any geometry) to ``path`` (.gif or .mp4); returns the path.

    ``frames``: at most this many frames (1..:data:`MAX_FRAMES`), sampled evenly from the saved
    times, first and last included; ``fps``: frames per second (1..:data:`MAX_FPS`).  Raises
    :class:`InputError` (one line) for another suffix, an unwritable folder, or a dataset without
    what its movie needs.  See the module docstring for what is drawn.
    """
    path = check_output_file(path, "movie path", MOVIE_SUFFIXES)
    _check_settings(fps, frames)
    check_movie_dataset(dataset)
    indices = (_gaussian_indices(dataset, frames) if dataset.attrs["geometry"] == "gaussian"
               else frame_indices(dataset.sizes["time"], frames))
    fig = Figure(figsize=MOVIE_SIZE, dpi=MOVIE_DPI, layout="constrained")
    main_class, mollweide = _main_panel(dataset)
    grid = fig.add_gridspec(1, 2, width_ratios=[1.5, 1])
    main_ax = fig.add_subplot(grid[0], projection="mollweide" if mollweide else None)
    if mollweide:
        mollweide_style(main_ax)
    main = main_class(fig, main_ax, dataset, indices)
    side = _side_panel(fig.add_subplot(grid[1]), dataset)
    times = np.asarray(dataset["time"].values, dtype=float)
    fig.suptitle(run_title(dataset).split("\n")[0] + "\n ", fontsize="medium")
    clock = fig.text(0.5, 0.985, "", ha="center", va="top", fontsize="medium")   # plain text: no mathtext per frame

    def draw(index: int) -> None:
        main.draw(index)
        if side is not None:
            side.draw(index)
        clock.set_text(f"\nt = {times[index]:.4g}")

    draw(int(indices[-1]))              # lay out once, on the last frame (usually the widest ranges) ...
    fig.draw_without_rendering()
    fig.set_layout_engine("none")       # ... and keep that layout for every frame
    blitter = _Blitter(fig, main.artists + (side.artists if side is not None else []) + [clock])

    def render(temporary: Path) -> None:
        writer = _writer(path.suffix.lower(), int(fps))
        with writer.saving(fig, str(temporary), MOVIE_DPI):
            for index in indices:
                draw(int(index))
                writer.add(blitter.frame())

    return write_atomic(path, render)
