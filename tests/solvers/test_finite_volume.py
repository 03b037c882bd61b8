"""The finite-volume schemes (solvers/schemes/finite_volume.py) against theory and the spectral schemes.

MATH.md §2 (PDE, mass, energy), §2.1–2.2 (spectral velocity), §2.3 (growth rates).
"""

import math

import numpy as np
import pytest

from meanfield.diagnostics import detect_clusters, fit_growth_rates
from meanfield.errors import InputError
from meanfield.geometry import sphere_area
from meanfield.initial.circle import circle_density
from meanfield.initial.zonal import zonal_density
from meanfield.model import Model
from meanfield.theory import linear_noise_threshold, dominant_mode, formation_time, growth_rates
from meanfield.solvers.schemes.finite_volume import (CircleFiniteVolume, FiniteVolume1D, ZonalFiniteVolume, cell_integrals,
                                   zonal_cell_volumes)
from meanfield.solvers.runs.solve import solve
from meanfield.gegenbauer import normalised_gegenbauer
from meanfield.solvers.bases.zonal_basis import ZonalBasis

NS = np.array([64, 128, 256, 512])


def slope(errors):
    return -np.polyfit(np.log(NS), np.log(errors), 1)[0]


# -- geometry: exact cell integrals and volumes --------------------------------------------------------
@pytest.mark.parametrize("dim", [3, 4, 7])
def test_cell_integrals_are_exact(dim):
    faces = math.pi * np.arange(13) / 12
    G = cell_integrals(faces, 10, dim)
    volumes, centroids = zonal_cell_volumes(faces, dim)
    assert volumes.sum() == pytest.approx(sphere_area(dim), rel=1e-14)
    assert np.all((faces[:-1] < centroids) & (centroids < faces[1:]))
    # against 40-point Gauss–Legendre per cell in th (no Sturm–Liouville identity)
    x, w = np.polynomial.legendre.leggauss(40)
    for i in (0, 5, 11):
        th = faces[i] + (faces[i + 1] - faces[i]) * (x + 1) / 2
        weights = (faces[i + 1] - faces[i]) / 2 * w * np.sin(th) ** (dim - 2) * sphere_area(dim - 1)
        direct = weights @ normalised_gegenbauer(np.cos(th), 10, dim)
        assert np.max(np.abs(direct - G[:, i])) < 1e-14


def test_reconstruction_is_second_order_at_a_smooth_maximum_and_positive_at_a_spike():
    """MATH.md §2.5: the central slope, cut only where a face value would be negative.  The slopes of the exact cell
    averages of ``2 + cos x`` are within ``O(h^2)`` of ``rho'`` at the cell centres in every cell, the extrema included
    (minmod takes the smaller one-sided slope beside an extremum, ``O(h)`` off: its slope error halves, not quarters,
    with ``h``); a one-cell spike keeps its mass and non-negative faces."""
    errors = []
    for n in (64, 128, 256):
        h = 2 * math.pi / n
        faces = -h / 2 + h * np.arange(n + 1)
        centres = faces[:-1] + h / 2
        core = FiniteVolume1D(faces, np.full(n, h), np.ones(n + 1), centres, periodic=True)
        west, east = core.reconstruct(2 + np.sinc(h / (2 * math.pi)) * np.cos(centres))   # exact cell averages
        errors.append(np.max(np.abs((east - west) / h + np.sin(centres))))
    assert np.log2(errors[0] / errors[1]) == pytest.approx(2.0, abs=0.02)
    assert np.log2(errors[1] / errors[2]) == pytest.approx(2.0, abs=0.02)
    spike = np.zeros(16)
    spike[5] = 1.0
    h = 2 * math.pi / 16
    faces = -h / 2 + h * np.arange(17)
    core = FiniteVolume1D(faces, np.full(16, h), np.ones(17), faces[:-1] + h / 2, periodic=True)
    west, east = core.reconstruct(spike)
    assert west.min() >= 0 and east.min() >= 0
    np.testing.assert_allclose(0.5 * (west + east), spike, atol=1e-16)             # the cell average, exactly


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_circle_face_velocity_is_the_convolution_of_the_cell_masses(attention, rng):
    """Against the direct sum of ``K`` over the cell masses ``h rho_i`` at the cell centres (the midpoint rule,
    MATH.md §2.5); 16 cells at beta = 16 (band limit 37 > N/2, so the coefficients fold and the synthesis grid is
    refined)."""
    beta, n = 16.0, 16
    scheme = CircleFiniteVolume(Model(attention, beta, 0.0, 2), n)
    rho = rng.random(n)
    h = 2 * math.pi / n
    phi = scheme.coordinate
    weights = h * rho
    faces = scheme.coordinate - h / 2
    gap = faces[:, None] - phi[None, :]
    kernel = np.exp(beta * (np.cos(gap) - 1.0))                               # exp(-beta) K
    derivative = (-beta * np.sin(gap) * kernel) @ weights
    expected = derivative / (beta * (kernel @ weights)) if attention == "sa" else math.exp(beta) * derivative / beta
    speed = scheme.face_speed(rho)
    assert scheme._stride > 1
    assert np.max(np.abs(speed - expected)) < 1e-12 * np.max(np.abs(expected))


