"""The panels of token runs in the standard figure (:func:`meanfield.plotting.runs.plot_run`).

Tokens on the circle: the weighted histogram of their angles relative to uniform, frame by frame
(:func:`token_histogram_panel`); tokens on S^{d-1}, d >= 3: the distribution of their pairwise inner
products (:func:`inner_product_panel`, :func:`pair_inner_products`).  Panel (c): the fraction of
clustered pairs, with the tokens' radii for a run under a normalisation scheme that carries them
(:func:`clustered_fraction_panel`).
"""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from .style import COLORMAP, density_norm, deviation_heat_map, log_time_axis, pool_columns, theta_axis, time_axis


def _heat_map(fig: Figure, ax, x, times, values, label: str, zero: str = r"$\leq 0$", log: bool = False) -> None:
    x, values = pool_columns(x, values)
    if log:
        times, values = times[times > 0], values[times > 0]
        ax.set_yscale("log")
    cmap = mpl.colormaps[COLORMAP].with_extremes(bad="white")
    mesh = ax.pcolormesh(x, times, values, shading="nearest", cmap=cmap, norm=density_norm(values),
                         rasterized=True)
    ax.set_ylabel("time $t$")
    label += r" (log scale)" + (f";  white: {zero}" if np.any(values <= 0) else "")
    fig.colorbar(mesh, ax=ax, label=label, extend="min", pad=0.02)


def token_histogram_panel(fig: Figure, ax, dataset, bins: int = 128) -> None:
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


def inner_product_panel(fig: Figure, ax, dataset, bins: int = 100) -> None:
    """Tokens on S^{d-1}: distribution of the pairwise inner products <x_i, x_j>, i != j, per frame."""
    edges = np.linspace(-1.0, 1.0, bins + 1)
    rows = [np.histogram(pair_inner_products(frame), edges, density=True)[0] for frame in dataset["positions"].values]
    _heat_map(fig, ax, 0.5 * (edges[1:] + edges[:-1]), dataset["time"].values, np.array(rows), "density", "empty",
              log=log_time_axis(dataset))
    ax.set_xlabel(r"$\langle x_i, x_j \rangle$")
    ax.set_title(f"(a) pairwise inner products (n = {dataset.sizes['particle']}, d = {dataset.attrs['dim']})")


def clustered_fraction_panel(ax, dataset, delta: float = 1e-3) -> None:
    """Panel (c) of token runs: the fraction of pairs with ``<x_i, x_j> >= 1 - delta`` against time, and the
    tokens' radii for a run that carries them."""
    fractions = [np.mean(pair_inner_products(frame) >= 1 - delta) for frame in dataset["positions"].values]
    ax.plot(dataset["time"].values, fractions, color="k", lw=1.5)
    time_axis(ax, dataset)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel(rf"fraction of pairs with $\langle x_i, x_j\rangle \geq 1 - {delta:g}$")
    ax.set_title("(c) clustered pairs")
    if "radius" in dataset:
        _radius_curve(ax, dataset)
        ax.set_title("(c) clustered pairs (black) and radii (orange)")


def _radius_curve(ax, dataset) -> None:
    """The tokens' mean radius (min to max shaded) on a right-hand axis, for runs that carry one."""
    radius, times = dataset["radius"].values, dataset["time"].values
    right = ax.twinx()
    right.fill_between(times, radius.min(axis=1), radius.max(axis=1), color="C1", alpha=0.25, lw=0)
    right.plot(times, radius.mean(axis=1), color="C1", lw=1.5)
    right.set_ylabel("token radius $r_j$ (mean; min to max shaded)", color="C1")
    right.tick_params(axis="y", colors="C1")
