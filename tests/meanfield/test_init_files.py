"""Densities from files (meanfield.initial.files): a density written by numpy (.npy, .txt, .csv) or by xarray (.nc, a
``density`` DataArray on the geometry's coordinates, not a run file) and given as ``--init`` runs bit for bit as the
same array or DataArray given to the API, on every geometry, for the PDE and for particles; bad files are one line."""

import warnings

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.cli import main
from meanfield.errors import InputError

SETTINGS = {"circle": dict(resolution=64, t_final=1.0), "sphere": dict(resolution=15, t_final=0.5),
            "zonal": dict(resolution=16, dim=4, t_final=0.5)}


def _density(geometry: str) -> xr.DataArray:
    """A smooth positive density on the geometry's own grid, with its coordinates."""
    grid = meanfield.solve(geometry, beta=3.0, init="perturbed:1e-3", seed=0,
                           **dict(SETTINGS[geometry], t_final=1e-3))["density"].isel(time=0)
    angle = {"circle": lambda: 2 * grid.theta, "sphere": lambda: np.radians(grid.lat) + 0 * grid.lon,
             "zonal": lambda: grid.polar}[geometry]()
    return (grid * 0 + 1 + 0.2 * np.cos(angle)).rename("density").transpose(*grid.dims)


def _save(values: np.ndarray, path) -> str:
    if path.suffix == ".npy":
        np.save(path, values)
    else:
        np.savetxt(path, values, delimiter="," if path.suffix == ".csv" else " ")
    return str(path)


@pytest.mark.parametrize("suffix", [".npy", ".txt", ".csv"])
@pytest.mark.parametrize("geometry", ["circle", "sphere", "zonal"])
def test_an_array_file_runs_as_the_array(tmp_path, geometry, suffix):
    density = _density(geometry)
    path = _save(density.values, tmp_path / f"rho{suffix}")
    given = meanfield.solve(geometry, beta=3.0, init=density.values, **SETTINGS[geometry])
    read = meanfield.solve(geometry, beta=3.0, init=path, **SETTINGS[geometry])
    assert np.array_equal(read["density"].values, given["density"].values)
    assert read.attrs["init"] == path and f"--init {path}" in read.attrs["command"]


def _write(density: xr.DataArray, path) -> None:
    """netCDF, or Zarr as xarray writes it by default (consolidated metadata, which zarr 3 warns about) or plain."""
    if path.suffix == ".nc":
        density.to_netcdf(path)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        density.to_zarr(path, consolidated="plain" not in path.stem)


@pytest.mark.parametrize("name", ["rho.nc", "rho.zarr", "rho-plain.zarr"])
@pytest.mark.parametrize("geometry", ["circle", "sphere", "zonal"])
def test_a_netcdf_or_zarr_density_runs_as_the_dataarray(tmp_path, geometry, name):
    density = _density(geometry)
    path = tmp_path / name
    _write(density, path)
    given = meanfield.solve(geometry, beta=3.0, init=density, **SETTINGS[geometry])
    read = meanfield.solve(geometry, beta=3.0, init=str(path), **SETTINGS[geometry])
    assert np.array_equal(read["density"].values, given["density"].values)


def test_a_zarr_store_without_a_density_is_one_line(tmp_path):
    _write(xr.DataArray(np.ones(64), dims="theta", name="rho"), tmp_path / "other.zarr")
    (tmp_path / "plain.zarr").write_text("not a store")
    for name, words in (("other.zarr", "holds no density variable"), ("plain.zarr", "a Zarr store is a folder")):
        with pytest.raises(InputError, match=words):
            meanfield.solve("circle", beta=3.0, resolution=64, init=str(tmp_path / name), t_final=0.1)


def test_particles_sample_a_density_file_as_the_array(tmp_path):
    theta = 2 * np.pi * np.arange(256) / 256
    density = (1 + 0.5 * np.cos(2 * theta)) / (2 * np.pi)
    path = _save(density, tmp_path / "rho.npy")
    given = meanfield.simulate_particles(dim=2, n=200, beta=3.0, init=density, seed=1, t_final=0.5)
    read = meanfield.simulate_particles(dim=2, n=200, beta=3.0, init=path, seed=1, t_final=0.5)
    assert np.array_equal(read["positions"].values, given["positions"].values)


def test_the_command_line_reads_a_density_file(tmp_path):
    path = _save(_density("circle").values, tmp_path / "rho.csv")
    assert main(["solve", "circle", "--beta", "3", "--resolution", "64", "--init", path, "--t-final", "0.5",
                 "--out", str(tmp_path / "run.nc")]) == 0


def test_bad_density_files_are_one_line(tmp_path):
    (tmp_path / "words.txt").write_text("one two\n")
    np.save(tmp_path / "strings.npy", np.array(["a", "b"]))
    np.save(tmp_path / "wrong.npy", np.ones(10))
    for name, words in (("missing.npy", "no such file"), ("words.txt", "not a readable density file"),
                        ("strings.npy", "real numbers on the grid are needed"), ("wrong.npy", r"expected shape \(64,\)")):
        with pytest.raises(InputError, match=words):
            meanfield.solve("circle", beta=3.0, resolution=64, init=str(tmp_path / name), t_final=0.1)
