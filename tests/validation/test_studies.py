"""The validation studies run in their quick sizes and report numbers that match theory."""

import numpy as np

from meanfield.validation.benchmarks.circle import format_table, run_benchmark
from meanfield.validation.studies.growth_rates import format_table as growth_table, growth_claims, run_study


def test_growth_study_quick_matches_theory():
    table = run_study(quick=True)
    assert table.sizes["case"] == 6 and float(table["relative_error"].max()) < 1e-6
    assert all(check.passed for check in growth_claims(table))   # every rate within dopri5's step error + feed
    assert "max rel. error" in growth_table(table)


def test_benchmark_spectral_convolution_equals_direct_quadrature():
    rows = run_benchmark(sizes=(256, 512), quick=True)
    assert [row["N"] for row in rows] == [256, 512]
    for row in rows:
        assert row["max_rel_diff"] < 1e-13
        assert np.isfinite(row["ratio_sa"]) and row["ratio_sa"] > 0
    assert "ratio_sa" in format_table(rows)


def test_cluster_scheme_benchmark_band_limited_sums_equal_direct_ones():
    from meanfield.validation.benchmarks.cluster_schemes import COLUMNS, run_benchmark
    rows = run_benchmark(sizes=(256,), quick=True)
    assert rows[0]["max_rel_diff"] < 1e-12
    assert all(np.isfinite(rows[0][key]) and rows[0][key] > 0 for key in ("fv_us", "ratio_transforms", "speedup"))
    assert "speedup" in format_table(rows, COLUMNS)


def test_particle_benchmark_times_every_normalisation_scheme_against_post_ln():
    from meanfield.validation.benchmarks.particles import NORMALIZATION_COLUMNS, _normalization_rows
    from meanfield.validation.benchmarks.particles import format_table as particle_table

    rows = _normalization_rows(300, {"target": 0.01, "repeats": 1})
    assert [row["scheme"] for row in rows] == ["post", "pre", "mix", "peri", "ngpt", "lnscale"]
    assert rows[0]["ratio"] == 1.0 and all(row["rhs_ms"] > 0 for row in rows)
    assert [row["state"] for row in rows] == ["x", "x, r", "x, r", "x, r", "x", "x"]
    assert "ratio_to_post" in particle_table(rows, NORMALIZATION_COLUMNS)
