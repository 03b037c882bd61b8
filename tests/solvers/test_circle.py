"""The circle pseudo-spectral solver against the theory of MATH.md §2–2.3."""

import math

import numpy as np
import pytest

from meanfield import Model, linear_noise_threshold, fourier_series, growth_rates
from meanfield.diagnostics import detect_clusters
from meanfield.metastable import refined_formation_time
from meanfield.initial.circle import circle_density
from meanfield.solvers import CircleSpectral, make_stepper, run
from meanfield.solvers.runs.solve import solve
from meanfield.validation.studies.growth_rates import fitted_rates


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("beta", [4.0, 9.0])
def test_growth_rates_match_theory(attention, beta):
    fitted, theory, tolerance = fitted_rates(attention, beta, resolution=128)
    # within dopri5's step error and the quadratic feed (validation/studies/growth_rates.py), ~4e-7 relative
    assert np.all(np.abs(fitted / theory - 1) <= tolerance) and np.all(tolerance < 1e-6)


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_noise_above_critical_decays_at_theoretical_rate(attention):
    nu = 1.5 * linear_noise_threshold(Model(attention, 4.0))
    fitted, theory, tolerance = fitted_rates(attention, 4.0, nu=nu, resolution=64)
    assert np.all(theory < 0)
    assert np.all(np.abs(fitted / theory - 1) <= tolerance) and np.all(tolerance < 1e-6)


@pytest.fixture(scope="module")
def clustering_run():
    """SA, beta 9, perturbed:1e-4 through cluster formation until the scheme stops itself."""
    return solve("circle", attention="sa", beta=9.0, resolution=512, init="perturbed:1e-4", seed=3,
                 t_final=30.0, save_every=0.25)


def test_mass_is_conserved_through_a_nonlinear_run(clustering_run):
    assert np.max(np.abs(clustering_run["mass"].values - 1.0)) < 1e-12


def test_energy_never_decreases(clustering_run):
    energy = clustering_run["energy"].values
    assert np.all(np.diff(energy) >= -1e-14 * energy[0])
    assert energy[-1] > 1.05 * energy[0]  # clusters raise the energy visibly


def test_run_stops_when_resolution_is_lost_and_keeps_its_frames(clustering_run):
    reason = clustering_run.attrs["stop_reason"]
    assert reason.startswith("resolution lost") or reason.startswith("positivity lost")
    times = clustering_run["time"].values
    # past the linear theory's formation time from the start's own mode k* = 4 (11.57 for seed 3), before t_final
    k_star = fourier_series.coefficients(clustering_run["density"].values[0])[4]
    formation = refined_formation_time(k_star, growth_rates(Model("sa", 9.0), [4])[0])
    assert formation < times[-1] < 30.0 and np.allclose(np.diff(times[:-1]), 0.25)
    # the last valid state is kept as a final frame between two save times, and flagged
    assert 0 < times[-1] - times[-2] < 0.25 and clustering_run.attrs["last_frame_off_schedule"] == 1
    density = clustering_run["density"].values
    assert np.all(density >= -1e-6 / (2 * math.pi))
    assert detect_clusters(density[-1], 9.0).count == 4  # k* = 4 at beta = 9


def test_nu_positive_mass_and_stepper_agreement():
    results = {}
    for stepper in ("dopri5", "rk4", "etdrk4"):
        ds = solve("circle", attention="sa", beta=4.0, nu=0.05, resolution=64, init="vonmises:2@1+vonmises:1@4",
                   t_final=2.0, save_every=1.0, stepper=stepper, rtol=1e-11, cfl=0.1)
        assert ds.attrs["stop_reason"] == "completed"
        assert np.max(np.abs(ds["mass"].values - 1)) < 1e-13
        results[stepper] = ds["density"].values[-1]
    assert np.max(np.abs(results["rk4"] - results["dopri5"])) < 1e-8
    assert np.max(np.abs(results["etdrk4"] - results["dopri5"])) < 1e-8


def test_spectral_convergence_in_resolution():
    """Error of the Fourier coefficients at t = 1 falls >= 100x per doubling until 1e-11."""
    def coefficients(n):
        ds = solve("circle", attention="sa", beta=4.0, resolution=n, init="vonmises:1@0.5", t_final=1.0,
                   save_every=1.0, rtol=1e-13, resolution_tol=1.0)
        assert ds.attrs["stop_reason"] == "completed"
        return ds["mode_amplitude"].values[-1], np.fft.rfft(ds["density"].values[-1], norm="forward")

    reference = coefficients(256)[1]
    errors = []
    for n in (16, 32, 64):
        coeffs = coefficients(n)[1]
        errors.append(np.max(np.abs(coeffs - reference[:coeffs.size])))
    for coarse, fine in zip(errors, errors[1:]):
        assert fine <= max(coarse / 100, 1e-11)
    assert errors[-1] < 1e-11


def test_von_mises_bump_contracts_and_stays_centred():
    ds = solve("circle", attention="sa", beta=4.0, resolution=128, init="vonmises:3@2.0", t_final=2.0,
               save_every=1.0)
    peaks = ds["density"].max("theta").values
    assert np.all(np.diff(peaks) > 0)
    coeffs = np.fft.rfft(ds["density"].values[-1], norm="forward")
    rotated = coeffs * np.exp(2.0j * np.arange(coeffs.size))  # symmetric about theta = 2: real
    assert np.max(np.abs(rotated.imag)) < 1e-14
    assert detect_clusters(ds["density"].values[-1], 4.0).count == 1


