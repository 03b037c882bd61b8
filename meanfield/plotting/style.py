"""The look shared by the run figures, the movies and the validation studies' figures.

* resolution and colours: :data:`DPI`, :data:`COLORMAP` (log-scale heat maps, :func:`density_norm`),
  :data:`DEVIATION_COLORMAP`, :func:`mode_colours`;
* the symmetric logarithmic scale of the deviation from the uniform state, ``rho / rho_bar - 1``
  with ``rho_bar = mass / |S^{d-1}|`` (MATH.md §2; :func:`mean_density`, :func:`relative_deviation`): linear
  within :func:`linear_range` of zero, logarithmic beyond (:func:`symlog`), white at 0 (:func:`deviation_norm`),
  labelled at powers of ten (:func:`deviation_colorbar`), and the space-time :func:`deviation_heat_map`;
* axes: :func:`theta_axis`, :func:`polar_axis`, :func:`time_axis` (a log time axis for runs saved with
  ``--save-log``, :func:`log_time_axis`);
* legends that never cover a curve: :func:`outside_legend` (right of the axes) and :func:`legend_below`.

It imports nothing else from :mod:`meanfield.plotting`.  Only the object-oriented matplotlib API is used
(no ``pyplot`` state).
"""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
from matplotlib.colors import LogNorm, TwoSlopeNorm
from matplotlib.figure import Figure

from ..errors import require
from ..geometry import sphere_area

#: Resolution (dots per inch) of the saved figures and of the studies' figures.
DPI = 130
#: Colour map of the log-scale heat maps (:func:`density_norm`).
COLORMAP = "magma"
#: The log colour scale of the inner-product panel (tokens, d >= 3) spans at most this many decades.
DENSITY_DECADES = 4
#: Colour map of ``rho / rho_bar - 1``: blue below the uniform density, white at it, red above.
DEVIATION_COLORMAP = "RdBu_r"
#: Heat maps draw at most this many columns (about the figure's pixel width).
HEAT_MAP_COLUMNS = 256
#: The deviation scale is linear within +-(this x the first frame's largest deviation) ...
LINEAR_FRACTION = 0.1
#: ... kept within these bounds (a uniform start has no deviation; a clustered one a large one).
LINEAR_RANGE = (1e-12, 0.1)
#: At most this many labelled decades on each side of the deviation colour bar.
DEVIATION_TICKS = 4


def positive_values(values: np.ndarray, what: str) -> np.ndarray:
    """The positive finite entries of ``values``; one line naming ``what`` if there is none (a log scale needs one)."""
    positive = values[np.isfinite(values) & (values > 0)]
    require(positive.size > 0, f"plot: {what} has no positive finite value to draw on a log scale")
    return positive


def density_norm(density: np.ndarray) -> LogNorm:
    """Log colour scale of ``density``: its largest value down at most :data:`DENSITY_DECADES` decades."""
    positive = positive_values(density, "the density")
    top = float(positive.max())
    floor = max(float(positive.min()), top * 10.0 ** -DENSITY_DECADES)
    return LogNorm(vmin=min(floor, top / 10.0), vmax=top)


def mode_colours(count: int) -> list:
    """``count`` distinct colours (``tab10``, beyond ten ``tab20``), one per mode or position drawn."""
    palette = mpl.colormaps["tab10" if count <= 10 else "tab20"]
    return [palette(i % palette.N) for i in range(count)]


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


def _angle_axis(ax, top: float, ticks: list[str], label: str) -> None:
    ax.set_xlim(0.0, top)
    ax.set_xticks(np.linspace(0.0, top, len(ticks)))
    ax.set_xticklabels(ticks)
    ax.set_xlabel(label)


def theta_axis(ax) -> None:
    _angle_axis(ax, 2.0 * math.pi, ["0", r"$\pi/2$", r"$\pi$", r"$3\pi/2$", r"$2\pi$"], r"$\theta$")


def polar_axis(ax) -> None:
    _angle_axis(ax, math.pi, ["0", r"$\pi/4$", r"$\pi/2$", r"$3\pi/4$", r"$\pi$"], r"polar angle $\vartheta$")


#: The x axis of a one-axis density, by the geometry's coordinate (:attr:`meanfield.geometries.Geometry.axis`), and
#: the coordinate's symbol.
ANGLE_AXES = {"theta": theta_axis, "polar": polar_axis}
ANGLE_SYMBOLS = {"theta": r"\theta", "polar": r"\vartheta"}


def log_time_axis(dataset) -> bool:
    """Whether the run was saved on a log time axis (``save_log`` attribute)."""
    return str(dataset.attrs.get("save_log", "none")) != "none"


def time_axis(ax, dataset) -> None:
    """The x axis of ``ax`` as the run's time, with a grid (a log scale without ``t = 0`` for a run saved on a
    log time axis)."""
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
