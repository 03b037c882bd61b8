"""meanfield: the mean-field PDE of self-attention dynamics on the sphere.

Public API (formulas in MATH.md, software contracts in DESIGN.md):

* :class:`Model` — attention, beta, nu, dim; :class:`InputError` for user mistakes.
* kernels — :func:`scaled_funk_hecke`, :func:`band_limit` (MATH.md §2.1–2.2); :class:`KernelOperator`, every
  multiplier of a model on a set of degrees (convolution, velocity, radial, energy form, band).
* theory — :func:`growth_rates`, :func:`dominant_mode`, :func:`linear_noise_threshold`,
  :func:`formation_time` (MATH.md §2.3); from a ``perturbed:EPS`` start (MATH.md §2.4)
  :func:`typical_amplitude` and :func:`dominance_probabilities` (which mode, on the circle how many
  clusters, dominates at formation).
* normalisation theory — :func:`equiangular_solution`, :func:`initial_rate`, :func:`late_time_decay`,
  :func:`mode_amplitude_factor`, :func:`effective_growth_rate` (MATH.md §6).
* clusters — one definition for every geometry, densities and tokens alike (:mod:`meanfield.cluster_detection`):
  :func:`clusters_in_frame` of any run file, :func:`clusters_of_density`, :func:`clusters_of_atoms`,
  :func:`detect_clusters` (a circle density).
* diagnostics — :func:`fit_growth_rates`, :func:`interaction_energy`.
* :mod:`meanfield.analysis` — distances between tokens and densities (MATH.md §4): the exact circle
  :func:`wasserstein1_circle`, negative Sobolev norms on the circle, S^2 and zonal S^{d-1}, coefficients of tokens.
  :func:`compare_runs` — the distance between two runs at their common times (``meanfield compare``,
  :mod:`meanfield.run_comparison`).
* :func:`solve` — run the PDE, returns an ``xarray.Dataset``; :func:`simulate_particles` — the
  tokens themselves; :func:`load_run`, :func:`save_run`.  ``init=`` takes text specs, arrays,
  DataArrays, callables and run files; a run file of the same scheme continues exactly.
  :func:`rerun` repeats any run bit for bit from the record of its start in its file.  :func:`grid` gives the points
  a callable ``init`` is called on and an array ``init`` is laid out on (sphere: colatitude and longitude in radians).
* settings — :class:`StepControl`, :class:`Monitor`, :class:`Saving`, :class:`Attention` and
  :class:`Normalization`: the groups of settings :func:`solve` and :func:`simulate_particles` take as objects
  (``step=StepControl(rtol=1e-10)``) or flat keywords; defaults in :mod:`meanfield.defaults`.
* :func:`plot_run` — the standard figure of a run.
* :mod:`meanfield.gaussian` — the Castin et al. mean/covariance ODEs (MATH.md §3); :func:`solve_gaussian_case`
  runs a named case as ``meanfield gaussian`` does.  :mod:`meanfield.gaussian_layers` — residual layers on Gaussian
  data, an exact moment map (MATH.md §3.1).
* tokens in R^d (MATH.md §12) — :func:`hardmax_case_run` (hardmax attention, exact and event-driven, and its
  finite-beta twin) and :func:`rd_case_run` (the rescaled tokens and their limit set) run the named cases of
  ``meanfield hardmax`` and ``meanfield rd`` (:mod:`meanfield.token_runs`).
* :mod:`meanfield.long_context` — one SA layer at ``beta = gamma log n``: :func:`one_layer_cosine` of
  equiangular tokens, its :func:`limit_cosine`, :func:`critical_gamma` (MATH.md §7).
* cluster dynamics — :func:`cluster_history` (the K-point ODE and its merges),
  :func:`plateau_estimate`, :func:`point_energy` (MATH.md §5).
* causal attention (MATH.md §8) — :func:`solve` with ``mask="causal"``, ``alibi=``, ``positions=`` solves the kinetic
  PDE in (position, direction); :func:`simulate_particles` with ``mask=`` (``causal``, ``strict``) and ``alibi=``;
  its linear theory in :mod:`meanfield.causal_theory`: :func:`evolve_mode` (the Green's function solution),
  :func:`green`, :func:`psi`, :func:`mode_rates`, :func:`profile_weights`, :func:`lost_in_the_middle`,
  :func:`end_slope`, :func:`t_crit`.
* noise-driven phase transitions (MATH.md §9) — :func:`stationary_branch`: the branch of stationary states from
  ``nu_#`` with its stability, folds, ``nu_c`` and curvature (:mod:`meanfield.solvers.stationary.branch`); ``nu_schedule=`` of
  :func:`solve` and :func:`simulate_particles` ramps the noise (:mod:`meanfield.noise_schedule`).
"""


