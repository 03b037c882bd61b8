"""Start-up (issue 36 item 2): the package and the command line import only what they use.

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
    assert meanfield.solve.__module__ == "meanfield.solvers.solve"
    assert meanfield.gaussian.solve.__module__ == "meanfield.solvers.gaussian_run"
    with pytest.raises(AttributeError, match="has no attribute 'nonsense'"):
        meanfield.nonsense  # noqa: B018


def test_the_gaussian_driver_is_wired_whichever_way_its_module_is_imported():
    """``meanfield.gaussian`` imported by another module first (not through the package's attribute)."""
    code = ("import meanfield.gaussian_cases, meanfield.gaussian as g\n"
            "print(g.solve.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "meanfield.solvers.gaussian_run"


@pytest.mark.parametrize("scheme", ["fv", "spectral"])
def test_a_circle_run_imports_no_other_geometry_particles_or_causal_module(scheme):
    """Issue 36: a circle run loads its scheme, not the sphere, zonal, Lagrangian, particle or causal modules."""
    code = (f"import sys, meanfield\n"
            f"meanfield.solve('circle', scheme={scheme!r}, beta=2.0, resolution=16, t_final=0.01, progress=False)\n"
            f"print(' '.join(sorted(m for m in sys.modules if m.startswith('meanfield') and "
            f"any(k in m for k in ('sphere', 'zonal', 'particle', 'causal', 'lagrang')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []
