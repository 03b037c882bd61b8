"""Sphere input in the package's convention (MATH.md §2.2): a callable is called ``f(theta, phi)``, colatitude and
longitude in radians, on the points :func:`meanfield.grid` gives; one written for degrees is refused in one line that
names the convention (meanfield.initial.sphere.sphere_function_values); ``meanfield.grid`` is the grid each scheme
really uses (the coordinates its run files save, bit for bit)."""

import math

import numpy as np
import pytest

import meanfield
from meanfield import InputError
from meanfield.defaults import GEOMETRY_DEFAULTS
from meanfield.initial.sphere import seam_jump
from meanfield.schemes import SCHEMES
from meanfield.solvers.bases.sphere_basis import SphereBasis

#: the words every refusal of a sphere callable carries (flags and Python names alike: no flag text matched here)
CONVENTION = r"called f\(theta, phi\) with colatitude theta in \[0, pi\] and longitude phi in \[0, 2 pi\) radians"
CENTRE = (30.0, 45.0)                              # latitude, longitude of the vMF centre, degrees
KAPPA = 4.0
RUN = dict(beta=4.0, resolution=12, t_final=0.5, save_every=0.25)


def _mu():
    lat, lon = (math.radians(angle) for angle in CENTRE)
    return np.array([math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon), math.sin(lat)])


def _vmf(cosine):
    return KAPPA / (2 * math.pi * -math.expm1(-2 * KAPPA)) * np.exp(KAPPA * (cosine - 1.0))


def vmf_radians(theta, phi):
    """The vMF density of ``vmf:4@30,45`` in the package's convention."""
    mu = _mu()
    return _vmf(np.sin(theta) * (np.cos(phi) * mu[0] + np.sin(phi) * mu[1]) + np.cos(theta) * mu[2])


def vmf_degrees(lat, lon):
    """The same density written for latitude and longitude in degrees (the former convention)."""
    lat, lon = np.radians(lat), np.radians(lon)
    mu = _mu()
    return _vmf(np.cos(lat) * (np.cos(lon) * mu[0] + np.sin(lon) * mu[1]) + np.sin(lat) * mu[2])


def gentle_degrees(lat, lon):
    """Written for degrees and so gentle that, called with radians, it is resolved at ``lmax = 12``: only its seam
    (it is periodic in 360, not 2 pi) gives it away."""
    return 1.0 + 1e-4 * np.cos(np.radians(lat)) * np.cos(np.radians(lon))


def _same_run(a, b):
    for name in ("density", "mass", "energy", "mode_amplitude"):
        assert np.array_equal(a[name].values, b[name].values), name


# -- a callable in radians runs, as its array on meanfield.grid ---------------------------------------------------------
@pytest.mark.parametrize("scheme, resolution", [("spectral", 12), ("lagrangian", 12)])
def test_a_radians_callable_runs_bit_for_bit_as_its_array_on_the_grid(scheme, resolution):
    settings = dict(RUN, scheme=scheme, resolution=resolution)
    theta, phi = meanfield.grid("sphere", resolution, scheme)
    from_callable = meanfield.solve("sphere", init=vmf_radians, **settings)
    from_array = meanfield.solve("sphere", init=vmf_radians(theta, phi), **settings)
    assert from_callable.attrs["stop_reason"] == "completed"
    _same_run(from_callable, from_array)
    # and it is the density of the text spec vmf:4@30,45 (whose centre is latitude, longitude in degrees)
    text = meanfield.solve("sphere", init=f"vmf:{KAPPA:g}@{CENTRE[0]:g},{CENTRE[1]:g}", **settings)
    start, reference = from_callable["density"].values[0], text["density"].values[0]
    assert np.max(np.abs(start - reference)) < 1e-13 * reference.max()


def test_a_causal_sphere_callable_takes_s_theta_phi():
    settings = dict(beta=3.0, resolution=6, t_final=0.2, save_every=0.2, mask="causal", positions=3)
    theta, phi = meanfield.grid("sphere", 6)

    def density(s, theta, phi):
        return (1 + 0.2 * s * np.cos(theta) + 0.1 * np.sin(theta) * np.sin(phi)) / (4 * math.pi)

    from_callable = meanfield.solve("sphere", init=density, **settings)
    from_array = meanfield.solve("sphere", init=np.stack([density(s, theta, phi) for s in (0.0, 0.5, 1.0)]),
                                 **settings)
    assert np.array_equal(from_callable["density"].values, from_array["density"].values)


