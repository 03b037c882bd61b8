"""Normalisation schemes: how a layer norm turns the attention output into token motion (MATH.md §6).

Tokens are ``x_j = r_j theta_j`` with ``theta_j`` on the sphere and a radius ``r_j > 0``.  With
the attention output ``A_j`` (the softmax average of ``V theta_k`` for SA; unnormalised for USA),
every scheme moves the direction by ``dtheta_j/dt = P_{theta_j} A_j / s_j`` and the radius by
``dr_j/dt``:

==========  ==============================================  ================================
scheme      speed divisor ``s_j``                           ``dr_j/dt``
==========  ==============================================  ================================
post        1 (the seeds' model)                            0
pre         ``r_j``                                         ``<theta_j, A_j>``
mix         post for ``t <= tau``, then pre (``tau``:       0, then ``<theta_j, A_j>``
            ``mix_switch``)
peri        ``r_j |A_j|``                                   ``<theta_j, A_j> / |A_j|``
ngpt        ``|A_j| / alpha``                               0
lnscale     ``sqrt(t + 1)``                                 0
==========  ==============================================  ================================

Post, nGPT and LN-scaling keep the mean field a density on the sphere (the speed depends on the
direction and the time only); Pre, Mix and Peri need a radius per token or node.
:class:`Normalization` is the validated choice (one line naming the parameter for bad input);
:meth:`Normalization.divisor` and :meth:`Normalization.radial_rate` are the table above, for arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import require
from .limits import check_option

#: Every scheme, in the order the command line lists them.
SCHEMES = ("post", "pre", "mix", "peri", "ngpt", "lnscale")
#: Display name of every scheme (figure titles).
LABELS = {"post": "Post-LN", "pre": "Pre-LN", "mix": "Mix-LN", "peri": "Peri-LN", "ngpt": "nGPT", "lnscale": "LN-scaling"}
#: Schemes whose tokens carry a radius (the state grows by one column).
CARRY_RADIUS = ("pre", "mix", "peri")
#: Schemes whose mean field is a density on the sphere (the PDE solvers can run them).
ON_THE_SPHERE = ("post", "ngpt", "lnscale")
#: Default switch time of Mix-LN (post before, pre after).
DEFAULT_MIX_SWITCH = 1.0


def _positive(name: str, value, closed: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        require(False, f"{name} must be a number (got {value!r})")
    require(math.isfinite(number) and (number >= 0 if closed else number > 0),
            f"{name} must be a finite number {'>= 0' if closed else '> 0'} (got {value!r})")
    return number


@dataclass(frozen=True)
class Normalization:
    """A normalisation scheme and its parameters (module docstring; MATH.md §6).

    name        one of :data:`SCHEMES` (``post`` is the seeds' model).
    r0          the tokens' initial radius (schemes that carry one), ``> 0``.
    alpha       nGPT's step (speed ``alpha P A / |A|``), ``> 0``.
    mix_switch  Mix-LN's switch time ``tau >= 0``.
    """

    name: str = "post"
    r0: float = 1.0
    alpha: float = 1.0
    mix_switch: float = DEFAULT_MIX_SWITCH

    def __post_init__(self):
        require(isinstance(self.name, str) and self.name.lower() in SCHEMES,
                f"--normalization must be one of {', '.join(SCHEMES)} (got {self.name!r})")
        object.__setattr__(self, "name", self.name.lower())
        for option in ("--r0", "--alpha", "--mix-switch"):
            name = option[2:].replace("-", "_")
            object.__setattr__(self, name, float(check_option(option, getattr(self, name))))

    @property
    def carries_radius(self) -> bool:
        return self.name in CARRY_RADIUS

    @property
    def on_the_sphere(self) -> bool:
        return self.name in ON_THE_SPHERE

    @property
    def needs_norm(self) -> bool:
        """Whether the motion needs ``|A_j|`` (Peri-LN and nGPT)."""
        return self.name in ("peri", "ngpt")

    def acts_as(self, t: float) -> str:
        """The scheme in force at time ``t``: Mix-LN is ``post`` up to ``mix_switch``, then ``pre``."""
        if self.name == "mix":
            return "post" if t <= self.mix_switch else "pre"
        return self.name

    def switch_times(self) -> tuple[float, ...]:
        """The times the scheme in force changes (Mix-LN: ``tau``; the others: none)."""
        return (self.mix_switch,) if self.name == "mix" else ()

    def at_layer(self, alpha: float, layer: int) -> str:
        """The scheme in force for discrete layer ``layer`` (0, 1, ...) of step ``alpha``, which starts at
        ``t = layer alpha`` (MATH.md §11): Mix-LN is ``post`` for layers that start before ``tau``, then ``pre``
        (as the flow moves as Pre-LN from ``tau`` on)."""
        return self.acts_as(math.nextafter(layer * alpha, math.inf))

    def stage_time(self, t: float, after_switch: bool) -> float:
        """The time a stage moves at: a step that starts at Mix-LN's ``tau`` (``after_switch``, set by the
        run loop once it has landed on ``tau``) moves as Pre-LN from its first stage, ``t = tau`` included."""
        return max(t, math.nextafter(self.mix_switch, math.inf)) if after_switch else t

    def divisor(self, t: float, radius=None, norm=None):
        """The speed divisor ``s`` at time ``t`` for radii ``radius`` and output norms ``|A| = norm``."""
        scheme = self.acts_as(t)
        if scheme == "post":
            return 1.0
        if scheme == "pre":
            return radius
        if scheme == "peri":
            return radius * norm
        if scheme == "ngpt":
            return norm / self.alpha
        return math.sqrt(t + 1.0)

    def radial_rate(self, t: float, radial, norm=None):
        """``dr/dt`` at time ``t`` from ``<theta, A> = radial`` and ``|A| = norm`` (0 for schemes without radius)."""
        scheme = self.acts_as(t)
        if scheme == "pre":
            return radial
        if scheme == "peri":
            return radial / norm
        return np.zeros_like(radial)

    @classmethod
    def from_options(cls, name, alpha=None, r0=None, mix_switch=None) -> "Normalization":
        """The scheme from command-line style options, ``None`` meaning "not given": each parameter is
        refused (one line) with a scheme that does not use it, so no flag is accepted and ignored."""
        given = {key: value for key, value in (("alpha", alpha), ("r0", r0), ("mix_switch", mix_switch))
                 if value is not None}
        scheme = cls(name, **given)
        require(alpha is None or scheme.name == "ngpt",
                f"--alpha applies to --normalization ngpt only (got --normalization {scheme.name})")
        require(r0 is None or scheme.carries_radius,
                f"--r0 applies to --normalization pre, mix or peri only (got --normalization {scheme.name})")
        require(mix_switch is None or scheme.name == "mix",
                f"--mix-switch applies to --normalization mix only (got --normalization {scheme.name})")
        return scheme

    def options(self) -> dict:
        """The command-line settings of this scheme: the parameters it uses, ``None`` for the others
        (:meth:`from_options` takes them back)."""
        return {"normalization": self.name, "alpha": self.alpha if self.name == "ngpt" else None,
                "r0": self.r0 if self.carries_radius else None,
                "mix_switch": self.mix_switch if self.name == "mix" else None}

    def as_attrs(self) -> dict:
        """The scheme as netCDF attributes (``normalization``, ``r0``, ``alpha``, ``mix_switch``)."""
        return {"normalization": self.name, "r0": self.r0, "alpha": self.alpha, "mix_switch": self.mix_switch}