# -- positivity bound of stable_dt: forward Euler at cfl = 1 keeps rho >= 0 ------------------------------
@pytest.mark.parametrize("geometry", ["circle", "zonal"])
@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_euler_step_at_the_cfl_bound_is_non_negative(geometry, attention, rng):
    model = Model(attention, 3.0, 0.02, 2 if geometry == "circle" else 4)
    scheme = (CircleFiniteVolume if geometry == "circle" else ZonalFiniteVolume)(model, 64)
    rough = rng.random(64) ** 4 * (rng.random(64) < 0.5)          # half the cells exactly empty
    rho = rough / scheme.fv.integrate(rough)
    lows = []
    for cfl in (1.0, 2.5):
        derivative = scheme.rhs(rho, 0.0)
        step = cfl / scheme.fv.max_rate                             # the positivity part of stable_dt
        lows.append(np.min(rho + step * derivative))
        assert abs(scheme.fv.integrate(rho + step * derivative) - 1) < 1e-14
    assert lows[0] >= 0.0
    assert lows[1] < 0.0  # the bound is not vacuous: well past it, the Euler step goes negative


# -- (1) circle, SA, beta = 9 through cluster formation --------------------------------------------------
@pytest.fixture(scope="module")
def clustering_run():
    return solve("circle", scheme="fv", attention="sa", beta=9.0, resolution=1024, init="perturbed:1e-4",
                 seed=0, t_final=60.0, save_every=0.5)


def test_clustering_run_is_positive_conservative_and_completes(clustering_run):
    assert clustering_run.attrs["stop_reason"] == "completed"
    assert clustering_run.attrs["stepper"] == "ssprk3"
    assert float(clustering_run["density"].min()) >= 0.0
    assert np.max(np.abs(clustering_run["mass"].values - 1.0)) <= 1e-12


def test_clustering_run_forms_the_dominant_mode_number_of_clusters(clustering_run):
    model = Model("sa", 9.0, 0.0, 2)
    k_star = dominant_mode(model)
    assert k_star == 4
    times = clustering_run["time"].values
    counts = np.array([detect_clusters(frame, 9.0).count for frame in clustering_run["density"].values])
    formed = times >= 1.5 * formation_time(model, 1e-4)
    assert np.all(counts[formed] == k_star)       # formed by 1.5 x the predicted time, and kept to t = 60
    assert np.all(counts[~formed] <= k_star)
    first = np.argmax(counts == k_star)
    assert detect_clusters(clustering_run["density"].values[first], 9.0).masses.sum() == pytest.approx(1.0, rel=1e-12)


