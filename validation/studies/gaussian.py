"""Study: Gaussian tokens in R^d, particles vs the moment ODEs (MATH.md §3, §4).

For each attention kind (``softmax``; ``l2``; ``multihead`` = two softmax heads; ``sinkhorn`` with
``eps = SINKHORN_EPS``), each
dimension ``d`` and a few seeded random ``(V, Q, K)`` (entries ``N(0, 1/d) * MATRIX_SCALE``,
``Q, K`` of shape ``(d + 1) x d`` so the rectangular path is exercised), ``n`` tokens are
sampled i.i.d. from ``N(alpha, Sigma)`` (``alpha``, ``Sigma`` drawn with the matrices),
evolved to ``T_FINAL`` with the R^d particle engine (:class:`meanfield.solvers.schemes.particles.ParticleScheme`,
``sphere=False``, SA normalisation, ``beta = 1``; dopri5 at ``PARTICLE_RTOL[kind]``; the seeds of
one ``(draw, n)`` run as one batch, one task), and the particles' mean and covariance (of the empirical
measure, ``ddof = 0``) at ``T_FINAL`` are compared with the moment ODEs
(:func:`meanfield.gaussian.solve`) started

* from the exact moments ``(alpha, Sigma)`` (``error_exact``): contains the O(n^-1/2)
  sampling error of the initial moments;
* from the initial sample moments of the same tokens (``error_sample``): only the
  non-Gaussianity of the empirical measure (its higher cumulants, O(n^-1/2), and the
  self-interaction term j = i, O(1/n)) drives the particles away from the ODE.

Error = ``|mean difference| + ||covariance difference||_F``.  The rate is the weighted
least-squares slope of ``log`` (root mean square of the error over the seeds of one draw at
that ``n``) against ``log n``, one slope shared by the draws and one intercept per draw, weights =
seeds (the variance of a log RMS is ~ 1 / runs); its 95 % interval is a bootstrap over the seeds
of each n, the same seeds for every draw (:func:`slopes`).  The pair sums cost
``n^2``, so the full study runs fewer seeds at large ``n`` (``FULL["seeds"]``: the same cost per
size from ``2^12`` on) and more at small ``n``, where they are nearly free.
Expected: ``-1/2`` for both references (the empirical measure's non-Gaussian fluctuation is
``O(n^{-1/2})`` and the moment dynamics does not close on it), ``-1`` for Sinkhorn against the
sample moments; the error against the sample-moment ODE is ~100x smaller than against the exact one.

Tasks (one per attention, d, draw, n) run in this process (``workers=1``) or on a local Dask
cluster of single-threaded worker processes (``workers > 1``; the full study's default is one
per core), largest first.  Each finished task is written at once to
``out_dir/gaussian-tasks/`` (one small netCDF file named by the task and a digest of every setting
that changes its numbers); a re-run with the same ``out_dir`` reuses those files
(``attrs["reused_tasks"]``) and computes only the rest, so a killed study resumes.  Ctrl-C writes
what has finished (missing runs are NaN, ``attrs["stop_reason"] = "interrupted"``) before stopping.

Run: ``python -m meanfield.validation.studies.gaussian [--quick] [--out-dir DIR]``.
"""

from __future__ import annotations

import hashlib
import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from meanfield.errors import require
from meanfield.gaussian import solve as solve_moments
from meanfield.model import Model
from meanfield.settings import Attention
from meanfield.app.storage import netcdf_safe, package_version
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.solvers.runs.runloop import run
from meanfield.solvers.steppers.steppers import make_stepper
from meanfield.plotting.style import legend_below
from ..claims import Check, below, within_errors
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..tasks import SYNCHRONOUS, machine_cores, run_tasks, write_compressed

KINDS = ("softmax", "l2", "multihead", "sinkhorn")
#: kind -> (particle kernel, moment-ODE attention, number of heads)
KIND_SETTINGS = {"softmax": ("dot", "softmax", 1), "l2": ("l2", "l2", 1), "multihead": ("dot", "softmax", 2),
                 "sinkhorn": ("sinkhorn", "sinkhorn", 1)}
