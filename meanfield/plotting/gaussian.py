"""The figure of a Gaussian run: Castin et al.'s moment ODEs (MATH.md §3; :mod:`meanfield.gaussian`).

:func:`gaussian_figure` draws (a) the mean and 1-sigma covariance ellipse in the (x_1, x_2) plane at
several times (tokens in R^1: the Gaussian density itself, :func:`gaussian_profile`), (b) the
covariance spectrum and (c) the mean against time, with the blow-up time where there is one;
:func:`gaussian_title` is its title.  The movie draws the same ellipses (:func:`covariance_ellipse`)
up to the same time (:func:`gaussian_end`).
"""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from .run_data import short_reason
from .style import outside_legend, time_axis

#: Covariance ellipses drawn in the Gaussian figure.
GAUSSIAN_ELLIPSES = 8
#: Coordinates listed one by one in the Gaussian figure's legends (more are drawn unlabelled).
GAUSSIAN_LABELLED = 10
#: The x label of the Gaussian figure's time axes.
GAUSSIAN_TIME = "time $t$ (dimensionless)"
#: Eigenvalues below this multiple of the largest are rounding noise (a collapsed direction): not drawn.
EIGENVALUE_FLOOR = 1e-14


def covariance_ellipse(covariance: np.ndarray, points: int = 120) -> np.ndarray:
    """The 1-sigma ellipse ``{Sigma^{1/2} u : |u| = 1}`` of a 2 x 2 covariance, shape (2, points)."""
    values, vectors = np.linalg.eigh(covariance)
    angle = np.linspace(0.0, 2 * math.pi, points)
    return vectors @ (np.sqrt(np.clip(values, 0.0, None))[:, None] * np.stack((np.cos(angle), np.sin(angle))))


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
        curve = covariance_ellipse(dataset["covariance"].values[index, :2, :2])
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


def _eigenvalue_panel(ax, dataset) -> None:
    eigenvalues = np.linalg.eigvalsh(dataset["covariance"].values)
    floor = EIGENVALUE_FLOOR * np.max(np.abs(eigenvalues), axis=-1, keepdims=True)
    resolved = np.where(eigenvalues > floor, eigenvalues, np.nan)
    _labelled_lines(ax, dataset["time"].values, resolved, r"\lambda")
    ax.set_yscale("log")
    time_axis(ax, dataset)
    ax.set_xlabel(GAUSSIAN_TIME)
    ax.set_ylabel(r"eigenvalues $\lambda_1 \leq \lambda_2 \leq \dots$ of $\Sigma(t)$")
    ax.set_title(r"(b) covariance spectrum" + (f" ($\\lambda$ < {EIGENVALUE_FLOOR:g} $\\lambda_{{max}}$: rounding, not drawn)"
                                               if np.isnan(resolved).any() else ""))
    _blowup_line(ax, dataset)
    outside_legend(ax)


def _mean_panel(ax, dataset) -> None:
    _labelled_lines(ax, dataset["time"].values, dataset["mean"].values, r"\alpha")
    time_axis(ax, dataset)
    ax.set_xlabel(GAUSSIAN_TIME)
    ax.set_ylabel(r"mean $\alpha_i(t)$ (token coordinates)")
    ax.set_title(r"(c) mean $\alpha(t)$")
    _blowup_line(ax, dataset)
    outside_legend(ax)


def gaussian_figure(dataset, modes=None) -> Figure:
    """Castin et al.'s picture (MATH.md §3): ellipses in the plane, covariance spectrum, mean."""
    fig = Figure(figsize=(18, 5.2), layout="constrained")
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.15, 1, 1]})
    _ellipses_panel(fig, axes[0], dataset)
    _eigenvalue_panel(axes[1], dataset)
    _mean_panel(axes[2], dataset)
    return fig


def gaussian_title(dataset) -> str:
    """The title of a Gaussian run: dimension, attention, Sinkhorn epsilon, scaling, case, seed, and why it stopped."""
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
    source = ("Castin et al. moment ODEs, MATH.md §3" if "layer" not in dataset.coords else
              f"{int(attrs['layers'])} residual layers of step {float(attrs['alpha']):g}, exact moment map, MATH.md §3.1")
    title = (f"Gaussian tokens in $R^{{{dataset.sizes['i']}}}$, mean $\\alpha$ and covariance $\\Sigma$ "
             f"({source}):  " + ",  ".join(details))
    reason = str(attrs.get("stop_reason", "completed"))
    return title if reason == "completed" else f"{title}\nstopped: {short_reason(reason)}"
