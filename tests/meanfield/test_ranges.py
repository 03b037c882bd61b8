"""The range table (meanfield.limits.RANGES): one place that checks every numeric option and that `--help` prints
(issue 21 item 5).  What would fail: a bound checked in one module and printed differently, an open end taken as
closed, the table missing from the help, a beta accepted where scipy's Bessel functions return NaN."""

import math
import re

import pytest

from meanfield import InputError, Model
from meanfield.cli import main
from meanfield.limits import MAX_BETA, RANGES, check_option, range_table


@pytest.mark.parametrize("option", sorted(RANGES))
def test_each_end_of_each_range_is_taken_as_the_table_says(option):
    limits = RANGES[option]
    step = 1 if limits.integer else max(abs(limits.low), 1.0) * 1e-9
    below = limits.low - step
    python_name = option.removeprefix("--").replace("-", "_")      # called from Python: the argument's name
    with pytest.raises(InputError, match=f"^{re.escape(python_name)} must be .*{re.escape(limits.text())}"):
        check_option(option, int(below) if limits.integer else below)
    if limits.low_closed:
        assert check_option(option, int(limits.low) if limits.integer else limits.low) == limits.low
    else:
        with pytest.raises(InputError):
            check_option(option, limits.low)
    if not math.isinf(limits.high):
        top = int(limits.high) if limits.integer else limits.high
        if limits.high_closed:
            assert check_option(option, top) == top
        else:
            with pytest.raises(InputError):
                check_option(option, top)
        with pytest.raises(InputError):
            check_option(option, top + (1 if limits.integer else abs(top) * 1e-9))
    for bad in ([] if limits.integer else [math.nan, math.inf]) + ["1", None, True]:
        with pytest.raises(InputError):
            check_option(option, bad)


def test_the_help_prints_the_table(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for line in range_table().splitlines():
        assert line.strip() in out


def test_beta_stops_where_the_scaled_bessel_functions_do(capsys):
    """scipy's ive returns NaN from 2^30 on: MAX_BETA = 1e9 is below it and every path takes it."""
    from scipy.special import ive

    assert math.isfinite(ive(0, MAX_BETA)) and math.isnan(ive(0, 2.0 ** 30 * 1.01))
    assert Model("sa", MAX_BETA).beta == MAX_BETA
    assert main(["theory", "--beta", "1.1e9"]) == 2
    assert "--beta must be a finite number in [0, 1e+09]" in capsys.readouterr().err
    with pytest.raises(InputError, match="^beta must be <= 700 for USA"):
        Model("usa", 701.0)


def test_the_formation_time_of_a_perturbed_start_uses_the_fastest_mode_it_excites(capsys):
    """perturbed:EPS excites modes 1..16 on the circle (MATH.md §2.4).  At beta = 1e4, k* = 141 is not in the
    start; the formation time used its rate (5.55 vs the 362 of mode 16, whose linear growth from 1.06e-4 needs
    log(1/A_16) / lambda_16)."""
    import numpy as np

    from meanfield import formation_time, growth_rates, law_leader, typical_amplitude

    model = Model("sa", 1e4)
    assert law_leader(model) == 16 and law_leader(Model("sa", 9.0)) == 4
    expected = math.log(1 / typical_amplitude(model, 1e-4, 16)) / growth_rates(model, np.array([16]))[0]
    assert formation_time(model, 1e-4) == pytest.approx(expected, rel=1e-14) and 300 < expected < 400
    assert main(["theory", "--beta", "1e4", "--eps", "1e-4"]) == 0
    assert "362.12 (mode 16, the fastest" in capsys.readouterr().out


def test_the_typical_amplitude_is_that_of_a_degree_the_start_holds():
    """typical_amplitude defaulted to l*, which perturbed:EPS does not excite beyond its band (L0 = 12 on S^2):
    at beta = 1e4 on S^2, l* = 141 would count 283 normals where the leading degree 12 of the start has 25
    (MATH.md §2.4: exp(E log A_l) = EPS sqrt 2 exp(psi(m_l / 2) / 2))."""
    from scipy.special import digamma

    from meanfield import typical_amplitude

    model = Model("sa", 1e4, 0.0, 3)
    assert typical_amplitude(model, 1e-3) == pytest.approx(1e-3 * math.sqrt(2) * math.exp(0.5 * digamma(12.5)),
                                                           rel=1e-15)
    with pytest.raises(InputError, match=r"degree must be in \[1, 12\], the degrees perturbed:EPS excites"):
        typical_amplitude(model, 1e-3, 141)
