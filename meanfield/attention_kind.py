"""The attention kinds (MATH.md §1, §2): how the kernel's pull on a token becomes the attention output.

The package sums the kernel scaled by ``exp(-beta)``: at a token ``x`` the *pull* ``sum_j w_j e^{beta(<x, y_j> - 1)}
y_j`` and the kernel's *mass* ``sum_j w_j e^{beta(<x, y_j> - 1)}`` (for a density, ``exp(-beta) (K * rho)`` and its
gradient).  A kind says what the attention output is made of them:

* :class:`Softmax` (``sa``, MATH.md §1): the pull over the mass, a weighted mean of the values (the ``exp(-beta)``
  cancels); the velocity of a density is ``grad log(K * rho) / beta``;
* :class:`Unnormalised` (``usa``): the pull scaled back by ``exp(beta)`` (its time scale; ``beta <= 700`` keeps it
  finite); the velocity is ``grad(K * rho) / beta``, and the flow is the gradient flow of the free energy
  ``F = nu int rho log rho - E`` (MATH.md §9).

Code asks the kind (``normalised``, :meth:`AttentionKind.scale`, :meth:`AttentionKind.output`) rather than its name;
:data:`KINDS` registers each by name (``--attention``), and :func:`attention_kind` looks one up.  A new kind is a
subclass added to :data:`KINDS` (``docs/extending.md``).
"""

from __future__ import annotations

import math

from .errors import registered


class AttentionKind:
    """How the scaled pull and mass make the attention output (module docstring)."""

    #: The name ``--attention`` takes.
    name: str = ""
    #: Whether the output is the pull over the kernel's mass (a mean of the values).
    normalised: bool = True
    #: The largest ``beta`` at which the output is finite in double precision.
    beta_max: float = math.inf

    @property
    def label(self) -> str:
        """The name as messages and plots print it (``SA``, ``USA``)."""
        return self.name.upper()

    @property
    def has_free_energy(self) -> bool:
        """Whether the noisy PDE is the Wasserstein gradient flow of ``nu int rho log rho - E`` (MATH.md §9)."""
        return not self.normalised

    def scale(self, beta: float) -> float:
        """The factor that puts back the ``exp(-beta)`` of the scaled sums (1 where the ratio cancels it)."""
        return 1.0 if self.normalised else math.exp(beta)

    def relative_scale(self, beta: float) -> float:
        """An unnormalised kind's :meth:`scale` over USA's ``exp(beta)``: the factor of its output over the plain sum
        ``sum_j w_j e^{beta <x, y_j>} y_j`` (exactly 1 for USA; 1 for a normalised kind, whose ratio has no scale)."""
        return 1.0 if self.normalised else self.scale(beta) / math.exp(beta)

    def output(self, pull, mass, beta: float):
        """The attention output from the scaled ``pull`` and the kernel's scaled ``mass`` (module docstring)."""
        return pull / mass if self.normalised else pull * self.scale(beta)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Softmax(AttentionKind):
    """SA: the softmax's weighted mean of the values (MATH.md §1)."""

    name, normalised = "sa", True


class Unnormalised(AttentionKind):
    """USA: the unnormalised surrogate, the pull scaled by ``exp(beta)`` (MATH.md §1); finite to ``beta = 700``."""

    name, normalised, beta_max = "usa", False, 700.0


#: The registered kinds, by ``--attention`` name.
KINDS: dict[str, AttentionKind] = {kind.name: kind for kind in (Softmax(), Unnormalised())}


def attention_kind(name, option: str = "--attention") -> AttentionKind:
    """The kind registered as ``name`` (any case; a kind passes through); one line naming ``option`` otherwise."""
    return registered(KINDS, name, option, AttentionKind, fold_case=True)
