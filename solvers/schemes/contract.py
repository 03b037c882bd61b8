"""The scheme contract (DESIGN.md "Structure of the code"): what the run loop, the steppers,
:func:`meanfield.solvers.runs.solve.solve`, the checkpoints and the initial data may ask of a scheme.

Every density scheme, Lagrangian scheme and particle scheme provides the *required* parts of
:class:`SchemeProtocol`: ``name``, ``linear`` (the diagonal linear part ``L`` of
``du/dt = L u + N(u)``, or ``None``), ``state_scale`` (the stepper's absolute tolerance unit),
``rhs(state, t)``, ``stable_dt(cfl)``, ``validity(state, t)`` (``None`` or why the state is not
trustworthy), ``frame(state)`` (one saved record), ``dims()`` and ``coords()`` (the Dataset's
layout).  The PDE schemes add ``geometry``, ``model``, ``basis``, ``resolution`` and
``state_from_density(density)`` (:data:`PDE_PARTS`).

The *optional* parts are declared once, with their defaults, on :class:`Scheme`; a scheme
overrides what it needs:

``default_stepper``
    the stepper ``solve()`` uses when none is named (``"dopri5"``)
``default_cfl``
    the CFL fraction of the fixed-step steppers when ``--cfl`` is not given (``0.5``; the finite volumes ``0.9``)
``power_of_two_steps``
    the fixed-step steppers round the step bound down to a power of two, so that the exponential factors of the
    linear part are computed once per distinct step (``True``; the finite volumes ``False``: no linear part)
``uses_blas``
    whether the rhs calls BLAS (the thread attrs; ``True``)
``pointwise_kernel``
    which pointwise kernel the rhs runs (``"numpy"``)
``takes_cell_averages``
    the state is cell averages (finite volume): initial data are averaged
    conservatively over ``cells()`` and enter through ``state_from_cell_averages`` (``False``)
``remaps_cell_averages``
    initial data given as cell averages (a finite-volume run, a Lagrangian frame flagged
    ``density_resolved = 0``, a DataArray whose ``cell_methods`` say ``mean``) are averaged
    conservatively over ``cells()`` and enter through ``state_from_cell_averages``, other data as
    point values (``False``; the circle Lagrangian scheme's is ``True``; implied by
    ``takes_cell_averages``)
``rng``
    the noise generator an exact restart carries (``None``)
``restart_fields``
    mutable fields an exact restart carries (``()``; :mod:`meanfield.solvers.records.checkpoint`)
``after_switch``
    Mix-LN's switch has passed (``False``; :func:`meanfield.solvers.runs.runloop.run_switching`)
``adaptive_dt(cfl)``
    the adaptive steppers' step cap (``stable_dt``)
``noise_schedule``
    a time-dependent noise ``nu(t)`` (:class:`meanfield.noise_schedule.NoiseSchedule`; ``None``): when set,
    ``linear`` is the noise operator for ``nu = 1`` and the steppers scale it by ``nu(t)``
    (:mod:`meanfield.solvers.steppers.steppers`)
``after_step(state, h, t=None)``
    the post-step map (renormalise, noise; the state itself); ``t``, the step's start, is given when
    ``noise_schedule`` is set
``collapse(state)``, ``will_merge(state)``
    merge coincident nodes, MATH.md §5 (the state itself: nothing merged), and whether ``collapse`` of the state
    will merge any (``False``; the cluster tracker counts the steps it holds before such a collapse)
``dense_frames``, ``frame_state(state)``
    whether its frames may come from the stepper's dense output (``True``: its post-step map is deterministic; the
    particles with noise ``False``, a random walk has no interpolant), and the map that makes an interpolated state a
    frame's state: the deterministic post-step map (the state itself; back onto the sphere for particles and sphere
    Lagrangian nodes; :mod:`meanfield.solvers.runs.runloop`)
``after_restore()``
    re-derive caches after a restart put fields back (nothing)
``static_variables()``
    time-independent Dataset variables, e.g. node weights (``{}``)
``state_from_cell_averages``
    (``state_from_density``)
``cells()``
    ``(faces, volumes, weight, period)`` of the cells whose averages the scheme takes
    (:mod:`meanfield.solvers.runs.initial_state`): cell ``i`` is ``[faces[i], faces[i+1]]`` with volume
    ``volumes[i]``, ``weight`` the measure's density (``None``: ``dx``), ``period`` the circle's
    ``2 pi`` (``None`` on an interval).  Its basis's (the circle's ``N`` equal arcs centred on the grid
    points); elsewhere none (the zonal finite volumes declare their own)
``largest_mode()``
    a PDE scheme's band: its basis's ``band`` (the largest Fourier mode or degree kept)
``build_options``
    keyword settings its constructor takes beyond the common ones (``()``; the Lagrangian schemes'
    ``("collapse_tol",)``): the PDE driver passes these and refuses them for the other schemes
``work_bytes_per_value``, ``work_bytes_per_resolution_squared``, ``frame_values(resolution)``
    its memory estimate, checked before anything is allocated (``2000``, ``0``, ``resolution``;
    :func:`meanfield.limits.check_solve_size`)
``radius_per_node``, ``checked_normalization(normalization)``
    whether it carries a radius per node (``False``; the Lagrangian schemes ``True``), and the class's check of
    a run's normalisation (MATH.md §6): all six with a radius, else those on the sphere (one-line refusal)
``follow_noise_schedule(schedule)``
    let the noise follow ``nu(t)`` (refused in one line; the spectral and Galerkin schemes override it)
``follow_stepper(stepper)``
    adjust to the stepper that will advance it (nothing; the Lagrangian and particle schemes bound their step by
    the closing pairs at the stepper's tolerance)
``trackers()``
    its own trackers, run before the user's (``[]``; the density, Lagrangian and particle schemes' cluster
    bookkeeping)
``cluster_variables(state)``, ``clusters_read_state_alone``
    the frame variables its clusters are read from (its whole ``frame``; the atom schemes: the positions), and
    whether they depend on the state alone (``True``; the Lagrangian and particle schemes with collapse, whose merges
    renumber nodes, ``False``: their states are counted before each collapse that merges, ``will_merge``)
``run_attrs()``, ``variable_attrs()``
    attributes it adds to its run's Dataset and to its variables (``{}``; e.g. ``collapse_tol_used``, the
    finite volumes' ``cell_methods``)

The PDE driver (:mod:`meanfield.solvers.runs.solve`) asks a scheme only through these: it names no scheme.

*Capabilities* are small mixins a scheme declares by inheritance, each setting the parts it changes:
:class:`TakesCellAverages` (finite volume), :class:`RemapsCellAverages` (the circle's Lagrangian nodes),
:class:`CarriesRadius` (all six normalisations), :class:`MergesNodes` (collapse renumbers nodes) and
:class:`FollowsNoiseSchedule` (the spectral and Galerkin schemes).

:func:`conform` is what the callers use instead of probing with ``getattr``: it checks that the scheme's class
inherits :class:`Scheme` (one line otherwise; a user's own scheme, or a test double, inherits it too) and binds
nothing.  ``tests/solvers/test_contract.py`` checks every registered scheme class inherits the base, satisfies the
protocol and declares its capabilities.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class SchemeProtocol(Protocol):
    """The required parts of every scheme (module docstring)."""

    name: str
    linear: object
    state_scale: float

    def rhs(self, state: np.ndarray, t: float) -> np.ndarray: ...

    def stable_dt(self, cfl: float) -> float: ...

    def validity(self, state: np.ndarray, t: float) -> str | None: ...

    def frame(self, state: np.ndarray) -> dict: ...

    def dims(self) -> dict: ...

    def coords(self) -> dict: ...


#: Required parts of every scheme.
REQUIRED_PARTS = ("name", "linear", "state_scale", "rhs", "stable_dt", "validity", "frame", "dims", "coords")
#: Further required parts of the PDE schemes (density and Lagrangian).
PDE_PARTS = ("geometry", "model", "basis", "resolution", "state_from_density")


class Scheme:
    """The optional parts of the contract with their defaults (module docstring).  Schemes inherit it."""

    default_stepper = "dopri5"
    #: The CFL fraction of the fixed-step steppers when ``--cfl`` is not given.
    default_cfl = 0.5
    #: Fixed-step steppers round the step bound down to a power of two (module docstring).
    power_of_two_steps = True
    uses_blas = True
    pointwise_kernel = "numpy"
    takes_cell_averages = False
    remaps_cell_averages = False
    rng = None
    restart_fields: tuple = ()
    after_switch = False
    noise_schedule = None
    #: keyword settings its constructor takes beyond the common ones (``model, resolution, backend, normalization``
    #: and the monitor's), e.g. ``("collapse_tol",)``: the driver passes these and refuses them for other schemes
    build_options: tuple = ()
    #: whether it carries a radius per node, hence all six normalisations of MATH.md §6 (else those on the sphere)
    radius_per_node = False
    #: whether ``cluster_variables(state)`` reads the state alone (the cluster tracker counts at saved frames and keeps
    #: the steps between for their dense output); ``False`` when a collapse changes how a state is read (the tracker
    #: then also counts before each collapse that merges)
    clusters_read_state_alone = True
    #: whether its frames may come from the stepper's dense output (its post-step map is deterministic)
    dense_frames = True
    #: its memory estimate (:func:`meanfield.limits.check_solve_size`, measured in the table there): work bytes per
    #: value of a frame and per squared resolution (dense degree-by-degree matrices)
    work_bytes_per_value = 2000
    work_bytes_per_resolution_squared = 0

    @classmethod
    def frame_values(cls, resolution: int) -> int:
        """Values of one density frame at ``resolution`` (an upper estimate): by default ``resolution``."""
        return resolution

    @classmethod
    def checked_normalization(cls, normalization):
        """The run's :class:`meanfield.normalization.Normalization` if the scheme carries it (MATH.md §6: those on the
        sphere; :class:`CarriesRadius` all six); else one line naming what does
        (:func:`meanfield.solvers.schemes.normalized_velocity.density_normalization`)."""
        from .normalized_velocity import density_normalization
        return density_normalization(normalization)

    def follow_noise_schedule(self, schedule) -> None:
        """Let the noise follow ``schedule`` (:mod:`meanfield.noise_schedule`): by default refused in one line (the
        spectral and Galerkin schemes override it, :class:`meanfield.solvers.schemes.density_scheme.DensityScheme`)."""
        from meanfield.errors import require

        require(False, f"--nu-schedule needs --scheme spectral (circle, sphere) or galerkin (zonal) (got --scheme "
                       f"{self.name}); it takes a constant --nu")

    def follow_stepper(self, stepper) -> None:
        """Adjust to the time stepper that will advance it (e.g. the pair distance whose approach bounds a
        Lagrangian or particle step, :func:`meanfield.solvers.tracking.clusters.closing_distance`): by default nothing."""

    def trackers(self) -> list:
        """Its own trackers (:mod:`meanfield.solvers.tracking.trackers`), run before the user's: by default none (the density,
        Lagrangian and particle schemes keep the cluster bookkeeping of :mod:`meanfield.solvers.tracking.clusters`)."""
        return []

    def cluster_variables(self, state: np.ndarray) -> dict:
        """The frame variables the clusters of ``state`` are read from (MATH.md §10;
        :class:`meanfield.solvers.tracking.clusters.StateClusters`): by default its whole frame."""
        return self.frame(state)

    def run_attrs(self) -> dict:
        """Attributes it adds to its run's Dataset, read after the run: by default none."""
        return {}

    def variable_attrs(self) -> dict:
        """Attributes it adds to its frames' variables, ``{variable: {name: value}}``: by default none."""
        return {}

    def adaptive_dt(self, cfl: float) -> float:
        """The step cap of an adaptive stepper: by default the stability bound."""
        return self.stable_dt(cfl)

    def after_step(self, state: np.ndarray, h: float, t: float | None = None) -> np.ndarray:
        """The post-step map: by default none (the state itself, so the stepper may reuse its last slope).  ``t``
        (the step's start) is given to schemes with a ``noise_schedule``."""
        return state

    def collapse(self, state: np.ndarray) -> np.ndarray:
        """Merge coincident nodes (MATH.md §5): by default none (the state itself)."""
        return state

    def will_merge(self, state: np.ndarray) -> bool:
        """Whether :meth:`collapse` of ``state`` merges nodes: by default never."""
        return False

    def frame_state(self, state: np.ndarray) -> np.ndarray:
        """A state of the stepper's dense output made a frame's state (the deterministic post-step map): by default
        the state itself."""
        return state

    def after_restore(self) -> None:
        """Re-derive what depends on fields a restart put back: by default nothing."""

    def static_variables(self) -> dict:
        """Time-independent Dataset variables: by default none."""
        return {}

    def state_from_cell_averages(self, averages: np.ndarray) -> np.ndarray:
        """The state from cell averages: by default the averages taken as point values."""
        return self.state_from_density(averages)

    def cells(self) -> tuple:
        """``(faces, volumes, weight, period)`` of the cells whose averages the scheme takes: its basis's (on the
        circle the ``N`` equal arcs centred on the grid points, periodic, measure ``dtheta``)."""
        cells = getattr(self.basis, "cells", None)
        if cells is None:
            raise NotImplementedError(f"the {self.geometry} {self.name} scheme declares no cells() to take cell "
                                      f"averages on (meanfield.solvers.schemes.contract)")
        return cells()

    def largest_mode(self) -> int:
        """A PDE scheme's band: the largest Fourier mode (circle) or degree (sphere and zonal) its basis keeps."""
        return int(self.basis.band)


