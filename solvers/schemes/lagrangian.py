"""Lagrangian (weighted quadrature-node) schemes on the circle and on S^2 (MATH.md §1, §2, §2.1, §2.2).

The continuity equation ``d rho/dt + div(rho X[rho]) = 0`` (MATH.md §2, ``nu = 0``) is solved
by its characteristics.  The initial density is sampled at the nodes of a quadrature rule,
each node carrying its quadrature mass as a weight:

* circle: nodes ``alpha_j = 2 pi j / N`` (the grid of :class:`meanfield.solvers.bases.fourier.FourierBasis`),
  weights ``w_j = rho_0(alpha_j) 2 pi / N`` (trapezoid rule, spectrally exact for periodic data);
* S^2: the Gauss–Legendre grid of :class:`meanfield.solvers.bases.sphere_basis.SphereBasis` (``lmax = resolution``),
  weights ``w_j = rho_0(x_j) x quadrature weight``.

The nodes then move with the velocity of the weighted empirical measure
``mu = sum_j w_j delta_{x_j}`` (MATH.md §1 with weights, ``X[mu]`` of MATH.md §2).  This
measure is a weak solution of the PDE *exactly* (not only as ``N -> oo``): the weighted
particle system is the PDE restricted to atomic measures.  For any smooth test function
``g``, ``int g d mu_t = sum_j w_j g(Phi_t(alpha_j))`` is the quadrature of
``int rho_0(alpha) g(Phi_t(alpha)) d alpha = int g rho_t`` over the labels; it is spectrally
accurate while the flow map ``Phi_t`` is resolved on the label grid.  Weights never change,
so mass is exact; no positivity limiter is needed; the energy is that of ``mu``.

Velocity.  The kernel is band-limited (MATH.md §2.1–2.2: ``I_k(beta)`` dies once ``k > beta``;
``M = band_limit(beta, d, 1e-16) + 2`` modes), so ``X[mu]`` is a sum over ``M`` modes:

* circle: :class:`meanfield.solvers.schemes.interaction.CircleFourierInteraction` (``O(N M)``, MATH.md §2.1):
  ``T_k = sum_j w_j exp(i k theta_j)``, then per node the ``M``-term Bessel sums.  The
  field's derivative ``X'(theta)`` comes from the same sums (one more factor ``k``) and sets
  the step (:meth:`CircleLagrangian.stable_dt`): a step ``h`` with ``h max|X'| < 1`` keeps
  neighbouring nodes ordered.
* S^2: ``mu_lm = sum_j w_j conj(Y_lm(x_j))`` (``ducc0.sht.adjoint_synthesis_general``), then
  ``exp(-beta) K*mu`` and ``grad`` of ``exp(-beta) K*mu / beta`` at the nodes
  (``ducc0.sht.synthesis_general``, spin 0 and spin 1 ``DERIV1``; MATH.md §2.2 Funk–Hecke
  ``kappa_l``; the SphereBasis conventions: gradient = spin-1 synthesis of
  ``sqrt(l(l+1)) f_lm``).  SA divides the two (the ``exp(beta)`` cancels), USA multiplies by
  ``exp(beta)``.  Cost ``O(N + M^2 log M)`` per evaluation (NUFFT-based, accuracy
  :data:`SHT_EPSILON`).

Density on the grid.  Each saved frame reports one of two densities and says which in
``density_resolved(time)``:

1. *Resolved* (the flow map is resolved): the band-limited projection of ``mu`` onto the
   modes the grid keeps (circle ``|k| <= kmax = (N-1)//3``, sphere ``l <= lmax``), with the
   coefficients ``mu_hat_k = (1/2 pi) sum_j w_j exp(-i k theta_j)`` (MATH.md §2.1;
   sphere ``mu_lm``) synthesised on the grid.  It is reported only if all three hold:
   (a) the flow map is resolved on the label grid: the spectrum of the node displacement
   ``Phi_t(alpha) - alpha`` (circle: FFT over the ``N`` labels; sphere: the three Cartesian
   components analysed on the label grid) has its top sixth below ``resolution_tol``
   (radians / unit length) — the quadrature above is then spectrally accurate;
   (b) the projected density's spectral tail (top sixth of the kept modes, relative to
   mode 0) is below ``max(resolution_tol, 10 x its initial value)``, as in the spectral
   schemes (:class:`meanfield.solvers.schemes.density_scheme.DensityScheme`) — this also catches the node
   quadrature failing first at the highest kept modes (``k |Phi'|`` beyond the label band),
   which is what trips first in the beta = 9 run of the tests; and
   (c) the projection is non-negative up to ``positivity_tol x mean``.
2. *Unresolved* (clusters narrower than the grid): non-negative, mass-exact cell averages on
   cells centred at the grid points, flagged ``density_resolved = 0``.  Circle: the exact cell
   averages (arcs of width ``2 pi / N``) of the flow map's density — the mass between two
   neighbouring characteristics is conserved by the PDE, so each node interval
   ``[theta_j(t), theta_{j+1}(t)]`` carries ``(w_j + w_{j+1}) / 2`` (trapezoid rule for
   ``int rho_0`` between the labels) spread uniformly, i.e. ``rho_0 / Phi'`` averaged per
   interval; equivalently the cumulative distribution interpolated linearly between the
   nodes.  Sphere: the exact cell averages of ``mu`` itself, ``mu(cell) / |cell|`` (longitude
   sectors of width ``2 pi / nlon`` times latitude bands whose areas are the Gauss–Legendre
   weights, so each cell's area is its grid point's quadrature weight): mass-exact but a
   histogram, noisy where nodes are about one per cell.  Either is a coarse picture of a
   weak solution, not a converged pointwise density, which is why the frame is flagged.

``mass``, ``energy`` (``exp(-beta) E(mu)``, MATH.md §2.1 ``(1/2 beta) sum_k ive_|k| |T_k|^2``,
§2.2 ``(1/2 beta) sum_lm exp(-beta) kappa_l |mu_lm|^2``: exact, the kernel being band-limited)
and ``mode_amplitude`` (circle ``|mu_hat_k|``, ``k = 0 .. N/2``; sphere degree amplitudes
``l <= lmax``) are those of ``mu`` in every frame.  The nodes themselves are saved:
``positions(time, particle, component)``, on the circle also ``node_theta(time, particle)``
(in ``[0, 2 pi)``; ``theta`` is already the grid coordinate of ``density``), and
``weights(particle)`` via :meth:`static_variables`.

Validity (the run stops, keeping its frames): non-finite positions; nodes off the sphere;
on the circle a change of the nodes' cyclic order beyond round-off (a characteristic
crossing means the time step failed: exact characteristics never cross); and an SA
normalisation ``exp(-beta) K*mu`` that is not positive at a node (lost to cancellation in the
mode sums).  Loss of grid resolution is *not* a failure: the nodes remain a weak solution and
the run continues (frames flagged unresolved).  Nodes inside a cluster contract at rate
``~1`` and eventually coincide to round-off; such ties are allowed (coinciding nodes move
together from then on, i.e. they merge, which is the exact dynamics to double precision).

No noise: a deterministic Lagrangian scheme has no diffusion, so ``nu > 0`` is refused.

Normalisation schemes (MATH.md §6; ``normalization``, a :class:`meanfield.normalization.Normalization`,
Post-LN by default and then bit for bit the scheme above).  The attention output ``A_j`` of node ``j``
has the tangential part ``P A_j = X[mu](x_j)`` (the field above) and the radial part
``<x_j, A_j> = d/dbeta (K * mu)(x_j) / (K * mu)(x_j)`` (SA; USA undivided): the same band-limited
sums with the coefficients ``exp(-beta) d kappa_l / d beta``
(:func:`meanfield.kernels.scaled_funk_hecke_beta_derivative`), one more pair of sums on the circle,
one more synthesis on S^2; ``|A_j|^2 = |P A_j|^2 + <x_j, A_j>^2``.  Each node's direction then moves
at ``P A_j / s_j`` (:meth:`Normalization.divisor`).  nGPT and LN-scaling keep the state as it is.
Pre-, Mix- and Peri-LN give every node a radius ``r_j`` (``r_j(0) = r0``, ``dr_j/dt`` from
:meth:`Normalization.radial_rate`): the circle state is the ``N`` angles followed by the ``N`` radii,
the sphere state has a fourth column; frames gain ``radius(particle)``.  The nodes are then weighted
particles in ``(direction, radius)``; ``density`` stays the density of their directions.  Such nodes
never collapse (``collapse_tol`` must be 0 or unset): two nodes at one direction with different radii
move at different speeds, so merging them is not exact.  Mix-LN's switch at ``tau`` is a jump of the
field in time: the run lands a step on ``tau`` and restarts the stepper there, then sets ``after_switch``
(as particle runs do).  An exact restart needs no new field: the radii are part of the state.  On the
circle the order check stays: with radii, characteristics could in principle pass each other in
direction (the ``(theta, r)`` flow folding over ``theta``); the run then stops and says so (never seen:
Pre-, Peri- and Mix-LN at beta = 4 and 9, N = 256, to t = 200 keep the order).

Collapse (MATH.md §5; :mod:`meanfield.solvers.tracking.clusters`).  Nodes closer than ``collapse_tol`` (default
:data:`meanfield.solvers.tracking.clusters.DEFAULT_COLLAPSE_TOL`; 0 switches it off) become one node with the summed
weight at their weighted mean position: exact, since coinciding nodes move together for ever.
The state then holds the remaining nodes only; ``weights`` are theirs, ``node_weights`` the
original ones, and every frame reports one position per original node (merged nodes at their
node's position), so ``node_theta``/``positions`` keep their shape.  Until the first merge the
step bound is :meth:`stable_dt`, exactly as without collapse; after it, adaptive steppers use
:meth:`adaptive_dt`, a bound that follows the dynamics instead of the linear growth rate: on the
circle the secant version of the ordering condition, ``h |v_{j+1} - v_j| <= cfl gap_j`` over
neighbouring distinct nodes (it equals ``h |X'| <= cfl`` inside a contracting cluster and
vanishes between far-apart point clusters); on S^2 the particles' ``cfl / (L max|v|)`` and the
closing rate of nearest neighbours (:func:`meanfield.solvers.tracking.clusters.closing_rate`).
"""

