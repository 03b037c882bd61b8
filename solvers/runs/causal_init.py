"""Initial data of the causal kinetic PDE: one density per token position ``s`` (MATH.md §8).

``causal_initial_state(init, geometry, scheme, seed)`` takes what :func:`meanfield.solve` takes with
``mask="causal"``; each slice goes through the ordinary :func:`meanfield.solvers.runs.initial_state.initial_state` (the same
checks, remaps and text specs), so every kind of data an ordinary run takes is taken here:

* data that do not depend on ``s`` (a text spec, grid values of one slice, a DataArray without an ``s``
  dimension, an ordinary run or run file) give every slice the same density;
* ``bump:EPS@S0~WIDTH[:DEGREE]``: the uniform density times ``1 + EPS g(s) phi(x)`` with the Gaussian
  ``g(s) = exp(-(s - S0)^2 / (2 WIDTH^2))`` and ``phi`` the degree-``DEGREE`` zonal harmonic scaled to
  ``phi(e) = 1`` (circle ``cos(k theta)``; S^2 ``P_l(cos theta)``; zonal ``C_l(cos polar) / C_l(1)``; default
  degree 1): a perturbation localised in position, ``0 < EPS < 1`` so the density stays positive;
* an array of shape ``(N_S,) + one slice's grid`` (point values at the positions ``s_i = i / (N_S - 1)``);
* an ``xarray.DataArray`` with an ``s`` dimension (and a slice's coordinates, as for an ordinary run), or a
  causal run (Dataset or ``.nc``, its last frame): interpolated linearly in ``s`` onto the positions when its
  ``s`` differ from them;
* a callable ``f(s, theta)`` (circle), ``f(s, theta, phi)`` (sphere: colatitude and longitude in radians, MATH.md
  §2.2), ``f(s, polar)`` (zonal), vectorised over the points of one slice (:func:`meanfield.grid`).
"""

from __future__ import annotations

import math
import re

import numpy as np
import xarray as xr

from meanfield.errors import require
from meanfield.geometries import geometry_of
from meanfield.geometry import sphere_area
from meanfield.initial.kinds import describe_init, kind_of, label_of
from meanfield.initial.sources import load_init_run

from .initial_state import initial_state

#: ``bump:EPS@S0~WIDTH[:DEGREE]`` (module docstring)
BUMP = re.compile(r"^bump:(?P<eps>[^@]+)@(?P<centre>[^~]+)~(?P<width>[^:]+)(?::(?P<degree>\d+))?$")


class AtPosition:
    """``f(s, *points)`` at one position ``s``: the callable one slice's initial data are read from."""

    def __init__(self, function, s: float, label: str):
        self.function, self.s = function, float(s)
        self.__qualname__ = f"{label} at s = {self.s:.4g}"

    def __call__(self, *points):
        return self.function(self.s, *points)


def bump(spec: str, geometry: str, dim: int):
    """The callable ``f(s, *points)`` of a ``bump:`` spec (module docstring), checked."""
    match = BUMP.match(spec.strip())
    require(match is not None, f"--init {spec!r}: a bump is bump:EPS@S0~WIDTH[:DEGREE] (e.g. bump:1e-3@0.5~0.05:2)")
    try:
        eps, centre, width = (float(match[name]) for name in ("eps", "centre", "width"))
    except ValueError:
        require(False, f"--init {spec!r}: EPS, S0 and WIDTH must be numbers")
    require(0 < eps < 1, f"--init {spec!r}: EPS must be in (0, 1) (got {eps:g})")
    require(math.isfinite(centre), f"--init {spec!r}: S0 must be finite (got {centre:g})")
    require(math.isfinite(width) and width > 0, f"--init {spec!r}: WIDTH must be a finite number > 0 (got {width:g})")
    degree = int(match["degree"] or 1)
    require(degree >= 1, f"--init {spec!r}: DEGREE must be >= 1")
    profile, uniform = geometry_of(geometry).zonal_profile(dim, degree), 1.0 / sphere_area(dim)

    def density(s, *points):
        return uniform * (1.0 + eps * math.exp(-0.5 * ((s - centre) / width) ** 2) * profile(*points))

    return density


def _along_positions(data: xr.DataArray, positions: np.ndarray, label: str) -> list:
    """One DataArray per position: ``data`` read at ``positions`` (linear in ``s`` where they differ)."""
    s = np.asarray(data["s"].values, dtype=float) if "s" in data.coords else None
    require(s is not None and s.ndim == 1 and np.all(np.isfinite(s)) and np.all(np.diff(s) > 0),
            f"{label}: the s coordinate must be finite and increasing")
    require(s[0] <= positions[0] + 1e-12 and s[-1] >= positions[-1] - 1e-12,
            f"{label}: s covers [{s[0]:.4g}, {s[-1]:.4g}]; it must cover [0, 1]")
    if s.size != positions.size or not np.allclose(s, positions, rtol=0, atol=1e-12):
        data = data.interp(s=np.clip(positions, s[0], s[-1]))
    return [data.isel(s=index, drop=True) for index in range(positions.size)]


def _last_causal_frame(init):
    """A causal run's last density frame (a DataArray with ``s``), or ``None`` for an ordinary run or any other data."""
    kind = kind_of(init)
    if kind not in ("path", "dataset"):
        return None
    run = load_init_run(init) if kind == "path" else init
    if "density" not in run or "s" not in run["density"].dims:
        return None
    return run["density"].isel(time=-1)


def slice_inits(init, geometry: str, scheme) -> list:
    """What each slice's initial data are read from: a list of one ``init`` per position, or ``[init]`` when the
    data do not depend on ``s`` (module docstring)."""
    positions, label = scheme.positions, label_of(init)
    if isinstance(init, str) and init.strip().startswith("bump:"):
        function = bump(init, geometry, scheme.model.dim)
        return [AtPosition(function, s, init.strip()) for s in positions]
    frame = _last_causal_frame(init)
    if frame is not None:
        return _along_positions(frame, positions, label)
    kind = kind_of(init)
    if kind == "function":
        return [AtPosition(init, s, describe_init(init)) for s in positions]
    if kind == "array":
        values = np.asarray(init)
        one_slice = tuple(np.size(scheme.slice.coords()[name][1]) for name in scheme.slice.dims()["density"])
        if values.shape == one_slice:
            return [values]
        require(values.shape == (positions.size,) + one_slice,
                f"{label}: expected shape {(positions.size,) + one_slice} (--positions {positions.size} x one slice's "
                f"grid) or {one_slice} (the same density at every position)")
        return list(values)
    if kind == "dataarray" and "s" in init.dims:
        return _along_positions(init, positions, label)
    return [init]


def causal_initial_state(init, geometry: str, scheme, seed=None) -> np.ndarray:
    """The initial state of a :class:`meanfield.solvers.schemes.causal.CausalKinetic` scheme (module docstring)."""
    inits = slice_inits(init, geometry, scheme)
    states = [initial_state(one, geometry, scheme.slice, seed) for one in inits]
    state = np.stack(states if len(states) > 1 else states * scheme.positions.size)
    return scheme.start(state)
