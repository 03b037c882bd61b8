"""The cluster count at formation: runs against the linear theory's predicted distribution (MATH.md §2.4,
§10): ``meanfield validate formation-count``.

For each case (geometry, beta) the runs start from ``perturbed:1e-4`` with seeds ``0 .. seeds - 1`` (SA, no noise;
Lagrangian nodes: 512 on the circle, degree ``sphere_lmax`` on S^2) and their count at formation is read from their
events (:func:`meanfield.formation_count.count_at_formation`: the count just before the first merge).  The prediction
is :func:`meanfield.formation_count.count_distribution` over ``draws`` other draws of the law (seeds from
:data:`PREDICTION_SEEDS`, none a run's), with its Monte Carlo standard errors.

Test: the chi-square statistic ``sum (O - E)^2 / E`` of the runs' counts against ``seeds x P``, its p-value by Monte
Carlo (:data:`P_VALUE_SAMPLES` samples of ``seeds`` counts drawn from the predicted law; exact for small samples,
where the chi-square law is not), a count never predicted giving ``p = 0``.  Cases: the circle at beta = 9 (near tie
4 / 5) and 16 (near tie 5 / 6); S^2 at beta 7 and 9.  Also reported: how often a run's count is the prediction for
its own seed (the same draw of the law).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield.errors import require
from meanfield.formation_count import PATTERNS, count_at_formation, count_distribution, linear_count
from meanfield.model import Model
from meanfield.solvers.runs.solve import solve

from ..claims import Check, above
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..registry import STUDIES

EPS = 1e-4
#: The prediction's draws start at this seed, away from the runs' seeds 0 .. seeds - 1.
PREDICTION_SEEDS = 100_000
P_VALUE_SAMPLES = 20_000
#: The chi-square test's level.
LEVEL = 0.01
MAX_COUNT = 16

QUICK = {"cases": (("circle", 9.0), ("circle", 16.0), ("sphere", 5.0)), "seeds": 10, "draws": 400,
         "sphere_lmax": 15, "nodes": 512}
FULL = {"cases": (("circle", 9.0), ("circle", 16.0), ("sphere", 7.0), ("sphere", 9.0)), "seeds": 10, "draws": 2000,
        "sphere_lmax": 31, "nodes": 512}


def chi_square_p_value(observed: np.ndarray, probabilities: np.ndarray, samples: int = P_VALUE_SAMPLES,
                       seed: int = 0) -> tuple[float, float]:
    """``(statistic, p)``: ``sum (O - E)^2 / E`` of the observed histogram against ``E = n p`` and the probability that
    ``n`` counts drawn from ``probabilities`` give at least that statistic (Monte Carlo); an observed count with
    ``p = 0`` gives ``(inf, 0)``."""
    observed, probabilities = np.asarray(observed, dtype=float), np.asarray(probabilities, dtype=float)
    n = observed.sum()
    if np.any((probabilities == 0) & (observed > 0)):
        return math.inf, 0.0
    keep = probabilities > 0
    expected = n * probabilities[keep]
    statistic = float(np.sum((observed[keep] - expected) ** 2 / expected))
    draws = np.random.default_rng(seed).multinomial(int(n), probabilities[keep] / probabilities[keep].sum(),
                                                   size=samples)
    simulated = np.sum((draws - expected) ** 2 / expected, axis=1)
    return statistic, float(np.mean(simulated >= statistic - 1e-12))


#: Each geometry's Lagrangian run: the preset key of its resolution and its span (past every first merge of the
#: presets' cases).  A run lasts at least :data:`SPAN_AFTER_ZERO` times its own draw's ``t_0`` (the linear solution
#: touching zero, :func:`meanfield.formation_count.linear_count`): the presets' spans are that and more, a ``--beta``
#: with slower growth runs longer.
RUNS = {"circle": ("nodes", 80.0), "sphere": ("sphere_lmax", 60.0)}
SPAN_AFTER_ZERO = 3.0


def _run(geometry: str, beta: float, seed: int, preset: dict, t_zero: float):
    resolution, span = RUNS[geometry]
    return solve(geometry, scheme="lagrangian", beta=beta, resolution=preset[resolution], init=f"perturbed:{EPS:g}",
                 seed=seed, t_final=max(span, SPAN_AFTER_ZERO * t_zero), save_every=1.0)


def study_cases(preset: dict, betas=None, geometry: str | None = None) -> tuple:
    """The ``(geometry, beta)`` cases: the preset's, those of ``geometry`` only, and with ``betas`` each geometry left
    at every one of ``betas`` (the command line's ``--geometry``, ``--beta``)."""
    cases = tuple(preset["cases"])
    if geometry is not None:
        require(geometry in RUNS, f"--geometry must be {' or '.join(RUNS)} for this study (got {geometry})")
        cases = tuple(case for case in cases if case[0] == geometry)
    if betas is not None:
        require(all(math.isfinite(beta) and beta > 0 for beta in betas),
                f"--beta must be > 0 for this study (got {', '.join(f'{beta:g}' for beta in betas)})")
        geometries = dict.fromkeys(case[0] for case in cases)
        cases = tuple((name, float(beta)) for name in geometries for beta in betas)
    return cases


def run_study(quick: bool = False, out_dir="formation-count-study", betas=None, seeds: int | None = None,
              geometry: str | None = None) -> xr.Dataset:
    """The study of the module docstring; ``betas``, ``seeds``, ``geometry`` replace the preset's (:func:`study_cases`;
    ``seeds``: the runs per case, seeds ``0 .. seeds - 1``)."""
    preset = dict(QUICK if quick else FULL)
    cases = study_cases(preset, betas, geometry)
    if seeds is not None:
        preset["seeds"] = int(seeds)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = []
    with progress_bar(len(cases) * preset["seeds"], "formation-count") as bar:
        for name, beta in cases:
            model = Model("sa", beta, 0.0, PATTERNS[name][1])
            predicted = count_distribution(model, EPS, geometry=name, draws=preset["draws"],
                                           first_seed=PREDICTION_SEEDS)
            require(predicted.counts.max() <= MAX_COUNT,
                    f"--beta {beta:g} predicts up to {predicted.counts.max()} clusters on the {name}; this study "
                    f"counts at most {MAX_COUNT}: take a smaller --beta")
            observed, own = [], []
            for seed in range(preset["seeds"]):
                count, t_zero = linear_count(model, EPS, seed, name)
                require(math.isfinite(t_zero), f"--beta {beta:g}: the uniform state is linearly stable on the {name}, "
                                               f"no clusters form")
                observed.append(count_at_formation(_run(name, beta, seed, preset, t_zero)))
                own.append(count)
                bar.update()
            histogram = np.bincount(observed, minlength=MAX_COUNT + 1)[:MAX_COUNT + 1]
            probabilities = np.zeros(MAX_COUNT + 1)
            inside = predicted.counts <= MAX_COUNT
            probabilities[predicted.counts[inside]] = predicted.probabilities[inside]
            errors = np.zeros(MAX_COUNT + 1)
            errors[predicted.counts[inside]] = predicted.standard_errors[inside]
            statistic, p_value = chi_square_p_value(histogram, probabilities)
            rows.append({"geometry": name, "beta": beta, "observed": histogram, "predicted": probabilities,
                         "predicted_stderr": errors, "chi_square": statistic, "p_value": p_value,
                         "own_seed_agreement": float(np.mean(np.array(observed) == np.array(own)))})
    table = xr.Dataset({key: (("case", "count") if np.ndim(rows[0][key]) else "case", [row[key] for row in rows])
                        for key in rows[0]}, coords={"count": np.arange(MAX_COUNT + 1)},
                       attrs={"study": "formation-count", "quick": int(quick), "eps": EPS, "seeds": preset["seeds"],
                              "draws": preset["draws"], "wall_time": time.perf_counter() - start,
                              "command": STUDIES["formation-count"].command(quick, out_dir, {
                                  "beta": None if betas is None else ",".join(f"{beta:g}" for beta in betas),
                                  "seeds": seeds, "geometry": geometry})})
    write_dataset(table, out / "formation_count.nc")
    plot_study(table, out / "formation_count.png")
    return table


def plot_study(table: xr.Dataset, path) -> None:
    """Per case: the predicted distribution (bars with Monte Carlo error bars) and the runs' counts (dots)."""
    import matplotlib.pyplot as plt

    cases = table.sizes["case"]
    fig, axes = plt.subplots(1, cases, figsize=(3.2 * cases, 3.2), constrained_layout=True, squeeze=False)
    counts = table["count"].values
    for ax, index in zip(axes[0], range(cases)):
        row = table.isel(case=index)
        seeds = int(row.observed.sum())
        ax.bar(counts, seeds * row.predicted.values, yerr=seeds * row.predicted_stderr.values, color="0.8",
               label="predicted (linear theory)")
        ax.plot(counts, row.observed.values, "o", color="C3", label="runs")
        shown = np.flatnonzero((row.predicted.values > 0) | (row.observed.values > 0))
        ax.set(xlim=(shown.min() - 1, shown.max() + 1), xlabel="clusters at formation",
               title=f"{str(row.geometry.values)}, beta = {float(row.beta):g}\np = {float(row.p_value):.2f}")
    axes[0][0].set_ylabel(f"runs of {seeds} seeds")
    axes[0][0].legend(fontsize=7)
    save_figure(fig, path, dpi=110)


def format_table(table: xr.Dataset) -> str:
    lines = [f"{'case':>16} {'observed (count: runs)':>28} {'predicted P (count)':>40} {'chi2':>6} {'p':>6} {'own':>5}"]
    for index in range(table.sizes["case"]):
        row = table.isel(case=index)
        observed = ", ".join(f"{c}: {int(n)}" for c, n in enumerate(row.observed.values) if n)
        predicted = ", ".join(f"{c}: {p:.2f}" for c, p in enumerate(row.predicted.values) if p >= 0.005)
        lines.append(f"{str(row.geometry.values) + ' beta ' + format(float(row.beta), 'g'):>16} {observed:>28} "
                     f"{predicted:>40} {float(row.chi_square):6.2f} {float(row.p_value):6.3f} "
                     f"{float(row.own_seed_agreement):5.2f}")
    return "\n".join(lines)


def formation_count_claims(table: xr.Dataset) -> list[Check]:
    return [above(f"Count at formation, {str(row.geometry.values)} beta = {float(row.beta):g}: runs against the "
                  f"predicted distribution (chi-square p-value)", float(row.p_value), LEVEL, f"> {LEVEL:g}",
                  source=f"standard error: the chi-square test at level {LEVEL:g}, p by Monte Carlo over "
                         f"{P_VALUE_SAMPLES} samples of the predicted law")
            for row in (table.isel(case=index) for index in range(table.sizes["case"]))]


def main(argv=None) -> xr.Dataset:
    return study_main(argv, __doc__.splitlines()[0], "formation-count-study", run_study, format_table,
                      "formation_count")


if __name__ == "__main__":
    main()
