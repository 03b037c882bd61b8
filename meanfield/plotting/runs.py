"""The standard figure of a run (DESIGN.md data contract in, one PNG out).

:func:`plot_run` draws, for a circle run,

(a) the density as a space-time heat map of its deviation from the uniform state,
    ``rho / rho_bar - 1`` with ``rho_bar = mass / |S^{d-1}|`` (MATH.md §2), on a symmetric
    logarithmic colour scale (:func:`deviation_norm`): linear within a tenth of the first frame's
    largest deviation, logarithmic beyond, so the perturbation of size 1e-3 growing like
    ``exp(lambda_k t)`` before formation and the clusters (deviations of 10-1000) after it are
    both visible (a log scale of ``rho`` itself shows only the clusters); particle runs: the
    histogram of token angles on the same scale (d = 2), the distribution of pairwise inner
    products on a log scale (d >= 3);
(b) the scaled interaction energy ``exp(-beta) E`` against time (MATH.md §2: it
    increases for ``nu = 0``);
(c) the Fourier amplitudes ``|rho_hat_k|`` on a log axis, each overlaid with the
    linear theory of MATH.md §2.3, ``|rho_hat_k(0)| exp(lambda_k t)`` (dashed, same
    colour), which :func:`theory_curves` returns as numbers.

Runs saved on a log time axis (``--save-log``) are drawn against ``log t`` (the frame at
``t = 0`` is left out of those axes); runs that track clusters (:mod:`meanfield.solvers.clusters`) add the
point-cluster energy of every plateau (dashed) and the merge times (dotted) to panel (b).

Sphere runs draw equal-area maps of the same deviation at a few times; Lagrangian sphere runs
draw their nodes instead, grouped where they coincide (:func:`node_groups`), each group a marker
whose area is proportional to its mass, so clusters are visible however small they are.
Legends sit outside the axes, never over a curve.

A dataset without what its figure needs raises :class:`InputError` naming the variable.

Only the object-oriented matplotlib API is used (no ``pyplot`` state), so this
works under the Agg backend, in scripts and in threads.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib as mpl
import numpy as np
from matplotlib.colors import LogNorm, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .errors import InputError, require
from .geometry import sphere_area
from .model import Model
from .normalization import LABELS, Normalization
from .storage import check_output_file, image_suffixes, write_atomic
from .theory import dominant_mode, growth_rates

DPI = 130
#: The log colour scale of the inner-product panel (tokens, d >= 3) spans at most this many decades.
DENSITY_DECADES = 4
#: Theory lines stop where they exceed this multiple of the largest observed amplitude.
THEORY_CEILING = 10.0
#: The default mode panel shows modes ``1 .. max(MIN_MODES, 2 k*)``.
MIN_MODES = 6
COLORMAP = "magma"
TITLE_REASON_CHARS = 60


PLOTTABLE = ("circle", "sphere", "zonal", "particles", "gaussian")
#: Covariance ellipses drawn in the Gaussian figure.
GAUSSIAN_ELLIPSES = 8
#: Densities at this many times (first, ..., last) in the sphere figure's map row.
SPHERE_FRAMES = 4


#: What each figure reads besides the ``time`` axis: variables / coordinates, then attributes.
REQUIRED = {"circle": ("density", "theta", "mass", "energy", "mode_amplitude"),
            "zonal": ("density", "polar", "mass", "energy", "mode_amplitude"),
            "sphere": ("lat", "lon", "mass", "energy", "mode_amplitude"),
            "particles": ("positions", "weights", "energy"),
            "gaussian": ("mean", "covariance")}
REQUIRED_ATTRS = ("attention", "beta", "nu")


def check_plottable(dataset) -> None:
    """Refuse, in one line, a dataset whose figure cannot be drawn: an unknown geometry, a missing
    variable, attribute or time axis (e.g. a file holding only attributes and times)."""
    geometry = dataset.attrs.get("geometry", "unknown")
    if geometry not in PLOTTABLE:
        raise InputError(f"plot: geometry {geometry} is not supported (circle, sphere, zonal, particle and gaussian runs only)")
    needed = REQUIRED[geometry] + (("density",) if geometry == "sphere" and "positions" not in dataset else ())
    require_run(dataset, "plot", "figure", needed, "mean" if geometry == "gaussian" else "energy",
                () if geometry == "gaussian" else REQUIRED_ATTRS)


def require_run(dataset, command: str, product: str, needed, timed: str, attrs=()) -> None:
    """One line, prefixed ``command:``, unless ``dataset`` has the variables ``needed`` for its ``product``
    (figure, movie), the attributes ``attrs``, and a time axis of at least one time on variable ``timed``."""
    geometry = dataset.attrs.get("geometry", "unknown")
    missing = [name for name in needed if name not in dataset.variables]
    require(not missing, f"{command}: this {geometry} run lacks {', '.join(missing)} (a {geometry} {product} needs "
                         f"{', '.join(needed)}); is it a complete meanfield run file?")
    missing = [name for name in attrs if name not in dataset.attrs]
    require(not missing, f"{command}: this {geometry} run lacks the attribute(s) {', '.join(missing)}; "
                         f"is it a meanfield run file?")
    require("time" in dataset.dims and dataset.sizes["time"] >= 1 and "time" in dataset[timed].dims,
            f"{command}: this {geometry} run has no frames ({timed} needs a time axis with at least one time)")


def _model(dataset) -> Model:
    attrs = dataset.attrs
    return Model(attention=attrs["attention"], beta=attrs["beta"], nu=attrs["nu"],
                 dim=int(attrs.get("dim", 2)))


def _dominant_mode(dataset) -> int:
    if "dominant_mode" in dataset.attrs:
        return int(dataset.attrs["dominant_mode"])
    return dominant_mode(_model(dataset))


def default_modes(dataset) -> list[int]:
    """Modes ``1 .. max(6, 2 k*)``, capped by the modes the run resolved (stored and not dealiased)."""
    resolved = int(dataset.attrs.get("dealiased_modes", dataset["mode"].max()))
    return list(range(1, min(max(MIN_MODES, 2 * _dominant_mode(dataset)), resolved) + 1))


def _checked_modes(dataset, modes) -> list[int]:
    modes = default_modes(dataset) if modes is None else [int(k) for k in np.atleast_1d(modes)]
    stored = set(int(k) for k in dataset["mode"].values)
    require(len(modes) > 0, "plot: modes must name at least one mode")
    require(all(k >= 1 and k in stored for k in modes),
            f"plot: modes must be stored modes >= 1 (got {modes}; the run stores 0..{max(stored)})")
    return modes


def _observed(dataset, modes) -> np.ndarray:
    return np.asarray(dataset["mode_amplitude"].sel(mode=modes).values, dtype=float)


def theory_curves(dataset, modes=None) -> np.ndarray:
    """Linear-theory amplitudes ``|rho_hat_k(t0)| exp(lambda_k (t - t0))``, shape ``(time, modes)``.

    ``lambda_k`` from :func:`meanfield.theory.growth_rates` (MATH.md §2.3); ``t0`` is the
    first saved time (0 for a run started from ``--init``).  A run with a noise schedule
    (:mod:`meanfield.noise_schedule`) has ``lambda_k(nu(t))``: the exponent is
    ``lambda_k(0) (t - t0) - k (k + d - 2) int_{t0}^t nu`` (the integral exact from the spec, or the trapezoids of
    the saved ``nu(time)`` for a Python function).
    """
    check_plottable(dataset)
    modes = _checked_modes(dataset, modes)
    rates = growth_rates(_model(dataset), modes)
    times = np.asarray(dataset["time"].values, dtype=float)
    exponent = np.outer(times - times[0], rates)
    noise = _noise_integrals(dataset, times)
    if noise is not None:
        degrees = np.asarray(modes, dtype=float)
        exponent -= np.outer(noise, degrees * (degrees + int(dataset.attrs.get("dim", 2)) - 2))
    with np.errstate(over="ignore"):
        return _observed(dataset, modes)[0] * np.exp(exponent)


def _noise_integrals(dataset, times: np.ndarray) -> np.ndarray | None:
    """``int_{t0}^t nu`` at each saved time of a run with a noise schedule, else ``None``."""
    from .noise_schedule import NoiseSchedule, is_function_spec

    spec = dataset.attrs.get("nu_schedule")
    if spec is None:
        return None
    if not is_function_spec(str(spec)):
        schedule = NoiseSchedule.parse(str(spec))
        return np.array([schedule.integral(times[0], t) for t in times])
    values = np.asarray(dataset["nu"].values, dtype=float)
    return np.concatenate(([0.0], np.cumsum(np.diff(times) * (values[1:] + values[:-1]) / 2)))


def _positive(values: np.ndarray, what: str) -> np.ndarray:
    positive = values[np.isfinite(values) & (values > 0)]
    require(positive.size > 0, f"plot: {what} has no positive finite value to draw on a log scale")
    return positive


def _density_norm(density: np.ndarray) -> LogNorm:
    positive = _positive(density, "the density")
    top = float(positive.max())
    floor = max(float(positive.min()), top * 10.0 ** -DENSITY_DECADES)
    return LogNorm(vmin=min(floor, top / 10.0), vmax=top)


#: Heat maps draw at most this many columns (about the figure's pixel width).
HEAT_MAP_COLUMNS = 256
#: Colour map of ``rho / rho_bar - 1``: blue below the uniform density, white at it, red above.
DEVIATION_COLORMAP = "RdBu_r"
#: The deviation scale is linear within +-(this x the first frame's largest deviation) ...
LINEAR_FRACTION = 0.1
#: ... kept within these bounds (a uniform start has no deviation; a clustered one a large one).
LINEAR_RANGE = (1e-12, 0.1)
#: At most this many labelled decades on each side of the deviation colour bar.
DEVIATION_TICKS = 4


def mean_density(dataset) -> np.ndarray:
    """``rho_bar(t) = mass(t) / |S^{d-1}|``: the uniform density of the same mass (MATH.md §2), per frame."""
    return np.asarray(dataset["mass"].values, dtype=float) / sphere_area(int(dataset.attrs.get("dim", 2)))


def relative_deviation(density, mean) -> np.ndarray:
    """``rho / rho_bar - 1`` frame by frame (``density``: shape (time, ...); ``mean``: shape (time,))."""
    density = np.asarray(density, dtype=float)
    mean = np.asarray(mean, dtype=float).reshape((-1,) + (1,) * (density.ndim - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return density / mean - 1.0


def linear_range(first_deviation) -> float:
    """Half-width of the linear part of the deviation scale: :data:`LINEAR_FRACTION` of the first frame's
    largest ``|rho / rho_bar - 1|``, clipped to :data:`LINEAR_RANGE`."""
    values = np.abs(np.asarray(first_deviation, dtype=float))
    largest = float(values[np.isfinite(values)].max()) if np.any(np.isfinite(values)) else 0.0
    return float(np.clip(LINEAR_FRACTION * largest, *LINEAR_RANGE))


def symlog(values, linear: float) -> np.ndarray:
    """``sign(x) log10(1 + |x| / linear)``: linear near 0, logarithmic beyond ``linear``."""
    values = np.asarray(values, dtype=float)
    return np.sign(values) * np.log10(1.0 + np.abs(values) / linear)


def deviation_norm(scaled) -> TwoSlopeNorm:
    """White at 0; each side of the colour map spans the finite ``scaled`` values on that side."""
    finite = np.asarray(scaled, dtype=float)[np.isfinite(scaled)]
    low = min(float(finite.min()) if finite.size else 0.0, -1e-12)
    high = max(float(finite.max()) if finite.size else 0.0, 1e-12)
    return TwoSlopeNorm(vcenter=0.0, vmin=low, vmax=high)


def _power_of_ten(exponent: int) -> str:
    return "$" + {0: "1", 1: "10", -1: "0.1"}.get(exponent, f"10^{{{exponent}}}") + "$"


def _side_ticks(top: float, linear: float) -> tuple[list[float], list[str]]:
    """Ticks of one side of the deviation colour bar, as positive deviations and labels: powers of ten
    ``linear < 10^k <= top`` (at most :data:`DEVIATION_TICKS`, keeping the largest); without one, ``top``
    rounded down to one digit."""
    if not top > linear:
        return [], []
    exponents = list(range(math.floor(math.log10(linear)) + 1, math.floor(math.log10(top) + 1e-9) + 1))
    if not exponents:
        exponent = math.floor(math.log10(top))
        digit = math.floor(top / 10.0 ** exponent)
        return [digit * 10.0 ** exponent], [rf"${digit}\times 10^{{{exponent}}}$"]
    exponents = exponents[::-1][::math.ceil(len(exponents) / DEVIATION_TICKS)][::-1]
    return [10.0 ** k for k in exponents], [_power_of_ten(k) for k in exponents]


def deviation_ticks(deviation, linear: float) -> tuple[list[float], list[str]]:
    """Tick values (of ``rho / rho_bar - 1`` itself) and labels for a deviation scale: 0 and powers of ten
    beyond ``linear`` on each side, within the finite range of ``deviation``."""
    finite = np.asarray(deviation, dtype=float)[np.isfinite(deviation)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    below, below_labels = _side_ticks(-low, linear)
    above, above_labels = _side_ticks(high, linear)
    values = [-value for value in below[::-1]] + [0.0] + above
    return values, [f"$-{label.strip('$')}$" for label in below_labels[::-1]] + ["0"] + above_labels


def linear_label(linear: float) -> str:
    """``linear`` as mathtext, e.g. ``$\\pm 2\\times 10^{-4}$``."""
    mantissa, exponent = f"{linear:.0e}".split("e")
    scale = f"10^{{{int(exponent)}}}" if mantissa == "1" else rf"{mantissa}\times 10^{{{int(exponent)}}}"
    return f"$\\pm {scale}$"


def deviation_colorbar(fig: Figure, mesh, linear: float, deviation, label_prefix: str = r"$\rho/\bar\rho - 1$",
                       **kwargs):
    """Colour bar of a map of :func:`symlog` values, ticks at powers of ten of the deviation itself."""
    values, labels = deviation_ticks(deviation, linear)
    bar = fig.colorbar(mesh, label=f"{label_prefix}  (log scale beyond {linear_label(linear)})", **kwargs)
    bar.set_ticks(symlog(values, linear), labels=labels)
    bar.minorticks_off()
    return bar


def _angle_axis(ax, top: float, ticks: list[str], label: str) -> None:
    ax.set_xlim(0.0, top)
    ax.set_xticks(np.linspace(0.0, top, len(ticks)))
    ax.set_xticklabels(ticks)
    ax.set_xlabel(label)


def theta_axis(ax) -> None:
    _angle_axis(ax, 2.0 * math.pi, ["0", r"$\pi/2$", r"$\pi$", r"$3\pi/2$", r"$2\pi$"], r"$\theta$")


def polar_axis(ax) -> None:
    _angle_axis(ax, math.pi, ["0", r"$\pi/4$", r"$\pi/2$", r"$3\pi/4$", r"$\pi$"], r"polar angle $\vartheta$")


def pool_columns(x, values, columns: int = HEAT_MAP_COLUMNS):
    """Average groups of neighbouring columns down to at most ``columns`` (a cluster one cell wide would
    otherwise fall between the screen's pixels and vanish; averaging keeps its mass visible)."""
    x, values = np.asarray(x, dtype=float), np.asarray(values, dtype=float)
    group = math.ceil(x.size / columns)
    if group <= 1:
        return x, values
    starts = np.arange(0, x.size, group)
    sizes = np.diff(np.append(starts, x.size))
    return np.add.reduceat(x, starts) / sizes, np.add.reduceat(values, starts, axis=-1) / sizes


def log_time_axis(dataset) -> bool:
    """Whether the run was saved on a log time axis (``save_log`` attribute)."""
    return str(dataset.attrs.get("save_log", "none")) != "none"


def _heat_map(fig: Figure, ax, x, times, values, label: str, zero: str = r"$\leq 0$", log: bool = False) -> None:
    x, values = pool_columns(x, values)
    if log:
        times, values = times[times > 0], values[times > 0]
        ax.set_yscale("log")
    cmap = mpl.colormaps[COLORMAP].with_extremes(bad="white")
    mesh = ax.pcolormesh(x, times, values, shading="nearest", cmap=cmap, norm=_density_norm(values),
                         rasterized=True)
    ax.set_ylabel("time $t$")
    label += r" (log scale)" + (f";  white: {zero}" if np.any(values <= 0) else "")
    fig.colorbar(mesh, ax=ax, label=label, extend="min", pad=0.02)


def deviation_heat_map(fig: Figure, ax, x, times, density, mean, log: bool = False) -> None:
    """Space-time heat map of ``rho / rho_bar - 1`` (``density``: (time, x); ``mean``: rho_bar per frame)
    on the symmetric log scale of the module docstring, with its colour bar."""
    x, density = pool_columns(x, density)
    times = np.asarray(times, dtype=float)
    deviation = relative_deviation(density, mean)
    linear = linear_range(deviation[0])
    if log:
        times, deviation = times[times > 0], deviation[times > 0]
        ax.set_yscale("log")
    scaled = symlog(deviation, linear)
    mesh = ax.pcolormesh(x, times, scaled, shading="nearest", cmap=DEVIATION_COLORMAP, norm=deviation_norm(scaled),
                         rasterized=True)
    ax.set_ylabel("time $t$" + (" (log scale)" if log else ""))
    deviation_colorbar(fig, mesh, linear, deviation, ax=ax, pad=0.02)


def _density_panel(fig: Figure, ax, dataset) -> None:
    deviation_heat_map(fig, ax, dataset["theta"].values, dataset["time"].values, dataset["density"].values,
                       mean_density(dataset), log=log_time_axis(dataset))
    theta_axis(ax)
    ax.set_title(r"(a) density relative to uniform, $\rho(t,\theta)/\bar\rho - 1$")


def _zonal_density_panel(fig: Figure, ax, dataset) -> None:
    deviation_heat_map(fig, ax, dataset["polar"].values, dataset["time"].values, dataset["density"].values,
                       mean_density(dataset), log=log_time_axis(dataset))
    polar_axis(ax)
    ax.set_title(r"(a) zonal density relative to uniform, $\rho(t,\vartheta)/\bar\rho - 1$")


def frame_indices(count: int, frames: int) -> np.ndarray:
    """``min(frames, count)`` indices from first to last, evenly spaced, without repeats (the sphere
    figure's map row and the movie's frames)."""
    return np.unique(np.linspace(0, count - 1, min(frames, count)).round().astype(int))


def _cell_edges(centres: np.ndarray, low: float, high: float) -> np.ndarray:
    """Cell boundaries halfway between monotone ``centres``, closed by ``low`` and ``high``."""
    inner = 0.5 * (centres[1:] + centres[:-1])
    return np.concatenate([[low], inner, [high]]) if centres[-1] > centres[0] else \
        np.concatenate([[high], inner, [low]])


def _map_grid(dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Longitude edges in [-pi, pi], latitude edges in [-pi/2, pi/2], and the column order.

    Longitudes are wrapped to [-pi, pi) and sorted; the first column is repeated at +pi so
    the map closes without a gap at the antimeridian.
    """
    lon = np.deg2rad((np.asarray(dataset["lon"].values, dtype=float) + 180.0) % 360.0 - 180.0)
    order = np.argsort(lon)
    lon = np.append(lon[order], math.pi)
    order = np.append(order, order[0])
    lat = np.deg2rad(np.asarray(dataset["lat"].values, dtype=float))
    return _cell_edges(lon, -math.pi, math.pi), _cell_edges(lat, -math.pi / 2, math.pi / 2), order


#: Nodes in the same cube of this side (about a pixel of the maps) are drawn as one marker.
NODE_GROUP_SIZE = 0.02
#: Marker area (points^2) of a group carrying the whole mass; a group's area is proportional to its mass ...
FULL_MASS_AREA = 2500.0
#: ... but at least this, so single nodes stay visible before clusters form.
MIN_MARKER_AREA = 1.0
NODE_COLOUR = "tab:red"


def node_groups(points, weights, size: float = NODE_GROUP_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors grouped by the cube of side ``size`` they fall in: per group the weighted mean
    direction (the plain mean for a massless group) and the summed weight."""
    points, weights = np.asarray(points, dtype=float), np.asarray(weights, dtype=float)
    _, labels = np.unique(np.floor(points / size).astype(np.int64), axis=0, return_inverse=True)
    labels = labels.ravel()
    masses = np.bincount(labels, weights)
    factor = np.where(masses[labels] > 0, weights, 1.0)
    sums = np.stack([np.bincount(labels, factor * points[:, i]) for i in range(points.shape[1])], axis=-1)
    return sums / np.maximum(np.linalg.norm(sums, axis=-1, keepdims=True), 1e-300), masses


def marker_areas(masses, total: float) -> np.ndarray:
    """Marker areas proportional to mass (:data:`FULL_MASS_AREA` for ``total``), at least :data:`MIN_MARKER_AREA`."""
    return np.maximum(FULL_MASS_AREA * np.asarray(masses, dtype=float) / total, MIN_MARKER_AREA)


def mass_legend_handles(total: float, masses=(0.01, 0.1, 0.5)) -> tuple[list, list]:
    """Legend entries showing the marker size of a few masses (fractions of ``total``)."""
    handles = [Line2D([], [], ls="", marker="o", color=NODE_COLOUR, alpha=0.7,
                      markersize=math.sqrt(float(marker_areas([m * total], total)[0])))
               for m in masses]
    return handles, [f"mass {m:g}" for m in masses]


def mass_legend(target, total: float, **kwargs):
    """The marker-size legend of :func:`mass_legend_handles` on ``target`` (an axis or a figure)."""
    options = dict(fontsize="small", title="area $\\propto$ mass", title_fontsize="small", labelspacing=1.5,
                   borderpad=1.0, handletextpad=1.5)
    return target.legend(*mass_legend_handles(total), **(options | kwargs))


def lon_lat(points) -> tuple[np.ndarray, np.ndarray]:
    """Longitude in [-pi, pi) and latitude in [-pi/2, pi/2] (radians) of unit vectors in R^3."""
    points = np.asarray(points, dtype=float)
    return np.arctan2(points[:, 1], points[:, 0]), np.arcsin(np.clip(points[:, 2], -1.0, 1.0))


def draw_nodes(ax, points, weights, total: float):
    """Nodes on a Mollweide axis, grouped by :func:`node_groups`, marker area proportional to mass."""
    centres, masses = node_groups(points, weights)
    order = np.argsort(masses)[::-1]            # heavy groups first, so light ones stay visible on top
    lon, lat = lon_lat(centres[order])
    return ax.scatter(lon, lat, s=marker_areas(masses[order], total), color=NODE_COLOUR, alpha=0.7,
                      linewidths=0, rasterized=True)


def mollweide_style(ax) -> None:
    """A Mollweide axis with a light grid and no longitude labels (the sphere figure's maps, the movie)."""
    ax.set_xticklabels([])
    ax.tick_params(labelsize="x-small")
    ax.grid(True, alpha=0.3)


def mollweide_axes(fig, count: int) -> list:
    """``count`` Mollweide axes in a row (:func:`mollweide_style`)."""
    axes = [fig.add_subplot(1, count, i + 1, projection="mollweide") for i in range(count)]
    for ax in axes:
        mollweide_style(ax)
    return axes


def sphere_deviation_maps(dataset, indices):
    """``(lon edges, lat edges, symlog deviations of the frames at indices, deviations, linear range)``
    for Mollweide maps: one colour scale for all frames, linear range from the run's first frame."""
    lon_edges, lat_edges, order = _map_grid(dataset)
    density = np.asarray(dataset["density"].values, dtype=float)
    deviation = relative_deviation(density[indices][:, :, order], mean_density(dataset)[indices])
    linear = linear_range(relative_deviation(density[:1], mean_density(dataset)[:1]))
    return lon_edges, lat_edges, symlog(deviation, linear), deviation, linear


def has_nodes(dataset) -> bool:
    """Whether a run saved node or token positions on S^2 with their weights (Lagrangian, particles)."""
    return "positions" in dataset and "weights" in dataset and dataset["positions"].shape[-1] == 3


def _sphere_maps(fig, dataset) -> None:
    """Row of equal-area (Mollweide) maps at a few times: the density's deviation from uniform on
    one shared colour scale, or for Lagrangian runs the nodes, marker area proportional to mass."""
    indices = frame_indices(dataset.sizes["time"], SPHERE_FRAMES).tolist()
    axes = mollweide_axes(fig, len(indices))
    for ax, index in zip(axes, indices):
        ax.set_title(f"t = {float(dataset['time'].values[index]):g}", fontsize="medium")
    if has_nodes(dataset):
        weights = np.asarray(dataset["weights"].values, dtype=float)
        for ax, index in zip(axes, indices):
            draw_nodes(ax, dataset["positions"].values[index], weights, float(weights.sum()))
        mass_legend(fig, float(weights.sum()), loc="outside right center")
        what = "Lagrangian nodes on $S^2$ (coincident nodes grouped, marker area $\\propto$ mass; "
    else:
        lon_edges, lat_edges, scaled, deviation, linear = sphere_deviation_maps(dataset, indices)
        norm = deviation_norm(scaled)
        for ax, frame in zip(axes, scaled):
            mesh = ax.pcolormesh(lon_edges, lat_edges, frame, shading="flat", cmap=DEVIATION_COLORMAP, norm=norm,
                                 rasterized=True)
        deviation_colorbar(fig, mesh, linear, deviation, ax=axes, shrink=0.8, pad=0.02)
        what = r"density relative to uniform, $\rho/\bar\rho - 1$, on $S^2$ ("
    fig.suptitle(f"(a) {what}Mollweide equal-area maps; longitude $-\\pi..\\pi$)", fontsize="medium")


def _token_histogram_panel(fig: Figure, ax, dataset, bins: int = 128) -> None:
    """Circle tokens: the weighted histogram of angles per frame, relative to uniform, as a heat map."""
    edges = np.linspace(0.0, 2 * math.pi, bins + 1)
    weights = dataset["weights"].values
    counts = np.array([np.histogram(frame, edges, weights=weights)[0] for frame in dataset["theta"].values])
    density = counts / (edges[1] - edges[0])
    deviation_heat_map(fig, ax, 0.5 * (edges[1:] + edges[:-1]), dataset["time"].values, density,
                       density.mean(axis=1), log=log_time_axis(dataset))
    theta_axis(ax)
    ax.set_title(f"(a) tokens: histogram of angles relative to uniform (n = {dataset.sizes['particle']})")


def pair_inner_products(frame: np.ndarray) -> np.ndarray:
    """The inner products ``<x_i, x_j>``, ``i != j``, of the tokens ``frame`` (shape (n, d))."""
    gram = frame @ frame.T
    return gram[~np.eye(len(frame), dtype=bool)]


def _inner_product_panel(fig: Figure, ax, dataset, bins: int = 100) -> None:
    """Tokens on S^{d-1}: distribution of the pairwise inner products <x_i, x_j>, i != j, per frame."""
    edges = np.linspace(-1.0, 1.0, bins + 1)
    rows = [np.histogram(pair_inner_products(frame), edges, density=True)[0] for frame in dataset["positions"].values]
    _heat_map(fig, ax, 0.5 * (edges[1:] + edges[:-1]), dataset["time"].values, np.array(rows), "density", "empty",
              log=log_time_axis(dataset))
    ax.set_xlabel(r"$\langle x_i, x_j \rangle$")
    ax.set_title(f"(a) pairwise inner products (n = {dataset.sizes['particle']}, d = {dataset.attrs['dim']})")


def _clustered_fraction_panel(ax, dataset, delta: float = 1e-3) -> None:
    fractions = [np.mean(pair_inner_products(frame) >= 1 - delta) for frame in dataset["positions"].values]
    ax.plot(dataset["time"].values, fractions, color="k", lw=1.5)
    _time_axis(ax, dataset)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel(rf"fraction of pairs with $\langle x_i, x_j\rangle \geq 1 - {delta:g}$")
    ax.set_title("(c) clustered pairs")
    if "radius" in dataset:
        _radius_curve(ax, dataset)
        ax.set_title("(c) clustered pairs (black) and radii (orange)")


def _time_axis(ax, dataset) -> None:
    times = dataset["time"].values
    if log_time_axis(dataset):
        ax.set_xscale("log")
        times = times[times > 0]
    if times.size and times[-1] > times[0]:
        ax.set_xlim(float(times[0]), float(times[-1]))
    ax.set_xlabel("time $t$" + (" (log scale)" if log_time_axis(dataset) else ""))
    ax.grid(True, alpha=0.3)


def outside_legend(ax, handles=None, labels=None, **kwargs):
    """A legend to the right of ``ax``, outside it, so it never covers a curve (constrained layout makes room)."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    options = dict(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small")
    return ax.legend(handles, labels, **(options | kwargs))


def _points(size) -> float:
    from matplotlib.font_manager import FontProperties
    return float(FontProperties(size=size).get_size_in_points())


def legend_below(ax, handles=None, labels=None, **kwargs):
    """A legend under ``ax``, clear of its tick labels (room for superscripts) and x label, entries side by
    side, so it never covers a curve (constrained layout makes room for it)."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    rc = mpl.rcParams
    below = (1.7 * _points(rc["xtick.labelsize"]) + 1.3 * _points(rc["axes.labelsize"]) + rc["xtick.major.size"]
             + rc["xtick.major.pad"] + rc["axes.labelpad"] + 2.0)
    fontsize = kwargs.pop("fontsize", "small")
    options = dict(loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=below / _points(fontsize),
                   fontsize=fontsize, ncol=len(handles), frameon=False)
    return ax.legend(handles, labels, **(options | kwargs))


def _energy_panel(ax, dataset) -> None:
    ax.plot(dataset["time"].values, dataset["energy"].values, color="k", lw=1.5, label="run")
    if "cluster_energy" in dataset:
        ax.plot(dataset["time"].values, dataset["cluster_energy"].values, color="tab:orange", lw=1.2, ls="--",
                label="clusters as points (MATH.md §5)")
    for index, time in enumerate(dataset["merge_time"].values if "merge_time" in dataset else []):
        ax.axvline(float(time), color="tab:blue", lw=0.8, ls=":", label="merges" if index == 0 else None)
    _time_axis(ax, dataset)
    ax.set_ylabel(r"$e^{-\beta} E(\rho)$")
    ax.set_title("(b) scaled interaction energy")
    if "cluster_energy" in dataset or "merge_time" in dataset and dataset.sizes.get("merge", 0):
        legend_below(ax)


def _clipped(curve: np.ndarray, ceiling: float) -> np.ndarray:
    return np.where(curve <= ceiling, curve, np.nan)


def _mode_names(dataset) -> tuple[str, str, str]:
    """(index symbol, amplitude symbol, panel title): Fourier modes on the circle, degrees on S^{d-1}."""
    if dataset.attrs.get("geometry") in ("sphere", "zonal"):
        return r"\ell", r"a_\ell", "degree amplitudes"
    return "k", r"|\hat\rho_k|", "Fourier modes"


def _modes_panel(ax, dataset, modes) -> None:
    times = dataset["time"].values
    observed = _observed(dataset, modes)
    visible = _positive(observed, f"mode_amplitude of modes {modes}")
    ceiling = THEORY_CEILING * float(visible.max())
    theory = theory_curves(dataset, modes)
    k_star = _dominant_mode(dataset)
    colours = _mode_colours(len(modes))
    index, amplitude, name = _mode_names(dataset)
    for column, (k, colour) in enumerate(zip(modes, colours)):
        width = 2.8 if k == k_star else 1.2
        label = f"${index}={k}$" + (f" (${index}^*$)" if k == k_star else "")
        ax.plot(times, np.where(observed[:, column] > 0, observed[:, column], np.nan),
                color=colour, lw=width, label=label)
        ax.plot(times, _clipped(theory[:, column], ceiling), color=colour, lw=width * 0.7, ls="--")
    ax.set_yscale("log")
    ax.set_ylim(0.5 * float(visible.min()), ceiling)
    _time_axis(ax, dataset)
    ax.set_ylabel(f"${amplitude}(t)$")
    ax.set_title(f"(c) {name} vs linear theory (dashed)")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="grey", ls="--", lw=1.2))
    labels.append(f"${amplitude}(0)\\,e^{{\\lambda_{index} t}}$")
    outside_legend(ax, handles, labels)


