"""Refusals name what the user typed (issue 38, item 4): from Python the keyword argument (``t_final``), on the
command line the flag (``--t-final``); the messages are written once, with flags (:mod:`meanfield.errors`).

The last tests read the library's source: every flag its messages name stands for an argument of the public
Python API (or of a public function of the module that names it), so a renamed argument cannot leave a message
naming something no function takes.
"""

import ast
import importlib
import inspect
import pickle
import types
from pathlib import Path

import numpy as np
import pytest

import meanfield
from meanfield.cli import main
from meanfield.errors import (COMMAND_LINE_ONLY, FLAG, PYTHON_NAMES, VERBATIM, InputError, command_line, python_name,
                              python_names)
from tests.meanfield.error_lines import one_error_line

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------ the same mistake twice
#: (Python call, the command line of the same mistake, the words the Python message starts with, the command's)
SAME_MISTAKE = [
    (lambda: meanfield.solve("circle", beta=9, t_final=-1.0), ["solve", "circle", "--beta", "9", "--t-final", "-1"],
     "t_final must be a finite number in (0, ", "--t-final must be a finite number in (0, "),
    (lambda: meanfield.solve("circle", beta=9, t_final=1, resolution=31),
     ["solve", "circle", "--beta", "9", "--t-final", "1", "--resolution", "31"],
     "resolution must be an even integer >= 8", "--resolution must be an even integer >= 8"),
    (lambda: meanfield.solve("circle", beta=9, t_final=1, nu=0.1, nu_schedule="ramp:0.3>0.1@0..1"),
     ["solve", "circle", "--beta", "9", "--t-final", "1", "--nu", "0.1", "--nu-schedule", "ramp:0.3>0.1@0..1"],
     "give nu or nu_schedule, not both (got nu 0.1 and nu_schedule 'ramp:0.3>0.1@0..1')",
     "give --nu or --nu-schedule, not both (got --nu 0.1 and --nu-schedule 'ramp:0.3>0.1@0..1')"),
    (lambda: meanfield.simulate_particles(beta=1, t_final=1, n=3, dim=2, init="orthogonal"),
     ["particles", "--beta", "1", "--t-final", "1", "--n", "3", "--dim", "2", "--init", "orthogonal"],
     "init orthogonal needs n <= dim", "--init orthogonal needs --n <= --dim"),
    (lambda: meanfield.Model("sa", beta=-1.0), ["theory", "--beta", "-1"],
     "beta must be a finite number in [0, ", "--beta must be a finite number in [0, "),
]


@pytest.mark.parametrize("call, argv, python_words, cli_words", SAME_MISTAKE)
def test_python_names_the_argument_and_the_command_line_the_flag(call, argv, python_words, cli_words, capsys):
    """One message, two spellings: the Python one names no flag, the command's names the flags, and renaming the
    command's flags gives the Python message exactly."""
    with pytest.raises(InputError) as refused:
        call()
    said = str(refused.value)
    assert said.startswith(python_words) and not FLAG.search(said), said
    assert main(argv) == 2
    line = one_error_line(capsys).removeprefix("meanfield: error: ")
    assert line.startswith(cli_words), line
    assert python_names(line) == said


def test_a_flag_whose_argument_is_spelled_otherwise_reads_as_that_argument(capsys, tmp_path):
    """:data:`PYTHON_NAMES`: ``--override`` is ``override=True`` from Python; ``--profile-width`` is ``width``."""
    run = meanfield.solve("circle", beta=1, t_final=0.5, resolution=16, init="perturbed:1e-3", seed=1)
    with pytest.raises(InputError, match=r"beta = 2\.0 differs from 1\.0, .*; override=True changes it\)$"):
        meanfield.solve("circle", beta=2.0, t_final=1.0, init=run)
    meanfield.save_run(run, tmp_path / "run.nc")
    assert main(["solve", "circle", "--beta", "2", "--t-final", "1", "--init", str(tmp_path / "run.nc"),
                 "--out", str(tmp_path / "next.nc")]) == 2
    assert one_error_line(capsys).endswith("of the --init run: a restart keeps its model (give the file's value, or "
                                           "leave it out where the file supplies it; --override changes it)")
    model = meanfield.Model("sa", beta=1.0, nu=0.0, dim=2)
    with pytest.raises(InputError, match=r"\(a width below ~0\.08 underflows every omega_k\)$"):
        meanfield.t_crit(model, 1.0, np.zeros(3))


def test_quoted_text_and_the_command_lines_own_flags_stay_as_written():
    """A value the user gave (quoted) keeps its dashes; `meanfield --help` in backticks is a command to type."""
    with pytest.raises(InputError, match=r"^init: unknown initial condition '--beta'; expected "):
        meanfield.solve("circle", beta=9, t_final=1, init="--beta")
    with pytest.raises(InputError, match=r"the qkv range in `meanfield --help`$"):
        meanfield.simulate_particles(beta=1, t_final=1, n=4, dim=2, Q=np.eye(2) * 1e300, K=np.eye(2), V=np.eye(2))
    assert python_names("--init /tmp/--x.nc: see meanfield --version, the run's --save-every \"--dim\"") == \
        "init /tmp/--x.nc: see meanfield --version, the run's save_every \"--dim\""


