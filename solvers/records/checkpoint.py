"""Exact restarts: the whole state of a run at its last time, kept beside its Dataset (DESIGN.md).

A run file holds, besides its frames, everything the run loop needs to go on exactly as
if it had never stopped, in its records (:mod:`meanfield.app.run_records`: the netCDF group ``restart`` of a file,
``dataset.meanfield.restart`` in memory; an older file's root):

* ``restart_state``: the scheme's state as the stepper sees it (spectral coefficients,
  finite-volume cell averages, Lagrangian nodes after any collapse, particle positions);
* every mutable field the scheme lists in ``restart_fields`` (node weights after merges,
  the collapse owner map, the seam offsets of circle nodes, the resolution monitor's
  reference tail, the finite-volume initial mass) as ``restart_<field>`` variables;
* attributes ``restart_time`` (the clock: the last frame's time), ``restart_step_size`` (the adaptive
  stepper's next proposal, NaN for fixed steps), ``restart_rng`` (the noise
  generator's bit-generator state as JSON, particles with noise only) and ``restart_step_start``
  (only when the run ended inside a step, its frames taken from the stepper's dense output,
  :mod:`meanfield.solvers.runs.runloop`: ``restart_state`` is then the state the stepper stood at before that step,
  at this earlier clock, and the restart retakes the step, so that it computes what an
  uninterrupted run does).

The same record taken before the first step, with the prefix ``initial_`` (``initial_state``,
``initial_time``, ...), is the run's start: :mod:`meanfield.solvers.runs.rerun` repeats the run from it.

Arrays are stored as their raw bytes viewed as float64 or int64 (complex as float pairs),
with ``stored_dtype`` and ``stored_shape`` attributes, so a restart reads back the same
bits.  :func:`run_file` loads a run given as ``--init``; :func:`continues_exactly` recognises one
that the given scheme can continue exactly (same geometry, scheme, resolution, dimension and
state layout); anything else is a remap of its last density (:mod:`meanfield.solvers.runs.initial_state`).

A run file is input like an option, checked before anything is computed, one line naming
the file: the settings it records against the option ranges and the registries
(:func:`check_recorded_settings`, when it is loaded), and, where a scheme is built from them, the
grid they give against the file's frames and its record against that scheme
(:func:`restore_checked`: sizes, kinds, finite values, one right-hand side and the first frame).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from meanfield.app.run_records import held, records_of
from meanfield.defaults import MASKS
from meanfield.errors import InputError, require
from meanfield.limits import MAX_ZONAL_DIM, RANGES
from meanfield.attention_kind import KINDS
from meanfield.initial.files import is_density_file
from meanfield.model import Model
from meanfield.normalization import CARRY_RADIUS
from meanfield.normalization import SCHEMES as NORMALIZATIONS
from meanfield.qkv import INTERACTION_PATHS, QKV_CHOICES, is_qkv_file
from meanfield.sampling import SAMPLINGS
from meanfield.schemes import SCHEMES

from ..schemes.contract import conform
from ..steppers.steppers import STEPPERS
from ..tracking.trackers import SaveSchedule

PREFIX = "restart_"
INITIAL = "initial_"     # the record of the run's start, from which `meanfield rerun` repeats it (meanfield.solvers.runs.rerun)
STATE = "state"


@dataclass
class Checkpoint:
    """What :func:`capture` takes from a scheme and stepper, and :func:`restore` puts back."""

    time: float
    state: np.ndarray
    fields: dict = field(default_factory=dict)
    step_size: float | None = None
    rng_state: dict | None = None
    #: the clock of ``state`` when it lies before ``time``: a run that ended inside a step keeps the state the
    #: stepper stood at before that step (:mod:`meanfield.solvers.runs.runloop`); ``None``: ``state`` is at ``time``
    step_start: float | None = None


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
    behind = getattr(stepper, "state_time", None)
    return Checkpoint(time=float(t), state=np.array(state), fields=fields, step_size=stepper.next_step,
                      rng_state=None if rng is None else rng.bit_generator.state,
                      step_start=None if behind is None else float(behind))


def _check_fields(checkpoint: Checkpoint, scheme, label: str, record: str = "restart record") -> None:
    """Every stored field is one the scheme declares in ``restart_fields``, of the kind (float, integer, bool)
    and number of dimensions its own value has, finite (module docstring), and no larger than the fresh scheme's
    value: its nodes and tokens only merge (a field a fresh scheme holds empty, the finite volumes' points, is
    read by the first frame, :func:`_first_frame`).  ``record`` names the record in refusals."""
    declared = tuple(scheme.restart_fields)
    for path, value in checkpoint.fields.items():
        field = f"{label}: field {path!r} of its {record}"
        require(path in declared, f"{field} is not one this scheme restores ({', '.join(declared) or 'none'})")
        expected = np.asarray(_get(scheme, path))
        value = np.asarray(value)
        unset = expected.dtype.kind == "O"              # set only by the initial state (e.g. the initial mass)
        require(unset or (value.dtype.kind == expected.dtype.kind and value.ndim == expected.ndim),
                f"{field} is {value.dtype} with {value.ndim} dimensions; this scheme keeps {expected.dtype} with "
                f"{expected.ndim}")
        require(value.dtype.kind not in "fc" or bool(np.all(np.isfinite(value))), f"{field} is not finite")
        require(unset or value.ndim == 0 or expected.size == 0 or value.size <= expected.size,
                f"{field} holds {value.size} values; this scheme's holds {expected.size} (one per node or token, "
                f"which only merge)")


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
    stepper.state_time = checkpoint.step_start
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
    """Store ``checkpoint`` in the records of ``dataset`` (module docstring; :func:`meanfield.app.run_records.held`)
    as the restart record, or with ``prefix=INITIAL`` as the record of the run's start; returns the dataset."""
    kind = "restart" if prefix == PREFIX else "initial"
    records = held(dataset)
    variables = {}
    for path, value in {STATE: checkpoint.state, **checkpoint.fields}.items():
        name = _variable_name(path, prefix)
        raw, attrs = _encode(value)
        variables[name] = (name + "_value",), raw, dict(attrs, long_name=f"{kind} record: {path} (raw values)")
    records.update(variables)               # one merge, not one per variable (1 ms each)
    records.attrs[prefix + "time"] = checkpoint.time
    records.attrs[prefix + "step_size"] = math.nan if checkpoint.step_size is None else float(checkpoint.step_size)
    records.attrs[prefix + "fields"] = ",".join(checkpoint.fields)
    if checkpoint.rng_state is not None:
        records.attrs[prefix + "rng"] = json.dumps(checkpoint.rng_state)
    if checkpoint.step_start is not None:
        records.attrs[prefix + "step_start"] = float(checkpoint.step_start)
    return dataset


