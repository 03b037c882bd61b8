"""Exact restarts: the whole state of a run at its last time, kept in its Dataset (DESIGN.md).

A run file holds, besides its frames, everything the run loop needs to go on exactly as
if it had never stopped:

* ``restart_state``: the scheme's state as the stepper sees it (spectral coefficients,
  finite-volume cell averages, Lagrangian nodes after any collapse, particle positions);
* every mutable field the scheme lists in ``restart_fields`` (node weights after merges,
  the collapse owner map, the seam offsets of circle nodes, the resolution monitor's
  reference tail, the finite-volume initial mass) as ``restart_<field>`` variables;
* attributes ``restart_time`` (the clock), ``restart_step_size`` (the adaptive
  stepper's next proposal, NaN for fixed steps) and ``restart_rng`` (the noise
  generator's bit-generator state as JSON, particles with noise only).

The same record taken before the first step, with the prefix ``initial_`` (``initial_state``,
``initial_time``, ...), is the run's start: :mod:`meanfield.solvers.rerun` repeats the run from it.

Arrays are stored as their raw bytes viewed as float64 or int64 (complex as float pairs),
with ``stored_dtype`` and ``stored_shape`` attributes, so a restart reads back the same
bits.  :func:`run_file` loads a run given as ``--init``; :func:`continues_exactly` recognises one
that the given scheme can continue exactly (same geometry, scheme, resolution, dimension and
state layout); anything else is a remap of its last density (:mod:`meanfield.solvers.initial_state`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from meanfield.errors import require
from meanfield.normalization import CARRY_RADIUS

from .contract import conform

PREFIX = "restart_"
INITIAL = "initial_"     # the record of the run's start, from which `meanfield rerun` repeats it (meanfield.solvers.rerun)
STATE = "state"


@dataclass
class Checkpoint:
    """What :func:`capture` takes from a scheme and stepper, and :func:`restore` puts back."""

    time: float
    state: np.ndarray
    fields: dict = field(default_factory=dict)
    step_size: float | None = None
    rng_state: dict | None = None


# --------------------------------------------------------------------------------------------- fields
def _owner_and_name(scheme, path: str):
    owner, _, name = path.rpartition(".")
    return (getattr(scheme, owner) if owner else scheme), name


def _get(scheme, path: str):
    owner, name = _owner_and_name(scheme, path)
    return getattr(owner, name)


def _set(scheme, path: str, value) -> None:
    owner, name = _owner_and_name(scheme, path)
    setattr(owner, name, value)


def capture(scheme, stepper, state, t: float) -> Checkpoint:
    """The run's state at time ``t``: ``state``, the scheme's ``restart_fields``, the stepper's next
    step and the noise generator."""
    scheme = conform(scheme)
    fields = {path: np.array(_get(scheme, path)) for path in scheme.restart_fields}
    fields = {path: value for path, value in fields.items() if value.dtype.kind != "O"}  # not set yet: left fresh
    rng = scheme.rng
    return Checkpoint(time=float(t), state=np.array(state), fields=fields, step_size=stepper.next_step,
                      rng_state=None if rng is None else rng.bit_generator.state)


def _check_fields(checkpoint: Checkpoint, scheme, label: str) -> None:
    """Every stored field is one the scheme declares in ``restart_fields``, of the kind (float, integer, bool)
    and number of dimensions its own value has, and finite (module docstring)."""
    declared = tuple(scheme.restart_fields)
    for path, value in checkpoint.fields.items():
        require(path in declared, f"{label}: restart field {path!r} is not one this scheme restores "
                                  f"({', '.join(declared) or 'none'})")
        expected = np.asarray(_get(scheme, path))
        value = np.asarray(value)
        unset = expected.dtype.kind == "O"              # set only by the initial state (e.g. the initial mass)
        require(unset or (value.dtype.kind == expected.dtype.kind and value.ndim == expected.ndim),
                f"{label}: restart field {path!r} is {value.dtype} with {value.ndim} dimensions; this scheme keeps "
                f"{expected.dtype} with {expected.ndim}")
        require(value.dtype.kind not in "fc" or bool(np.all(np.isfinite(value))),
                f"{label}: restart field {path!r} is not finite")


def restore(checkpoint: Checkpoint, scheme, stepper) -> np.ndarray:
    """Put the scheme's fields, the stepper's step and the generator back; returns the state."""
    scheme = conform(scheme)
    for path, value in checkpoint.fields.items():
        value = np.asarray(value)
        _set(scheme, path, value.item() if value.ndim == 0 else np.ascontiguousarray(value))
    scheme.after_restore()
    if checkpoint.step_size is not None:
        stepper.next_step = checkpoint.step_size
    if checkpoint.rng_state is not None:
        scheme.rng.bit_generator.state = checkpoint.rng_state
    return np.ascontiguousarray(checkpoint.state)


# --------------------------------------------------------------------------------------------- storage
def _variable_name(path: str, prefix: str = PREFIX) -> str:
    return prefix + path.replace(".", "__")


def _encode(value: np.ndarray):
    value = np.asarray(value)  # not ascontiguousarray: that turns a scalar into shape (1,)
    dtype = value.dtype
    if dtype == np.bool_:
        raw = value.astype(np.int64)
    elif np.issubdtype(dtype, np.complexfloating):
        raw = value.astype(np.complex128).view(np.float64)
    elif np.issubdtype(dtype, np.integer):
        raw = value.astype(np.int64)
    else:
        raw = value.astype(np.float64)
    return raw.ravel(order="C"), {"stored_dtype": str(dtype), "stored_shape": json.dumps(list(value.shape))}


def _decode(values: np.ndarray, attrs: dict) -> np.ndarray:
    dtype, shape = np.dtype(attrs["stored_dtype"]), tuple(json.loads(attrs["stored_shape"]))
    values = np.asarray(values)
    if np.issubdtype(dtype, np.complexfloating):
        values = np.ascontiguousarray(values, dtype=np.float64).view(np.complex128)
    return values.astype(dtype).reshape(shape)


def add_to_dataset(dataset, checkpoint: Checkpoint, prefix: str = PREFIX):
    """Store ``checkpoint`` in ``dataset`` (module docstring) as the restart record, or with ``prefix=INITIAL``
    as the record of the run's start; returns the dataset."""
    kind = "restart" if prefix == PREFIX else "initial"
    for path, value in {STATE: checkpoint.state, **checkpoint.fields}.items():
        name = _variable_name(path, prefix)
        raw, attrs = _encode(value)
        dataset[name] = (name + "_value",), raw, dict(attrs, long_name=f"{kind} record: {path} (raw values)")
    dataset.attrs[prefix + "time"] = checkpoint.time
    dataset.attrs[prefix + "step_size"] = math.nan if checkpoint.step_size is None else float(checkpoint.step_size)
    dataset.attrs[prefix + "fields"] = ",".join(checkpoint.fields)
    if checkpoint.rng_state is not None:
        dataset.attrs[prefix + "rng"] = json.dumps(checkpoint.rng_state)
    return dataset