from __future__ import annotations

import math

import ducc0
import numpy as np

from meanfield.errors import require
from meanfield.geometry import row_norms
from meanfield.harmonics import SHT_EPSILON, point_mass_coefficients, sphere_locations
from meanfield.initial.sphere import unit_vectors
from meanfield.kernel_operator import top_sixth
from meanfield.kernels import band_limit
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.theory import fastest_growth_rate
from meanfield.app.threads import NONUNIFORM_THREADS

from ..tracking.clusters import ClosingPairsStep, ClusterTracker, NodeCollapse, closing_rate, resolve_collapse_tol
from .contract import CarriesRadius, MergesNodes, RemapsCellAverages, Scheme
from .density_layers import angle_shift, moved_points, post_ln_turn, require_layers
from ..bases.fourier import FourierBasis
from .interaction import CircleFourierInteraction, SphereHarmonicInteraction
from .particles import SPHERE_TOL
from ..bases.sphere_basis import dealiased_grid_values, make_sphere_basis

NUFFT_EPSILON = 1e-13
#: Relative band limit of the kernel: modes with ``kappa_l / kappa_0`` below this are dropped.
KERNEL_TOL = 1e-16
#: Round-off allowed in the circle order check (radians, times ``max(1, |theta|)``).
ORDER_TOL = 1e-12