def source_label(dataset) -> str:
    """How messages name a run given as ``--init``: its file, else ``run`` (or the ``label`` its reader set, e.g.
    ``rerun FILE``, :mod:`meanfield.solvers.runs.rerun`)."""
    return dataset.encoding.get("label") or f"--init {dataset.encoding.get('source', 'run')}"


def _checked_decode(records, path: str, label: str, prefix: str = PREFIX) -> np.ndarray:
    """One stored array of a run's ``records`` back, its ``stored_dtype`` and ``stored_shape`` checked against the
    raw values."""
    name = _variable_name(path, prefix)
    require(name in records, f"{label}: restart field {path!r} is named but its variable {name} is missing")
    variable = records[name]
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
    """The checkpoint a run Dataset holds in its records (:func:`meanfield.app.run_records.records_of`: its restart
    record, or with ``prefix=INITIAL`` the record of its start), or ``None`` if it has none (an older file).  A
    record that is there but damaged (sizes, types, a clock or step that is not finite and positive, a clock that is
    not its last (first) frame's, a field without its variable) is refused in one line
    (:class:`meanfield.errors.InputError`): nothing is computed from it."""
    records = records_of(dataset)
    if records is None or _variable_name(STATE, prefix) not in records or prefix + "time" not in records.attrs:
        return None
    label = source_label(dataset) if label is None else label
    paths = [p for p in str(records.attrs.get(prefix + "fields", "")).split(",") if p]
    clock = _number(records.attrs[prefix + "time"])
    require(math.isfinite(clock) and clock >= 0, f"{label}: {prefix}time must be finite and >= 0 (got {clock})")
    if "time" in dataset.coords and dataset.sizes.get("time", 0):
        frame, which = (-1, "last") if prefix == PREFIX else (0, "first")
        at = float(dataset["time"].values[frame])
        require(clock == at, f"{label}: {prefix}time {clock:g} is not the time of the {which} frame ({at:g})")
    step = _number(records.attrs.get(prefix + "step_size", math.nan))
    require(math.isnan(step) or (math.isfinite(step) and step > 0),
            f"{label}: {prefix}step_size must be > 0 and finite, or NaN for fixed steps (got {step})")
    rng = records.attrs.get(prefix + "rng")
    if rng is not None:
        try:
            rng = json.loads(str(rng))
        except ValueError:
            rng = None
        require(isinstance(rng, dict) and "bit_generator" in rng, f"{label}: {prefix}rng is not a generator state")
    behind = records.attrs.get(prefix + "step_start")
    if behind is not None:
        behind = _number(behind)
        # a run that ended inside its very first step has no step proposal yet (step_size NaN): the restart
        # retakes that step from the controller's first guess, as the straight run did
        require(math.isfinite(behind) and 0 <= behind < clock,
                f"{label}: {prefix}step_start must be in [0, {prefix}time) (got {behind:g})")
    return Checkpoint(time=clock, state=_checked_decode(records, STATE, label, prefix),
                      fields={p: _checked_decode(records, p, label, prefix) for p in paths},
                      step_size=None if math.isnan(step) else step, rng_state=rng, step_start=behind)


