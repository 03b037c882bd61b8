"""The density schemes under nGPT and LN-scaling (MATH.md §6, meanfield.solvers.schemes.normalized_velocity).

Closed forms are written out here (not taken from the package).  About the uniform state ``P A = 0``,
so degree ``l`` grows at ``lambda_l / s_0(t)`` with the Post-LN rate ``lambda_l`` (MATH.md §2.3):

* nGPT: ``alpha lambda_l / a`` with ``a = <theta, A>`` at the uniform state; SA ``a = I_{d/2}(beta) /
  I_{d/2-1}(beta)``, USA ``a = kappa_0' / |S^{d-1}|`` (``A = int y exp(beta <x, y>) rho``): both give
  ``alpha l (l + d - 2) I_{l+d/2-1}(beta) / (beta I_{d/2}(beta))``;
* LN-scaling: ``log amplitude = 2 lambda_l (sqrt(t + 1) - 1) - nu l (l + d - 2) t`` (noise not divided).

Rates are fitted from runs (least squares over 21 frames, as validation/studies/growth_rates.py does).
"""

import math
import shlex

import numpy as np
import pytest
from scipy.special import ive, roots_legendre

import meanfield
from meanfield.cli import main
from meanfield.diagnostics import fit_growth_rates
from meanfield.errors import InputError
from meanfield.kernels import scaled_funk_hecke, scaled_funk_hecke_beta_derivative
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.solvers.schemes.finite_volume import CircleFiniteVolume
from meanfield.solvers.schemes.circle import CircleSpectral
from meanfield.solvers.schemes.zonal import ZonalGalerkin
from tests.solvers.test_restart import _frames_equal, _split

BETA, ALPHA = 4.0, 1.7


def area(d):
    return 2 * math.pi ** (d / 2) / math.gamma(d / 2)


def post_rate(attention, beta, d, l):
    """``lambda_l`` of MATH.md §2.3 without noise."""
    order = (d - 2) / 2
    if attention == "sa":
        return l * (l + d - 2) * ive(l + order, beta) / (beta * ive(order, beta))
    kappa = (2 * math.pi) ** (d / 2) * beta ** -order * ive(l + order, beta) * math.exp(beta)
    return l * (l + d - 2) * kappa / (beta * area(d))


def radial_at_uniform(attention, beta, d):
    """``a = <theta, A>`` at the uniform density (SA: ``I_{d/2} / I_{d/2-1}``; USA: ``kappa_0' / |S^{d-1}|``)."""
    order = (d - 2) / 2
    if attention == "sa":
        return ive(d / 2, beta) / ive(order, beta)
    return (2 * math.pi) ** (d / 2) * beta ** -order * ive(d / 2, beta) * math.exp(beta) / area(d)


def ngpt_rate(attention, beta, d, l, alpha):
    return alpha * post_rate(attention, beta, d, l) / radial_at_uniform(attention, beta, d)


#: (geometry, settings, dimension, fitted degrees); fv rates carry the scheme's exact factor sinc(k/N)
CASES = [("circle", {"scheme": "spectral", "resolution": 64}, 2, np.arange(1, 7)),
         ("circle", {"scheme": "fv", "resolution": 256, "cfl": 0.1}, 2, np.arange(1, 4)),
         ("sphere", {"scheme": "spectral", "resolution": 12}, 3, np.arange(1, 5)),
         ("zonal", {"scheme": "galerkin", "resolution": 16, "dim": 4}, 4, np.arange(1, 5))]
IDS = [f"{g}-{s['scheme']}" for g, s, _, _ in CASES]


def linear_run(geometry, settings, t_final, **options):
    run = meanfield.solve(geometry, beta=BETA, init="perturbed:1e-8", seed=1, t_final=t_final,
                          save_every=t_final / 20, rtol=1e-10, **settings, **options)
    assert run.attrs["stop_reason"] == "completed"
    return run


def discrete_factor(settings, modes):
    """The fv scheme's linear rates (no noise) are the continuum ones times ``sinc(k/N)``: the face difference of the
    velocity of the cell masses (MATH.md §2.5, tests/solvers/test_finite_volume.py)."""
    return np.sinc(modes / settings["resolution"]) if settings["scheme"] == "fv" else 1.0


def check_rates(fitted, theory, settings, modes):
    """Within 1e-3 of the closed form; fv also within 1e-4 of its exact discrete rate."""
    assert np.all(np.abs(fitted / theory - 1) < 1e-3)
    if settings["scheme"] == "fv":
        assert np.all(np.abs(fitted / (theory * discrete_factor(settings, modes)) - 1) < 1e-4)


