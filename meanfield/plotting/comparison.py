"""The figure of ``meanfield compare``: the distance between two runs against time (:mod:`meanfield.run_comparison`).

One curve, the distance on a log scale (a value of exactly 0, two runs that coincide at a time, is left out of the
log axis; when every value is 0 the axis is linear), against the common times (a log time axis when both runs were
saved on one); the title names the distance and both runs (file, scheme or particles, resolution or n).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..app.storage import write_atomic
from ..geometries import geometry_of
from .style import DPI, time_axis


def distance_label(comparison) -> str:
    """The y label: ``W_1(A_t, B_t)`` or ``||A_t - B_t||_{H^-s}`` with its degrees."""
    attrs = comparison.attrs
    if attrs["metric"] == "w1":
        return r"$W_1(\mu^A_t, \mu^B_t)$"
    word = geometry_of(attrs["geometry"]).mode_word
    return rf"$\|\mu^A_t - \mu^B_t\|_{{H^{{-{float(attrs['s']):g}}}}}$ ({word}s 1 .. {int(attrs['lmax'])})"


def comparison_title(comparison) -> str:
    """The distance and where, then one line per run: ``A: file (description)``."""
    attrs = comparison.attrs
    where = "on the circle" if geometry_of(attrs["geometry"]).fourier else \
        f"on $S^{{{int(attrs['dim']) - 1}}}$" + (" (zonal parts)" if "note" in attrs else "")
    name = "Wasserstein-1 distance" if attrs["metric"] == "w1" else \
        f"$H^{{-{float(attrs['s']):g}}}$ distance"
    return (f"{name} between two runs {where}\nA: {attrs['first_file']}  ({attrs['first_description']})\n"
            f"B: {attrs['second_file']}  ({attrs['second_description']})")


def plot_comparison(comparison, path=None) -> Figure:
    """The distance of :func:`meanfield.run_comparison.compare_runs` against time; saved to ``path`` if given
    (written through a temporary file renamed into place)."""
    values = np.asarray(comparison["distance"].values, dtype=float)
    fig = Figure(figsize=(8.0, 5.4), layout="constrained")
    ax = fig.subplots()
    positive = np.isfinite(values) & (values > 0)
    ax.plot(comparison["time"].values, np.where(positive, values, np.nan), "o-", color="k", ms=3.5, lw=1.4,
            clip_on=False)                       # the first and last markers sit on the time axis's ends
    if positive.any():
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "the runs coincide at every common time", transform=ax.transAxes, ha="center")
    time_axis(ax, comparison)
    ax.set_ylabel(distance_label(comparison))
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(comparison_title(comparison), fontsize="medium", loc="left")
    if path is not None:
        write_atomic(path, lambda temporary: fig.savefig(temporary, dpi=DPI))
    return fig