def _check_common(model: Model, positivity_tol, resolution_tol, alternative: str) -> None:
    require(model.beta > 0, f"--beta must be > 0 for the PDE (got {model.beta:g})")
    require(model.nu == 0, f"--nu must be 0 for --scheme lagrangian (got {model.nu:g}): a deterministic "
                           f"Lagrangian scheme has no diffusion; use {alternative}")
    require(isinstance(positivity_tol, (int, float)) and positivity_tol >= 0,
            f"--positivity-tol must be >= 0 (got {positivity_tol!r})")
    require(isinstance(resolution_tol, (int, float)) and resolution_tol > 0,
            f"--resolution-tol must be > 0 (got {resolution_tol!r})")


def _check_normalization(normalization, collapse_tol) -> Normalization:
    """The scheme of MATH.md §6 (default Post-LN); radius-carrying schemes refuse node collapse."""
    normalization = Normalization() if normalization is None else normalization
    require(isinstance(normalization, Normalization),
            f"normalization must be a meanfield.normalization.Normalization (got {normalization!r})")
    require(not normalization.carries_radius or collapse_tol is None or collapse_tol == 0,
            f"--collapse-tol must be 0 with --normalization {normalization.name} (got {collapse_tol!r}): nodes "
            f"at one direction with different radii move apart, so they never merge")
    return normalization


class _Lagrangian(CarriesRadius, MergesNodes, ClosingPairsStep, Scheme):
    """What the circle and sphere schemes share: records, checks and the resolution decision."""

    name = "lagrangian"
    default_stepper = "dopri5"
    linear = None
    state_scale = 1.0

    weights: np.ndarray
    node_weights: np.ndarray
    collapser: NodeCollapse
    _density_floor = 0.0
    #: the normalisation scheme (MATH.md §6); Post-LN unless given
    normalization = Normalization()
    #: Mix-LN: set by the run's caller once the clock has reached ``mix_switch`` (as for particles,
    #: :func:`meanfield.solvers.runs.runloop.run_switching`: a step lands on ``tau`` and the stepper restarts)
    after_switch = False
    #: mutable fields an exact restart carries (:mod:`meanfield.solvers.records.checkpoint`)
    restart_fields = ("node_weights", "weights", "collapser.owner", "collapser.merged", "_density_floor")
    #: merges of nodes closer than ``collapse_tol`` (MATH.md §5; a state's positions are read through
    #: ``collapser.owner``, which a collapse changes); a radius per node, so every normalisation (§6)
    build_options = ("collapse_tol",)

    def trackers(self) -> list:
        """The cluster bookkeeping of the nodes (:class:`meanfield.solvers.tracking.clusters.ClusterTracker`): the clusters of
        the weighted nodes' attention field (:mod:`meanfield.cluster_detection`)."""
        return [ClusterTracker(self.model.beta)]

    def run_attrs(self) -> dict:
        """``collapse_tol_used``: the merge distance the run applied (MATH.md §5)."""
        return {"collapse_tol_used": self.collapser.tol}

    def static_variables(self) -> dict:
        """Time-independent variables of the Dataset: the nodes' weights (quadrature masses)."""
        return {"weights": ("particle", self.node_weights.copy(),
                            {"long_name": "node weight: initial density x quadrature weight"})}

    def _start_collapse(self, collapse_tol) -> None:
        tol = 0.0 if self.normalization.carries_radius else resolve_collapse_tol(collapse_tol, self.model.nu)
        self.collapser = NodeCollapse(self.n, tol)

    def _denominator_lost(self, t: float) -> str | None:
        low, self._min_denominator = self._min_denominator, math.inf
        if self.model.normalised and not low > 0:
            return (f"SA normalisation lost at t = {t:.6g}: exp(-beta) K*mu = {low:.3g} at a node "
                    f"(cancellation in the mode sums)")
        return None

    def _choose_density(self, projected, tail, flow_tail, cell_average):
        """The projected density if resolved (module docstring, criteria a-c), else the cell averages."""
        mean = self.basis.integrate(cell_average) / self.area
        resolved = (flow_tail <= self.resolution_tol
                    and tail <= max(self.resolution_tol, 10 * self._density_floor)
                    and float(np.min(projected)) >= -self.positivity_tol * mean)
        return (projected if resolved else cell_average), resolved

    def dims(self) -> dict:
        radius = {"radius": ("particle",)} if self.normalization.carries_radius else {}
        return dict(self._dims, density_resolved=(), flow_map_tail=(),
                    positions=("particle", "component"), **radius)

    def _move(self, t: float, tangent, radial, norm, radius):
        """Direction speed ``P A / s`` and ``dr/dt`` of the normalisation scheme (MATH.md §6), from the
        tangential part ``tangent = P A`` (today's velocity), ``radial = <theta, A>``, ``norm = |A|``."""
        scheme = self.normalization
        t = scheme.stage_time(t, self.after_switch)
        divisor = scheme.divisor(t, radius, norm)
        return tangent / divisor, divisor, scheme.radial_rate(t, radial, norm) if scheme.carries_radius else None


