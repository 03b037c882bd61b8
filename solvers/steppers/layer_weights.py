"""Per-layer attention weights: a schedule of ``(Q, K, V, beta)`` for discrete layers (MATH.md §11).

A real transformer gives every layer its own matrices.  A schedule says which ones layer ``l`` (0, 1, ...) uses; the
layer maps of :mod:`meanfield.solvers.steppers.layers` take layer ``l``'s attention from it.  There are two kinds:

``FILE.npz`` (:class:`FileWeights`)
    arrays ``Q`` and ``K`` of shape ``(L, k, d)`` and ``V`` of shape ``(L, d, d)`` (one head per layer), or
    ``(L, H, k, d)`` and ``(L, H, d, d)`` (``H`` heads per layer, their outputs summed as
    :class:`meanfield.settings.Attention` sums ``heads``); on the sphere ``k = d``.  An optional ``beta`` of shape
    ``(L,)`` sets every layer's inverse temperature (else the run's ``--beta`` for all).  Every entry is checked
    (finite, in the ``--qkv`` range); a run of ``L'`` layers needs ``L' <= L``.
``seed:S,sigma:X`` (:class:`GaussianWeights`)
    one head per layer, ``Q_l = K_l = I`` and ``V_l = I + sigma G_l / sqrt(d)``, the entries of ``G_l`` i.i.d.
    standard Gaussians drawn for layer ``l`` alone from ``(S, l)`` (a stream of its own, so layer ``l``'s matrix
    does not depend on how many layers a run has: a restart at a layer boundary draws what the straight run drew).
    The mean is ``E V_l = I``: as the layers get many and thin the network approaches the flow of ``V = I``, the
    homogenised limit of MATH.md §11, with fluctuations ``sigma T / sqrt(L)``.

:func:`layer_weights` reads either spec (or passes a schedule through); :meth:`LayerWeights.scheme` builds the
particle scheme of one layer from the run's (its tokens' weights, normalisation and mask; the layer's matrices and
beta), cached per layer.  A run records the spec (attribute ``layer_weights``) and the matrices its layers used
(:meth:`LayerWeights.variables`).
"""

from __future__ import annotations

import math
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from meanfield.errors import require
from meanfield.limits import RANGES, check_seed
from meanfield.model import Model
from meanfield.number_text import read_integer, read_number
from meanfield.qkv import bounded_entries
from meanfield.app.input_files import regular_file
from meanfield.seeding import PURPOSES
from meanfield.settings import Attention, Mask

from ..schemes.particles import ParticleScheme

OPTION = "--layer-weights"
#: The spec of the Gaussian law, as the error lines show it.
GAUSSIAN_FORM = "seed:S,sigma:X"
#: The stream a layer's Gaussian matrix is drawn from: ``(seed, (LAYER_STREAM, layer))``.
LAYER_STREAM = max(PURPOSES.values()) + 1


class LayerWeights:
    """A schedule of per-layer attention (module docstring): ``heads(layer, dim)`` and ``beta(layer, default)``."""

    spec: str
    #: the number of layers the schedule holds (``None``: as many as asked)
    count: int | None = None

    def heads(self, layer: int, dim: int) -> list[tuple]:
        raise NotImplementedError

    def beta(self, layer: int, default: float) -> float:
        return default

    def check(self, dim: int, sphere: bool, layers: int | None) -> None:
        """Refuse, in one line naming the spec, a schedule that does not fit ``dim`` or has fewer than ``layers``."""
        require(layers is None or self.count is None or layers <= self.count,
                f"{OPTION} {self.spec}: holds {self.count} layers, the run needs {layers}")

    def scheme(self, base: ParticleScheme, layer: int) -> ParticleScheme:
        """The particle scheme of layer ``layer``: ``base``'s tokens, weights, normalisation and mask with this
        layer's heads and beta (cached per schedule, base and number of tokens: a collapse merges tokens, which
        keeps the dynamics exact whatever the layer's weights, and the layer then sums over the merged weights)."""
        schemes = self.__dict__.setdefault("_schemes", {})
        held, cache = schemes.get(id(base), (None, None))
        if held is not base:                   # a new base (an id may come back once its object is gone)
            cache = {}
            schemes[id(base)] = (base, cache)
        key = (layer, base.weights.size)
        if key not in cache:
            heads = self.heads(layer, base.dim)
            attention = Attention(base.model.attention, heads=heads, interaction="direct") if len(heads) > 1 else \
                Attention(base.model.attention, Q=heads[0][0], K=heads[0][1], V=heads[0][2], interaction="direct")
            model = Model(base.model.attention, self.beta(layer, base.model.beta), 0.0, base.dim)
            cache[key] = ParticleScheme(model, base.weights.size, attention, weights=base.weights, sphere=base.sphere,
                                        normalization=base.normalization, mask=Mask(base.mask, base.alibi))
        return cache[key]

    def variables(self, layers: int, dim: int) -> dict:
        """What a run records of the layers ``0 .. layers - 1``: ``layer_Q``, ``layer_K``, ``layer_V`` with dims
        ``(layer_index, layer_head, row, column)`` and ``layer_beta(layer_index)``; none for no layer."""
        if layers == 0:
            return {}
        full = lambda matrix: np.eye(dim) if matrix is None else matrix     # None: the identity
        stacked = [[tuple(map(full, head)) for head in self.heads(layer, dim)] for layer in range(layers)]
        dims = ("layer_index", "layer_head", "row", "column")
        out = {f"layer_{name}": (dims, np.array([[head[index] for head in heads] for heads in stacked]),
                                 {"long_name": f"layer l's {name} ({OPTION} {self.spec})"})
               for index, name in enumerate(("Q", "K", "V"))}
        out["layer_beta"] = ("layer_index", np.array([self.beta(layer, math.nan) for layer in range(layers)]),
                             {"long_name": "layer l's beta (NaN: the run's beta)"})
        return out


