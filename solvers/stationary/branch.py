"""The branches of stationary states that leave the uniform state (MATH.md §9), by continuation in the amplitude.

The branch of mode ``k`` leaves the uniform state at ``nu_#^(k)`` (:func:`meanfield.onset_theory.onset_noise`) among
the states with that degree's symmetry (:class:`meanfield.solvers.stationary.stationary.SymmetricBasis`).  Its parameter is
the mode's coefficient ``c_k`` (the amplitude ``a``): every point is solved at fixed ``c_k`` with ``nu`` an unknown
(:func:`meanfield.solvers.stationary.stationary.fixed_amplitude`), so the corrector cannot reach the uniform state, where
``c_k = 0``, and the folds of ``nu`` are regular points of the parametrisation.  (A pseudo-arclength corrector in
``(c, nu)``, used before, converged onto the uniform state at the fold above ``beta ~ 5`` and followed it: no fold,
and a spurious ``nu_c``.)

1. **Onset.** Points at the relative amplitudes :data:`AMPLITUDES` (the mode's term's largest value over the mean),
   whose ``nu(a)`` gives the onset coefficient by least squares: ``C`` of ``nu / nu_# - 1 = C a^2 + D a^4 + E a^6``
   (pitchfork) or ``B`` of ``B a + D a^2 + E a^3`` (transcritical), against
   :func:`meanfield.onset_theory.onset_coefficient`.
2. **Continuation.** Steps in ``a`` from the last point with the secant predictor in ``(c, nu)``; a step whose
   corrector fails, or lands farther from the predicted state than :data:`JUMP` times the predictor's own step (in
   ``(c, nu)``: another solution at the same amplitude), or changes ``nu`` by more than :data:`MAX_NU_CHANGE` of
   itself (the sharp states, where ``nu(a)`` is steep), is halved; a quick one grows.  The basis grows when the top
   degree's coefficient exceeds :data:`TAIL_TOL` of the mean.  The run stops with a reason in ``stop_reason``,
   keeping every point found: ``nu`` left the range, the basis reached :data:`LMAX_MAX`, the point budget, or the
   step fell below its floor (the point it could not place is named, never replaced by another solution).
3. **Folds** ``nu_sn`` (where ``nu(a)`` turns) are roots of ``dnu/da``, each value from the bordered system
   (:func:`meanfield.solvers.stationary.stationary.amplitude_tangent`) at a fixed-amplitude point, by Brent's method between the
   branch points that bracket the turn: ``nu_sn`` to rounding (it is quadratic in the error of ``a``).
4. **First-order point** (USA) ``nu_c``: where the branch's free energy equals the uniform state's, a root in ``a``
   of ``F - F_uniform`` on a part of the branch whose states are stable (the root's own spectrum is checked).

``transition`` is ``continuous`` (``C < 0``: the branch exists below ``nu_#``), ``first-order`` (``C > 0``) or
``transcritical``.  :func:`tricritical_beta` is the ``beta`` where the mode-1 ``C`` changes sign (bisection), against
the Bessel-ratio root of MATH.md §9 (:func:`bessel_root`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import ive

from meanfield.errors import require
from meanfield.model import Model
from meanfield.onset_theory import PITCHFORK, TRANSCRITICAL, bifurcation_kind, onset_coefficient, onset_noise

from .stationary import (Point, StationaryProblem, SymmetricBasis, amplitude_tangent, fixed_amplitude, newton,
                         resolved_stable)

#: The relative amplitudes (the mode's term's largest value over the mean) of the onset phase.
AMPLITUDES = (0.005, 0.01, 0.015, 0.02, 0.025, 0.03)
AMPLITUDE_POINTS = len(AMPLITUDES)
#: Continuation: step growth, floor (relative to the amplitude), point budget.
STEP_GROWTH, STEP_FLOOR, MAX_POINTS = 1.5, 1e-9, 400
#: A corrected point farther from the predicted state than this many times the predictor's step is another solution
#: at that amplitude: the step is halved.
JUMP = 4.0
#: The basis grows (by LMAX_GROWTH, up to LMAX_MAX) when the top degree's coefficient exceeds this fraction of the
#: mean's; the branch stops at LMAX_MAX.
TAIL_TOL = 1e-11
LMAX_GROWTH, LMAX_MAX = 1.5, 192
#: Default noise range of a branch, in units of its ``nu_#^(k)``.
NU_RANGE = (0.2, 3.0)
#: The largest relative change of ``nu`` from one point to the next (a longer step is halved).
MAX_NU_CHANGE = 0.05
#: No accepted point but the onset's may have an amplitude below this (relative to the mean): the uniform state.
UNIFORM_AMPLITUDE = 1e-8


class _Lost(Exception):
    """A fixed-amplitude solve failed while a fold or ``nu_c`` was being refined."""


class Branch:
    """The branch of mode ``mode`` being followed (the ``sign`` of its amplitude: both halves of a transcritical
    branch are branches of their own): the problem, the points found, and how it stopped."""

    def __init__(self, model: Model, lmax: int = 48, nu_range=None, mode: int = 1, sign: float = 1.0):
        require(model.dim >= 2, f"--dim must be >= 2 (got {model.dim})")
        require(sign in (1.0, -1.0, 1, -1), f"the branch's sign must be +1 or -1 (got {sign!r})")
        self.model, self.mode, self.sign = model, int(mode), float(sign)
        self.basis = SymmetricBasis(lmax, model.dim, mode=self.mode)
        self.problem = StationaryProblem(model, self.basis)
        self.index = self.basis.mode_index
        self.kind = bifurcation_kind(model.dim, self.mode)
        self.nu_sharp = onset_noise(model, self.mode)
        low, high = (NU_RANGE if nu_range is None else nu_range)
        self.nu_range = (low * self.nu_sharp, high * self.nu_sharp) if nu_range is None else (float(low), float(high))
        require(self.nu_range[0] > 0 and self.nu_range[1] > self.nu_range[0],
                f"the noise range of a branch must be 0 < nu_min < nu_max (got {self.nu_range})")
        self.points: list[Point] = []
        self.stop_reason = "completed"

    @property
    def mean(self) -> float:
        """The uniform density's value (the scale of amplitudes)."""
        return self.basis.uniform()[0] / math.sqrt(self.basis.area)

    # -- the two phases -----------------------------------------------------------------------------------
    def amplitude_phase(self) -> None:
        """Points at the fixed relative amplitudes :data:`AMPLITUDES` (module docstring)."""
        uniform = self.basis.uniform()
        largest = float(np.max(np.abs(self.basis.P[:, self.index])))   # max |P_k| over the nodes
        guess, nu = uniform.copy(), self.nu_sharp
        for relative in AMPLITUDES:
            coefficient = self.sign * relative * self.mean / largest
            if self.points:
                guess = self.points[-1].c * (coefficient / self.points[-1].c[self.index])
                guess[0] = uniform[0]
                nu = self.points[-1].nu
            else:
                guess[self.index] = coefficient
            point = newton(self.problem, guess, nu, fixed_amplitude(uniform.size, coefficient, self.index))
            if point is None:
                self.stop_reason = f"the fixed-amplitude Newton solve failed at c_{self.mode} = {coefficient:.3g}"
                return
            self.points.append(point)

    def continuation_phase(self, max_points: int = MAX_POINTS) -> None:
        """Continuation in the amplitude from the last two points (module docstring, item 2)."""
        if len(self.points) < 2:
            return
        step = self.points[-1].c[self.index] - self.points[-2].c[self.index]
        while len(self.points) < max_points:
            last, before = self.points[-1], self.points[-2]
            coefficient = last.c[self.index] + step
            fraction = step / (last.c[self.index] - before.c[self.index])
            guess_c = last.c + fraction * (last.c - before.c)
            guess_nu = last.nu + fraction * (last.nu - before.nu)
            point = newton(self.problem, guess_c, guess_nu, fixed_amplitude(last.c.size, coefficient, self.index))
            if point is not None and self._distance(point.c, point.nu, guess_c, guess_nu) > JUMP * self._distance(
                    guess_c, guess_nu, last.c, last.nu):
                point = None                                   # another solution at this amplitude: not this branch
            if point is not None and abs(point.nu - last.nu) > MAX_NU_CHANGE * last.nu:
                point = None                                   # too coarse in nu (a sharp state: nu(a) is steep)
            if point is None:
                step /= 2
                if abs(step) < STEP_FLOOR * abs(last.c[self.index]):
                    self.stop_reason = (f"continuation cannot proceed: no point of this branch found at "
                                        f"c_{self.mode} = {coefficient:.10g} (from nu = {last.nu:.10g}) down to the "
                                        f"step floor")
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

    def _distance(self, c, nu, other_c, other_nu) -> float:
        """The distance of two states in ``(c, nu)``, ``nu`` in units of ``nu_#^(k) / c_0`` (both terms O(1))."""
        return math.hypot(float(np.linalg.norm(c - other_c)),
                          (nu - other_nu) / self.nu_sharp * abs(self.basis.uniform()[0]))

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
        self.basis = SymmetricBasis(lmax, self.model.dim, mode=self.mode)
        self.problem = StationaryProblem(self.model, self.basis)
        refined = []
        for point in self.points:
            padded = np.zeros(lmax + 1)
            padded[:point.c.size] = point.c
            again = newton(self.problem, padded, point.nu, fixed_amplitude(lmax + 1, padded[self.index], self.index))
            refined.append(again if again is not None else Point(padded, point.nu, math.nan, 0))
        self.points = refined

    # -- what the branch shows ----------------------------------------------------------------------------
    def onset_fit(self) -> float:
        """``C`` (pitchfork) or ``B`` (transcritical) from the onset points by least squares (module docstring)."""
        fixed = self.points[:AMPLITUDE_POINTS]
        a = np.array([self.problem.amplitude(p.c) for p in fixed])
        change = np.array([p.nu / self.nu_sharp - 1 for p in fixed])
        powers = (1, 2, 3) if self.kind == TRANSCRITICAL else (2, 4, 6)
        design = np.column_stack([a ** power for power in powers])
        return float(np.linalg.lstsq(design, change, rcond=None)[0][0])

    def curvature(self) -> float:
        """``C`` of a pitchfork branch (NaN for a transcritical one)."""
        return self.onset_fit() if self.kind == PITCHFORK else math.nan

    def state_at(self, coefficient: float, *near: Point) -> Point | None:
        """The state of mode coefficient ``coefficient``, from the first of the ``near`` points whose Newton solve
        converges (``None`` if none does)."""
        for point in near:
            guess = point.c.copy()
            guess[self.index] = coefficient
            found = newton(self.problem, guess, point.nu, fixed_amplitude(guess.size, coefficient, self.index))
            if found is not None:
                return found
        return None

    def folds(self) -> list[tuple[float, float]]:
        """``(nu, c_k)`` at every fold: a root of ``dnu/da`` (module docstring, item 3)."""
        nus = np.array([p.nu for p in self.points])
        turns = np.nonzero(np.sign(np.diff(nus[:-1])) != np.sign(np.diff(nus[1:])))[0] + 1
        found = []
        for index in turns:
            lo, mid, hi = self.points[index - 1], self.points[index], self.points[index + 1]

            def slope(coefficient):
                point = self.state_at(coefficient, mid, lo, hi)
                if point is None:
                    raise _Lost
                return amplitude_tangent(self.problem, point, self.index)[1]

            try:
                low, high = lo.c[self.index], hi.c[self.index]
                if np.sign(slope(low)) == np.sign(slope(high)):
                    continue                                   # not a simple turn between these points
                coefficient = brentq(slope, low, high, xtol=1e-15 * abs(mid.c[self.index]), rtol=1e-15)
            except _Lost:
                continue
            point = self.state_at(coefficient, mid, lo, hi)
            if point is not None:
                found.append((float(point.nu), float(coefficient)))
        return found

    def first_order_point(self, folds) -> float:
        """USA: ``nu_c`` where ``F(branch) = F(uniform)`` on a stable part of the branch (NaN if none): a root of the
        free-energy gap in the amplitude, bracketed by branch points (or a fold, which splits the branch into its
        unstable and stable parts), kept when the state there is stable."""
        if not self.model.has_free_energy:
            return math.nan
        gap = np.array([self.free_energy_gap(p) for p in self.points])
        for index in range(len(self.points) - 1):
            if np.sign(gap[index]) == np.sign(gap[index + 1]):
                continue
            ends = (self.points[index + 1], self.points[index])

            def difference(coefficient):
                point = self.state_at(coefficient, *ends)
                if point is None:
                    raise _Lost
                return self.free_energy_gap(point)

            low, high = self.points[index].c[self.index], self.points[index + 1].c[self.index]
            try:
                for _, fold in folds:          # keep the side of the fold where the gap changes sign
                    if min(low, high) < fold < max(low, high):
                        low = fold if np.sign(difference(fold)) != np.sign(gap[index + 1]) else low
                        high = fold if low != fold else high
                coefficient = brentq(difference, low, high, xtol=1e-15, rtol=1e-14)
            except _Lost:                      # a fixed-amplitude solve failed inside the bracket: not located here
                continue
            root = self.state_at(coefficient, *ends)
            if (root is not None and abs(root.c[self.index]) > UNIFORM_AMPLITUDE * self.mean
                    and self.problem.is_stable(root.c, root.nu)):
                return float(root.nu)
        return math.nan

    def free_energy_gap(self, point: Point) -> float:
        """``F(state) - F(uniform)`` at the point's ``nu``."""
        return self.problem.free_energy(point.c, point.nu) - self.problem.uniform_free_energy(point.nu)


