"""Study: depth, the network before its continuous limit (MATH.md §11, §12).

``meanfield validate depth [--quick]``.  The study is the list :data:`ITEMS`; each :class:`Item` computes its part of
the Dataset, draws one panel of ``depth.png`` and states its claims, so that adding a part is adding one item:

1. **Layers' linear theory** (§11): the per-layer growth of the dominant mode of a perturbed uniform state, measured
   on quadrature-weighted nodes (:func:`meanfield.solvers.runs.layer_checks.circle_mode_growth`,
   ``sphere_degree_growth``: the circle and S^2, SA and USA, ``alpha = 0.1`` and ``1``) against
   ``g_l = 1 + alpha lambda_l / (1 + alpha c_0)`` (:func:`meanfield.theory.layer_growth_factors`); the flow's Euler
   factor ``1 + alpha lambda_l`` is drawn beside it.
2. **Flow against network, fixed weights** (§11): ``L`` layers of step ``T / L`` (``T = 2``, ``L = 8 .. 256``) against
   the flow at ``T`` (dopri5 at rtol 1e-13): the error, the order fitted with its ``c / L`` term, and the
   layers' Richardson limit from ``L = 256, 512, 1024`` against the continuous solver.
3. **Hardmax, finite beta** (§12): the hull vertices of a seeded polygon (at rest under hardmax) leave the hardmax
   trajectory at finite beta after a time ``T_delta(beta)`` (distance ``delta = 1e-2``) growing as
   ``e^{beta g}``, ``g`` the smallest score gap: the fitted exponent against ``g``.  The betas are ``E / g`` for the
   preset's exponents ``E`` (departures at about ``1 .. 300`` whatever the polygon).
4. **Hardmax, positive semidefinite** (§12): ``A = I``, a seeded polygon of equal-norm vertices and tokens inside
   it: the vertices do not move, every other token runs on a straight line to the vertex of its dominance cell
   (``argmax_c <x, A v_c>``, the rule of ``compute_cell_map`` in borjanG/2025-transformers-frank-wolfe/cells.py), and
   no argmax set ever changes.
5. **R^d, the reference loop** (§12.1): the stepping of clustering-Tformers.py (RK4 stages, attention frozen over a
   step; :func:`meanfield.rd_tokens.rd_reference_convergence`) against the package's rescaled tokens ``z = e^{-tV} x``
   at ``T = 2``, ``V = I`` and the paper's 2-d ``V``: fitted order 1 and the Richardson value of its two finest steps.
6. **R^d, V = I**: an equal-norm heptagon and 13 tokens inside; the rescaled tokens' limit points are exactly the
   initial hull's vertices (:func:`meanfield.rd_tokens.rd_limit_sets`).
7. **R^d, simple positive top eigenvalue** (the paper's 2-d ``V``): the tokens end on parallel hyperplanes
   ``<l_1, z> = c``, as many as the signs of ``<l_1, z(0)>``.
8. **Gaussian data** (§3.1): sampled tokens through two residual layers against the exact moment map (RMS in its
   sampling band, slope ``-1/2``), and ``L`` layers against the moment ODE (order 1, Richardson limit)
   (:mod:`meanfield.solvers.runs.gaussian_layer_checks`).
9. **Random per-layer weights** (§11): ``V_l = I + sigma G_l / sqrt(d)``, coupled across ``L``, against the
   homogenised flow of ``V = I``: the RMS over seeds falls at order 1/2
   (:mod:`meanfield.solvers.runs.random_layer_checks`).
10. **Densities through a layer** (§11): the push-forward of a perturbed uniform density by one layer on the circle's
    spectral, S^2's spectral and the zonal Galerkin schemes (``scheme.layer``): the dominant degree grows by ``g_l``
    and the mass is kept.

Items 5, 6, 7 and 9 run on fixed inputs (their modules' tests'); ``--beta`` reaches items 1, 2 and 10, ``--n``
item 2, ``--seed`` items 2, 3, 4 and the Gaussian draw of item 8 (``meanfield gaussian --case random``, scaled).

Writes ``depth.nc`` (every item's variables, one Dataset) and ``depth.png`` (one panel per item).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import xarray as xr
from scipy.spatial import ConvexHull
from scipy.special import eval_legendre

from meanfield.errors import require
from meanfield.gaussian_cases import gaussian_case
from meanfield.hardmax import hardmax_trajectory, softmax_trajectory
from meanfield.model import Model
from meanfield.plotting.style import legend_below
from meanfield.rd_tokens import (PAPER_VALUE_MATRICES, equal_norm_polytope, rd_limit_sets, rd_reference_convergence,
                                 top_eigenpair)
from meanfield.solvers.runs.gaussian_layer_checks import (SEEDS, SIZES, gaussian_layers_against_flow,
                                                          gaussian_layers_against_particles)
from meanfield.solvers.runs.layer_checks import (EPS, circle_mode_growth, fitted_layer_order, layer_errors,
                                                 richardson_limit, sphere_degree_growth)
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.random_layer_checks import mean_square_order, random_weight_errors
from meanfield.solvers.schemes.circle import CircleSpectral
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.solvers.schemes.sphere import SphereSpectral
from meanfield.solvers.schemes.zonal import ZonalGalerkin
from meanfield.theory import growth_rates, layer_growth_factors

from ..claims import EPSILON, Check, at_least, at_most, below, close, equal, fraction
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..registry import STUDIES

FULL = {"beta": 4.0, "usa_beta": 1.0, "alphas": (0.1, 1.0), "nodes": 4096, "nlat": 32, "max_degree": 8,
        "growth_layers": 3, "n": 256, "final": 2.0, "layer_counts": (8, 16, 32, 64, 128, 256), "coarsest": 256,
        "seed": 11, "hardmax_exponents": (4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0), "vertices": 6, "delta": 1e-2,
        "psd_vertices": 7, "psd_tokens": 40, "psd_final": 6.0, "rd_final": 2.0, "rd_steps": 5,
        "gaussian_sizes": SIZES, "gaussian_draws": SEEDS, "random_counts": (16, 32, 64, 128, 256), "random_seeds": 24,
        "circle_resolution": 128, "sphere_resolution": 16}
QUICK = dict(FULL, n=64, hardmax_exponents=(5.0, 7.5, 10.0), gaussian_sizes=SIZES[:4], gaussian_draws=(64, 32, 16, 8),
             random_seeds=12)
#: The bounds of ``--beta`` (the S^2 grid's Gauss–Legendre rule integrates the kernel exactly to it) and ``--n``.
MAX_BETA, MAX_N = 12.0, 1024
#: What the claims allow: the linear theory's relative error (1e-6; the theory leaves ``O(EPS)``),
#: the order's distance from 1, the Richardson limit's distance from the flow, the departure exponent's
#: relative distance from ``g``.
GROWTH_TOLERANCE, ORDER_TOLERANCE, LIMIT_TOLERANCE, EXPONENT_TOLERANCE = 1e-6, 0.05, 1e-6, 0.05
#: The departure runs are at ``beta = E / g`` for the preset's ``hardmax_exponents`` ``E`` (so that every polygon's
#: departures take alike long to compute: an explicit integration to ``e^E`` at rates about 1) and end at
#: ``HORIZON e^{beta g}``: the departure comes at about ``delta e^{beta g} / |v_i - v_j|``
#: (0.0106 e^{beta g} for the default polygon), so 10 times later at least for ``delta = 1e-2``.
HORIZON = 0.1
#: The R^d items' inputs (fixed; the tests' of meanfield/rd_tokens.py): the reference loop's tokens and the polygons'
#: seed, the heptagon's vertices and inner tokens, the horizons of the polytope and (times 1 / lambda_1) hyperplanes.
RD_SEED, RD_VERTICES, RD_INSIDE, RD_POLYTOPE_TIME, RD_HYPERPLANE_TIME = 1, 7, 13, 30.0, 26.0
RD_ORDER_TOLERANCE = 0.1
#: The Gaussian items' beta (not 1: the engine and the map must agree on where beta goes) and the random weights'
#: spread.
GAUSSIAN_BETA, RANDOM_SIGMA = 1.5, 0.5
#: The random weights' tokens, fixed (n, SA beta, seed; the tests' of random_layer_checks): the fitted order of
#: other draws scatters more (0.41 to 0.50 over four draws at 12 seeds each).
RANDOM_CASE = (64, 4.0, 5)
#: The flow-vs-network cases: (dim, attention, the preset's key of its beta): SA at the study's ``beta``, USA at
#: ``usa_beta`` (its kernel's scale e^beta sets its speed).
FLOW_CASES = ((2, "sa", "beta"), (2, "usa", "usa_beta"), (3, "sa", "beta"), (3, "usa", "usa_beta"))


@dataclass(frozen=True)
class Item:
    """One part of the study: ``compute(preset) -> xr.Dataset`` (its own variables, dims prefixed by its name),
    ``plot(ax, table)`` (one panel of ``depth.png``) and ``claims(table) -> list[Check]``."""

    name: str
    compute: Callable
    plot: Callable
    claims: Callable


# --------------------------------------------------------------------------------------------- 1. linear theory
def _dominant_degree(model: Model, alpha: float, max_degree: int) -> int:
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
                degree = _dominant_degree(model, alpha, preset["max_degree"])
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
def _tokens(n: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1)[:, None]


def flow_compute(preset: dict) -> xr.Dataset:
    """Errors of ``L`` layers against the flow at ``T``, the fitted order, the Richardson limit's error."""
    errors, orders, limits, once, betas = [], [], [], [], []
    final, counts = preset["final"], preset["layer_counts"]
    for dim, attention, key in FLOW_CASES:
        beta = preset[key]
        x = _tokens(preset["n"], dim, preset["seed"])
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
           ylabel=r"$\max_j |x_j^L - x_j(T)|$", title="2. L layers against the flow (fixed weights)")
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
                                   "§11); 0.05 is the room asked of it for the O(L^-2) terms the fit leaves out (some "
                                   "draws are pre-asymptotic: their error ratios near 2 only from L = 64; the circle, "
                                   "SA, beta = 6, n = 32, seed 3 reads 0.91 here and 1.00 on L = 32 .. 1024)"))
        checks.append(at_most(f"{name}: the layers' L -> infinity limit (Richardson twice, L = 256, 512, 1024) is "
                              f"the continuous solver's tokens (largest difference)", table.flow_limit_error[index],
                              LIMIT_TOLERANCE,
                              source="theory: two extrapolations leave O(L^-3) of the layers' expansion, measured "
                                     "1e-7 to 2.2e-7 (MATH.md §11), and the flow's dopri5 error at rtol 1e-13; 1e-6 is "
                                     "the bound asked of it"))
    return checks


