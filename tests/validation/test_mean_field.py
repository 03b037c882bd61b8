"""The mean-field limit (MATH.md §4) and cluster formation against n (MATH.md §2.3)."""

import math

import numpy as np
import pytest

from meanfield.initial.circle import circle_density
from meanfield.sampling import TrigonometricDensity
from meanfield.validation.studies.cluster_formation import crossing_time, run_study as cluster_study
from meanfield.analysis import cdf_and_density_on_grid, trig_coefficients, wasserstein1_circle
from meanfield.validation.studies.mean_field import run_study

INIT = "vonmises:1@0+vonmises:1@3"


def quadrature(law, n):
    theta = 2 * math.pi * (np.arange(n) + 0.5) / n
    weights = np.clip(law(theta), 0.0, None)
    return theta, weights / weights.sum()


def test_w1_exact_cases():
    uniform = np.full(64, 1 / (2 * math.pi))
    for a in (0.0, 1.0, 3.0, 6.2):  # a point mass against the uniform law: pi / 2
        assert abs(wasserstein1_circle([a], [1.0], uniform) - math.pi / 2) < 1e-12
    rho = circle_density(INIT, 256)
    for n in (64, 1024):  # n quadrature atoms of their own density: pi / (2 n)
        theta, w = quadrature(TrigonometricDensity(rho), n)
        assert abs(n * wasserstein1_circle(theta, w, rho) - math.pi / 2) < 1e-3
    theta, w = quadrature(TrigonometricDensity(circle_density("vonmises:100@1", 1024)), 4096)
    for shift in (0.01, 0.1, 0.5):  # a rigid shift moves mass by the shift
        assert abs(wasserstein1_circle(theta, w, circle_density(f"vonmises:100@{1 + shift}", 1024)) - shift) < 1e-9


def test_w1_against_brute_force():
    rho = circle_density(INIT, 256)
    rng = np.random.default_rng(1)
    theta = rng.uniform(0, 2 * math.pi, 1000)
    w = rng.uniform(size=1000)
    w /= w.sum()
    ours = wasserstein1_circle(theta, w, rho)
    assert abs(ours - wasserstein1_circle(theta, w, rho, grid_points=2 ** 12)) < 1e-13
    m = 2 ** 21
    fine, _ = cdf_and_density_on_grid(trig_coefficients(rho), 2 * m)
    x = (np.arange(m) + 0.5) * 2 * math.pi / m
    order = np.argsort(theta)
    f_mu = np.concatenate(([0.0], np.cumsum(w[order])))[np.searchsorted(theta[order], x, side="right")]
    g = f_mu - fine[1::2]
    assert abs(ours - np.abs(g - np.median(g)).sum() * 2 * math.pi / m) < 1e-6


def test_mean_field_rate_is_one_half_and_quadrature_is_far_better(tmp_path):
    ds = run_study(out_dir=tmp_path, betas=(1.0, 4.0), times=(1.0,), log2_n=range(7, 12), seeds=4)
    assert (tmp_path / "mean_field.nc").exists() and (tmp_path / "mean_field.png").exists()
    for beta in (1.0, 4.0):
        assert abs(float(ds.slope_iid.sel(beta=beta, time=1.0)) + 0.5) < 0.1       # measured -0.535
        assert abs(float(ds.slope_quadrature.sel(beta=beta, time=1.0)) + 1.0) < 0.02
    assert float((ds.w1_iid.mean("seed") / ds.w1_quadrature).min()) > 10          # measured 17


def test_cluster_formation_small():
    t = np.arange(0, 10, 0.1)
    assert abs(crossing_time(t, 0.01 * np.exp(0.7 * t)) - math.log(50) / 0.7) < 1e-12
    assert math.isnan(crossing_time(t, np.full(t.size, 0.1)))
    ds = cluster_study(out_dir=None, beta=9.0, log2_n=(8, 9), seeds=2)
    times = ds.formation_time_any_mode.values
    assert np.all(np.isfinite(times)) and np.all((times > 2) & (times < 8))
    assert ds.attrs["theoretical_slope"] == pytest.approx(1 / (2 * ds.attrs["lambda_k_star"]), rel=1e-15)
    scaled = ds.initial_amplitude * np.sqrt(ds.n)  # i.i.d. tokens: perturbation ~ n^{-1/2}
    assert 0.1 < float(scaled.min()) and float(scaled.max()) < 3