class CircleLagrangian(RemapsCellAverages, _Lagrangian):
    """Weighted trapezoid nodes on the circle; see the module docstring.

    State: the unwrapped node angles ``theta_j(t)`` (shape ``(N,)``), ``theta_j(0) = 2 pi j / N``;
    under a normalisation that carries a radius (Pre, Mix, Peri-LN; MATH.md §6) the angles followed by
    the nodes' radii ``r_j(t)`` (shape ``(2N,)``, ``r_j(0) = r0``).
    """
    #: memory estimate (meanfield.limits.check_solve_size): work bytes per frame value
    work_bytes_per_value = 2000

    geometry = "circle"
    area = 2 * math.pi
    restart_fields = _Lagrangian.restart_fields + ("_offset",)

    def __init__(self, model: Model, resolution: int, backend: str | None = None,
                 positivity_tol: float = 1e-6, resolution_tol: float = 1e-6, collapse_tol: float | None = None,
                 normalization: Normalization | None = None):
        require(model.dim == 2, f"--dim must be 2 for the circle (got {model.dim})")
        _check_common(model, positivity_tol, resolution_tol, "--scheme spectral or --scheme fv")
        self.normalization = _check_normalization(normalization, collapse_tol)
        require(isinstance(resolution, (int, np.integer)) and not isinstance(resolution, bool)
                and resolution >= 8 and resolution % 2 == 0,
                f"--resolution (number of nodes) must be an even integer >= 8 (got {resolution!r})")
        require(backend in (None, "pyfftw", "scipy"),
                f"the backend= parameter must be pyfftw or scipy for the circle (got {backend!r})")
        self.model = model
        self.basis = basis = FourierBasis(int(resolution), backend)
        self.resolution = self.n = basis.n
        self.positivity_tol, self.resolution_tol = float(positivity_tol), float(resolution_tol)
        self.labels = basis.theta.copy()
        self.weights = self.node_weights = np.full(self.n, 1.0 / self.n)
        self._start_collapse(collapse_tol)
        self._offset = np.zeros(self.n)       # 2 pi for nodes carried across the seam by a merge
        self._speed = self._theta_of_speed = np.zeros(self.n)
        self.interaction = CircleFourierInteraction(model.beta, model.attention, self.weights, KERNEL_TOL)
        modes = self._modes = self.interaction.modes
        band = np.arange(1, modes[-1] + 1)
        self.max_rate = fastest_growth_rate(model, band)
        self._density_tail = top_sixth(basis.kmax)
        self._flow_tail = top_sixth(basis.n // 2)
        self.lipschitz = 0.0
        self.max_speed = 0.0
        self._min_denominator = math.inf
        self._dims = {"density": ("theta",), "mode_amplitude": ("mode",), "node_theta": ("particle",)}

    # -- state ------------------------------------------------------------------------------------
    def state_from_density(self, density: np.ndarray) -> np.ndarray:
        """Nodes at the grid points, weights ``rho_0(theta_j) 2 pi / N`` (trapezoid rule)."""
        density = np.asarray(density, dtype=float)
        require(density.shape == (self.n,), f"density must have {self.n} grid values (got {density.shape})")
        self.node_weights = density * self.basis.cell
        self._set_weights(self.node_weights)
        state = self.labels.copy()
        self._density_floor = self._density_tail_of(self.coefficients(state))
        if self.normalization.carries_radius:
            return np.concatenate((state, np.full(self.n, self.normalization.r0)))
        return state

    def angles(self, state: np.ndarray) -> np.ndarray:
        """The node angles of a state (the first half when the nodes carry radii)."""
        return state[:state.size // 2] if self.normalization.carries_radius else state

    def radii(self, state: np.ndarray) -> np.ndarray:
        """The node radii of a state (radius-carrying normalisations only)."""
        return state[state.size // 2:]

    def _set_weights(self, weights: np.ndarray) -> None:
        self.weights = self.interaction.weights = weights

    def after_restore(self) -> None:
        """The interaction sums over the restored (merged) weights (:mod:`meanfield.solvers.records.checkpoint`)."""
        self._set_weights(self.weights)

    def points(self, state: np.ndarray) -> np.ndarray:
        """The nodes of a state as unit vectors ``(cos theta, sin theta)``."""
        return self.unit_vectors(self.angles(state))

    @staticmethod
    def unit_vectors(theta: np.ndarray) -> np.ndarray:
        return np.stack((np.cos(theta), np.sin(theta)), -1)

    def expand(self, theta: np.ndarray) -> np.ndarray:
        """One unwrapped angle per original node (merged nodes at their node's angle)."""
        return theta[self.collapser.owner] - self._offset

    def will_merge(self, theta: np.ndarray) -> bool:
        """Whether :meth:`collapse` merges neighbouring nodes."""
        if not self.collapser.enabled or theta.size < 2:
            return False
        tol = self.collapser.tol
        return bool(np.any(np.diff(theta) <= tol)) or theta[0] + 2 * math.pi - theta[-1] <= tol

    def collapse(self, theta: np.ndarray) -> np.ndarray:
        """Merge neighbouring nodes within ``collapse_tol`` (also across the seam); ``theta`` itself if none."""
        tol, count = self.collapser.tol, theta.size
        if not self.collapser.enabled or count < 2:
            return theta
        join = np.diff(theta) <= tol
        seam = theta[0] + 2 * math.pi - theta[-1] <= tol
        if not join.any() and not seam:
            return theta
        labels = np.concatenate(([0], np.cumsum(~join)))
        groups = int(labels[-1]) + 1
        unwrapped = theta.copy()
        if seam and groups > 1:          # the first group joins the last one, one turn further on
            first = labels == 0
            unwrapped[first] += 2 * math.pi
            self._offset[first[self.collapser.owner]] += 2 * math.pi
            labels = np.where(first, groups - 1, labels) - 1
            groups -= 1
        weights = np.bincount(labels, self.weights, minlength=groups)
        total = np.bincount(labels, self.weights * unwrapped, minlength=groups)
        plain = np.bincount(labels, unwrapped, minlength=groups) / np.bincount(labels, minlength=groups)
        merged = np.where(weights > 0, total / np.where(weights > 0, weights, 1.0), plain)
        self.collapser.regroup(labels)
        self._set_weights(weights)
        return merged

    def coefficients(self, theta: np.ndarray) -> np.ndarray:
        """``mu_hat_k = (1/2 pi) sum_j w_j exp(-i k theta_j)``, ``k = 0 .. N/2`` (MATH.md §2.1; NUFFT)."""
        out = np.empty(self.n + 2, dtype=complex)
        # one thread: ducc0's threaded nu2u sums in a run-dependent order (bit-for-bit repeats)
        ducc0.nufft.nu2u(points=self.weights.astype(complex), coord=np.mod(theta, 2 * math.pi)[:, None],
                         nthreads=NONUNIFORM_THREADS, forward=True, epsilon=NUFFT_EPSILON, out=out, fft_order=True)
        return out[:self.n // 2 + 1] / (2 * math.pi)

    # -- dynamics -----------------------------------------------------------------------------------
    def layer(self, state: np.ndarray, alpha: float, turn=None) -> np.ndarray:
        """The node angles after one layer of step ``alpha`` (MATH.md §11; Post-LN unless ``turn``,
        ``a, b = turn(c, |A|)``, says otherwise): each weighted node is a token, moved exactly by ``atan2(b v, a)``
        (``c``, ``v`` the radial and angular parts of the attention output, the exact Bessel sums of the
        interaction); the weights do not change."""
        require_layers(self)
        theta = self.angles(state)
        radial, speed = (part[0] for part in self.interaction.components(theta[None]))
        along, across = (turn or post_ln_turn(alpha))(radial, np.hypot(radial, speed))
        return theta + angle_shift(along, across, speed)

    def rhs(self, state: np.ndarray, t: float) -> np.ndarray:
        """``d theta_j / dt = X[mu](theta_j)`` by the band-limited sums (MATH.md §2.1), and ``max |X'|``.

        The sums of :class:`CircleFourierInteraction` with their ``theta``-derivatives
        (:meth:`CircleFourierInteraction.node_sums`).  Under another normalisation (MATH.md §6) ``X[mu] = P A``
        is divided by the scheme's ``s_j``, with ``<theta_j, A_j>`` from one more pair of sums (:meth:`_normalised`).
        """
        theta = self.angles(state)
        (numerator, slope, denominator, denominator_slope), parts = self.interaction.node_sums(theta)
        if self.model.normalised:
            self._min_denominator = min(self._min_denominator, float(np.min(denominator)))
            speed = numerator / denominator
            slope = (slope - speed * denominator_slope) / denominator
        else:
            speed = numerator
        if self.normalization.name != "post":
            return self._normalised(state, t, theta, speed, slope, parts,
                                    denominator if self.model.normalised else 1.0)
        self.max_speed = float(np.max(np.abs(speed)))
        self.lipschitz = float(np.max(np.abs(slope)))
        self._speed, self._theta_of_speed = speed, theta
        return speed

    def _normalised(self, state, t, theta, tangent, slope, sums, denominator):
        """The motion of MATH.md §6 from ``P A = tangent``: ``<theta, A>`` (numerator sum over
        ``denominator``), ``|A|^2 = |P A|^2 + <theta, A>^2``, then ``P A / s`` and, with radii, ``dr/dt``."""
        radial = self.interaction.node_radial(sums) / denominator
        norm = np.hypot(tangent, radial) if self.normalization.needs_norm else None
        radius = self.radii(state) if self.normalization.carries_radius else None
        speed, divisor, growth = self._move(t, tangent, radial, norm, radius)
        self.max_speed = float(np.max(np.abs(speed)))
        self.lipschitz = float(np.max(np.abs(slope / divisor)))
        self._speed, self._theta_of_speed = speed, theta
        return speed if growth is None else np.concatenate((speed, growth))

    def stable_dt(self, cfl: float) -> float:
        """``cfl / max(max|X'|, lambda_max)``: keeps neighbours ordered (``h |X'| < 1``) and resolves
        the fastest linear growth (MATH.md §2.3) when the field vanishes."""
        return cfl / max(self.lipschitz, self.max_rate)

    def adaptive_dt(self, cfl: float) -> float:
        """:meth:`stable_dt` until nodes have merged; then ``cfl min_j gap_j / |v_{j+1} - v_j|`` over
        neighbouring nodes (module docstring), from the field of the last ``rhs`` call."""
        if not self.collapser.merged:
            return self.stable_dt(cfl)
        theta, speed = self._theta_of_speed, self._speed
        gaps = np.diff(theta, append=theta[0] + 2 * math.pi)
        closing = np.abs(np.diff(speed, append=speed[0]))
        rate = float(np.max(closing / np.maximum(gaps, 1e-300))) if theta.size > 1 else 0.0
        return cfl / max(rate, 1e-300)

    # -- checks and records ---------------------------------------------------------------------------
    def validity(self, state: np.ndarray, t: float) -> str | None:
        if not np.all(np.isfinite(state)):
            return f"non-finite values at t = {t:.6g}"
        theta = self.angles(state)
        if self.normalization.carries_radius and not np.min(self.radii(state)) > 0:
            return f"a node's radius reached {float(np.min(self.radii(state))):.3g} at t = {t:.6g} (must stay > 0)"
        tol = ORDER_TOL * max(1.0, float(np.max(np.abs(theta))))
        gaps = np.diff(theta)
        wrap = float(theta[0] + 2 * math.pi - theta[-1])
        worst = min(float(np.min(gaps)), wrap) if gaps.size else wrap
        if worst < -tol:
            if self.normalization.carries_radius:
                return (f"nodes crossed at t = {t:.6g} (gap {worst:.3g}): the time step failed (lower --cfl or "
                        f"--rtol), or nodes with different radii passed each other (the direction density then "
                        f"has a caustic; use `meanfield particles`)")
            return (f"nodes crossed at t = {t:.6g} (gap {worst:.3g}): the time step failed; "
                    f"lower --cfl or --rtol")
        return self._denominator_lost(t)

    def cell_average(self, theta: np.ndarray) -> np.ndarray:
        """Cell averages, on the arcs ``[theta_c - pi/N, theta_c + pi/N)``, of the density that puts the
        mass ``(w_j + w_{j+1}) / 2`` (the trapezoid rule for ``int rho_0`` between the labels
        ``alpha_j, alpha_{j+1}``) uniformly between the neighbouring characteristics ``theta_j(t), theta_{j+1}(t)``.

        The mass between two characteristics is conserved exactly by the PDE, so this is the flow map's
        density ``rho_0 / Phi'`` averaged over each node interval: non-negative, mass-exact, and exact
        cell averages of the cumulative distribution interpolated linearly between nodes.  Nodes that
        have merged to round-off put their interval's mass in the cell that contains them.
        """
        n, cell, period = self.n, self.basis.cell, 2 * math.pi
        knots = np.maximum.accumulate(theta)                          # ties and round-off crossings
        knots = np.append(knots, knots[0] + period)
        weights = self.node_weights
        interval = 0.5 * (weights + np.roll(weights, -1))            # mass between node j and j+1
        cumulative = np.concatenate(([0.0], np.cumsum(interval)))
        total = cumulative[-1]
        knots[-1] = max(knots[-1], knots[-2])
        edges = self.basis.theta[0] - 0.5 * cell + cell * np.arange(n + 1)
        shift = np.floor((edges - knots[0]) / period)
        at_edges = np.interp(edges - shift * period, knots, cumulative) + shift * total
        return np.diff(at_edges) / cell

    def flow_map_tail(self, theta: np.ndarray) -> float:
        """Largest ``|coefficient|`` of the displacement ``theta_j - alpha_j`` in the top sixth of ``0 .. N/2``."""
        return float(np.max(np.abs(self.basis.to_coeffs(theta - self.labels)[self._flow_tail])))

    def _density_tail_of(self, coeffs: np.ndarray) -> float:
        return float(np.max(np.abs(coeffs[self._density_tail])) / abs(coeffs[0]))

    def cluster_variables(self, state: np.ndarray) -> dict:
        """What its clusters read: the nodes' positions, one per original node (:meth:`frame`'s ``positions``)."""
        return {"positions": self.unit_vectors(self.expand(self.angles(state)))}

    def frame(self, state: np.ndarray) -> dict:
        theta = self.angles(state)
        coeffs = self.coefficients(theta)
        nodes = self.expand(theta)
        projected = self.basis.to_grid(coeffs * self.basis.dealias).copy()
        flow_tail = self.flow_map_tail(nodes)
        density, resolved = self._choose_density(projected, self._density_tail_of(coeffs), flow_tail,
                                                 self.cell_average(nodes))
        out = {"density": density, "mass": self.basis.integrate(density),
               "energy": float(self.interaction.scaled_energy(self.unit_vectors(theta)[None])[0]),
               "mode_amplitude": np.abs(coeffs), "density_resolved": resolved, "flow_map_tail": flow_tail,
               "node_theta": np.mod(nodes, 2 * math.pi), "positions": self.unit_vectors(nodes)}
        if self.normalization.carries_radius:
            out["radius"] = self.radii(state)[self.collapser.owner]
        return out

    def coords(self) -> dict:
        return {"theta": ("theta", self.basis.theta, {"long_name": "angle", "units": "rad"}),
                "mode": ("mode", self.basis.wavenumbers, {"long_name": "Fourier mode k"}),
                "particle": ("particle", np.arange(self.n), {"long_name": "node (label alpha_j = 2 pi j / N)"}),
                "component": ("component", np.arange(2))}


class SphereLagrangian(_Lagrangian):
    """Weighted Gauss–Legendre nodes on S^2; see the module docstring.

    ``resolution`` is the ``lmax`` of the :class:`meanfield.solvers.bases.sphere_basis.SphereBasis` whose grid holds the
    nodes and the reported density.  State: node positions, shape ``(nlat * nlon, 3)``, row-major
    over the grid (``particle = ring * nlon + column``); under a normalisation that carries a radius
    (Pre, Mix, Peri-LN; MATH.md §6) a fourth column holds the nodes' radii ``r_j(t)`` (``r_j(0) = r0``).
    ``nthreads``: ducc0 threads of the grid basis (default :func:`meanfield.app.threads.ducc0_threads`); the
    non-uniform transforms run on :data:`meanfield.app.threads.NONUNIFORM_THREADS` (one: bit for bit).
    """
    #: memory estimate (meanfield.limits.check_solve_size): work bytes per frame value (the dealiased grid's)
    work_bytes_per_value = 2500
    frame_values = staticmethod(dealiased_grid_values)

    geometry = "sphere"
    area = 4 * math.pi
    #: no threaded BLAS on the right-hand side: the same bits at any thread count (meanfield.app.threads.thread_attrs)
    uses_blas = False

    def __init__(self, model: Model, resolution: int, backend: str | None = None,
                 positivity_tol: float = 1e-6, resolution_tol: float = 1e-6, nthreads: int | None = None,
                 collapse_tol: float | None = None, normalization: Normalization | None = None):
        require(model.dim == 3, f"--dim must be 3 for the sphere (got {model.dim})")
        _check_common(model, positivity_tol, resolution_tol, "--scheme spectral")
        self.normalization = _check_normalization(normalization, collapse_tol)
        require(isinstance(resolution, (int, np.integer)) and not isinstance(resolution, bool) and resolution >= 6,
                f"--resolution (lmax) must be an integer >= 6 (got {resolution!r})")
        self.model = model
        self.basis = basis = make_sphere_basis(int(resolution), backend, nthreads)
        self.resolution = basis.lmax
        # the non-uniform transforms stay on one thread: ducc0's threaded adjoint does not repeat bit for bit
        # and its threaded synthesis_general changes with the count (meanfield.app.threads); the grid basis is threaded
        self.nthreads = NONUNIFORM_THREADS
        self.positivity_tol, self.resolution_tol = float(positivity_tol), float(resolution_tol)
        self.labels = np.ascontiguousarray(unit_vectors(basis).reshape(3, -1).T)
        self.n = self.labels.shape[0]
        self.weights = self.node_weights = np.full(self.n, 1.0 / self.n)
        self._start_collapse(collapse_tol)
        # the velocity's sums (MATH.md §2.2, §6) on the band lmax = M(beta): the particle path's, at this band
        # and accuracy; its weights are this scheme's (set before every right-hand side)
        self.interaction = SphereHarmonicInteraction(model.beta, model.attention, self.weights, nthreads=self.nthreads,
                                                     band=band_limit(model.beta, 3, KERNEL_TOL) + 2,
                                                     epsilon=SHT_EPSILON)
        self.band = band = self.interaction.band
        self.lipschitz_factor = 2.0 + model.beta
        degrees = np.arange(1, band + 1)
        self.max_rate = fastest_growth_rate(model, degrees)
        # latitude bands whose areas are the Gauss-Legendre weights (the cells of the fallback density)
        ring_width = basis.weights[:, 0] * basis.nlon / (2 * math.pi)     # in mu = cos(colatitude)
        self._ring_edges = np.cumsum(ring_width)[:-1]                     # of 1 - mu
        self._density_tail = top_sixth(basis.lmax)
        self.lipschitz = self.max_speed = 0.0
        self._min_denominator = math.inf
        self._dims = {"density": ("lat", "lon"), "mode_amplitude": ("mode",)}

    @staticmethod
    def locations(x: np.ndarray) -> np.ndarray:
        """``(colatitude, longitude)`` of unit vectors ``x`` (shape ``(n, 2)``, ducc0's ``loc``;
        :func:`meanfield.solvers.schemes.interaction.sphere_locations`)."""
        return sphere_locations(x)[0]

    def coefficients(self, x: np.ndarray, lmax: int, loc: np.ndarray | None = None) -> np.ndarray:
        """``mu_lm = sum_j w_j conj(Y_lm(x_j))``, ``l <= lmax`` (orthonormal, m-major; MATH.md §2.2)."""
        loc = self.locations(x) if loc is None else loc
        return point_mass_coefficients(self.weights, loc, lmax, SHT_EPSILON, self.nthreads)[0]

    # -- state ------------------------------------------------------------------------------------
    def state_from_density(self, density: np.ndarray) -> np.ndarray:
        """Nodes at the grid points, weights ``rho_0 x`` Gauss–Legendre weight."""
        density = np.asarray(density, dtype=float)
        require(density.shape == self.basis.shape,
                f"density must be on the {self.basis.shape} grid (got {density.shape})")
        self.weights = self.node_weights = np.ascontiguousarray((density * self.basis.weights).ravel())
        state = self.labels.copy()
        self._density_floor = self._density_tail_of(self.coefficients(state, self.basis.lmax))
        if self.normalization.carries_radius:
            return np.concatenate((state, np.full((self.n, 1), self.normalization.r0)), axis=1)
        return state

    def points(self, state: np.ndarray) -> np.ndarray:
        """The nodes of a state as unit vectors (the first three columns)."""
        return state[:, :3] if self.normalization.carries_radius else state

    @staticmethod
    def radii(state: np.ndarray) -> np.ndarray:
        """The node radii of a state (radius-carrying normalisations only)."""
        return state[:, 3]

    # -- dynamics -----------------------------------------------------------------------------------
    def layer(self, state: np.ndarray, alpha: float, turn=None) -> np.ndarray:
        """The nodes after one layer of step ``alpha`` (MATH.md §11; Post-LN unless ``turn`` says otherwise): each
        weighted node is a token, moved exactly by the layer map; the weights do not change."""
        require_layers(self)
        self.interaction.weights = self.weights
        radial, tangent, norm = (part[0] for part in self.interaction.attention_parts(state[None]))
        along, across = (turn or post_ln_turn(alpha))(radial, norm)
        return moved_points(state, along, across, tangent)

    def rhs(self, state: np.ndarray, t: float) -> np.ndarray:
        """``X[mu](x_j)`` (MATH.md §2, §2.2): gradient of the band-limited ``K*mu`` over ``beta``, SA divided
        by ``K*mu``; returned as Cartesian tangent vectors, shape ``(n, 3)``.  Under another normalisation
        (MATH.md §6) ``X = P A`` is divided by the scheme's ``s_j`` (:meth:`_normalised`), and with radii a
        fourth column holds ``dr_j/dt``."""
        x = self.points(state)
        self.interaction.weights = self.weights
        normalised = self.normalization.name != "post"
        f = self.interaction.fields(x, radial=normalised, density=True)
        v_theta, v_phi, conv = f["v_theta"], f["v_phi"], f["density"]              # conv: exp(-beta) K*mu
        if self.model.normalised:
            self._min_denominator = min(self._min_denominator, float(np.min(conv)))
            self.lipschitz = self.lipschitz_factor
        else:
            self.lipschitz = self.lipschitz_factor * self.model.kind.scale(self.model.beta) * float(np.max(conv))
        growth = None
        if normalised:
            v_theta, v_phi, growth = self._normalised(state, t, v_theta, v_phi, f["radial"])
        colat, lon = f["loc"][:, 0], f["loc"][:, 1]
        cos_t, sin_t, cos_p, sin_p = np.cos(colat), np.sin(colat), np.cos(lon), np.sin(lon)
        velocity = np.empty_like(state)
        velocity[:, 0] = v_theta * cos_t * cos_p - v_phi * sin_p
        velocity[:, 1] = v_theta * cos_t * sin_p + v_phi * cos_p
        velocity[:, 2] = -v_theta * sin_t
        if growth is not None:
            velocity[:, 3] = growth
        self.max_speed = math.sqrt(float(np.max(v_theta ** 2 + v_phi ** 2)))
        self._field = (x, velocity[:, :3])
        return velocity

    def _normalised(self, state, t, v_theta, v_phi, radial):
        """``P A / s`` (spherical components) and ``dr/dt`` (or ``None``) of MATH.md §6 from ``P A`` and
        ``<x, A> = d/dbeta (K * mu) / (K * mu)`` (SA; USA undivided): ``|A|^2 = |P A|^2 + <x, A>^2``."""
        norm = np.sqrt(v_theta ** 2 + v_phi ** 2 + radial ** 2) if self.normalization.needs_norm else None
        radius = self.radii(state) if self.normalization.carries_radius else None
        v_theta, divisor, growth = self._move(t, v_theta, radial, norm, radius)
        self.lipschitz = self.lipschitz / float(np.min(divisor))
        return v_theta, v_phi / divisor, growth

    def stable_dt(self, cfl: float) -> float:
        """``cfl / max(L, lambda_max)`` with the Lipschitz bound ``L`` of the field: SA ``2 + beta`` (the
        attention covariance has norm <= 1, the projection adds <= 2); USA that times ``max K*mu``."""
        return cfl / max(self.lipschitz, self.max_rate)

    def adaptive_dt(self, cfl: float) -> float:
        """:meth:`stable_dt` until nodes have merged; then ``cfl / max(L max|v|, closing rate)``: no node moves
        further than ``cfl / L`` in a step, the bound of the particle engine, and pairs about to coincide
        are resolved (:func:`meanfield.solvers.tracking.clusters.closing_rate`; module docstring)."""
        if not self.collapser.merged:
            return self.stable_dt(cfl)
        return cfl / max(self.lipschitz * self.max_speed, closing_rate(*self._field, self.closing_within), 1e-300)

    def after_step(self, state: np.ndarray, h: float) -> np.ndarray:
        """Renormalise the nodes to the unit sphere (radii untouched)."""
        if self.normalization.carries_radius:
            x = state[:, :3]
            return np.concatenate((x / row_norms(x, keepdims=True), state[:, 3:]), axis=1)
        return state / row_norms(state, keepdims=True)

    def frame_state(self, state: np.ndarray) -> np.ndarray:
        """An interpolated state back onto the sphere (:meth:`after_step`)."""
        return self.after_step(state, 0.0)

    def will_merge(self, x: np.ndarray) -> bool:
        """Whether :meth:`collapse` merges nodes (the grouping is kept for it)."""
        return self.collapser.would_merge(x)

    def collapse(self, x: np.ndarray) -> np.ndarray:
        """Merge nodes within ``collapse_tol`` (:class:`meanfield.solvers.tracking.clusters.NodeCollapse`); ``x`` itself if none."""
        if not self.collapser.enabled:
            return x
        merged, weights = self.collapser.collapse_points(x, self.weights)
        if merged is x:
            return x
        self.weights = np.ascontiguousarray(weights)
        return np.ascontiguousarray(merged)

    # -- checks and records ---------------------------------------------------------------------------
    def validity(self, state: np.ndarray, t: float) -> str | None:
        if not np.all(np.isfinite(state)):
            return f"non-finite values at t = {t:.6g}"
        if self.normalization.carries_radius and not np.min(self.radii(state)) > 0:
            return f"a node's radius reached {float(np.min(self.radii(state))):.3g} at t = {t:.6g} (must stay > 0)"
        x = self.points(state)
        drift = float(np.max(np.abs(row_norms(x) - 1.0)))
        if drift > SPHERE_TOL:
            return f"nodes left the sphere at t = {t:.6g} (| |x| - 1 | = {drift:.3g})"
        return self._denominator_lost(t)

    def cell_average(self, x: np.ndarray) -> np.ndarray:
        """``mu(cell) / |cell|`` on the cells of the grid points (areas = quadrature weights)."""
        b = self.basis
        ring = np.searchsorted(self._ring_edges, 1.0 - x[:, 2], side="right")
        lon = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * math.pi)
        column = np.floor(lon / (2 * math.pi / b.nlon) + 0.5).astype(int) % b.nlon
        mass = np.bincount(ring * b.nlon + column, weights=self.node_weights, minlength=self.n)
        return mass.reshape(b.shape) / b.weights

    def flow_map_tail(self, x: np.ndarray) -> float:
        """Largest degree amplitude, top sixth of ``l <= lmax``, of the displacement's Cartesian components."""
        b = self.basis
        displacement = (x - self.labels).T.reshape((3,) + b.shape)
        return max(float(np.max(b.degree_amplitude(b.analyse(c))[self._density_tail])) for c in displacement)

    def _density_tail_of(self, alm: np.ndarray) -> float:
        amp = self.basis.degree_amplitude(alm)
        return float(np.max(amp[self._density_tail]) / amp[0])

    def energy_from(self, mu_band: np.ndarray) -> float:
        """``exp(-beta) E = (1 / 2 beta) sum_{l,m} exp(-beta) kappa_l |mu_lm|^2`` (MATH.md §2.2)."""
        return self.interaction.kernel_operator.energy(mu_band, self.interaction.multiplicity)

    def cluster_variables(self, state: np.ndarray) -> dict:
        """What its clusters read: the nodes' positions, one per original node (:meth:`frame`'s ``positions``)."""
        return {"positions": self.points(state)[self.collapser.owner]}

    def frame(self, state: np.ndarray) -> dict:
        b = self.basis
        x = self.points(state)
        top = max(b.lmax, self.band)
        mu = self.coefficients(x, top)
        mu_grid = b.resample(mu, b.lmax)
        mu_grid[b.zonal] = mu_grid[b.zonal].real
        projected = b.synthesise(mu_grid)
        nodes = x[self.collapser.owner]
        flow_tail = self.flow_map_tail(nodes)
        density, resolved = self._choose_density(projected, self._density_tail_of(mu_grid), flow_tail,
                                                 self.cell_average(nodes))
        out = {"density": density, "mass": b.integrate(density), "energy": self.energy_from(b.resample(mu, self.band)),
               "mode_amplitude": b.degree_amplitude(mu_grid), "density_resolved": resolved,
               "flow_map_tail": flow_tail, "positions": nodes}
        if self.normalization.carries_radius:
            out["radius"] = self.radii(state)[self.collapser.owner]
        return out

    def coords(self) -> dict:
        b = self.basis
        return {"lat": ("lat", b.lat, {"long_name": "latitude (Gauss-Legendre nodes)", "units": "degrees_north"}),
                "lon": ("lon", b.lon, {"long_name": "longitude", "units": "degrees_east"}),
                "mode": ("mode", np.arange(b.lmax + 1), {"long_name": "spherical-harmonic degree l"}),
                "particle": ("particle", np.arange(self.n), {"long_name": "node (grid point ring * nlon + column)"}),
                "component": ("component", np.arange(3))}
