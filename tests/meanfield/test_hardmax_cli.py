"""``meanfield hardmax`` (meanfield/token_runs.py, docs/MATH.md §12): the command's file is the API's run bit for bit,
its recorded command repeats it bit for bit, bad input is one line naming the flag (exit 2), a sliding mode stops the
run with its frames kept (exit 3), and ``meanfield plot`` draws it."""

import shlex

import numpy as np
import pytest
import xarray as xr

from meanfield.app.storage import load_run
from meanfield.cli import main
from meanfield.hardmax import hardmax_trajectory
from meanfield.token_runs import final_cells, hardmax_case, hardmax_case_run

from .error_lines import one_error_line

ARGS = ["--case", "psd", "--n", "16", "--dim", "2", "--seed", "3", "--t-final", "2", "--frames", "9", "--beta", "30"]


def _arrays(run) -> dict:
    return {name: run[name].values for name in run.data_vars} | {"time": run["time"].values}


def _same(first, second) -> None:
    a, b = _arrays(first), _arrays(second)
    assert sorted(a) == sorted(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def test_the_file_is_the_api_run_and_its_command_repeats_it_bit_for_bit(tmp_path, capsys):
    out = tmp_path / "hardmax.nc"
    assert main(["hardmax", *ARGS, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    api = hardmax_case_run("psd", n=16, dim=2, t_final=2.0, beta=30.0, seed=3, frames=9)
    with load_run(out) as saved:
        _same(saved, api)
        command = saved.attrs["command"]
        assert saved.attrs["geometry"] == "hardmax" and saved.attrs["stop_reason"] == "completed"
    # psd: no event, the hull vertices (max(3, 16 // 4) = 4 of them) lead themselves and every token
    assert "events (times an argmax set changes): 0" in printed and "final cells (leader <- tokens): 4:" in printed
    assert sorted(final_cells(api)) == [0, 1, 2, 3]
    x0, q, k = hardmax_case("psd", 16, 2, 3)
    assert np.array_equal(api.positions.values, hardmax_trajectory(x0, q.T @ k, np.linspace(0.0, 2.0, 9))[0])
    again = tmp_path / "again.nc"
    words = shlex.split(command)
    assert words[:2] == ["meanfield", "hardmax"]
    assert main([*words[1:], "--out", str(again)]) == 0
    with xr.open_dataset(out) as first, xr.open_dataset(again) as second:
        _same(first, second)


def test_nsd_pairs_contract_at_rate_two_and_a_sliding_mode_stops_with_its_frames_kept(tmp_path, capsys):
    nsd = hardmax_case_run("nsd", n=8, dim=3, t_final=2.0, seed=1, frames=5)
    x0 = nsd.positions.values[0]
    assert nsd.attrs["events"] == 0
    error = np.abs(nsd.positions.values - x0 * np.exp(-2.0 * nsd.time.values)[:, None, None]).max()
    assert error < 2e-14 * np.abs(x0).max()                  # expm's accuracy, as in test_hardmax
    # the chattering data of test_hardmax: a sliding mode after the first event (t = 0.0524)
    rng = np.random.default_rng(5)
    half, m = rng.normal(size=(10, 3)), rng.normal(size=(3, 3))
    case = tmp_path / "chatter.npz"
    np.savez(case, x0=np.vstack([half, -half]), A=-(m @ m.T + 0.1 * np.eye(3)))
    out = tmp_path / "chatter.nc"
    assert main(["hardmax", "--case", str(case), "--t-final", "2", "--frames", "61", "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert "sliding mode" in captured.err and "exit status 3" in captured.err
    with load_run(out) as saved:
        assert saved.attrs["stop_reason"].startswith("hardmax: ") and "sliding mode" in saved.attrs["stop_reason"]
        assert saved.sizes["time"] == 2 and saved.sizes["event"] == 1          # frames at t = 0, 1/30 before 0.0524
        assert abs(float(saved.event_time[0]) - 0.0524) < 1e-4
        exact, _ = hardmax_trajectory(np.vstack([half, -half]), -(m @ m.T + 0.1 * np.eye(3)), saved.time.values)
        assert np.array_equal(saved.positions.values, exact)


@pytest.mark.parametrize("args, flag", [
    (["--n", "0"], "--n"), (["--n", "5", "--case", "nsd"], "--n"), (["--dim", "0"], "--dim"),
    (["--dim", "1"], "--dim"), (["--t-final", "0"], "--t-final"), (["--t-final", "1e5"], "--t-final"),
    (["--beta", "-1"], "--beta"), (["--frames", "1"], "--frames"), (["--seed", "-1"], "--seed"),
    (["--case", "hull"], "--case"), (["--case", "missing.npz"], "--case"), (["--n", "1_0"], "--n"),
])
def test_bad_input_is_one_line_naming_the_flag(args, flag, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["hardmax", *args, "--out", "x.nc"]) == 2
    assert flag in one_error_line(capsys)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("arrays, words", [
    ({"x0": np.zeros((4, 2))}, "no array A"), ({"x0": np.zeros((4, 2)), "A": np.eye(3)}, "A must be 2 x 2"),
    ({"x0": np.zeros(4), "A": np.eye(2)}, "x0 must be an n x d array"),
    ({"x0": np.full((4, 2), np.nan), "A": np.eye(2)}, "must be finite"),
])
def test_a_bad_case_file_is_one_line(arrays, words, tmp_path, capsys):
    case = tmp_path / "case.npz"
    np.savez(case, **arrays)
    assert main(["hardmax", "--case", str(case), "--out", str(tmp_path / "x.nc")]) == 2
    line = one_error_line(capsys)
    assert "--case" in line and words in line


def test_the_plot_is_written(tmp_path):
    out = tmp_path / "hardmax.nc"
    assert main(["hardmax", *ARGS, "--out", str(out)]) == 0
    assert main(["plot", str(out)]) == 0
    png = tmp_path / "hardmax.png"
    assert png.stat().st_size > 20_000
