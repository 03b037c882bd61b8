"""Time steppers, shared by every scheme and named in a registry (DESIGN.md).

A scheme supplies ``rhs(state, t)`` (the nonlinear part ``N``), an optional
diagonal linear part ``linear`` (an array ``L`` with ``du/dt = L u + N(u)``;
the noise term ``-nu l(l+d-2)`` of MATH.md §2.2, treated exactly), and
``stable_dt(cfl)`` (a step the field allows).  Steppers:

``rk4``
    classical RK4 in Lawson integrating-factor form; step from the field (CFL).
``etdrk4``
    Cox–Matthews exponential time differencing RK4; step from the field (CFL).
``ssprk3``
    Shu–Osher strong-stability-preserving RK3 (SSP coefficient 1): each stage is a
    convex combination of forward-Euler steps, so a scheme whose Euler step keeps the
    density non-negative under its CFL bound keeps it with ``ssprk3`` too (finite volume).
``dopri5``
    Dormand–Prince 5(4) in Lawson integrating-factor form with error control
    (``rtol``, ``atol``), capped by the field's stability limit.

With ``L = 0`` all three reduce to their classical explicit forms.  Fixed-step
methods round the CFL step down to a power of two so that the exponential
factors are computed once per distinct step, unless the scheme says its steps are taken as they are
(``power_of_two_steps = False``: the finite volumes, which have no linear part and whose bound is the
positivity bound itself).

Time-dependent noise (``--nu-schedule``, :mod:`meanfield.noise_schedule`): a scheme whose ``noise_schedule``
is set holds the noise's operator for ``nu = 1`` as ``linear`` (``-l (l + d - 2)``, MATH.md §2.2), and the
linear part is ``nu(t) L``.  Its exact propagator from ``a`` to ``b`` is ``exp(L int_a^b nu)``, so the Lawson
steppers (``rk4``, ``ssprk3``, ``dopri5``) take that as the factor between stage times ``t + c_j h`` and
``t + c_i h`` (and from each stage to the step's end in the error estimate): the integrating factor stays exact
and the step is bounded by the transport alone, as with a constant ``nu``.  These factors change with ``t`` on a
ramp, so they are computed per stage pair (cached by the integral's value; 2-3 ``exp`` of the state's size per
stage).  ``etdrk4``'s coefficients assume a constant ``L``: it refuses a schedule.  Every scheme with a schedule
gets the step's start time in its post-step map, ``after_step(state, h, t)`` (particles: the noise over the step).

Adaptive steppers take their cap from the scheme's ``adaptive_dt(cfl)`` (a bound that follows
the dynamics, e.g. once Lagrangian nodes have collapsed, MATH.md §5; by default ``stable_dt``,
:mod:`meanfield.solvers.schemes.contract`), the fixed-step ones from ``stable_dt(cfl)``.  Every step ends with
the scheme's post-step map ``after_step`` (by default none).  After every step
:meth:`_Stepper.dense` evaluates the step's continuous extension (without a linear part):
Dormand–Prince's own fourth-order interpolant for ``dopri5``, the cubic Hermite interpolant
of the end values and slopes for the others; the run loop's merge bookkeeping locates events
between steps with it.  :meth:`_Stepper.restart` forgets the first-same-as-last slope when the
scheme changed the state between steps (nodes merged).

Frames from dense output (:attr:`_Stepper.dense_frames`): ``dopri5`` without a linear part gives the run loop its
frames from the fourth-order interpolant, so its steps follow the error control alone and never shorten to land on a
save time (:mod:`meanfield.solvers.runs.runloop`); the other steppers, and ``dopri5`` with a linear part (noise in a
spectral scheme, whose Lawson interpolant would multiply by ``exp(+nu l^2 c h)``), land a step on every save time.
A step the run loop cuts at its frames is handed to the trackers piece by piece (:class:`StepPiece`), and a run that
ends inside a step puts the stepper back where it stood before that step (:meth:`_Stepper.snapshot`,
:meth:`_Stepper.rewind`; :attr:`_Stepper.state_time`), so that its restart record is the stepper's state.

Every stepper stops the run (:class:`StepSizeUnderflow`, a :class:`StopRun` whose message is the run's stop reason)
on a step within round-off of the clock, ``h <= 1e-14 max(|t|, 1)`` (:data:`ROUND_OFF`): the adaptive controller's
steps as before, and the fixed steps the scheme's bound gives (``--cfl 1e-300`` stepped for ever: ``t = 1.2e-293``
after 15 s).  A step shortened to land on a save time is never that short (the run loop lands within 1e-12).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.errors import InputError, require

from ..schemes.contract import conform
from .layers import apply_layer, layer_turn
from ..schemes.density_layers import LayerFolds


class StopRun(RuntimeError):
    """The stepper cannot go on; the message is the run's stop reason (the run loop stops there)."""


