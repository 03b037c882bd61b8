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

Normalisations (MATH.md §6, :mod:`meanfield.solvers.schemes.normalized_velocity`): LN-scaling divides ``V`` by
``sqrt(t + 1)``; nGPT (the same field for SA and USA) uses ``V_s = U'/beta`` and the radial
attention ``R = sum_l c_l' g_l P_l`` (``c_l' = exp(-beta) d kappa_l/dbeta``):
``V = alpha V_s / sqrt((1 - t^2) V_s^2 + R^2)`` (``|X| = sin th |V|``).
"""
from __future__ import annotations

import numpy as np

from meanfield.errors import require
from meanfield.geometry import laplace_eigenvalue, sphere_area
from meanfield.model import Model

from .contract import FollowsNoiseSchedule
from .density_scheme import DensityScheme
from .density_layers import polar_cosine_moved, post_ln_turn, require_layers
from .normalized_velocity import VelocityNormalization
from ..bases.zonal_basis import shared_basis

def _along(factors: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``factors * values`` with ``factors`` along the first axis of ``values``: one state (a vector), or a block of
    states as columns (the same products, column by column)."""
    return factors * values if values.ndim == 1 else factors[:, None] * values


class ZonalGalerkin(FollowsNoiseSchedule, DensityScheme):
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
        speed = basis.derivative(_along(self.velocity, state))
        divisor = self.speed_divisor
        if divisor.ngpt:
            return divisor.divide(speed, t, speed * speed * self._sin2, basis.synthesise(state * self.radial))
        if self.model.normalised:
            speed = speed / basis.synthesise(_along(self.conv, state))
        return divisor.divide(speed, t)

    def layer(self, state: np.ndarray, alpha: float, turn=None) -> np.ndarray:
        """The coefficients after one layer of step ``alpha`` (Post-LN unless ``turn``, ``a, b = turn(c, |A|)``, says
        otherwise): the push-forward of the density by the layer
        map (MATH.md §11; :mod:`meanfield.solvers.schemes.density_layers`).  At the nodes the attention output is
        ``c x + V (e - t x)`` (``V`` the flow's speed profile before its normalisation, ``c`` the synthesis of ``exp(-beta) d kappa_l / d beta``
        times ``g_l``, SA divided by ``K * rho``); each node's mass ``|S^{d-2}| w_j rho(t_j)`` moves to its new polar
        cosine and the coefficients are ``sum_j m_j P_l(t_j')`` (direct)."""
        require_layers(self)
        basis, operator = self.basis, self.kernel_operator
        radial = basis.synthesise(state * operator.scaled(operator.radial))
        speed = basis.derivative(_along(self.velocity, state))
        if self.model.normalised:
            density = basis.synthesise(state * self.conv)
            radial, speed = radial / density, speed / density
        along, across = (turn or post_ln_turn(alpha))(radial, np.sqrt(radial ** 2 + speed ** 2 * self._sin2))
        moved = polar_cosine_moved(basis.nodes, along, across, speed)
        masses = basis.quad * basis.synthesise(state)
        return masses @ basis.polynomials(moved, basis.lmax)

    def rhs(self, state: np.ndarray, t: float) -> np.ndarray:
        """``d g_l/dt = int rho X . grad P_l dsigma`` by quadrature (the transport term of MATH.md §2, §6)."""
        return self.transport(state, state, t)

    def transport(self, state: np.ndarray, source: np.ndarray, t: float) -> np.ndarray:
        """The transport term of the density of ``state`` in the field ``X`` of the density of ``source`` (``rhs`` is
        ``transport(state, state, t)``; the causal kinetic PDE of MATH.md §8 takes the positional average)."""
        rho = self.basis.synthesise(state)
        speed = self.speed_profile(source, t)
        self.max_speed = float(np.max(_along(self._sin, np.abs(speed))))
        return self._divergence @ (_along(self._flux_weight, rho) * speed)

    @property
    def takes_columns(self) -> bool:
        """Whether :meth:`rhs` takes a block of states as the columns of a ``(L + 1, m)`` array (each column's
        right-hand side in its column: the linearisation of :mod:`meanfield.solvers.stationary.stationary` takes its
        Jacobian in one call); not under nGPT, whose divisor is per state."""
        return not self.speed_divisor.ngpt

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