def test_a_refusal_from_a_worker_process_keeps_its_flags_for_the_command_line():
    """The message travels as written (a worker's refusal is pickled back to the command that asked, a sweep's
    chunk on a Dask cluster): the reader's names are chosen where it is read."""
    back = pickle.loads(pickle.dumps(InputError("--t-final must be > 0 (got --nu-schedule 'x')")))
    assert str(back) == "t_final must be > 0 (got nu_schedule 'x')"
    with command_line():
        assert str(back) == "--t-final must be > 0 (got --nu-schedule 'x')"
    assert str(InputError(f"--init {back}")) == "init t_final must be > 0 (got nu_schedule 'x')"


# ------------------------------------------------------------------------------------------ read off the source
#: Modules whose strings are never messages of the library: the command line itself.
COMMAND_LINE_MODULES = {"meanfield/cli.py"}


def _refuses(tree: ast.Module) -> bool:
    """Whether a module refuses input: it imports from :mod:`meanfield.errors` or :mod:`meanfield.limits`."""
    return any(isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] in ("errors", "limits")
               for node in ast.walk(tree))


def _not_messages(tree: ast.Module) -> set:
    """The strings of a module that are no message: docstrings, argparse's own, argv words, command lines."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("add_argument", "error"):
            skip.update(ast.walk(node))
        elif isinstance(node, (ast.List, ast.Tuple)) and any(
                isinstance(word, ast.Constant) and isinstance(word.value, str) and FLAG.fullmatch(word.value)
                for word in node.elts):
            skip.update(ast.walk(node))
        elif isinstance(node, (ast.Constant, ast.JoinedStr)):
            first = node if isinstance(node, ast.Constant) else (node.values or [None])[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) \
                    and first.value.startswith(("meanfield ", "python -m ")):
                skip.update(ast.walk(node))
    return skip


def flags_in_messages() -> dict[str, set[str]]:
    """Every flag the library's messages name (what :func:`meanfield.errors.python_names` renames), with the
    modules (``meanfield.x.y``) that name it."""
    found = {}
    for folder, package in (("meanfield", "meanfield"), ("solvers", "meanfield.solvers"),
                            ("validation", "meanfield.validation")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text())
            if relative in COMMAND_LINE_MODULES or not _refuses(tree):
                continue
            module = ".".join([package, *path.relative_to(ROOT / folder).with_suffix("").parts])
            skip = _not_messages(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node not in skip:
                    for flag in FLAG.findall(VERBATIM.sub("", node.value)):
                        if flag not in COMMAND_LINE_ONLY:
                            found.setdefault(flag, set()).add(module.removesuffix(".__init__"))
    return found


def _parameters(obj) -> set[str]:
    try:
        return set(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return set()


def public_arguments(obj, seen: set | None = None) -> set[str]:
    """The argument names of ``obj`` (a function; a class and its public methods; a module's public functions and
    classes defined in it)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return set()
    seen.add(id(obj))
    if isinstance(obj, types.ModuleType):
        members = [value for name, value in vars(obj).items()
                   if not name.startswith("_") and getattr(value, "__module__", None) == obj.__name__]
        return set().union(*(public_arguments(member, seen) for member in members))
    names = _parameters(obj) if callable(obj) else set()
    if inspect.isclass(obj):
        for name, member in vars(obj).items():
            if not name.startswith("_") and callable(member):
                names |= _parameters(member)
    return names


def api_arguments() -> set[str]:
    """The argument names of everything ``import meanfield`` exports (modules: their public functions)."""
    seen = set()
    return set().union(*(public_arguments(getattr(meanfield, name), seen) for name in meanfield.__all__))


def test_the_library_names_flags_in_its_messages():
    """The scan below reads messages: the flags of the common mistakes are among what it finds, and the
    command-line words it must leave out (argparse's, argv lists, command lines) are not."""
    found = flags_in_messages()
    assert {"--t-final", "--beta", "--resolution", "--init", "--nu-schedule", "--override"} <= set(found)
    assert "meanfield.solvers.runs.solve" in found["--t-final"] and "meanfield.model" in found["--beta"]
    assert "--quick" not in found and "--help" not in found and len(found) >= 40


def test_every_flag_in_a_message_is_an_argument_of_some_public_function():
    """Each flag a message names reads, from Python, as an argument the public API takes (or a public function of
    the module naming it): a renamed argument leaves no dangling name."""
    api = api_arguments()
    dangling = {}
    for flag, modules in flags_in_messages().items():
        name = python_name(flag).split("=")[0]
        for module in modules:
            if name not in api and name not in public_arguments(importlib.import_module(module)):
                dangling.setdefault(flag, []).append(module)
    assert not dangling, f"flags whose Python name ({{flag: modules}}) no public function takes: {dangling}"


def test_the_table_of_other_spellings_names_real_arguments():
    """Each entry of :data:`PYTHON_NAMES` differs from the plain spelling and names an argument of the API, with a
    value of its type where it is a flag that sets a boolean."""
    api = api_arguments()
    for flag, python in PYTHON_NAMES.items():
        name, _, value = python.partition("=")
        assert python != flag[2:].replace("-", "_") and name in api and value in ("", "True", "False"), flag
    assert api_arguments() >= {"t_final", "nu_schedule", "override", "progress", "width"}
