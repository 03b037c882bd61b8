"""A continuation keeps its model (issue 21; README "Continuing a run").

A run file given as ``init`` records the model it ran: ``attention``, ``beta`` and ``nu`` (a particle run
also ``qkv`` and, for random matrices, their ``seed``).  Not given,
each is taken from the file; given and different, it is refused in one line naming both values, unless
the caller asks for the change (``override=True``, ``--override`` on the command line), which the new
run records in its ``override`` attribute.  Without a run file the defaults apply.
"""

from __future__ import annotations

from meanfield.errors import require

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
            require(override, f"{name} = {value} differs from {recorded}, the {name} of the --init run: a continuation "
                              f"keeps its model (give the file's value, or leave it out where the file supplies it; "
                              f"--override / override=True changes it)")
            changes.append(f"{name}: {recorded} -> {value}")
    return values, "; ".join(changes)