def source_label(dataset) -> str:
    """How messages name a run given as ``--init``: its file, else ``run`` (or the ``label`` its reader set, e.g.
    ``rerun FILE``, :mod:`meanfield.solvers.rerun`)."""
    return dataset.encoding.get("label") or f"--init {dataset.encoding.get('source', 'run')}"


def _checked_decode(dataset, path: str, label: str, prefix: str = PREFIX) -> np.ndarray:
    """One stored array back, its ``stored_dtype`` and ``stored_shape`` checked against the raw values."""
    name = _variable_name(path, prefix)
    require(name in dataset, f"{label}: restart field {path!r} is named but its variable {name} is missing")
    variable = dataset[name]
    raw = np.asarray(variable.values)
    try:
        dtype = np.dtype(str(variable.attrs["stored_dtype"]))
        shape = tuple(json.loads(str(variable.attrs["stored_shape"])))
    except (KeyError, TypeError, ValueError):
        require(False, f"{label}: {name} has no readable stored_dtype / stored_shape attributes")
    require(dtype.kind in "biufc" and all(isinstance(n, int) and n >= 0 for n in shape),
            f"{label}: {name} has stored_dtype {dtype} and stored_shape {list(shape)}; a numeric type and "
            f"non-negative sizes are needed")
    require(raw.ndim == 1 and raw.dtype.kind in "if", f"{label}: {name} must hold raw numbers (got {raw.dtype})")
    count = math.prod(shape) * (2 if dtype.kind == "c" else 1)
    require(raw.size == count, f"{label}: {name} holds {raw.size} values; its stored_shape {list(shape)} needs {count}")
    require(dtype.kind not in "fc" or bool(np.all(np.isfinite(raw))), f"{label}: {name} is not finite")
    return _decode(raw, variable.attrs)


