"""Cluster detection and growth-rate fitting."""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.diagnostics import detect_clusters, fit_growth_rates
from meanfield.initial import circle_density


def test_three_separated_clusters():
    n = 1024
    density = circle_density("vonmises:200@1+vonmises:200@3+vonmises:200@5", n)
    clusters = detect_clusters(density)
    assert clusters.count == 3
    assert np.allclose(np.sort(clusters.centres), [1, 3, 5], atol=2 * math.pi / n)
    assert np.allclose(clusters.masses, 1 / 3, atol=1e-6)
    assert clusters.masses.sum() == pytest.approx(1.0, abs=1e-12)


def test_cluster_across_theta_zero_counts_once():
    density = circle_density("vonmises:100@0.01+vonmises:100@3", 512)
    clusters = detect_clusters(density)
    assert clusters.count == 2
    assert min(abs(clusters.centres - 0.01).min(), abs(clusters.centres - 0.01 - 2 * math.pi).min()) < 0.02


def test_uniform_and_weak_perturbations_have_no_cluster():
    assert detect_clusters(circle_density("uniform", 128)).count == 0
    assert detect_clusters(circle_density("perturbed:0.2", 128, seed=1)).count == 0


def test_single_cluster_holds_all_the_mass():
    clusters = detect_clusters(circle_density("vonmises:30@2", 256))
    assert clusters.count == 1 and clusters.masses[0] == pytest.approx(1.0, abs=1e-12)
    assert abs(clusters.centres[0] - 2.0) < 2 * math.pi / 256


def test_fit_growth_rates_recovers_exponentials():
    times = np.linspace(0, 2, 11)
    rates = np.array([0.3, -0.2, 1.5])
    amplitude = 1e-6 * np.exp(np.outer(times, rates))
    ds = xr.Dataset({"mode_amplitude": (("time", "mode"), amplitude)}, coords={"time": times, "mode": [1, 2, 3]})
    assert np.allclose(fit_growth_rates(ds, [1, 2, 3]), rates, rtol=1e-12)
    assert np.allclose(fit_growth_rates(ds, [3], t_max=1.0), [1.5], rtol=1e-12)
