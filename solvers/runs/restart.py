"""A restart keeps its model (docs/guide.md "Continuing a run").

A run file given as ``init`` records the model it ran: ``attention``, ``beta``, ``nu`` and the normalisation
scheme with its parameters (a particle run also ``qkv`` and, for random matrices, their ``seed``).  Not given,
each is taken from the file; given and different, it is refused in one line naming both values, unless
the caller asks for the change (``override=True``, ``--override`` on the command line), which the new
run records in its ``override`` attribute.  Without a run file the defaults apply.

A noise schedule (``nu_schedule``, :mod:`meanfield.noise_schedule`) is part of the model the same way
(:func:`resolve_schedule`): a run file that followed one records its spec (and ``nu = 0``), and its restart
keeps it unless given another schedule or a constant ``nu`` (refused without ``override``).
"""

from __future__ import annotations

import math

from meanfield.errors import require
from meanfield.normalization import Normalization

NORMALIZATION_PARAMETERS = ("alpha", "r0", "mix_switch")

def _same(given, recorded) -> bool:
    if isinstance(given, str) or isinstance(recorded, str):
        return str(given).lower() == str(recorded).lower()
    return float(given) == float(recorded)


def _as_given(recorded, default):
    return str(recorded) if isinstance(default, str) else float(recorded)


def resolve_model(source, given: dict, defaults: dict, override: bool) -> tuple[dict, str]:
    """``(values, changes)``: each setting of ``given`` (``None``: not given) as given, else the run file's, else
    the default; ``changes`` lists the overridden ones (``"beta: 9 -> 5"``), empty without any."""
    values, changes = {}, []
    for name in given:
        value = given[name]
        recorded = None if source is None else source.attrs.get(name)
        if value is None:
            values[name] = defaults[name] if recorded is None else _as_given(recorded, defaults[name])
            continue
        values[name] = value
        if recorded is not None and not _same(value, recorded):
            require(override, f"{name} = {value} differs from {recorded}, the {name} of the --init run: a restart "
                              f"keeps its model (give the file's value, or leave it out where the file supplies it; "
                              f"--override changes it)")
            changes.append(f"{name}: {recorded} -> {value}")
    return values, "; ".join(changes)


def resolve_schedule(source, nu, nu_schedule, override: bool) -> tuple[float | None, object, str]:
    """``(nu, schedule, change)`` of a run given ``nu`` and ``nu_schedule`` (``None``: not given; a spec, a
    :class:`meanfield.noise_schedule.NoiseSchedule` or a callable), continuing run file ``source`` or not.

    ``nu`` and ``nu_schedule`` together are refused.  Not given, the file's schedule (its ``nu_schedule``
    attribute) is kept, also when ``nu`` is given equal to the file's recorded ``nu`` (0: what a re-run passes);
    a file whose schedule was a Python function needs it again.  A schedule given to a run file without it, or a
    different one, or a constant ``nu`` different from the file's given to a scheduled run file, is refused unless
    ``override``.  With a schedule in effect the returned ``nu`` is 0 (the model's constant part)."""
    from meanfield.noise_schedule import as_schedule, is_function_spec

    require(nu is None or nu_schedule is None,
            f"give --nu or --nu-schedule, not both (got --nu {nu} and --nu-schedule {nu_schedule!r})")
    schedule = as_schedule(nu_schedule)
    recorded = None if source is None else source.attrs.get("nu_schedule")
    recorded = None if recorded is None or str(recorded) == "none" else str(recorded)
    label = "the --init run"
    if schedule is None:
        if recorded is None:
            return nu, None, ""
        if nu is None or float(nu) == float(source.attrs.get("nu", 0.0)):
            require(not is_function_spec(recorded),
                    f"{label} followed the noise schedule {recorded}, a Python function a file cannot hold: pass it "
                    f"again as nu_schedule= (or a constant --nu with --override)")
            return 0.0, as_schedule(recorded), ""
        require(override, f"nu = {nu} differs from the noise schedule {recorded} of {label}: a restart keeps its "
                          f"model (leave --nu out; --override changes it)")
        return nu, None, f"nu_schedule: {recorded} -> none"
    if source is None or recorded == schedule.spec:
        return 0.0, schedule, ""
    before = recorded if recorded is not None else f"none (nu = {source.attrs.get('nu', 0.0)})"
    require(override, f"--nu-schedule {schedule.spec} differs from the noise of {label}, {before}: a restart "
                      f"keeps its model (leave --nu-schedule out; --override changes it)")
    return 0.0, schedule, f"nu_schedule: {before} -> {schedule.spec}"


def recorded_normalization(source) -> Normalization | None:
    """The normalisation scheme a run file records (``Normalization.as_attrs()``), or ``None`` without one."""
    if source is None or "normalization" not in source.attrs:
        return None
    attrs = source.attrs
    numbers = {key: float(attrs[key]) for key in NORMALIZATION_PARAMETERS
               if isinstance(attrs.get(key), (int, float)) and math.isfinite(float(attrs[key]))}
    return Normalization(str(attrs["normalization"]), **numbers)


def _describe(scheme: Normalization) -> str:
    used = {key: value for key, value in scheme.options().items() if key != "normalization" and value is not None}
    return scheme.name + "".join(f", {key} = {value:g}" for key, value in used.items())


def resolve_normalization(source, normalization, parameters: dict, override: bool) -> tuple[Normalization, str]:
    """``(scheme, change)``: the normalisation given (a name or :class:`Normalization`, with ``parameters``; the
    name ``None`` with parameters: the file's name), else the run file's, else Post-LN.  A given scheme whose name
    or used parameters differ from the file's is refused unless ``override`` (``change`` says what changed)."""
    from meanfield.settings import gather_normalization

    recorded = recorded_normalization(source)
    if normalization is None and not parameters:
        return (Normalization() if recorded is None else recorded), ""
    if normalization is None:
        normalization = "post" if recorded is None else recorded.name
    given = gather_normalization(normalization, dict(parameters))
    if recorded is None or given.options() == recorded.options():
        return given, ""
    require(override, f"normalization {_describe(given)} differs from {_describe(recorded)}, the --init run's: a "
                      f"restart keeps its model (leave --normalization and its parameters out, or give the "
                      f"file's; --override changes it)")
    return given, f"normalization: {_describe(recorded)} -> {_describe(given)}"


def joined(*changes: str) -> str:
    """The ``override`` attribute of several changes (empty ones left out)."""
    return "; ".join(change for change in changes if change)