def _number(value) -> float:
    """An attribute as a float; one that is not a number reads as ``-inf``, which every range check refuses
    (``NaN`` would pass as "no adaptive step")."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return -math.inf


def frame_layout(dataset) -> dict:
    """``{variable: {dimension: size}}`` of the frames a run saved (its variables along ``time``, without it): what a
    record restored from the file must give.  A run Dataset made from another (the start of a re-run,
    :mod:`meanfield.solvers.runs.rerun`) carries the layout of the frames it came from as ``encoding["frames"]``."""
    if "frames" in dataset.encoding:
        return dataset.encoding["frames"]
    return {name: dict(zip(variable.dims[1:], variable.shape[1:])) for name, variable in dataset.data_vars.items()
            if variable.dims[:1] == ("time",)}


#: The attribute that sets the size of a dimension of a run's frames; every other dimension: ``resolution``.
SIZE_ATTRIBUTES = {"component": "dim", "s": "positions"}
#: The attributes that set a run's grid (its coordinates' sizes and values).
GRID_ATTRIBUTES = ("resolution", "dim", "n", "positions")
#: How far a coordinate a scheme computes may lie from the one a file saved (another build or version rounds
#: differently; another ``dim`` moves the zonal nodes by ~1e-2).
COORDINATE_TOL = 1e-9


def _size_attribute(dimension: str, geometry) -> str:
    if dimension == "particle" and geometry == "particles":
        return "n"
    return SIZE_ATTRIBUTES.get(dimension, "resolution")


def _coordinate_gap(source, name: str, values: np.ndarray) -> float:
    """How far the file's coordinate ``name`` lies from ``values`` (0 where the file has no such numeric one)."""
    if name not in source.coords or source[name].shape != values.shape or values.dtype.kind not in "iuf":
        return 0.0
    recorded = np.asarray(source[name].values)
    if recorded.dtype.kind not in "iuf" or recorded.size == 0:
        return 0.0
    return float(np.max(np.abs(recorded.astype(float) - values.astype(float))))


def check_grid(probe, source, label: str) -> None:
    """The grid that the file's attributes give (``coords()`` of a scheme built from them) is the grid of its frames:
    the sizes of their dimensions, and the coordinates the file saved.  An edited ``resolution``, ``n``, ``dim`` or
    ``positions`` is one line naming it, before its record is put anywhere (it used to end in a numpy broadcast
    error, or, for a zonal ``dim``, in a run on nodes that are not the file's)."""
    attrs = source.attrs
    saved = {dimension: size for sizes in frame_layout(source).values() for dimension, size in sizes.items()}
    for name, entry in probe.coords().items():
        dimension, values = entry[0], np.asarray(entry[1])
        if not isinstance(dimension, str):
            continue
        if saved.get(dimension, values.size) != values.size:
            size = _size_attribute(dimension, attrs.get("geometry"))
            require(False, f"{label}: attribute {size} = {shown(attrs.get(size))} does not match the file's arrays: "
                           f"with it, a {_run_kind(attrs)} has {values.size} {dimension} values; the file's frames "
                           f"have {saved[dimension]}")
        gap = _coordinate_gap(source, name, values)
        if gap > COORDINATE_TOL:
            given = ", ".join(f"{key} = {shown(attrs[key])}" for key in GRID_ATTRIBUTES if key in attrs)
            require(False, f"{label}: attributes {given} do not match the file's arrays: with them, a "
                           f"{_run_kind(attrs)} has other {name} values (up to {gap:.3g} from the file's)")