# --------------------------------------------------------------------------------------------- 3. hardmax, finite beta
def polygon(count: int, seed: int) -> np.ndarray:
    """``count`` vertices on the unit circle, angles with seeded gaps uniform in ``[0.6, 1.3]`` scaled to a turn (every
    one a hull vertex of equal norm)."""
    theta = np.cumsum(np.random.default_rng(seed).uniform(0.6, 1.3, count))
    theta *= 2 * np.pi / theta[-1]
    return np.c_[np.cos(theta), np.sin(theta)]


def smallest_gap(vertices: np.ndarray) -> float:
    """``g = min_{i != j} (v_i^T v_i - v_i^T v_j)`` (``A = I``)."""
    scores = vertices @ vertices.T
    return float(np.min(np.diag(scores)[:, None] - scores + np.diag(np.full(len(scores), np.inf))))


def departure_time(distance: np.ndarray, times: np.ndarray, delta: float) -> float:
    """The first time ``distance`` reaches ``delta`` (log-log interpolated between the frames), NaN if it never does."""
    above = np.flatnonzero(distance > delta)
    if not above.size or above[0] == 0:
        return math.nan
    i = above[0]
    return float(np.exp(np.interp(math.log(delta), np.log(distance[i - 1:i + 1]), np.log(times[i - 1:i + 1]))))


