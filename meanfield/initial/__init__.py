"""Initial data: text specs per geometry, and densities given as arrays, DataArrays, functions or runs.

One job a module:

* :mod:`meanfield.initial.spec`: what every geometry's text spec (``--init``) shares: the grammar
  ``A+B+...`` / ``run.nc``, numbers, how messages name the data, the sign, mass and resolution checks;
* :mod:`meanfield.initial.circle`, :mod:`meanfield.initial.sphere`, :mod:`meanfield.initial.zonal`:
  each geometry's specs, its checks and its interpolation onto its grid from other points;
* :mod:`meanfield.initial.kinds`: what kind ``init`` is (text, path, array, DataArray, Dataset,
  function) and how refusals name it;
* :mod:`meanfield.initial.sources`: arrays, DataArrays, functions and runs read into a checked
  :class:`meanfield.initial.sources.GridSource`;
* :mod:`meanfield.initial.averages`: the conservative remap, exact cell averages of a piecewise
  density.

Nothing here knows a scheme: putting initial data onto one (``initial_state``) is
:mod:`meanfield.solvers.initial_state`'s job, through what the scheme contract declares.

The names below are re-exported here; the bare ``perturbed_density`` and ``von_mises`` are the
circle's (as when this was one module), the sphere's and the zonal ones are in their modules.
"""

from .averages import Piecewise, conservative_averages, interval_faces, periodic_faces, piecewise
from .circle import (INIT_HELP, check_density, circle_density, circle_values, periodic_resample, perturbed_density,
                     von_mises)
from .kinds import KINDS, describe_init, kind_of, label_of
from .sources import COORDINATES, UNITS, GridSource, as_values, evaluate, load_init_run, read_source
from .spec import UNRESOLVED_TOL, VON_MISES, check_sign_and_mass, density_from_spec, init_label, require_resolved

from ..lazy_names import first_use

#: The sphere's and the zonal readers, imported on first use (a circle run loads neither).
__getattr__ = first_use(globals(), "meanfield.initial", {
    **{name: ("meanfield.initial.sphere", name) for name in ("check_sphere_density", "direction", "sphere_density",
                                                              "unit_vectors")},
    **{name: ("meanfield.initial.zonal", name) for name in ("check_zonal_density", "zonal_density")}})

__all__ = ["INIT_HELP", "VON_MISES", "UNRESOLVED_TOL", "perturbed_density", "von_mises", "periodic_resample",
           "circle_values", "circle_density", "check_density", "density_from_spec", "init_label",
           "check_sign_and_mass", "require_resolved",
           "sphere_density", "check_sphere_density", "direction", "unit_vectors", "zonal_density",
           "check_zonal_density",
           "KINDS", "describe_init", "kind_of", "label_of",
           "COORDINATES", "UNITS", "GridSource", "as_values", "evaluate", "read_source", "load_init_run",
           "Piecewise", "piecewise", "interval_faces", "periodic_faces", "conservative_averages"]
