"""The attention's matrices ``Q, K, V`` (MATH.md §1): the ``--qkv`` choices, the ``.npz`` files of one or several
heads, and the one function that turns a choice into matrices (:func:`attention_heads`).

``identity`` (``Q = K = V = I``, returned as ``None``), ``repulsive`` (``V = -I``), ``random`` (Gaussian entries
over ``sqrt(d)``, drawn from the run's seed on the stream ``"matrices"``, :mod:`meanfield.seeding`) or a
``FILE.npz`` of arrays ``Q``, ``K``, ``V``, each ``d x d`` or ``H x d x d`` (``H`` heads whose outputs are summed).
Every entry is finite and within the ``--qkv`` row of :data:`meanfield.limits.RANGES`.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .errors import InputError, require
from .app.input_files import regular_file
from .limits import RANGES, describe_bytes, memory_budget
from .seeding import stream

#: ``--qkv`` choices besides a ``.npz`` file of matrices.
QKV_CHOICES = ("identity", "repulsive", "random")
#: The arrays of a ``--qkv`` file.
QKV_NAMES = ("Q", "K", "V")
#: The attention kernels of particle runs (:mod:`meanfield.solvers.schemes.interaction`): ``dot`` on the sphere or in R^d,
#: ``l2`` and ``sinkhorn`` in R^d.
KERNELS = ("dot", "l2", "sinkhorn")
#: The interaction paths of particle runs (:class:`meanfield.solvers.schemes.particles.ParticleScheme`).
INTERACTION_PATHS = ("auto", "harmonic", "direct")


def is_qkv_file(kind) -> bool:
    """Whether ``--qkv`` names a ``.npz`` file of matrices."""
    return isinstance(kind, Path) or (isinstance(kind, str) and kind.lower().endswith(".npz"))


def check_qkv(kind) -> None:
    """``--qkv``: one of :data:`QKV_CHOICES` or a ``FILE.npz``."""
    require(is_qkv_file(kind) or kind in QKV_CHOICES,
            f"--qkv must be one of {', '.join(QKV_CHOICES)} or a FILE.npz (got {kind!r})")


def check_attention_choices(kernel, heads, matrices, path) -> None:
    """The attention's named choices, one line each (:class:`meanfield.settings.Attention`): ``kernel`` one of
    :data:`KERNELS`; ``heads`` a non-empty list of ``(Q, K, V)`` triples, given instead of ``matrices = (Q, K, V)``;
    ``path`` one of :data:`INTERACTION_PATHS`."""
    require(isinstance(kernel, str) and kernel in KERNELS,
            f"kernel must be one of {', '.join(KERNELS)} (got {kernel!r})")
    if heads is not None:
        require(all(m is None for m in matrices), "pass either Q, K, V or heads, not both")
        require(isinstance(heads, (list, tuple)) and len(heads) >= 1
                and all(isinstance(h, (list, tuple)) and len(h) == 3 for h in heads),
                "heads must be a non-empty list of (Q, K, V) triples")
    require(isinstance(path, str) and path in INTERACTION_PATHS,
            f"--interaction must be one of {', '.join(INTERACTION_PATHS)} (got {path!r})")


def bounded_entries(name: str, matrix: np.ndarray) -> np.ndarray:
    """Finite entries within the range table's ``--qkv`` row (:data:`meanfield.limits.RANGES`, magnitude at most
    1e100): beyond it the logits ``beta <Qx, Ky>`` and the speeds' squares leave double precision (entries of
    1e200 made the step size NaN)."""
    require(bool(np.all(np.isfinite(matrix))), f"{name} must be finite")
    largest, bound = float(np.max(np.abs(matrix), initial=0.0)), RANGES["--qkv"].high
    require(largest <= bound, f"{name}: entries must be at most {bound:g} in magnitude (got {largest:g}); the --qkv "
                              f"range in `meanfield --help`")
    return matrix


#: ``.npy`` header readers by format version; version 3 (UTF-8 field names) never holds a plain numeric array.
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _member(archive: zipfile.ZipFile, name: str) -> str | None:
    """The member of ``archive`` holding array ``name``: ``name.npy`` (what ``np.savez`` writes) or ``name``."""
    members = set(archive.namelist())
    return next((member for member in (f"{name}.npy", name) if member in members), None)


def _declared(archive: zipfile.ZipFile, member: str) -> tuple[tuple, np.dtype]:
    """The shape and dtype a member's ``.npy`` header declares, read without its data: a small compressed file may
    declare an array of gigabytes (8000 x 8000 took 500 MB before the shape was checked)."""
    with archive.open(member) as handle:
        reader = _HEADER_READERS.get(np.lib.format.read_magic(handle))
        if reader is None:
            raise ValueError(member)
        shape, _, dtype = reader(handle)
    return shape, dtype


def _heads_declared(path, name: str, shape: tuple, dtype: np.dtype, dim: int) -> int:
    """How many heads array ``name`` holds by its header: it must be real, ``d x d`` or ``HEADS x d x d``."""
    require(np.issubdtype(dtype, np.number) and not np.issubdtype(dtype, np.complexfloating),
            f"--qkv {path}: {name} must be a real array (got dtype {dtype})")
    fits = len(shape) in (2, 3) and tuple(shape[-2:]) == (dim, dim) and shape[0] >= 1
    expected = f"{dim} x {dim} or HEADS x {dim} x {dim}"
    require(fits, f"--qkv {path}: {name} is declared {' x '.join(map(str, shape)) or 'a scalar'}, but --dim {dim} "
                  f"needs {expected}")
    return 1 if len(shape) == 2 else int(shape[0])


def _read_checked(path, archive: zipfile.ZipFile, dim: int) -> dict:
    """Arrays ``Q``, ``K``, ``V`` of ``archive``, each checked from its header (kind, shape, the same number of heads,
    their memory) before its data is read."""
    members = {name: _member(archive, name) for name in QKV_NAMES}
    missing = [name for name, member in members.items() if member is None]
    require(not missing, f"--qkv {path} must hold arrays Q, K and V (missing {', '.join(missing)})")
    heads = {name: _heads_declared(path, name, *_declared(archive, member), dim) for name, member in members.items()}
    require(len(set(heads.values())) == 1, f"--qkv {path}: Q, K and V must have the same number of heads "
                                           f"(got {', '.join(str(count) for count in heads.values())})")
    size = 2 * 3 * 8.0 * heads["Q"] * dim * dim               # as read, and as floats
    require(size <= memory_budget(), f"--qkv {path}: {heads['Q']} heads of {dim} x {dim} matrices take "
                                     f"{describe_bytes(size)}, more than half of this machine's memory")
    arrays = {}
    for name, member in members.items():
        with archive.open(member) as handle:
            arrays[name] = np.lib.format.read_array(handle, allow_pickle=False)
    return arrays


def qkv_file(path, dim: int) -> list[tuple]:
    """The heads ``[(Q_h, K_h, V_h), ...]`` of a ``.npz`` file: arrays ``Q``, ``K``, ``V``, each ``d x d``
    (one head) or ``H x d x d`` (``H`` heads, whose outputs are summed), the same ``H`` for all three.  Only a regular
    file is opened, and each array's shape is read from its header before its data (:func:`_read_checked`)."""
    regular_file(path, "--qkv")
    try:
        with zipfile.ZipFile(path) as archive:
            arrays = _read_checked(path, archive, dim)
    except InputError:
        raise
    except OSError as exc:
        require(False, f"--qkv {path}: cannot read it ({exc.strerror or 'not a readable file'})")
    except (ValueError, EOFError, NotImplementedError, zipfile.BadZipFile, zlib.error):   # never numpy's advice to unpickle
        require(False, f"--qkv {path}: not a .npz archive of numeric arrays Q, K and V (Python objects are not read)")
    matrices = [arrays[name][None] if arrays[name].ndim == 2 else arrays[name] for name in QKV_NAMES]
    matrices = [bounded_entries(f"--qkv {path}: {name}", m.astype(float)) for name, m in zip(QKV_NAMES, matrices)]
    return [tuple(m[h] for m in matrices) for h in range(matrices[0].shape[0])]


def attention_heads(kind, dim: int, seed):
    """``(Q, K, V, heads)`` of a checked ``--qkv`` choice (:func:`check_qkv`): one head as matrices
    (``heads = None``; ``None`` for the identity), or several heads from a file (``Q = K = V = None``; their outputs
    are summed)."""
    if is_qkv_file(kind):
        heads = qkv_file(kind, dim)
        if len(heads) > 1:
            return None, None, None, heads
        return (*heads[0], None)
    if kind == "identity":
        return None, None, None, None
    if kind == "repulsive":
        return None, None, -np.eye(dim), None
    rng = stream(seed, "matrices")
    return (*(rng.standard_normal((dim, dim)) / math.sqrt(dim) for _ in range(3)), None)