#: The optional parts :class:`Scheme` declares (names of its attributes and methods).
OPTIONAL_PARTS = tuple(name for name in vars(Scheme) if not name.startswith("_"))


def missing_parts(scheme, parts=REQUIRED_PARTS) -> list[str]:
    """The required ``parts`` ``scheme`` (an instance) lacks."""
    return [name for name in parts if not hasattr(scheme, name)]


def conform(scheme):
    """``scheme``, checked to be one: its class inherits :class:`Scheme`, which declares every optional part with its
    default, so nothing is bound at run time; one line otherwise (a user's own scheme inherits :class:`Scheme` and
    the capabilities it has, ``docs/extending.md``)."""
    from meanfield.errors import require

    require(isinstance(scheme, Scheme), f"a scheme must inherit meanfield.solvers.schemes.contract.Scheme, which "
                                        f"declares the optional parts of the contract (got {type(scheme).__name__})")
    return scheme


# ------------------------------------------------------------------------------------------------ capabilities
class TakesCellAverages:
    """Capability: the state is cell averages (finite volume).  Initial data are averaged conservatively over
    ``cells()`` and enter through ``state_from_cell_averages`` (:mod:`meanfield.solvers.runs.initial_state`)."""

    takes_cell_averages = True


class RemapsCellAverages:
    """Capability: initial data given as cell averages (a finite-volume run, a Lagrangian frame flagged
    ``density_resolved = 0``, a DataArray whose ``cell_methods`` say ``mean``) are averaged conservatively over
    ``cells()``; other data enter as point values."""

    remaps_cell_averages = True