def test_clustering_run_energy_grows(clustering_run):
    energy = clustering_run["energy"].values
    assert np.all(np.diff(energy) >= -1e-12 * energy[0])   # monotone to round-off (MATH.md §2)
    assert energy[-1] > 1.5 * energy[0]


# -- (2) second-order convergence against the spectral schemes --------------------------------------------
@pytest.mark.parametrize("attention, t_final", [("sa", 1.0), ("usa", 0.25)])
def test_circle_converges_at_second_order(attention, t_final):
    """USA runs ``exp(beta)`` faster: by t = 1 the bump is a spike, so it stops at t = 0.25."""
    common = dict(attention=attention, beta=2.0, init="vonmises:1@0", t_final=t_final, save_every=t_final)
    reference = solve("circle", scheme="spectral", resolution=256, rtol=1e-12, **common)
    assert reference.attrs["stop_reason"] == "completed"
    coeffs = np.fft.rfft(reference["density"].values[-1], norm="forward")
    errors = []
    for n in NS:
        run = solve("circle", scheme="fv", resolution=int(n), **common)
        exact = CircleFiniteVolume(Model(attention, 2.0, 0.0, 2), int(n)).cell_averages(coeffs)
        errors.append(2 * math.pi / n * np.sum(np.abs(run["density"].values[-1] - exact)))
        if n == NS[-1]:  # exp(-beta) E of the piecewise-constant density: O(h^2) from the spectral one
            assert float(run["energy"].values[-1]) == pytest.approx(float(reference["energy"].values[-1]), rel=1e-4)
    assert slope(errors) >= 1.8
    assert errors[-1] < 2e-5


@pytest.mark.parametrize("dim", [3, 5])
def test_zonal_converges_at_second_order(dim):
    common = dict(attention="sa", beta=2.0, dim=dim, init="vmf:2", t_final=1.0, save_every=1.0)
    reference = solve("zonal", scheme="galerkin", resolution=48, rtol=1e-12, **common)
    assert reference.attrs["stop_reason"] == "completed"
    coeffs = ZonalBasis(48, dim).analyse(reference["density"].values[-1])
    errors = []
    for n in NS:
        run = solve("zonal", scheme="fv", resolution=int(n), **common)
        scheme = ZonalFiniteVolume(Model("sa", 2.0, 0.0, dim), int(n))
        errors.append(scheme.fv.volumes @ np.abs(run["density"].values[-1] - scheme.cell_averages(coeffs)))
        assert abs(float(run["mass"].values[-1]) - float(run["mass"].values[0])) < 1e-13
    assert slope(errors) >= 1.8
    assert errors[-1] < 1e-4


# -- (3) linear growth and decay rates (MATH.md §2.3) ----------------------------------------------------
@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("noisy", [False, True])
def test_circle_growth_rates_match_theory(attention, noisy):
    """Linearised, the scheme multiplies the attention's rate by ``sinc(kh/2)`` exactly (the face difference of
    the velocity of the cell masses, MATH.md §2.5) and the diffusion's by ``sinc(kh/2)^2`` (the three-point
    Laplacian): the fit matches that to 1e-4 and the continuum rate to ``(kh)^2 / 24``, or ``/ 12`` with noise."""
    modes = np.arange(1, 7)
    nu = 1.5 * linear_noise_threshold(Model(attention, 4.0, 0.0, 2)) if noisy else 0.0
    theory = growth_rates(Model(attention, 4.0, nu, 2), modes)
    attraction = growth_rates(Model(attention, 4.0, 0.0, 2), modes)
    assert np.all(theory < 0) if noisy else np.all(theory > 0)
    t_final = 6.0 / np.max(np.abs(theory))
    relative = []
    for n in (64, 128):
        run = solve("circle", scheme="fv", attention=attention, beta=4.0, nu=nu, resolution=n,
                    init="perturbed:1e-9", seed=1, t_final=t_final, save_every=t_final / 20, cfl=0.1)
        assert run.attrs["stop_reason"] == "completed"
        fitted = fit_growth_rates(run, modes)   # 1e-9: mode 3's square (growing at 2 lambda_3) stays below 1e-4 of mode 6
        discrete = attraction * np.sinc(modes / n) + (theory - attraction) * np.sinc(modes / n) ** 2
        assert np.max(np.abs(fitted / discrete - 1)) < 1e-4
        relative.append(np.max(np.abs(fitted / theory - 1)))
    assert relative[0] < 0.03 and relative[1] < 0.008
    assert relative[0] / relative[1] == pytest.approx(4.0, rel=0.02)   # second order


