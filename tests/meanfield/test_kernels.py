"""Kernel coefficients against direct Funk–Hecke quadrature (MATH.md §2.1–2.2)."""

import math

import numpy as np
import pytest
from scipy.special import eval_gegenbauer, iv, ive, roots_jacobi

from meanfield import band_limit, scaled_funk_hecke, sphere_area
from meanfield.kernels import scaled_funk_hecke_over_beta


def funk_hecke_by_quadrature(degree, beta, dim):
    """``kappa_l = |S^{d-2}| int f(t) C_l^lam(t)/C_l^lam(1) (1-t^2)^{(d-3)/2} dt``, f = exp(beta t).

    Gauss–Jacobi quadrature with the weight ``(1-t^2)^{(d-3)/2}`` is exact up to round-off
    for this entire integrand with 80 nodes.
    """
    lam = (dim - 2) / 2
    nodes, weights = roots_jacobi(80, (dim - 3) / 2, (dim - 3) / 2)
    poly = eval_gegenbauer(degree, lam, nodes) / eval_gegenbauer(degree, lam, 1.0)
    return sphere_area(dim - 1) * np.sum(weights * np.exp(beta * nodes) * poly)


@pytest.mark.parametrize("dim", [3, 4, 5, 8])
@pytest.mark.parametrize("degree", [0, 1, 2, 5])
def test_funk_hecke_matches_quadrature(dim, degree):
    beta = 2.5
    exact = funk_hecke_by_quadrature(degree, beta, dim)
    ours = scaled_funk_hecke(degree, beta, dim) * math.exp(beta)
    assert ours == pytest.approx(exact, rel=1e-11)


def test_circle_coefficients_are_bessel():
    k = np.arange(-6, 7)
    assert np.allclose(scaled_funk_hecke(k, 3.0, 2) * math.exp(3.0), 2 * math.pi * iv(np.abs(k), 3.0),
                       rtol=1e-13, atol=0)


def test_circle_kernel_fourier_series():
    """exp(beta cos t) = sum_k I_|k|(beta) exp(i k t) (MATH.md §2.1)."""
    beta, t = 4.0, np.linspace(0, 2 * math.pi, 17)
    k = np.arange(-60, 61)
    series = (scaled_funk_hecke(k, beta, 2) / (2 * math.pi) * np.exp(1j * np.outer(t, k))).sum(axis=1).real
    assert np.allclose(series, np.exp(beta * (np.cos(t) - 1)), rtol=1e-13, atol=1e-15)


def test_large_beta_is_finite():
    coeffs = scaled_funk_hecke(np.arange(0, 400), 1000.0, 3)
    assert np.all(np.isfinite(coeffs)) and np.all(coeffs[:100] > 0)
    ratio = ive(np.arange(5), 1000.0) / ive(0, 1000.0)
    assert np.allclose(scaled_funk_hecke(np.arange(5), 1000.0, 2) / scaled_funk_hecke(0, 1000.0, 2), ratio)


@pytest.mark.parametrize("beta", [0.5, 9.0, 100.0, 1000.0])
@pytest.mark.parametrize("dim", [2, 3, 6])
def test_band_limit_is_the_first_negligible_degree(beta, dim):
    tol = 1e-12
    m = band_limit(beta, dim, tol)
    c0 = scaled_funk_hecke(0, beta, dim)
    assert scaled_funk_hecke(m + 1, beta, dim) / c0 < tol <= scaled_funk_hecke(m, beta, dim) / c0
    assert m > beta ** 0.5  # the kernel's content extends past sqrt(beta)


def test_beta_zero_limit_of_velocity_multiplier():
    for dim in (2, 3, 5):
        limit = scaled_funk_hecke_over_beta(np.arange(4), 0.0, dim)
        small = scaled_funk_hecke_over_beta(np.arange(4), 1e-7, dim)
        assert np.allclose(limit, small, rtol=1e-6, atol=1e-6)
        assert limit[1] == pytest.approx(sphere_area(dim) / dim)
