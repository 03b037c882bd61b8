"""No tracebacks: bad inputs to every subcommand and to the Python API (issue 12, item 6).

Each command-line case must print exactly one line on stderr, ``meanfield: error: ...``, that
names the parameter, exit with status 2, print nothing on stdout, and leave its working folder
empty.  Each API case must raise :class:`InputError` with a one-line message naming the
parameter.  Nothing may be computed first: the run loop, the Gaussian ODE solver and the sweep's
chunk runner are replaced by tripwires, and sizes are refused before anything is allocated.
"""

import importlib
import math
import os

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield import InputError, Model
from meanfield.cli import main
from meanfield.app.storage import build_run_dataset, save_run

HUGE = str(10 ** 12)
ABOVE_INT64 = str(2 ** 64)


def _cli(*args):
    return [str(a) for a in args]


#: (arguments with {placeholders} for fixture paths, words the error line must contain)
CLI_CASES = [
    # theory: every number checked before the table is printed
    (_cli("theory", "--beta", -1), "--beta must be a finite number in [0, 1e+09]"),
    (_cli("theory", "--beta", "nan"), "--beta must be finite"),
    (_cli("theory", "--beta", "inf"), "--beta must be finite"),
    (_cli("theory", "--beta", "x"), "--beta"),
    (_cli("theory", "--beta", 1, "--nu", -0.5), "--nu must be a finite number in [0, 1e+100]"),
    (_cli("theory", "--beta", 1, "--nu", "nan"), "--nu"),
    (_cli("theory", "--beta", 800, "--attention", "usa"), "--beta must be <= 700"),
    (_cli("theory", "--beta", 1, "--attention", "foo"), "--attention"),
    (_cli("theory", "--beta", 9, "--eps", 2), "--eps must be a finite number in (0, 1)"),
    (_cli("theory", "--beta", 9, "--eps", 0), "--eps"),
    (_cli("theory", "--beta", 9, "--eps", "nan"), "--eps"),
    (_cli("theory", "--beta", 9, "--zonal"), "--zonal needs --eps"),
    (_cli("theory", "--beta", 9, "--eps", 1e-4, "--zonal"), "--zonal needs --dim >= 3"),
    (_cli("theory", "--beta", 1, "--dim", 1), "--dim must be an integer in [2, 4096]"),
    (_cli("theory", "--beta", 1, "--dim", 100000), "--dim must be an integer in [2, 4096]"),
    (_cli("theory", "--beta", 1, "--modes", 0), "--modes must be an integer in [1, "),
    (_cli("theory", "--beta", 1, "--modes", HUGE), "--modes"),
    (_cli("theory", "--beta", 1, "--normalization", "layer"), "--normalization must be one of post, pre"),
    (_cli("theory", "--beta", 1, "--normalization", "pre", "--r0", 0), "--r0 must be a finite number in [1e-300, 1e+300]"),
    (_cli("theory", "--beta", 1, "--normalization", "pre", "--r0", -1), "--r0 must be a finite number in [1e-300, 1e+300]"),
    (_cli("theory", "--beta", 1, "--normalization", "pre", "--r0", "nan"), "--r0"),
    (_cli("theory", "--beta", 1, "--normalization", "ngpt", "--alpha", 0), "--alpha must be a finite number > 0"),
    (_cli("theory", "--beta", 1, "--normalization", "mix", "--mix-switch", -1), "--mix-switch must be a finite"),
    (_cli("theory", "--beta", 1, "--normalization", "pre", "--n", 1), "--n must be an integer >= 2"),
    (_cli("theory", "--beta", 1, "--normalization", "pre", "--t", -1), "--t must be a finite number in [0, inf)"),
    (_cli("theory", "--beta", 0, "--normalization", "peri"), "--beta must be > 0 for --normalization peri"),
    (_cli("theory", "--beta", 1, "--r0", 2), "--r0 needs --normalization"),
    # solve circle: model, run length, frames, sizes, tolerances, seeds, init, output
    (_cli("solve", "circle", "--beta", -2, "--t-final", 1), "--beta"),
    (_cli("solve", "circle", "--beta", "nan", "--t-final", 1), "--beta must be finite"),
    (_cli("solve", "circle", "--beta", 1, "--nu", "inf", "--t-final", 1), "--nu must be finite"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", -1), "--t-final"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 0), "--t-final"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", "nan"), "--t-final"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", "inf"), "--t-final"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 10, "--save-every", 1e-9), "at most 200000 frames"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--save-every", -1), "--save-every"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--save-every", "nan"), "--save-every"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--resolution", HUGE), "allowed: --resolution <="),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--resolution", 63), "--resolution must be an even"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--resolution", -8), "--resolution must be an integer"),
    (_cli("solve", "circle", "--beta", 9, "--t-final", 1, "--resolution", 8), "below the dominant mode"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--resolution", 2 ** 22, "--save-every", 1e-5),
     "frames of"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--seed", -3), "--seed must be an integer in [0, "),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--seed", "100000000000000000000000"), "--seed"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--seed", "1e5"), "--seed"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--rtol", 0), "--rtol must be a finite number in (0, 1)"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--rtol", 1.5), "--rtol"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--rtol", "nan"), "--rtol"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--cfl", 0), "--cfl must be a finite number in (0, 2]"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--cfl", 3), "--cfl"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--cfl", "inf"), "--cfl"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--resolution-tol", "inf"), "--resolution-tol"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--resolution-tol", 0), "--resolution-tol"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--positivity-tol", -1), "--positivity-tol"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--positivity-tol", "nan"), "--positivity-tol"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--init", "cauchy:1"), "unknown initial condition"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--init", "perturbed:nan"), "--init"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--init", "perturbed:0.1"),
     "perturbed:EPS needs EPS in [0, 0.08231) for --seed 0"),
    (_cli("solve", "sphere", "--beta", 1, "--t-final", 1, "--init", "perturbed:0.1", "--resolution", 20),
     "perturbed:EPS needs EPS in [0, "),
    (_cli("solve", "zonal", "--dim", 8, "--beta", 1, "--t-final", 1, "--init", "perturbed:1e-2"),
     "perturbed:EPS needs EPS in [0, "),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--init", "missing.nc"), "missing.nc: no such file"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--init", "{corrupt}"), "not a readable netCDF"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--init", "{foreign}"), "not a meanfield run"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--scheme", "nonsense"), "--scheme must be one of"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--stepper", "euler"), "--stepper"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--dim", 3), "--dim"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--save-log", 0), "--save-log must be an integer in [1, 1000] (frames per decade)"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--save-log", 5, "--save-every", 0.1),
     "--save-every or --save-log, not both"),
    (_cli("solve", "circle", "--scheme", "fv", "--beta", 4, "--t-final", 1, "--collapse-tol", 1e-12),
     "--collapse-tol applies to --scheme lagrangian only"),
    (_cli("solve", "circle", "--scheme", "lagrangian", "--beta", 4, "--t-final", 1, "--collapse-tol", -1),
     "--collapse-tol must be a finite number in [0, 0.1) (rad"),
    (_cli("solve", "circle", "--scheme", "lagrangian", "--beta", 4, "--t-final", 1, "--collapse-tol", "nan"),
     "--collapse-tol"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--out", "run.txt"), "--out must be a file name ending in .nc"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--out", "{file}/run.nc"), "is a file, not a folder"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--out", "{unwritable}/sub/run.nc"), "--out"),
    (_cli("solve", "circle", "--beta", 1, "--t-final", 1, "--out", "{folder}"), "--out"),
    # solve sphere and zonal
    (_cli("solve", "sphere", "--beta", 4, "--t-final", 1, "--resolution", 10 ** 6), "allowed: --resolution <="),
    (_cli("solve", "sphere", "--beta", 4, "--t-final", 1, "--resolution", 2), "--resolution (lmax)"),
    (_cli("solve", "sphere", "--beta", 4, "--t-final", 1, "--dim", 4), "--dim must be 3"),
    (_cli("solve", "sphere", "--beta", 4, "--t-final", 1, "--init", "vmf:3@95,0"), "--init"),
    (_cli("solve", "sphere", "--beta", 4, "--t-final", 1, "--scheme", "fv"), "--scheme must be one of"),
    (_cli("solve", "zonal", "--beta", 4, "--t-final", 1, "--dim", 2), "--dim"),
    (_cli("solve", "zonal", "--beta", 4, "--t-final", 1, "--dim", 5000), "--dim must be <= 256 for zonal densities"),
    (_cli("solve", "zonal", "--beta", 4, "--t-final", 1, "--resolution", 10 ** 7), "allowed: --resolution <="),
    (_cli("solve", "zonal", "--beta", 4, "--t-final", 1, "--scheme", "spectral"), "--scheme must be one of"),
    # particles
    (_cli("particles", "--n", -5, "--beta", 1, "--t-final", 1), "--n must be an integer >= 1"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--alpha", 0.5), "--alpha applies to --normalization ngpt"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--normalization", "ngpt", "--r0", 2),
     "--r0 applies to --normalization pre, mix or peri"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--normalization", "pre", "--mix-switch", 2),
     "--mix-switch applies to --normalization mix"),
    (_cli("particles", "--n", 0, "--beta", 1, "--t-final", 1), "--n"),
    (_cli("particles", "--n", HUGE, "--beta", 1, "--t-final", 1), "allowed: --n <="),
    (_cli("particles", "--n", 8, "--dim", 10 ** 6, "--beta", 1, "--t-final", 1), "--dim must be an integer in [2, 4096]"),
    (_cli("particles", "--n", 8, "--dim", 1, "--beta", 1, "--t-final", 1), "--dim"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--rtol", 2), "--rtol must be a finite number in (0, 1)"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--rtol", -1), "--rtol"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--cfl", 5), "--cfl must be a finite number in (0, 2]"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--cfl", "nan"), "--cfl"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--dt-max", 0), "--dt-max must be a finite number"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--dt-max", -1), "--dt-max"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--dt-max", "nan"), "--dt-max"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--dt-max", "inf"), "--dt-max"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--seed", ABOVE_INT64), "--seed"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 10, "--save-every", 1e-9), "at most 200000 frames"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--save-log", 0), "--save-log"),
    (_cli("particles", "--n", 8, "--beta", "inf", "--t-final", 1), "--beta must be finite"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", "nan"), "--t-final"),
    (_cli("particles", "--n", 5, "--dim", 3, "--beta", 1, "--t-final", 1, "--init", "orthogonal"),
     "--init orthogonal needs --n <= --dim"),
    (_cli("particles", "--n", 8, "--dim", 3, "--beta", 1, "--t-final", 1, "--sampling", "quadrature"), "--sampling"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--qkv", "weird"), "--qkv"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--qkv", "{folder}/none.npz"), "cannot read it"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--normalization", "rms"), "--normalization must be one of"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--normalization", "pre", "--r0", 0), "--r0 must be"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--normalization", "ngpt", "--alpha", -1), "--alpha"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--normalization", "mix", "--mix-switch", -1),
     "--mix-switch must be"),
    (_cli("particles", "--n", 8, "--beta", 1, "--nu", 0.1, "--t-final", 1, "--normalization", "pre"), "needs --nu 0"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--normalization", "peri", "--collapse-tol", 1e-9),
     "needs --collapse-tol 0"),
    (_cli("particles", "--n", 8, "--beta", 1, "--nu", 0.1, "--t-final", 1, "--collapse-tol", 1e-12),
     "--collapse-tol needs --nu 0"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--collapse-tol", "inf"), "--collapse-tol"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--resolution", HUGE), "allowed: --resolution <="),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--out", "tokens.csv"), "--out must be a file name"),
    (_cli("particles", "--n", 8, "--beta", 1, "--t-final", 1, "--out", "{unwritable}/p.nc"), "--out"),
    # gaussian
    (_cli("gaussian", "--dim", 0, "--t-final", 1), "--dim must be an integer in [1, 1024]"),
    (_cli("gaussian", "--dim", 10 ** 6, "--t-final", 1), "--dim"),
    (_cli("gaussian", "--t-final", -1), "--t-final must be a finite number"),
    (_cli("gaussian", "--t-final", "nan"), "--t-final"),
    (_cli("gaussian", "--t-final", 1, "--save-every", 0), "--save-every"),
    (_cli("gaussian", "--t-final", 1, "--save-every", 1e-12), "at most 200000 frames"),
    (_cli("gaussian", "--t-final", 1, "--attention", "sinkhorn", "--sinkhorn-eps", 0), "--sinkhorn-eps"),
    (_cli("gaussian", "--t-final", 1, "--sinkhorn-eps", "inf"), "--sinkhorn-eps"),
    (_cli("gaussian", "--t-final", 1, "--seed", -1), "--seed"),
    (_cli("gaussian", "--t-final", 1, "--case", "nope"), "--case"),
    (_cli("gaussian", "--t-final", 1, "--out", "g.txt"), "--out"),
    # plot
    (_cli("plot", "missing.nc"), "no such file"),
    (_cli("plot", "{run}", "-o", "out.xyz"), "-o/--out must be a file name ending in one of .png"),
    (_cli("plot", "{run}", "-o", "{file}/fig.png"), "-o/--out"),
    (_cli("plot", "{run}", "-o", "{unwritable}/fig.png"), "-o/--out"),
    (_cli("plot", "{run}", "--movie", "movie.avi"), "--movie must be a file name ending in one of .gif, .mp4"),
    (_cli("plot", "{run}", "--movie", "{unwritable}/m.gif"), "--movie"),
    (_cli("plot", "{nodensity}", "-o", "fig.png"), "lacks density"),
    (_cli("plot", "{corrupt}", "-o", "fig.png"), "not a readable netCDF"),
    (_cli("plot", "{foreign}", "-o", "fig.png"), "not a meanfield run"),
    # demo
    (_cli("demo", "--out-dir", "{unwritable}/demo"), "--out-dir"),
    (_cli("demo", "--out-dir", "{file}"), "--out-dir"),
    (_cli("demo", "--resolution", 4), "--resolution must be an integer >= 8"),
    (_cli("demo", "--resolution", HUGE), "allowed: --resolution <="),
    # validate
    (_cli("validate", "mean-field", "--quick", "--out-dir", "{unwritable}/study"), "--out-dir"),
    (_cli("validate", "staircase", "--quick", "--out-dir", "{file}"), "--out-dir"),
    (_cli("validate", "castin-figures", "--quick", "--out-dir", "{file}/figures"), "--out-dir"),
    (_cli("validate", "growth-circle", "--quick", "--out", "table.txt"), "--out must be a file name ending in .nc"),
    (_cli("validate", "bench-circle", "--bogus"), "--bogus"),
    # sweep phase-diagram: everything refused before the store is created
    (_cli("sweep", "phase-diagram", "--store", "st", "--scheduler", "nonsense"), "--scheduler must be one of"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--scheduler", "tcp://host"), "--scheduler"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--dims", "2,x"), "--dims"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--dims", "1"), "--dims must be"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--dims", "5000"), "--dims must be"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--betas", "0:9:1000000000"), "--betas"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--betas", "-1,2"), "--betas must be"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--betas", "nan"), "--betas must be"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--n", 1), "--n must be an integer >= 2"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--realisations", HUGE), "allowed: --realisations <="),
    (_cli("sweep", "phase-diagram", "--store", "st", "--n-times", 10 ** 9), "--n-times"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--delta", 2), "--delta"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--t-final", "inf"), "--t-final"),
    (_cli("sweep", "phase-diagram", "--store", "st", "--seed", ABOVE_INT64), "--seed"),
    (_cli("sweep", "phase-diagram", "--store", "{file}"), "--store"),
    (_cli("sweep", "phase-diagram", "--store", "{unwritable}/store"), "--store"),
    (_cli("sweep", "phase-diagram", "--quick", "--store", "st", "--dims", "1"), "--dims must be"),
]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    """Files the cases point at, outside the cases' working folder."""
    folder = tmp_path_factory.mktemp("fixtures")
    (folder / "afile.txt").write_text("not a folder")
    (folder / "folder.nc").mkdir()
    (folder / "corrupt.nc").write_text("garbage")
    xr.Dataset({"a": ("x", [1.0])}).to_netcdf(folder / "foreign.nc")
    attrs = {"geometry": "circle", "stop_reason": "completed", "attention": "sa", "beta": 1.0, "nu": 0.0, "dim": 2}
    save_run(build_run_dataset([0.0], [{"mass": 1.0}], {}, {}, attrs), folder / "nodensity.nc")
    run = folder / "run.nc"
    assert main(["solve", "circle", "--beta", "1", "--resolution", "16", "--t-final", "0.1", "--out", str(run),
                 "--no-progress"]) == 0
    if os.geteuid() == 0:  # root may write anywhere but in a pseudo file system
        unwritable = "/proc/meanfield-test"
    else:
        unwritable = folder / "read-only"
        unwritable.mkdir()
        unwritable.chmod(0o555)
    return {"file": folder / "afile.txt", "folder": folder / "folder.nc", "corrupt": folder / "corrupt.nc",
            "foreign": folder / "foreign.nc", "nodensity": folder / "nodensity.nc", "run": run,
            "unwritable": unwritable}


