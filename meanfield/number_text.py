"""Numbers written by users: ASCII decimal text only (MATH-free; DESIGN.md "Command line").

Python's ``float`` and ``int`` accept more than a user means: digits of other scripts (``float("١٢")`` is 12),
underscores (``float("1_0")`` is 10), surrounding blanks, and ``int(True)``.  Every number the command line or a
text spec (``--init perturbed:EPS``, ``--nu-schedule ramp:A>B@T0..T1``, ``--betas a,b,c``) reads goes through
:func:`read_number` or :func:`read_integer`: a sign, ASCII digits with at most one decimal point, an optional
exponent, or ``inf`` / ``nan`` (which the options' ranges then refuse with their own line).
"""

from __future__ import annotations

import re

#: A decimal number in ASCII: optional sign, digits with one optional point, optional exponent; or inf / nan.
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE)
#: A decimal integer in ASCII, optional sign.
_INTEGER = re.compile(r"[+-]?[0-9]+")


def read_number(text) -> float | None:
    """``text`` as a float when it is an ASCII decimal number (module docstring), else ``None``."""
    if not isinstance(text, str) or _NUMBER.fullmatch(text) is None:
        return None
    return float(text)


def read_integer(text) -> int | None:
    """``text`` as an int when it is an ASCII decimal integer, else ``None``."""
    if not isinstance(text, str) or _INTEGER.fullmatch(text) is None:
        return None
    return int(text)