def departure_compute(preset: dict) -> xr.Dataset:
    """The departure time of the softmax tokens from the hardmax ones (the polygon at rest), per beta."""
    vertices = polygon(preset["vertices"], preset["seed"])
    gap, delta = smallest_gap(vertices), preset["delta"]
    betas = np.asarray(preset["hardmax_exponents"]) / gap
    departures, motion = [], 0.0
    for beta in betas:
        times = np.geomspace(1e-2, HORIZON * math.exp(beta * gap), 240)
        hard, _ = hardmax_trajectory(vertices, np.eye(2), times)
        motion = max(motion, float(np.max(np.abs(hard - vertices))))
        soft = softmax_trajectory(vertices, np.eye(2), beta, times, rtol=1e-10, atol=1e-13)
        departures.append(departure_time(np.linalg.norm(soft - hard, axis=-1).max(axis=1), times, delta))
    exponent, intercept = np.polyfit(betas, np.log(departures), 1)
    return xr.Dataset({"departure_time": ("hardmax_beta", departures), "departure_gap": gap,
                       "departure_exponent": exponent, "departure_intercept": intercept,
                       "departure_hardmax_motion": motion,
                       "departure_vertices": (("vertex", "component"), vertices)},
                      coords={"hardmax_beta": betas})


def departure_plot(ax, table: xr.Dataset) -> None:
    betas, gap = table.hardmax_beta.values, float(table.departure_gap)
    ax.semilogy(betas, table.departure_time.values, "o", ms=6, label="softmax leaves hardmax (distance delta)")
    fit = np.exp(float(table.departure_intercept) + float(table.departure_exponent) * betas)
    ax.semilogy(betas, fit, "-", label=f"fit: exponent {float(table.departure_exponent):.4f}")
    middle = len(betas) // 2
    ax.semilogy(betas, table.departure_time.values[middle] * np.exp(gap * (betas - betas[middle])), "k--", lw=0.8,
                label=f"theory: e^(beta g), g = {gap:.4f}")
    ax.set(xlabel=r"$\beta$", ylabel=rf"$T_\delta(\beta)$, $\delta$ = {float(table.attrs['preset_delta']):g}",
           title="3. finite beta stays near hardmax for a time ~ e^(beta g)")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, ncol=1)


