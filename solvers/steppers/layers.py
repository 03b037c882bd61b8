"""Discrete Post-LN layers: the transformer before its continuous limit (MATH.md §11).

A layer of step ``alpha`` maps every token ``x <- (x + alpha A_x) / |x + alpha A_x|``, ``A_x`` the attention output of
the scheme's tokens (:meth:`meanfield.solvers.schemes.particles.ParticleScheme.attention_parts`: its radial part
``c(x) = <x, A_x>`` and its tangential part ``P_x A_x``, the continuous velocity of MATH.md §1).  All tokens move at
once, from the same state.  Near the uniform state a layer multiplies the density's degree-``l`` amplitude by
``g_l = 1 + alpha lambda_l / (1 + alpha c_0)`` (:func:`meanfield.theory.layer_growth_factors`); ``L`` layers of step
``T / L`` approach the flow at time ``T`` with an error ``O(1 / L)`` (a layer is an Euler step of the flow to first
order in ``alpha``).

:class:`meanfield.solvers.steppers.steppers.PostLNLayers` is the same map as a stepper of the registry (``--stepper layers``): every
step is one layer of step ``dt_max`` (``meanfield particles --layers L --step ALPHA`` sets ``dt_max = ALPHA`` and
``t_final = L ALPHA``), so a layered run has the frames, clusters, files and exact restarts of every particle run, the
time ``t = l alpha`` standing for the layer ``l``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from meanfield.errors import require
from meanfield.geometry import row_norms


def _on_stack(layer_map):
    """``layer_map(scheme, stack, alpha)`` on a stack ``(B, n, d)`` of systems (what the interactions take) applied to
    ``(n, d)`` tokens too."""
    @functools.wraps(layer_map)
    def apply(scheme, x: np.ndarray, alpha: float) -> np.ndarray:
        return layer_map(scheme, x, alpha) if x.ndim == 3 else layer_map(scheme, x[None], alpha)[0]

    return apply


@_on_stack
def post_ln_layer(scheme, x: np.ndarray, alpha: float) -> np.ndarray:
    """One Post-LN layer of step ``alpha`` applied to the tokens ``x`` of ``scheme``: ``(n, d)`` unit rows, or a stack
    ``(B, n, d)`` of systems as a run holds them."""
    radial, tangent, _ = scheme.attention_parts(x)
    moved = x * (1.0 + alpha * radial)[..., None] + alpha * tangent
    moved /= row_norms(moved, keepdims=True)
    return moved


@_on_stack
def residual_layer(scheme, x: np.ndarray, alpha: float) -> np.ndarray:
    """One residual layer ``x <- x + alpha A_x`` without normalisation, for tokens in R^d (``scheme.sphere`` false):
    an Euler step of the unprojected dynamics, as the reference scripts of Geshkovski et al. (2023) step it."""
    return x + alpha * scheme.rhs(x, 0.0)


def run_layers(scheme, x: np.ndarray, alpha: float, layers: int) -> np.ndarray:
    """The tokens after each of ``layers`` layers of step ``alpha`` (Post-LN on the sphere, :func:`post_ln_layer`;
    residual in R^d, :func:`residual_layer`): ``(layers + 1, n, d)``, the start first."""
    require(math.isfinite(alpha) and alpha > 0, f"--step must be > 0 and finite (got {alpha!r})")
    require(int(layers) == layers and layers >= 0, f"--layers must be an integer >= 0 (got {layers!r})")
    frames = np.empty((int(layers) + 1,) + np.shape(x))
    frames[0] = x
    layer_map = post_ln_layer if scheme.sphere else residual_layer
    for layer in range(int(layers)):
        frames[layer + 1] = layer_map(scheme, frames[layer], alpha)
    return frames