def _mode_colours(count: int) -> list:
    palette = mpl.colormaps["tab10" if count <= 10 else "tab20"]
    return [palette(i % palette.N) for i in range(count)]


def _short_reason(reason: str) -> str:
    reason = reason.split(":")[0].strip()
    if len(reason) > TITLE_REASON_CHARS:
        reason = reason[:TITLE_REASON_CHARS - 1].rstrip() + "\u2026"
    return reason


def _normalization_label(attrs) -> str:
    """``",  Pre-LN (r0 = 1.5)"`` for a run under a normalisation scheme other than Post-LN (MATH.md §6)."""
    name = str(attrs.get("normalization", "post"))
    if name == "post":
        return ""
    used = [key for key, value in Normalization(name).options().items() if key != "normalization" and value is not None]
    values = ", ".join(f"{key.replace('mix_switch', 'tau')} = {float(attrs[key]):g}" for key in used if key in attrs)
    return f",  {LABELS[name]}" + (f" ({values})" if values else "")


def _radius_curve(ax, dataset) -> None:
    """The tokens' mean radius (min to max shaded) on a right-hand axis, for runs that carry one."""
    radius, times = dataset["radius"].values, dataset["time"].values
    right = ax.twinx()
    right.fill_between(times, radius.min(axis=1), radius.max(axis=1), color="C1", alpha=0.25, lw=0)
    right.plot(times, radius.mean(axis=1), color="C1", lw=1.5)
    right.set_ylabel("token radius $r_j$ (mean; min to max shaded)", color="C1")
    right.tick_params(axis="y", colors="C1")


