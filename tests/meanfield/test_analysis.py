"""meanfield.analysis: each distance against a closed form or a brute-force sum (issue 22 item 2)."""

import math

import numpy as np
import pytest

from meanfield import analysis, fourier_series
from meanfield.diagnostics import empirical_coefficients
from meanfield.initial.circle import circle_density


def test_circle_h_minus_s_of_a_point_mass_is_the_series_of_its_modes():
    """delta_a - 1/(2 pi) has rho_hat_k = e^{-ika} / (2 pi) for every k != 0: the norm^2 is
    sum_{k >= 1} (1 + k^2)^-s / pi; at s = 1 summed to infinity, (pi coth pi - 1) / (2 pi)."""
    modes = 4000
    mu = empirical_coefficients(np.array([0.7]), np.array([1.0]), np.arange(modes + 1))
    uniform = np.zeros(modes + 1, dtype=complex)
    uniform[0] = 1 / (2 * math.pi)
    k = np.arange(1, modes + 1)
    for s in (1.0, 2.0):
        assert analysis.circle_negative_sobolev_norm(mu, uniform, s) ** 2 == pytest.approx(
            float(np.sum((1.0 + k * k) ** -s)) / math.pi, rel=1e-13)
    tail = 1 / (math.pi * modes)                                   # sum_{k > K} 1 / (1 + k^2) < 1 / K
    limit = (math.pi / math.tanh(math.pi) - 1) / (2 * math.pi)
    assert 0 < limit - analysis.circle_negative_sobolev_norm(mu, uniform, 1.0) ** 2 < tail


def test_circle_h_minus_s_against_a_brute_force_double_sum():
    """||mu - rho||^2 = sum_ij w_i w_j G(theta_i - theta_j) - 2 sum_i w_i (G * rho)(theta_i) + <rho, G * rho> with
    G(x) = (1 / pi) sum_{k >= 1} (1 + k^2)^-s cos(k x), here for a density rho of a few modes, directly."""
    rng = np.random.default_rng(4)
    theta, weights = rng.uniform(0, 2 * math.pi, 30), rng.uniform(0.5, 1.5, 30)
    weights /= weights.sum()
    modes = np.arange(0, 65)
    rho = circle_density("vonmises:2@1", 256)
    rho_hat = fourier_series.coefficients(rho)[:modes.size]
    mu_hat = empirical_coefficients(theta, weights, modes)
    s, k = 2.0, modes[1:]
    kernel = lambda x: np.sum((1.0 + k * k) ** -s * np.cos(np.multiply.outer(x, k)), axis=-1) / math.pi
    pairs = float(weights @ kernel(np.subtract.outer(theta, theta)) @ weights)
    smoothed = 2 * np.real(np.exp(1j * np.outer(theta, k)) @ ((1.0 + k * k) ** -s * rho_hat[1:]))  # (G * rho)(theta)
    cross = float(weights @ smoothed)
    self_term = 2 * math.pi * 2 * float(np.sum((1.0 + k * k) ** -s * np.abs(rho_hat[1:]) ** 2))
    assert analysis.circle_negative_sobolev_norm(mu_hat, rho_hat, s) ** 2 == pytest.approx(
        pairs - 2 * cross + self_term, rel=1e-11)


def test_zonal_h_minus_s_of_the_pole_on_s2_is_the_sphere_point_mass_norm():
    """On S^2 a point mass at the pole is zonal: its normalised Gegenbauer coefficients are P_l(1) =
    sqrt((2l + 1) / (4 pi)), and the zonal norm must equal the S^2 addition-theorem closed form."""
    lmax = 60
    l = np.arange(lmax + 1)
    pole = np.sqrt((2 * l + 1) / (4 * math.pi))
    uniform = np.zeros(lmax + 1)
    uniform[0] = pole[0]
    assert analysis.zonal_negative_sobolev_norm(pole, uniform, 3) == pytest.approx(analysis.point_mass_norm(lmax),
                                                                                   rel=1e-14)
    with pytest.raises(Exception, match="dim must be an integer >= 3"):
        analysis.zonal_negative_sobolev_norm(pole, uniform, 2)


def test_circle_w1_is_public_and_exact_for_a_point_mass():
    """W1(delta_a, uniform) = pi / 2 for every a (MATH.md §4)."""
    uniform = np.full(64, 1 / (2 * math.pi))
    for a in (0.0, 1.0, 4.0):
        assert analysis.wasserstein1_circle([a], [1.0], uniform) == pytest.approx(math.pi / 2, abs=1e-12)


