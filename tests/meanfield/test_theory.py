"""Linear theory (MATH.md §2.3)."""

import math

import numpy as np
import pytest
from scipy.special import iv

from meanfield import InputError, Model, linear_noise_threshold, dominant_mode, formation_time, growth_rates
from meanfield.kernels import scaled_funk_hecke
from meanfield.geometry import sphere_area


def test_dominant_modes_on_the_circle_match_math_md():
    betas = [1, 2, 4, 9, 16, 25, 36, 64, 100]
    expected = [1, 2, 3, 4, 6, 7, 8, 11, 14]
    assert [dominant_mode(Model("sa", b)) for b in betas] == expected


def test_circle_rates_are_bessel_formulas():
    k, beta = np.arange(1, 9), 9.0
    sa = k ** 2 * iv(k, beta) / (beta * iv(0, beta))
    usa = k ** 2 * iv(k, beta) / beta
    assert np.allclose(growth_rates(Model("sa", beta), k), sa, rtol=1e-13)
    assert np.allclose(growth_rates(Model("usa", beta), k), usa, rtol=1e-13)


@pytest.mark.parametrize("dim", [3, 4, 8])
def test_general_dimension_rates(dim):
    l, beta, nu = np.arange(1, 7), 3.0, 0.05
    eig = l * (l + dim - 2)
    kappa = scaled_funk_hecke(l, beta, dim) * math.exp(beta)
    usa = eig * kappa / (beta * sphere_area(dim)) - nu * eig
    lam = (dim - 2) / 2
    sa = eig * iv(l + lam, beta) / (beta * iv(lam, beta)) - nu * eig
    assert np.allclose(growth_rates(Model("usa", beta, nu, dim), l), usa, rtol=1e-12)
    assert np.allclose(growth_rates(Model("sa", beta, nu, dim), l), sa, rtol=1e-12)


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("dim", [2, 3, 5])
def test_linear_noise_threshold_is_the_stability_threshold(attention, dim):
    nu_sharp = linear_noise_threshold(Model(attention, 4.0, 0.0, dim))
    degrees = np.arange(1, 60)
    assert np.max(growth_rates(Model(attention, 4.0, nu_sharp * (1 + 1e-9), dim), degrees)) < 0
    assert np.max(growth_rates(Model(attention, 4.0, nu_sharp * (1 - 1e-9), dim), degrees)) > 0


def test_every_mode_grows_without_noise():
    assert np.all(growth_rates(Model("sa", 9.0), np.arange(1, 40)) > 0)


def test_formation_time():
    """log(1/A) / lambda_4 from an amplitude A; from perturbed:EPS the law's typical A (tests/meanfield/test_perturbation.py)."""
    model = Model("sa", 9.0)
    rate = growth_rates(model, [4])[0]
    assert formation_time(model, amplitude=1e-4) == pytest.approx(math.log(1e4) / rate, rel=1e-14)
    assert formation_time(Model("sa", 9.0, nu=1.0), 1e-4) == math.inf


def test_beta_zero_limit():
    assert growth_rates(Model("sa", 0.0, 0.0, 3), [1, 2])[0] == pytest.approx(2 / 3)
    assert growth_rates(Model("sa", 1e-8, 0.0, 3), [1])[0] == pytest.approx(2 / 3, rel=1e-7)


@pytest.mark.parametrize("kwargs, word", [({"beta": -1}, "beta"), ({"nu": -0.1}, "nu"),
                                          ({"dim": 1}, "dim"), ({"attention": "relu"}, "attention"),
                                          ({"attention": "usa", "beta": 800}, "beta"),
                                          ({"beta": float("nan")}, "beta")])
def test_model_refuses_bad_parameters(kwargs, word):
    with pytest.raises(InputError, match=word):
        Model(**kwargs)


def test_fastest_growth_rate_is_the_noise_free_maximum():
    from meanfield.theory import fastest_growth_rate
    for dim, beta in ((2, 9.0), (3, 4.0), (5, 16.0)):
        noisy = Model("usa", beta, 0.3, dim)
        degrees = np.arange(1, 40)
        expected = np.max(growth_rates(Model("usa", beta, 0.0, dim), degrees))
        assert fastest_growth_rate(noisy, degrees) == pytest.approx(expected, rel=1e-14)
        assert fastest_growth_rate(noisy, degrees) > np.max(growth_rates(noisy, degrees))
