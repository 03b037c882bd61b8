"""The checks every study's claims are made of (DESIGN.md "Validation").

A :class:`Check` is one claim: "claim, theory value, measured value, tolerance, tolerance source,
pass / fail".  The comparisons :func:`close`, :func:`below`, :func:`at_most`, :func:`at_least`,
:func:`above`, :func:`between`, :func:`equal`, :func:`fraction` and :func:`within_errors` build one;
each refuses a tolerance without its source, one of :data:`SOURCE_KINDS`.  Statistical tolerances are
``z`` standard errors for a false alarm of :data:`FALSE_ALARM` (:func:`standard_errors`).

Each study's module holds its own claims function (``<study>_claims(result) -> list[Check]``), named by
its entry in :data:`meanfield.validation.registry.STUDIES`.  This module imports no other module of
:mod:`meanfield.validation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


#: What a tolerance rests on (DESIGN.md "Validation"): every check's ``source`` is ``"<kind>: <how>"``.
SOURCE_KINDS = {
    "exact": "integers or identities that hold exactly (counts, ranks, closed forms met bit for bit)",
    "round-off": "floating-point rounding only: a count of operations times the machine epsilon",
    "theory": "an error bound or estimate derived from the mathematics (a MATH.md section or a stated formula)",
    "standard error": "a statistical fluctuation: z standard errors of a fit or a mean, z for FALSE_ALARM",
    "measured convergence": "an error measured at two resolutions (or tolerances) and its observed behaviour",
}
#: Two-sided probability that a statistical check fails although the theory holds.
FALSE_ALARM = 1e-3
EPSILON = float(np.finfo(float).eps)


@dataclass(frozen=True)
class Check:
    """One claim of a study: ``passed`` is ``measured`` against ``theory`` within ``tolerance``; ``source``
    says where the tolerance comes from (``"<kind>: <how>"``, ``kind`` in :data:`SOURCE_KINDS`)."""

    claim: str
    theory: str
    measured: float
    tolerance: str
    source: str
    passed: bool


def _number(value) -> float:
    return float(np.asarray(value, dtype=float).reshape(-1)[0]) if np.size(value) == 1 else float(value)


def _source(source: str) -> str:
    """``source`` checked: a kind of :data:`SOURCE_KINDS`, a colon, and what the tolerance is made of."""
    kind, _, how = str(source).partition(":")
    if kind not in SOURCE_KINDS or not how.strip():
        raise ValueError(f"a claim's tolerance source must be '<kind>: <how>' with kind in {list(SOURCE_KINDS)} "
                         f"(got {source!r})")
    return source


def close(claim: str, theory: float, measured, tolerance: float, *, source: str, relative: bool = False) -> Check:
    """``|measured - theory| <= tolerance`` (times ``|theory|`` when ``relative``)."""
    measured = _number(measured)
    bound = tolerance * abs(theory) if relative else tolerance
    return Check(claim, f"{theory:g}", measured, f"{'relative ' if relative else ''}± {tolerance:.3g}",
                 _source(source), bool(abs(measured - theory) <= bound))


def below(claim: str, measured, bound: float, *, source: str, theory: str = "0") -> Check:
    """``measured < bound`` (an error, a gap, a mismatch whose theory value is ``theory``)."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"< {bound:.3g}", _source(source), bool(measured < bound))


def at_most(claim: str, measured, bound: float, *, source: str, theory: str = "0") -> Check:
    """``measured <= bound``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"≤ {bound:.3g}", _source(source), bool(measured <= bound))


def at_least(claim: str, measured, bound: float, theory: str, *, source: str) -> Check:
    """``measured >= bound``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"≥ {bound:.3g}", _source(source), bool(measured >= bound))


def above(claim: str, measured, bound: float, theory: str, *, source: str) -> Check:
    """``measured > bound``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"> {bound:.3g}", _source(source), bool(measured > bound))


def between(claim: str, measured, low: float, high: float, theory: str, *, source: str) -> Check:
    """``low < measured < high``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"in ({low:.3g}, {high:.3g})", _source(source), bool(low < measured < high))


def equal(claim: str, theory, measured, *, source: str) -> Check:
    """Exact agreement of counts (one value, or element by element: measured is then the largest difference)."""
    theory_values = np.asarray(theory, dtype=float).ravel()
    measured_values = np.asarray(measured, dtype=float).ravel()
    if theory_values.size == 1 and measured_values.size == 1:
        return Check(claim, f"{theory_values[0]:g}", float(measured_values[0]), "exact", _source(source),
                     bool(theory_values[0] == measured_values[0]))
    same_shape = theory_values.shape == measured_values.shape
    gap = float(np.max(np.abs(measured_values - theory_values))) if same_shape and theory_values.size else math.nan
    return Check(claim + " (measured: largest difference)", " ".join(f"{v:g}" for v in theory_values), gap, "exact",
                 _source(source), bool(same_shape and gap == 0))


def fraction(claim: str, flags, *, source: str) -> Check:
    """Every one of ``flags`` holds: measured is the fraction that does."""
    flags = np.asarray(flags, dtype=bool).ravel()
    share = float(flags.mean()) if flags.size else math.nan
    return Check(claim, "all", share, "all (measured: the share that holds)", _source(source),
                 bool(flags.size and flags.all()))


def standard_errors(dof: float | None = None, tests: int = 1) -> float:
    """``z`` with ``P(|error| > z x standard error) = FALSE_ALARM / tests``: normal (standard error known in
    advance) or Student's t with ``dof`` degrees of freedom (standard error estimated from the data)."""
    from scipy import stats

    quantile = 1.0 - FALSE_ALARM / (2.0 * tests)
    return float(stats.norm.ppf(quantile) if dof is None else stats.t.ppf(quantile, dof))


def within_errors(claim: str, theory: float, measured, stderr: float, what: str, dof: float | None = None,
                  tests: int = 1) -> Check:
    """``|measured - theory| <= z stderr`` (:func:`standard_errors`); ``what`` says what ``stderr`` is."""
    z = standard_errors(dof, tests)
    spread = "normal" if dof is None else f"t, {dof:g} dof"
    split = f" / {tests} tests" if tests > 1 else ""
    return close(claim, theory, measured, z * float(stderr),
                 source=f"standard error: {z:.2f} x {float(stderr):.3g} ({what}; {spread}, p = {FALSE_ALARM:g}{split})")
