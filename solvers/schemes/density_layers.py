"""Post-LN layers acting on a density: the push-forward by the layer map (MATH.md §11, "Densities through a layer").

A layer of step ``alpha`` moves every point ``x`` of the sphere to ``T(x) = (x + alpha A_x) / |x + alpha A_x|``,
``A_x`` the attention output of the density at ``x`` (its radial part ``c(x) = <x, A_x>`` and its tangential part
``P_x A_x``, the continuous velocity of MATH.md §2); the density after the layer is the push-forward ``T # rho``.

Every density scheme does it the same way, in two steps:

1. *Lagrangian, exact.*  The scheme's quadrature nodes ``x_j`` carry the masses ``m_j = w_j rho(x_j)`` (``w_j`` the
   quadrature weights): a weighted token system whose attention output at the nodes is that of the density (the
   grids integrate the band-limited products exactly, MATH.md §2.1–2.2).  The layer moves each node to ``T(x_j)``.
2. *Projection back, conservative.*  The coefficient of degree ``l`` after the layer is
   ``sum_j m_j conj(Y_l(T(x_j)))``: the quadrature of ``int rho(x) conj(Y_l(T(x))) dx``, which *is* the coefficient
   of ``T # rho``.  Degree 0 is the sum of the masses: mass is kept to rounding.  The only error is that of the
   quadrature of the smooth integrand ``rho (Y_l o T)``: zero where the layer is the identity (below the band the
   grid integrates exactly), and otherwise the aliasing of the part of ``rho (Y_l o T)`` above that band, which
   decays like the coefficients of ``T - id`` (the layer's displacement, ``O(alpha |A|)``) times those of ``rho``:
   the spectral tail the run watches (``stop_reason = "resolution"``) bounds it.

The circle projects with ducc0's NUFFT (accuracy 1e-13 of the total mass), S^2 with its adjoint non-uniform
synthesis, zonal densities with the Gegenbauer polynomials at the moved polar angles (direct).
"""

from __future__ import annotations

import numpy as np

from meanfield.errors import require
from meanfield.geometry import row_norms


class LayerFolds(ArithmeticError):
    """A layer sends neighbouring cells past each other (the map reverses the orientation somewhere): a remap of
    cells cannot follow it.  The layer stepper stops the run there, keeping its frames."""


def require_layers(scheme) -> None:
    """A density pushed forward by layers: there is no noise (a layer map has none).  Every normalisation a density
    scheme holds (Post-LN, nGPT, LN-scaling: those without a radius, MATH.md §6) has its layer map, given to
    ``layer`` as its ``turn`` (:func:`meanfield.solvers.steppers.layers.layer_turn`)."""
    require(scheme.model.nu == 0 and getattr(scheme, "noise_schedule", None) is None,
            f"--nu must be 0 for layers: a layer map has no noise (got {scheme.model.nu:g})")


def post_ln_turn(alpha: float):
    """``turn(radial, norm) -> (1 + alpha c, alpha)``: Post-LN's layer of step ``alpha`` sends ``x`` to
    ``(1 + alpha c) x + alpha P_x A``, normalised (MATH.md §11); what ``layer`` takes without a ``turn``."""
    return lambda radial, norm: (1.0 + alpha * radial, alpha)


def angle_shift(along, across, speed: np.ndarray) -> np.ndarray:
    """``atan2(b v, a)``: how far a layer turns a point within the plane of its attention output when it sends ``x``
    to ``a x + b P_x A`` normalised (``turn``'s coefficients), ``v`` the output's component along the angle (the
    circle's angle, a zonal density's polar angle; MATH.md §11)."""
    return np.arctan2(across * speed, along)


def _column(value):
    """A per-point coefficient as a column against ``(..., d)`` rows (a scalar as it is)."""
    return value[..., None] if np.ndim(value) else value


