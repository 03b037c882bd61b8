"""The whole metastable staircase against the K-point ODE (MATH.md §5): ``meanfield validate staircase``.

For every case (circle SA at several beta from a ``perturbed:EPS`` density with Lagrangian nodes,
the same beta from i.i.d. tokens, and S^2 at one beta with Lagrangian nodes) one run goes to
``t_final`` on a log time axis with coincident nodes collapsing (:mod:`meanfield.solvers.tracking.clusters`).  Then:

* ``t_ref``: the first saved frame at which the clusters are points (the run's energy equals the
  point-cluster energy to 1e-8 relative, and the points linked within 1e-3 rad that carry >= 1 % of the mass are
  the one definition's clusters, :mod:`meanfield.cluster_detection`: a pair still closing inside one of its
  cells is not yet a plateau) -- "just after formation";
* the count there against the dominant mode ``k*`` of the linear theory (MATH.md §2.3);
* every later merge of the run against :func:`meanfield.cluster_dynamics.cluster_history`, the
  K-point ODE started from the clusters at ``t_ref``, its merges dated by the same cluster observable
  (:meth:`meanfield.cluster_dynamics.ClusterHistory.observed_merges`, MATH.md §10);
* the first merge against the plateau estimate ``exp(beta (1 - cos D))`` of the nearest pair at
  ``t_ref``: across beta, the fitted slope of ``log t_merge`` against beta beside the slope of the
  log of the estimate, and over all circle cases the slope of ``log t_merge`` against the log of the
  estimate (theory: 1; the estimate has no prefactor, and ``D`` differs from case to case); the same
  slope against the two-cluster law with its prefactor, ``exp(beta (1 - cos D)) / ((m_a/m_b + m_b/m_a)
  beta sin^2 D)`` (:func:`meanfield.cluster_dynamics.merge_time_estimate`, MATH.md §5), with its
  least-squares standard error (``slope_against_merge_estimate``, ``_stderr``, ``_dof``): the other
  clusters, which the law ignores, scatter the points about it;
* the energy of every frame after ``t_ref`` against the energy of the K-point ODE's points.

Parameters (``meanfield validate staircase --beta B1,B2,... --n N --seed S --geometry G``): the betas of every
geometry's runs (at least two on the circle, where the first merges' law is fitted across beta), the particles'
count (at least 500: a cluster is >= 1 % of the tokens, and fewer than five i.i.d. tokens may clump by chance) and one
geometry (S^2 alone: the Lagrangian claims read the S^2 runs).

Output (``out_dir``): ``staircase.nc`` (one row per case), ``staircase.png`` (cluster angles
against log t, each cluster a line whose width shows its mass; energy staircases with the predicted
plateaus dashed; first merges against beta).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield.errors import require
from meanfield.cluster_dynamics import MERGE_DISTANCE, cluster_history, merge_time_estimate, plateau_estimate
from meanfield.model import Model
from meanfield.plotting.style import legend_below
from meanfield.app.storage import save_run
from meanfield.theory import dominant_mode
from meanfield.solvers.tracking.clusters import frame_clusters
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.solve import solve
from meanfield.fits import fit_line, log_log_slope

from ..claims import Check, at_most, below, equal, fraction, within_errors
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..registry import STUDIES

FULL = {"betas": (4.0, 6.0, 9.0, 12.0), "nodes": 512, "tokens": 2048, "sphere_betas": (9.0,), "sphere_lmax": 31,
        "t_final": 1e12, "eps": 1e-4}
QUICK = {"betas": (4.0, 6.0, 9.0), "nodes": 256, "tokens": 1024, "sphere_betas": (4.0,), "sphere_lmax": 10,
         "t_final": 1e10, "eps": 1e-3}
#: The clusters are points once the run's energy equals their point energy to this (relative).
POINT_TOL = 1e-8


#: The label of the one case on S^2 (the others are on the circle).
SPHERE_CASE = "sphere"


def _circle_cases(preset: dict, common: dict) -> list[tuple[str, float, callable]]:
    cases = []
    for beta in preset["betas"]:
        cases.append(("lagrangian", beta, lambda beta=beta: solve(
            "circle", scheme="lagrangian", beta=beta, resolution=preset["nodes"],
            init=f"perturbed:{preset['eps']:g}", **common)))
        cases.append(("particles", beta, lambda beta=beta: simulate(
            dim=2, n=preset["tokens"], beta=beta, init="uniform", **common)))
    return cases


def _sphere_cases(preset: dict, common: dict) -> list[tuple[str, float, callable]]:
    return [(SPHERE_CASE, beta, lambda beta=beta: solve(
        "sphere", scheme="lagrangian", beta=beta, resolution=preset["sphere_lmax"],
        init=f"perturbed:{preset['eps']:g}", **common)) for beta in preset["sphere_betas"]]


#: The cases of each geometry the study runs (``--geometry``: one of them; default both).
GEOMETRY_CASES = {"circle": _circle_cases, "sphere": _sphere_cases}


def _cases(preset: dict, seed: int) -> list[tuple[str, float, callable]]:
    common = dict(seed=seed, t_final=preset["t_final"], save_log=20)
    return [case for geometry in preset["geometries"] for case in GEOMETRY_CASES[geometry](preset, common)]


def study_preset(quick: bool, betas=None, n=None, geometry=None) -> dict:
    """The preset with the parameters given (None: the preset's), checked.  ``betas`` are those of every geometry
    run (the circle's Lagrangian and particle cases, and the S^2 case at each); on the circle at least two, as the
    claims fit the first merges' law across beta; ``n`` the particle count; ``geometry`` one of
    :data:`GEOMETRY_CASES`."""
    preset = dict(QUICK if quick else FULL, geometries=tuple(GEOMETRY_CASES))
    require(geometry is None or geometry in GEOMETRY_CASES,
            f"--geometry must be one of {', '.join(GEOMETRY_CASES)} for this study (got {geometry})")
    if geometry is not None:
        preset["geometries"] = (geometry,)
    if betas is not None:
        betas = tuple(float(beta) for beta in betas)
        require(len(betas) >= 1 and all(beta > 0 for beta in betas),
                f"--beta must be > 0 for this study (got {', '.join(f'{beta:g}' for beta in betas)})")
        circle = any(GEOMETRY_CASES[name] is _circle_cases for name in preset["geometries"])
        require(len(set(betas)) >= 2 or not circle,
                f"--beta must give at least two values for this study on the circle: its claims fit the first "
                f"merges' law across beta (got {', '.join(f'{beta:g}' for beta in betas)})")
        preset.update(betas=betas, sphere_betas=betas)
    if n is not None:
        require(int(n) == n and n >= 500, f"--n must be an integer >= 500 for this study: a cluster is >= 1 % of the "
                                          f"tokens, and fewer than 5 i.i.d. tokens may clump by chance (got {n:g})")
        preset["tokens"] = int(n)
    return preset


def reference_frame(run) -> int:
    """The first frame at which the clusters are points (see the module docstring); the last if none."""
    gap = np.abs(run["energy"].values - run["cluster_energy"].values) / run["energy"].values
    candidates = np.nonzero((gap <= POINT_TOL) & (run["cluster_count"].values > 0) & (run.time.values > 0))[0]
    counts = run["cluster_count"].values     # the points (>= 1 % each) are the one definition's clusters
    first = next((int(i) for i in candidates if frame_clusters(run, int(i))[1].size == counts[i]), None)
    return run.sizes["time"] - 1 if first is None else first


def analyse(run, source: str, beta: float) -> dict:
    """One row of the study's table (module docstring)."""
    model = Model(attention="sa", beta=beta, dim=int(run.attrs["dim"]))
    start = reference_frame(run)
    t_ref = float(run.time[start])
    centres, masses = frame_clusters(run, start)
    theory = cluster_history(centres, masses, beta, t_start=t_ref, t_final=float(run.time[-1]))
    kpoint = [time for time, _ in theory.observed_merges()]   # the run's merges: the observable's (MATH.md §10)
    measured = run["merge_time"].values
    measured = measured[measured > t_ref]
    paired = min(measured.size, len(kpoint))
    errors = np.abs(measured[:paired] / np.array(kpoint[:paired]) - 1.0) if paired else np.array([])
    plateau_gap = _plateau_energy_gap(run, theory)
    return {"source": source, "beta": beta, "k_star": dominant_mode(model), "t_ref": t_ref,
            "count_at_ref": int(run["cluster_count"].values[start]), "final_count": int(run["cluster_count"].values[-1]),
            "merges_run": int(measured.size), "merges_theory": len(kpoint),
            "merge_rel_err": float(errors.max()) if errors.size else math.nan,
            "first_merge_run": float(measured[0]) if measured.size else math.nan,
            "first_merge_theory": float(kpoint[0]) if kpoint else math.nan,
            "plateau_estimate": plateau_estimate(centres, beta),
            "merge_estimate": merge_time_estimate(centres, masses, beta), "plateau_energy_gap": plateau_gap,
            "rtol": float(run.attrs["rtol"]), "stop_reason": run.attrs["stop_reason"],
            "wall_time": float(run.attrs["wall_time"])}


def _plateau_energy_gap(run, theory) -> float:
    """Largest relative gap, over the frames after ``t_ref``, between the run's energy and the energy of
    the K-point ODE's points at the same time."""
    times, energy = run.time.values, run["energy"].values
    after = times >= theory.plateaus[0][0]
    predicted = np.array([theory.energy_at(float(t)) for t in times[after]])
    return float(np.max(np.abs(energy[after] / predicted - 1.0)))


def slope_against_estimate(rows: list[dict]) -> float:
    """Slope of ``log(first merge - t_ref)`` against ``log exp(beta (1 - cos D))`` over all circle cases
    (1 if the plateau estimate captures the exponential dependence; its prefactor is not fitted)."""
    chosen = [r for r in rows if r["source"] != SPHERE_CASE and np.isfinite(r["first_merge_run"])]
    if len(chosen) < 2:
        return math.nan
    return log_log_slope([r["plateau_estimate"] for r in chosen], [r["first_merge_run"] - r["t_ref"] for r in chosen])


def slope_against_merge_estimate(rows: list[dict]) -> tuple[float, float, int]:
    """Least-squares slope of ``log(first merge - t_ref)`` against ``log merge_estimate`` over all circle cases,
    its standard error from the residuals and their degrees of freedom (theory: slope 1)."""
    chosen = [r for r in rows if r["source"] != SPHERE_CASE and np.isfinite(r["first_merge_run"])]
    if len(chosen) < 3:
        return math.nan, math.nan, 0
    x = np.log([r["merge_estimate"] for r in chosen])
    y = np.log([r["first_merge_run"] - r["t_ref"] for r in chosen])
    slope, intercept = fit_line(x, y)
    dof = len(chosen) - 2
    residual = y - (slope * x + intercept)
    stderr = math.sqrt(float(np.sum(residual ** 2)) / dof / float(np.sum((x - x.mean()) ** 2)))
    return float(slope), stderr, dof


def fitted_slopes(rows: list[dict], source: str) -> tuple[float, float]:
    """Slopes against beta of ``log t_merge`` (run) and of ``log exp(beta (1 - cos D))`` (estimate)."""
    chosen = [r for r in rows if r["source"] == source and np.isfinite(r["first_merge_run"])]
    if len(chosen) < 2:
        return math.nan, math.nan
    betas = np.array([r["beta"] for r in chosen])
    merged = fit_line(betas, np.log([r["first_merge_run"] - r["t_ref"] for r in chosen]))[0]
    estimate = fit_line(betas, np.log([r["plateau_estimate"] for r in chosen]))[0]
    return merged, estimate


def run_study(quick: bool = False, out_dir="staircase-study", seed: int = 0, betas=None, n: int | None = None,
              geometry: str | None = None) -> xr.Dataset:
    """Every case (module docstring) at the preset's sizes, with the betas, particle count ``n`` and geometry
    given (:func:`study_preset`); writes the runs, the table and the figure, returns the table."""
    preset = study_preset(quick, betas, n, geometry)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows, runs = [], {}
    cases = list(_cases(preset, seed))
    with progress_bar(len(cases), "staircase") as bar:
        for source, beta, runner in cases:
            run = runner()
            runs[(source, beta)] = run
            save_run(run, out / f"{source}-beta{beta:g}.nc")
            rows.append(analyse(run, source, beta))
            bar.update()
    table = xr.Dataset({key: ("case", [row[key] for row in rows]) for key in rows[0]},
                       attrs={"study": "staircase", "quick": int(quick), "seed": seed,
                              "wall_time": time.perf_counter() - start,
                              "command": STUDIES["staircase"].command(quick, out_dir, {
                                  "beta": None if betas is None else ",".join(f"{beta:g}" for beta in betas),
                                  "n": n,
                                  "seed": seed or None, "geometry": geometry}),
                              **{f"preset_{k}": str(v) for k, v in preset.items()
                                 if k != "geometries"},
                              "geometry": ",".join(preset["geometries"])})
    for source in ("lagrangian", "particles"):
        measured, estimate = fitted_slopes(rows, source)
        table.attrs[f"slope_{source}"] = measured
        table.attrs[f"slope_estimate_{source}"] = estimate
    table.attrs["slope_against_estimate"] = slope_against_estimate(rows)
    (table.attrs["slope_against_merge_estimate"], table.attrs["slope_against_merge_estimate_stderr"],
     table.attrs["slope_against_merge_estimate_dof"]) = slope_against_merge_estimate(rows)
    write_dataset(table, out / "staircase.nc")
    plot_study(runs, rows, out / "staircase.png")
    return table


def plot_study(runs: dict, rows: list[dict], path) -> None:
    """Cluster angles against log t (circle, marker area = mass) and energy staircases with predictions."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    circle = [key for key in runs if key[0] != SPHERE_CASE]
    fig = Figure(figsize=(16, 5 + 2.4 * math.ceil(len(circle) / 2)), layout="constrained")   # room for legends below
    grid = fig.add_gridspec(math.ceil(len(circle) / 2) + 1, 2)
    for index, key in enumerate(circle):
        ax = fig.add_subplot(grid[index // 2, index % 2])
        _cluster_lines(ax, runs[key])
        run = runs[key]
        for time_ in run["merge_time"].values:
            ax.axvline(time_, color="tab:blue", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_ylim(0, 2 * math.pi)
        ax.set_xlabel("time t (log scale)")
        ax.set_ylabel("cluster angle (rad)")
        ax.set_title(f"{key[0]}, beta = {key[1]:g}: cluster angles (line width = mass), merges dotted",
                     fontsize="medium")
    _first_merge_panel(fig.add_subplot(grid[-1, 1]), rows)
    ax = fig.add_subplot(grid[-1, 0])
    colours = iter(["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"])
    for key, row in zip(runs, rows):
        run, colour = runs[key], next(colours)
        positive = run.time.values > 0
        ax.plot(run.time.values[positive], run["energy"].values[positive], color=colour, lw=1.4,
                label=f"{key[0]} beta {key[1]:g}")
        start = int(np.argmin(np.abs(run.time.values - row["t_ref"])))
        history = cluster_history(*frame_clusters(run, start), key[1], t_start=row["t_ref"],
                                  t_final=float(run.time[-1]))
        ends = [p[0] for p in history.plateaus[1:]] + [float(run.time[-1])]
        for (begin, _, level), end in zip(history.plateaus, ends):
            ax.hlines(level, begin, end, color=colour, ls="--", lw=1.0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time t (log scale)")
    ax.set_ylabel(r"scaled interaction energy $e^{-\beta} E$")
    ax.set_title("energy staircases; dashed: plateau energies of the K-point ODE from t_ref", fontsize="medium")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="k", ls="--", lw=1.0))
    labels.append("K-point ODE plateaus")
    legend_below(ax, handles, labels, ncol=4, fontsize="x-small")
    save_figure(fig, path, dpi=110)


def _cluster_lines(ax, run, width: float = 6.0, jump: float = 0.5) -> None:
    """Each cluster a line through its angle at consecutive frames, as wide as its mass times ``width``.

    A cluster of one frame is continued from the nearest cluster (by angle) of the frame before, unless
    that is more than ``jump`` rad away (a cluster that has just formed, or the 0 / 2 pi seam)."""
    from matplotlib.collections import LineCollection

    segments, widths, previous = [], [], None
    for frame in np.nonzero(run.time.values > 0)[0]:
        centres, masses = frame_clusters(run, frame)
        angles = np.mod(np.arctan2(centres[:, 1], centres[:, 0]), 2 * math.pi)
        time_ = float(run.time.values[frame])
        if previous is not None and previous[1].size and angles.size:
            before = previous[1][np.argmin(np.abs(angles[:, None] - previous[1][None, :]), axis=1)]
            for angle, start, mass in zip(angles, before, masses):
                if abs(angle - start) < jump:
                    segments.append([(previous[0], start), (time_, angle)])
                    widths.append(width * mass)
        previous = (time_, angles)
    ax.add_collection(LineCollection(segments, linewidths=widths, colors="k", capstyle="butt"))
    first = segments[0][0][0] if segments else float(run.time.values[1])
    ax.set_xlim(first, float(run.time.values[-1]))


def _first_merge_panel(ax, rows: list[dict]) -> None:
    """First merge (after t_ref) against beta on a log axis, beside the plateau estimate exp(beta (1 - cos D))."""
    for source, marker in (("lagrangian", "o"), ("particles", "s"), ("sphere", "^")):
        chosen = [r for r in rows if r["source"] == source and np.isfinite(r["first_merge_run"])]
        if not chosen:
            continue
        betas = [r["beta"] for r in chosen]
        line = ax.plot(betas, [r["first_merge_run"] - r["t_ref"] for r in chosen], marker, label=f"{source}: run")[0]
        ax.plot(betas, [r["plateau_estimate"] for r in chosen], marker, mfc="none", color=line.get_color(),
                label=f"{source}: exp(beta (1 - cos D))")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel("first merge time - t_ref (log scale)")
    ax.set_title("first merge against beta (D: nearest pair at t_ref)", fontsize="medium")
    legend_below(ax, ncol=3, fontsize="x-small")


def format_table(table: xr.Dataset) -> str:
    header = (f"{'source':>10} {'beta':>5} {'k*':>3} {'count':>5} {'t_ref':>8} {'merges':>7} {'theory':>6} "
              f"{'max rel err':>11} {'first merge':>11} {'K-point':>11} {'exp(b(1-cosD))':>14} "
              f"{'final':>5} {'E gap':>8} {'wall s':>7}")
    lines = [header]
    for i in range(table.sizes["case"]):
        r = {key: table[key].values[i] for key in table.data_vars}
        lines.append(f"{r['source']:>10} {r['beta']:>5g} {r['k_star']:>3} {r['count_at_ref']:>5} {r['t_ref']:>8.3g} "
                     f"{r['merges_run']:>7} {r['merges_theory']:>6} {r['merge_rel_err']:>11.2e} "
                     f"{r['first_merge_run']:>11.4g} {r['first_merge_theory']:>11.4g} {r['plateau_estimate']:>14.4g} "
                     f"{r['final_count']:>5} {r['plateau_energy_gap']:>8.1e} {r['wall_time']:>7.1f}")
    for source in ("lagrangian", "particles"):
        lines.append(f"{source}: slope of log(first merge - t_ref) against beta {table.attrs[f'slope_{source}']:.3f}; "
                     f"of log exp(beta (1 - cos D)) {table.attrs[f'slope_estimate_{source}']:.3f}")
    lines.append(f"all circle cases: slope of log(first merge - t_ref) against log exp(beta (1 - cos D)) "
                 f"{table.attrs['slope_against_estimate']:.3f} (theory 1)")
    lines.append(f"all circle cases: against the two-cluster law with its prefactor "
                 f"{table.attrs['slope_against_merge_estimate']:.3f} ± "
                 f"{table.attrs['slope_against_merge_estimate_stderr']:.3f} (theory 1)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- claims
def staircase_claims(table) -> list[Check]:
    """The claims on the circle's Lagrangian runs (on the S^2 ones when the study ran S^2 alone, ``--geometry``) and,
    with circle runs, on the first merges' law across all of them."""
    lagrangian, who = table.source.values == "lagrangian", "Lagrangian runs"
    if not lagrangian.any():
        lagrangian, who = table.source.values == SPHERE_CASE, "S^2 Lagrangian runs"
    rtol = float(np.max(table.rtol.values))
    beta = float(np.min(table.beta.values[lagrangian]))
    attrs = table.attrs
    checks = [fraction(f"{who} end in one cluster", table.final_count.values[lagrangian] == 1,
                       source="theory: the K-point ODE from t_ref merges every pair before t_final (MATH.md §5)"),
              equal(f"{who}: as many merges as the K-point ODE (MATH.md §5)",
                    table.merges_theory.values[lagrangian], table.merges_run.values[lagrangian],
                    source="exact: counts of merges"),
              below(f"{who.replace(' runs', '')} merge times against the K-point ODE (largest relative error)",
                    np.nanmax(table.merge_rel_err.values[lagrangian]), 30 * rtol,
                    source="measured convergence: the error is the run's time-integration error, proportional to its "
                           "rtol (8.7e-8, 8.6e-10 at rtol = 1e-8, 1e-10 for beta = 4; 9.4e-8, 1.7e-9 for beta = 9): "
                           "30 rtol"),
              at_most(f"{who.replace(' runs', '')} plateau energy is the K-point energy (largest relative gap)",
                      np.nanmax(table.plateau_energy_gap.values[lagrangian]),
                      beta * MERGE_DISTANCE ** 2 / 4 + 30 * rtol,
                      source=f"theory: the K-point ODE joins a pair at MERGE_DISTANCE = {MERGE_DISTANCE:g} rad, when "
                             f"the run's pair is still that far apart: a relative energy deficit <= beta d^2 / 4 "
                             f"(MATH.md §5; smallest beta, {beta:g}), plus the merge-time error 30 rtol")]
    if np.any(table.source.values != SPHERE_CASE):
        checks.append(within_errors(
            "First merges follow the two-cluster plateau law exp(beta (1 - cos D)) / ((m_a/m_b + m_b/m_a) beta "
            "sin^2 D) (slope of log merge time against log law, all circle runs)", 1.0,
            attrs["slope_against_merge_estimate"], attrs["slope_against_merge_estimate_stderr"],
            "least-squares standard error: the other clusters scatter the runs about the law",
            dof=int(attrs["slope_against_merge_estimate_dof"])))
    return checks


def main(argv=None) -> xr.Dataset:
    return study_main(argv, __doc__.splitlines()[0], "staircase-study", run_study, format_table, "staircase")


if __name__ == "__main__":
    main()
