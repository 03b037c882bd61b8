"""Layers with per-layer random weights against their homogenised flow (MATH.md §11), shared by the tests and
``validate depth``.

With ``V_l = I + sigma G_l / sqrt(d)`` i.i.d. over the layers (``Q = K = I``;
:class:`meanfield.solvers.steppers.layer_weights.GaussianWeights`), ``L`` layers of step ``T / L`` approach, as
``L -> infinity``, the flow whose velocity is the law's mean, here the flow of ``V = E V_l = I``.  The layers' own
Euler error is ``O(1 / L)``; the weights' fluctuations add up to ``O(sigma T / sqrt(L))``, so the root mean square over
seeds of the error falls at order 1/2 in ``L``.

- :func:`random_weight_errors`: ``(mean_j |x_j^L - x_j(T)|^2)^{1/2}`` for each seed and each ``L`` (the tokens' root
  mean square: over the token draws tried, its fitted order scatters 0.47 .. 0.50 where the largest token's error
  reads 0.41 .. 0.50, one token's error being pre-asymptotic longer); with ``coupled`` the
  networks of one seed share one draw, refined as a Brownian path is (:func:`coupled_weights`), so that each seed's
  error follows ``L^-1/2`` and the fitted order is not blurred by the draws' independence across ``L``.
- :func:`mean_square_order`: the order ``p`` of the root mean square over seeds, ``E_rms = C L^-p (1 + c / L)``.
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.errors import require

from .layer_checks import fitted_layer_order, token_rms
from ..steppers.layer_weights import LAYER_STREAM, FileWeights, GaussianWeights
from ..steppers.layers import run_layers


def coupled_weights(seed: int, sigma: float, dim: int, counts) -> dict:
    """Schedules of the law of :class:`GaussianWeights` for each ``L`` of ``counts`` (each dividing the largest,
    ``L_max``, by a power of 2), drawn once: ``G`` for ``L_max`` layers from ``(seed, L_max)``, and for ``L`` layers
    the sums of ``L_max / L`` consecutive ``G``'s over ``sqrt(L_max / L)``.  Each schedule has the stated law
    (i.i.d. standard Gaussian entries); across ``L`` they are one path, refined."""
    finest = int(max(counts))
    require(all(finest % int(count) == 0 and (finest // int(count)) & (finest // int(count) - 1) == 0
                for count in counts), f"coupled counts must divide the largest by powers of 2 (got {list(counts)})")
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(LAYER_STREAM, finest)))
    noise = rng.standard_normal((finest, dim, dim))
    out = {}
    for count in counts:
        group = finest // int(count)
        value = np.eye(dim) + sigma * noise.reshape(int(count), group, dim, dim).sum(axis=1) / math.sqrt(group * dim)
        identity = np.broadcast_to(np.eye(dim), (int(count), 1, dim, dim))
        out[int(count)] = FileWeights(f"coupled:{seed},sigma:{sigma!r},layers:{count}",
                                      {"Q": identity, "K": identity, "V": value[:, None]})
    return out


def random_weight_errors(scheme, x: np.ndarray, flow: np.ndarray, final: float, counts, seeds, sigma: float,
                         coupled: bool = False) -> np.ndarray:
    """``(mean_j |x_j^L - x_j(T)|^2)^{1/2}``, shape ``(len(seeds), len(counts))``: ``L`` layers of step ``final / L`` from the
    tokens ``x`` of ``scheme`` (its model and tokens' weights; the attention of each layer drawn from the seed with
    spread ``sigma``: :class:`GaussianWeights`, or with ``coupled`` :func:`coupled_weights`) against the homogenised
    flow's tokens ``flow`` at ``T = final`` (the flow of ``V = I``)."""
    def schedules(seed):
        if coupled:
            return coupled_weights(seed, sigma, scheme.dim, counts)
        return {int(count): GaussianWeights(int(seed), float(sigma)) for count in counts}

    rows = []
    for seed in seeds:
        drawn = schedules(seed)
        rows.append([token_rms(run_layers(scheme, x, final / count, count, drawn[int(count)])[-1] - flow)
                     for count in counts])
    return np.array(rows)


def mean_square_order(counts, errors) -> float:
    """The order ``p`` of ``E_rms(L) = C L^-p (1 + c / L)``, ``E_rms`` the root mean square of ``errors`` over its
    seeds (rows), fitted as :func:`meanfield.solvers.runs.layer_checks.fitted_layer_order` fits the fixed weights'
    errors (the ``c / L`` term: the layers' next order, ``E_rms^2 = A / L + B / L^2``); 1/2 for the fluctuations,
    MATH.md §11."""
    return fitted_layer_order(counts, np.sqrt(np.mean(np.square(errors), axis=0)))
