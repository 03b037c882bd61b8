"""What every density scheme shares: the validity monitor and the saved frame (DESIGN.md).

A scheme subclassing :class:`DensityScheme` provides ``basis.integrate``, ``density(state)``
(grid values), ``mean_density(state)``, ``energy(state)``, ``mode_amplitudes(state)``,
``spectral_tail(state)`` and the tolerances ``positivity_tol`` and ``resolution_tol``; the rest of
the scheme contract (:mod:`meanfield.solvers.schemes.contract`) comes with its defaults from :class:`meanfield.solvers.schemes.contract.Scheme`.
A scheme whose state is not a spectral expansion (finite volume) overrides :meth:`DensityScheme.mass`
and :meth:`DensityScheme.further_validity` (its own check in place of the resolution monitor) and may
add a hint to the positivity message (``positivity_hint``).
"""

from __future__ import annotations

import numpy as np

from meanfield.kernel_operator import top_sixth

from .contract import Scheme


class DensityScheme(Scheme):
    """Shared checks and records of the circle, sphere and zonal schemes."""

    _tail_floor = 0.0
    #: mutable fields an exact restart carries (:mod:`meanfield.solvers.records.checkpoint`)
    restart_fields = ("_tail_floor",)
    #: appended to the positivity message (e.g. which stepper keeps positivity)
    positivity_hint = ""

    @property
    def normalization(self):
        """The run's :class:`meanfield.normalization.Normalization` (MATH.md §6), as the particle schemes hold it."""
        return self.speed_divisor.normalization

    def trackers(self) -> list:
        """The cluster bookkeeping of every frame's density (:class:`meanfield.solvers.tracking.clusters.ClusterTracker`:
        count, identities and events of the attention field's clusters, MATH.md §10)."""
        from ..tracking.clusters import ClusterTracker

        return [ClusterTracker(self.model.beta, energy=False)]

    def init_monitor(self, band: int, positivity_tol: float, resolution_tol: float) -> None:
        """The validity monitor's settings: the tolerances, the spectral-tail slice (the top sixth of the
        modes up to ``band``, :func:`meanfield.kernel_operator.top_sixth`) and ``max|X| = 0`` before any rhs."""
        self.positivity_tol = positivity_tol
        self.resolution_tol = resolution_tol
        self._tail = top_sixth(band)
        self.max_speed = 0.0

    def record_initial_tail(self, state: np.ndarray) -> np.ndarray:
        """Remember the initial spectral tail (the resolution monitor's reference); returns ``state``.

        The reference is the larger of the start's own tail and that of its square (over its mean): the first steps'
        quadratic products put about that much into the top of the band whatever the grid, so a band-limited start
        (``perturbed:EPS``, tail 0) on a coarse grid (circle ``N < 128``: its degree-32 products reach the
        monitored top sixth) is not stopped at once for a tail of ``EPS^2`` it made itself."""
        own = self.spectral_tail(state)
        density = self.density(state)
        mean = float(np.mean(density))
        square = self.spectral_tail(self.analysed(density * density / mean)) if mean > 0 else 0.0
        self._tail_floor = max(own, square)
        return state

    def transport_rows(self, states: np.ndarray, sources: np.ndarray, t: float) -> np.ndarray:
        """``transport(states[i], sources[i], t)`` for every row (the slices of the causal kinetic PDE, MATH.md §8);
        ``max_speed`` is then the largest over the rows.  A scheme with a faster whole-array path overrides it."""
        out = np.empty_like(states)
        fastest = 0.0
        for index, (row, field) in enumerate(zip(states, sources)):
            out[index] = self.transport(row, field, t)
            fastest = max(fastest, self.max_speed)
        self.max_speed = fastest
        return out

    def mass(self, state: np.ndarray, density: np.ndarray) -> float:
        """``int rho`` of ``state`` whose grid values are ``density``: the basis's quadrature."""
        return self.basis.integrate(density)

    def validity(self, state: np.ndarray, t: float) -> str | None:
        """``None`` while the state is trustworthy; otherwise why not.

        * finiteness: every coefficient finite;
        * positivity: ``min rho >= -positivity_tol * mean(rho)`` on the grid;
        * then :meth:`further_validity` (the resolution monitor).
        """
        if not np.all(np.isfinite(state)):
            return f"non-finite values at t = {t:.6g}"
        low = float(np.min(self.density(state)))
        if low < -self.positivity_tol * self.mean_density(state):
            return (f"positivity lost at t = {t:.6g}: min density {low:.3g} < "
                    f"-{self.positivity_tol:g} x mean density{self.positivity_hint}")
        return self.further_validity(state, t)

    def further_validity(self, state: np.ndarray, t: float) -> str | None:
        """Resolution: the spectral tail stays below ``max(resolution_tol, 10 x its initial value)``."""
        tail, limit = self.spectral_tail(state), max(self.resolution_tol, 10 * self._tail_floor)
        if tail > limit:
            return (f"resolution lost at t = {t:.6g}: spectral tail {tail:.3g} > {limit:.3g} "
                    f"(increase --resolution or use a scheme that follows clusters)")
        return None

    def frame(self, state: np.ndarray) -> dict:
        """What one saved frame records (DESIGN.md data contract)."""
        density = self.density(state)
        return {"density": density, "mass": self.mass(state, density),
                "energy": self.energy(state), "mode_amplitude": self.mode_amplitudes(state)}
