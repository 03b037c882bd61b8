"""Initial data specs (--init) on the circle."""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield import InputError
from meanfield.initial import circle_density, dealiased_band, random_fourier_noise
from solvers import solve


def test_uniform_and_von_mises_are_normalised():
    n = 512
    for spec in ("uniform", "vonmises:50@1", "vonmises:4@0+vonmises:4@3.14", "vonmises:0"):
        density = circle_density(spec, n)
        assert np.sum(density) * 2 * math.pi / n == pytest.approx(1.0, abs=1e-13)
    two = circle_density("vonmises:4@0+vonmises:4@3.14", n)
    assert np.allclose(two, 0.5 * (circle_density("vonmises:4@0", n) + circle_density("vonmises:4@3.14", n)))


def test_perturbation_has_unit_rms_and_lives_in_the_band():
    n, eps = 256, 1e-3
    density = circle_density(f"perturbed:{eps}", n, seed=7)
    noise = (2 * math.pi * density - 1) / eps
    assert math.sqrt(np.mean(noise ** 2)) == pytest.approx(1.0, rel=1e-9)
    coeffs = np.abs(np.fft.rfft(noise, norm="forward"))
    assert coeffs[0] < 1e-12 and np.all(coeffs[1:dealiased_band(n) + 1] > 0)
    assert np.max(coeffs[dealiased_band(n) + 1:]) < 1e-11  # round-off / eps


def test_perturbation_is_reproducible_from_the_seed():
    assert np.array_equal(random_fourier_noise(128, 3), random_fourier_noise(128, 3))
    assert not np.allclose(random_fourier_noise(128, 3), random_fourier_noise(128, 4))


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
    ("perturbed:5", "negative somewhere"),
    ("vonmises:400", "not resolved"),
    ("", "--init"),
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
    from meanfield.initial import circle_values, periodic_resample, von_mises

    coarse = circle_density("vonmises:3@2", 32)
    assert np.max(np.abs(periodic_resample(coarse, 0.0, 128)[::4] - coarse)) < 1e-15   # Nyquist term not doubled
    exact = circle_density("vonmises:3@2", 64)
    shifted = 2 * math.pi * np.arange(40) / 40 + 0.3           # an equispaced grid with an offset: spectral
    assert np.max(np.abs(circle_values(shifted, von_mises(shifted, 3, 2), 64) - exact)) < 1e-12
    scattered = np.sort(np.random.default_rng(1).uniform(0, 2 * math.pi, 300))    # otherwise a periodic spline
    assert 1e-9 < np.max(np.abs(circle_values(scattered, von_mises(scattered, 3, 2), 64) - exact)) < 1e-5
