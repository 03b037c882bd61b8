"""Galerkin scheme for zonal densities on S^{d-1}, any d >= 3 (MATH.md §2, §2.2, §2.3).

A zonal density ``rho(x) = g(<x, e>)`` stays zonal: a 1-D problem in ``t = cos th``
with the measure ``|S^{d-2}| (1 - t^2)^{(d-3)/2} dt`` (MATH.md §2.2).  State: the
coefficients ``g_l``, ``l = 0 .. L``, of ``g`` in the normalised Gegenbauer polynomials
``P_l = C_l^lam / ||C_l^lam||`` (``lam = (d-2)/2``), orthonormal on the sphere:
``int_{S^{d-1}} P_l(x_d) P_k(x_d) dsigma = delta_lk``.

Weak form.  For ``u(x) = U(x_d)`` the spherical gradient is ``U'(t) (e - t x)`` and
``|e - t x|^2 = 1 - t^2``.  Testing ``d rho/dt + div(rho X) = nu Laplace rho`` against
``P_l`` and integrating by parts (no boundary on the sphere)::

    d g_l/dt = int rho X . grad P_l dsigma - nu l(l+d-2) g_l
             = |S^{d-2}| sum_j w_j rho(t_j) V(t_j) (1 - t_j^2) P_l'(t_j) - nu l(l+d-2) g_l

with ``X = V(t) (e - t x)``, ``V = U'/(beta U)`` (SA) or ``exp(beta) U_s'/beta`` (USA), where
``U = sum_l c_l g_l P_l`` and ``c_l = exp(-beta) kappa_l`` (Funk–Hecke; the ``exp(beta)``
cancels in SA's ratio).  Degree 0 has ``P_0' = 0``: mass is conserved exactly, and no
``1/sin th`` appears.  Gauss–Jacobi quadrature with ``Q >= ceil(3(L+1)/2)`` nodes
integrates the degree-``3L`` USA integrand (and the linearised SA one) exactly.

Normalisations (MATH.md §6, :mod:`meanfield.solvers.normalized_velocity`): LN-scaling divides ``V`` by
``sqrt(t + 1)``; nGPT (the same field for SA and USA) uses ``V_s = U'/beta`` and the radial
attention ``R = sum_l c_l' g_l P_l`` (``c_l' = exp(-beta) d kappa_l/dbeta``):
``V = alpha V_s / sqrt((1 - t^2) V_s^2 + R^2)`` (``|X| = sin th |V|``).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import roots_jacobi

from meanfield.errors import require
from meanfield.gegenbauer import normalised_gegenbauer
from meanfield.geometry import laplace_eigenvalue, sphere_area
from meanfield.model import Model

from .density_scheme import DensityScheme
from .normalized_velocity import VelocityNormalization


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


class ZonalGalerkin(DensityScheme):
    """Galerkin right-hand side for zonal densities on S^{d-1}; see the module docstring.

    ``normalization``: ``post`` (default), ``ngpt`` or ``lnscale`` (MATH.md §6).
    """
    #: memory estimate (meanfield.limits.check_solve_size): work bytes per frame value (the polar quadrature grid's) and per squared resolution (dense Gegenbauer matrices)
    work_bytes_per_value, work_bytes_per_resolution_squared = 400, 200

    @staticmethod
    def frame_values(resolution: int) -> int:
        """The polar quadrature grid of degree ``resolution``: ``3 (L + 1) / 2 + 1`` values."""
        return 3 * (resolution + 1) // 2 + 1

    geometry = "zonal"
    name = "galerkin"

    def __init__(self, model: Model, resolution: int, backend: str | None = None,
                 positivity_tol: float = 1e-6, resolution_tol: float = 1e-6, normalization=None):
        require(model.dim >= 3, f"--dim must be >= 3 for zonal densities (got {model.dim})")
        require(model.beta > 0, f"--beta must be > 0 for the PDE (got {model.beta:g})")
        require(backend in (None, "gegenbauer"),
                f"the backend= parameter must be gegenbauer for the zonal solver (got {backend!r})")
        require(isinstance(resolution, (int, np.integer)) and not isinstance(resolution, bool)
                and resolution >= 8, f"--resolution (lmax) must be an integer >= 8 (got {resolution!r})")
        self.model = model
        self.speed_divisor = divisor = VelocityNormalization(normalization, model)
        self.basis = basis = shared_basis(int(resolution), model.dim)
        self.resolution = basis.lmax
        ell = basis.degrees
        self.kernel_operator = operator = divisor.kernel(ell)
        self.conv = operator.conv                                             # exp(-beta) kappa_l
        # exp(-beta) kappa_l / beta (times exp(beta) for USA but nGPT)
        self.velocity = operator.velocity()
        self.radial = operator.radial if divisor.ngpt else None
        self._sin2 = 1.0 - basis.nodes ** 2
        self._sin = np.sqrt(self._sin2)
        self._flux_weight = basis.quad * self._sin2                          # |S^{d-2}| w_j (1 - t_j^2)
        self._divergence = basis.D.T                                         # test functions P_l'
        eig = laplace_eigenvalue(ell, model.dim).astype(float)
        self.linear = None if model.nu == 0 else -model.nu * eig
        self.noise_operator = -eig                                            # nu = 1: for a noise schedule
        self.max_rate = divisor.fastest_rate(ell[1:])
        self.state_scale = 1.0 / sphere_area(model.dim)
        self.init_monitor(basis.lmax, positivity_tol, resolution_tol)

    # -- state <-> density ------------------------------------------------------------------------
    @property
    def coordinate(self):
        return self.basis.polar

    def state_from_density(self, density: np.ndarray) -> np.ndarray:
        """Coefficients ``g_0..g_L`` of a density given at the nodes; records the initial spectral tail."""
        return self.record_initial_tail(self.analysed(density))

    def analysed(self, density: np.ndarray) -> np.ndarray:
        """Coefficients ``g_0..g_L`` of a density given at the nodes."""
        return self.basis.analyse(np.asarray(density, dtype=float))

    def density(self, state: np.ndarray) -> np.ndarray:
        return self.basis.synthesise(state)

    # -- dynamics ---------------------------------------------------------------------------------
    def speed_profile(self, state: np.ndarray, t: float = 0.0) -> np.ndarray:
        """``V(t_j)`` at time ``t`` with ``X = V (e - t x)``: the meridional velocity is ``-sin th V``."""
        basis = self.basis
        speed = basis.derivative(state * self.velocity)
        divisor = self.speed_divisor
        if divisor.ngpt:
            return divisor.divide(speed, t, speed * speed * self._sin2, basis.synthesise(state * self.radial))
        if self.model.attention == "sa":
            speed = speed / basis.synthesise(state * self.conv)
        return divisor.divide(speed, t)

    def rhs(self, state: np.ndarray, t: float) -> np.ndarray:
        """``d g_l/dt = int rho X . grad P_l dsigma`` by quadrature (the transport term of MATH.md §2, §6)."""
        return self.transport(state, state, t)

    def transport(self, state: np.ndarray, source: np.ndarray, t: float) -> np.ndarray:
        """The transport term of the density of ``state`` in the field ``X`` of the density of ``source`` (``rhs`` is
        ``transport(state, state, t)``; the causal kinetic PDE of MATH.md §8 takes the positional average)."""
        rho = self.basis.synthesise(state)
        speed = self.speed_profile(source, t)
        self.max_speed = float(np.max(np.abs(speed) * self._sin))
        return self._divergence @ (self._flux_weight * rho * speed)

    def stable_dt(self, cfl: float) -> float:
        """``cfl / max(lmax max|X|, lambda_max)``: advection CFL and the fastest linear growth (MATH.md §2.3)."""
        return cfl / max(self.basis.lmax * self.max_speed, self.max_rate)

    # -- diagnostics --------------------------------------------------------------------------------
    def energy(self, state: np.ndarray) -> float:
        """``exp(-beta) E = (1 / 2 beta) sum_l exp(-beta) kappa_l g_l^2`` (MATH.md §2, §2.2)."""
        return self.kernel_operator.energy(state)

    def spectral_tail(self, state: np.ndarray) -> float:
        """Largest ``|g_l|`` in the top sixth of the degrees, relative to ``g_0``."""
        return float(np.max(np.abs(state[self._tail])) / abs(state[0]))

    def mean_density(self, state: np.ndarray) -> float:
        return float(state[0] * self.basis.P[0, 0])

    def mode_amplitudes(self, state: np.ndarray) -> np.ndarray:
        return np.abs(state)

    def coords(self) -> dict:
        return {"polar": ("polar", self.basis.polar, {"long_name": "polar angle from the pole e", "units": "rad"}),
                "mode": ("mode", self.basis.degrees, {"long_name": "spherical-harmonic degree l"})}

    def dims(self) -> dict:
        return {"density": ("polar",), "mode_amplitude": ("mode",)}

    def static_variables(self) -> dict:
        """``quadrature_weight(polar)``: the Gauss–Gegenbauer weight of each polar node times ``|S^{d-2}|``, so that
        ``sum(density * quadrature_weight)`` is the mass and a run file alone gives the exact coefficients of its
        frames (:func:`meanfield.analysis.zonal_frame_coefficients`)."""
        return {"quadrature_weight": ("polar", self.basis.quad.copy(),
                                      {"long_name": "quadrature weight of each polar node (|S^{d-2}| x Gauss weight)"})}
