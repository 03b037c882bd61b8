"""``meanfield compare A.nc B.nc``: the distance between two runs at their common times (meanfield.run_comparison)."""

import json
import math

import numpy as np
import pytest
import xarray as xr

from meanfield.analysis import (CircleMeasure, negative_sobolev_norm, sphere_frame_coefficients,
                                sphere_point_coefficients, wasserstein1_circle, wasserstein1_circle_between)
from meanfield.app.storage import load_run, save_run
from meanfield.cli import compare, main
from meanfield.errors import InputError
from meanfield.run_comparison import METRICS, common_times, compare_runs
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.solve import solve

from .error_lines import one_error_line

INIT = "vonmises:1@0+vonmises:1@3"
SPHERE_INIT = "vmf:1@45,0+vmf:1@-30,150"


@pytest.fixture(scope="module")
def circle_runs(tmp_path_factory):
    """4000 i.i.d. tokens (SA, beta 4, saved every 0.25) and the spectral PDE from the same law (saved every 0.5)."""
    folder = tmp_path_factory.mktemp("compare")
    particles = simulate(dim=2, n=4000, attention="sa", beta=4.0, init=INIT, seed=1, sampling="iid", t_final=1.0,
                         save_every=0.25)
    pde = solve("circle", attention="sa", beta=4.0, resolution=128, init=INIT, t_final=1.0, save_every=0.5)
    save_run(particles, folder / "particles.nc")
    save_run(pde, folder / "pde.nc")
    return folder


@pytest.fixture(scope="module")
def sphere_runs(tmp_path_factory):
    """The spectral S^2 PDE at lmax 15 and 1000 i.i.d. tokens drawn from its first frame."""
    folder = tmp_path_factory.mktemp("compare_sphere")
    pde = solve("sphere", beta=4.0, resolution=15, init=SPHERE_INIT, t_final=1.0, save_every=0.5)
    particles = simulate(dim=3, n=1000, beta=4.0, init=pde["density"].isel(time=0), seed=2, t_final=1.0,
                         save_every=0.25)
    save_run(particles, folder / "particles.nc")
    save_run(pde, folder / "pde.nc")
    return folder


def _cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_particles_against_the_pde_give_analysis_w1_to_the_bit_and_a_figure(capsys, circle_runs):
    """At every common time (0, 0.5, 1: the PDE saved half as often) the command's W1 is exactly
    meanfield.analysis.wasserstein1_circle of the file's tokens and density (JSON floats round-trip exactly)."""
    figure = circle_runs / "w1.png"
    code, out, _ = _cli(capsys, "compare", circle_runs / "particles.nc", circle_runs / "pde.nc", "--json",
                        "--plot", figure)
    assert code == 0
    record = json.loads(out)
    particles, pde = load_run(circle_runs / "particles.nc"), load_run(circle_runs / "pde.nc")
    assert record["time"] == [0.0, 0.5, 1.0] and record["metric"] == "w1"
    direct = [wasserstein1_circle(particles["theta"].sel(time=t).values, particles["weights"].values,
                                  pde["density"].sel(time=t).values) for t in record["time"]]
    assert record["distance"] == direct
    assert 0.01 < direct[0] < 0.1                   # ~ n^-1/2 for i.i.d. tokens (MATH.md §4), not 0
    assert record["descriptions"] == ["particles, n = 4000, iid, seed 1", "spectral, resolution 128"]
    assert figure.stat().st_size > 20_000 and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_table_and_the_default_figure_beside_the_first_run(capsys, circle_runs):
    code, out, _ = _cli(capsys, "compare", circle_runs / "pde.nc", circle_runs / "particles.nc")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("W1 distance") and "A: " in lines[1] and "spectral, resolution 128" in lines[1]
    assert lines[3] == "at 3 common times:"
    assert (circle_runs / "pde_vs_particles.png").stat().st_size > 20_000
    assert lines[-1] == f"wrote {circle_runs / 'pde_vs_particles.png'}"


