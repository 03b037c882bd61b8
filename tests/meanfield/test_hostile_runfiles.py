"""Run files that lie (issue 35, hostile inputs round two): a run file from a colleague is input like an option.

Every reader of a run file (``meanfield rerun``, ``solve --init`` and ``particles --init``, ``meanfield.solve``,
``meanfield.simulate_particles`` and ``meanfield.rerun`` given a Dataset) checks the settings the file records against
the option ranges and the registries, against the file's own arrays (its grid, its matrices) and its records of its
start and of its end, before anything is computed or written: one line ``meanfield: error: ...`` naming the file, the
attribute and what it may be, exit 2.  What failed before: an edited ``resolution`` ended in a numpy broadcast
traceback; ``scheme = "nonsense"`` was continued as a spectral remap (exit 0); a particle file naming
``/etc/passwd.npz`` without its matrices was continued with the identity and recorded the path; ``rerun`` copied the
``command`` attribute (``...; rm -rf /``) into the new file; a start record three times too long ran, and failed only
after computing.  Valid files are re-run and continued bit for bit as before.
"""

import json
import shlex

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.cli import main
from meanfield.errors import InputError
from meanfield.limits import RANGES
from meanfield.solvers.runs import controller
from meanfield.solvers.records.run_record import RERUN_COMMAND
from meanfield.app.storage import save_run

from ..solvers.test_rerun import assert_same_run
from .error_lines import one_error_line as _one_error_line
from ..run_files import flat, write

THETA = 2 * np.pi * np.arange(64) / 64
BUMPY = (1 + 0.02 * np.cos(3 * THETA)) / (2 * np.pi)


