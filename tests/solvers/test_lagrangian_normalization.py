"""Lagrangian nodes under the normalisation schemes of MATH.md §6 (solvers/schemes/lagrangian.py)."""

import math

import numpy as np
import pytest

import meanfield
from meanfield import InputError, Model
from meanfield.cli import main
from meanfield.initial.circle import circle_density
from meanfield.normalization import Normalization
from meanfield.solvers.schemes.interaction import DirectInteraction
from meanfield.initial.sphere import sphere_density
from meanfield.solvers.schemes.lagrangian import CircleLagrangian, SphereLagrangian
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.runloop import run
from meanfield.solvers.runs.solve import solve
from meanfield.solvers.steppers.steppers import make_stepper
from meanfield.analysis import wasserstein1_circle
from meanfield.fits import fit_line
from meanfield.validation.studies.mean_field import INIT


def frames_of(scheme, init: str, t_final: float, save_every: float, rtol: float = 1e-10) -> dict:
    """``{time: frame}`` of a run of ``scheme`` from the text spec ``init``."""
    state = scheme.state_from_density(circle_density(init, scheme.n, 0))
    record = run(scheme, make_stepper("dopri5", scheme, rtol=rtol), state, t_final, save_every)
    assert record.stop_reason == "completed"
    return {round(t, 9): frame for t, frame in zip(record.times, record.frames)}


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("name, t", [("pre", 2.0), ("mix", 0.2), ("mix", 2.0), ("peri", 2.0), ("ngpt", 2.0),
                                     ("lnscale", 2.0)])
def test_normalised_motion_equals_the_direct_sum(name, t, attention, rng):
    """``P A / s`` and ``dr/dt`` of every scheme against the O(n^2) attention sum (MATH.md §6)."""
    beta, scheme_choice = 3.0, Normalization(name, r0=1.5, alpha=0.7, mix_switch=1.0)
    scheme = CircleLagrangian(Model(attention, beta, 0.0, 2), 64, normalization=scheme_choice)
    start = scheme.state_from_density(circle_density("perturbed:0.035", 64, 1))
    theta = scheme.angles(start)
    assert np.array_equal(theta, scheme.labels)
    theta = np.sort(theta + 0.3 * np.sin(theta) + 0.01 * rng.standard_normal(theta.size))
    radius = 1.0 + rng.random(theta.size)
    state = np.concatenate((theta, radius)) if scheme_choice.carries_radius else theta
    assert state.shape == start.shape
    if scheme_choice.carries_radius:
        assert np.all(scheme.radii(start) == 1.5)
    x = np.stack((np.cos(theta), np.sin(theta)), -1)
    attended = DirectInteraction(beta, attention, weights=scheme.weights).velocity(x[None])[0]
    tangent = -np.sin(theta) * attended[:, 0] + np.cos(theta) * attended[:, 1]
    radial = np.cos(theta) * attended[:, 0] + np.sin(theta) * attended[:, 1]
    norm = np.hypot(tangent, radial)
    acting = {"mix": "post" if t <= 1.0 else "pre"}.get(name, name)
    divisor = {"post": 1.0, "pre": radius, "peri": radius * norm, "ngpt": norm / 0.7, "lnscale": math.sqrt(t + 1)}
    growth = {"post": 0 * radius, "pre": radial, "peri": radial / norm}
    expected = tangent / divisor[acting]
    if scheme_choice.carries_radius:
        expected = np.concatenate((expected, growth[acting]))
    assert np.max(np.abs(scheme.rhs(state, t) - expected)) < 1e-13 * np.max(np.abs(expected))


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_sphere_normalised_motion_equals_the_direct_sum(attention, rng):
    """On S^2: ``<x, A> = d/dbeta (K * mu) / (K * mu)`` by one more synthesis; every scheme (MATH.md §6)."""
    beta = 3.0
    for name, t in (("pre", 2.0), ("mix", 0.2), ("mix", 2.0), ("peri", 2.0), ("ngpt", 2.0), ("lnscale", 2.0)):
        scheme_choice = Normalization(name, r0=1.5, alpha=0.7, mix_switch=1.0)
        scheme = SphereLagrangian(Model(attention, beta, 0.0, 3), 8, normalization=scheme_choice)
        start = scheme.state_from_density(sphere_density("perturbed:0.02", scheme.basis, 1))
        x = scheme.points(start) + 0.1 * rng.standard_normal((scheme.n, 3))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        radius = 1.0 + rng.random(scheme.n)
        state = np.concatenate((x, radius[:, None]), 1) if scheme_choice.carries_radius else x
        assert state.shape == start.shape
        attended = DirectInteraction(beta, attention, weights=scheme.weights).velocity(x[None])[0]
        radial = np.sum(attended * x, axis=1)
        norm = np.linalg.norm(attended, axis=1)
        acting = {"mix": "post" if t <= 1.0 else "pre"}.get(name, name)
        divisor = {"post": 1.0, "pre": radius, "peri": radius * norm, "ngpt": norm / 0.7,
                   "lnscale": math.sqrt(t + 1)}[acting]
        expected = (attended - radial[:, None] * x) / np.reshape(divisor, (-1, 1))
        if scheme_choice.carries_radius:
            growth = {"post": 0 * radius, "pre": radial, "peri": radial / norm}[acting]
            expected = np.concatenate((expected, growth[:, None]), 1)
        # measured: 4e-16 .. 2.3e-14 (NUFFT-based transforms at 3e-13)
        assert np.max(np.abs(scheme.rhs(state, t) - expected)) < 1e-12 * np.max(np.abs(expected)), name


