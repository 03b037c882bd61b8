"""Lagrangian weighted-node schemes (solvers/schemes/lagrangian.py; MATH.md §1, §2, §2.1, §2.2)."""

import math

import ducc0
import numpy as np
import pytest

from meanfield import InputError, Model
from meanfield.diagnostics import detect_clusters
from meanfield.initial.circle import circle_density
from meanfield.initial.sphere import sphere_density
from meanfield.theory import dominant_mode, formation_time
from meanfield.solvers.schemes.interaction import DirectInteraction
from meanfield.solvers.schemes.lagrangian import CircleLagrangian, SphereLagrangian
from meanfield.solvers.runs.solve import solve
from meanfield.solvers.bases.sphere_basis import SphereBasis


def log_slopes(sizes, errors):
    return np.diff(np.log(errors)) / np.diff(np.log(sizes))


def test_circle_converges_spectrally_to_the_pseudo_spectral_solution():
    """Errors of mu_hat_k (k <= 6) against a 256-mode spectral run fall faster than any power of N."""
    init, t_final, common = "vonmises:1@0+vonmises:2@2", 1.0, dict(beta=4.0, rtol=1e-12, t_final=1.0, save_every=1.0)
    ref = solve("circle", scheme="spectral", resolution=256, init=init, **common)
    assert ref.attrs["stop_reason"] == "completed"
    exact = np.fft.rfft(ref["density"].values[-1])[:7] / 256
    sizes, errors = [16, 24, 32, 48, 64], []
    k = np.arange(7)
    for n in sizes:
        ds = solve("circle", scheme="lagrangian", resolution=n, init=init, **common)
        assert ds.attrs["stop_reason"] == "completed" and ds["time"].values[-1] == t_final
        theta, w = ds["node_theta"].values[-1], ds["weights"].values
        coeffs = np.exp(-1j * k[:, None] * theta[None, :]) @ w / (2 * math.pi)       # MATH.md §2.1
        errors.append(float(np.max(np.abs(coeffs - exact))))
        assert np.allclose(ds["mode_amplitude"].values[-1, :7], np.abs(coeffs), atol=1e-12)
    slopes = log_slopes(sizes, errors)
    # measured: 4.7e-4, 1.9e-5, 8.2e-7, 1.6e-9, 3.7e-12; slopes -7.9, -11, -15, -21
    assert np.all(np.diff(slopes) < -1.0), (errors, slopes)
    assert errors[0] > 1e-5 and errors[-1] < 1e-10, errors


def test_sphere_converges_spectrally_to_the_pseudo_spectral_solution():
    """mu_lm (l <= 4) of the Gauss-Legendre nodes of lmax L against SphereSpectral at lmax 40."""
    init, common = "vmf:2@30,40+vmf:1@-20,200", dict(beta=4.0, rtol=1e-12, t_final=1.0, save_every=1.0)
    ref = solve("sphere", scheme="spectral", resolution=40, init=init, **common)
    assert ref.attrs["stop_reason"] == "completed"
    basis = SphereBasis(40)
    exact = basis.resample(basis.analyse(ref["density"].values[-1]), 4)
    sizes, errors = [6, 8, 12, 16], []
    for lmax in sizes:
        ds = solve("sphere", scheme="lagrangian", resolution=lmax, init=init, **common)
        assert ds.attrs["stop_reason"] == "completed"
        x, w = ds["positions"].values[-1], ds["weights"].values
        assert np.max(np.abs(np.linalg.norm(x, axis=-1) - 1)) < 1e-12
        coeffs = ducc0.sht.adjoint_synthesis_general(map=w[None], spin=0, lmax=4, loc=SphereLagrangian.locations(x),
                                                     epsilon=3e-13)[0]
        errors.append(float(np.max(np.abs(coeffs - exact))))
        assert abs(ds["mass"].values[-1] - 1) < 1e-13
    slopes = log_slopes(sizes, errors)
    # measured: 2.8e-7, 1.3e-8, 2.5e-11, 4.8e-14
    assert np.all(np.diff(slopes) < -1.0), (errors, slopes)
    assert errors[0] > 1e-8 and errors[-1] < 1e-12, errors


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_circle_velocity_equals_the_direct_sum(attention, rng):
    beta = 9.0
    scheme = CircleLagrangian(Model(attention, beta, 0.0, 2), 512)
    theta = scheme.state_from_density(circle_density("perturbed:0.035", 512, 1))   # RMS 0.035 sqrt(32) = 0.2
    theta = np.sort(theta + 0.3 * np.sin(theta) + 0.01 * rng.standard_normal(theta.size))
    speed = scheme.rhs(theta, 0.0)
    x = np.stack((np.cos(theta), np.sin(theta)), -1)
    direct = DirectInteraction(beta, attention, weights=scheme.weights).velocity(x[None])[0]
    direct_speed = -np.sin(theta) * direct[:, 0] + np.cos(theta) * direct[:, 1]
    assert np.max(np.abs(speed - direct_speed)) < 1e-12 * np.max(np.abs(direct_speed))
    # the field's derivative (the step bound): a massless probe either side of the fastest node
    h, i = 1e-5, int(np.argmax(np.abs(speed)))
    field = DirectInteraction(beta, attention, weights=np.append(scheme.weights, [0.0, 0.0]))
    probes = theta[i] + np.array([h, -h])
    ends = field.velocity(np.concatenate((x, np.stack((np.cos(probes), np.sin(probes)), -1)))[None])[0, -2:]
    tangential = -np.sin(probes) * ends[:, 0] + np.cos(probes) * ends[:, 1]
    slope = abs(tangential[0] - tangential[1]) / (2 * h)
    assert slope > 0 and scheme.lipschitz >= slope * (1 - 1e-6)


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_sphere_velocity_equals_the_direct_sum(attention, rng):
    beta = 4.0
    scheme = SphereLagrangian(Model(attention, beta, 0.0, 3), 12)
    x = scheme.state_from_density(sphere_density("vmf:3@20,10+perturbed:0.02", scheme.basis, 2))
    x = x + 0.05 * rng.standard_normal(x.shape)
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    velocity = scheme.rhs(x, 0.0)
    direct = DirectInteraction(beta, attention, weights=scheme.weights).velocity(x[None])[0]
    direct -= np.sum(direct * x, axis=-1, keepdims=True) * x
    assert np.max(np.abs(velocity - direct)) < 1e-12 * np.max(np.abs(direct))
    energy = scheme.energy_from(scheme.coefficients(x, scheme.band))
    direct_energy = DirectInteraction(beta, attention, weights=scheme.weights).scaled_energy(x[None])[0]
    assert abs(energy - direct_energy) < 1e-12 * direct_energy


