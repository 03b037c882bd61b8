"""The S^2 pseudo-spectral solver (solvers/schemes/sphere.py) against the theory of MATH.md §2.2–2.3."""

import math

import numpy as np
import pytest

from meanfield.errors import InputError
from meanfield.initial.sphere import direction, sphere_density, von_mises_fisher
from meanfield.model import Model
from meanfield.theory import linear_noise_threshold, growth_rates
from meanfield.solvers.runs.runloop import run
from meanfield.solvers.schemes.sphere import SphereSpectral
from meanfield.solvers.bases.sphere_basis import SphereBasis
from meanfield.solvers.steppers.steppers import make_stepper

DEGREES = np.arange(1, 7)


def _index(basis, l, m):
    return m * (2 * basis.lmax + 1 - m) // 2 + l


def _grid(basis):
    return np.meshgrid(basis.colatitude, basis.longitude, indexing="ij")


def _random_alm(basis, rng):
    alm = rng.standard_normal(basis.nalm) + 1j * rng.standard_normal(basis.nalm)
    alm[basis.zonal] = alm[basis.zonal].real
    return alm


# -- (a) transform conventions -----------------------------------------------------------------------

def test_grid_is_dealiased_and_quadrature_exact():
    for lmax in (7, 16, 63, 127):
        basis = SphereBasis(lmax)
        assert basis.nlat >= math.ceil(3 * (lmax + 1) / 2) and basis.nlon >= 3 * lmax + 1
    from meanfield.solvers.bases.sphere_basis import _dealiased_grid

    # an even longitude count keeps the grid symmetric under phi -> phi + pi (lmax 8: good_size(26) is 27)
    assert all(_dealiased_grid(lmax)[1] % 2 == 0 for lmax in range(1, 400))
    basis = SphereBasis(16)
    theta, _ = _grid(basis)
    assert basis.integrate(np.ones(basis.shape)) == pytest.approx(4 * math.pi, rel=1e-14)
    assert basis.integrate(np.cos(theta) ** 2) == pytest.approx(4 * math.pi / 3, rel=1e-14)
    assert np.allclose(basis.lat, 90 - np.degrees(basis.colatitude)) and basis.lat[0] > 0
    assert basis.lmax == 16 and basis.backend == "ducc0"


def test_y1m_synthesis_and_gradient_match_analytic_forms():
    basis = SphereBasis(8)
    theta, phi = _grid(basis)
    y10 = np.zeros(basis.nalm, complex)
    y10[_index(basis, 1, 0)] = 1.0
    assert np.max(np.abs(basis.synthesise(y10) - math.sqrt(3 / (4 * math.pi)) * np.cos(theta))) < 1e-14
    grad = basis.gradient(y10)  # (d/dtheta, 1/sin d/dphi): north-pole theta grows southward
    assert np.max(np.abs(grad[0] + math.sqrt(3 / (4 * math.pi)) * np.sin(theta))) < 1e-14
    assert np.max(np.abs(grad[1])) < 1e-14
    # real field a Y_11 + conj: 2 Re(Y_11) = -2 sqrt(3/8pi) sin(theta) cos(phi) (Condon-Shortley)
    y11 = np.zeros(basis.nalm, complex)
    y11[_index(basis, 1, 1)] = 1.0
    c = -2 * math.sqrt(3 / (8 * math.pi))
    assert np.max(np.abs(basis.synthesise(y11) - c * np.sin(theta) * np.cos(phi))) < 1e-14
    grad = basis.gradient(y11)
    assert np.max(np.abs(grad[0] - c * np.cos(theta) * np.cos(phi))) < 1e-14
    assert np.max(np.abs(grad[1] + c * np.sin(phi))) < 1e-14