# -- one written for degrees is refused, naming the convention ---------------------------------------------------
@pytest.mark.parametrize("function", [vmf_degrees, gentle_degrees,
                                      lambda lat, lon: 1 + 0.02 * np.cos(np.radians(lat)) * np.sin(np.radians(lon))])
def test_a_degrees_callable_is_refused_naming_the_convention(function):
    with pytest.raises(InputError, match=CONVENTION) as caught:
        meanfield.solve("sphere", init=function, **RUN)
    message = str(caught.value)
    assert "\n" not in message and "look like it expects degrees" in message
    assert "meanfield.grid('sphere', 12)" in message
    # the wrapper the line suggests runs from the density the function meant: its values in degrees on the grid
    wrapped = meanfield.solve("sphere", init=lambda theta, phi: function(90 - np.degrees(theta), np.degrees(phi)),
                              **RUN)
    theta, phi = meanfield.grid("sphere", 12)
    _same_run(wrapped, meanfield.solve("sphere", init=function(90 - np.degrees(theta), np.degrees(phi)), **RUN))


def test_the_gentle_one_is_caught_by_its_seam_alone():
    """Called with radians, ``gentle_degrees`` passes every check of a density at lmax = 12 (so without the seam test
    it would run, silently, from the wrong density); its values jump across phi = 0 and its degrees values do not."""
    basis = SphereBasis(12)
    theta, phi = basis.grid_points()
    in_radians = gentle_degrees(theta, phi)
    basis.check_density(in_radians, "init")                           # accepted: no refusal here
    assert seam_jump(in_radians)
    assert not seam_jump(gentle_degrees(90 - np.degrees(theta), np.degrees(phi)))


def test_particles_sample_a_radians_callable_and_refuse_a_degrees_one():
    n = 4000
    tokens = meanfield.simulate_particles(dim=3, n=n, beta=1.0, init=vmf_radians, seed=2, resolution=64,
                                          t_final=0.1, save_every=0.1)
    mean = tokens["positions"].values[0].mean(axis=0)
    expected = (1 / math.tanh(KAPPA) - 1 / KAPPA) * _mu()             # E x of the vMF law
    assert np.max(np.abs(mean - expected)) < 4 * math.sqrt(1.0 / n) + 2e-3  # 4 sigma + the cells' discretisation
    with pytest.raises(InputError, match=CONVENTION) as caught:
        meanfield.simulate_particles(dim=3, n=n, beta=1.0, init=vmf_degrees, seed=2, resolution=64, t_final=0.1)
    assert "look like it expects degrees" in str(caught.value) and "64 x 128 equal-angle cells" in str(caught.value)


# -- radians callables are not taken for degrees -------------------------------------------------------------------
def test_smooth_radians_functions_show_no_seam():
    """Band-limited functions with random coefficients (seeded): the jump across the seam is a step like the
    others (at most 1.4 times the largest other step here; the test's threshold is 4)."""
    rng = np.random.default_rng(11)
    for lmax in (6, 12, 31):
        basis = SphereBasis(lmax)
        for _ in range(40):
            coeffs = rng.standard_normal(basis.nalm) + 1j * rng.standard_normal(basis.nalm)
            coeffs[basis.zonal] = coeffs[basis.zonal].real
            assert not seam_jump(basis.synthesise(coeffs))


@pytest.mark.parametrize("function, words", [
    (lambda theta, phi: np.exp(60.0 * np.cos(theta)), "not resolved"),     # a sharp cap: needs more degrees
    (lambda theta, phi: 2.0 + phi / (2 * math.pi), "not resolved"),        # a jump at phi = 0, in degrees too
    (lambda theta, phi: np.cos(theta), "negative"),
])
def test_other_refusals_recall_the_convention_without_blaming_degrees(function, words):
    with pytest.raises(InputError, match=words) as caught:
        meanfield.solve("sphere", init=function, **RUN)
    message = str(caught.value)
    assert "\n" not in message and "expects degrees" not in message
    assert "colatitude theta in [0, pi] and longitude phi in [0, 2 pi) radians" in message