def test_beta_derivative_of_the_funk_hecke_coefficients():
    degrees = np.arange(8)
    for d in (2, 3, 6):
        for beta in (0.5, 4.0, 30.0):
            h = 1e-5
            kappa = lambda b: math.exp(b - beta) * scaled_funk_hecke(degrees, b, d)  # exp(-beta) kappa_l(b)
            centred = (kappa(beta + h) - kappa(beta - h)) / (2 * h)
            assert np.allclose(scaled_funk_hecke_beta_derivative(degrees, beta, d), centred, rtol=1e-8, atol=0)
        limit = scaled_funk_hecke_beta_derivative(degrees, 0.0, d)
        assert limit[1] == pytest.approx(area(d) / d) and np.all(limit[[0, *range(2, 8)]] == 0)
        assert scaled_funk_hecke_beta_derivative(degrees, 1e-9, d)[1] == pytest.approx(area(d) / d, rel=1e-8)


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("geometry, settings, d, modes", CASES, ids=IDS)
def test_ngpt_growth_rates_fitted_from_runs(geometry, settings, d, modes, attention):
    theory = ngpt_rate(attention, BETA, d, modes, ALPHA)
    t_final = 6.0 / theory.max()
    run = linear_run(geometry, settings, t_final, attention=attention, normalization="ngpt", alpha=ALPHA)
    check_rates(fit_growth_rates(run, modes), theory, settings, modes)


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("geometry, settings, d, modes", CASES, ids=IDS)
def test_lnscale_amplitudes_grow_like_exp_of_sqrt_time(geometry, settings, d, modes, attention):
    theory = post_rate(attention, BETA, d, modes)
    t_final = (1.0 + 3.0 / theory.max()) ** 2 - 1.0           # the fastest mode grows by e^6
    run = linear_run(geometry, settings, t_final, attention=attention, normalization="lnscale")
    amplitude = run["mode_amplitude"].sel(mode=modes).values
    fitted = np.polyfit(np.sqrt(run.time.values + 1.0), np.log(amplitude), 1)[0] / 2
    check_rates(fitted, theory, settings, modes)
    assert abs(fit_growth_rates(run, modes[-1:])[0] / theory[-1] - 1) > 0.05   # not exponential in t


@pytest.mark.parametrize("stepper", ["dopri5", "etdrk4", "rk4"])
def test_lnscale_divides_the_transport_and_not_the_noise(stepper):
    """``log amplitude = 2 lambda_k (sqrt(t + 1) - 1) - nu k^2 t``: a fit on both terms separates them
    (dividing the noise too would give ``-nu k^2`` on the first term and nothing on the second)."""
    modes, nu = np.arange(1, 5), 0.02
    theory = post_rate("sa", BETA, 2, modes)
    t_final = 20.0
    run = meanfield.solve("circle", beta=BETA, nu=nu, resolution=32, init="perturbed:1e-8", seed=1,
                          t_final=t_final, save_every=t_final / 20, rtol=1e-10, cfl=0.1, stepper=stepper,
                          normalization="lnscale")
    assert run.attrs["stop_reason"] == "completed"
    t = run.time.values
    design = np.stack([np.ones_like(t), 2 * (np.sqrt(t + 1) - 1), -t], axis=1)
    coeffs = np.linalg.lstsq(design, np.log(run["mode_amplitude"].sel(mode=modes).values), rcond=None)[0]
    assert np.all(np.abs(coeffs[1] / theory - 1) < 1e-3)
    assert np.all(np.abs(coeffs[2] / (nu * modes ** 2) - 1) < 1e-3)


def test_ngpt_moves_sa_and_usa_densities_by_the_same_field():
    runs = [meanfield.solve("circle", attention=attention, beta=BETA, resolution=128, init="perturbed:1e-4", seed=2,
                            t_final=4.0, normalization="ngpt", alpha=ALPHA) for attention in ("sa", "usa")]
    np.testing.assert_array_equal(runs[0]["density"].values, runs[1]["density"].values)
    assert np.ptp(runs[0]["density"].values[-1]) > 10 * np.ptp(runs[0]["density"].values[0])   # nonlinear by then


