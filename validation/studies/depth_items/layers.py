"""Items 1 and 2 of ``validate depth``: the layers' linear theory and the flow against the network (MATH.md §11)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from meanfield.model import Model
from meanfield.plotting.style import legend_below
from meanfield.solvers.runs.layer_checks import (EPS, circle_mode_growth, fitted_layer_order, layer_errors,
                                                 richardson_limit, sphere_degree_growth)
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.theory import growth_rates, layer_growth_factors

from ...claims import Check, at_most, close
from . import GROWTH_TOLERANCE, Item

#: What the flow claims allow: the order's distance from 1, the Richardson limit's distance from the flow.
ORDER_TOLERANCE, LIMIT_TOLERANCE = 0.05, 1e-6

#: The flow-vs-network cases: (dim, attention, the preset's key of its beta): SA at the study's ``beta``, USA at
#: ``usa_beta`` (its kernel's scale e^beta sets its speed).
FLOW_CASES = ((2, "sa", "beta"), (2, "usa", "usa_beta"), (3, "sa", "beta"), (3, "usa", "usa_beta"))


# --------------------------------------------------------------------------------------------- 1. linear theory
def dominant_degree(model: Model, alpha: float, max_degree: int) -> int:
    """The degree ``1 .. max_degree`` whose per-layer factor is largest."""
    degrees = np.arange(1, max_degree + 1)
    return int(degrees[np.argmax(layer_growth_factors(model, degrees, alpha))])


def growth_compute(preset: dict) -> xr.Dataset:
    """The measured per-layer ratios of the dominant mode against ``g_l``, every (dim, attention, alpha)."""
    rows = []
    for dim in (2, 3):
        for attention in ("sa", "usa"):
            beta = preset["beta"]
            for alpha in preset["alphas"]:
                model = Model(attention, beta, 0.0, dim)
                degree = dominant_degree(model, alpha, preset["max_degree"])
                if dim == 2:
                    measured = circle_mode_growth(attention, beta, degree, alpha, preset["nodes"], EPS,
                                                  preset["growth_layers"])
                else:
                    measured = sphere_degree_growth(attention, beta, degree, alpha, preset["nlat"], EPS,
                                                    preset["growth_layers"])
                rows.append({"dim": dim, "attention": attention, "alpha": alpha, "degree": degree,
                             "measured": measured, "theory": layer_growth_factors(model, [degree], alpha)[0],
                             "euler": 1 + alpha * growth_rates(model, [degree])[0]})
    case = ("growth_case",)
    return xr.Dataset({"growth_measured": (("growth_case", "growth_layer"), [row["measured"] for row in rows]),
                       "growth_theory": (case, [row["theory"] for row in rows]),
                       "growth_euler": (case, [row["euler"] for row in rows])},
                      coords={key: (case, [row[key.split("_")[1]] for row in rows])
                              for key in ("growth_dim", "growth_attention", "growth_alpha", "growth_degree")})


def growth_errors(table: xr.Dataset) -> xr.DataArray:
    """``max over layers |measured / g_l - 1|`` per case."""
    return np.abs(table.growth_measured / table.growth_theory - 1).max("growth_layer")


def growth_plot(ax, table: xr.Dataset) -> None:
    theory, errors = table.growth_theory.values, growth_errors(table).values
    for index in range(theory.size):
        label = (f"d={int(table.growth_dim[index])} {str(table.growth_attention[index].values)} "
                 f"alpha={float(table.growth_alpha[index]):g} l={int(table.growth_degree[index])}")
        ax.plot(theory[index], table.growth_measured.values[index, 0], "o", color=f"C{index}", ms=6,
                label=f"{label}: rel. error {errors[index]:.1e}")
        ax.plot(theory[index], float(table.growth_euler[index]), "x", color=f"C{index}", ms=7)
    top = max(theory.max(), float(table.growth_euler.max()))
    ax.plot([1, top], [1, top], "k-", lw=0.8)
    ax.set(xlabel=r"theory $g_l = 1 + \alpha\lambda_l / (1 + \alpha c_0)$",
           ylabel="measured per-layer growth (o); flow's Euler factor (x)",
           title="1. layers' linear theory, dominant mode (MATH.md §11)")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, ncol=2, fontsize=6)


def growth_claims(table: xr.Dataset) -> list[Check]:
    errors = growth_errors(table)
    checks = []
    for dim, name in ((2, "circle"), (3, "S^2")):
        checks.append(at_most(f"{name}: a Post-LN layer multiplies the dominant mode by g_l = 1 + alpha lambda_l / "
                              f"(1 + alpha c_0) (SA, USA; alpha 0.1, 1; largest relative error)",
                              errors.where(table.growth_dim == dim, drop=True).max(), GROWTH_TOLERANCE,
                              source=f"theory: the linear theory (MATH.md §11) leaves the perturbation's own share, "
                                     f"O(eps) relative with eps = {EPS:g}; 1e-6 is the bound asked of it"))
    return checks


# --------------------------------------------------------------------------------------------- 2. flow vs network
def unit_tokens(n: int, dim: int, seed: int) -> np.ndarray:
    """``n`` seeded tokens, uniform on the unit sphere of R^dim (normalised Gaussians)."""
    x = np.random.default_rng(seed).standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1)[:, None]


def flow_compute(preset: dict) -> xr.Dataset:
    """Errors of ``L`` layers against the flow at ``T``, the fitted order, the Richardson limit's error."""
    errors, orders, limits, once, betas = [], [], [], [], []
    final, counts = preset["final"], preset["layer_counts"]
    for dim, attention, key in FLOW_CASES:
        beta = preset[key]
        x = unit_tokens(preset["n"], dim, preset["seed"])
        flow = simulate(dim=dim, n=preset["n"], attention=attention, beta=beta, positions=x, t_final=final,
                        save_every=final, rtol=1e-13, collapse_tol=0).positions.values[-1]
        scheme = ParticleScheme(Model(attention, beta, 0.0, dim), preset["n"])
        errors.append(layer_errors(scheme, x, flow, final, counts))
        orders.append(fitted_layer_order(counts, errors[-1]))
        limit, once_fine = richardson_limit(scheme, x, final, preset["coarsest"])
        limits.append(float(np.max(np.abs(limit - flow))))
        once.append(float(np.max(np.abs(once_fine - flow))))
        betas.append(beta)
    case = ("flow_case",)
    return xr.Dataset({"flow_error": (("flow_case", "flow_layers"), errors), "flow_order": (case, orders),
                       "flow_limit_error": (case, limits), "flow_once_error": (case, once)},
                      coords={"flow_layers": list(counts), "flow_dim": (case, [row[0] for row in FLOW_CASES]),
                              "flow_attention": (case, [row[1] for row in FLOW_CASES]),
                              "flow_beta": (case, betas)})