def _title(dataset) -> str:
    attrs = dataset.attrs
    where = "on the circle" if int(attrs.get("dim", 2)) == 2 else f"on $S^{{{int(attrs['dim']) - 1}}}$"
    if attrs.get("geometry") == "particles":
        where = f"{attrs.get('n', '')} tokens " + where
    elif attrs.get("geometry") == "zonal":
        where = "zonal density " + where
    noise = f"$\\nu$ = {float(attrs['nu']):g}" if "nu_schedule" not in attrs else \
        f"$\\nu(t)$: {attrs['nu_schedule']}"     # a noise schedule (meanfield.noise_schedule)
    title = (f"{str(attrs['attention']).upper()} {where}:  $\\beta$ = {float(attrs['beta']):g},  "
             f"{noise},  init {attrs.get('init', '?')}{_normalization_label(attrs)}"
             f"{_cluster_label(dataset)}")
    reason = str(attrs.get("stop_reason", "completed"))
    return title if reason == "completed" else f"{title}\nstopped early: {_short_reason(reason)}"


def _cluster_label(dataset) -> str:
    """``, K clusters at the end`` by the package's one definition (:mod:`meanfield.cluster_detection`), as the
    command line and ``cluster_count`` say; nothing for a file that cannot tell (an older S^2 file)."""
    from .cluster_detection import clusters_in_frame

    try:
        count = clusters_in_frame(dataset).count
    except InputError:
        return ""
    return f",  {count} cluster{'' if count == 1 else 's'} at the end"


