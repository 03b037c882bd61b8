"""Time evolution checks of a branch's folds and first-order point (MATH.md §9; ``theory --branch --verify``).

A fold ``nu_sn`` of a subcritical branch is where its stable clustered states end: just below it a state starting
at the fold state climbs to the stable state nearby (the normal form ``da/dt ~ mu - (a - a_sn)^2`` with ``mu > 0``),
just above it nothing holds it and it decays to the uniform state after a bottleneck of duration
``~ pi / sqrt(|mu|)``.  :func:`check_fold` starts the PDE (the ordinary solver of the geometry, with noise) from the
fold state at ``nu_sn (1 - below)`` and ``nu_sn (1 + above)`` and reports which way each run goes (the circle's
spectral scheme, the zonal Galerkin scheme on S^{d-1}, both with ``etdrk4``: about 5 s a run of ``t = 200`` at
``beta = 5`` on the circle, 40 s on S^2, where the steps are bounded by the transport near the poles), by the branch's
mode amplitude at the end against the fold state's: ``clustered`` (at least :data:`KEPT` of it), ``uniform`` (at
most :data:`GONE` of it) or ``undecided``.  :func:`check_stable_state` does the same for the branch's state at
``nu_c``, which is a stable stationary state there (the first-order point is an equality of free energies, not a
change of stability, so the state must stay where it is).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.errors import require

from .branch import Branch
from ..runs.solve import solve
from .stationary import fixed_nu, newton

#: A run is ``clustered`` when its mode amplitude ends at least this fraction of the start's ...
KEPT = 0.5
#: ... and ``uniform`` when it ends at most this fraction of it.
GONE = 1e-3
#: Relative offsets of the noise below and above the fold (``theory --branch --verify``).
BELOW, ABOVE = 1e-3, 1e-2
#: Time of each run.
T_FINAL = 200.0
#: The runs' CFL number (``etdrk4``: the noise is exact, the step follows the transport): at circle beta = 5 the
#: runs at 0.5, 1 and 2 end at the same amplitudes to 1e-8 relative; 1 is half the largest tried.
CFL = 1.0
#: The runs resolve the state's degrees down to this fraction of its mean (circle: 4 points per degree; zonal: twice
#: the degrees): far below what decides the outcome, and above the stationary basis' own floor at high degrees (its
#: analysis of a constant leaves 3e-12 at degree 192 on S^2).
BAND_TOL = 1e-10


def _evolve(branch: Branch, c, nu: float, t_final: float) -> tuple[float, float]:
    """The mode amplitude of the state ``c`` (branch coefficients) at the start and after ``t_final`` of the PDE at
    noise ``nu``."""
    model, basis = branch.model, branch.basis
    density = lambda angles: np.maximum(basis.density_at(c, angles), 0.0)    # noqa: E731  (series rounding)
    significant = basis.degrees[abs(c) > BAND_TOL * abs(c[0])]
    band = int(significant.max()) if significant.size else 1                   # the state's own band
    common = dict(attention=model.attention, beta=model.beta, nu=nu, init=density, t_final=t_final,
                  save_every=t_final, stepper="etdrk4", cfl=CFL)
    if model.dim == 2:
        run = solve("circle", resolution=max(64, 4 * (band + 1)), **common)
    else:
        run = solve("zonal", dim=model.dim, resolution=max(32, 2 * band), **common)
    require(run.attrs["stop_reason"] == "completed",
            f"the check's run at nu = {nu:.10g} stopped: {run.attrs['stop_reason']}")
    amplitude = run["mode_amplitude"].sel(mode=branch.mode).values
    return float(amplitude[0]), float(amplitude[-1])


def _outcome(start: float, end: float) -> str:
    if end >= KEPT * start:
        return "clustered"
    return "uniform" if end <= GONE * start else "undecided"


def check_fold(branch: Branch, fold_coefficient: float, nu_sn: float, *, below: float = BELOW, above: float = ABOVE,
               t_final: float = T_FINAL) -> dict:
    """Runs from the fold state at ``nu_sn (1 - below)`` and ``nu_sn (1 + above)`` (module docstring): for each side
    its ``nu``, ``outcome`` and the amplitudes ``start`` and ``end``; ``agrees`` when below stays clustered and above
    decays to uniform."""
    point = branch.state_at(fold_coefficient, *sorted(branch.points, key=lambda p: abs(p.nu - nu_sn))[:3])
    require(point is not None, f"the fold state at nu = {nu_sn:.10g} could not be solved again")
    sides = {}
    for side, nu in (("below", nu_sn * (1 - below)), ("above", nu_sn * (1 + above))):
        start, end = _evolve(branch, point.c, nu, t_final)
        sides[side] = {"nu": nu, "outcome": _outcome(start, end), "start": start, "end": end}
    sides["agrees"] = sides["below"]["outcome"] == "clustered" and sides["above"]["outcome"] == "uniform"
    sides["t_final"] = t_final
    return sides


def check_stable_state(branch: Branch, nu: float, *, t_final: float = T_FINAL) -> dict:
    """The branch's stable state at ``nu`` (e.g. ``nu_c``) run for ``t_final``: ``outcome`` and the relative change of
    its mode amplitude (``drift``); ``agrees`` when it stays clustered."""
    stable = [p for p in branch.points if branch.problem.is_stable(p.c, p.nu)]
    require(bool(stable), "the branch has no stable point to start from")
    near = min(stable, key=lambda p: abs(p.nu - nu))
    point = newton(branch.problem, near.c, nu, fixed_nu(near.c.size, nu))
    require(point is not None and abs(point.c[branch.index]) > 0, f"no stable state found at nu = {nu:.10g}")
    start, end = _evolve(branch, point.c, nu, t_final)
    return {"nu": nu, "outcome": _outcome(start, end), "start": start, "end": end,
            "drift": abs(end - start) / start if start else math.nan, "agrees": _outcome(start, end) == "clustered",
            "t_final": t_final}
