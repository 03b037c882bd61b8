"""The figures of token runs in R^d (:mod:`meanfield.token_runs`): ``meanfield hardmax`` and ``meanfield rd`` files.

:data:`TOKEN_FIGURES` maps a run's ``geometry`` attribute to its figure; :func:`token_title` is the title.

* hardmax (MATH.md §12): (a) the trajectories in the plane of the first two components, start and end marked, the
  finite-beta twin dashed when the run has one; (b) with a twin, the largest distance between the two against time
  (log scale), else each token's distance to its final position (log scale), the event times dotted.
* rd-tokens (MATH.md §12.1): (a) the rescaled trajectories ``z = e^{-tV} x`` in the first two components with the
  limit set (polytope: the limit points and their hull; hyperplanes: the lines ``<l_1, z> = c`` in a 2-d run, the
  level markers otherwise); (b) the classifying coordinate against time: each token's distance to its limit point
  (polytope, log scale), or ``<l_1, z_i(t)>`` with the levels dashed (hyperplanes).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from scipy.spatial import ConvexHull

from .run_data import short_reason

#: The floor of the log-scale distance axes (exact zeros: a token at rest).
DISTANCE_FLOOR = 1e-16


def _plane(positions: np.ndarray) -> np.ndarray:
    """The first two components ``(time, particle, 2)`` (a 1-d run: against the token index)."""
    if positions.shape[-1] >= 2:
        return positions[..., :2]
    index = np.broadcast_to(np.arange(positions.shape[1], dtype=float)[None, :, None], positions.shape)
    return np.concatenate([positions, index], axis=-1)


def _trajectories(ax, positions: np.ndarray, colour="tab:blue", style="-", label=None, start=True,
                  letter: str = "x") -> None:
    """Each token's path in the plane, its start (grey dot, when ``start``) and its end (open circle); the axes name
    the components ``letter_1``, ``letter_2`` (``z`` for rescaled tokens)."""
    plane = _plane(positions)
    for i in range(plane.shape[1]):
        ax.plot(plane[:, i, 0], plane[:, i, 1], style, color=colour, lw=0.8, alpha=0.8,
                label=label if i == 0 else None)
    if start:
        ax.plot(plane[0, :, 0], plane[0, :, 1], "o", color="0.5", ms=3, label="start")
    ax.plot(plane[-1, :, 0], plane[-1, :, 1], "o", color=colour, ms=4, mfc="none", label="end")
    ax.set_xlabel(f"${letter}_1$" if positions.shape[-1] >= 2 else f"${letter}$")
    ax.set_ylabel(f"${letter}_2$" if positions.shape[-1] >= 2 else "token")
    ax.set_aspect("equal" if positions.shape[-1] >= 2 else "auto", adjustable="datalim")


def hardmax_figure(dataset) -> Figure:
    fig = Figure(figsize=(13, 5.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    times = dataset["time"].values
    _trajectories(left, dataset["positions"].values, label="hardmax")
    if "softmax_positions" in dataset:
        _trajectories(left, dataset["softmax_positions"].values, "tab:orange", "--",
                      label=f"softmax, beta = {dataset.attrs['beta']:g}", start=False)
        right.semilogy(times, np.maximum(dataset["distance"].values, DISTANCE_FLOOR), color="k")
        right.set_ylabel(r"$\max_i |x_i^{\rm soft}(t) - x_i(t)|$")
        right.set_title("(b) distance from the finite-beta twin")
    else:
        positions = dataset["positions"].values
        gaps = np.linalg.norm(positions - positions[-1], axis=-1)
        right.semilogy(times, np.maximum(gaps, DISTANCE_FLOOR), color="tab:blue", lw=0.7)
        right.set_ylabel(r"$|x_i(t) - x_i(t_{\rm end})|$")
        right.set_title("(b) each token's distance to its last position")
    for index, event in enumerate(dataset["event_time"].values):
        right.axvline(float(event), color="tab:red", lw=0.6, ls=":", label="argmax-set changes" if index == 0 else None)
    right.set_xlabel("time $t$")
    if dataset.sizes["event"]:
        right.legend(loc="best", fontsize=8)
    left.set_title("(a) token trajectories (first two components)")
    left.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig


class _PolytopeLimit:
    """The drawing of a polytope limit set (``V = c I``): the limit points and their hull over the trajectories,
    each token's distance to its limit point in time."""

    def draw(self, ax, dataset) -> None:
        values = dataset["limit_value"].values
        plane = _plane(values[None])[0]
        ax.plot(plane[:, 0], plane[:, 1], "*", color="tab:red", ms=12, label=f"{len(values)} limit points")
        if values.shape[-1] == 2 and len(values) >= 3:
            hull = ConvexHull(values)
            ring = np.append(hull.vertices, hull.vertices[0])
            ax.plot(values[ring, 0], values[ring, 1], color="tab:red", lw=0.8)

    def convergence(self, ax, dataset) -> None:
        positions, values = dataset["positions"].values, dataset["limit_value"].values
        gaps = np.linalg.norm(positions - values[dataset["limit_label"].values][None], axis=-1)
        ax.semilogy(dataset["time"].values, np.maximum(gaps, DISTANCE_FLOOR), color="tab:blue", lw=0.7)
        ax.set(ylabel="distance to the limit point", title="(b) convergence to the polytope's vertices")

    @staticmethod
    def title(count: int) -> str:
        return f"{count} polytope vertices"


