"""Benchmark of the particle engine's right-hand side against baselines timed in the same process.

This is a measurement, not a test: it prints ratios and asserts nothing about speed.
Tokens are uniform on the sphere (seeded), one system (``B = 1``), uniform weights.

1. **Direct right-hand side vs its floor.**  One call of
   ``ParticleScheme(Model(attention, beta=4, dim=3), n, Attention(attention, interaction="direct")).rhs(x, 0.0)``
   (``DirectInteraction`` with the default ``block_bytes``, then the tangent projection)
   divided by the cost of the unavoidable ``n^2`` work: one ``(n, 3) @ (3, n)`` GEMM
   forming all the logits into a preallocated ``n x n`` array plus ``np.exp`` on that
   array in place.  The baseline is memory-bound at large ``n`` (the ``n x n`` array does
   not fit in cache) while the engine works in row blocks, so with blocks small enough to
   stay in cache the ratio could fall below 1.  Measured for SA and USA.
2. **Engine vs a per-particle loop.**  The style of the papers' reference code: a Python
   loop over ``i``, each step vectorised over ``j`` with numpy (weights
   ``exp(beta <x_i, x_j>)``, normalised (SA), weighted mean of the tokens, tangent
   projection).  Timed on all rows up to ``LOOP_FULL_MAX`` tokens;
   above, on the first ``LOOP_ROWS`` rows and scaled by ``n / LOOP_ROWS`` (the table's
   ``loop_rows`` column says which).  The engine time is the SA time of table 1, and the
   loop's rows must agree with the engine's output (from a timed call) to ``1e-12``
   relative: ``max_i |v_loop_i - v_engine_i| / max_i |v_engine_i|``.
3. **Circle: O(n M) Fourier path vs direct.**  ``ParticleScheme(Model("sa", beta, dim=2), n)``
   (``CircleFourierInteraction``) against the direct path (``interaction="direct"``), at
   ``beta = 4`` and ``16``: speedup and the same relative difference as above
   (``CIRCLE_SIZES``: without 16000, to keep the run short).
4. **Block size.**  The SA right-hand side of table 1 at ``BLOCK_N`` tokens for several
   ``block_bytes`` (``DEFAULT_BLOCK_BYTES`` of ``solvers/schemes/interaction.py`` first); the
   speedup is relative to the default, and ``ratio_to_floor`` divides by the GEMM + exp
   of table 1 done in small row blocks through one reused buffer (the in-cache floor,
   cheaper than table 1's memory-bound ``n x n`` baseline).

5. **Normalisation schemes** (MATH.md §6): every scheme's SA right-hand side (direct path) against Post-LN's.
6. **S^2: spherical-harmonic path vs direct** .  ``ParticleScheme(Model("sa", 4, dim=3), n,
   Attention("sa", interaction="harmonic"))`` (:class:`meanfield.solvers.schemes.interaction.SphereHarmonicInteraction`,
   accuracy 1e-12, ducc0 on one thread) at ``n = 1e3 .. 1e6`` (quick: to 1e5): time per right-hand side, speedup
   over the direct path and the largest relative difference (as in table 2).  The direct path is timed up to
   :data:`DIRECT_MAX` tokens; beyond, its time is extrapolated as ``n^2`` from the largest measured size
   (the ``direct`` column says ``extrap``) and the difference is not measured.
7. **Scaling**: the time per right-hand side of both paths against ``n``, with the exponent ``p`` of
   ``t ~ n^p`` fitted (least squares in log-log) over the sizes from ``SCALING_FIT_FROM`` tokens on
   (the harmonic path's fixed ``L^2 log L`` cost dominates below), and over all sizes.
8. **Whole runs**: particle runs with every right-hand side timed (:func:`whole_run_row`), and
   the share of the wall time spent outside them: sampling, the stepper's arithmetic, the collapse and merge
   checks, the cluster count of every frame, the frames themselves; and the wall over the right-hand sides at the
   fastest one's cost (the bare right-hand side, measured in the run).  Quick: S^2 at n = 1e5 with the default 101
   frames, and a log-clock run to t = 1e6 through its merges (n = 4096, beta = 9); full adds n = 1e6 to t = 3 with
   2 frames (its steps dominate: set against :data:`TARGET_OUTSIDE_PCT` = 10 % and :data:`TARGET_BARE_RATIO` =
   1.15) and to t = 1 with 11 frames (since frames come from dopri5's dense output, four steps hold
   them: its frames' cluster counts and energies dominate).

Timings use :func:`meanfield.validation.harness.best_times` (best of several interleaved runs
after one warm-up call, per-call time in ms).  Calls of a second or more are expensive, so
the number of runs falls with ``n`` (:func:`timing_for`): from ``n = 16000`` the direct
right-hand sides, the baselines and the loop are timed by one call each, without warm-up
(:func:`time_calls`), so those rows are noisier.  The whole run takes about a minute of
CPU time; on a loaded machine the wall time (both are printed) is longer and every row
noisier.  Threads: the setting of :mod:`meanfield.app.threads` (``--threads``, default all cores,
applied to BLAS at run time through threadpoolctl), printed in the header; table 1 also times the
SA right-hand side at 1 thread and at every core.  Run with
``python -m meanfield.validation.benchmarks.particles [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np  # noqa: E402

from meanfield.attention_kind import attention_kind  # noqa: E402
from meanfield.model import Model  # noqa: E402
from meanfield.normalization import SCHEMES, Normalization  # noqa: E402
from meanfield.settings import Attention  # noqa: E402
from meanfield.app.threads import add_threads_argument, apply_threads_argument, header, one_vs_all  # noqa: E402
from meanfield.solvers.schemes.interaction import DEFAULT_BLOCK_BYTES, SPHERE_ACCURACY  # noqa: E402
from meanfield.solvers.schemes.particles import ParticleScheme  # noqa: E402

from meanfield.fits import log_log_slope  # noqa: E402

from ..harness import best_times, clock, column_table  # noqa: E402

SIZES = (1000, 2000, 4000, 8000, 16000, 20000)
QUICK_SIZES = (1000, 4000)
#: Sizes for the circle comparison (16000 left out: each direct call there costs seconds).
CIRCLE_SIZES = (1000, 2000, 4000, 8000, 20000)
BETA = 4.0
CIRCLE_BETAS = (4.0, 16.0)
#: Largest ``n`` at which the per-particle loop runs over every row.
LOOP_FULL_MAX = 4000
#: Rows timed (and checked) above ``LOOP_FULL_MAX``; the time is scaled by ``n / LOOP_ROWS``.
LOOP_ROWS = 1000
#: Required agreement of the loop with the engine.
LOOP_TOL = 1e-12
#: Tokens for the block-size sweep, and the sizes tried (the default first).
BLOCK_N, QUICK_BLOCK_N = 8000, 4000
BLOCK_SIZES = (DEFAULT_BLOCK_BYTES, 64 * 2 ** 20, 16 * 2 ** 20, 4 * 2 ** 20, 2 ** 20, 256 * 2 ** 10)
#: Logits per block of the in-cache GEMM + exp floor of the block sweep (1 MiB of doubles).
FLOOR_ENTRIES = 1 << 17
SEED = 20240611

MIB = 2.0 ** 20

RHS_COLUMNS = (  # (header, row key, format)
    ("n", "n", "d"),
    ("rows/block", "block_rows", "d"),
    ("rhs_sa_ms", "rhs_sa_ms", ".2f"),
    ("rhs_usa_ms", "rhs_usa_ms", ".2f"),
    ("gemm+exp_ms", "baseline_ms", ".2f"),
    ("ratio_sa", "ratio_sa", ".2f"),
    ("ratio_usa", "ratio_usa", ".2f"),
    ("ns/entry_sa", "ns_per_entry_sa", ".2f"),
    ("sa_1core_ms", "sa_1core_ms", ".2f"),
    ("sa_all_ms", "sa_all_ms", ".2f"),
    ("1core/all", "thread_gain", ".2f"),
)
LOOP_COLUMNS = (
    ("n", "n", "d"),
    ("loop_rows", "loop_rows", "s"),
    ("loop_ms", "loop_ms", ".1f"),
    ("engine_ms", "engine_ms", ".2f"),
    ("speedup", "speedup", ".2f"),
    ("max_rel_diff", "max_rel_diff", ".2e"),
)
CIRCLE_COLUMNS = (
    ("beta", "beta", "g"),
    ("n", "n", "d"),
    ("modes", "modes", "d"),
    ("fourier_ms", "fourier_ms", ".3f"),
    ("direct_ms", "direct_ms", ".1f"),
    ("speedup", "speedup", ".0f"),
    ("max_rel_diff", "max_rel_diff", ".2e"),
)
BLOCK_COLUMNS = (
    ("block_MiB", "block_mib", "g"),
    ("rows/block", "block_rows", "d"),
    ("logits_MiB", "logits_mib", ".2f"),
    ("rhs_sa_ms", "rhs_sa_ms", ".2f"),
    ("speedup_vs_default", "speedup", ".2f"),
    ("ratio_to_floor", "ratio_floor", ".2f"),
)

NORMALIZATION_COLUMNS = (
    ("scheme", "scheme", "s"),
    ("n", "n", "d"),
    ("state", "state", "s"),
    ("rhs_ms", "rhs_ms", ".2f"),
    ("ratio_to_post", "ratio", ".3f"),
)
#: Tokens of the normalisation-overhead table (d = 3, direct path, SA).
NORMALIZATION_N, QUICK_NORMALIZATION_N = 4000, 2000
#: Table 6: the S^2 harmonic path at these sizes; the direct path is timed up to DIRECT_MAX tokens.
HARMONIC_SIZES, QUICK_HARMONIC_SIZES = (1000, 10000, 100000, 1000000), (1000, 10000, 100000)
DIRECT_MAX = 30000
#: Table 7: sizes of the scaling fits (harmonic; direct), fitted from SCALING_FIT_FROM tokens on.
SCALING_HARMONIC = (1000, 3000, 10000, 30000, 100000, 300000, 1000000)
QUICK_SCALING_HARMONIC = (1000, 3000, 10000, 30000, 100000)
SCALING_DIRECT, QUICK_SCALING_DIRECT = (1000, 2000, 4000, 8000, 16000, 30000), (1000, 2000, 4000, 8000)
SCALING_FIT_FROM = 4000
#: Targets: speedup over direct at 1e5 tokens, seconds per rhs at 1e6.
TARGET_SPEEDUP_1E5, TARGET_SECONDS_1E6 = 100.0, 1.0
HARMONIC_COLUMNS = (
    ("n", "n", "d"),
    ("band", "band", "d"),
    ("harmonic_ms", "harmonic_ms", ".2f"),
    ("direct_ms", "direct_ms", ".1f"),
    ("direct", "direct_source", "s"),
    ("speedup", "speedup", ".0f"),
    ("max_rel_diff", "max_rel_diff", ".2e"),
)
SCALING_COLUMNS = (
    ("path", "path", "s"),
    ("n", "n", "d"),
    ("rhs_ms", "rhs_ms", ".2f"),
    ("ns/token", "ns_per_token", ".1f"),
    ("local_exponent", "local_exponent", ".2f"),
)


# -- inputs and references ------------------------------------------------------------------------
def sphere_tokens(n: int, dim: int, seed: int = SEED) -> np.ndarray:
    """``n`` tokens uniform on S^{dim-1}, shape ``(1, n, dim)`` (normalised Gaussians)."""
    x = np.random.default_rng([seed, n, dim]).standard_normal((1, n, dim))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def timing_for(n: int, quick: bool) -> dict:
    """Timing settings for ``n`` tokens: fewer runs at the large, slow sizes (see :func:`time_calls`)."""
    if quick:
        return {"target": 0.05, "repeats": 2}
    if n <= 4000:
        return {"target": 0.3, "repeats": 5}
    if n <= 8000:
        return {"target": 0.3, "repeats": 2}
    return {"single": True}


def time_calls(fns, timing: dict) -> list[float]:
    """Per-call seconds of ``fns``: :func:`best_times`, or one call each if ``timing["single"]``.

    Single calls are for calls of seconds, where ``best_times``' warm-up call would double the
    cost of the benchmark; nothing is lost for the engine, which allocates its blocks afresh at
    every call, and the baseline's array is touched when it is created.
    """
    if timing.get("single"):
        return [clock(fn, 1) for fn in fns]
    return best_times(fns, **timing)


def gemm_exp_baseline(x: np.ndarray, beta: float):
    """The bare ``n^2`` work: logits ``(beta x) @ x.T`` into a preallocated ``n x n`` array, then ``exp``."""
    queries, keys = beta * x[0], x[0].copy()
    logits = np.empty((len(keys), len(keys)))
    logits.fill(0.0)  # first touch (page faults) outside the timing

    def call():
        np.matmul(queries, keys.T, out=logits)
        np.exp(logits, out=logits)

    return call


def blocked_gemm_exp_baseline(x: np.ndarray, beta: float, entries: int = FLOOR_ENTRIES):
    """The same ``n^2`` work in row blocks of about ``entries`` logits (one reused, in-cache buffer)."""
    queries, keys = beta * x[0], x[0].copy()
    n = len(keys)
    rows = max(1, entries // n)
    buffer = np.empty((rows, n))

    def call():
        for start in range(0, n, rows):
            block = buffer[: min(n, start + rows) - start]
            np.matmul(queries[start:start + rows], keys.T, out=block)
            np.exp(block, out=block)

    return call


def loop_velocity(x: np.ndarray, beta: float, attention: str, rows: int | None = None) -> np.ndarray:
    """Per-particle reference: for each ``i`` (of the first ``rows``) the tangent attention velocity.

    Uniform weights, ``Q = K = V = I``, no max subtraction (fine at moderate ``beta``).
    """
    tokens = x[0]
    n = len(tokens)
    rows = n if rows is None else rows
    out = np.empty((rows, tokens.shape[1]))
    for i in range(rows):
        xi = tokens[i]
        weights = np.exp(beta * (tokens @ xi))
        v = weights @ tokens
        v /= weights.sum() if attention_kind(attention).normalised else n
        out[i] = v - (v @ xi) * xi
    return out


def max_relative_difference(approx: np.ndarray, exact: np.ndarray) -> float:
    """``max_i |approx_i - exact_i| / max_i |exact_i|`` over tangent vectors (Euclidean norms)."""
    diff = np.linalg.norm(approx - exact, axis=-1)
    return float(np.max(diff) / np.max(np.linalg.norm(exact, axis=-1)))


def _recording(fn, store: dict, key: str):
    """``fn`` that also keeps its latest result in ``store[key]`` (so timed calls double as checks)."""
    def call():
        store[key] = fn()
    return call


# -- the benchmark --------------------------------------------------------------------------------
def _rhs_row(n: int, timing: dict) -> tuple[dict, dict]:
    """Direct SA and USA right-hand sides at ``n`` tokens in S^2 vs GEMM + exp; also the outputs."""
    x = sphere_tokens(n, 3)
    schemes = {a: ParticleScheme(Model(a, beta=BETA, dim=3), n, Attention(a, interaction="direct"))
               for a in ("sa", "usa")}
    outputs = {}
    calls = [_recording(lambda s=s: s.rhs(x, 0.0), outputs, a) for a, s in schemes.items()]
    sa, usa, base = time_calls(calls + [gemm_exp_baseline(x, BETA)], timing)
    row = {"n": n, "block_rows": schemes["sa"].interaction.block_rows(1, n),
           "rhs_sa_ms": 1e3 * sa, "rhs_usa_ms": 1e3 * usa, "baseline_ms": 1e3 * base,
           "ratio_sa": sa / base, "ratio_usa": usa / base, "ns_per_entry_sa": 1e9 * sa / n ** 2}
    single, every = one_vs_all(lambda: time_calls([lambda: schemes["sa"].rhs(x, 0.0)], timing)[0])
    row.update(sa_1core_ms=1e3 * single, sa_all_ms=1e3 * every, thread_gain=single / every)
    return row, {"x": x, **outputs}


def _loop_row(n: int, engine_seconds: float, data: dict, timing: dict) -> dict:
    """Per-particle loop (all rows, or the first ``LOOP_ROWS`` scaled up) vs the engine (SA)."""
    rows = n if n <= LOOP_FULL_MAX else min(n, LOOP_ROWS)
    store = {}
    [seconds] = time_calls([_recording(lambda: loop_velocity(data["x"], BETA, "sa", rows), store, "v")],
                           timing)
    loop_seconds = seconds * n / rows
    return {"n": n, "loop_rows": "all" if rows == n else f"{rows} (scaled)", "loop_ms": 1e3 * loop_seconds,
            "engine_ms": 1e3 * engine_seconds, "speedup": loop_seconds / engine_seconds,
            "max_rel_diff": max_relative_difference(store["v"], data["sa"][0, :rows])}


def _circle_row(n: int, beta: float, timing: dict) -> dict:
    """Circle SA: ``CircleFourierInteraction`` vs ``DirectInteraction`` at ``n`` tokens."""
    theta = np.random.default_rng([SEED, n]).uniform(0.0, 2.0 * math.pi, n)
    x = np.stack((np.cos(theta), np.sin(theta)), axis=-1)[None]
    fast = ParticleScheme(Model("sa", beta=beta, dim=2), n)
    direct = ParticleScheme(Model("sa", beta=beta, dim=2), n, Attention("sa", interaction="direct"))
    outputs = {}
    fast_call = _recording(lambda: fast.rhs(x, 0.0), outputs, "fast")
    direct_call = _recording(lambda: direct.rhs(x, 0.0), outputs, "direct")
    if timing.get("single"):  # the Fourier path is fast: time it properly, the direct path once
        [t_fast], [t_direct] = best_times([fast_call]), time_calls([direct_call], timing)
    else:
        t_fast, t_direct = best_times([fast_call, direct_call], **timing)
    return {"beta": beta, "n": n, "modes": fast.interaction.modes.size, "fourier_ms": 1e3 * t_fast,
            "direct_ms": 1e3 * t_direct, "speedup": t_direct / t_fast,
            "max_rel_diff": max_relative_difference(outputs["fast"], outputs["direct"])}


def _block_rows(n: int, timing: dict) -> list[dict]:
    """SA right-hand side at ``n`` tokens for each of :data:`BLOCK_SIZES`."""
    x = sphere_tokens(n, 3)
    schemes = [ParticleScheme(Model("sa", beta=BETA, dim=3), n, Attention("sa", interaction="direct"), block_bytes=b)
               for b in BLOCK_SIZES]
    *seconds, floor = time_calls([lambda s=s: s.rhs(x, 0.0) for s in schemes]
                                 + [blocked_gemm_exp_baseline(x, BETA)], timing)
    rows = []
    for size, scheme, t in zip(BLOCK_SIZES, schemes, seconds):
        block_rows = scheme.interaction.block_rows(1, n)
        rows.append({"block_mib": size / MIB, "block_rows": block_rows,
                     "logits_mib": 8 * block_rows * n / MIB, "rhs_sa_ms": 1e3 * t,
                     "speedup": seconds[0] / t, "ratio_floor": t / floor, "floor_ms": 1e3 * floor})
    return rows


def _normalization_rows(n: int, timing: dict) -> list[dict]:
    """SA right-hand side at ``n`` tokens on S^2 under every normalisation scheme (MATH.md §6), same process:
    what carrying a radius (Pre, Mix, Peri) and computing ``<theta, A>``, ``|A|`` cost against Post-LN."""
    x = sphere_tokens(n, 3)
    schemes, states = [], []
    for name in SCHEMES:
        scheme = Normalization(name)
        schemes.append(ParticleScheme(Model("sa", beta=BETA, dim=3), n, Attention("sa", interaction="direct"),
                                      normalization=scheme))
        states.append(np.concatenate((x, np.full((1, n, 1), scheme.r0)), -1) if scheme.carries_radius else x)
    seconds = time_calls([lambda s=s, u=u: s.rhs(u, 0.5) for s, u in zip(schemes, states)], timing)
    return [{"scheme": name, "n": n, "state": "x, r" if Normalization(name).carries_radius else "x",
             "rhs_ms": 1e3 * t, "ratio": t / seconds[0]} for name, t in zip(SCHEMES, seconds)]


class SphereTimes:
    """Per-size SA right-hand sides on S^2 through either path, timed once per ``(path, n)`` and shared by
    tables 6 and 7; outputs kept (for the differences) up to :data:`DIRECT_MAX` tokens."""

    def __init__(self, quick: bool):
        self.quick, self.seconds, self.outputs, self.bands = quick, {}, {}, {}

    def time(self, path: str, n: int) -> float:
        if (path, n) not in self.seconds:
            x = sphere_tokens(n, 3)
            scheme = ParticleScheme(Model("sa", beta=BETA, dim=3), n, Attention("sa", interaction=path))
            store = {}
            call = _recording(lambda: scheme.rhs(x, 0.0), store, "v")
            if path == "harmonic":
                self.bands[n] = scheme.interaction.band
                [seconds] = best_times([call], target=0.1 if self.quick else 0.3, repeats=3)
            else:
                [seconds] = time_calls([call], timing_for(n, self.quick))
            self.seconds[path, n] = seconds
            if n <= DIRECT_MAX:
                self.outputs[path, n] = store["v"]
        return self.seconds[path, n]


def _harmonic_rows(times: SphereTimes, sizes) -> list[dict]:
    """Table 6: harmonic vs direct SA rhs on S^2; above :data:`DIRECT_MAX` the direct time is extrapolated as
    ``n^2`` from the largest size at which ``times`` measured it."""
    rows = []
    for n in sizes:
        harmonic = times.time("harmonic", n)
        if n <= DIRECT_MAX:
            direct, source = times.time("direct", n), "measured"
            diff = max_relative_difference(times.outputs["harmonic", n], times.outputs["direct", n])
        else:
            largest = max(m for (path, m) in times.seconds if path == "direct")
            direct = times.seconds["direct", largest] * (n / largest) ** 2
            source, diff = f"extrap n^2 from {largest}", None
        rows.append({"n": n, "band": times.bands[n], "harmonic_ms": 1e3 * harmonic, "direct_ms": 1e3 * direct,
                     "direct_source": source, "speedup": direct / harmonic, "max_rel_diff": diff})
    return rows


def _scaling_rows(times: SphereTimes, harmonic_sizes, direct_sizes) -> tuple[list[dict], dict]:
    """Table 7: time per rhs against ``n`` for both paths, local exponents between neighbouring sizes, and
    the fitted exponents ``{path: (from SCALING_FIT_FROM on, all sizes)}``."""
    rows, fits = [], {}
    for path, sizes in (("harmonic", harmonic_sizes), ("direct", direct_sizes)):
        seconds = [times.time(path, n) for n in sizes]
        for i, (n, t) in enumerate(zip(sizes, seconds)):
            local = None if i == 0 else log_log_slope(sizes[i - 1:i + 1], seconds[i - 1:i + 1])
            rows.append({"path": path, "n": n, "rhs_ms": 1e3 * t, "ns_per_token": 1e9 * t / n,
                         "local_exponent": local})
        upper = [(n, t) for n, t in zip(sizes, seconds) if n >= SCALING_FIT_FROM]
        fits[path] = (log_log_slope(*zip(*upper)) if len(upper) >= 2 else None, log_log_slope(sizes, seconds))
    return rows, fits


def run_benchmark(sizes=SIZES, circle_sizes=CIRCLE_SIZES, quick: bool = False) -> dict[str, list[dict]]:
    """Measure everything; a dict of tables (``"rhs"``, ``"loop"``, ``"circle"``, ``"blocks"``).

    Each table is a list of row dicts with the keys of the matching ``*_COLUMNS`` (times in ms).
    ``quick`` uses :data:`QUICK_SIZES` for both ``sizes`` and ``circle_sizes`` (unless given
    explicitly), shorter measurements and the block sweep at :data:`QUICK_BLOCK_N`.  ``"normalization"``:
    every normalisation scheme's rhs against Post-LN's at :data:`NORMALIZATION_N` tokens.  ``"harmonic"``,
    ``"scaling"`` and ``"fits"``: tables 6 and 7 (module docstring).
    """
    if quick and tuple(sizes) == SIZES:
        sizes = QUICK_SIZES
    if quick and tuple(circle_sizes) == CIRCLE_SIZES:
        circle_sizes = QUICK_SIZES
    tables = {"rhs": [], "loop": [], "circle": [], "blocks": [], "normalization": []}
    for n in sizes:
        timing = timing_for(n, quick)
        row, data = _rhs_row(n, timing)
        tables["rhs"].append(row)
        tables["loop"].append(_loop_row(n, row["rhs_sa_ms"] / 1e3, data, timing))
        del data
    for beta in CIRCLE_BETAS:
        tables["circle"] += [_circle_row(n, beta, timing_for(n, quick)) for n in circle_sizes]
    block_n = QUICK_BLOCK_N if quick else BLOCK_N
    tables["blocks"] = _block_rows(block_n, timing_for(block_n, quick))
    normalization_n = QUICK_NORMALIZATION_N if quick else NORMALIZATION_N
    tables["normalization"] = _normalization_rows(normalization_n, timing_for(normalization_n, quick))
    times = SphereTimes(quick)   # the scaling sizes first: table 6 extrapolates from the largest direct one
    tables["scaling"], tables["fits"] = _scaling_rows(times, QUICK_SCALING_HARMONIC if quick else SCALING_HARMONIC,
                                                      QUICK_SCALING_DIRECT if quick else SCALING_DIRECT)
    tables["harmonic"] = _harmonic_rows(times, QUICK_HARMONIC_SIZES if quick else HARMONIC_SIZES)
    tables["runs"] = [whole_run_row(label, settings) for label, settings in (RUNS_QUICK if quick else RUNS_FULL)]
    return tables


# ------------------------------------------------------------------------------------------- 8. whole runs
#: Whole runs of table 8: (label, settings of meanfield.simulate_particles); quick runs first.
RUNS_QUICK = (
    ("S^2 n=1e5, t=1, 101 frames", dict(dim=3, n=100_000, beta=BETA, t_final=1.0)),
    ("S^2 n=4096 beta=9, log clock to 1e6", dict(dim=3, n=4096, beta=9.0, t_final=1e6, save_log=10)),
)
RUNS_FULL = RUNS_QUICK + (
    ("S^2 n=1e6, t=3, 2 frames", dict(dim=3, n=1_000_000, beta=BETA, t_final=3.0, save_every=3.0)),
    ("S^2 n=1e6, t=1, 11 frames", dict(dim=3, n=1_000_000, beta=BETA, t_final=1.0, save_every=0.1)),
)
RUN_COLUMNS = (
    ("run", "label", "s"), ("frames", "frames", "d"), ("steps", "steps", "d"), ("rhs calls", "rhs_calls", "d"),
    ("wall s", "wall_s", ".2f"), ("rhs s", "rhs_s", ".2f"), ("outside %", "outside_pct", ".1f"),
    ("wall / (calls x fastest rhs)", "bare_ratio", ".3f"),
)
#: A particle run at n = 1e6 on S^2 (the first such row: its steps, not its frames, dominate) spends at
#: most this share of its wall time outside right-hand sides (20 % before frames came from dense output), and its wall is at most
#: :data:`TARGET_BARE_RATIO` times its right-hand sides at the fastest one's cost.
TARGET_OUTSIDE_PCT = 10.0
TARGET_BARE_RATIO = 1.15


def whole_run_row(label: str, settings: dict) -> dict:
    """One particle run (uniform tokens, seeded) with every right-hand side timed: the share of the wall time
    spent outside them (sampling, steps' arithmetic, collapse and merge checks, cluster counts, frames)."""
    from meanfield.solvers.runs.particle_run import simulate

    spent = {"seconds": 0.0, "calls": 0, "fastest": math.inf}
    original = ParticleScheme.rhs

    def timed(self, *args, **kwargs):
        begin = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            seconds = time.perf_counter() - begin
            spent["seconds"] += seconds
            spent["calls"] += 1
            spent["fastest"] = min(spent["fastest"], seconds)

    ParticleScheme.rhs = timed
    try:
        begin = time.perf_counter()
        run = simulate(init="uniform", seed=SEED % 2 ** 31, **settings)
        wall = time.perf_counter() - begin
    finally:
        ParticleScheme.rhs = original
    return {"label": label, "frames": int(run.sizes["time"]), "steps": int(run.attrs["steps"]),
            "rhs_calls": spent["calls"], "wall_s": wall, "rhs_s": spent["seconds"],
            "outside_pct": 100.0 * (wall - spent["seconds"]) / wall,
            "bare_ratio": wall / (spent["calls"] * spent["fastest"])}


def format_table(rows: list[dict], columns=RHS_COLUMNS) -> str:
    """An aligned text table of ``columns`` (:func:`meanfield.validation.harness.column_table`)."""
    return column_table(rows, columns)


def main(argv=None) -> None:
    """Command line: ``python -m meanfield.validation.benchmarks.particles [--quick]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="n = 1000, 4000 (S^2 harmonic path: to 1e5) and shorter timings")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    apply_threads_argument(args.threads)
    start, cpu_start = time.perf_counter(), time.process_time()
    tables = run_benchmark(quick=args.quick)
    print(f"particle engine benchmark, times per call in ms, DEFAULT_BLOCK_BYTES = {DEFAULT_BLOCK_BYTES / MIB:g} MiB")
    print(header())
    print(f"\n1. direct rhs on S^2 (beta = {BETA:g}, interaction='direct') / (n x n GEMM + n^2 exp, "
          f"preallocated n x n array)")
    print(format_table(tables["rhs"], RHS_COLUMNS))
    print(f"\n2. per-particle Python loop (numpy over j) vs engine, SA, beta = {BETA:g}; "
          f"speedup = loop / engine; diff = max|dv| / max|v|")
    print(format_table(tables["loop"], LOOP_COLUMNS))
    bad = [row["n"] for row in tables["loop"] if not row["max_rel_diff"] <= LOOP_TOL]
    print(f"loop agrees with engine to {LOOP_TOL:g}: " + ("yes" if not bad else f"NO at n = {bad}"))
    print("\n3. circle SA: O(n M) Fourier path vs direct (interaction='direct'); speedup = direct / Fourier")
    print(format_table(tables["circle"], CIRCLE_COLUMNS))
    print(f"\n4. block size, SA rhs on S^2 at n = {QUICK_BLOCK_N if args.quick else BLOCK_N} "
          f"(first row: the default); logits = one block of logits; floor = GEMM + exp in "
          f"{FLOOR_ENTRIES * 8 / MIB:g} MiB row blocks ({tables['blocks'][0]['floor_ms']:.2f} ms)")
    print(format_table(tables["blocks"], BLOCK_COLUMNS))
    best = max(tables["blocks"], key=lambda row: row["speedup"])
    print(f"best block: {best['block_mib']:g} MiB ({best['speedup']:.2f}x the default)")
    print(f"\n5. normalisation schemes (MATH.md §6), SA rhs on S^2, beta = {BETA:g}, direct path: the cost of "
          f"carrying radii (state x, r) and of <theta, A>, |A|; ratio = rhs / Post-LN rhs")
    print(format_table(tables["normalization"], NORMALIZATION_COLUMNS))
    print(f"\n6. S^2 SA rhs, beta = {BETA:g}: spherical-harmonic path (accuracy {SPHERE_ACCURACY:g}, "
          f"ducc0 nthreads = 1) "
          f"vs direct; speedup = direct / harmonic; diff = max|dv| / max|v| (direct measured up to n = {DIRECT_MAX})")
    print(format_table(tables["harmonic"], HARMONIC_COLUMNS))
    by_n = {row["n"]: row for row in tables["harmonic"]}
    if 100000 in by_n:
        speedup = by_n[100000]["speedup"]
        print(f"target n = 1e5 at least {TARGET_SPEEDUP_1E5:g}x faster: {speedup:.0f}x "
              f"({'met' if speedup >= TARGET_SPEEDUP_1E5 else 'NOT met'})")
    if 1000000 in by_n:
        seconds = by_n[1000000]["harmonic_ms"] / 1e3
        print(f"target n = 1e6 under {TARGET_SECONDS_1E6:g} s per rhs: {seconds:.2f} s "
              f"({'met' if seconds < TARGET_SECONDS_1E6 else 'NOT met'})")
    print("\n7. scaling of the S^2 SA rhs with n; local_exponent = slope of log t against log n from the row above")
    print(format_table(tables["scaling"], SCALING_COLUMNS))
    for path, (upper, every) in tables["fits"].items():
        upper_text = "n/a" if upper is None else f"{upper:.2f}"
        print(f"fitted exponent t ~ n^p, {path}: p = {upper_text} for n >= {SCALING_FIT_FROM}, "
              f"{every:.2f} over all sizes")
    print("\n8. whole particle runs (SA, uniform start, dopri5): wall time, time in right-hand sides, and the share "
          "outside them (sampling, stepper arithmetic, collapse and merge checks, cluster counts, frames)")
    print(format_table(tables["runs"], RUN_COLUMNS))
    big = [row for row in tables["runs"] if "n=1e6" in row["label"]]
    if big:
        share, ratio = big[0]["outside_pct"], big[0]["bare_ratio"]
        print(f"target n = 1e6 on S^2 ({big[0]['label']}) at most {TARGET_OUTSIDE_PCT:g} % outside right-hand sides: "
              f"{share:.1f} % ({'met' if share <= TARGET_OUTSIDE_PCT else 'NOT met'}); wall / (calls x fastest rhs) "
              f"at most {TARGET_BARE_RATIO:g}: {ratio:.3f} ({'met' if ratio <= TARGET_BARE_RATIO else 'NOT met'})")
    print(f"total {time.perf_counter() - start:.1f} s wall, {time.process_time() - cpu_start:.1f} s CPU")


if __name__ == "__main__":
    main()
