"""The command line's number types: ASCII decimal text only (:mod:`meanfield.number_text`); and a choice among a
registry's names, read when a command line is parsed (:class:`RegisteredName`).

click's ``float`` and ``int`` read text with Python's ``float`` / ``int``, which take digits of other scripts,
underscores (``1_0``) and blanks; these read what a user means and refuse the rest in the one error line of
:func:`meanfield.cli.main` (exit 2).  Ranges are checked afterwards, by :mod:`meanfield.limits`.
"""

from __future__ import annotations

import click

from ..number_text import read_integer, read_number


class RegisteredName(click.Choice):
    """A choice among the names of ``registry`` (a dict), read when the command line is parsed, so a name registered
    after import (a user's attention kind, :mod:`meanfield.attention_kind`) is offered and accepted."""

    def __init__(self, registry: dict):
        self.registry = registry
        super().__init__(list(registry), case_sensitive=False)

    @property
    def choices(self):
        return tuple(self.registry)

    @choices.setter
    def choices(self, value) -> None:
        """The registry's names are the choices (click's constructor sets them once)."""


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