def test_pre_ln_radius_grows_linearly_at_the_uniform_state():
    """Uniform nodes stay put and ``r = r0 + a t`` with ``a = I_1(beta) / I_0(beta)`` (MATH.md §6)."""
    from scipy.special import ive
    beta, r0 = 4.0, 0.5
    scheme = CircleLagrangian(Model("sa", beta, 0.0, 2), 32, normalization=Normalization("pre", r0=r0))
    frames = frames_of(scheme, "uniform", 3.0, 1.0)
    a = ive(1, beta) / ive(0, beta)
    for t, frame in frames.items():
        assert np.max(np.abs(frame["radius"] - (r0 + a * t))) < 1e-12
        assert np.max(np.abs(np.angle(np.exp(1j * (frame["node_theta"] - scheme.labels))))) < 1e-12
    sphere = SphereLagrangian(Model("sa", beta, 0.0, 3), 6, normalization=Normalization("pre", r0=r0))
    state = sphere.state_from_density(sphere_density("uniform", sphere.basis))
    record = run(sphere, make_stepper("dopri5", sphere, rtol=1e-10), state, 2.0, 1.0)
    a = 1 / math.tanh(beta) - 1 / beta                          # I_{3/2} / I_{1/2}
    assert record.stop_reason == "completed" and record.frames[-1]["radius"].shape == (sphere.n,)
    for t, frame in zip(record.times, record.frames):
        assert np.max(np.abs(frame["radius"] - (r0 + a * t))) < 1e-10
        assert np.max(np.abs(frame["positions"] - sphere.labels)) < 1e-10


def test_pre_ln_nodes_and_particles_agree_in_w1_as_post_ln_does():
    """W1 between Pre-LN particles and the Pre-LN node density: the level and slope the mean-field study
    shows for Post-LN (validation/studies/mean_field.py: quadrature nodes at ``pi / (2 n)`` scale, slope -1)."""
    beta, r0, times, sizes = 4.0, 0.5, (1.0, 2.0, 4.0), (64, 128, 256)
    w1 = {}
    for name in ("post", "pre"):
        nodes = CircleLagrangian(Model("sa", beta, 0.0, 2), 512, normalization=Normalization(name, r0=r0))
        frames = frames_of(nodes, INIT, max(times), 1.0)
        for n in sizes:
            particles = simulate(dim=2, n=n, beta=beta, init=INIT, seed=0, resolution=256, sampling="quadrature",
                                 t_final=max(times), save_every=1.0, rtol=1e-10,
                                 **Normalization(name, r0=r0).options())
            assert particles.attrs["stop_reason"] == "completed"
            if name == "pre":   # mean radius: a quadrature of the same smooth radius field (measured 4e-12)
                mean_radius = particles["radius"].sel(time=4.0).values @ particles["weights"].values
                assert abs(mean_radius - frames[4.0]["radius"] @ nodes.node_weights) < 1e-9
            w1[name, n] = [wasserstein1_circle(particles["theta"].sel(time=t).values, particles["weights"].values,
                                               frames[t]["density"]) for t in times]
    for i, t in enumerate(times):
        post, pre = np.array([w1["post", n][i] for n in sizes]), np.array([w1["pre", n][i] for n in sizes])
        # measured: n W1 = 1.50 (post) and 1.51 (pre) at every n, t; slopes -1.000
        assert np.all(np.abs(pre / post - 1) < 0.1), (t, pre, post)
        assert np.all((1.3 < pre * np.array(sizes)) & (pre * np.array(sizes) < math.pi / 2)), (t, pre)
        assert abs(fit_line(np.log(sizes), np.log(pre))[0] + 1) < 0.02


