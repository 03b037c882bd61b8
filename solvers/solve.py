"""Set up and run a PDE solve from the model and settings objects; returns the DESIGN.md Dataset.

This is what ``meanfield solve`` and :func:`meanfield.solve` call.  The settings come as the objects of
:mod:`meanfield.settings` (``step``, ``monitor``, ``saving``, ``normalization``) or as their flat keywords;
the run works from the objects.  Schemes are looked up in :data:`SCHEMES` by geometry and name, steppers in
:data:`meanfield.solvers.steppers.STEPPERS`.
"""

from __future__ import annotations

import importlib
import math
import shlex
from pathlib import Path

import numpy as np

from meanfield.defaults import SOLVE_DEFAULTS, geometry_default
from meanfield.errors import require
from meanfield.initial.kinds import describe_init
from meanfield.limits import MAX_ZONAL_DIM, check_solve_size
from meanfield.limits import check_seed as _check_seed_range
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.schemes import DEFAULT_SCHEME, SCHEMES
from meanfield.settings import Monitor, Saving, StepControl, check_run_length, check_save_log, gather
from meanfield.storage import build_run_dataset
from meanfield.theory import dominant_mode
from meanfield.threads import thread_attrs

from . import checkpoint
from .clusters import ClusterTracker, closing_distance
from .continuation import joined, resolve_model, resolve_normalization, resolve_schedule
from .causal import CausalKinetic, check_causal, continues_causal
from .causal_init import causal_initial_state
from .contract import conform
from .initial_state import initial_state
from .normalized_velocity import density_normalization
from .run_record import restart_attrs, run_attrs
from .runloop import log_save_times, run_switching
from .steppers import make_stepper


def scheme_class(geometry: str, name: str):
    """The scheme class registered as ``name`` for ``geometry`` (see :data:`SCHEMES`)."""
    module, _, cls = SCHEMES[geometry][name].partition(":")
    return getattr(importlib.import_module(module), cls)


def save_targets(t_final: float, save_log: int | None):
    """The run loop's save times for a log axis, or ``None`` for the regular cadence."""
    return None if save_log is None else log_save_times(t_final, save_log)


def add_tracker_records(dataset, trackers):
    """The variables and attributes the run's trackers (:mod:`meanfield.solvers.trackers`) add, e.g. the merges and the
    bookkeeping settings of :class:`meanfield.solvers.clusters.ClusterTracker`."""
    for tracker in trackers:
        for name, variable in tracker.variables().items():
            dataset[name] = variable
        dataset.attrs.update(tracker.attrs())
    return dataset


def check_seed(seed) -> int:
    """An integer in ``[0, 2**63 - 1]`` (:func:`meanfield.limits.check_seed`); ``None`` draws one from
    fresh entropy, so that the run records the seed it used and its ``command`` repeats it."""
    seed = _check_seed_range(seed)
    return int(np.random.SeedSequence().entropy % 2**63) if seed is None else int(seed)


def canonical_command(subcommand: list[str], settings: dict) -> str:
    """The ``meanfield`` command line (``subcommand`` words, then flags) that reproduces a run."""
    words = ["meanfield", *subcommand]
    for key, value in settings.items():
        if value is not None:
            words += [f"--{key.replace('_', '-')}", str(value)]
    return shlex.join(words)


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


def start_time(source) -> float:
    """The clock of a continued run: the file's restart time, or the time of its last frame."""
    if source is None:
        return 0.0
    if "restart_time" in source.attrs:
        return float(source.attrs["restart_time"])
    return float(source["time"].values[-1])


def inherited_cadence(source, save_every, save_log):
    """``(save_every, save_log)``; when neither is given, a continued run saves as its file did."""
    if source is None or save_every is not None or save_log is not None:
        return save_every, save_log
    every, per_decade = source.attrs.get("save_every"), source.attrs.get("save_log")
    if isinstance(per_decade, (int, np.integer)) and not isinstance(per_decade, bool):
        return None, int(per_decade)
    if isinstance(every, (float, np.floating)) and math.isfinite(every) and every > 0:
        return float(every), None
    return None, None