# -- the runs, and lies told about them ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Small runs of every kind a reader meets, saved: typed starts (their command repeats them), a start from an
    array (``meanfield rerun FILE``), particles with the identity, with random matrices and from a ``.npz``."""
    folder = tmp_path_factory.mktemp("runs")
    npz = folder / "heads.npz"
    rng = np.random.default_rng(5)
    np.savez(npz, Q=0.5 * rng.standard_normal((3, 3)), K=0.5 * rng.standard_normal((3, 3)), V=np.eye(3))
    made = {"fv": lambda: meanfield.solve("circle", scheme="fv", beta=9.0, resolution=64, init="perturbed:1e-2",
                                          seed=0, t_final=2.0, save_every=1.0),
            "spectral": lambda: meanfield.solve("circle", beta=5.0, resolution=64, init=BUMPY, t_final=1.0,
                                                save_every=0.5),
            "zonal": lambda: meanfield.solve("zonal", dim=5, beta=4.0, resolution=24, init="perturbed:1e-2", seed=0,
                                             t_final=0.5, save_every=0.25),
            "particles": lambda: meanfield.simulate_particles(dim=3, n=16, beta=4.0, init="uniform", seed=1,
                                                              t_final=1.0, save_every=0.5),
            "random": lambda: meanfield.simulate_particles(dim=3, n=16, beta=1.0, qkv="random", init="uniform",
                                                           seed=3, t_final=0.5, save_every=0.25),
            "npz": lambda: meanfield.simulate_particles(dim=3, n=16, beta=1.0, qkv=str(npz), init="uniform", seed=2,
                                                        t_final=0.5, save_every=0.25)}
    paths = {name: save_run(run(), folder / f"{name}.nc") for name, run in made.items()}
    npz.unlink()                 # a run file carries its matrices: the .npz need not travel with it
    return paths


@pytest.fixture
def nothing_computed(monkeypatch):
    """The run loop of both drivers fails the test if a refused file gets that far."""
    def computed(*args, **kwargs):
        raise AssertionError("a lying run file was computed from")

    monkeypatch.setattr(controller, "run_switching", computed)      # the one run pipeline of both drivers


def _told(source, folder, lie, name="lying.nc"):
    """A copy of run file ``source`` with ``lie(dataset)`` applied (it edits the Dataset, its records at its root by
    name (tests/run_files.py), or returns a new one), the records written back to their group."""
    run = flat(source)
    run = lie(run) or run
    return write(run, folder / name)


def _attrs(**values):
    return lambda run: run.attrs.update(values)


def _without(*names):
    return lambda run: run.drop_vars(list(names))


def _tripled(variable, leading=False):
    """The record variable with its values three times over, its ``stored_shape`` saying so (flat, or along the
    leading axis)."""
    def lie(run):
        attrs = dict(run[variable].attrs)
        shape = json.loads(attrs["stored_shape"])
        values = np.tile(run[variable].values, 3)
        attrs["stored_shape"] = json.dumps([3 * shape[0], *shape[1:]] if leading else [values.size // (
            2 if attrs["stored_dtype"].startswith("complex") else 1)])
        run = run.drop_vars(variable)
        run[variable] = (variable + "_tripled", values, attrs)
        return run
    return lie


def _as_floats(variable):
    """Complex coefficients stored as if they were that many real numbers."""
    def lie(run):
        attrs = dict(run[variable].attrs, stored_dtype="float64",
                     stored_shape=json.dumps([run[variable].size]))
        run[variable] = (run[variable].dims, run[variable].values, attrs)
    return lie


def _argv(kind, path, out, attrs):
    """The command line of each reader of ``path``: ``rerun`` it, or continue it (``solve`` or ``particles
    --init``, with the ``n`` and ``dim`` its attributes claim)."""
    if kind == "rerun":
        return ["rerun", str(path), "--out", str(out), "--no-progress"]
    tail = ["--init", str(path), "--t-final", "3", "--out", str(out), "--no-progress"]
    if attrs["geometry"] == "particles":
        return ["particles", "--n", str(int(attrs["n"])), "--dim", str(int(attrs["dim"])), *tail]
    return ["solve", attrs["geometry"], *tail]


def _refused(path, kind, tmp_path, capsys) -> str:
    """The one line a reader prints for ``path`` (exit 2, nothing written)."""
    out = tmp_path / "out" / "run.nc"
    with xr.open_dataset(path) as handle:
        attrs = dict(handle.attrs)
    code = main(_argv(kind, path, out, attrs))
    line = _one_error_line(capsys)
    assert code == 2 and not out.parent.exists(), line
    assert (f"rerun {path}" if kind == "rerun" else f"--init {path}") in line, line
    return line


# -- 1. attributes that do not fit the file's arrays ---------------------------------------------------------------
SIZE_LIES = {
    "fv resolution": ("fv", {"resolution": 128}, "attribute resolution = 128 does not match the file's arrays: with "
                                                 "it, a circle fv run has 128 theta values; the file's frames have 64"),
    "spectral resolution": ("spectral", {"resolution": 128}, "attribute resolution = 128 does not match"),
    "particles n": ("particles", {"n": 32}, "attribute n = 32 does not match the file's arrays: with it, a particle "
                                            "run has 32 particle values; the file's frames have 16"),
    "zonal dim": ("zonal", {"dim": 7}, "attributes resolution = 24, dim = 7 do not match the file's arrays: with "
                                       "them, a zonal galerkin run has other polar values"),
}


@pytest.mark.parametrize("kind", ["rerun", "continue"])
@pytest.mark.parametrize("case", sorted(SIZE_LIES))
def test_a_size_attribute_that_does_not_fit_the_arrays_is_one_line(runs, tmp_path, capsys, nothing_computed, case,
                                                                     kind):
    run, values, words = SIZE_LIES[case]
    line = _refused(_told(runs[run], tmp_path, _attrs(**values)), kind, tmp_path, capsys)
    assert words in line and "Traceback" not in line, line


def test_a_remap_that_would_take_an_edited_resolution_is_refused(runs, tmp_path, capsys, nothing_computed):
    """A file without its restart record is remapped, onto its own scheme and resolution when none are given: an
    edited ``resolution`` would have become the new run's grid."""
    def lie(run):
        run.attrs = {key: value for key, value in run.attrs.items() if not key.startswith("restart_")}
        run.attrs["resolution"] = 128
        return run.drop_vars([name for name in run.data_vars if name.startswith("restart_")])

    line = _refused(_told(runs["fv"], tmp_path, lie), "continue", tmp_path, capsys)
    assert "attribute resolution = 128 does not match the file's arrays" in line, line