@dataclass(frozen=True)
class BranchTable:
    """A followed branch as arrays (:func:`follow_branch`): what :func:`stationary_branch`'s Dataset holds, readable
    without building it (``table["nu"]``, ``table.attrs``: the branch's own attributes; :meth:`dataset`)."""

    variables: dict                 # name -> (dims, values[, attrs]) as the Dataset takes them
    coords: dict
    settings: dict
    geometry: str
    command: str
    attrs: dict

    def __getitem__(self, name: str) -> np.ndarray:
        return np.asarray(self.variables[name][1])

    @property
    def points(self) -> int:
        return len(self.variables["nu"][1])

    def dataset(self):
        """The xarray Dataset of :func:`stationary_branch` (with the run attributes of every meanfield result)."""
        import xarray as xr

        from ..records.run_record import run_attrs

        return xr.Dataset(self.variables, coords=self.coords,
                          attrs=run_attrs(self.settings, self.geometry, self.command, **self.attrs))


def stationary_branch(attention: str = "usa", beta: float = 4.0, dim: int = 2, *, mode: int = 1, sign: float = 1.0,
                      lmax: int = 48, nu_range=None, max_points: int = MAX_POINTS, eigenvalues: int = 3):
    """The branch of stationary states bifurcating from the uniform state through degree ``mode`` (MATH.md §9).

    Parameters
    ----------
    attention : {"sa", "usa"}
        The attention.
    beta : float
        Inverse temperature, ``> 0``.
    dim : int
        Ambient dimension: 2 (the circle: even states), 3 (S^2, zonal states) or more (zonal states on S^{d-1}).
    mode : int
        The degree the branch leaves the uniform state through (1: the one-cluster branch; on the circle ``k``: the
        ``k``-cluster states, ``2 pi / k``-periodic).
    sign : {1, -1}
        The sign of the branch's amplitude (the two halves of a transcritical branch differ: on S^2, degree 2, ``+``
        is two antipodal clusters, ``-`` a ring; the halves of a pitchfork are one branch turned).
    lmax : int
        Coefficients of the symmetric basis (:class:`meanfield.solvers.stationary.stationary.SymmetricBasis`).
    nu_range : (float, float), optional
        The noise range the branch is followed in (default ``(0.2, 3) nu_#^(k)``); both ends ``> 0``.
    max_points : int
        The point budget of the continuation.
    eigenvalues : int
        How many leading eigenvalues of the linearised PDE to record per point.

    Returns
    -------
    xarray.Dataset
        (:func:`follow_branch` gives the same as a :class:`BranchTable`, without xarray.)  Per ``point``: ``nu``, ``amplitude`` (the mode's amplitude ``a``), ``degree_amplitude(point, degree)``,
        ``residual``, ``free_energy`` and ``free_energy_gap`` (USA; NaN for SA), ``eigenvalue(point, rank)`` (real
        parts, largest first; beyond the branch's symmetry: every perturbation on the circle, every zonal one on
        S^{d-1}) and ``stable``.  Attributes
        ``mode``, ``sign``, ``nu_sharp`` (``nu_#^(k)``), ``bifurcation`` (pitchfork or transcritical),
        ``onset_coefficient`` (``C`` or ``B``, fitted) and ``onset_theory`` (the weakly nonlinear one),
        ``curvature`` (``C``; NaN for a transcritical branch), ``transition`` (continuous, first-order or
        transcritical), ``branch_type`` (supercritical, subcritical or transcritical), ``folds`` (every fold's ``nu``),
        ``nu_sn`` (the first fold, NaN if none), ``nu_c`` (USA, NaN if none), ``stop_reason`` and the settings.

    Raises
    ------
    meanfield.InputError
        One line naming the parameter.
    """
    return follow_branch(attention, beta, dim, mode=mode, sign=sign, lmax=lmax, nu_range=nu_range,
                         max_points=max_points, eigenvalues=eigenvalues).dataset()