def moved_points(x: np.ndarray, along, across, tangent: np.ndarray) -> np.ndarray:
    """``(a x + b P_x A) / |a x + b P_x A|``: points ``x`` (unit rows) after a layer whose ``turn`` gave ``a, b``
    (per point, or scalars) for the tangential part ``tangent`` of their attention output (MATH.md §11)."""
    moved = x * _column(along) + _column(across) * tangent
    moved /= row_norms(moved, keepdims=True)
    return moved


def sphere_frame(colatitude: np.ndarray, longitude: np.ndarray):
    """``(x, e_theta, e_phi)``: the points of S^2 at ``(colatitude, longitude)`` and the unit vectors along the two
    angles there, each of shape ``colatitude.shape + (3,)``."""
    sin_t, cos_t, sin_p, cos_p = np.sin(colatitude), np.cos(colatitude), np.sin(longitude), np.cos(longitude)
    x = np.stack((sin_t * cos_p, sin_t * sin_p, cos_t), axis=-1)
    e_theta = np.stack((cos_t * cos_p, cos_t * sin_p, -sin_t), axis=-1)
    e_phi = np.stack((-sin_p, cos_p, np.zeros_like(sin_p)), axis=-1)
    return x, e_theta, e_phi


def polar_cosine_moved(t: np.ndarray, along, across, speed: np.ndarray) -> np.ndarray:
    """``<T(x), e>`` for the points ``x`` at polar cosine ``t`` of a zonal density whose attention output has the
    tangential part ``V (e - t x)`` (MATH.md §2.2; ``V`` the zonal scheme's speed profile), the layer sending ``x`` to
    ``a x + b V (e - t x)`` normalised: with ``|e - t x|^2 = 1 - t^2``,
    ``t' = (a t + b V (1 - t^2)) / sqrt(a^2 + (b V)^2 (1 - t^2))``."""
    lift = across * speed
    sin2 = 1.0 - t * t
    moved = (along * t + lift * sin2) / np.sqrt(along * along + lift * lift * sin2)
    return np.clip(moved, -1.0, 1.0)


def remapped_cell_masses(moved_faces: np.ndarray, masses: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """The masses of the fixed periodic cells ``faces`` (``N + 1`` increasing values, one period) after each cell ``i``
    carried its mass ``masses[i]`` onto ``[moved_faces[i], moved_faces[i + 1]]``, spread evenly there: the exact
    overlaps, i.e. differences of the piecewise-linear cumulative mass through ``(moved_faces[i], sum_{j<i} m_j)``
    continued periodically (``F(x + P) = F(x) + M``).  Conservative to rounding and non-negative for non-negative
    masses; second order for a smooth density (MATH.md §11).  ``moved_faces`` must increase (a layer that keeps the
    cells in order)."""
    period, total = faces[-1] - faces[0], float(masses.sum())
    cumulative = np.concatenate(([0.0], np.cumsum(masses)))
    start = moved_faces[0]
    # the knots over three periods around the fixed faces, so every fixed face lies inside them
    knots = np.concatenate((moved_faces[:-1] - period, moved_faces[:-1], moved_faces + period))
    values = np.concatenate((cumulative[:-1] - total, cumulative[:-1], cumulative + total))
    shift = np.floor((faces[0] - start) / period) * period
    at_faces = np.interp(faces - shift, knots, values) + shift / period * total
    return np.diff(at_faces)


def overlap_masses(moved_measure: np.ndarray, masses: np.ndarray, measure: np.ndarray) -> np.ndarray:
    """The masses of the fixed cells whose faces sit at the cumulative surface measures ``measure`` (``N + 1``
    increasing values from 0 to the total) after each cell ``i`` carried ``masses[i]`` onto the cell between the
    measures ``moved_measure[i]`` and ``moved_measure[i + 1]`` (the same first and last values), spread evenly in
    measure: the exact overlaps, as :func:`remapped_cell_masses` without the period (zonal cells, MATH.md §11)."""
    return np.diff(np.interp(measure, moved_measure, np.concatenate(([0.0], np.cumsum(masses)))))