def departure_claims(table: xr.Dataset) -> list[Check]:
    return [close("Finite beta: the time the tokens stay within delta of the hardmax trajectory grows as e^(beta g) "
                  "(fitted exponent)", float(table.departure_gap), table.departure_exponent, EXPONENT_TOLERANCE,
                  relative=True,
                  source="theory: a vertex drifts at about e^(-beta g) (MATH.md §12); the gap closes by O(delta) as it "
                         "drifts, which lowers the fitted exponent by about delta |v_i - v_j| / 2 (measured 2 to 3 % "
                         "over seeds 0 .. 11); 5 % is the room for it"),
            equal("Hardmax: the polygon's vertices alone are at rest (largest motion)", 0.0,
                  table.departure_hardmax_motion, source="exact: each vertex is its own argmax set, so expm(0) = I")]


# --------------------------------------------------------------------------------------------- 4. hardmax, PSD
def psd_compute(preset: dict) -> xr.Dataset:
    """Hardmax (``A = I``) from a polygon and tokens inside it: trajectories, cells, and their straight lines."""
    rng = np.random.default_rng(preset["seed"] + 1)
    vertices = polygon(preset["psd_vertices"], preset["seed"])
    inner = rng.dirichlet(np.ones(len(vertices)), size=preset["psd_tokens"]) @ vertices
    tokens = np.vstack([vertices, inner])
    require(sorted(ConvexHull(tokens).vertices) == list(range(len(vertices))), "the polygon's tokens are its hull")
    times = np.linspace(0.0, preset["psd_final"], 61)
    positions, events = hardmax_trajectory(tokens, np.eye(2), times)
    cells = np.argmax(inner @ vertices.T, axis=1)                  # compute_cell_map's rule: the vertex of largest <x, v>
    line = vertices[cells] + (inner - vertices[cells]) * np.exp(-times)[:, None, None]
    scale = np.maximum(1.0, times)[:, None, None]
    return xr.Dataset({"psd_positions": (("psd_time", "psd_token", "component"), positions),
                       "psd_cell": ("psd_inner", cells), "psd_events": len(events),
                       "psd_vertex_motion": float(np.max(np.abs(positions[:, :len(vertices)] - vertices))),
                       "psd_line_error": float(np.max(np.abs(positions[:, len(vertices):] - line) / scale))},
                      coords={"psd_time": times}, attrs={"psd_vertex_count": len(vertices)})


def psd_plot(ax, table: xr.Dataset) -> None:
    count = int(table.attrs["psd_vertex_count"])
    positions = table.psd_positions.values
    vertices = positions[0, :count]
    closed = np.vstack([vertices, vertices[:1]])
    ax.plot(closed[:, 0], closed[:, 1], "k-", lw=0.8)
    for token, cell in enumerate(table.psd_cell.values):
        path = positions[:, count + token]
        ax.plot(path[:, 0], path[:, 1], "-", color=f"C{cell}", lw=0.9)
        ax.plot(path[0, 0], path[0, 1], "o", color=f"C{cell}", ms=3)
    ax.plot(vertices[:, 0], vertices[:, 1], "ks", ms=6, label="hull vertices (at rest)")
    ax.set(aspect="equal", xlabel="x_1", ylabel="x_2",
           title=f"4. hardmax, A = I: straight lines to the cell's vertex (off by "
                 f"{float(table.psd_line_error):.1e})")
    legend_below(ax, ncol=1)


