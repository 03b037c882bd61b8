"""Claims can fail where it matters (each study module's claims function, validation/claims.py; DESIGN.md
"Validation").

Each study's claims function gets a small synthetic result that agrees with the theory (every claim
passes) and then the same result with one number wrong -- a fitted slope of 0, a growth rate 5 % off,
a merge-time law with no exponential -- and that claim, the one the wrong number feeds, must fail.
The wrong numbers are the ones the former tolerances let through ("slope > 0", a window from 0.1 to 3,
1.5 grid cells, ...).
"""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.validation.claims import SOURCE_KINDS, Check, close, standard_errors
from meanfield.validation.studies.cluster_formation import cluster_formation_claims
from meanfield.validation.studies.gaussian import gaussian_claims
from meanfield.validation.studies.growth_rates import growth_claims
from meanfield.validation.studies.long_context import long_context_claims
from meanfield.validation.studies.mean_field import mean_field_claims
from meanfield.validation.studies.metastability import metastability_claims
from meanfield.validation.studies.noise_transition import noise_claims
from meanfield.validation.studies.normalization import normalization_claims
from meanfield.validation.studies.scheme_comparison import scheme_claims
from meanfield.validation.studies.staircase import staircase_claims


def one(checks: list[Check], words: str) -> Check:
    """The one check whose claim contains ``words``."""
    found = [check for check in checks if words in check.claim]
    assert len(found) == 1, [check.claim for check in checks]
    return found[0]


def all_pass(checks: list[Check]) -> bool:
    assert all(check.source.split(":")[0] in SOURCE_KINDS for check in checks)
    return all(check.passed for check in checks)


def test_every_claim_names_the_source_of_its_tolerance():
    with pytest.raises(TypeError):
        close("x", 1.0, 1.0, 0.1)                                     # no source: refused, no default
    for wrong in ("", "my guess", "guess: 10 %", "theory:  "):
        with pytest.raises(ValueError, match="tolerance source"):
            close("x", 1.0, 1.0, 0.1, source=wrong)
    assert close("x", 1.0, 1.05, 0.1, source="theory: anything stated").passed
    assert standard_errors() == pytest.approx(3.2905, abs=1e-4)        # two-sided p = 1e-3
    assert standard_errors(dof=4) == pytest.approx(8.610, abs=1e-3)


# ----------------------------------------------------------------------------------------- growth-circle
def test_a_growth_rate_five_percent_off_fails():
    table = xr.Dataset({"relative_error": (("case", "mode"), [[3e-7, 1e-8]]),
                        "tolerance": (("case", "mode"), [[4e-7, 1e-7]])})
    assert all_pass(growth_claims(table))
    assert not all_pass(growth_claims(table.copy(data={"relative_error": [[3e-7, 0.05]],
                                                       "tolerance": [[4e-7, 1e-7]]})))


# ------------------------------------------------------------------------------------------- mean-field
def _mean_field(slope_iid=-0.52, slope_quadrature=-1.0 - 1e-7, scale=math.pi / 2):
    n = np.array([128, 256, 512, 1024, 2048])
    quadrature = scale / n * (1 + 0.0256 / n ** 2.0)
    return xr.Dataset({"slope_iid": (("beta", "time"), [[-0.5, slope_iid]]),
                       "slope_iid_stderr": (("beta", "time"), [[0.04, 0.04]]),
                       "slope_quadrature": (("beta", "time"), [[-1.0, slope_quadrature]]),
                       "w1_quadrature": (("beta", "time", "n"), np.array([[quadrature, quadrature]])),
                       "w1_iid": (("beta", "time", "n", "seed"), np.ones((1, 2, n.size, 16)))},
                      coords={"beta": [1.0], "time": [0.0, 1.0], "n": n, "seed": np.arange(16)},
                      attrs={"quadrature_constant": 0.0256})   # measured for the study's init (mean_field.INIT)


def test_mean_field_slopes_and_the_quadrature_constant_can_fail():
    assert all_pass(mean_field_claims(_mean_field()))
    assert not one(mean_field_claims(_mean_field(slope_iid=0.0)), "n^-1/2").passed
    assert not one(mean_field_claims(_mean_field(slope_iid=-1.0)), "n^-1/2").passed
    assert not one(mean_field_claims(_mean_field(slope_quadrature=-0.98)), "n^-1 (").passed
    assert not one(mean_field_claims(_mean_field(scale=math.pi)), "t = 0").passed


