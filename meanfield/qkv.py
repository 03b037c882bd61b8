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
from pathlib import Path

import numpy as np

from .errors import require
from .limits import RANGES
from .seeding import stream

#: ``--qkv`` choices besides a ``.npz`` file of matrices.
QKV_CHOICES = ("identity", "repulsive", "random")
#: The attention kernels of particle runs (:mod:`meanfield.solvers.interaction`): ``dot`` on the sphere or in R^d,
#: ``l2`` and ``sinkhorn`` in R^d.
KERNELS = ("dot", "l2", "sinkhorn")
#: The interaction paths of particle runs (:class:`meanfield.solvers.particles.ParticleScheme`).
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


def qkv_file(path, dim: int) -> list[tuple]:
    """The heads ``[(Q_h, K_h, V_h), ...]`` of a ``.npz`` file: arrays ``Q``, ``K``, ``V``, each ``d x d``
    (one head) or ``H x d x d`` (``H`` heads, whose outputs are summed), the same ``H`` for all three."""
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):       # a single .npy array
            raise ValueError(path)
        with data:
            arrays = {name: np.asarray(data[name]) for name in data.files if name in ("Q", "K", "V")}
    except OSError as exc:
        require(False, f"--qkv {path}: cannot read it ({exc.strerror or 'not a readable file'})")
    except (ValueError, EOFError, zipfile.BadZipFile):      # numpy's own advice here would be to unpickle: never
        require(False, f"--qkv {path}: not a .npz archive of numeric arrays Q, K and V (Python objects are not read)")
    missing = [name for name in ("Q", "K", "V") if name not in arrays]
    require(not missing, f"--qkv {path} must hold arrays Q, K and V (missing {', '.join(missing)})")
    matrices = []
    for name in ("Q", "K", "V"):
        array = arrays[name]
        require(np.issubdtype(array.dtype, np.number) and not np.iscomplexobj(array),
                f"--qkv {path}: {name} must be a real array (got dtype {array.dtype})")
        array = array[None] if array.ndim == 2 else array
        require(array.ndim == 3 and array.shape[1:] == (dim, dim) and array.shape[0] >= 1,
                f"--qkv {path}: {name} must be {dim} x {dim} or HEADS x {dim} x {dim} (got shape {arrays[name].shape})")
        matrices.append(bounded_entries(f"--qkv {path}: {name}", array.astype(float)))
    counts = {m.shape[0] for m in matrices}
    require(len(counts) == 1, f"--qkv {path}: Q, K and V must have the same number of heads "
                              f"(got {', '.join(str(m.shape[0]) for m in matrices)})")
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
