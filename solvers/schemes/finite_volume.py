"""Second-order, positivity-preserving finite-volume schemes (MATH.md §2, §2.1, §2.2).

``d rho/dt + div(rho X[rho]) = nu Laplace rho`` on the circle and for zonal densities on
S^{d-1} (``d >= 3``), both a 1-D conservation law in one angle ``x`` (circle: ``theta`` in
``[0, 2 pi)``, periodic; zonal: the polar angle ``th`` in ``[0, pi]``, MATH.md §2.2):

    V_i d rho_i/dt = -(F_{i+1/2} - F_{i-1/2}),      F = A (rho u)_upwind - nu A d rho/dx

with cell averages ``rho_i`` (the state), cell volumes ``V_i`` (the exact surface measure of
the cell), face areas ``A`` and the velocity ``u`` (the ``x`` component of ``X``) at the
faces.  Circle: ``V = h``, ``A = 1``.  Zonal: ``V_i = |S^{d-2}| int_cell sin^{d-2} th dth``,
``A = |S^{d-2}| sin^{d-2} th_face`` (zero at the poles, so no boundary condition is needed).

Flux (Carrillo–Chertock–Huang, "A finite-volume method for nonlinear nonlocal equations
with a gradient flow structure", 2015, with the reconstruction of MATH.md §2.5): piecewise-linear reconstruction
about each cell's centroid ``c_i`` (the measure-weighted mean of ``x``: then the cell average of the linear
function is exactly ``rho_i``) with the central slope (the one-sided slopes weighted by the centroid spacings),
cut only so far that both face values ``rho^W_i = rho_i - s (c_i - x_{i-1/2})``, ``rho^E_i = rho_i + s (x_{i+1/2} - c_i)``
are ``>= 0`` (the Zhang–Shu positivity scaling of a linear reconstruction; no TVD limiter, which would flatten the
slope beside every extremum and make a forming cluster first order); upwinding
``(rho u)_{i+1/2} = max(u, 0) rho^E_i + min(u, 0) rho^W_{i+1}``.  The
diffusive flux is ``-nu A (rho_{i+1} - rho_i) / (c_{i+1} - c_i)``.  Mass is conserved to
round-off (telescoping fluxes) whatever the velocity.

Velocity: from the spectral convolution of the cell masses ``V_i rho_i`` (smooth even when ``rho`` is not; DESIGN.md).

* Circle (MATH.md §2.1, §2.5): the masses at the cell centres (the midpoint rule), ``Q_hat_k = DFT(rho)_{k mod N} / N``
  for every ``|k| <= M(beta)`` (the kernel's band limit, :func:`meanfield.kernels.band_limit`).  With
  ``c_k = exp(-beta) 2 pi I_k`` (scaled Funk–Hecke) ``U = sum c_k Q_hat_k e^{ik theta}`` is ``exp(-beta) K*Q`` and the face
  values (``theta_j - h/2``: a phase ``e^{-ikh/2}``) come from one inverse FFT of size ``N 2^p > 2M``:
  SA ``X = U'/(beta U)`` (the ``exp(beta)`` cancels), USA ``X = exp(beta) U'/beta``.  Linearised, the growth rates
  are the continuum ones times ``sinc(kh/2)`` (the face difference); each mass spread over its cell (the
  piecewise-constant density) would add a second such factor and carry a one-cell cluster less well.
* Zonal (MATH.md §2.2): Gegenbauer coefficients of the piecewise-constant density ``P``, ``g_l = sum_i G_li rho_i`` with the exact
  cell integrals ``G_li = int_cell P_l dsigma``; for ``l >= 1`` the Sturm–Liouville equation
  ``d/dt[(1-t^2)^{(d-1)/2} P_l'] = -l(l+d-2) (1-t^2)^{(d-3)/2} P_l`` (the Laplacian, MATH.md §2.2)
  gives ``G_li = |S^{d-2}| [sin^{d-1} th P_l'(cos th)]_{th_{i-1/2}}^{th_{i+1/2}} / (l(l+d-2))``.
  ``U = sum_l c_l g_l P_l``, ``c_l = exp(-beta) kappa_l``; ``X = V(t)(e - t x)`` with
  ``V = U'/(beta U)`` (SA) or ``exp(beta) U'/beta`` (USA), whose polar component is
  ``u = -sin th V(cos th)`` (``e`` is the pole ``th = 0``).  Degrees ``l <= M(beta, d)``.

Normalisations (MATH.md §6, :mod:`meanfield.solvers.schemes.normalized_velocity`) change only the face velocity, never
the diffusive flux: LN-scaling divides it by ``sqrt(t + 1)``; nGPT (the same field for SA and USA)
takes the scaled tangential field ``G`` (the USA formula without ``exp(beta)``) and the radial
attention ``R`` (the same synthesis with ``c_l' = exp(-beta) d kappa_l/dbeta`` in place of
``c_l``, no derivative) at the faces and moves by ``alpha G / sqrt(G^2 + R^2)``.

For SA ``|X| = |grad log(K*rho)| / beta <= 1`` exactly (``|P_x y| <= 1``), so the face speeds are
clipped to ``[-1, 1]``: this changes nothing but guards the ratio where ``U`` is near its
round-off floor (empty regions at large ``beta``).

Time step (``stable_dt``), positivity of one forward-Euler step.  Write
``rho_i = a_i rho^W_i + b_i rho^E_i`` with ``a_i = (x_{i+1/2} - c_i)/h_i``, ``b_i = (c_i - x_{i-1/2})/h_i``
(exact for the linear reconstruction about the centroid).  Everything that enters cell ``i``
(upwind inflow from its neighbours' face values, diffusive inflow ``nu A rho_{i+-1} / delta``) is
``>= 0``; what leaves is ``dt [A_{i+1/2} u^+_{i+1/2} rho^E_i + A_{i-1/2} u^-_{i-1/2} rho^W_i +
D_i (a_i rho^W_i + b_i rho^E_i)]`` with ``D_i = nu (A_{i-1/2}/delta_{i-1/2} + A_{i+1/2}/delta_{i+1/2})``.
Comparing with ``V_i rho_i`` term by term in ``rho^W_i, rho^E_i >= 0``, the new average is ``>= 0`` if

    dt * r_i <= 1,    r_i = max( A_{i+1/2} u^+_{i+1/2} / (b_i V_i),  A_{i-1/2} u^-_{i-1/2} / (a_i V_i) ) + D_i / V_i.

(Uniform circle grid: ``dt (2 max|u| / h + 2 nu / h^2) <= 1``.)  :meth:`rhs` records ``max_i r_i``
for the state it was called on, and ``stable_dt(cfl) = min(cfl / max_i r_i, GROWTH_STEP / lambda_max)``; the
second term (``lambda_max`` the fastest linear growth rate, MATH.md §2.3) keeps the step accurate while the
field is still tiny and the velocities with it: ``ssprk3`` advances a growing mode by ``1 + z + z^2/2 + z^3/6``,
``z = lambda dt``, relatively ``z^4 / 24`` short of ``e^z`` a step, and with :data:`GROWTH_STEP` ``= 0.02`` the
formation's time error is far below the grid's (README case, beta = 9, centres at t = 14 against a 4096-mode
spectral run: ``1.1e-4`` rad at every ``N`` with the former bound ``cfl / lambda_max``, ``0.5 / lambda_max`` by
default, against the grid's own ``2.3e-5`` at ``N = 512``).  With ``cfl <= 1`` the Euler step is positive; ``ssprk3`` (the default
stepper, :data:`default_stepper`) is a convex combination of Euler steps, so it inherits this,
up to the change of the field between stages (the bound is taken from the first stage's field;
the finite volumes' default ``cfl = 0.9``, :attr:`_FiniteVolumeScheme.default_cfl`, leaves a tenth for it).  Other steppers are allowed (``rk4``,
``dopri5``: not SSP, positivity is then not guaranteed and the validity monitor will stop the run
if it is lost); the scheme has no stiff linear part (``linear = None``), so the integrating-factor
steppers reduce to their plain forms.

Clusters (MATH.md §5, :mod:`meanfield.solvers.schemes.point_clusters`).  A cluster that has shrunk to a cell or two
cannot move on the grid: the face velocities on its two sides point inward and exceed its drift, so the
upwind flux pins it.  Without noise such a cluster is handed over to a weighted point (a ring or a pole
point for zonal densities) that moves with the velocity of grid plus points, while the grid carries the
rest and feels the points in its face velocities; an owned cell's inflow goes to its point.  The state is
then the cell averages followed by the points' positions and masses (``N + 2 P`` numbers); once the grid
is empty the right-hand side is the K-point ODE alone and the step follows it, so a run can follow the
whole staircase.  With noise (``nu > 0``) a cluster keeps a width ``~ sqrt(nu)`` and there is no hand-over:
the grid must resolve that width.  Frames record ``density`` as the cell averages of grid plus points
(each point's mass in its cell), ``point_position`` and ``point_mass`` (NaN in unused slots), and the run's
cluster bookkeeping counts and merges the points (:class:`meanfield.solvers.tracking.clusters.ClusterTracker`).
:meth:`validity` checks finiteness, positivity of the grid and the total mass; ``resolution_tol`` is
accepted for the common interface and not used.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
from scipy.special import roots_legendre

from meanfield.errors import require
from meanfield.gegenbauer import normalised_gegenbauer
from meanfield.geometries import geometry_of
from meanfield.geometry import laplace_eigenvalue, sphere_area
from meanfield.fourier_series import CIRCLE_NORM, dealiased_band
from meanfield.kernels import band_limit
from meanfield.model import Model

from ..tracking.clusters import ClusterTracker
from .contract import TakesCellAverages
from .density_layers import (LayerFolds, angle_shift, overlap_masses, post_ln_turn, remapped_cell_masses,
                             require_layers)
from .density_scheme import DensityScheme
from .interaction import CircleFourierInteraction
from ..bases.fourier import FourierBasis
from .fv_kernel import fused_kernel, split
from .normalized_velocity import VelocityNormalization
from .point_clusters import PointClusters


#: The largest ``lambda_max dt`` of a step (module docstring, "Time step").
GROWTH_STEP = 0.02


class FiniteVolume1D:
    """Generic conservative 1-D finite-volume core: reconstruction, upwind + diffusive fluxes, divergence.

    Cells ``i = 0..n-1`` lie between ``faces[i]`` and ``faces[i+1]``.  ``areas[j]`` is the area of
    face ``j`` (``j = 0..n``); ``periodic`` identifies face ``n`` with face 0 (then
    ``faces[n] = faces[0] + period``); otherwise faces 0 and ``n`` carry no flux.  Face
    velocities are arrays of length ``n`` (periodic: face ``j`` for ``j = 0..n-1``) or ``n + 1``.
    See the module docstring for the formulas and the positivity bound.
    """

    def __init__(self, faces, volumes, areas, centroids, periodic: bool, nu: float = 0.0):
        faces = np.asarray(faces, dtype=float)
        self.n = n = volumes.size
        self.periodic = periodic
        self.volumes = np.asarray(volumes, dtype=float)
        self.areas = np.asarray(areas, dtype=float)
        self.centroids = c = np.asarray(centroids, dtype=float)
        self.nu = float(nu)
        width = np.diff(faces)
        self.d_west = c - faces[:-1]                 # c_i - x_{i-1/2}
        self.d_east = faces[1:] - c                  # x_{i+1/2} - c_i
        self.a = self.d_east / width                 # weight of rho^W in rho_i
        self.b = self.d_west / width                 # weight of rho^E in rho_i
        # centroid spacing across face j (j = 0..n), 1/spacing (0 where no flux crosses)
        inv = np.zeros(n + 1)
        inv[1:n] = 1.0 / np.diff(c)
        if periodic:
            period = faces[-1] - faces[0]
            inv[0] = inv[n] = 1.0 / (c[0] + period - c[-1])
        self.inv_spacing = inv
        spacing = np.where(inv > 0, 1.0 / np.where(inv > 0, inv, 1.0), 1.0)
        left, right = spacing[:-1], spacing[1:]
        self.w_left, self.w_right = left / (left + right), right / (left + right)
        self.diff_coeff = self.nu * self.areas * inv       # nu A / delta at each face
        self.diff_rate = (self.diff_coeff[:-1] + self.diff_coeff[1:]) / self.volumes   # D_i / V_i
        self._out_east = self.areas[1:] / (self.b * self.volumes)
        self._minus_out_west = -self.areas[:-1] / (self.a * self.volumes)
        # reciprocals, so that the right-hand side multiplies (solvers/schemes/fv_kernel.py does the same operations)
        self._minus_inv_d_east = -1.0 / self.d_east
        self._inv_d_west = 1.0 / self.d_west
        self._inv_volumes = 1.0 / self.volumes
        self.max_rate = 0.0
        # work buffers (the right-hand side allocates only its result)
        self._ext = np.empty(n + 2)
        self._jumps, self._face_slopes, self._flux, self._face_work, self._pos, self._neg = np.empty((6, n + 1))
        self._central, self._work, self._lo, self._hi = np.empty((4, n))
        self._left_state, self._right_state = np.zeros(n + 1), np.zeros(n + 1)   # face states (0 at walls)

    def reconstruct(self, rho: np.ndarray):
        """Face values ``(rho^W, rho^E)`` of the positivity-limited central reconstruction (both ``>= 0``).

        Returns views of work buffers (valid until the next call): ``rho^W_i`` is also the
        right state of face ``i``, ``rho^E_i`` the left state of face ``i + 1``.
        """
        ext, jumps, work = self._ext, self._jumps, self._work
        ext[1:-1] = rho
        ext[0], ext[-1] = (rho[-1], rho[0]) if self.periodic else (rho[0], rho[-1])
        np.subtract(ext[1:], ext[:-1], out=jumps)          # rho_j - rho_{j-1}, faces j = 0..n
        slopes = np.multiply(jumps, self.inv_spacing, out=self._face_slopes)
        slope = np.multiply(slopes[:-1], self.w_left, out=self._central)
        slope += np.multiply(slopes[1:], self.w_right, out=work)                     # central
        np.maximum(slope, np.multiply(rho, self._minus_inv_d_east, out=work), out=slope)   # rho^E >= 0
        np.minimum(slope, np.multiply(rho, self._inv_d_west, out=work), out=slope)         # rho^W >= 0
        west, east = self._right_state[:-1], self._left_state[1:]
        np.subtract(rho, np.multiply(slope, self.d_west, out=work), out=west)
        np.add(rho, np.multiply(slope, self.d_east, out=work), out=east)
        np.maximum(west, 0.0, out=west)                      # round-off of the clipped slopes
        np.maximum(east, 0.0, out=east)
        if self.periodic:
            self._left_state[0], self._right_state[-1] = east[-1], west[0]
        return west, east

    def face_velocity(self, u: np.ndarray) -> np.ndarray:
        """Velocities at all ``n + 1`` faces (periodic: face ``n`` repeats face 0)."""
        if u.size == self.n + 1:
            return u
        return np.append(u, u[0])

    def divergence(self, rho: np.ndarray, u_faces: np.ndarray) -> np.ndarray:
        """``-(F_{i+1/2} - F_{i-1/2}) / V_i`` with the upwind and diffusive fluxes; records ``max_i r_i``."""
        u = self.face_velocity(u_faces)
        self.reconstruct(rho)
        pos = np.maximum(u, 0.0, out=self._pos)
        neg = np.minimum(u, 0.0, out=self._neg)
        flux = np.multiply(pos, self._left_state, out=self._flux)
        flux += np.multiply(neg, self._right_state, out=self._face_work)
        flux *= self.areas
        if self.nu > 0:
            flux -= np.multiply(self._jumps, self.diff_coeff, out=self._face_work)
        rate = np.multiply(pos[1:], self._out_east, out=self._lo)
        np.maximum(rate, np.multiply(neg[:-1], self._minus_out_west, out=self._hi), out=rate)
        if self.nu > 0:
            rate += self.diff_rate
        self.max_rate = float(rate.max())
        out = np.subtract(flux[:-1], flux[1:])
        out *= self._inv_volumes
        return out

    @property
    def flux(self) -> np.ndarray:
        """The face fluxes ``F_j`` (``j = 0..n``, area included) of the last :meth:`divergence` call."""
        return self._flux

    def integrate(self, rho: np.ndarray) -> float:
        """``sum_i V_i rho_i``: the mass."""
        return float(self.volumes @ rho)


class _FiniteVolumeScheme(TakesCellAverages, DensityScheme):
    """What the circle and zonal finite-volume schemes share; the validity checks and the frame are
    :class:`meanfield.solvers.schemes.density_scheme.DensityScheme`'s, with the mass from the cell volumes and the mass drift in
    place of the spectral resolution monitor."""

    name = "fv"
    default_stepper = "ssprk3"
    #: ``--cfl`` when not given: SSP-RK3 keeps every cell non-negative up to 1 (module docstring, "Time step"); 0.9
    #: leaves a tenth for the change of the field between stages (measured: no cell below zero at 0.9 or 1.0 in the
    #: README, three-bump and zonal staircases; merges within 2e-5 of 0.5's, the grid phase in 55 % of the steps).
    default_cfl = 0.9
    #: The step is the bound itself, not rounded down to a power of two (no linear part, so no exponential factors
    #: to cache): the grid phase of the README staircase in 0.7 of the steps.
    power_of_two_steps = False
    linear = None
    positivity_hint = " (use --stepper ssprk3 and --cfl <= 1)"
    #: the run stops when the mass drifts by more than this (relative); round-off is ~1e-14
    mass_tol = 1e-10
    #: mutable fields an exact restart carries (:mod:`meanfield.solvers.records.checkpoint`)
    restart_fields = ("initial_mass", "clusters.owned", "weights")
    #: the points' masses (the cluster bookkeeping's weights), updated after every step
    weights = np.zeros(0)
    #: the step rate of the point dynamics and whether the grid still moves (set by :meth:`rhs`)
    _point_motion = None
    _grid_moves = True

    def _common(self, model: Model, positivity_tol: float, resolution_tol: float, normalization):
        require(model.beta > 0, f"--beta must be > 0 for the PDE (got {model.beta:g})")
        self.model = model
        self.speed_divisor = VelocityNormalization(normalization, model)
        self.positivity_tol = positivity_tol
        self.resolution_tol = resolution_tol
        self.initial_mass = None

    def trackers(self) -> list:
        """The cluster bookkeeping (:class:`meanfield.solvers.tracking.clusters.ClusterTracker`) of each frame's density on the
        scheme's own cells (the frames put the points' mass in their cells); without noise also the point energy
        of the handed-over points (zonal: rings on S^{d-1})."""
        dim = self.model.dim if geometry_of(self.geometry).rings else None
        return [ClusterTracker(self.model.beta, dim=dim, energy=self.clusters.enabled)]

    def variable_attrs(self) -> dict:
        """The density is cell averages: CF ``cell_methods`` ``"<grid>: mean"``."""
        return {"density": {"cell_methods": f"{next(iter(self.dims()['density']))}: mean"}}

    def static_variables(self) -> dict:
        """``cell_volume`` on the density's grid: the exact surface measure of each cell (circle: its arc; zonal:
        its band of S^{d-1}), so that ``sum(density * cell_volume)`` is the mass of a frame, points included
        (their mass is in their cell's average), and a run file alone gives each cell's mass."""
        grid = self.dims()["density"][0]
        return {"cell_volume": (grid, self.fv.volumes.copy(),
                                {"long_name": "surface measure of each finite-volume cell (rad on the circle, "
                                              "area of the band of S^{d-1} for zonal cells)"})}

    def _start_clusters(self, faces, centroids) -> None:
        """The point clusters' bookkeeping (:mod:`meanfield.solvers.schemes.point_clusters`): on without noise."""
        self.clusters = PointClusters(faces, centroids, self.fv.volumes, self.fv.periodic, self.model.dim,
                                      max(8, self.resolution // 8), enabled=self.model.nu == 0, beta=self.model.beta)

    def split(self, state: np.ndarray):
        """``(rho, y, m)``: cell averages, point positions and point masses of a state."""
        n = self.resolution
        count = (state.size - n) // 2
        return state[:n], state[n:n + count], state[n + count:]

    # -- dynamics ---------------------------------------------------------------------------------
    def rhs(self, state: np.ndarray, t: float) -> np.ndarray:
        """``d rho_i/dt``: minus the flux divergence (module docstring); with points also their
        ``dy/dt`` and ``dm/dt`` (:meth:`meanfield.solvers.schemes.point_clusters.PointClusters.inflow`)."""
        if state.size == self.resolution:
            return self.grid_change(state, t)
        rho, y, m = self.split(state)
        at_points = self.point_basis(y)
        points = self.point_coefficients(y, m, at_points)
        self._grid_moves = bool(rho.any())
        if self._grid_moves:
            change = self.grid_change(rho, t, points)
            dy, dm = self.clusters.inflow(change, self.fv.flux, y, m, self.point_speed(rho, points, at_points, t))
        else:
            change, dy, dm = np.zeros_like(rho), self.point_speed(None, points, at_points, t), np.zeros_like(m)
        self._point_motion = (y.copy(), dy)           # the point step's rate, read by stable_dt
        return np.concatenate((change, dy, dm))

    def grid_change(self, rho: np.ndarray, t: float, points: np.ndarray | None = None) -> np.ndarray:
        """``d rho_i/dt`` of the grid: minus the flux divergence with the face velocity of grid plus points."""
        return self.fv.divergence(rho, self.face_speed(rho, t, points))

    def collapse(self, state: np.ndarray) -> np.ndarray:
        """After every step: hand-overs, owned cells, merges and the sweep of an almost empty grid
        (:meth:`meanfield.solvers.schemes.point_clusters.PointClusters.update`); ``state`` itself when nothing changed."""
        if not self.clusters.enabled:
            return state
        rho, y, m = self.split(state)
        if m.size:
            self.weights = m.copy()
        updated = self.clusters.update(rho, y, m)
        if updated is None:
            return state
        self.weights = updated[2].copy()
        return np.concatenate(updated)

    def _combine(self, speed: np.ndarray, t: float, denominator, radial) -> np.ndarray:
        """The velocity from the synthesised parts (``speed`` a fresh array; ``denominator`` and ``radial``
        called only where needed): SA divides (clipped to ``[-1, 1]``), nGPT normalises (MATH.md §6)."""
        if self.speed_divisor.ngpt:
            return self._normalised(speed, t, radial())
        if self.model.normalised:
            speed = np.clip(speed / denominator(), -1.0, 1.0)
        return self._normalised(speed, t)

    def points(self, state: np.ndarray) -> np.ndarray:
        """The points (zonal: rings in a meridian plane) as unit vectors, for the cluster bookkeeping."""
        return self.clusters.unit_vectors(self.split(state)[1])

    def _normalised(self, speed: np.ndarray, t: float, radial=None) -> np.ndarray:
        """The face speeds divided in place by the normalisation's ``s`` (nGPT: with ``radial`` at the faces)."""
        divisor = self.speed_divisor
        if divisor.ngpt:
            return divisor.divide(speed, t, speed * speed, radial)
        return divisor.divide(speed, t)

    def stable_dt(self, cfl: float) -> float:
        """``min(cfl / max_i r_i, GROWTH_STEP / lambda_max)``: Euler positivity for ``cfl <= 1`` and the linear growth
        resolved (module docstring); with points at most the point dynamics' step, and on an empty grid that step
        alone."""
        grid = max(self.fv.max_rate / cfl, self.max_rate / GROWTH_STEP)
        if self.weights.size == 0:
            return 1.0 / max(grid, 1e-300)
        points = 0.0 if self._point_motion is None else self.clusters.step_rate(*self._point_motion)
        return 1.0 / max(grid if self._grid_moves else 0.0, points, 1e-300)

    # -- state <-> density ------------------------------------------------------------------------
    def density(self, state: np.ndarray) -> np.ndarray:
        """Cell averages of grid plus points (each point's mass in the cell that holds it)."""
        if state.size == self.resolution:
            return np.array(state, dtype=float)
        rho, y, m = self.split(state)
        density = np.array(rho, dtype=float)
        cells = self.clusters.cell_of(y)
        np.add.at(density, cells, m / self.fv.volumes[cells])
        return density

    def _start(self, averages: np.ndarray) -> np.ndarray:
        # exact averages of a non-negative density are >= 0; clip round-off (changes the mass by ~1e-17)
        state = np.maximum(averages, 0.0)
        self.initial_mass = self.fv.integrate(state)
        return state

    def state_from_cell_averages(self, averages: np.ndarray) -> np.ndarray:
        """The state from cell averages given as they are (a conservative remap, an fv run's frame):
        no interpolation, so clustered data stays non-negative with its mass."""
        averages = np.asarray(averages, dtype=float)
        require(averages.shape == (self.resolution,),
                f"the initial cell averages must have {self.resolution} values (got shape {averages.shape})")
        return self._start(averages)

    # -- diagnostics --------------------------------------------------------------------------------
    def mass(self, state: np.ndarray, density: np.ndarray | None = None) -> float:
        """``sum_i V_i rho_i + sum_a m_a``: the exact mass of the cell averages and the points."""
        if state.size == self.resolution:
            return self.fv.integrate(state)
        rho, _, m = self.split(state)
        return self.fv.integrate(rho) + float(m.sum())

    def frame(self, state: np.ndarray) -> dict:
        """:meth:`DensityScheme.frame` and, without noise, the points in their slots (NaN where unused)."""
        record = super().frame(state)
        if self.clusters.enabled:
            _, y, m = self.split(state)
            position, mass = np.full((2, self.clusters.slots), np.nan)
            position[:y.size], mass[:m.size] = y, m
            record.update(point_position=position, point_mass=mass)
        return record

    def point_dims(self) -> dict:
        return {"point_position": ("point",), "point_mass": ("point",)} if self.clusters.enabled else {}

    def point_coords(self) -> dict:
        if not self.clusters.enabled:
            return {}
        return {"point": ("point", np.arange(self.clusters.slots), {"long_name": "point-cluster slot"})}

    def mean_density(self, state: np.ndarray) -> float:
        return self.mass(state) / self.fv.volumes.sum()

    def further_validity(self, state: np.ndarray, t: float) -> str | None:
        """The mass stays at its initial value (to ``mass_tol``): fluxes telescope, so a drift is a failure."""
        mass = self.mass(state)
        if self.initial_mass is not None and abs(mass - self.initial_mass) > self.mass_tol * abs(self.initial_mass):
            return f"mass drift at t = {t:.6g}: mass {mass:.15g}, initially {self.initial_mass:.15g}"
        return None


class CircleFiniteVolume(_FiniteVolumeScheme):
    """Finite volumes on the circle: ``N`` cells centred at ``theta_j = 2 pi j / N`` (module docstring).

    ``normalization``: ``post`` (default), ``ngpt`` or ``lnscale`` (MATH.md §6).
    """
    #: memory estimate (meanfield.limits.check_solve_size): work bytes per frame value
    work_bytes_per_value = 600

    geometry = "circle"

    def __init__(self, model: Model, resolution: int, backend: str | None = None,
                 positivity_tol: float = 1e-6, resolution_tol: float = 1e-6, normalization=None, pointwise: str = "auto"):
        require(model.dim == 2, f"--dim must be 2 for the circle (got {model.dim})")
        require(isinstance(resolution, (int, np.integer)) and not isinstance(resolution, bool)
                and resolution >= 8, f"--resolution (number of cells) must be an integer >= 8 (got {resolution!r})")
        require(backend in (None, "pyfftw", "scipy"),
                f"the backend= parameter must be pyfftw or scipy for the circle (got {backend!r})")
        self._common(model, positivity_tol, resolution_tol, normalization)
        n = self.resolution = int(resolution)
        # band limit of the kernel, and a synthesis grid N 2^p with M < N 2^p / 2 (MATH.md §2.1)
        beta = model.beta
        self.band = band = band_limit(beta, 2)
        size = n
        while size // 2 <= band:
            size *= 2
        ngpt = self.speed_divisor.ngpt
        slots = 3 if ngpt else 2
        self.basis = basis = FourierBasis(n, backend, slots=slots if size == n else 0)
        self._slots = basis if size == n else FourierBasis(size, basis.backend, slots=slots)
        self._stride = size // n
        h = self.cell = 2.0 * math.pi / n
        self.faces = faces = basis.theta[0] - h / 2 + h * np.arange(n + 1)
        self.fv = FiniteVolume1D(faces, np.full(n, h), np.ones(n + 1), basis.theta, periodic=True, nu=model.nu)
        k = np.arange(band + 1)
        folded = k % n
        self._source = np.where(folded <= n // 2, folded, n - folded)
        self._conjugate = folded > n // 2
        self._folds = bool(self._conjugate.any())
        shift = np.exp(-0.5j * k * h) / n                                     # face phase, 1/N
        self.kernel_operator = operator = self.speed_divisor.kernel(k)
        self.conv_coeffs = operator.conv                                       # exp(-beta) 2 pi I_k
        grid_tables = (operator.velocity(1j * k) * shift, self.conv_coeffs * shift,
                       operator.radial * shift if ngpt else None)
        self._kmodes = np.arange(basis.kmax + 1)
        # points (MATH.md §5): their coefficients (1/2 pi) sum_a m_a e^{-i k y_a} up to both bands, the face
        # tables, and the real-form weights of the sums at the points
        self._point_modes = np.arange(max(band, basis.kmax) + 1)
        face = np.exp(-0.5j * k * h)
        self._point_tables = (operator.velocity(1j * k), self.conv_coeffs, operator.radial if ngpt else None)
        face_point_tables = tuple(None if table is None else table * face for table in self._point_tables)
        # each multiplier of a slot (numerator, denominator, radial) as a real and an imaginary table, grid and points
        # (solvers/schemes/fv_kernel.py: the compiled path's products are then numpy's)
        halves = [split(table) if table is not None else (None, None) for table in grid_tables + face_point_tables]
        self.split_tables = tuple(tuple(halves[slot + 3 * points][part] for slot in range(3))
                                  for points in (0, 1) for part in (0, 1))
        self._real_form = np.where(k == 0, 1.0, 2.0)
        self._start_clusters(faces, basis.theta)
        self.max_rate = self.speed_divisor.fastest_rate(np.arange(1, basis.kmax + 1))
        self.state_scale = 1.0 / (2 * math.pi)
        self._kernel = fused_kernel(self, pointwise)
        self.pointwise_kernel = "numpy" if self._kernel is None else "compiled"
        divisor = self.speed_divisor
        self._speed_scale = divisor.normalization.divisor if divisor.lnscale else None

    # -- transforms --------------------------------------------------------------------------------
    def _dft(self, rho: np.ndarray) -> np.ndarray:
        """``DFT(rho)_k`` for ``k = 0..M`` (periodic in ``k``; Hermitian folding above ``N/2``)."""
        self.basis.analysis_input()[:] = rho
        spectrum = self.basis.analyse()
        values = spectrum[self._source]
        return np.where(self._conjugate, values.conj(), values) if self._folds else values

    def _at_faces(self, coeffs: np.ndarray, slot: int) -> np.ndarray:
        buffer = self._slots.synthesis_input(slot)
        buffer[:coeffs.size] = coeffs
        buffer[coeffs.size:] = 0.0
        return self._slots.synthesise(slot)[::self._stride]

    def face_speed(self, state: np.ndarray, t: float = 0.0, points: np.ndarray | None = None) -> np.ndarray:
        """``X`` at the faces ``theta_j - h/2`` at time ``t`` from the spectral convolution of ``P`` (MATH.md §2.1, §6)
        and of the points whose coefficients are ``points`` (:meth:`point_coefficients`)."""
        spectrum = self._dft(state)
        real, imaginary, point_real, point_imaginary = self.split_tables

        def synthesis(slot):
            coefficients = spectrum * real[slot]
            coefficients += spectrum * imaginary[slot]
            if points is not None:
                own = points[:coefficients.size]
                coefficients += own * point_real[slot]
                coefficients += own * point_imaginary[slot]
            return self._at_faces(coefficients, slot)

        return self._combine(synthesis(0).copy(), t, lambda: synthesis(1), lambda: synthesis(2))

    def grid_change(self, rho: np.ndarray, t: float, points: np.ndarray | None = None) -> np.ndarray:
        """``d rho_i/dt`` of the grid (module docstring): in one compiled call where :mod:`meanfield.solvers.schemes.fv_kernel`
        is built, else numpy, with the same values; :attr:`fv`'s fluxes and ``max_rate`` set either way."""
        if self._kernel is None:
            return super().grid_change(rho, t, points)
        out = self._kernel.rhs(rho, 1.0 if self._speed_scale is None else self._speed_scale(t), points)
        self.fv.max_rate = self._kernel.max_rate
        return out

    def point_basis(self, y: np.ndarray) -> np.ndarray:
        """``exp(i k y_a)``, ``k = 0..M``: what the points' coefficients and the sums at the points need."""
        return np.exp(1j * np.outer(y, self._point_modes[:self.conv_coeffs.size]))

    def point_coefficients(self, y: np.ndarray, m: np.ndarray, basis: np.ndarray | None = None) -> np.ndarray:
        """``(1 / 2 pi) sum_a m_a exp(-i k y_a)``: the points' Fourier coefficients, ``k = 0..M`` from ``basis``
        (:meth:`point_basis`), else ``k = 0 .. max(M, kmax)``."""
        if basis is None:
            return np.exp(-1j * np.outer(self._point_modes, y)) @ m / (2 * math.pi)
        return m @ basis.conj() / (2 * math.pi)

    def point_speed(self, rho: np.ndarray | None, points: np.ndarray, basis: np.ndarray, t: float) -> np.ndarray:
        """``X`` of grid (``rho``; ``None``: empty) plus points at the points (their :meth:`point_basis`; MATH.md
        §2.1, §5, §6): the band-limited sums ``sum_k c_k T_k e^{i k y}`` in real form, ``T`` the total coefficients."""
        band = self.conv_coeffs.size
        total = points[:band] if rho is None else points[:band] + self._dft(rho) / self.resolution
        phases = basis * self._real_form

        def sums(slot):
            return (phases @ (self._point_tables[slot] * total)).real

        return self._combine(sums(0), t, lambda: sums(1), lambda: sums(2))

    def layer(self, state: np.ndarray, alpha: float, turn=None) -> np.ndarray:
        """The cell averages and points after one layer of step ``alpha`` (MATH.md §11, "Densities through a
        layer"; Post-LN unless ``turn``, ``a, b = turn(c, |A|)``, says otherwise).  The cell masses at the centres (the midpoint rule the field is computed with) and the points are
        weighted tokens; their attention output, at the centres, the points and, with weight 0, the faces, is the
        exact Bessel sum of :class:`meanfield.solvers.schemes.interaction.CircleFourierInteraction`.  Each face and
        point moves by ``atan2(b v, a)``; each cell's mass, spread evenly over its moved cell, goes to
        the fixed cells by exact overlaps (:func:`meanfield.solvers.schemes.density_layers.remapped_cell_masses`).
        Mass is kept to rounding and averages stay non-negative."""
        require_layers(self)
        rho, y, m = self.split(state)
        n, faces = self.resolution, self.faces
        angles = np.concatenate((self.basis.theta, y, faces[:-1]))
        masses = np.concatenate((rho * self.fv.volumes, m, np.zeros(n)))
        interaction = self._layer_interaction
        interaction.weights = masses
        radial, speed = (part[0] for part in interaction.components(angles[None]))
        along, across = (turn or post_ln_turn(alpha))(radial, np.hypot(radial, speed))
        shift = angle_shift(along, across, speed)
        # the faces' shifts unwrapped around the circle: a cell's image is the arc its points sweep
        at_faces = np.unwrap(np.append(shift[-n:], shift[-n]))
        moved = faces + at_faces
        if not (np.all(np.diff(moved) > 0) and at_faces[-1] == at_faces[0]):
            raise LayerFolds(f"--step {alpha:g} sends finite-volume cells past each other (a token antipodal to "
                             f"most of the mass, 1 + alpha <x, A_x> < 0); take a smaller --step or --scheme spectral")
        averages = remapped_cell_masses(moved, rho * self.fv.volumes, faces) / self.fv.volumes
        return np.concatenate((averages, y + shift[n:n + y.size], m))

    @cached_property
    def _layer_interaction(self) -> CircleFourierInteraction:
        """The exact Bessel sums a layer evaluates its field with (:meth:`layer` sets their weights each time)."""
        return CircleFourierInteraction(self.model.beta, self.model.attention, np.zeros(0))

    # -- state <-> density ------------------------------------------------------------------------
    @property
    def coordinate(self):
        return self.basis.theta

    def cell_averages(self, coeffs: np.ndarray) -> np.ndarray:
        """Exact cell averages of ``sum_k rho_hat_k e^{ik theta}`` (``k = 0..len-1`` stored, ``< N/2``)."""
        n = self.resolution
        keep = min(len(coeffs), (n + 1) // 2)
        k = np.arange(keep)
        spectrum = np.zeros(n // 2 + 1, dtype=complex)
        spectrum[:keep] = coeffs[:keep] * self.basis.cell_average_factor(k)
        return FourierBasis.values_of(spectrum, n)

    def state_from_density(self, density: np.ndarray) -> np.ndarray:
        """Exact cell averages of the trigonometric interpolant of point values at the cell centres."""
        density = np.asarray(density, dtype=float)
        require(density.shape == (self.resolution,),
                f"the initial density must have {self.resolution} values (got shape {density.shape})")
        return self._start(self.cell_averages(FourierBasis.coefficients_of(density)))

    # -- diagnostics --------------------------------------------------------------------------------
    def coefficients(self, state: np.ndarray) -> np.ndarray:
        """``Q_hat_k``, ``k = 0..M``: the Fourier coefficients of the cell masses at the cell centres (and the points)."""
        if state.size == self.resolution:
            return self._dft(state) / self.resolution
        rho, y, m = self.split(state)
        return self._dft(rho) / self.resolution + self.point_coefficients(y, m)[:self.conv_coeffs.size]

    def energy(self, state: np.ndarray) -> float:
        """``exp(-beta) E(Q) = (pi / beta) sum_{|k| <= M} c_k |Q_hat_k|^2`` (MATH.md §2.1)."""
        coeffs = self.coefficients(state)
        return self.kernel_operator.energy(coeffs, np.where(np.arange(coeffs.size) == 0, 1.0, 2.0), CIRCLE_NORM)

    def mode_amplitudes(self, state: np.ndarray) -> np.ndarray:
        """``|rho_hat_k|``, ``k = 0..kmax``: the coefficients whose exact cell averages are the grid, plus the points'."""
        rho, y, m = self.split(state)
        self.basis.analysis_input()[:] = rho
        spectrum = self.basis.analyse()[:self._kmodes.size]
        if y.size == 0:
            return np.abs(spectrum) / (self.resolution * self.basis.cell_average_factor(self._kmodes))
        grid = spectrum / (self.resolution * self.basis.cell_average_factor(self._kmodes))
        return np.abs(grid + self.point_coefficients(y, m)[:self._kmodes.size])

    def coords(self) -> dict:
        return {"theta": ("theta", self.basis.theta, {"long_name": "cell centre angle", "units": "rad"}),
                "mode": ("mode", self._kmodes, {"long_name": "Fourier mode k"}), **self.point_coords()}

    def dims(self) -> dict:
        return {"density": ("theta",), "mode_amplitude": ("mode",), **self.point_dims()}


def cell_integrals(faces: np.ndarray, degree: int, dim: int) -> np.ndarray:
    """``G[l, i] = int_{cell i} P_l(x_d) dsigma``, ``l = 0..degree``, exactly (MATH.md §2.2).

    Cells ``th_i < th < th_{i+1}`` in the polar angle (``faces``).  Degree 0 is ``P_0`` times the
    cell volume; for ``l >= 1`` the zonal Laplacian ``(1-t^2)^{-(d-3)/2} d/dt[(1-t^2)^{(d-1)/2} P_l']
    = -l(l+d-2) P_l`` integrates to ``|S^{d-2}| [sin^{d-1} th P_l'(cos th)]_{th_i}^{th_{i+1}} / (l(l+d-2))``.
    """
    p, dp = normalised_gegenbauer(np.cos(faces), degree, dim, derivative=True)
    boundary = np.sin(faces)[:, None] ** (dim - 1) * dp
    ell = np.arange(degree + 1)
    eig = np.where(ell == 0, 1.0, laplace_eigenvalue(ell, dim).astype(float))
    out = sphere_area(dim - 1) * np.diff(boundary, axis=0).T / eig[:, None]
    out[0] = p[0, 0] * zonal_cell_volumes(faces, dim)[0]
    return out


def zonal_cell_volumes(faces: np.ndarray, dim: int, points: int = 20):
    """``(V_i, c_i)``: ``|S^{d-2}| int sin^{d-2} th dth`` over each cell and the cell's centroid in ``th``.

    Gauss–Legendre with ``points`` nodes per cell (the integrand is entire and the cells are
    at most ``pi / 8`` wide: exact to round-off).
    """
    x, w = roots_legendre(points)
    left, width = faces[:-1, None], np.diff(faces)[:, None]
    th = left + 0.5 * width * (x + 1.0)
    weight = 0.5 * width * w * np.sin(th) ** (dim - 2)
    volume = sphere_area(dim - 1) * weight.sum(axis=1)
    centroid = (weight * th).sum(axis=1) / weight.sum(axis=1)
    return volume, centroid


class ZonalFiniteVolume(_FiniteVolumeScheme):
    """Finite volumes for zonal densities on S^{d-1}: ``N`` equal cells in the polar angle (module docstring).

    ``basis`` is a :class:`meanfield.solvers.bases.zonal_basis.ZonalBasis` of degree ``max(2, (N-1)//3)``: it carries the
    initial data (values at its Gauss–Jacobi nodes) and the degrees reported in ``mode_amplitude``.
    ``normalization``: ``post`` (default), ``ngpt`` or ``lnscale`` (MATH.md §6).
    """
    #: memory estimate (meanfield.limits.check_solve_size): work bytes per frame value and per squared resolution
    work_bytes_per_value, work_bytes_per_resolution_squared = 400, 64

    geometry = "zonal"

    def __init__(self, model: Model, resolution: int, backend: str | None = None,
                 positivity_tol: float = 1e-6, resolution_tol: float = 1e-6, normalization=None):
        require(model.dim >= 3, f"--dim must be >= 3 for zonal densities (got {model.dim})")
        require(backend in (None, "gegenbauer"),
                f"the backend= parameter must be gegenbauer for the zonal solver (got {backend!r})")
        require(isinstance(resolution, (int, np.integer)) and not isinstance(resolution, bool)
                and resolution >= 8, f"--resolution (number of cells) must be an integer >= 8 (got {resolution!r})")
        self._common(model, positivity_tol, resolution_tol, normalization)
        n = self.resolution = int(resolution)
        dim, beta = model.dim, model.beta
        from ..bases.zonal_basis import ZonalBasis

        self.basis = basis = ZonalBasis(max(2, dealiased_band(n)), dim)
        self.faces = faces = math.pi * np.arange(n + 1) / n
        self.polar = 0.5 * (faces[:-1] + faces[1:])
        with np.errstate(all="ignore"):
            volumes, centroids = zonal_cell_volumes(faces, dim)
        smallest = float(np.min(volumes)) if np.all(np.isfinite(centroids)) else 0.0
        require(smallest >= np.finfo(float).tiny,
                f"--dim {dim} with --resolution {n}: the polar cells' surface measure |S^{dim - 2}| int sin^{dim - 2} "
                f"underflows double precision (smallest {smallest:.3g}); use --scheme galerkin or a smaller --dim")
        areas = sphere_area(dim - 1) * np.sin(faces) ** (dim - 2)
        areas[0] = areas[-1] = 0.0
        self.fv = FiniteVolume1D(faces, volumes, areas, centroids, periodic=False, nu=model.nu)
        self.band = band = band_limit(beta, dim)
        self.G = cell_integrals(faces, max(band, basis.lmax), dim)
        ell = np.arange(band + 1)
        self.kernel_operator = operator = self.speed_divisor.kernel(ell)
        self.conv_coeffs = operator.conv                                      # exp(-beta) kappa_l
        velocity = operator.velocity()            # exp(-beta) kappa_l / beta (times exp(beta) for USA but nGPT)
        p, dp = normalised_gegenbauer(np.cos(faces), band, dim, derivative=True)
        self._numerator = -np.sin(faces)[:, None] * dp * velocity          # polar component -sin th V
        self._denominator = p * self.conv_coeffs
        self._radial = p * operator.radial if self.speed_divisor.ngpt else None
        self._analysis = self.G[:band + 1]
        self.max_rate = self.speed_divisor.fastest_rate(np.arange(1, basis.lmax + 1))
        self.state_scale = 1.0 / sphere_area(dim)
        self._velocity_table = velocity
        self._point_degree = max(band, basis.lmax)
        self._start_clusters(faces, centroids)

    def cells(self) -> tuple:
        """The contract's cells (:mod:`meanfield.solvers.schemes.contract`): the polar bands, ``|S^{d-2}| sin^{d-2} th``."""
        dim = self.model.dim
        return self.faces, self.fv.volumes, lambda th: sphere_area(dim - 1) * np.sin(th) ** (dim - 2), None

    def face_speed(self, state: np.ndarray, t: float = 0.0, points: np.ndarray | None = None) -> np.ndarray:
        """Polar velocity at the faces at time ``t`` from the Gegenbauer coefficients of ``P`` (MATH.md §2.2, §6)
        and of the rings whose coefficients are ``points`` (:meth:`point_coefficients`)."""
        g = self._analysis @ state
        if points is not None:
            g = g + points[:g.size]
        return self._combine(self._numerator @ g, t, lambda: self._denominator @ g, lambda: self._radial @ g)

    def point_basis(self, th: np.ndarray):
        """``(P_l(cos th_a), P_l'(cos th_a), sin th_a)``, ``l = 0..M``: what the rings' coefficients and speeds need."""
        p, dp = normalised_gegenbauer(np.cos(th), self.conv_coeffs.size - 1, self.model.dim, derivative=True)
        return p, dp, np.sin(th)

    def point_coefficients(self, th: np.ndarray, m: np.ndarray, basis=None) -> np.ndarray:
        """``g_l = sum_a m_a P_l(cos th_a)``: the rings' Gegenbauer coefficients, ``l = 0..M`` from ``basis``
        (:meth:`point_basis`), else ``l = 0 .. max(M, lmax)``."""
        if basis is None:
            return normalised_gegenbauer(np.cos(th), self._point_degree, self.model.dim).T @ m
        return m @ basis[0]

    def point_speed(self, rho: np.ndarray | None, points: np.ndarray, basis, t: float) -> np.ndarray:
        """Polar speed of grid (``rho``; ``None``: empty) plus rings at the rings (their :meth:`point_basis`;
        MATH.md §2.2, §5)."""
        band = self.conv_coeffs.size
        g = points[:band] if rho is None else points[:band] + self._analysis @ rho
        p, dp, sin = basis
        radial = (lambda: p @ (self.kernel_operator.radial * g)) if self.speed_divisor.ngpt else None
        return self._combine(-sin * (dp @ (self._velocity_table * g)), t, lambda: p @ (self.conv_coeffs * g), radial)

    def layer(self, state: np.ndarray, alpha: float, turn=None) -> np.ndarray:
        """The cell averages and rings after one layer of step ``alpha`` (MATH.md §11, "Densities through a
        layer"; Post-LN unless ``turn``, ``a, b = turn(c, |A|)``, says otherwise).  The field of grid plus rings (their Gegenbauer coefficients, as :meth:`face_speed`) gives at each
        face and ring the polar component ``u`` and the radial part ``c`` of the attention output; each moves by
        ``atan2(b u, a)`` in its meridian plane (the poles stay), and each cell's mass, spread evenly
        in surface measure over its moved band, goes to the fixed cells by exact overlaps
        (:func:`meanfield.solvers.schemes.density_layers.overlap_masses`).  A layer that sends faces or rings past
        each other or over a pole stops the run (:class:`meanfield.solvers.schemes.density_layers.LayerFolds`)."""
        require_layers(self)
        rho, y, m = self.split(state)
        g = self._analysis @ rho
        if y.size:
            g = g + self.point_coefficients(y, m)[:g.size]
        faces, turn = self.faces, turn or post_ln_turn(alpha)
        moved = faces + self._polar_shift(g, self._face_tables, turn)
        moved[0], moved[-1] = 0.0, math.pi                             # the poles: no polar component there
        rings = y + self._polar_shift(g, self.point_basis(y), turn) if y.size else y
        if not (np.all(np.diff(moved) > 0) and np.all((rings > 0) & (rings < math.pi))):
            raise LayerFolds(f"--step {alpha:g} sends finite-volume cells or rings past each other or over a pole "
                             f"(a token facing most of the mass, 1 + alpha <x, A_x> < 0); take a smaller --step or "
                             f"--scheme galerkin")
        measure = np.concatenate(([0.0], np.cumsum(self.fv.volumes)))
        moved_measure = np.concatenate(([0.0], np.cumsum(zonal_cell_volumes(moved, self.model.dim)[0])))
        moved_measure[-1] = measure[-1]
        averages = overlap_masses(moved_measure, rho * self.fv.volumes, measure) / self.fv.volumes
        return np.concatenate((averages, rings, m))

    @cached_property
    def _face_tables(self):
        """``(P_l, P_l', sin th)`` at the faces (:meth:`point_basis` of the faces)."""
        return self.point_basis(self.faces)

    def _polar_shift(self, g: np.ndarray, tables, turn) -> np.ndarray:
        """How far a layer turns the places of ``tables`` (:meth:`point_basis`) in the field of the Gegenbauer
        coefficients ``g``: :func:`meanfield.solvers.schemes.density_layers.angle_shift` of the polar component
        ``-sin th V`` and the radial part (SA: both over ``K * rho``)."""
        p, dp, sin = tables
        operator = self.kernel_operator
        speed = -sin * (dp @ (self._velocity_table * g))
        radial = p @ (operator.scaled(operator.radial) * g)
        if self.model.normalised:
            density = p @ (self.conv_coeffs * g)
            speed, radial = speed / density, radial / density
        return angle_shift(*turn(radial, np.hypot(radial, speed)), speed)

    # -- state <-> density ------------------------------------------------------------------------
    @property
    def coordinate(self):
        return self.polar

    def cell_averages(self, coeffs: np.ndarray) -> np.ndarray:
        """Exact cell averages of ``sum_l g_l P_l`` (normalised Gegenbauer coefficients ``g_0..g_L``)."""
        coeffs = np.asarray(coeffs, dtype=float)
        degree = coeffs.size - 1
        G = self.G if degree < self.G.shape[0] else cell_integrals(self.faces, degree, self.model.dim)
        return (G[:degree + 1].T @ coeffs) / self.fv.volumes

    def state_from_density(self, density: np.ndarray) -> np.ndarray:
        """Exact cell averages of the degree-``lmax`` expansion of values at the basis nodes."""
        density = np.asarray(density, dtype=float)
        require(density.shape == (self.basis.size,),
                f"the initial density must have {self.basis.size} values at the basis nodes (got shape {density.shape})")
        return self._start(self.cell_averages(self.basis.analyse(density)))

    # -- diagnostics --------------------------------------------------------------------------------
    def _total(self, state: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``rows @ rho`` plus the rings' coefficients of the same degrees."""
        rho, th, m = self.split(state)
        g = rows @ rho
        return g if th.size == 0 else g + self.point_coefficients(th, m)[:g.size]

    def energy(self, state: np.ndarray) -> float:
        """``exp(-beta) E(P) = (1 / 2 beta) sum_{l <= M} c_l g_l^2`` (MATH.md §2, §2.2), rings included."""
        return self.kernel_operator.energy(self._total(state, self._analysis))

    def mode_amplitudes(self, state: np.ndarray) -> np.ndarray:
        """``|g_l|``, ``l = 0..lmax``, of the piecewise-constant density and the rings."""
        return np.abs(self._total(state, self.G[:self.basis.lmax + 1]))

    def coords(self) -> dict:
        return {"polar": ("polar", self.polar, {"long_name": "polar angle from the pole e (cell centre)",
                                                "units": "rad"}),
                "mode": ("mode", self.basis.degrees, {"long_name": "spherical-harmonic degree l"}),
                **self.point_coords()}

    def dims(self) -> dict:
        return {"density": ("polar",), "mode_amplitude": ("mode",), **self.point_dims()}
