"""Settings objects: the groups of run settings that :func:`meanfield.solve`,
:func:`meanfield.simulate_particles` and the command line share (DESIGN.md "Settings").

Each is a small frozen dataclass with one job that checks itself when made (one line naming the
command-line flag and the allowed range, :class:`meanfield.errors.InputError`); its field defaults
are read from :mod:`meanfield.defaults` when the object is made, so no default is written twice.

* :class:`StepControl` -- the time stepper: ``stepper``, ``rtol``, ``atol``, ``cfl``, ``dt_max``.
* :class:`Monitor` -- the validity monitor's tolerances of a density run (MATH.md §4): ``resolution_tol``,
  ``positivity_tol``.
* :class:`Saving` -- the clock and the frames: ``t_final``, ``save_every``, ``save_log``.
* :class:`Attention` -- a particle run's attention (MATH.md §1): SA or USA, ``qkv`` or ``Q, K, V`` or
  ``heads``, the ``kernel`` and ``sinkhorn_eps``, the ``interaction`` path.
* the normalisation scheme is :class:`meanfield.normalization.Normalization` (MATH.md §6).

The run functions take these objects (``step=StepControl(rtol=1e-10)``) or the same settings as flat
keywords (``rtol=1e-10``), not both for one group: :func:`gather` refuses that in one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from .defaults import MASKS, PARTICLE_DEFAULTS, RUN_DEFAULTS, SOLVE_DEFAULTS
from .errors import require
from .limits import check_number, check_option, check_stepper_settings
from .attention_kind import attention_kind
from .model import ATTENTIONS
from .normalization import Normalization
from .qkv import attention_heads, check_attention_choices, check_qkv

def _default(table, key: str):
    """A dataclass field whose default is ``table[key]`` at the time an object is made."""
    return field(default_factory=lambda: table[key])


def check_save_log(save_log, save_every):
    """Frames per decade of a log time axis (``None``: the regular cadence of ``save_every``)."""
    if save_log is None:
        return None
    require(save_every is None, "give --save-every or --save-log, not both")
    return check_option("--save-log", save_log)


def check_run_length(t_final, save_every, t_start: float = 0.0):
    """``(t_final, save_every)`` checked; the default cadence is the run's length over
    ``RUN_DEFAULTS["frames"]`` (100)."""
    check_option("--t-final", t_final)
    require(t_final > t_start, f"--t-final is the end time: it must exceed the time {t_start:.8g} the --init run "
                               f"reached (got {t_final!r})")
    if save_every is None:
        save_every = (t_final - t_start) / RUN_DEFAULTS["frames"]
    check_option("--save-every", save_every)
    return float(t_final), float(min(save_every, t_final))


@dataclass(frozen=True)
class StepControl:
    """The time stepper (:mod:`meanfield.solvers.steppers.steppers`): ``stepper`` (``None``: the scheme's), ``rtol`` in (0, 1)
    (dopri5), ``atol`` > 0 (``None``: 1e-14 times the state's scale), ``cfl`` in (0, 2] (fixed-step
    steppers; ``None``: the scheme's ``default_cfl``, 0.5, or 0.9 for the finite volumes), ``dt_max`` > 0 (particles: the noise's splitting step; ``None``:
    ``PARTICLE_DEFAULTS["noise_dt_max"]`` with noise)."""

    stepper: str | None = _default(RUN_DEFAULTS, "stepper")
    rtol: float = _default(RUN_DEFAULTS, "rtol")
    atol: float | None = _default(RUN_DEFAULTS, "atol")
    cfl: float | None = _default(RUN_DEFAULTS, "cfl")
    dt_max: float | None = _default(RUN_DEFAULTS, "dt_max")

    def __post_init__(self):
        require(self.stepper is None or isinstance(self.stepper, str),
                f"--stepper must be a stepper's name (got {self.stepper!r})")
        check_stepper_settings(self.rtol, self.cfl, self.dt_max)
        if self.atol is not None:
            check_number("atol", self.atol, 0.0, math.inf)

    def cfl_for(self, scheme) -> float:
        """The CFL fraction of a run of ``scheme``: the one given, else the scheme's ``default_cfl``."""
        return scheme.default_cfl if self.cfl is None else self.cfl

    def stepper_options(self, scheme) -> dict:
        """What :func:`meanfield.solvers.steppers.steppers.make_stepper` takes besides the name for a run of ``scheme``
        (``dt_max`` only when given)."""
        options = {"cfl": self.cfl_for(scheme), "rtol": self.rtol, "atol": self.atol}
        return options if self.dt_max is None else dict(options, dt_max=self.dt_max)


@dataclass(frozen=True)
class Monitor:
    """The validity monitor of a density run (:mod:`meanfield.solvers.schemes.density_scheme`, MATH.md §4): stop when the
    spectral tail exceeds ``max(resolution_tol, 10 x its initial value)`` times the mean (``resolution_tol``
    > 0), or the density dips below ``-positivity_tol`` times its mean (``positivity_tol`` >= 0)."""

    resolution_tol: float = _default(SOLVE_DEFAULTS, "resolution_tol")
    positivity_tol: float = _default(SOLVE_DEFAULTS, "positivity_tol")

    def __post_init__(self):
        check_option("--resolution-tol", self.resolution_tol)
        check_option("--positivity-tol", self.positivity_tol)

    def scheme_options(self) -> dict:
        """The tolerances as a density scheme's keyword arguments."""
        return {"resolution_tol": self.resolution_tol, "positivity_tol": self.positivity_tol}


@dataclass(frozen=True)
class Saving:
    """The clock and the frames: the end time ``t_final`` > 0, and a frame every ``save_every`` (``None``:
    ``t_final / RUN_DEFAULTS["frames"]``) or ``save_log`` frames per decade of time (an integer in [1, 1000]), not both.
    A continued run's ``t_final`` is checked against its start when it runs."""

    t_final: float = _default(RUN_DEFAULTS, "t_final")
    save_every: float | None = _default(RUN_DEFAULTS, "save_every")
    save_log: int | None = _default(RUN_DEFAULTS, "save_log")

    def __post_init__(self):
        check_save_log(self.save_log, self.save_every)
        check_run_length(self.t_final, self.save_every)


def _frozen_matrix(matrix):
    """A read-only float copy of a matrix (``None`` stays ``None``): the settings stay immutable."""
    if matrix is None:
        return None
    array = np.array(matrix, dtype=float)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Attention:
    """A particle run's attention (MATH.md §1, :class:`meanfield.solvers.schemes.particles.ParticleScheme`).

    Parameters
    ----------
    kind : {"sa", "usa"}
        Softmax or unnormalised attention, the model's.
    qkv : str or path
        ``identity`` | ``repulsive`` (``V = -I``) | ``random`` (Gaussian from the run's seed) | a
        ``FILE.npz`` of ``Q``, ``K``, ``V`` (one or several heads).
    Q, K, V : array, optional
        Matrices instead of ``qkv`` (``None``: the identity).
    heads : list of (Q, K, V), optional
        Triples whose outputs are summed, instead of both.
    kernel : {"dot", "l2", "sinkhorn"}
        ``dot`` (``exp(beta <Qx, Ky>)``; the only kernel on the sphere), ``l2`` or ``sinkhorn`` (tokens in R^d).
    sinkhorn_eps : float
        The entropic parameter of ``sinkhorn``, > 0.
    interaction : {"auto", "harmonic", "direct"}
        The interaction path (:mod:`meanfield.solvers.schemes.particles`).

    Matrices are kept as read-only copies; objects compare by identity (they may hold arrays).
    """

    kind: str = _default(PARTICLE_DEFAULTS, "attention")
    qkv: str | Path = _default(PARTICLE_DEFAULTS, "qkv")
    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None
    heads: tuple | None = None
    kernel: str = _default(PARTICLE_DEFAULTS, "kernel")
    sinkhorn_eps: float = _default(PARTICLE_DEFAULTS, "sinkhorn_eps")
    interaction: str = _default(PARTICLE_DEFAULTS, "interaction")

    def __post_init__(self):
        require(isinstance(self.kind, str), f"--attention must be one of {', '.join(ATTENTIONS)} (got {self.kind!r})")
        object.__setattr__(self, "kind", attention_kind(self.kind).name)
        check_qkv(self.qkv)
        for name in ("Q", "K", "V"):
            object.__setattr__(self, name, _frozen_matrix(getattr(self, name)))
        check_attention_choices(self.kernel, self.heads, (self.Q, self.K, self.V), self.interaction)
        if self.heads is not None:
            object.__setattr__(self, "heads", tuple(tuple(_frozen_matrix(m) for m in h) for h in self.heads))
        check_option("--sinkhorn-eps", self.sinkhorn_eps)
        require(self.kernel == "sinkhorn" or self.sinkhorn_eps == PARTICLE_DEFAULTS["sinkhorn_eps"],
                f"sinkhorn_eps applies to kernel='sinkhorn' only (got kernel={self.kernel!r})")

    @property
    def custom(self) -> bool:
        """Whether matrices or heads were given (they override ``qkv``; the run records ``qkv = custom``)."""
        return self.heads is not None or any(m is not None for m in (self.Q, self.K, self.V))

    @property
    def label(self) -> str:
        """What a run records as ``qkv``: ``"custom"`` for given matrices or heads, else the ``qkv`` choice."""
        return "custom" if self.custom else str(self.qkv)

    def matrices(self, dim: int, seed) -> tuple:
        """``(Q, K, V, heads)`` in dimension ``dim``: the given matrices or heads, else those of the ``qkv`` choice
        (:func:`meanfield.qkv.attention_heads`; ``random`` draws from ``seed``).  The one place a choice becomes
        matrices; their shapes are checked by the scheme that uses them."""
        if self.heads is not None:
            return None, None, None, self.heads
        if self.custom:
            return self.Q, self.K, self.V, None
        return attention_heads(self.qkv, dim, seed)


def check_mask(mask, alibi) -> tuple[str, float]:
    """``(mask, alibi)`` checked, one line naming the parameter (MATH.md §8).

    ``mask`` one of :data:`meanfield.defaults.MASKS` (``"none"``: every token attends to all); ``alibi`` the ALiBi
    slope ``lambda``, a finite number in the ``--alibi`` range of ``meanfield --help``, and ``0`` without a mask.
    """
    require(isinstance(mask, str) and mask in MASKS, f"--mask must be one of {', '.join(MASKS)} (got {mask!r})")
    alibi = check_option("--alibi", alibi)
    require(alibi == 0 or mask != "none", f"--alibi {alibi:g} needs --mask causal or strict (the ALiBi slope biases "
                                          f"causal attention, MATH.md §8)")
    return mask, float(alibi)


@dataclass(frozen=True)
class Mask:
    """A particle run's causal mask (MATH.md §8, :mod:`meanfield.solvers.schemes.causal_interaction`): ``kind`` one of
    :data:`meanfield.defaults.MASKS` (``"none"``: every token attends to all; ``"causal"``: token ``j`` attends to
    ``k <= j``; ``"strict"``: ``k < j``) and the ALiBi slope ``alibi`` (``lambda >= 0``, mean-field units; 0 without a
    mask), checked by :func:`check_mask` when made."""

    kind: str = "none"
    alibi: float = 0.0

    def __post_init__(self):
        kind, alibi = check_mask(self.kind, self.alibi)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "alibi", alibi)


