"""Predictions and run readouts of the metastability study (meanfield.metastable, MATH.md §2.3)."""

import math

import numpy as np
import pytest

from meanfield.cluster_dynamics import point_energy
from meanfield.diagnostics import interaction_energy
from meanfield.initial.circle import circle_density
from meanfield.metastable import (Plateau, angle_errors, first_merge_time, kstar_angles, linear_formation_time,
                                  linearised_density, local_maxima_angles, plateaus, refined_formation_time,
                                  smoothed_density)
from meanfield.model import Model
from meanfield.theory import growth_rates


def test_kstar_angles_are_the_maxima_of_the_mode():
    n, k, phase = 4096, 3, 0.7
    theta = 2 * math.pi * np.arange(n) / n
    density = (1 + 0.3 * np.cos(k * theta + phase)) / (2 * math.pi)
    coefficient = np.fft.rfft(density)[k] / n
    predicted = kstar_angles(coefficient, k)
    assert predicted.size == 3
    assert np.allclose(np.sort((2 * math.pi * np.arange(3) - phase) / 3 % (2 * math.pi)), predicted, atol=1e-13)
    assert np.max(angle_errors(local_maxima_angles(density, k), predicted)) < 1e-6


def test_refined_formation_time_is_the_linear_threshold_crossing():
    rate, amplitude = 0.7, 1e-3
    t = refined_formation_time(amplitude / (2 * math.pi) * np.exp(0.4j), rate)
    assert amplitude * math.exp(rate * t) == pytest.approx(0.5, rel=1e-12)
    assert refined_formation_time(0.1, -1.0) == math.inf


def test_linear_formation_time_of_one_mode_is_the_threshold_crossing_and_a_second_mode_moves_it():
    """One mode k, density ``(1 + 2 a cos k theta) / 2 pi``: the field is ``I_0 + 2 a I_k cos k theta`` (scaled), so
    its k maxima stand out together, first by concentration (MATH.md §10): ``2 a k^2 I_k / (beta (I_0 + 2 a I_k))
    = 1/4`` at ``a = beta I_0 / ((8 k^2 - 2 beta) I_k)`` (before the prominence's ``a = I_0 / (6 I_k)``), with
    ``a = 2 pi |a_k| exp(lambda_k t)``."""
    from scipy.special import ive

    model, n = Model("sa", 9.0, 0.0, 2), 128
    coefficients = np.zeros(n // 2 + 1, dtype=complex)
    coefficients[0], coefficients[4] = 1 / (2 * math.pi), 1e-4 / (2 * math.pi)
    a_star = 9.0 * ive(0, 9.0) / ((8 * 16 - 2 * 9.0) * ive(4, 9.0))
    assert a_star < ive(0, 9.0) / (6 * ive(4, 9.0))
    expected = math.log(a_star / 1e-4) / growth_rates(model, [4])[0]                        # 10.84
    assert linear_formation_time(coefficients, model, 4, n) == pytest.approx(expected, abs=1e-5)
    assert linear_formation_time(coefficients, model, 1, n) == pytest.approx(expected, abs=1e-5)
    # mode 5 as large: the pattern is no longer k-fold symmetric, one maximum crosses first, all four later
    coefficients[5] = coefficients[4]
    assert linear_formation_time(coefficients, model, 1, n) < expected < linear_formation_time(coefficients, model, 4, n)
    assert linear_formation_time(coefficients, Model("sa", 9.0, 1.0, 2), 4, n) == math.inf


def test_linearised_density_grows_each_mode_at_its_rate():
    model, n, t = Model("sa", 4.0, 0.0, 2), 256, 3.0
    coefficients = np.fft.rfft(circle_density("perturbed:1e-3", n, seed=2)) / n
    grown = np.fft.rfft(linearised_density(coefficients, model, t, n, growing_only=False)) / n
    modes = np.arange(1, 17)                                  # the band of perturbed: (MATH.md §2.4)
    ratio = np.abs(grown[modes] / coefficients[modes])
    assert np.allclose(ratio, np.exp(growth_rates(model, modes) * t), rtol=1e-10)
    assert grown[0] == pytest.approx(1 / (2 * math.pi), rel=1e-13)
    kept = np.fft.rfft(linearised_density(coefficients, model, t, n)) / n
    rates = growth_rates(model, np.arange(1, n // 2 + 1))
    assert np.max(np.abs(kept[1:][rates < 0.5 * rates.max()])) < 1e-17


def test_plateaus_absorb_flickers_and_find_the_first_merge():
    times = np.arange(16.0)
    counts = [0, 0, 0, 1, 3, 3, 3, 3, 2, 3, 3, 2, 2, 2, 2, 2]
    energies = np.arange(16.0) / 10
    found = plateaus(times, counts, energies, min_duration=1.5)
    assert [p.count for p in found] == [0, 3, 2]
    assert (found[1].start, found[1].end) == (4.0, 10.0)
    assert found[2] == Plateau(2, 11.0, 15.0, 1.5)
    assert first_merge_time(found) == 11.0
    assert math.isnan(first_merge_time(found[:2]))


def test_point_cluster_energy_is_the_limit_of_narrow_clusters():
    beta = 4.0
    exact = (0.5 + 0.5 * math.exp(-2 * beta)) / (2 * beta)
    assert point_energy(np.array([0.0, math.pi]), np.array([0.5, 0.5]), beta) == pytest.approx(exact, rel=1e-14)
    narrow = circle_density(f"vonmises:{4000}@0+vonmises:{4000}@{math.pi}", 8192)
    assert interaction_energy(narrow, beta) == pytest.approx(exact, rel=2e-3)


def test_smoothed_density_is_non_negative_with_the_tokens_mass():
    rng = np.random.default_rng(5)
    theta = rng.uniform(0, 2 * math.pi, 500)
    weights = rng.uniform(0.5, 1.5, 500)
    weights /= weights.sum()
    density = smoothed_density(theta, weights, 0.05, 512)
    assert density.min() >= -1e-14
    assert density.mean() * 2 * math.pi == pytest.approx(1.0, rel=1e-13)
    nodes = 2 * math.pi * np.arange(64) / 64
    assert np.allclose(smoothed_density(nodes, np.full(64, 1 / 64), 0.2, 256), 1 / (2 * math.pi), atol=1e-14)


def test_one_point_mass_is_one_cluster_after_smoothing():
    from meanfield.diagnostics import detect_clusters
    density = smoothed_density(np.array([1.0]), np.array([1.0]), 0.05, 1024)
    assert detect_clusters(density, 9.0).count == 1
    assert density.max() == pytest.approx(1 / (math.sqrt(2 * math.pi) * 0.05), rel=1e-3)
