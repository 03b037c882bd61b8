"""Discrete Post-LN layers: the transformer before its continuous limit (MATH.md §11).

A layer of step ``alpha`` maps every token ``x <- (x + alpha A_x) / |x + alpha A_x|``, ``A_x`` the attention output of
the scheme's tokens (:meth:`meanfield.solvers.schemes.particles.ParticleScheme.attention_parts`: its radial part
``c(x) = <x, A_x>`` and its tangential part ``P_x A_x``, the continuous velocity of MATH.md §1).  All tokens move at
once, from the same state.  Near the uniform state a layer multiplies the density's degree-``l`` amplitude by
``g_l = 1 + alpha lambda_l / (1 + alpha c_0)`` (:func:`meanfield.theory.layer_growth_factors`); ``L`` layers of step
``T / L`` approach the flow at time ``T`` with an error ``O(1 / L)`` (a layer is an Euler step of the flow to first
order in ``alpha``).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.errors import require
from meanfield.geometry import row_norms


def post_ln_layer(scheme, x: np.ndarray, alpha: float) -> np.ndarray:
    """One Post-LN layer of step ``alpha`` applied to the tokens ``x`` (``(n, d)`` unit rows) of ``scheme``."""
    radial, tangent, _ = scheme.attention_parts(x[None])          # the interactions take a stack of systems
    moved = x * (1.0 + alpha * radial[0])[:, None] + alpha * tangent[0]
    return moved / row_norms(moved)[:, None]


def run_layers(scheme, x: np.ndarray, alpha: float, layers: int) -> np.ndarray:
    """The tokens after each of ``layers`` Post-LN layers of step ``alpha``: ``(layers + 1, n, d)``, the start
    first."""
    require(math.isfinite(alpha) and alpha > 0, f"--step must be > 0 and finite (got {alpha!r})")
    require(int(layers) == layers and layers >= 0, f"--layers must be an integer >= 0 (got {layers!r})")
    frames = np.empty((int(layers) + 1,) + np.shape(x))
    frames[0] = x
    for layer in range(int(layers)):
        frames[layer + 1] = post_ln_layer(scheme, frames[layer], alpha)
    return frames