#: Entropic parameter of the Sinkhorn kind (particles: weights exp(beta <Qx, Ky> / eps), beta = 1).
SINKHORN_EPS = 1.0
MATRIX_SCALE = 0.5
#: Covariance scale: the empirical exponential tilt by exp(<A x, y>) has relative variance
#: ``~ exp(|Sigma^{1/2} A^T x|^2) - 1``, so a wide Sigma (or large A) puts the particles of the
#: Gaussian's tails in a slow pre-asymptotic regime (no n^-1/2 rate over n <= 2^14).
COV_SCALE = 0.25
T_FINAL = 1.0
BETA = 1.0
#: dopri5 tolerance of the particle runs.  At 1e-7 the softmax error against the sample-moment ODE
#: (n = 4096, 2.0e-4) moved by 7e-10 from its 1e-9 value; Sinkhorn's error is O(1/n) (4e-7 at
#: n = 2048), so it keeps 1e-9.
PARTICLE_RTOL = {"softmax": 1e-7, "l2": 1e-7, "multihead": 1e-7, "sinkhorn": 1e-9}
MASTER_SEED = 20240604
#: Bootstrap resamples of the (draw, seed) runs for the slopes' 95 % intervals.
BOOTSTRAP_RESAMPLES = 400
#: ``seeds``: per draw, a number or ``{log2 n: number}``; ``largest_log2_n``: per-kind cap on n
#: (Sinkhorn's particle plan costs Sinkhorn iterations x n^2 per step: 64 seeds of n = 2^10 took
#: 200 s, of 2^11 816-2516 s — measured on the blocked path, before batches ran in dense chunks, ~2-3x
#: faster; its O(1/n) error is ~1e-6 by 2^10).  Full: n = 2^8 ... 2^14, three
#: draws, 64 seeds per draw up to 2^11 (7900 s of CPU: ~70 min on 2 cores; resumable).
FULL = {"dims": (2,), "draws": 3, "log2_n": tuple(range(8, 15)),
        "seeds": {8: 64, 9: 64, 10: 64, 11: 64, 12: 24, 13: 8, 14: 3}, "largest_log2_n": {"sinkhorn": 10}}
#: Quick: n = 2^5 ... 2^9, Sinkhorn to 2^8 (its plan costs iterations x n^2 per step: at 2^10 it was 87 %
#: of a 13.7-minute quick run; its O(1/n) rate already shows on 2^5 ... 2^8, as in the test).
QUICK = {"dims": (2,), "draws": 2, "log2_n": tuple(range(5, 10)), "seeds": 16, "largest_log2_n": {"sinkhorn": 8}}


# ------------------------------------------------------------------------------------------ problem
def draw_problem(kind: str, dim: int, draw: int) -> dict:
    """Seeded ``mean``, ``cov`` and per-head ``V`` (d x d), ``Q``, ``K`` ((d+1) x d) for one draw."""
    rng = np.random.default_rng([MASTER_SEED, KINDS.index(kind), dim, draw])
    heads = KIND_SETTINGS[kind][2]
    scale = MATRIX_SCALE / math.sqrt(dim)
    V = [scale * rng.standard_normal((dim, dim)) for _ in range(heads)]
    Q = [scale * rng.standard_normal((dim + 1, dim)) for _ in range(heads)]
    K = [scale * rng.standard_normal((dim + 1, dim)) for _ in range(heads)]
    mean = 0.5 * rng.standard_normal(dim)
    factor = rng.standard_normal((dim, dim))
    cov = COV_SCALE * (factor @ factor.T / dim + 0.5 * np.eye(dim))
    return {"mean": mean, "cov": cov, "V": V, "Q": Q, "K": K}


def ode_moments(problem: dict, mean, cov, attention: str, t_final: float):
    """Mean and covariance of the moment ODE at ``t_final``; raises if the run stopped early."""
    out = solve_moments(mean, cov, V=problem["V"], Q=problem["Q"], K=problem["K"], t_final=t_final,
                        attention=attention, eps=SINKHORN_EPS)
    require(out.attrs["stop_reason"] == "completed", f"moment ODE stopped early: {out.attrs['stop_reason']}")
    return out["mean"].values[-1], out["covariance"].values[-1]


def empirical_moments(x: np.ndarray):
    """Mean ``(B, d)`` and covariance ``(B, d, d)`` (ddof 0) of each system of ``x`` ``(B, n, d)``."""
    mean = x.mean(axis=1)
    centred = x - mean[:, None, :]
    return mean, np.einsum("bni,bnj->bij", centred, centred) / x.shape[1]


def moment_error(mean_a, cov_a, mean_b, cov_b) -> float:
    return float(np.linalg.norm(mean_a - mean_b) + np.linalg.norm(cov_a - cov_b, "fro"))