def follow_branch(attention: str = "usa", beta: float = 4.0, dim: int = 2, *, mode: int = 1, sign: float = 1.0,
                  lmax: int = 48, nu_range=None, max_points: int = MAX_POINTS, eigenvalues: int = 3) -> BranchTable:
    """:func:`stationary_branch`'s branch as a :class:`BranchTable` (the same parameters and values)."""
    started = time.perf_counter()
    model = Model(attention, beta, 0.0, dim)
    require(isinstance(max_points, (int, np.integer)) and max_points >= AMPLITUDE_POINTS + 2,
            f"max_points must be an integer >= {AMPLITUDE_POINTS + 2} (got {max_points!r})")
    branch = Branch(model, lmax, nu_range, mode=mode, sign=sign)
    branch.amplitude_phase()
    branch.continuation_phase(max_points)
    points = branch.points
    require(len(points) >= 2, f"the branch could not be started: {branch.stop_reason}")
    leading = [branch.problem.eigenvalues(p.c, p.nu, max(eigenvalues, 4)) for p in points]
    spectra = np.array([values[:eigenvalues].real for values in leading])
    stable = np.array([resolved_stable(values) for values in leading], dtype=bool)
    folds = branch.folds()
    nu_c = branch.first_order_point(folds)
    usa = model.has_free_energy
    free = [branch.problem.free_energy(p.c, p.nu) if usa else math.nan for p in points]
    gaps = [branch.free_energy_gap(p) if usa else math.nan for p in points]
    fitted = branch.onset_fit()
    transition = ("transcritical" if branch.kind == TRANSCRITICAL else "continuous" if fitted < 0 else "first-order")
    branch_type = ("transcritical" if branch.kind == TRANSCRITICAL else "supercritical" if fitted < 0
                   else "subcritical")
    return BranchTable(
        {"nu": ("point", [p.nu for p in points], {"long_name": "noise of the stationary state"}),
         "amplitude": ("point", [branch.problem.amplitude(p.c) for p in points],
                       {"long_name": f"degree-{branch.mode} amplitude a (circle: rho_hat_{branch.mode}, MATH.md §2.1)"}),
         "degree_amplitude": (("point", "degree"), np.abs([p.c for p in points]),
                              {"long_name": "|c_l|, orthonormal symmetric coefficients"}),
         "residual": ("point", [p.residual for p in points], {"long_name": "|c - F(c, nu)| (spectral norm)"}),
         "free_energy": ("point", free, {"long_name": "F = nu int rho log rho - E (USA, MATH.md §9)"}),
         "free_energy_gap": ("point", gaps, {"long_name": "F(state) - F(uniform) at the same nu"}),
         "eigenvalue": (("point", "rank"), spectra,
                        {"long_name": "largest real parts of the linearised PDE's eigenvalues"}),
         "stable": ("point", stable.astype(np.int8))},
        {"point": np.arange(len(points)), "degree": branch.basis.degrees, "rank": np.arange(eigenvalues)},
        {"attention": attention, "beta": float(beta), "dim": int(dim), "lmax": int(branch.basis.lmax)},
        "circle" if dim == 2 else "zonal",
        f"meanfield.stationary_branch({attention!r}, {float(beta)!r}, {int(dim)}, mode={int(mode)}, "
        f"sign={float(sign)!r}, lmax={lmax!r}, nu_range={nu_range!r}, max_points={max_points!r}, "
        f"eigenvalues={eigenvalues!r})",
        dict(stop_reason=branch.stop_reason, wall_time=time.perf_counter() - started,
             mode=int(mode), sign=float(sign), nu_sharp=branch.nu_sharp, bifurcation=branch.kind,
             onset_coefficient=fitted, onset_theory=onset_coefficient(model, mode),
             curvature=branch.curvature(), transition=transition, branch_type=branch_type,
             folds=np.array([nu for nu, _ in folds], dtype=float),
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
