"""Stationary states of the PDE with noise, and their stability (MATH.md §9).

With noise ``nu > 0`` a stationary state has zero flux, ``rho X[rho] = nu grad rho``, so (MATH.md §2, §9)::

    USA:  rho = exp( (K * rho) / (beta nu) ) / Z          SA:  rho = (K * rho)^{1 / (beta nu)} / Z

(``Z`` makes the mass 1).  The states are sought among densities symmetric about a pole, which fixes the
rotations so that a state is isolated: even functions ``rho(theta) = rho(-theta)`` on the circle, zonal functions
``rho(<x, e>)`` on S^{d-1}, ``d >= 3`` (S^2 is ``d = 3``).  :class:`SymmetricBasis` holds them: orthonormal
functions ``P_l`` (circle ``1 / sqrt(2 pi)`` and ``cos(l theta) / sqrt(pi)``; zonal the normalised Gegenbauer
polynomials of :mod:`meanfield.solvers.schemes.zonal`), quadrature nodes, and the kernel's eigenvalues from the one
kernel operator (:class:`meanfield.kernel_operator.KernelOperator`): ``K * P_l = kappa_l P_l``.

:class:`StationaryProblem` is the fixed-point map ``c -> F(c, nu)`` of the coefficients ``c_l`` and its exact
derivative: with ``phi`` the exponent (USA ``(K * rho) / (beta nu)``, SA ``log(K * rho) / (beta nu)``) and
``rho = e^phi / Z``, ``d rho = rho (d phi - <d phi>_rho)`` (``<g>_rho = int rho g``).  :func:`newton` solves
``G = c - F(c, nu) = 0`` together with one linear condition on ``(c, nu)`` (a fixed ``nu``, a fixed degree-1
coefficient, or the pseudo-arclength condition of :mod:`meanfield.solvers.stationary.branch`), each Newton step a GMRES
solve (scipy) of the bordered system whose matrix acts through that derivative (no matrix is formed).
The residual is the Euclidean norm of ``G``, the coefficients' (spectral) norm.

Stability (:meth:`StationaryProblem.eigenvalues`): the time-dependent operator linearised about the state,
``L u = -div(u X[rho] + rho X'[rho] u) + nu Laplace u``, from the ordinary PDE scheme of the geometry (circle
spectral: even and odd perturbations, apart; zonal Galerkin: zonal perturbations), by central differences of
its right-hand side on the basis vectors (error ``O(h^2)``, ``h = 1e-6`` of the state's scale); the mass mode
and, on the circle, the rotation mode (an odd zero eigenvalue) are left out.

The free energy (USA, MATH.md §9): ``F(rho) = nu int rho log rho - E(rho)``, ``E = (1/2 beta) sum_l kappa_l c_l^2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import LinearOperator, gmres

from meanfield.errors import require
from meanfield.geometry import laplace_eigenvalue, sphere_area
from meanfield.kernel_operator import KernelOperator
from meanfield.model import Model

#: Newton stops when the residual's norm is below this (the issue's 1e-12, with a margin).
RESIDUAL_TOL = 1e-13
#: Largest number of Newton steps before a solve is declared failed.
MAX_NEWTON = 30
#: Relative step of the central differences of the stability operator.
DIFFERENCE_STEP = 1e-6
#: A leading eigenvalue within this fraction of the spectrum's largest recorded magnitude of 0 is not resolved by
#: the central differences (their rounding is about 1e-16 / DIFFERENCE_STEP of it): such a state is not called
#: stable (e.g. two antipodal clusters at small noise, whose exchange of mass is exponentially slow).
MARGINAL = 1e-8
#: The stability operator is formed on the degrees up to the state's band (its coefficients above BAND_TOL of the
#: mean) plus BAND_MARGIN: beyond, the state couples the degrees by less than that and they decay like -nu l(l+d-2).
BAND_TOL, BAND_MARGIN = 1e-12, 16


class SymmetricBasis:
    """Orthonormal symmetric functions on S^{dim-1} and their quadrature (module docstring), for the branch of
    ``mode``.

    The branch leaving the uniform state through degree ``mode`` keeps the symmetry of that degree's function, so it
    is sought among the degrees that symmetry allows (MATH.md §9): on the circle the multiples of ``mode``
    (``cos(j mode theta)``: the ``2 pi / mode``-periodic even functions); on S^{d-1} every degree for odd ``mode``
    and the even degrees for even ``mode`` (states symmetric under ``x_d -> -x_d``).  ``lmax + 1`` degrees are
    kept: :attr:`degrees`, the largest :attr:`top`; :attr:`mode_index` is the position of ``mode`` among them.

    ``values(c)`` gives the function at the nodes, ``coefficients(f)`` the coefficients of node values (exact for
    degrees up to the quadrature's), ``integrate(f)`` the integral over the whole sphere, ``full(c)`` the
    coefficients on every degree ``0 .. top`` (zero at the degrees the symmetry leaves out).
    """

    def __init__(self, lmax: int, dim: int, nodes: int | None = None, mode: int = 1):
        require(isinstance(lmax, (int, np.integer)) and lmax >= 2, f"the stationary basis needs lmax >= 2 (got {lmax!r})")
        require(isinstance(mode, (int, np.integer)) and mode >= 1, f"the branch's mode must be >= 1 (got {mode!r})")
        self.lmax, self.dim, self.mode = int(lmax), int(dim), int(mode)
        step = self.mode if self.dim == 2 else (2 if self.mode % 2 == 0 else 1)
        self.degrees = step * np.arange(self.lmax + 1)
        self.top = int(self.degrees[-1])
        self.mode_index = int(np.flatnonzero(self.degrees == self.mode)[0])
        count = int(nodes) if nodes is not None else 3 * (self.top + 1)
        if self.dim == 2:      # even functions: midpoint nodes on (0, pi), each standing for +-theta
            self.angles = math.pi * (np.arange(count) + 0.5) / count
            self.quad = np.full(count, 2 * math.pi / count)
            self.P = np.cos(np.outer(self.angles, self.degrees)) / math.sqrt(math.pi)
            self.P[:, 0] = 1.0 / math.sqrt(2 * math.pi)
        else:
            from ..bases.zonal_basis import ZonalBasis
            zonal = ZonalBasis(self.top, self.dim, nodes=count)
            self.angles, self.quad, self.P = zonal.polar, zonal.quad, zonal.P[:, self.degrees]
        self.analysis = self.P.T * self.quad
        self.area = sphere_area(self.dim)

    def density_at(self, coefficients: np.ndarray, angles) -> np.ndarray:
        """``sum_l c_l P_l`` at any angles (the circle's ``theta``; on S^{d-1} the polar angle)."""
        angles = np.asarray(angles, dtype=float)
        if self.dim == 2:
            functions = np.cos(np.multiply.outer(angles, self.degrees)) / math.sqrt(math.pi)
            functions[..., 0] = 1.0 / math.sqrt(2 * math.pi)
        else:
            from meanfield.gegenbauer import normalised_gegenbauer
            functions = normalised_gegenbauer(np.cos(angles).ravel(), self.top, self.dim)[:, self.degrees]
            functions = functions.reshape(angles.shape + (self.degrees.size,))
        return functions @ coefficients

    def full(self, coefficients: np.ndarray) -> np.ndarray:
        """The coefficients on every degree ``0 .. top`` (class docstring)."""
        out = np.zeros(self.top + 1)
        out[self.degrees] = coefficients
        return out

    def values(self, coefficients: np.ndarray) -> np.ndarray:
        return self.P @ coefficients

    def coefficients(self, values: np.ndarray) -> np.ndarray:
        return self.analysis @ values

    def integrate(self, values: np.ndarray) -> float:
        return float(self.quad @ values)

    def uniform(self) -> np.ndarray:
        """The coefficients of the uniform density ``1 / |S^{d-1}|``."""
        c = np.zeros(self.lmax + 1)
        c[0] = math.sqrt(self.area) / self.area
        return c

    def amplitude_scale(self) -> float:
        """The mode's amplitude ``a`` per unit of its coefficient ``c_k`` (MATH.md §9): on the circle ``a = rho_hat_k``
        of MATH.md §2.1, ``c_k cos(k theta) / sqrt(pi) = 2 rho_hat_k cos(k theta)``; on S^{d-1} ``a = c_k`` itself."""
        return 1.0 / (2 * math.sqrt(math.pi)) if self.dim == 2 else 1.0


@dataclass
class Point:
    """A stationary state: coefficients ``c``, noise ``nu``, the residual's norm and Newton's steps."""

    c: np.ndarray
    nu: float
    residual: float
    steps: int


class StationaryProblem:
    """The stationary equation of ``model`` (attention, beta, dim; its ``nu`` is not used) on ``basis``."""

    def __init__(self, model: Model, basis: SymmetricBasis):
        require(model.beta > 0, f"--beta must be > 0 for stationary states (got {model.beta:g})")
        require(model.dim == basis.dim, f"the basis is on S^{basis.dim - 1}, the model on S^{model.dim - 1}")
        self.model, self.basis = model, basis
        self.operator = KernelOperator(basis.degrees, model.beta, model.dim, model.attention)
        self.kappa = self.operator.conv                       # exp(-beta) kappa_l
        self.usa = not model.normalised       # USA: the exponent is K * rho itself (SA: its logarithm)

    # -- the map and its derivative -------------------------------------------------------------------------
    def exponent(self, c: np.ndarray, nu: float) -> tuple[np.ndarray, np.ndarray]:
        """``(phi, w)`` at the nodes: the exponent (up to a constant) and ``exp(-beta) K * rho``."""
        w = self.basis.values(self.kappa * c)
        beta = self.model.beta
        if self.usa:
            return math.exp(beta) * w / (beta * nu), w
        require(bool(np.all(w > 0)), "the stationary solve left the positive densities (K * rho <= 0)")
        return np.log(w) / (beta * nu), w

    def density(self, c: np.ndarray, nu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rho, phi, w)`` at the nodes with ``rho = e^phi / Z`` of mass 1."""
        phi, w = self.exponent(c, nu)
        shifted = np.exp(phi - phi.max())
        return shifted / self.basis.integrate(shifted), phi, w

    def residual(self, c: np.ndarray, nu: float) -> np.ndarray:
        """``G(c, nu) = c - F(c, nu)``."""
        return c - self.basis.coefficients(self.density(c, nu)[0])

    def _response(self, rho: np.ndarray, dphi: np.ndarray) -> np.ndarray:
        """Coefficients of ``d rho = rho (d phi - <d phi>_rho)``."""
        return self.basis.coefficients(rho * (dphi - self.basis.integrate(rho * dphi)))

    def derivative(self, c: np.ndarray, nu: float):
        """``(dG/dc as a function of a vector, dG/dnu)`` at ``(c, nu)`` (module docstring)."""
        rho, phi, w = self.density(c, nu)
        beta = self.model.beta
        scale = math.exp(beta) / (beta * nu) if self.usa else None

        def along(dc: np.ndarray) -> np.ndarray:
            dw = self.basis.values(self.kappa * dc)
            dphi = scale * dw if self.usa else dw / (beta * nu * w)
            return dc - self._response(rho, dphi)

        return along, -self._response(rho, -phi / nu)

    # -- records --------------------------------------------------------------------------------------------
    def free_energy(self, c: np.ndarray, nu: float) -> float:
        """``F = nu int rho log rho - E(rho)`` of the density ``F(c, nu)`` (MATH.md §9; USA's Lyapunov function)."""
        rho = self.density(c, nu)[0]
        entropy = self.basis.integrate(rho * np.log(rho))
        return nu * entropy - self.operator.energy(self.basis.coefficients(rho)) * math.exp(self.model.beta)

    def uniform_free_energy(self, nu: float) -> float:
        """``F`` of the uniform density: ``-nu log |S^{d-1}| - kappa_0 / (2 beta |S^{d-1}|)``."""
        return self.free_energy(self.basis.uniform(), nu)

    def amplitude(self, c: np.ndarray) -> float:
        """The mode's amplitude ``a`` (:meth:`SymmetricBasis.amplitude_scale`; degree 1 unless the basis is another
        mode's)."""
        return float(c[self.basis.mode_index] * self.basis.amplitude_scale())

    def is_stable(self, c: np.ndarray, nu: float) -> bool:
        """Whether the state is stable: its leading eigenvalue is negative by more than :data:`MARGINAL` of the
        spectrum's scale (:func:`resolved_stable`)."""
        return resolved_stable(self.eigenvalues(c, nu, 4))

    def eigenvalues(self, c: np.ndarray, nu: float, count: int = 4) -> np.ndarray:
        """The ``count`` eigenvalues of largest real part of the linearised PDE about ``F(c, nu)`` (module docstring)."""
        return linearised_spectrum(self.model, self.basis,
                                   self.basis.full(self.basis.coefficients(self.density(c, nu)[0])), nu, count)


# ------------------------------------------------------------------------------------------------ Newton
def newton(problem: StationaryProblem, c: np.ndarray, nu: float, condition, tol: float = RESIDUAL_TOL,
           max_steps: int = MAX_NEWTON) -> Point | None:
    """Solve ``G(c, nu) = 0`` with one more equation ``condition(c, nu) = 0``, linear: ``condition`` is
    ``(weights_c, weight_nu, value)`` meaning ``weights_c . c + weight_nu nu = value``.  Newton with GMRES on the
    bordered system; ``None`` if it does not converge in ``max_steps`` (or leaves the positive densities)."""
    weights_c, weight_nu, value = condition
    size = c.size
    c, nu = np.array(c, dtype=float), float(nu)
    for step in range(max_steps + 1):
        if not (nu > 0 and math.isfinite(nu)):
            return None
        try:
            g = problem.residual(c, nu)
        except Exception:       # FloatingPointError or the positivity refusal: this guess is lost
            return None
        h = float(weights_c @ c + weight_nu * nu - value)
        norm = float(np.linalg.norm(g))
        if norm <= tol and abs(h) <= tol * max(1.0, abs(value)):
            return Point(c, nu, norm, step)
        if step == max_steps or not math.isfinite(norm):
            return None
        along, dnu = problem.derivative(c, nu)
        matrix = LinearOperator((size + 1, size + 1), dtype=float,
                                matvec=lambda x: np.append(along(x[:size]) + dnu * x[size],
                                                           weights_c @ x[:size] + weight_nu * x[size]))
        delta, info = gmres(matrix, -np.append(g, h), rtol=1e-15, atol=0.0, restart=size + 1,
                            maxiter=3)
        if not np.all(np.isfinite(delta)):
            return None
        c, nu = c + delta[:size], nu + delta[size]
    return None


def fixed_nu(size: int, nu: float) -> tuple:
    """The condition ``nu = value`` for :func:`newton`."""
    return np.zeros(size), 1.0, float(nu)


def fixed_amplitude(size: int, coefficient: float, index: int = 1) -> tuple:
    """The condition ``c[index] = coefficient`` for :func:`newton` (the mode's coefficient, the branch's parameter:
    it keeps the corrector off the uniform state, where it is 0)."""
    weights = np.zeros(size)
    weights[index] = 1.0
    return weights, 0.0, float(coefficient)


def amplitude_tangent(problem: StationaryProblem, point: Point, index: int) -> tuple[np.ndarray, float]:
    """``(dc/da, dnu/da)`` along the branch at ``point``, ``a = c[index]``: the bordered system
    ``[G_c, G_nu; e_index^T, 0] (c', nu') = (0, 1)`` (GMRES, as in :func:`newton`).  ``nu' = 0`` at a fold of
    ``nu``; the system stays regular there (MATH.md §9)."""
    size = point.c.size
    along, dnu = problem.derivative(point.c, point.nu)
    matrix = LinearOperator((size + 1, size + 1), dtype=float,
                            matvec=lambda x: np.append(along(x[:size]) + dnu * x[size], x[index]))
    target = np.zeros(size + 1)
    target[size] = 1.0
    solution, _ = gmres(matrix, target, rtol=1e-15, atol=0.0, restart=size + 1, maxiter=3)
    return solution[:size], float(solution[size])


def stationary_state(model: Model, nu: float, guess, lmax: int = 48) -> Point | None:
    """The stationary state of ``model`` at noise ``nu`` nearest ``guess`` (coefficients on
    :class:`SymmetricBasis` ``(lmax, model.dim)``), by :func:`newton` at fixed ``nu``."""
    problem = StationaryProblem(model, SymmetricBasis(lmax, model.dim))
    guess = np.asarray(guess, dtype=float)
    return newton(problem, guess, nu, fixed_nu(guess.size, nu))


def circle_stationary_near(model: Model, density: np.ndarray, lmax: int = 48) -> tuple[Point | None, np.ndarray | None]:
    """The stationary state nearest a density on the circle's grid ``theta_j = 2 pi j / N`` (a run's frame), at the
    model's ``nu``: the density turned so that its degree-1 phase is 0 (the solver's states are even about 0),
    solved by :func:`newton`, and its values at the same grid (the frame's own angles).  ``(None, None)`` when Newton
    fails."""
    density = np.asarray(density, dtype=float)
    size = density.size
    modes = np.arange(min(lmax, (size - 1) // 2) + 1)
    coefficients = np.fft.rfft(density)[modes] / size                     # rho_hat_k (MATH.md §2.1)
    centre = -float(np.angle(coefficients[1])) if abs(coefficients[1]) > 0 else 0.0
    turned = (coefficients * np.exp(1j * modes * centre)).real            # rho(theta + centre), even part
    guess = np.zeros(lmax + 1)
    guess[0] = turned[0] * math.sqrt(2 * math.pi)
    guess[1:modes.size] = 2 * math.sqrt(math.pi) * turned[1:]
    point = stationary_state(model, model.nu, guess, lmax)
    if point is None:
        return None, None
    theta = 2 * math.pi * np.arange(size) / size - centre
    values = point.c[0] / math.sqrt(2 * math.pi) + np.cos(np.outer(theta, np.arange(1, lmax + 1))) @ point.c[1:] \
        / math.sqrt(math.pi)
    return point, values


# ------------------------------------------------------------------------------------------------ stability
def resolved_stable(values: np.ndarray) -> bool:
    """Whether leading eigenvalues ``values`` (largest real part first) say stable: the first below
    ``-MARGINAL`` times the largest magnitude among them."""
    values = np.asarray(values)
    return bool(values[0].real < -MARGINAL * float(np.max(np.abs(values))))


def _ordinary_scheme(model: Model, nu: float, lmax: int):
    """The PDE scheme whose right-hand side is linearised: circle spectral (``N = 4 (lmax + 1)``, numpy path) or the
    zonal Galerkin scheme of degree ``lmax``, with noise ``nu`` in its linear part."""
    noisy = Model(model.attention, model.beta, nu, model.dim)
    if model.dim == 2:
        from ..schemes.circle import CircleSpectral
        return CircleSpectral(noisy, 4 * (lmax + 1), pointwise="numpy")
    from ..schemes.zonal import ZonalGalerkin
    return ZonalGalerkin(noisy, max(lmax, 8))


def linearised_spectrum(model: Model, basis: SymmetricBasis, c: np.ndarray, nu: float, count: int = 4) -> np.ndarray:
    """The ``count`` eigenvalues of largest real part of ``L`` (module docstring) at the state of coefficients ``c`` on
    every degree ``0 .. basis.top`` (:meth:`SymmetricBasis.full`), on the degrees up to the state's band plus
    :data:`BAND_MARGIN`: beyond the state's symmetry (a mode-``k`` state may be unstable to another degree): every
    perturbation on the circle, every zonal one on S^{d-1}."""
    scheme = _ordinary_scheme(model, nu, basis.top)
    significant = np.nonzero(np.abs(c) > BAND_TOL * abs(c[0]))[0]
    band = int(significant[-1]) + BAND_MARGIN
    if model.dim == 2:
        # rho(theta) = sum_l c_l P_l: rho_hat_0 = c_0 / sqrt(2 pi), rho_hat_l = c_l / (2 sqrt(pi))
        state = np.zeros(scheme.basis.wavenumbers.size, dtype=complex)
        state[0] = c[0] / math.sqrt(2 * math.pi)
        state[1:c.size] = c[1:] / (2 * math.sqrt(math.pi))
        degrees = np.arange(1, min(band, scheme.basis.kmax) + 1)
        even = [_block(scheme, state, degrees, 1.0)]
        odd = _block(scheme, state, degrees, 1j)
        if np.any(c[1:] != 0):          # a non-uniform state turns with the rotations: an exact zero, left out
            odd = np.delete(odd, np.argmin(np.abs(odd)))
        values = np.concatenate(even + [odd])
    else:
        state = np.zeros(scheme.basis.lmax + 1)
        state[:min(c.size, state.size)] = c[:state.size]
        values = _block(scheme, state, np.arange(1, min(band, state.size - 1) + 1), 1.0)
    return values[np.argsort(-values.real)][:count]


def _block(scheme, state: np.ndarray, indices: np.ndarray, direction) -> np.ndarray:
    """Eigenvalues of the linearised right-hand side (with its linear part) restricted to the perturbations
    ``direction * e_i``, ``i`` in ``indices``, read back along the same directions."""
    step = DIFFERENCE_STEP * float(np.max(np.abs(state)))
    linear = 0.0 if scheme.linear is None else scheme.linear
    if getattr(scheme, "takes_columns", False):    # every column's difference in one right-hand side
        perturbation = np.zeros((state.size, indices.size), dtype=np.result_type(state, direction))
        perturbation[indices, np.arange(indices.size)] = step * direction
        plus, minus = state[:, None] + perturbation, state[:, None] - perturbation
        block = linear if np.ndim(linear) == 0 else linear[:, None]
        change = (scheme.rhs(plus, 0.0) + block * plus - scheme.rhs(minus, 0.0) - block * minus) / (2 * step)
        matrix = np.ascontiguousarray((change[indices] / direction).real)
    else:
        columns = []
        for index in indices:
            basis_vector = np.zeros_like(state)
            basis_vector[index] = direction
            plus, minus = state + step * basis_vector, state - step * basis_vector
            change = (scheme.rhs(plus, 0.0) + linear * plus - scheme.rhs(minus, 0.0) - linear * minus) / (2 * step)
            columns.append((change[indices] / direction).real)
        matrix = np.array(columns).T
    matrix[np.abs(matrix) < 1e-200] = 0.0          # subnormal differences would slow LAPACK a hundredfold
    return np.linalg.eigvals(matrix)


def uniform_rates(model: Model, nu: float, degrees) -> np.ndarray:
    """The linear rates about the uniform state at noise ``nu`` (MATH.md §2.3), for checking :func:`linearised_spectrum`."""
    from meanfield.theory import interaction_rate
    degrees = np.asarray(degrees)
    return laplace_eigenvalue(degrees, model.dim) * (interaction_rate(model, degrees) - nu)
