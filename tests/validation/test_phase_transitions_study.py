"""The phase-transition study's pieces (MATH.md §9) and its claims failing where a wrong number feeds them.
(The quick study takes about 2 minutes: `meanfield validate phase-transitions --quick`.)"""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.validation.studies import phase_transitions as study
from meanfield.validation.studies.phase_transitions import phase_transition_claims


def test_ramps_jumps_and_exponents():
    spec, duration = study.ramp(2.0, 1.0, 0.01)
    assert duration == pytest.approx(100.0) and spec.startswith("ramp:2>1@0..")
    nus = np.linspace(1.0, 0.5, 11)
    order = np.array([0.0] * 6 + [0.3, 0.6, 0.9, 0.9, 0.9])
    assert study.first_crossing(nus, order, upwards=True) == pytest.approx(0.7)
    assert math.isnan(study.first_crossing(nus, np.zeros(11), upwards=True))
    rates = np.array([1e-3, 4e-3, 1.6e-2])
    assert study.delay_exponent(rates, 0.3 * np.sqrt(rates)) == pytest.approx(0.5, abs=1e-12)
    # the slow passage: int (nu_# - nu) dt = rate nu_# t^2 / 2 reaches log(1/eps) at the predicted time
    t = study.predicted_down_jump(2.0, 0.01, 1e-3)
    assert 0.01 * 2.0 * t * t / 2 == pytest.approx(math.log(1e3))


def test_the_loop_starts_from_a_stable_clustered_state_between_nu_sharp_and_nu_sn():
    start = study.clustered_start(2.55)                  # USA, beta = 4: nu_# = 2.44 < 2.55 < nu_sn = 2.58
    theta = np.linspace(0, 2 * math.pi, 256, endpoint=False)
    values = start(theta)
    assert np.all(values > 0) and np.mean(values) * 2 * math.pi == pytest.approx(1.0, abs=1e-10)
    assert abs(np.mean(values * np.exp(1j * theta))) * 2 * math.pi > 0.5       # clustered: r = 0.67


def test_a_stable_state_stays_put_under_the_time_dependent_solver():
    """MATH.md §9: a stationary state of the stationary solver does not move under meanfield.solve (drift over t = 10)."""
    assert study.drift_of_a_stable_state(10.0) < 1e-10


def passing() -> xr.Dataset:
    """A synthetic result agreeing with the theory."""
    rates = np.array([0.0025, 0.005, 0.01])
    sharp, nu_c, fold = 2.44, 2.554, 2.584
    nu = np.array([[2.44, 2.50, 2.58, 2.50, 2.30, 1.5]])
    gap = np.array([[1e-3, 5e-3, 1e-2, 1e-3, -0.1, -1.0]])
    return xr.Dataset(
        {"branch_residual": (("diagram", "point"), [[1e-14] * 6]), "drift": ((), 4e-13),
         "usa_curvature": ("independent_beta", [-4.657, 6.206]),
         "independent_curvature": ("independent_beta", [-4.66, 6.20]),
         "beta_star": ("tricritical_dim", [2.4469183, 1.8161545]), "bessel_root": ("tricritical_dim", [2.4469183, 1.8161545]),
         "resolution_nu_sn": ("lmax", [fold, fold]), "resolution_nu_c": ("lmax", [nu_c, nu_c]),
         "sa_curvature": ("sa_case", [-0.6, -6.0]),
         "branch_transition": ("diagram", ["first-order"]), "branch_nu_sharp": ("diagram", [sharp]),
         "branch_nu_sn": ("diagram", [fold]), "branch_nu_c": ("diagram", [nu_c]),
         "branch_stable": (("diagram", "point"), [[0, 0, 0, 1, 1, 1]]), "branch_free_energy_gap": (("diagram", "point"), gap),
         "branch_nu": (("diagram", "point"), nu),
         "loop_nu_sharp": ((), sharp), "loop_nu_sn": ((), fold),
         "jump_down": ("rate", sharp * (1 - 1.2 * np.sqrt(rates))), "jump_up": ("rate", fold * (1 + rates ** (2 / 3))),
         "particle_rate": ((), 0.01), "particle_jump_down": ((), sharp * 0.95), "particle_jump_up": ((), fold * 1.05),
         "fold_nu_sharp": ("fold_case", [4.867128, 2.374772]), "fold_nu_sn": ("fold_case", [5.4259159, 3.4104627]),
         "fold_nu_c": ("fold_case", [5.3198330, 3.2067105]), "fold_least_amplitude": ("fold_case", [5e-3, 5e-3]),
         "independent_nu_sn": ("fold_case", [5.425916, 3.410463]),
         "independent_nu_c": ("fold_case", [5.319833, 3.206711]),
         "fold_check": ("check_case", [1]), "nu_c_check": ("check_case", [1]),
         "mode_onset_fitted": ("mode_case", [-11.60576, 1.132379]), "mode_onset_theory": ("mode_case", [-11.60576, 1.132379])},
        coords={"independent_beta": [2.0, 3.0], "tricritical_dim": [2, 3], "lmax": [32, 48], "rate": rates,
                "diagram": ["usa beta=4 d=2"], "fold_case": ["beta=5 d=2", "beta=5 d=3"], "check_case": ["beta=5 d=2"],
                "mode_case": ["usa beta=5 d=2 mode 2+", "usa beta=3 d=3 mode 2+"]})