# -- 2. names and numbers outside what the options allow -----------------------------------------------------------
NAME_LIES = {
    "scheme": ("fv", {"scheme": "nonsense"}, "attribute scheme = 'nonsense' is not allowed; it must be one of "
                                             "spectral, fv, lagrangian (a circle run)"),
    "attention": ("fv", {"attention": "softmax"}, "attribute attention = 'softmax' is not allowed; it must be one of "
                                                  "sa, usa"),
    "stepper": ("fv", {"stepper": "euler"}, "attribute stepper = 'euler' is not allowed; it must be one of"),
    "normalization": ("fv", {"normalization": "layer"}, "attribute normalization = 'layer' is not allowed"),
    "mask": ("fv", {"mask": "window"}, "attribute mask = 'window' is not allowed; it must be one of none, causal"),
    "noise schedule": ("fv", {"nu_schedule": "ramp:oops"}, "attribute nu_schedule = 'ramp:oops' is not a schedule"),
    "beta": ("fv", {"beta": 2e9}, f"attribute beta = 2000000000.0 is not allowed; it must be {RANGES['--beta'].text()}"),
    "nu": ("fv", {"nu": -1.0}, f"attribute nu = -1.0 is not allowed; it must be {RANGES['--nu'].text()}"),
    "dim of the circle": ("fv", {"dim": 3}, "attribute dim = 3 is not allowed; it must be 2 for a circle run"),
    "seed": ("fv", {"seed": -1}, f"attribute seed = -1 is not allowed; it must be {RANGES['--seed'].text()}"),
    "rtol": ("fv", {"rtol": 2.0}, f"attribute rtol = 2.0 is not allowed; it must be {RANGES['--rtol'].text()}"),
    "save_log": ("fv", {"save_log": 0}, f"attribute save_log = 0 is not allowed; it must be "
                                        f"{RANGES['--save-log'].text()}"),
    "a clock that is no number": ("fv", {"restart_time": "later"}, "attribute restart_time = 'later' is not "
                                                                   "allowed; it must be a finite number >= 0"),
    "two resolutions": ("fv", {"resolution": np.array([64, 64])}, "attribute resolution = [64, 64] is not allowed"),
    "usa beyond 700": ("fv", {"attention": "usa", "beta": 800.0}, "attributes attention = 'usa', beta = 800.0, "
                                                                  "nu = 0.0, dim = 2 are not a model (--beta must be "
                                                                  "<= 700"),
    "sampling": ("particles", {"sampling": "sobol"}, "attribute sampling = 'sobol' is not allowed; it must be one of "
                                                     "iid, quadrature"),
    "interaction path": ("particles", {"interaction_path": "fast"}, "attribute interaction_path = 'fast' is not "
                                                                    "allowed"),
    "qkv": ("particles", {"qkv": "eye"}, "attribute qkv = 'eye' is not allowed; it must be one of identity, "
                                         "repulsive, random, custom or a FILE.npz"),
}


@pytest.mark.parametrize("kind", ["rerun", "continue"])
@pytest.mark.parametrize("case", sorted(NAME_LIES))
def test_a_setting_outside_its_options_is_one_line_naming_the_attribute(runs, tmp_path, capsys, nothing_computed,
                                                                        case, kind):
    """``scheme = "nonsense"`` was continued as a spectral remap (exit 0)."""
    run, values, words = NAME_LIES[case]
    line = _refused(_told(runs[run], tmp_path, _attrs(**values)), kind, tmp_path, capsys)
    assert words in line, line


def test_the_api_refuses_a_lying_dataset_in_one_line(runs, nothing_computed):
    """``meanfield.solve(init=dataset)``, ``meanfield.simulate_particles(init=dataset)`` and ``meanfield.rerun``."""
    circle = meanfield.load_run(runs["fv"]).assign_attrs(scheme="nonsense")
    particles = meanfield.load_run(runs["particles"]).assign_attrs(n=32)
    calls = [lambda: meanfield.solve("circle", init=circle, t_final=3.0), lambda: meanfield.rerun(circle),
             lambda: meanfield.simulate_particles(dim=3, n=32, init=particles, t_final=2.0),
             lambda: meanfield.rerun(particles)]
    for call, words in zip(calls, ["scheme = 'nonsense'", "scheme = 'nonsense'", "n = 32", "n = 32"]):
        with pytest.raises(InputError) as refusal:
            call()
        assert words in str(refusal.value) and "\n" not in str(refusal.value), refusal.value