def test_divergence_of_gradient_is_laplacian_and_roundtrip(rng):
    basis = SphereBasis(24)
    alm = _random_alm(basis, rng)
    assert np.max(np.abs(basis.analyse(basis.synthesise(alm)) - alm)) < 1e-13
    l = basis.degree_of_index
    v_theta, v_phi = basis.gradient(alm)
    lap = basis.divergence(v_theta, v_phi)
    assert np.max(np.abs(lap + l * (l + 1) * alm)) < 1e-11 * basis.lmax ** 2
    # divergence of a rotated gradient (a pure curl field) vanishes
    assert np.max(np.abs(basis.divergence(-v_phi, v_theta))) < 1e-11 * basis.lmax ** 2
    # degree amplitude counts m < 0: |f|^2 integral = sum of squared degree amplitudes
    f = basis.synthesise(alm)
    assert np.sum(basis.degree_amplitude(alm) ** 2) == pytest.approx(basis.integrate(f * f), rel=1e-12)


def test_products_are_analysed_without_aliasing(rng):
    basis = SphereBasis(12)
    big = SphereBasis(24)
    a, b = _random_alm(basis, rng), _random_alm(basis, rng)
    exact = big.analyse(big.synthesise(basis.resample(a, 24)) * big.synthesise(basis.resample(b, 24)))
    assert np.max(np.abs(basis.analyse(basis.synthesise(a) * basis.synthesise(b)) - big.resample(exact, 12))) < 1e-12


def test_linearised_rhs_has_the_theoretical_rates(rng):
    for attention in ("sa", "usa"):
        model = Model(attention, 4.0, 0.0, 3)
        scheme = SphereSpectral(model, 12)
        basis = scheme.basis
        uniform = np.zeros(basis.nalm, complex)
        uniform[0] = 1 / math.sqrt(4 * math.pi)
        assert np.max(np.abs(scheme.rhs(uniform, 0.0))) < 1e-15
        pert = _random_alm(basis, rng)
        pert[0] = 0.0
        eps = 1e-6
        lin = (scheme.rhs(uniform + eps * pert, 0) - scheme.rhs(uniform - eps * pert, 0)) / (2 * eps)
        l = basis.degree_of_index
        for degree in DEGREES:
            sel = l == degree
            rate = growth_rates(model, [degree])[0]
            assert np.max(np.abs(lin[sel] - rate * pert[sel])) < 1e-8 * np.max(np.abs(pert))


# -- (b) growth rates and (f) decay above the linear noise threshold nu_# -----------------------------------------

def fitted_sphere_rates(attention, beta, nu=0.0, lmax=12, seed=1):
    model = Model(attention, beta, nu, 3)
    theory = growth_rates(model, DEGREES)
    t_final = 6.0 / np.max(np.abs(theory))
    scheme = SphereSpectral(model, lmax)
    state = scheme.state_from_density(sphere_density("perturbed:1e-8", scheme.basis, seed))
    record = run(scheme, make_stepper("dopri5", scheme, rtol=1e-10), state, t_final, t_final / 20)
    assert record.stop_reason == "completed"
    amplitude = np.array([frame["mode_amplitude"][DEGREES] for frame in record.frames])
    return np.polyfit(np.array(record.times), np.log(amplitude), 1)[0], theory


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("beta", [4.0, 9.0])
def test_degree_growth_rates_match_theory(attention, beta):
    fitted, theory = fitted_sphere_rates(attention, beta)
    assert np.all(theory > 0)
    assert np.all(np.abs(fitted / theory - 1) < 2e-3)


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_noise_above_critical_decays_at_theoretical_rate(attention):
    nu = 1.5 * linear_noise_threshold(Model(attention, 4.0, 0.0, 3))
    fitted, theory = fitted_sphere_rates(attention, 4.0, nu=nu)
    assert np.all(theory < 0)
    assert np.all(np.abs(fitted / theory - 1) < 2e-3)


# -- (c) conservation and monotone energy through a nonlinear run --------------------------------------

