"""Time-dependent noise ``nu(t)`` for PDE and particle runs (``--nu-schedule``).

The noise of MATH.md §1 (the ``sqrt(2 nu) dW`` of each token, the ``nu Laplace(rho)`` of the PDE of §2) may follow
a schedule ``nu(t) >= 0`` instead of a constant ``--nu``.  A slow ramp of ``nu`` from above the linear noise threshold nu_# of
MATH.md §2.3 (:func:`meanfield.theory.linear_noise_threshold`) to below it and back shows the hysteresis of the phase
transition.

Spec grammar (``--nu-schedule SPEC``, or ``nu_schedule="SPEC"`` in :func:`meanfield.solve` and
:func:`meanfield.simulate_particles`)::

    SPEC    := SEGMENT ( "," SEGMENT )*
    SEGMENT := "ramp:" A ">" B "@" T0 ".." T1

``ramp:A>B@T0..T1`` is ``nu = A`` for ``t <= T0``, linear from ``A`` to ``B`` on ``[T0, T1]`` and ``B`` after.
Segments joined by ``,`` follow one another (``T0`` of each ``>=`` ``T1`` of the one before); outside every
segment ``nu`` holds the value at the nearest segment end (before the first: its ``A``; after the last: its
``B``; in a gap: the nearer end's value).  Example, down and back up::

    ramp:0.3>0.1@0..500,ramp:0.1>0.3@500..1000

Values are finite and ``>= 0``, times finite with ``T0 < T1``; each mistake is refused in one line naming
``--nu-schedule``.  In Python a :class:`NoiseSchedule` (``NoiseSchedule.parse(spec)``,
``NoiseSchedule([(A, B, T0, T1), ...])``) or a callable ``nu(t)`` (:class:`FunctionSchedule`) is accepted too
(:func:`as_schedule`).

How the solvers use it: a schedule enters only through :meth:`NoiseSchedule.integral`.  The PDE's noise is the
diagonal part ``nu(t) Delta`` with fixed eigenvalues ``-l (l + d - 2)`` (MATH.md §2.2), so its exact propagator
from ``a`` to ``b`` is ``exp(-l (l + d - 2) int_a^b nu)``, which the Lawson steppers use as their integrating
factors (:mod:`meanfield.solvers.steppers.steppers`); a particle's geodesic random-walk step over ``[t, t + h]`` has
variance ``2 int_t^{t+h} nu`` (:mod:`meanfield.solvers.schemes.particles`).  For a piecewise-linear schedule the integral is
exact (trapezoids over the linear pieces), so a constant schedule ``ramp:A>A@...`` is the ordinary ``--nu A`` run
up to round-off.
"""

from __future__ import annotations

import bisect
import math
import re

import numpy as np

from .errors import require
from .limits import MAX_NU
from .number_text import read_number

#: The option every message names.
OPTION = "--nu-schedule"
_SEGMENT = re.compile(r"^ramp:(?P<a>[^>]+)>(?P<b>[^@]+)@(?P<t0>.+?)\.\.(?P<t1>.+)$")