def test_the_order_of_the_runs_does_not_change_w1(circle_runs):
    """compare_runs(pde, particles) = compare_runs(particles, pde) bit for bit (the tokens are read first), with the
    attributes the Dataset promises."""
    forward = compare_runs(circle_runs / "particles.nc", circle_runs / "pde.nc")
    backward = compare_runs(circle_runs / "pde.nc", circle_runs / "particles.nc")
    assert np.array_equal(forward["distance"].values, backward["distance"].values)
    assert forward.attrs["metric"] == forward["distance"].attrs["metric"] == "w1"
    assert forward.attrs["first_file"].endswith("particles.nc") and forward.attrs["second_file"].endswith("pde.nc")
    assert "s" not in forward.attrs


def test_a_sphere_particle_run_against_its_pde_gives_analysis_h_minus_s(capsys, sphere_runs):
    code, out, _ = _cli(capsys, "compare", sphere_runs / "particles.nc", sphere_runs / "pde.nc", "--s", 1.5,
                        "--json", "--no-plot")
    assert code == 0
    record = json.loads(out)
    assert (record["metric"], record["s"], record["lmax"], record["figure"]) == ("sobolev", 1.5, 15, None)
    particles, pde = load_run(sphere_runs / "particles.nc"), load_run(sphere_runs / "pde.nc")
    assert record["time"] == [0.0, 0.5, 1.0]
    direct = [negative_sobolev_norm(sphere_point_coefficients(particles["positions"].sel(time=t).values,
                                                              particles["weights"].values, 15),
                                    sphere_frame_coefficients(pde, index, 15), 1.5)
              for index, t in enumerate(record["time"])]
    assert record["distance"] == direct
    assert not list(sphere_runs.glob("*.png"))


def test_w1_between_densities_and_between_mixtures():
    """Two von Mises bumps shifted by 0.3: W1 = 0.3; half an atom at 0 and half the uniform law against the uniform
    law: half of W1(delta, uniform) = pi / 2; two atoms a half-turn apart: pi (MATH.md §4)."""
    from meanfield.initial.circle import circle_density

    shifted = wasserstein1_circle_between(CircleMeasure(density=circle_density("vonmises:100@1", 1024)),
                                          CircleMeasure(density=circle_density("vonmises:100@1.3", 1024)))
    assert abs(shifted - 0.3) < 1e-12
    uniform = np.ones(64)
    mixture = CircleMeasure([0.0], [2 * math.pi], density=uniform)          # the atom holds half the mass
    assert abs(wasserstein1_circle_between(mixture, CircleMeasure(density=uniform)) - math.pi / 4) < 1e-12
    assert abs(wasserstein1_circle_between(CircleMeasure([0.5], [1.0]), CircleMeasure([0.5 + math.pi], [3.0]))
               - math.pi) < 1e-14


def test_common_times_match_to_the_tolerance():
    first, second = [0.0, 0.5, 1.0, 1.5], [0.5 + 1e-12, 1.0 + 1e-6, 1.5, 7.0]
    assert [list(index) for index in common_times(first, second)] == [[1, 3], [0, 2]]


def _shifted(path, out, offset):
    run = load_run(path)
    save_run(run.assign_coords(time=run["time"].values + offset), out)
    return out


def test_refusals_are_one_line_naming_the_argument(capsys, circle_runs, sphere_runs, tmp_path):
    particles, pde = circle_runs / "particles.nc", circle_runs / "pde.nc"
    later = _shifted(pde, tmp_path / "later.nc", 100.0)
    np.save(tmp_path / "density.npy", np.ones(8))
    xr.Dataset({"density": ("theta", np.ones(8))}).to_netcdf(tmp_path / "data.nc")
    cases = [((particles, sphere_runs / "pde.nc"), "a sphere run on S^2 (dim 3): compare runs of one geometry"),
             ((particles, later), "share no saved time"),
             ((particles, tmp_path / "density.npy"), "density.npy: not a readable netCDF file"),
             ((tmp_path / "data.nc", pde), "data.nc: not a meanfield run file"),
             ((sphere_runs / "particles.nc", sphere_runs / "pde.nc", "--metric", "w1"), "--metric w1 is computed on"),
             ((sphere_runs / "particles.nc", sphere_runs / "pde.nc", "--lmax", 16), "--lmax must be <= 15"),
             ((particles, pde, "--s", 2), "--s and --lmax belong to --metric sobolev"),
             ((particles, pde, "--metric", "sobolev", "--s", -1), "--s must be a finite number in [0, 100]")]
    for args, words in cases:
        code = main(["compare", *map(str, args), "--no-plot"])
        assert code == 2, args
        assert words in one_error_line(capsys), args
    assert not list(tmp_path.glob("*.png")) and not list(circle_runs.glob("particles_vs_*"))