class CarriesRadius:
    """Capability: a radius per node, so all six normalisations of MATH.md §6 (a scheme without one runs those on
    the sphere only)."""

    radius_per_node = True

    @classmethod
    def checked_normalization(cls, normalization):
        return normalization


class MergesNodes:
    """Capability: coincident nodes merge (MATH.md §5), by the scheme's ``collapse`` and ``will_merge``.  A merge
    renumbers the nodes, so a state's clusters are read through the node map: the cluster tracker counts the steps
    it holds before each collapse that merges (:mod:`meanfield.solvers.tracking.clusters`)."""

    clusters_read_state_alone = False


class FollowsNoiseSchedule:
    """Capability: the noise may follow ``nu(t)`` (:class:`meanfield.noise_schedule.NoiseSchedule`): ``linear``
    becomes the scheme's ``noise_operator`` (the noise's diagonal operator for ``nu = 1``), which the steppers scale
    by ``nu(t)`` through exact integrating factors ``exp(linear int nu)`` (:mod:`meanfield.solvers.steppers.steppers`).
    The model's own ``nu`` must be 0."""

    def follow_noise_schedule(self, schedule) -> None:
        from meanfield.errors import require

        require(self.model.nu == 0, f"give --nu or --nu-schedule, not both (got --nu {self.model.nu:g})")
        self.noise_schedule, self.linear = schedule, self.noise_operator
