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
