"""Output paths checked before anything is computed: suffixes, folders, name lengths, ``~user`` (DESIGN.md).

These checks need no netCDF or xarray, so the command line reads them without loading :mod:`meanfield.app.storage`
(so that ``meanfield --version`` and the refusals of bad paths start fast); :mod:`meanfield.app.storage` writes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import InputError, require


#: Suffixes of run files.
RUN_SUFFIXES = (".nc",)
#: Suffixes of movies (:mod:`meanfield.plotting.movie`).
MOVIE_SUFFIXES = (".gif", ".mp4")


#: Image formats offered for figures (those matplotlib writes without LaTeX or raw buffers).
IMAGE_FORMATS = ("png", "pdf", "svg", "jpg", "jpeg", "eps", "ps", "tif", "tiff", "webp")


def image_suffixes() -> tuple[str, ...]:
    """The suffixes of :data:`IMAGE_FORMATS` that this matplotlib can write."""
    from matplotlib.backend_bases import FigureCanvasBase

    supported = FigureCanvasBase.get_supported_filetypes()
    return tuple(f".{name}" for name in IMAGE_FORMATS if name in supported)


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _can_create_files_in(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (a nameless probe, so nothing is left behind;
    also right for root, for whom ``os.access`` says yes to everything but read-only mounts)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def expanded(path, option: str) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; one line naming ``option`` when that user has no home
    (``Path.expanduser`` raises ``RuntimeError`` there)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        user = str(path).split("/", 1)[0]
        raise InputError(f"{option} {str(path)!r}: {user} names no user of this system (a path starting with ~ "
                         f"is a home folder); give a path without it") from None


def check_output_folder(folder, option: str, shown=None) -> Path:
    """``folder`` exists and is writable, or can be created: else one line naming ``option``
    (and ``shown``, the value the user gave; default ``folder``).

    Nothing is created here: the folder is made when the first file is written.
    """
    folder = expanded(folder, option)
    shown = folder if shown is None else shown
    require(str(folder).strip() != "", f"{option} must be a folder name (got an empty string)")
    check_name_lengths(folder, option)
    existing = _nearest_existing(folder.absolute())
    require(existing.is_dir(), f"{option} {shown}: {existing} is a file, not a folder; choose another {option}")
    require(_can_create_files_in(existing),
            f"{option} {shown}: cannot write in {existing} (no permission or a read-only file system); "
            f"choose a writable {option}")
    return folder


def check_name_lengths(path: Path, option: str) -> None:
    """Every component of ``path`` within the file system's name limit (255 bytes on most), the whole path within
    the system's path limit: else one line naming ``option`` (the write would fail after the computation)."""
    absolute = path.absolute()
    for part in absolute.parts[1:-1]:                # the folders (the file's own name: below, its file system's)
        require(len(part.encode()) <= 255,
                f"{option}: the name {part[:24]!r}... is {len(part.encode())} bytes long; file names may have at most "
                f"255 bytes")
    try:
        path_max = int(os.pathconf(_nearest_existing(absolute.parent), "PC_PATH_MAX"))
    except (OSError, ValueError):
        path_max = 4096
    require(len(str(absolute).encode()) < path_max,
            f"{option}: the path is {len(str(absolute).encode())} bytes long; this system allows at most "
            f"{path_max - 1}")
    longest = name_max(absolute.parent)
    require(len(path.name.encode()) <= longest,
            f"{option}: the file name is {len(path.name.encode())} bytes long; this file system allows at most "
            f"{longest}")


def check_output_file(path, option: str, suffixes) -> Path:
    """``path`` can be written: an allowed suffix, not a folder, a writable (or creatable) folder.

    ``suffixes``: the allowed suffixes, e.g. :data:`RUN_SUFFIXES` or :func:`image_suffixes`.
    Checked before anything is computed; nothing is created.
    """
    require(not str(path).endswith(("/", os.sep)),
            f"{option} {str(path)!r} ends in a slash, so it names a folder; give a file name")
    path = expanded(path, option)
    allowed = suffixes[0] if len(suffixes) == 1 else "one of " + ", ".join(suffixes)
    require(path.suffix.lower() in suffixes, f"{option} must be a file name ending in {allowed} (got {str(path)!r})")
    check_name_lengths(path, option)
    require(not path.is_dir(), f"{option} {path} is a folder; give a file name ending in {allowed}")
    check_output_folder(path.parent, option, shown=path)
    require(not path.exists() or os.access(path, os.W_OK),
            f"{option} {path} exists and is read-only; remove it or choose another {option}")
    return path


def name_max(folder: Path) -> int:
    """The longest file name (bytes) the file system of ``folder`` (or its nearest existing parent) allows."""
    try:
        return int(os.pathconf(_nearest_existing(folder.absolute()), "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


