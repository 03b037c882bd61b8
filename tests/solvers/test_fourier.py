"""The Fourier basis owns its transforms: normalisation and backends (MATH.md §2.1)."""

import math

import numpy as np
import pytest

from meanfield.solvers.bases.fourier import FourierBasis


@pytest.mark.parametrize("backend", ["pyfftw", "scipy"])
def test_round_trip_and_normalisation(backend, rng):
    basis = FourierBasis(64, backend=backend)
    grid = rng.standard_normal(64)
    coeffs = basis.to_coeffs(grid)
    assert np.allclose(basis.to_grid(coeffs), grid, atol=1e-14)
    assert coeffs[0].real == pytest.approx(basis.integrate(grid) / (2 * math.pi), rel=1e-13)
    wave = np.cos(3 * basis.theta)
    assert np.allclose(basis.to_coeffs(wave)[3], 0.5, atol=1e-15)


def test_backends_agree(rng):
    grid = rng.standard_normal(96)
    a, b = FourierBasis(96, "pyfftw"), FourierBasis(96, "scipy")
    assert np.allclose(a.to_coeffs(grid), b.to_coeffs(grid), atol=1e-15)


def test_resample_keeps_a_band_limited_function():
    coarse, fine = FourierBasis(32), FourierBasis(128)
    f = lambda t: 1 + 0.3 * np.cos(2 * t) - 0.2 * np.sin(5 * t)
    coeffs = fine.resample(coarse.to_coeffs(f(coarse.theta)), 128)
    assert np.allclose(fine.to_grid(coeffs), f(fine.theta), atol=1e-14)


@pytest.mark.parametrize("backend", ["pyfftw", "scipy"])
def test_synthesise_all_fills_every_slot_as_to_grid_does(backend, rng):
    basis, reference = FourierBasis(48, backend=backend, slots=3), FourierBasis(48, backend=backend)
    coeffs = rng.standard_normal((3, 25)) + 1j * rng.standard_normal((3, 25))
    coeffs[:, 0] = coeffs[:, 0].real
    coeffs[:, -1] = coeffs[:, -1].real
    for slot in range(basis.slots):
        basis.synthesis_input(slot)[:] = coeffs[slot]
    basis.synthesise_all()
    for slot in range(3):
        assert np.array_equal(basis.synthesis_output(slot), reference.to_grid(coeffs[slot]))
        assert basis.synthesise(slot) is basis.synthesis_output(slot)   # the buffer synthesise fills
    assert basis.slots == 3 and basis.synthesis_output(0) is not basis.synthesis_output(1)
