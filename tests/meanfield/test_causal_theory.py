"""The linear theory of causal attention (MATH.md §8): the exact evolution of a degree's profile along the
positions, its Green's function, the lost-in-the-middle profile and t_crit, and `theory --mask causal`."""

import json
import math

import numpy as np
import pytest
from scipy.sparse.linalg import expm_multiply
from scipy.special import iv

from meanfield import InputError, Model, growth_rates
from meanfield.causal_theory import (end_slope, evolve_mode, green, lost_in_the_middle, mode_rates, position_map,
                                     position_map_derivative, position_map_inverse, position_weight,
                                     profile_from_grid, profile_weights, psi, t_crit)
from meanfield.cli import main

POSITIONS = np.array([0.0, 1e-9, 0.01, 0.3, 0.7, 1.0])


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------------------------ exact solutions
@pytest.mark.parametrize("alibi", [0.0, 1e-8, 0.5, 2.0, 10.0, 50.0])
def test_constants_grow_at_the_ordinary_rate(alibi):
    """int_0^oo e^{-y} psi_c(y) dy = e^c - 1: u0 = 1 gives e^c at every position (s = 0 included)."""
    for c in (1e-3, 0.1, 1.0, 5.0, 30.0, 200.0):
        result = evolve_mode(np.ones_like, POSITIONS, 1.0, c, alibi)
        assert np.allclose(result / math.exp(c), 1.0, rtol=0, atol=1e-12), (alibi, c)


@pytest.mark.parametrize("alibi", [0.0, 2.0])
@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_powers_of_m_are_eigenfunctions(alibi, alpha):
    """W m^alpha = m^alpha / (1 + alpha), so exp(c W) m^alpha = m^alpha e^{c / (1 + alpha)}; with noise, times
    e^{-damping t}."""
    def u0(s):
        return position_map(s, alibi) ** alpha

    for rate, t in ((0.3, 1.0), (1.0, 2.5), (4.0, 10.0)):
        c = rate * t
        expected = u0(POSITIONS) * math.exp(c / (1 + alpha))
        assert np.allclose(evolve_mode(u0, POSITIONS, t, rate, alibi), expected, rtol=1e-10, atol=0)
        damped = evolve_mode(u0, POSITIONS, t, rate, alibi, damping=0.7)
        assert np.allclose(damped, expected * math.exp(-0.7 * t), rtol=1e-10, atol=0)
    times = np.array([0.0, 0.5, 2.0])
    several = evolve_mode(u0, POSITIONS, times, 1.0, alibi)
    assert several.shape == (3, POSITIONS.size)
    assert np.allclose(several, u0(POSITIONS) * np.exp(times / (1 + alpha))[:, None], rtol=1e-10, atol=0)


def test_psi_series_and_limits():
    """psi_c(y) = sum c^{k+1} y^k / (k! (k+1)!) = sqrt(c/y) I_1(2 sqrt(c y)); psi_c(0) = c; psi_0 = 0."""
    c, y = np.array([0.3, 2.0, 7.0]), np.array([0.0, 1e-300, 0.2, 3.0, 40.0])
    term = np.broadcast_to(c[:, None], (c.size, y.size)).copy()
    series = term.copy()
    for k in range(150):
        term = term * c[:, None] * y / ((k + 1) * (k + 2))
        series += term
    assert np.allclose(psi(c[:, None], y), series, rtol=1e-13, atol=0)
    assert psi(2.0, 0.0) == 2.0 and psi(0.0, 5.0) == 0.0
    assert psi(3.0, 2.0) == pytest.approx(math.sqrt(1.5) * iv(1, 2 * math.sqrt(6.0)), rel=1e-14)
    assert psi(600.0, 600.0) == math.inf                      # e^{1200}: inf, no floating-point error


