"""The command line's number types: ASCII decimal text only (:mod:`meanfield.number_text`).

click's ``float`` and ``int`` read text with Python's ``float`` / ``int``, which take digits of other scripts,
underscores (``1_0``) and blanks; these read what a user means and refuse the rest in the one error line of
:func:`meanfield.cli.main` (exit 2).  Ranges are checked afterwards, by :mod:`meanfield.limits`.
"""

from __future__ import annotations

import click

from ..number_text import read_integer, read_number


class _Strict(click.ParamType):
    """A number read by ``reader``; a value that is not text (a default) passes through."""

    def __init__(self, name: str, reader, wanted: str, examples: str):
        self.name, self._reader, self._wanted, self._examples = name, reader, wanted, examples

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        number = self._reader(value)
        if number is None:
            self.fail(f"{value!r} is not {self._wanted} (ASCII digits, e.g. {self._examples})", param, ctx)
        return number


#: A decimal number (sign, digits, one point, exponent; inf and nan reach the range checks).
NUMBER = _Strict("float", read_number, "a number", "0.5, 1e-3")
#: A decimal integer.
INTEGER = _Strict("integer", read_integer, "an integer", "64")