# -- 3. a particle file carries its matrices -----------------------------------------------------------------------
MATRIX_LIES = {
    "a path and no matrices": ("particles", _attrs(qkv="/etc/passwd.npz"), "attribute qkv = '/etc/passwd.npz' names "
                               "matrices the file does not hold (no Q, K or V); a particle run file carries its "
                               "matrices, or names one of identity, repulsive, random"),
    "custom and no matrices": ("particles", _attrs(qkv="custom"), "attribute qkv = 'custom' names matrices the file "
                                                                  "does not hold"),
    "a .npz run without K": ("npz", _without("K"), "names a file of Q, K and V; the run file holds only Q, V"),
    "the identity with a Q": ("particles", lambda run: run.assign(Q=(("row", "column"), 2 * np.eye(3))),
                              "attribute qkv = 'identity' does not match the file's matrices (stored: Q)"),
    "random matrices of another seed": ("random", _attrs(seed=4), "attribute qkv = 'random' (seed 4) does not match "
                                                                  "the file's matrices"),
    "a matrix of another shape": ("npz", lambda run: run.drop_vars("Q").assign(Q=(("q_row", "q_column"),
                                                                                    np.eye(2))),
                                  "its Q has dims ('q_row', 'q_column') and shape (2, 2); a run of dim 3 stores "
                                  "real 3 x 3 matrices"),
    "a matrix beyond the range": ("npz", lambda run: run.assign(V=run["V"] * 1e200), "V: entries must be at most"),
}


@pytest.mark.parametrize("kind", ["rerun", "continue"])
@pytest.mark.parametrize("case", sorted(MATRIX_LIES))
def test_a_particle_file_must_hold_the_matrices_it_names(runs, tmp_path, capsys, nothing_computed, case, kind):
    """A file naming ``/etc/passwd.npz`` with no matrices was continued with the identity (``restart = exact``) and
    recorded a path never read; the design (DESIGN.md, ``meanfield rerun``) is that a run file carries its Q, K, V,
    so the ``.npz`` is never read again: a file that names matrices it does not hold is refused."""
    run, lie, words = MATRIX_LIES[case]
    line = _refused(_told(runs[run], tmp_path, lie), kind, tmp_path, capsys)
    assert words in line, line


def test_a_run_from_a_npz_continues_and_reruns_from_its_own_matrices(runs, tmp_path):
    """The .npz was deleted after the run (fixture): the file's Q, K, V stand in for it, and the restart and
    the re-run record the path they were first read from."""
    first = meanfield.load_run(runs["npz"])
    continued = meanfield.simulate_particles(dim=3, n=16, init=str(runs["npz"]), t_final=1.0)
    assert continued.attrs["restart"] == "exact" and continued.attrs["qkv"] == first.attrs["qkv"]
    for name in ("Q", "K", "V"):
        np.testing.assert_array_equal(continued[name].values, first[name].values, strict=True)
    again = meanfield.rerun(runs["npz"])
    assert_same_run(first, again)


# -- 4. the command of a re-run is rebuilt, never copied -----------------------------------------------------------
def test_a_rerun_records_no_command_it_did_not_build(runs, tmp_path, capsys):
    """A file's ``command`` reached the new file verbatim (``meanfield solve circle; rm -rf /``).  The driver now
    builds it from the validated settings (``shlex.join``); it is kept when it is the file's own line, else the new
    file says ``meanfield rerun FILE``, which repeats it from its own record of its start."""
    original = meanfield.load_run(runs["fv"]).attrs["command"]
    lies = {"a shell command after it": original.replace("circle", "circle; rm -rf /"),
            "another seed": original.replace("--seed 0", "--seed 7"), "not meanfield": "rm -rf /"}
    for name, command in lies.items():
        out = tmp_path / f"{name}.nc"
        assert main(["rerun", str(_told(runs["fv"], tmp_path, _attrs(command=command))), "--out", str(out),
                     "--no-progress"]) == 0, name
        again = meanfield.load_run(out)
        assert again.attrs["command"] == RERUN_COMMAND, name
        assert main(["rerun", str(out), "--out", str(tmp_path / "third.nc"), "--no-progress"]) == 0
        np.testing.assert_array_equal(meanfield.load_run(tmp_path / "third.nc")["density"].values,
                                      again["density"].values, strict=True)
    capsys.readouterr()
    rebuilt = meanfield.rerun(runs["fv"]).attrs["command"]
    assert rebuilt == original and shlex.join(shlex.split(rebuilt)) == rebuilt