def init_label(init) -> str:
    """What the ``init`` attribute records: the spec or path, or a description of an in-memory value."""
    return str(init) if isinstance(init, (str, Path)) else describe_init(init)


#: The ``command`` of a run whose start cannot be typed: FILE is the file that holds the run (:mod:`meanfield.solvers.rerun`).
RERUN_COMMAND = "meanfield rerun FILE"


def run_command(subcommand: list[str], settings: dict, init, changes: str) -> str:
    """The ``command`` attribute: the command line of the run when its start can be typed (a text spec or a run
    file's path), else :data:`RERUN_COMMAND`, which repeats it from the record of its start in its own file."""
    if not isinstance(init, (str, Path)):
        return RERUN_COMMAND
    return canonical_command(subcommand, settings) + (" --override" if changes else "")


def finish_dataset(dataset, record, scheme, stepper, start: checkpoint.Checkpoint):
    """The flag of an off-schedule last frame, the restart record and the record of the run's ``start``
    (:func:`meanfield.solvers.checkpoint.capture` before the first step; :mod:`meanfield.solvers.rerun`)."""
    dataset.attrs["last_frame_off_schedule"] = int(record.off_schedule)
    checkpoint.add_to_dataset(dataset, start, checkpoint.INITIAL)
    return checkpoint.add_to_dataset(dataset, checkpoint.capture(scheme, stepper, record.state, record.t_reached))


def follow_schedule(discretisation, schedule) -> None:
    """Let the noise of ``discretisation`` follow ``schedule`` (:mod:`meanfield.noise_schedule`): the spectral and
    Galerkin schemes (:meth:`meanfield.solvers.density_scheme.DensityScheme.follow_noise_schedule`), and the
    causal kinetic PDE through its slice scheme (its ``linear`` is the slice's)."""
    if isinstance(discretisation, CausalKinetic):
        discretisation.slice.follow_noise_schedule(schedule)
        discretisation.linear, discretisation.noise_schedule = discretisation.slice.linear, schedule
    else:
        discretisation.follow_noise_schedule(schedule)


def add_schedule_records(dataset, schedule):
    """A run that followed a noise schedule: the variable ``nu(time)`` (the noise at each frame) and the attribute
    ``nu_schedule`` (its spec); returns the dataset."""
    if schedule is not None:
        dataset["nu"] = ("time", schedule.values(dataset["time"].values),
                         {"long_name": "noise strength nu(t) at the frame", "nu_schedule": schedule.spec})
        dataset.attrs["nu_schedule"] = schedule.spec
    return dataset


def schedule_command(settings: dict, schedule) -> dict:
    """The settings of the run's ``command``: with a schedule, ``--nu-schedule SPEC`` instead of ``--nu``."""
    if schedule is None:
        return settings
    return {key: value for key, value in settings.items() if key != "nu"}


def check_normalization(normalization: Normalization, scheme: str) -> Normalization:
    """The run's :class:`Normalization` (MATH.md §6; :func:`meanfield.settings.gather_normalization` checked its
    parameters): the density schemes take ``post``, ``ngpt`` and ``lnscale``, the Lagrangian schemes all six
    (one-line refusals)."""
    if scheme == "lagrangian":
        return normalization
    return density_normalization(normalization)


def build_scheme(geometry: str, scheme: str, model: Model, resolution: int, backend, monitor: Monitor,
                 normalization: Normalization, collapse_tol):
    """The discretisation ``scheme`` of ``geometry`` (:data:`SCHEMES`), checked against the contract."""
    options = {"collapse_tol": collapse_tol} if scheme == "lagrangian" else {}
    return conform(scheme_class(geometry, scheme)(model, resolution, backend=backend, normalization=normalization,
                                                  **monitor.scheme_options(), **options))


def build_causal(geometry: str, scheme: str, model: Model, resolution: int, backend, monitor: Monitor,
                 normalization: Normalization, causal: tuple) -> CausalKinetic:
    """The causal kinetic PDE (MATH.md §8) on ``causal = (alibi, positions)`` slices of the ordinary ``scheme``."""
    alibi, positions = causal
    one = build_scheme(geometry, scheme, model, resolution, backend, monitor, normalization, None)
    return CausalKinetic(one, positions, alibi)