def test_zonal_growth_rates_match_theory():
    model = Model("sa", 4.0, 0.0, 3)
    degrees = np.arange(1, 5)
    theory = growth_rates(model, degrees)
    t_final = 6.0 / np.max(theory)
    run = solve("zonal", scheme="fv", attention="sa", beta=4.0, dim=3, resolution=128, init="perturbed:1e-8",
                seed=1, t_final=t_final, save_every=t_final / 20, cfl=0.1)
    fitted = fit_growth_rates(run, degrees)
    assert np.max(np.abs(fitted / theory - 1)) < 0.01


# -- (4) zonal long run -----------------------------------------------------------------------------------
def test_zonal_long_run_stays_positive_with_its_mass():
    run = solve("zonal", scheme="fv", attention="sa", beta=9.0, dim=4, resolution=128, init="perturbed:1e-4",
                seed=0, t_final=60.0, save_every=1.0)
    assert run.attrs["stop_reason"] == "completed"
    density = run["density"].values
    assert density.min() >= 0.0
    assert np.max(np.abs(run["mass"].values - 1.0)) <= 1e-12
    assert density[-1].max() > 100 * density[0].max()     # it concentrated (rings one or two cells wide)
    energy = run["energy"].values
    assert np.all(np.diff(energy) >= -1e-12 * energy[0]) and energy[-1] > 5 * energy[0]


def test_initial_data_are_exact_cell_averages():
    scheme = CircleFiniteVolume(Model("sa", 2.0, 0.0, 2), 64)
    state = scheme.state_from_density(circle_density("vonmises:1@0", 64))
    h = 2 * math.pi / 64
    x, w = np.polynomial.legendre.leggauss(20)
    for j in (0, 17, 40):
        th = scheme.coordinate[j] + h / 2 * x
        exact = 0.5 * w @ (np.exp(np.cos(th)) / (2 * math.pi * np.i0(1.0)))
        assert state[j] == pytest.approx(exact, rel=1e-13)
    zonal = ZonalFiniteVolume(Model("sa", 2.0, 0.0, 5), 32)
    start = zonal.state_from_density(zonal_density("vmf:2", zonal.basis))
    assert zonal.fv.integrate(start) == pytest.approx(1.0, abs=1e-14)
    assert np.all(np.diff(start) < 0)  # the vMF is largest at the pole


# -- (5) bad input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, phrase", [
    (lambda: CircleFiniteVolume(Model("sa", 2.0, 0.0, 2), 4), "resolution"),
    (lambda: CircleFiniteVolume(Model("sa", 2.0, 0.0, 3), 64), "dim"),
    (lambda: ZonalFiniteVolume(Model("sa", 2.0, 0.0, 2), 64), "dim"),
    (lambda: ZonalFiniteVolume(Model("sa", 2.0, 0.0, 3), 2.5), "resolution"),
    (lambda: ZonalFiniteVolume(Model("sa", 2.0, 0.0, 3), 64, backend="fftw"), "backend= parameter"),
    (lambda: solve("circle", scheme="fv", beta=64.0, resolution=16, t_final=1.0), "dominant mode"),
])
def test_bad_input_is_one_line(call, phrase):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert phrase in message and "\n" not in message