# ------------------------------------------------------------------------------------ cluster-formation
def _formation(slope=-0.5, power=1.0):
    return xr.Dataset({"formation_time_any_mode": (("n", "seed"), np.full((4, 3), 4.0))},
                      attrs={"mean_power": power, "mean_power_stderr": 0.072, "amplitude_slope": slope,
                             "amplitude_slope_stderr": 0.047})


def test_initial_amplitudes_of_the_wrong_size_or_exponent_fail():
    assert all_pass(cluster_formation_claims(_formation()))
    # the former claim: A(0) sqrt(n) anywhere in (0.1, 3); a flat amplitude or one 3x too large passed it
    assert not one(cluster_formation_claims(_formation(slope=0.0)), "slope").passed
    assert not one(cluster_formation_claims(_formation(slope=-1.0)), "slope").passed
    assert not one(cluster_formation_claims(_formation(power=9.0)), "n A_k(0)^2").passed


# ---------------------------------------------------------------------------------------- metastability
def _metastability(t_formed=(18.25, 4.0), gap=4.9e-5):
    cases = {"beta": ("case", [4.0, 4.0]), "source": ("case", ["pde", "particles"])}
    plateau = (("case", "plateau"))
    point = np.array([[0.0, 0.042], [0.0, 0.064]])
    return xr.Dataset({"k_star": ("case", [3, 3]), "count_at_formation": ("case", [3, 3]),
                       "rate": ("case", [0.664] * 2),
                       "t_form_refined": ("case", [18.4, 3.7]), "t_formed": ("case", list(t_formed)),
                       "angle_error_emergence": ("case", [0.006, 0.2]), "size": ("case", [512, 2048]),
                       "plateau_count": (plateau, [[0, 3], [0, 3]]), "plateau_point_energy": (plateau, point),
                       "plateau_energy": (plateau, point * (1 - np.array([[0.0, gap], [0.0, 1e-16]]))),
                       "plateau_variance": (plateau, [[np.nan, 1.256e-5], [np.nan, 1e-27]])},
                      coords=cases, attrs={"save_every": 0.25})


def test_formation_times_and_plateau_energies_off_the_theory_fail():
    assert all_pass(metastability_claims(_metastability()))
    late = metastability_claims(_metastability(t_formed=(18.25, 3.7 + 2 / 0.664)))
    assert not one(late, "particles: formation time").passed            # two e-folds of mode k* late
    assert not one(metastability_claims(_metastability(gap=1e-3)), "Plateau energy").passed


# ---------------------------------------------------------------------------------------------- schemes
def _schemes(centre_gap=0.0097, fv_coarse=9.1e-3, lagrangian=2e-8, particles_mass=0.008):
    values = {"fv_vs_spectral": 2.4e-3, "fv_vs_spectral_coarse": fv_coarse, "fv_vs_spectral_l1": 7.8e-4,
              "fv_vs_spectral_l1_coarse": 3.1e-3, "lagrangian_vs_spectral": lagrangian, "rtol": 1e-8,
              "fv_relative_error": 2.2e-3, "perturbed_clusters": 4, "structured_clusters": 3,
              "structured_particles_mass_gap": particles_mass, "structured_particles_mass_stderr": 7.4e-3,
              "structured_particles_centre_gap": 0.007, "structured_particles_centre_stderr": 0.011}
    for label, smallest in (("perturbed", 0.237), ("structured", 0.333)):
        values.update({f"{label}_fv_stop_reason": "completed", f"{label}_lagrangian_stop_reason": "completed",
                       f"{label}_fv_min_density": 0.0, f"{label}_fv_mass_error": 2.6e-14, f"{label}_fv_steps": 17000,
                       f"{label}_lagrangian_mass_error": 6e-15, f"{label}_min_cluster_mass": smallest,
                       f"{label}_lagrangian_centre_gap": 0.009, f"{label}_lagrangian_mass_gap": 1.7e-3,
                       f"{label}_lagrangian_node_weight": 1 / 256})
    values["perturbed_lagrangian_centre_gap"] = centre_gap
    return xr.Dataset({key: ((), value) for key, value in values.items()}, attrs={"resolution": 256, "beta": 9.0})


def test_scheme_gaps_that_do_not_converge_fail():
    assert all_pass(scheme_claims(_schemes()))
    grid = 2 * math.pi / 256
    # the former tolerance, 1.5 cells, let a centre gap of 1.4 cells pass
    assert not one(scheme_claims(_schemes(centre_gap=1.4 * grid)), "perturbed: Lagrangian cluster centres").passed
    assert not one(scheme_claims(_schemes(fv_coarse=2.0e-3)), "Finite volume against spectral before formation (la").passed
    assert not one(scheme_claims(_schemes(lagrangian=1.5e-4)), "Lagrangian against spectral").passed
    assert not one(scheme_claims(_schemes(particles_mass=0.05)), "cluster masses against the PDE").passed


