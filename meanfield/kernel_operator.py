"""The attention kernel as one operator on a set of degrees (MATH.md §2.1–2.3, §6).

For a model (attention SA or USA, ``beta``, ``dim``) and the degrees (circle: Fourier modes) a scheme
keeps, :class:`KernelOperator` gives every multiplier the schemes, particles, diagnostics and the
theory use, each written here once:

* ``conv``:      ``c_l = exp(-beta) kappa_l``, the convolution ``K * rho``
                 (:func:`meanfield.kernels.scaled_funk_hecke`);
* ``over_beta``: ``c_l / beta``, the velocity's multiplier (``X = grad(K * rho) / beta``, MATH.md §2);
* ``radial``:    ``exp(-beta) d kappa_l / d beta``, the radial attention ``<theta, A>`` (MATH.md §6);
* :meth:`scaled`: times ``exp(beta)`` for USA (the ``exp(-beta)`` of the coefficients put back), except
  for a scale-free normalisation (nGPT divides the field by its own norm, MATH.md §6), and
  :meth:`velocity` = ``scaled(prefactor * over_beta)``;
* :meth:`energy`: the interaction energy ``exp(-beta) E = (|Y|^2 / 2 beta) sum_l mult_l c_l |rho_l|^2``
  (MATH.md §2.1–2.2), ``|Y|^2`` the squared norm of the basis functions of the coefficients;
* :meth:`band_limit`: the kernel's numerical band limit (MATH.md §2.1).

:meth:`meanfield.attention_kind.AttentionKind.scale` is the bare ``exp(beta)``-for-USA factor (for sums that are not multipliers at degrees),
:func:`top_sixth` the slice of degrees where the schemes watch the spectral tail.  Where the callers composed a
multiplier in a fixed order (``(2 k c_k / beta) / 2 pi``, say), they pass that product to :meth:`scaled`, so every
run repeats the earlier bits.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .attention_kind import attention_kind
from .errors import InputError
from .kernels import band_limit, representable, scaled_funk_hecke, scaled_funk_hecke_beta_derivative, scaled_funk_hecke_over_beta


def top_sixth(band: int) -> slice:
    """The top sixth ``[5 band / 6, band]`` of degrees ``0 .. band`` (at least degree 1): where a scheme
    watches the spectral tail of a density (resolution check, DESIGN.md *Stopping*)."""
    return slice(max(1, (5 * band) // 6), band + 1)


def _scale_free(normalization) -> bool:
    name = getattr(normalization, "name", normalization)
    return name == "ngpt"


def largest_representable_dim(beta: float) -> int:
    """The largest dimension :func:`representable` at ``beta`` (bisection; the condition is monotone in d)."""
    low, high = 2, 8192
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if representable(beta, middle) else (low, middle)
    return low


class KernelOperator:
    """The kernel ``exp(beta <x, y>)`` on S^{dim-1} at ``degrees`` (module docstring).

    ``degrees``: an array of degrees (negative Fourier modes stand for ``|k|``).  ``normalization``: a
    :class:`meanfield.normalization.Normalization` or its name; nGPT makes :meth:`scaled` leave USA's field
    unscaled (the density schemes normalise the scaled field).  Multipliers are computed when first used
    and kept by the instance.
    """

    def __init__(self, degrees, beta: float, dim: int = 2, attention: str = "sa", normalization=None):
        if beta != 0 and not representable(beta, dim):      # (the message's bisection only when it is needed)
            raise InputError(f"--dim {dim} at --beta {beta:g}: the kernel's Funk–Hecke coefficients leave double "
                             f"precision (largest dimension here: {largest_representable_dim(beta)}); the linear "
                             f"theory (`meanfield theory`) and particles go further")
        self.degrees = np.asarray(degrees)
        self.beta, self.dim, self.attention = beta, dim, attention
        self.kind = attention_kind(attention)
        self.scale_free = _scale_free(normalization)

    @classmethod
    def of(cls, model, degrees, normalization=None) -> "KernelOperator":
        """The operator of a :class:`meanfield.model.Model` at ``degrees``."""
        return cls(degrees, model.beta, model.dim, model.attention, normalization)

    @classmethod
    def banded(cls, beta: float, dim: int = 2, attention: str = "sa", tol: float = 1e-15,
               extra: int = 0) -> "KernelOperator":
        """The operator on degrees ``0 .. band_limit(beta, dim, tol) + extra``."""
        return cls(np.arange(band_limit(beta, dim, tol) + 1 + extra), beta, dim, attention)

    # -- multipliers -------------------------------------------------------------------------------------
    def _per_degree(self, coefficients) -> np.ndarray:
        """``coefficients(degrees)`` evaluated once per distinct degree: a layout that repeats each degree (the
        ``(l, m)`` coefficients on S^2: ``(L+1)(L+2)/2`` entries for ``L + 1`` degrees) gathers from a table of
        ``0 .. max |l|``.  Each coefficient is computed elementwise, so the values are the same bits."""
        degrees = self.degrees
        integral = degrees.dtype.kind in "iu" or (degrees.dtype.kind == "f"
                                                  and bool(np.all(degrees == np.round(degrees))))
        if not integral or degrees.size == 0:
            return coefficients(degrees)
        top = int(np.max(np.abs(degrees)))
        if degrees.size <= 2 * (top + 1):
            return coefficients(degrees)
        table = coefficients(np.arange(top + 1, dtype=degrees.dtype))
        return table[np.abs(degrees).astype(np.intp)]

    @cached_property
    def conv(self) -> np.ndarray:
        """``exp(-beta) kappa_l`` (MATH.md §2.2)."""
        return self._per_degree(lambda degrees: scaled_funk_hecke(degrees, self.beta, self.dim))

    @cached_property
    def over_beta(self) -> np.ndarray:
        """``exp(-beta) kappa_l / beta`` (0 at degree 0; MATH.md §2)."""
        return self._per_degree(lambda degrees: scaled_funk_hecke_over_beta(degrees, self.beta, self.dim))

    @cached_property
    def radial(self) -> np.ndarray:
        """``exp(-beta) d kappa_l / d beta`` (MATH.md §2.2, §6)."""
        return self._per_degree(lambda degrees: scaled_funk_hecke_beta_derivative(degrees, self.beta, self.dim))

    @property
    def velocity_scale(self) -> float:
        """``exp(beta)`` for USA (unless scale-free), else 1 (MATH.md §2: SA's ``exp(beta)`` cancels)."""
        return 1.0 if self.scale_free else self.kind.scale(self.beta)

    def scaled(self, values):
        """``values`` (``exp(-beta)``-scaled sums or multipliers) times :attr:`velocity_scale`."""
        if not (self.kind.normalised or self.scale_free):
            return values * self.kind.scale(self.beta)
        return values

    def velocity(self, prefactor=1.0) -> np.ndarray:
        """The velocity multiplier ``scaled(prefactor * exp(-beta) kappa_l / beta)`` (``prefactor``: the
        derivative's symbol, e.g. ``i k`` on the circle)."""
        return self.scaled(prefactor * self.over_beta)

    # -- quadratic form and band -------------------------------------------------------------------------
    def energy(self, coeffs: np.ndarray, multiplicity=None, norm: float = 1.0) -> float:
        """``exp(-beta) E = (norm / 2 beta) sum_l mult_l c_l |coeffs_l|^2`` (MATH.md §2.1–2.2).

        ``coeffs`` at :attr:`degrees`; ``multiplicity``: how often each stored coefficient counts (2 for a
        coefficient that stands for its conjugate too), none: once; ``norm``: the squared norm of the basis
        functions (1 for orthonormal harmonics and Gegenbauer polynomials, ``2 pi`` for MATH.md §2.1's
        Fourier coefficients ``rho_hat_k``).  The circle's prefactor is applied as ``(2 pi / 2 beta) * sum``, which
        rounds exactly as ``(pi / beta) * sum``, the orthonormal one as ``sum / (2 beta)`` (the bits of every run
        file written before the operator).
        """
        form = self.conv if multiplicity is None else multiplicity * self.conv
        total = np.sum(form * np.abs(coeffs) ** 2)
        if norm == 1.0:
            return float(total / (2.0 * self.beta))
        return float(norm / (2.0 * self.beta) * total)

    def band_limit(self, tol: float = 1e-15) -> int:
        """:func:`meanfield.kernels.band_limit` of this kernel."""
        return band_limit(self.beta, self.dim, tol)