def test_ln_scaling_is_post_ln_on_the_clock_two_sqrt_t_plus_one():
    """``s = sqrt(t + 1)`` only reparametrises time: LN-scaling at ``t`` is Post-LN at ``2 (sqrt(t + 1) - 1)``."""
    model = Model("sa", 5.0, 0.0, 2)
    scaled = frames_of(CircleLagrangian(model, 128, normalization=Normalization("lnscale")), "perturbed:0.05", 8.0, 1.0)
    post = frames_of(CircleLagrangian(model, 128), "perturbed:0.05", 4.0, 1.0)
    for t_scaled, t_post in ((3.0, 2.0), (8.0, 4.0)):
        gap = np.angle(np.exp(1j * (scaled[t_scaled]["node_theta"] - post[t_post]["node_theta"])))
        assert np.max(np.abs(gap)) < 1e-9                     # measured 3e-13, 1.3e-12
    assert np.max(np.abs(post[4.0]["node_theta"] - scaled[4.0]["node_theta"])) > 1e-3   # not trivially equal


def test_radius_carrying_schemes_refuse_collapse_and_bad_input():
    model = Model("sa", 2.0, 0.0, 2)
    with pytest.raises(InputError) as info:
        CircleLagrangian(model, 16, collapse_tol=1e-9, normalization=Normalization("pre"))
    assert "collapse_tol" in str(info.value) and "pre" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(InputError, match="Normalization"):
        CircleLagrangian(model, 16, normalization="pre")
    for name in ("pre", "mix", "peri"):
        scheme = CircleLagrangian(model, 16, normalization=Normalization(name))
        assert not scheme.collapser.enabled and "radius" in scheme.dims()
        state = scheme.state_from_density(circle_density("uniform", 16))
        assert scheme.validity(state, 0.0) is None
        crossed = state.copy()
        crossed[[3, 4]] = crossed[[4, 3]]
        assert "different radii" in scheme.validity(crossed, 1.0)
        state[-1] = 0.0
        assert "radius" in scheme.validity(state, 1.0)
    for name in ("ngpt", "lnscale"):
        scheme = CircleLagrangian(model, 16, normalization=Normalization(name))
        assert scheme.collapser.enabled and "radius" not in scheme.dims()


@pytest.mark.parametrize("name", ["ngpt", "lnscale"])
def test_ngpt_and_ln_scaling_nodes_agree_with_the_spectral_pde(name):
    """Before clusters form the node measure's modes equal the spectral density's (MATH.md §2.1, §6)."""
    common = dict(beta=4.0, init="vonmises:1@0+vonmises:2@2", t_final=2.0, save_every=1.0, rtol=1e-12,
                  normalization=name, alpha=0.5 if name == "ngpt" else None)
    spectral = solve("circle", scheme="spectral", resolution=256, **common)
    assert spectral.attrs["stop_reason"] == "completed"
    exact = np.abs(np.fft.rfft(spectral["density"].values[-1])[:7] / 256)
    errors = []
    for n in (32, 64, 128):
        nodes = solve("circle", scheme="lagrangian", resolution=n, **common)
        assert nodes.attrs["stop_reason"] == "completed"
        assert nodes.attrs["normalization"] == name and "radius" not in nodes
        errors.append(float(np.max(np.abs(nodes["mode_amplitude"].values[-1, :7] - exact))))
    # measured (t = 2, |mu_hat_k| - |rho_hat_k|, k <= 6): ngpt 1.5e-5, 1.1e-8, 8.7e-14; lnscale 2.8e-5, 1.2e-8, 2.2e-14
    assert errors[0] > 1e-6 and errors[1] < 1e-3 * errors[0] and errors[2] < 1e-12, errors
    assert np.max(np.abs(exact[1:] - np.abs(np.fft.rfft(spectral["density"].values[0])[1:7] / 256))) > 1e-3