def test_position_helpers():
    s = np.linspace(0, 1, 7)
    assert np.allclose(position_map_inverse(position_map(s, 3.0), 3.0), s, rtol=1e-15, atol=1e-16)
    assert np.allclose(position_map(s, 3.0), np.expm1(3 * s)) and np.array_equal(position_map(s, 0.0), s)
    assert np.allclose(position_map_derivative(s, 3.0), 3 * np.exp(3 * s))
    from scipy.integrate import quad
    for alibi in (0.0, 1.0, 40.0):
        total, _ = quad(lambda x: position_weight(0.6, x, alibi), 0, 0.6, epsabs=1e-14, epsrel=1e-13, limit=200)
        assert total == pytest.approx(1.0, rel=1e-12)
    assert position_weight(0.3, 0.5, 1.0) == 0.0


# ------------------------------------------------------------------------------------------ against the discretised operator
def _discretised_average(points: int, alibi: float):
    """W on a uniform grid of [0, 1]: the trapezoid rule of w(s_i, .) on [0, s_i], each row normalised to 1."""
    grid = np.linspace(0.0, 1.0, points + 1)
    matrix = np.zeros((grid.size, grid.size))
    matrix[0, 0] = 1.0                                       # W[h](0) = h(0)
    for i in range(1, grid.size):
        row = position_weight(grid[i], grid[:i + 1], alibi)
        row[0] *= 0.5
        row[-1] *= 0.5
        matrix[i, :i + 1] = row / row.sum()
    return grid, matrix


@pytest.mark.parametrize("alibi", [0.0, 2.0])
def test_green_function_against_the_matrix_exponential(alibi):
    """exp(c W_h) u0 of the discretised operator converges to evolve_mode at second order (h = 1/250, 1/500)."""
    def u0(s):
        return np.cos(3 * s) + s ** 2

    c, errors = 1.5, []
    for points in (250, 500):
        grid, matrix = _discretised_average(points, alibi)
        errors.append(np.max(np.abs(expm_multiply(c * matrix, u0(grid)) - evolve_mode(u0, grid, 1.0, c, alibi))))
    order = math.log2(errors[0] / errors[1])
    assert errors[1] < 1e-4 and 1.9 < order < 2.1, (errors, order)


def test_green_function_integrates_to_the_evolution():
    """u0 + int_0^s G_c(s, s') u0(s') ds' (direct quadrature of G, singular at 0) equals evolve_mode."""
    from scipy.integrate import quad

    def u0(s):
        return 1.0 + np.sin(2 * s)

    for alibi, s, c in ((0.0, 0.8, 1.2), (3.0, 0.5, 0.4)):
        integral, _ = quad(lambda x: green(c, s, x, alibi) * u0(x), 0, s, epsabs=1e-13, epsrel=1e-12, limit=400)
        assert u0(s) + integral == pytest.approx(evolve_mode(u0, s, 1.0, c, alibi), rel=1e-9)


def test_grid_profiles_through_a_spline():
    grid = np.linspace(0, 1, 201)
    spline = profile_from_grid(grid, np.cos(grid))
    exact = evolve_mode(np.cos, POSITIONS, 1.0, 2.0, 1.0)
    assert np.allclose(evolve_mode(spline, POSITIONS, 1.0, 2.0, 1.0, tol=1e-9), exact, rtol=1e-8, atol=0)


# ------------------------------------------------------------------------------------------ lost in the middle
def _fd_end_slope(model, alibi, t, weights, h=1e-4):
    """One-sided second-order difference of S_t at s = 1."""
    values = lost_in_the_middle(model, alibi, t, np.array([1.0, 1 - h, 1 - 2 * h]), weights)
    return (3 * values[0] - 4 * values[1] + values[2]) / (2 * h)


@pytest.mark.parametrize("model, alibi", [(Model("sa", 4.0), 1.0), (Model("usa", 1.0), 1.0),
                                          (Model("sa", 9.0, 0.0, 3), 3.0), (Model("sa", 4.0, 0.05), 1.0)])