def check_image_path(path) -> Path:
    """``path`` ends in an image suffix matplotlib writes and its folder is writable (else one line)."""
    return check_output_file(path, "image path", image_suffixes())


def _save(fig: Figure, path) -> None:
    """Write through a temporary file renamed into place (:func:`meanfield.storage.write_atomic`)."""
    write_atomic(path, lambda temporary: fig.savefig(temporary, dpi=DPI))


def _row_figure(dataset, modes) -> Figure:
    """Circle, zonal and particle runs: (a) density heat map, (b) energy, (c) modes or clustering."""
    fig = Figure(figsize=(19, 5), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.08, wspace=0.04)
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.15, 1, 1]})
    geometry = dataset.attrs["geometry"]
    if geometry == "circle":
        _density_panel(fig, axes[0], dataset)
    elif geometry == "zonal":
        _zonal_density_panel(fig, axes[0], dataset)
    elif "theta" in dataset:
        _token_histogram_panel(fig, axes[0], dataset)
    else:
        _inner_product_panel(fig, axes[0], dataset)
    _energy_panel(axes[1], dataset)
    if "mode_amplitude" in dataset:
        _modes_panel(axes[2], dataset, _checked_modes(dataset, modes))
    else:
        _clustered_fraction_panel(axes[2], dataset)
    return fig