def cluster_trackers(discretisation, model: Model, geometry: str) -> list:
    """The cluster bookkeeping (:class:`meanfield.solvers.clusters.ClusterTracker`) of the schemes that carry clusters
    as points: Lagrangian nodes, and finite volumes without noise (zonal: rings on S^{d-1})."""
    if discretisation.name == "lagrangian":   # the nodes, counted at the run's own resolution
        cells = discretisation.resolution if geometry == "circle" else 2 * (discretisation.resolution + 1)
        return [ClusterTracker(model.beta, cells=cells)]
    if discretisation.name == "fv" and discretisation.clusters.enabled:
        return [ClusterTracker(model.beta, dim=model.dim if geometry == "zonal" else None,
                               counter=density_clusters(discretisation, geometry, model.dim))]
    return []


def density_clusters(discretisation, geometry: str, dim: int):
    """``counter(scheme, state, record)``: the clusters of a frame's density on the scheme's own cells
    (:mod:`meanfield.cluster_detection`), for the finite volumes, whose frames put the points' mass in their cells."""
    from meanfield.cluster_detection import clusters_of_density

    grid = discretisation.dims()["density"][0]
    centres = discretisation.coords()[grid][1]
    where = {"theta": centres} if geometry == "circle" else {"polar": centres, "dim": dim}

    def counter(scheme, state, record):
        density = (record if record is not None else scheme.frame(state))["density"]
        return clusters_of_density(density, geometry=geometry, volumes=scheme.fv.volumes, **where)

    return counter


def run_clock(source, saving: Saving):
    """``(t_start, t_final, save_every, save_log)`` of a run: a continued run starts at its file's time and,
    unless told otherwise, saves as its file did; ``save_every`` is ``None`` on a log axis."""
    t_start = start_time(source)
    save_every, save_log = inherited_cadence(source, saving.save_every, saving.save_log)
    save_log = check_save_log(save_log, save_every)
    t_final, save_every = check_run_length(saving.t_final, save_every, t_start)
    return t_start, t_final, (None if save_log is not None else save_every), save_log


def given(**settings) -> dict:
    """The keyword settings a caller gave (``None``: not given), for :func:`meanfield.settings.gather`."""
    return {name: value for name, value in settings.items() if value is not None}


def user_trackers(trackers) -> list:
    """``trackers=``: :class:`meanfield.solvers.trackers.Tracker` instances, run after the package's own (one-line refusal
    of anything else)."""
    from .trackers import Tracker

    trackers = list(trackers or ())
    for tracker in trackers:
        require(isinstance(tracker, Tracker), f"trackers must be meanfield.solvers.trackers.Tracker instances "
                                              f"(got {type(tracker).__name__})")
    return trackers