def test_t_crit_is_where_the_end_slope_changes_sign(model, alibi):
    weights = profile_weights(8.0, 10)
    crit = t_crit(model, alibi, weights)
    before, after = _fd_end_slope(model, alibi, 0.99 * crit, weights), _fd_end_slope(model, alibi, 1.01 * crit, weights)
    assert before > 0 > after
    assert before == pytest.approx(end_slope(model, alibi, 0.99 * crit, weights), rel=1e-6)
    assert abs(end_slope(model, alibi, crit, weights)) < 1e-12 * abs(end_slope(model, alibi, 2 * crit, weights))
    s = np.linspace(0.001, 1, 400)
    early = lost_in_the_middle(model, alibi, 0.2 * crit, s, weights)
    assert 0 < np.argmin(early) < s.size - 1                  # U-shaped: an interior minimum
    assert np.all(np.diff(lost_in_the_middle(model, alibi, 2 * crit, s, weights)) < 0)   # monotone well after


def test_t_crit_formula_and_plain_causal_mask():
    model, weights = Model("sa", 4.0), profile_weights(8.0, 10)
    rates = mode_rates(model, np.arange(1, 11))
    expected = 2 * (1 - math.exp(-1.5)) * np.sum(weights * rates) / np.sum(weights * rates ** 2)
    assert t_crit(model, 1.5, weights) == pytest.approx(expected, rel=1e-14)
    assert t_crit(model, 0.0, weights) == 0.0                 # lambda = 0: monotone from the start
    assert end_slope(model, 0.0, 0.5, weights) < 0
    s = np.linspace(0.01, 1, 100)
    assert np.all(np.diff(lost_in_the_middle(model, 0.0, 0.3, s, weights)) < 0)
    # the 2026 paper's code (rates n^2 I_n(beta), beta times ours for USA) at beta = 1, lambda = 1, M = 8, K = 20
    n = np.arange(1, 21)
    paper_rates, paper_weights = n ** 2 * iv(n, 1.0), np.exp(-0.5 * (np.pi * n / 8) ** 2)
    paper = 2 * (1 - math.exp(-1)) * np.sum(paper_weights * paper_rates) / np.sum(paper_weights * paper_rates ** 2)
    assert t_crit(Model("usa", 1.0), 1.0, profile_weights(8.0, 20)) == pytest.approx(paper, rel=1e-13)


def test_noise_free_rates_and_profile_values():
    model = Model("sa", 4.0, 0.1, 3)
    degrees = np.arange(1, 6)
    assert np.allclose(mode_rates(model, degrees), growth_rates(model, degrees) + 0.1 * degrees * (degrees + 1),
                       rtol=1e-14)
    weights = profile_weights(8.0, 5)
    assert np.allclose(weights, np.exp(-np.pi ** 2 * degrees ** 2 / 128))
    t, rates = 0.7, mode_rates(model, degrees)
    at_end = np.sum(weights * np.exp(-0.1 * degrees * (degrees + 1) * t) * rates * t) * 2 / -math.expm1(-2)
    assert lost_in_the_middle(model, 2.0, t, 1.0, weights) == pytest.approx(at_end, rel=1e-14)
    assert lost_in_the_middle(model, 2.0, t, 0.0, weights) == math.inf
    assert np.all(lost_in_the_middle(model, 2.0, 0.0, POSITIONS, weights) == 0)