def _record_name(source) -> str:
    return source.encoding.get("record", "restart record")


def _run_kind(attrs) -> str:
    """``circle fv run``, ``particle run``: how refusals name the kind of run a file holds."""
    geometry = attrs.get("geometry")
    return "particle run" if geometry == "particles" else f"{geometry} {attrs.get('scheme', '')} run"


def _first_frame(probe, stepper, state, t: float) -> dict:
    """The frame a run makes of ``state`` before its first step: the scheme's, with what its own trackers add (as
    :func:`meanfield.solvers.runs.runloop.run` does; the finite volumes' point masses are read only there)."""
    frame = probe.frame(state)
    for tracker in probe.trackers():
        tracker.start(probe, stepper, state, t, SaveSchedule(np.empty(0), False, t))
        frame.update(tracker.frame(probe, state, frame))
    return frame


def _tried(checkpoint: Checkpoint, probe, source, label: str) -> tuple:
    """``(state, rhs, frame)`` of the record restored into ``probe`` (:func:`_first_frame`); a record that does not
    fit is one line."""

    class _Stepper:
        next_step = None

    try:
        with np.errstate(all="ignore"):
            stepper = _Stepper()
            state = restore(checkpoint, probe, stepper)
            change = np.asarray(probe.rhs(state, checkpoint.time))
            return state, change, _first_frame(probe, stepper, state, checkpoint.time)
    except (ValueError, IndexError, TypeError, KeyError, AttributeError, RuntimeError) as exc:   # ducc0: RuntimeError
        detail = " ".join(str(exc).split())[:80]            # one line (ducc0's messages span several)
        require(False, f"{label}: its {_record_name(source)} does not fit this {_run_kind(source.attrs)} "
                       f"({type(exc).__name__}: {detail})")


def _check_record(checkpoint: Checkpoint, probe, source, label: str) -> None:
    """The record, restored into ``probe``, is a state of this scheme: its right-hand side is finite, of the state's
    own shape and kind (complex coefficients stay complex), and its frame has the shapes of the file's frames (a state
    with three times its values passed the right-hand side of the finite volumes, whose points it took them for)."""
    state, change, frame = _tried(checkpoint, probe, source, label)
    what = _record_name(source)
    require(bool(np.all(np.isfinite(change))), f"{label}: its {what} gives a right-hand side that is not finite")
    require(change.shape == state.shape and change.dtype.kind == state.dtype.kind,
            f"{label}: its {what} holds a {state.dtype} state of shape {state.shape}; this scheme's state of that is "
            f"{change.dtype} of shape {change.shape}")
    layout = frame_layout(source)
    for name, value in frame.items():
        expected = tuple(layout.get(name, {}).values())
        require(name not in layout or np.shape(value) == expected,
                f"{label}: its {what} gives frames whose {name} has shape {np.shape(value)}; the file's frames "
                f"have {expected}")


def _fits(shape: tuple, expected: tuple | None) -> bool:
    return expected is None or (len(shape) == len(expected)
                                and all(size is None or size == given for given, size in zip(shape, expected)))


def restore_checked(source, fresh_scheme, scheme, stepper, shape: tuple | None = None) -> np.ndarray:
    """:func:`restore` of run ``source`` into ``scheme`` after trying it on ``fresh_scheme()``, a throwaway
    copy: the state has ``shape`` where the driver fixes it (``None``: any size; a particle run's one system of
    tokens), the scheme's grid must be that of the file's frames (:func:`check_grid`), the fields are checked
    (:func:`_check_fields`) and the record must be a state of the scheme (:func:`_check_record`: one right-hand side
    and the first frame from it).  A record that fails is one line naming the file; the scheme the run uses is
    touched only by the restore itself (so the run is bit for bit what it was)."""
    checkpoint = from_dataset(source)
    label = source_label(source)
    state = np.asarray(checkpoint.state)
    require(state.dtype.kind in "fc" and bool(np.all(np.isfinite(state))),
            f"{label}: the state of its {_record_name(source)} is not finite")
    probe = conform(fresh_scheme())
    check_grid(probe, source, label)
    if not _fits(state.shape, shape):
        require(False, f"{label}: its {_record_name(source)} holds a state of shape {state.shape}; this run's is "
                       f"{' x '.join('any' if n is None else str(n) for n in shape)}")
    _check_fields(checkpoint, probe, label, _record_name(source))
    _check_record(checkpoint, probe, source, label)
    return restore(checkpoint, scheme, stepper)