@pytest.fixture
def tripwires(monkeypatch):
    """Fail the test if a case starts computing."""
    def computing(*args, **kwargs):
        raise AssertionError("a bad input started computing")

    for module, name in (("meanfield.solvers.runs.runloop", "run"), ("meanfield.solvers.runs.controller", "run_switching"),
                         ("meanfield.validation.studies.phase_diagram", "compute_chunks")):
        monkeypatch.setattr(importlib.import_module(module), name, computing)


def test_there_are_at_least_80_distinct_cases():
    assert len({tuple(args) for args, _ in CLI_CASES}) == len(CLI_CASES) >= 80
    assert {args[0] for args, _ in CLI_CASES} == {"theory", "solve", "particles", "gaussian", "plot", "demo",
                                                   "validate", "sweep"}


@pytest.mark.parametrize("args, words", CLI_CASES, ids=[" ".join(args) for args, _ in CLI_CASES])
def test_bad_command_line_is_one_line_exit_2_and_writes_nothing(args, words, fixtures, tripwires, tmp_path,
                                                                 monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main([arg.format(**fixtures) for arg in args])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith("meanfield: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert words in err
    assert out == ""
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------ Python API
def _gaussian(**changes):
    eye = np.eye(2)
    settings = dict(mean=[0.0, 0.0], cov=eye, V=eye, Q=eye, K=eye, t_final=1.0) | changes
    return lambda: meanfield.gaussian.solve(settings.pop("mean"), settings.pop("cov"), **settings)


def _solve(geometry="circle", **settings):
    return lambda: meanfield.solve(geometry, **({"t_final": 1.0, "beta": 1.0} | settings))


def _simulate(**settings):
    from meanfield.solvers.runs.particle_run import simulate
    return lambda: simulate(**({"t_final": 1.0, "beta": 1.0} | settings))


API_CASES = [
    ("geometry", _solve("torus")),
    ("resolution", _solve(resolution=10 ** 12)),
    ("resolution", _solve(resolution="big")),
    ("rtol", _solve(rtol=math.nan)),
    ("cfl", _solve(cfl=-1.0)),
    ("seed", _solve(seed=-1)),
    ("seed", _solve(seed=2 ** 64)),
    ("t_final", _solve(t_final=math.inf)),
    ("save_every", _solve(save_every=1e-12)),
    ("resolution_tol", _solve(resolution_tol=math.inf)),
    ("beta", _solve(beta="hot")),
    ("init", _solve(init="nonsense:1")),
    ("dim", _solve("sphere", dim=10 ** 5)),
    ("resolution", _solve("zonal", resolution=10 ** 7)),
    ("n", _simulate(n=10 ** 12)),
    ("n", _simulate(n=0)),
    ("dim", _simulate(dim=10 ** 5)),
    ("rtol", _simulate(rtol=2.0)),
    ("cfl", _simulate(cfl=0.0)),
    ("dt_max", _simulate(dt_max=-1.0)),
    ("seed", _simulate(seed=2 ** 70)),
    ("save_every", _simulate(save_every=1e-9, t_final=10.0)),
    ("t_final", _gaussian(t_final=-1.0)),
    ("t_final", _gaussian(t_final=math.nan)),
    ("mean", _gaussian(mean=[math.nan, 0.0])),
    ("cov", _gaussian(cov=[[1.0, 0.5], [0.0, 1.0]])),
    ("attention", _gaussian(attention="nope")),
    ("eps", _gaussian(attention="sinkhorn", eps=0.0)),
    ("beta", lambda: Model(beta=-1.0)),
    ("eps", lambda: meanfield.formation_time(Model(beta=9.0), 2.0)),
    ("amplitude", lambda: meanfield.formation_time(Model(beta=9.0), amplitude=math.nan)),
    ("eps", lambda: meanfield.dominance_probabilities(Model(beta=9.0), 0.0)),
    ("perturbed:EPS", _solve(init="perturbed:0.5")),
]


@pytest.mark.parametrize("name, call", API_CASES, ids=[f"{i}-{name}" for i, (name, _) in enumerate(API_CASES)])
def test_bad_api_input_is_a_one_line_input_error(name, call, tripwires, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as error:
        call()
    message = str(error.value)
    assert "\n" not in message and name in message and "--" not in message     # Python names, not flags
    assert list(tmp_path.iterdir()) == []


def test_a_refused_sweep_leaves_no_store(tmp_path):
    from meanfield.validation.studies.phase_diagram import run_sweep

    with pytest.raises(InputError, match="scheduler"):
        run_sweep(tmp_path / "store", scheduler="nonsense", progress=False)
    with pytest.raises(InputError, match="realisations"):
        run_sweep(tmp_path / "store", realisations=10 ** 12, scheduler="synchronous", progress=False)
    assert list(tmp_path.iterdir()) == []
