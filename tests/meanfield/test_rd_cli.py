"""``meanfield rd`` (meanfield/token_runs.py, docs/MATH.md §12.1): the rescaled tokens and their limit set. The file
is the API's run bit for bit, the recorded command repeats it bit for bit, the printed count is the exact count of
test_rd_tokens' cases (polytope vertices for V = I with equal-norm data; for the paper's 2-d value matrix the number
of signs of <l_1, z(0)>), bad input is one line naming the flag, and ``meanfield plot`` draws it."""

import shlex

import numpy as np
import pytest
import xarray as xr
from scipy.spatial import ConvexHull

from meanfield.app.storage import load_run
from meanfield.cli import main
from meanfield.rd_tokens import PAPER_VALUE_MATRICES, equal_norm_polytope, rescaled_tokens, top_eigenpair
from meanfield.token_limits import RD_VALUES
from meanfield.token_runs import rd_case_run

from .error_lines import one_error_line


def _same(first, second) -> None:
    assert sorted(first.data_vars) == sorted(second.data_vars)
    assert np.array_equal(first.time.values, second.time.values)
    for name in first.data_vars:
        assert np.array_equal(first[name].values, second[name].values), name


def test_the_named_values_are_the_paper_matrices():
    assert RD_VALUES == ("identity",) + tuple(f"paper-{name}" for name in PAPER_VALUE_MATRICES)


def test_identity_prints_the_polytope_vertex_count_and_its_command_repeats_it_bit_for_bit(tmp_path, capsys):
    """test_rd_tokens' heptagon: 7 equal-norm vertices and 13 tokens inside (seed 4); V = Q = K = I: 7 limit
    points, all vertices of their hull."""
    out = tmp_path / "rd.nc"
    args = ["--value", "identity", "--n", "20", "--vertices", "7", "--seed", "4", "--t-final", "30", "--frames", "4"]
    assert main(["rd", *args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    expected = len(ConvexHull(equal_norm_polytope(2, 7, 13, 4)).vertices)
    assert expected == 7
    assert f"limit set: {expected} points, {expected} of them vertices of their convex hull" in printed
    api = rd_case_run("identity", n=20, t_final=30.0, seed=4, vertices=7, frames=4)
    assert np.array_equal(api.positions.values[-1],
                          rescaled_tokens(equal_norm_polytope(2, 7, 13, 4), np.eye(2), np.eye(2), np.eye(2),
                                          np.linspace(0, 30, 4), rtol=1e-10, atol=1e-12)[-1])
    with load_run(out) as saved:
        _same(saved, api)
        assert saved.attrs["limit_count"] == expected and saved.attrs["limit_geometry"] == "polytope"
        assert saved.attrs["converged"] == 1
        command = saved.attrs["command"]
    words = shlex.split(command)
    again = tmp_path / "again.nc"
    assert main([*words[1:], "--out", str(again)]) == 0
    with xr.open_dataset(out) as first, xr.open_dataset(again) as second:
        _same(first, second)


@pytest.mark.parametrize("value, shift", [("paper-2d", 0.0), ("paper-3d-positive", 0.0)])
def test_the_paper_values_print_the_hyperplane_count_the_signs_predict(value, shift, tmp_path, capsys):
    """As test_rd_tokens: 20 tokens uniform in [-5, 5]^d (seed 2), Q = K = I; the count of levels of <l_1, z> is the
    number of signs of <l_1, z(0)> (two here), read at lambda_1 t = 26."""
    v = PAPER_VALUE_MATRICES[value.removeprefix("paper-")]
    lam, _, ell = top_eigenpair(v)
    z0 = np.random.default_rng(2).uniform(-5, 5, (20, len(v)))
    expected = len(set(np.sign(z0 @ ell)))
    assert expected == 2
    out = tmp_path / "rd.nc"
    assert main(["rd", "--value", value, "--n", "20", "--seed", "2", "--t-final", repr(26.0 / lam), "--frames", "4",
                 "--out", str(out)]) == 0
    assert f"limit set: {expected} parallel hyperplanes" in capsys.readouterr().out
    with load_run(out) as saved:
        assert saved.attrs["limit_count"] == expected and saved.attrs["converged"] == 1
        assert np.array_equal(saved.positions.values[0], z0)


def test_a_value_file_runs_like_its_named_twin(tmp_path):
    """A FILE.npz of z0 and V (Q, K absent: the identity) gives the run of the named value with those arrays."""
    z0 = np.random.default_rng(2).uniform(-5, 5, (20, 2))
    case = tmp_path / "value.npz"
    np.savez(case, z0=z0, V=PAPER_VALUE_MATRICES["2d"])
    from_file = rd_case_run(str(case), t_final=10.0, frames=3)
    named = rd_case_run("paper-2d", n=20, seed=2, t_final=10.0, frames=3)
    for name in ("positions", "limit_value", "limit_label", "direction"):
        assert np.array_equal(from_file[name].values, named[name].values), name


@pytest.mark.parametrize("args, flag", [
    (["--n", "0"], "--n"), (["--dim", "1"], "--dim"), (["--dim", "3", "--value", "paper-2d"], "--dim"),
    (["--vertices", "2"], "--vertices"), (["--vertices", "30"], "--vertices"), (["--t-final", "0"], "--t-final"),
    (["--t-final", "300", "--value", "paper-2d"], "--t-final"), (["--tol", "0"], "--tol"), (["--frames", "1"], "--frames"),
    (["--seed", "-1"], "--seed"), (["--value", "cube"], "--value"), (["--t-final", "1_0"], "--t-final"),
])
def test_bad_input_is_one_line_naming_the_flag(args, flag, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["rd", *args, "--out", "x.nc"]) == 2
    assert flag in one_error_line(capsys)
    assert not any(tmp_path.iterdir())


def test_data_outside_the_theorems_is_refused_in_one_line(tmp_path, capsys):
    case = tmp_path / "value.npz"
    np.savez(case, z0=np.ones((4, 2)), V=np.array([[0.0, -1.0], [1.0, 0.0]]))
    assert main(["rd", "--value", str(case), "--out", str(tmp_path / "x.nc")]) == 2
    assert "v must have a simple, real, positive eigenvalue" in one_error_line(capsys)


def test_the_plot_is_written(tmp_path):
    out = tmp_path / "rd.nc"
    assert main(["rd", "--value", "paper-2d", "--seed", "2", "--t-final", "19", "--frames", "31", "--out", str(out)]) == 0
    assert main(["plot", str(out), "-o", str(tmp_path / "rd.png")]) == 0
    assert (tmp_path / "rd.png").stat().st_size > 20_000
