"""The entry points as a researcher meets them (issue 22 item 1): real signatures, module paths that import,
user trackers, and the API requiring what the command line requires."""

import importlib
import inspect

import numpy as np
import pytest

import meanfield
from meanfield import InputError
from meanfield.solvers.tracking.trackers import Tracker


@pytest.mark.parametrize("name, module, function, parameters", [
    ("solve", "meanfield.solvers.runs.solve", "solve", ["geometry", "beta", "t_final", "save_log", "rtol", "atol", "resolution_tol",
                                          "normalization", "alpha", "trackers", "override"]),
    ("simulate_particles", "meanfield.solvers.runs.particle_run", "simulate", ["n", "beta", "t_final", "qkv", "Q", "heads",
                                                                 "dt_max", "interaction", "r0", "trackers"]),
    ("rerun", "meanfield.solvers.runs.rerun", "rerun", ["run", "progress"]),
])
def test_entry_points_are_the_functions_with_every_parameter(name, module, function, parameters):
    """help(meanfield.solve) showed solve(geometry='circle', **settings), and meanfield.solvers.runs.solve.solve raised
    AttributeError (the function shadowed its module in solvers/__init__.py)."""
    entry = getattr(meanfield, name)
    assert entry is getattr(importlib.import_module(module), function)
    signature = inspect.signature(entry)
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    assert all(p in signature.parameters for p in parameters)


class PeakDensity(Tracker):
    """A user's tracker: the largest cell average of each saved frame."""

    def frame(self, scheme, state, record):
        return {"peak": float(np.max(scheme.density(state)))}


def test_user_trackers_record_with_the_run():
    run = meanfield.solve("circle", scheme="fv", beta=9.0, resolution=64, init="perturbed:1e-2", seed=1,
                          t_final=20.0, save_every=10.0, trackers=[PeakDensity()])
    assert run["peak"].dims == ("time",) and run.sizes["time"] == 3
    np.testing.assert_array_equal(run["peak"].values, run["density"].max("theta").values)
    tokens = meanfield.simulate_particles(dim=3, n=16, beta=1.0, t_final=0.5, save_every=0.25,
                                          trackers=[Tracker()])
    assert tokens.attrs["stop_reason"] == "completed"
    with pytest.raises(InputError, match="trackers must be meanfield.solvers.tracking.trackers.Tracker instances"):
        meanfield.solve("circle", beta=1.0, t_final=1.0, trackers=[object()])


def test_the_api_requires_what_the_command_line_requires():
    """solve() ran silently at beta = 1 to t = 10 where the CLI requires --beta and --t-final."""
    with pytest.raises(InputError, match="t_final is required"):
        meanfield.solve("circle", beta=9.0)
    with pytest.raises(InputError, match="beta is required"):
        meanfield.solve("circle", t_final=1.0)
    with pytest.raises(InputError, match="beta is required"):
        meanfield.simulate_particles(n=8, t_final=1.0)


@pytest.mark.parametrize("entry", ["solve", "simulate_particles", "rerun", "gaussian.solve", "solve_gaussian_case",
                                   "cluster_history", "clusters_in_frame", "clusters_of_density", "clusters_of_atoms"])
def test_every_parameter_is_documented_in_a_numpydoc_section(entry):
    import re

    function = meanfield
    for part in entry.split("."):
        function = getattr(function, part)
    doc = inspect.getdoc(function)
    assert "Parameters\n----------" in doc and "Returns\n-------" in doc
    section = doc.split("Parameters\n----------")[1].split("Returns\n-------")[0]
    documented = {name for line in section.splitlines() if line and not line[0].isspace()
                  for name in re.split(r",\s*", line.split(" : ")[0])}
    missing = set(inspect.signature(function).parameters) - documented
    assert not missing, missing


@pytest.mark.parametrize("package", ["meanfield", "meanfield.solvers", "meanfield.validation"])
def test_no_module_is_shadowed_by_a_name_of_its_package(package):
    """`meanfield.solvers.runs.solve` was the function solve, so the module path the docstrings cite did not import."""
    import pkgutil
    import types

    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(module.__path__):
        value = getattr(module, info.name, None)
        assert value is None or isinstance(value, types.ModuleType), f"{package}.{info.name} is {type(value)}"
