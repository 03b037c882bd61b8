"""Stationary states with noise and their branch (MATH.md §9): residuals, stability, curvature, folds, beta*."""

import math

import numpy as np
import pytest

from meanfield.cli import main
from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.solvers.stationary.branch import bessel_root, curvature, stationary_branch, tricritical_beta
from meanfield.solvers.stationary.stationary import (StationaryProblem, SymmetricBasis, fixed_nu, linearised_spectrum, newton,
                                          uniform_rates)
from meanfield.theory import linear_noise_threshold


@pytest.fixture(scope="module")
def usa4():
    """The subcritical branch: USA on the circle at beta = 4."""
    return stationary_branch("usa", 4.0, 2)


@pytest.mark.parametrize("attention, dim", [("usa", 2), ("sa", 2), ("usa", 3), ("sa", 5)])
def test_the_uniform_state_is_stationary_with_the_theory_s_spectrum(attention, dim):
    model = Model(attention, 3.0, 0.0, dim)
    basis = SymmetricBasis(16, dim)
    problem = StationaryProblem(model, basis)
    nu = 0.4
    assert np.linalg.norm(problem.residual(basis.uniform(), nu)) < 1e-13         # round-off of the quadrature
    values = np.sort(linearised_spectrum(model, basis, basis.uniform(), nu, count=3).real)[::-1]
    rates = uniform_rates(model, nu, np.arange(1, 8))
    expected = np.sort(np.repeat(rates, 2 if dim == 2 else 1))[::-1][:3]   # the circle: cos and sin of each mode
    assert np.allclose(values, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("beta, independent", [(2.0, -4.66), (3.0, 6.20)])
def test_the_circle_usa_curvature_matches_the_independent_continuation(beta, independent):
    assert curvature("usa", beta, 2) == pytest.approx(independent, rel=1e-2)


@pytest.mark.parametrize("dim", [2, 3])
def test_the_tricritical_beta_is_the_bessel_ratio_root(dim):
    assert tricritical_beta(dim, bracket=(0.5, 6.0), xtol=1e-9) == pytest.approx(bessel_root(dim), rel=1e-5)
    # the root itself: I_{d/2+1} / I_{d/2} = 1/d (MATH.md §9 quotes 2.4469 and 1.8162)
    assert bessel_root(dim) == pytest.approx({2: 2.4469, 3: 1.8162}[dim], abs=1e-4)


def test_every_branch_point_solves_its_equation(usa4):
    assert float(usa4["residual"].max()) < 1e-12
    model = Model("usa", 4.0, 0.0, 2)
    assert usa4.attrs["nu_sharp"] == pytest.approx(linear_noise_threshold(model), rel=1e-15)


def test_a_subcritical_branch_folds_and_has_its_first_order_point_between(usa4):
    attrs = usa4.attrs
    assert attrs["transition"] == "first-order" and attrs["curvature"] > 0
    assert attrs["nu_sharp"] < attrs["nu_c"] < attrs["nu_sn"]
    stable = usa4["stable"].values.astype(bool)
    nu = usa4["nu"].values
    fold = int(np.argmax(nu))
    assert not stable[:fold].any() and stable[fold + 1:].all()        # unstable below the fold, stable beyond it
    # along the stable part the free energy gap falls as nu falls (the branch wins below nu_c)
    gap = usa4["free_energy_gap"].values[fold + 1:]
    assert np.all(np.diff(gap) < 0) and gap[0] > -0.05 and gap[-1] < 0


def test_folds_and_the_first_order_point_do_not_move_with_the_resolution(usa4):
    coarse = stationary_branch("usa", 4.0, 2, lmax=32)
    for name in ("nu_sn", "nu_c"):
        assert coarse.attrs[name] == pytest.approx(usa4.attrs[name], rel=1e-6)


@pytest.mark.parametrize("attention, beta, dim", [("sa", 1.0, 2), ("sa", 12.0, 2), ("sa", 4.0, 4), ("usa", 2.0, 2)])
def test_supercritical_branches_are_stable_and_continuous(attention, beta, dim):
    ds = stationary_branch(attention, beta, dim, max_points=30)
    assert ds.attrs["transition"] == "continuous" and ds.attrs["curvature"] < 0
    assert bool(ds["stable"].all()) and np.all(np.diff(ds["nu"].values) < 0)
    assert math.isnan(ds.attrs["nu_sn"])


def test_newton_refuses_a_negative_noise_and_reports_a_failed_solve():
    problem = StationaryProblem(Model("usa", 2.0, 0.0, 2), SymmetricBasis(8, 2))
    assert newton(problem, problem.basis.uniform(), -1.0, fixed_nu(9, -1.0)) is None
    with pytest.raises(InputError, match="noise range"):
        stationary_branch("usa", 2.0, 2, nu_range=(0.0, 1.0))


@pytest.mark.parametrize("args, named", [
    (["--branch", "--attention", "usa"], "--branch needs --beta"),
    (["--branch", "--beta", "4", "--nu", "0.2"], "leave --nu out"),
    (["--tricritical", "--dim", "100"], "--dim in [2, 30]"),
    (["--tricritical", "--attention", "usa", "--beta", "2"], "leave --beta out"),
    (["--branch", "--tricritical", "--beta", "2"], "not both"),
    (["--beta", "4", "--verify"], "give --branch"),
    (["--branch", "--beta", "4", "--modes", "9"], "--modes must be an integer in [1, 8]"),
    (["--tricritical", "--dim", "3", "--modes", "2"], "--tricritical takes only"),
])
def test_the_command_line_refuses_in_one_line(args, named, capsys):
    assert main(["theory", *args]) == 2
    error = capsys.readouterr().err
    assert named in error and len(error.strip().splitlines()) == 1


def test_the_command_line_prints_the_branch_and_beta_star_as_json(capsys):
    import json
    assert main(["theory", "--tricritical", "--dim", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["attention"] == "usa" and result["beta_star"] == pytest.approx(result["bessel_root"], rel=1e-5)
    assert main(["theory", "--branch", "--attention", "usa", "--beta", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["transition"] == "first-order" and result["C"] == pytest.approx(6.20, rel=1e-2)
    assert result["nu_sharp"] < result["nu_c"] < result["nu_sn"]