@pytest.mark.parametrize("call, words", [
    (lambda: t_crit(Model("sa", 1.0), -1.0, [1.0]), "alibi must be a finite number >= 0"),
    (lambda: t_crit(Model("sa", 1.0), math.nan, [1.0]), "alibi"),
    (lambda: t_crit(Model("sa", 1.0), math.inf, [1.0]), "alibi"),
    (lambda: lost_in_the_middle(Model("sa", 1.0), 1.0, -1.0, 0.5, [1.0]), "t must be finite and >= 0"),
    (lambda: lost_in_the_middle(Model("sa", 1.0), 1.0, 1.0, 1.5, [1.0]), "s must be positions in [0, 1]"),
    (lambda: profile_weights(0.0, 3), "width must be a finite number > 0"),
    (lambda: profile_weights(2.0, 0), "modes must be an integer in [1, "),
    (lambda: profile_weights(2.0, 10 ** 7), "modes must be an integer in [1, "),
    (lambda: evolve_mode(np.cos, 0.5, 1.0, -1.0, 0.0), "rate must be finite and >= 0"),
    (lambda: evolve_mode(lambda s: np.sin(1e4 * s), 1.0, 1.0, 1.0, 0.0), "u0 is not resolved"),
])
def test_bad_inputs_are_one_line(call, words):
    with pytest.raises(InputError) as caught:
        call()
    assert words in str(caught.value) and "\n" not in str(caught.value)


# ------------------------------------------------------------------------------------------ command line
def test_cli_causal_json(capsys):
    code, out, _ = run_cli(capsys, "theory", "--mask", "causal", "--alibi", 1, "--beta", 4, "--json")
    assert code == 0
    result = json.loads(out)
    weights = profile_weights(8.0, 10)
    assert result["t_crit"] == pytest.approx(t_crit(Model("sa", 4.0), 1.0, weights), rel=1e-15)
    assert {"mask", "alibi", "t_crit", "profile_width", "profile_modes", "profile_s", "profile",
            "profile_time"} <= set(result)
    assert result["mask"] == "causal" and result["profile_width"] == 8.0 and result["profile_modes"] == 10
    assert result["profile_time"] == pytest.approx(result["t_crit"] / 2, rel=1e-15)
    assert result["profile_s"] == [round(0.1 * i, 10) for i in range(11)] and result["profile"][0] is None
    expected = lost_in_the_middle(Model("sa", 4.0), 1.0, result["profile_time"], np.array(result["profile_s"][1:]),
                                  weights)
    assert np.allclose(result["profile"][1:], expected, rtol=1e-15)


def test_cli_causal_table_and_unmasked_output_unchanged(capsys):
    code, out, _ = run_cli(capsys, "theory", "--mask", "strict", "--beta", 4, "--t", 2, "--profile-width", 4)
    assert code == 0 and "t_crit = 0:" in out and "S_t(s)" in out and "at t = 2:" in out
    code, plain, _ = run_cli(capsys, "theory", "--beta", 4, "--json")
    assert code == 0 and "mask" not in json.loads(plain)


@pytest.mark.parametrize("args, words", [
    (["--mask", "causal", "--alibi", -1], "--alibi must be a finite number in [0, 700]"),
    (["--mask", "causal", "--alibi", 701], "--alibi must be a finite number in [0, 700]"),
    (["--mask", "causal", "--alibi", "nan"], "--alibi must be a finite number"),
    (["--mask", "causal", "--alibi", "inf"], "--alibi must be a finite number"),
    (["--alibi", 1], "--alibi needs --mask causal"),
    (["--mask", "causal", "--profile-width", 0], "--profile-width must be a finite number in (0, inf)"),
    (["--mask", "causal", "--profile-width", -2], "--profile-width must be a finite number in (0, inf)"),
    (["--mask", "causal", "--profile-width", 0.01], "--profile-width must be >= 0.0814"),
    (["--profile-width", 3], "--profile-width needs --mask causal"),
    (["--t", 1], "--t needs --normalization or --mask causal"),
    (["--mask", "causal", "--t", -1], "--t must be a finite number in [0, inf)"),
    (["--mask", "causal", "--eps", 1e-4], "--eps needs --mask none"),
    (["--mask", "causal", "--normalization", "pre"], "give --mask or --normalization"),
    (["--mask", "sideways"], "--mask"),
])
def test_cli_bad_causal_inputs_exit_2_with_one_line(capsys, args, words):
    code, out, err = run_cli(capsys, "theory", "--beta", 4, *args)
    assert code == 2 and out == ""
    assert err.startswith("meanfield: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert words in err
