"""The zonal Galerkin solver on S^{d-1} against the theory of MATH.md §2, §2.2, §2.3."""

import math

import numpy as np
import pytest
from scipy.special import ive, roots_jacobi

from meanfield.errors import InputError
from meanfield.geometry import sphere_area
from meanfield.initial.zonal import von_mises_fisher, zonal_density
from meanfield.model import Model
from meanfield.app.storage import build_run_dataset, save_run
from meanfield.theory import linear_noise_threshold, growth_rates
from meanfield.solvers.runs.runloop import run
from meanfield.solvers.steppers.steppers import make_stepper
from meanfield.gegenbauer import normalised_gegenbauer
from meanfield.solvers.schemes.zonal import ZonalGalerkin
from meanfield.solvers.bases.zonal_basis import ZonalBasis

MODES = np.arange(1, 7)


def start(scheme, spec, seed=1):
    return scheme.state_from_density(zonal_density(spec, scheme.basis, seed))


def integrate(scheme, state, t_final, save_every, rtol=1e-10):
    return run(scheme, make_stepper("dopri5", scheme, rtol=rtol), state, t_final, save_every)


# -- (a) basis, quadrature and Funk–Hecke ------------------------------------------------------------
@pytest.mark.parametrize("dim", [3, 4, 5, 8])
def test_basis_is_orthonormal_on_the_sphere(dim):
    basis = ZonalBasis(256 if dim == 3 else 64, dim)
    gram = (basis.P.T * basis.quad) @ basis.P
    assert np.max(np.abs(gram - np.eye(basis.lmax + 1))) < 1e-10
    assert basis.integrate(np.ones(basis.size)) == pytest.approx(sphere_area(dim), rel=1e-13)
    # P_l'(t) against a centred difference of P_l at interior points
    t, h = np.linspace(-0.9, 0.9, 7), 1e-6
    _, derivative = normalised_gegenbauer(t, 20, dim, derivative=True)
    difference = (basis.polynomials(t + h, 20) - basis.polynomials(t - h, 20)) / (2 * h)
    assert np.max(np.abs(derivative - difference)) < 1e-6 * np.max(np.abs(derivative))


def brute_force_convolution(degree, beta, dim, s, points=80):
    """``int exp(beta <x,y>) P_l(y_d) dsigma(y)`` at ``x = (sqrt(1-s^2), 0, .., s)`` by nested quadrature.

    ``y = (sqrt(1-t^2) z, t)``, ``z`` on S^{d-2}; the ``z`` integral of a function of ``z_1`` is
    ``|S^{d-3}| int (1-u^2)^{(d-4)/2} du``.  No Funk–Hecke anywhere.
    """
    t, wt = roots_jacobi(points, (dim - 3) / 2, (dim - 3) / 2)
    u, wu = roots_jacobi(points, (dim - 4) / 2, (dim - 4) / 2)
    basis_values = normalised_gegenbauer(t, degree, dim)[:, degree]
    inner = np.exp(beta * (s * t[:, None] + math.sqrt(1 - s * s) * np.sqrt(1 - t[:, None] ** 2) * u[None, :]))
    return sphere_area(dim - 2) * float(np.sum(wt[:, None] * wu[None, :] * basis_values[:, None] * inner))


@pytest.mark.parametrize("dim", [3, 5])
@pytest.mark.parametrize("degree", [0, 1, 3, 6])
def test_funk_hecke_is_exact_for_zonal_functions(dim, degree):
    beta = 2.5
    scheme = ZonalGalerkin(Model("usa", beta, 0.0, dim), 8)
    kappa = math.exp(beta) * scheme.conv[degree]
    for s in (-0.7, 0.1, 0.95):
        expected = kappa * scheme.basis.polynomials(np.array(s), degree)[degree]
        scale = math.exp(beta) * scheme.conv[0] * scheme.basis.P[0, 0]  # K * (uniform P_0)
        assert brute_force_convolution(degree, beta, dim, s) == pytest.approx(expected, rel=1e-11,
                                                                             abs=1e-12 * scale)