def flow_plot(ax, table: xr.Dataset) -> None:
    counts = table.flow_layers.values
    for index in range(table.sizes["flow_case"]):
        ax.loglog(counts, table.flow_error.values[index], "o-", color=f"C{index}", ms=4,
                  label=f"d={int(table.flow_dim[index])} {str(table.flow_attention[index].values)} "
                        f"beta={float(table.flow_beta[index]):g}: order {float(table.flow_order[index]):.3f}, "
                        f"Richardson limit {float(table.flow_limit_error[index]):.1e} from the flow")
    first = float(table.flow_error.max("flow_case")[0])
    ax.loglog(counts, first * counts[0] / counts, "k--", lw=0.8, label=r"$L^{-1}$")
    ax.set(xlabel=f"layers L (step T / L, T = {float(table.attrs['preset_final']):g})",
           ylabel=r"$(\mathrm{mean}_j |x_j^L - x_j(T)|^2)^{1/2}$",
           title="2. L layers against the flow (fixed weights)")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, ncol=1, fontsize=6)


def flow_claims(table: xr.Dataset) -> list[Check]:
    checks = []
    for index in range(table.sizes["flow_case"]):
        name = (f"d = {int(table.flow_dim[index])}, {str(table.flow_attention[index].values)}, "
                f"beta = {float(table.flow_beta[index]):g}")
        checks.append(close(f"{name}: L layers of step T / L approach the flow at order 1 (fitted with its c / L "
                            f"term, L = 8 .. 256)", 1.0, table.flow_order[index], ORDER_TOLERANCE,
                            source="theory: a layer is an Euler step of the flow to first order in alpha (MATH.md "
                                   "§11); 0.05 is the room asked of it for the O(L^-2) terms the fit leaves out (the "
                                   "tokens' root mean square error: 0.983 .. 1.010 over 120 draws)"))
        checks.append(at_most(f"{name}: the layers' L -> infinity limit (Richardson twice, L = 256, 512, 1024) is "
                              f"the continuous solver's tokens (largest difference)", table.flow_limit_error[index],
                              LIMIT_TOLERANCE,
                              source="theory: two extrapolations leave O(L^-3) of the layers' expansion, measured "
                                     "1e-7 to 2.2e-7 (MATH.md §11), and the flow's dopri5 error at rtol 1e-13; 1e-6 is "
                                     "the bound asked of it"))
    return checks


def growth_lines(table: xr.Dataset) -> list[str]:
    errors = growth_errors(table).values
    return ["1. per-layer growth of the dominant mode (quadrature nodes) against g_l:",
            f"{'d':>3} {'attention':>9} {'alpha':>6} {'l':>3} {'measured':>14} {'theory g_l':>14} {'rel. error':>10} "
            f"{'Euler 1+a*lam':>14}"] + [
        f"{int(table.growth_dim[i]):>3} {str(table.growth_attention[i].values):>9} {float(table.growth_alpha[i]):>6g} "
        f"{int(table.growth_degree[i]):>3} {float(table.growth_measured[i, 0]):>14.10f} "
        f"{float(table.growth_theory[i]):>14.10f} {errors[i]:>10.1e} {float(table.growth_euler[i]):>14.6g}"
        for i in range(errors.size)]


def flow_lines(table: xr.Dataset) -> list[str]:
    header = (f"2. L layers against the flow at T = {float(table.attrs['preset_final']):g} "
              f"(n = {int(table.attrs['preset_n'])}):")
    return [header] + [
        f"  d = {int(table.flow_dim[i])} {str(table.flow_attention[i].values):>3} beta = {float(table.flow_beta[i]):g}: "
        f"errors {' '.join(f'{e:.2e}' for e in table.flow_error.values[i])}; order {float(table.flow_order[i]):.4f}; "
        f"Richardson limit {float(table.flow_limit_error[i]):.1e} (once: {float(table.flow_once_error[i]):.1e})"
        for i in range(table.sizes["flow_case"])]


ITEMS = (Item("growth", growth_compute, growth_plot, growth_claims, growth_lines),
         Item("flow", flow_compute, flow_plot, flow_claims, flow_lines))
