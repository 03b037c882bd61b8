"""Figures and movies of runs (DESIGN.md data contract in, images out), and the style the validation studies share.

Modules, each importing only those listed before it:

* :mod:`meanfield.plotting.style` — the look shared by figures, movies and studies: resolution, colour
  maps, the symmetric log scale of ``rho / rho_bar - 1``, angle and time axes, legends outside the axes;
* :mod:`meanfield.plotting.run_data` — what a figure reads from a run: the geometries drawn, the
  variables each needs, the run's model and modes, the linear theory of its mode amplitudes;
* :mod:`meanfield.plotting.sphere` — runs on S^2 as Mollweide maps: densities, and nodes grouped where they
  coincide, marker area proportional to mass;
* :mod:`meanfield.plotting.particles` — the panels of token runs;
* :mod:`meanfield.plotting.gaussian` — the figure of a Gaussian (moment ODE) run;
* :mod:`meanfield.plotting.causal` — the figure of a causal kinetic run;
* :mod:`meanfield.plotting.runs` — :func:`~meanfield.plotting.runs.plot_run`, the standard figure of any run;
* :mod:`meanfield.plotting.movie` — :func:`~meanfield.plotting.movie.write_movie`, a run as .gif or .mp4.

The public names of the former module ``meanfield.plotting`` are imported here (``__all__``), so
``from meanfield.plotting import plot_run`` and the studies' ``from meanfield.plotting import legend_below``
keep working; the package's own modules import each name from the module that defines it.
"""

from .style import (COLORMAP, DENSITY_DECADES, DEVIATION_COLORMAP, DEVIATION_TICKS, DPI, HEAT_MAP_COLUMNS,
                    LINEAR_FRACTION, LINEAR_RANGE, deviation_colorbar, deviation_heat_map, deviation_norm,
                    deviation_ticks, legend_below, linear_label, linear_range, log_time_axis, mean_density,
                    outside_legend, polar_axis, pool_columns, relative_deviation, symlog, theta_axis)
from .run_data import (MIN_MODES, PLOTTABLE, REQUIRED, REQUIRED_ATTRS, TITLE_REASON_CHARS, check_plottable,
                       default_modes, frame_indices, require_run, theory_curves)
from .sphere import (FULL_MASS_AREA, MIN_MARKER_AREA, NODE_COLOUR, NODE_GROUP_SIZE, SPHERE_FRAMES, draw_nodes,
                     has_nodes, lon_lat, marker_areas, mass_legend, mass_legend_handles, mollweide_axes,
                     mollweide_style, node_groups, sphere_deviation_maps)
from .particles import pair_inner_products
from .gaussian import (EIGENVALUE_FLOOR, GAUSSIAN_ELLIPSES, GAUSSIAN_LABELLED, GAUSSIAN_TIME, gaussian_end,
                       gaussian_profile)
from .runs import THEORY_CEILING, check_image_path, plot_run, run_title

__all__ = ["COLORMAP", "DENSITY_DECADES", "DEVIATION_COLORMAP", "DEVIATION_TICKS", "DPI", "HEAT_MAP_COLUMNS",
           "LINEAR_FRACTION", "LINEAR_RANGE", "deviation_colorbar", "deviation_heat_map", "deviation_norm",
           "deviation_ticks", "legend_below", "linear_label", "linear_range", "log_time_axis", "mean_density",
           "outside_legend", "polar_axis", "pool_columns", "relative_deviation", "symlog", "theta_axis", "MIN_MODES",
           "PLOTTABLE", "REQUIRED", "REQUIRED_ATTRS", "TITLE_REASON_CHARS", "check_plottable", "default_modes",
           "frame_indices", "require_run", "theory_curves", "FULL_MASS_AREA", "MIN_MARKER_AREA", "NODE_COLOUR",
           "NODE_GROUP_SIZE", "SPHERE_FRAMES", "draw_nodes", "has_nodes", "lon_lat", "marker_areas", "mass_legend",
           "mass_legend_handles", "mollweide_axes", "mollweide_style", "node_groups", "sphere_deviation_maps",
           "pair_inner_products", "EIGENVALUE_FLOOR", "GAUSSIAN_ELLIPSES", "GAUSSIAN_LABELLED", "GAUSSIAN_TIME",
           "gaussian_end", "gaussian_profile", "THEORY_CEILING", "check_image_path", "plot_run", "run_title"]