def psd_claims(table: xr.Dataset) -> list[Check]:
    return [equal("Hardmax, A = I: the hull vertices do not move (largest motion)", 0.0, table.psd_vertex_motion,
                  source="exact: a vertex's argmax set is itself, so its segment's exponential is the identity"),
            equal("Hardmax, A = I: no argmax set changes (events)", 0, table.psd_events,
                  source="exact: each token stays in its dominance cell (MATH.md §12)"),
            at_most("Hardmax, A = I: every other token runs on the straight line v_c + (x(0) - v_c) e^(-t) to the "
                    "vertex of its dominance cell (largest difference / max(1, t))", table.psd_line_error, 1e-14,
                    source="round-off: expm of the selection generator, measured 2.6e-15 up to t = 30 "
                           "(MATH.md §12)")]


# --------------------------------------------------------------------------------------------- 4. tokens in R^d
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


# --------------------------------------------------------------------------------------------- 5. Gaussian layers
def _gaussian_problem(seed: int) -> dict:
    """``meanfield gaussian --case random --dim 2`` halved in its matrices and mean, its covariance quartered (the
    particles then stay in their ``n^{-1/2}`` regime)."""
    case = gaussian_case("random", 2, seed)
    return {"mean": 0.5 * case["mean"], "cov": 0.25 * case["cov"], "V": 0.5 * case["V"], "Q": 0.5 * case["Q"],
            "K": 0.5 * case["K"]}


def gaussian_compute(preset: dict) -> xr.Dataset:
    """Residual layers on Gaussian data: sampled tokens against the exact moment map, and ``L`` layers against the
    moment ODE (:mod:`meanfield.solvers.runs.gaussian_layer_checks`)."""
    problem = _gaussian_problem(preset["seed"])
    particles = gaussian_layers_against_particles(**problem, alpha=0.5, layers=2, beta=GAUSSIAN_BETA,
                                                  sizes=preset["gaussian_sizes"], seeds=preset["gaussian_draws"])
    flow = gaussian_layers_against_flow(**problem, t_final=1.0, beta=GAUSSIAN_BETA)
    return xr.Dataset({"gaussian_rms": ("gaussian_n", particles.rms.values),
                       "gaussian_predicted": ("gaussian_n", particles.predicted.values),
                       "gaussian_rms_low": ("gaussian_n", particles.rms_low.values),
                       "gaussian_rms_high": ("gaussian_n", particles.rms_high.values),
                       "gaussian_slope": particles.attrs["slope"],
                       "gaussian_flow_error": ("gaussian_layers", flow.error.values),
                       "gaussian_flow_order": flow.attrs["order"],
                       "gaussian_richardson_error": flow.attrs["richardson_error"]},
                      coords={"gaussian_n": particles.n.values, "gaussian_layers": flow.layers.values})


def gaussian_plot(ax, table: xr.Dataset) -> None:
    n = table.gaussian_n.values
    ax.fill_between(n, table.gaussian_rms_low, table.gaussian_rms_high, color="C0", alpha=0.2,
                    label="sampling band (probability 1e-4 each side)")
    ax.loglog(n, table.gaussian_rms, "o", color="C0",
              label=f"tokens: RMS moment error, slope {float(table.gaussian_slope):.3f}")
    ax.loglog(n, table.gaussian_predicted, "--", color="C0", label=r"$C n^{-1/2}$ (map's Jacobian)")
    layers = table.gaussian_layers.values
    ax.loglog(layers, table.gaussian_flow_error, "s-", color="C1",
              label=f"L layers vs the moment ODE (x = L): order {float(table.gaussian_flow_order):.4f}")
    ax.set(xlabel="tokens n (o) or layers L (s)", ylabel="moment error",
           title="8. Gaussian data: the layer's moment map against tokens and the ODE")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, ncol=1)


