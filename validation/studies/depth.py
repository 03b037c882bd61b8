"""Study: depth, the network before its continuous limit (MATH.md §11, §12).

``meanfield validate depth [--quick]``.  The study is the list :data:`ITEMS`, built from the modules of
:mod:`.depth_items` (whose docstring describes each item); each :class:`~.depth_items.Item` computes its part of the
Dataset, draws one panel of ``depth.png``, states its claims and writes its lines of the table, so that adding a part
is adding one item:

- items 1 and 2, the layers' linear theory (the per-layer growth ``g_l = 1 + alpha lambda_l / (1 + alpha c_0)``)
  and ``L`` layers against the flow (:mod:`.depth_items.layers`);
- items 3 and 4, hardmax at finite beta and with ``A = I`` (:mod:`.depth_items.hardmax`);
- items 5, 6 and 7, the R^d reference loop, the polytope of ``V = I`` and the hyperplanes of a simple positive top
  eigenvalue (:mod:`.depth_items.rd`);
- item 8, Gaussian data through layers (:mod:`.depth_items.gaussian`);
- item 9, random per-layer weights (:mod:`.depth_items.random_weights`);
- item 10, densities through a layer, spectral and finite volume (:mod:`.depth_items.densities`).

``--beta`` reaches items 1, 2 and 10, ``--n`` item 2, ``--seed`` items 2, 3, 4 and the Gaussian draw of item 8
(``meanfield gaussian --case random``, scaled).

Writes ``depth.nc`` (every item's variables, one Dataset) and ``depth.png`` (one panel per item).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield.errors import require
from meanfield.solvers.runs.gaussian_layer_checks import SEEDS, SIZES

from ..claims import Check
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..registry import STUDIES
from .depth_items import densities, gaussian, hardmax, layers, random_weights, rd

FULL = {"beta": 4.0, "usa_beta": 1.0, "alphas": (0.1, 1.0), "nodes": 4096, "nlat": 32, "max_degree": 8,
        "growth_layers": 3, "n": 256, "final": 2.0, "layer_counts": (8, 16, 32, 64, 128, 256), "coarsest": 256,
        "seed": 11, "hardmax_exponents": (4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0), "vertices": 6, "delta": 1e-2,
        "psd_vertices": 7, "psd_tokens": 40, "psd_final": 6.0, "rd_final": 2.0, "rd_steps": 5,
        "gaussian_sizes": SIZES, "gaussian_draws": SEEDS, "random_counts": (16, 32, 64, 128, 256), "random_seeds": 24,
        "circle_resolution": 128, "sphere_resolution": 16, "fv_cells": (512, 1024)}
QUICK = dict(FULL, n=64, hardmax_exponents=(5.0, 7.5, 10.0), gaussian_sizes=SIZES[:4], gaussian_draws=(64, 32, 16, 8),
             random_seeds=12)
#: The bounds of ``--beta`` (the S^2 grid's Gauss–Legendre rule integrates the kernel exactly to it) and ``--n``.
MAX_BETA, MAX_N = 12.0, 1024


#: The study, item by item (one panel, its claims and its lines each).
ITEMS = layers.ITEMS + hardmax.ITEMS + rd.ITEMS + gaussian.ITEMS + random_weights.ITEMS + densities.ITEMS


# --------------------------------------------------------------------------------------------- running
def _preset(quick: bool, beta, n, seed) -> dict:
    preset = dict(QUICK if quick else FULL)
    if beta is not None:
        require(math.isfinite(beta) and 0 < beta <= MAX_BETA, f"--beta must be in (0, {MAX_BETA:g}] for this study "
                                                               f"(got {beta:g})")
        preset["beta"] = float(beta)
    if n is not None:
        require(int(n) == n and 2 <= n <= MAX_N, f"--n must be an integer in [2, {MAX_N}] for this study (got {n:g})")
        preset["n"] = int(n)
    if seed is not None:
        preset["seed"] = int(seed)
    return preset


def run_study(quick: bool = False, out_dir="depth-study", beta: float | None = None, n: int | None = None,
              seed: int | None = None) -> xr.Dataset:
    """Every item of :data:`ITEMS`; writes ``depth.nc`` and ``depth.png``.  ``beta``: of the linear theory (SA and USA)
    and of the SA flow cases; ``n``: the flow cases' tokens; ``seed``: their draw and the hardmax polygons'."""
    preset = _preset(quick, beta, n, seed)
    start = time.perf_counter()
    parts = []
    with progress_bar(len(ITEMS), "depth") as bar:
        for item in ITEMS:
            parts.append(item.compute(preset))
            bar.update()
    given = {"beta": None if beta is None else f"{beta:g}", "n": None if n is None else str(int(n)),
             "seed": None if seed is None else str(int(seed))}
    table = xr.merge(parts, combine_attrs="drop_conflicts")
    table.attrs.update({"study": "depth", "quick": int(quick), "wall_time": time.perf_counter() - start,
                        "command": STUDIES["depth"].command(quick, out_dir, given),
                        **{f"preset_{key}": np.asarray(value) if isinstance(value, tuple) else value
                           for key, value in preset.items()}})
    write_dataset(table, Path(out_dir) / "depth.nc")
    plot_study(table, Path(out_dir) / "depth.png")
    return table


def format_table(table: xr.Dataset) -> str:
    """Every item's lines, in the order of :data:`ITEMS`."""
    return "\n".join(line for item in ITEMS for line in item.lines(table))


def plot_study(table: xr.Dataset, path) -> Path:
    """One panel per item of :data:`ITEMS`."""
    from matplotlib.figure import Figure

    columns = 2 if len(ITEMS) <= 4 else 3
    rows = math.ceil(len(ITEMS) / columns)
    fig = Figure(figsize=(7.5 * columns, 6.4 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns)).ravel()
    for item, ax in zip(ITEMS, axes):
        item.plot(ax, table)
    for ax in axes[len(ITEMS):]:
        ax.set_axis_off()
    return save_figure(fig, path)


def depth_claims(table: xr.Dataset) -> list[Check]:
    """Every item's claims, in the order of :data:`ITEMS`."""
    return [check for item in ITEMS for check in item.claims(table)]


def main(argv=None) -> xr.Dataset:
    return study_main(argv, __doc__.splitlines()[0], "depth-study", run_study, format_table, "depth")


if __name__ == "__main__":  # pragma: no cover
    main()
