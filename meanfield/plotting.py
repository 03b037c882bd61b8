"""The standard figure of a run (DESIGN.md data contract in, one PNG out).

:func:`plot_run` draws, for a circle run,

(a) the density ``rho(t, theta)`` as a space-time heat map on a logarithmic colour
    scale (clusters sharpen exponentially, so a linear scale shows only the peaks);
(b) the scaled interaction energy ``exp(-beta) E`` against time (MATH.md §2: it
    increases for ``nu = 0``);
(c) the Fourier amplitudes ``|rho_hat_k|`` on a log axis, each overlaid with the
    linear theory of MATH.md §2.3, ``|rho_hat_k(0)| exp(lambda_k t)`` (dashed, same
    colour), which :func:`theory_curves` returns as numbers.

Runs saved on a log time axis (``--save-log``) are drawn against ``log t`` (the frame at
``t = 0`` is left out of those axes); runs that track clusters (:mod:`solvers.clusters`) add the
point-cluster energy of every plateau (dashed) and the merge times (dotted) to panel (b).

Only the object-oriented matplotlib API is used (no ``pyplot`` state), so this
works under the Agg backend, in scripts and in threads.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib as mpl
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .errors import InputError, require
from .model import Model
from .theory import dominant_mode, growth_rates

DPI = 130
#: The colour scale spans at most this many decades below the densest point.
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


def _check_plottable(dataset) -> None:
    geometry = dataset.attrs.get("geometry", "unknown")
    if geometry not in PLOTTABLE:
        raise InputError(f"plot: geometry {geometry} is not supported (circle, sphere, zonal, particle and gaussian runs only)")


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
    first saved time (0 for a run started from ``--init``).
    """
    _check_plottable(dataset)
    modes = _checked_modes(dataset, modes)
    rates = growth_rates(_model(dataset), modes)
    times = np.asarray(dataset["time"].values, dtype=float)
    with np.errstate(over="ignore"):
        return _observed(dataset, modes)[0] * np.exp(np.outer(times - times[0], rates))


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


def _angle_axis(ax, top: float, ticks: list[str], label: str) -> None:
    ax.set_xlim(0.0, top)
    ax.set_xticks(np.linspace(0.0, top, len(ticks)))
    ax.set_xticklabels(ticks)
    ax.set_xlabel(label)


def _theta_axis(ax) -> None:
    _angle_axis(ax, 2.0 * math.pi, ["0", r"$\pi/2$", r"$\pi$", r"$3\pi/2$", r"$2\pi$"], r"$\theta$")


def _polar_axis(ax) -> None:
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


def _density_panel(fig: Figure, ax, dataset) -> None:
    density = np.asarray(dataset["density"].values, dtype=float)
    _heat_map(fig, ax, dataset["theta"].values, dataset["time"].values, density, r"$\rho$",
              log=log_time_axis(dataset))
    _theta_axis(ax)
    ax.set_title(r"(a) density $\rho(t,\theta)$")


def _zonal_density_panel(fig: Figure, ax, dataset) -> None:
    density = np.asarray(dataset["density"].values, dtype=float)
    _heat_map(fig, ax, dataset["polar"].values, dataset["time"].values, density, r"$\rho$",
              log=log_time_axis(dataset))
    _polar_axis(ax)
    ax.set_title(r"(a) zonal density $\rho(t,\vartheta)$")


def _frame_indices(count: int, frames: int = SPHERE_FRAMES) -> list[int]:
    """``frames`` evenly spaced frame indices from first to last, without repeats."""
    return sorted(set(np.linspace(0, count - 1, frames).round().astype(int).tolist()))


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


def _sphere_maps(fig, dataset) -> None:
    """Row of equal-area (Mollweide) maps of the density at a few times, one shared log colour scale."""
    indices = _frame_indices(dataset.sizes["time"])
    lon_edges, lat_edges, order = _map_grid(dataset)
    frames = np.asarray(dataset["density"].values, dtype=float)[indices][:, :, order]
    norm = _density_norm(frames)
    cmap = mpl.colormaps[COLORMAP].with_extremes(bad="white")
    axes = [fig.add_subplot(1, len(indices), i + 1, projection="mollweide") for i in range(len(indices))]
    for ax, index, frame in zip(axes, indices, frames):
        mesh = ax.pcolormesh(lon_edges, lat_edges, frame, shading="flat", cmap=cmap, norm=norm, rasterized=True)
        ax.set_xticklabels([])
        ax.tick_params(labelsize="x-small")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"t = {float(dataset['time'].values[index]):g}", fontsize="medium")
    label = r"$\rho$ (log scale)" + (r";  white: $\leq 0$" if np.any(frames <= 0) else "")
    fig.colorbar(mesh, ax=axes, label=label, extend="min", shrink=0.8, pad=0.02)
    fig.suptitle(r"(a) density $\rho(t, x)$ on $S^2$ (Mollweide equal-area maps; longitude $-\pi..\pi$)",
                 fontsize="medium")


