"""What kind of initial data ``init`` is, and how messages name it.

``init`` (the ``init=`` of :func:`meanfield.solve`, the ``--init`` flag) is a text spec, a ``.nc``
path, a numpy array, an ``xarray`` DataArray or Dataset, or a function (:func:`kind_of`); anything
else is refused with one line.  :func:`describe_init` is the run's ``init`` attribute,
:func:`label_of` the name its refusals start with (``--init 'TEXT'`` or ``init=<...>``).
"""

from __future__ import annotations

import math
import os

import numpy as np
import xarray as xr

from ..errors import InputError
from .files import is_density_file
from .spec import init_label

#: What ``init`` may be (named by the refusal of anything else).
KINDS = ("a text spec, a numpy array, an xarray DataArray or Dataset, a function, a .nc run file, or a density file "
         "(.npy, .txt, .csv, .nc, .zarr)")


def _is_path(init) -> bool:
    return isinstance(init, os.PathLike) or (isinstance(init, str) and init.strip().endswith(".nc"))


def describe_init(init) -> str:
    """A short text for ``init`` (the run's ``init`` attribute and messages)."""
    if isinstance(init, (str, os.PathLike)):
        return str(init).strip() if isinstance(init, str) else os.fspath(init)
    if isinstance(init, np.ndarray):
        return f"numpy array of shape {init.shape}"
    if isinstance(init, xr.DataArray):
        sizes = ", ".join(f"{dim}: {size}" for dim, size in init.sizes.items())
        return f"DataArray {init.name or ''}({sizes})"
    if isinstance(init, xr.Dataset):
        attrs = init.attrs
        time = float(init["time"].values[-1]) if "time" in init.coords and init.sizes.get("time") else math.nan
        return f"Dataset: {attrs.get('geometry', '?')} {attrs.get('scheme', '?')} run, last frame t = {time:.6g}"
    if callable(init):
        return f"function {getattr(init, '__qualname__', type(init).__name__)}"
    return type(init).__name__


def label_of(init) -> str:
    """How messages name ``init``: ``--init 'TEXT'`` for text and paths, ``init=<description>`` otherwise."""
    if isinstance(init, (str, os.PathLike)):
        return init_label(describe_init(init))
    return f"init=<{describe_init(init)}>"


def kind_of(init) -> str:
    """``text``, ``file`` (a density file, :mod:`meanfield.initial.files`), ``path`` (a run file), ``array``,
    ``dataarray``, ``dataset`` or ``function``; anything else is refused."""
    if is_density_file(init):
        return "file"
    if _is_path(init):
        return "path"
    if isinstance(init, str):
        return "text"
    for kind, cls in (("dataset", xr.Dataset), ("dataarray", xr.DataArray), ("array", np.ndarray)):
        if isinstance(init, cls):
            return kind
    if callable(init):
        return "function"
    raise InputError(f"init must be {KINDS} (got {type(init).__name__})")

