"""What the text specs of every geometry share (the ``--init`` flag): the grammar, numbers, names, checks.

A spec is a ``.nc`` run file or the equal-weight mixture ``A+B+...`` of terms
(:func:`density_from_spec`); each geometry reads its own terms (:mod:`meanfield.initial.circle`,
:mod:`meanfield.initial.sphere`, :mod:`meanfield.initial.zonal`).  A density is refused with one line
naming the initial data (:func:`init_label`) when it is not finite, massless or negative somewhere
(:func:`check_sign_and_mass`), or not resolved on the grid (:func:`require_resolved`).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..errors import require
from ..number_text import read_number

#: the names of the von Mises–Fisher term: canonical first, then the circle's older spelling
VON_MISES = ("vmf", "vonmises")

#: Density resolved on the grid when its content past the dealiased band is below this (x mean).
UNRESOLVED_TOL = 1e-3


def parse_number(text: str, what: str, expected: str) -> float:
    """``text`` as a finite number (ASCII decimal, :mod:`meanfield.number_text`); otherwise one line naming ``what``
    and the ``expected`` specs."""
    value = read_number(text.strip() if isinstance(text, str) else text)
    require(value is not None, f"--init: {what} must be a number (got {text!r}); expected {expected}")
    require(math.isfinite(value), f"--init: {what} must be finite (got {text!r})")
    return value


#: A term's weight: ``W*`` before it (a positive decimal number).
WEIGHT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*\*\s*(.+)$")
#: The ``+`` between terms: before a letter (a term) or a weight ``W*`` (not inside an exponent such as ``1e+3``).
TERM_BREAK = re.compile(r"\+(?=\s*[A-Za-z]|\s*[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?\s*\*)")


def mixture(spec: str) -> tuple[list[str], list[float] | None]:
    """The ``+``-separated terms of a text spec and their weights normalised to sum 1 (``W*term``, all weighted or
    none; ``None``: none weighted, an equal-weight mixture)."""
    terms = TERM_BREAK.split(spec.strip())
    matches = [WEIGHT.match(term) for term in terms]
    if not any(matches):
        return terms, None
    require(all(matches), f"--init {spec!r}: weight every term (W*term, e.g. 0.5*vonmises:8@0.5+0.3*vonmises:12@2.6) "
                          f"or none")
    weights = [parse_number(match[1], "a mixture weight", "W*term with W > 0") for match in matches]
    require(all(weight > 0 for weight in weights), f"--init {spec!r}: mixture weights must be > 0 (got {weights})")
    total = sum(weights)
    return [match[2] for match in matches], [weight / total for weight in weights]


def density_from_spec(spec: str, help_text: str, read_file, term, check) -> np.ndarray:
    """The density of ``spec``: ``read_file(path)`` for a ``.nc`` spec, else the mixture (:func:`mixture`) of
    ``term(text)`` over the ``+``-separated terms, equal-weight or weighted; refused by
    ``check(density, stripped spec)`` unless valid."""
    require(isinstance(spec, str) and spec.strip() != "", f"--init must be one of: {help_text}")
    spec = spec.strip()
    if spec.endswith(".nc"):
        density = read_file(spec)
    else:
        terms, weights = mixture(spec)
        if weights is None:
            density = sum(term(t) for t in terms) / len(terms)
        else:
            density = sum(weight * term(t) for weight, t in zip(weights, terms))
    check(density, spec)
    return density


def mixture_attrs(init) -> dict:
    """``init_weights``: the normalised weights of a weighted text-spec mixture, for the run's attributes (their
    shortest exact decimals, comma-separated; ``{}`` otherwise)."""
    if not isinstance(init, str) or init.strip().endswith(".nc"):
        return {}
    weights = mixture(init)[1]
    return {} if weights is None else {"init_weights": ", ".join(repr(float(weight)) for weight in weights)}


def init_label(spec) -> str:
    """How a message names the initial data: ``--init 'TEXT'`` for a text spec; a description that
    already starts with ``init=`` (an array, a function, an xarray object) is kept as it is."""
    return spec if isinstance(spec, str) and spec.startswith("init=") else f"--init {spec!r}"


def check_sign_and_mass(density: np.ndarray, spec: str, mass: float, area: float) -> float:
    """Refuse a non-finite, massless or negative density; returns its mean ``mass / area``."""
    name = init_label(spec)
    require(bool(np.all(np.isfinite(density))) and math.isfinite(mass), f"{name}: the density is not finite")
    require(mass > 0, f"{name}: the density must integrate to a positive number (got {mass:.3g})")
    mean = mass / area
    low = float(np.min(density))
    hint = "lower EPS or use another start" if name.startswith("--init") else "a density is >= 0"
    require(low >= -1e-12 * mean, f"{name}: the density is negative somewhere (min {low:.3g}); {hint}")
    return mean


def require_resolved(unresolved: float, spec: str, resolution: int, band: str) -> None:
    """Refuse a start whose content past the kept band exceeds ``UNRESOLVED_TOL`` x mean."""
    require(unresolved <= UNRESOLVED_TOL,
            f"{init_label(spec)}: not resolved at --resolution {resolution} (content {unresolved:.2g} x mean past "
            f"{band}); increase --resolution")
