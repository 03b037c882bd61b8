"""The branch of stationary states that leaves the uniform state at ``nu_#`` (MATH.md §9), by continuation in ``nu``.

Near the bifurcation the natural parameter is the degree-1 amplitude ``a`` (on the circle ``rho_hat_1``): the
branch is followed at fixed ``a`` (:func:`meanfield.solvers.stationary.fixed_amplitude`) at the relative amplitudes
:data:`AMPLITUDES` (the degree-1 term's largest value over the mean), whose ``nu(a)`` gives the curvature
``C = lim (nu(a) / nu_# - 1) / a^2`` by a least-squares fit of ``C a^2 + D a^4 + E a^6`` (the points' ``nu`` are
exact to about 1e-14, so ``C`` is good to about 1e-8 of the relative amplitude's scale; smaller amplitudes would
divide the rounding by ``a^2``).  Then pseudo-arclength continuation in
``(c, nu)``: the secant of the last two points is the tangent ``t``, the predictor steps ``ds`` along it and the
corrector solves ``G = 0`` with ``t . (x - x_pred) = 0`` (:func:`meanfield.solvers.stationary.newton`); a failed
corrector halves ``ds``, a quick one grows it, so the branch passes its folds.  The run stops with a reason in
``stop_reason``, keeping every point found: ``nu`` left the range, the amplitude grew past the resolution (the top
degree's coefficient above :data:`TAIL_TOL` of the mean), the point budget, or the step fell below its floor.

Folds ``nu_sn`` (where ``nu`` turns back along the branch) are refined at fixed amplitude by a bounded scalar
search of ``nu(a)``; for USA the first-order point ``nu_c``, where the branch's free energy equals the uniform
state's, by a root search of ``F(a) - F_uniform(nu(a))``, on the stable part.  ``transition`` is ``continuous``
(``C < 0``: the branch exists below ``nu_#``) or ``first-order`` (``C > 0``).  :func:`tricritical_beta` is the
``beta`` where ``C`` changes sign (bisection), against the Bessel-ratio root of MATH.md §9 (:func:`bessel_root`).
"""

from __future__ import annotations

import math
import time

import numpy as np
import xarray as xr
from scipy.optimize import brentq, minimize_scalar
from scipy.special import ive

from meanfield.errors import require
from meanfield.model import Model
from meanfield.theory import critical_noise

from .run_record import run_attrs
from .stationary import Point, StationaryProblem, SymmetricBasis, fixed_amplitude, newton

#: The relative amplitudes (degree-1 term's largest value over the mean) of the fixed-amplitude phase.
AMPLITUDES = (0.005, 0.01, 0.015, 0.02, 0.025, 0.03)
AMPLITUDE_POINTS = len(AMPLITUDES)
#: Pseudo-arclength: first step (relative to the last amplitude step), growth, floor, point budget.
STEP_GROWTH, STEP_FLOOR, MAX_POINTS = 1.5, 1e-9, 400
#: The basis grows (by LMAX_GROWTH, up to LMAX_MAX) when the top degree's coefficient exceeds this fraction of the
#: mean's; the branch stops at LMAX_MAX.
TAIL_TOL = 1e-11
LMAX_GROWTH, LMAX_MAX = 1.5, 192
#: Default noise range of a branch, in units of ``nu_#``.
NU_RANGE = (0.2, 3.0)


class _Lost(Exception):
    """A fixed-amplitude solve failed while a fold or ``nu_c`` was being refined."""