# -- meanfield.grid is the grid the solver uses --------------------------------------------------------------------
CASES = [("circle", "spectral", 16, {}), ("circle", "fv", 16, {}), ("circle", "lagrangian", 16, {}),
         ("sphere", "spectral", 8, {}), ("sphere", "lagrangian", 6, {}),
         ("zonal", "galerkin", 8, {}), ("zonal", "fv", 8, {}), ("zonal", "galerkin", 8, {"dim": 5})]


def test_every_scheme_is_covered():
    assert {(geometry, scheme) for geometry, scheme, *_ in CASES} == \
           {(geometry, scheme) for geometry, names in SCHEMES.items() for scheme in names}


@pytest.mark.parametrize("geometry, scheme, resolution, extra", CASES)
def test_the_grid_is_the_saved_runs_coordinates_bit_for_bit(geometry, scheme, resolution, extra):
    run = meanfield.solve(geometry, beta=1.0, scheme=scheme, resolution=resolution, init="uniform", t_final=0.01,
                          save_every=0.01, **extra)
    points = meanfield.grid(geometry, resolution, scheme, **extra)
    if isinstance(points, tuple):                    # the sphere: (theta, phi) on the (lat, lon) grid of the file
        theta, phi = points
        assert theta.shape == phi.shape == run["density"].shape[1:]
        assert np.array_equal(90.0 - np.degrees(theta[:, 0]), run["lat"].values)
        assert np.array_equal(np.degrees(phi[0]), run["lon"].values)
        assert np.all(theta == theta[:, :1]) and np.all(phi == phi[:1])
        assert 0 < theta.min() and theta.max() < math.pi and phi.min() == 0 and phi.max() < 2 * math.pi
    else:
        name = run["density"].dims[-1]
        assert np.array_equal(points, run[name].values), name


def test_the_circle_cells_are_centred_on_2_pi_k_over_n():
    """The finite-volume cells are centred on ``2 pi k / N`` (not ``2 pi (k + 1/2) / N``): the grid, the run file and
    the refusal of a wrong shape say the same."""
    theta = meanfield.grid("circle", 16, "fv")
    assert np.array_equal(theta, 2.0 * math.pi * np.arange(16) / 16)
    with pytest.raises(InputError, match=r"expected shape \(16,\)") as caught:
        meanfield.solve("circle", beta=1.0, scheme="fv", resolution=16, init=np.ones(15), t_final=0.1)
    message = str(caught.value)
    assert f"theta = 0 .. {theta[-1]:.4g} rad" in message and "meanfield.grid('circle', 16, 'fv')" in message


def test_a_sphere_array_of_the_wrong_shape_names_the_grid():
    theta, phi = meanfield.grid("sphere", 12)
    with pytest.raises(InputError, match=r"expected shape \(%d, %d\)" % theta.shape) as caught:
        meanfield.solve("sphere", init=np.ones((theta.shape[1], theta.shape[0])), **RUN)
    message = str(caught.value)
    assert f"theta = {theta[0, 0]:.4g} .. {theta[-1, 0]:.4g} rad x phi = 0 .. {phi[0, -1]:.4g} rad" in message
    assert "meanfield.grid('sphere', 12, 'spectral')" in message


def _arrays(points) -> tuple:
    return points if isinstance(points, tuple) else (points,)


@pytest.mark.parametrize("geometry", ["circle", "sphere", "zonal"])
def test_the_defaults_are_the_solvers(geometry):
    """Without a resolution or scheme the grid is that of the solver's defaults (meanfield/defaults.py)."""
    default = _arrays(meanfield.grid(geometry))
    named = _arrays(meanfield.grid(geometry, GEOMETRY_DEFAULTS[geometry]["resolution"], next(iter(SCHEMES[geometry]))))
    assert len(default) == len(named) and all(np.array_equal(a, b) for a, b in zip(default, named))
    run = meanfield.solve(geometry, beta=1.0, init="uniform", t_final=1e-3, save_every=1e-3)
    assert run["density"].shape[1:] == default[0].shape


@pytest.mark.parametrize("call, words", [
    (lambda: meanfield.grid("torus"), "geometry must be one of circle, sphere, zonal"),
    (lambda: meanfield.grid("sphere", 3), "integer >= 6"),
    (lambda: meanfield.grid("circle", 16, "galerkin"), "one of spectral, fv, lagrangian"),
])
def test_grid_refuses_in_one_line(call, words):
    with pytest.raises(InputError, match=words) as caught:
        call()
    assert "\n" not in str(caught.value)
