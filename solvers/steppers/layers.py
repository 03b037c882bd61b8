"""Discrete layers: the transformer before its continuous limit (MATH.md §11).

A Post-LN layer of step ``alpha`` maps every token ``x <- (x + alpha A_x) / |x + alpha A_x|``, ``A_x`` the attention
output of the scheme's tokens (:meth:`meanfield.solvers.schemes.particles.ParticleScheme.attention_parts`: its radial
part ``c(x) = <x, A_x>`` and its tangential part ``P_x A_x``, the continuous velocity of MATH.md §1).  All tokens move
at once, from the same state.  Near the uniform state a layer multiplies the density's degree-``l`` amplitude by
``g_l = 1 + alpha lambda_l / (1 + alpha c_0)`` (:func:`meanfield.theory.layer_growth_factors`); ``L`` layers of step
``T / L`` approach the flow at time ``T`` with an error ``O(1 / L)`` (a layer is an Euler step of the flow to first
order in ``alpha``).

The other normalisation schemes of MATH.md §6 have their own maps (:data:`LAYER_MAPS`: Pre-LN and Peri-LN move the
residual stream ``r theta`` and carry its length as the radius, nGPT steps towards ``A / |A|``, LN-scaling shrinks
the step as ``1 / sqrt(t_l + 1)``), chosen by the scheme in force at layer ``l``
(:meth:`meanfield.normalization.Normalization.at_layer`; Mix-LN switches at ``tau``); their factors are ``1 + m_l
lambda_l`` (:func:`meanfield.theory.layer_displacements`).  In R^d a layer is the residual step
(:func:`residual_layer`).  Layer ``l`` may attend with its own weights
(:mod:`meanfield.solvers.steppers.layer_weights`; :func:`apply_layer`, :func:`run_layers`).

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
    """``layer_map(scheme, stack, alpha, layer)`` on a stack ``(B, n, d)`` of systems (what the interactions take)
    applied to ``(n, d)`` tokens too."""
    @functools.wraps(layer_map)
    def apply(scheme, x: np.ndarray, alpha: float, layer: int = 0) -> np.ndarray:
        return layer_map(scheme, x, alpha, layer) if x.ndim == 3 else layer_map(scheme, x[None], alpha, layer)[0]

    return apply


def _column(value):
    """A per-token coefficient as a column against ``(..., n, d)`` rows (a scalar as it is)."""
    return value[..., None] if np.ndim(value) else value


def _normalised_map(coefficients):
    """The layer map of a normalisation scheme (MATH.md §11) from its ``coefficients(scheme, alpha, layer, radial,
    norm, radius) -> (a, b, carries)``: the direction goes to ``theta a + b P A`` normalised (``radial = <theta, A>``,
    ``norm = |A|``, ``radius`` the token's radius or ``None``); with ``carries`` the radius becomes that vector's
    length (Pre- and Peri-LN: the unnormalised residual stream ``r theta``), else it is kept."""
    @_on_stack
    def layer_map(scheme, x: np.ndarray, alpha: float, layer: int = 0) -> np.ndarray:
        theta = scheme.directions(x)
        radius = x[..., scheme.dim] if scheme.carries_radius else None
        radial, tangent, norm = scheme.attention_parts(theta)
        along, across, carries = coefficients(scheme, alpha, layer, radial, norm, radius)
        moved = theta * _column(along) + _column(across) * tangent
        length = row_norms(moved, keepdims=True)
        moved /= length
        if radius is None:
            return moved
        return np.concatenate((moved, length if carries else radius[..., None]), axis=-1)

    layer_map.__doc__ = coefficients.__doc__
    layer_map.__name__ = layer_map.__qualname__ = coefficients.__name__.lstrip("_")
    layer_map.coefficients = coefficients
    return layer_map


@_normalised_map
def post_ln_layer(scheme, alpha, layer, radial, norm, radius):
    """One Post-LN layer of step ``alpha``: ``x <- (x + alpha A_x) / |x + alpha A_x|`` applied to the tokens ``x`` of
    ``scheme`` (``(n, d)`` unit rows, or a stack ``(B, n, d)`` of systems as a run holds them; a Mix-LN radius is
    kept)."""
    return 1.0 + alpha * radial, alpha, False


@_normalised_map
def pre_ln_layer(scheme, alpha, layer, radial, norm, radius):
    """One Pre-LN layer: the residual stream ``y = r theta`` takes ``y <- y + alpha A(theta)``, the attention of the
    normalised tokens; ``theta`` is its direction and ``r`` its length (MATH.md §6, §11)."""
    return radius + alpha * radial, alpha, True


@_normalised_map
def peri_ln_layer(scheme, alpha, layer, radial, norm, radius):
    """One Peri-LN layer: ``y <- y + alpha A / |A|`` (the output normalised too), ``y = r theta``."""
    return radius + alpha * radial / norm, alpha / norm, True


@_normalised_map
def ngpt_layer(scheme, alpha, layer, radial, norm, radius):
    """One nGPT layer: ``x <- N(x + a (A / |A| - x))``, ``a = alpha`` times nGPT's ``--alpha`` (the eigen learning
    rate), ``N`` the projection on the sphere (MATH.md §6: the speed ``nGPT-alpha P A / |A|``)."""
    rate = alpha * scheme.normalization.alpha
    return 1.0 - rate + rate * radial / norm, rate / norm, False


@_normalised_map
def ln_scaling_layer(scheme, alpha, layer, radial, norm, radius):
    """One LN-scaling layer: Post-LN of step ``alpha / sqrt(t_l + 1)``, ``t_l = l alpha`` the layer's start (the
    divisor ``sqrt(t + 1)`` of MATH.md §6)."""
    scaled = alpha / math.sqrt(layer * alpha + 1.0)
    return 1.0 + scaled * radial, scaled, False


#: The layer map of each normalisation scheme in force (:meth:`meanfield.normalization.Normalization.acts_as`;
#: Mix-LN is Post-LN's map, then Pre-LN's).
LAYER_MAPS = {"post": post_ln_layer, "pre": pre_ln_layer, "peri": peri_ln_layer, "ngpt": ngpt_layer,
              "lnscale": ln_scaling_layer}


def layer_turn(scheme, alpha: float, layer: int = 0):
    """``turn(radial, norm) -> (a, b)``: layer ``layer`` of step ``alpha`` under ``scheme``'s normalisation sends a
    point ``x`` whose attention output has radial part ``radial`` and length ``norm`` to ``a x + b P_x A``,
    normalised (the coefficients of :data:`LAYER_MAPS`, for the schemes without a radius): what a density scheme's
    ``layer`` takes (:mod:`meanfield.solvers.schemes.density_layers`)."""
    coefficients = LAYER_MAPS[scheme.normalization.at_layer(alpha, layer)].coefficients

    def turn(radial, norm):
        along, across, _ = coefficients(scheme, alpha, layer, radial, norm, None)
        return along, across

    return turn


def normalised_layer(scheme, x: np.ndarray, alpha: float, layer: int = 0) -> np.ndarray:
    """Layer ``layer`` of step ``alpha`` under ``scheme``'s normalisation (:data:`LAYER_MAPS`); Mix-LN takes
    Post-LN's map for the layers that start before ``tau``, Pre-LN's from ``tau`` on (as the flow switches at
    ``tau``)."""
    return LAYER_MAPS[scheme.normalization.at_layer(alpha, layer)](scheme, x, alpha, layer)


@_on_stack
def residual_layer(scheme, x: np.ndarray, alpha: float, layer: int = 0) -> np.ndarray:
    """One residual layer ``x <- x + alpha A_x`` without normalisation, for tokens in R^d (``scheme.sphere`` false):
    an Euler step of the unprojected dynamics, as the reference scripts of Geshkovski et al. (2023) step it."""
    return x + alpha * scheme.rhs(x, 0.0)


def apply_layer(scheme, x: np.ndarray, alpha: float, layer: int = 0, weights=None) -> np.ndarray:
    """Layer ``layer`` (0, 1, ...) of step ``alpha``: on the sphere the normalisation's map
    (:func:`normalised_layer`), in R^d the residual one; with a schedule ``weights``
    (:class:`meanfield.solvers.steppers.layer_weights.LayerWeights`) the attention of its layer ``layer``."""
    attending = scheme if weights is None else weights.scheme(scheme, layer)
    return (normalised_layer if scheme.sphere else residual_layer)(attending, x, alpha, layer)


def run_layers(scheme, x: np.ndarray, alpha: float, layers: int, weights=None, first: int = 0) -> np.ndarray:
    """The tokens after each of ``layers`` layers of step ``alpha``, the first of them layer ``first``
    (:func:`apply_layer`; ``weights`` a per-layer schedule or ``None``): ``(layers + 1, n, d)``, the start first
    (with a radius column where the normalisation carries one)."""
    require(math.isfinite(alpha) and alpha > 0, f"--step must be > 0 and finite (got {alpha!r})")
    require(int(layers) == layers and layers >= 0, f"--layers must be an integer >= 0 (got {layers!r})")
    if weights is not None:
        weights.check(scheme.dim, scheme.sphere, int(first + layers))
    frames = np.empty((int(layers) + 1,) + np.shape(x))
    frames[0] = x
    for layer in range(int(layers)):
        frames[layer + 1] = apply_layer(scheme, frames[layer], alpha, first + layer, weights)
    return frames
