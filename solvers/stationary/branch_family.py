"""Every mode's branch of stationary states and the state of least free energy (MATH.md §9).

:func:`stationary_branches` follows the branch of each degree ``k = 1 .. K`` (:func:`meanfield.solvers.stationary.branch.
stationary_branch`; both halves of a transcritical branch, ``+`` and ``-``).  On the circle the branch of mode ``k``
holds the ``k``-cluster states, ``2 pi / k``-periodic, where the metastable staircase of MATH.md §5 meets the noise.

:func:`free_energy_minimiser` (USA, whose stationary states are the critical points of
``F = nu int rho log rho - E``): at each ``nu`` the state of least ``F`` among the uniform state and the stable
points of every branch (stable as the branch records it: on S^{d-1} among zonal densities), as intervals of ``nu`` with the state that wins there.  Each branch's free-energy gap
``F - F_uniform`` is interpolated linearly in ``nu`` along its stable parts (where ``nu`` is monotone; its ``nu_c`` a
node, where the gap is 0) on a grid of :data:`GRID` noises from the lowest ``nu`` every branch was followed to, so a
change of the winner is located to the grid's spacing (``nu_c`` itself to that spacing, being a node).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.errors import require
from meanfield.limits import MAX_BRANCH_MODES
from meanfield.onset_theory import TRANSCRITICAL, bifurcation_kind

from .branch import BranchTable, follow_branch

#: Noises at which the minimiser is compared (log-spaced over the branches' range).
GRID = 2000


def branch_label(mode: int, sign: float) -> str:
    """``mode 2`` (a pitchfork), ``mode 2+`` / ``mode 2-`` (the halves of a transcritical branch)."""
    return f"mode {mode}" if sign == 0 else f"mode {mode}{'+' if sign > 0 else '-'}"


def stationary_branches(attention: str, beta: float, dim: int, modes: int, **options) -> dict:
    """The branches of modes ``1 .. modes`` (module docstring) as xarray Datasets, by :func:`branch_label`;
    ``options`` go to each :func:`meanfield.solvers.stationary.branch.stationary_branch`."""
    return {label: table.dataset() for label, table in branch_tables(attention, beta, dim, modes, **options).items()}


def branch_tables(attention: str, beta: float, dim: int, modes: int, **options) -> dict[str, BranchTable]:
    """:func:`stationary_branches` as :class:`meanfield.solvers.stationary.branch.BranchTable` (no xarray)."""
    require(isinstance(modes, (int, np.integer)) and 1 <= modes <= MAX_BRANCH_MODES,
            f"--modes must be an integer in [1, {MAX_BRANCH_MODES}] for the branches (got {modes!r})")
    family = {}
    for mode in range(1, int(modes) + 1):
        if bifurcation_kind(dim, mode) == TRANSCRITICAL:
            for sign in (1.0, -1.0):
                family[branch_label(mode, sign)] = follow_branch(attention, beta, dim, mode=mode, sign=sign, **options)
        else:
            family[branch_label(mode, 0)] = follow_branch(attention, beta, dim, mode=mode, **options)
    return family


def _stable_segments(ds):
    """``(nu, gap)`` of each run of stable points along which ``nu`` is monotone, sorted by ``nu``; the branch's
    ``nu_c`` (a zero of the gap) is a node of the segment that holds it."""
    nu, gap, stable = np.asarray(ds["nu"]), np.asarray(ds["free_energy_gap"]), np.asarray(ds["stable"]).astype(bool)
    segments, start = [], None
    for index in range(nu.size + 1):
        inside = index < nu.size and stable[index]
        if inside and start is not None and index - start >= 2 and (
                np.sign(nu[index] - nu[index - 1]) != np.sign(nu[index - 1] - nu[index - 2])):
            segments.append((start, index))
            start = index - 1
        if inside and start is None:
            start = index
        if not inside and start is not None:
            segments.append((start, index))
            start = None
    out, nu_c = [], ds.attrs.get("nu_c", math.nan)
    for first, last in segments:
        if last - first >= 2:
            nus, gaps = nu[first:last], gap[first:last]
            if math.isfinite(nu_c) and nus.min() < nu_c < nus.max():
                nus, gaps = np.append(nus, nu_c), np.append(gaps, 0.0)
            order = np.argsort(nus)
            out.append((nus[order], gaps[order]))
    return out


def free_energy_minimiser(family: dict) -> list[dict]:
    """USA: the intervals of ``nu`` (``low``, ``high``) and the ``state`` of least free energy in each (``uniform``
    or a branch's label), over the range the branches span (module docstring).  Empty for SA (no free energy).
    ``family``: :func:`stationary_branches`' Datasets or :func:`branch_tables`' tables."""
    if not any(np.isfinite(np.asarray(ds["free_energy_gap"])).any() for ds in family.values()):
        return []                                                # no free energy (SA records NaN)
    low = max(float(np.min(ds["nu"])) for ds in family.values())    # where every branch has been followed
    high = max(float(np.max(ds["nu"])) for ds in family.values())
    grid = np.geomspace(low, high, GRID)
    best_gap, best = np.zeros(grid.size), np.full(grid.size, "uniform", dtype=object)
    for label, ds in family.items():
        for nu, gap in _stable_segments(ds):
            inside = (grid >= nu[0]) & (grid <= nu[-1])
            values = np.interp(grid[inside], nu, gap)
            better = values < best_gap[inside]
            best_gap[np.flatnonzero(inside)[better]] = values[better]
            best[np.flatnonzero(inside)[better]] = label
    intervals = []
    start = 0
    for index in range(1, grid.size + 1):
        if index == grid.size or best[index] != best[start]:
            intervals.append({"low": float(grid[start]), "high": float(grid[index - 1]), "state": str(best[start])})
            start = index
    return intervals
