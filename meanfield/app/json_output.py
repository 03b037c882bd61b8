"""Strict JSON for the command line's ``--json`` outputs (RFC 8259: no NaN, no Infinity).

Python's ``json.dumps`` writes ``NaN`` and ``-Infinity`` tokens that strict parsers refuse.  :func:`strict_json`
writes every value that is not a finite number as ``null`` and says so: a dictionary result gains
``"not_finite"``, the paths of those values (``"growth_rates[3]"``), with the reason; the dump itself runs with
``allow_nan=False``, so a value that slipped through fails loudly instead of printing an invalid document.
"""

from __future__ import annotations

import json
import math

import numpy as np

#: Why a value was written as ``null``.
NOT_FINITE_REASON = "not a finite double (overflow, or undefined for these settings): written as null"


def _clean(value, path: str, nulls: list):
    """``value`` with every non-finite float replaced by ``None`` (its path appended to ``nulls``)."""
    if isinstance(value, dict):
        return {key: _clean(item, f"{path}.{key}" if path else str(key), nulls) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(item, f"{path}[{index}]", nulls) for index, item in enumerate(value)]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist(), path, nulls)
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        nulls.append(path)
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def strict_json(result, **dump_options) -> str:
    """``result`` as strict JSON (module docstring)."""
    nulls: list = []
    cleaned = _clean(result, "", nulls)
    if nulls and isinstance(cleaned, dict):
        cleaned["not_finite"] = {"paths": nulls, "reason": NOT_FINITE_REASON}
    return json.dumps(cleaned, allow_nan=False, **dump_options)