class Branch:
    """A branch being followed: the problem, the points found, and how it stopped."""

    def __init__(self, model: Model, lmax: int = 48, nu_range=None):
        require(model.dim >= 2, f"--dim must be >= 2 (got {model.dim})")
        self.model = model
        self.basis = SymmetricBasis(lmax, model.dim)
        self.problem = StationaryProblem(model, self.basis)
        self.nu_sharp = critical_noise(model)
        low, high = (NU_RANGE if nu_range is None else nu_range)
        self.nu_range = (low * self.nu_sharp, high * self.nu_sharp) if nu_range is None else (float(low), float(high))
        require(self.nu_range[0] > 0 and self.nu_range[1] > self.nu_range[0],
                f"the noise range of a branch must be 0 < nu_min < nu_max (got {self.nu_range})")
        self.points: list[Point] = []
        self.stop_reason = "completed"

    # -- the two phases -----------------------------------------------------------------------------------
    def amplitude_phase(self) -> None:
        """Points at the fixed relative amplitudes :data:`AMPLITUDES` (module docstring)."""
        uniform = self.basis.uniform()
        mean = uniform[0] / math.sqrt(self.basis.area)            # the uniform density's value
        largest = float(np.max(np.abs(self.basis.P[:, 1])))      # max |P_1| (at the node nearest the pole)
        guess, nu = uniform.copy(), self.nu_sharp
        for relative in AMPLITUDES:
            coefficient = relative * mean / largest
            if self.points:
                guess = self.points[-1].c * (coefficient / self.points[-1].c[1])
                guess[0] = uniform[0]
                nu = self.points[-1].nu
            else:
                guess[1] = coefficient
            point = newton(self.problem, guess, nu, fixed_amplitude(uniform.size, coefficient))
            if point is None:
                self.stop_reason = f"the fixed-amplitude Newton solve failed at a = {coefficient:.3g}"
                return
            self.points.append(point)

    def arclength_phase(self, max_points: int = MAX_POINTS) -> None:
        """Pseudo-arclength continuation from the last two points (module docstring)."""
        if len(self.points) < 2:
            return
        step = float(np.linalg.norm(self._vector(self.points[-1]) - self._vector(self.points[-2])))
        while len(self.points) < max_points:
            last, before = self._vector(self.points[-1]), self._vector(self.points[-2])
            tangent = (last - before) / np.linalg.norm(last - before)
            predicted = last + step * tangent
            condition = (tangent[:-1], tangent[-1], float(tangent @ predicted))
            point = newton(self.problem, predicted[:-1], predicted[-1], condition)
            if point is None:
                step /= 2
                if step < STEP_FLOOR * max(1.0, float(np.linalg.norm(last))):
                    self.stop_reason = (f"continuation cannot proceed: the corrector failed down to the step floor at "
                                        f"nu = {last[-1]:.6g}")
                    return
                continue
            if self._unresolved(point) and self.basis.lmax < LMAX_MAX:
                self._refine()
                continue
            self.points.append(point)
            reason = self._outside(point)
            if reason is not None:
                self.stop_reason = reason
                return
            if point.steps <= 3:
                step *= STEP_GROWTH
        self.stop_reason = f"the point budget ({max_points}) was spent"

    def _outside(self, point: Point) -> str | None:
        low, high = self.nu_range
        if not low <= point.nu <= high:
            return f"nu left the range [{low:.6g}, {high:.6g}] at nu = {point.nu:.6g}"
        if self._unresolved(point):
            return (f"resolution: the top degree's coefficient is {abs(point.c[-1] / point.c[0]):.2g} of the mean at "
                    f"nu = {point.nu:.6g} with lmax = {self.basis.lmax} (the largest the branch takes: {LMAX_MAX})")
        return None

    @staticmethod
    def _unresolved(point: Point) -> bool:
        return abs(point.c[-1]) > TAIL_TOL * abs(point.c[0])

    def _refine(self) -> None:
        """A basis of ``LMAX_GROWTH`` times the degrees: every point is padded with zeros and re-solved there."""
        lmax = min(LMAX_MAX, int(math.ceil(self.basis.lmax * LMAX_GROWTH)))
        self.basis = SymmetricBasis(lmax, self.model.dim)
        self.problem = StationaryProblem(self.model, self.basis)
        refined = []
        for point in self.points:
            padded = np.zeros(lmax + 1)
            padded[:point.c.size] = point.c
            again = newton(self.problem, padded, point.nu, fixed_amplitude(lmax + 1, padded[1]))
            refined.append(again if again is not None else Point(padded, point.nu, math.nan, 0))
        self.points = refined

    @staticmethod
    def _vector(point: Point) -> np.ndarray:
        return np.append(point.c, point.nu)

    # -- what the branch shows ----------------------------------------------------------------------------
    def curvature(self) -> float:
        """``C`` from the fixed-amplitude points: least squares of ``nu / nu_# - 1`` on ``a^2, a^4, a^6``."""
        fixed = self.points[:AMPLITUDE_POINTS]
        squares = np.array([self.problem.amplitude(p.c) ** 2 for p in fixed])
        change = np.array([p.nu / self.nu_sharp - 1 for p in fixed])
        design = np.column_stack((squares, squares ** 2, squares ** 3))
        return float(np.linalg.lstsq(design, change, rcond=None)[0][0])

    def _nu_at(self, coefficient: float, *near: Point) -> Point | None:
        """The state of degree-1 coefficient ``coefficient``, from the first of the ``near`` points whose Newton
        solve converges (``None`` if none does)."""
        for point in near:
            guess = point.c.copy()
            guess[1] = coefficient
            found = newton(self.problem, guess, point.nu, fixed_amplitude(guess.size, coefficient))
            if found is not None:
                return found
        return None

    def folds(self) -> list[tuple[float, float]]:
        """``(nu, c_1)`` at every fold: where ``nu`` turns back along the branch, refined at fixed amplitude."""
        nus = np.array([p.nu for p in self.points])
        turns = np.nonzero(np.sign(np.diff(nus[:-1])) != np.sign(np.diff(nus[1:])))[0] + 1
        found = []
        for index in turns:
            lo, mid, hi = self.points[index - 1], self.points[index], self.points[index + 1]
            sign = 1.0 if mid.nu > lo.nu else -1.0               # a maximum or a minimum of nu(a)

            def objective(coefficient):
                point = self._nu_at(coefficient, mid, lo, hi)
                return math.inf if point is None else -sign * point.nu

            bounds = sorted((lo.c[1], hi.c[1]))
            result = minimize_scalar(objective, bounds=bounds, method="bounded",
                                     options={"xatol": 1e-12 * max(abs(bounds[1]), 1e-300)})
            found.append((float(-sign * result.fun), float(result.x)))
        return found

    def first_order_point(self, folds) -> float:
        """USA: ``nu_c`` where ``F(branch) = F(uniform)`` on a stable part of the branch (NaN if none): a root of the
        free-energy gap in the amplitude ``c_1``, bracketed by branch points (or a fold, which splits the branch into
        its unstable and stable parts), kept when the state there is stable."""
        if self.model.attention != "usa":
            return math.nan
        gap = np.array([self.free_energy_gap(p) for p in self.points])
        for index in range(len(self.points) - 1):
            if np.sign(gap[index]) == np.sign(gap[index + 1]):
                continue
            ends = (self.points[index + 1], self.points[index])

            def difference(coefficient):
                point = self._nu_at(coefficient, *ends)
                if point is None:
                    raise _Lost
                return self.free_energy_gap(point)

            low, high = self.points[index].c[1], self.points[index + 1].c[1]
            try:
                for _, fold in folds:          # keep the side of the fold where the gap changes sign
                    if min(low, high) < fold < max(low, high):
                        low = fold if np.sign(difference(fold)) != np.sign(gap[index + 1]) else low
                        high = fold if low != fold else high
                coefficient = brentq(difference, low, high, xtol=1e-15, rtol=1e-14)
            except _Lost:                      # a fixed-amplitude solve failed inside the bracket: not located here
                continue
            root = self._nu_at(coefficient, *ends)
            if root is not None and self.problem.eigenvalues(root.c, root.nu, 1)[0].real < 0:
                return float(root.nu)
        return math.nan

    def free_energy_gap(self, point: Point) -> float:
        """``F(state) - F(uniform)`` at the point's ``nu``."""
        return self.problem.free_energy(point.c, point.nu) - self.problem.uniform_free_energy(point.nu)


