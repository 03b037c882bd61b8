"""Items 5, 6 and 7 of ``validate depth``: tokens in R^d (MATH.md §12.1)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.spatial import ConvexHull

from meanfield.plotting.style import legend_below
from meanfield.rd_tokens import (PAPER_VALUE_MATRICES, equal_norm_polytope, rd_limit_sets, rd_reference_convergence,
                                 top_eigenpair)

from ...claims import Check, at_least, below, close, equal, fraction
from . import Item

#: The R^d items' inputs (fixed; the tests' of meanfield/rd_tokens.py): the reference loop's tokens and the polygons'
#: seed, the heptagon's vertices and inner tokens, the horizons of the polytope and (times 1 / lambda_1) hyperplanes.
RD_SEED, RD_VERTICES, RD_INSIDE, RD_POLYTOPE_TIME, RD_HYPERPLANE_TIME = 1, 7, 13, 30.0, 26.0
RD_ORDER_TOLERANCE = 0.1


def _rd_start(seed: int, low: float, high: float) -> np.ndarray:
    """20 tokens uniform in ``[low, high]^2`` (the reference scripts' draw, seeded)."""
    return np.random.default_rng(seed).uniform(low, high, (20, 2))


def rd_reference_compute(preset: dict) -> xr.Dataset:
    """The reference loop of clustering-Tformers.py (RK4 stages, attention frozen over each step;
    :func:`meanfield.rd_tokens.frozen_attention_steps`) against the package's rescaled tokens at ``T``: errors against
    ``dt``, fitted order, and the Richardson value of the two finest steps."""
    z0, eye = _rd_start(RD_SEED, -1.0, 1.0), np.eye(2)
    dts = preset["rd_final"] / 2.0 ** np.arange(3, 3 + preset["rd_steps"])
    runs = [rd_reference_convergence(z0, eye, eye, v, preset["rd_final"], dts) for v in (eye, PAPER_VALUE_MATRICES["2d"])]
    case = ("rd_case",)
    return xr.Dataset({"rd_error": (("rd_case", "rd_dt"), [run.errors for run in runs]),
                       "rd_order": (case, [run.order for run in runs]),
                       "rd_extrapolated_error": (case, [run.extrapolated_error for run in runs])},
                      coords={"rd_dt": runs[0].dts, "rd_case": ["V = I", "V of the paper (2d)"]})


def rd_reference_plot(ax, table: xr.Dataset) -> None:
    dts = table.rd_dt.values
    for index, name in enumerate(table.rd_case.values):
        ax.loglog(dts, table.rd_error.values[index], "o-", color=f"C{index}",
                  label=f"{name}: order {float(table.rd_order[index]):.3f}, Richardson "
                        f"{float(table.rd_extrapolated_error[index]):.1e}")
    ax.loglog(dts, table.rd_error.values[:, -1].max() * dts / dts[-1], "k--", lw=0.8, label="dt")
    ax.set(xlabel="dt of the reference loop", ylabel=r"$\max |z^{dt}(T) - z(T)|$",
           title="5. R^d: the reference RK4 loop converges to the package's tokens")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, ncol=1)


def rd_reference_claims(table: xr.Dataset) -> list[Check]:
    checks = []
    for index, name in enumerate(table.rd_case.values):
        checks.append(close(f"R^d, {name}: the reference loop (attention frozen over each step) converges to the "
                            f"package's rescaled tokens at order 1 (fitted)", 1.0, table.rd_order[index],
                            RD_ORDER_TOLERANCE,
                            source="theory: freezing the attention over a step errs by O(dt^2) per step (MATH.md "
                                   "§12.1); 0.1 the room for the pre-asymptotic steps (measured 1.05, 0.97)"))
        checks.append(at_least(f"R^d, {name}: the loop's limit is the package's solution (finest error over the "
                               f"Richardson value's)", table.rd_error[index, -1] / table.rd_extrapolated_error[index],
                               20.0, "> 1", source="theory: a first-order scheme's Richardson value errs by "
                                                  "O(dt^2), far below its O(dt) error when its limit is the "
                                                  "solution (measured 30, 79)"))
    return checks


def rd_polytope_compute(preset: dict) -> xr.Dataset:
    """``V = Q = K = I``: an equal-norm heptagon and 13 tokens inside (:func:`meanfield.rd_tokens.equal_norm_polytope`);
    the rescaled tokens' distinct limits and whether each is a vertex of their hull."""
    z0 = equal_norm_polytope(2, RD_VERTICES, RD_INSIDE, RD_SEED)
    limit = rd_limit_sets(z0, np.eye(2), np.eye(2), np.eye(2), t_final=RD_POLYTOPE_TIME, frames=61)
    return xr.Dataset({"polytope_tokens": (("polytope_time", "polytope_token", "component"), limit.tokens),
                       "polytope_limits": (("polytope_limit", "component"), limit.values),
                       "polytope_is_vertex": ("polytope_limit", limit.vertices),
                       "polytope_expected": len(ConvexHull(z0).vertices), "polytope_spread": limit.spread})


def rd_polytope_plot(ax, table: xr.Dataset) -> None:
    paths = table.polytope_tokens.values
    for token in range(paths.shape[1]):
        ax.plot(paths[:, token, 0], paths[:, token, 1], "-", color="0.6", lw=0.8)
    ax.plot(paths[0, :, 0], paths[0, :, 1], "o", color="C0", ms=3, label="tokens at t = 0")
    limits = table.polytope_limits.values
    ax.plot(limits[:, 0], limits[:, 1], "ks", ms=6, label=f"{len(limits)} limit points (hull vertices)")
    ax.set(aspect="equal", xlabel="z_1", ylabel="z_2", title="6. R^d, V = I: the rescaled tokens end on a polytope")
    legend_below(ax, ncol=2)


