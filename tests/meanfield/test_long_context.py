"""MATH.md §7: the exact one-layer cosine of equiangular tokens, its limits, the direct check, the Monte Carlo."""

import math

import numpy as np
import pytest

from meanfield.errors import InputError
from meanfield.long_context import (attention_weights, critical_gamma, gram_cosine, gram_output_cosines, gram_tokens,
                                    limit_cosine, monte_carlo_layer, one_layer_cosine)

RHO = 0.5


def _off_diagonal(matrix):
    return matrix[~np.eye(matrix.shape[0], dtype=bool)]


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_formula_matches_direct_layer_on_every_pair(n):
    for beta in (0.0, 0.7, 4.0, critical_gamma(RHO) * math.log(n), 60.0):
        cosines = gram_output_cosines(RHO, n, beta)
        assert cosines.shape == (n, n)
        assert np.abs(_off_diagonal(cosines) - one_layer_cosine(RHO, n, beta)).max() < 1e-12
    assert abs(gram_cosine(0.3, n, 2.0) - one_layer_cosine(0.3, n, 2.0)) < 1e-12


def test_formula_matches_direct_layer_at_ten_thousand_tokens():
    """Every output uses all 1e4 explicit vectors in R^(1e4 + 1); 16 spread tokens are measured."""
    n = 10_000
    tokens = gram_tokens(n)
    assert tokens.size == 16 and tokens[0] == 0 and tokens[-1] == n - 1
    beta = critical_gamma(RHO) * math.log(n)
    cosines = gram_output_cosines(RHO, n, beta, tokens)
    assert np.abs(_off_diagonal(cosines) - one_layer_cosine(RHO, n, beta)).max() < 1e-12


def test_weights_sum_to_one_and_formula_is_symmetric_in_its_parts():
    a, b = attention_weights(RHO, 1e12, 3.0 * math.log(1e12))
    assert abs(a + (1e12 - 1) * b - 1.0) < 1e-15
    n, beta = 50.0, 2.5
    a, b = attention_weights(RHO, n, beta)
    plain = (RHO + (1 - RHO) * (2 * a * b + (n - 2) * b * b)) / (RHO + (1 - RHO) * (a * a + (n - 1) * b * b))
    assert abs(one_layer_cosine(RHO, n, beta) - plain) < 1e-15


def test_three_limits_at_rho_one_half():
    gamma_c = critical_gamma(RHO)
    assert gamma_c == 2.0
    assert limit_cosine(RHO, [1.0, gamma_c, 3.0]).tolist() == [1.0, 0.8, 0.5]
    for n, tol in ((1e12, 1e-6), (1e18, 1e-9), (1e300, 1e-15)):
        values = one_layer_cosine(RHO, n, np.array([1.0, gamma_c, 3.0]) * math.log(n))
        assert np.all(np.isfinite(values))
        assert abs(values[0] - 1.0) < tol and abs(values[1] - 0.8) < tol and abs(values[2] - 0.5) < tol
    # At n = 1e12 the gaps are the predicted powers of n: 1 - cos ~ (1 - rho) n^-(2 - 2 gamma (1 - rho)) / rho.
    assert one_layer_cosine(RHO, 1e12, 1.0 * math.log(1e12)) == pytest.approx(1 - 1e-12, abs=1e-15)
    assert one_layer_cosine(RHO, 1e12, 3.0 * math.log(1e12)) - RHO == pytest.approx(5e-7, rel=1e-3)


def test_limit_value_at_critical_gamma_for_several_rho():
    rho = np.array([0.1, 0.25, 0.75, 0.9])
    assert np.allclose(limit_cosine(rho, critical_gamma(rho)), 4 * rho / (1 + 3 * rho), rtol=0, atol=1e-15)
    assert np.allclose(one_layer_cosine(rho, 1e15, critical_gamma(rho) * math.log(1e15)), 4 * rho / (1 + 3 * rho),
                       rtol=0, atol=1e-12)


def test_monte_carlo_is_seeded_and_collapse_stops_near_critical_gamma():
    gammas = np.array([0.0, 1.0, 2.0, 4.0])
    first = monte_carlo_layer(400, 48, gammas, seed=3, samples=2, rho=RHO)
    again = monte_carlo_layer(400, 48, gammas, seed=3, samples=2, rho=RHO)
    assert np.array_equal(first.cosine_after, again.cosine_after)
    assert abs(first.cosine_before[0] - RHO) < 0.01
    assert first.cosine_after[0] == pytest.approx(1.0, abs=1e-12)          # beta = 0: every output is the mean
    assert first.cosine_after[1] > 0.95 and abs(first.cosine_after[3] - RHO) < 0.02
    # i.i.d. tokens with mean cosine rho track the equiangular formula at the same n (0.81 at gamma_c).
    assert abs(first.cosine_after[2] - one_layer_cosine(RHO, 400, 2.0 * math.log(400))) < 0.05
    assert np.all(np.diff(first.self_weight) > 0) and first.self_weight[0] == pytest.approx(1 / 400)


def test_monte_carlo_uniform_tokens_stop_collapsing_at_small_gamma():
    result = monte_carlo_layer(300, 16, [0.0, 1.0], seed=0)
    assert abs(result.cosine_before[0]) < 0.02 and result.cosine_after[0] == pytest.approx(1.0, abs=1e-12)
    assert abs(result.cosine_after[1]) < 0.05      # ~ 1 / (1 + n beta^2 / d^2): the self tilt beats the mean


@pytest.mark.parametrize("call, word", [
    (lambda: one_layer_cosine(1.0, 10, 1.0), "rho"),
    (lambda: one_layer_cosine(0.5, 1, 1.0), "n"),
    (lambda: one_layer_cosine(0.5, 10, -1.0), "beta"),
    (lambda: limit_cosine(0.5, -1.0), "gamma"),
    (lambda: gram_cosine(0.5, 10.5, 1.0), "n"),
    (lambda: monte_carlo_layer(10, 1, 1.0), "d"),
    (lambda: monte_carlo_layer(10, 3, 1.0, rho=1.0), "rho"),
])
def test_bad_input_is_one_line_naming_the_parameter(call, word):
    with pytest.raises(InputError) as error:
        call()
    assert str(error.value).startswith(word) and "\n" not in str(error.value)
