"""The rules the code itself keeps (DESIGN.md "Layout"): the layer rule ``meanfield <- solvers <- validation`` with no
import cycle, checked by import-linter against the contracts in pyproject.toml; and ruff's lint configuration there.

import-linter reads the package from the file system: the test lays out the installed tree (``meanfield/`` with
``solvers/`` and ``validation/`` inside, as the wheel holds them) out of symbolic links in a temporary folder and
lints that, so the check sees exactly what a user imports."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: `make test` installs it with the test extras (pyproject.toml)")
    return path


def installed_tree(folder: Path) -> Path:
    """``folder/meanfield``: links to every entry of ``meanfield/``, and ``solvers`` and ``validation`` inside it."""
    package = folder / "meanfield"
    package.mkdir()
    for entry in (ROOT / "meanfield").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    _mirror(ROOT / "solvers", package / "solvers")
    _mirror(ROOT / "validation", package / "validation")
    return package


def _mirror(source: Path, target: Path) -> None:
    """``target``: real folders holding links to ``source``'s files, so that a test can add a module there."""
    target.mkdir()
    for entry in source.iterdir():
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            _mirror(entry, target / entry.name)
        else:
            (target / entry.name).symlink_to(entry)


def lint_imports(folder: Path):
    return subprocess.run([_tool("lint-imports"), str(ROOT / "pyproject.toml"), "--no-cache"], capture_output=True,
                          text=True, cwd=folder, env=dict(os.environ, PYTHONPATH=str(folder)))


def test_the_layer_rule_and_no_cycles_hold(tmp_path):
    installed_tree(tmp_path)
    done = lint_imports(tmp_path)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "6 kept, 0 broken" in done.stdout, done.stdout[-3000:]


@pytest.mark.parametrize("extra, broken", [
    ({"zz_model.py": "def f():\n    from meanfield.solvers import solve\n"}, "imported only by validation"),
    ({"zz_model.py": "from meanfield.validation import registry\n"}, "imported only by the command line"),
    ({"zz_one.py": "from . import zz_two\n", "zz_two.py": "from . import zz_one\n"}, "no import cycle"),
    ({"validation/studies/zz_study.py": "from ..benchmarks import circle\n"}, "do not import each other"),
    ({"validation/report.py": "+from .studies import mean_field\n"}, "imports no study or benchmark"),
    ({"solvers/bases/zz_up.py": "def f():\n    from ..tracking import trackers\n"}, "each importing only those"),
])
def test_each_contract_catches_its_violation(tmp_path, extra, broken):
    """A lower layer reaching up (even inside a function), two modules importing each other, a study importing a
    benchmark, the validation infrastructure importing a study, or a solvers' folder importing one above it (a basis
    reaching the trackers: no cycle, so only the layers see it) breaks the check."""
    package = installed_tree(tmp_path)
    for name, text in extra.items():
        path = package / name
        if text.startswith("+"):                  # the module as it is, with a line added (a copy: never the source)
            text = path.read_text() + text[1:]
        if path.is_symlink():
            path.unlink()
        path.write_text(text)
    done = lint_imports(tmp_path)
    assert done.returncode != 0 and "1 broken" in done.stdout, done.stdout[-3000:]
    assert f"{broken}" in done.stdout.split("Broken contracts")[-1], done.stdout[-3000:]


def test_the_linted_tree_is_the_installed_package(tmp_path):
    """What the contracts check is the package Python imports (a broken layout would let them pass on nothing)."""
    installed_tree(tmp_path)
    code = "import meanfield.solvers.runs.solve, meanfield.validation.registry as r, meanfield; print(meanfield.__file__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent == tmp_path / "meanfield"


