"""The causal study's pieces (MATH.md §8) and its claims: each piece against what it must give, each claim failing
where a wrong number would feed it.  (The whole quick study takes about 45 s: `meanfield validate causal --quick`.)"""

import math

import numpy as np
import pytest
import xarray as xr
from scipy.integrate import simpson

from meanfield.causal_theory import profile_weights, t_crit
from meanfield.model import Model
from meanfield.validation.studies import causal
from meanfield.validation.studies.causal import causal_claims


def test_the_dipole_has_moments_0_1_0_0_about_the_last_position():
    u = causal.dipole()
    s = np.linspace(0.0, 1.0, 100_001)     # the dipole is e^-138 of its peak at s = 0
    moments = [simpson((s - 1) ** i * u(s), x=s) for i in range(4)]
    assert np.allclose(moments, [0, 1, 0, 0], atol=1e-10)


def test_richardson_and_the_first_zero():
    coarse, fine = 1.0 + 0.3 * np.array([2.0, 1.0]) ** 2          # an error of exactly c ds^2 is removed
    assert causal.richardson(coarse, fine) == pytest.approx(1.0, abs=1e-15)
    times = np.linspace(0, 4, 41)
    assert causal.first_zero(times, times * (2.5 - times)) == pytest.approx(2.5, abs=1e-12)
    assert math.isnan(causal.first_zero(times, times + 1.0))


def test_a_reduction_is_round_off():
    assert causal.reduction("circle", "usa", 2.5) < 1e-12


def test_the_linear_case_converges_at_second_order_in_ds():
    coarse, fine = (causal.linear_case("circle", "sa", 2.0, count) for count in (33, 65))
    assert 3.5 < coarse / fine < 4.5 and fine < 1e-3


def test_runs_find_t_crit():
    model = Model("sa", 4.0, 0.0, 2)
    critical = t_crit(model, 1.0, profile_weights(causal.PROFILE_WIDTH, causal.PROFILE_MODES))
    times = np.linspace(0.0, 2.0 * critical, 41)
    slopes = causal.richardson(*[causal.measured_end_slope(model, 1.0, grid, times) for grid in (65, 129)])
    assert causal.first_zero(times, slopes) == pytest.approx(critical, rel=1e-2)


def test_clustering_keeps_token_one_and_reaches_consensus():
    result = causal.causal_clustering(n=16, beta=8.0, metastable_t=10.0, consensus_t=2e3)
    assert result["token1_drift"][1] == 0.0
    assert result["consensus_distance"][1][-1] < 1e-6
    assert result["cluster_count"][1][-1] >= 1 and len(result["metastable_centres"][1]) >= 1


# -- claims ---------------------------------------------------------------------------------------------
def passing() -> xr.Dataset:
    """A synthetic result agreeing with the theory."""
    s = np.array([0.2, 0.5, 0.8])
    pointwise = np.array([[0.71, 13.1], [0.70, 6.3], [0.78, 4.2]])
    rates = -0.5 + 0.02 * np.array([[1, -1, 0.5, -0.5], [0.3, -0.3, 0.1, -0.1]])
    return xr.Dataset(
        {"reduction_error": ("reduction_case", [1e-15, 2e-15]),
         "linear_error": (("linear_case", "positions"), [[5e-4, 1.3e-4, 3.4e-5]]),
         "linear_order": ("linear_case", [1.93]),
         "mf_rate_per_seed": (("seed", "window"), rates), "mf_rate": ((), rates.mean()),
         "mf_rate_stderr": ((), rates.std(ddof=1) / math.sqrt(rates.size)),
         "profile_measured": (("profile_s", "profile_time"), pointwise * (1 + 1e-5)),
         "profile_pointwise": (("profile_s", "profile_time"), pointwise),
         "t_crit_formula": ("tcrit_case", [2.96, 5.51]), "t_crit_measured": ("tcrit_case", [2.958, 5.505]),
         "token1_drift": ((), 0.0), "consensus_distance": ("consensus_time", [3.0, 1e-3, 4e-9]),
         "consensus_rtol": ((), 1e-8)},
        coords={"positions": [65, 129, 257], "profile_s": s, "tcrit_case": ["a", "b"]})


def same_profile(ds, values):
    """Runs and theory agreeing on another profile (so only the shape claims can object)."""
    for name in ("profile_measured", "profile_pointwise"):
        ds[name] = ds[name].copy(data=values)


def failed(ds) -> list[str]:
    return [check.claim for check in causal_claims(ds) if not check.passed]


@pytest.mark.parametrize("change, words", [
    (lambda ds: ds.update({"reduction_error": ("reduction_case", [1e-15, 1e-9])}), "s-independent"),
    (lambda ds: ds.update({"linear_error": (("linear_case", "positions"), [[5e-4, 4e-4, 3e-4]])}), "finest"),
    (lambda ds: ds.update({"linear_order": ("linear_case", [1.0])}), "order"),
    (lambda ds: ds.update({"mf_rate": ((), -0.25)}), "n^-1/2"),
    (lambda ds: ds.update({"profile_measured": ds["profile_measured"] * 1.01}), "S_t(s)"),
    (lambda ds: same_profile(ds, [[0.9, 13], [0.8, 6], [0.7, 4]]), "U-shaped"),
    (lambda ds: same_profile(ds, [[0.71, 13], [0.7, 6], [0.78, 7]]), "decreasing"),
    (lambda ds: ds.update({"t_crit_measured": ("tcrit_case", [2.96 * 1.05, 5.505])}), "t_crit measured"),
    (lambda ds: ds.update({"token1_drift": ((), 1e-10)}), "Token 1"),
    (lambda ds: ds.update({"consensus_distance": ("consensus_time", [3.0, 1e-3, 1e-3])}), "consensus"),
])
def test_each_causal_claim_fails_on_its_wrong_number(change, words):
    assert failed(passing()) == []
    wrong = passing()
    change(wrong)
    broken = failed(wrong)
    assert len(broken) == 1 and words in broken[0], broken