class _Interrupting:
    """A stepper wrapper that raises KeyboardInterrupt after a few steps."""

    def __init__(self, stepper, after):
        self.stepper, self.after, self.steps, self.rejected = stepper, after, 0, 0

    def step(self, state, t, h_max):
        if self.steps == self.after:
            raise KeyboardInterrupt
        self.steps += 1
        return self.stepper.step(state, t, h_max)


def test_interrupt_keeps_the_frames_computed():
    scheme = CircleSpectral(Model("sa", 4.0), 64, resolution_tol=1.0)
    state = scheme.state_from_density(circle_density("vonmises:1", 64))
    stepper = _Interrupting(make_stepper("rk4", scheme, cfl=0.5), after=40)
    record = run(scheme, stepper, state, t_final=100.0, save_every=0.5)
    assert record.stop_reason.startswith("interrupted")
    assert len(record.frames) == len(record.times) >= 2
    assert record.times[-1] <= record.t_reached < 100


def test_lost_positivity_and_finiteness_are_detected():
    scheme = CircleSpectral(Model("sa", 4.0), 64)
    good = scheme.state_from_density(circle_density("uniform", 64))
    assert scheme.validity(good, 0.0) is None
    negative = good.copy()
    negative[1] = 0.2 * good[0]
    negative[2] = 0.6 * good[0]  # min of 1 + 0.4 cos t + 1.2 cos 2t is -0.2
    assert "positivity lost" in scheme.validity(negative, 1.0)
    broken = good.copy()
    broken[3] = np.nan
    assert "non-finite" in scheme.validity(broken, 2.0)


def test_positivity_loss_stops_the_run():
    """With the resolution monitor switched off, Gibbs oscillations make rho negative: the run stops."""
    scheme = CircleSpectral(Model("sa", 9.0), 128, resolution_tol=1.0)
    state = scheme.state_from_density(circle_density("perturbed:1e-3", 128, seed=0))
    record = run(scheme, make_stepper("dopri5", scheme), state, t_final=40.0, save_every=0.5)
    assert record.stop_reason.startswith("positivity lost")
    assert all(np.min(f["density"]) >= -1e-6 * scheme.state_scale for f in record.frames)


def test_sa_uniform_state_is_stationary():
    ds = solve("circle", attention="sa", beta=9.0, resolution=64, init="uniform", t_final=5.0, save_every=5.0)
    assert np.max(np.abs(ds["density"].values[-1] - 1 / (2 * math.pi))) < 1e-15


def test_usa_energy_never_decreases_through_clustering():
    ds = solve("circle", attention="usa", beta=4.0, resolution=256, init="perturbed:1e-3", seed=2,
               t_final=3.0, save_every=0.05)
    energy = ds["energy"].values
    assert np.all(np.diff(energy) >= -1e-14 * energy[0]) and energy[-1] > 1.05 * energy[0]
    assert np.max(np.abs(ds["mass"].values - 1)) < 1e-12


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("normalization", ["post", "ngpt", "lnscale"])
def test_rhs_and_max_speed_match_the_formula_with_numpy_transforms(attention, normalization):
    """rhs (in place in the transform buffers) against MATH.md §2/§6 written out with numpy's FFT."""
    n, beta, t = 64, 4.0, 0.7
    scheme = CircleSpectral(Model(attention, beta), n, normalization=normalization)
    theta = scheme.coordinate
    state = scheme.state_from_density((1 + 0.3 * np.cos(theta) + 0.2 * np.sin(3 * theta)) / (2 * math.pi))

    def grid(multiplier):
        return np.fft.irfft(state * multiplier, n, norm="forward")

    rho, speed = grid(1.0), grid(scheme.velocity)
    if normalization == "ngpt":
        speed = speed / np.sqrt(speed ** 2 + grid(scheme.radial) ** 2)  # alpha = 1
    elif attention == "sa":
        speed = speed / grid(scheme.conv)
    if normalization == "lnscale":
        speed = speed / math.sqrt(t + 1)
    expected = np.fft.rfft(rho * speed) * scheme.divergence
    result = scheme.rhs(state, t)
    assert np.max(np.abs(result - expected)) < 1e-13 * np.max(np.abs(expected))
    assert np.max(np.abs(expected)) > 1e-3
    assert scheme.max_speed == pytest.approx(np.max(np.abs(speed)), rel=1e-13)


def test_rhs_calls_do_not_leak_into_each_other():
    """The buffers rhs reuses: the same state gives the same bytes after another state and a density()."""
    scheme = CircleSpectral(Model("sa", 9.0), 128)
    first = scheme.state_from_density(circle_density("vonmises:2", 128))
    other = scheme.state_from_density(circle_density("vonmises:1@1.5", 128))
    result, speed = scheme.rhs(first, 0.0), scheme.max_speed
    scheme.rhs(other, 0.0)
    assert scheme.max_speed != speed
    scheme.density(other)
    assert scheme.rhs(first, 0.0).tobytes() == result.tobytes() and scheme.max_speed == speed
    assert result is not scheme.rhs(first, 0.0)   # a fresh array each call (steppers keep their stages)