from .app import _import_guard  # noqa: F401 - first: the command's signals while the modules below load
from .errors import InputError
from .lazy_names import first_use
from .version import __version__

#: The public names and where they live: each module is imported on first use (PEP 562), so ``import meanfield``
#: costs the interpreter and numpy, not scipy, xarray or the solvers (``help()`` and editors see the
#: real objects once touched).  ``None``: the module itself.
_PUBLIC = {
    "analysis": ("meanfield.analysis", None), "causal_theory": ("meanfield.causal_theory", None),
    "gaussian": ("meanfield.gaussian", None), "long_context": ("meanfield.long_context", None),
    **{name: ("meanfield.causal_theory", name) for name in ("end_slope", "evolve_mode", "green", "lost_in_the_middle",
                                                             "mode_rates", "profile_weights", "psi", "t_crit")},
    **{name: ("meanfield.cluster_dynamics", name) for name in ("cluster_history", "plateau_estimate", "point_energy")},
    "wasserstein1_circle": ("meanfield.analysis", "wasserstein1_circle"),
    "compare_runs": ("meanfield.run_comparison", "compare_runs"),
    **{name: ("meanfield.cluster_detection", name) for name in ("Clusters", "clusters_in_frame", "clusters_of_atoms",
                                                                 "clusters_of_density")},
    **{name: ("meanfield.diagnostics", name) for name in ("detect_clusters", "fit_growth_rates", "interaction_energy")},
    "sphere_area": ("meanfield.geometry", "sphere_area"), "KernelOperator": ("meanfield.kernel_operator", "KernelOperator"),
    "band_limit": ("meanfield.kernels", "band_limit"), "scaled_funk_hecke": ("meanfield.kernels", "scaled_funk_hecke"),
    **{name: ("meanfield.long_context", name) for name in ("critical_gamma", "limit_cosine", "one_layer_cosine")},
    "Model": ("meanfield.model", "Model"), "Normalization": ("meanfield.normalization", "Normalization"),
    **{name: ("meanfield.settings", name) for name in ("Attention", "Mask", "Monitor", "Saving", "StepControl")},
    "load_run": ("meanfield.app.storage", "load_run"), "save_run": ("meanfield.app.storage", "save_run"),
    **{name: ("meanfield.theory", name) for name in ("linear_noise_threshold", "critical_noise",
                                                      "dominance_probabilities", "dominant_mode", "formation_time",
                                                      "growth_rates", "law_leader", "typical_amplitude")},
    **{name: ("meanfield.normalization_theory", name) for name in ("effective_growth_rate", "equiangular_solution",
                                                                    "initial_rate", "late_time_decay",
                                                                    "mode_amplitude_factor")},
    # the entry points that live in ``solvers`` (DESIGN.md "Layout": the model does not import the solvers)
    "solve": ("meanfield.solvers.runs.solve", "solve"), "simulate_particles": ("meanfield.solvers.runs.particle_run", "simulate"),
    "rerun": ("meanfield.solvers.runs.rerun", "rerun"), "grid": ("meanfield.solvers.runs.grid", "grid"), "stationary_branch": ("meanfield.solvers.stationary.branch", "stationary_branch"),
    "solve_gaussian_case": ("meanfield.solvers.runs.gaussian_run", "solve_case"),
    **{name: ("meanfield.token_runs", name) for name in ("hardmax_case_run", "rd_case_run")},
}


#: A public name of :data:`_PUBLIC`, imported on first use and kept.
__getattr__ = first_use(globals(), "meanfield", _PUBLIC)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


def plot_run(dataset, path=None, modes=None):
    """The standard figure of a run; see :func:`meanfield.plotting.runs.plot_run` (imported lazily)."""
    from .plotting.runs import plot_run as _plot_run
    return _plot_run(dataset, path, modes)


__all__ = ["InputError", "plot_run", "__version__", *_PUBLIC]
