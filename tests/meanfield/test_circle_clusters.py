"""The compiled circle count (meanfield/circle_clusters.py, issue 32's cost) makes numpy's decisions.

It runs the steps of :func:`meanfield.cluster_detection.clusters_of_field` on the same sampled values, so on any
measure the two paths must find the same clusters: the same count, labels of every place, basin sizes, tops and
undefined prominences; masses summed in the same order (equal bits); centres, concentrations and prominences to
rounding (the compiled path sums the series by a rotation recurrence: measured 6e-14 at beta = 200, where the
concentration ``-A'' / (beta A)`` loses about ``beta`` ulps; the bound below is 1e-12).  The corpus holds the cases
that decide by ties: flat valleys where the field is constant to rounding (mass there is assigned by the last bits
of ``A``, which is why the compiled path takes numpy's values instead of summing its own), coincident atoms, grids
coarser than the kernel, near-uniform states and atoms at negative and large angles.  Its speed is measured by
``meanfield validate bench-clusters``.
"""

import math

import numpy as np
import pytest

import meanfield.cluster_detection as detection
from meanfield import attention_field, circle_clusters

pytestmark = pytest.mark.skipif(not circle_clusters.AVAILABLE,
                                reason="the compiled circle count is not built in this install (no C compiler)")


def measures(count=400, seed=32):
    """Seeded circle measures ``(angles, masses, beta)`` of the kinds in the module docstring."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        beta = float(rng.choice([0.5, 2.0, 6.0, 9.0, 20.0, 64.0, 200.0]))
        kind = trial % 4
        if kind == 0:                                        # von Mises bumps on a background, on a grid
            n = int(rng.choice([16, 64, 257, 512]))
            theta = 2 * math.pi * np.arange(n) / n
            k = rng.integers(1, 6)
            masses = sum(w * np.exp(kappa * (np.cos(theta - c) - 1.0)) for w, c, kappa in
                         zip(rng.uniform(0.05, 1, k), rng.uniform(0, 2 * math.pi, k), rng.uniform(1, 400, k)))
            masses = masses + rng.uniform(0, 0.3)
        elif kind == 1:                                      # atoms anywhere, any weights
            n = int(rng.integers(1, 300))
            theta, masses = rng.uniform(-7, 7, n), rng.uniform(0, 1, n)
        elif kind == 2:                                      # a small perturbation of the uniform state, shifted grid
            theta = 2 * math.pi * np.arange(512) / 512 + 0.3
            masses = 1 + 1e-3 * np.cos(3 * theta) + 1e-4 * rng.standard_normal(512)
        else:                                                # K groups of nearly coincident atoms
            k = int(rng.integers(1, 13))
            theta = np.repeat(np.linspace(0, 2 * math.pi, k, endpoint=False) + rng.uniform(0, 1), 5)
            theta = theta + 1e-3 * rng.standard_normal(theta.size)
            masses = rng.uniform(0.1, 1, theta.size)
        yield theta, masses, beta


def numpy_path(theta, masses, beta, refine):
    saved = dict(detection.COMPILED)
    detection.COMPILED.clear()
    try:
        return detection.clusters_of_masses(theta, masses, beta, geometry="circle", refine=refine)
    finally:
        detection.COMPILED.update(saved)


@pytest.mark.parametrize("refine", [True, False])
def test_the_compiled_count_makes_numpys_decisions(refine):
    clustered = 0
    for theta, masses, beta in measures():
        compiled = detection.clusters_of_masses(theta, masses, beta, geometry="circle", refine=refine)
        reference = numpy_path(theta, masses, beta, refine)
        assert compiled.count == reference.count
        np.testing.assert_array_equal(compiled.labels, reference.labels)
        np.testing.assert_array_equal(compiled.tops, reference.tops)
        np.testing.assert_array_equal(compiled.basin_sizes, reference.basin_sizes)
        np.testing.assert_array_equal(compiled.masses, reference.masses)
        np.testing.assert_array_equal(np.isnan(compiled.prominences), np.isnan(reference.prominences))
        for name in ("centres", "concentrations", "prominences"):
            np.testing.assert_allclose(getattr(compiled, name), getattr(reference, name), rtol=0, atol=1e-12,
                                       equal_nan=True, err_msg=name)
        clustered += compiled.count > 1
    assert clustered >= 100          # the corpus exercises the saddle decisions, not only one-cluster states


def test_mass_in_a_valley_flat_to_rounding_is_in_no_cluster():
    """Bumps at beta = 64 on a background: between them A is constant to 1e-13 (the bumps' tails are 1e-26 of the
    background's field) and its sampled values rise and fall by single ulps, so the basin of each valley node is
    decided by rounding (a direct sum of the series instead of numpy's inverse FFT moved 11 % of the mass from one
    cluster to the other).  The flat nodes' places must be in no cluster and every other place in one of the two,
    on both paths."""
    n = 512
    theta = 2 * math.pi * np.arange(n) / n
    masses = (np.exp(300 * (np.cos(theta - 3.15) - 1)) + 0.6 * np.exp(200 * (np.cos(theta - 3.85) - 1)) + 0.2)
    field = attention_field.CircleField(theta, masses, 64.0)
    level = detection.FLAT * field.values.max()
    flat = (np.abs(field.values - np.roll(field.values, 1)) <= level) & (
        np.abs(field.values - np.roll(field.values, -1)) <= level)
    assert 100 <= flat.sum() <= field.values.size - 50      # the case holds a wide valley flat to rounding
    compiled = detection.clusters_of_masses(theta, masses, 64.0, geometry="circle")
    reference = numpy_path(theta, masses, 64.0, True)
    for found in (compiled, reference):
        assert found.count == 2
        np.testing.assert_array_equal(found.labels < 0, flat[field.place])
        assert math.isclose(found.masses.sum(), masses[~flat[field.place]].sum(), rel_tol=1e-14)
    np.testing.assert_array_equal(compiled.labels, reference.labels)
    np.testing.assert_array_equal(compiled.masses, reference.masses)


@pytest.mark.parametrize("offset", [0.0, 0.3, -2.0])
def test_the_grid_test_is_numpys(offset):
    """The compiled ``equispaced`` agrees with the numpy formula at and around :data:`GRID_TOL`."""
    from meanfield._circle_clusters import equispaced

    n = 300
    grid = offset + (2 * math.pi / n) * np.arange(n)
    for shift in (0.0, 0.5e-12, 0.99e-12, 1.01e-12, 1e-9):
        angles = grid.copy()
        angles[137] += shift
        expected = float(np.max(np.abs(angles - angles[0] - (2 * math.pi / n) * np.arange(n)))) <= 1e-12
        assert equispaced(angles, attention_field.GRID_TOL) == expected
    assert equispaced(grid, attention_field.GRID_TOL)
    assert not equispaced(grid[::-1].copy(), attention_field.GRID_TOL)
