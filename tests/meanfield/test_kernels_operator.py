"""The kernel operator (meanfield/kernel_operator.py), the one-off circle transforms (meanfield/fourier_series.py)
and the places that share them: energies against direct double sums, the USA/nGPT velocity scale, the
top-sixth slice, the circle's Bessel-sum phases, init-spec spellings and messages."""

import math

import numpy as np
import pytest

from meanfield import fourier_series, interaction_energy
from meanfield.errors import InputError
from meanfield.initial.circle import circle_density
from meanfield.kernel_operator import KernelOperator, top_sixth
from meanfield.kernels import band_limit, scaled_funk_hecke, scaled_funk_hecke_beta_derivative
from meanfield.model import Model
from meanfield.theory import interaction_rate


def test_circle_energy_matches_the_double_sum():
    """``exp(-beta) E = (1/2 beta) sum_ij h^2 exp(beta (cos(t_i - t_j) - 1)) rho_i rho_j`` (MATH.md §2, §2.1)."""
    n, beta = 64, 3.0
    theta = 2 * math.pi * np.arange(n) / n
    density = np.exp(1.5 * np.cos(theta - 0.4)) + 0.3 * np.cos(3 * theta)
    h = 2 * math.pi / n
    direct = density @ np.exp(beta * (np.cos(theta[:, None] - theta[None, :]) - 1.0)) @ density * h * h / (2 * beta)
    assert interaction_energy(density, beta) == pytest.approx(direct, rel=1e-13)


def test_sphere_energy_of_the_uniform_density():
    """Orthonormal harmonics: ``rho_00 = 1 / sqrt(4 pi)``, ``exp(-beta) E = (1 - exp(-2 beta)) / (4 beta^2)``."""
    beta = 2.0
    operator = KernelOperator(np.array([0]), beta, 3)
    value = operator.energy(np.array([1 / math.sqrt(4 * math.pi)]))
    assert value == pytest.approx((1 - math.exp(-2 * beta)) / (4 * beta ** 2), rel=1e-14)


def test_energy_counts_multiplicity_and_norm():
    operator = KernelOperator(np.arange(3), 1.5, 2)
    coeffs = np.array([0.5, 0.1 + 0.2j, 0.05])
    form = np.array([1, 2, 2]) * scaled_funk_hecke(np.arange(3), 1.5, 2)
    expected = 2 * math.pi / 3.0 * float(np.sum(form * np.abs(coeffs) ** 2))
    value = operator.energy(coeffs, np.array([1.0, 2.0, 2.0]), fourier_series.CIRCLE_NORM)
    assert value == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("dim", [2, 3, 5])
def test_velocity_scale_usa_sa_and_ngpt(dim):
    degrees = np.arange(6)
    beta = 2.5
    sa = KernelOperator(degrees, beta, dim, "sa")
    usa = KernelOperator(degrees, beta, dim, "usa")
    ngpt = KernelOperator(degrees, beta, dim, "usa", normalization="ngpt")
    assert sa.velocity_scale == 1.0 and usa.velocity_scale == math.exp(beta) and ngpt.velocity_scale == 1.0
    np.testing.assert_allclose(usa.velocity(), math.exp(beta) * sa.velocity(), rtol=1e-15)
    np.testing.assert_array_equal(ngpt.velocity(), sa.velocity())
    assert sa.velocity()[0] == 0.0                       # the gradient annihilates degree 0
    np.testing.assert_array_equal(sa.radial, scaled_funk_hecke_beta_derivative(degrees, beta, dim))
    assert usa.band_limit() == band_limit(beta, dim)


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_theory_rate_is_the_operators_velocity(attention):
    model = Model(attention, 4.0, 0.0, 3)
    degrees = np.arange(1, 8)
    operator = KernelOperator.of(model, degrees)
    norm = scaled_funk_hecke(0, 4.0, 3) if attention == "sa" else 4 * math.pi
    np.testing.assert_allclose(interaction_rate(model, degrees), operator.velocity() / norm, rtol=1e-15)


def test_banded_degrees_and_top_sixth():
    operator = KernelOperator.banded(6.0, 2, tol=1e-16, extra=1)
    np.testing.assert_array_equal(operator.degrees, np.arange(band_limit(6.0, 2, 1e-16) + 2))
    assert top_sixth(21) == slice(17, 22)
    assert top_sixth(3) == slice(2, 4)
    assert top_sixth(1) == slice(1, 2)                   # never the mean, degree 0