def test_radius_runs_record_the_radius_and_restart_exactly_across_the_mix_switch(tmp_path):
    """``radius(time, particle)``, the scheme in the attributes and the command; 0 -> 1 -> 3 and 0 -> 2 -> 3 repeat
    0 -> 3 bit for bit across Mix-LN's switch at tau = 1.5 (the radii are part of the restart state)."""
    common = dict(beta=3.0, resolution=32, init="perturbed:0.1", seed=1, save_every=0.5, normalization="mix",
                  r0=0.7, mix_switch=1.5)
    whole = solve("circle", scheme="lagrangian", t_final=3.0, **common)
    assert whole.attrs["stop_reason"] == "completed" and whole["radius"].dims == ("time", "particle")
    assert (whole.attrs["normalization"], whole.attrs["r0"], whole.attrs["mix_switch"]) == ("mix", 0.7, 1.5)
    assert "--normalization mix" in whole.attrs["command"] and "--r0 0.7 --mix-switch 1.5" in whole.attrs["command"]
    radius = whole["radius"].values
    before = whole["time"].values <= 1.5
    assert np.all(radius[before] == 0.7) and np.all(radius[~before] > 0.7)     # Post-LN, then Pre-LN
    for first_end in (1.0, 2.0):
        first = solve("circle", scheme="lagrangian", t_final=first_end, **common)
        path = tmp_path / f"first_{first_end:g}.nc"
        meanfield.save_run(first, str(path))
        second = solve("circle", scheme="lagrangian", t_final=3.0, **dict(common, init=str(path)))
        assert second.attrs["restart"] == "exact"
        for variable in ("node_theta", "radius", "density"):
            assert np.array_equal(second[variable].values[-1], whole[variable].values[-1]), (first_end, variable)
    post = solve("circle", scheme="lagrangian", t_final=1.0, beta=3.0, resolution=32, save_every=0.5)
    path = tmp_path / "post.nc"
    meanfield.save_run(post, str(path))
    with pytest.raises(meanfield.InputError, match="normalization pre, r0 = 1 differs from post"):
        solve("circle", scheme="lagrangian", t_final=2.0, init=str(path), normalization="pre")   # keeps its model
    remapped = solve("circle", scheme="lagrangian", t_final=2.0, init=str(path), normalization="pre", override=True)
    assert remapped.attrs["restart"] == "remap" and np.all(remapped["radius"].values[0] == 1.0)
    assert remapped.attrs["override"] == "normalization: post -> pre, r0 = 1"


def test_sphere_pre_ln_run_and_command_line(tmp_path, capsys):
    out = tmp_path / "sphere.nc"
    assert main(["solve", "sphere", "--scheme", "lagrangian", "--beta", "2", "--resolution", "6", "--t-final", "0.5",
                 "--save-every", "0.25", "--normalization", "peri", "--r0", "2", "--out", str(out),
                 "--no-progress"]) == 0
    run_file = meanfield.load_run(str(out))
    assert run_file["radius"].dims == ("time", "particle") and run_file["positions"].shape[-1] == 3
    assert np.all(run_file["radius"].values[0] == 2.0) and np.all(run_file["radius"].values[-1] > 2.0)
    assert run_file.attrs["normalization"] == "peri" and abs(float(run_file["mass"].values[-1]) - 1) < 1e-13


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(normalization="pre", collapse_tol=1e-9), "collapse_tol must be 0 with normalization pre"),
    (dict(normalization="post", r0=2.0), "r0 applies to normalization pre, mix or peri only"),
    (dict(normalization="peri", mix_switch=2.0), "mix_switch applies to normalization mix only"),
    (dict(normalization="pre", r0=0.0), "r0 must be a finite number in [1e-300, 1e+300]"),
    (dict(normalization="mix", mix_switch=-1.0), "mix_switch must be a finite number >= 0"),
])
def test_solve_refuses_bad_normalization_settings_in_one_line(kwargs, phrase):
    with pytest.raises(InputError) as info:
        solve("circle", scheme="lagrangian", resolution=16, beta=1.0, t_final=0.1, **kwargs)
    assert phrase in str(info.value) and "\n" not in str(info.value)