def rd_polytope_claims(table: xr.Dataset) -> list[Check]:
    return [equal("R^d, V = Q = K = I: the rescaled tokens have as many limit points as the initial hull has vertices",
                  int(table.polytope_expected), table.sizes["polytope_limit"],
                  source="exact: each equal-norm vertex leads itself and no interior token leads (MATH.md §12.1)"),
            fraction("R^d, V = I: every limit point is a vertex of their convex hull", table.polytope_is_vertex.values,
                     source="exact: the polytope theorem (Geshkovski et al. 2023; MATH.md §12.1)"),
            below("R^d, V = I: the tokens have reached their limits (largest distance to their point)",
                  table.polytope_spread, 1e-9, source="theory: the approach is exponential in t; 1e-9 leaves the "
                                                       "count unambiguous (points about 2 apart)")]


def rd_hyperplanes_compute(preset: dict) -> xr.Dataset:
    """The paper's 2-d ``V`` (simple positive top eigenvalue), ``Q = K = I``: the levels of ``<l_1, z>``."""
    v = PAPER_VALUE_MATRICES["2d"]
    top, _, ell = top_eigenpair(v)
    z0 = _rd_start(RD_SEED + 1, -5.0, 5.0)
    limit = rd_limit_sets(z0, np.eye(2), np.eye(2), v, t_final=RD_HYPERPLANE_TIME / top, frames=61)
    return xr.Dataset({"hyperplane_tokens": (("hyperplane_time", "hyperplane_token", "component"), limit.tokens),
                       "hyperplane_levels": ("hyperplane_level", limit.values),
                       "hyperplane_direction": ("component", ell),
                       "hyperplane_expected": len(set(np.sign(z0 @ ell))), "hyperplane_spread": limit.spread})


def rd_hyperplanes_plot(ax, table: xr.Dataset) -> None:
    paths, ell = table.hyperplane_tokens.values, table.hyperplane_direction.values
    for token in range(paths.shape[1]):
        ax.plot(paths[:, token, 0], paths[:, token, 1], "-", color="0.6", lw=0.8)
    ax.plot(paths[0, :, 0], paths[0, :, 1], "o", color="C0", ms=3, label="tokens at t = 0")
    ax.plot(paths[-1, :, 0], paths[-1, :, 1], "ks", ms=4, label="at the end")
    span = np.linspace(-40, 40, 2)
    normal = ell / float(ell @ ell)
    along = np.array([-ell[1], ell[0]]) / np.linalg.norm(ell)
    for level in table.hyperplane_levels.values:
        line = level * normal + span[:, None] * along
        ax.plot(line[:, 0], line[:, 1], "k--", lw=0.8)
    ax.set(aspect="equal", xlim=(-8, 8), ylim=(-8, 8), xlabel="z_1", ylabel="z_2",
           title="7. R^d, simple top eigenvalue: parallel hyperplanes <l_1, z> = c")
    legend_below(ax, ncol=2)


def rd_hyperplanes_claims(table: xr.Dataset) -> list[Check]:
    return [equal("R^d, the paper's V: as many hyperplanes as signs of <l_1, z(0)>",
                  int(table.hyperplane_expected), table.sizes["hyperplane_level"],
                  source="exact: <l_1, z> stays in its initial range and the attention, sharpening as "
                         "e^{2 lambda_1 t} a_i a_j, sends each sign to its extreme (MATH.md §12.1)"),
            below("R^d, the paper's V: the tokens have reached their hyperplanes (largest distance to their level)",
                  table.hyperplane_spread, 1e-9, source="theory: the approach is exponential in t; 1e-9 leaves the "
                                                         "count unambiguous (levels about 10 apart)")]


def rd_reference_lines(table: xr.Dataset) -> list[str]:
    return [f"5. R^d reference loop, {name}: errors {' '.join(f'{e:.2e}' for e in table.rd_error.values[i])}; "
            f"order {float(table.rd_order[i]):.3f}; Richardson {float(table.rd_extrapolated_error[i]):.1e}"
            for i, name in enumerate(table.rd_case.values)]


def rd_polytope_lines(table: xr.Dataset) -> list[str]:
    return [f"6. R^d, V = I: {table.sizes['polytope_limit']} limit points (initial hull: "
            f"{int(table.polytope_expected)} vertices), spread {float(table.polytope_spread):.1e}"]


def rd_hyperplanes_lines(table: xr.Dataset) -> list[str]:
    return [f"7. R^d, the paper's V: {table.sizes['hyperplane_level']} hyperplanes (signs of <l_1, z(0)>: "
            f"{int(table.hyperplane_expected)}), spread {float(table.hyperplane_spread):.1e}"]


ITEMS = (Item("rd-reference", rd_reference_compute, rd_reference_plot, rd_reference_claims, rd_reference_lines),
         Item("rd-polytope", rd_polytope_compute, rd_polytope_plot, rd_polytope_claims, rd_polytope_lines),
         Item("rd-hyperplanes", rd_hyperplanes_compute, rd_hyperplanes_plot, rd_hyperplanes_claims,
              rd_hyperplanes_lines))