@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_mass_conserved_and_energy_non_decreasing(attention):
    scheme = SphereSpectral(Model(attention, 4.0, 0.0, 3), 32)
    density = sphere_density("vmf:3@60,0+vmf:3@-20,120+vmf:2@0,250", scheme.basis, 5)
    state = scheme.state_from_density(density)
    t_final = 1.0 if attention == "sa" else 0.05  # USA runs exp(beta) faster
    record = run(scheme, make_stepper("dopri5", scheme, rtol=1e-9), state, t_final, t_final / 10)
    assert record.stop_reason == "completed"
    mass = np.array([f["mass"] for f in record.frames])
    energy = np.array([f["energy"] for f in record.frames])
    assert np.max(np.abs(mass - 1.0)) < 1e-12
    assert np.all(np.diff(energy) >= -1e-14 * energy[0])
    assert energy[-1] > 1.03 * energy[0]
    assert np.all(record.state[scheme.basis.zonal].imag == 0.0)


# -- (d) spectral convergence in lmax -----------------------------------------------------------------

def test_spectral_convergence_in_lmax():
    amplitudes = {}
    for lmax in (8, 16, 32):
        scheme = SphereSpectral(Model("sa", 2.0, 0.0, 3), lmax, resolution_tol=1.0)
        state = scheme.state_from_density(sphere_density("vmf:1.5@30,40+vmf:1@-30,200", scheme.basis, 0))
        record = run(scheme, make_stepper("dopri5", scheme, rtol=1e-11), state, 1.0, 1.0)
        assert record.stop_reason == "completed"
        amplitudes[lmax] = record.frames[-1]["mode_amplitude"][:9]
    err8 = np.max(np.abs(amplitudes[8] - amplitudes[32]))
    err16 = np.max(np.abs(amplitudes[16] - amplitudes[32]))
    assert err8 > 1e-9 and err16 < 1e-4 * err8 and err16 < 1e-11


# -- (e) an isolated bump contracts and stays zonal ----------------------------------------------------

@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_north_pole_bump_contracts_and_stays_zonal(attention):
    scheme = SphereSpectral(Model(attention, 3.0, 0.0, 3), 32)
    state = scheme.state_from_density(sphere_density("vmf:4", scheme.basis, 0))
    t_final = 0.3 if attention == "sa" else 0.3 * math.exp(-3.0)  # USA runs exp(beta) faster
    record = run(scheme, make_stepper("dopri5", scheme, rtol=1e-9), state, t_final, t_final / 3)
    assert record.stop_reason == "completed"
    peaks = [float(f["density"][0].max()) for f in record.frames]  # first ring: nearest the pole
    assert peaks[-1] > 1.15 * peaks[0] and np.all(np.diff(peaks) > 0)
    nonzonal = np.abs(record.state[scheme.basis.m_of_index > 0])
    assert np.max(nonzonal) < 1e-14
    density = record.frames[-1]["density"]
    assert np.max(np.abs(density - density[:, :1])) < 1e-12 * density.max()


# -- validity, contract and initial data ----------------------------------------------------------------

def test_validity_reasons_and_contract():
    scheme = SphereSpectral(Model("sa", 4.0, 0.1, 3), 12)
    basis = scheme.basis
    state = scheme.state_from_density(sphere_density("uniform", basis, 0))
    assert scheme.validity(state, 0.0) is None
    assert scheme.validity(state * np.nan, 1.0).startswith("non-finite values at t = 1")
    bad = state.copy()
    bad[_index(basis, 1, 0)] = 2 * state[0]
    assert scheme.validity(bad, 2.0).startswith("positivity lost at t = 2")
    tail = state.copy()
    tail[_index(basis, 12, 0)] = 1e-3 * state[0]
    assert scheme.validity(tail, 3.0).startswith("resolution lost at t = 3")
    frame = scheme.frame(state)
    assert frame["density"].shape == basis.shape and frame["mass"] == pytest.approx(1.0, abs=1e-14)
    assert frame["mode_amplitude"].shape == (13,)
    assert frame["energy"] == pytest.approx(math.exp(-4.0) * 4 * math.pi * math.sinh(4.0) / 4.0
                                            / (2 * 4.0) / (4 * math.pi), rel=1e-12)
    assert scheme.dims()["density"] == ("lat", "lon") and set(scheme.coords()) == {"lat", "lon", "mode"}
    l = basis.degree_of_index
    assert np.allclose(scheme.linear, -0.1 * l * (l + 1)) and scheme.state_scale == 1 / (4 * math.pi)
    assert scheme.stable_dt(0.5) > 0