def test_a_sphere_run_file_alone_gives_its_coefficients():
    """S^2 files stored neither coefficients nor weights (a user rebuilt the Gauss–Legendre weights); the file's
    quadrature_weight gives the frame's coefficients exactly: the start of perturbed:EPS is band-limited to
    degree 12 (MATH.md §2.4), so every coefficient above it vanishes and rho_00 sqrt(4 pi) is the mass."""
    import meanfield

    run = meanfield.solve("sphere", beta=3.0, resolution=24, init="perturbed:0.02", seed=2, t_final=0.2,
                          save_every=0.2)
    rho = analysis.sphere_frame_coefficients(run, 0)
    degree = np.concatenate([np.arange(m, 25) for m in range(25)])
    order = np.concatenate([np.full(25 - m, m) for m in range(25)])
    assert np.max(np.abs(rho[degree > 12])) < 1e-13
    assert rho[0].real * math.sqrt(4 * math.pi) == pytest.approx(float(run["mass"].values[0]), rel=1e-13)
    amplitude = np.sqrt(np.bincount(degree, weights=np.where(order == 0, 1.0, 2.0) * np.abs(rho) ** 2))
    np.testing.assert_allclose(amplitude[1:13], run["mode_amplitude"].values[0][1:13], rtol=1e-10)


def test_a_zonal_run_file_alone_gives_its_coefficients():
    """Zonal Galerkin files store quadrature_weight: the perturbed:EPS start's coefficients vanish above degree 12
    (MATH.md §2.4), g_0 sqrt(|S^{d-1}|) is the mass, and |g_l| is the run's mode amplitude."""
    import meanfield
    from meanfield.geometry import sphere_area

    run = meanfield.solve("zonal", dim=5, beta=4.0, resolution=32, init="perturbed:0.01", seed=3, t_final=0.2,
                          save_every=0.2)
    g = analysis.zonal_frame_coefficients(run, 0)
    assert np.max(np.abs(g[13:])) < 1e-14 * abs(g[0])
    assert g[0] * math.sqrt(sphere_area(5)) == pytest.approx(float(run["mass"].values[0]), rel=1e-13)
    np.testing.assert_allclose(np.abs(g[1:13]), run["mode_amplitude"].values[0][1:13], rtol=1e-10, atol=1e-16)


@pytest.mark.parametrize("dim", [3, 5, 8])
def test_zonal_coefficients_of_the_pole_are_the_addition_theorem_values(dim):
    """A token at the pole has g_l = P_l(1) = sqrt(N(d, l) / |S^{d-1}|), N(d, l) = (2l + d - 2) (l + d - 3)! /
    (l! (d - 2)!) the dimension of the degree-l harmonics (addition theorem); the same from its polar angle 0."""
    from meanfield.geometry import sphere_area

    lmax = 40
    pole = np.zeros((1, dim))
    pole[0, -1] = 1.0
    l = np.arange(lmax + 1)
    harmonics = np.array([(2 * k + dim - 2) * math.comb(k + dim - 3, k) / (dim - 2) if k else 1.0 for k in l])
    exact = np.sqrt(harmonics / sphere_area(dim))
    assert analysis.zonal_point_coefficients(pole, np.ones(1), dim, lmax) == pytest.approx(exact, rel=1e-12)
    assert analysis.zonal_point_coefficients(np.zeros(1), np.ones(1), dim, lmax) == pytest.approx(exact, rel=1e-12)


def test_zonal_coefficients_of_tokens_average_over_the_rotations_fixing_the_pole():
    """Tokens on a ring of S^4 at one polar angle, spread in the other directions, have the zonal coefficients of
    the ring itself; and tokens drawn uniformly have zonal coefficients near zero (degree >= 1) at the i.i.d. size."""
    rng = np.random.default_rng(11)
    dim, lmax, polar = 5, 12, 0.9
    around = rng.standard_normal((200, dim - 1))
    around /= np.linalg.norm(around, axis=1, keepdims=True)
    ring = np.hstack((np.sin(polar) * around, np.full((200, 1), np.cos(polar))))
    weights = np.full(200, 1 / 200)
    assert analysis.zonal_point_coefficients(ring, weights, dim, lmax) == pytest.approx(
        analysis.zonal_point_coefficients(np.array([polar]), np.ones(1), dim, lmax), rel=1e-12)
    uniform = rng.standard_normal((20000, dim))
    uniform /= np.linalg.norm(uniform, axis=1, keepdims=True)
    g = analysis.zonal_point_coefficients(uniform, np.full(20000, 1 / 20000), dim, lmax)
    from meanfield.geometry import sphere_area
    # E g_l = 0 for l >= 1 and Var g_l = (E P_l^2) / n = 1 / (|S^{d-1}| n): 5 standard deviations
    assert np.max(np.abs(g[1:])) < 5 / math.sqrt(sphere_area(dim) * 20000)
    assert g[0] == pytest.approx(1 / math.sqrt(sphere_area(dim)), rel=1e-12)
