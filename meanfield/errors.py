"""The one exception type for user mistakes.

Everything a user can get wrong (a parameter out of range, an unknown initial
condition, a file that is not a meanfield run) raises :class:`InputError` with
a single line that names the parameter and the allowed range.  The command line
prints that line and exits non-zero; it never shows a traceback for it.
"""


class InputError(ValueError):
    """A user-supplied value is out of range or malformed (one-line message)."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`InputError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise InputError(message)
