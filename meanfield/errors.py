"""The one exception type for user mistakes.

Everything a user can get wrong (a parameter out of range, an unknown initial
condition, a file that is not a meanfield run) raises :class:`InputError` with
a single line that names the parameter and the allowed range.  The command line
prints that line and exits non-zero; it never shows a traceback for it.

A message is written once, naming parameters by their command-line flags
(``--t-final must be > 0``), and :class:`InputError` says it in its reader's
words: while the command line runs a command (:func:`command_line`, entered by
:func:`meanfield.cli.main`, also while it prints the refusal) the flags stay;
otherwise, read from Python, each flag becomes the keyword argument it stands for
(``t_final must be > 0``): the flag without its dashes, ``-`` read as ``_``,
except the few of :data:`PYTHON_NAMES`.  Text in backticks or quotes (a command
line such as `meanfield --help`, a value the user gave) is left as it is.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar

#: Flags whose Python argument is not the flag with ``-`` read as ``_``.
PYTHON_NAMES = {"--override": "override=True", "--no-progress": "progress=False", "--profile-width": "width"}

#: Flags of the command line itself, which no Python argument stands for: messages keep them.
COMMAND_LINE_ONLY = frozenset({"--help", "--version"})

#: A flag token: ``--`` and a lower-case word, not inside a longer word (``a--b``) or a path's name.
FLAG = re.compile(r"(?<![\w./-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?![\w-])")

#: Text a message quotes (backticks, or quotes that open after a non-word character): kept verbatim.
VERBATIM = re.compile(r"`[^`\n]*`|(?<!\w)'[^'\n]*'(?!\w)|(?<!\w)\"[^\"\n]*\"(?!\w)")

_COMMAND_LINE = ContextVar("meanfield_command_line", default=False)


@contextmanager
def command_line():
    """While inside, :class:`InputError` messages keep their flags (the command line is running a command)."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def python_name(flag: str) -> str:
    """The Python argument a flag stands for (``--t-final``: ``t_final``; :data:`PYTHON_NAMES`), or the flag
    itself when it is the command line's own (:data:`COMMAND_LINE_ONLY`)."""
    if flag in COMMAND_LINE_ONLY:
        return flag
    return PYTHON_NAMES.get(flag, flag[2:].replace("-", "_"))


def python_names(message: str) -> str:
    """``message`` with each flag outside quotes and backticks read as its Python argument (:func:`python_name`)."""
    def renamed(text: str) -> str:
        return FLAG.sub(lambda flag: python_name(flag.group()), text)

    pieces, start = [], 0
    for quoted in VERBATIM.finditer(message):
        pieces += [renamed(message[start:quoted.start()]), quoted.group()]
        start = quoted.end()
    return "".join(pieces) + renamed(message[start:])


class InputError(ValueError):
    """A user-supplied value is out of range or malformed: one line, in the reader's names (module docstring).

    The message is kept as written (``args``, with flags, so it survives a trip through a worker process);
    ``str()`` says it with flags while the command line runs, with Python arguments otherwise."""

    def __str__(self) -> str:
        message = super().__str__()
        return message if _COMMAND_LINE.get() else python_names(message)


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