def evolve_particles(problem: dict, kind: str, x: np.ndarray, t_final: float, rtol: float) -> np.ndarray:
    """Tokens ``x`` ``(B, n, d)`` moved to ``t_final`` by the R^d particle engine."""
    kernel, _, heads = KIND_SETTINGS[kind]
    n, dim = x.shape[1], x.shape[2]
    model = Model("sa", beta=BETA, dim=dim)
    if heads == 1:
        attention = Attention("sa", Q=problem["Q"][0], K=problem["K"][0], V=problem["V"][0], kernel=kernel,
                              sinkhorn_eps=SINKHORN_EPS)
    else:
        attention = Attention("sa", kernel=kernel, heads=list(zip(problem["Q"], problem["K"], problem["V"])))
    scheme = ParticleScheme(model, n, attention, sphere=False)
    record = run(scheme, make_stepper("dopri5", scheme, rtol=rtol), x, t_final, t_final, scheme_frames=False)
    require(record.stop_reason == "completed", f"particle run stopped early: {record.stop_reason}")
    return record.state


def errors_for(problem: dict, kind: str, n: int, seeds, t_final: float, rtol: float):
    """``(error_exact, error_sample)``, one value per seed, for ``n`` tokens."""
    attention = KIND_SETTINGS[kind][1]
    x = np.stack([np.random.default_rng([MASTER_SEED, n, seed]).multivariate_normal(
        problem["mean"], problem["cov"], size=n) for seed in seeds])
    start_mean, start_cov = empirical_moments(x)
    end_mean, end_cov = empirical_moments(evolve_particles(problem, kind, x, t_final, rtol))
    exact_mean, exact_cov = ode_moments(problem, problem["mean"], problem["cov"], attention, t_final)
    exact, sample = np.empty(len(seeds)), np.empty(len(seeds))
    for s in range(len(seeds)):
        exact[s] = moment_error(end_mean[s], end_cov[s], exact_mean, exact_cov)
        ode_mean, ode_cov = ode_moments(problem, start_mean[s], start_cov[s], attention, t_final)
        sample[s] = moment_error(end_mean[s], end_cov[s], ode_mean, ode_cov)
    return exact, sample


def study_task(kind: str, dim: int, draw: int, n: int, seeds: int, t_final: float, rtol: float):
    """One task of the study: ``(error_exact, error_sample, seconds)`` for seeds ``0 .. seeds - 1``."""
    tick = _time.perf_counter()
    exact, sample = errors_for(draw_problem(kind, dim, draw), kind, n, range(seeds), t_final, rtol)
    return exact, sample, _time.perf_counter() - tick


# ------------------------------------------------------------------------------------------------ study
def log_rms(errors: np.ndarray):
    """``(log RMS, runs)`` over the last axis of ``errors`` (NaN = not run), bias-corrected.

    The log of a mean square ``m`` over ``r`` runs is biased low by ``Var(e^2) / (2 r m^2)``
    (delta method); that is added back, since with fewer runs at large ``n`` the bias would
    otherwise steepen the slope.  Cells with fewer than two runs give NaN.
    """
    runs = np.sum(np.isfinite(errors), axis=-1)
    squares = np.where(runs[..., None] > 1, errors, np.nan) ** 2
    out = np.full(runs.shape, np.nan)
    ok = runs > 1
    mean_square = np.nanmean(squares[ok], axis=-1)
    bias = np.nanvar(squares[ok], axis=-1, ddof=1) / (2 * runs[ok] * mean_square ** 2)
    out[ok] = 0.5 * (np.log(mean_square) + bias)
    return out, runs


def rms_slope(log_n: np.ndarray, errors: np.ndarray) -> tuple[float, float]:
    """``(slope, intercept)`` of the error's RMS against ``log_n``; ``errors`` ``(n, draw, seed)``,
    NaN = not run.

    One slope for all draws, one intercept per draw (draws differ in their constant by up to 10x,
    so pooling their runs into one RMS would let the largest draw decide): weighted least squares
    of each draw's bias-corrected ``log RMS`` over its seeds (:func:`log_rms`), weights = seeds (the
    variance of a log RMS over ``r`` runs is ~ 1 / r).  The intercept returned is the one that fits
    the plain RMS over all runs with that slope (the line drawn through the pooled points).
    """
    per_draw, runs = log_rms(errors)                                   # (n, draw)
    rows, draws = np.nonzero(np.isfinite(per_draw))
    if np.unique(rows).size < 2:
        return math.nan, math.nan
    used = np.unique(draws)
    design = np.zeros((rows.size, 1 + used.size))
    design[:, 0] = log_n[rows]
    design[np.arange(rows.size), 1 + np.searchsorted(used, draws)] = 1.0
    weight = np.sqrt(runs[rows, draws])
    coefficients = np.linalg.lstsq(design * weight[:, None], per_draw[rows, draws] * weight, rcond=None)[0]
    slope = float(coefficients[0])
    flat = errors.reshape(errors.shape[0], -1)
    pooled_runs = np.sum(np.isfinite(flat), axis=1)
    keep = pooled_runs > 0
    pooled = 0.5 * np.log(np.nanmean(flat[keep] ** 2, axis=1))
    intercept = float(np.average(pooled - slope * log_n[keep], weights=pooled_runs[keep]))
    return slope, intercept


