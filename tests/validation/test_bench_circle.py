"""The scaling fits of ``meanfield validate bench-circle`` (item 5 of issue 14), on made-up timings."""

import math

import pytest

from meanfield.validation.benchmarks.circle import format_table, scaling_fits
from meanfield.fits import log_log_slope


def test_fitted_exponent_recovers_a_power_law():
    sizes = [1024, 4096, 16384]
    assert log_log_slope(sizes, [3e-6 * n ** 1.25 for n in sizes]) == pytest.approx(1.25, abs=1e-12)


def test_scaling_fits_see_n_log_n_and_ignore_small_sizes():
    sizes = [256, 1024, 4096, 16384, 65536]
    rows = [{"N": n, "rhs_sa_us": 2e-3 * n * math.log(n) + (50.0 if n < 4096 else 0.0),
             "ffts_us": 1e-3 * n ** 1.5, "rhs_per_nlogn_ns": 1.0, "ffts_per_nlogn_ns": 1.0, "ratio_sa": 2.0}
            for n in sizes]
    fits = scaling_fits(rows, fit_from=4096)
    assert fits["sizes"] == [4096, 16384, 65536]
    p, q = fits["rhs"]
    assert q == pytest.approx(0.0, abs=1e-12) and 1.05 < p < 1.15    # N log N: p a little above 1
    # exactly: log(N log N) = log N + log log N, so p is 1 + the fitted slope of log log N (0.104 here)
    assert p == pytest.approx(1 + log_log_slope(fits["sizes"], [math.log(n) for n in fits["sizes"]]), abs=1e-12)
    assert fits["ffts"][0] == pytest.approx(1.5, abs=1e-12)
    assert scaling_fits(rows, fit_from=65536) is None
    report = format_table(rows)
    assert "fit over N = 16384, 65536: ffts time ~ N^1.500" in report   # from SCALING_FIT_FROM = 8192
    assert "no fit" in format_table(rows[:3])