def _number_text(value: float) -> str:
    """The shortest text that reads back as ``value`` (``500`` rather than ``500.0``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _parse_number(text: str, what: str, segment: str) -> float:
    value = read_number(text.strip())
    require(value is not None, f"{OPTION}: {what} of {segment!r} is not a number (got {text.strip()!r}); "
                               f"the form is ramp:A>B@T0..T1")
    return value


class NoiseSchedule:
    """A piecewise-linear noise schedule ``nu(t)`` (module docstring).

    Parameters
    ----------
    segments : sequence of (A, B, T0, T1)
        The ramps ``ramp:A>B@T0..T1`` in time order: values finite and ``>= 0``, times finite, ``T0 < T1`` and each
        ``T0`` at or after the previous ``T1``.
    """

    def __init__(self, segments):
        try:
            segments = [tuple(float(x) for x in segment) for segment in segments]
        except (TypeError, ValueError):
            segments = None
        require(segments is not None and len(segments) > 0 and all(len(s) == 4 for s in segments),
                f"{OPTION} needs at least one ramp (A, B, T0, T1) of numbers, e.g. ramp:0.3>0.1@0..500")
        previous_end = -math.inf
        for a, b, t0, t1 in segments:
            text = f"ramp:{_number_text(a)}>{_number_text(b)}@{_number_text(t0)}..{_number_text(t1)}" \
                if all(math.isfinite(x) for x in (a, b, t0, t1)) else f"({a}, {b}, {t0}, {t1})"
            require(math.isfinite(a) and math.isfinite(b) and 0 <= a <= MAX_NU and 0 <= b <= MAX_NU,
                    f"{OPTION}: the noise must be finite and >= 0, at most {MAX_NU:g} as --nu (got {text})")
            require(math.isfinite(t0) and math.isfinite(t1) and t0 < t1,
                    f"{OPTION}: segment times must be finite with T0 < T1 (got {text})")
            require(t0 >= previous_end, f"{OPTION}: segments must follow one another in time (got {text} starting "
                                        f"before the previous one ends at {_number_text(previous_end)})")
            previous_end = t1
        self.segments = segments
        self._pieces = self._build_pieces(segments)
        self._starts = [piece[0] for piece in self._pieces]

    @staticmethod
    def _build_pieces(segments):
        """``(start, end, v_start, v_end)`` covering the real line: the ramps, constants outside, and each gap split
        at its midpoint between the two nearest ends' values."""
        first, last = segments[0], segments[-1]
        pieces = [(-math.inf, first[2], first[0], first[0])]
        for index, (a, b, t0, t1) in enumerate(segments):
            pieces.append((t0, t1, a, b))
            if index + 1 < len(segments):
                next_a, next_t0 = segments[index + 1][0], segments[index + 1][2]
                if next_t0 > t1:
                    middle = 0.5 * (t1 + next_t0)
                    pieces += [(t1, middle, b, b), (middle, next_t0, next_a, next_a)]
        pieces.append((last[3], math.inf, last[1], last[1]))
        return [piece for piece in pieces if piece[1] > piece[0]]

    @classmethod
    def parse(cls, spec: str) -> "NoiseSchedule":
        """The schedule of a text spec (module docstring); one-line refusals naming ``--nu-schedule``."""
        require(isinstance(spec, str) and spec.strip() != "",
                f"{OPTION} must be a spec such as ramp:0.3>0.1@0..500 (got {spec!r})")
        segments = []
        for part in spec.split(","):
            part = part.strip()
            match = _SEGMENT.match(part)
            require(match is not None and "..." not in part.partition("@")[2],
                    f"{OPTION}: {part!r} is not of the form ramp:A>B@T0..T1 (segments joined by ','; "
                    f"T0 and T1 separated by exactly two dots)")
            segments.append(tuple(_parse_number(match[key], what, part) for key, what in
                                  (("a", "A"), ("b", "B"), ("t0", "T0"), ("t1", "T1"))))
        return cls(segments)

    # -- values --------------------------------------------------------------------------------------
    @property
    def spec(self) -> str:
        """The canonical text spec (what the run's ``nu_schedule`` attribute and ``command`` record)."""
        return ",".join(f"ramp:{_number_text(a)}>{_number_text(b)}@{_number_text(t0)}..{_number_text(t1)}"
                        for a, b, t0, t1 in self.segments)

    def _piece(self, t: float) -> int:
        return max(bisect.bisect_right(self._starts, t) - 1, 0)

    @staticmethod
    def _linear(piece, t: float) -> float:
        start, end, v0, v1 = piece
        if v0 == v1:
            return v0
        return v0 + (v1 - v0) * ((t - start) / (end - start))

    def value(self, t: float) -> float:
        """``nu(t)``."""
        return self._linear(self._pieces[self._piece(float(t))], float(t))

    def values(self, times) -> np.ndarray:
        """``nu`` at each of ``times`` (an array of the same shape)."""
        times = np.asarray(times, dtype=float)
        return np.array([self.value(t) for t in times.ravel()], dtype=float).reshape(times.shape)

    def integral(self, t0: float, t1: float) -> float:
        """``int_{t0}^{t1} nu(t) dt`` (negative when ``t1 < t0``), exact for the piecewise-linear ``nu``: the
        trapezoid of each linear piece met."""
        t0, t1 = float(t0), float(t1)
        if t1 < t0:
            return -self.integral(t1, t0)
        total = 0.0
        pieces = self._pieces
        index = self._piece(t0)
        while index < len(pieces) and pieces[index][0] < t1:
            piece = pieces[index]
            a, b = max(t0, piece[0]), min(t1, piece[1])
            if b > a:
                v0, v1 = self._linear(piece, a), self._linear(piece, b)
                total += (b - a) * (v0 if v0 == v1 else 0.5 * (v0 + v1))
            index += 1
        return total

    def max_value(self) -> float:
        """The largest ``nu`` of the schedule."""
        return max(max(a, b) for a, b, _, _ in self.segments)

    def __repr__(self) -> str:
        return f"NoiseSchedule.parse({self.spec!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, NoiseSchedule) and self.spec == other.spec

    def __hash__(self) -> int:
        return hash(self.spec)


