"""The quick long-context study (MATH.md §7) writes its table and figure and reports the right numbers."""

import numpy as np
import pytest
import xarray as xr

from meanfield.validation.studies.long_context import RHO, format_table, gamma_half_sampled, run_study


def test_quick_long_context_study(tmp_path):
    table = run_study(quick=True, out_dir=tmp_path)
    assert (tmp_path / "long_context.png").stat().st_size > 10_000
    written = xr.open_dataset(tmp_path / "long_context.nc")
    assert float(written.sel(rho=RHO).critical_gamma) == 2.0 and float(written.sel(rho=RHO).critical_cosine) == 0.8
    written.close()
    assert float(table.gram_error.max()) < 1e-12 and list(table.n_check.values) == [10, 100, 1000]
    # Finite-n cosine at gamma_c: 0.8 + O(1/n); the midpoint crossing approaches gamma_c from above like 1/log n.
    assert abs(float(table.cosine_at_critical.sel(rho=RHO, n=1e18)) - 0.8) < 1e-15
    half = table.gamma_half.sel(rho=RHO).values
    assert np.all(np.diff(half) < 0) and 2.0 < half[-1] < 2.02
    # Monte Carlo: beta = 0 collapses every token onto the mean; large gamma keeps rho; near 0.8 at gamma_c.
    almost = table.isel(mc_case=0).sel(n_mc=1000)
    assert float(almost.mc_rho) == RHO and abs(float(almost.mc_cosine.sel(gamma_mc=0.0)) - 1.0) < 1e-12
    assert abs(float(almost.mc_cosine.sel(gamma_mc=4.0)) - RHO) < 0.05
    assert abs(float(almost.mc_cosine.sel(gamma_mc=2.0)) - 0.8) < 0.03
    uniform = table.isel(mc_case=2)
    assert float(uniform.mc_rho) == 0.0 and np.all(np.abs(uniform.mc_cosine.sel(gamma_mc=1.0).values) < 0.05)
    text = format_table(table)
    assert "gamma_half" in text and "formula vs direct layer" in text


def test_sampled_crossing_interpolates_and_reports_no_crossing():
    gammas = np.array([0.0, 1.0, 2.0])
    assert gamma_half_sampled(gammas, np.array([1.0, 0.8, 0.6]), 0.7) == pytest.approx(1.5, abs=1e-14)
    assert np.isnan(gamma_half_sampled(gammas, np.array([1.0, 0.9, 0.8]), 0.7))
