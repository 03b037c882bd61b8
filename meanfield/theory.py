"""Linear stability of the uniform state: the perturbative theory (MATH.md §2.3).

Around ``rho_0 = 1 / |S^{d-1}|`` each spherical-harmonic degree ``l >= 1`` (each
Fourier mode on the circle) grows independently at the rate

    USA:  lambda_l = l (l + d - 2) kappa_l / (beta |S^{d-1}|)              - nu l (l + d - 2)
    SA:   lambda_l = l (l + d - 2) I_{l+(d-2)/2}(beta) / (beta I_{(d-2)/2}(beta)) - nu l (l + d - 2)

All Bessel functions enter as ratios of ``ive`` (SA) or as ``exp(beta) ive`` (USA).
"""

from __future__ import annotations

import math

import numpy as np

from .errors import require
from .geometry import laplace_eigenvalue, sphere_area
from .kernel_operator import KernelOperator
from .kernels import band_limit, scaled_funk_hecke
from .model import Model


def interaction_rate(model: Model, degrees) -> np.ndarray:
    """The noise-free part of ``lambda_l``, divided by ``l (l + d - 2)`` (MATH.md §2.3).

    SA:  ``I_{l+(d-2)/2}(beta) / (beta I_{(d-2)/2}(beta))``;
    USA: ``kappa_l / (beta |S^{d-1}|)``.  At ``beta = 0`` the limit (only ``l = 1`` survives).
    """
    operator = KernelOperator.of(model, np.asarray(degrees))
    if model.attention == "sa":
        return operator.over_beta / scaled_funk_hecke(0, model.beta, model.dim)
    return operator.scaled(operator.over_beta) / sphere_area(model.dim)


def growth_rates(model: Model, degrees) -> np.ndarray:
    """Linear growth rates ``lambda_l`` of degrees (circle: Fourier modes) ``degrees`` (MATH.md §2.3)."""
    degrees = np.asarray(degrees)
    require(np.all(degrees >= 1), "degrees must be >= 1 (degree 0 is the conserved mass)")
    eig = laplace_eigenvalue(degrees, model.dim)
    return eig * interaction_rate(model, degrees) - model.nu * eig


def quadratic_feed(model: Model, amplitudes, t: float, modes) -> np.ndarray:
    """How far the quadratic term of the circle PDE can move modes ``modes`` off their linear growth by
    time ``t`` (MATH.md §2.3, "Quadratic feed"): a bound on ``|c_k(t) / (c_k(0) e^{lambda_k t}) - 1|`` to
    leading order, one value per mode.

    ``amplitudes``: ``A_m = 2 pi |rho_hat_m(0)|`` for ``m = 0, 1, ..., K`` (``A_0`` unused); pairs
    ``j + l = k`` with ``1 <= |j|, |l| <= K`` (negative: the conjugate mode) feed mode ``k`` at most at
    ``(|k| / |l|) mu_l A_j A_l`` (``mu_l`` the noise-free rate) while growing at ``lambda_j + lambda_l``::

        delta_k(t) = sum_{j + l = k} (|k| / |l|) mu_l A_j A_l E(lambda_j + lambda_l - lambda_k, t) / A_k,
        E(s, t) = (e^{s t} - 1) / s.
    """
    require(model.dim == 2, "the quadratic feed is derived on the circle (d = 2)")
    amplitudes = np.asarray(amplitudes, dtype=float)
    top = amplitudes.size - 1
    degrees = np.arange(1, top + 1)
    rates, coupling = np.zeros(top + 1), np.zeros(top + 1)
    rates[1:] = growth_rates(model, degrees)
    coupling[1:] = laplace_eigenvalue(degrees, 2) * interaction_rate(model, degrees)
    out = []
    for k in np.atleast_1d(modes):
        j = np.arange(-top, top + 1)
        l = k - j
        keep = (j != 0) & (l != 0) & (np.abs(l) <= top)
        j, l = np.abs(j[keep]), np.abs(l[keep])
        exponent = rates[j] + rates[l] - rates[k]
        growth = np.where(exponent == 0, t, np.expm1(exponent * t) / np.where(exponent == 0, 1.0, exponent))
        out.append(float(np.sum(k / l * coupling[l] * amplitudes[j] * amplitudes[l] * growth) / amplitudes[k]))
    return np.array(out)


def fastest_growth_rate(model: Model, degrees) -> float:
    """``max_l lambda_l`` over ``degrees`` without noise (floored at 1e-300): the fastest linear time
    scale a time step must resolve (MATH.md §2.3); noise only damps, and the steppers treat it exactly."""
    degrees = np.asarray(degrees)
    noise_free = laplace_eigenvalue(degrees, model.dim) * interaction_rate(model, degrees)
    return float(max(np.max(noise_free), 1e-300))


def _search_range(model: Model) -> np.ndarray:
    return np.arange(1, band_limit(model.beta, model.dim, 1e-12) + 3)


def dominant_mode(model: Model) -> int:
    """``l* = argmax_l lambda_l``, the fastest-growing (least stable) degree (MATH.md §2.3).

    With noise the maximiser can be stable (``lambda_{l*} < 0``); see :func:`critical_noise`.
    """
    degrees = _search_range(model)
    return int(degrees[np.argmax(growth_rates(model, degrees))])


def critical_noise(model: Model) -> float:
    """``nu_c = max_l lambda_l(nu=0) / (l (l+d-2))``: uniform is stable iff ``nu > nu_c`` (MATH.md §2.3)."""
    return float(np.max(interaction_rate(model, _search_range(model))))


def formation_time(model: Model, eps: float) -> float:
    """Predicted cluster formation time ``log(1/eps) / lambda_{l*}`` from a perturbation of size ``eps``.

    Bruno et al. (MATH.md §2.3); i.i.d. tokens have ``eps ~ n^{-1/2}``.  Infinite when
    the uniform state is linearly stable (``nu >= nu_c``).
    """
    require(0 < eps < 1, f"eps must be in (0, 1) (got {eps:g})")
    rate = growth_rates(model, [dominant_mode(model)])[0]
    return math.log(1.0 / eps) / rate if rate > 0 else math.inf