def twice(name: str, cls_name: str, loose: dict) -> None:
    """Refuse flat keywords (``None``: not given) of the settings already given as ``name=cls_name(...)``."""
    given = [key for key, value in loose.items() if value is not None]
    require(not given, f"{', '.join(given)} given twice: as a keyword and in {name}={cls_name}(...); "
                       f"give {'it' if len(given) == 1 else 'them'} once")


def gather(cls, name: str, given, flat: dict):
    """The ``cls`` settings of a run: the object ``given`` (keyword ``name``), or one made from the flat
    keywords of its fields, popped from ``flat``; both at once is refused in one line."""
    keys = [f.name for f in fields(cls)]
    loose = {key: flat.pop(key) for key in keys if key in flat}
    if given is None:
        return cls(**loose)
    require(isinstance(given, cls), f"{name}= must be a meanfield.{cls.__name__} (got {type(given).__name__})")
    twice(name, cls.__name__, loose)
    return given


def gather_attention(attention, flat: dict) -> Attention:
    """A particle run's :class:`Attention`: ``attention`` an :class:`Attention`, or ``"sa"``/``"usa"`` with
    the flat keywords of the other fields (``qkv``, ``Q``, ``K``, ``V``, ``heads``, ``kernel``,
    ``sinkhorn_eps``, ``interaction``), popped from ``flat``; both at once is refused in one line."""
    loose = {f.name: flat.pop(f.name) for f in fields(Attention) if f.name != "kind" and f.name in flat}
    if not isinstance(attention, Attention):
        return Attention(attention, **loose)
    twice("attention", "Attention", loose)
    return attention


def gather_normalization(normalization, flat: dict) -> Normalization:
    """The run's :class:`Normalization`: ``normalization`` a name with the flat keywords ``alpha``, ``r0``,
    ``mix_switch`` (each refused with a scheme that does not use it), or a :class:`Normalization` (then
    none of them; its unused parameters are reset, so the run records what the name would)."""
    loose = {key: flat.pop(key) for key in ("alpha", "r0", "mix_switch") if key in flat}
    if not isinstance(normalization, Normalization):
        return Normalization.from_options(normalization, **loose)
    twice("normalization", "Normalization", loose)
    options = normalization.options()
    return Normalization.from_options(options["normalization"], options["alpha"], options["r0"], options["mix_switch"])


def unexpected(function: str, flat: dict) -> None:
    """Python's own refusal of keywords a function does not take."""
    if flat:
        raise TypeError(f"{function}() got an unexpected keyword argument {next(iter(flat))!r}")


__all__ = ["Attention", "Mask", "Monitor", "Normalization", "Saving", "StepControl", "gather", "gather_attention",
           "gather_normalization"]
