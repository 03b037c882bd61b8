"""Every driver records a run through one function (meanfield.solvers.records.run_record.run_attrs): the PDE, the causal
PDE, particles, the Gaussian moment ODEs and the stationary branch carry the same common attributes, and the
branch's command repeats it."""

import pytest

import meanfield
from meanfield.gaussian_cases import gaussian_case
from meanfield.solvers.records.run_record import loop_attrs, run_attrs

COMMON = ("geometry", "package_version", "command", "stop_reason", "wall_time")
STEPPED = ("t_reached", "steps", "rejected_steps")


def _runs():
    data = gaussian_case("identity", 2, 1)
    return {
        "pde": meanfield.solve("circle", beta=2.0, resolution=32, init="vonmises:1@0", t_final=0.1),
        "causal": meanfield.solve("circle", beta=2.0, resolution=32, init="vonmises:1@0", t_final=0.1,
                                  mask="causal", positions=3),
        "particles": meanfield.simulate_particles(dim=2, n=16, beta=2.0, seed=1, t_final=0.1),
        "gaussian": meanfield.gaussian.solve(data["mean"], data["cov"], V=data["V"], Q=data["Q"], K=data["K"],
                                             t_final=0.1),
    }


def test_every_time_stepped_run_has_the_common_attributes_from_one_function():
    for name, run in _runs().items():
        missing = [key for key in COMMON + STEPPED if key not in run.attrs]
        assert not missing, (name, missing)
        assert run.attrs["package_version"] == meanfield.__version__, name


def test_the_branch_records_itself_and_its_command_repeats_it():
    branch = meanfield.stationary_branch("usa", 4.0, 2, max_points=30)
    assert all(key in branch.attrs for key in COMMON) and branch.attrs["geometry"] == "circle"
    again = eval(branch.attrs["command"], {"meanfield": meanfield})     # a Python call, like the Gaussian runs'
    assert again.attrs["nu_sn"] == branch.attrs["nu_sn"] and again.sizes["point"] == branch.sizes["point"]


def test_specific_attributes_refine_the_common_ones():
    class Record:
        stop_reason, t_reached, wall_time, steps, rejected_steps = "completed", 1.0, 0.5, 10, 2

    attrs = run_attrs({"beta": 2.0}, "circle", "meanfield solve circle", **dict(loop_attrs(Record), stop_reason="x"))
    assert attrs["stop_reason"] == "x" and attrs["steps"] == 10 and list(attrs)[:2] == ["beta", "geometry"]
    with pytest.raises(TypeError):      # a run without a stop reason is not a run
        run_attrs({}, "circle", "command", wall_time=0.0)
