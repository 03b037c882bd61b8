"""Set up and run a particle simulation from the model and settings objects; returns the DESIGN.md Dataset.

What ``meanfield particles`` and :func:`meanfield.simulate_particles` call, with the settings objects of
:mod:`meanfield.settings` (``attention``, ``step``, ``saving``, ``normalization``) or their flat keywords.
The Dataset has ``positions(time, particle, component)``, ``theta(time, particle)`` on the circle,
``weights(particle)``, ``energy(time)`` (``exp(-beta) E``, MATH.md §2) and, on the circle,
``mode_amplitude(time, mode)`` = ``|sum_j w_j exp(-i k theta_j)| / 2 pi``, the empirical
counterpart of the PDE's ``|rho_hat_k|`` (MATH.md §2.1).

With a normalisation scheme (MATH.md §6, :mod:`meanfield.normalization`) the attrs record it
(``normalization``, ``r0``, ``alpha``, ``mix_switch``); ``positions`` are the directions and the
schemes that carry a radius (pre, mix, peri) add ``radius(time, particle)``.  Mix-LN's switch at
``tau`` is a jump in time: the run saves a frame at ``tau`` and restarts the stepper there, so no
step straddles it.

``interaction`` (``auto`` | ``harmonic`` | ``direct``) picks the interaction path of
:class:`meanfield.solvers.schemes.particles.ParticleScheme`; attrs ``interaction`` (the class) and ``interaction_path``
record the path taken, and a forced path joins the reproducing ``command``.

Causal attention (``mask``, ``alibi``; MATH.md §8, :mod:`meanfield.solvers.schemes.causal_interaction`): the particle index is
the token's place in the sequence, and the Dataset adds the coordinate ``position(particle)`` = ``j / n`` and the
attrs ``mask`` and ``alibi`` (which join the reproducing ``command``); ``energy`` stays the interaction energy of all
tokens, a record of where they are (it need not increase under a mask).  Runs without a mask record neither, as
before.  A continuation keeps its file's mask and slope like its beta (:mod:`meanfield.solvers.runs.continuation`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from meanfield.defaults import CAUSAL_DEFAULTS, MASKS, PARTICLE_DEFAULTS
from meanfield.errors import require
from meanfield.limits import check_option, check_particle_size
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.sampling import sample_tokens
from meanfield.qkv import QKV_CHOICES, attention_heads, bounded_entries, is_qkv_file
from meanfield.settings import Attention, Mask, Saving, StepControl, check_mask, gather, gather_attention
from meanfield.app.storage import build_run_dataset
from meanfield.theory import dominant_mode
from meanfield.app.threads import thread_attrs

from ..records import checkpoint
from ..tracking.clusters import ClusterTracker, resolve_collapse_tol
from .continuation import joined, resolve_model, resolve_normalization, resolve_schedule
from ..schemes.particles import ParticleScheme
from .runloop import run_switching
from ..records.run_record import (add_schedule_records, add_tracker_records, finish_dataset, init_label, loop_attrs,
                         restart_attrs, run_attrs, run_command, schedule_command)
from .run_setup import draw_seed, given, run_clock, save_targets, user_trackers
from ..steppers.steppers import make_stepper
from ..tracking.trackers import ModeAmplitudes

__all__ = ["simulate"]


def _same_tokens(source, n: int, dim: int) -> bool:
    """Whether ``source`` is a particle run of ``n`` tokens in dimension ``dim`` (a run these tokens continue)."""
    attrs = source.attrs
    return attrs.get("geometry") == "particles" and int(attrs.get("n", -1)) == n and int(attrs.get("dim", -1)) == dim


def _continues(source, n: int, dim: int, normalization: Normalization) -> bool:
    """Whether ``source`` is a particle run of ``n`` tokens in dimension ``dim`` with a restart record
    whose state has the same shape (a radius column exactly when ``normalization`` carries one)."""
    return (_same_tokens(source, n, dim) and checkpoint.same_state_layout(source, normalization)
            and checkpoint.from_dataset(source) is not None)


#: The fields of :class:`meanfield.settings.Attention` that choose Q, K, V.
MATRIX_FIELDS = {"qkv", "Q", "K", "V", "heads"}


def _stored_matrices(dataset, label: str) -> dict:
    """The ``Q``, ``K``, ``V`` a particle run file stores, each ``HEADS x d x d`` (one head: a leading axis of 1),
    finite and within the ``--qkv`` range: one line naming the file otherwise."""
    dim, several = int(dataset.attrs["dim"]), "head" in dataset.dims
    stored = {}
    for name in ("Q", "K", "V"):
        if name not in dataset:
            continue
        variable = dataset[name]
        layout = ("head", "row", "column") if several else ("row", "column")
        require(variable.dims == layout and variable.shape[-2:] == (dim, dim)
                and np.asarray(variable.values).dtype.kind in "iuf",
                f"{label}: its {name} has dims {variable.dims} and shape {variable.shape}; a run of dim {dim} stores "
                f"real {' x '.join(['HEADS'] * several + [str(dim)] * 2)} matrices along {layout}")
        values = np.asarray(variable.values, dtype=float)
        stored[name] = bounded_entries(f"{label}: {name}", values if several else values[None])
    require(not several or len(stored) == 3, f"{label}: a run of several heads stores Q, K and V (got "
                                             f"{', '.join(stored) or 'none'})")
    return stored


def _check_named(qkv: str, stored: dict, dataset, label: str) -> None:
    """A file naming a ``qkv`` choice stores exactly the matrices that choice gives (none for the identity; the
    seed's for ``random``): a continuation draws them again from the name, never from the file."""
    seed = dataset.attrs.get("seed") if qkv == "random" else None
    require(qkv != "random" or seed is not None, f"{label}: qkv = 'random' draws its matrices from the run's seed, "
                                                 f"which the file does not record (no attribute seed)")
    seed = None if seed is None else int(seed)
    named = dict(zip(("Q", "K", "V"), attention_heads(qkv, int(dataset.attrs["dim"]), seed)[:3]))
    same = all((named[name] is None) == (name not in stored)
               and (name not in stored or np.array_equal(stored[name], named[name][None])) for name in named)
    require(same, f"{label}: attribute qkv = {qkv!r}{f' (seed {seed})' if seed is not None else ''} does not match "
                  f"the file's matrices (stored: {', '.join(stored) or 'none'}); a run with its own matrices records "
                  f"qkv = custom")


def recorded_matrices(dataset) -> dict:
    """A particle run's attention matrices as ``simulate`` takes them: its ``qkv`` choice when that is drawn or
    fixed by name (the matrices it stores must be that choice's, :func:`_check_named`), else the ``Q``, ``K``, ``V``
    it stored (one head, or heads along ``head``).  A file that names custom matrices or a ``.npz`` must carry them
    (DESIGN.md: the ``.npz`` need not travel with the run, so it is never read again): one naming
    ``/etc/passwd.npz`` with no matrices was continued with the identity and recorded a path never read."""
    label = checkpoint.source_label(dataset)
    qkv = str(dataset.attrs.get("qkv", "identity"))
    stored = _stored_matrices(dataset, label)
    if qkv in QKV_CHOICES:
        _check_named(qkv, stored, dataset, label)
        return {"qkv": qkv}
    require(stored, f"{label}: attribute qkv = {qkv!r} names matrices the file does not hold (no Q, K or V); a "
                    f"particle run file carries its matrices, or names one of {', '.join(QKV_CHOICES)}")
    require(not is_qkv_file(qkv) or len(stored) == 3,
            f"{label}: attribute qkv = {qkv!r} names a file of Q, K and V; the run file holds only {', '.join(stored)}")
    if "head" in dataset.dims:
        return {"heads": [tuple(stored[name][h] for name in ("Q", "K", "V")) for h in range(dataset.sizes["head"])]}
    return {name: stored[name][0] for name in stored}


def causal_settings(source, mask, alibi, override: bool) -> tuple[str, float, str]:
    """``(mask, alibi, change)`` of a run (MATH.md §8): as given (``None``: not given), else the continued run
    file ``source``'s (a particle run without them had no mask), else ``"none"`` and 0; a given value that differs
    from the file's is refused unless ``override`` (:func:`meanfield.solvers.runs.continuation.resolve_model`)."""
    require(mask is None or (isinstance(mask, str) and mask in MASKS),
            f"--mask must be one of {', '.join(MASKS)} (got {mask!r})")
    if alibi is not None:
        check_option("--alibi", alibi)
    recorded = None if source is None else SimpleNamespace(attrs={**CAUSAL_DEFAULTS, **source.attrs})
    values, change = resolve_model(recorded, {"mask": mask, "alibi": alibi}, CAUSAL_DEFAULTS, override)
    return (*check_mask(values["mask"], values["alibi"]), change)


def simulate(*, dim: int = PARTICLE_DEFAULTS["dim"], n: int = PARTICLE_DEFAULTS["n"],
             attention: str | Attention | None = None, beta: float | None = None, nu: float | None = None,
             init=PARTICLE_DEFAULTS["init"], seed: int | None = PARTICLE_DEFAULTS["seed"],
             sampling: str = PARTICLE_DEFAULTS["sampling"], resolution: int = PARTICLE_DEFAULTS["resolution"],
             positions=None, weights=None, t_final: float | None = None, save_every: float | None = None,
             save_log: int | None = None, qkv=None, Q=None, K=None, V=None, heads=None, kernel: str | None = None,
             sinkhorn_eps: float | None = None, interaction: str | None = None, stepper: str | None = None,
             rtol: float | None = None, cfl: float | None = None, dt_max: float | None = None,
             normalization: str | Normalization | None = None, alpha: float | None = None, r0: float | None = None,
             mix_switch: float | None = None, collapse_tol: float | None = PARTICLE_DEFAULTS["collapse_tol"],
             mask: str | None = None, alibi: float | None = None, override: bool = False, trackers=(),
             progress: bool = False, step: StepControl | None = None,
             saving: Saving | None = None, nu_schedule=None):
    """Simulate the particle system of MATH.md §1 and return the run as an ``xarray.Dataset``.

    Parameters
    ----------
    dim, n : int
        Tokens on S^{dim-1} in R^dim (``dim`` in [2, 4096]) and how many.
    attention : {"sa", "usa"} or Attention, optional
        The model's attention, or an :class:`~meanfield.settings.Attention` holding it with the matrices (then
        none of ``qkv``, ``Q``, ``K``, ``V``, ``heads``, ``kernel``, ``sinkhorn_eps``, ``interaction``).
        Default: the run file's, else ``"sa"``.
    beta : float
        Inverse temperature (the range of ``meanfield --help``).  Required unless ``init`` is a particle run file of
        these tokens, whose beta a continuation keeps.
    nu : float, optional
        Noise strength ``>= 0`` (default: the run file's, else 0).
    nu_schedule : str, NoiseSchedule or callable, optional
        Time-dependent noise ``nu(t)`` instead of ``nu`` (not both): a spec ``ramp:A>B@T0..T1[,...]``, a
        :class:`meanfield.noise_schedule.NoiseSchedule` or a function of ``t`` (:mod:`meanfield.noise_schedule`).
        Each step's random walk has variance ``2 int nu`` over the step; ``dt_max`` defaults as with noise, collapse
        is off.  The run records ``nu = 0``, the attribute ``nu_schedule`` and the variable ``nu(time)``.
        Default: the run file's, else none.
    init : str, xarray.Dataset or path
        Where the tokens are drawn from (:mod:`meanfield.sampling`: ``uniform``, ``orthogonal``,
        ``perturbed:EPS``, ``vonmises:...``, a PDE run's density), or a particle run of the same ``n`` and
        ``dim`` to continue exactly from its restart record (positions after merges, weights, the noise
        generator, the step size and the clock).
    seed : int or None
        Seed of the sampling, the noise and random matrices; ``None`` draws one (a continuation: the file's).
    sampling : {"iid", "quadrature"}
        i.i.d. tokens, or deterministic nodes with quadrature weights (circle densities).
    resolution : int
        Grid of the circle density the tokens are drawn from.
    positions, weights : array, optional
        The tokens themselves, shape ``(n, dim)``, and their weights (only with ``positions``).
    t_final : float
        The end time.  Required (or ``saving=``).
    save_every, save_log : float, int, optional
        A frame every ``save_every`` (default ``t_final / 100``), or ``save_log`` frames per decade of time.
    qkv : str or path, optional
        ``identity`` | ``repulsive`` (``V = -I``) | ``random`` (Gaussian / sqrt(d), from ``seed``) | a ``.npz`` of
        ``Q``, ``K``, ``V`` (one or several heads).  Default: the run file's, else ``identity``.
    Q, K, V : array, optional
        Matrices instead of ``qkv`` (``None``: the identity); entries at most 1e100 in magnitude.
    heads : list of (Q, K, V), optional
        Several heads whose outputs are summed, instead of ``Q``, ``K``, ``V``.
    kernel : {"dot", "l2", "sinkhorn"}, optional
        ``dot`` on the sphere (``l2`` and ``sinkhorn`` need tokens in R^d).
    sinkhorn_eps : float, optional
        The entropic parameter of ``sinkhorn``, > 0.
    interaction : {"auto", "harmonic", "direct"}, optional
        The interaction path (:mod:`meanfield.solvers.schemes.particles`; ``auto`` continues a run file on its path); the attrs
        record the path taken (``interaction_path``).
    stepper, rtol, cfl : optional
        The time stepper (default ``dopri5``) and its tolerances.
    dt_max : float, optional
        Largest step; with ``nu > 0`` the noise's splitting step (default 1e-2).
    normalization : str or Normalization, optional
        ``post`` (default, or the run file's), ``pre``, ``mix``, ``peri``, ``ngpt``, ``lnscale`` (MATH.md §6), with
        ``alpha``, ``r0``, ``mix_switch``; pre, mix and peri carry a radius per token (``radius(time, particle)``).
    alpha, r0, mix_switch : float, optional
        nGPT's step, the initial radius, Mix-LN's switch time (as in :func:`meanfield.solvers.runs.solve.solve`).
    collapse_tol : float, optional
        Without noise, merge tokens closer than this (rad; 0: never; default 256 machine epsilons; MATH.md §5).
        Default 0 with a mask, which refuses any other value.
    mask : {"none", "causal", "strict"}, optional
        Causal attention (MATH.md §8): token ``j`` attends to all tokens (``none``, the default or the run file's),
        to ``k <= j`` (``causal``, the decoder's) or to ``k < j`` (``strict``: token 1 does not move).  A mask takes
        i.i.d. tokens with uniform weights (``sampling="iid"``), the sphere and the dot-product kernel.
    alibi : float, optional
        The ALiBi slope ``lambda >= 0`` of a mask, in mean-field units (logit bias ``-lambda (j - k) / n``; USA: the
        normalised positional weights of MATH.md §8).  Default 0, or the run file's.
    override : bool
        Allow the model to differ from the run file's (recorded in ``override``; :mod:`meanfield.solvers.runs.continuation`).
    trackers : sequence of meanfield.solvers.tracking.trackers.Tracker
        Observers run after the package's own (as in :func:`meanfield.solvers.runs.solve.solve`).
    progress : bool
        Show a progress bar.
    step, saving : StepControl, Saving, optional
        The same settings as objects (:mod:`meanfield.settings`), instead of their keywords (not both).

    Returns
    -------
    xarray.Dataset
        ``positions(time, particle, component)``, ``theta`` on the circle, ``weights``, ``energy``, on the circle
        ``mode_amplitude``, without noise ``cluster_count``, ``cluster_energy`` and the merges
        (:mod:`meanfield.solvers.tracking.clusters`), ``Q``, ``K``, ``V`` when not the identity, with a mask the coordinate
        ``position(particle)``, the restart record and the record of the start (:func:`meanfield.rerun`);
        ``stop_reason`` and the attributes that re-run it.

    Raises
    ------
    meanfield.InputError
        One line naming the parameter and what it may be, before anything is computed.
    """
    require(t_final is not None or saving is not None, "t_final is required: the end time of the run (--t-final)")
    attention_fields = given(qkv=qkv, Q=Q, K=K, V=V, heads=heads, kernel=kernel, sinkhorn_eps=sinkhorn_eps,
                             interaction=interaction)
    if isinstance(attention, Attention):
        gather_attention(attention, dict(attention_fields))     # an Attention object and its fields: refused
    flat = given(t_final=t_final, save_every=save_every, save_log=save_log, stepper=stepper, rtol=rtol, cfl=cfl,
                 dt_max=dt_max)
    step, saving = gather(StepControl, "step", step, flat), gather(Saving, "saving", saving, flat)
    normalization_parameters = given(alpha=alpha, r0=r0, mix_switch=mix_switch)
    extra = user_trackers(trackers)
    require(step.atol is None, "atol applies to solve() only (particle runs use the stepper's default)")
    positions_given = positions is not None
    require(weights is None or positions_given,
            "weights= needs positions= (the tokens they weigh): tokens sampled from init carry their own weights")
    source = checkpoint.run_file(init) if positions is None else None
    same_tokens = source if source is not None and _same_tokens(source, n, dim) else None
    chosen_normalization, normalization_change = resolve_normalization(same_tokens, normalization,
                                                                        normalization_parameters, override)
    exact = source is not None and _continues(source, n, dim, chosen_normalization)
    continued = source if exact else None
    require(beta is not None or continued is not None,
            "--beta is required unless init is a particle run file of these tokens, whose beta a continuation keeps")
    kind = attention.kind if isinstance(attention, Attention) else attention
    nu, schedule, schedule_change = resolve_schedule(continued, nu, nu_schedule, override)
    model_given = {"attention": kind, "beta": beta, "nu": nu}
    model = Model(dim=dim, **resolve_model(continued, model_given, PARTICLE_DEFAULTS, override)[0])
    mask, alibi, causal_change = causal_settings(continued, mask, alibi, override)
    require(mask == "none" or sampling == "iid" or exact,
            f"--sampling {sampling} needs --mask none: a mask orders the tokens as a sequence of i.i.d. draws "
            f"(--sampling iid), not as quadrature nodes")
    from_file = (continued is not None and not isinstance(attention, Attention)
                 and not attention_fields.keys() & MATRIX_FIELDS)
    if from_file:                     # Q, K, V not given: the file's (its qkv, or the matrices it holds)
        attention_fields.update(recorded_matrices(continued))
        seed = int(continued.attrs["seed"]) if seed is None and "seed" in continued.attrs else seed
    attention = gather_attention(attention if isinstance(attention, Attention) else model.attention, attention_fields)
    t_start, t_final, save_every, save_log = run_clock(continued, saving)
    qkv = attention.label
    seed = draw_seed(seed)                              # first: a random qkv is drawn from the seed the run records
    Q, K, V, heads = attention.matrices(dim, seed)      # drawn or read once; the scheme takes them as given
    attention = replace(attention, Q=Q, K=K, V=V, heads=heads)
    if from_file:
        qkv = str(continued.attrs.get("qkv", qkv))     # what they were read from (a .npz that may be gone)
    kept = {"attention": model.attention, "beta": model.beta, "nu": model.nu, "qkv": qkv}
    if qkv == "random":                          # the seed draws the matrices
        kept["seed"] = seed
    changes = joined(resolve_model(continued, kept, PARTICLE_DEFAULTS, override)[1], normalization_change,
                     causal_change, schedule_change)
    if schedule is not None:          # noise: no merges (the scheme refuses any other value)
        require(collapse_tol is None or collapse_tol == 0,
                f"--collapse-tol needs no noise (got {collapse_tol!r} with --nu-schedule): coincident tokens "
                f"separate again")
        collapse_tol = 0.0
    if (chosen_normalization.carries_radius or heads is not None or mask != "none") and collapse_tol is None:
        collapse_tol = 0.0  # merges are for one head on the sphere without radii or mask (meanfield.solvers.tracking.clusters)
    tol = resolve_collapse_tol(collapse_tol, model.nu)
    check_option("--n", n)
    check_particle_size(n, dim, t_final, save_every, save_log, resolution, t_start)
    label = init_label(init)
    if exact:  # the tokens come from the restart record below; the weights are restored with them
        positions, weights = np.zeros((n, dim)), None
    elif positions is None:
        positions, weights = sample_tokens(init, n, dim, seed, resolution, sampling)
    else:
        label = "custom positions"
    positions = np.asarray(positions, dtype=float)
    require(positions.shape == (n, dim), f"positions must have shape ({n}, {dim}) (got {positions.shape})")
    # a continued run keeps its file's path unless told otherwise (an exact continuation sums alike)
    interaction = attention.interaction
    path = str(source.attrs.get("interaction_path", interaction)) if exact and interaction == "auto" else interaction
    def particle_scheme():
        return ParticleScheme(model, n, replace(attention, interaction=path), weights=weights, seed=seed,
                              collapse_tol=tol, normalization=chosen_normalization, mask=Mask(mask, alibi),
                              nu_schedule=schedule)

    scheme = particle_scheme()
    stepper = PARTICLE_DEFAULTS["stepper"] if step.stepper is None else step.stepper
    dt_max = step.dt_max
    if dt_max is None:
        dt_max = PARTICLE_DEFAULTS["noise_dt_max"] if model.nu > 0 or schedule is not None else math.inf
    time_stepper = make_stepper(stepper, scheme, **dict(step.stepper_options(scheme), dt_max=dt_max))
    scheme.follow_stepper(time_stepper)
    if exact:           # one system of tokens, as the sampled start below (fewer after merges)
        width = dim + scheme.carries_radius
        state = checkpoint.restore_checked(source, particle_scheme, scheme, time_stepper, shape=(1, None, width))
    else:  # onto the sphere; tokens already on it to rounding are kept bit for bit
        norms = np.linalg.norm(positions, axis=-1, keepdims=True)
        state = np.where(np.abs(norms - 1.0) <= 8 * np.finfo(float).eps, positions, positions / norms)[None]
        if scheme.carries_radius:
            state = np.concatenate((state, np.full((1, n, 1), chosen_normalization.r0)), axis=-1)
    trackers = [ClusterTracker(model.beta, energy=tol > 0)]
    dims, coords = scheme.dims(), scheme.coords()
    if dim == 2:  # mode amplitudes of the tokens on the circle
        modes = np.arange(max(16, 2 * dominant_mode(model)) + 1)
        trackers.append(ModeAmplitudes(modes))
        dims["mode_amplitude"] = ("mode",)
        coords["mode"] = ("mode", modes)
    trackers += extra
    for tracker in trackers if exact else ():
        tracker.resume(source)
    switch = chosen_normalization.mix_switch if chosen_normalization.name == "mix" else None
    start = checkpoint.capture(scheme, time_stepper, state, t_start)
    record = run_switching(scheme, time_stepper, state, t_final, save_every, save_targets(t_final, save_log),
                           switch, t_start, progress=progress, trackers=trackers)
    settings = {"dim": dim, "n": n, "attention": model.attention, "beta": model.beta, "nu": model.nu,
                "init": label, "seed": seed, "sampling": sampling, "resolution": resolution, "qkv": qkv,
                "t_final": t_final, "save_every": save_every, "save_log": save_log, "stepper": stepper,
                "rtol": step.rtol, "cfl": step.cfl_for(scheme), "collapse_tol": collapse_tol}
    if chosen_normalization.name != "post":  # post runs keep their command line as before
        settings.update(chosen_normalization.options())
    if interaction != "auto":
        settings["interaction"] = interaction
    if mask != "none":                # runs without a mask keep their attributes and command line as before
        settings.update(mask=mask, alibi=alibi)
    if schedule is not None:          # runs with a constant nu keep their attributes and command line as before
        settings["nu_schedule"] = schedule.spec
    typed = None if positions_given or (schedule is not None and not schedule.segments) else init
    attrs_scheme = chosen_normalization.as_attrs()
    attrs = run_attrs(dict(settings, **attrs_scheme), "particles",
                      run_command(["particles"], schedule_command(settings, schedule), typed, changes),
                      **loop_attrs(record), **thread_attrs(scheme.interaction_path != "harmonic" or dim != 3),
                      scheme="particles",
                      **restart_attrs(t_start, "exact" if exact else "none", changes), dt_max=dt_max,
                      interaction=type(scheme.interaction).__name__, interaction_path=scheme.interaction_path,
                      collapse_tol_used=tol)
    dataset = build_run_dataset(record.times, record.frames, dims, coords, attrs)
    extra = dict(scheme.static_variables())
    if scheme.heads is not None:  # several heads: Q, K, V with a leading head axis
        for index, name in enumerate(("Q", "K", "V")):
            extra[name] = (("head", "row", "column"), np.stack([head[index] for head in scheme.heads]))
    for name, matrix in (("Q", scheme.Q), ("K", scheme.K), ("V", scheme.V)):
        if matrix is not None and scheme.heads is None:
            extra[name] = (("row", "column"), matrix)
    dataset.update(extra)                   # one merge, not one per variable
    add_schedule_records(dataset, schedule)
    return finish_dataset(add_tracker_records(dataset, trackers), record, scheme, time_stepper, start)
