"""The zonal basis of S^{d-1}, any d >= 3 (MATH.md §2.2): normalised Gegenbauer polynomials of degree ``<= lmax`` at
Gauss–Jacobi nodes, with the analysis, synthesis and derivative the Galerkin scheme of :mod:`meanfield.solvers.schemes.zonal`
and the zonal finite volumes take, and :func:`shared_basis`, one read-only basis per ``(lmax, dim)``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import roots_jacobi

from meanfield.errors import require
from meanfield.gegenbauer import normalised_gegenbauer
from meanfield.geometry import sphere_area


class ZonalBasis:
    """Normalised Gegenbauer polynomials of degree ``<= lmax`` at ``Q = ceil(3(lmax+1)/2)`` Gauss–Jacobi nodes.

    Nodes are ordered by increasing polar angle (``t = cos th`` decreasing), so values at
    the nodes are already the output order.  ``P[j, l] = P_l(t_j)``, ``D[j, l] = P_l'(t_j)``.
    """

    backend = "gegenbauer"

    def __init__(self, lmax: int, dim: int, nodes: int | None = None):
        require(isinstance(lmax, (int, np.integer)) and lmax >= 2,
                f"--resolution must be an integer >= 2 for the zonal solver (got {lmax!r})")
        require(isinstance(dim, (int, np.integer)) and dim >= 3,
                f"--dim must be >= 3 for the zonal solver (got {dim!r})")
        self.lmax = int(lmax)
        self.dim = int(dim)
        self.degrees = np.arange(self.lmax + 1)
        q = int(nodes) if nodes is not None else math.ceil(3 * (self.lmax + 1) / 2)
        alpha = (dim - 3) / 2.0
        t, w = roots_jacobi(q, alpha, alpha)
        order = np.argsort(-t)
        self.nodes = t[order]
        self.weights = w[order]
        self.polar = np.arccos(np.clip(self.nodes, -1.0, 1.0))
        self.area_ratio = sphere_area(dim - 1)  # |S^{d-2}|
        self.quad = self.area_ratio * self.weights  # integrate(f) = quad @ f
        self.P, self.D = normalised_gegenbauer(self.nodes, self.lmax, dim, derivative=True)
        self._analysis = self.P.T * self.quad

    @property
    def size(self) -> int:
        return self.nodes.size

    # -- the grid a density lives on (initial data, band) -----------------------------------------------------
    @property
    def band(self) -> int:
        """The largest degree the basis keeps (``lmax``)."""
        return self.lmax

    #: the names of :meth:`grid_points`, in order
    point_names = ("polar",)

    def grid_points(self) -> tuple:
        """The nodes' coordinates, as a user's callable receives them: ``(polar,)``, the polar angle from the pole in
        radians, ``[0, pi]`` (MATH.md §2.2)."""
        return (self.polar,)

    def text_density(self, spec: str, seed=None) -> np.ndarray:
        """The density of a text spec (``--init``) at the nodes (:mod:`meanfield.initial.zonal`)."""
        from meanfield.initial.zonal import zonal_density

        return zonal_density(spec, self, seed)

    def check_density(self, density: np.ndarray, label: str) -> None:
        """Refuse, in one line naming ``label``, a density the nodes do not hold (:mod:`meanfield.initial.zonal`)."""
        from meanfield.initial.zonal import check_zonal_density

        check_zonal_density(density, label, self)

    def function_density(self, function, label: str) -> np.ndarray:
        """A user's callable ``f(polar)`` (radians from the pole, ``[0, pi]``) at the nodes, checked as
        :meth:`check_density`."""
        from meanfield.initial.sources import checked_function_values

        return checked_function_values(function, label, self.grid_points(),
                                       lambda values: self.check_density(values, label))

    def density_from(self, source) -> np.ndarray:
        """A :class:`meanfield.initial.sources.GridSource` at these nodes: a zonal run resampled through its own
        basis, other polar grids interpolated."""
        from meanfield.initial import zonal

        if source.run is not None:
            return zonal.resample_run(source.run, self, source.label)
        return zonal.polar_values(source.coords[0], source.values, self.polar)

    def synthesise(self, coeffs: np.ndarray) -> np.ndarray:
        """Values at the nodes of ``sum_l coeffs_l P_l``."""
        return self.P @ coeffs

    def derivative(self, coeffs: np.ndarray) -> np.ndarray:
        """Values at the nodes of ``sum_l coeffs_l P_l'``."""
        return self.D @ coeffs

    def analyse(self, values: np.ndarray) -> np.ndarray:
        """``g_l = int_{S^{d-1}} f P_l dsigma`` by quadrature (exact for degree <= 2Q - 1 - lmax)."""
        return self._analysis @ values

    def integrate(self, values: np.ndarray) -> float:
        """``int_{S^{d-1}} f dsigma = |S^{d-2}| sum_j w_j f(t_j)``."""
        return float(self.quad @ values)

    def polynomials(self, t, degree: int) -> np.ndarray:
        """``P_l(t)``, ``l = 0..degree``, at arbitrary points (shape ``t.shape + (degree+1,)``)."""
        return normalised_gegenbauer(t, degree, self.dim)

    def interpolant_coeffs(self, values: np.ndarray) -> np.ndarray:
        """Coefficients in degrees ``0..Q-1`` of the polynomial interpolating ``values`` at the nodes.

        Gauss quadrature is exact for the products of those degrees, so this is the discrete
        transform; the degrees above ``lmax`` measure what the basis cannot represent.
        """
        full = self.polynomials(self.nodes, self.size - 1)
        return (full.T * self.quad) @ values


@lru_cache(maxsize=8)
def shared_basis(lmax: int, dim: int) -> ZonalBasis:
    """The :class:`ZonalBasis` of ``lmax`` and ``dim``, built once (its Gauss–Jacobi nodes and Gegenbauer tables took
    2 ms of each of the 72 linearisations of a stationary branch, ``meanfield theory --branch``) and read only."""
    basis = ZonalBasis(lmax, dim)
    for array in vars(basis).values():
        if isinstance(array, np.ndarray):
            array.flags.writeable = False
    return basis
