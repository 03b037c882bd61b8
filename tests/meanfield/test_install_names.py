"""The distribution claims one import name, ``meanfield`` (issue 22 item 4).

The repository keeps its top-level ``solvers/`` and ``validation/`` folders; they install as
``meanfield.solvers`` and ``meanfield.validation`` (``pyproject.toml``: ``package-dir``), so installing
meanfield can no longer overwrite another distribution's ``solvers`` or ``validation``.
"""

import importlib.util
import pathlib
import subprocess
import sys
import tarfile
import zipfile

import pytest

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def test_the_short_names_are_not_importable_from_an_installed_meanfield(tmp_path):
    """Outside the checkout only ``meanfield`` imports; its subpackages are the repository's folders."""
    code = ("import importlib.util, meanfield.solvers.runs.solve, meanfield.validation.harness;"
            "print(importlib.util.find_spec('solvers'), importlib.util.find_spec('validation'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "None"]
    assert pathlib.Path(importlib.util.find_spec("meanfield.solvers").origin).parent == REPOSITORY / "solvers"


@pytest.mark.skipif(importlib.util.find_spec("build") is None, reason="the `build` front end is in the test extra")
def test_the_sdist_and_wheel_install_only_meanfield(tmp_path):
    """``python -m build``: the sdist carries the C sources, the wheel (built from that sdist) holds only
    ``meanfield/`` and its metadata, with the compiled kernel at ``meanfield/solvers/`` and the compiled circle count at
    ``meanfield/``."""
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(REPOSITORY)],
                   check=True, capture_output=True, text=True)
    (sdist,) = tmp_path.glob("meanfield-*.tar.gz")
    (wheel,) = tmp_path.glob("meanfield-*.whl")
    with tarfile.open(sdist) as archive:
        sources = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"solvers/_circle_kernel.c", "solvers/_fv_kernel.c", "meanfield/_circle_clusters.c", "setup.py", "pyproject.toml", "validation/harness.py"} <= sources
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top_level = {name.split("/", 1)[0] for name in names}
    assert top_level == {"meanfield", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    assert any(name.startswith("meanfield/solvers/_circle_kernel") and name.endswith(".so") for name in names)
    assert any(name.startswith("meanfield/_circle_clusters") and name.endswith(".so") for name in names)
    assert any(name.startswith("meanfield/solvers/_fv_kernel") and name.endswith(".so") for name in names)
    assert {"meanfield/solvers/runs/solve.py", "meanfield/validation/harness.py", "meanfield/cli.py"} <= set(names)
    # every module of the three folders, subpackages included (a package missing from pyproject's list is not built)
    root = REPOSITORY
    installed = {"meanfield": "meanfield", "solvers": "meanfield/solvers", "validation": "meanfield/validation"}
    expected = {f"{installed[folder]}/{path.relative_to(root / folder).as_posix()}"
                for folder in installed for path in (root / folder).rglob("*.py")}
    assert not expected - set(names), sorted(expected - set(names))


def test_pyproject_lists_every_package_of_the_three_folders():
    """Every folder with an ``__init__.py`` is a package in pyproject's list: one left out is installed only by
    chance (setuptools' package data from an egg-info), so a subpackage must be named (meanfield.plotting was not)."""
    import tomllib

    listed = set(tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    roots = {"meanfield": "meanfield", "solvers": "meanfield.solvers", "validation": "meanfield.validation"}
    found = {".".join([roots[folder], *init.parent.relative_to(REPOSITORY / folder).parts])
             for folder in roots for init in (REPOSITORY / folder).rglob("__init__.py")}
    assert found == listed, (sorted(found - listed), sorted(listed - found))
