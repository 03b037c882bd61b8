"""Spherical harmonics of S^2 shared by the model and the solvers: the m-major layout, point locations and the
coefficients of point masses (MATH.md §2.2).

Coefficients are the orthonormal ``rho_lm``, ``l = 0 .. lmax``, ``m = 0 .. l``, of a real field
(``rho_{l,-m} = (-1)^m conj(rho_lm)``), Condon–Shortley phase, colatitude from the north pole, stored in ducc0's
and SHTns's m-major layout (:func:`m_major_layout`).  :func:`point_mass_coefficients` is ducc0's adjoint
non-uniform synthesis ``mu_lm = sum_j w_j conj(Y_lm(x_j))`` (MATH.md §2.2) at the ``(colatitude, longitude)`` of
:func:`sphere_locations`; the weighted-node schemes ask it for :data:`SHT_EPSILON`.  The solvers
(:mod:`meanfield.solvers.schemes.sphere`, :mod:`meanfield.solvers.schemes.interaction`, :mod:`meanfield.solvers.schemes.lagrangian`) and
:mod:`meanfield.analysis` share these (``meanfield`` does not import ``solvers``, DESIGN.md *Layout*).
"""

from __future__ import annotations

import math

import ducc0
import numpy as np

#: Smallest accuracy ducc0's non-uniform transforms reach in double precision.
SHT_MIN_EPSILON = 3e-13
#: Requested accuracy of the weighted-node schemes' NUFFT-based transforms (:mod:`meanfield.solvers.schemes.lagrangian`)
#: and of :func:`meanfield.analysis.sphere_point_coefficients` (ducc0 needs > 2e-13 in double precision).
SHT_EPSILON = SHT_MIN_EPSILON


def m_major_layout(lmax: int) -> tuple[np.ndarray, np.ndarray]:
    """Degree ``l`` and order ``m`` of each stored coefficient (``m >= 0``), index ``m(2 lmax + 1 - m)/2 + l``
    (ducc0's and SHTns's layout)."""
    m = np.concatenate([np.full(lmax + 1 - mm, mm) for mm in range(lmax + 1)])
    l = np.concatenate([np.arange(mm, lmax + 1) for mm in range(lmax + 1)])
    return l, m


def point_mass_coefficients(weights: np.ndarray, loc: np.ndarray, lmax: int, epsilon: float,
                            nthreads: int = 1) -> np.ndarray:
    """``mu_lm = sum_j w_j conj(Y_lm(x_j))``, ``l <= lmax`` (orthonormal, m-major; MATH.md §2.2), of point
    masses ``weights`` (shape ``(n,)``) at ``loc`` (``(colatitude, longitude)``, shape ``(n, 2)``): ducc0's
    adjoint non-uniform synthesis, shape ``(1, ncoef)`` (one spin-0 component, as ``synthesis_general`` takes)."""
    return ducc0.sht.adjoint_synthesis_general(map=np.ascontiguousarray(weights, dtype=float)[None], spin=0,
                                               lmax=int(lmax), loc=loc, epsilon=epsilon, nthreads=nthreads)


def sphere_locations(x: np.ndarray) -> tuple[np.ndarray, tuple]:
    """``(colatitude, longitude)`` of unit vectors ``x`` (shape ``(n, 3)``; ducc0's ``loc``, shape ``(n, 2)``)
    and the trigonometry ``(cos, sin)`` of both, read off ``x`` without trigonometric calls (a token at a
    pole gets longitude 0).  The longitude ``atan2(y, x)`` is taken into ``[0, 2 pi)`` by adding ``2 pi`` to the
    negative ones (what ``% 2 pi`` gives there, without its division), and the poles are looked for once."""
    x0, x1 = x[:, 0], x[:, 1]
    rho = np.hypot(x0, x1)
    loc = np.empty((x.shape[0], 2))
    np.arctan2(rho, x[:, 2], out=loc[:, 0])
    longitude = np.arctan2(x1, x0)
    longitude[longitude < 0] += 2 * math.pi
    loc[:, 1] = longitude
    at_pole = rho == 0
    if at_pole.any():
        safe = np.where(at_pole, 1.0, rho)
        cos_p, sin_p = np.where(at_pole, 1.0, x0 / safe), x1 / safe
    else:
        cos_p, sin_p = x0 / rho, x1 / rho
    return loc, (x[:, 2], rho, cos_p, sin_p)
