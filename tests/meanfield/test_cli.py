"""The command line: JSON theory, solve -> file -> plot, reproducibility, one-line errors."""

import json
import shlex
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from meanfield import InputError, Model, dominance_probabilities, formation_time, growth_rates
from meanfield.cli import main
from meanfield.app.storage import REQUIRED_ATTRS


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_theory_json(capsys):
    code, out, _ = run_cli(capsys, "theory", "--dim", 3, "--attention", "usa", "--beta", 4, "--nu", 0.01,
                           "--modes", 5, "--json")
    assert code == 0
    result = json.loads(out)
    assert set(result) == {"dim", "attention", "beta", "nu", "modes", "growth_rates", "dominant_mode", "nu_sharp"}
    assert result["modes"] == [1, 2, 3, 4, 5]
    assert np.allclose(result["growth_rates"], growth_rates(Model("usa", 4.0, 0.01, 3), np.arange(1, 6)),
                       rtol=1e-15)


def test_theory_table_marks_the_dominant_mode(capsys):
    code, out, _ = run_cli(capsys, "theory", "--beta", 9, "--eps", 1e-4)
    assert code == 0 and "dominant mode: 4" in out and "formation time from perturbed:0.0001: 12.9914" in out
    assert "dominant mode at formation (probability): 4 (0.734), 5 (0.254), 3 (0.012), 6 (0.000155)" in out
    # the count itself: the cluster observable on the linear theory of 400 draws (meanfield.formation_count)
    assert "400 draws of the law): 2 (0.003 +- 0.002), 3 (0.048 +- 0.011), 4 (0.840 +- 0.018), 5 (0.110 +- 0.016)" in out