def solve(geometry: str = "circle", *, attention: str | None = None, beta: float | None = None,
          nu: float | None = None, dim: int | None = None, resolution: int | None = None,
          scheme: str | None = None, init=SOLVE_DEFAULTS["init"], seed: int | None = SOLVE_DEFAULTS["seed"],
          t_final: float | None = None, save_every: float | None = None, save_log: int | None = None,
          stepper: str | None = None, rtol: float | None = None, atol: float | None = None,
          cfl: float | None = None, resolution_tol: float | None = None, positivity_tol: float | None = None,
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
        run file, whose beta a continuation keeps.
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
        A text spec (``perturbed:EPS``, ``vonmises:KAPPA@MU``, ...), grid values, a DataArray with its
        coordinates, a function, or a run (:mod:`meanfield.solvers.initial_state`).  A run of the same geometry, scheme and
        resolution continues exactly from its restart record, clock included; any other run is remapped
        (conservatively for finite volume).
    seed : int or None
        Seed of ``perturbed:`` starts, in ``[0, 2^63 - 1]``; ``None`` draws one and records it.
    t_final : float
        The end time (a continued run goes on from its file's time).  Required (or ``saving=``).
    save_every, save_log : float, int, optional
        A frame every ``save_every`` (default ``t_final / 100``), or ``save_log`` frames per decade of time.
    stepper : str, optional
        ``dopri5``, ``rk4``, ``etdrk4``, ``ssprk3`` (:data:`meanfield.solvers.steppers.STEPPERS`); default: the scheme's.
    rtol, atol, cfl : float, optional
        The adaptive stepper's tolerances; the fixed steppers' fraction of the stable step.
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
        ``override`` attribute; :mod:`meanfield.solvers.continuation`).
    trackers : sequence of meanfield.solvers.trackers.Tracker
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
        (:mod:`meanfield.solvers.causal_init`).  Default ``"none"`` (or the run file's).
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
    require(t_final is not None or saving is not None, "t_final is required: the end time of the run (--t-final)")
    flat = given(t_final=t_final, save_every=save_every, save_log=save_log, stepper=stepper, rtol=rtol, atol=atol,
                 cfl=cfl, resolution_tol=resolution_tol, positivity_tol=positivity_tol)
    step, monitor = gather(StepControl, "step", step, flat), gather(Monitor, "monitor", monitor, flat)
    saving = gather(Saving, "saving", saving, flat)
    normalization_parameters = given(alpha=alpha, r0=r0, mix_switch=mix_switch)
    require(step.dt_max is None, "--dt-max applies to `meanfield particles` only")
    extra = user_trackers(trackers)
    source = checkpoint.run_file(init)
    require(beta is not None or source is not None,
            "--beta is required unless init is a run file, whose beta a continuation keeps")
    if source is not None:
        require(source.attrs.get("geometry") == geometry, f"{checkpoint.source_label(source)}: a "
                f"{source.attrs.get('geometry')} run; `solve {geometry}` continues {geometry} runs only")
    causal = check_causal(mask, alibi, positions, geometry, scheme, source)
    scheme, resolution, dim = _source_settings(source, geometry, scheme, resolution, dim)
    scheme = DEFAULT_SCHEME[geometry] if scheme is None else scheme
    require(scheme in SCHEMES[geometry],
            f"--scheme must be one of {', '.join(SCHEMES[geometry])} for the {geometry} (got {scheme!r})")
    dim = geometry_default(geometry, "dim") if dim is None else dim
    require(geometry != "zonal" or not isinstance(dim, (int, np.integer)) or dim <= MAX_ZONAL_DIM,
            f"--dim must be <= {MAX_ZONAL_DIM} for zonal densities (got {dim}): beyond it the zonal solvers' "
            f"coefficients leave double precision; `meanfield particles` and `meanfield theory` go to --dim 4096")
    resolution = geometry_default(geometry, "resolution") if resolution is None else resolution
    nu, schedule, schedule_change = resolve_schedule(source, nu, nu_schedule, override)
    require(schedule is None or scheme in ("spectral", "galerkin"),
            f"--nu-schedule needs --scheme spectral (circle, sphere) or galerkin (zonal) (got --scheme {scheme}); "
            f"it takes a constant --nu")
    kept, changes = resolve_model(source, {"attention": attention, "beta": beta, "nu": nu}, SOLVE_DEFAULTS, override)
    changes = joined(changes, schedule_change)
    normalization, normalization_change = resolve_normalization(source, normalization, normalization_parameters,
                                                                override)
    changes = joined(changes, normalization_change)
    model = Model(dim=dim, **kept)
    t_start, t_final, save_every, save_log = run_clock(source, saving)
    seed = check_seed(seed)
    lagrangian = scheme == "lagrangian"
    require(collapse_tol is None or lagrangian,
            f"--collapse-tol applies to --scheme lagrangian only (got --scheme {scheme})")
    check_solve_size(geometry, scheme, resolution, model.dim, t_final, save_every, save_log, t_start,
                     1 if causal is None else causal[1])
    if source is not None and not normalization_change and scheme != "lagrangian" and not normalization.on_the_sphere:
        require(False, f"{checkpoint.source_label(source)} ran --normalization {normalization.name}, which a --scheme "
                       f"{scheme} run cannot carry on (no radius per node): continue it with --scheme lagrangian, or "
                       f"give --normalization post --override")
    normalization = check_normalization(normalization, scheme)
    if causal is None:
        discretisation = build_scheme(geometry, scheme, model, resolution, backend, monitor, normalization,
                                      collapse_tol)
    else:
        discretisation = build_causal(geometry, scheme, model, resolution, backend, monitor, normalization, causal)
    if schedule is not None:
        follow_schedule(discretisation, schedule)
    stepper = discretisation.default_stepper if step.stepper is None else step.stepper
    k_star, band = dominant_mode(model), discretisation.largest_mode()
    require(k_star <= band,
            f"--resolution {resolution} keeps modes up to {band}, below the dominant mode "
            f"{k_star} at beta = {model.beta:g}; increase --resolution")
    time_stepper = make_stepper(stepper, discretisation, **step.stepper_options())
    if discretisation.name == "lagrangian":     # the pairs whose approach bounds the step (meanfield.solvers.clusters)
        discretisation.closing_within = closing_distance(time_stepper.rtol)
    exact = source is not None and checkpoint.continues_exactly(source, geometry, scheme,
                                                                  discretisation.resolution, dim, normalization)
    exact = exact and (continues_causal(source, *causal) if causal is not None else "mask" not in source.attrs)
    if exact:
        fresh = (lambda: build_scheme(geometry, scheme, model, resolution, backend, monitor, normalization,
                                      collapse_tol)) if causal is None else \
            (lambda: build_causal(geometry, scheme, model, resolution, backend, monitor, normalization, causal))
        state = checkpoint.restore_checked(source, fresh, discretisation, time_stepper)
    elif causal is not None:
        state = causal_initial_state(source if source is not None else init, geometry, discretisation, seed)
    else:
        state = initial_state(source if source is not None else init, geometry, discretisation, seed)
    trackers = cluster_trackers(discretisation, model, geometry) + extra
    start = checkpoint.capture(discretisation, time_stepper, state, t_start)
    record = run_switching(discretisation, time_stepper, state, t_final, save_every, save_targets(t_final, save_log),
                           normalization.mix_switch if normalization.name == "mix" else None, t_start,
                           progress=progress, trackers=trackers)
    settings = {"attention": model.attention, "beta": model.beta, "nu": model.nu, "dim": model.dim,
                "scheme": scheme, "stepper": stepper, "resolution": discretisation.resolution,
                "init": init_label(init), "seed": seed, "t_final": t_final, "save_every": save_every,
                "save_log": save_log, "rtol": step.rtol, "cfl": step.cfl, **monitor.scheme_options(),
                "collapse_tol": collapse_tol, **normalization.options()}
    if causal is not None:      # ordinary runs keep their attributes and command line as before
        settings.update(mask="causal", alibi=causal[0], positions=causal[1])
    if schedule is not None:    # runs with a constant nu keep their attributes and command line as before
        settings["nu_schedule"] = schedule.spec
    typed = init if schedule is None or schedule.segments else None     # a Python function: `meanfield rerun FILE`
    attrs = run_attrs(settings, record, geometry,
                      run_command(["solve", geometry], schedule_command(settings, schedule), typed, changes),
                      **thread_attrs(discretisation.uses_blas),
                      **restart_attrs(t_start, "exact" if exact else ("remap" if source is not None else "none"),
                                      changes),
                      atol=time_stepper.atol, transform_backend=discretisation.basis.backend,
                      pointwise_kernel=discretisation.pointwise_kernel, dealiased_modes=band,
                      dominant_mode=k_star, **normalization.as_attrs())
    dataset = build_run_dataset(record.times, record.frames, discretisation.dims(), discretisation.coords(), attrs)
    for name, variable in discretisation.static_variables().items():  # e.g. the Lagrangian nodes' weights
        dataset[name] = variable
    if lagrangian:
        dataset.attrs["collapse_tol_used"] = discretisation.collapser.tol
    if scheme == "fv":  # the density of a finite-volume run is cell averages (CF cell_methods)
        dataset["density"].attrs["cell_methods"] = f"{next(iter(discretisation.dims()['density']))}: mean"
    add_schedule_records(dataset, schedule)
    return finish_dataset(add_tracker_records(dataset, trackers), record, discretisation, time_stepper, start)