class StepSizeUnderflow(StopRun):
    """A step below round-off of ``t`` (:data:`ROUND_OFF`): asked for by the adaptive controller, or the bound of a
    fixed-step stepper (``--cfl 1e-300``, a tiny ``dt_max``)."""


#: A step of at most this fraction of ``max(|t|, 1)`` is round-off of the clock ``t`` (about 45 ulps of ``t``): the
#: clock takes it with a relative error of 1 % or more, ``t + h == t`` for steps below ``eps |t| / 2``, and the run
#: would step for ever (``--cfl 1e-300`` did) without reaching its end.
ROUND_OFF = 1e-14


def phi_functions(z: np.ndarray):
    """``phi_1, phi_2, phi_3`` of ``z`` (``phi_k(z) = sum_j z^j / (j+k)!``), stable near 0."""
    z = np.asarray(z, dtype=complex)
    small = np.abs(z) < 1.0
    zs = np.where(small, z, 0.0)
    series = [np.zeros_like(z) for _ in range(3)]
    term = np.ones_like(z)
    for j in range(24):  # Taylor branch: 1/24! ~ 1.6e-24
        for k in range(3):
            series[k] = series[k] + term / math.factorial(j + k + 1)
        term = term * zs
    zb = np.where(small, 1.0, z)
    ez = np.exp(zb)
    direct = [(ez - 1) / zb, (ez - 1 - zb) / zb**2, (ez - 1 - zb - zb**2 / 2) / zb**3]
    return [np.where(small, s, d) for s, d in zip(series, direct)]


def _cached(cache: dict, key: float, compute, size: int):
    """``cache[key]``, computed on a miss; the oldest entry is dropped beyond ``size`` entries."""
    value = cache.get(key)
    if value is None:
        if len(cache) >= size:
            del cache[next(iter(cache))]
        value = cache[key] = compute()
    return value


class StepPiece(tuple):
    """The part ``[start, stop]`` (fractions of the step) of a step ``whole`` (a stepper's :attr:`_Stepper.last_step`),
    as a step of its own for the trackers: ``(before, t0, h, slopes, after)`` with ``before`` and ``after`` the states
    at its ends (frames from dense output), the whole step's stage slopes, and :meth:`Dopri5.dense` of a fraction of
    the piece evaluating the whole step's interpolant at the matching fraction."""

    def __new__(cls, whole, start: float, stop: float, before, after):
        _, t, h, ks, _ = whole
        piece = super().__new__(cls, (before, t + start * h, (stop - start) * h, ks, after))
        piece.whole, piece.start, piece.stop = whole, start, stop
        return piece


#: Elements per block of the stage sums (:func:`linear_combination`): a block of each operand, 256 kB, stays in cache.
BLOCK = 32768
#: Arrays of at least this many elements are summed block by block (smaller ones with whole-array operations).
BLOCKED_FROM = 4 * BLOCK


def linear_combination(base, terms, out: np.ndarray) -> np.ndarray:
    """``out = base + f_1 t_1 + f_2 t_2 + ...`` (``terms``: pairs ``(f, t)``; ``base`` ``None``: zero), each product
    rounded, then added left to right: the roundings of that expression as numpy evaluates it term by term.  Large
    C-contiguous operands of one shape and type are summed block by block (:data:`BLOCK`), so that each operand is
    read from memory once instead of once per pass (a stage of dopri5 at n = 1e6 tokens on S^2: 9 ms as whole-array
    passes)."""
    arrays = [t for _, t in terms] + ([] if base is None else [base])
    blocked = out.size >= BLOCKED_FROM and out.flags.c_contiguous and all(
        a.shape == out.shape and a.dtype == out.dtype and a.flags.c_contiguous for a in arrays)
    if not blocked:
        if base is None:
            out[...] = 0.0
        else:
            out[...] = base
        for factor, term in terms:
            out += factor * term
        return out
    flat = out.reshape(-1)
    sources = [t.reshape(-1) for _, t in terms]
    start_values = None if base is None else base.reshape(-1)
    work = np.empty(BLOCK, dtype=out.dtype)
    for start in range(0, flat.size, BLOCK):
        stop = min(start + BLOCK, flat.size)
        block, scratch = flat[start:stop], work[:stop - start]
        if start_values is None:
            block[...] = 0.0
        else:
            block[...] = start_values[start:stop]
        for (factor, _), source in zip(terms, sources):
            np.multiply(source[start:stop], factor, out=scratch)
            block += scratch
    return out


