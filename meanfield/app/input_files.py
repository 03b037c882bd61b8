"""Files a user gives as input: told by ``stat`` before anything opens them.

``open`` of a named pipe waits for a writer, and a device such as ``/dev/zero`` never ends: ``np.load`` of a FIFO
given to ``--qkv`` never returned, and a signal could not stop it.  Every reader of a user's file (``--qkv``
archives, run files of ``--init``, ``rerun``, ``plot``, ``clusters``) asks :func:`regular_file` first.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import InputError, require


def regular_file(path, label: str) -> Path:
    """``path`` when it names a regular file (symbolic links followed), told by ``stat`` before anything opens it; one
    line naming ``label`` otherwise.  ``open`` of a named pipe waits for a writer (``np.load`` of a FIFO given to
    ``--qkv`` never returned, and a signal could not stop it), and a device such as ``/dev/zero`` never ends."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(f"{label} {path}: cannot read it ({exc.strerror or 'not a readable file'})") from None
    except ValueError:                                       # a NUL byte in the name
        raise InputError(f"{label} {path!r}: not a file name") from None
    kind = next((what for test, what in _NOT_REGULAR if test(mode)), "special file")
    require(stat.S_ISREG(mode), f"{label} {path}: not a regular file (a {kind}); give a file")
    return Path(path)


#: What a path that is not a regular file names, for :func:`regular_file`'s line.
_NOT_REGULAR = ((stat.S_ISFIFO, "named pipe"), (stat.S_ISDIR, "folder"), (stat.S_ISCHR, "character device"),
                (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))
