"""Least-squares straight lines: the one fit behind every slope the package reports (growth and decay rates,
convergence orders, cost exponents)."""

from __future__ import annotations

import math

import numpy as np


def fit_line(x, y) -> tuple[float, float]:
    """Least-squares ``(slope, intercept)`` of ``y = slope x + intercept``, ignoring non-finite points (NaN, NaN with
    fewer than two left)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < 2:
        return math.nan, math.nan
    slope, intercept = np.polyfit(x[keep], y[keep], 1)
    return float(slope), float(intercept)


def log_log_slope(x, y) -> float:
    """The exponent ``p`` of the least-squares fit ``log y = p log x + c``."""
    return fit_line(np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float)))[0]
