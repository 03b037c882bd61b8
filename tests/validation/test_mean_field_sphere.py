"""The mean-field limit on S^2 (MATH.md §2.2, §4): the H^-2 norm and the n^-1/2 rate of i.i.d. tokens."""

import math

import numpy as np
import pytest

from meanfield.initial.sphere import sphere_density, unit_vectors
from meanfield.solvers.bases.sphere_basis import make_sphere_basis
from meanfield.analysis import iid_mean_square, negative_sobolev_norm, point_mass_norm
from meanfield.analysis import sphere_point_coefficients as empirical_coefficients
from meanfield.validation.studies.mean_field_sphere import INIT, format_table, run_study, series_function

LMAX = 63


def test_point_mass_against_uniform_is_the_addition_theorem_sum():
    basis = make_sphere_basis(LMAX)
    uniform = basis.analyse(np.full(basis.shape, 1 / (4 * math.pi)))
    l = np.arange(1, LMAX + 1)
    closed = math.sqrt(np.sum((2 * l + 1) / (4 * math.pi) / (1 + l * (l + 1.0)) ** 2))
    assert point_mass_norm(LMAX) == pytest.approx(closed, rel=1e-15)
    x = np.random.default_rng(3).standard_normal((4, 3))
    x = np.vstack((x / np.linalg.norm(x, axis=1, keepdims=True), [[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]))
    for point in x:  # every point, poles included: sum_m |Y_lm(x)|^2 = (2l+1) / (4 pi)
        mu = empirical_coefficients(point[None], np.ones(1), LMAX)
        assert abs(negative_sobolev_norm(mu, uniform) - closed) < 1e-13
    # s = 2 converges: the degree-63 value is within the 1 / (pi L^2) tail bound of the degree-400 one
    assert 0 < point_mass_norm(400) ** 2 - closed ** 2 < 1 / (math.pi * LMAX ** 2)


def test_gauss_legendre_nodes_carry_the_density_coefficients_exactly():
    basis = make_sphere_basis(LMAX)
    rho = sphere_density(INIT, basis)
    rho_lm = basis.analyse(rho)
    nodes = unit_vectors(basis).reshape(3, -1).T
    mu = empirical_coefficients(nodes, (rho * basis.weights).ravel(), LMAX)
    assert negative_sobolev_norm(mu, rho_lm) < 1e-14 and negative_sobolev_norm(rho_lm, 0 * rho_lm) > 1e-2
    law = series_function(rho_lm)
    lat, lon = np.meshgrid(basis.lat, basis.lon, indexing="ij")
    assert np.max(np.abs(law(lat, lon) - rho)) < 1e-12
    # i.i.d. expectation: (1/n) sum (1 + l(l+1))^-2 ((2l+1)/(4 pi) - |rho_l|^2), below the point mass's
    assert 0.9 * point_mass_norm(LMAX) ** 2 < iid_mean_square(rho_lm) < point_mass_norm(LMAX) ** 2


def test_particles_converge_to_the_sphere_pde_at_rate_one_half(tmp_path):
    ds = run_study(out_dir=tmp_path, times=(0.0, 1.0), log2_n=range(7, 11), seeds=4)
    assert (tmp_path / "mean_field_sphere.nc").exists() and (tmp_path / "mean_field_sphere.png").exists()
    for time in (0.0, 1.0):  # measured -0.549 and -0.523; one-seed spread about 0.13, RMS of 4 seeds fitted
        assert abs(float(ds.slope.sel(time=time)) + 0.5) < 0.15
    # t = 0: the mean square over the 16 runs against the i.i.d. expectation; measured 1.196 (sampling alone,
    # 60 repeats of this design: mean 1.02, std 0.14); later the constant grows (measured x 1.47 at t = 1)
    ratio = float(((ds.error_rms.sel(time=0.0) / ds.iid_theory) ** 2).mean())
    assert 0.55 < ratio < 1.45
    assert float((ds.error_rms.sel(time=1.0) / ds.error_rms.sel(time=0.0)).min()) > 1.2
    assert "slope" in format_table(ds)