def stationary_branch(attention: str = "usa", beta: float = 4.0, dim: int = 2, *, lmax: int = 48, nu_range=None,
                      max_points: int = MAX_POINTS, eigenvalues: int = 3) -> xr.Dataset:
    """The branch of stationary states bifurcating from the uniform state at ``nu_#`` (MATH.md §9).

    Parameters
    ----------
    attention : {"sa", "usa"}
        The attention.
    beta : float
        Inverse temperature, ``> 0``.
    dim : int
        Ambient dimension: 2 (the circle: even states), 3 (S^2, zonal states) or more (zonal states on S^{d-1}).
    lmax : int
        Degrees of the symmetric basis (:class:`meanfield.solvers.stationary.SymmetricBasis`).
    nu_range : (float, float), optional
        The noise range the branch is followed in (default ``(0.2, 3) nu_#``); both ends ``> 0``.
    max_points : int
        The point budget of the continuation.
    eigenvalues : int
        How many leading eigenvalues of the linearised PDE to record per point.

    Returns
    -------
    xarray.Dataset
        Per ``point``: ``nu``, ``amplitude`` (the degree-1 amplitude ``a``), ``degree_amplitude(point, degree)``,
        ``residual``, ``free_energy`` and ``free_energy_gap`` (USA; NaN for SA), ``eigenvalue(point, rank)`` (real
        parts, largest first) and ``stable``.  Attributes ``nu_sharp``, ``curvature`` (``C``), ``transition``,
        ``nu_sn`` (the first fold, NaN if none), ``nu_c`` (USA, NaN if none), ``stop_reason`` and the settings.

    Raises
    ------
    meanfield.InputError
        One line naming the parameter.
    """
    started = time.perf_counter()
    model = Model(attention, beta, 0.0, dim)
    require(isinstance(max_points, (int, np.integer)) and max_points >= AMPLITUDE_POINTS + 2,
            f"max_points must be an integer >= {AMPLITUDE_POINTS + 2} (got {max_points!r})")
    branch = Branch(model, lmax, nu_range)
    branch.amplitude_phase()
    branch.arclength_phase(max_points)
    points = branch.points
    require(len(points) >= 2, f"the branch could not be started: {branch.stop_reason}")
    spectra = np.array([branch.problem.eigenvalues(p.c, p.nu, eigenvalues).real for p in points])
    stable = spectra[:, 0] < 0
    folds = branch.folds()
    nu_c = branch.first_order_point(folds)
    usa = attention == "usa"
    free = [branch.problem.free_energy(p.c, p.nu) if usa else math.nan for p in points]
    gaps = [branch.free_energy_gap(p) if usa else math.nan for p in points]
    curvature = branch.curvature()
    return xr.Dataset(
        {"nu": ("point", [p.nu for p in points], {"long_name": "noise of the stationary state"}),
         "amplitude": ("point", [branch.problem.amplitude(p.c) for p in points],
                       {"long_name": "degree-1 amplitude a (circle: rho_hat_1, MATH.md §2.1)"}),
         "degree_amplitude": (("point", "degree"), np.abs([p.c for p in points]),
                              {"long_name": "|c_l|, orthonormal symmetric coefficients"}),
         "residual": ("point", [p.residual for p in points], {"long_name": "|c - F(c, nu)| (spectral norm)"}),
         "free_energy": ("point", free, {"long_name": "F = nu int rho log rho - E (USA, MATH.md §9)"}),
         "free_energy_gap": ("point", gaps, {"long_name": "F(state) - F(uniform) at the same nu"}),
         "eigenvalue": (("point", "rank"), spectra,
                        {"long_name": "largest real parts of the linearised PDE's eigenvalues"}),
         "stable": ("point", stable.astype(np.int8))},
        coords={"point": np.arange(len(points)), "degree": branch.basis.degrees, "rank": np.arange(eigenvalues)},
        attrs=run_attrs({"attention": attention, "beta": float(beta), "dim": int(dim), "lmax": int(branch.basis.lmax)},
                        "circle" if dim == 2 else "zonal",
                        f"meanfield.stationary_branch({attention!r}, {float(beta)!r}, {int(dim)}, lmax={lmax!r}, "
                        f"nu_range={nu_range!r}, max_points={max_points!r}, eigenvalues={eigenvalues!r})",
                        stop_reason=branch.stop_reason, wall_time=time.perf_counter() - started,
                        nu_sharp=branch.nu_sharp, curvature=curvature,
                        transition="continuous" if curvature < 0 else "first-order",
                        nu_sn=folds[0][0] if folds else math.nan, nu_c=nu_c))