# -- the nGPT field itself against a direct quadrature of A --------------------------------------------
def test_circle_fv_ngpt_face_speed_is_alpha_tangential_over_norm_of_a(rng):
    n, beta = 48, 3.0
    state = 0.5 + rng.random(n)
    state /= state.sum() * 2 * math.pi / n
    scheme = CircleFiniteVolume(Model("usa", beta, 0.0, 2), n, normalization=Normalization("ngpt", alpha=ALPHA))
    faces = 2 * math.pi * np.arange(n) / n - math.pi / n
    h = 2 * math.pi / n
    phi, weight = faces + h / 2, state * h                                    # the cell masses at the centres (§2.5)
    delta = phi[None, :] - faces[:, None]
    kernel = np.exp(beta * (np.cos(delta) - 1)) * weight
    tangential, radial = (kernel * np.sin(delta)).sum(1), (kernel * np.cos(delta)).sum(1)
    expected = ALPHA * tangential / np.hypot(tangential, radial)
    np.testing.assert_allclose(scheme.face_speed(state), expected, rtol=0, atol=1e-12)
    post = CircleFiniteVolume(Model("usa", beta, 0.0, 2), n)
    lnscale = CircleFiniteVolume(Model("usa", beta, 0.0, 2), n, normalization="lnscale")
    np.testing.assert_allclose(lnscale.face_speed(state, 3.0), post.face_speed(state) / 2, rtol=1e-15, atol=0)


def test_zonal_ngpt_speed_profile_matches_a_quadrature_over_the_sphere():
    """S^2, ``rho = g(<x, e>)`` a von Mises bump: ``X = V (e - t x)`` and ``A`` by tensor Gauss quadrature."""
    beta, kappa = 2.5, 3.0
    scheme = ZonalGalerkin(Model("sa", beta, 0.0, 3), 24, normalization=Normalization("ngpt", alpha=ALPHA))
    g = lambda s: np.exp(kappa * (s - 1)) * kappa / (2 * math.pi * (1 - math.exp(-2 * kappa)))
    state = scheme.state_from_density(g(scheme.basis.nodes))
    speed = scheme.speed_profile(state)
    s, ws = roots_legendre(80)                        # cos(polar angle) of y
    phi = 2 * math.pi * np.arange(96) / 96            # longitude of y
    y = np.stack([np.sqrt(1 - s[:, None] ** 2) * np.cos(phi), np.sqrt(1 - s[:, None] ** 2) * np.sin(phi),
                  np.broadcast_to(s[:, None], (s.size, phi.size))], -1).reshape(-1, 3)
    weight = (ws[:, None] * np.full(phi.size, 2 * math.pi / phi.size) * g(s)[:, None]).ravel()
    for j in (3, 12, 20):
        t = scheme.basis.nodes[j]
        point = np.array([math.sqrt(1 - t * t), 0.0, t])
        a = (weight * np.exp(beta * (y @ point - 1)))[:, None] * y
        a = a.sum(0)
        direction = np.array([0.0, 0.0, 1.0]) - t * point                # e - t x, length sin(th)
        expected = ALPHA * (a @ direction) / (np.linalg.norm(a) * (1 - t * t))
        assert speed[j] == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("normalization", ["ngpt", "lnscale"])
def test_sphere_and_zonal_solvers_agree(normalization):
    """Two discretisations of S^2, a zonal start: the radial attention enters both."""
    options = {"alpha": ALPHA} if normalization == "ngpt" else {}
    common = dict(attention="sa", beta=3.0, t_final=0.3, save_every=0.15, rtol=1e-12, normalization=normalization,
                  **options)
    sphere = meanfield.solve("sphere", resolution=24, init="vmf:2@90,0+vmf:0.5@90,0", **common)
    zonal = meanfield.solve("zonal", dim=3, resolution=24, init="vmf:2+vmf:0.5", **common)
    a, b = sphere["mode_amplitude"].values[-1], zonal["mode_amplitude"].values[-1]
    assert np.max(np.abs(a - b)) < 1e-8 * b[0]
    assert np.max(np.abs(a - sphere["mode_amplitude"].values[0])) > 1e-3 * b[0]


# -- conservation and the monotone energy ---------------------------------------------------------------
NONLINEAR = [("circle", {"scheme": "spectral", "resolution": 128, "init": "vonmises:1@0+vonmises:1@2.5", "t_final": 2.0}),
             ("circle", {"scheme": "fv", "resolution": 128, "init": "vonmises:1@0+vonmises:1@2.5", "t_final": 2.0}),
             ("sphere", {"scheme": "spectral", "resolution": 24, "init": "vmf:1.5@60,0+vmf:1.5@-20,120",
                         "t_final": 0.5}),
             ("zonal", {"scheme": "galerkin", "resolution": 48, "dim": 5, "init": "vmf:1+perturbed:1e-2", "t_final": 1.0}),
             ("zonal", {"scheme": "fv", "resolution": 64, "dim": 5, "init": "vmf:1+perturbed:1e-2", "t_final": 1.0})]


