"""The predicted cluster count at formation (meanfield/formation_count.py; MATH.md §2.4, §10) and the study's test."""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.errors import InputError
from meanfield.formation_count import (count_at_formation, count_distribution, law_pattern, linear_count)
from meanfield.geometry import sphere_area
from meanfield.initial.circle import perturbed_density as circle_start
from meanfield.initial.zonal import perturbed_density as zonal_start
from meanfield.model import Model
from meanfield.theory import linear_noise_threshold, growth_rates
from meanfield.validation.studies.formation_count import chi_square_p_value, formation_count_claims


@pytest.mark.parametrize("geometry, dim", [("circle", 2), ("sphere", 3), ("zonal", 5)])
def test_the_pattern_is_the_runs_start(geometry, dim):
    """The degrees of draw ``seed`` add up to the start of a run with ``--seed seed``: the prediction for a seed is
    about that run's own start."""
    eps, seed = 1e-3, 7
    pattern = law_pattern(geometry, dim, seed)
    rho0 = 1 / sphere_area(dim)
    start = pattern.density(eps, np.zeros(pattern.parts.shape[0]), 0.0)
    if geometry == "circle":
        expected = circle_start(eps, pattern.places.size, seed)
    elif geometry == "zonal":
        from meanfield.solvers.bases.zonal_basis import ZonalBasis

        basis = ZonalBasis(12, dim)
        expected_at_nodes = zonal_start(eps, basis, seed)
        coeffs = basis.interpolant_coeffs(expected_at_nodes)
        expected = basis.polynomials(np.cos(pattern.places), coeffs.size - 1) @ coeffs
    else:
        # the solver's own start on its own grid (lmax 31) and ours (64 Gauss-Legendre rows) have the same degree <= 12
        # coefficients: a wrong layout, normalisation or m convention of the pattern changes them by O(1)
        import ducc0

        from meanfield.formation_count import SPHERE_ROWS
        from meanfield.harmonics import m_major_layout
        from meanfield.initial.sphere import perturbed_density as sphere_start
        from meanfield.solvers.bases.sphere_basis import make_sphere_basis

        basis = make_sphere_basis(31)
        solver = basis.analyse(sphere_start(eps, basis, seed))
        ours = ducc0.sht.analysis_2d(map=start.reshape(1, SPHERE_ROWS, 2 * SPHERE_ROWS), lmax=12, spin=0,
                                     geometry="GL", nthreads=1)[0]
        where = {(int(l), int(m)): i for i, (l, m) in enumerate(zip(basis.degree_of_index, basis.m_of_index))}
        same = [where[(int(l), int(m))] for l, m in zip(*m_major_layout(12))]
        assert np.max(np.abs(solver[same] - ours)) < 1e-14 * rho0 * 4 * math.pi        # measured 1.9e-16
        return
    assert np.max(np.abs(start - expected)) < 1e-13 * rho0 * 10


def test_the_linear_solution_touches_zero_at_t0_and_stable_states_form_nothing():
    model = Model("sa", 9.0, 0.0, 2)
    count, t0 = linear_count(model, 1e-4, 0)
    pattern = law_pattern("circle", 2, 0)
    rates = growth_rates(model, np.arange(1, 17))
    assert np.min(pattern.density(1e-4, rates, t0)) == pytest.approx(0.0, abs=1e-6 / (2 * math.pi))
    assert np.min(pattern.density(1e-4, rates, t0 - 0.01)) > 0
    assert count == 4 and 10 < t0 < 13        # seed 0's run forms 4 clusters (tests/solvers/test_cluster_events.py)
    stable = Model("sa", 9.0, 1.01 * linear_noise_threshold(Model("sa", 9.0, 0.0, 2)), 2)
    assert linear_count(stable, 1e-4, 0) == (0, math.inf)


def test_a_draw_dominated_by_one_mode_counts_that_mode():
    """Far past the near tie (beta = 4: k* = 3 grows much faster than 2 and 4) almost every draw counts k*."""
    found = count_distribution(Model("sa", 4.0, 0.0, 2), 1e-4, draws=60)
    assert found.probability(3) > 0.9 and found.draws == 60 and found.per_draw.size == 60
    assert found.probabilities.sum() == pytest.approx(1.0)
    assert found.standard_errors == pytest.approx(np.sqrt(found.probabilities * (1 - found.probabilities) / 60))


def test_the_distribution_is_reproducible_and_checks_its_options():
    model = Model("usa", 9.0, 0.0, 3)
    first, again = (count_distribution(model, 1e-4, geometry="sphere", draws=20) for _ in range(2))
    assert np.array_equal(first.per_draw, again.per_draw)
    with pytest.raises(InputError, match="draws must be in"):
        count_distribution(model, 1e-4, geometry="sphere", draws=0)
    with pytest.raises(InputError, match="eps must be in"):
        count_distribution(model, 2.0, geometry="sphere", draws=5)


def _events(kinds, afters, counts):
    return xr.Dataset({"event_kind": ("event", np.array(kinds, dtype=str)),
                       "clusters_after_event": ("event", np.array(afters)),
                       "cluster_count": ("time", np.array(counts))})


def test_count_at_formation_is_the_count_before_the_first_merge():
    assert count_at_formation(_events(["formation"] * 4 + ["merge", "merge"], [1, 2, 3, 4, 3, 2], [0, 4, 2])) == 4
    assert count_at_formation(_events(["formation", "formation"], [1, 2], [0, 2])) == 2
    assert count_at_formation(_events(["merge"], [2], [3, 2])) == 3      # clusters present from the start


def test_the_chi_square_p_value_is_a_probability_that_can_fail():
    p = np.array([0.0, 0.1, 0.8, 0.1])
    statistic, value = chi_square_p_value(np.array([0, 1, 8, 1]), p)
    assert statistic == pytest.approx(0.0) and value == 1.0
    _, unlikely = chi_square_p_value(np.array([0, 6, 0, 4]), p)
    assert unlikely < 1e-3
    assert chi_square_p_value(np.array([1, 0, 9, 0]), p) == (math.inf, 0.0)       # a count never predicted
    table = xr.Dataset({"geometry": ("case", ["circle", "sphere"]), "beta": ("case", [9.0, 7.0]),
                        "p_value": ("case", [0.4, 0.2])})
    assert all(check.passed for check in formation_count_claims(table))
    table["p_value"] = ("case", [0.4, 0.005])
    assert [check.passed for check in formation_count_claims(table)] == [True, False]