# ------------------------------------------------------------------------------------------------ tricritical
def curvature(attention: str, beta: float, dim: int, lmax: int = 32) -> float:
    """The branch curvature ``C`` at ``beta`` (the fixed-amplitude phase's first two points)."""
    branch = Branch(Model(attention, beta, 0.0, dim), lmax)
    branch.amplitude_phase()
    require(len(branch.points) == AMPLITUDE_POINTS,
            f"the branch could not be started at beta = {beta:g}: {branch.stop_reason}")
    return branch.curvature()


def bessel_root(dim: int) -> float:
    """The ``beta`` where ``I_{d/2+1}(beta) / I_{d/2}(beta) = 1 / d`` (MATH.md §9: USA is subcritical above it)."""
    ratio = lambda beta: ive(dim / 2 + 1, beta) / ive(dim / 2, beta) - 1.0 / dim
    return float(brentq(ratio, 1e-3, 50.0, xtol=1e-14, rtol=1e-15))


def tricritical_beta(dim: int, attention: str = "usa", bracket=(0.5, 6.0), xtol: float = 1e-9) -> float:
    """The ``beta`` where the branch's curvature ``C`` changes sign, by bisection (MATH.md §9)."""
    low, high = bracket
    c_low, c_high = curvature(attention, low, dim), curvature(attention, high, dim)
    require(c_low * c_high < 0, f"the curvature has one sign on beta in [{low:g}, {high:g}] ({c_low:.3g}, {c_high:.3g}): "
                                f"no tricritical point there")
    while high - low > xtol:
        middle = 0.5 * (low + high)
        c_middle = curvature(attention, middle, dim)
        if np.sign(c_middle) == np.sign(c_low):
            low, c_low = middle, c_middle
        else:
            high = middle
    return 0.5 * (low + high)