# ---------------------------------------------------------------------------------------------- staircase
def _staircase_rows(merge):
    """Circle rows whose first merge comes ``merge(law)`` after t_ref, ``law`` spread over three decades."""
    laws = [18.0, 30.0, 115.0, 420.0, 270.0, 16000.0]
    cases = [(source, beta) for beta in (4.0, 6.0, 9.0) for source in ("lagrangian", "particles")]
    return [{"source": source, "beta": beta, "t_ref": 20.0, "first_merge_run": 20.0 + merge(law), "merge_estimate": law}
            for (source, beta), law in zip(cases, laws)]


def _staircase(slope, stderr, dof, merge_error=9e-8):
    lagrangian = [0, 2, 4]
    table = xr.Dataset({"source": ("case", ["lagrangian", "particles"] * 3), "beta": ("case", [4.0, 4, 6, 6, 9, 9]),
                        "final_count": ("case", [1] * 6), "merges_run": ("case", [2] * 6),
                        "merges_theory": ("case", [2] * 6), "rtol": ("case", [1e-8] * 6),
                        "merge_rel_err": ("case", [merge_error if i in lagrangian else 1e-8 for i in range(6)]),
                        "plateau_energy_gap": ("case", [1.8e-7] * 6)})
    table.attrs.update(slope_against_merge_estimate=slope, slope_against_merge_estimate_stderr=stderr,
                       slope_against_merge_estimate_dof=dof)
    return table


def test_merge_times_without_the_exponential_law_fail():
    from meanfield.validation.studies.staircase import slope_against_merge_estimate

    scatter = iter([1.5, 1.4, 1.1, 1.2, 1.7, 1.1])
    follows = slope_against_merge_estimate(_staircase_rows(lambda law: next(scatter) * law))
    assert all_pass(staircase_claims(_staircase(*follows)))
    scatter = iter([1.5, 1.4, 1.1, 1.2, 1.7, 1.1])
    flat = slope_against_merge_estimate(_staircase_rows(lambda law: 300.0 * next(scatter)))
    assert abs(flat[0]) < 0.1                        # the former claim "slope > 0" let a fitted 0.05 pass
    assert not one(staircase_claims(_staircase(*flat)), "plateau law").passed
    assert not one(staircase_claims(_staircase(*follows, merge_error=1e-5)), "merge times").passed


# ----------------------------------------------------------------------------------------------- gaussian
def _gaussian(sample=(-0.55, -0.45, -0.53, -1.05)):
    kinds = ["softmax", "l2", "multihead", "sinkhorn"]
    coords = {"attention": kinds, "dim": [2], "draw": [0], "seed": [0], "n": [32, 64]}
    column = lambda values: (("attention", "dim"), np.array(values)[:, None])
    errors = np.ones((4, 1, 1, 2, 1))
    return xr.Dataset({"slope_sample": column(sample), "slope_sample_spread": column([0.08, 0.06, 0.07, 0.11]),
                       "slope_exact": column([-0.55, -0.52, -0.5, -0.56]),
                       "slope_exact_spread": column([0.04, 0.035, 0.04, 0.06]),
                       "error_sample": (("attention", "dim", "draw", "n", "seed"), 0.05 * errors),
                       "error_exact": (("attention", "dim", "draw", "n", "seed"), errors),
                       "runs": (("attention", "dim", "n"), np.full((4, 1, 2), 16))}, coords=coords)


def test_a_gaussian_rate_outside_its_bootstrap_errors_fails():
    assert all_pass(gaussian_claims(_gaussian()))
    # "falls at least like n^-1/2: slope < -0.4" let -1.0 (or -2.0) pass; n^-1 for softmax now fails
    assert not one(gaussian_claims(_gaussian(sample=(-1.0, -0.45, -0.53, -1.05))),
                   "softmax: error against the sample").passed
    half = gaussian_claims(_gaussian(sample=(-0.55, -0.45, -0.53, -0.5)))
    assert not one(half, "sinkhorn: error against the sample").passed