def test_fourier_series_round_trip_and_basis():
    from meanfield.solvers.bases.fourier import FourierBasis
    rng = np.random.default_rng(4)
    values = rng.standard_normal(48)
    coeffs = fourier_series.coefficients(values)
    assert coeffs[0] == pytest.approx(values.mean(), rel=1e-14)
    np.testing.assert_allclose(fourier_series.synthesis(coeffs, 48), values, atol=1e-14)
    basis = FourierBasis(48, "scipy")
    np.testing.assert_allclose(basis.to_coeffs(values), FourierBasis.coefficients_of(values), atol=1e-15)
    np.testing.assert_array_equal(basis.multiplicity[[0, 1, 23, 24]], [1.0, 2.0, 2.0, 1.0])
    assert basis.kmax == fourier_series.dealiased_band(48) == 15
    np.testing.assert_allclose(basis.cell_average_factor([0, 48]), [1.0, 0.0], atol=1e-16)


def test_fourier_phases_in_both_layouts():
    from meanfield.solvers.schemes.interaction import fourier_phases
    theta = np.random.default_rng(5).uniform(0, 2 * math.pi, (2, 7))
    last = fourier_phases(theta, 9)
    first = fourier_phases(theta, 9, modes_last=False)
    np.testing.assert_allclose(np.moveaxis(first, 0, -1), last, rtol=0, atol=1e-15)
    np.testing.assert_allclose(last, np.exp(1j * theta[..., None] * np.arange(9)), atol=1e-14)


def test_von_mises_spellings_agree_and_messages_name_the_one_used():
    np.testing.assert_array_equal(circle_density("vmf:2@1", 64), circle_density("vonmises:2@1", 64))
    with pytest.raises(InputError, match="vonmises:KAPPA needs KAPPA >= 0"):
        circle_density("vonmises:-1", 64)
    with pytest.raises(InputError, match="vmf:KAPPA needs KAPPA >= 0"):
        circle_density("vmf:-1", 64)


def test_von_mises_alias_on_the_sphere_and_zonal():
    from meanfield.initial.sphere import sphere_density
    from meanfield.initial.zonal import zonal_density
    from meanfield.solvers.bases.sphere_basis import make_sphere_basis
    from meanfield.solvers.bases.zonal_basis import ZonalBasis
    sphere = make_sphere_basis(8)
    np.testing.assert_array_equal(sphere_density("vonmises:2@10,20", sphere), sphere_density("vmf:2@10,20", sphere))
    zonal = ZonalBasis(12, 5)
    np.testing.assert_array_equal(zonal_density("vonmises:3", zonal), zonal_density("vmf:3", zonal))


def test_backend_message_names_the_api_parameter():
    from meanfield.solvers.schemes.finite_volume import CircleFiniteVolume
    with pytest.raises(InputError, match=r"^the backend= parameter must be pyfftw or scipy"):
        CircleFiniteVolume(Model("sa", 2.0, 0.0, 2), 16, backend="fftw")


def test_attention_scale():
    from meanfield.attention_kind import attention_kind
    assert attention_kind("sa").scale(3.0) == 1.0 and attention_kind("usa").scale(3.0) == math.exp(3.0)
    assert attention_kind("usa").relative_scale(3.0) == 1.0 == attention_kind("sa").relative_scale(3.0)


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_node_sums_agree_with_the_particle_sums(attention):
    """The Lagrangian nodes' real-form sums and the particles' complex ones are the same O(n M) Bessel sums."""
    from meanfield.solvers.schemes.interaction import CircleFourierInteraction
    rng = np.random.default_rng(6)
    theta = np.sort(rng.uniform(0, 2 * math.pi, 40))
    weights = rng.uniform(0.5, 1.5, 40)
    weights /= weights.sum()
    interaction = CircleFourierInteraction(3.0, attention, weights)
    (numerator, slope, denominator, _), parts = interaction.node_sums(theta)
    speed = numerator / denominator if attention == "sa" else numerator
    radial, angular = interaction.components(theta[None])
    np.testing.assert_allclose(speed, angular[0], rtol=1e-12, atol=1e-14)
    reference_radial = interaction.node_radial(parts) / (denominator if attention == "sa" else 1.0)
    np.testing.assert_allclose(reference_radial, radial[0], rtol=1e-12, atol=1e-14)
    # the slope row is d(numerator)/d(theta_i) with the sums T_k = sum_j w_j exp(i k theta_j) held fixed
    modes = interaction.modes
    sums = np.exp(1j * np.outer(theta, modes)).T @ weights

    def numerator_at(x):
        return (np.exp(-1j * np.outer(x, modes)) * sums).imag @ interaction.speed_coeffs

    h = 1e-5
    np.testing.assert_allclose(slope, (numerator_at(theta + h) - numerator_at(theta - h)) / (2 * h), rtol=1e-7,
                               atol=1e-9 * np.max(np.abs(slope)))