def test_python_errors_name_the_arguments(circle_runs):
    with pytest.raises(InputError, match=r"^metric must be one of w1, sobolev"):
        compare_runs(circle_runs / "particles.nc", circle_runs / "pde.nc", metric="w2")


def test_the_command_offers_the_library_metrics():
    option = next(param for param in compare.params if param.name == "metric")
    assert tuple(option.type.choices) == METRICS
    help_text = next(param for param in compare.params if param.name == "s").help
    from meanfield.analysis import SOBOLEV_S
    assert f"[default: {SOBOLEV_S:g}]" in help_text


def test_tokens_against_a_zonal_run_compare_zonal_parts():
    """Tokens on S^4 against a zonal Galerkin run of the same dim: the H^-2 norm of the tokens' zonal coefficients
    (pole on the last axis) minus the run's exact ones, as meanfield.analysis computes them, to the bit."""
    from meanfield.analysis import zonal_frame_coefficients, zonal_negative_sobolev_norm, zonal_point_coefficients

    pde = solve("zonal", dim=5, beta=2.0, resolution=16, init="vmf:2", t_final=0.5, save_every=0.25)
    tokens = simulate(dim=5, n=300, beta=2.0, init="uniform", seed=3, t_final=0.5, save_every=0.5)
    comparison = compare_runs(tokens, pde)
    assert comparison["time"].values.tolist() == [0.0, 0.5] and comparison.attrs["lmax"] == 16
    assert "zonal part" in comparison.attrs["note"]
    direct = [zonal_negative_sobolev_norm(zonal_point_coefficients(tokens["positions"].values[i],
                                                                   tokens["weights"].values, 5, 16),
                                          zonal_frame_coefficients(pde, j), 5) for i, j in ((0, 0), (1, 2))]
    assert comparison["distance"].values.tolist() == direct


def test_a_finite_volume_frame_counts_its_point_clusters_once():
    """The recorded fv density holds each handed-over point's mass in its cell (MATH.md §5): the compared measure is
    the grid without them plus the points, of mass 1 (mode 0 = 1 / 2 pi on the circle, g_0 that of mass 1 zonal); counting the
    points on top of the density would give 1 + their mass.  Against the same run the distance is 0."""
    from meanfield.analysis import zonal_point_coefficients
    from meanfield.geometries import geometry_of
    from meanfield.run_comparison import frames_of

    circle = solve("circle", scheme="fv", attention="sa", beta=9.0, resolution=128, init="perturbed:1e-4", seed=0,
                   t_final=16.0, save_every=2.0)
    zonal = solve("zonal", scheme="fv", attention="sa", beta=4.0, dim=5, resolution=64, init="perturbed:1e-2",
                  seed=0, t_final=30.0, save_every=5.0)
    unit_mass = zonal_point_coefficients(np.array([0.0]), np.array([1.0]), 5, 4)[0]       # g_0 of mass 1
    for run, name, dim, scale in ((circle, "circle", 2, 1 / (2 * math.pi)), (zonal, "zonal", 5, unit_mass)):
        points = np.nansum(run["point_mass"].values[-1])
        assert 0 < points < 1                                   # points and grid both hold mass at the last frame
        frames = frames_of(run, name, geometry_of(name), dim)
        assert frames.coefficients(run.sizes["time"] - 1, 4)[0] == pytest.approx(scale, rel=1e-12)
    assert float(compare_runs(circle, circle, metric="w1")["distance"].max()) == 0.0
