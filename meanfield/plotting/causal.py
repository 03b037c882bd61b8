"""The standard figure of a causal kinetic run ``f(t, s, x)`` (MATH.md §8; :func:`meanfield.plot_run` draws it
for any run whose density has a position axis ``s``).

(a) the last frame over (direction, position): ``f / f_bar - 1`` as a heat map with ``s`` upwards (circle:
    the angle; zonal: the polar angle), on the symmetric log scale of the ordinary figure; on S^2 the degree
    amplitudes over (degree, position) on a log scale;
(b) per-slice profiles of the last frame at a few positions (circle, zonal: the density; S^2: the degree
    amplitudes);
(c) the leading mode's amplitude (the largest in the last frame) against time at the same positions (log scale), each with the ordinary
    linear theory of its slice's start, ``|u(0)| exp(lambda_k t)`` (dashed): exact at ``s = 0``, which solves the
    ordinary PDE (MATH.md §8), while later positions lag or lead by the positional average.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..geometries import run_geometry
from ..geometry import sphere_area
from ..theory import growth_rates
from .run_data import run_model
from .style import ANGLE_AXES, deviation_heat_map, mode_colours, outside_legend, positive_values

#: The positions drawn in panels (b) and (c) (the nearest of the run's grid).
SHOWN_POSITIONS = (0.0, 0.25, 0.5, 0.75, 1.0)


def is_causal(dataset) -> bool:
    """Whether ``dataset`` is a causal kinetic run (its density has a position axis ``s``)."""
    return "density" in dataset and "s" in dataset["density"].dims


def shown_positions(dataset) -> list[int]:
    """Indices of the grid positions nearest to :data:`SHOWN_POSITIONS`, without repeats."""
    s = dataset["s"].values
    return sorted({int(np.argmin(np.abs(s - target))) for target in SHOWN_POSITIONS})


def _direction(dataset) -> tuple[str, np.ndarray]:
    name = run_geometry(dataset.attrs).axis
    return name, dataset[name].values


def _slice_means(dataset) -> np.ndarray:
    """The uniform density of each slice's mass in the last frame."""
    return dataset["slice_mass"].isel(time=-1).values / sphere_area(int(dataset.attrs.get("dim", 2)))


def _position_map(fig: Figure, ax, dataset) -> None:
    s = dataset["s"].values
    if not run_geometry(dataset.attrs).curve:
        amplitudes = dataset["mode_amplitude"].isel(time=-1).values
        mesh = ax.pcolormesh(dataset["mode"].values, s, np.log10(np.maximum(amplitudes, 1e-300)), shading="nearest",
                             cmap="magma", vmin=float(np.log10(positive_values(amplitudes, "the degree amplitudes").max())) - 8,
                             rasterized=True)
        fig.colorbar(mesh, ax=ax, label=r"$\log_{10}$ degree amplitude", pad=0.02)
        ax.set_xlabel("degree $l$")
        ax.set_title("(a) degree amplitudes over position, last frame")
    else:
        name, x = _direction(dataset)
        deviation_heat_map(fig, ax, x, s, dataset["density"].isel(time=-1).values, _slice_means(dataset))
        ANGLE_AXES[name](ax)
        ax.set_title(r"(a) $f(t,s,\cdot)/\bar f - 1$ over position, last frame")
    ax.set_ylabel("token position $s$")


def _profiles(ax, dataset, shown) -> None:
    colours = mode_colours(len(shown))
    last = dataset.isel(time=-1)
    for index, colour in zip(shown, colours):
        label = f"$s = {float(dataset['s'][index]):.3g}$"
        if not run_geometry(dataset.attrs).curve:
            ax.semilogy(dataset["mode"].values, last["mode_amplitude"].isel(s=index).values, color=colour, label=label)
        else:
            name, x = _direction(dataset)
            ax.plot(x, last["density"].isel(s=index).values, color=colour, label=label)
    if not run_geometry(dataset.attrs).curve:
        ax.set_xlabel("degree $l$")
        ax.set_ylabel("degree amplitude")
    else:
        ANGLE_AXES[_direction(dataset)[0]](ax)
        ax.set_ylabel("density")
    ax.set_title(f"(b) per-slice profiles at t = {float(dataset['time'][-1]):.4g}")
    outside_legend(ax, *ax.get_legend_handles_labels())


def leading_mode(dataset) -> int:
    """The mode (degree >= 1) of largest amplitude over all positions in the last frame."""
    last = dataset["mode_amplitude"].isel(time=-1).sel(mode=dataset["mode"].values[1:])
    return int(last["mode"].values[int(np.argmax(last.max("s").values))])


def _dominant_amplitudes(ax, dataset, shown) -> None:
    mode = leading_mode(dataset)
    times = dataset["time"].values
    rate = float(growth_rates(run_model(dataset), [mode])[0])
    amplitudes = dataset["mode_amplitude"].sel(mode=mode).values
    for index, colour in zip(shown, mode_colours(len(shown))):
        curve = amplitudes[:, index]
        ax.plot(times, np.where(curve > 0, curve, np.nan), color=colour, label=f"$s = {float(dataset['s'][index]):.3g}$")
        with np.errstate(over="ignore"):
            theory = curve[0] * np.exp(rate * (times - times[0]))
        ax.plot(times, np.where(theory <= 10 * np.nanmax(amplitudes), theory, np.nan), color=colour, ls="--", lw=0.9)
    ax.set_yscale("log")
    ax.set_xlabel("time $t$")
    ax.set_ylabel(f"amplitude of mode {mode}")
    ax.set_title(f"(c) mode {mode} per position; dashed: ordinary linear theory")
    outside_legend(ax, *ax.get_legend_handles_labels())


def causal_figure(dataset, modes=None) -> Figure:
    """The figure of the module docstring (``modes`` is not used: panel (c) follows the leading mode)."""
    fig = Figure(figsize=(19, 5), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.08, wspace=0.04)
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.15, 1, 1]})
    shown = shown_positions(dataset)
    _position_map(fig, axes[0], dataset)
    _profiles(axes[1], dataset, shown)
    _dominant_amplitudes(axes[2], dataset, shown)
    return fig