def gaussian_claims(table: xr.Dataset) -> list[Check]:
    inside = (table.gaussian_rms > table.gaussian_rms_low) & (table.gaussian_rms < table.gaussian_rms_high)
    return [close("Gaussian layers: sampled tokens meet the exact moment map at n^-1/2 (fitted slope of the RMS)",
                  -0.5, table.gaussian_slope, 0.1,
                  source="standard error: the slope's spread over the draws is about 0.03 (26 master seeds: "
                         "-0.41 .. -0.54); 0.1 is the room asked of it"),
            fraction("Gaussian layers: the RMS moment error lies in its sampling band at every n", inside.values,
                     source="theory: Chernoff bounds of the linearised sampling error carried through the map, "
                            "probability <= 1e-4 per side and size (MATH.md §3.1)"),
            close("Gaussian layers: L layers of step T / L approach the moment ODE at order 1 (fitted with its c / L "
                  "term)", 1.0, table.gaussian_flow_order, 0.05,
                  source="theory: the layer's map is one Euler step of the moment ODE (MATH.md §3.1); 0.05 the "
                         "room asked of it"),
            at_most("Gaussian layers: their Richardson limit is the moment ODE", table.gaussian_richardson_error,
                    1e-9, source="theory: the ODE's rtol 1e-10 and the expansion's O(L^-3) after two extrapolations")]


# --------------------------------------------------------------------------------------------- 6. random weights
def random_compute(preset: dict) -> xr.Dataset:
    """Per-layer random ``V_l = I + sigma G_l / sqrt(d)`` (coupled across ``L``) against the homogenised flow of
    ``V = I``: the circle, SA, the fixed tokens of :data:`RANDOM_CASE`."""
    n, beta, seed = RANDOM_CASE
    x = _tokens(n, 2, seed)
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
    ax.set(xlabel="layers L (step T / L)", ylabel=r"$\max_j |x_j^L - x_j(T)|$",
           title=f"9. random per-layer weights (sigma = {RANDOM_SIGMA:g}) vs the homogenised flow")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, ncol=1)


def random_claims(table: xr.Dataset) -> list[Check]:
    return [close("Random per-layer weights: the RMS error against the homogenised flow (V = E V_l = I) falls at "
                  "order 1/2 in L", 0.5, table.random_order, 0.1,
                  source="theory: the weights' fluctuations add up to O(sigma T / sqrt(L)) (MATH.md §11); 0.1 the "
                         "spread over blocks of 12 seeds (measured 0.47 .. 0.53 for these tokens)")]


# --------------------------------------------------------------------------------------------- 7. density layers
def _degree_amplitude(basis, coefficients, degree: int) -> float:
    """The degree-``l`` amplitude of S^2 coefficients: the root of the sum of ``|c_lm|^2`` over its orders."""
    at = basis.degree_of_index == degree
    return math.sqrt(float(np.sum(basis.multiplicity[at] * np.abs(coefficients[at]) ** 2)))


def _density_layer(scheme, density, amplitude, alpha: float) -> tuple[float, float]:
    """One layer of ``scheme`` on the grid ``density``: the growth of ``amplitude(coefficients)`` and the relative
    change of the mass (coefficient 0)."""
    state = scheme.analysed(density)
    after = scheme.layer(state, alpha)
    return amplitude(after) / amplitude(state), abs(after[0] - state[0]) / abs(state[0])


def _circle_density_growth(model: Model, degree: int, alpha: float, resolution: int) -> tuple[float, float]:
    """The circle's spectral scheme, the uniform density perturbed by ``EPS cos(k theta)``."""
    scheme = CircleSpectral(model, resolution)
    density = (1 + EPS * np.cos(degree * scheme.basis.theta)) / (2 * math.pi)
    return _density_layer(scheme, density, lambda c: abs(c[degree]), alpha)


def _sphere_density_growth(model: Model, degree: int, alpha: float, resolution: int) -> tuple[float, float]:
    """S^2's spectral scheme, perturbed by ``EPS P_l(x_1)`` (a Legendre profile about the x axis: every order moves)."""
    scheme = SphereSpectral(model, resolution)
    basis = scheme.basis
    colatitude, longitude = np.meshgrid(basis.colatitude, basis.longitude, indexing="ij")
    density = (1 + EPS * eval_legendre(degree, np.sin(colatitude) * np.cos(longitude))) / (4 * math.pi)
    return _density_layer(scheme, density, lambda c: _degree_amplitude(basis, c, degree), alpha)


