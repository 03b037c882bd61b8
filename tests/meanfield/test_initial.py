"""Initial data specs (--init) on the circle."""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield import InputError
from meanfield.fourier_series import dealiased_band
from meanfield.initial.circle import circle_density
from meanfield.solvers.runs.solve import solve


def test_uniform_and_von_mises_are_normalised():
    n = 512
    for spec in ("uniform", "vonmises:50@1", "vonmises:4@0+vonmises:4@3.14", "vonmises:0"):
        density = circle_density(spec, n)
        assert np.sum(density) * 2 * math.pi / n == pytest.approx(1.0, abs=1e-13)
    two = circle_density("vonmises:4@0+vonmises:4@3.14", n)
    assert np.allclose(two, 0.5 * (circle_density("vonmises:4@0", n) + circle_density("vonmises:4@3.14", n)))


def test_perturbation_is_the_documented_series_in_modes_1_to_16():
    """MATH.md §2.4: 2 pi rho_hat_k = EPS (a_k - i b_k) / sqrt 2, (a_1, b_1, a_2, ...) = default_rng(seed) normals."""
    n, eps = 256, 1e-3
    coeffs = np.fft.rfft(2 * math.pi * circle_density(f"perturbed:{eps}", n, seed=7), norm="forward")
    a, b = np.random.default_rng(7).standard_normal(32).reshape(16, 2).T
    assert coeffs[0] == pytest.approx(1.0, abs=1e-15)
    assert np.max(np.abs(coeffs[1:17] - eps * (a - 1j * b) / math.sqrt(2))) < 1e-16
    assert np.max(np.abs(coeffs[17:])) < 1e-16
    # a grid too coarse for the band keeps its modes 1..(N-1)//3 of the same series
    coarse = np.fft.rfft(2 * math.pi * circle_density(f"perturbed:{eps}", 32, seed=7), norm="forward")
    assert dealiased_band(32) == 10 and np.max(np.abs(coarse[1:11] - coeffs[1:11])) < 1e-16
    assert np.max(np.abs(coarse[11:])) < 1e-16


def test_perturbation_is_reproducible_from_the_seed():
    assert np.array_equal(circle_density("perturbed:0.01", 128, 3), circle_density("perturbed:0.01", 128, 3))
    assert not np.allclose(circle_density("perturbed:0.01", 128, 3), circle_density("perturbed:0.01", 128, 4))


def test_restart_from_a_file_resamples_spectrally(tmp_path):
    run = solve("circle", beta=4.0, resolution=64, init="vonmises:2@1", t_final=0.5, save_every=0.5)
    path = tmp_path / "run.nc"
    run.to_netcdf(path)
    last = run["density"].values[-1]
    assert np.allclose(circle_density(str(path), 64), last, atol=1e-15)
    fine = circle_density(str(path), 256)
    assert np.allclose(fine[::4], last, atol=1e-14)


@pytest.mark.parametrize("spec, words", [
    ("gaussian", "unknown initial condition"),
    ("perturbed:abc", "perturbed:EPS must be a number"),
    ("vonmises:-1", "KAPPA >= 0"),
    ("perturbed:5", r"perturbed:EPS needs EPS in \[0, 0\.08231\) for seed 0"),
    ("vonmises:400", "not resolved"),
    ("", "init"),
    ("missing.nc", "no such file"),
])
def test_bad_specs_are_refused(spec, words):
    with pytest.raises(InputError, match=words):
        circle_density(spec, 64, seed=0)


def test_corrupt_and_foreign_files_are_refused(tmp_path):
    corrupt = tmp_path / "corrupt.nc"
    corrupt.write_bytes(b"this is not netCDF")
    with pytest.raises(InputError, match="not a readable netCDF"):
        circle_density(str(corrupt), 64)
    foreign = tmp_path / "foreign.nc"
    xr.Dataset({"x": ("time", np.arange(3.0))}).to_netcdf(foreign)
    with pytest.raises(InputError, match="not a meanfield run"):
        circle_density(str(foreign), 64)
    sphere = tmp_path / "sphere.nc"
    xr.Dataset({"x": ("time", np.arange(3.0))}, attrs={"geometry": "sphere", "stop_reason": "completed"}
               ).to_netcdf(sphere)
    with pytest.raises(InputError, match="a sphere run"):
        circle_density(str(sphere), 64)


def test_periodic_resampling_keeps_the_old_points_and_follows_an_offset():
    from meanfield.initial.circle import circle_values, periodic_resample, von_mises

    coarse = circle_density("vonmises:3@2", 32)
    assert np.max(np.abs(periodic_resample(coarse, 0.0, 128)[::4] - coarse)) < 1e-15   # Nyquist term not doubled
    exact = circle_density("vonmises:3@2", 64)
    shifted = 2 * math.pi * np.arange(40) / 40 + 0.3           # an equispaced grid with an offset: spectral
    assert np.max(np.abs(circle_values(shifted, von_mises(shifted, 3, 2), 64) - exact)) < 1e-12
    scattered = np.sort(np.random.default_rng(1).uniform(0, 2 * math.pi, 300))    # otherwise a periodic spline
    assert 1e-9 < np.max(np.abs(circle_values(scattered, von_mises(scattered, 3, 2), 64) - exact)) < 1e-5
