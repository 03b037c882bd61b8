"""init= as numpy values, DataArrays, functions and runs (meanfield.initial, meanfield.solvers.runs.initial_state,
meanfield.sampling)."""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield import InputError, Model
from meanfield.initial.kinds import describe_init
from meanfield.initial.circle import von_mises
from meanfield.initial.sphere import direction
from meanfield.initial.zonal import von_mises_fisher
from meanfield.sampling import sample_tokens
from meanfield.solvers.schemes.circle import CircleSpectral
from meanfield.solvers.schemes.finite_volume import CircleFiniteVolume, ZonalFiniteVolume
from meanfield.solvers.runs.initial_state import initial_state
from meanfield.solvers.schemes.lagrangian import CircleLagrangian, SphereLagrangian
from meanfield.solvers.schemes.sphere import SphereSpectral
from meanfield.solvers.schemes.zonal import ZonalGalerkin

CIRCLE = Model(beta=1.0, dim=2)
SPHERE = Model(beta=1.0, dim=3)


def vm(theta):
    return von_mises(theta, 4.0, 1.0)


def circle_scheme(cls, n=64):
    return cls(CIRCLE, n, backend="scipy")


def grid_density(scheme, state):
    """What a state stands for on the grid: the density, or a Lagrangian scheme's node weights."""
    return scheme.node_weights.copy() if scheme.name == "lagrangian" else scheme.density(state)


def theta_array(theta, values, **attrs):
    return xr.DataArray(values, coords={"theta": theta}, dims="theta", attrs=attrs)


@pytest.mark.parametrize("cls", [CircleSpectral, CircleFiniteVolume, CircleLagrangian])
def test_circle_inputs_match_the_text_spec(cls):
    scheme = circle_scheme(cls)
    reference = grid_density(scheme, initial_state("vonmises:4@1", "circle", scheme))
    scale = reference.max()
    # grid values: point values (spectral, Lagrangian) or the fv scheme's own cell averages, exactly
    own = reference if cls is CircleFiniteVolume else vm(scheme.basis.theta)
    assert np.array_equal(grid_density(scheme, initial_state(own, "circle", scheme)), reference)
    function = grid_density(scheme, initial_state(vm, "circle", scheme))
    assert np.max(np.abs(function - reference)) < 1e-13 * scale
    # another equispaced grid with an offset: spectral resampling, or the piecewise-linear remap (fv)
    theta = 2 * math.pi * np.arange(300) / 300 + 0.01
    uniform = grid_density(scheme, initial_state(theta_array(theta, vm(theta)), "circle", scheme))
    assert np.max(np.abs(uniform - reference)) < (3e-4 if cls is CircleFiniteVolume else 1e-13) * scale
    scattered = np.sort(np.random.default_rng(0).uniform(0, 2 * math.pi, 400))
    spline = grid_density(scheme, initial_state(theta_array(scattered, vm(scattered)), "circle", scheme))
    assert np.max(np.abs(spline - reference)) < (5e-3 if cls is CircleFiniteVolume else 1e-5) * scale


def test_circle_run_datasets_and_files(tmp_path):
    """A spectral run at another resolution is resampled spectrally (exact for its band: the
    48-point run's dealiased band ends at mode 15, where the von Mises coefficients are ~1e-10)."""
    coarse = circle_scheme(CircleSpectral, 48)
    frame = coarse.density(initial_state("vonmises:4@1", "circle", coarse))
    run = xr.Dataset({"density": (("time", "theta"), frame[None])},
                     coords={"time": [2.0], "theta": coarse.basis.theta},
                     attrs={"geometry": "circle", "scheme": "spectral", "stop_reason": "completed"})
    path = tmp_path / "run.nc"
    run.to_netcdf(path)
    scheme = circle_scheme(CircleSpectral)
    reference = scheme.density(initial_state("vonmises:4@1", "circle", scheme))
    for init in (run, str(path), path):
        assert np.max(np.abs(scheme.density(initial_state(init, "circle", scheme)) - reference)) < 1e-9
    assert describe_init(run) == "Dataset: circle spectral run, last frame t = 2"