def from_dataset(dataset, prefix: str = PREFIX, label: str | None = None) -> Checkpoint | None:
    """The checkpoint a Dataset holds (its restart record, or with ``prefix=INITIAL`` the record of its start),
    or ``None`` if it has none (an older file).  A record that is there but damaged (sizes, types, a clock or
    step that is not finite and positive, a clock that is not its last (first) frame's, a field without its
    variable) is refused in one line (:class:`meanfield.errors.InputError`): nothing is computed from it."""
    if _variable_name(STATE, prefix) not in dataset or prefix + "time" not in dataset.attrs:
        return None
    label = source_label(dataset) if label is None else label
    paths = [p for p in str(dataset.attrs.get(prefix + "fields", "")).split(",") if p]
    clock = _number(dataset.attrs[prefix + "time"])
    require(math.isfinite(clock) and clock >= 0, f"{label}: {prefix}time must be finite and >= 0 (got {clock})")
    if "time" in dataset.coords and dataset.sizes.get("time", 0):
        frame, which = (-1, "last") if prefix == PREFIX else (0, "first")
        at = float(dataset["time"].values[frame])
        require(clock == at, f"{label}: {prefix}time {clock:g} is not the time of the {which} frame ({at:g})")
    step = _number(dataset.attrs.get(prefix + "step_size", math.nan))
    require(math.isnan(step) or (math.isfinite(step) and step > 0),
            f"{label}: {prefix}step_size must be > 0 and finite, or NaN for fixed steps (got {step})")
    rng = dataset.attrs.get(prefix + "rng")
    if rng is not None:
        try:
            rng = json.loads(str(rng))
        except ValueError:
            rng = None
        require(isinstance(rng, dict) and "bit_generator" in rng, f"{label}: {prefix}rng is not a generator state")
    return Checkpoint(time=clock, state=_checked_decode(dataset, STATE, label, prefix),
                      fields={p: _checked_decode(dataset, p, label, prefix) for p in paths},
                      step_size=None if math.isnan(step) else step, rng_state=rng)


def _number(value) -> float:
    """An attribute as a float; one that is not a number reads as ``-inf``, which every range check refuses
    (``NaN`` would pass as "no adaptive step")."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return -math.inf


def restore_checked(source, fresh_scheme, scheme, stepper) -> np.ndarray:
    """:func:`restore` of run ``source`` into ``scheme`` after trying it on ``fresh_scheme()``, a throwaway
    copy: the fields are checked (:func:`_check_fields`) and one right-hand side is evaluated from the stored
    state, which must fit the scheme and give finite numbers.  A record that fails is one line naming the file;
    the scheme the run uses is touched only by the restore itself (so the run is bit for bit what it was)."""
    checkpoint = from_dataset(source)
    label = source_label(source)
    state = np.asarray(checkpoint.state)
    require(state.dtype.kind in "fc" and bool(np.all(np.isfinite(state))), f"{label}: the restart state is not finite")
    probe = conform(fresh_scheme())
    _check_fields(checkpoint, probe, label)

    class _Stepper:
        next_step = None

    try:
        with np.errstate(all="ignore"):
            change = probe.rhs(restore(checkpoint, probe, _Stepper()), checkpoint.time)
    except (ValueError, IndexError, TypeError, KeyError, AttributeError) as exc:
        require(False, f"{label}: its restart record does not fit this {source.attrs.get('geometry')} "
                       f"{source.attrs.get('scheme', '')} run ({type(exc).__name__}: {str(exc)[:80]})")
    require(bool(np.all(np.isfinite(change))), f"{label}: its restart state gives a right-hand side that is not finite")
    return restore(checkpoint, scheme, stepper)


def run_file(init):
    """``init`` as a loaded run Dataset when it is one (an ``xarray.Dataset`` or a ``.nc`` path), else ``None``."""
    import xarray as xr

    from meanfield.errors import InputError
    from meanfield.storage import load_run

    if isinstance(init, xr.Dataset):
        from_dataset(init)                  # a damaged restart record is refused here, before anything else
        return init
    if isinstance(init, (str, Path)) and str(init).strip().endswith(".nc"):
        try:
            dataset = load_run(str(init).strip())
        except InputError as error:
            raise InputError(f"--init {error}") from None
        dataset.encoding.setdefault("source", str(init).strip())
        from_dataset(dataset)
        return dataset
    return None


def same_state_layout(source, normalization) -> bool:
    """Whether the state of run ``source`` has a radius column exactly when ``normalization`` (a
    :class:`meanfield.normalization.Normalization`) carries one."""
    return (str(source.attrs.get("normalization", "post")) in CARRY_RADIUS) == normalization.carries_radius


def continues_exactly(source, geometry: str, scheme_name: str, resolution, dim: int, normalization) -> bool:
    """Whether ``source`` (a run Dataset) is a run of the same geometry, scheme, resolution,
    dimension and state layout (:func:`same_state_layout`) with a restart record: then the run
    continues it exactly."""
    attrs = source.attrs
    return (attrs.get("geometry") == geometry and attrs.get("scheme") == scheme_name
            and int(attrs.get("resolution", -1)) == int(resolution) and int(attrs.get("dim", -1)) == int(dim)
            and same_state_layout(source, normalization) and from_dataset(source) is not None)