def _zonal_density_growth(model: Model, degree: int, alpha: float, resolution: int) -> tuple[float, float]:
    """The zonal Galerkin scheme on S^2, perturbed by ``EPS P_l(cos polar angle)``."""
    scheme = ZonalGalerkin(model, resolution)
    density = (1 + EPS * eval_legendre(degree, scheme.basis.nodes)) / (4 * math.pi)
    return _density_layer(scheme, density, lambda c: abs(c[degree]), alpha)


#: The density schemes of item 7: (name, dim, measurement, the preset's key of its resolution).
DENSITY_CASES = (("circle spectral", 2, _circle_density_growth, "circle_resolution"),
                 ("S^2 spectral", 3, _sphere_density_growth, "sphere_resolution"),
                 ("S^2 zonal Galerkin", 3, _zonal_density_growth, "sphere_resolution"))


def density_compute(preset: dict) -> xr.Dataset:
    """The layers' linear theory on densities (the push-forward and its conservative remap): every density scheme,
    SA and USA, each step, at the dominant degree."""
    rows = []
    for name, dim, growth, key in DENSITY_CASES:
        for attention in ("sa", "usa"):
            for alpha in preset["alphas"]:
                model = Model(attention, preset["beta"], 0.0, dim)
                degree = _dominant_degree(model, alpha, preset["max_degree"])
                measured, mass = growth(model, degree, alpha, preset[key])
                rows.append((name, attention, alpha, degree, measured,
                             layer_growth_factors(model, [degree], alpha)[0], mass))
    names = ("scheme", "attention", "alpha", "degree", "measured", "theory", "mass_change")
    columns = dict(zip(names, zip(*rows)))
    case = ("density_case",)
    return xr.Dataset({f"density_{name}": (case, list(columns[name])) for name in names[4:]},
                      coords={f"density_{name}": (case, list(columns[name])) for name in names[:4]})


def density_errors(table: xr.Dataset) -> xr.DataArray:
    return np.abs(table.density_measured / table.density_theory - 1)


def density_plot(ax, table: xr.Dataset) -> None:
    errors = density_errors(table).values
    labels = [f"{str(table.density_scheme.values[i])}\n{str(table.density_attention.values[i])} "
              f"a={float(table.density_alpha[i]):g} l={int(table.density_degree[i])}" for i in range(errors.size)]
    ax.bar(range(errors.size), np.maximum(errors, 1e-17), color=[f"C{i // 4}" for i in range(errors.size)])
    ax.axhline(GROWTH_TOLERANCE, color="k", ls="--", lw=0.8)
    ax.text(0, GROWTH_TOLERANCE * 1.3, "claimed bound 1e-6", fontsize=8)
    ax.set_xticks(range(errors.size), labels, rotation=90, fontsize=6)
    ax.set(yscale="log", ylim=(None, 10 * GROWTH_TOLERANCE), ylabel=r"$|g_{measured} / g_l - 1|$",
           title="10. densities through a layer: the push-forward grows by g_l")


def density_claims(table: xr.Dataset) -> list[Check]:
    errors = density_errors(table)
    checks = []
    for name, *_ in DENSITY_CASES:
        mine = table.density_scheme == name
        checks.append(at_most(f"{name}: a layer's push-forward multiplies the dominant degree by g_l (SA, USA; alpha "
                              f"0.1, 1; largest relative error)", errors.where(mine, drop=True).max(),
                              GROWTH_TOLERANCE,
                              source=f"theory: the linear theory (MATH.md §11) leaves the perturbation's own share, "
                                     f"O(eps) with eps = {EPS:g}, and the remap's quadrature error; 1e-6 is the bound "
                                     f"asked of it"))
    checks.append(at_most("Densities through a layer: the mass is kept (largest relative change)",
                          table.density_mass_change.max(), 16 * EPSILON,
                          source="round-off: the analysis (a transform of N grid values) and the remap (a sum of N "
                                 "moved masses) each err by about log2(N) eps, N = 128 on the circle"))
    return checks


