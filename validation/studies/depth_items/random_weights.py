"""Item 9 of ``validate depth``: random per-layer weights against the homogenised flow (MATH.md §11)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from meanfield.model import Model
from meanfield.plotting.style import legend_below
from meanfield.solvers.runs.layer_checks import layer_errors
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.random_layer_checks import mean_square_order, random_weight_errors
from meanfield.solvers.schemes.particles import ParticleScheme

from ...claims import Check, close
from . import Item
from .layers import unit_tokens

#: The random weights' spread.
RANDOM_SIGMA = 0.5

#: The random weights' tokens, fixed (n, SA beta, seed; the tests' of random_layer_checks); four other draws fit
#: 0.469 .. 0.499 at 24 seeds each (MATH.md §11).
RANDOM_CASE = (64, 4.0, 5)


def random_compute(preset: dict) -> xr.Dataset:
    """Per-layer random ``V_l = I + sigma G_l / sqrt(d)`` (coupled across ``L``) against the homogenised flow of
    ``V = I``: the circle, SA, the fixed tokens of :data:`RANDOM_CASE`."""
    n, beta, seed = RANDOM_CASE
    x = unit_tokens(n, 2, seed)
    final, counts = preset["final"], preset["random_counts"]
    flow = simulate(dim=2, n=n, attention="sa", beta=beta, positions=x, t_final=final, save_every=final, rtol=1e-13,
                    collapse_tol=0).positions.values[-1]
    scheme = ParticleScheme(Model("sa", beta, 0.0, 2), n)
    errors = random_weight_errors(scheme, x, flow, final, counts, range(preset["random_seeds"]), RANDOM_SIGMA,
                                  coupled=True)
    return xr.Dataset({"random_error": (("random_seed", "random_layers"), errors),
                       "random_fixed_error": ("random_layers", layer_errors(scheme, x, flow, final, counts)),
                       "random_order": mean_square_order(counts, errors)},
                      coords={"random_layers": list(counts)})


def random_plot(ax, table: xr.Dataset) -> None:
    counts = table.random_layers.values
    for row in table.random_error.values:
        ax.loglog(counts, row, "-", color="0.75", lw=0.7)
    rms = np.sqrt(np.mean(table.random_error.values ** 2, axis=0))
    ax.loglog(counts, rms, "o-", color="C0", label=f"random V_l: RMS over seeds, order {float(table.random_order):.3f}")
    ax.loglog(counts, rms[-1] * np.sqrt(counts[-1] / counts), "k--", lw=0.8, label=r"$L^{-1/2}$")
    ax.loglog(counts, table.random_fixed_error, "s-", color="C1", label="fixed V = I")
    ax.set(xlabel="layers L (step T / L)", ylabel=r"$(\mathrm{mean}_j |x_j^L - x_j(T)|^2)^{1/2}$",
           title=f"9. random per-layer weights (sigma = {RANDOM_SIGMA:g}) vs the homogenised flow")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, ncol=1)


def random_claims(table: xr.Dataset) -> list[Check]:
    return [close("Random per-layer weights: the RMS error against the homogenised flow (V = E V_l = I) falls at "
                  "order 1/2 in L", 0.5, table.random_order, 0.1,
                  source="theory: the weights' fluctuations add up to O(sigma T / sqrt(L)) (MATH.md §11); 0.1 the "
                         "spread over blocks of 12 seeds (measured 0.483 .. 0.507 for these tokens)")]


def random_lines(table: xr.Dataset) -> list[str]:
    return [f"9. random V_l (sigma = {RANDOM_SIGMA:g}, {table.sizes['random_seed']} seeds): order of the RMS "
            f"{float(table.random_order):.3f}"]


ITEMS = (Item("random", random_compute, random_plot, random_claims, random_lines),)
