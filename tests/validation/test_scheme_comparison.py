"""Spectral, finite-volume, Lagrangian and particle runs against each other (quick size)."""

import math

import numpy as np

from meanfield.validation.studies.scheme_comparison import (band_limited_start, cell_averages_of_point_values, cluster_readout,
                                                    run_study, scheme_claims)


def test_cell_averages_of_a_mode_carry_the_sinc_factor():
    n, k = 64, 5
    theta = 2 * math.pi * np.arange(n) / n
    averages = cell_averages_of_point_values(np.cos(k * theta))
    h = 2 * math.pi / n
    assert np.allclose(averages, np.cos(k * theta) * math.sin(k * h / 2) / (k * h / 2), atol=1e-15)


def test_band_limited_start_is_one_function_on_every_grid():
    values, sums = band_limited_start("perturbed:1e-2", 64, 3)
    coarse, fine = values(64), values(256)
    assert np.allclose(fine[::4], coarse, rtol=0, atol=1e-15) and abs(np.mean(fine) - 1 / (2 * math.pi)) < 1e-15
    assert sums[32] == 0                                     # no Nyquist mode: the same series at 64 and 256 points


def test_cluster_readout_assigns_tokens_to_the_nearest_centre():
    theta = np.array([0.1, 6.2, 3.0, 3.2])
    centres, masses = cluster_readout(theta, np.full(4, 0.25), np.array([0.0, 3.1]))
    assert np.allclose(masses, [0.5, 0.5])
    assert abs((centres[0] + math.pi) % (2 * math.pi) - math.pi - (0.1 - (2 * math.pi - 6.2)) / 2) < 1e-3
    assert abs(centres[1] - 3.1) < 1e-12


def test_schemes_agree_before_and_through_clustering(tmp_path):
    ds = run_study(quick=True, out_dir=tmp_path)
    failed = [(check.claim, check.measured, check.tolerance) for check in scheme_claims(ds) if not check.passed]
    assert not failed                                       # every claim of the report, with its tolerance's source
    assert float(ds.fv_vs_spectral_l1) < float(ds.fv_vs_spectral_l1_coarse) / 2   # converging (second order: / 4)
    assert float(ds.lagrangian_vs_spectral) < 1e-7          # band-limited start: only the time-integration error
    assert int(ds.perturbed_clusters) == 4                  # k* at beta = 9
    assert (tmp_path / "scheme_comparison.png").exists()
