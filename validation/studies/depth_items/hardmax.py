"""Items 3 and 4 of ``validate depth``: hardmax attention at finite beta and with a positive semidefinite
``Q^T K`` (MATH.md §12)."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy.spatial import ConvexHull

from meanfield.errors import require
from meanfield.hardmax import hardmax_trajectory, softmax_trajectory
from meanfield.plotting.style import legend_below

from ...claims import Check, at_most, close, equal
from . import Item

#: What the departure claim allows: the fitted exponent's relative distance from ``g``.
EXPONENT_TOLERANCE = 0.05

#: The departure runs are at ``beta = E / g`` for the preset's ``hardmax_exponents`` ``E`` (so that every polygon's
#: departures take alike long to compute: an explicit integration to ``e^E`` at rates about 1) and end at
#: ``HORIZON e^{beta g}``: the departure comes at about ``delta e^{beta g} / |v_i - v_j|``
#: (0.0106 e^{beta g} for the default polygon), so 10 times later at least for ``delta = 1e-2``.
HORIZON = 0.1


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


def departure_lines(table: xr.Dataset) -> list[str]:
    return [f"3. hardmax departure (delta = {float(table.attrs['preset_delta']):g}, g = "
            f"{float(table.departure_gap):.4f}): " + ", ".join(
                f"beta {b:g}: {t:.3g}" for b, t in zip(table.hardmax_beta.values, table.departure_time.values))
            + f"; fitted exponent {float(table.departure_exponent):.4f}"]


def psd_lines(table: xr.Dataset) -> list[str]:
    return [f"4. hardmax, A = I: vertex motion {float(table.psd_vertex_motion):g}, events "
            f"{int(table.psd_events)}, straight-line error {float(table.psd_line_error):.1e}"]


ITEMS = (Item("departure", departure_compute, departure_plot, departure_claims, departure_lines),
         Item("psd", psd_compute, psd_plot, psd_claims, psd_lines))
