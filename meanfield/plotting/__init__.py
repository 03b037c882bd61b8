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

Import each name from the module that defines it (``from meanfield.plotting.runs import plot_run``;
``meanfield.plot_run`` for the standard figure).
"""
