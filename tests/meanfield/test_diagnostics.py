"""Cluster detection and growth-rate fitting."""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.diagnostics import detect_clusters, fit_growth_rates, interaction_energy
from meanfield.kernels import scaled_funk_hecke
from meanfield.initial.circle import circle_density


def test_three_separated_clusters():
    n = 1024
    density = circle_density("vonmises:200@1+vonmises:200@3+vonmises:200@5", n)
    clusters = detect_clusters(density, 9.0)
    assert clusters.count == 3
    assert np.allclose(np.sort(clusters.angles), [1, 3, 5], atol=2 * math.pi / n)
    assert np.allclose(clusters.masses, 1 / 3, atol=1e-6)
    assert clusters.masses.sum() == pytest.approx(1.0, abs=1e-12)


def test_cluster_across_theta_zero_counts_once():
    density = circle_density("vonmises:100@0.01+vonmises:100@3", 512)
    clusters = detect_clusters(density, 9.0)
    assert clusters.count == 2
    assert min(abs(clusters.angles - 0.01).min(), abs(clusters.angles - 0.01 - 2 * math.pi).min()) < 0.02


def test_uniform_and_weak_perturbations_have_no_cluster():
    assert detect_clusters(circle_density("uniform", 128), 9.0).count == 0
    # MATH.md §2.4 law, seed 1, eps = 0.01: a peak 1.12 x the mean is no cluster of the field at beta = 9
    weak = circle_density("perturbed:0.01", 128, seed=1)
    assert np.max(weak) * 2 * math.pi > 1.05 and detect_clusters(weak, 9.0).count == 0


def test_single_cluster_holds_all_the_mass():
    clusters = detect_clusters(circle_density("vonmises:30@2", 256), 9.0)
    assert clusters.count == 1 and clusters.masses[0] == pytest.approx(1.0, abs=1e-12)
    assert abs(clusters.angles[0] - 2.0) < 2 * math.pi / 256


def test_fit_growth_rates_recovers_exponentials():
    times = np.linspace(0, 2, 11)
    rates = np.array([0.3, -0.2, 1.5])
    amplitude = 1e-6 * np.exp(np.outer(times, rates))
    ds = xr.Dataset({"mode_amplitude": (("time", "mode"), amplitude)}, coords={"time": times, "mode": [1, 2, 3]})
    assert np.allclose(fit_growth_rates(ds, [1, 2, 3]), rates, rtol=1e-12)
    assert np.allclose(fit_growth_rates(ds, [3], t_max=1.0), [1.5], rtol=1e-12)


def test_interaction_energy_matches_double_quadrature():
    """E = (1/2 beta) int int exp(beta cos(s - t)) rho(s) rho(t) ds dt (MATH.md §2), trapezoid in both."""
    n, beta = 256, 3.0
    density = circle_density("vonmises:2@1+vonmises:5@4", n)
    theta = 2 * math.pi * np.arange(n) / n
    kernel = np.exp(beta * np.cos(theta[:, None] - theta[None, :]))
    direct = (2 * math.pi / n) ** 2 * density @ kernel @ density / (2 * beta)
    assert interaction_energy(density, beta, scaled=False) == pytest.approx(direct, rel=1e-13)
    assert interaction_energy(density, beta) == pytest.approx(direct * math.exp(-beta), rel=1e-13)


def test_energy_is_least_for_the_uniform_density():
    beta = 2.0
    uniform = interaction_energy(circle_density("uniform", 128), beta)
    assert uniform == pytest.approx(math.pi / beta * scaled_funk_hecke(0, beta, 2) / (2 * math.pi) ** 2, rel=1e-14)
    assert interaction_energy(circle_density("vonmises:1@2", 128), beta) > uniform