# --------------------------------------------------------------------------------------------- the recorded settings
#: The numeric attributes of a run file that its readers use, and the option whose range
#: (:data:`meanfield.limits.RANGES`) each keeps.
RECORDED_RANGES = {"beta": "--beta", "nu": "--nu", "dim": "--dim", "n": "--n", "resolution": "--resolution",
                   "seed": "--seed", "t_final": "--t-final", "save_every": "--save-every", "save_log": "--save-log",
                   "rtol": "--rtol", "cfl": "--cfl", "dt_max": "--dt-max", "collapse_tol": "--collapse-tol",
                   "resolution_tol": "--resolution-tol", "positivity_tol": "--positivity-tol", "r0": "--r0",
                   "alpha": "--alpha", "mix_switch": "--mix-switch", "alibi": "--alibi", "positions": "--positions"}
#: Attributes that a run records as ``"none"`` when they were not set.
UNSET = ("save_every", "save_log", "collapse_tol")
#: The dimensions of the runs of each PDE geometry (least, most); particles take the whole ``--dim`` range.
RUN_DIMS = {"circle": (2, 2), "sphere": (3, 3), "zonal": (3, MAX_ZONAL_DIM)}
#: The attributes of a model (:class:`meanfield.model.Model`).
MODEL = ("attention", "beta", "nu", "dim")


def _plain(value):
    """An attribute as a Python value (netCDF gives numpy scalars, and arrays for attributes of several values)."""
    return value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value


def shown(value) -> str:
    """An attribute as a refusal shows it (``repr`` of its Python value)."""
    return repr(_plain(value))


def _refuse_unless(ok: bool, label: str, name: str, value, allowed: str) -> None:
    require(ok, f"{label}: attribute {name} = {shown(value)} is not allowed; it must be {allowed}")


def _recorded_names(geometry: str) -> dict:
    """The named attributes of a run of ``geometry`` and the names each may take (the registries the readers use)."""
    schemes = tuple(SCHEMES[geometry]) if geometry in SCHEMES else ("particles",)
    return {"scheme": schemes, "attention": tuple(KINDS), "stepper": tuple(STEPPERS), "normalization": NORMALIZATIONS,
            "sampling": SAMPLINGS, "interaction_path": INTERACTION_PATHS, "mask": MASKS}


def _check_names(attrs, label: str) -> None:
    for name, names in _recorded_names(attrs["geometry"]).items():
        if name in attrs:
            value = attrs[name]
            _refuse_unless(isinstance(value, str) and value in names, label, name, value,
                           f"one of {', '.join(names)} (a {attrs['geometry']} run)")
    qkv = attrs.get("qkv", "identity")
    _refuse_unless(isinstance(qkv, str) and (qkv in (*QKV_CHOICES, "custom") or is_qkv_file(qkv)), label, "qkv", qkv,
                   f"one of {', '.join(QKV_CHOICES)}, custom or a FILE.npz")


def _unset(name: str, value) -> bool:
    """``"none"`` where a run records an unset setting, and ``dt_max = inf`` (no cap)."""
    if isinstance(value, str):
        return value == "none" and name in UNSET
    return name == "dt_max" and isinstance(value, (float, np.floating)) and value == math.inf


def _check_numbers(attrs, label: str) -> None:
    for name, option in RECORDED_RANGES.items():
        value = attrs.get(name)
        if value is None or _unset(name, value):
            continue
        limits = RANGES[option]
        try:
            limits.check(option, _plain(value))
        except InputError:
            _refuse_unless(False, label, name, value, limits.text() + (f" ({limits.note})" if limits.note else ""))


def restart_time(dataset):
    """The ``restart_time`` of a run Dataset's records, the clock a restart starts from (``None``: none), which is
    read even where the rest of the record is gone (:func:`meanfield.solvers.runs.run_setup.start_time`)."""
    records = records_of(dataset)
    return None if records is None else records.attrs.get(PREFIX + "time")


def _check_clock(dataset, label: str) -> None:
    """:func:`restart_time`, where there is one: a finite number ``>= 0``."""
    clock = restart_time(dataset)
    clock = _plain(0.0 if clock is None else clock)
    _refuse_unless(isinstance(clock, (int, float)) and not isinstance(clock, bool) and math.isfinite(clock)
                   and clock >= 0, label, "restart_time", clock, "a finite number >= 0")


