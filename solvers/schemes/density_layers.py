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


def angle_shift(alpha: float, speed: np.ndarray, radial: np.ndarray) -> np.ndarray:
    """``atan2(alpha v, 1 + alpha c)``: how far a Post-LN layer turns a point within the plane of its attention output,
    ``v`` the output's component along the angle (the circle's angle, a zonal density's polar angle) and ``c`` its
    radial part (MATH.md §11): ``(1 + alpha c) x + alpha v e`` has that angle from ``x``."""
    return np.arctan2(alpha * speed, 1.0 + alpha * radial)


def post_ln_moved(x: np.ndarray, radial: np.ndarray, tangent: np.ndarray, alpha: float) -> np.ndarray:
    """``(x (1 + alpha c) + alpha P_x A) / |...|``: points ``x`` (unit rows) after a Post-LN layer of step ``alpha``
    whose attention output has radial part ``radial`` and tangential part ``tangent`` (MATH.md §11)."""
    moved = x * (1.0 + alpha * radial)[..., None] + alpha * tangent
    moved /= row_norms(moved, keepdims=True)
    return moved


def require_layers(scheme) -> None:
    """A density pushed forward by Post-LN layers: the scheme's normalisation must be Post-LN (the other schemes'
    layer maps act on tokens with a radius, MATH.md §6) and there is no noise (a layer map has none)."""
    require(scheme.normalization.name == "post",
            f"--normalization must be post for density layers (got {scheme.normalization.name})")
    require(scheme.model.nu == 0 and getattr(scheme, "noise_schedule", None) is None,
            f"--nu must be 0 for layers: a layer map has no noise (got {scheme.model.nu:g})")


def sphere_frame(colatitude: np.ndarray, longitude: np.ndarray):
    """``(x, e_theta, e_phi)``: the points of S^2 at ``(colatitude, longitude)`` and the unit vectors along the two
    angles there, each of shape ``colatitude.shape + (3,)``."""
    sin_t, cos_t, sin_p, cos_p = np.sin(colatitude), np.cos(colatitude), np.sin(longitude), np.cos(longitude)
    x = np.stack((sin_t * cos_p, sin_t * sin_p, cos_t), axis=-1)
    e_theta = np.stack((cos_t * cos_p, cos_t * sin_p, -sin_t), axis=-1)
    e_phi = np.stack((-sin_p, cos_p, np.zeros_like(sin_p)), axis=-1)
    return x, e_theta, e_phi


def polar_cosine_moved(t: np.ndarray, radial: np.ndarray, speed: np.ndarray, alpha: float) -> np.ndarray:
    """``<T(x), e>`` for the points ``x`` at polar cosine ``t`` of a zonal density whose attention output is
    ``c x + V (e - t x)`` (MATH.md §2.2; ``V`` the zonal scheme's speed profile): with ``|e - t x|^2 = 1 - t^2``,
    ``T(x) = ((1 + alpha c) x + alpha V (e - t x)) / sqrt((1 + alpha c)^2 + (alpha V)^2 (1 - t^2))``."""
    along, lift = 1.0 + alpha * radial, alpha * speed
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