def test_theory_json_reports_the_dominance_probabilities(capsys):
    code, out, _ = run_cli(capsys, "theory", "--dim", 4, "--beta", 9, "--eps", 1e-4, "--zonal", "--json")
    assert code == 0
    result = json.loads(out)
    model = Model("sa", 9.0, 0.0, 4)
    degrees, probabilities = dominance_probabilities(model, 1e-4, zonal=True)
    order = np.argsort(-probabilities)[:len(result["dominance"]["modes"])]
    assert result["dominance"]["modes"] == degrees[order].tolist()
    assert np.allclose(result["dominance"]["probabilities"], probabilities[order], rtol=1e-15)
    assert result["formation_time"] == pytest.approx(formation_time(model, 1e-4, zonal=True), rel=1e-15)
    assert all(p >= 1e-4 for p in result["dominance"]["probabilities"]) and 1 <= len(result["dominance"]["modes"]) <= 5


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    out = folder / "run.nc"
    code = main(["solve", "circle", "--attention", "sa", "--beta", "4", "--resolution", "64",
                 "--init", "perturbed:1e-4", "--seed", "5", "--t-final", "2", "--save-every", "0.5",
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
                 ["validate", "gaussian"], ["validate", "castin-figures"], ["validate", "long-context"],
                 ["validate", "normalization"], ["validate", "mean-field-sphere"]):
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
    code, out, _ = run_cli(capsys, *args, "--dims", "2", "--betas", "0")   # explicit flags win over --quick
    assert code == 0 and "computed 0 chunks, reused 1" in out
    with xr.open_dataset(store / "phase_diagram.nc") as ds:
        assert ds["dim"].values.tolist() == [2] and ds["beta"].values.tolist() == [0.0]
        assert ds.attrs["realisations"] == 32 and ds.attrs["t_final"] == 8.0     # the rest from the preset
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
    assert code == 3 and "stop_reason: blowup" in text     # blows up before --t-final: stopped early
    with xr.open_dataset(out) as ds:
        sigma0 = ds["covariance"].values[0]
        assert float(ds.attrs["blowup_time"]) == pytest.approx(1 / (2 * np.linalg.eigvalsh(sigma0)[-1]), abs=1e-6)
        assert ds["covariance"].dims == ("time", "i", "j")
    code, text, _ = run_cli(capsys, "plot", out, "-o", tmp_path / "g.png")
    assert code == 0 and (tmp_path / "g.png").stat().st_size > 20_000
    code, _, err = run_cli(capsys, "gaussian", "--dim", 0, "--t-final", 1, "--out", out)
    assert code == 2 and "--dim" in err


# ------------------------------------------------------------------------------------------ exit statuses
def _stop_at(cls, monkeypatch, raise_interrupt: bool, t_stop: float = 0.5):
    """Make ``cls.validity`` report a failure (or raise Ctrl-C) once the run passes ``t_stop``."""
    original = cls.validity

    def validity(self, state, t):
        if t >= t_stop:
            if raise_interrupt:
                raise KeyboardInterrupt
            return f"tokens left the sphere at t = {t:.6g} (test)"
        return original(self, state, t)

    monkeypatch.setattr(cls, "validity", validity)


SOLVE_SMALL = ["solve", "circle", "--beta", "4", "--resolution", "32", "--t-final", "1", "--save-every", "0.25",
               "--no-progress"]
PARTICLES_SMALL = ["particles", "--n", "16", "--beta", "1", "--t-final", "1", "--save-every", "0.25", "--no-progress"]


@pytest.mark.parametrize("command", ["solve", "particles"])
@pytest.mark.parametrize("outcome, status", [("completed", 0), ("stopped", 3), ("interrupted", 130)])
def test_exit_status_follows_the_stop_reason(command, outcome, status, tmp_path, capsys, monkeypatch):
    from meanfield.solvers.schemes.circle import CircleSpectral
    from meanfield.solvers.schemes.particles import ParticleScheme

    if outcome != "completed":
        _stop_at(CircleSpectral if command == "solve" else ParticleScheme, monkeypatch, outcome == "interrupted")
    out = tmp_path / "run.nc"
    code, text, err = run_cli(capsys, *(SOLVE_SMALL if command == "solve" else PARTICLES_SMALL), "--out", out)
    assert code == status
    with xr.open_dataset(out) as ds:     # the file is written in every case
        reason = ds.attrs["stop_reason"]
        reached = float(ds["time"].values[-1])
    assert f"stop_reason: {reason}" in text
    if outcome == "completed":
        assert reason == "completed" and reached == 1.0 and err == ""
    else:
        assert reason.startswith("interrupted" if outcome == "interrupted" else "tokens left the sphere")
        assert 0.25 <= reached < 0.5 and f"exit status {status}" in err and err.count("\n") == 1


def test_a_run_that_loses_resolution_exits_3(tmp_path, capsys):
    out = tmp_path / "early.nc"
    code, text, err = run_cli(capsys, "solve", "circle", "--beta", 9, "--resolution", 64, "--init", "perturbed:1e-5",
                              "--t-final", 100, "--out", out, "--no-progress")
    assert code == 3 and "stop_reason: resolution lost" in text and "exit status 3" in err
    with xr.open_dataset(out) as ds:
        assert ds.attrs["stop_reason"].startswith("resolution lost") and 5 < float(ds["time"].values[-1]) < 100


def test_gaussian_that_reaches_t_final_exits_0(tmp_path, capsys):
    code, text, err = run_cli(capsys, "gaussian", "--dim", 2, "--t-final", 0.4, "--out", tmp_path / "g.nc")
    assert code == 0 and "stop_reason: completed" in text and err == ""


def test_help_documents_the_exit_statuses(capsys):
    for args in (["--help"], ["solve", "circle", "--help"], ["solve", "sphere", "--help"], ["particles", "--help"],
                 ["gaussian", "--help"]):
        code, out, _ = run_cli(capsys, *args)
        flat = " ".join(out.split())
        assert code == 0 and ("3 when" in flat or "3 a run" in flat), args
        assert "stop_reason" in flat
    code, out, _ = run_cli(capsys, "particles", "--help")
    assert "130 when interrupted" in " ".join(out.split())


# ------------------------------------------------------------------------------------------ safe writes
def _density(path):
    with xr.open_dataset(path) as ds:
        return ds["density"].values.copy()


SMALL_RUN = ["solve", "circle", "--beta", "2", "--resolution", "16", "--t-final", "0.5", "--save-every", "0.25",
             "--no-progress"]


def test_an_output_held_open_is_replaced(tmp_path, capsys):
    out = tmp_path / "run.nc"
    assert main(SMALL_RUN + ["--seed", "1", "--out", str(out)]) == 0
    out.chmod(0o640)
    held = xr.open_dataset(out)          # as a notebook would: xarray keeps the file open
    try:
        old = held["density"].values.copy()
        code, _, err = run_cli(capsys, *SMALL_RUN, "--seed", 2, "--out", out)
        assert code == 0, err
        new = _density(out)
    finally:
        held.close()
    assert new.shape == old.shape and not np.array_equal(new, old)
    assert (out.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.nc"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run.nc"
    assert main(SMALL_RUN + ["--out", str(out)]) == 0
    before = out.read_bytes()
    written = []

    def broken_write(self, path, *args, **kwargs):     # half a file, then the disk is full
        written.append(path)
        with open(path, "wb") as handle:
            handle.write(before[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", broken_write)
    code, _, err = run_cli(capsys, *SMALL_RUN, "--seed", 3, "--out", out)
    assert code == 2 and err.count("\n") == 1 and "No space left on device" in err and str(out) in err
    assert written and written[0] != out and written[0].parent == tmp_path   # a temporary next to the output
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.nc"]


def test_a_failed_write_removes_the_folders_it_made(tmp_path):
    from meanfield.app.storage import write_atomic

    def failing(temporary):
        temporary.write_text("partial")
        raise OSError(5, "Input/output error")

    with pytest.raises(InputError, match="Input/output error"):
        write_atomic(tmp_path / "new" / "deeper" / "fig.png", failing)
    assert list(tmp_path.iterdir()) == []
    path = write_atomic(tmp_path / "made" / "f.txt", lambda temporary: temporary.write_text("done"))
    assert path.read_text() == "done" and [p.name for p in path.parent.iterdir()] == ["f.txt"]


def test_attributes_beyond_int64_are_written_as_text(tmp_path):
    from meanfield.app.storage import load_run, save_run

    attrs = {"geometry": "circle", "stop_reason": "completed", "seed": 2 ** 70, "small": np.int64(5), "flag": True}
    ds = xr.Dataset({"mass": ("time", [1.0])}, coords={"time": [0.0]}, attrs=attrs)
    loaded = load_run(save_run(ds, tmp_path / "big.nc"))
    assert loaded.attrs["seed"] == str(2 ** 70) and loaded.attrs["small"] == 5 and loaded.attrs["flag"] == 1


def test_plot_writes_a_movie_through_meanfield_movie(solved, tmp_path, capsys):
    from PIL import Image

    movie = tmp_path / "run.gif"
    code, out, err = run_cli(capsys, "plot", solved, "--movie", movie)
    assert code == 0 and f"wrote {movie}" in out and err == ""
    with Image.open(movie) as gif:
        assert gif.n_frames == 5                                          # one movie frame per saved frame
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.gif"]     # no still image unless -o is given
