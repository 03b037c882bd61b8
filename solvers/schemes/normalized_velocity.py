"""The velocity of a density scheme under a normalisation that keeps the mean field on the sphere (MATH.md §6).

Post-LN, nGPT and LN-scaling move a token's direction at ``X = P A / s`` with a divisor ``s`` that
depends only on the direction and the time (:class:`meanfield.normalization.Normalization`), so
the density still solves ``d rho/dt + div(rho X) = nu Laplace rho`` with the new ``X``; the noise
term is not divided:

* ``post``     ``s = 1``: the field of MATH.md §2, unchanged (the schemes run the same operations);
* ``lnscale``  ``s = sqrt(t + 1)``: the transport at time ``t`` is the post one divided by ``s``;
* ``ngpt``     ``s = |A| / alpha`` pointwise, ``|A|^2 = |P A|^2 + <theta, A>^2``.

For nGPT the schemes need the radial attention ``<theta, A>``.  With ``A = int y exp(beta <theta, y>)
rho(y) dsigma(y)`` (USA, the mean-field limit of the package's ``1/n`` scaling) it is
``d/dbeta (K * rho)``, spectral with the coefficients ``kappa_l'`` of
:func:`meanfield.kernels.scaled_funk_hecke_beta_derivative`; SA divides ``A`` by ``K * rho > 0``.
A positive factor per point cancels from ``P A / |A|``, so nGPT moves SA and USA densities by the
same field, which the schemes compute from scaled quantities (no ``exp(beta)``, no ``K * rho``)::

    X = alpha G / sqrt(|G|^2 + R^2),   G = grad(exp(-beta) K * rho) / beta,   R = exp(-beta) d/dbeta (K * rho).

Linearised at the uniform state ``P A = 0``, so degree ``l`` grows at ``lambda_l / s_0`` (MATH.md §6):
``alpha lambda_l / a`` for nGPT with ``a = <theta, A> = I_{d/2}(beta) / I_{d/2-1}(beta)`` (SA; the
same ratio ``lambda_l / a`` for USA; degree 1 grows at ``alpha (d - 1) / beta``), and amplitudes
``exp(2 lambda_l (sqrt(t + 1) - 1))`` for LN-scaling.

nGPT's ``alpha`` only rescales time (``X`` is proportional to it).  Its field is less smooth than
Post-LN's: ``1 / |A|`` is the square root of an entire function, whose complex zeros lie closer to the
sphere than those of ``K * rho`` (circle, ``vonmises:3`` at ``beta = 4``: the Fourier coefficients of
``X`` fall by a factor of about 0.74 per mode against 0.48 for Post-LN), so spectral runs need a
higher resolution for the same density.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from meanfield.errors import require
from meanfield.kernel_operator import KernelOperator
from meanfield.kernels import scaled_funk_hecke, scaled_funk_hecke_beta_derivative
from meanfield.model import Model
from meanfield.normalization import ON_THE_SPHERE, Normalization
from meanfield.theory import fastest_growth_rate

#: Floor of ``|A|`` (scaled) in nGPT's division: where ``|A| = 0`` also ``P A = 0``, and ``X = 0``.
NORM_FLOOR = np.finfo(float).tiny


def density_normalization(normalization=None) -> Normalization:
    """``normalization`` (``None``, a scheme name or a :class:`Normalization`) checked for a density scheme.

    Pre-, Mix- and Peri-LN need a radius per token, which a density does not carry: refused in one line.
    """
    if normalization is None:
        return Normalization()
    if not isinstance(normalization, Normalization):
        normalization = Normalization(normalization)
    name = normalization.name
    require(normalization.on_the_sphere,
            f"--normalization {name} needs a radius per token, which the density schemes (spectral, galerkin, fv) "
            f"do not carry: use `meanfield particles --normalization {name}` or --scheme lagrangian")
    return normalization


def uniform_radial_attention(beta: float, dim: int) -> float:
    """``a = <theta, A>`` of SA at the uniform density: ``I_{d/2}(beta) / I_{d/2-1}(beta)`` (MATH.md §6)."""
    return float(scaled_funk_hecke_beta_derivative(0, beta, dim) / scaled_funk_hecke(0, beta, dim))


class VelocityNormalization:
    """A density scheme's normalisation: divides its tangential field by ``s`` (module docstring).

    ``name``: ``post``, ``ngpt`` or ``lnscale`` (one of :data:`meanfield.normalization.ON_THE_SPHERE`).
    """

    def __init__(self, normalization, model: Model):
        self.normalization = normalization = density_normalization(normalization)
        self.name = normalization.name
        assert self.name in ON_THE_SPHERE
        self.model = model
        self.ngpt = self.name == "ngpt"
        self.lnscale = self.name == "lnscale"

    def kernel(self, degrees) -> KernelOperator:
        """The scheme's :class:`meanfield.kernel_operator.KernelOperator` at ``degrees``: its velocity
        multiplier is times ``exp(beta)`` for USA, except under nGPT, whose field is scale-free."""
        return KernelOperator.of(self.model, degrees, self.normalization)

    def fastest_rate(self, degrees) -> float:
        """The fastest linear growth rate at ``t = 0`` over ``degrees`` (for the schemes' step bounds):
        :func:`meanfield.theory.fastest_growth_rate` (Post-LN; LN-scaling is slower after ``t = 0``), or
        for nGPT ``alpha lambda_l / a`` with SA's ``lambda_l`` and ``a`` (the same for USA)."""
        if not self.ngpt:
            return fastest_growth_rate(self.model, degrees)
        sa = replace(self.model, attention="sa")
        return fastest_growth_rate(sa, degrees) * self.normalization.alpha / uniform_radial_attention(sa.beta, sa.dim)

    def divide(self, field: np.ndarray, t: float, tangential_sq=None, radial=None) -> np.ndarray:
        """``field / s`` in place (a tangential field, or its components stacked on the first axis).

        nGPT needs ``tangential_sq = |G|^2`` and ``radial = R`` on the same points (scaled alike);
        Post-LN returns ``field`` untouched.
        """
        if self.ngpt:
            norm = np.sqrt(tangential_sq + radial * radial)
            np.maximum(norm, NORM_FLOOR, out=norm)
            field /= self.normalization.divisor(t, norm=norm)
        elif self.lnscale:
            field /= self.normalization.divisor(t)
        return field
