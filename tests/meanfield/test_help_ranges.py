"""``--help`` states the ranges the solvers enforce: each scheme's smallest ``--resolution`` runs and the one below is
refused in one line naming ``resolution`` (``--resolution`` on the command line)."""

import pytest

import meanfield
from meanfield.cli import GEOMETRIES
from meanfield.errors import InputError

CASES = [("circle", "spectral", 8, 6, "even, >= 8"), ("circle", "fv", 8, 7, "fv: cells, >= 8"),
         ("circle", "lagrangian", 8, 6, "lagrangian: nodes, even, >= 8"), ("sphere", "spectral", 6, 5, ">= 6"),
         ("sphere", "lagrangian", 6, 5, ">= 6"), ("zonal", "galerkin", 8, 7, ">= 8"), ("zonal", "fv", 8, 7, "fv: cells, >= 8")]


@pytest.mark.parametrize("geometry, scheme, smallest, below, stated", CASES)
def test_the_stated_smallest_resolution_runs_and_the_one_below_is_refused(geometry, scheme, smallest, below, stated):
    assert stated in GEOMETRIES[geometry]["unit"]
    run = meanfield.solve(geometry, scheme=scheme, beta=1.0, resolution=smallest, t_final=0.01)
    assert run.attrs["stop_reason"] == "completed"
    with pytest.raises(InputError, match="^resolution"):      # from Python: the argument (meanfield.errors)
        meanfield.solve(geometry, scheme=scheme, beta=1.0, resolution=below, t_final=0.01)
