"""Set up and run a PDE solve from the model and settings objects; returns the DESIGN.md Dataset.

This is what ``meanfield solve`` and :func:`meanfield.solve` call.  The settings come as the objects of
:mod:`meanfield.settings` (``step``, ``monitor``, ``saving``, ``normalization``) or as their flat keywords;
the run works from the objects.  Schemes are looked up in :data:`SCHEMES` by geometry and name, steppers in
:data:`meanfield.solvers.steppers.steppers.STEPPERS`.
"""

from __future__ import annotations

import importlib

import numpy as np

from meanfield.defaults import SOLVE_DEFAULTS, geometry_default
from meanfield.errors import require
from meanfield.geometries import geometry_of
from meanfield.initial.spec import mixture_attrs
from meanfield.limits import check_solve_size
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.schemes import DEFAULT_SCHEME, SCHEMES
from meanfield.settings import Monitor, Saving, StepControl, gather
from meanfield.theory import dominant_mode
from meanfield.app.threads import thread_attrs

from ..records import checkpoint
from ..records.run_record import init_label, loop_attrs, restart_attrs, run_attrs, run_command, schedule_command
from ..schemes.contract import conform
from .restart import joined, resolve_model, resolve_normalization, resolve_schedule
from .controller import RunPlan, assemble, execute
from .initial_state import initial_state
from .run_setup import draw_seed, given, run_clock, user_trackers


def scheme_class(geometry: str, name: str):
    """The scheme class registered as ``name`` for ``geometry`` (see :data:`SCHEMES`)."""
    module, _, cls = SCHEMES[geometry][name].partition(":")
    return getattr(importlib.import_module(module), cls)


def _source_settings(source, geometry: str, scheme, resolution, dim):
    """``scheme``, ``resolution`` and ``dim`` not given: those of a run file of the same geometry."""
    if source is None or source.attrs.get("geometry") != geometry:
        return scheme, resolution, dim
    attrs = source.attrs
    if scheme is None and attrs.get("scheme") in SCHEMES[geometry]:
        scheme = attrs["scheme"]
    resolution = int(attrs["resolution"]) if resolution is None and "resolution" in attrs else resolution
    dim = int(attrs["dim"]) if dim is None and "dim" in attrs else dim
    return scheme, resolution, dim


def build_options(cls, **options) -> dict:
    """The settings among ``options`` that the scheme class takes (its ``build_options``, the contract of
    :mod:`meanfield.solvers.schemes.contract`); one given to a scheme that does not take it is refused in one line."""
    for name, value in options.items():
        if value is not None and name not in cls.build_options:    # the line names the schemes: only then built
            require(False, f"--{name.replace('_', '-')} applies to --scheme "
                           f"{' or '.join(sorted(scheme_names(lambda scheme: name in scheme.build_options)))} only "
                           f"(got --scheme {cls.name})")
    return {name: value for name, value in options.items() if name in cls.build_options}


def scheme_names(predicate) -> set:
    """The names of the registered schemes whose classes satisfy ``predicate`` (for a refusal's line)."""
    return {name for geometry, table in SCHEMES.items() for name in table if predicate(scheme_class(geometry, name))}


def _ordinary(mask, alibi, positions, source) -> bool:
    """An ordinary (not causal) run without a word about causality: what :func:`meanfield.solvers.schemes.causal.check_causal`
    accepts as such, told without importing the causal modules (a plain run loads none of them)."""
    recorded = "none" if source is None else source.attrs.get("mask", "none")
    return mask in (None, "none") and alibi is None and positions is None and recorded != "causal"


def _checked_causal(mask, alibi, positions, geometry: str, scheme, source):
    """:func:`meanfield.solvers.schemes.causal.check_causal`, imported when a run speaks of causality."""
    from ..schemes.causal import check_causal

    return check_causal(mask, alibi, positions, geometry, scheme, source)


def _continues_causal(source, causal) -> bool:
    from ..schemes.causal import continues_causal

    return continues_causal(source, *causal)


def build_scheme(geometry: str, scheme: str, model: Model, resolution: int, backend, monitor: Monitor,
                 normalization: Normalization, options: dict):
    """The discretisation ``scheme`` of ``geometry`` (:data:`SCHEMES`), checked against the contract; ``options``
    are its own settings (:func:`build_options`)."""
    return conform(scheme_class(geometry, scheme)(model, resolution, backend=backend, normalization=normalization,
                                                  **monitor.scheme_options(), **options))


