"""Bit-for-bit repeats (issue 12, item 2): the same run twice gives identical bytes.

Every geometry and scheme runs twice in this process and every data variable (and
coordinate) is compared on its raw bytes, NaN positions included.  The circle schemes
also run in two separate processes: FFTW plans are the one source of run-to-run
differences found (``meanfield.solvers.bases.fourier``), and a plan chosen by timing (FFTW_MEASURE)
can differ between processes while a process reuses its own plans (its wisdom).
"""

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.solvers.bases.fourier import FourierBasis
from meanfield.solvers.runs.particle_run import simulate

#: Small runs that still move: the circle fv and Lagrangian ones pass cluster formation (t ~ 10 at beta = 9).
#: The coarse spectral grids (N = 64, L = 16) start from perturbed:1e-5: the default start's quadratic
#: products (degrees up to 32, MATH.md §2.4) would fill their monitored tail at once.
SOLVE_CASES = {
    "circle-spectral": dict(geometry="circle", beta=9.0, resolution=64, init="perturbed:1e-5", t_final=12.0,
                            save_every=2.0),
    "circle-fv": dict(geometry="circle", scheme="fv", beta=9.0, resolution=64, t_final=12.0, save_every=2.0),
    "circle-lagrangian": dict(geometry="circle", scheme="lagrangian", beta=9.0, resolution=64, t_final=12.0,
                              save_every=2.0),
    "sphere-spectral": dict(geometry="sphere", beta=4.0, resolution=15, t_final=4.0, save_every=1.0),
    "sphere-lagrangian": dict(geometry="sphere", scheme="lagrangian", beta=4.0, resolution=11, t_final=2.0,
                              save_every=1.0),
    "zonal-galerkin": dict(geometry="zonal", beta=4.0, resolution=16, init="perturbed:1e-5", t_final=12.0,
                           save_every=2.0),
    "zonal-fv": dict(geometry="zonal", scheme="fv", beta=4.0, resolution=16, t_final=12.0, save_every=2.0),
}
PARTICLE_CASES = {
    "particles-d2": dict(dim=2, n=48, beta=4.0, t_final=8.0, save_every=2.0),
    "particles-d3": dict(dim=3, n=48, beta=4.0, t_final=8.0, save_every=2.0),
    "particles-d2-noise": dict(dim=2, n=48, beta=4.0, nu=0.1, t_final=0.5, save_every=0.25),
    "particles-d3-noise": dict(dim=3, n=48, beta=4.0, nu=0.1, t_final=0.5, save_every=0.25, qkv="random"),
}

#: Circle runs of the two-process test: grids whose timed (FFTW_MEASURE) plans varied most
#: from one planning to the next here (mixed radix: several algorithms of near-equal speed).
CIRCLE_RUNS = [("spectral", n) for n in (160, 240, 320, 400, 576, 720, 960)] + \
    [(scheme, n) for scheme in ("fv", "lagrangian") for n in (160, 240)]
#: Runs :data:`CIRCLE_RUNS` in a fresh process; one netCDF file per run into argv[1].
CIRCLE_SCRIPT = f"""
import sys
import meanfield
for scheme, n in {CIRCLE_RUNS!r}:
    run = meanfield.solve("circle", scheme=scheme, beta=9.0, resolution=n, t_final=0.5, save_every=0.25)
    run.to_netcdf(f"{{sys.argv[1]}}/{{scheme}}-{{n}}.nc")
"""


def differing_variables(a: xr.Dataset, b: xr.Dataset) -> list[str]:
    """Names of the data variables and coordinates whose raw bytes (or shape, dtype) differ."""
    assert sorted(a.variables) == sorted(b.variables)
    return [name for name in a.variables
            if a[name].dtype != b[name].dtype or a[name].shape != b[name].shape
            or a[name].values.tobytes() != b[name].values.tobytes()]


def assert_identical(a: xr.Dataset, b: xr.Dataset):
    assert a.attrs["stop_reason"] == b.attrs["stop_reason"]
    assert differing_variables(a, b) == []


@pytest.mark.parametrize("case", SOLVE_CASES)
def test_solve_twice_gives_identical_bytes(case):
    first, second = (meanfield.solve(**SOLVE_CASES[case]) for _ in range(2))
    assert_identical(first, second)
    assert first.sizes["time"] >= 3       # the run moved past its first frames


@pytest.mark.parametrize("case", PARTICLE_CASES)
def test_particles_twice_give_identical_bytes(case):
    first, second = (simulate(**PARTICLE_CASES[case]) for _ in range(2))
    assert_identical(first, second)
    positions = first["positions"].values
    assert np.max(np.abs(positions[-1] - positions[0])) > 1e-3   # tokens moved


@pytest.mark.parametrize("n", [240, 256])
def test_reproducible_plans_ignore_wisdom_measured_in_the_process(n):
    """An FFTW_ESTIMATE plan made after an FFTW_MEASURE plan of the same size would reuse the
    measured algorithm (FFTW wisdom); ``FourierBasis`` sets the wisdom aside while planning."""
    pyfftw = pytest.importorskip("pyfftw")
    grid = np.cos(np.linspace(0.0, 7.0, n)) ** 3 + 0.3

    def transformed(basis):
        coefficients = basis.to_coeffs(grid)
        return coefficients.tobytes() + basis.to_grid(coefficients).tobytes()

    def wisdom():  # FFTW's entries (their order in the export is its hash table's)
        return [sorted(text.splitlines()) for text in pyfftw.export_wisdom()]

    fresh = transformed(FourierBasis(n, "pyfftw"))
    measured = transformed(FourierBasis(n, "pyfftw", planning="measure"))
    before = wisdom()
    assert transformed(FourierBasis(n, "pyfftw")) == fresh
    assert wisdom() == before                         # the process's wisdom is put back
    assert len(measured) == len(fresh)


def test_planning_must_be_estimate_or_measure():
    with pytest.raises(ValueError, match="planning"):
        FourierBasis(64, planning="patient")


def test_byte_comparison_sees_a_last_bit_change():
    run = meanfield.solve(**SOLVE_CASES["circle-spectral"])
    changed = run.copy(deep=True)
    changed["density"].values[1, 3] = np.nextafter(changed["density"].values[1, 3], 1.0)
    assert differing_variables(run, changed) == ["density"]


def test_circle_runs_in_two_processes_give_identical_bytes(tmp_path):
    folders = [tmp_path / "first", tmp_path / "second"]
    for folder in folders:
        folder.mkdir()
    # at the same time: half the wall time, and each process's timings disturbed by the other
    processes = [subprocess.Popen([sys.executable, "-c", CIRCLE_SCRIPT, str(folder)]) for folder in folders]
    assert [process.wait(timeout=120) for process in processes] == [0, 0]
    names = sorted(path.name for path in folders[0].iterdir())
    assert len(names) == len(CIRCLE_RUNS) and names == sorted(path.name for path in folders[1].iterdir())
    differing = {}
    for name in names:
        with xr.open_dataset(folders[0] / name) as a, xr.open_dataset(folders[1] / name) as b:
            a, b = a.load(), b.load()
            assert a.sizes["time"] == 3
            differing[name] = differing_variables(a, b)
    assert differing == dict.fromkeys(names, [])