class FunctionSchedule(NoiseSchedule):
    """A schedule ``nu(t)`` given by a Python callable (the API only; a file cannot hold it).

    :meth:`value` calls it (a value that is not finite and ``>= 0`` is refused in one line); :meth:`integral` is
    ``GAUSS_NODES``-point Gauss–Legendre quadrature on the interval (exact for polynomials of degree 15, so for
    a smooth ``nu`` over one step its error is far below the steppers' tolerance).  :meth:`max_value` is
    ``inf`` (unknown).  The ``spec`` is ``python:NAME``: a run records it, its ``command`` is
    ``meanfield rerun FILE``, and continuing or re-running the file needs the function again
    (``nu_schedule=`` of :func:`meanfield.solve`, :func:`meanfield.simulate_particles`, :func:`meanfield.rerun`).
    """

    GAUSS_NODES = 8

    def __init__(self, function):
        require(callable(function), f"{OPTION} must be a spec, a NoiseSchedule or a callable nu(t)")
        self.function = function
        self.segments = []
        nodes, weights = np.polynomial.legendre.leggauss(self.GAUSS_NODES)
        self._nodes, self._weights = nodes, weights

    @property
    def spec(self) -> str:
        name = getattr(self.function, "__qualname__", None) or type(self.function).__name__
        return f"python:{name}"

    def value(self, t: float) -> float:
        try:
            value = float(self.function(float(t)))
        except (TypeError, ValueError):
            value = math.nan
        require(math.isfinite(value) and value >= 0,
                f"{OPTION}: the function {self.spec} must return a finite nu >= 0 (got {value} at t = {float(t):g})")
        return value

    def integral(self, t0: float, t1: float) -> float:
        t0, t1 = float(t0), float(t1)
        if t0 == t1:
            return 0.0
        middle, half = 0.5 * (t0 + t1), 0.5 * (t1 - t0)
        return half * sum(w * self.value(middle + half * x) for x, w in zip(self._nodes, self._weights))

    def max_value(self) -> float:
        return math.inf

    def __repr__(self) -> str:
        return f"FunctionSchedule({self.spec})"


def is_function_spec(spec) -> bool:
    """Whether a recorded ``nu_schedule`` names a Python function (``python:NAME``), which a file cannot hold."""
    return isinstance(spec, str) and spec.startswith("python:")


def as_schedule(value) -> NoiseSchedule | None:
    """``nu_schedule=`` as a :class:`NoiseSchedule`: ``None`` (constant noise), a text spec, a
    :class:`NoiseSchedule` or a callable ``nu(t)`` (:class:`FunctionSchedule`); anything else is refused in one
    line."""
    if value is None or isinstance(value, NoiseSchedule):
        return value
    if isinstance(value, str):
        require(not is_function_spec(value), f"{OPTION} {value}: a Python function cannot be read from text; pass "
                                             f"the function itself as nu_schedule=")
        return NoiseSchedule.parse(value)
    require(callable(value), f"{OPTION} must be a spec such as ramp:0.3>0.1@0..500, a NoiseSchedule or a callable "
                             f"nu(t) (got {type(value).__name__})")
    return FunctionSchedule(value)
