"""The causal kinetic PDE of decoder attention, ``f(t, s, x)`` (MATH.md §8).

For each token position ``s`` in ``[0, 1]`` the slice ``f(t, s, .)`` is a probability density on
S^{d-1}; it moves in the field of the *positional average* of the slices before it::

    d f/dt + div_x( f X[W f] ) = nu Laplace_x f,      (W h)(s) = int_0^s w(s, s') h(s') ds',
    w(s, s') = lambda exp(-lambda (s - s')) / (1 - exp(-lambda s))      (lambda = 0: 1 / s)

with ``X[.]`` the field of the ordinary PDE (SA or USA, MATH.md §2).  ``K * (W f) = W (K * f)``, so the
field of a slice is the ordinary scheme's field of the averaged coefficients: one right-hand side is
``slice.transport(f, W f)`` of the ordinary spectral scheme (:meth:`meanfield.solvers.schemes.circle.CircleSpectral.transport`,
the sphere's and the zonal Galerkin's), the same bases, kernel operator and normalisations, no second copy
of any formula; the slices are transformed one after the other (on the circle each by the compiled kernel where
it is built, which takes the averaged coefficients as its ``source``).

Positions: ``N_S`` equispaced nodes ``s_i = i / (N_S - 1)`` (both ends: the first token and the last).  The
positional average is a running sum, ``O(N_S)`` per coefficient (:class:`PositionalAverage`):
``A_{i+1} = e^{-lambda ds} A_i + a h_i + g h_{i+1}`` with the weights ``a, g`` that integrate
``e^{-lambda (s_{i+1} - s')}`` times the linear interpolant of ``h`` exactly (product trapezoid: second order
in ``ds`` at any ``lambda``), divided by the same sum of the constant 1, so that data independent of ``s``
stay so to round-off and each slice then solves the ordinary PDE (MATH.md §8's exact reduction; the
slice ``s = 0`` is its own average and always does).  The recursion is evaluated as cumulative sums of the
increments scaled by ``e^{lambda s_j}`` and scaled back by ``e^{-lambda s_i}``, in blocks of positions over
which ``lambda`` times the block's length stays below :data:`BLOCK_EXPONENT` (no overflow at any slope).
Only the coefficients of degrees inside the kernel's band (:meth:`meanfield.kernel_operator.KernelOperator.band_limit`
at :data:`ACTIVE_TOL`) are averaged: the field multiplies the averaged coefficients by the kernel's, which
beyond the band are below ``ACTIVE_TOL`` times the first (the dropped terms change nothing a double can hold).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.errors import require

from .contract import Scheme

#: Below this ``lambda ds`` the product-trapezoid weights use their Taylor series (no cancellation).
SERIES_BELOW = 1e-3
#: The running sums are scaled by at most ``exp(BLOCK_EXPONENT)`` within a block (module docstring).
BLOCK_EXPONENT = 200.0
#: The averaged degrees: the kernel's band at this relative size of its coefficients (module docstring).
ACTIVE_TOL = 1e-30


def product_trapezoid_weights(alibi: float, ds: float) -> tuple[float, float]:
    """``(a, g)``: ``int_0^ds e^{-lambda (ds - u)} [h_0 (1 - u/ds) + h_1 u/ds] du = a h_0 + g h_1`` (MATH.md §8)."""
    z = alibi * ds
    if z < SERIES_BELOW:
        return ds * (0.5 - z / 3 + z * z / 8), ds * (0.5 - z / 6 + z * z / 24)
    decay = math.exp(-z)
    older = (1 - (1 + z) * decay) / (z * z)          # int_0^1 e^{-z v} v dv
    return ds * older, ds * ((1 - decay) / z - older)


class PositionalAverage:
    """``(W h)(s_i)`` on ``positions`` equispaced nodes of ``[0, 1]`` (module docstring; MATH.md §8).

    ``average(h)`` takes an array whose first axis is the position (any trailing shape, real or complex)
    and returns ``W h`` of the same shape.  ``matrix()`` is the same linear map as an ``N_S x N_S`` matrix
    (for the linear theory's checks).
    """

    def __init__(self, positions: int, alibi: float):
        require(isinstance(positions, (int, np.integer)) and positions >= 2,
                f"--positions must be an integer >= 2 (got {positions!r})")
        self.count, self.alibi = int(positions), float(alibi)
        self.s = np.linspace(0.0, 1.0, self.count)
        self.ds = 1.0 / (self.count - 1)
        self.decay = math.exp(-self.alibi * self.ds)
        self.older, self.newer = product_trapezoid_weights(self.alibi, self.ds)
        steps = max(1, int(BLOCK_EXPONENT / max(self.alibi * self.ds, 1e-300)))
        #: blocks of positions ``[start, stop)``, each scaled by ``g_j = e^{lambda (s_j - s_{start - 1})}``
        self.blocks = [(start, min(start + steps, self.count)) for start in range(1, self.count, steps)]
        self._scales = [np.exp(self.alibi * self.ds * np.arange(1, stop - start + 1)) for start, stop in self.blocks]
        self._normaliser = np.ones(self.count)
        self._normaliser = self._running_sums(np.ones(self.count), averaged=False)
        self._normaliser[0] = 1.0

    def _running_sums(self, h: np.ndarray, averaged: bool = True) -> np.ndarray:
        """``A_i = int_0^{s_i} e^{-lambda (s_i - s')} h ds'`` by the product trapezoid rule (``A_0 = 0``), divided by
        the same sums of 1 when ``averaged`` (row 0 is then ``h_0``): the recursion of the module docstring as
        ``A_i = (A_{start - 1} + sum_{start <= j <= i} g_j x_j) / g_i`` per block, ``x_j = a h_{j-1} + g h_j``."""
        out = np.empty_like(h)
        out[0] = h[0] if averaged else 0.0
        shape = (-1,) + (1,) * (h.ndim - 1)
        carry = 0.0
        for (start, stop), grow in zip(self.blocks, self._scales):
            grow = grow.reshape(shape)
            block = np.multiply(h[start - 1:stop - 1], grow * self.older)
            block += h[start:stop] * (grow * self.newer)
            np.cumsum(block, axis=0, out=block)
            block += carry
            scale = grow * self._normaliser[start:stop].reshape(shape) if averaged else grow
            carry = block[-1] / grow[-1]                       # A at the block's last position
            np.divide(block, scale, out=out[start:stop])
        return out

    def __call__(self, h: np.ndarray) -> np.ndarray:
        return self._running_sums(h)

    def matrix(self) -> np.ndarray:
        """The map ``h -> W h`` on the nodes as a matrix (row ``i``: the weights of ``(W h)(s_i)``)."""
        return self(np.eye(self.count))


class CausalKinetic(Scheme):
    """The causal kinetic PDE on ``positions`` slices of an ordinary spectral scheme (module docstring).

    ``slice_scheme``: the ordinary density scheme of one slice (circle or sphere spectral, zonal Galerkin): its
    ``transport`` moves each slice, its diagnostics describe each slice.  ``alibi``: the slope ``lambda >= 0``.
    """

    pointwise_kernel = "numpy"
    restart_fields = ("_tail_floor",)

    def __init__(self, slice_scheme, positions: int, alibi: float):
        self.slice = slice_scheme
        self.average = PositionalAverage(positions, alibi)
        self.positions, self.alibi = self.average.s, float(alibi)
        for name in ("geometry", "model", "basis", "resolution", "name", "linear", "state_scale",
                     "default_stepper", "uses_blas", "max_rate"):
            setattr(self, name, getattr(slice_scheme, name))
        self.max_speed = 0.0
        self._tail_floor = 0.0
        operator = slice_scheme.kernel_operator
        #: the coefficients whose average the field uses (module docstring)
        self.active = np.nonzero(np.abs(operator.degrees) <= operator.band_limit(ACTIVE_TOL))[0]
        if np.array_equal(self.active, np.arange(self.active.size)):
            self.active = slice(0, self.active.size)
        self._source = None

    def follow_noise_schedule(self, schedule) -> None:
        """The noise ``nu(t)`` of every slice (:meth:`meanfield.solvers.schemes.contract.Scheme.follow_noise_schedule` of
        the slice scheme, whose ``linear`` the kinetic PDE shares)."""
        self.slice.follow_noise_schedule(schedule)
        self.linear, self.noise_schedule = self.slice.linear, schedule

    # -- state <-> density ------------------------------------------------------------------------
    def state_from_density(self, density: np.ndarray) -> np.ndarray:
        """The coefficients of every slice of ``density`` (shape ``(N_S,) + one slice's grid``); records the
        largest initial spectral tail (the resolution monitor's reference)."""
        return self.start(np.stack([self.slice.state_from_density(row) for row in density]))

    def start(self, state: np.ndarray) -> np.ndarray:
        """Take ``state`` (every slice's coefficients) as the initial state: records the largest initial spectral
        tail, the resolution monitor's reference; returns ``state``."""
        self._tail_floor = max(self.slice.spectral_tail(row) for row in state)
        return state

    def densities(self, state: np.ndarray) -> np.ndarray:
        """Grid values of every slice, shape ``(N_S,) + one slice's grid``."""
        return np.stack([self.slice.density(row) for row in state])

    def largest_mode(self) -> int:
        return self.slice.largest_mode()

    # -- dynamics ---------------------------------------------------------------------------------
    def rhs(self, state: np.ndarray, t: float) -> np.ndarray:
        """``-div_x(f X[W f])`` of every slice (MATH.md §8)."""
        out = self.slice.transport_rows(state, self.field_source(state), t)
        self.max_speed = self.slice.max_speed
        return out

    def field_source(self, state: np.ndarray) -> np.ndarray:
        """``W f`` on the averaged coefficients (:attr:`active`), zero elsewhere (module docstring)."""
        if self._source is None or self._source.shape != state.shape:
            self._source = np.zeros_like(state)
        self._source[:, self.active] = self.average(state[:, self.active])
        return self._source

    def stable_dt(self, cfl: float) -> float:
        """The slice scheme's bound at the fastest slice's speed."""
        self.slice.max_speed = self.max_speed
        return self.slice.stable_dt(cfl)

    def validity(self, state: np.ndarray, t: float) -> str | None:
        """The slice scheme's checks on every slice (finiteness, positivity, resolution against the largest
        initial tail); the first failure names its position."""
        if not np.all(np.isfinite(state)):
            return f"non-finite values at t = {t:.6g}"
        self.slice._tail_floor = self._tail_floor
        for index, row in enumerate(state):
            reason = self.slice.validity(row, t)
            if reason is not None:
                return f"{reason} (at position s = {self.positions[index]:.4g})"
        return None

    # -- records ------------------------------------------------------------------------------------
    def frame(self, state: np.ndarray) -> dict:
        """Per slice: the density, its mass, energy and mode amplitudes; ``mass`` and ``energy`` are their
        averages over ``s`` (trapezoid), the ordinary run's numbers when the data do not depend on ``s``."""
        density = self.densities(state)
        slice_mass = np.array([self.slice.mass(row, grid) for row, grid in zip(state, density)])
        energy = np.array([self.slice.energy(row) for row in state])
        return {"density": density, "slice_mass": slice_mass, "mass": self.s_mean(slice_mass),
                "energy": self.s_mean(energy),
                "mode_amplitude": np.stack([self.slice.mode_amplitudes(row) for row in state])}

    def s_mean(self, values: np.ndarray) -> float:
        """``int_0^1 values ds`` by the trapezoid rule on the positions."""
        return float(np.trapezoid(values, self.positions))

    def dims(self) -> dict:
        dims = {name: ("s",) + tuple(axes) for name, axes in self.slice.dims().items()}
        return dict(dims, slice_mass=("s",))

    def coords(self) -> dict:
        return dict(self.slice.coords(), s=("s", self.positions, {"long_name": "token position s = j / n",
                                                                  "units": "1"}))

    def static_variables(self) -> dict:
        return self.slice.static_variables()


#: The schemes the kinetic PDE is built on (a spectral expansion per slice).
SLICE_SCHEMES = {"circle": "spectral", "sphere": "spectral", "zonal": "galerkin"}


def check_causal(mask, alibi, positions, geometry: str, scheme: str | None, source=None):
    """``None`` for an ordinary run, else ``(alibi, positions)`` of a causal kinetic run, checked (one line each).

    ``mask``: ``None`` or ``"none"`` (ordinary; then ``alibi`` and ``positions`` must not be given), ``"causal"``;
    ``"strict"`` is refused (its mean field is the causal one, MATH.md §8).  A causal run file given as ``source``
    supplies what is not given."""
    from meanfield.defaults import CAUSAL_DEFAULTS, MASKS
    from meanfield.limits import check_option

    recorded = {} if source is None else source.attrs
    if mask is None and recorded.get("mask", "none") == "causal":
        mask = "causal"
    mask = CAUSAL_DEFAULTS["mask"] if mask is None else mask
    require(mask in MASKS, f"--mask must be one of {', '.join(MASKS)} (got {mask!r})")
    if mask == "none":
        require(alibi is None, "--alibi needs --mask causal (the ALiBi slope of causal attention, MATH.md §8)")
        require(positions is None, "--positions needs --mask causal (the grid of token positions of the kinetic PDE)")
        return None
    require(mask == "causal", "--mask strict (k < j) has the same mean field as --mask causal (they differ by "
                              "O(1/n), MATH.md §8): the kinetic PDE takes --mask causal; particles take both")
    expected = SLICE_SCHEMES[geometry]
    require(scheme in (None, expected), f"--mask causal solves the kinetic PDE with --scheme {expected} on the "
                                        f"{geometry} (got --scheme {scheme})")
    if alibi is None:
        alibi = float(recorded.get("alibi", CAUSAL_DEFAULTS["alibi"]))
    if positions is None:
        positions = int(recorded.get("positions", CAUSAL_DEFAULTS["positions"]))
    return check_option("--alibi", alibi), check_option("--positions", positions)


def continues_causal(source, alibi: float, positions: int) -> bool:
    """Whether run ``source`` is a causal run of the same slope and positions (with the other checks of
    :func:`meanfield.solvers.records.checkpoint.continues_exactly`, an exact restart)."""
    attrs = source.attrs
    return (attrs.get("mask") == "causal" and float(attrs.get("alibi", -1.0)) == alibi
            and int(attrs.get("positions", -1)) == positions)
