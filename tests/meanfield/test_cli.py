"""The command line: JSON theory, solve -> file -> plot, reproducibility, one-line errors."""

import json
import shlex
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from meanfield import Model, growth_rates
from meanfield.cli import main
from meanfield.storage import REQUIRED_ATTRS


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_theory_json(capsys):
    code, out, _ = run_cli(capsys, "theory", "--dim", 3, "--attention", "usa", "--beta", 4, "--nu", 0.01,
                           "--modes", 5, "--json")
    assert code == 0
    result = json.loads(out)
    assert set(result) == {"dim", "attention", "beta", "nu", "modes", "growth_rates", "dominant_mode"}
    assert result["modes"] == [1, 2, 3, 4, 5]
    assert np.allclose(result["growth_rates"], growth_rates(Model("usa", 4.0, 0.01, 3), np.arange(1, 6)),
                       rtol=1e-15)


def test_theory_table_marks_the_dominant_mode(capsys):
    code, out, _ = run_cli(capsys, "theory", "--beta", 9, "--eps", 1e-4)
    assert code == 0 and "dominant mode: 4" in out and "formation time" in out


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    out = folder / "run.nc"
    code = main(["solve", "circle", "--attention", "sa", "--beta", "4", "--resolution", "64",
                 "--init", "perturbed:1e-3", "--seed", "5", "--t-final", "2", "--save-every", "0.5",
                 "--out", str(out), "--no-progress"])
    assert code == 0
    return out


def test_solve_writes_the_design_dataset(solved):
    with xr.open_dataset(solved) as ds:
        assert ds["density"].dims == ("time", "theta") and ds.sizes["theta"] == 64
        assert ds["mode_amplitude"].dims == ("time", "mode") and ds.sizes["mode"] == 33
        assert np.allclose(ds["time"].values, [0, 0.5, 1, 1.5, 2])
        for name in REQUIRED_ATTRS:
            assert name in ds.attrs, name
        assert ds.attrs["stop_reason"] == "completed" and ds.attrs["seed"] == 5


def test_a_run_is_reproducible_from_its_file(solved, tmp_path):
    with xr.open_dataset(solved) as ds:
        command, first = ds.attrs["command"], ds["density"].values
    again = tmp_path / "again.nc"
    assert main(shlex.split(command)[1:] + ["--out", str(again), "--no-progress"]) == 0
    with xr.open_dataset(again) as ds:
        assert np.array_equal(ds["density"].values, first)


def test_plot_from_the_command_line(solved, tmp_path, capsys):
    image = tmp_path / "fig.png"
    code, out, _ = run_cli(capsys, "plot", solved, "-o", image)
    assert code == 0 and image.stat().st_size > 20_000


BAD = [
    (["theory", "--beta", "-1"], "--beta must be >= 0"),
    (["theory", "--beta", "1", "--nu", "-0.5"], "--nu must be >= 0"),
    (["theory", "--beta", "x"], "--beta"),
    (["solve", "circle", "--beta", "-2", "--t-final", "1"], "--beta"),
    (["solve", "circle", "--beta", "9", "--resolution", "8", "--t-final", "1"], "--resolution"),
    (["solve", "circle", "--beta", "9", "--resolution", "63", "--t-final", "1"], "--resolution"),
    (["solve", "circle", "--beta", "1", "--init", "cauchy:1", "--t-final", "1"], "unknown initial condition"),
    (["solve", "circle", "--beta", "1", "--t-final", "-1"], "--t-final"),
    (["solve", "circle", "--beta", "1", "--t-final", "1", "--stepper", "euler"], "--stepper"),
    (["solve", "circle", "--beta", "1", "--t-final", "1", "--dim", "3"], "--dim"),
    (["solve", "circle", "--beta", "1", "--t-final", "1", "--seed", "-3"], "--seed"),
    (["plot", "missing.nc"], "no such file"),
    (["solve", "circle", "--scheme", "lagrangian", "--beta", "4", "--t-final", "1", "--collapse-tol", "-1"],
     "--collapse-tol must be a distance in [0, 0.1)"),
    (["solve", "circle", "--scheme", "lagrangian", "--beta", "4", "--t-final", "1", "--collapse-tol", "nan"],
     "--collapse-tol"),
    (["solve", "circle", "--scheme", "fv", "--beta", "4", "--t-final", "1", "--collapse-tol", "1e-12"],
     "--collapse-tol applies to --scheme lagrangian only"),
    (["solve", "circle", "--scheme", "lagrangian", "--beta", "4", "--t-final", "1", "--save-log", "0"],
     "--save-log (frames per decade) must be an integer in [1, 1000]"),
    (["solve", "circle", "--beta", "4", "--t-final", "1", "--save-log", "5", "--save-every", "0.1"],
     "--save-every or --save-log, not both"),
    (["particles", "--n", "8", "--beta", "1", "--nu", "0.1", "--t-final", "1", "--collapse-tol", "1e-12"],
     "--collapse-tol needs --nu 0"),
    (["particles", "--n", "8", "--beta", "1", "--t-final", "1", "--save-log", "0"], "--save-log"),
    (["particles", "--n", "8", "--beta", "1", "--t-final", "1", "--collapse-tol", "inf"], "--collapse-tol"),
]