def test_beta9_runs_ten_formation_times_with_four_clusters():
    """SA, beta = 9, eps = 1e-4, N = 1024 nodes, to 10x the predicted formation time (MATH.md §2.3)."""
    model = Model("sa", 9.0, 0.0, 2)
    t_form = formation_time(model, 1e-4)                     # 12.99: the mean over the law of perturbed:1e-4
    ds = solve("circle", scheme="lagrangian", beta=9.0, resolution=1024, init="perturbed:1e-4", seed=0,
               t_final=10 * t_form, save_every=t_form / 10)
    assert ds.attrs["stop_reason"] == "completed" and ds["time"].values[-1] == pytest.approx(10 * t_form)
    mass, energy = ds["mass"].values, ds["energy"].values
    assert np.max(np.abs(mass - 1)) < 1e-13
    assert np.all(np.diff(energy) >= -1e-14 * energy[0]) and energy[-1] > 1.5 * energy[0]
    # nodes keep their cyclic order (ties allowed: merged nodes): gaps >= -round-off, sum to 2 pi
    theta = ds["node_theta"].values
    gaps = np.mod(np.diff(theta, axis=1, append=theta[:, :1]) + 1e-12, 2 * math.pi) - 1e-12
    assert gaps.min() > -1e-12 and np.max(np.abs(gaps.sum(axis=1) - 2 * math.pi)) < 1e-9
    # the resolved density is the projection until clusters outgrow the grid, then flagged for good
    resolved, times = ds["density_resolved"].values, ds["time"].values
    lost = int(np.argmin(resolved))
    assert resolved[0] and not resolved[-1] and not resolved[lost:].any()
    assert np.all(ds["density"].values >= 0)
    counts = np.array([detect_clusters(frame, float(ds.attrs["beta"])).count for frame in ds["density"].values])
    formed = int(np.argmax(counts >= 2))
    # resolved until clusters have formed (seed 0 draws mode 4 at 1.6 x its typical amplitude: both at 11.69)
    assert times[formed] <= times[lost] < 1.5 * t_form and times[formed] < 1.5 * t_form
    after = times >= 1.5 * t_form
    assert dominant_mode(model) == 4 and np.all(counts[after] == 4), counts
    # all mass in four round-off-merged groups at the end (contraction ~exp(-t) inside clusters)
    assert np.unique(np.round(theta[-1], 9)).size == 4