def _sphere_figure(dataset, modes) -> Figure:
    """Sphere runs: (a) Mollweide maps of the density at a few times; (b) energy; (c) degree amplitudes."""
    fig = Figure(figsize=(16, 8.5), layout="constrained")
    maps, curves = fig.subfigures(2, 1, height_ratios=[0.62, 1])
    _sphere_maps(maps, dataset)
    axes = curves.subplots(1, 2)
    _energy_panel(axes[0], dataset)
    _modes_panel(axes[1], dataset, _checked_modes(dataset, modes))
    return fig


def _ellipse(covariance: np.ndarray, points: int = 120) -> np.ndarray:
    """The 1-sigma ellipse ``{Sigma^{1/2} u : |u| = 1}`` of a 2 x 2 covariance, shape (2, points)."""
    values, vectors = np.linalg.eigh(covariance)
    angle = np.linspace(0.0, 2 * math.pi, points)
    return vectors @ (np.sqrt(np.clip(values, 0.0, None))[:, None] * np.stack((np.cos(angle), np.sin(angle))))


#: Coordinates listed one by one in the Gaussian figure's legends (more are drawn unlabelled).
GAUSSIAN_LABELLED = 10
GAUSSIAN_TIME = "time $t$ (dimensionless)"


def gaussian_profile(mean: float, variance: float, points: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """``x`` over mean +- 4 sigma and the normal density ``N(mean, variance)`` there (tokens in R^1)."""
    sigma = math.sqrt(max(float(variance), 1e-300))
    x = np.linspace(mean - 4 * sigma, mean + 4 * sigma, points)
    return x, np.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def gaussian_end(times, dataset) -> float:
    """The last time a Gaussian run's ellipses are drawn (figure and movie): the last saved time, or before
    a blow-up the first nine tenths of the time span (the ellipse is unbounded near the blow-up)."""
    return times[-1] if dataset.attrs.get("blowup_time", "none") == "none" else times[0] + 0.9 * (times[-1] - times[0])


def _ellipses_panel(fig: Figure, ax, dataset) -> None:
    """Covariance ellipses of the first two coordinates, centred at the mean, at several times
    (tokens in R^1: the Gaussian density itself)."""
    times = dataset["time"].values
    # evenly spaced in time up to gaussian_end
    picks = np.unique(np.searchsorted(times, np.linspace(times[0], gaussian_end(times, dataset), GAUSSIAN_ELLIPSES))
                      .clip(0, times.size - 1))
    cmap = mpl.colormaps["viridis"]
    line = dataset.sizes["i"] == 1
    for index in picks:
        colour = cmap((times[index] - times[0]) / max(times[-1] - times[0], 1e-300))
        if line:
            ax.plot(*gaussian_profile(float(dataset["mean"].values[index, 0]),
                                      float(dataset["covariance"].values[index, 0, 0])), color=colour, lw=1.4)
            continue
        centre = dataset["mean"].values[index, :2]
        curve = _ellipse(dataset["covariance"].values[index, :2, :2])
        ax.plot(centre[0] + curve[0], centre[1] + curve[1], color=colour, lw=1.4)
        ax.plot(*centre, "o", color=colour, ms=3)
    mappable = mpl.cm.ScalarMappable(norm=mpl.colors.Normalize(times[0], times[-1]), cmap=cmap)
    fig.colorbar(mappable, ax=ax, label="time $t$ of each " + ("curve" if line else "ellipse"), pad=0.02)
    ax.grid(True, alpha=0.3)
    if line:
        ax.set_xlabel("token coordinate $x$")
        ax.set_ylabel(r"density of $N(\alpha, \Sigma)$")
        ax.set_title(r"(a) law of the tokens, $N(\alpha(t), \Sigma(t))$")
        return
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("token coordinate $x_1$")
    ax.set_ylabel("token coordinate $x_2$")
    ax.set_title(r"(a) mean $\alpha$ (dot) and 1-$\sigma$ ellipse of $\Sigma$" +
                 (" in the ($x_1, x_2$) plane" if dataset.sizes["i"] > 2 else ""))


def _labelled_lines(ax, times, columns, symbol: str) -> None:
    """One line per column, labelled ``symbol_1, symbol_2, ...`` (up to :data:`GAUSSIAN_LABELLED`)."""
    lines = ax.plot(times, columns, lw=1.5)
    for number, line in enumerate(lines[:GAUSSIAN_LABELLED], start=1):
        line.set_label(f"${symbol}_{{{number}}}$")


def _blowup_line(ax, dataset) -> None:
    blowup = dataset.attrs.get("blowup_time", "none")
    if blowup != "none":
        ax.axvline(float(blowup), color="r", ls="--", lw=1, label=f"blow-up $t^*$ = {float(blowup):.4g}")


#: Eigenvalues below this multiple of the largest are rounding noise (a collapsed direction): not drawn.
EIGENVALUE_FLOOR = 1e-14


def _eigenvalue_panel(ax, dataset) -> None:
    eigenvalues = np.linalg.eigvalsh(dataset["covariance"].values)
    floor = EIGENVALUE_FLOOR * np.max(np.abs(eigenvalues), axis=-1, keepdims=True)
    resolved = np.where(eigenvalues > floor, eigenvalues, np.nan)
    _labelled_lines(ax, dataset["time"].values, resolved, r"\lambda")
    ax.set_yscale("log")
    _time_axis(ax, dataset)
    ax.set_xlabel(GAUSSIAN_TIME)
    ax.set_ylabel(r"eigenvalues $\lambda_1 \leq \lambda_2 \leq \dots$ of $\Sigma(t)$")
    ax.set_title(r"(b) covariance spectrum" + (f" ($\\lambda$ < {EIGENVALUE_FLOOR:g} $\\lambda_{{max}}$: rounding, not drawn)"
                                               if np.isnan(resolved).any() else ""))
    _blowup_line(ax, dataset)
    outside_legend(ax)


def _mean_panel(ax, dataset) -> None:
    _labelled_lines(ax, dataset["time"].values, dataset["mean"].values, r"\alpha")
    _time_axis(ax, dataset)
    ax.set_xlabel(GAUSSIAN_TIME)
    ax.set_ylabel(r"mean $\alpha_i(t)$ (token coordinates)")
    ax.set_title(r"(c) mean $\alpha(t)$")
    _blowup_line(ax, dataset)
    outside_legend(ax)


def _gaussian_figure(dataset, modes=None) -> Figure:
    """Castin et al.'s picture (MATH.md §3): ellipses in the plane, covariance spectrum, mean."""
    fig = Figure(figsize=(18, 5.2), layout="constrained")
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.15, 1, 1]})
    _ellipses_panel(fig, axes[0], dataset)
    _eigenvalue_panel(axes[1], dataset)
    _mean_panel(axes[2], dataset)
    return fig