def failed(ds) -> list[str]:
    return [check.claim for check in phase_transition_claims(ds) if not check.passed]


@pytest.mark.parametrize("change, words", [
    (lambda ds: ds.update({"drift": ((), 1e-8)}), "stays put"),
    (lambda ds: ds.update({"usa_curvature": ("independent_beta", [-4.657, 6.5])}), "beta = 3"),
    (lambda ds: ds.update({"beta_star": ("tricritical_dim", [2.4469183, 1.8163])}), "d = 3"),
    (lambda ds: ds.update({"resolution_nu_sn": ("lmax", [2.584, 2.58401])}), "nu_sn located"),
    (lambda ds: ds.update({"sa_curvature": ("sa_case", [-0.6, 0.2])}), "SA is supercritical"),
    (lambda ds: ds.update({"branch_nu_c": ("diagram", [2.60])}), "nu_# < nu_c < nu_sn"),
    (lambda ds: ds.update({"branch_free_energy_gap": (("diagram", "point"), [[1e-3, 5e-3, 1e-2, -1.0, -0.1, 0.5]])}),
     "free energy falls"),
    (lambda ds: ds.update({"jump_up": ("rate", [2.60, 2.59, 2.583])}), "every ramped"),
    (lambda ds: ds.update({"jump_down": ("rate", [2.2, 2.3, 2.1])}), "approach"),
    (lambda ds: ds.update({"particle_jump_up": ((), 2.5)}), "Particles"),
    (lambda ds: ds.update({"fold_nu_c": ("fold_case", [6.683934, 3.2067105])}), "beta=5 d=2: nu_c"),  # issue 33's
    (lambda ds: ds.update({"fold_least_amplitude": ("fold_case", [5e-3, 2e-18])}), "uniform state"),  # bugs
    (lambda ds: ds.update({"fold_check": ("check_case", [0])}), "fold state"),
    (lambda ds: ds.update({"nu_c_check": ("check_case", [0])}), "state at nu_c"),
    (lambda ds: ds.update({"mode_onset_fitted": ("mode_case", [-11.60576, 1.14])}), "Mode branches"),
])
def test_each_phase_transition_claim_fails_on_its_wrong_number(change, words):
    assert failed(passing()) == []
    wrong = passing()
    change(wrong)
    broken = failed(wrong)
    assert broken and all(words in claim for claim in broken[:1]), broken
