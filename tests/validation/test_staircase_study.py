"""The staircase study's analysis (validation/studies/staircase.py) on a small Lagrangian run."""

import math

import numpy as np
import pytest

from meanfield.solvers.runs.solve import solve
from meanfield.validation.studies.staircase import analyse, fitted_slopes, plot_study, slope_against_estimate


def test_analysis_matches_the_k_point_ode_and_draws_the_figure(tmp_path):
    runs, rows = {}, []
    for beta in (4.0, 6.0):
        run = solve("circle", scheme="lagrangian", beta=beta, resolution=256, init="perturbed:1e-3", seed=0,
                    t_final=1e8, save_log=10)
        runs[("lagrangian", beta)] = run
        rows.append(analyse(run, "lagrangian", beta))
    for row in rows:
        assert row["stop_reason"] == "completed" and row["final_count"] == 1
        assert row["merges_run"] == row["merges_theory"] >= 1
        # the K-point ODE starts from the one definition's clusters (seed 0 at beta = 6 forms a fourth cluster 0.005
        # rad from another, inside one of the definition's cells, which merges 1.5 time units later: the reference
        # frame comes after it, else the ODE starts from 4 points while the run counts 3 and the study's
        # quick claim on the merge times failed by 8e-6)
        assert row["merges_theory"] == row["count_at_ref"] - 1
        assert row["merge_rel_err"] < 30 * 1e-8          # the study's claim: 30 rtol (measured 4e-8, 1.4e-7)
        assert row["first_merge_run"] == pytest.approx(row["first_merge_theory"], rel=30 * 1e-8)
        assert row["plateau_energy_gap"] < 1e-5          # the run's energy is the K-point energy (measured 2e-7)
    assert rows[0]["count_at_ref"] == rows[0]["k_star"] == 3
    measured, estimate = fitted_slopes(rows, "lagrangian")
    # MATH.md §5: a pair at distance D merges after a time of order exp(beta (1 - cos D)): the first merge grows
    # with that estimate (slope of the logs 0.68; "of order": no closer), and its dependence on beta follows the
    # estimate's (slopes 0.98 for the run and 1.44 for the estimate)
    assert 0 < slope_against_estimate(rows) < math.inf
    assert math.isfinite(measured) and math.isfinite(estimate) and np.sign(measured) == np.sign(estimate)
    plot_study(runs, rows, tmp_path / "staircase.png")
    assert (tmp_path / "staircase.png").stat().st_size > 10_000
