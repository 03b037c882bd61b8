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


def registered(table: dict, name, option: str, kind: type, fold_case: bool = False):
    """The object ``table`` registers as ``name`` (an instance of ``kind`` passes through; ``fold_case``: any case
    of the name); one line naming ``option`` and the registered names otherwise."""
    if isinstance(name, kind):
        return name
    key = name.lower() if fold_case and isinstance(name, str) else name
    require(isinstance(name, str) and key in table, f"{option} must be one of {', '.join(table)} (got {name!r})")
    return table[key]
