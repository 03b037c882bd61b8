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
:mod:`meanfield.solvers.runs.initial_state`'s job, through what the scheme contract declares.

Import each name from the module that defines it (``from meanfield.initial.circle import circle_density``).
"""