@dataclass(eq=False)
class GaussianWeights(LayerWeights):
    """``Q = K = I``, ``V_l = I + sigma G_l / sqrt(d)``, ``G_l`` standard Gaussian from ``(seed, layer)``."""

    seed: int
    sigma: float

    @property
    def spec(self) -> str:
        return f"seed:{self.seed},sigma:{self.sigma!r}"

    def heads(self, layer: int, dim: int) -> list[tuple]:
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(LAYER_STREAM, int(layer))))
        value = np.eye(dim) + self.sigma * rng.standard_normal((dim, dim)) / math.sqrt(dim)
        return [(None, None, value)]


@dataclass(eq=False)
class FileWeights(LayerWeights):
    """Per-layer heads and betas read from a ``.npz`` file (module docstring)."""

    path: str
    arrays: dict

    @property
    def spec(self) -> str:
        return str(self.path)

    @property
    def count(self) -> int:
        return int(self.arrays["V"].shape[0])

    def heads(self, layer: int, dim: int) -> list[tuple]:
        Q, K, V = (self.arrays[name][layer] for name in ("Q", "K", "V"))
        return [(Q[h], K[h], V[h]) for h in range(V.shape[0])]

    def beta(self, layer: int, default: float) -> float:
        return default if "beta" not in self.arrays else float(self.arrays["beta"][layer])

    def variables(self, layers: int, dim: int) -> dict:
        """All the file's layers (a restart past ``layers`` reads the rest from the run, never the file again)."""
        return super().variables(self.count, dim)

    def check(self, dim: int, sphere: bool, layers: int | None) -> None:
        Q, V = self.arrays["Q"], self.arrays["V"]
        require(V.shape[-2:] == (dim, dim), f"{OPTION} {self.path}: V has layers of {V.shape[-2]} x {V.shape[-1]} "
                                            f"matrices; --dim {dim} needs {dim} x {dim}")
        require(Q.shape[-1] == dim and (not sphere or Q.shape[-2] == dim),
                f"{OPTION} {self.path}: Q and K have layers of {Q.shape[-2]} x {Q.shape[-1]} matrices; --dim {dim} "
                f"needs {dim if sphere else 'k'} x {dim}" + (" on the sphere" if sphere else ""))
        super().check(dim, sphere, layers)


def _read_arrays(path: str) -> dict:
    """The arrays of a ``.npz`` (no Python objects), one line naming the file for anything unreadable."""
    regular_file(path, OPTION)
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except OSError as exc:
        require(False, f"{OPTION} {path}: cannot read it ({getattr(exc, 'strerror', None) or 'not a .npz archive'})")
    except (ValueError, EOFError, NotImplementedError, zipfile.BadZipFile, zlib.error):
        require(False, f"{OPTION} {path}: not a .npz archive of numeric arrays Q, K, V (Python objects are not read)")


