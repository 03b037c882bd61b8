"""Start-up: the package and the command line import only what they use.

What is imported is checked here (speed is measured by ``meanfield validate bench-startup``, not asserted): the
heavy libraries (scipy, xarray, pandas, matplotlib, dask) and the solvers wait until a name that needs them is used.
"""

import subprocess
import sys

import pytest

HEAVY = ("scipy", "xarray", "pandas", "matplotlib", "dask", "meanfield.solvers", "meanfield.validation")


def loaded_after(code: str) -> set[str]:
    """The heavy top-level packages (and meanfield's subpackages) in ``sys.modules`` after ``code``, in a fresh
    interpreter."""
    probe = (f"{code}\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
             f"{tuple(h for h in HEAVY if '.' not in h)!r} or m.startswith(('meanfield.solvers', 'meanfield.validation')))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


@pytest.mark.parametrize("code", ["import meanfield", "import meanfield.cli"])
def test_importing_the_package_or_the_command_line_loads_nothing_heavy(code):
    """The command line's one light exception: the study registry, which declares the validate subcommands."""
    assert loaded_after(code) - {"meanfield.validation", "meanfield.validation.registry"} == set()


def test_every_public_name_resolves_on_first_use():
    import meanfield

    for name in meanfield.__all__:
        assert getattr(meanfield, name) is not None, name
    assert meanfield.solve.__module__ == "meanfield.solvers.runs.solve"
    assert meanfield.gaussian.solve.__module__ == "meanfield.solvers.runs.gaussian_run"
    with pytest.raises(AttributeError, match="has no attribute 'nonsense'"):
        meanfield.nonsense  # noqa: B018


def test_the_gaussian_driver_is_wired_whichever_way_its_module_is_imported():
    """``meanfield.gaussian`` imported by another module first (not through the package's attribute)."""
    code = ("import meanfield.gaussian_cases, meanfield.gaussian as g\n"
            "print(g.solve.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "meanfield.solvers.runs.gaussian_run"


@pytest.mark.parametrize("scheme", ["fv", "spectral"])
def test_a_circle_run_imports_no_other_geometry_particles_or_causal_module(scheme):
    """Issue 36: a circle run loads its scheme, not the sphere, zonal, Lagrangian, particle or causal modules."""
    code = (f"import sys, meanfield\n"
            f"meanfield.solve('circle', scheme={scheme!r}, beta=2.0, resolution=16, t_final=0.01, progress=False)\n"
            f"print(' '.join(sorted(m for m in sys.modules if m.startswith('meanfield') and "
            f"any(k in m for k in ('sphere', 'zonal', 'particle', 'causal', 'lagrang')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []


def test_a_command_that_never_uses_dask_keeps_it_out_and_a_library_caller_keeps_it(tmp_path):
    """``meanfield solve`` as the console command: xarray finds no Dask to ask about (dask.array and distributed cost
    0.3 s there); the same command group called from Python (argv[0] not ``meanfield``) leaves Dask importable."""
    def dask_modules(argv0: str, after: str = "") -> set:
        code = (f"import sys\nsys.argv = [{argv0!r}, 'solve', 'circle', '--beta', '4', '--t-final', '0.1', "
                f"'--resolution', '32', '--out', {str(tmp_path / 'run.nc')!r}, '--no-progress']\n"
                "from meanfield.cli import cli\ntry:\n    cli()\nexcept SystemExit:\n    pass\n" + after +
                "print('LOADED', *sorted(m for m, v in sys.modules.items() if v is not None and "
                "m.split('.')[0] in ('dask', 'distributed', 'xarray')))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        line = [row for row in done.stdout.splitlines() if row.startswith("LOADED")][-1]
        return set(line.split()[1:])

    as_command = dask_modules("/usr/bin/meanfield")
    assert "xarray" in as_command and not {"dask", "distributed", "dask.array"} & as_command
    assert "dask.array" in dask_modules("python", "import dask.array\n")


def test_theory_branch_reads_its_branches_without_xarray():
    """``theory --branch --json`` reads the branches as arrays (BranchTable): no xarray, whose import alone is a
    quarter of the command's wall; the Dataset of the Python API holds the same numbers."""
    code = ("import sys\nfrom meanfield.cli import main\n"
            "try:\n    main(['theory', '--branch', '--attention', 'usa', '--beta', '3', '--dim', '2', '--json'])\n"
            "except SystemExit:\n    pass\n"
            "print('xarray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == "False" and '"nu_sharp"' in done.stdout


def test_a_branch_table_is_its_dataset():
    import numpy as np

    from meanfield.solvers.stationary.branch import follow_branch, stationary_branch

    table = follow_branch("usa", 3.0, 2, max_points=12)
    dataset = stationary_branch("usa", 3.0, 2, max_points=12)
    assert table.points == dataset.sizes["point"]
    for name in dataset.data_vars:
        np.testing.assert_array_equal(table[name], dataset[name].values)
    for key, value in table.attrs.items():
        if key != "wall_time":
            np.testing.assert_array_equal(dataset.attrs[key], value, err_msg=key)