def test_initial_densities_and_refusals():
    basis = SphereBasis(24)
    for spec in ("uniform", "perturbed:0.01", "vmf:5@10,20", "vmf:2+vmf:2@-90,0", "vmf:0"):
        density = sphere_density(spec, basis, 1)
        assert basis.integrate(density) == pytest.approx(1.0, abs=1e-12) and np.all(density >= 0)
    sharp = von_mises_fisher(basis, 1000.0, direction(45.0, 30.0))  # no overflow at large kappa
    assert np.all(np.isfinite(sharp)) and np.max(sharp) <= 1000 / (2 * math.pi)
    # MATH.md §2.4: noise = sqrt(4 pi) sum of real orthonormal harmonics of degrees 1..12 with the seed's normals,
    # drawn degree by degree (x_l0, then x_lm, y_lm for m = 1..l): f_lm = (x_lm - i y_lm) / sqrt 2
    noise = (sphere_density("perturbed:0.01", basis, 3) * 4 * math.pi - 1) / 0.01
    coeffs = basis.analyse(noise) / math.sqrt(4 * math.pi)
    normals = np.random.default_rng(3).standard_normal(12 * 14)
    l, m = basis.degree_of_index, basis.m_of_index
    at = lambda degree, order: coeffs[np.flatnonzero((l == degree) & (m == order))[0]]
    assert at(1, 0) == pytest.approx(normals[0], abs=1e-12)
    assert at(1, 1) == pytest.approx((normals[1] - 1j * normals[2]) / math.sqrt(2), abs=1e-12)
    assert at(2, 2) == pytest.approx((normals[6] - 1j * normals[7]) / math.sqrt(2), abs=1e-12)
    amplitude = basis.degree_amplitude(basis.analyse(noise)) / math.sqrt(4 * math.pi)
    assert amplitude[0] < 1e-12 and np.all(amplitude[1:13] > 0) and np.max(amplitude[13:]) < 1e-12
    # the degree-l amplitude is the norm of its 2 l + 1 normals
    assert amplitude[12] == pytest.approx(np.linalg.norm(normals[143:168]), rel=1e-12)
    assert np.array_equal(sphere_density("perturbed:0.01", basis, 3), sphere_density("perturbed:0.01", basis, 3))
    for spec in ("blob", "perturbed:5", "vmf:200", "vmf:2@100,0", "vmf:x", ""):
        with pytest.raises(InputError, match="init"):
            sphere_density(spec, basis, 1)
    with pytest.raises(InputError, match="not resolved"):
        sphere_density("vmf:700@0,0", basis, 1)


def test_restart_from_a_sphere_run_file_resamples_spectrally(tmp_path):
    from meanfield.app.storage import build_run_dataset, save_run
    scheme = SphereSpectral(Model("sa", 2.0, 0.0, 3), 16)
    density = sphere_density("vmf:2@20,50", scheme.basis, 0)
    frames = [scheme.frame(scheme.state_from_density(density))]
    dataset = build_run_dataset([0.0], frames, scheme.dims(), scheme.coords(),
                                {"geometry": "sphere", "stop_reason": "completed"})
    path = save_run(dataset, tmp_path / "run.nc")
    for lmax in (12, 24):
        basis = SphereBasis(lmax)
        again = sphere_density(str(path), basis, 0)
        assert np.max(np.abs(again - sphere_density("vmf:2@20,50", basis, 0))) < 1e-3 / (4 * math.pi)
    dataset.attrs["geometry"] = "circle"
    save_run(dataset, tmp_path / "circle.nc")
    with pytest.raises(InputError, match="circle run"):
        sphere_density(str(tmp_path / "circle.nc"), SphereBasis(12), 0)