def test_ruff_passes_on_the_whole_tree():
    done = subprocess.run([_tool("ruff"), "check", "--no-cache", "meanfield", "solvers", "validation", "tests",
                           "docs/examples", "setup.py"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-6000:]


def _imports_of_the_package_itself(path: Path, package_dir: Path):
    """The import statements of ``path`` (at any depth) that load ``meanfield/__init__.py`` for a name it defines:
    ``import meanfield`` or ``from meanfield import X`` (``from . import X`` inside ``meanfield/``) where ``X`` is
    not a module or subpackage."""
    def is_module(name):
        return (package_dir / f"{name}.py").exists() or (package_dir / name / "__init__.py").exists() \
            or name in ("solvers", "validation")

    inside = path.parent == package_dir
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(alias.name == "meanfield" for alias in node.names):
            yield node.lineno, "import meanfield"
        elif isinstance(node, ast.ImportFrom):
            own = node.module == "meanfield" and node.level == 0 or (inside and node.level == 1 and not node.module)
            names = [alias.name for alias in node.names if not is_module(alias.name)]
            if own and names:
                yield node.lineno, f"from {node.module or '.'} import {', '.join(names)}"


def test_no_module_imports_the_package_init_for_a_name():
    """Only the entry points (cli, demo, __init__) may: the package's __init__ imports half the package, so a module
    that takes a name from it depends on everything (storage once took ``__version__`` so)."""
    package_dir = ROOT / "meanfield"
    found = []
    for folder in ("meanfield", "solvers", "validation"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() in ("meanfield/__init__.py", "meanfield/cli.py", "meanfield/demo.py"):
                continue
            found += [f"{path.relative_to(ROOT)}:{line}: {text}" for line, text in
                      _imports_of_the_package_itself(path, package_dir)]
    assert not found, "\n".join(found)


def test_the_pde_driver_names_no_scheme():
    """solvers/runs/solve.py asks a scheme only through the contract (DESIGN.md "Scheme contract"): no scheme name appears
    in its code (docstrings aside), so adding a scheme is its module and a line in meanfield/schemes.py."""
    from meanfield.schemes import SCHEMES

    names = {name for table in SCHEMES.values() for name in table}
    tree = ast.parse((ROOT / "solvers" / "runs" / "solve.py").read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    named = [(node.lineno, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant)
             and isinstance(node.value, str) and id(node) not in docstrings
             and any(name in node.value.replace("-", " ").split() or node.value == name for name in names)]
    assert not named, named


def test_the_package_cites_no_issue_numbers():
    """A module says what it does and cites MATH.md or DESIGN.md for why, not the issue it came from (a reader of the
    package has no issue tracker)."""
    import re

    cited = []
    for folder in ("meanfield", "solvers", "validation"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"\bissues? \d+", line):
                    cited.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert cited == []


#: The names of the registered geometries and attention kinds, which only their own modules may branch on.
MODEL_NAMES = {"circle", "sphere", "zonal", "sa", "usa"}
#: The modules that define those objects (meanfield/geometries.py, meanfield/attention_kind.py).
OBJECT_MODULES = {"meanfield/geometries.py", "meanfield/attention_kind.py"}


def name_branches(source: str) -> list[tuple[int, str]]:
    """``(line, code)`` of every comparison of a value with a geometry or attention name: ``== "circle"``,
    ``!= "sa"``, ``in ("sphere", "zonal")`` (iterating over names, ``for a in ("sa", "usa")``, is not one)."""
    def named(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in MODEL_NAMES

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for op, left, right in zip(node.ops, [node.left, *node.comparators], node.comparators):
            equality = isinstance(op, (ast.Eq, ast.NotEq)) and (named(left) or named(right))
            membership = (isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set))
                          and any(named(element) for element in right.elts))
            if equality or membership:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_code_branches_on_a_geometry_or_attention_name():
    """A geometry or an attention is an object (meanfield.geometries, meanfield.attention_kind): code asks it, so a
    new one is one class; no module outside those two compares a value with their names."""
    found = []
    for folder in ("meanfield", "solvers", "validation"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative not in OBJECT_MODULES:
                found += [f"{relative}:{line}: {code}" for line, code in name_branches(path.read_text(encoding="utf-8"))]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("code, branches", [
    ('if geometry == "circle": pass', 1), ('x = "sa" != attention', 1), ('ok = g in ("sphere", "zonal")', 1),
    ('ok = a not in ["usa"]', 1), ('for a in ("sa", "usa"): pass', 0), ('x = {"circle": 1}[g]', 0),
    ('if geometry_of(g).fourier: pass', 0)])
def test_the_name_rule_sees_each_kind_of_branch(code, branches):
    assert len(name_branches(code)) == branches


def _code_lines(node) -> int:
    """A function's lines, its signature included and its docstring left out."""
    total = node.end_lineno - node.lineno + 1
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        total -= first.end_lineno - first.lineno + 1
    return total


def test_the_drivers_keep_only_argument_handling_and_no_function_is_long():
    """The drivers turn arguments into a RunPlan; the run itself is solvers/runs/controller.py's, once (so each is at
    most 60 lines); no function of the package is over 100 lines."""
    lengths = {}
    for folder in ("meanfield", "solvers", "validation"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lengths[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = _code_lines(node)
    assert lengths["solvers/runs/solve.py:solve"] <= 60
    assert lengths["solvers/runs/particle_run.py:simulate"] <= 60
    assert {name: size for name, size in lengths.items() if size > 100} == {}
