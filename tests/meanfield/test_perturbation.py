"""The law of ``perturbed:EPS`` and its theory: amplitudes, formation time, which mode dominates (MATH.md §2.4)."""

import math

import numpy as np
import pytest

from meanfield import InputError, Model, dominance_probabilities, formation_time, growth_rates, typical_amplitude
from meanfield.initial.circle import circle_density
from meanfield.perturbation import BANDS, FINE_CIRCLE_POINTS, circle_noise
from meanfield.fourier_series import synthesis

EULER_GAMMA = 0.5772156649015329


def _chi(rng, counts, draws):
    """``draws`` independent chi variables for each entry of ``counts`` (degrees of freedom), shape (draws, modes)."""
    return np.stack([np.linalg.norm(rng.standard_normal((draws, int(m))), axis=1) for m in counts], axis=1)


@pytest.mark.parametrize("model, zonal, counts", [
    (Model("sa", 9.0), False, np.full(16, 2)),                          # circle: Rayleigh amplitudes
    (Model("sa", 9.0, 0.0, 3), False, 2 * np.arange(1, 13) + 1),        # S^2: chi with 2 l + 1 degrees of freedom
    (Model("usa", 4.0, 0.0, 5), True, np.ones(12, dtype=int)),          # zonal: |normal|
], ids=["circle", "sphere", "zonal"])
def test_dominance_probabilities_match_a_seeded_monte_carlo(model, zonal, counts):
    degrees, p = dominance_probabilities(model, 1e-4, zonal=zonal)
    assert degrees.tolist() == list(range(1, counts.size + 1))
    assert p.sum() == pytest.approx(1.0, abs=1e-10) and np.all(p >= 0)
    t = formation_time(model, 1e-4, zonal=zonal)
    draws = 100_000
    amplitudes = _chi(np.random.default_rng(11), counts, draws)
    winner = np.argmax(np.log(amplitudes) + growth_rates(model, degrees) * t, axis=1)
    frequency = np.bincount(winner, minlength=degrees.size) / draws
    error = np.sqrt(p * (1 - p) / draws)                               # Monte Carlo standard error
    assert np.all(np.abs(frequency - p) <= 5 * error + 1e-12)
    assert p.max() > 0.5                                               # not a flat (broken) answer


def test_at_time_zero_equal_laws_dominate_equally():
    """Every circle mode has the same Rayleigh law, so at t = 0 each of the 16 wins with probability 1/16."""
    _, circle = dominance_probabilities(Model("sa", 9.0), time=0.0)
    assert np.allclose(circle, 1 / 16, rtol=1e-9)
    _, zonal = dominance_probabilities(Model("sa", 9.0, 0.0, 4), time=0.0, zonal=True)
    assert np.allclose(zonal, 1 / 12, rtol=1e-9)


def test_beta_9_circle_near_tie_between_four_and_five_clusters():
    """SA, beta = 9, perturbed:1e-4: mode 4 (rate 0.7045) and mode 5 (0.6642) nearly tie; measured quadrature values."""
    _, p = dominance_probabilities(Model("sa", 9.0), 1e-4)
    assert p[3] == pytest.approx(0.73399, abs=1e-5) and p[4] == pytest.approx(0.25385, abs=1e-5)
    assert p[2] == pytest.approx(0.01200, abs=1e-5)


def test_a_linearly_stable_state_has_the_limit_answer():
    model = Model("sa", 9.0, nu=1.0)
    assert formation_time(model, 1e-4) == math.inf
    degrees, p = dominance_probabilities(model, 1e-4)
    assert p[np.argmax(growth_rates(model, degrees))] == 1.0 and p.sum() == 1.0


def test_typical_amplitude_is_the_geometric_mean_of_the_chi_law():
    """exp(E log A) = EPS sqrt(2) exp(digamma(m/2)/2): Rayleigh exp((ln 2 - gamma)/2), |normal| exp(-(ln 2 + gamma)/2)."""
    circle = Model("sa", 9.0)
    assert typical_amplitude(circle, 1e-4) == pytest.approx(1e-4 * math.exp((math.log(2) - EULER_GAMMA) / 2),
                                                            rel=1e-14)
    zonal = Model("sa", 9.0, 0.0, 4)
    assert typical_amplitude(zonal, 1e-4, 2, zonal=True) == pytest.approx(
        1e-4 * math.exp(-(math.log(2) + EULER_GAMMA) / 2), rel=1e-14)
    sphere = Model("sa", 9.0, 0.0, 3)
    logs = np.log(_chi(np.random.default_rng(5), [9], 200_000)[:, 0])          # degree 4: 9 normals
    assert math.log(typical_amplitude(sphere, 1e-4, 4) / 1e-4) == pytest.approx(
        logs.mean(), abs=5 * logs.std() / math.sqrt(logs.size))


def test_formation_time_from_eps_or_from_an_amplitude():
    model = Model("sa", 9.0)
    rate = growth_rates(model, [4])[0]
    assert formation_time(model, amplitude=1e-4) == pytest.approx(math.log(1e4) / rate, rel=1e-14)
    # from perturbed:1e-4 the mean over the law: log(1/EPS) - E log(Rayleigh), 12.991 (13.074 from amplitude 1e-4)
    expected = (math.log(1e4) - (math.log(2) - EULER_GAMMA) / 2) / rate
    assert formation_time(model, 1e-4) == pytest.approx(expected, rel=1e-14)
    assert formation_time(model, 1e-4) == pytest.approx(12.99136, abs=1e-5)
    assert formation_time(model, amplitude=2.0) == 0.0
    for kwargs, word in (({}, "exactly one"), ({"eps": 1e-4, "amplitude": 1e-4}, "exactly one"),
                         ({"amplitude": -1.0}, "amplitude must be"), ({"eps": 2.0}, "eps must be in")):
        with pytest.raises(InputError, match=word):
            formation_time(model, **kwargs)
    with pytest.raises(InputError, match="zonal densities need dim >= 3"):
        formation_time(model, 1e-4, zonal=True)


def test_positivity_bound_is_the_depth_of_the_noise_and_the_same_at_every_resolution():
    depth = -float(np.min(synthesis(circle_noise(0, 10 ** 9), 2 ** 20)))          # a 32x finer check
    bound = 1.0 / depth
    assert bound == pytest.approx(0.0823132, rel=1e-5)
    for n in (128, 1024, 4096):
        assert np.min(circle_density(f"perturbed:{0.999 * bound}", n, seed=0)) > 0
        with pytest.raises(InputError, match=r"^init: perturbed:EPS needs EPS in \[0, 0\.08231\) for seed 0"):
            circle_density(f"perturbed:{1.001 * bound}", n, seed=0)
    assert FINE_CIRCLE_POINTS >= 1000 * BANDS["circle"]
