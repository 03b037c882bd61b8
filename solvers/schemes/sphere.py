"""Pseudo-spectral scheme for the mean-field PDE on the sphere S^2 (MATH.md §2, §2.2).

State: the orthonormal spherical-harmonic coefficients ``rho_lm`` of the density,
``l = 0 .. lmax``, ``m = 0 .. l`` (real field: ``rho_{l,-m} = (-1)^m conj(rho_lm)``), in
ducc0's m-major layout (index ``m (2 lmax + 1 - m) / 2 + l``), Condon–Shortley phase,
colatitude ``theta`` from the north pole.  ``m = 0`` coefficients are real.

Transforms (ducc0.sht on a Gauss–Legendre grid, checked numerically in
tests/solvers/test_sphere.py), on :func:`meanfield.app.threads.ducc0_threads` threads read at
construction: ``synthesis_2d`` / ``analysis_2d`` give the same bits at any thread count
(tests/meanfield/test_threads.py):

* gradient of ``f``: spin-1 synthesis with ``E_lm = +sqrt(l(l+1)) f_lm``, ``B = 0``; the
  two maps are ``(d f/d theta, (1/sin theta) d f/d phi)``;
* divergence of ``(v_theta, v_phi)``: spin-1 analysis, then ``(div v)_lm = -sqrt(l(l+1)) E_lm``;
  so ``div grad = -l(l+1)`` (the Laplacian).

The grid has ``nlat >= ceil(3 (lmax + 1) / 2)`` Gauss–Legendre rings and ``nlon >= 3 lmax + 1``
(an FFT-friendly size) longitudes: the product of two degree-``lmax`` fields is then
analysed back to degree ``lmax`` without aliasing (the quadrature is exact for
degree ``3 lmax`` in both ``cos theta`` and ``phi``).  One right-hand side::

    rho        = synthesis(rho_lm)
    (v_th, v_ph) = gradient(w_l rho_lm)                           w_l = exp(beta) c_l / beta   (USA)
                                                                   w_l = c_l / beta              (SA)
    SA only:   (v_th, v_ph) /= synthesis(c_l rho_lm)
    d rho_lm/dt = -divergence(rho v)_lm                           + the exact noise term -nu l(l+1)

with ``c_l = exp(-beta) kappa_l`` (scaled Funk–Hecke, d = 3).  For SA the ``exp(beta)``
cancels in the ratio ``grad(K*rho) / (beta K*rho)``.  Two (USA) or three (SA) scalar
syntheses-equivalents plus one vector synthesis and one vector analysis per evaluation.

Normalisations (MATH.md §6, :mod:`meanfield.solvers.schemes.normalized_velocity`): LN-scaling divides ``(v_th, v_ph)``
by ``sqrt(t + 1)``; nGPT (the same field for SA and USA) takes ``G = gradient(c_l / beta rho_lm)``
and ``R = synthesis(c_l' rho_lm)``, ``c_l' = exp(-beta) d kappa_l/dbeta``, and moves by
``alpha G / sqrt(|G|^2 + R^2)``.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from meanfield.errors import require
from meanfield.harmonics import SHT_EPSILON, point_mass_coefficients, sphere_locations
from meanfield.model import Model

from .contract import FollowsNoiseSchedule
from .density_scheme import DensityScheme
from ..bases.sphere_basis import dealiased_grid_values, make_sphere_basis
from .density_layers import moved_points, post_ln_turn, require_layers, sphere_frame
from .normalized_velocity import VelocityNormalization


class SphereSpectral(FollowsNoiseSchedule, DensityScheme):
    """Pseudo-spectral right-hand side on S^2; see the module docstring.

    ``resolution`` is ``lmax``; densities live on the dealiased Gauss–Legendre grid of
    :class:`SphereBasis` (``frame()["density"]`` is on that grid, ``lat`` descending from
    the north pole).  ``normalization``: ``post`` (default), ``ngpt`` or ``lnscale`` (MATH.md §6).
    """
    #: memory estimate (meanfield.limits.check_solve_size): work bytes per frame value (the dealiased grid's)
    work_bytes_per_value = 400
    frame_values = staticmethod(dealiased_grid_values)

    geometry = "sphere"
    name = "spectral"
    #: no threaded BLAS on the right-hand side: the same bits at any thread count (meanfield.app.threads.thread_attrs)
    uses_blas = False

    def __init__(self, model: Model, resolution: int, backend: str | None = None,
                 positivity_tol: float = 1e-6, resolution_tol: float = 1e-6, nthreads: int | None = None,
                 normalization=None):
        require(model.dim == 3, f"--dim must be 3 for the sphere (got {model.dim})")
        require(model.beta > 0, f"--beta must be > 0 for the PDE (got {model.beta:g})")
        require(isinstance(resolution, (int, np.integer)) and resolution >= 6,
                f"--resolution (lmax) must be an integer >= 6 (got {resolution!r})")
        self.model = model
        self.speed_divisor = divisor = VelocityNormalization(normalization, model)
        self.basis = basis = make_sphere_basis(int(resolution), backend, nthreads)
        self.resolution = basis.lmax
        l = basis.degree_of_index
        self.kernel_operator = operator = divisor.kernel(l)
        self.conv = operator.conv                                               # exp(-beta) kappa_l
        self.potential = operator.velocity()      # X = grad(potential * rho) (USA), / (conv * rho) (SA)
        self.radial = operator.radial if divisor.ngpt else None
        self.linear = None if model.nu == 0 else -model.nu * (l * (l + 1.0))
        self.noise_operator = -(l * (l + 1.0))                                  # nu = 1: for a noise schedule
        degrees = np.arange(1, basis.lmax + 1)
        self.max_rate = divisor.fastest_rate(degrees)
        self.state_scale = 1.0 / (4 * math.pi)
        self.init_monitor(basis.lmax, positivity_tol, resolution_tol)
        nlat, nlon = basis.shape
        self._rho = np.empty((1, nlat, nlon))
        self._conv_grid = np.empty((1, nlat, nlon))
        self._vel = np.empty((2, nlat, nlon))

    # -- state <-> density ------------------------------------------------------------------------
    def state_from_density(self, density: np.ndarray) -> np.ndarray:
        """Coefficients ``l <= lmax`` of a density on the basis grid; records the initial spectral tail."""
        return self.record_initial_tail(self.analysed(density))

    def analysed(self, density: np.ndarray) -> np.ndarray:
        """Coefficients ``l <= lmax`` of a density on the basis grid."""
        return self.basis.analyse(density)

    def density(self, state: np.ndarray) -> np.ndarray:
        return self.basis.synthesise(state)

    # -- dynamics ---------------------------------------------------------------------------------
    def rhs(self, state: np.ndarray, t: float) -> np.ndarray:
        """The transport term ``-div(rho X[rho])`` in coefficient space (MATH.md §2, §6)."""
        return self.transport(state, state, t)

    def transport(self, state: np.ndarray, source: np.ndarray, t: float) -> np.ndarray:
        """``-div(rho X[sigma])``: the density of ``state`` carried by the field of the density of ``source``
        (coefficients; ``rhs`` is ``transport(state, state, t)``, the causal kinetic PDE of MATH.md §8 takes
        ``source`` = the positional average)."""
        basis = self.basis
        rho = basis.synthesise(state, out=self._rho[0])
        vel = basis.gradient(source * self.potential, out=self._vel)
        divisor = self.speed_divisor
        if divisor.ngpt:
            radial = basis.synthesise(source * self.radial, out=self._conv_grid[0])
            divisor.divide(vel, t, vel[0] ** 2 + vel[1] ** 2, radial)
        else:
            if self.model.normalised:
                np.divide(vel, basis.synthesise(source * self.conv, out=self._conv_grid[0]), out=vel)
            divisor.divide(vel, t)
        self.max_speed = math.sqrt(float(np.max(vel[0] ** 2 + vel[1] ** 2)))
        np.multiply(vel, rho, out=vel)
        return -basis.divergence(vel)

    def layer(self, state: np.ndarray, alpha: float, turn=None) -> np.ndarray:
        """The coefficients after one layer of step ``alpha`` (Post-LN unless ``turn``, ``a, b = turn(c, |A|)``, says
        otherwise): the push-forward of the density by the layer
        map (MATH.md §11; :mod:`meanfield.solvers.schemes.density_layers`).  The attention output at the grid nodes
        comes from the grid transforms (tangential part ``grad(potential * rho)``, radial part the synthesis of
        ``exp(-beta) d kappa_l / d beta`` times ``rho_lm``; SA divides both by ``K * rho``), the moved node masses go
        back by ducc0's adjoint non-uniform synthesis."""
        require_layers(self)
        basis, operator = self.basis, self.kernel_operator
        tangent = basis.gradient(state * self.potential)
        radial = basis.synthesise(state * operator.scaled(operator.radial))
        if self.model.normalised:
            density = basis.synthesise(state * self.conv)
            tangent, radial = tangent / density, radial / density
        along, across = (turn or post_ln_turn(alpha))(radial, np.sqrt(radial ** 2 + tangent[0] ** 2 + tangent[1] ** 2))
        x, e_theta, e_phi = self._grid_frame
        tangent = tangent[0][..., None] * e_theta + tangent[1][..., None] * e_phi
        moved = moved_points(x, along, across, tangent).reshape(-1, 3)
        masses = (basis.synthesise(state) * basis.weights).reshape(-1)
        return point_mass_coefficients(masses, sphere_locations(moved)[0], basis.lmax, SHT_EPSILON)[0]

    @cached_property
    def _grid_frame(self):
        """The grid's points and the unit vectors along colatitude and longitude there (what a layer moves)."""
        return sphere_frame(*np.meshgrid(self.basis.colatitude, self.basis.longitude, indexing="ij"))

    def stable_dt(self, cfl: float) -> float:
        """Largest step the field allows: ``cfl / max(lmax max|X|, lambda_max)`` (as on the circle)."""
        return cfl / max(self.basis.lmax * self.max_speed, self.max_rate)

    # -- diagnostics --------------------------------------------------------------------------------
    def energy(self, state: np.ndarray) -> float:
        """``exp(-beta) E``, ``E = (1 / 2 beta) sum_{l,m} kappa_l |rho_lm|^2`` (m < 0 counted; MATH.md §2.2)."""
        return self.kernel_operator.energy(state, self.basis.multiplicity)

    def spectral_tail(self, state: np.ndarray) -> float:
        """Largest degree amplitude in the top sixth of degrees, relative to the degree-0 amplitude."""
        amp = self.basis.degree_amplitude(state)
        return float(np.max(amp[self._tail]) / amp[0])

    def mean_density(self, state: np.ndarray) -> float:
        return float(state[0].real / math.sqrt(4 * math.pi))

    def mode_amplitudes(self, state: np.ndarray) -> np.ndarray:
        return self.basis.degree_amplitude(state)

    def coords(self) -> dict:
        b = self.basis
        return {"lat": ("lat", b.lat, {"long_name": "latitude (Gauss-Legendre nodes)", "units": "degrees_north"}),
                "lon": ("lon", b.lon, {"long_name": "longitude", "units": "degrees_east"}),
                "mode": ("mode", np.arange(b.lmax + 1), {"long_name": "spherical-harmonic degree l"})}

    def dims(self) -> dict:
        return {"density": ("lat", "lon"), "mode_amplitude": ("mode",)}

    def static_variables(self) -> dict:
        """``quadrature_weight(lat)``: the Gauss–Legendre weight of each grid point of a latitude row (times the
        longitude spacing), so that ``sum(density * quadrature_weight)`` over the grid is the mass and a run file
        alone gives the exact coefficients of its frames (:func:`meanfield.analysis.sphere_frame_coefficients`)."""
        return {"quadrature_weight": ("lat", self.basis.weights[:, 0].copy(),
                                      {"long_name": "quadrature weight of each grid point of the row (sr)"})}