@pytest.mark.parametrize("normalization", ["ngpt", "lnscale"])
@pytest.mark.parametrize("geometry, settings", NONLINEAR, ids=[f"{g}-{s['scheme']}" for g, s in NONLINEAR])
def test_mass_is_conserved_and_the_energy_never_decreases(geometry, settings, normalization):
    """Without noise ``dE/dt = int rho <P A, X>`` (USA's ``grad(K * rho) / beta = P A``): nGPT's ``X`` is
    ``alpha P A / |A|`` and LN-scaling's ``P A / sqrt(t + 1)`` (SA: ``P A / (K * rho)``), so ``E`` never
    decreases under either, for SA and USA (nGPT's field is the same for both)."""
    run = meanfield.solve(geometry, attention="sa", beta=BETA, seed=4, save_every=settings["t_final"] / 10,
                          normalization=normalization, **settings)
    assert run.attrs["stop_reason"] == "completed"
    mass, energy = run["mass"].values, run["energy"].values
    assert np.max(np.abs(mass / mass[0] - 1)) < 1e-12
    assert np.all(np.diff(energy) > 0)
    assert energy[-1] > 1.04 * energy[0]


# -- restarts, records, refusals --------------------------------------------------------------------------
RESTARTS = [("circle", {"scheme": "spectral", "stepper": "etdrk4", "resolution": 64, "nu": 0.02,
                        "normalization": "lnscale"}),
            ("circle", {"scheme": "fv", "stepper": "ssprk3", "resolution": 64, "normalization": "ngpt", "alpha": 2.0}),
            ("sphere", {"scheme": "spectral", "stepper": "dopri5", "resolution": 11, "normalization": "ngpt"}),
            ("zonal", {"scheme": "galerkin", "stepper": "dopri5", "resolution": 16, "dim": 5,
                       "normalization": "lnscale"})]


@pytest.mark.parametrize("geometry, settings", RESTARTS, ids=[f"{g}-{s['scheme']}" for g, s in RESTARTS])
def test_restart_from_a_file_is_bit_for_bit(tmp_path, geometry, settings):
    """LN-scaling's clock comes back from the file: 0 -> 3 -> 6 is 0 -> 6."""
    run = lambda **kw: meanfield.solve(geometry, beta=BETA, init=kw.pop("init", "perturbed:1e-4"), seed=3,
                                       save_every=1.0, **kw)
    whole, first, second = _split(run, tmp_path, 3.0, 6.0, **settings)
    _frames_equal(whole, first, second)
    assert whole.attrs["normalization"] == second.attrs["normalization"] == settings["normalization"]


def test_the_run_records_its_normalization_and_the_command_repeats_it(tmp_path):
    first = tmp_path / "a.nc"
    assert main(["solve", "circle", "--beta", "4", "--resolution", "32", "--t-final", "1", "--normalization", "ngpt",
                 "--alpha", "2.5", "--out", str(first), "--no-progress"]) == 0
    run = meanfield.load_run(str(first))
    assert (run.attrs["normalization"], run.attrs["alpha"], run.attrs["r0"]) == ("ngpt", 2.5, 1.0)
    assert "--normalization ngpt --alpha 2.5" in run.attrs["command"]
    again = tmp_path / "b.nc"
    assert main(shlex.split(run.attrs["command"])[1:] + ["--out", str(again), "--no-progress"]) == 0
    np.testing.assert_array_equal(meanfield.load_run(str(again))["density"].values, run["density"].values)
    post = meanfield.solve("circle", beta=4.0, resolution=32, t_final=1.0)
    assert post.attrs["normalization"] == "post" and "--alpha" not in post.attrs["command"]


@pytest.mark.parametrize("argv, phrase", [
    (["circle", "--normalization", "pre"], "use `meanfield particles --normalization pre` or --scheme lagrangian"),
    (["zonal", "--scheme", "fv", "--normalization", "peri"], "use `meanfield particles --normalization peri`"),
    (["sphere", "--normalization", "mix"], "needs a radius per token"),
    (["circle", "--scheme", "lagrangian", "--normalization", "pre", "--collapse-tol", "1e-9"], "--collapse-tol"),
    (["circle", "--normalization", "lnscale", "--alpha", "2"], "--alpha applies to --normalization ngpt only"),
    (["circle", "--normalization", "ngpt", "--alpha", "0"], "--alpha must be a finite number > 0"),
    (["circle", "--normalization", "layer"], "--normalization must be one of"),
])
def test_unsupported_normalizations_are_one_line(argv, phrase, tmp_path, capsys):
    out = tmp_path / "x.nc"
    assert main(["solve", *argv, "--beta", "2", "--t-final", "1", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("meanfield: error: ") and phrase in err
    assert not out.exists()


def test_schemes_refuse_a_radius_carrying_normalization():
    with pytest.raises(InputError, match="radius per token"):
        CircleSpectral(Model("sa", 2.0, 0.0, 2), 32, normalization="pre")
