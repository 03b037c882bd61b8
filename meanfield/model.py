"""The model: which attention, at what inverse temperature, with what noise, in which dimension.

A :class:`Model` is a validated, immutable value (MATH.md §1–2).  Every
invalid combination is refused at construction with one line naming the
parameter and its allowed range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .attention_kind import KINDS, AttentionKind, attention_kind
from .defaults import GEOMETRY_DEFAULTS, RUN_DEFAULTS
from .errors import require
from .limits import check_option
from .number_text import read_number

ATTENTIONS = tuple(KINDS)

#: Above this ``beta`` the USA time scale ``exp(beta)`` overflows double precision.
USA_BETA_MAX = KINDS["usa"].beta_max


@dataclass(frozen=True)
class Model:
    """Self-attention dynamics on the sphere S^{dim-1}.

    attention : ``"sa"`` (normalised softmax) or ``"usa"`` (unnormalised surrogate), MATH.md §1; :attr:`kind`.
    beta      : inverse temperature, ``beta >= 0`` (``USA`` needs ``beta <= 700``).
    nu        : noise strength, ``nu >= 0``; the PDE gets ``nu * Laplace(rho)`` (MATH.md §1).
    dim       : ambient dimension ``d >= 2``; tokens live on S^{d-1} (``dim = 2``: the circle).
    """

    attention: str = RUN_DEFAULTS["attention"]
    beta: float = RUN_DEFAULTS["beta"]
    nu: float = RUN_DEFAULTS["nu"]
    dim: int = GEOMETRY_DEFAULTS["circle"]["dim"]

    def __post_init__(self):
        kind = attention_kind(self.attention)
        object.__setattr__(self, "attention", kind.name)
        beta, nu = _as_float("beta", self.beta), _as_float("nu", self.nu)
        check_option("--beta", beta)
        check_option("--nu", nu)
        require(beta <= kind.beta_max,
                f"--beta must be <= {kind.beta_max:g} for {kind.label} attention, whose time scale exp(beta) "
                f"overflows double precision (got {beta:g})")
        require(isinstance(self.dim, (int,)) and not isinstance(self.dim, bool) and self.dim >= 2,
                f"--dim must be an integer >= 2 (got {self.dim!r})")     # the upper bound: per path (limits.RANGES)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "nu", nu)

    @property
    def kind(self) -> AttentionKind:
        """The attention as an object (:mod:`meanfield.attention_kind`)."""
        return attention_kind(self.attention)

    @property
    def normalised(self) -> bool:
        """SA: the softmax normalises the field, velocity ``grad log(K * rho) / beta`` (MATH.md §1, §2); USA: it does
        not, velocity ``grad(K * rho) / beta``."""
        return self.kind.normalised

    @property
    def has_free_energy(self) -> bool:
        """USA is the Wasserstein gradient flow of ``F = nu int rho log rho - E`` (MATH.md §9); SA has no such simple
        functional."""
        return self.kind.has_free_energy


def _as_float(name: str, value) -> float:
    """``value`` as a float: a real number (not a bool, which Python would read as 0 or 1) or ASCII decimal text."""
    given = value
    if isinstance(value, str):
        value = read_number(value)
    require(value is not None and not isinstance(value, (bool, np.bool_)), f"--{name} must be a number (got {given!r})")
    try:
        value = float(value)
    except (TypeError, ValueError):
        require(False, f"--{name} must be a number (got {value!r})")
    require(math.isfinite(value), f"--{name} must be finite (got {value!r})")
    return value