def _check_model(attrs, label: str) -> None:
    """The dimension of the run's geometry, and a model that :class:`meanfield.model.Model` takes (USA beta <= 700;
    the PDE beta > 0)."""
    geometry, dim = attrs["geometry"], _plain(attrs.get("dim"))
    if geometry in RUN_DIMS and dim is not None:
        low, high = RUN_DIMS[geometry]
        _refuse_unless(low <= dim <= high, label, "dim", dim,
                       f"{low} for a {geometry} run" if low == high else f"in [{low}, {high}] for a {geometry} run")
    if any(name not in attrs for name in MODEL):
        return
    try:
        Model(**{name: _plain(attrs[name]) for name in MODEL})
    except InputError as error:
        given = ", ".join(f"{name} = {shown(attrs[name])}" for name in MODEL)
        require(False, f"{label}: attributes {given} are not a model ({error})")
    _refuse_unless(geometry == "particles" or attrs["beta"] > 0, label, "beta", attrs["beta"], "> 0 for the PDE")


def _check_schedule(attrs, label: str) -> None:
    """A noise schedule's spec parses (:mod:`meanfield.noise_schedule`); a Python function's name is kept as it is."""
    from meanfield.noise_schedule import as_schedule, is_function_spec

    spec = attrs.get("nu_schedule", "none")
    _refuse_unless(isinstance(spec, str), label, "nu_schedule", spec, "a schedule spec such as ramp:0.3>0.1@0..500")
    if spec != "none" and not is_function_spec(spec):
        try:
            as_schedule(spec)
        except InputError as error:
            require(False, f"{label}: attribute nu_schedule = {spec!r} is not a schedule ({error})")


def check_recorded_settings(dataset, label: str) -> None:
    """The settings a solve or particle run file records, checked like the options they were (DESIGN.md "Command
    line") before any reader uses them: names among those the registries hold (the scheme of its geometry, attention,
    stepper, normalisation, sampling, interaction path, mask, ``qkv``), numbers within :data:`RECORDED_RANGES`, the
    dimension of its geometry, a model, a noise schedule that parses.  One line names the file (``label``), the
    attribute, its value and what it may be: a file whose ``scheme`` said ``nonsense`` was continued as a remap.
    Files of other runs are left to their readers, which refuse them by their geometry.  That the attributes fit the
    file's arrays is checked where a scheme is built from them (:func:`restore_checked`), the matrices of particle
    runs by :func:`meanfield.solvers.runs.particle_run.recorded_matrices`."""
    attrs = dataset.attrs
    geometry = attrs.get("geometry")      # none: a Dataset made by hand, read as a density (meanfield.initial.sources)
    _refuse_unless(geometry is None or isinstance(geometry, str), label, "geometry", geometry,
                   f"one of {', '.join(SCHEMES)}, particles")
    if geometry not in (*SCHEMES, "particles"):
        return
    _check_names(attrs, label)
    _check_numbers(attrs, label)
    _check_clock(dataset, label)
    _check_model(attrs, label)
    _check_schedule(attrs, label)


class TypedStart(str):
    """The text a run's start was typed as (its ``init``), holding ``run``, a run Dataset whose restart record is that
    start.  :mod:`meanfield.solvers.runs.rerun` gives it as ``init``: the driver starts from the record (:func:`run_file`
    returns ``run``) and records ``init`` and the ``command`` of the run as typed, built from its settings
    (``shlex.join``, :func:`meanfield.solvers.records.run_record.canonical_command`), so no command is copied from a file."""

    def __new__(cls, text: str, run):
        start = super().__new__(cls, text)
        start.run = run
        return start


def run_file(init):
    """``init`` as a loaded run Dataset when it is one (an ``xarray.Dataset``, a ``.nc`` path or a
    :class:`TypedStart`), else ``None``.  Its recorded settings (:func:`check_recorded_settings`) and its restart
    record (:func:`from_dataset`) are checked here, before anything reads them."""
    import xarray as xr

    from meanfield.app.storage import load_run

    if isinstance(init, TypedStart):
        return init.run
    if isinstance(init, xr.Dataset):
        dataset = init
    elif isinstance(init, (str, Path)) and str(init).strip().endswith(".nc") and not is_density_file(init):
        try:
            dataset = load_run(str(init).strip())
        except InputError as error:
            raise InputError(f"--init {error}") from None
        dataset.encoding.setdefault("source", str(init).strip())
    else:
        return None
    check_recorded_settings(dataset, source_label(dataset))
    from_dataset(dataset)                  # a damaged restart record is refused here, before anything else
    return dataset


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