@pytest.mark.parametrize("geometry, extra", [("circle", {}), ("zonal", {"dim": 5})])
def test_a_finite_volume_file_carries_its_cell_volumes(geometry, extra):
    """issue 22 item 2: a file stands alone: sum(density * cell_volume) is every frame's mass (1, to round-off),
    the volumes tile the sphere (2 pi, |S^{d-1}|), and a wrong volume (e.g. the cell width on S^{d-1}) would not."""
    from meanfield.geometry import sphere_area
    from meanfield.solvers.runs.solve import solve

    run = solve(geometry, beta=9.0, scheme="fv", resolution=64, init="perturbed:1e-2", seed=0, t_final=0.5, **extra)
    grid = run["density"].dims[-1]
    assert run["cell_volume"].dims == (grid,)
    total = sphere_area(extra.get("dim", 2))
    assert float(run["cell_volume"].sum()) == pytest.approx(total, rel=1e-12)
    masses = (run["density"] * run["cell_volume"]).sum(grid).values
    np.testing.assert_allclose(masses, 1.0, rtol=1e-12)


def test_formation_does_not_depend_on_the_frame_cadence():
    """While the field is tiny the positivity bound allows long steps; the step must still resolve the linear
    growth (``GROWTH_STEP / lambda_max``).  README case (beta = 9, perturbed:1e-4, seed 0) at N = 256 to t = 14: one
    frame or a hundred (steps cut at the frames), the clusters' centres agree to 1e-5 rad (measured 1.1e-6 at the
    default cfl 0.9, 1.2e-7 at 0.5: the steps' own error, 1 % of the grid's).  With the former bound,
    ``cfl / lambda_max``, the single-frame run took steps of ``0.7`` during the growth and its centres were 1e-4 rad
    off the 4096-mode spectral run at every N, against the grid's own 1.1e-4, 2.3e-5, 8.1e-6, 2.3e-6 at
    N = 256 .. 2048 (MATH.md §2.5)."""
    from meanfield.cluster_detection import clusters_in_frame
    from meanfield.solvers.runs.solve import solve

    common = dict(beta=9.0, seed=0, init="perturbed:1e-4", t_final=14.0, resolution=256, scheme="fv")
    one, many = (clusters_in_frame(solve("circle", save_every=every, **common)) for every in (14.0, 0.14))
    assert one.count == many.count == 4
    gap = np.angle(np.exp(1j * (np.sort(one.angles) - np.sort(many.angles))))
    assert np.max(np.abs(gap)) < 1e-5


def test_cluster_centres_at_formation_converge_at_second_order():
    """Issue 34: README case (beta = 9, perturbed:1e-4, seed 0, SA) at t = 14, four clusters just formed; each
    cluster's centre (the maximum of ``K * mu``, :func:`meanfield.clusters_in_frame`) against a 4096-mode spectral
    run.  At most 5e-5 rad at N = 512 (measured 2.3e-5; minmod with the piecewise-constant velocity 3.2e-5, the
    stepping bug of ``cfl / lambda_max`` 1.1e-4) and order >= 1.8 from N = 1024, where a cluster's half-width spans
    about 8 cells (measured 8.1e-6, 2.3e-6, 5.9e-7 at 1024, 2048, 4096: fitted 1.9)."""
    from meanfield.cluster_detection import clusters_in_frame

    common = dict(beta=9.0, seed=0, init="perturbed:1e-4", t_final=14.0, save_every=14.0)
    reference = solve("circle", scheme="spectral", resolution=4096, rtol=1e-10, **common)
    exact = np.sort(clusters_in_frame(reference).angles)
    assert exact.size == 4
    sizes, errors = np.array([512, 1024, 2048, 4096]), []
    for n in sizes:
        centres = np.sort(clusters_in_frame(solve("circle", scheme="fv", resolution=int(n), **common)).angles)
        assert centres.size == 4
        errors.append(np.max(np.abs(np.angle(np.exp(1j * (centres - exact))))))
    assert errors[0] <= 5e-5
    assert -np.polyfit(np.log(sizes[1:]), np.log(errors[1:]), 1)[0] >= 1.8