def test_text_a_rerun_keeps_is_one_line(runs, tmp_path, capsys, nothing_computed):
    line = _refused(_told(runs["fv"], tmp_path, _attrs(init="perturbed:1e-2\nrm -rf /")), "rerun", tmp_path, capsys)
    assert "attribute init = 'perturbed:1e-2\\nrm -rf /' is not allowed; it must be one line of text" in line
    line = _refused(_told(runs["fv"], tmp_path, _attrs(restart="later")), "rerun", tmp_path, capsys)
    assert "attribute restart = 'later' is not allowed; it must be one of exact, remap, none" in line


def test_a_file_without_a_start_record_shows_its_command_quoted(runs, tmp_path, capsys):
    """Without a record of its start a file can only be repeated by its command; the refusal shows it with every
    word quoted, so that pasting it runs ``meanfield`` and nothing else."""
    lie = lambda run: run.drop_vars("initial_state").assign_attrs(command="meanfield solve circle; rm -rf /")
    line = _refused(_told(runs["fv"], tmp_path, lie), "rerun", tmp_path, capsys)
    assert line.endswith("its command re-runs it: meanfield solve 'circle;' rm -rf /"), line


# -- 5. records of the start and of the end, against the declared model --------------------------------------------
#: ``(run, lie, reader, words)``: a record of the start is read by ``rerun``, the restart record by a restart.
RECORD_LIES = {
    "an fv start three times over": ("fv", _tripled("initial_state"), "rerun", "its record of its start does not fit "
                                                                               "this circle fv run"),
    "an fv end three times over": ("fv", _tripled("restart_state"), "continue", "its restart record does not fit "
                                                                                "this circle fv run"),
    "spectral coefficients stored as reals": ("spectral", _as_floats("initial_state"), "rerun",
                                              "its record of its start does not fit this circle spectral run"),
    "three systems of tokens": ("particles", _tripled("initial_state", leading=True), "rerun", "its record of its "
                                "start holds a state of shape (3, 16, 3); this run's is 1 x any x 3"),
    "weights three times over": ("particles", _tripled("initial_weights"), "rerun", "field 'weights' of its record "
                                 "of its start holds 48 values; this scheme's holds 16"),
    "an owner map three times over": ("particles", _tripled("restart_collapser__owner"), "continue",
                                      "field 'collapser.owner' of its restart record holds 48 values; this scheme's "
                                      "holds 16"),
}


@pytest.mark.parametrize("case", sorted(RECORD_LIES))
def test_a_record_that_does_not_fit_its_model_is_refused_before_computing(runs, tmp_path, capsys, nothing_computed,
                                                                          case):
    """A tripled ``initial_state`` was re-run and failed (a numpy traceback) only after computing its first steps."""
    run, lie, kind, words = RECORD_LIES[case]
    line = _refused(_told(runs[run], tmp_path, lie), kind, tmp_path, capsys)
    assert words in line, line


# -- valid files: as before --------------------------------------------------------------------------------------
@pytest.mark.parametrize("run", ["fv", "spectral", "zonal", "particles", "random"])
def test_valid_files_rerun_and_continue_as_before(runs, run):
    """Every check passes on the package's own files: the re-run is the run bit for bit, its command included (a
    particle run on the path ``auto`` chose records no ``--interaction``), and a restart is exact."""
    first = meanfield.load_run(runs[run])
    assert_same_run(first, meanfield.rerun(runs[run]))
    t_final = 2 * float(first.attrs["t_final"])
    continued = (meanfield.simulate_particles(dim=3, n=16, init=str(runs[run]), seed=None, t_final=t_final)
                 if run in ("particles", "random") else
                 meanfield.solve(first.attrs["geometry"], init=str(runs[run]), t_final=t_final))
    assert continued.attrs["restart"] == "exact"