def _token_histogram_panel(fig: Figure, ax, dataset, bins: int = 128) -> None:
    """Circle tokens: the weighted histogram of angles per frame, as a density heat map."""
    edges = np.linspace(0.0, 2 * math.pi, bins + 1)
    weights = dataset["weights"].values
    counts = np.array([np.histogram(frame, edges, weights=weights)[0] for frame in dataset["theta"].values])
    density = counts / (edges[1] - edges[0])
    _heat_map(fig, ax, 0.5 * (edges[1:] + edges[:-1]), dataset["time"].values, density, "token density", "empty",
              log=log_time_axis(dataset))
    _theta_axis(ax)
    ax.set_title(f"(a) tokens: histogram of angles (n = {dataset.sizes['particle']})")


def _inner_product_panel(fig: Figure, ax, dataset, bins: int = 100) -> None:
    """Tokens on S^{d-1}: distribution of the pairwise inner products <x_i, x_j>, i != j, per frame."""
    edges = np.linspace(-1.0, 1.0, bins + 1)
    rows = []
    for frame in dataset["positions"].values:
        gram = frame @ frame.T
        rows.append(np.histogram(gram[~np.eye(len(frame), dtype=bool)], edges, density=True)[0])
    _heat_map(fig, ax, 0.5 * (edges[1:] + edges[:-1]), dataset["time"].values, np.array(rows), "density", "empty",
              log=log_time_axis(dataset))
    ax.set_xlabel(r"$\langle x_i, x_j \rangle$")
    ax.set_title(f"(a) pairwise inner products (n = {dataset.sizes['particle']}, d = {dataset.attrs['dim']})")


def _clustered_fraction_panel(ax, dataset, delta: float = 1e-3) -> None:
    fractions = []
    for frame in dataset["positions"].values:
        gram = frame @ frame.T
        fractions.append(np.mean(gram[~np.eye(len(frame), dtype=bool)] >= 1 - delta))
    ax.plot(dataset["time"].values, fractions, color="k", lw=1.5)
    _time_axis(ax, dataset)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel(rf"fraction of pairs with $\langle x_i, x_j\rangle \geq 1 - {delta:g}$")
    ax.set_title("(c) clustered pairs")


def _time_axis(ax, dataset) -> None:
    times = dataset["time"].values
    if log_time_axis(dataset):
        ax.set_xscale("log")
        times = times[times > 0]
    if times.size and times[-1] > times[0]:
        ax.set_xlim(float(times[0]), float(times[-1]))
    ax.set_xlabel("time $t$" + (" (log scale)" if log_time_axis(dataset) else ""))
    ax.grid(True, alpha=0.3)


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
    if "cluster_energy" in dataset:
        ax.legend(fontsize="small", loc="lower right")


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
    ax.legend(handles, labels, fontsize="small", ncol=2, loc="upper left", framealpha=0.85)


def _mode_colours(count: int) -> list:
    palette = mpl.colormaps["tab10" if count <= 10 else "tab20"]
    return [palette(i % palette.N) for i in range(count)]


def _short_reason(reason: str) -> str:
    reason = reason.split(":")[0].strip()
    if len(reason) > TITLE_REASON_CHARS:
        reason = reason[:TITLE_REASON_CHARS - 1].rstrip() + "\u2026"
    return reason


def _title(dataset) -> str:
    attrs = dataset.attrs
    where = "on the circle" if int(attrs.get("dim", 2)) == 2 else f"on $S^{{{int(attrs['dim']) - 1}}}$"
    if attrs.get("geometry") == "particles":
        where = f"{attrs.get('n', '')} tokens " + where
    elif attrs.get("geometry") == "zonal":
        where = "zonal density " + where
    title = (f"{str(attrs['attention']).upper()} {where}:  $\\beta$ = {float(attrs['beta']):g},  "
             f"$\\nu$ = {float(attrs['nu']):g},  init {attrs.get('init', '?')}")
    reason = str(attrs.get("stop_reason", "completed"))
    return title if reason == "completed" else f"{title}\nstopped early: {_short_reason(reason)}"


