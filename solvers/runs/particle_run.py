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
before.  A restart keeps its file's mask and slope like its beta (:mod:`meanfield.solvers.runs.restart`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from meanfield.defaults import CAUSAL_DEFAULTS, MASKS, PARTICLE_DEFAULTS
from meanfield.errors import require
from meanfield.initial.spec import mixture_attrs
from meanfield.limits import check_option, check_particle_size
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.sampling import sample_tokens
from meanfield.qkv import QKV_CHOICES, attention_heads, bounded_entries, is_qkv_file
from meanfield.settings import Attention, Mask, Saving, StepControl, check_mask, gather, gather_attention
from meanfield.theory import dominant_mode
from meanfield.app.threads import thread_attrs

from ..records import checkpoint
from ..records.run_record import init_label, loop_attrs, restart_attrs, run_attrs, run_command, schedule_command
from ..schemes.particles import ParticleScheme
from ..steppers.layer_weights import layer_weights as read_layer_weights, recorded_layer_weights
from ..tracking.clusters import ClusterTracker, resolve_collapse_tol
from ..tracking.trackers import ModeAmplitudes
from .restart import joined, resolve_model, resolve_normalization, resolve_schedule
from .controller import RunPlan, assemble, execute
from .run_setup import draw_seed, given, run_clock, user_trackers

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
    seed's for ``random``): a restart draws them again from the name, never from the file."""
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
    from the file's is refused unless ``override`` (:func:`meanfield.solvers.runs.restart.resolve_model`)."""
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
             saving: Saving | None = None, nu_schedule=None, layer_weights=None):
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
        these tokens, whose beta a restart keeps.
    nu : float, optional
        Noise strength ``>= 0`` (default: the run file's, else 0).
    nu_schedule : str, NoiseSchedule or callable, optional
        Time-dependent noise ``nu(t)`` instead of ``nu`` (not both): a spec ``ramp:A>B@T0..T1[,...]``, a
        :class:`meanfield.noise_schedule.NoiseSchedule` or a function of ``t`` (:mod:`meanfield.noise_schedule`).
        Each step's random walk has variance ``2 int nu`` over the step; ``dt_max`` defaults as with noise, collapse
        is off.  The run records ``nu = 0``, the attribute ``nu_schedule`` and the variable ``nu(time)``.
        Default: the run file's, else none.
    init : str, array, xarray.DataArray, callable, xarray.Dataset or path
        Where the tokens are drawn from (:mod:`meanfield.sampling`: ``uniform``, ``orthogonal``,
        ``perturbed:EPS``, ``vonmises:...``, a density given as for :func:`meanfield.solve`: a function ``f(theta)``
        on the circle, ``f(theta, phi)`` on S^2 with colatitude and longitude in radians (MATH.md §2.2), a
        DataArray, a PDE run's density), or a particle run of the same ``n`` and
        ``dim`` to continue exactly from its restart record (positions after merges, weights, the noise
        generator, the step size and the clock).
    seed : int or None
        Seed of the sampling, the noise and random matrices; ``None`` draws one (a restart: the file's).
    sampling : {"iid", "quadrature"}
        i.i.d. tokens, or deterministic nodes with quadrature weights (circle densities).
    resolution : int
        Grid of the circle density the tokens are drawn from (a sphere function: ``R x 2R`` equal-angle cells).
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
        Allow the model to differ from the run file's (recorded in ``override``; :mod:`meanfield.solvers.runs.restart`).
    trackers : sequence of meanfield.solvers.tracking.trackers.Tracker
        Observers run after the package's own (as in :func:`meanfield.solvers.runs.solve.solve`).
    progress : bool
        Show a progress bar.
    step, saving : StepControl, Saving, optional
        The same settings as objects (:mod:`meanfield.settings`), instead of their keywords (not both).
    layer_weights : str or LayerWeights, optional
        Per-layer attention for the layer stepper (``stepper="layers"``, MATH.md §11): a ``FILE.npz`` of per-layer
        ``Q``, ``K``, ``V`` (and ``beta``), or ``seed:S,sigma:X`` (``V_l = I + sigma G_l / sqrt(d)``, ``Q = K = I``;
        :mod:`meanfield.solvers.steppers.layer_weights`).  The run records the spec (``layer_weights``) and the
        matrices its layers used (``layer_Q``, ``layer_K``, ``layer_V``, ``layer_beta``); no merges.  Default: the
        run file's, else none.

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
    require(t_final is not None or saving is not None, "--t-final is required: the end time of the run")
    attention_fields = _attention_fields(attention, qkv=qkv, Q=Q, K=K, V=V, heads=heads, kernel=kernel,
                                         sinkhorn_eps=sinkhorn_eps, interaction=interaction)
    flat = given(t_final=t_final, save_every=save_every, save_log=save_log, stepper=stepper, rtol=rtol, cfl=cfl,
                 dt_max=dt_max)
    step, saving = gather(StepControl, "step", step, flat), gather(Saving, "saving", saving, flat)
    normalization_parameters = given(alpha=alpha, r0=r0, mix_switch=mix_switch)
    extra = user_trackers(trackers)
    _refuse_misplaced(step, positions, weights)
    source, chosen_normalization, normalization_change, exact = _restart_source(
        init if positions is None else None, n, dim, normalization, normalization_parameters, override)
    continued = source if exact else None
    require(beta is not None or continued is not None,
            "--beta is required unless --init is a particle run file of these tokens, whose beta a restart keeps")
    model, schedule, schedule_change = _particle_model(continued, attention, beta, nu, nu_schedule, dim, override)
    mask, alibi, causal_change = causal_settings(continued, mask, alibi, override)
    require(mask == "none" or sampling == "iid" or exact,
            f"--sampling {sampling} needs --mask none: a mask orders the tokens as a sequence of i.i.d. draws "
            f"(--sampling iid), not as quadrature nodes")
    attention, from_file, seed = _gathered_attention(attention, attention_fields, continued, model, seed)
    (t_start, t_final, save_every, save_log), layered = _clock_and_layers(continued, saving, layer_weights, step, dim)
    attention, seed, qkv = _drawn_matrices(attention, from_file, continued, dim, seed)
    changes = joined(_model_change(continued, model, qkv, seed, override), normalization_change, causal_change,
                     schedule_change)
    collapse_tol, tol = _collapse_setting(collapse_tol, schedule, chosen_normalization, attention.heads, mask, model)
    check_option("--n", n)
    check_particle_size(n, dim, t_final, save_every, save_log, resolution, t_start)
    label = "custom positions" if (given_tokens := positions is not None) else init_label(init)
    positions, weights = _tokens(init, positions, weights, exact, n, dim, seed, resolution, sampling)
    tokens = Tokens(model, n, replace(attention, interaction=_interaction_path(continued, attention)), weights, seed,
                    tol, chosen_normalization, Mask(mask, alibi), schedule, layered)
    dt_max = tokens.dt_max(step)
    ran = execute(tokens.plan(step, dt_max, positions, (t_start, t_final, save_every, save_log), continued, extra,
                              progress))
    settings = dict(dim=dim, n=n, **_model_settings(model), init=label, seed=seed, sampling=sampling,
                    resolution=resolution, qkv=qkv, t_final=t_final, save_every=save_every, save_log=save_log,
                    **_step_settings(ran, step), collapse_tol=collapse_tol,
                    **_optional_settings(chosen_normalization, attention.interaction, mask, alibi, schedule))
    typed = None if given_tokens or (schedule is not None and not schedule.segments) else init
    command = run_command(["particles"], schedule_command(settings, schedule), typed, changes)
    attrs = run_attrs(dict(settings, **chosen_normalization.as_attrs()), "particles", command,
                      **_run_record_attrs(ran, t_start, exact, changes), dt_max=dt_max,
                      interaction=type(ran.scheme.interaction).__name__,
                      interaction_path=ran.scheme.interaction_path, collapse_tol_used=tol,
                      **mixture_attrs(None if given_tokens else init))
    return assemble(ran, attrs, dims=tokens.dims(ran.scheme), coords=tokens.coords(ran.scheme),
                    static=_static_variables(ran.scheme, ran.stepper), schedule=schedule)


def _attention_fields(attention, **fields) -> dict:
    """The attention settings given as keywords; refused, in one line, beside an :class:`Attention` object."""
    fields = given(**fields)
    if isinstance(attention, Attention):
        gather_attention(attention, dict(fields))     # an Attention object and its fields: refused
    return fields


def _clock_and_layers(continued, saving: Saving, spec, step: StepControl, dim: int):
    """The run's clock (:func:`run_clock`) and its per-layer weights (``None``: none): the schedule given, else a
    continued run's (its attribute ``layer_weights``), for the layer stepper only, holding every layer up to
    ``t_final``."""
    clock = run_clock(continued, saving)
    if spec is None and continued is not None:
        schedule = recorded_layer_weights(continued, checkpoint.source_label(continued))
    else:
        schedule = read_layer_weights(spec)
    if schedule is not None:
        require(step.stepper == "layers", f"--layer-weights needs the layer stepper, --stepper layers (got --stepper "
                                          f"{step.stepper or PARTICLE_DEFAULTS['stepper']})")
        schedule.check(dim, True, int(round(clock[1] / step.dt_max)))
    return clock, schedule


def _refuse_misplaced(step: StepControl, positions, weights) -> None:
    require(step.atol is None, "atol applies to solve() only (particle runs use the stepper's default)")
    require(weights is None or positions is not None,
            "weights= needs positions= (the tokens they weigh): tokens sampled from init carry their own weights")


def _particle_model(continued, attention, beta, nu, nu_schedule, dim: int, override: bool):
    """``(model, noise schedule, its change)``: as given, else the continued run file's (:mod:`.restart`)."""
    nu, schedule, schedule_change = resolve_schedule(continued, nu, nu_schedule, override)
    kind = attention.kind if isinstance(attention, Attention) else attention
    model = Model(dim=dim, **resolve_model(continued, {"attention": kind, "beta": beta, "nu": nu}, PARTICLE_DEFAULTS,
                                           override)[0])
    return model, schedule, schedule_change


def _restart_source(init, n: int, dim: int, normalization, parameters: dict, override: bool):
    """``(run file, normalisation, its change, exact)``: the particle run file ``init`` names (``None``: none, or
    tokens given), the normalisation a run of these tokens keeps, and whether it continues the file exactly."""
    source = checkpoint.run_file(init) if init is not None else None
    same_tokens = source if source is not None and _same_tokens(source, n, dim) else None
    chosen, change = resolve_normalization(same_tokens, normalization, parameters, override)
    return source, chosen, change, source is not None and _continues(source, n, dim, chosen)


def _interaction_path(continued, attention: Attention) -> str:
    """The interaction path: a continued run keeps its file's unless told otherwise (an exact restart sums
    alike)."""
    if continued is not None and attention.interaction == "auto":
        return str(continued.attrs.get("interaction_path", attention.interaction))
    return attention.interaction


def _run_record_attrs(ran, t_start: float, exact: bool, changes: str) -> dict:
    """The loop's record, the threads and how the run started, as its attributes."""
    return dict(**loop_attrs(ran.record),
                **thread_attrs(ran.scheme.interaction_path != "harmonic" or ran.scheme.dim != 3),
                scheme="particles", **restart_attrs(t_start, "exact" if exact else "none", changes))


def _gathered_attention(attention, fields: dict, continued, model: Model, seed):
    """The run's :class:`Attention` (its matrices not drawn yet), whether its matrices are the continued file's, and
    the seed (a restart's, when not given)."""
    from_file = (continued is not None and not isinstance(attention, Attention) and not fields.keys() & MATRIX_FIELDS)
    if from_file:                     # Q, K, V not given: the file's (its qkv, or the matrices it holds)
        fields.update(recorded_matrices(continued))
        seed = int(continued.attrs["seed"]) if seed is None and "seed" in continued.attrs else seed
    attention = gather_attention(attention if isinstance(attention, Attention) else model.attention, fields)
    return attention, from_file, seed


def _drawn_matrices(attention: Attention, from_file: bool, continued, dim: int, seed):
    """``(attention with its matrices, seed, qkv label)``: the seed drawn first (a random qkv is drawn from the seed
    the run records), the matrices drawn or read once (the scheme takes them as given)."""
    qkv = attention.label
    seed = draw_seed(seed)
    Q, K, V, heads = attention.matrices(dim, seed)
    if from_file:
        qkv = str(continued.attrs.get("qkv", qkv))     # what they were read from (a .npz that may be gone)
    return replace(attention, Q=Q, K=K, V=V, heads=heads), seed, qkv


def _model_change(continued, model: Model, qkv: str, seed: int, override: bool) -> str:
    """What of the model a restart was told to change (``override``; the seed when it draws the matrices)."""
    kept = {"attention": model.attention, "beta": model.beta, "nu": model.nu, "qkv": qkv}
    if qkv == "random":                          # the seed draws the matrices
        kept["seed"] = seed
    return resolve_model(continued, kept, PARTICLE_DEFAULTS, override)[1]


def _collapse_setting(collapse_tol, schedule, normalization: Normalization, heads, mask: str, model: Model):
    """``(collapse_tol as the run records it, the distance it uses)``: 0 with a noise schedule (which refuses any
    other), and by default 0 where merges do not apply (radii, several heads, a mask;
    :mod:`meanfield.solvers.tracking.clusters`)."""
    if schedule is not None:          # noise: no merges (the scheme refuses any other value)
        require(collapse_tol is None or collapse_tol == 0,
                f"--collapse-tol needs no noise (got {collapse_tol!r} with --nu-schedule): coincident tokens "
                f"separate again")
        collapse_tol = 0.0
    if (normalization.carries_radius or heads is not None or mask != "none") and collapse_tol is None:
        collapse_tol = 0.0
    return collapse_tol, resolve_collapse_tol(collapse_tol, model.nu)


def _tokens(init, positions, weights, exact: bool, n: int, dim: int, seed: int, resolution: int, sampling: str):
    """The tokens a new run starts from, shape ``(n, dim)``, and their weights: given, or sampled from ``init``
    (an exact restart's come from its restart record: placeholders here)."""
    if exact:
        positions, weights = np.zeros((n, dim)), None
    elif positions is None:
        positions, weights = sample_tokens(init, n, dim, seed, resolution, sampling)
    positions = np.asarray(positions, dtype=float)
    require(positions.shape == (n, dim), f"positions must have shape ({n}, {dim}) (got {positions.shape})")
    return positions, weights


class Tokens:
    """What :func:`simulate` builds and starts (the :class:`meanfield.solvers.runs.controller.RunPlan`'s
    callables): the particle scheme, the first state, the trackers and the Dataset's layout."""

    def __init__(self, model: Model, n: int, attention: Attention, weights, seed: int, tol: float,
                 normalization: Normalization, mask: Mask, schedule, layer_weights=None):
        self.model, self.n, self.attention, self.weights, self.seed = model, n, attention, weights, seed
        self.tol, self.normalization, self.mask, self.schedule = tol, normalization, mask, schedule
        #: per-layer attention for the layer stepper (:mod:`meanfield.solvers.steppers.layer_weights`), or None
        self.layer_weights = layer_weights

    def build(self) -> ParticleScheme:
        return ParticleScheme(self.model, self.n, self.attention, weights=self.weights, seed=self.seed,
                              collapse_tol=self.tol, normalization=self.normalization, mask=self.mask,
                              nu_schedule=self.schedule)

    def dt_max(self, step: StepControl) -> float:
        """The largest step: the one given, else with noise the splitting step of the random walk, else none."""
        if step.dt_max is not None:
            return step.dt_max
        noisy = self.model.nu > 0 or self.schedule is not None
        return PARTICLE_DEFAULTS["noise_dt_max"] if noisy else math.inf

    def plan(self, step: StepControl, dt_max: float, positions: np.ndarray, clock: tuple, continued, extra: list,
             progress: bool) -> RunPlan:
        """The run (:class:`meanfield.solvers.runs.controller.RunPlan`): dopri5 unless told, from ``positions`` or the
        continued file's restart record (one system of tokens), Mix-LN's switch where it applies."""
        normalization = self.normalization
        return RunPlan(
            self.build, lambda built: PARTICLE_DEFAULTS["stepper"] if step.stepper is None else step.stepper,
            lambda built: dict(step.stepper_options(built), dt_max=dt_max, **self.layer_options()),
            lambda built: self.start(positions),
            *clock, source=continued, exact=lambda built: True,
            restore_shape=lambda built: (1, None, self.model.dim + built.carries_radius), trackers=self.trackers,
            user_trackers=extra, progress=progress,
            switch=normalization.mix_switch if normalization.name == "mix" else None)

    def layer_options(self) -> dict:
        """What the layer stepper takes besides its step: the per-layer weights, when there are."""
        return {} if self.layer_weights is None else {"layer_weights": self.layer_weights}

    def start(self, positions: np.ndarray) -> np.ndarray:
        """One system of tokens on the sphere (tokens already on it to rounding kept bit for bit), with the initial
        radius where the normalisation carries one."""
        norms = np.linalg.norm(positions, axis=-1, keepdims=True)
        state = np.where(np.abs(norms - 1.0) <= 8 * np.finfo(float).eps, positions, positions / norms)[None]
        if self.normalization.carries_radius:
            state = np.concatenate((state, np.full((1, self.n, 1), self.normalization.r0)), axis=-1)
        return state

    def modes(self) -> np.ndarray | None:
        """The Fourier modes recorded of tokens on the circle (``None`` beyond)."""
        return np.arange(max(16, 2 * dominant_mode(self.model)) + 1) if self.model.dim == 2 else None

    def trackers(self, scheme) -> list:
        """The cluster bookkeeping (the point energy only where tokens merge) and, on the circle, mode amplitudes."""
        found = [ClusterTracker(self.model.beta, energy=self.tol > 0)]
        return found + ([ModeAmplitudes(self.modes())] if self.model.dim == 2 else [])

    def dims(self, scheme) -> dict:
        dims = scheme.dims()
        if self.model.dim == 2:
            dims["mode_amplitude"] = ("mode",)
        return dims

    def coords(self, scheme) -> dict:
        coords = scheme.coords()
        if self.model.dim == 2:
            coords["mode"] = ("mode", self.modes())
        return coords


def _model_settings(model: Model) -> dict:
    return {"attention": model.attention, "beta": model.beta, "nu": model.nu}


def _step_settings(ran, step: StepControl) -> dict:
    """The stepper a run used and its tolerances, as its settings record them."""
    return {"stepper": ran.stepper_name, "rtol": step.rtol, "cfl": step.cfl_for(ran.scheme),
            **ran.stepper.command_settings()}


def _optional_settings(normalization: Normalization, interaction: str, mask: str, alibi: float, schedule) -> dict:
    """The settings a run records only when they are not the default (earlier runs keep their attributes and
    command line as before)."""
    settings = {}
    if normalization.name != "post":
        settings.update(normalization.options())
    if interaction != "auto":
        settings["interaction"] = interaction
    if mask != "none":
        settings.update(mask=mask, alibi=alibi)
    if schedule is not None:
        settings["nu_schedule"] = schedule.spec
    return settings


def _static_variables(scheme, stepper=None) -> dict:
    """The tokens' weights and, when not the identity, ``Q``, ``K``, ``V`` (several heads: a leading head axis); the
    per-layer weights of a layered run (:meth:`meanfield.solvers.steppers.steppers.PostLNLayers.variables`)."""
    extra = dict(scheme.static_variables(), **getattr(stepper, "variables", dict)())
    if scheme.heads is not None:
        for index, name in enumerate(("Q", "K", "V")):
            extra[name] = (("head", "row", "column"), np.stack([head[index] for head in scheme.heads]))
    for name, matrix in (("Q", scheme.Q), ("K", scheme.K), ("V", scheme.V)):
        if matrix is not None and scheme.heads is None:
            extra[name] = (("row", "column"), matrix)
    return extra