def build_causal(geometry: str, scheme: str, model: Model, resolution: int, backend, monitor: Monitor,
                 normalization: Normalization, causal: tuple):
    """The causal kinetic PDE (MATH.md §8) on ``causal = (alibi, positions)`` slices of the ordinary ``scheme``."""
    from ..schemes.causal import CausalKinetic

    alibi, positions = causal
    one = build_scheme(geometry, scheme, model, resolution, backend, monitor, normalization, {})
    return CausalKinetic(one, positions, alibi)


def solve(geometry: str = "circle", *, attention: str | None = None, beta: float | None = None,
          nu: float | None = None, dim: int | None = None, resolution: int | None = None,
          scheme: str | None = None, init=SOLVE_DEFAULTS["init"], seed: int | None = SOLVE_DEFAULTS["seed"],
          t_final: float | None = None, save_every: float | None = None, save_log: int | None = None,
          stepper: str | None = None, rtol: float | None = None, atol: float | None = None,
          cfl: float | None = None, dt_max: float | None = None, resolution_tol: float | None = None, positivity_tol: float | None = None,
          normalization: str | Normalization | None = None, alpha: float | None = None, r0: float | None = None,
          mix_switch: float | None = None, collapse_tol: float | None = SOLVE_DEFAULTS["collapse_tol"],
          override: bool = False, trackers=(), progress: bool = False, backend: str | None = None,
          step: StepControl | None = None, monitor: Monitor | None = None, saving: Saving | None = None,
          mask: str | None = None, alibi: float | None = None, positions: int | None = None, nu_schedule=None):
    """Solve the mean-field PDE (MATH.md §2), or the causal kinetic PDE (MATH.md §8), and return the run as an
    ``xarray.Dataset``.

    Parameters
    ----------
    geometry : {"circle", "sphere", "zonal"}
        The circle (Fourier), S^2 (spherical harmonics) or zonal densities on S^{dim-1} (Gegenbauer).
    attention : {"sa", "usa"}, optional
        Softmax or unnormalised attention (MATH.md §1).  Default: the run file's, else ``"sa"``.
    beta : float
        Inverse temperature, in the range of ``meanfield --help`` (USA: at most 700).  Required unless ``init`` is a
        run file, whose beta a restart keeps.
    nu : float, optional
        Noise strength ``>= 0`` (default: the run file's, else 0).
    nu_schedule : str, NoiseSchedule or callable, optional
        Time-dependent noise ``nu(t)`` instead of ``nu`` (not both): a spec ``ramp:A>B@T0..T1[,...]``, a
        :class:`meanfield.noise_schedule.NoiseSchedule` or a function of ``t`` (:mod:`meanfield.noise_schedule`;
        spectral and Galerkin schemes, not ``etdrk4``).  The run then records ``nu = 0``, the attribute
        ``nu_schedule`` and the variable ``nu(time)``.  Default: the run file's, else none.
    dim : int, optional
        Ambient dimension (zonal only; at most 256).  Default: the run file's, else the geometry's.
    resolution : int, optional
        Circle grid points ``N``, sphere degree ``L``, zonal degree or cells.  Default: the run file's, else the
        geometry's (:mod:`meanfield.defaults`).
    scheme : str, optional
        ``spectral`` | ``fv`` | ``lagrangian`` (circle), ``spectral`` | ``lagrangian`` (sphere), ``galerkin`` |
        ``fv`` (zonal) (:data:`meanfield.schemes.SCHEMES`).  Default: the run file's, else the first.
    init : str, array, xarray.DataArray, callable, xarray.Dataset or path
        A text spec (``perturbed:EPS``, ``vonmises:KAPPA@MU``, ``vmf:KAPPA@LAT,LON`` with the centre in degrees, ...),
        grid values on the points of :func:`meanfield.grid`, a DataArray with its coordinates, a function of those
        points (sphere: ``f(theta, phi)``, colatitude and longitude in radians, MATH.md §2.2), or a run
        (:mod:`meanfield.solvers.runs.initial_state`).  A run of the same geometry, scheme and
        resolution continues exactly from its restart record, clock included; any other run is remapped
        (conservatively for finite volume).
    seed : int or None
        Seed of ``perturbed:`` starts, in ``[0, 2^63 - 1]``; ``None`` draws one and records it.
    t_final : float
        The end time (a continued run goes on from its file's time).  Required (or ``saving=``).
    save_every, save_log : float, int, optional
        A frame every ``save_every`` (default ``t_final / 100``), or ``save_log`` frames per decade of time.
    stepper : str, optional
        ``dopri5``, ``rk4``, ``etdrk4``, ``ssprk3`` (:data:`meanfield.solvers.steppers.steppers.STEPPERS`); default: the scheme's.
    rtol, atol, cfl : float, optional
        The adaptive stepper's tolerances; the fixed steppers' fraction of the stable step.
    dt_max : float, optional
        The largest step, > 0 (default: none; the frames of a dopri5 run without noise come from its dense output,
        so its steps follow the error control alone, :mod:`meanfield.solvers.runs.runloop`).
    resolution_tol, positivity_tol : float, optional
        The validity monitor: stop when the spectral tail or the negative part exceeds these (DESIGN.md
        "Stopping").
    normalization : str or Normalization, optional
        ``post`` (default, or the run file's), ``ngpt``, ``lnscale``; the Lagrangian schemes also ``pre``, ``mix``,
        ``peri`` (MATH.md §6).
    alpha, r0, mix_switch : float, optional
        nGPT's step (> 0), the initial radius of pre, mix and peri (> 0), Mix-LN's switch time (>= 0); each refused
        with a scheme that does not use it.  Default: the run file's, else 1, 1, 1.
    collapse_tol : float, optional
        Lagrangian only: merge nodes closer than this (rad; 0: never; default 256 machine epsilons; MATH.md §5).
    override : bool
        Allow ``attention``, ``beta``, ``nu`` or the normalisation to differ from the run file's (recorded in the
        ``override`` attribute; :mod:`meanfield.solvers.runs.restart`).
    trackers : sequence of meanfield.solvers.tracking.trackers.Tracker
        Observers run after the package's own: what their ``frame`` returns is saved per frame, their
        ``variables()`` and ``attrs()`` join the Dataset.
    progress : bool
        Show a progress bar.
    backend : str, optional
        Transform backend (circle ``pyfftw`` | ``scipy``; sphere ``ducc0``).
    step, monitor, saving : StepControl, Monitor, Saving, optional
        The same settings as objects (:mod:`meanfield.settings`), instead of their keywords (not both).
    mask : {"none", "causal"}, optional
        ``"causal"``: decoder attention, the kinetic PDE in (position ``s``, direction) of MATH.md §8 on the spectral
        (circle, sphere) or Galerkin (zonal) scheme; ``init`` may then depend on ``s``
        (:mod:`meanfield.solvers.runs.causal_init`).  Default ``"none"`` (or the run file's).
    alibi : float, optional
        The ALiBi slope ``lambda`` in ``[0, 700]`` (``mask="causal"``; default 0, or the run file's).
    positions : int, optional
        Grid of token positions ``s_i = i / (positions - 1)``, ``>= 2`` (``mask="causal"``; default 65, or the run
        file's).

    Returns
    -------
    xarray.Dataset
        The run (DESIGN.md "Data contract"): ``density(time, ...)``, ``mass``, ``energy``, ``mode_amplitude``,
        cluster records for Lagrangian and finite-volume runs, the restart record and the record of the start
        (:func:`meanfield.rerun`), and the attributes that re-run it (``command``).  ``stop_reason`` says
        ``"completed"`` or why the run stopped early (lost positivity, resolution or finiteness; interrupted);
        every frame saved before that is kept and the last valid state is a final frame
        (``last_frame_off_schedule = 1``).

    Raises
    ------
    meanfield.InputError
        One line naming the parameter and what it may be, before anything is computed.
    """
    require(geometry in SCHEMES, f"geometry must be one of {', '.join(SCHEMES)} (got {geometry!r})")
    require(t_final is not None or saving is not None, "--t-final is required: the end time of the run")
    flat = given(t_final=t_final, save_every=save_every, save_log=save_log, stepper=stepper, rtol=rtol, atol=atol,
                 cfl=cfl, dt_max=dt_max, resolution_tol=resolution_tol, positivity_tol=positivity_tol)
    step, monitor = gather(StepControl, "step", step, flat), gather(Monitor, "monitor", monitor, flat)
    saving = gather(Saving, "saving", saving, flat)
    normalization_parameters = given(alpha=alpha, r0=r0, mix_switch=mix_switch)
    extra = user_trackers(trackers)
    source = _continued_file(init, beta, geometry)
    causal = None if _ordinary(mask, alibi, positions, source) else _checked_causal(mask, alibi, positions, geometry,
                                                                                      scheme, source)
    scheme, resolution, dim = _discretisation(source, geometry, scheme, resolution, dim)
    nu, schedule, schedule_change = resolve_schedule(source, nu, nu_schedule, override)
    kept, changes = resolve_model(source, {"attention": attention, "beta": beta, "nu": nu}, SOLVE_DEFAULTS, override)
    normalization, normalization_change = resolve_normalization(source, normalization, normalization_parameters,
                                                                override)
    changes = joined(changes, schedule_change, normalization_change)
    model = Model(dim=dim, **kept)
    t_start, t_final, save_every, save_log = run_clock(source, saving)
    seed = draw_seed(seed)
    chosen = scheme_class(geometry, scheme)
    options = build_options(chosen, collapse_tol=collapse_tol)
    check_solve_size(chosen, f"the {geometry} {scheme} scheme", resolution, model.dim, t_final, save_every,
                     save_log, t_start, 1 if causal is None else causal[1])
    normalization = _carried_normalization(source, chosen, normalization, normalization_change)
    run = Run(geometry, scheme, model, resolution, backend, monitor, normalization, options, causal, schedule, source)
    ran = execute(RunPlan(
        run.build, lambda built: built.default_stepper if step.stepper is None else step.stepper,
        step.stepper_options, lambda built: run.initial_state(init, built, seed), t_start, t_final, save_every,
        save_log, source=source, exact=run.continues_exactly, prepare=run.prepare, user_trackers=extra,
        switch=normalization.mix_switch if normalization.name == "mix" else None, progress=progress))
    settings = _solve_settings(ran, model, scheme, init, seed, (t_final, save_every, save_log), step, monitor,
                               collapse_tol, normalization, causal, schedule)
    typed = init if schedule is None or schedule.segments else None     # a Python function: `meanfield rerun FILE`
    band = ran.scheme.largest_mode()
    attrs = run_attrs(settings, geometry,
                      run_command(["solve", geometry], schedule_command(settings, schedule), typed, changes),
                      **loop_attrs(ran.record), **thread_attrs(ran.scheme.uses_blas),
                      **restart_attrs(t_start, "exact" if ran.exact else ("remap" if source is not None else "none"),
                                      changes),
                      atol=ran.stepper.atol, transform_backend=ran.scheme.basis.backend,
                      pointwise_kernel=ran.scheme.pointwise_kernel, dealiased_modes=band,
                      dominant_mode=dominant_mode(model), **normalization.as_attrs(), **mixture_attrs(init))
    return assemble(ran, attrs, schedule=schedule)