@pytest.mark.parametrize("args, words", BAD)
def test_bad_input_is_one_line_and_exit_2(args, words, capsys, tmp_path):
    code, out, err = run_cli(capsys, *args, *(["--out", tmp_path / "x.nc"] if args[0] in ("solve", "particles") else []))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("meanfield: error:") and words in err
    assert not (tmp_path / "x.nc").exists()


def test_corrupt_and_foreign_files(capsys, tmp_path):
    corrupt = tmp_path / "bad.nc"
    corrupt.write_text("garbage")
    foreign = tmp_path / "foreign.nc"
    xr.Dataset({"a": ("x", [1.0])}).to_netcdf(foreign)
    for path, words in ((corrupt, "not a readable netCDF"), (foreign, "not a meanfield run")):
        for args in (["plot", path], ["solve", "circle", "--beta", "1", "--t-final", "1", "--init", path,
                                      "--out", tmp_path / "y.nc"]):
            code, _, err = run_cli(capsys, *args)
            assert code == 2 and words in err and err.count("\n") == 1


def test_console_script_has_no_traceback_for_user_mistakes():
    result = subprocess.run([sys.executable, "-m", "meanfield.cli", "solve", "circle", "--beta", "-1",
                             "--t-final", "1"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0


def test_every_subcommand_has_help_with_an_example(capsys):
    for args in (["theory"], ["solve", "circle"], ["plot"], ["demo"], ["validate", "bench-circle"],
                 ["validate", "growth-circle"], ["validate", "bench-particles"], ["particles"],
                 ["validate", "mean-field"], ["validate", "cluster-formation"], ["sweep", "phase-diagram"],
                 ["solve", "zonal"], ["solve", "sphere"], ["validate", "bench-sphere"], ["gaussian"],
                 ["validate", "gaussian"], ["validate", "castin-figures"]):
        code, out, _ = run_cli(capsys, *args, "--help")
        assert code == 0 and "Example:" in out and "meanfield" in out


def test_version(capsys):
    from meanfield import __version__
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and __version__ in out


def test_sweep_quick_from_the_command_line(tmp_path, capsys):
    store = tmp_path / "store"
    args = ["sweep", "phase-diagram", "--quick", "--scheduler", "synchronous", "--store", store, "--no-progress"]
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "computed 6 chunks, reused 0" in out
    assert (store / "phase_diagram.nc").exists() and (store / "phase_diagram.png").stat().st_size > 20_000
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "computed 0 chunks, reused 6" in out
    code, _, err = run_cli(capsys, "sweep", "phase-diagram", "--dims", "2,x", "--store", store)
    assert code == 2 and "--dims" in err


def test_solve_zonal_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "zonal.nc"
    code, text, _ = run_cli(capsys, "solve", "zonal", "--dim", 4, "--beta", 4, "--resolution", 32,
                            "--init", "vmf:2+perturbed:1e-3", "--t-final", 1, "--save-every", 0.5, "--out", out,
                            "--no-progress")
    assert code == 0 and "stop_reason: completed" in text
    with xr.open_dataset(out) as ds:
        assert ds["density"].dims == ("time", "polar") and ds.attrs["dim"] == 4 and ds.attrs["geometry"] == "zonal"
        assert np.max(np.abs(ds["mass"].values - 1)) < 1e-12
    code, _, err = run_cli(capsys, "solve", "zonal", "--dim", 2, "--beta", 4, "--t-final", 1, "--out", out)
    assert code == 2 and "--dim" in err


def test_solve_sphere_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "sphere.nc"
    code, text, _ = run_cli(capsys, "solve", "sphere", "--beta", 4, "--resolution", 12, "--init",
                            "vmf:3@45,30+perturbed:1e-3", "--t-final", 0.5, "--save-every", 0.25, "--out", out,
                            "--no-progress")
    assert code == 0 and "stop_reason: completed" in text
    with xr.open_dataset(out) as ds:
        assert ds["density"].dims == ("time", "lat", "lon") and ds.attrs["geometry"] == "sphere"
        assert ds["mode_amplitude"].sizes["mode"] == 13
        assert np.max(np.abs(ds["mass"].values - 1)) < 1e-12
    code, _, err = run_cli(capsys, "solve", "sphere", "--beta", 4, "--init", "vmf:3@95,0", "--t-final", 1,
                           "--out", out)
    assert code == 2 and "--init" in err and err.count("\n") == 1


def test_gaussian_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "g.nc"
    code, text, _ = run_cli(capsys, "gaussian", "--dim", 3, "--case", "identity", "--t-final", 1, "--out", out)
    assert code == 0 and "stop_reason: blowup" in text
    with xr.open_dataset(out) as ds:
        sigma0 = ds["covariance"].values[0]
        assert float(ds.attrs["blowup_time"]) == pytest.approx(1 / (2 * np.linalg.eigvalsh(sigma0)[-1]), abs=1e-6)
        assert ds["covariance"].dims == ("time", "i", "j")
    code, text, _ = run_cli(capsys, "plot", out, "-o", tmp_path / "g.png")
    assert code == 0 and (tmp_path / "g.png").stat().st_size > 20_000
    code, _, err = run_cli(capsys, "gaussian", "--dim", 0, "--t-final", 1, "--out", out)
    assert code == 2 and "--dim" in err
