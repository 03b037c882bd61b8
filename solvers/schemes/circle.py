"""Fourier pseudo-spectral scheme for the mean-field PDE on the circle (MATH.md §2, §2.1).

State: the coefficients ``rho_hat_k``, ``k = 0 .. N/2`` (MATH.md §2.1 normalisation), with
every mode above the 2/3-rule cut-off ``kmax = (N-1)//3`` kept at zero.  One
right-hand side::

    rho      = synthesis(rho_hat)
    X        = synthesis(i k c_k rho_hat)            / synthesis(c_k rho_hat)   (SA)
             = synthesis(i k exp(beta) c_k / beta rho_hat)                       (USA)
             = alpha G / sqrt(G^2 + R^2)                                         (nGPT, SA and USA)
               G = synthesis(i k c_k / beta rho_hat),  R = synthesis(c_k' rho_hat)
    X       /= sqrt(t + 1)                                                       (LN-scaling)
    d rho_hat/dt = -i k analysis(rho X)   (dealiased)     + the exact noise term -nu k^2
                                                            (-nu(t) k^2 with a noise schedule)

with ``c_k = exp(-beta) 2 pi I_k(beta)`` (scaled Funk–Hecke, MATH.md §2.1): the
``exp(beta)`` cancels in SA's ratio, and for SA ``X = grad log(K*rho) / beta``
becomes ``(i k c_k / beta) rho_hat`` over ``c_k rho_hat``.  Three syntheses and one
analysis per evaluation (USA: two syntheses).  The pointwise work runs in place in the
basis's transform buffers: in one compiled call where :mod:`meanfield.solvers.schemes.circle_kernel` is built
and covers the case (same bits), else one numpy call per operation and ``max|X|`` in one BLAS
pass, where at small ``N`` the per-call overhead, not arithmetic, is the cost beyond the
transforms (``meanfield validate bench-circle`` measures both).  The velocity field is smooth (the kernel is entire);
only ``rho`` can lose resolution, which :meth:`CircleSpectral.validity` watches.
Normalisations (MATH.md §6, :mod:`meanfield.solvers.schemes.normalized_velocity`): ``c_k' = exp(-beta) d kappa_k/dbeta``
gives the radial attention; nGPT synthesises ``R`` where SA synthesises ``c_k rho_hat``, LN-scaling
needs no synthesis of its own.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.blas import idamax

from meanfield.errors import require
from meanfield.attention_field import circle_mass_coefficients
from meanfield.fourier_series import CIRCLE_NORM
from meanfield.model import Model

from .contract import FollowsNoiseSchedule
from .density_scheme import DensityScheme
from .circle_kernel import fused_kernel
from .density_layers import angle_shift, post_ln_turn, require_layers
from ..bases.fourier import FourierBasis
from .normalized_velocity import VelocityNormalization


class CircleSpectral(FollowsNoiseSchedule, DensityScheme):
    """Pseudo-spectral right-hand side on the circle; see the module docstring.

    ``normalization``: ``post`` (default), ``ngpt`` or ``lnscale`` (a name or a
    :class:`meanfield.normalization.Normalization`; MATH.md §6).  ``planning``: the FFTW
    planning of :class:`meanfield.solvers.bases.fourier.FourierBasis` (``"measure"`` only for benchmarks).
    ``pointwise``: the pointwise work compiled (``"auto"``: where :mod:`meanfield.solvers.schemes.circle_kernel`
    covers it; ``"compiled"``; ``"numpy"``): the same bits either way, recorded as ``pointwise_kernel`` (the compiled
    routine, not the attention's kernel ``exp(beta <x, y>)``).
    """
    #: memory estimate (meanfield.limits.check_solve_size): work bytes per frame value
    work_bytes_per_value = 400

    geometry = "circle"
    name = "spectral"

    def __init__(self, model: Model, resolution: int, backend: str | None = None,
                 positivity_tol: float = 1e-6, resolution_tol: float = 1e-6, normalization=None,
                 planning: str = "estimate", pointwise: str = "auto"):
        require(model.dim == 2, f"--dim must be 2 for the circle (got {model.dim})")
        require(model.beta > 0, f"--beta must be > 0 for the PDE (got {model.beta:g})")
        require(isinstance(resolution, (int, np.integer)) and resolution >= 8 and resolution % 2 == 0,
                f"--resolution must be an even integer >= 8 (got {resolution!r})")
        self.model = model
        self.speed_divisor = divisor = VelocityNormalization(normalization, model)
        #: grid fields: rho, the velocity's numerator and (SA or nGPT) the denominator's field
        fields = 3 if divisor.ngpt or model.normalised else 2
        self.basis = basis = FourierBasis(int(resolution), backend, slots=fields, planning=planning)
        self.resolution = basis.n
        k = basis.wavenumbers
        self.kernel_operator = operator = divisor.kernel(k)
        self.conv = operator.conv * basis.dealias                              # exp(-beta) 2 pi I_k
        self.velocity = velocity = operator.velocity(1j * k) * basis.dealias
        self.radial = operator.radial * basis.dealias if divisor.ngpt else None
        self.divergence = -1j * k * basis.dealias / basis.n                  # includes 1/N of analysis
        # the transform buffers rhs works in: slot 0 rho, slot 1 the speed, slot 2 K*rho (SA) or R (nGPT)
        self._rho_coeffs, self._rho = basis.synthesis_input(0), basis.synthesis_output(0)
        multipliers = (velocity, self.radial if divisor.ngpt else self.conv)[:fields - 1]
        self._products = tuple((m, basis.synthesis_input(slot)) for slot, m in enumerate(multipliers, 1))
        self._speed = basis.synthesis_output(1)
        self._third = basis.synthesis_output(2) if fields == 3 else None
        self.linear = None if model.nu == 0 else -model.nu * k.astype(float) ** 2 * basis.dealias
        self.noise_operator = -k.astype(float) ** 2 * basis.dealias    # nu = 1: for a noise schedule
        modes = np.arange(1, basis.kmax + 1)
        self.max_rate = divisor.fastest_rate(modes)
        self.state_scale = 1.0 / (2 * math.pi)
        self.init_monitor(basis.kmax, positivity_tol, resolution_tol)
        self._kernel = fused_kernel(self, pointwise)
        self.pointwise_kernel = "numpy" if self._kernel is None else "compiled"
        self._speed_scale = divisor.normalization.divisor if divisor.lnscale else None

    # -- state <-> density ------------------------------------------------------------------------
    @property
    def coordinate(self):
        return self.basis.theta

    def analysed(self, density: np.ndarray) -> np.ndarray:
        """Dealiased coefficients of a grid density."""
        return self.basis.to_coeffs(density) * self.basis.dealias

    def state_from_density(self, density: np.ndarray) -> np.ndarray:
        """Dealiased coefficients of a grid density; records the initial spectral tail."""
        return self.record_initial_tail(self.analysed(density))

    def density(self, state: np.ndarray) -> np.ndarray:
        return self.basis.to_grid(state).copy()

    # -- dynamics ---------------------------------------------------------------------------------
    def rhs(self, state: np.ndarray, t: float) -> np.ndarray:
        """The transport term ``-d/dtheta(rho X[rho])`` in coefficient space (MATH.md §2, §6)."""
        return self.transport(state, state, t)

    def transport(self, state: np.ndarray, source: np.ndarray, t: float) -> np.ndarray:
        """``-d/dtheta(rho X[sigma])``: the density of ``state`` carried by the field of the density of ``source``
        (both coefficient arrays; ``rhs`` is ``transport(state, state, t)``).  The causal kinetic PDE (MATH.md §8)
        takes ``source`` = the positional average.  The compiled kernel takes the source as its third argument."""
        kernel = self._kernel
        if kernel is not None:  # the same operations in one compiled call (meanfield.solvers.schemes.circle_kernel)
            out = kernel.rhs(state, 1.0 if self._speed_scale is None else self._speed_scale(t), source)
            self.max_speed = kernel.max_speed
            return out
        return self._numpy_transport(state, source, t)

    def transport_rows(self, states: np.ndarray, sources: np.ndarray, t: float) -> np.ndarray:
        """Every row's :meth:`transport` in one call of the compiled kernel (which loops over the rows); without it,
        row by row (:meth:`meanfield.solvers.schemes.density_scheme.DensityScheme.transport_rows`)."""
        if self._kernel is None:
            return super().transport_rows(states, sources, t)
        return self.transport(states, sources, t)

    def _numpy_transport(self, state: np.ndarray, source: np.ndarray, t: float) -> np.ndarray:
        """:meth:`transport` with numpy, one call per operation."""
        basis, speed, third, divisor = self.basis, self._speed, self._third, self.speed_divisor
        np.copyto(self._rho_coeffs, state)
        for multiplier, coeffs in self._products:
            np.multiply(source, multiplier, out=coeffs)
        basis.synthesise_all()
        if divisor.ngpt:
            divisor.divide(speed, t, speed * speed, third)
        else:
            if third is not None:
                np.divide(speed, third, out=speed)
            if divisor.lnscale:
                divisor.divide(speed, t)
        self.max_speed = abs(float(speed[idamax(speed)]))   # max |X| in one BLAS pass
        np.multiply(self._rho, speed, out=basis.analysis_input())
        return np.multiply(basis.analyse(), self.divergence)

    def layer(self, state: np.ndarray, alpha: float, turn=None) -> np.ndarray:
        """The coefficients after one layer of step ``alpha`` (Post-LN unless ``turn`` says otherwise): the push-forward of the density by the layer
        map (MATH.md §11; :mod:`meanfield.solvers.schemes.density_layers`).  At the grid nodes the attention output's
        angular part is the velocity's synthesis and its radial part that of ``exp(-beta) d kappa_k / d beta``
        times ``rho_hat_k`` (SA divides both by ``K * rho``), exact for the band-limited state; the nodes, carrying
        the masses ``rho_j 2 pi / N``, move by ``atan2(b v, a)`` (``a, b = turn(c, |A|)``; Post-LN:
        ``1 + alpha c, alpha``) and go back by a NUFFT."""
        require_layers(self)
        basis, operator = self.basis, self.kernel_operator
        masses = self.density(state) * basis.cell
        speed = basis.to_grid(state * self.velocity).copy()
        radial = basis.to_grid(state * (operator.scaled(operator.radial) * basis.dealias)).copy()
        if self.model.normalised:
            density = basis.to_grid(state * self.conv)
            speed /= density
            radial /= density
        along, across = (turn or post_ln_turn(alpha))(radial, np.hypot(radial, speed))
        angles = basis.theta + angle_shift(along, across, speed)
        return circle_mass_coefficients(angles, masses, basis.n // 2) * (basis.dealias / (2 * math.pi))

    def stable_dt(self, cfl: float) -> float:
        """Largest step the field allows: ``cfl / max(kmax max|X|, lambda_max)``.

        The first bound is the advection CFL for a spectral derivative, the second
        resolves the fastest linear growth (MATH.md §2.3); noise is exact in the steppers.
        """
        return cfl / max(self.basis.kmax * self.max_speed, self.max_rate)

    # -- diagnostics --------------------------------------------------------------------------------
    def energy(self, state: np.ndarray) -> float:
        """``exp(-beta) E`` (MATH.md §2.1)."""
        return self.kernel_operator.energy(state, self.basis.multiplicity, CIRCLE_NORM)

    def spectral_tail(self, state: np.ndarray) -> float:
        """Largest ``|rho_hat_k|`` in the top sixth of the retained modes, relative to ``rho_hat_0``."""
        return float(np.maximum.reduce(np.abs(state[self._tail])) / abs(state[0]))  # ufunc: no np.max wrapper

    def mean_density(self, state: np.ndarray) -> float:
        return float(state[0].real)

    def mode_amplitudes(self, state: np.ndarray) -> np.ndarray:
        return np.abs(state)

    def coords(self) -> dict:
        return {"theta": ("theta", self.basis.theta, {"long_name": "angle", "units": "rad"}),
                "mode": ("mode", self.basis.wavenumbers, {"long_name": "Fourier mode k"})}

    def dims(self) -> dict:
        return {"density": ("theta",), "mode_amplitude": ("mode",)}