def _continued_file(init, beta, geometry: str):
    """The run file ``init`` names (``None``: not a run), checked: of this geometry; ``beta`` may then be left out."""
    source = checkpoint.run_file(init)
    require(beta is not None or source is not None,
            "--beta is required unless --init is a run file, whose beta a restart keeps")
    if source is not None:
        require(source.attrs.get("geometry") == geometry, f"{checkpoint.source_label(source)}: a "
                f"{source.attrs.get('geometry')} run; `solve {geometry}` continues {geometry} runs only")
    return source


def _discretisation(source, geometry: str, scheme, resolution, dim):
    """``(scheme, resolution, dim)``: those given, else the run file's, else the geometry's defaults; checked."""
    scheme, resolution, dim = _source_settings(source, geometry, scheme, resolution, dim)
    scheme = DEFAULT_SCHEME[geometry] if scheme is None else scheme
    require(scheme in SCHEMES[geometry],
            f"--scheme must be one of {', '.join(SCHEMES[geometry])} for the {geometry} (got {scheme!r})")
    dim = geometry_default(geometry, "dim") if dim is None else dim
    shape = geometry_of(geometry)
    require(not shape.free_dim or not isinstance(dim, (int, np.integer)) or dim <= shape.max_dim,
            f"--dim must be <= {shape.max_dim} for {shape.name} densities (got {dim}): beyond it the {shape.name} "
            f"solvers' coefficients leave double precision; `meanfield particles` and `meanfield theory` go to "
            f"--dim 4096")
    resolution = geometry_default(geometry, "resolution") if resolution is None else resolution
    return scheme, resolution, dim