def _save(fig: Figure, path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)


def _row_figure(dataset, modes) -> Figure:
    """Circle, zonal and particle runs: (a) density heat map, (b) energy, (c) modes or clustering."""
    fig = Figure(figsize=(16, 5), layout="constrained")
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


def _ellipses_panel(fig: Figure, ax, dataset) -> None:
    """Covariance ellipses of the first two coordinates, centred at the mean, at several times."""
    times = dataset["time"].values
    # evenly spaced in time; before a blow-up stop short of it, where the ellipse is unbounded
    end = times[-1] if dataset.attrs.get("blowup_time", "none") == "none" else times[0] + 0.9 * (times[-1] - times[0])
    picks = np.unique(np.searchsorted(times, np.linspace(times[0], end, GAUSSIAN_ELLIPSES)).clip(0, times.size - 1))
    cmap = mpl.colormaps["viridis"]
    for index in picks:
        centre = dataset["mean"].values[index, :2]
        curve = _ellipse(dataset["covariance"].values[index, :2, :2])
        colour = cmap((times[index] - times[0]) / max(times[-1] - times[0], 1e-300))
        ax.plot(centre[0] + curve[0], centre[1] + curve[1], color=colour, lw=1.4)
        ax.plot(*centre, "o", color=colour, ms=3)
    mappable = mpl.cm.ScalarMappable(norm=mpl.colors.Normalize(times[0], times[-1]), cmap=cmap)
    fig.colorbar(mappable, ax=ax, label="time $t$", pad=0.02)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_title(r"(a) mean and 1-$\sigma$ covariance ellipses" + (" ($x_1, x_2$)" if dataset.sizes["i"] > 2 else ""))


def _eigenvalue_panel(ax, dataset) -> None:
    eigenvalues = np.linalg.eigvalsh(dataset["covariance"].values)
    ax.plot(dataset["time"].values, np.clip(eigenvalues, 1e-300, None), lw=1.5)
    ax.set_yscale("log")
    _time_axis(ax, dataset)
    ax.set_ylabel(r"eigenvalues of $\Sigma(t)$")
    ax.set_title("(b) covariance spectrum")
    blowup = dataset.attrs.get("blowup_time", "none")
    if blowup != "none":
        ax.axvline(float(blowup), color="r", ls="--", lw=1, label=f"blow-up $t^*$ = {float(blowup):.4g}")
        ax.legend(fontsize="small")


def _mean_panel(ax, dataset) -> None:
    ax.plot(dataset["time"].values, dataset["mean"].values, lw=1.5)
    _time_axis(ax, dataset)
    ax.set_ylabel(r"mean $\alpha_i(t)$")
    ax.set_title("(c) mean")


def _gaussian_figure(dataset, modes=None) -> Figure:
    """Castin et al.'s picture (MATH.md §3): ellipses in the plane, covariance spectrum, mean."""
    fig = Figure(figsize=(16, 5), layout="constrained")
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.15, 1, 1]})
    _ellipses_panel(fig, axes[0], dataset)
    _eigenvalue_panel(axes[1], dataset)
    _mean_panel(axes[2], dataset)
    return fig


def _gaussian_title(dataset) -> str:
    attrs = dataset.attrs
    title = (f"Gaussian tokens in $R^{{{dataset.sizes['i']}}}$, {attrs.get('attention')} attention"
             f"{', case ' + str(attrs['case']) if 'case' in attrs else ''}")
    reason = str(attrs.get("stop_reason", "completed"))
    return title if reason == "completed" else f"{title}\nstopped: {_short_reason(reason)}"


def plot_run(dataset, path=None, modes=None) -> Figure:
    """The standard figure of a run, chosen by its ``geometry`` attribute; saved to ``path`` if given.

    Circle, zonal and particle runs get three panels in a row; sphere runs get a row of
    equal-area density maps above the energy and degree-amplitude panels.  ``modes``: the
    Fourier modes / degrees of panel (c), default ``1 .. max(6, 2 k*)``.  Other geometries
    raise :class:`InputError`.
    """
    _check_plottable(dataset)
    builders = {"sphere": _sphere_figure, "gaussian": _gaussian_figure}
    fig = builders.get(dataset.attrs["geometry"], _row_figure)(dataset, modes)
    fig.suptitle(_gaussian_title(dataset) if dataset.attrs["geometry"] == "gaussian" else _title(dataset))
    if path is not None:
        _save(fig, path)
    return fig