# -- (b) linear growth rates -------------------------------------------------------------------------
def fitted_rates(attention, beta, nu, dim, lmax=32):
    model = Model(attention, beta, nu, dim)
    theory = growth_rates(model, MODES)
    t_final = 6.0 / np.max(np.abs(theory))
    scheme = ZonalGalerkin(model, lmax)
    record = integrate(scheme, start(scheme, "perturbed:1e-8"), t_final, t_final / 20)
    assert record.stop_reason == "completed"
    amplitude = np.array([frame["mode_amplitude"][MODES] for frame in record.frames])
    return np.polyfit(np.array(record.times), np.log(amplitude), 1)[0], theory


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("dim", [3, 4, 8])
def test_growth_rates_match_theory(attention, dim):
    fitted, theory = fitted_rates(attention, 4.0, 0.0, dim)
    assert np.all(theory > 0)
    assert np.all(np.abs(fitted / theory - 1) < 2e-3)


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("dim", [3, 5])
def test_noise_above_critical_decays_at_theoretical_rate(attention, dim):
    nu = 1.5 * linear_noise_threshold(Model(attention, 4.0, 0.0, dim))
    fitted, theory = fitted_rates(attention, 4.0, nu, dim, lmax=16)
    assert np.all(theory < 0)
    assert np.all(np.abs(fitted / theory - 1) < 2e-3)


# -- (c) conservation and monotonicity; (e) contraction ---------------------------------------------------
@pytest.fixture(scope="module", params=[("sa", 3, 3.0), ("usa", 5, 0.5)])
def nonlinear_run(request):
    """Until the density has contracted enough that the scheme stops itself (or t_final)."""
    attention, dim, t_final = request.param
    scheme = ZonalGalerkin(Model(attention, 4.0, 0.0, dim), 64)
    record = integrate(scheme, start(scheme, "vmf:1+perturbed:1e-3", seed=5), t_final, t_final / 30, rtol=1e-9)
    return scheme, record


def test_mass_is_conserved_through_a_nonlinear_run(nonlinear_run):
    _, record = nonlinear_run
    mass = np.array([frame["mass"] for frame in record.frames])
    assert len(record.frames) > 10
    assert np.max(np.abs(mass - 1.0)) < 1e-12


def test_energy_does_not_decrease(nonlinear_run):
    _, record = nonlinear_run
    energy = np.array([frame["energy"] for frame in record.frames])
    assert np.all(np.diff(energy) >= -1e-12 * np.abs(energy[1:]))
    assert energy[-1] > energy[0] * (1 + 1e-3)


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_bump_at_the_pole_contracts(attention):
    t_final = 1.0 if attention == "sa" else 0.1  # USA runs on the time scale exp(-beta)
    scheme = ZonalGalerkin(Model(attention, 3.0, 0.0, 3), 48)
    record = integrate(scheme, start(scheme, "vmf:2"), t_final, t_final / 10, rtol=1e-9)
    assert record.stop_reason == "completed"
    peaks = np.array([frame["density"][0] for frame in record.frames])  # node nearest the pole
    assert np.all(np.diff(peaks) > 0)
    assert peaks[-1] > 1.5 * peaks[0]
    assert np.argmax(record.frames[-1]["density"]) == 0


# -- (d) spectral convergence ---------------------------------------------------------------------------
def test_spectral_convergence_in_lmax():
    model = Model("sa", 3.0, 0.0, 4)
    finals = {}
    for lmax in (8, 12, 16, 24, 48):
        scheme = ZonalGalerkin(model, lmax, resolution_tol=1.0)  # measure the error, do not stop on it
        record = integrate(scheme, start(scheme, "vmf:3"), 0.3, 0.3, rtol=1e-12)
        assert record.stop_reason == "completed"
        finals[lmax] = record.state
    reference = finals.pop(48)
    errors = [np.max(np.abs(np.pad(state, (0, reference.size - state.size)) - reference)) / reference[0]
              for state in finals.values()]
    assert all(later < 0.1 * earlier for earlier, later in zip(errors, errors[1:]))
    assert errors[-1] < 1e-10


