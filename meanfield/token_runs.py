"""Named runs of tokens in R^d, as ``meanfield hardmax`` and ``meanfield rd`` make them (the API of those commands).

:func:`hardmax_case_run`: hardmax attention (``beta = inf``, docs/MATH.md §12) integrated exactly and event by
event (:func:`meanfield.hardmax.hardmax_trajectory`), optionally beside its finite-beta softmax twin and the distance
between the two. :func:`rd_case_run`: the rescaled tokens ``z = e^{-tV} x`` (MATH.md §12.1,
:func:`meanfield.rd_tokens.rd_limit_sets`) and the limit set the theorem for ``V`` names (polytope vertices or
parallel hyperplanes). Both return a run Dataset (dims ``time, particle, component``; variable ``positions``; the
matrices as variables) whose ``command`` attribute repeats it bit for bit, and whose ``geometry`` attribute
(``hardmax``, ``rd-tokens``) is what ``meanfield plot`` draws it by (:mod:`meanfield.plotting.tokens`).

Inputs are drawn from ``numpy.random.default_rng(seed)`` (the cases below), or read from a ``.npz`` file of arrays
(checked: shapes, finite, entries within the ``--qkv`` range).
"""

from __future__ import annotations

import math
import shlex
import time as clock
import zipfile
from pathlib import Path

import numpy as np
import xarray as xr

from .app.input_files import regular_file
from .app.storage import package_version
from .errors import InputError, require
from .hardmax import HardmaxError, argmax_sets, hardmax_trajectory, softmax_trajectory
from .limits import check_integer, check_number, check_seed
from .qkv import bounded_entries
from .rd_tokens import PAPER_VALUE_MATRICES, equal_norm_polytope, rd_limit_sets
from .token_limits import (HARDMAX_CASES, MAX_HARDMAX_N, MAX_HARDMAX_T, MAX_RD_EXPONENT, MAX_RD_N, MAX_TOKEN_DIM,
                           MAX_TOKEN_FRAMES, MAX_TWIN_BETA, RD_VALUES)

#: The largest ``.npz`` input read.
MAX_FILE_BYTES = 64 * 2 ** 20