# ------------------------------------------------------------------------------------------- long-context
def _long_context(half=None):
    from meanfield.long_context import midpoint_gamma, one_layer_cosine

    n, n_mc, gammas = np.array([1e2, 1e18]), np.array([1000.0]), np.array([0.0, 2.0, 4.0])
    halves = [2.14, midpoint_gamma(0.5, 1e18) if half is None else half]
    mc = np.array([[[1.0, 0.818, 0.5017]], [[1.0, 0.799, 0.52]]])
    critical = one_layer_cosine(0.5, 1e18, 2 * math.log(1e18))
    return xr.Dataset({"critical_gamma": ("rho", [2.0]), "gamma_half": (("rho", "n"), [halves]),
                       "cosine_at_critical": (("rho", "n"), [[0.7972, critical]]),
                       "gram_error": ("n_check", [9.5e-15]), "mc_cosine": (("mc_case", "n_mc", "gamma_mc"), mc),
                       "mc_cosine_before": (("mc_case", "n_mc"), [[0.49999], [0.50005]])},
                      coords={"rho": [0.5], "n": n, "n_check": [1000], "mc_case": [0, 1], "n_mc": n_mc,
                              "gamma_mc": gammas, "mc_rho": ("mc_case", [0.5, 0.5]), "mc_dim": ("mc_case", [64, 16])})


def test_the_midpoint_crossing_off_its_asymptote_fails():
    assert all_pass(long_context_claims(_long_context()))
    # the former window (2, 2.02) let 2.019 pass; the asymptote is 2.01505
    assert not one(long_context_claims(_long_context(half=2.019)), "midpoint").passed


# ------------------------------------------------------------------------------------------- normalization
def _normalization(post_rate=1.999995, pre_exponent=2.0642, peri_speed=0.0869):
    schemes = ["post", "pre", "mix", "peri", "ngpt", "lnscale"]
    theory = [2.0, 2.0, 2.0, 2.0, 2.0, 4.0]
    ode = [1.999995, 2.0642, 2.0325, 2.0159, 1.999996, 3.999994]
    particle = [post_rate, pre_exponent, 2.0325, 2.0159, 1.999996, 3.999994]
    speed = [0.05904, 0.05904 * (1 - 3.4e-5), 0.05904, peri_speed, 0.0869, 0.05904]
    predicted = [0.05904, 0.05904, 0.05904, 0.0869, 0.0869, 0.05904]
    kinds = ["exponential", "power", "power", "power", "exponential", "stretched"]
    laws = ["exp(-2 t)", "t^-2", "t^-2", "t^-2", "exp(-2 t)", "exp(-4 sqrt(t + 1))"]
    return xr.Dataset({"theory_rate": ("scheme", theory), "ode_rate": ("scheme", ode),
                       "particle_rate": ("scheme", particle),
                       "law": ("scheme", laws), "law_kind": ("scheme", kinds), "max_rho_error": ("scheme", [3e-10] * 6),
                       "stop_reason": ("scheme", ["completed"] * 6), "initial_speed": ("scheme", speed),
                       "initial_speed_theory": ("scheme", predicted),
                       "pde_fitted_rate": (("pde_scheme", "pde_mode"), [[0.5682]]),
                       "pde_theory_rate": (("pde_scheme", "pde_mode"), [[0.5682]]),
                       "pde_tolerance": (("pde_scheme", "pde_mode"), [[1e-7]])}, coords={"scheme": schemes})


def test_late_time_laws_and_speeds_off_the_theory_fail():
    assert all_pass(normalization_claims(_normalization()))
    # the former tolerances: exponent 2 +- 0.1 let 2.09 pass, though the window's own correction is 0.064
    assert not one(normalization_claims(_normalization(pre_exponent=2.09)), "pre: late-time").passed
    assert not one(normalization_claims(_normalization(post_rate=1.9)), "post: late-time").passed
    # "Peri-LN faster than Post-LN: ratio > 1.3" let 1.35 pass; the same tokens predict 1.4718
    assert not one(normalization_claims(_normalization(peri_speed=0.05904 * 1.35)), "Peri-LN").passed


# -------------------------------------------------------------------------------------------- noise-transition
def test_a_uniform_end_state_below_the_threshold_fails():
    def table(order_below):
        order = np.array([[[order_below, order_below], [1e-20, 1e-22]]])
        return xr.Dataset({"order": (("beta", "ratio", "start"), order),
                           "fixed_point_gap": (("beta", "ratio", "start"), [[[1e-9, 1e-9], [np.nan, np.nan]]])},
                          coords={"beta": [1.0], "ratio": [0.7, 1.2], "start": ["perturbed", "clustered"]})

    assert all_pass(noise_claims(table(0.69)))
    assert not one(noise_claims(table(1e-8)), "end clustered").passed