def _resample_runs(rng, runs: np.ndarray) -> np.ndarray:
    """One bootstrap copy of ``runs`` ``(n, draw, seed)``: at each ``n`` the seeds run drawn with replacement,
    the same seeds for every draw (the draws of one seed share its tokens, :func:`errors_for`, so their
    errors are not independent: resampling them apart would understate the spread)."""
    copy = np.full_like(runs, np.nan)
    for i in range(runs.shape[0]):
        seeds = np.nonzero(np.any(np.isfinite(runs[i]), axis=0))[0]
        copy[i][:, :seeds.size] = runs[i][:, rng.choice(seeds, seeds.size)] if seeds.size else runs[i][:, seeds]
    return copy


def slopes(ds: xr.Dataset, resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """Fitted slopes, intercepts and their uncertainty over ``(attention, dim)`` for both references.

    The fit is to the root mean square over the seeds of each (draw, n): at leading order the
    error is a linear functional of the centred empirical fluctuation, so ``E|error|^2 ~ C / n``
    and the RMS is the statistic with a clean power law (a mean of logs or of a few heavy-tailed
    values is biased and noisy); one slope, one intercept per draw (:func:`rms_slope`).
    ``slope_*_ci_low`` / ``_ci_high``: the 95 % percentile bootstrap interval, resampling the seeds of
    each n with replacement, the same for every draw (seeded; the sizes are independent samples, the draws
    of one seed share its tokens); ``slope_*_spread``:
    the bootstrap standard deviation.
    """
    log_n = np.log(ds["n"].values.astype(float))
    rng = np.random.default_rng([MASTER_SEED, 7])
    out = {}
    for ref in ("exact", "sample"):
        values = ds[f"error_{ref}"].transpose("attention", "dim", "n", "draw", "seed").values
        shape = values.shape[:2]
        fitted = {key: np.full(shape, np.nan) for key in ("slope", "intercept", "spread", "ci_low", "ci_high")}
        for a, d in np.ndindex(*shape):
            runs = values[a, d]                                        # (n, draw, seed)
            fitted["slope"][a, d], fitted["intercept"][a, d] = rms_slope(log_n, runs)
            boot = np.array([rms_slope(log_n, _resample_runs(rng, runs))[0] for _ in range(resamples)])
            fitted["spread"][a, d] = float(boot.std(ddof=1))
            fitted["ci_low"][a, d], fitted["ci_high"][a, d] = np.percentile(boot, [2.5, 97.5])
        names = {"slope": f"slope_{ref}", "intercept": f"intercept_{ref}", "spread": f"slope_{ref}_spread",
                 "ci_low": f"slope_{ref}_ci_low", "ci_high": f"slope_{ref}_ci_high"}
        out.update({names[key]: array for key, array in fitted.items()})
    return out


def seeds_at(seeds, log2_n: int) -> int:
    """Seeds per draw at ``n = 2^log2_n``: ``seeds`` is a number or a ``{log2 n: number}`` table."""
    return int(seeds[log2_n] if isinstance(seeds, dict) else seeds)


#: The smallest ``n`` of the command line's ``--n`` (below it the sample covariance of a few tokens is nearly singular).
SMALLEST_LOG2_N = 4


def check_sizes(kinds, log2_n, seeds, largest_log2_n: dict) -> None:
    """The command line's ``--n`` and ``--seeds`` fit the study: sizes from 2^SMALLEST_LOG2_N, two runs per size (an
    RMS over one run has no spread, :func:`log_rms`) and two sizes for every kind under its cap ``largest_log2_n``."""
    require(min(log2_n) >= SMALLEST_LOG2_N, f"--n must be >= {2 ** SMALLEST_LOG2_N} for this study "
                                            f"(got {', '.join(str(2 ** p) for p in log2_n)})")
    require(all(seeds_at(seeds, p) >= 2 for p in log2_n), "--seeds must be >= 2 for this study (the error's RMS "
                                                          "over the seeds of a size and its spread)")
    for kind in kinds:
        cap = largest_log2_n.get(kind, max(log2_n))
        require(sum(p <= cap for p in log2_n) >= 2, f"--n must hold two sizes <= {2 ** cap} for this study (the "
                                                    f"{kind} kind runs up to n = {2 ** cap})")


def study_tasks(kinds, dims, draws: int, log2_n, seeds, largest_log2_n: dict) -> list:
    """``(kind, dim, draw, n, seeds)`` of every task, the costliest (pair sums x heads) first."""
    tasks = [(kind, dim, draw, 2 ** p, seeds_at(seeds, p)) for kind in kinds for dim in dims
             for draw in range(draws) for p in log2_n if p <= largest_log2_n.get(kind, p)]
    return sorted(tasks, key=lambda task: -task[3] ** 2 * task[4] * KIND_SETTINGS[task[0]][2])


TASK_FOLDER = "gaussian-tasks"


def task_settings(task: tuple, t_final: float, rtol: float) -> dict:
    """Everything that determines one task's numbers (the task, the run and the study's constants)."""
    kind, dim, draw, n, seeds = task
    return {"kind": kind, "dim": int(dim), "draw": int(draw), "n": int(n), "seeds": int(seeds),
            "t_final": float(t_final), "rtol": float(rtol), "beta": BETA, "master_seed": MASTER_SEED,
            "matrix_scale": MATRIX_SCALE, "cov_scale": COV_SCALE, "sinkhorn_eps": SINKHORN_EPS}


def task_path(folder, settings: dict) -> Path:
    """``folder/KIND-dD-drawR-nN-DIGEST.nc``; the digest covers every setting."""
    digest = hashlib.sha1(repr(sorted(settings.items())).encode()).hexdigest()[:12]
    return Path(folder) / f"{settings['kind']}-d{settings['dim']}-draw{settings['draw']}-n{settings['n']}-{digest}.nc"


def save_task(folder, settings: dict, result) -> Path:
    """Write one finished task (atomically) for a later run to reuse."""
    exact, sample, seconds = result
    Path(folder).mkdir(parents=True, exist_ok=True)
    task = xr.Dataset({"error_exact": ("seed", np.asarray(exact)), "error_sample": ("seed", np.asarray(sample))},
                      attrs={**settings, "seconds": float(seconds)})
    return write_compressed(task, task_path(folder, settings))


def load_task(folder, settings: dict):
    """``(error_exact, error_sample, seconds)`` of a task written by :func:`save_task`, or None."""
    path = task_path(folder, settings)
    if not path.is_file():                    # missing, or not a regular file (a named pipe would block the read)
        return None
    with xr.open_dataset(path) as task:
        if any(task.attrs.get(key) != value for key, value in settings.items()):
            return None
        return task["error_exact"].values, task["error_sample"].values, float(task.attrs["seconds"])


def _run_tasks(tasks: list, t_final: float, rtol: dict, workers: int, store) -> None:
    """Run ``tasks``, calling ``store(task, result)`` as each finishes (here, or on a Dask cluster of
    ``workers`` processes: :func:`meanfield.validation.tasks.run_tasks`)."""
    if not tasks:
        return
    with progress_bar(len(tasks), "gaussian runs") as bar:
        def save(args, result):
            store(args[:5], result)
            bar.update()

        run_tasks(study_task, [(*task, t_final, rtol[task[0]]) for task in tasks], save,
                  SYNCHRONOUS if workers <= 1 else None, workers)


def run_study(quick: bool = False, out_dir="gaussian-study", kinds=KINDS, dims=None, draws=None, log2_n=None,
              seeds=None, t_final: float = T_FINAL, rtol=None, workers=None) -> xr.Dataset:
    """The Gaussian study (module docstring); writes ``out_dir/gaussian.{nc,png}`` unless ``out_dir`` is None.

    Variables ``error_exact``, ``error_sample`` ``(attention, dim, draw, n, seed)`` (NaN where a
    size runs fewer seeds or a kind stops below the largest n), ``runs(attention, dim, n)``;
    ``slope_*``, ``intercept_*``, ``slope_*_spread``, ``slope_*_ci_low/high`` ``(attention, dim)``
    for both references.  ``seeds``: a number or ``{log2 n: number}``; ``rtol``: a number or
    ``{kind: number}`` (default ``PARTICLE_RTOL``); ``workers``: processes (default: 1 for the quick
    preset, one per core for the full one).
    """
    preset = QUICK if quick else FULL
    kinds = tuple(kinds)
    require(all(kind in KINDS for kind in kinds), f"kinds must be among {', '.join(KINDS)} (got {kinds!r})")
    dims = tuple(preset["dims"] if dims is None else dims)
    draws = int(preset["draws"] if draws is None else draws)
    log2_n = tuple(preset["log2_n"] if log2_n is None else log2_n)
    seeds = preset["seeds"] if seeds is None else seeds
    rtol = dict(PARTICLE_RTOL) if rtol is None else (rtol if isinstance(rtol, dict) else dict.fromkeys(kinds, rtol))
    workers = (1 if quick else machine_cores()) if workers is None else int(workers)
    require(len(log2_n) >= 2 and draws >= 1 and all(seeds_at(seeds, p) >= 1 for p in log2_n),
            "need at least two sizes n, one draw and one seed per size")
    check_sizes(kinds, log2_n, seeds, preset.get("largest_log2_n", {}))
    sizes = [2 ** p for p in log2_n]
    shape = (len(kinds), len(dims), draws, len(sizes), max(seeds_at(seeds, p) for p in log2_n))
    errors = {"exact": np.full(shape, np.nan), "sample": np.full(shape, np.nan)}
    run_time = np.zeros((len(kinds), len(sizes)))

    def store(task, result):
        kind, dim, draw, n, count = task
        a, d, i = kinds.index(kind), dims.index(dim), sizes.index(n)
        errors["exact"][a, d, draw, i, :count], errors["sample"][a, d, draw, i, :count], seconds = result
        run_time[a, i] += seconds

    folder = None if out_dir is None else Path(out_dir) / TASK_FOLDER
    settings = lambda task: task_settings(task, t_final, rtol[task[0]])

    def store_and_save(task, result):
        store(task, result)
        if folder is not None:
            save_task(folder, settings(task), result)

    start = _time.perf_counter()
    stop_reason = "completed"
    tasks, pending = study_tasks(kinds, dims, draws, log2_n, seeds, preset.get("largest_log2_n", {})), []
    for task in tasks:
        cached = None if folder is None else load_task(folder, settings(task))
        if cached is None:
            pending.append(task)
        else:
            store(task, cached)
    reused = len(tasks) - len(pending)
    try:
        _run_tasks(pending, t_final, rtol, workers, store_and_save)
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    dims_names = ("attention", "dim", "draw", "n", "seed")
    coords = {"attention": list(kinds), "dim": list(dims), "draw": list(range(draws)), "n": sizes,
              "seed": list(range(shape[-1]))}
    ds = xr.Dataset({"error_exact": (dims_names, errors["exact"]), "error_sample": (dims_names, errors["sample"]),
                     "runs": (("attention", "dim", "n"), np.isfinite(errors["sample"]).sum(axis=(2, 4))),
                     "run_time": (("attention", "n"), run_time)}, coords=coords)
    for name, values in slopes(ds).items():
        ds[name] = (("attention", "dim"), values)
    ds.attrs = netcdf_safe({
        "study": "gaussian", "t_final": t_final, "beta": BETA, "matrix_scale": MATRIX_SCALE,
        "matrices": "entries N(0, 1/d) * matrix_scale; Q, K (d+1) x d; V d x d",
        "initial_law": f"mean 0.5 N(0, I); cov {COV_SCALE:g} (F F^T / d + I / 2), F standard normal",
        "kinds": "softmax: dot kernel, 1 head; l2: L2 kernel, 1 head; multihead: dot kernel, 2 heads; "
                 f"sinkhorn: doubly stochastic, eps = {SINKHORN_EPS:g}",
        "seeds_per_draw": ", ".join(f"n=2^{p}: {seeds_at(seeds, p)}" for p in log2_n),
        "largest_log2_n": ", ".join(f"{k}: {v}" for k, v in preset.get("largest_log2_n", {}).items()) or "none",
        "particle_rtol": ", ".join(f"{kind}: {rtol[kind]:g}" for kind in kinds),
        "stepper": "dopri5", "attention_normalisation": "sa", "master_seed": MASTER_SEED,
        "error": "|mean difference| + ||covariance difference||_F at t_final (covariance ddof 0)",
        "slope_method": "weighted least squares of log RMS(error over the seeds of a draw at n) against log n, "
                        "one slope, one intercept per draw, weights = seeds, delta-method bias correction",
        "slope_spread_method": f"bootstrap over the seeds of each n (the same for every draw), "
                               f"{BOOTSTRAP_RESAMPLES} resamples: "
                               "std (spread) and 95 % percentile interval (ci_low, ci_high)",
        "workers": workers, "reused_tasks": reused, "stop_reason": stop_reason,
        "quick": quick, "package_version": package_version(), "wall_time": _time.perf_counter() - start})
    if out_dir is not None:
        write_dataset(ds, Path(out_dir) / "gaussian.nc")
        save_figure(plot_study(ds), Path(out_dir) / "gaussian.png")
    if stop_reason == "interrupted":
        raise KeyboardInterrupt(f"interrupted; finished runs written to {out_dir}")
    return ds


# --------------------------------------------------------------------------------------- figure, table
def rms_per_n(values: np.ndarray):
    """``(rows with runs, RMS, min, max)`` over the runs of each row of ``values`` ``(n, runs)`` (NaN = not run)."""
    rows = np.flatnonzero(np.isfinite(values).any(axis=1))
    kept = values[rows]
    return rows, np.sqrt(np.nanmean(kept ** 2, axis=1)), np.nanmin(kept, axis=1), np.nanmax(kept, axis=1)


def plot_study(ds: xr.Dataset) -> Figure:
    """Log-log error against n: one panel per attention kind, one colour per (reference, d)."""
    kinds = [str(k) for k in ds["attention"].values]
    fig = Figure(figsize=(5.5 * len(kinds), 4.8), layout="constrained")
    axes = fig.subplots(1, len(kinds), squeeze=False)[0]
    all_n = ds["n"].values.astype(float)
    styles = {"sample": ("o", "-"), "exact": ("s", "--")}
    colours = {"sample": "tab:blue", "exact": "tab:red"}
    for ax, kind in zip(axes, kinds):
        for ref in ("sample", "exact"):
            for k, dim in enumerate(ds["dim"].values):
                at = ds.sel(attention=kind, dim=dim)
                rows, rms, low, high = rms_per_n(at[f"error_{ref}"].transpose("n", ...).values.reshape(all_n.size, -1))
                n = all_n[rows]
                marker, line = styles[ref]
                alpha = 1.0 - 0.35 * k
                ax.errorbar(n, rms, yerr=(rms - low, high - rms), fmt=marker,
                            color=colours[ref], alpha=alpha, ms=4, capsize=2,
                            label=f"vs ODE from {ref} moments, d = {int(dim)} "
                                  f"(slope {float(at[f'slope_{ref}']):.2f} ± {float(at[f'slope_{ref}_spread']):.2f})")
                ax.plot(n, np.exp(float(at[f"intercept_{ref}"])) * n ** float(at[f"slope_{ref}"]), line,
                        color=colours[ref], alpha=alpha, lw=1)
        rows, rms, _, _ = rms_per_n(ds["error_exact"].sel(attention=kind).transpose("n", ...).values
                                    .reshape(all_n.size, -1))
        if rows.size:
            n = all_n[rows]
            ax.plot(n, rms[0] * (n / n[0]) ** -0.5, "k:", lw=1.2, label=r"$n^{-1/2}$")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("number of tokens $n$")
        ax.set_ylabel(r"$|\Delta$ mean$| + \|\Delta$ cov$\|_F$ at $t_{final}$")
        ax.set_title(kind)
        ax.grid(True, which="both", alpha=0.3)
        legend_below(ax, ncol=1, fontsize="x-small")
    runs = ds["runs"].max(("attention", "dim")).values
    fig.suptitle(f"Gaussian tokens: particles vs moment ODEs at t = {ds.attrs['t_final']:g} "
                 f"({ds.sizes['draw']} draws; runs per n {int(runs.max())} .. {int(runs.min())}; "
                 "points RMS over the runs, bars min-max)")
    return fig


def format_table(ds: xr.Dataset) -> str:
    """One line per (attention, d): slopes [95 % bootstrap interval] against both ODEs, RMS errors at the
    largest n that kind ran, and the runs (draws x seeds) at the smallest and largest n."""
    lines = [f"{'attention':>9} {'d':>2} {'slope vs sample [95 % CI]':>27} {'slope vs exact [95 % CI]':>27} "
             f"{'largest n':>9} {'rms sample':>10} {'rms exact':>10} {'runs':>8}"]
    interval = lambda row, ref: (f"{float(row[f'slope_{ref}']):+.3f} [{float(row[f'slope_{ref}_ci_low']):+.3f}, "
                                 f"{float(row[f'slope_{ref}_ci_high']):+.3f}]")
    flat = lambda row, ref: row[f"error_{ref}"].transpose("n", ...).values.reshape(row.sizes["n"], -1)
    for kind in ds["attention"].values:
        for dim in ds["dim"].values:
            row = ds.sel(attention=kind, dim=dim)
            rows, rms_sample, _, _ = rms_per_n(flat(row, "sample"))
            _, rms_exact, _, _ = rms_per_n(flat(row, "exact"))
            if not rows.size:
                lines.append(f"{str(kind):>9} {int(dim):>2}  (no finished runs)")
                continue
            runs = row["runs"].values[rows]
            lines.append(f"{str(kind):>9} {int(dim):>2} {interval(row, 'sample'):>27} {interval(row, 'exact'):>27} "
                         f"{int(row['n'].values[rows[-1]]):>9} {rms_sample[-1]:>10.3e} {rms_exact[-1]:>10.3e} "
                         f"{f'{runs[0]}..{runs[-1]}':>8}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- claims
def slope_dof(log_n, seeds) -> float:
    """Degrees of freedom of a slope's spread estimated from ``seeds[i]`` runs at ``log_n[i]`` (Welch-Satterthwaite):
    the slope of :func:`rms_slope` weighs size ``i`` by ``a_i = S_i (x_i - x_bar)^2`` (weights ``S_i``, the variance of
    a log RMS over ``S_i`` runs ~ 1 / S_i), each size's variance known to ``S_i - 1`` degrees of freedom:
    ``(sum a_i)^2 / sum a_i^2 / (S_i - 1)`` (sizes with fewer than two runs carry none)."""
    x, runs = np.asarray(log_n, dtype=float), np.asarray(seeds, dtype=float)
    keep = runs > 1
    x, runs = x[keep], runs[keep]
    a = runs * (x - np.average(x, weights=runs)) ** 2
    return float(np.sum(a) ** 2 / np.sum(a ** 2 / (runs - 1)))


def gaussian_claims(ds) -> list[Check]:
    slope, spread = ds["slope_sample"].isel(dim=0), ds["slope_sample_spread"].isel(dim=0)
    exact, exact_spread = ds["slope_exact"].isel(dim=0), ds["slope_exact_spread"].isel(dim=0)
    what = "bootstrap sd of the slope over the seeds; Student's t: the seeds of each size estimate its spread"
    log_n, draws = np.log(ds["n"].values.astype(float)), ds.sizes["draw"]
    dof = {str(kind): slope_dof(log_n, ds["runs"].sel(attention=kind).isel(dim=0).values / draws)
           for kind in ds["attention"].values}
    checks = [within_errors(f"{kind}: error against the sample-moment ODE falls like n^-1/2 (fitted slope)", -0.5,
                            slope.sel(attention=kind), spread.sel(attention=kind), what, dof=dof[kind])
              for kind in ("softmax", "l2", "multihead")]
    checks.append(within_errors("sinkhorn: error against the sample-moment ODE falls like n^-1 (fitted slope)", -1.0,
                                slope.sel(attention="sinkhorn"), spread.sel(attention="sinkhorn"), what,
                                dof=dof["sinkhorn"]))
    checks += [within_errors(f"{kind}: error against the exact-moment ODE falls like n^-1/2 (fitted slope)", -0.5,
                             exact.sel(attention=kind), exact_spread.sel(attention=kind), what, dof=dof[str(kind)])
               for kind in ds["attention"].values]
    ratio = (ds["error_sample"].mean(("draw", "seed")) / ds["error_exact"].mean(("draw", "seed"))).values
    checks.append(below("The sample-moment ODE is closer than the exact-moment one (largest ratio of errors, sizes "
                        "run)", np.nanmax(ratio), 1.0, theory="≪ 1",
                        source="theory: the sample-moment ODE starts from the particles' own moments, so it carries "
                               "none of the initial sampling error that the exact-moment ODE propagates (MATH.md §3, "
                               "§4): the ratio is below 1; no closer bound is derived"))
    return checks


def main(argv=None) -> xr.Dataset:
    return study_main(argv, "Gaussian tokens: particles vs moment ODEs (error vs n).", "gaussian-study", run_study,
                      format_table, "gaussian")


if __name__ == "__main__":
    main()