# -- initial conditions -------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [3, 4, 8])
def test_initial_densities_are_normalised(dim):
    basis = ZonalBasis(48, dim)
    for spec in ("uniform", "perturbed:1e-3", "vmf:5", "vmf:0", "vmf:2+uniform"):
        assert basis.integrate(zonal_density(spec, basis, seed=2)) == pytest.approx(1.0, abs=1e-12)
    # mean of x_d under vMF(kappa): I_{d/2}(kappa) / I_{d/2-1}(kappa)
    mean_cos = basis.integrate(von_mises_fisher(basis.nodes, 5.0, dim) * basis.nodes)
    assert mean_cos == pytest.approx(ive(dim / 2, 5.0) / ive(dim / 2 - 1, 5.0), rel=1e-12)


def test_perturbation_is_the_documented_series_and_vmf_has_no_overflow():
    """MATH.md §2.4: g_l = EPS c_l / sqrt(|S^{d-1}|), l = 1..12, c_l the first default_rng(seed) normals."""
    basis, eps = ZonalBasis(32, 3), 1e-3
    coeffs = basis.analyse(zonal_density(f"perturbed:{eps}", basis, seed=4)) * math.sqrt(sphere_area(3))
    assert coeffs[0] == pytest.approx(1.0, abs=1e-13)
    assert np.max(np.abs(coeffs[1:13] - eps * np.random.default_rng(4).standard_normal(12))) < 1e-13
    assert np.max(np.abs(coeffs[13:])) < 1e-13
    assert np.all(np.isfinite(von_mises_fisher(basis.nodes, 1e5, 8)))


@pytest.mark.parametrize("spec", ["bogus", "vmf:-1", "perturbed:50", "vmf:400", "vmf:x"])
def test_bad_initial_conditions_are_refused(spec):
    with pytest.raises(InputError, match="init"):
        zonal_density(spec, ZonalBasis(16, 3), seed=1)


def test_restart_from_a_zonal_run_resamples(tmp_path):
    scheme = ZonalGalerkin(Model("sa", 2.0, 0.0, 4), 24)
    record = integrate(scheme, start(scheme, "vmf:2"), 0.2, 0.1)
    attrs = {"geometry": "zonal", "stop_reason": record.stop_reason, "dim": 4, "resolution": 24}
    path = save_run(build_run_dataset(record.times, record.frames, scheme.dims(), scheme.coords(), attrs),
                    tmp_path / "run.nc")
    finer = ZonalGalerkin(Model("sa", 2.0, 0.0, 4), 40)
    state = finer.state_from_density(zonal_density(str(path), finer.basis))
    assert np.max(np.abs(state[:25] - record.state)) < 1e-13
    assert np.max(np.abs(state[25:])) < 1e-13
    with pytest.raises(InputError, match="dimension"):
        zonal_density(str(path), ZonalBasis(24, 3))


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_a_block_of_states_as_columns_gives_each_columns_right_hand_side(attention):
    """``rhs`` of a ``(L + 1, m)`` block (the linearisation's Jacobian in one call): each column the right-hand side of
    that column alone, to the rounding of a matrix product taken as one (a factor applied along the wrong axis, or a
    column mixed with another, is off by the perturbation itself, 1e-3)."""
    scheme = ZonalGalerkin(Model(attention, 4.0, 0.0, 3), 16)
    assert scheme.takes_columns
    uniform = scheme.state_from_density(np.full(scheme.basis.nodes.size, 1.0 / (4 * np.pi)))
    rng = np.random.default_rng(5)
    block = uniform[:, None] + 1e-3 * uniform[0] * rng.standard_normal((uniform.size, 6))
    together = scheme.rhs(block, 0.0)
    for column in range(block.shape[1]):
        alone = scheme.rhs(block[:, column], 0.0)
        np.testing.assert_allclose(together[:, column], alone, rtol=0, atol=1e-13 * np.max(np.abs(alone)))