#: The study, item by item (one panel and its claims each).
ITEMS = (Item("growth", growth_compute, growth_plot, growth_claims),
         Item("flow", flow_compute, flow_plot, flow_claims),
         Item("departure", departure_compute, departure_plot, departure_claims),
         Item("psd", psd_compute, psd_plot, psd_claims),
         Item("rd-reference", rd_reference_compute, rd_reference_plot, rd_reference_claims),
         Item("rd-polytope", rd_polytope_compute, rd_polytope_plot, rd_polytope_claims),
         Item("rd-hyperplanes", rd_hyperplanes_compute, rd_hyperplanes_plot, rd_hyperplanes_claims),
         Item("gaussian", gaussian_compute, gaussian_plot, gaussian_claims),
         Item("random", random_compute, random_plot, random_claims),
         Item("density", density_compute, density_plot, density_claims))


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
    lines = ["1. per-layer growth of the dominant mode (quadrature nodes) against g_l:",
             f"{'d':>3} {'attention':>9} {'alpha':>6} {'l':>3} {'measured':>14} {'theory g_l':>14} {'rel. error':>10} "
             f"{'Euler 1+a*lam':>14}"]
    errors = growth_errors(table).values
    for i in range(table.sizes["growth_case"]):
        lines.append(f"{int(table.growth_dim[i]):>3} {str(table.growth_attention[i].values):>9} "
                     f"{float(table.growth_alpha[i]):>6g} {int(table.growth_degree[i]):>3} "
                     f"{float(table.growth_measured[i, 0]):>14.10f} {float(table.growth_theory[i]):>14.10f} "
                     f"{errors[i]:>10.1e} {float(table.growth_euler[i]):>14.6g}")
    lines.append(f"2. L layers against the flow at T = {float(table.attrs['preset_final']):g} "
                 f"(n = {int(table.attrs['preset_n'])}):")
    for i in range(table.sizes["flow_case"]):
        lines.append(f"  d = {int(table.flow_dim[i])} {str(table.flow_attention[i].values):>3} beta = "
                     f"{float(table.flow_beta[i]):g}: errors {' '.join(f'{e:.2e}' for e in table.flow_error.values[i])}"
                     f"; order {float(table.flow_order[i]):.4f}; Richardson limit {float(table.flow_limit_error[i]):.1e}"
                     f" (once: {float(table.flow_once_error[i]):.1e})")
    lines.append(f"3. hardmax departure (delta = {float(table.attrs['preset_delta']):g}, g = "
                 f"{float(table.departure_gap):.4f}): " + ", ".join(
                     f"beta {b:g}: {t:.3g}" for b, t in zip(table.hardmax_beta.values, table.departure_time.values))
                 + f"; fitted exponent {float(table.departure_exponent):.4f}")
    lines.append(f"4. hardmax, A = I: vertex motion {float(table.psd_vertex_motion):g}, events "
                 f"{int(table.psd_events)}, straight-line error {float(table.psd_line_error):.1e}")
    return "\n".join(lines + _more_lines(table))


def _more_lines(table: xr.Dataset) -> list[str]:
    """The table's lines of items 5 to 10 (R^d, Gaussian data, random weights, densities)."""
    lines = [f"5. R^d reference loop, {name}: errors {' '.join(f'{e:.2e}' for e in table.rd_error.values[i])}; "
             f"order {float(table.rd_order[i]):.3f}; Richardson {float(table.rd_extrapolated_error[i]):.1e}"
             for i, name in enumerate(table.rd_case.values)]
    lines.append(f"6. R^d, V = I: {table.sizes['polytope_limit']} limit points (initial hull: "
                 f"{int(table.polytope_expected)} vertices), spread {float(table.polytope_spread):.1e}")
    lines.append(f"7. R^d, the paper's V: {table.sizes['hyperplane_level']} hyperplanes (signs of <l_1, z(0)>: "
                 f"{int(table.hyperplane_expected)}), spread {float(table.hyperplane_spread):.1e}")
    lines.append(f"8. Gaussian layers: RMS slope {float(table.gaussian_slope):.3f} over n = "
                 f"{', '.join(str(int(n)) for n in table.gaussian_n.values)}; order against the moment ODE "
                 f"{float(table.gaussian_flow_order):.4f}, Richardson {float(table.gaussian_richardson_error):.1e}")
    lines.append(f"9. random V_l (sigma = {RANDOM_SIGMA:g}, {table.sizes['random_seed']} seeds): order of the RMS "
                 f"{float(table.random_order):.3f}")
    errors = density_errors(table).values
    lines += [f"10. densities, {str(table.density_scheme.values[i])} {str(table.density_attention.values[i])} "
              f"alpha = {float(table.density_alpha[i]):g}, l = {int(table.density_degree[i])}: g measured "
              f"{float(table.density_measured[i]):.10f}, theory {float(table.density_theory[i]):.10f} "
              f"(rel. error {errors[i]:.1e})" for i in range(errors.size)]
    return lines


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
