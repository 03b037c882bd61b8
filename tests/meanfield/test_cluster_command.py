"""``meanfield clusters RUN.nc [--frame K | --time T] [--json]`` (issue 32 item 4)."""

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from meanfield.cli import main
from meanfield.app.storage import save_run
from meanfield.solvers.runs.particle_run import simulate


@pytest.fixture(scope="module")
def merging_run(tmp_path_factory):
    """Three weighted points on the circle at beta = 9: the two nearer ones merge (the observable's event, t = 8.1),
    the third joins much later."""
    angles = np.array([0.0, 1.1, 3.6])
    run = simulate(dim=2, n=3, beta=9.0, positions=np.stack((np.cos(angles), np.sin(angles)), -1),
                   weights=[0.5, 0.3, 0.2], t_final=40.0, save_every=2.0)
    path = tmp_path_factory.mktemp("clusters") / "run.nc"
    save_run(run, path)
    return run, path


def _cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_table_and_the_events(capsys, merging_run):
    run, path = merging_run
    assert run.sizes["merge"] >= 1
    code, out, _ = _cli(capsys, "clusters", path, "--frame", 0)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("frame 0 (t = 0), beta = 9: 3 clusters")
    rows = [line.split() for line in lines[2:5]]
    assert [int(row[0]) for row in rows] == [0, 1, 2]                      # ids, heaviest first
    # positions: the maxima of A = sum_j w_j exp(beta cos(theta - theta_j)), each pulled off its point towards the
    # others' mass (printed to 1e-6 rad)
    def field(theta):
        return -sum(w * math.exp(9.0 * (math.cos(theta - a) - 1)) for w, a in zip((0.5, 0.3, 0.2), (0.0, 1.1, 3.6)))
    maxima = [minimize_scalar(field, bracket=(a - 0.05, a, a + 0.05), tol=1e-12).x % (2 * math.pi)
              for a in (0.0, 1.1, 3.6)]
    assert [float(row[1]) for row in rows] == pytest.approx(maxima, abs=2e-6)
    assert 0 < maxima[0] < 0.01 and 1.08 < maxima[1] < 1.1
    assert [float(row[2]) for row in rows] == pytest.approx([0.5, 0.3, 0.2], abs=1e-12)   # masses
    merge = float(run["merge_time"].values[0])
    assert f"t = {merge:.10g}: cluster" in out and "merges into" in out


def test_json_at_a_time_is_the_nearest_frame(capsys, merging_run):
    run, path = merging_run
    merge = float(run["merge_time"].values[0])
    after = float(run.time.values[np.searchsorted(run.time.values, merge)])
    code, out, _ = _cli(capsys, "clusters", path, "--time", after + 0.4, "--json")
    table = json.loads(out)
    assert code == 0 and table["time"] == after and table["count"] == int(run["cluster_count"].sel(time=after))
    assert table["events"][0]["kind"] == "merge" and table["events"][0]["time"] == merge
    assert sum(row["mass"] for row in table["clusters"]) == pytest.approx(1.0)
    assert all(row["id"] is not None and 0 <= row["angle"] < 2 * math.pi for row in table["clusters"])


@pytest.mark.parametrize("args, message", [
    (("--frame", 99), "--frame must be in [-21, 20]"),
    (("--time", -1), "--time must be in [0, 40]"),
    (("--frame", 1, "--time", 2), "give --frame or --time, not both")])
def test_bad_options_are_one_line(capsys, merging_run, args, message):
    _, path = merging_run
    code, out, err = _cli(capsys, "clusters", path, *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_file_that_is_no_run(capsys, tmp_path):
    bad = tmp_path / "bad.nc"
    bad.write_text("not netcdf")
    code, _, err = _cli(capsys, "clusters", bad)
    assert code == 2 and "not a readable netCDF file" in err


def test_atoms_in_high_dimension_give_strict_json(capsys, tmp_path):
    """Three far-apart points on S^4: the field is sampled at the atoms only, so no value lies below them and their
    prominence is not measured (printed "-", JSON null, never NaN); they count by their concentration."""
    points = np.eye(5)[:3]
    run = simulate(dim=5, n=3, beta=9.0, positions=points, weights=[0.5, 0.3, 0.2], t_final=1.0, save_every=1.0)
    path = tmp_path / "atoms.nc"
    save_run(run, path)
    code, out, _ = _cli(capsys, "clusters", path, "--json")

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    table = json.loads(out, parse_constant=refuse)
    assert code == 0 and table["count"] == 3
    assert all(row["prominence"] is None and row["concentration"] > 0.9 for row in table["clusters"])
    assert [len(row["vector"]) for row in table["clusters"]] == [5, 5, 5]
    code, out, _ = _cli(capsys, "clusters", path)
    assert out.splitlines()[2].split()[-1] == "-" and " ..." in out.splitlines()[2]


@pytest.mark.parametrize("geometry, resolution", [("circle", 64), ("sphere", 8), ("zonal", 32)])
def test_json_of_a_density_run_names_its_geometry(capsys, tmp_path, geometry, resolution):
    """Every density geometry's table is JSON (the geometry by name, not the object that reads it)."""
    path = tmp_path / "run.nc"
    assert main(["solve", geometry, "--beta", "4", "--resolution", str(resolution), "--t-final", "0.5",
                 "--out", str(path), "--no-progress"]) == 0
    capsys.readouterr()
    code, out, _ = _cli(capsys, "clusters", path, "--json")
    assert code == 0
    assert json.loads(out)["geometry"] == geometry