def test_frames_report_the_measure_of_the_nodes():
    ds = solve("circle", scheme="lagrangian", beta=2.0, attention="usa", resolution=64, init="vonmises:3@1",
               t_final=3.0, save_every=1.0)
    assert ds.attrs["scheme"] == "lagrangian" and ds.attrs["stop_reason"] == "completed"
    assert ds["density"].dims == ("time", "theta") and ds["node_theta"].dims == ("time", "particle")
    assert ds["positions"].dims == ("time", "particle", "component") and ds["weights"].dims == ("particle",)
    assert abs(ds["weights"].sum() - 1) < 1e-14 and np.allclose(ds["mass"], 1, atol=1e-14)
    assert np.all(np.diff(ds["energy"].values) > 0)
    sphere = solve("sphere", scheme="lagrangian", beta=2.0, resolution=8, init="vmf:2@10,20", t_final=1.0,
                   save_every=0.5)
    spectral = solve("sphere", scheme="spectral", resolution=8, init="vmf:2@10,20", beta=2.0, t_final=1.0,
                     save_every=0.5)
    assert sphere["density"].dims == spectral["density"].dims
    assert np.array_equal(sphere["lat"], spectral["lat"]) and np.array_equal(sphere["lon"], spectral["lon"])
    assert sphere["positions"].shape[1:] == (SphereBasis(8).nlat * SphereBasis(8).nlon, 3)


def test_fallback_densities_are_nonnegative_and_mass_exact(rng):
    circle = CircleLagrangian(Model("sa", 4.0, 0.0, 2), 128)
    theta = circle.state_from_density(circle_density("perturbed:0.05", 128, 3))
    clustered = np.sort(np.round(theta / 0.7) * 0.7 + 1e-3 * rng.standard_normal(theta.size)) + 10.0
    for state in (theta, clustered):
        density = circle.cell_average(state)
        assert density.min() >= 0 and abs(circle.basis.integrate(density) - 1) < 1e-13
    assert abs(circle.basis.integrate(circle.cell_average(theta)) - 1) < 1e-13
    sphere = SphereLagrangian(Model("sa", 4.0, 0.0, 3), 10)
    x = sphere.state_from_density(sphere_density("perturbed:0.02", sphere.basis, 3))
    # at t = 0 each node is alone in its own cell: the cell averages are the initial grid values
    assert np.allclose(sphere.cell_average(x), sphere_density("perturbed:0.02", sphere.basis, 3), rtol=1e-12)
    moved = x + 0.2 * rng.standard_normal(x.shape)
    moved /= np.linalg.norm(moved, axis=-1, keepdims=True)
    density = sphere.cell_average(moved)
    assert density.min() >= 0 and abs(sphere.basis.integrate(density) - 1) < 1e-13


def test_crossed_nodes_and_lost_normalisation_are_reported():
    scheme = CircleLagrangian(Model("sa", 4.0, 0.0, 2), 16)
    theta = scheme.state_from_density(circle_density("uniform", 16))
    assert scheme.validity(theta, 0.0) is None
    crossed = theta.copy()
    crossed[[3, 4]] = crossed[[4, 3]]
    assert "crossed" in scheme.validity(crossed, 1.0)
    tie = theta.copy()
    tie[4] = tie[3] - 1e-15
    assert scheme.validity(tie, 1.0) is None
    assert "crossed" in scheme.validity(np.append(theta[1:], theta[0] + 2 * math.pi + 0.5), 1.0)
    scheme._min_denominator = -1.0
    assert "normalisation" in scheme.validity(theta, 1.0)
    sphere = SphereLagrangian(Model("sa", 4.0, 0.0, 3), 6)
    x = sphere.state_from_density(sphere_density("uniform", sphere.basis))
    assert sphere.validity(x, 0.0) is None and "sphere" in sphere.validity(1.01 * x, 1.0)


@pytest.mark.parametrize("geometry, kwargs, words", [
    ("circle", dict(nu=0.1), ["nu", "no diffusion", "spectral"]),
    ("sphere", dict(nu=0.1), ["nu", "no diffusion", "spectral"]),
    ("circle", dict(resolution=7), ["resolution", "even"]),
    ("circle", dict(resolution=4), ["resolution", ">= 8"]),
    ("sphere", dict(resolution=3), ["resolution", ">= 6"]),
    ("circle", dict(beta=0.0), ["beta", "> 0"]),
    ("circle", dict(dim=3), ["dim"]),
    ("circle", dict(backend="ducc0"), ["backend= parameter"]),
    ("sphere", dict(backend="nope"), ["backend= parameter"]),
])
def test_bad_input_is_refused(geometry, kwargs, words):
    with pytest.raises(InputError) as info:
        solve(geometry, scheme="lagrangian", **dict(dict(t_final=0.1, beta=4.0,
                                                         resolution=16 if geometry == "circle" else 8),
                                                     **kwargs))
    message = str(info.value)
    assert "\n" not in message and all(word in message for word in words), message
    with pytest.raises(InputError, match="resolution_tol"):
        CircleLagrangian(Model("sa", 1.0, 0.0, 2), 16, resolution_tol=0.0)
    with pytest.raises(InputError, match="positivity_tol"):
        SphereLagrangian(Model("sa", 1.0, 0.0, 3), 8, positivity_tol=-1.0)