def scaled_squares(err: np.ndarray, u: np.ndarray, new: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """``(|err| / (atol + rtol max(|u|, |new|)))^2`` with that expression's roundings, block by block for large
    C-contiguous operands (:func:`linear_combination`); ``err`` is overwritten."""
    def squares(e, a, b, out):
        scale = np.abs(a)
        np.maximum(scale, np.abs(b), out=scale)
        scale *= rtol
        scale += atol
        np.abs(e, out=out)
        out /= scale
        out *= out
        return out

    if err.size < BLOCKED_FROM or not all(a.flags.c_contiguous and a.shape == err.shape for a in (err, u, new)):
        return squares(err, u, new, np.empty(err.shape))
    ratio = np.empty(err.shape)
    flat, e, a, b = ratio.reshape(-1), err.reshape(-1), u.reshape(-1), new.reshape(-1)
    for start in range(0, flat.size, BLOCK):
        stop = min(start + BLOCK, flat.size)
        squares(e[start:stop], a[start:stop], b[start:stop], flat[start:stop])
    return ratio


def _power_of_two_floor(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x))


class _Stepper:
    name = "?"
    adaptive = False

    def __init__(self, scheme, cfl: float = 0.5, rtol: float = 1e-8, atol: float | None = None,
                 dt_max: float = math.inf):
        scheme = conform(scheme)
        self.scheme, self.cfl, self.rtol = scheme, cfl, rtol
        self.atol = atol if atol is not None else 1e-14 * scheme.state_scale
        self.dt_max = dt_max
        self.linear = scheme.linear
        #: time-dependent noise: ``linear`` is the noise operator for ``nu = 1`` (module docstring)
        self.schedule = scheme.noise_schedule
        self.steps = 0
        self.rejected = 0
        #: the adaptive controller's next step proposal (``None``: fixed steps, or none yet); an exact
        #: restart carries it (:mod:`meanfield.solvers.records.checkpoint`)
        self.next_step = None
        #: per-instance caches of the exponential factors (a method ``lru_cache`` would keep schemes alive)
        self._exp_cache: dict = {}
        self._coefficient_cache: dict = {}
        self._schedule_cache: dict = {}
        self._last = None      # (u, t, h, stage slopes, new) of the last step, for dense output
        self._end_slope = None  # (new, rhs(new)) for the Hermite interpolant
        #: the clock of the state a restored stepper continues from, when that lies before the run's start: a run
        #: that ended inside a step is restored to the step's start (module docstring; ``None``: the run's start)
        self.state_time = None

    #: frames come from the dense output, not from steps landed on the save times (module docstring)
    dense_frames = False

    def snapshot(self) -> tuple:
        """What a step changes in the stepper, for :meth:`rewind`."""
        return self.next_step, self.steps, self.rejected, getattr(self, "_fsal", None), self._last

    def rewind(self, snapshot: tuple) -> None:
        """Put the stepper back as it was at :meth:`snapshot` (before a step it took): the step is retaken exactly
        from the same state, or replaced by one landing on a save time."""
        self.next_step, self.steps, self.rejected, fsal, self._last = snapshot
        if hasattr(self, "_fsal"):
            self._fsal = fsal

    def piece(self, start: float, stop: float, before, after):
        """The last step's part ``[start, stop]`` (:class:`StepPiece`) as the last step while the trackers see it:
        a context manager."""
        return _Piece(self, StepPiece(self._last, start, stop, before, after))

    def _limit(self, cfl: float) -> float:
        """The scheme's step bound: ``adaptive_dt`` for adaptive steppers, ``stable_dt`` otherwise."""
        return (self.scheme.adaptive_dt if self.adaptive else self.scheme.stable_dt)(cfl)

    def restart(self) -> None:
        """Forget the stored slope of the current state (the scheme changed the state between steps)."""

    def frame_coords(self, times: np.ndarray) -> dict:
        """Coordinates the stepper gives the frames at ``times`` beside ``time`` (none; layers: ``layer``)."""
        return {}

    def command_settings(self) -> dict:
        """Settings the run's ``command`` needs beside the stepper's name and tolerances (none; layers: the step)."""
        return {}

    @property
    def last_step(self):
        """What the dense output of the last step needs (:meth:`dense`'s ``step``): kept by a caller that wants
        the continuous extension of a step after later ones (the stepper makes fresh arrays every step)."""
        return self._last

    def dense(self, fraction: float, step=None, end_slope=None) -> np.ndarray:
        """The last step's (or an earlier ``step``'s, from :attr:`last_step`) continuous extension at
        ``t + fraction h`` (``0 <= fraction <= 1``), before the scheme's post-step map; cubic Hermite here (an
        earlier step needs its ``end_slope``, the right-hand side at its end: the scheme may have changed since),
        Dormand–Prince's interpolant in :class:`Dopri5`."""
        if self.linear is not None:
            raise RuntimeError("dense output is implemented only without a linear part")
        u, t, h, ks, new = self._last if step is None else step
        if step is not None:
            if end_slope is None:
                raise RuntimeError("the Hermite extension of an earlier step needs the slope at its end")
            self._end_slope = (new, end_slope)
        if self._end_slope is None or self._end_slope[0] is not new:
            self._end_slope = (new, self.scheme.rhs(new, t + h))
        f0, f1 = ks[0], self._end_slope[1]
        s = fraction
        return ((2 * s**3 - 3 * s**2 + 1) * u + (s**3 - 2 * s**2 + s) * h * f0
                + (-2 * s**3 + 3 * s**2) * new + (s**3 - s**2) * h * f1)

    def _exp(self, s: float):
        """``exp(L s)``, cached per stepper (``s`` takes few distinct values; at most 64 kept)."""
        return _cached(self._exp_cache, s, lambda: np.exp(self.linear * s), 64)

    def _accept(self, new: np.ndarray, h: float, t: float) -> np.ndarray:
        """Apply the scheme's post-step map (e.g. renormalise to the sphere, add noise; by default none) to the
        step from ``t`` to ``t + h``; a scheme with a noise schedule is also given ``t``."""
        if self.schedule is None:
            return self.scheme.after_step(new, h)
        return self.scheme.after_step(new, h, t)

    def _fixed_dt(self, t: float, h_max: float) -> float:
        """The step from ``t``: the scheme's bound (and ``dt_max``), rounded down to a power of two unless the scheme
        takes its steps as they are, then shortened to land on the save time ``t + h_max``.  A bound that is not a
        positive number or lies within round-off of ``t`` stops the run (the shortening never does: the run loop
        lands on a save time within 1e-12 of it, far above :data:`ROUND_OFF`)."""
        limit = self._limit(self.cfl)
        h = min(limit, self.dt_max)
        _require_positive_step(h, t)
        if self.scheme.power_of_two_steps:
            h = _power_of_two_floor(h)
        self._require_resolved(h, t, limit)
        return min(h, h_max)

    def _require_resolved(self, h: float, t: float, limit: float, controlled: bool = False) -> None:
        """Stop the run (:class:`StepSizeUnderflow`) on a step ``h`` within round-off of ``t`` (:data:`ROUND_OFF`),
        naming what asked for it: ``dt_max`` or the scheme's bound ``limit`` at ``cfl`` when that is round-off
        too, else the error control (``controlled``: an adaptive step).  Every stepper's guard against a clock that cannot advance."""
        threshold = ROUND_OFF * max(abs(t), 1.0)
        if h > threshold:
            return
        if controlled and min(limit, self.dt_max) > threshold:
            cause = "the error control asks for a step"
        elif self.dt_max < limit:
            cause = f"dt_max = {self.dt_max:.3g} is"
        else:
            cause = f"the scheme's step bound at cfl = {self.cfl:g} is"
        raise StepSizeUnderflow(f"step size underflow (h = {h:.3g}) at t = {t:.6g}: {cause} within round-off of the "
                                f"clock (h <= {ROUND_OFF:g} max(|t|, 1)), so the run cannot reach its end")