def test_arrays_keep_their_mass():
    scheme = circle_scheme(CircleFiniteVolume)
    state = initial_state(lambda t: 2 * vm(t), "circle", scheme)
    assert scheme.fv.integrate(state) == pytest.approx(2.0, rel=1e-13)
    spectral = circle_scheme(CircleSpectral)
    assert spectral.basis.integrate(spectral.density(initial_state(3 * vm(spectral.basis.theta), "circle",
                                                                   spectral))) == pytest.approx(3.0, rel=1e-13)


def cluster_averages(n, dim=None):
    """Cell averages with a two-cell cluster of mass ~0.9 on a faint background (fv cells)."""
    values = np.full(n, 1e-3)
    values[n // 3] = values[n // 3 + 1] = 1.0e3
    return values


@pytest.mark.parametrize("target", [24, 200])
def test_circle_conservative_remap_of_a_cluster(target):
    source = circle_scheme(CircleFiniteVolume, 64)
    averages = cluster_averages(64)
    mass = source.fv.integrate(averages)
    scheme = circle_scheme(CircleFiniteVolume, target)
    for init in (theta_array(source.basis.theta, averages, cell_methods="theta: mean"),
                 xr.Dataset({"density": (("time", "theta"), averages[None])},
                            coords={"time": [5.0], "theta": source.basis.theta},
                            attrs={"geometry": "circle", "scheme": "fv", "stop_reason": "completed"})):
        state = initial_state(init, "circle", scheme)
        assert abs(scheme.fv.integrate(state) - mass) < 1e-14 * mass
        assert state.min() >= 0
        centre = np.angle(np.sum(state * np.exp(1j * scheme.basis.theta)))      # the cluster stays put
        assert abs(centre - 2 * math.pi * (64 // 3 + 0.5) / 64) < math.pi / target
    # the circle Lagrangian scheme takes the same cell averages as node masses
    lagrangian = circle_scheme(CircleLagrangian, 2 * (target // 2))
    initial_state(theta_array(source.basis.theta, averages, cell_methods="theta: mean"), "circle", lagrangian)
    assert lagrangian.node_weights.min() >= 0 and abs(lagrangian.node_weights.sum() - mass) < 1e-14 * mass


@pytest.mark.parametrize("target", [16, 90])
def test_zonal_conservative_remap_of_a_cluster(target):
    source = ZonalFiniteVolume(SPHERE, 40)
    averages = cluster_averages(40)
    averages[0] = 50.0                        # mass at the pole as well
    mass = source.fv.integrate(averages)
    scheme = ZonalFiniteVolume(SPHERE, target)
    run = xr.Dataset({"density": (("time", "polar"), averages[None])}, coords={"time": [1.0], "polar": source.polar},
                     attrs={"geometry": "zonal", "scheme": "fv", "dim": 3, "stop_reason": "completed"})
    state = initial_state(run, "zonal", scheme)
    assert abs(scheme.fv.integrate(state) - mass) < 1e-14 * mass
    assert state.min() >= 0


def test_zonal_inputs_match_the_text_spec():
    galerkin, fv = ZonalGalerkin(SPHERE, 16), ZonalFiniteVolume(SPHERE, 48)
    polar = np.linspace(0.0, math.pi, 200)
    vmf = xr.DataArray(von_mises_fisher(np.cos(polar), 4.0, 3), coords={"polar": polar}, dims="polar")
    for scheme, tol in ((galerkin, 1e-7), (fv, 1e-4)):
        reference = scheme.density(initial_state("vmf:4", "zonal", scheme))
        for init in (lambda p: von_mises_fisher(np.cos(p), 4.0, 3), vmf):
            density = scheme.density(initial_state(init, "zonal", scheme))
            assert np.max(np.abs(density - reference)) < tol * reference.max()
    own = von_mises_fisher(galerkin.basis.nodes, 4.0, 3)              # values at the Galerkin nodes: exact
    assert np.array_equal(initial_state(own, "zonal", galerkin), initial_state("vmf:4", "zonal", galerkin))


@pytest.mark.parametrize("cls", [SphereSpectral, SphereLagrangian])
def test_sphere_inputs_match_the_text_spec(cls):
    scheme = cls(SPHERE, 16)
    reference = grid_density(scheme, initial_state("vmf:4@30,40", "sphere", scheme))
    mu = direction(30.0, 40.0)

    def vmf_at(cosine):
        return 4.0 / (2 * math.pi * -math.expm1(-8.0)) * np.exp(4.0 * (cosine - 1.0))

    def vmf(lat, lon):                                  # degrees, the coordinates of a DataArray (and a run file)
        lat, lon = np.radians(lat), np.radians(lon)
        return vmf_at(np.cos(lat) * (np.cos(lon) * mu[0] + np.sin(lon) * mu[1]) + np.sin(lat) * mu[2])

    def vmf_callable(theta, phi):                       # a callable: colatitude and longitude in radians
        return vmf_at(np.sin(theta) * (np.cos(phi) * mu[0] + np.sin(phi) * mu[1]) + np.cos(theta) * mu[2])

    from_callable = grid_density(scheme, initial_state(vmf_callable, "sphere", scheme))
    assert np.max(np.abs(from_callable - reference)) < 1e-13 * reference.max()
    lat, lon = np.linspace(-89.0, 89.0, 90), np.arange(0.0, 360.0, 2.0)
    data = xr.DataArray(vmf(*np.meshgrid(lat, lon, indexing="ij")), coords={"lat": lat, "lon": lon}, dims=("lat", "lon"))
    assert np.max(np.abs(grid_density(scheme, initial_state(data.T, "sphere", scheme)) - reference)) < 1e-5 * reference.max()
    finer = SphereSpectral(SPHERE, 20)             # the Gauss-Legendre grid of a run: analysed there
    fine = finer.density(initial_state("vmf:4@30,40", "sphere", finer))
    run_grid = xr.DataArray(fine, coords={"lat": finer.basis.lat, "lon": finer.basis.lon}, dims=("lat", "lon"))
    spectral = SphereSpectral(SPHERE, 16)
    exact = spectral.density(initial_state("vmf:4@30,40", "sphere", spectral))
    # spectral (analysis on the run's grid): 1e-15 here; the bicubic path would give 1e-5, which 1e-4 let through
    assert np.max(np.abs(spectral.density(initial_state(run_grid, "sphere", spectral)) - exact)) < 1e-13 * exact.max()


def one_line_refusal(init, geometry, scheme, words):
    with pytest.raises(InputError, match=words) as caught:
        initial_state(init, geometry, scheme)
    message = str(caught.value)
    assert "\n" not in message and "init" in message
    return message


def test_bad_inputs_are_one_line_refusals_naming_init():
    scheme = circle_scheme(CircleSpectral)
    theta = scheme.basis.theta
    message = one_line_refusal(np.ones(10), "circle", scheme, r"expected shape \(64,\)")
    assert "init=<numpy array of shape (10,)>" in message and "theta" in message
    one_line_refusal(vm(theta) - 0.2, "circle", scheme, "negative somewhere")
    one_line_refusal(np.where(theta > 3, np.nan, 1.0), "circle", scheme, "not finite")
    one_line_refusal(np.zeros(64), "circle", scheme, "positive number")
    one_line_refusal(np.where(theta == theta[5], 100.0, 0.1), "circle", scheme, "not resolved")
    one_line_refusal(lambda t: np.ones(3), "circle", scheme, "returned shape")
    one_line_refusal(lambda t: 1 / 0, "circle", scheme, "ZeroDivisionError")
    one_line_refusal(lambda t: -np.ones_like(t), "circle", scheme, "negative")
    one_line_refusal(xr.DataArray(vm(theta), dims="theta"), "circle", scheme, "no 'theta' coordinate|coordinate")
    one_line_refusal(xr.DataArray(vm(theta)[None], coords={"theta": theta}, dims=("time", "theta")), "circle", scheme,
                     r"isel\(time=-1\)")
    one_line_refusal(theta_array(np.degrees(theta), vm(theta)).assign_coords(theta=("theta", np.degrees(theta),
                                                                                    {"units": "degrees"})),
                     "circle", scheme, "radians")
    one_line_refusal(xr.Dataset({"positions": (("time", "particle"), np.ones((1, 3)))},
                                attrs={"geometry": "particles"}), "circle", scheme, "holds no density")
    one_line_refusal([1.0, 2.0], "circle", scheme, "init must be")
    one_line_refusal("missing.nc", "circle", scheme, "init missing.nc: no such file")
    fv = circle_scheme(CircleFiniteVolume)
    assert "cell averages" in one_line_refusal(np.ones((8, 8)), "circle", fv, r"expected shape \(64,\)")


def first_moment(x, weights):
    return np.sum(weights * (x[:, 0] + 1j * x[:, 1]))


def test_samples_from_grid_values_have_the_right_first_moment():
    n = 20000
    values = 3.0 * von_mises(2 * math.pi * np.arange(64) / 64, 2.0, 1.0)       # mass 3: the law is normalised
    coeffs = np.fft.rfft(values)
    expected = np.conj(coeffs[1]) / coeffs[0]                                     # E exp(i theta) of the series
    sigma = math.sqrt((1 - abs(expected) ** 2) / n)                               # per component, at most
    for init in (values, lambda t: 3.0 * von_mises(t, 2.0, 1.0),
                 theta_array(2 * math.pi * np.arange(64) / 64, values)):
        x, weights = sample_tokens(init, n, 2, seed=3, resolution=64)
        assert abs(first_moment(x, weights) - expected) < 4 * sigma
        quadrature = first_moment(*sample_tokens(init, 256, 2, resolution=64, sampling="quadrature"))
        assert abs(quadrature - expected) < 1e-12
    # cell averages: the piecewise-constant law, whose moment carries sinc(h / 2)
    h = 2 * math.pi / 64
    cells = theta_array(2 * math.pi * np.arange(64) / 64, values, cell_methods="theta: mean")
    fv_run = xr.Dataset({"density": (("time", "theta"), values[None])},
                        coords={"time": [1.0], "theta": 2 * math.pi * np.arange(64) / 64},
                        attrs={"geometry": "circle", "scheme": "fv", "stop_reason": "completed"})
    for init in (cells, fv_run):
        x, weights = sample_tokens(init, n, 2, seed=4)
        assert abs(first_moment(x, weights) - expected * np.sinc(h / (2 * math.pi))) < 4 * sigma


def test_sphere_samples_from_a_dataarray_and_a_function():
    n = 20000
    lat, lon = np.linspace(-89.0, 89.0, 90), np.arange(0.0, 360.0, 2.0)

    def polar_cap(la, lo):                                    # vMF about the north pole, kappa = 4 (degrees)
        return np.exp(4.0 * (np.sin(np.radians(la)) - 1.0))

    def polar_cap_callable(theta, phi):                       # the same, as a callable: radians
        return np.exp(4.0 * (np.cos(theta) - 1.0))

    data = xr.DataArray(polar_cap(*np.meshgrid(lat, lon, indexing="ij")), coords={"lat": lat, "lon": lon},
                        dims=("lat", "lon"))
    expected = 1 / math.tanh(4.0) - 0.25                      # E z of the vMF law
    scheme = SphereSpectral(SPHERE, 24)                       # a sphere run file on its Gauss-Legendre grid
    frame = scheme.density(initial_state("vmf:4", "sphere", scheme))
    run = xr.Dataset({"density": (("time", "lat", "lon"), frame[None])},
                     coords={"time": [1.0], "lat": scheme.basis.lat, "lon": scheme.basis.lon},
                     attrs={"geometry": "sphere", "scheme": "spectral", "stop_reason": "completed"})
    for init, cells in ((data, 1e-3), (polar_cap_callable, 1e-3), (run, 3e-3)):     # + the cells' discretisation
        x, weights = sample_tokens(init, n, 3, seed=5, resolution=90)
        assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-15)
        assert abs(np.mean(x[:, 2]) - expected) < 4 * math.sqrt(0.1 / n) + cells


@pytest.mark.parametrize("kwargs, words", [
    ({"init": np.ones(64), "dim": 3}, "numpy array is read as circle grid values"),
    ({"init": np.ones(64), "dim": 4}, "dim 2.*dim 3|dim 2"),
    ({"init": -np.ones(64), "dim": 2}, "negative"),
    ({"init": lambda t: np.ones(2), "dim": 2}, "returned shape"),
    ({"init": np.ones(64), "dim": 3, "sampling": "quadrature"}, "quadrature|numpy"),
])
def test_bad_sampling_inputs(kwargs, words):
    settings = {"n": 16, "seed": 0} | kwargs
    with pytest.raises(InputError, match=words) as caught:
        sample_tokens(settings.pop("init"), settings.pop("n"), settings.pop("dim"), **settings)
    assert "\n" not in str(caught.value) and "init" in str(caught.value)
