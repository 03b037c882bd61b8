"""Clusters handed over from a finite-volume grid to weighted points (MATH.md §5; docs/staircase.md).

Without noise a weighted Dirac mass is an exact weak solution of the PDE that moves with the
velocity of the whole state at its position (MATH.md §5).  A finite-volume grid cannot carry one:
once a cluster has shrunk to a cell or two, the face velocities on both sides of it point inward
(its self-attraction, of order the cell width times the contraction rate) and exceed its drift, so
the upwind flux never moves it out of its cell and the cluster is pinned.  The finite-volume schemes
(:mod:`meanfield.solvers.schemes.finite_volume`) therefore hand such a cluster over to a *point*: the grid carries the
rest of the mass and feels the points in its face velocities, the points move with the velocity of
grid plus points.  This module is the bookkeeping on a 1-D grid (circle: angles, periodic; zonal:
polar angles in ``[0, pi]``, a point being a ring, or a point at a pole).

Hand-over (:meth:`PointClusters.hand_over`, after every accepted step).  For every cell ``i`` take the
window of cells ``i - 2 .. i + 2`` (cut at the poles) with masses ``V_j rho_j`` at the cell centroids
``c_j``; its mass ``M``, centroid and standard deviation ``s``.  The window becomes a point of mass ``M``
at its centroid when ``rho_i`` is a local maximum, ``s <= HANDOVER_WIDTH`` cells and
``M >= HANDOVER_MIN_MASS`` x the total mass: the cluster's core is narrower than about a cell, i.e. no
longer resolved, but still spread over a few cells, so its centroid is still the cluster's (it is pinned
soon after: measured on the circle, SA, beta = 9, the fv centroid is within 3e-4 rad of an accurate
Lagrangian run while ``s >= 1.2`` cells and drifts away as ``s`` falls below one cell).  At a pole
(zonal, ``i`` the first or last cell) the point sits at the pole and ``s`` is the root-mean-square
distance from it divided by ``sqrt(d - 1)`` (a cap of width ``w`` has that rms ``w sqrt(d - 1)``).
Windows within three cells of an existing point's cell are left alone: that mass flows into the point.

Owned cells and inflow.  Each point owns the cell that holds it (two points in one cell: the heavier);
an owned cell's average is kept at exactly 0 and whatever the upwind flux brings into it goes to the
point: ``dm_a/dt = F_{c-1/2} - F_{c+1/2}`` and, keeping the centroid of point plus arrived mass,
``dy_a/dt = v(y_a) + (F_{c-1/2} (x_{c-1/2} - y_a) - F_{c+1/2} (x_{c+1/2} - y_a)) / m_a``.  Mass is then
exact in total (the same flux numbers leave the grid and enter the point).  A point that moves into a
new cell takes that cell's mass at the cell centroid (a mass-weighted mean, as in a merge).

Merges.  Points closer than :data:`MERGE_DISTANCE` (1e-6 rad, the cluster bookkeeping's tight radius
:data:`meanfield.solvers.tracking.clusters.TIGHT_RADIUS`) become one point with the summed mass at the weighted mean position.
Their mutual attraction conserves that mean, and the rest of the state sees the pair as one point up to
``O(D^2)`` (``1e-12``); the merge itself (the two clusters' field becoming one hill, MATH.md §10) has been
recorded long before.  The nodes' collapse distance (``5.7e-14``) is not used: two points at order-one positions hover about
there, their velocity difference lost in the round-off of the sums, and the exponential approach from 1e-6
down would cost as many steps again.

Empty grid.  When the grid holds less than :data:`SWEEP_FRACTION` (1e-6) of the mass, each remaining cell's
mass joins the nearest point and the grid is exactly empty from then on: the right-hand side is the K-point
ODE alone and the step follows its slow dynamics (:meth:`step_rate`).  The last millionth of the mass drains
from the unstable equilibria between clusters at the slow rate ``|X'|`` there (on the circle, SA, beta = 9:
from 1e-6 to 1e-12 takes as long as the whole formation); moving it to the nearest point shifts that point by
at most ``1e-6 x distance / its mass`` (``3e-6`` rad for four clusters), which changes a merge time by
``beta sin D`` times that: ``< 1e-4`` relative.  Everything stays exact in total mass.

Step of the point dynamics (:meth:`step_rate`).  Two points at distance ``D`` closing at ``dv`` evolve on the
time scale of the Jacobian of their ODE, ``|dv| (beta |sin D| + |cot D|) <= |dv| (beta + 1 / D)`` (the
velocity of a pair ``~ exp(-beta (1 - cos D)) sin D``, MATH.md §5); the step is :data:`POINT_STEP` over the
largest such rate among neighbouring points (on a line, any pair's ratio is at most its neighbours').
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.point_groups import TIGHT_RADIUS
from meanfield.cluster_dynamics import as_unit_vectors, snap_to_poles


#: Largest standard deviation (in cells) of the five-cell window of a cluster handed over to a point.
HANDOVER_WIDTH = 1.2
#: Smallest window mass handed over, relative to the total mass (smaller peaks drain into the points).
HANDOVER_MIN_MASS = 1e-6
#: Below this fraction of the total mass left on the grid, the rest joins the points and the grid is empty.
SWEEP_FRACTION = 1e-6
#: Points closer than this (radians) are one point.
MERGE_DISTANCE = TIGHT_RADIUS
#: Cells around a point's own cell in which no new point is made.
EXCLUSION = 3
#: Half-width of the hand-over window (cells) whose spread decides a hand-over.
WINDOW = 2
#: The cells a hand-over takes reach this fraction of the circumference (of ``pi`` for zonal grids) on each
#: side, at least :data:`WINDOW` cells, and only down the cluster's slopes (module docstring).
TAKE_FRACTION = 1 / 32
#: The step of the point dynamics: this fraction of the inverse Jacobian rate (module docstring), taken as it is
#: (the finite volumes' steps are not rounded down to powers of two).  ssprk3 is third order: merge times against the
#: K-point ODE from the run's points at t = 200 (circle, SA, beta = 9, N = 512) measured 3.8e-7, 1.6e-7 and 8.4e-8 at
#: 0.02, 0.015 and 0.012 (the README staircase in 1.46, 1.57 and 1.80 s).
POINT_STEP = 0.015


class PointClusters:
    """Hand-over, ownership, merges and sweeping of the point clusters of a 1-D finite-volume grid.

    ``faces`` (``n + 1``), ``centroids`` and ``volumes`` (``n``) describe the grid; ``periodic`` the circle
    (period ``2 pi``); otherwise the zonal polar angle in ``[0, pi]`` on ``S^{dim-1}``.  ``slots``: the
    most points a run can hold (beyond it a cluster stays on the grid, where it is still resolved or stops the run).
    """

    def __init__(self, faces, centroids, volumes, periodic: bool, dim: int, slots: int, enabled: bool, beta: float):
        self.faces = np.asarray(faces, dtype=float)
        self.centroids = np.asarray(centroids, dtype=float)
        self.volumes = np.asarray(volumes, dtype=float)
        self.periodic, self.dim, self.slots, self.enabled = periodic, int(dim), int(slots), bool(enabled)
        self.beta = float(beta)
        self.n = self.volumes.size
        self.cell = (self.faces[-1] - self.faces[0]) / self.n
        #: how far (cells) a hand-over reaches on each side of the peak
        self.take = max(WINDOW, int(self.n * TAKE_FRACTION))
        #: the cell each point owns (-1: none; two points in one cell), fixed between post-step updates
        self.owned = np.zeros(0, dtype=np.int64)

    # -- geometry ---------------------------------------------------------------------------------
    def cell_of(self, x: np.ndarray) -> np.ndarray:
        """The cell holding each position."""
        index = np.floor((np.asarray(x) - self.faces[0]) / self.cell).astype(np.int64)
        return np.mod(index, self.n) if self.periodic else np.clip(index, 0, self.n - 1)

    def offset(self, x, origin):
        """``x - origin`` (on the circle the representative in ``[-pi, pi)``)."""
        difference = np.asarray(x) - origin
        return np.mod(difference + math.pi, 2 * math.pi) - math.pi if self.periodic else difference

    def wrap(self, y: np.ndarray) -> np.ndarray:
        """Positions in ``[0, 2 pi)`` (circle) or ``[0, pi]`` (zonal)."""
        return np.mod(y, 2 * math.pi) if self.periodic else np.clip(y, 0.0, math.pi)

    def _rings(self, y: np.ndarray) -> np.ndarray:
        """Which points are zonal rings off the poles (none on the circle)."""
        if self.periodic:
            return np.zeros(y.shape, dtype=bool)
        return ~self._at_poles(y)

    def _at_poles(self, y: np.ndarray) -> np.ndarray:
        """Which points are zonal pole points (none on the circle)."""
        if self.periodic:
            return np.zeros(y.shape, dtype=bool)
        return (y == 0.0) | (y == math.pi)

    def _snap_to_poles(self, y: np.ndarray) -> np.ndarray:
        """Zonal rings within :data:`MERGE_DISTANCE` of a pole put on it, as the K-ring ODE does
        (:func:`meanfield.cluster_dynamics.snap_to_poles`)."""
        return y if self.periodic else snap_to_poles(y, MERGE_DISTANCE)

    @staticmethod
    def unit_vectors(y: np.ndarray) -> np.ndarray:
        """Points (circle) or rings (zonal, in a meridian plane) as ``(cos y, sin y)``: their distances are
        the geodesic ones the cluster bookkeeping uses."""
        return as_unit_vectors(np.asarray(y, dtype=float).reshape(-1))

    def _neighbours(self, cells: np.ndarray, reach: int):
        """``(index, inside)``: for each of ``cells`` the cells ``cell - reach .. cell + reach`` (one row each;
        periodic, or cut at the poles, where ``inside`` is False and ``index`` clipped)."""
        index = cells[:, None] + np.arange(-reach, reach + 1)
        if self.periodic:
            return np.mod(index, self.n), np.ones(index.shape, dtype=bool)
        inside = (index >= 0) & (index < self.n)
        return np.clip(index, 0, self.n - 1), inside

    # -- the post-step update -----------------------------------------------------------------------
    def update(self, rho: np.ndarray, y: np.ndarray, m: np.ndarray):
        """Wrap, merge, hand over, own and absorb, sweep; ``None`` when nothing changed, else the new
        ``(rho, y, m)`` (new arrays; the inputs are not modified)."""
        empty = y.size > 0 and not rho.any()        # the grid was swept: points only from then on
        if not self.enabled or empty and y.size < 2 and not self._rings(y).any():
            return None
        wrapped = self._snap_to_poles(self.wrap(y))
        changed = not np.array_equal(wrapped, y)
        y = wrapped
        merged = self._merge(y, m)
        if merged is not None:
            (y, m), changed = merged, True
        if not empty:
            made = self.hand_over(rho, y, m)
            if made is not None:
                (rho, y, m), changed = made, True
            owned = self._own(y, m)
            absorbed = self._absorb(rho, y, m, owned)
            if absorbed is not None:
                (rho, y, m), changed = absorbed, True
            swept = self._sweep(rho, y, m)
            if swept is not None:
                (rho, y, m), changed = swept, True
        self.owned = self._own(y, m)
        return (rho, y, m) if changed else None

    def _merge(self, y: np.ndarray, m: np.ndarray):
        """Points within the collapse distance joined (weighted mean position, summed mass), or ``None``."""
        if y.size < 2:
            return None
        order = np.argsort(y, kind="stable")
        ys, ms = y[order], m[order]
        gaps = np.diff(ys)
        join = gaps <= MERGE_DISTANCE
        seam = self.periodic and ys[0] + 2 * math.pi - ys[-1] <= MERGE_DISTANCE
        if not join.any() and not seam:
            return None
        labels = np.concatenate(([0], np.cumsum(~join)))
        groups = int(labels[-1]) + 1
        unwrapped = ys.copy()
        if seam and groups > 1:
            first = labels == 0
            unwrapped[first] += 2 * math.pi
            labels = np.where(first, groups - 1, labels) - 1
            groups -= 1
        masses = np.bincount(labels, ms, minlength=groups)
        centres = np.bincount(labels, ms * unwrapped, minlength=groups) / masses
        return self.wrap(centres), masses

    def windows(self, rho: np.ndarray, cells: np.ndarray):
        """For each of ``cells``: its window's mass, centroid offset from the cell's centroid, and standard deviation
        in cells (module docstring)."""
        index, inside = self._neighbours(cells, WINDOW)
        part = np.where(inside, self.volumes[index] * rho[index], 0.0)
        distance = np.where(part > 0, self.offset(self.centroids[index], self.centroids[cells][:, None]), 0.0)
        total = part.sum(axis=1)
        first = (part * distance).sum(axis=1)
        second = (part * distance * distance).sum(axis=1)
        safe = np.where(total > 0, total, 1.0)
        centre = first / safe
        spread = np.sqrt(np.maximum(second / safe - centre * centre, 0.0)) / self.cell
        if not self.periodic:             # a cluster at a pole: rms distance from the pole / sqrt(d - 1)
            for row in np.flatnonzero((cells == 0) | (cells == self.n - 1)):
                cell = cells[row]
                pole = 0.0 if cell == 0 else math.pi
                rms = math.sqrt(second[row] / safe[row] + 2 * centre[row] * (self.centroids[cell] - pole)
                                + (self.centroids[cell] - pole) ** 2) if total[row] > 0 else math.inf
                spread[row] = rms / math.sqrt(self.dim - 1) / self.cell
                centre[row] = pole - self.centroids[cell]
        return total, centre, spread

    def _peaks(self, rho: np.ndarray) -> np.ndarray:
        """The cells holding a local maximum of ``rho > 0`` (not below either neighbour; beyond a pole counts as 0)."""
        n = self.n
        peak = rho > 0
        peak[1:] &= rho[1:] >= rho[:-1]
        peak[:-1] &= rho[:-1] >= rho[1:]
        if self.periodic:
            peak[0] &= rho[0] >= rho[-1]
            peak[n - 1] &= rho[n - 1] >= rho[0]
        return np.flatnonzero(peak)

    def hand_over(self, rho: np.ndarray, y: np.ndarray, m: np.ndarray):
        """New points from the collapsed windows (module docstring), or ``None``.  Only the local maxima are looked
        at (a few cells), so the cost does not grow with the grid."""
        peaks = self._peaks(rho)
        if peaks.size == 0:
            return None
        total, centre, spread = self.windows(rho, peaks)
        whole = float(self.volumes @ rho) + float(m.sum())
        keep = (spread <= HANDOVER_WIDTH) & (total >= HANDOVER_MIN_MASS * whole)
        chosen, centre = peaks[keep], centre[keep]
        if y.size and chosen.size:        # none within EXCLUSION + take cells of an existing point's cell
            apart = np.abs(chosen[:, None] - self.cell_of(y)[None, :])
            if self.periodic:
                apart = np.minimum(apart, self.n - apart)
            free = np.all(apart > EXCLUSION + self.take, axis=1)
            chosen, centre = chosen[free], centre[free]
        if chosen.size == 0:
            return None
        rho = rho.copy()
        new_y, new_m = [], []
        for cell, offset in zip(chosen, centre):
            if rho[cell] <= 0:            # taken by a neighbouring window already
                continue
            if y.size + len(new_y) >= self.slots:      # every slot taken: the cluster stays on the grid
                continue
            cells = self._slopes(rho, cell)
            masses = self.volumes[cells] * rho[cells]
            new_m.append(float(masses.sum()))
            offsets = self.offset(self.centroids[cells], self.centroids[cell])
            if not self.periodic and cell in (0, self.n - 1):        # a point at the pole
                new_y.append(float(self.centroids[cell] + offset))
            else:
                new_y.append(float(self.wrap(self.centroids[cell] + masses @ offsets / new_m[-1])))
            rho[cells] = 0.0
        if not new_y:
            return None
        return rho, np.append(y, new_y), np.append(m, new_m)

    def _slopes(self, rho: np.ndarray, peak: int) -> np.ndarray:
        """The peak's cell and, on each side, the cells down its slope (density not increasing, not empty) up to
        :attr:`take` cells away: the cluster's mass, without its neighbours' across the valley between them."""
        cells = [peak]
        for step in (-1, 1):
            here = peak
            for _ in range(self.take):
                there = here + step
                if self.periodic:
                    there %= self.n
                elif not 0 <= there < self.n:
                    break
                if not 0 < rho[there] <= rho[here] or there == peak:
                    break
                cells.append(there)
                here = there
        return np.array(sorted(set(cells)))

    def _own(self, y: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The cell each point owns; in a cell holding several points the heaviest owns it, the others none."""
        cells = self.cell_of(y)
        owned = cells.copy()
        for cell in np.unique(cells[np.bincount(cells, minlength=self.n)[cells] > 1]):
            members = np.flatnonzero(cells == cell)
            owned[members] = -1
            owned[members[np.argmax(m[members])]] = cell
        return owned

    def _absorb(self, rho: np.ndarray, y: np.ndarray, m: np.ndarray, owned: np.ndarray):
        """Each point takes the mass of the cell it owns (at the cell centroid), or ``None`` if none had any."""
        holders = np.flatnonzero(owned >= 0)
        cells = owned[holders]
        if cells.size == 0 or not np.any(rho[cells] > 0):
            return None
        rho, y, m = rho.copy(), y.copy(), m.copy()
        for point, cell in zip(holders, cells):
            if rho[cell] > 0:
                mass = self.volumes[cell] * rho[cell]
                y[point] = self._joined(y[point], m[point], self.centroids[cell], mass)
                m[point] += mass
                rho[cell] = 0.0
        return rho, y, m

    def _sweep(self, rho: np.ndarray, y: np.ndarray, m: np.ndarray):
        """The last ``< SWEEP_FRACTION`` of the mass on the grid joins the nearest points; the grid is then empty."""
        if y.size == 0:
            return None
        grid = float(self.volumes @ rho)
        if grid > SWEEP_FRACTION * (grid + float(m.sum())):
            return None
        y, m = y.copy(), m.copy()
        for cell in np.flatnonzero(rho > 0):
            distance = np.abs(self.offset(y, self.centroids[cell]))
            point = int(np.argmin(distance))
            mass = self.volumes[cell] * rho[cell]
            y[point] = self._joined(y[point], m[point], self.centroids[cell], mass)
            m[point] += mass
        return np.zeros_like(rho), y, m

    def _joined(self, position: float, mass: float, arriving_at: float, arriving: float) -> float:
        """Where a point of ``mass`` at ``position`` is after ``arriving`` mass at ``arriving_at`` joins it: the
        weighted mean, except that a zonal pole point stays on its pole (what joins it surrounds its axis)."""
        if self._at_poles(np.asarray(position)):
            return position
        return float(self.wrap(position + arriving * self.offset(arriving_at, position) / (mass + arriving)))

    # -- the dynamics' coupling -----------------------------------------------------------------------
    def inflow(self, change: np.ndarray, flux: np.ndarray, y: np.ndarray, m: np.ndarray, velocity: np.ndarray):
        """Redirect what the fluxes bring into the owned cells to their points (module docstring): sets the
        owned cells' ``change`` to 0 and returns ``(dy/dt, dm/dt)``."""
        dm = np.zeros_like(m)
        dy = velocity.copy()
        holders = np.flatnonzero(self.owned >= 0)
        if holders.size:
            cells = self.owned[holders]
            west, east = flux[cells], flux[cells + 1]
            dm[holders] = west - east
            shift = west * self.offset(self.faces[cells], y[holders]) - east * self.offset(self.faces[cells + 1],
                                                                                        y[holders])
            dy[holders] += shift / m[holders]
            change[cells] = 0.0
        dy[self._at_poles(y)] = 0.0         # what a pole point takes arrives around its axis: it stays put
        return dy, dm

    def step_rate(self, y: np.ndarray, velocity: np.ndarray) -> float:
        """``max |v_a - v_b| (beta + 1 / |y_a - y_b|)`` over neighbouring points, divided by :data:`POINT_STEP`:
        the rate whose inverse is the step of the point dynamics (module docstring).  A zonal ring off the
        poles also pairs with its nearer pole (velocity 0): a lone ring contracts onto a pole at the rate
        ``|v_a| / th_a`` and must not be stepped past it.  Pole points and a lone point on the circle do not
        move: rate 0."""
        order = np.argsort(y)
        ys, vs = y[order], velocity[order]
        gaps, closing = [np.diff(ys)], [np.abs(np.diff(vs))]
        if self.periodic and y.size > 1:
            gaps.append([ys[0] + 2 * math.pi - ys[-1]])
            closing.append([abs(vs[0] - vs[-1])])
        if not self.periodic:
            rings = self._rings(ys)
            gaps.append(np.minimum(ys[rings], math.pi - ys[rings]))
            closing.append(np.abs(vs[rings]))
        gaps, closing = np.concatenate(gaps), np.concatenate(closing)
        if gaps.size == 0:
            return 0.0
        return float(np.max(closing * (self.beta + 1.0 / np.maximum(gaps, 1e-300)))) / POINT_STEP