def _require_positive_step(h: float, t: float | None = None) -> None:
    """Stop the run (:class:`StopRun`) on a step that is NaN or not positive: a right-hand side or a stable rate
    that is not finite, which would otherwise shrink a NaN step for ever."""
    if not h > 0:
        at = "" if t is None else f" at t = {t:.6g}"
        raise StopRun(f"step size is not a positive number (h = {h:.3g}){at}: the right-hand side or its stable "
                      f"rate is not finite")


class LawsonRK(_Stepper):
    """Explicit Runge–Kutta in Lawson integrating-factor form for ``u' = L u + N(u)``.

    Stages ``U_i = E(c_i h) u + h sum_j a_ij E((c_i - c_j) h) k_j`` with ``E(s) = exp(L s)``;
    the integrating factor makes the linear (noise) part exact.
    """

    A: list = []
    b: list = []
    b_low: list | None = None
    c: list = []
    order = 4
    #: the last stage is evaluated at the step's result (``c = 1``, ``A[-1] = b[:-1]``, ``b[-1] = 0``)
    fsal = False

    def __init__(self, scheme, **kw):
        super().__init__(scheme, **kw)
        self._fsal = None

    def restart(self) -> None:
        self._fsal = None

    @classmethod
    def stability(cls, z):
        """The stability function ``R(z)``: one step of ``h`` multiplies a solution of ``u' = mu u``
        (``z = h mu``; in Lawson form ``mu`` is the rate of the nonlinear part ``N``, the linear part
        being exact) by ``R(z)`` instead of ``exp(z)``.  Dormand–Prince: ``R(z) = sum_{i<=5} z^i / i!
        + z^6 / 600``, so a fitted rate is off by ``log R(z) / z - 1 ~ z^5 / 3600`` (MATH.md §2.3)."""
        z, slopes = cls._stage_slopes(z)
        return 1.0 + z * sum(b * k for b, k in zip(cls.b, slopes))

    @classmethod
    def _stage_slopes(cls, z):
        """``(z, K_i(z))``: each stage's slope over ``mu u`` for ``u' = mu u`` (``z = h mu``), from the tableau."""
        z = np.asarray(z, dtype=complex if np.iscomplexobj(z) else float)
        slopes = []
        for row in cls.A:
            slopes.append(1.0 + z * sum(a * k for a, k in zip(row, slopes)))
        return z, slopes

    def _factor(self, s: float):
        return None if self.linear is None or s == 0.0 else self._exp(s)

    def _apply(self, s: float, x: np.ndarray) -> np.ndarray:
        f = self._factor(s)
        return x if f is None else f * x

    def _move(self, x: np.ndarray, t: float, h: float, cj: float, ci: float) -> np.ndarray:
        """``x`` carried by the linear part from ``t + cj h`` to ``t + ci h``: ``exp(L (ci - cj) h) x``, or with a
        noise schedule ``exp(L int nu) x`` over that interval (module docstring)."""
        if self.schedule is None or self.linear is None:
            return self._apply((ci - cj) * h, x)     # cj = 0: (ci - 0.0) * h is ci * h, bit for bit
        integral = self.schedule.integral(t + cj * h, t + ci * h)
        if integral == 0.0:
            return x
        factor = _cached(self._schedule_cache, integral, lambda: np.exp(self.linear * integral), 64)
        return factor * x

    def _combine(self, u, t, h, ci, coeffs, ks, cs):
        """``E(ci h) u + h sum_j a_j E((ci - cj) h) k_j`` (:func:`linear_combination`)."""
        base = self._move(u, t, h, 0.0, ci)
        terms = [(h * a, self._move(k, t, h, cj, ci)) for a, k, cj in zip(coeffs, ks, cs) if a != 0.0]
        alike = all(k.shape == base.shape and k.dtype == base.dtype for _, k in terms)
        out = np.empty_like(base) if alike else np.empty(np.broadcast_shapes(base.shape, *(k.shape for _, k in terms)),
                                                         dtype=np.result_type(base, *(k for _, k in terms)))
        return linear_combination(base, terms, out)

    def _attempt(self, u, t, h, k1):
        ks = [k1]
        for i in range(1, len(self.c)):
            stage = self._combine(u, t, h, self.c[i], self.A[i], ks, self.c)
            ks.append(self.scheme.rhs(stage, t + self.c[i] * h))
        new = self._combine(u, t, h, 1.0, self.b, ks, self.c)
        return new, ks

    def step(self, u, t, h_max):
        k1 = self._fsal if self._fsal is not None else self.scheme.rhs(u, t)
        if not self.adaptive:
            h = self._fixed_dt(t, h_max)
            new, ks = self._attempt(u, t, h, k1)
            self.steps += 1
            self._last = (u, t, h, ks, new)
            return self._accept(new, h, t), t + h
        return self._adaptive_step(u, t, h_max, k1)

    def _adaptive_step(self, u, t, h_max, k1):
        bound = self._limit(self.cfl)
        limit = min(bound, self.dt_max)
        proposal = min(self.next_step if self.next_step is not None else 0.01 * limit, limit)
        h = min(proposal, h_max)
        clipped = h < proposal  # shortened to land on a save time: keep the proposal for later
        while True:
            _require_positive_step(h, t)
            self._require_resolved(h, t, bound, controlled=True)
            new, ks = self._attempt(u, t, h, k1)
            norm = self._error_norm(u, t, h, ks, new)
            if not math.isfinite(norm):
                norm = 1e10
            factor = 5.0 if norm == 0 else min(5.0, max(0.2, 0.9 * norm ** -0.2))
            if norm <= 1.0:
                self.steps += 1
                self.next_step = proposal if clipped else h * factor
                self._last = (u, t, h, ks, new)
                accepted = self._accept(new, h, t)
                # first same as last: the last stage is the slope at the new state (bit for bit the same
                # combination), unless the scheme's post-step map moved the state
                self._fsal = ks[-1] if self.fsal and accepted is new else self.scheme.rhs(accepted, t + h)
                return accepted, t + h
            self.rejected += 1
            clipped = False
            h *= factor


    def _error_norm(self, u, t, h, ks, new) -> float:
        """The scaled RMS of the embedded error estimate, ``sqrt(mean((|err| / (atol + rtol max(|u|, |new|)))^2))``,
        computed in place (the same roundings as that expression)."""
        terms = [(h * db, self._move(k, t, h, cj, 1.0))
                 for db, k, cj in zip(np.subtract(self.b, self.b_low), ks, self.c) if db != 0.0]
        err = linear_combination(None, terms, np.zeros_like(u))
        return math.sqrt(float(np.mean(scaled_squares(err, u, new, self.atol, self.rtol))))