class _HyperplaneLimit:
    """The drawing of parallel hyperplanes ``<l_1, z> = c`` (a simple positive top eigenvalue of ``V``): the lines
    over the trajectories (2-d runs), the coordinate along the top eigenvector in time."""

    def draw(self, ax, dataset) -> None:
        values, direction = dataset["limit_value"].values, dataset["direction"].values
        if direction.size != 2:
            return
        span = np.linspace(-1.0, 1.0, 2) * float(np.abs(dataset["positions"].values[-1]).max() * 1.2 + 1.0)
        along = np.array([-direction[1], direction[0]])
        for index, level in enumerate(values):
            base = level * direction / float(direction @ direction)
            ax.plot(base[0] + span * along[0], base[1] + span * along[1], color="tab:red", lw=0.8, ls="--",
                    label=f"{len(values)} hyperplanes" if index == 0 else None)

    def convergence(self, ax, dataset) -> None:
        ax.plot(dataset["time"].values, dataset["positions"].values @ dataset["direction"].values, color="tab:blue",
                lw=0.7)
        for level in dataset["limit_value"].values:
            ax.axhline(float(level), color="tab:red", lw=0.8, ls="--")
        ax.set(ylabel=r"$\langle l_1, z_i(t) \rangle$",
               title="(b) the coordinate along the top eigenvector, levels dashed")

    @staticmethod
    def title(count: int) -> str:
        return f"{count} hyperplanes"


#: How each limit geometry of :func:`meanfield.rd_tokens.rd_limit_sets` (the run's ``limit_geometry``) is drawn.
LIMIT_DRAWINGS = {"polytope": _PolytopeLimit(), "hyperplanes": _HyperplaneLimit()}


def rd_figure(dataset) -> Figure:
    fig = Figure(figsize=(13, 5.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    limit = LIMIT_DRAWINGS[dataset.attrs["limit_geometry"]]
    _trajectories(left, dataset["positions"].values, label=r"$z_i(t) = e^{-tV} x_i(t)$", letter="z")
    limit.draw(left, dataset)
    limit.convergence(right, dataset)
    right.set_xlabel("time $t$")
    left.set_title("(a) rescaled trajectories and their limit set")
    left.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig


def token_title(dataset) -> str:
    """Model, tokens, case and why the run stopped if it did."""
    attrs = dataset.attrs
    head = (f"hardmax attention, case {attrs['case']}" if attrs["geometry"] == "hardmax" else
            f"tokens in R^d, V = {attrs['value']}: "
            + LIMIT_DRAWINGS[attrs["limit_geometry"]].title(int(attrs["limit_count"])))
    stopped = "" if attrs["stop_reason"] == "completed" else f" (stopped: {short_reason(attrs['stop_reason'])})"
    return f"{head}; n = {attrs['n_particles']}, d = {attrs['dim']}, t in [0, {float(dataset.time[-1]):.4g}]{stopped}"


#: A token run's figure by its ``geometry`` attribute (the variables it reads: :data:`.run_data.TOKEN_REQUIRED`).
TOKEN_FIGURES = {"hardmax": hardmax_figure, "rd-tokens": rd_figure}