def _carried_normalization(source, chosen, normalization: Normalization, changed: str) -> Normalization:
    """The normalisation the scheme class ``chosen`` runs: a continued run's must be one it can carry on (a radius per
    node where the file's needs one, unless overridden)."""
    if source is not None and not changed and not chosen.radius_per_node and not normalization.on_the_sphere:
        require(False, f"{checkpoint.source_label(source)} ran --normalization {normalization.name}, which a --scheme "
                       f"{chosen.name} run cannot carry on (no radius per node): continue it with --scheme "
                       f"{' or '.join(sorted(scheme_names(lambda cls: cls.radius_per_node)))}, or "
                       f"give --normalization post --override")
    return chosen.checked_normalization(normalization)


class Run:
    """What :func:`solve` builds and starts (the :class:`meanfield.solvers.runs.controller.RunPlan`'s callables): the
    scheme (or the causal PDE on its slices), its preparation, whether a run file continues exactly, the first
    state."""

    def __init__(self, geometry, scheme, model, resolution, backend, monitor, normalization, options, causal,
                 schedule, source):
        self.geometry, self.scheme, self.model, self.resolution = geometry, scheme, model, resolution
        self.backend, self.monitor, self.normalization, self.options = backend, monitor, normalization, options
        self.causal, self.schedule, self.source = causal, schedule, source

    def build(self):
        """The run's discretisation, built afresh (an exact restart checks its record against a fresh one)."""
        arguments = (self.geometry, self.scheme, self.model, self.resolution, self.backend, self.monitor,
                     self.normalization)
        if self.causal is None:
            return build_scheme(*arguments, self.options)
        return build_causal(*arguments, self.causal)

    def prepare(self, discretisation) -> None:
        """Follow the noise schedule; refuse a grid that does not keep the dominant mode."""
        if self.schedule is not None:
            discretisation.follow_noise_schedule(self.schedule)
        k_star, band = dominant_mode(self.model), discretisation.largest_mode()
        require(k_star <= band,
                f"--resolution {self.resolution} keeps modes up to {band}, below the dominant mode "
                f"{k_star} at beta = {self.model.beta:g}; increase --resolution")

    def continues_exactly(self, discretisation) -> bool:
        """Whether the run file is continued from its restart record (:func:`checkpoint.continues_exactly`)."""
        source = self.source
        exact = checkpoint.continues_exactly(source, self.geometry, self.scheme, discretisation.resolution,
                                             self.model.dim, self.normalization)
        return exact and (_continues_causal(source, self.causal) if self.causal is not None
                          else "mask" not in source.attrs)

    def initial_state(self, init, discretisation, seed):
        """A new run's state: from ``init`` or the run file remapped (per position for the causal PDE)."""
        start = self.source if self.source is not None else init
        if self.causal is not None:
            from .causal_init import causal_initial_state      # the causal start's readers (xarray, scipy): when used

            return causal_initial_state(start, self.geometry, discretisation, seed)
        return initial_state(start, self.geometry, discretisation, seed)


def _solve_settings(ran, model, scheme: str, init, seed, clock, step, monitor, collapse_tol, normalization, causal,
                    schedule) -> dict:
    """The settings a solve records (and its ``command`` repeats)."""
    t_final, save_every, save_log = clock
    discretisation = ran.scheme
    settings = {"attention": model.attention, "beta": model.beta, "nu": model.nu, "dim": model.dim,
                "scheme": scheme, "stepper": ran.stepper_name, "resolution": discretisation.resolution,
                "init": init_label(init), "seed": seed, "t_final": t_final, "save_every": save_every,
                "save_log": save_log, "rtol": step.rtol, "cfl": step.cfl_for(discretisation), **monitor.scheme_options(),
                "collapse_tol": collapse_tol, **normalization.options()}
    if step.dt_max is not None:     # runs without a cap keep their attributes and command line as before
        settings["dt_max"] = step.dt_max
    if causal is not None:      # ordinary runs keep their attributes and command line as before
        settings.update(mask="causal", alibi=causal[0], positions=causal[1])
    if schedule is not None:    # runs with a constant nu keep their attributes and command line as before
        settings["nu_schedule"] = schedule.spec
    return settings