def _checked_arrays(path: str, arrays: dict) -> dict:
    """``Q, K, V`` as ``(L, H, ., d)`` float arrays and the optional ``beta (L,)``, each checked (module docstring)."""
    missing = [name for name in ("Q", "K", "V") if name not in arrays]
    require(not missing, f"{OPTION} {path} must hold arrays Q, K and V (missing {', '.join(missing)})")
    out = {}
    for name in ("Q", "K", "V"):
        array = arrays[name]
        require(np.issubdtype(array.dtype, np.number) and not np.issubdtype(array.dtype, np.complexfloating),
                f"{OPTION} {path}: {name} must be a real array (got dtype {array.dtype})")
        require(array.ndim in (3, 4) and min(array.shape, default=0) >= 1,
                f"{OPTION} {path}: {name} has shape {array.shape}; it must be LAYERS x k x d or LAYERS x HEADS x k x d")
        out[name] = bounded_entries(f"{OPTION} {path}: {name}", array.astype(float))
        out[name] = out[name][:, None] if array.ndim == 3 else out[name]
    Q, K, V = out["Q"], out["K"], out["V"]
    require(Q.shape == K.shape, f"{OPTION} {path}: Q and K must have one shape (got {Q.shape} and {K.shape})")
    require(V.shape[:2] == Q.shape[:2] and V.shape[-1] == V.shape[-2] == Q.shape[-1],
            f"{OPTION} {path}: V must be LAYERS x HEADS x d x d with Q's layers, heads and d (got V {V.shape}, "
            f"Q {Q.shape})")
    if "beta" in arrays:
        beta = np.asarray(arrays["beta"])
        require(beta.shape == (V.shape[0],) and np.issubdtype(beta.dtype, np.number)
                and not np.issubdtype(beta.dtype, np.complexfloating),
                f"{OPTION} {path}: beta must be a real array of one value per layer, shape ({V.shape[0]},) "
                f"(got {beta.shape})")
        beta = beta.astype(float)
        bound = RANGES["--beta"]
        require(bool(np.all(np.isfinite(beta))) and bool(np.all((beta >= bound.low) & (beta <= bound.high))),
                f"{OPTION} {path}: beta must be finite and in [{bound.low:g}, {bound.high:g}]")
        out["beta"] = beta
    return out


def _gaussian(spec: str) -> GaussianWeights:
    """``seed:S,sigma:X`` (module docstring), one line naming the option for anything else."""
    parts = dict(part.split(":", 1) if ":" in part else (part, "") for part in spec.split(","))
    require(sorted(parts) == ["seed", "sigma"] and len(spec.split(",")) == 2,
            f"{OPTION} must be a FILE.npz or {GAUSSIAN_FORM} (got {spec!r})")
    seed, sigma = read_integer(parts["seed"].strip()), read_number(parts["sigma"].strip())
    require(seed is not None, f"{OPTION}: seed must be an integer in [0, 2^63 - 1] (got {parts['seed']!r})")
    require(sigma is not None and math.isfinite(sigma) and 0 <= sigma <= 1e6,
            f"{OPTION}: sigma must be a finite number in [0, 1e6] (got {parts['sigma']!r})")
    return GaussianWeights(int(check_seed(seed, f"{OPTION} seed")), float(sigma))


def recorded_layer_weights(dataset, label: str) -> LayerWeights | None:
    """The schedule a run recorded (attribute ``layer_weights``; ``None`` if none): a seeded law drawn again from its
    spec, a file's matrices from the run's ``layer_Q``, ``layer_K``, ``layer_V``, ``layer_beta`` (the ``.npz`` need
    not travel with the run: it is never read again), checked as the file was."""
    spec = dataset.attrs.get("layer_weights")
    if spec is None or spec == "none":
        return None
    require(isinstance(spec, str), f"{label}: attribute layer_weights = {spec!r} is not a spec")
    if not spec.lower().endswith(".npz"):
        return layer_weights(spec)
    names = [f"layer_{name}" for name in ("Q", "K", "V")]
    require(all(name in dataset for name in names), f"{label}: attribute layer_weights = {spec!r} names a file whose "
                                                    f"matrices the run does not hold (no layer_Q, layer_K, layer_V)")
    arrays = {name[-1]: np.asarray(dataset[name].values) for name in names}
    beta = np.asarray(dataset["layer_beta"].values) if "layer_beta" in dataset else None
    if beta is not None and not np.all(np.isnan(beta)):
        arrays["beta"] = beta
    return FileWeights(spec, _checked_arrays(f"{spec} (as {label} records it)", arrays))


def layer_weights(spec) -> LayerWeights | None:
    """The schedule of ``spec``: ``None``, a :class:`LayerWeights`, a ``FILE.npz`` path or ``seed:S,sigma:X``."""
    if spec is None or isinstance(spec, LayerWeights):
        return spec
    require(isinstance(spec, str) or hasattr(spec, "__fspath__"),
            f"{OPTION} must be a FILE.npz or {GAUSSIAN_FORM} (got {spec!r})")
    text = str(spec)
    if text.lower().endswith(".npz"):
        return FileWeights(text, _checked_arrays(text, _read_arrays(text)))
    return _gaussian(text.strip())
