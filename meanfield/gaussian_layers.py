"""Discrete residual layers on Gaussian data in R^d: the moment map of a layer, exact (MATH.md §3.1).

A residual layer of step ``alpha`` moves every token by ``x <- x + alpha Gamma_mu(x)``, ``mu`` the tokens' own
distribution (the Euler step of the flow of MATH.md §3 that
:func:`meanfield.solvers.steppers.layers.residual_layer` takes for tokens in R^d).  For ``mu = N(m, L L^T)`` and the
attentions of :mod:`meanfield.gaussian` (softmax, L2, Sinkhorn, several heads) the field is affine,
``Gamma_mu(x) = c + M x`` (:func:`meanfield.gaussian.affine_field`), so the layer is the affine map
``x -> alpha c + (I + alpha M) x`` and sends the Gaussian to the Gaussian

    m' = m + alpha (c + M m),      L' = (I + alpha M) L,      Sigma' = L' L'^T,

exactly: no expansion in ``alpha`` and no closure; the image of a Gaussian by an affine map is Gaussian.  This is
one explicit Euler step of the factor ODE ``(dm/dt, dL/dt) = (c + M m, M L)`` of :mod:`meanfield.gaussian`, and
the code takes it with that module's right-hand side (:func:`meanfield.gaussian.factor_rhs`): the layer map *is*
the Euler step, and that Euler step is exact for the layer.  ``L`` layers of step ``T / L`` therefore approach the
moment ODE at ``T`` at order 1 in ``1 / L``.

``beta``: the particle engine (:class:`meanfield.solvers.schemes.particles.ParticleScheme`) weighs ``y`` by
``exp(beta <Qx, Ky>)`` (L2: ``exp(-beta |Qx - Ky|^2 / 2)``; Sinkhorn: the plan of ``exp(beta <Qx, Ky> / eps)``),
while :mod:`meanfield.gaussian` has no ``beta`` (``beta = 1``).  Both are the same weights with ``Q, K`` scaled by
``sqrt(beta)``, i.e. ``A = K^T Q -> beta A`` and ``P = K^T K -> beta P`` (:func:`heads_at_beta`), which is what this
module does, so a layer here and a particle layer with the same ``beta, Q, K, V`` are the same map.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from .app.storage import build_run_dataset, package_version
from .defaults import GAUSSIAN_DEFAULTS
from .errors import require
from .gaussian import (Head, factor_rhs, head_list, initial_factor, moment_frames, positive_number,
                       validated_problem)
from .gaussian_cases import case_command, gaussian_case


def heads_at_beta(heads: list[Head], beta: float) -> list[Head]:
    """The heads of weights ``exp(beta <Qx, Ky>)`` (the particle engine's convention): ``A -> beta A``,
    ``P -> beta P``, ``V`` unchanged (module docstring)."""
    return [Head(V=head.V, A=beta * head.A, P=beta * head.P) for head in heads]


def layer_problem(mean, cov, V, Q, K, alpha, layers, beta, attention, scaled, eps):
    """The validated ``(mean, Sigma, heads at beta, attention, alpha, layers, eps)``; every mistake an
    :class:`meanfield.errors.InputError` naming its parameter."""
    require(isinstance(alpha, (int, float, np.integer, np.floating)) and math.isfinite(alpha) and alpha > 0,
            f"alpha (the layer step) must be finite and > 0 (got {alpha!r})")
    require(isinstance(layers, (int, np.integer)) and not isinstance(layers, bool) and layers >= 0,
            f"layers must be an integer >= 0 (got {layers!r})")
    require(isinstance(beta, (int, float, np.integer, np.floating)) and math.isfinite(beta) and beta >= 0,
            f"beta must be finite and >= 0 (got {beta!r})")
    mean, sigma, heads, attention = validated_problem(mean, cov, V, Q, K, attention, scaled)
    eps = positive_number("eps", eps)
    return mean, sigma, heads_at_beta(heads, float(beta)), attention, float(alpha), int(layers), eps


def layer_states(mean: np.ndarray, factor: np.ndarray, heads: list[Head], attention: str, eps: float,
                 alpha: float, layers: int) -> np.ndarray:
    """``(layers + 1, d + d^2)``: the states ``(m, L)`` (flattened) after each layer, the start first; stops early
    (fewer rows) at the first state that is not finite (kept: it shows the overflow)."""
    dim = mean.size
    rhs = factor_rhs(dim, heads, attention, eps)
    states = [np.concatenate([mean, factor.ravel()])]
    for _ in range(layers):
        with np.errstate(over="ignore", invalid="ignore"):
            states.append(states[-1] + alpha * rhs(0.0, states[-1]))
        if not np.all(np.isfinite(states[-1])):
            break
    return np.array(states)


def gaussian_layer(mean, cov, *, V, Q, K, alpha, beta=1.0, attention: str = GAUSSIAN_DEFAULTS["attention"],
                   scaled: bool = GAUSSIAN_DEFAULTS["scaled"], eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]):
    """One residual layer's moment map ``(m, Sigma) -> (m + alpha (c + M m), (I + alpha M) Sigma (I + alpha M)^T)``
    (MATH.md §3.1), exact for Gaussian data.  Arguments as :func:`gaussian_layers`; returns ``(mean, cov)``."""
    run = gaussian_layers(mean, cov, V=V, Q=Q, K=K, alpha=alpha, layers=1, beta=beta, attention=attention,
                          scaled=scaled, eps=eps)
    require(run.attrs["stop_reason"] == "completed", f"the layer overflowed: {run.attrs['stop_reason']}")
    return run["mean"].values[-1], run["covariance"].values[-1]


def gaussian_layers(mean, cov, *, V, Q, K, alpha, layers, beta=1.0, attention: str = GAUSSIAN_DEFAULTS["attention"],
                    scaled: bool = GAUSSIAN_DEFAULTS["scaled"],
                    eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]) -> xr.Dataset:
    """``layers`` residual layers of step ``alpha`` on ``N(mean, cov)``: the exact moment map (MATH.md §3.1).

    Parameters
    ----------
    mean, cov, V, Q, K, attention, scaled, eps
        As :func:`meanfield.gaussian.solve` (the start ``N(mean, cov)``, one matrix each or per-head lists, the
        kernel, the ``1 / sqrt(k)`` scaling, Sinkhorn's entropic parameter).
    alpha : float
        The layer step, > 0.
    layers : int
        The number of layers, >= 0.
    beta : float
        The inverse temperature, >= 0, in the particle engine's convention (weights ``exp(beta <Qx, Ky>)``;
        :mod:`meanfield.gaussian` is ``beta = 1``).

    Returns
    -------
    xarray.Dataset
        ``mean(time, i)`` and ``covariance(time, i, j)`` (the names of :func:`meanfield.gaussian.solve`) at
        ``time = layer * alpha`` with the coordinate ``layer(time)`` = 0 .. layers; attrs: every argument but the
        arrays, ``t_final = layers * alpha``, ``heads``, ``geometry = "gaussian"``, ``stepper``, ``command``,
        ``package_version`` and ``stop_reason`` (``completed``, or ``overflow at layer l`` when the moments stopped
        being finite: the run ends there); the matrices as variables ``V``, ``Q``, ``K`` (:func:`_with_matrices`).
    """
    mean, sigma, heads, attention, alpha, layers, eps = layer_problem(mean, cov, V, Q, K, alpha, layers, beta,
                                                                      attention, scaled, eps)
    dim = mean.size
    states = layer_states(mean, initial_factor(sigma), heads, attention, eps, alpha, layers)
    done = states.shape[0] - 1
    settings = {"alpha": alpha, "layers": layers, "beta": float(beta), "attention": attention, "scaled": bool(scaled),
                "eps": eps if attention == "sinkhorn" else None}
    command = ("meanfield.gaussian_layers.gaussian_layers(mean, cov, V=V, Q=Q, K=K, "
               + ", ".join(f"{key}={value!r}" for key, value in settings.items() if value is not None) + ")")
    attrs = dict(settings, dim=dim, heads=len(heads), t_final=layers * alpha, geometry="gaussian",
                 package_version=package_version(), command=command,
                 stop_reason="completed" if done == layers else f"overflow at layer {done}",
                 stepper="residual layers: (m, L) <- (m + alpha (c + M m), (I + alpha M) L), exact (MATH.md §3.1)")
    run = build_run_dataset(np.arange(done + 1) * alpha, moment_frames(states, dim),
                            {"mean": ("i",), "covariance": ("i", "j")}, {"i": np.arange(dim), "j": np.arange(dim)}, attrs)
    return _with_matrices(run.assign_coords(layer=("time", np.arange(done + 1))), V, Q, K)


def _with_matrices(run: xr.Dataset, V, Q, K) -> xr.Dataset:
    """``run`` with the heads' matrices as variables ``V(head, i, j)``, ``Q(head, row, j)``, ``K(head, row, j)`` (as
    given, before ``beta``), so that the file reruns; heads whose ``Q`` differ in shape are left out (attribute
    ``matrices``)."""
    queries = [np.asarray(q, dtype=float) for q in head_list(Q)]
    if len({q.shape for q in queries}) > 1:
        return run.assign_attrs(matrices="not stored: the heads' Q differ in shape")
    values = np.array([np.asarray(v, dtype=float) for v in head_list(V)])
    keys = np.array([np.asarray(k, dtype=float) for k in head_list(K)])
    return run.assign(V=(("head", "i", "j"), values), Q=(("head", "row", "j"), np.array(queries)),
                      K=(("head", "row", "j"), keys)).assign_attrs(matrices="stored")


def layers_case(case: str = GAUSSIAN_DEFAULTS["case"], dim: int = GAUSSIAN_DEFAULTS["dim"],
                seed=GAUSSIAN_DEFAULTS["seed"], *, layers: int, alpha: float,
                attention: str = GAUSSIAN_DEFAULTS["attention"], scaled: bool = GAUSSIAN_DEFAULTS["scaled"],
                eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]) -> xr.Dataset:
    """``layers`` residual layers of step ``alpha`` on a named case of :mod:`meanfield.gaussian_cases` (``beta = 1``,
    the convention of ``meanfield gaussian``), as ``meanfield gaussian --layers L --step ALPHA`` runs them: the
    Dataset of :func:`gaussian_layers` with ``case``, ``seed`` and the ``command`` that repeats it."""
    data = gaussian_case(case, dim, seed)
    run = gaussian_layers(data["mean"], data["cov"], V=data["V"], Q=data["Q"], K=data["K"], alpha=alpha,
                          layers=layers, attention=attention, scaled=scaled, eps=eps)
    return run.assign_attrs(case=case, seed=seed, command=case_command(case, dim, seed, None, attention, None, scaled,
                                                                       eps, layers=(int(layers), float(alpha))))