class RK4(LawsonRK):
    name = "rk4"
    c = [0.0, 0.5, 0.5, 1.0]
    A = [[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]]
    b = [1 / 6, 1 / 3, 1 / 3, 1 / 6]


class SSPRK3(LawsonRK):
    """Shu–Osher SSP-RK3 as a Butcher tableau (``u1 = u + h k1``, ``u2 = 3/4 u + 1/4 (u1 + h k2)``,
    ``u' = 1/3 u + 2/3 (u2 + h k3)``); with ``L = 0`` each stage is a convex combination of Euler steps."""

    name = "ssprk3"
    c = [0.0, 1.0, 0.5]
    A = [[], [1.0], [0.25, 0.25]]
    b = [1 / 6, 1 / 6, 2 / 3]


class Dopri5(LawsonRK):
    name = "dopri5"
    adaptive = True
    fsal = True
    c = [0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0]
    A = [[],
         [1 / 5],
         [3 / 40, 9 / 40],
         [44 / 45, -56 / 15, 32 / 9],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
         [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
    b = [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0]
    b_low = [5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40]
    #: Dormand–Prince continuous extension (Hairer, Norsett & Wanner II.6; as in SciPy's RK45):
    #: ``u(t + s h) = u + h sum_i k_i (P_i1 s + P_i2 s^2 + P_i3 s^3 + P_i4 s^4)``, fourth order.
    P = np.array([
        [1, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432],
        [0, 0, 0, 0],
        [0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799],
        [0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072],
        [0, 127303824393 / 49829197408, -318862633887 / 49829197408, 701980252875 / 199316789632],
        [0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
        [0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423]])

    @classmethod
    def dense_stability(cls, z, fraction: float):
        """The interpolant's stability function ``R_s(z)``: the dense output at ``t + s h`` of a step of ``u' = mu u``
        (``z = h mu``) is ``R_s(z) u`` instead of ``exp(s z) u``; ``R_1 = R`` (:meth:`LawsonRK.stability`).  A frame
        taken inside a step is off by ``|log R_s(z) - s z|`` in ``log |u|``, about ``4.5e-7`` at ``z = 0.3``,
        ``2.6e-9`` at ``z = 0.1`` (the worst ``s``)."""
        z, slopes = cls._stage_slopes(z)
        weights = cls.P @ (float(fraction) ** np.arange(1, 5))
        return 1.0 + z * sum(w * k for w, k in zip(weights, slopes))

    @property
    def dense_frames(self) -> bool:
        """Frames from the interpolant: without a linear part (module docstring)."""
        return self.linear is None

    def dense(self, fraction: float, step=None, end_slope=None) -> np.ndarray:
        if self.linear is not None:
            raise RuntimeError("dense output is implemented only without a linear part")
        step = self._last if step is None else step
        if isinstance(step, StepPiece):
            fraction, step = step.start + fraction * (step.stop - step.start), step.whole
        u, _, h, ks, _ = step
        weights = self.P @ (fraction ** np.arange(1, 5))
        out = u.copy()
        for w, k in zip(weights, ks):
            if w != 0.0:
                out += (h * w) * k
        return out


class _Piece:
    """:meth:`_Stepper.piece`: the stepper's last step is the piece inside the ``with`` block."""

    def __init__(self, stepper, piece: StepPiece):
        self.stepper, self.piece_of_step = stepper, piece

    def __enter__(self):
        self.stepper._last = self.piece_of_step
        return self.piece_of_step

    def __exit__(self, *exc) -> None:
        self.stepper._last = self.piece_of_step.whole


class ETDRK4(_Stepper):
    """Cox–Matthews ETDRK4 (Kassam–Trefethen form) for ``u' = L u + N(u)``, ``L`` diagonal."""

    name = "etdrk4"

    def __init__(self, scheme, **kw):
        super().__init__(scheme, **kw)
        from meanfield.errors import require
        require(self.schedule is None, "--stepper etdrk4 takes a constant --nu only (its coefficients assume a fixed "
                                       "linear part); with --nu-schedule use dopri5, rk4 or ssprk3")

    def _coefficients(self, h: float):
        """The ETDRK4 factors of step ``h``, cached per stepper (at most 16 kept)."""
        return _cached(self._coefficient_cache, h, lambda: self._compute_coefficients(h), 16)

    def _compute_coefficients(self, h: float):
        lin = np.zeros(1) if self.linear is None else self.linear
        half = phi_functions(lin * h / 2)[0]
        p1, p2, p3 = phi_functions(lin * h)
        real = np.isrealobj(lin)
        pick = (lambda x: x.real) if real else (lambda x: x)
        return (np.exp(lin * h / 2), np.exp(lin * h), pick(h / 2 * half),
                pick(h * (p1 - 3 * p2 + 4 * p3)), pick(h * (p2 - 2 * p3)), pick(h * (4 * p3 - p2)))

    def step(self, u, t, h_max):
        rhs = self.scheme.rhs
        n_u = rhs(u, t)
        h = self._fixed_dt(t, h_max)
        e2, e, q, f1, f2, f3 = self._coefficients(h)
        a = e2 * u + q * n_u
        na = rhs(a, t + h / 2)
        b = e2 * u + q * na
        nb = rhs(b, t + h / 2)
        c = e2 * a + q * (2 * nb - n_u)
        nc = rhs(c, t + h)
        self.steps += 1
        new = e * u + f1 * n_u + 2 * f2 * (na + nb) + f3 * nc
        self._last = (u, t, h, [n_u], new)
        return self._accept(new, h, t), t + h


class ScipyStepper:
    """A :mod:`scipy.integrate` solver (``method``, e.g. ``"DOP853"``) stepping ``scheme.rhs`` in the run loop,
    bounded by ``t_bound``, with terminal ``events`` (callables ``event(t, y)`` with a ``direction``), step for
    step what ``scipy.integrate.solve_ivp(..., dense_output=True, events=events)`` does: the same solver,
    the same event roots (Brent's method on the step's dense output, tolerances ``4 eps``), and the run ends
    at the first root.  ``status`` afterwards: ``0`` reached ``t_bound``, ``1`` an event, ``-1`` failed
    (``message``); ``interpolant`` is the last step's dense output.  Not in :data:`STEPPERS`: it owns its
    clock (the run loop's save times do not shorten its steps), so a run saves every step
    (:class:`meanfield.solvers.tracking.trackers.StepRecorder`).
    """

    name = "scipy"
    adaptive = True

    def __init__(self, scheme, method: str, t0: float, y0: np.ndarray, t_bound: float, rtol: float, atol: float,
                 events=()):
        import scipy.integrate
        self.solver = getattr(scipy.integrate, method)(lambda t, y: scheme.rhs(y, t), float(t0), y0,
                                                       float(t_bound), vectorized=False, rtol=rtol, atol=atol)
        self.events, self.direction = list(events), np.array([event.direction for event in events], dtype=float)
        self._g = [event(float(t0), y0) for event in self.events]
        self.steps, self.rejected, self.next_step = 0, 0, None
        self.status, self.message, self.interpolant = None, None, None

    def restart(self) -> None:
        """Nothing to forget: the scheme never changes the state between steps."""

    def step(self, u, t, h_max):
        if self.status is not None:
            raise StopRun(f"terminal event at t = {t:.6g}" if self.status == 1 else f"reached t = {t:.6g}")
        message = self.solver.step()
        if self.solver.status == "failed":
            self.status, self.message = -1, message
            raise StopRun(f"failed: {message}")
        if self.solver.status == "finished":
            self.status = 0
        t_old, t_new, y = self.solver.t_old, self.solver.t, self.solver.y
        self.interpolant = self.solver.dense_output()
        if self.events:
            g_new = [event(t_new, y) for event in self.events]
            g, g_new_array = np.asarray(self._g), np.asarray(g_new)
            up, down = (g <= 0) & (g_new_array >= 0), (g >= 0) & (g_new_array <= 0)
            active = np.nonzero(up & (self.direction > 0) | down & (self.direction < 0)
                                | (up | down) & (self.direction == 0))[0]
            if active.size > 0:  # terminal: the run ends at the first root
                roots = np.asarray([self._root(self.events[index], t_old, t_new) for index in active])
                order = np.argsort(roots) if t_new > t_old else np.argsort(-roots)
                self.status = 1
                t_new = roots[order][0]
                y = self.interpolant(t_new)
            self._g = g_new
        self.steps += 1
        return y, t_new

    def _root(self, event, t_old: float, t_new: float) -> float:
        from scipy.optimize import brentq
        eps = np.finfo(float).eps
        return brentq(lambda s: event(s, self.interpolant(s)), t_old, t_new, xtol=4 * eps, rtol=4 * eps)


class PostLNLayers(_Stepper):
    """Discrete layers as steps (module docstring): a step of ``h`` is one layer of step ``alpha = dt_max``; it never
    shortens (a save time between two layers is refused), and it needs no noise (MATH.md §11;
    :mod:`meanfield.solvers.steppers.layers`).  The step from ``t`` is layer ``l = t / alpha``: tokens take their
    normalisation's map of that layer (:func:`meanfield.solvers.steppers.layers.apply_layer`) and, with a schedule
    ``layer_weights`` (:mod:`meanfield.solvers.steppers.layer_weights`), layer ``l``'s attention.  Its dense output
    between layers is the cubic Hermite of :class:`_Stepper`."""

    name = "layers"

    def __init__(self, scheme, cfl: float = 0.5, rtol: float = 1e-8, atol: float | None = None,
                 dt_max: float = math.inf, layer_weights=None):
        super().__init__(scheme, cfl, rtol, atol, dt_max)
        #: per-layer attention (:mod:`meanfield.solvers.steppers.layer_weights`; ``None``: the scheme's for all) and
        #: how many layers the run has passed (its last layer's index + 1)
        self.layer_weights, self.layers_passed = layer_weights, 0
        #: the scheme's own push-forward by a layer (densities and Lagrangian nodes, MATH.md §11), else the tokens'
        self._scheme_layer = getattr(self.scheme, "layer", None)
        require(self._scheme_layer is not None or (hasattr(self.scheme, "attention_parts")
                                                   and getattr(self.scheme, "sphere", False)),
                "--stepper layers applies to tokens on the sphere (meanfield particles) and to densities of "
                "every --scheme of meanfield solve, without --mask")
        require(math.isfinite(dt_max) and dt_max > 0, f"--dt-max must be the layer step, > 0 and finite, with "
                                                      f"--stepper layers (got {dt_max:g}; --step sets it)")
        require(self.scheme.model.nu == 0 and self.scheme.noise_schedule is None,
                f"--nu must be 0 for layers: a layer map has no noise (got {self.scheme.model.nu:g})")
        # tokens: every normalisation has its layer map (layers.LAYER_MAPS); densities: Post-LN's
        for switch in self.scheme.normalization.switch_times():
            require(abs(switch / dt_max - round(switch / dt_max)) <= 1e-9 * max(1.0, switch / dt_max),
                    f"--mix-switch must be a whole number of layers (--step {dt_max:g}): Mix-LN turns "
                    f"into Pre-LN between two layers (got {switch:g})")
        require(layer_weights is None or self._scheme_layer is None,
                "--layer-weights applies to tokens (meanfield particles)")

    def step(self, u, t, h_max):
        alpha = self.dt_max
        if h_max < alpha * (1 - 1e-9):
            raise InputError(f"--save-every must be a whole number of layers (--step {alpha:g}): a save time falls "
                             f"{h_max:g} after t = {t:g}, inside a layer")
        if self._scheme_layer is None:            # layer l = t / alpha: its map and, with a schedule, its weights
            layer = int(round(t / alpha))
            new = apply_layer(self.scheme, u, alpha, layer, self.layer_weights)
            self.layers_passed = layer + 1
            moving = self.scheme if self.layer_weights is None else self.layer_weights.scheme(self.scheme, layer)
        else:
            try:
                turn = layer_turn(self.scheme, alpha, int(round(t / alpha)))
                new, moving = self._scheme_layer(u, alpha, turn), self.scheme
            except LayerFolds as exc:          # the state's own doing, not the user's: stop and keep the frames
                raise StopRun(f"layer fold at t = {t:g}: {exc}") from exc
        self.steps += 1
        self._last = (u, t, alpha, (moving.rhs(u, t),), new)
        return new, t + alpha

    def command_settings(self) -> dict:
        """The layer step, ``--dt-max ALPHA``, and the per-layer weights' spec: the run's command repeats them."""
        return {"dt_max": self.dt_max} | ({} if self.layer_weights is None else
                                          {"layer_weights": self.layer_weights.spec})

    def variables(self) -> dict:
        """What a run records of its per-layer weights (:meth:`LayerWeights.variables`; none without)."""
        if self.layer_weights is None:
            return {}
        return self.layer_weights.variables(self.layers_passed, self.scheme.dim)

    def frame_coords(self, times: np.ndarray) -> dict:
        """``layer(time)``: the number of layers a frame has passed, ``t / alpha`` (a whole number, MATH.md §11)."""
        return {"layer": ("time", np.rint(np.asarray(times) / self.dt_max).astype(np.int64))}


STEPPERS = {cls.name: cls for cls in (RK4, SSPRK3, Dopri5, ETDRK4, PostLNLayers)}


def make_stepper(name: str, scheme, **settings):
    """The stepper registered as ``name``, bound to ``scheme``."""
    from meanfield.errors import require
    require(name in STEPPERS, f"--stepper must be one of {', '.join(sorted(STEPPERS))} (got {name!r})")
    return STEPPERS[name](scheme, **settings)