def _gaussian_title(dataset) -> str:
    attrs = dataset.attrs
    case = {"identity": "$V = Q = K = I$", "random": "random $V, Q, K$"}.get(str(attrs.get("case")), None)
    details = [f"{attrs.get('attention')} attention"]
    if str(attrs.get("eps", "none")) != "none":
        details.append(rf"Sinkhorn $\varepsilon$ = {float(attrs['eps']):g}")
    if int(attrs.get("scaled", 0)):
        details.append(r"logits scaled by $1/\sqrt{k}$")
    if case:
        details.append(case)
    if "seed" in attrs:
        details.append(f"seed {int(attrs['seed'])}")
    title = (f"Gaussian tokens in $R^{{{dataset.sizes['i']}}}$, mean $\\alpha$ and covariance $\\Sigma$ "
             f"(Castin et al. moment ODEs, MATH.md §3):  " + ",  ".join(details))
    reason = str(attrs.get("stop_reason", "completed"))
    return title if reason == "completed" else f"{title}\nstopped: {_short_reason(reason)}"


def run_title(dataset) -> str:
    """The figure title of a run: model, parameters, initial data, and why it stopped if it did."""
    return _gaussian_title(dataset) if dataset.attrs.get("geometry") == "gaussian" else _title(dataset)


def plot_run(dataset, path=None, modes=None) -> Figure:
    """The standard figure of a run, chosen by its ``geometry`` attribute; saved to ``path`` if given.

    Circle, zonal and particle runs get three panels in a row; sphere runs get a row of
    equal-area density maps above the energy and degree-amplitude panels.  ``modes``: the
    Fourier modes / degrees of panel (c), default ``1 .. max(6, 2 k*)``.  Other geometries
    raise :class:`InputError`.
    """
    check_plottable(dataset)
    if path is not None:
        path = check_image_path(path)
    from .plot_causal import causal_figure, is_causal

    builders = {"sphere": _sphere_figure, "gaussian": _gaussian_figure}
    builder = causal_figure if is_causal(dataset) else builders.get(dataset.attrs["geometry"], _row_figure)
    fig = builder(dataset, modes)
    fig.suptitle(run_title(dataset))
    if path is not None:
        _save(fig, path)
    return fig
