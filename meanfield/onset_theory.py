"""The weakly nonlinear onset of each mode's branch of stationary states (MATH.md §9).

With noise the uniform density loses stability through degree ``k`` at ``nu_#^(k) = lambda_k(0) / (k (k + d - 2))``
(:func:`onset_noise`, MATH.md §2.3).  A branch of states with the symmetry of that degree leaves it there
(:mod:`meanfield.solvers.stationary.branch`); near onset, with ``a`` the branch's amplitude (on the circle ``rho_hat_k``, on
S^{d-1} the orthonormal coefficient ``c_k``) and ``delta = nu / nu_#^(k) - 1``:

* **pitchfork** (the circle's every mode, S^{d-1}'s odd degrees: a symmetry maps ``a`` to ``-a``):
  ``delta = C a^2 + O(a^4)``;
* **transcritical** (S^{d-1}'s even degrees, ``d >= 3``): ``delta = B a + O(a^2)``.

The coefficients come from expanding the self-consistency equation to third order in the orthonormal symmetric
functions ``Y_j`` (:func:`onset_coefficient`; MATH.md §9 derives them).  With ``|S|`` the sphere's area,
``T_j = int Y_k^2 Y_j``, ``Q = int Y_k^4``, ``T = int Y_k^3`` and the kernel's eigenvalues ``kappa_j``
(``m_j = kappa_j / kappa_0``, ``s = 1 / m_k``; the sums over the even degrees ``j = 2 .. 2k``), per unit ``c_k^2``
(pitchfork) or ``c_k`` (transcritical):

* USA: ``|S|^2 [ sum_j (kappa_j / kappa_k) T_j^2 / (2 (1 - kappa_j / kappa_k)) + Q / 6 - 1 / (2 |S|) ]`` and
  ``|S| T / 2``;
* SA: ``m_k^3 |S|^2 [ s^2 (s - 1)^2 / 2 sum_j m_j T_j^2 / (1 - s m_j) + s Q / 3 - s^2 (Q - 1 / |S|) / 2
  + s^3 Q / 6 - s^3 / (2 |S|) ]`` and ``(1 - m_k) |S| T / 2``.

On the circle's mode 1 (USA) this is ``C = 2 pi^2 (2 r - 1) / (1 - r)``, ``r = I_2(beta) / I_1(beta)``, whose sign
changes at the tricritical ``beta*`` (:func:`meanfield.solvers.stationary.branch.bessel_root`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import roots_jacobi

from .gegenbauer import normalised_gegenbauer
from .geometry import sphere_area
from .kernels import scaled_funk_hecke
from .model import Model

PITCHFORK, TRANSCRITICAL = "pitchfork", "transcritical"


def onset_noise(model: Model, mode: int) -> float:
    """``nu_#^(k)``: the noise below which the uniform state is unstable to degree ``mode`` (MATH.md §2.3)."""
    from .theory import interaction_rate

    return float(interaction_rate(model, np.array([int(mode)]))[0])


def bifurcation_kind(dim: int, mode: int) -> str:
    """:data:`PITCHFORK` or :data:`TRANSCRITICAL` (module docstring)."""
    return TRANSCRITICAL if dim >= 3 and mode % 2 == 0 else PITCHFORK


def _symmetric_functions(dim: int, degrees: np.ndarray):
    """The orthonormal symmetric functions of ``degrees`` at quadrature nodes exact for their products of four, and
    the weights (whole-sphere integrals): ``cos(j theta) / sqrt(pi)`` on the circle, normalised Gegenbauer
    polynomials on S^{d-1}."""
    top = int(degrees.max())
    count = 2 * top + 4
    if dim == 2:
        theta = math.pi * (np.arange(count) + 0.5) / count
        values = np.cos(np.outer(theta, degrees)) / math.sqrt(math.pi)
        values[:, degrees == 0] = 1.0 / math.sqrt(2 * math.pi)
        return values, np.full(count, 2 * math.pi / count)
    alpha = (dim - 3) / 2.0
    t, w = roots_jacobi(count, alpha, alpha)
    return normalised_gegenbauer(t, top, dim)[:, degrees], sphere_area(dim - 1) * w


def onset_coefficient(model: Model, mode: int) -> float:
    """``C`` (pitchfork) or ``B`` (transcritical) of mode ``mode``'s branch, per unit of its amplitude ``a`` (the
    module docstring's formulas, divided by the amplitude's scale: ``c_k = 2 sqrt(pi) a`` on the circle)."""
    dim, k, beta = model.dim, int(mode), model.beta
    area = sphere_area(dim)
    partners = (np.array([2 * k]) if dim == 2 else np.arange(2, 2 * k + 1, 2))
    degrees = np.concatenate(([0, k], partners))
    values, weights = _symmetric_functions(dim, degrees)
    y = values[:, 1]
    kappa = scaled_funk_hecke(degrees, beta, dim)
    scale = 2 * math.sqrt(math.pi) if dim == 2 else 1.0             # c_k per unit of a
    sa = model.normalised
    m_k = kappa[1] / kappa[0]
    if bifurcation_kind(dim, k) == TRANSCRITICAL:
        cubic = float(weights @ y ** 3)
        return (1 - m_k if sa else 1.0) * area * cubic / 2 * scale
    t = np.array([weights @ (y * y * values[:, 2 + i]) for i in range(partners.size)])
    quartic = float(weights @ y ** 4)
    if sa:
        s = 1.0 / m_k
        m = kappa[2:] / kappa[0]
        bracket = (s * s * (s - 1) ** 2 / 2 * float(np.sum(m * t * t / (1 - s * m))) + s * quartic / 3
                   - s * s * (quartic - 1 / area) / 2 + s ** 3 * quartic / 6 - s ** 3 / (2 * area))
        return m_k ** 3 * area ** 2 * bracket * scale ** 2
    ratio = kappa[2:] / kappa[1]
    bracket = float(np.sum(ratio * t * t / (2 * (1 - ratio)))) + quartic / 6 - 1 / (2 * area)
    return area ** 2 * bracket * scale ** 2