def _npz_arrays(path, option: str, needed: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    """The numeric arrays ``needed`` (and those of ``optional`` present) of a ``.npz`` file, as floats checked
    finite and within the ``--qkv`` range; one line naming ``option`` otherwise (never unpickled)."""
    path = regular_file(path, option)
    require(path.stat().st_size <= MAX_FILE_BYTES, f"{option} {path}: larger than {MAX_FILE_BYTES // 2 ** 20} MB")
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [name for name in needed if name not in archive.files]
            require(not missing, f"{option} {path}: no array {', '.join(missing)} (needs {', '.join(needed)})")
            arrays = {name: np.asarray(archive[name]) for name in needed + optional if name in archive.files}
    except InputError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        require(False, f"{option} {path}: not a .npz archive of numeric arrays {', '.join(needed)}")
    for name, array in arrays.items():
        require(array.dtype.kind in "iuf", f"{option} {path}: array {name} is not numeric")
        arrays[name] = bounded_entries(f"{option} {path}: {name}", array.astype(float))
    return arrays


def _tokens_and_matrix(arrays: dict, tokens: str, option: str, path, *matrices: str) -> None:
    """``arrays[tokens]`` of shape ``(n, d)`` with ``n >= 1``, and each of ``matrices`` present ``d x d``."""
    x0 = arrays[tokens]
    require(x0.ndim == 2 and x0.shape[0] >= 1 and 1 <= x0.shape[1] <= MAX_TOKEN_DIM,
            f"{option} {path}: {tokens} must be an n x d array with d in [1, {MAX_TOKEN_DIM}] (got shape {x0.shape})")
    for name in matrices:
        if name in arrays:
            require(arrays[name].shape == (x0.shape[1],) * 2,
                    f"{option} {path}: {name} must be {x0.shape[1]} x {x0.shape[1]} (d from {tokens}; got shape "
                    f"{arrays[name].shape})")


def _is_file(choice) -> bool:
    return isinstance(choice, Path) or (isinstance(choice, str) and choice.lower().endswith(".npz"))


def _checked_times(t_final, frames: int, t_high: float) -> np.ndarray:
    t_final = check_number("--t-final", t_final, 0.0, t_high, high_closed=True)
    frames = check_integer("--frames", frames, 2, MAX_TOKEN_FRAMES)
    return np.linspace(0.0, t_final, frames)


# ------------------------------------------------------------------------------------------------ hardmax
def hardmax_case(case, n: int = 24, dim: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x0, Q, K)`` of a ``--case``: ``psd``: ``Q = K = I`` and equal-norm hull vertices (``max(d + 1, n // 4)``
    of them, :func:`meanfield.rd_tokens.equal_norm_polytope`) with the other tokens inside, so the vertices stay and
    the others run straight to the vertex of their cell (MATH.md §12); ``nsd``: ``Q = I``, ``K = -B``
    (``B = M M^T + I / 10``) and tokens in antipodal pairs of ``B``-norm 1, contracting to the origin as ``e^{-2t}``
    (``n`` even); ``random``: Gaussian tokens, ``Q``, ``K`` (entries of variance ``1/d``); a ``FILE.npz``: its
    ``x0`` and ``A`` (``Q = I``, ``K = A``)."""
    if _is_file(case):
        arrays = _npz_arrays(case, "--case", ("x0", "A"))
        _tokens_and_matrix(arrays, "x0", "--case", case, "A")
        return arrays["x0"], np.eye(len(arrays["A"])), arrays["A"]
    require(case in HARDMAX_CASES, f"--case must be one of {', '.join(HARDMAX_CASES)} or a FILE.npz (got {case!r})")
    n = check_integer("--n", n, 1, MAX_HARDMAX_N)
    dim = check_integer("--dim", dim, 1, MAX_TOKEN_DIM)
    seed = check_seed(seed)
    rng = np.random.default_rng(seed)
    eye = np.eye(dim)
    if case == "psd":
        require(dim >= 2, f"--dim must be >= 2 with --case psd (got {dim})")
        require(n >= dim + 1, f"--n must be >= d + 1 = {dim + 1} with --case psd (got {n})")
        vertices = max(dim + 1, n // 4)
        return equal_norm_polytope(dim, vertices, n - vertices, seed, radius=1.0), eye, eye
    if case == "nsd":
        require(n % 2 == 0, f"--n must be even with --case nsd (antipodal pairs; got {n})")
        m = rng.standard_normal((dim, dim))
        b = m @ m.T + 0.1 * eye
        half = rng.standard_normal((n // 2, dim))
        half /= np.sqrt(np.einsum("ni,ij,nj->n", half, b, half))[:, None]
        return np.vstack([half, -half]), eye, -b
    x0 = rng.standard_normal((n, dim))
    q, k = (rng.standard_normal((dim, dim)) / math.sqrt(dim) for _ in range(2))
    return x0, q, k


def hardmax_case_run(case="psd", n: int = 24, dim: int = 2, t_final: float = 3.0, beta: float | None = None,
                     seed: int = 0, frames: int = 61) -> xr.Dataset:
    """The hardmax run of a :func:`hardmax_case` at ``frames`` equally spaced times to ``t_final``: ``positions``,
    the argmax ``leader`` of each token (the smallest index of its set) at each frame, ``event_time`` (the times the
    argmax sets change); with ``beta``, ``softmax_positions`` (the finite-beta twin, DOP853) and ``distance`` (the
    largest distance between the twins' tokens). A :class:`meanfield.hardmax.HardmaxError` (a sliding mode, events
    accumulating) ends the run early: the frames before it are kept and ``stop_reason`` says why."""
    started = clock.perf_counter()
    times = _checked_times(t_final, frames, MAX_HARDMAX_T)
    if beta is not None:
        beta = check_number("--beta", beta, 0.0, MAX_TWIN_BETA, high_closed=True)
    x0, q, k = hardmax_case(case, n, dim, seed)
    a = q.T @ k
    stop_reason = "completed"
    try:
        positions, events = hardmax_trajectory(x0, a, times)
    except HardmaxError as error:
        positions, events = error.positions, error.events
        if len(positions) == 0:                  # refused at t = 0: the start is all there is
            positions = x0[None]
        stop_reason = f"hardmax: {error}"
    kept = times[:len(positions)]
    variables = {"positions": (("time", "particle", "component"), positions),
                 "leader": (("time", "particle"), np.array([np.argmax(argmax_sets(x, a), axis=1) for x in positions])),
                 "event_time": (("event",), np.asarray(events, dtype=float)),
                 "Q": (("component", "component2"), q), "K": (("component", "component2"), k)}
    if beta is not None:
        soft = softmax_trajectory(x0, a, beta, kept) if len(kept) > 1 else x0[None]
        variables["softmax_positions"] = (("time", "particle", "component"), soft)
        variables["distance"] = (("time",), np.linalg.norm(soft - positions, axis=-1).max(axis=1))
    words = ["meanfield", "hardmax", "--case", str(case)] + ([] if _is_file(case) else
                                                             ["--n", str(n), "--dim", str(dim), "--seed", str(seed)])
    words += ["--t-final", repr(float(t_final)), "--frames", str(frames)]
    words += [] if beta is None else ["--beta", repr(float(beta))]
    attrs = {"geometry": "hardmax", "model": "hardmax", "case": str(case), "n_particles": int(len(x0)),
             "dim": int(x0.shape[1]), "seed": "none" if _is_file(case) else int(seed), "t_final": float(t_final),
             "frames": int(frames), "beta": "inf" if beta is None else float(beta), "events": len(events),
             "package_version": package_version(), "command": shlex.join(words), "stop_reason": stop_reason,
             "wall_time": clock.perf_counter() - started}
    return xr.Dataset(variables, coords={"time": kept}, attrs=attrs)


def final_cells(run: xr.Dataset) -> dict[int, list[int]]:
    """The last frame's cells: each leader (a token some token's argmax set starts with) and the tokens it leads."""
    leaders = run["leader"].values[-1]
    return {int(j): np.flatnonzero(leaders == j).tolist() for j in np.unique(leaders)}


# ------------------------------------------------------------------------------------------------ rd tokens
def _rd_value(value, dim) -> np.ndarray:
    """The value matrix ``V`` of a named ``--value``; ``--dim`` must agree with a paper matrix's size."""
    if value == "identity":
        return np.eye(check_integer("--dim", 2 if dim is None else dim, 2, MAX_TOKEN_DIM))
    v = PAPER_VALUE_MATRICES[value.removeprefix("paper-")]
    require(dim is None or dim == len(v), f"--dim must be {len(v)} with --value {value} (got {dim})")
    return v


def rd_case(value="identity", n: int = 20, dim: int | None = None, seed: int = 0, vertices: int = 7):
    """``(z0, Q, K, V)`` of a ``--value``: ``identity`` (``V = Q = K = I``): ``vertices`` equal-norm hull vertices
    and ``n - vertices`` tokens inside (:func:`meanfield.rd_tokens.equal_norm_polytope`), whose limit points are those
    vertices; ``paper-2d``, ``paper-3d-negative``, ``paper-3d-positive`` (the value matrices of
    ``clustering-Tformers.py``, :data:`meanfield.rd_tokens.PAPER_VALUE_MATRICES`; ``Q = K = I``): ``n`` tokens
    uniform in ``[-5, 5]^d``; a ``FILE.npz``: its ``z0`` and ``V`` (and ``Q``, ``K``: the identity if absent)."""
    if _is_file(value):
        arrays = _npz_arrays(value, "--value", ("z0", "V"), ("Q", "K"))
        _tokens_and_matrix(arrays, "z0", "--value", value, "V", "Q", "K")
        eye = np.eye(len(arrays["V"]))
        return arrays["z0"], arrays.get("Q", eye), arrays.get("K", eye), arrays["V"]
    require(value in RD_VALUES, f"--value must be one of {', '.join(RD_VALUES)} or a FILE.npz (got {value!r})")
    n = check_integer("--n", n, 1, MAX_RD_N)
    seed = check_seed(seed)
    v = _rd_value(value, dim)
    d = len(v)
    if value == "identity":
        vertices = check_integer("--vertices", vertices, d + 1, n)
        return equal_norm_polytope(d, vertices, n - vertices, seed), v, v, v
    return np.random.default_rng(seed).uniform(-5.0, 5.0, (n, d)), np.eye(d), np.eye(d), v


def rd_case_run(value="identity", n: int = 20, dim: int | None = None, t_final: float = 30.0, seed: int = 0,
                vertices: int = 7, frames: int = 61, tol: float = 1e-6) -> xr.Dataset:
    """The rescaled tokens of an :func:`rd_case` to ``t_final`` and their limit set (MATH.md §12.1,
    :func:`meanfield.rd_tokens.rd_limit_sets`): ``positions`` (the rescaled ``z``), ``limit_label`` (each token's
    point or level), ``limit_value`` (the points ``(limit, component)`` or the levels ``(limit,)``), for a polytope
    ``is_vertex``, for hyperplanes ``direction`` (``l_1``); attrs ``limit_geometry``, ``limit_count``,
    ``limit_spread``, ``limit_separation`` and ``converged`` (spread ``<= tol`` and separation ``> tol``)."""
    started = clock.perf_counter()
    z0, q, k, v = rd_case(value, n, dim, seed, vertices)
    top = max(float(np.max(np.linalg.eigvals(v).real)), 1e-300)
    times = _checked_times(t_final, frames, MAX_RD_EXPONENT / (2 * top))
    tol = check_number("--tol", tol, 0.0, 1.0)
    limit = rd_limit_sets(z0, q, k, v, t_final=float(times[-1]), frames=int(frames), tol=tol)
    polytope = limit.vertices is not None
    variables = {"positions": (("time", "particle", "component"), limit.tokens),
                 "limit_label": (("particle",), limit.labels),
                 "limit_value": (("limit", "component") if polytope else ("limit",), limit.values),
                 "Q": (("component", "component2"), q), "K": (("component", "component2"), k),
                 "V": (("component", "component2"), v)}
    if polytope:
        variables["is_vertex"] = (("limit",), limit.vertices.astype(np.int8))
    else:
        variables["direction"] = (("component",), limit.direction)
    words = ["meanfield", "rd", "--value", str(value)]
    if not _is_file(value):
        words += ["--n", str(n), "--seed", str(seed)] + ([] if dim is None else ["--dim", str(dim)])
        words += ["--vertices", str(vertices)] if value == "identity" else []
    words += ["--t-final", repr(float(t_final)), "--frames", str(frames), "--tol", repr(float(tol))]
    attrs = {"geometry": "rd-tokens", "model": "rd-tokens", "value": str(value), "n_particles": int(len(z0)),
             "dim": int(z0.shape[1]), "seed": "none" if _is_file(value) else int(seed), "t_final": float(t_final),
             "frames": int(frames), "tol": float(tol), "limit_geometry": limit.geometry, "limit_count": limit.count,
             "limit_spread": limit.spread, "limit_separation": limit.separation,
             "converged": int(limit.spread <= tol < limit.separation),
             "package_version": package_version(), "command": shlex.join(words), "stop_reason": "completed",
             "wall_time": clock.perf_counter() - started}
    return xr.Dataset(variables, coords={"time": limit.times}, attrs=attrs)


# ------------------------------------------------------------------------------------------------ summaries
#: Cells, events and levels listed one by one in a summary (the rest counted).
LISTED = 8


def _listed(items: list[str]) -> str:
    return ", ".join(items[:LISTED]) + (f", ... ({len(items)} in all)" if len(items) > LISTED else "")


def hardmax_summary(run: xr.Dataset) -> list[str]:
    """The lines ``meanfield hardmax`` prints: the events (argmax-set changes), the tokens whose leader changed
    between saved frames, the final cells, and the distance from the finite-beta twin when there is one."""
    events = run["event_time"].values
    leaders = run["leader"].values
    changed = int(np.count_nonzero((leaders[1:] != leaders[:-1]).any(axis=0)))
    cells = final_cells(run)
    lines = [f"hardmax attention in R^{run.attrs['dim']} (MATH.md §12): {run.attrs['n_particles']} tokens, "
             f"case {run.attrs['case']}, exact to t = {float(run.time[-1]):.6g}",
             f"events (times an argmax set changes): {len(events)}"
             + (f" at t = {_listed([f'{t:.10g}' for t in events])}" if len(events) else ""),
             f"tokens whose argmax leader changed between saved frames: {changed}",
             f"final cells (leader <- tokens): {len(cells)}: "
             + _listed([f"{j} <- {len(members)}" for j, members in cells.items()])]
    if "distance" in run:
        distance = run["distance"].values
        worst = int(np.argmax(distance))
        lines.append(f"softmax twin at beta = {run.attrs['beta']:g}: largest distance from the hardmax tokens "
                     f"{distance[worst]:.3e} (at t = {float(run.time[worst]):.6g})")
    return lines


def _polytope_lines(run: xr.Dataset, count: int) -> list[str]:
    """A polytope limit set: how many points, how many of them hull vertices, where."""
    vertices = int(run["is_vertex"].values.sum())
    return [f"limit set: {count} point{'s' if count != 1 else ''}, {vertices} of them vertices of their convex hull "
            f"(polytope, V = c I)",
            "limit points: " + _listed(["(" + ", ".join(f"{c:.6g}" for c in p) + ")"
                                        for p in run["limit_value"].values])]


def _hyperplane_lines(run: xr.Dataset, count: int) -> list[str]:
    """Parallel hyperplanes: how many, their levels and the direction ``l_1``."""
    return [f"limit set: {count} parallel hyperplane{'s' if count != 1 else ''} <l_1, z> = c (simple positive top "
            f"eigenvalue of V)",
            "levels c: " + _listed([f"{c:.8g}" for c in run["limit_value"].values]) + "; l_1 = ("
            + ", ".join(f"{c:.6g}" for c in run["direction"].values) + ")"]


#: The summary lines of each limit geometry of :func:`meanfield.rd_tokens.rd_limit_sets`.
LIMIT_LINES = {"polytope": _polytope_lines, "hyperplanes": _hyperplane_lines}


def rd_summary(run: xr.Dataset) -> list[str]:
    """The lines ``meanfield rd`` prints: the limit set (count, geometry, where) and whether it converged."""
    attrs = run.attrs
    lines = [f"rescaled tokens z = e^(-tV) x in R^{attrs['dim']} (MATH.md §12.1): {attrs['n_particles']} tokens, "
             f"V = {attrs['value']}, to t = {float(run.time[-1]):.6g}"]
    lines += LIMIT_LINES[attrs["limit_geometry"]](run, int(attrs["limit_count"]))
    lines.append(f"spread of the tokens about it {attrs['limit_spread']:.2e}, separation {attrs['limit_separation']:.3g}"
                 + ("" if attrs["converged"] else f": NOT converged to --tol {attrs['tol']:g}; raise --t-final"))
    return lines
