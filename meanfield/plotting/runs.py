"""The standard figure of a run (DESIGN.md data contract in, one PNG out).

:func:`plot_run` draws, for a circle run,

(a) the density as a space-time heat map of its deviation from the uniform state,
    ``rho / rho_bar - 1`` with ``rho_bar = mass / |S^{d-1}|`` (MATH.md §2), on a symmetric
    logarithmic colour scale (:func:`~meanfield.plotting.style.deviation_norm`): linear within a tenth of the first
    frame's largest deviation, logarithmic beyond, so the perturbation of size 1e-3 growing like
    ``exp(lambda_k t)`` before formation and the clusters (deviations of 10-1000) after it are
    both visible (a log scale of ``rho`` itself shows only the clusters); particle runs: the
    histogram of token angles on the same scale (d = 2), the distribution of pairwise inner
    products on a log scale (d >= 3) (:mod:`meanfield.plotting.particles`);
(b) the scaled interaction energy ``exp(-beta) E`` against time (MATH.md §2: it
    increases for ``nu = 0``);
(c) the Fourier amplitudes ``|rho_hat_k|`` on a log axis, each overlaid with the
    linear theory of MATH.md §2.3, ``|rho_hat_k(0)| exp(lambda_k t)`` (dashed, same
    colour), which :func:`~meanfield.plotting.run_data.theory_curves` returns as numbers.

Runs saved on a log time axis (``--save-log``) are drawn against ``log t`` (the frame at
``t = 0`` is left out of those axes); runs that track clusters (:mod:`meanfield.solvers.tracking.clusters`) add the
point-cluster energy of every plateau (dashed) and the merge times (dotted) to panel (b).

Sphere runs draw equal-area maps of the same deviation at a few times; Lagrangian sphere runs
draw their nodes instead, grouped where they coincide (:func:`~meanfield.plotting.sphere.node_groups`), each group
a marker whose area is proportional to its mass, so clusters are visible however small they are.
Gaussian runs get :func:`~meanfield.plotting.gaussian.gaussian_figure`, causal kinetic runs
:func:`~meanfield.plotting.causal.causal_figure`, token runs in R^d (hardmax, rescaled tokens) the figure
:data:`~meanfield.plotting.tokens.TOKEN_FIGURES` holds for their geometry.
Legends sit outside the axes, never over a curve.

A dataset without what its figure needs raises :class:`InputError` naming the variable.

Only the object-oriented matplotlib API is used (no ``pyplot`` state), so this
works under the Agg backend, in scripts and in threads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..errors import InputError
from ..geometries import run_geometry
from ..normalization import LABELS, Normalization
from ..app.storage import check_output_file, image_suffixes, write_atomic
from .causal import causal_figure, is_causal
from .gaussian import gaussian_figure, gaussian_title
from .particles import clustered_fraction_panel, inner_product_panel, token_histogram_panel
from .run_data import (check_plottable, checked_modes, observed_amplitudes, run_dominant_mode, short_reason,
                       theory_curves)
from .sphere import sphere_maps
from .tokens import TOKEN_FIGURES, token_title
from .style import (ANGLE_AXES, ANGLE_SYMBOLS, DPI, deviation_heat_map, legend_below, log_time_axis, mean_density,
                    mode_colours, outside_legend, positive_values, time_axis)

#: Theory lines stop where they exceed this multiple of the largest observed amplitude.
THEORY_CEILING = 10.0


def _density_panel(fig: Figure, ax, dataset, shape) -> None:
    """The density of a one-axis geometry (circle: theta; zonal: polar angle) relative to uniform over time."""
    axis = shape.axis
    deviation_heat_map(fig, ax, dataset[axis].values, dataset["time"].values, dataset["density"].values,
                       mean_density(dataset), log=log_time_axis(dataset))
    ANGLE_AXES[axis](ax)
    ax.set_title(f"(a) {shape.title_word or 'density'} relative to uniform, "
                 rf"$\rho(t,{ANGLE_SYMBOLS[axis]})/\bar\rho - 1$")


def _energy_panel(ax, dataset) -> None:
    ax.plot(dataset["time"].values, dataset["energy"].values, color="k", lw=1.5, label="run")
    if "cluster_energy" in dataset:
        ax.plot(dataset["time"].values, dataset["cluster_energy"].values, color="tab:orange", lw=1.2, ls="--",
                label="clusters as points (MATH.md §5)")
    for index, time in enumerate(dataset["merge_time"].values if "merge_time" in dataset else []):
        ax.axvline(float(time), color="tab:blue", lw=0.8, ls=":", label="merges" if index == 0 else None)
    time_axis(ax, dataset)
    ax.set_ylabel(r"$e^{-\beta} E(\rho)$")
    ax.set_title("(b) scaled interaction energy")
    if "cluster_energy" in dataset or "merge_time" in dataset and dataset.sizes.get("merge", 0):
        legend_below(ax)


def _clipped(curve: np.ndarray, ceiling: float) -> np.ndarray:
    return np.where(curve <= ceiling, curve, np.nan)


def _mode_names(dataset) -> tuple[str, str, str]:
    """(index symbol, amplitude symbol, panel title): Fourier modes on the circle, degrees on S^{d-1}."""
    shape = run_geometry(dataset.attrs)
    if shape is not None and not shape.fourier:
        return r"\ell", r"a_\ell", "degree amplitudes"
    return "k", r"|\hat\rho_k|", "Fourier modes"


def masked(attrs) -> bool:
    """Whether the run's tokens attend through a mask (causal, MATH.md §8): the whole-sequence linear theory
    ``e^{lambda_k t}`` of MATH.md §2.3 does not describe its modes (the causal theory is per position)."""
    return str(attrs.get("mask", "none")) not in ("none", "")


def mask_label(attrs) -> str:
    """``",  causal mask"`` (with ALiBi's slope when it has one) for a masked run, else nothing."""
    if not masked(attrs):
        return ""
    slope = float(attrs.get("alibi", 0.0) or 0.0)
    return f",  {attrs['mask']} mask" + (f" (ALiBi m = {slope:g})" if slope else "")


def layers_label(dataset) -> str:
    """``",  40 Post-LN layers of step 0.5"`` for a layered run (MATH.md §11; its normalisation's name), else
    nothing."""
    if "layer" not in dataset.coords:
        return ""
    scheme = LABELS[str(dataset.attrs.get("normalization", "post"))]
    return f",  {int(dataset['layer'].values[-1])} {scheme} layers of step {float(dataset.attrs['dt_max']):g}"


def _modes_panel(ax, dataset, modes) -> None:
    times = dataset["time"].values
    observed = observed_amplitudes(dataset, modes)
    visible = positive_values(observed, f"mode_amplitude of modes {modes}")
    ceiling = THEORY_CEILING * float(visible.max())
    theory = None if masked(dataset.attrs) else theory_curves(dataset, modes)
    k_star = None if theory is None else run_dominant_mode(dataset)
    colours = mode_colours(len(modes))
    index, amplitude, name = _mode_names(dataset)
    for column, (k, colour) in enumerate(zip(modes, colours)):
        width = 2.8 if k == k_star else 1.2
        label = f"${index}={k}$" + (f" (${index}^*$)" if k == k_star else "")
        ax.plot(times, np.where(observed[:, column] > 0, observed[:, column], np.nan),
                color=colour, lw=width, label=label)
        if theory is not None:
            ax.plot(times, _clipped(theory[:, column], ceiling), color=colour, lw=width * 0.7, ls="--")
    ax.set_yscale("log")
    ax.set_ylim(0.5 * float(visible.min()), ceiling)
    time_axis(ax, dataset)
    ax.set_ylabel(f"${amplitude}(t)$")
    handles, labels = ax.get_legend_handles_labels()
    if theory is None:
        ax.set_title(f"(c) {name} (causal: the linear theory is per position,\nMATH.md §8; see solve --mask causal)",
                     fontsize="medium")
    else:
        ax.set_title(f"(c) {name} vs linear theory (dashed)")
        handles.append(Line2D([], [], color="grey", ls="--", lw=1.2))
        labels.append(f"${amplitude}(0)\\,g_{index}^{{t/\\alpha}}$ (layers, MATH.md §11)" if "layer" in dataset.coords
                      else f"${amplitude}(0)\\,e^{{\\lambda_{index} t}}$")
    outside_legend(ax, handles, labels)


def normalization_label(attrs) -> str:
    """``",  Pre-LN (r0 = 1.5)"`` for a run under a normalisation scheme other than Post-LN (MATH.md §6)."""
    name = str(attrs.get("normalization", "post"))
    if name == "post":
        return ""
    used = [key for key, value in Normalization(name).options().items() if key != "normalization" and value is not None]
    values = ", ".join(f"{key.replace('mix_switch', 'tau')} = {float(attrs[key]):g}" for key in used if key in attrs)
    return f",  {LABELS[name]}" + (f" ({values})" if values else "")


def _title(dataset) -> str:
    attrs = dataset.attrs
    where = "on the circle" if int(attrs.get("dim", 2)) == 2 else f"on $S^{{{int(attrs['dim']) - 1}}}$"
    if attrs.get("geometry") == "particles":
        where = f"{attrs.get('n', '')} tokens " + where
    elif getattr(shape := run_geometry(attrs), "title_word", ""):
        where = f"{shape.title_word} " + where
    noise = f"$\\nu$ = {float(attrs['nu']):g}" if "nu_schedule" not in attrs else \
        f"$\\nu(t)$: {attrs['nu_schedule']}"     # a noise schedule (meanfield.noise_schedule)
    title = (f"{str(attrs['attention']).upper()} {where}:  $\\beta$ = {float(attrs['beta']):g},  "
             f"{noise},  init {attrs.get('init', '?')}{normalization_label(attrs)}{mask_label(attrs)}"
             f"{layers_label(dataset)}"
             f"{_cluster_label(dataset)}")
    reason = str(attrs.get("stop_reason", "completed"))
    return title if reason == "completed" else f"{title}\nstopped early: {short_reason(reason)}"


def _cluster_label(dataset) -> str:
    """``, K clusters at the end`` by the package's one definition (:mod:`meanfield.cluster_detection`), as the
    command line and ``cluster_count`` say; nothing for a file that cannot tell (an older S^2 file)."""
    from ..cluster_detection import clusters_in_frame

    try:
        count = clusters_in_frame(dataset).count
    except InputError:
        return ""
    return f",  {count} cluster{'' if count == 1 else 's'} at the end"


def run_title(dataset) -> str:
    """The figure title of a run: model, parameters, initial data, and why it stopped if it did."""
    return gaussian_title(dataset) if dataset.attrs.get("geometry") == "gaussian" else _title(dataset)


def check_image_path(path) -> Path:
    """``path`` ends in an image suffix matplotlib writes and its folder is writable (else one line)."""
    return check_output_file(path, "image path", image_suffixes())


def _save(fig: Figure, path) -> None:
    """Write through a temporary file renamed into place (:func:`meanfield.app.storage.write_atomic`)."""
    write_atomic(path, lambda temporary: fig.savefig(temporary, dpi=DPI))


def _row_figure(dataset, modes) -> Figure:
    """Circle, zonal and particle runs: (a) density heat map, (b) energy, (c) modes or clustering."""
    fig = Figure(figsize=(19, 5), layout="constrained")
    fig.get_layout_engine().set(w_pad=0.08, wspace=0.04)
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.15, 1, 1]})
    shape = run_geometry(dataset.attrs)
    if shape is not None:
        _density_panel(fig, axes[0], dataset, shape)
    elif "theta" in dataset:
        token_histogram_panel(fig, axes[0], dataset)
    else:
        inner_product_panel(fig, axes[0], dataset)
    _energy_panel(axes[1], dataset)
    if "mode_amplitude" in dataset:
        _modes_panel(axes[2], dataset, checked_modes(dataset, modes))
    else:
        clustered_fraction_panel(axes[2], dataset)
    return fig


def _sphere_figure(dataset, modes) -> Figure:
    """Sphere runs: (a) Mollweide maps of the density at a few times; (b) energy; (c) degree amplitudes."""
    fig = Figure(figsize=(16, 8.5), layout="constrained")
    maps, curves = fig.subfigures(2, 1, height_ratios=[0.62, 1])
    sphere_maps(maps, dataset)
    axes = curves.subplots(1, 2)
    _energy_panel(axes[0], dataset)
    _modes_panel(axes[1], dataset, checked_modes(dataset, modes))
    return fig


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
    shape = run_geometry(dataset.attrs)
    tokens = TOKEN_FIGURES.get(dataset.attrs["geometry"])       # tokens in R^d (meanfield.plotting.tokens)
    builder = (causal_figure if is_causal(dataset) else _sphere_figure if shape is not None and not shape.curve
               else gaussian_figure if dataset.attrs["geometry"] == "gaussian" else _row_figure)
    fig = builder(dataset, modes) if tokens is None else tokens(dataset)
    fig.suptitle(run_title(dataset) if tokens is None else token_title(dataset))
    if path is not None:
        _save(fig, path)
    return fig
