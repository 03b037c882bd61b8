"""Study: Gaussian tokens in R^d, particles vs the moment ODEs (MATH.md §3, §4).

For each attention kind (``softmax``; ``l2``; ``multihead`` = two softmax heads; ``sinkhorn`` with
``eps = SINKHORN_EPS``), each
dimension ``d`` and a few seeded random ``(V, Q, K)`` (entries ``N(0, 1/d) * MATRIX_SCALE``,
``Q, K`` of shape ``(d + 1) x d`` so the rectangular path is exercised), ``n`` tokens are
sampled i.i.d. from ``N(alpha, Sigma)`` (``alpha``, ``Sigma`` drawn with the matrices),
evolved to ``T_FINAL`` with the R^d particle engine (:class:`solvers.particles.ParticleScheme`,
``sphere=False``, SA normalisation, ``beta = 1``; dopri5 at ``PARTICLE_RTOL``; the seeds of
one ``n`` run as one batch), and the particles' mean and covariance (of the empirical
measure, ``ddof = 0``) at ``T_FINAL`` are compared with the moment ODEs
(:func:`meanfield.gaussian.solve`) started

* from the exact moments ``(alpha, Sigma)`` (``error_exact``): contains the O(n^-1/2)
  sampling error of the initial moments;
* from the initial sample moments of the same tokens (``error_sample``): only the
  non-Gaussianity of the empirical measure (its higher cumulants, O(n^-1/2), and the
  self-interaction term j = i, O(1/n)) drives the particles away from the ODE.

Error = ``|mean difference| + ||covariance difference||_F``.  The rate is the least-squares
slope of ``log`` (root mean square of the error over draws and seeds) against ``log n``
(:func:`slopes`); its spread is the standard deviation (ddof 1) of the slopes of each draw's RMS.
Expected: ``-1/2`` for both references (the empirical measure's non-Gaussian fluctuation is
``O(n^{-1/2})`` and the moment dynamics does not close on it), so a fitted slope near ``-1/2`` is
the check; the error against the sample-moment ODE is ~100x smaller.

Run: ``python -m validation.gaussian [--quick] [--out-dir DIR]``.
"""

from __future__ import annotations

import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from meanfield.errors import require
from meanfield.gaussian import solve as solve_moments
from meanfield.model import Model
from meanfield.storage import netcdf_safe, package_version
from solvers.particles import ParticleScheme
from solvers.runloop import run
from solvers.steppers import make_stepper
from validation.mean_field import fit_line, progress_bar, save_figure, study_main, write_dataset

KINDS = ("softmax", "l2", "multihead", "sinkhorn")
#: kind -> (particle kernel, moment-ODE attention, number of heads)
KIND_SETTINGS = {"softmax": ("dot", "softmax", 1), "l2": ("l2", "l2", 1), "multihead": ("dot", "softmax", 2),
                 "sinkhorn": ("sinkhorn", "sinkhorn", 1)}
#: Entropic parameter of the Sinkhorn kind (particles: weights exp(beta <Qx, Ky> / eps), beta = 1).
SINKHORN_EPS = 1.0
MATRIX_SCALE = 0.5
#: Covariance scale: the empirical exponential tilt by exp(<A x, y>) has relative variance
#: ~ exp(|Sigma^{1/2} A^T x|^2) - 1, so a wide Sigma (or large A) puts the particles of the
#: Gaussian's tails in a slow pre-asymptotic regime (no n^-1/2 rate over n <= 2^14).
COV_SCALE = 0.25
T_FINAL = 1.0
BETA = 1.0
PARTICLE_RTOL = 1e-9
MASTER_SEED = 20240604
#: Bootstrap resamples of the (draw, seed) runs for the slopes' 95 % intervals.
BOOTSTRAP_RESAMPLES = 400
#: Sixteen seeds per (draw, n): the RMS over seeds then has ~18 % relative scatter per point.
FULL = {"dims": (2, 3), "draws": 2, "log2_n": tuple(range(5, 12)), "seeds": 16}
QUICK = {"dims": (2,), "draws": 2, "log2_n": tuple(range(5, 11)), "seeds": 16}


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
        scheme = ParticleScheme(model, n, problem["Q"][0], problem["K"][0], problem["V"][0], sphere=False,
                                kernel=kernel, observe=lambda _x: {}, sinkhorn_eps=SINKHORN_EPS)
    else:
        scheme = ParticleScheme(model, n, sphere=False, kernel=kernel, observe=lambda _x: {},
                                heads=list(zip(problem["Q"], problem["K"], problem["V"])))
    record = run(scheme, make_stepper("dopri5", scheme, rtol=rtol), x, t_final, t_final)
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


# ------------------------------------------------------------------------------------------------ study
def _rms_slope(log_n: np.ndarray, errors: np.ndarray) -> tuple[float, float]:
    """``(slope, intercept)`` of ``log RMS`` over the columns of ``errors`` (shape ``(n, runs)``)."""
    return fit_line(log_n, 0.5 * np.log(np.mean(errors ** 2, axis=1)))


def slopes(ds: xr.Dataset, resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """Fitted slopes, intercepts and their uncertainty over ``(attention, dim)`` for both references.

    The fit is to the root mean square over draws and seeds: at leading order the error is a
    linear functional of the centred empirical fluctuation, so ``E|error|^2 ~ C / n`` and the RMS
    is the statistic with a clean power law (a mean of logs or of a few heavy-tailed values
    is biased and noisy).  ``slope_*_ci_low`` / ``_ci_high``: the 95 % percentile bootstrap interval,
    resampling the (draw, seed) runs with replacement (seeded); ``slope_*_spread``: the bootstrap
    standard deviation.
    """
    log_n = np.log(ds["n"].values.astype(float))
    rng = np.random.default_rng([MASTER_SEED, 7])
    out = {}
    for ref in ("exact", "sample"):
        values = ds[f"error_{ref}"].transpose("attention", "dim", "n", "draw", "seed").values
        shape = values.shape[:2]
        fitted = {key: np.full(shape, np.nan) for key in ("slope", "intercept", "spread", "ci_low", "ci_high")}
        for a, d in np.ndindex(*shape):
            runs = values[a, d].reshape(values.shape[2], -1)
            fitted["slope"][a, d], fitted["intercept"][a, d] = _rms_slope(log_n, runs)
            picks = rng.integers(0, runs.shape[1], (resamples, runs.shape[1]))
            boot = np.array([_rms_slope(log_n, runs[:, pick])[0] for pick in picks])
            fitted["spread"][a, d] = float(boot.std(ddof=1))
            fitted["ci_low"][a, d], fitted["ci_high"][a, d] = np.percentile(boot, [2.5, 97.5])
        names = {"slope": f"slope_{ref}", "intercept": f"intercept_{ref}", "spread": f"slope_{ref}_spread",
                 "ci_low": f"slope_{ref}_ci_low", "ci_high": f"slope_{ref}_ci_high"}
        out.update({names[key]: array for key, array in fitted.items()})
    return out


def run_study(quick: bool = False, out_dir="gaussian-study", kinds=KINDS, dims=None, draws=None, log2_n=None,
              seeds=None, t_final: float = T_FINAL, rtol: float = PARTICLE_RTOL) -> xr.Dataset:
    """The Gaussian study (module docstring); writes ``out_dir/gaussian.{nc,png}`` unless ``out_dir`` is None.

    Variables ``error_exact``, ``error_sample`` ``(attention, dim, draw, n, seed)``; ``slope_*``,
    ``intercept_*``, ``slope_*_spread`` ``(attention, dim)`` for both references.
    """
    preset = QUICK if quick else FULL
    kinds = tuple(kinds)
    require(all(kind in KINDS for kind in kinds), f"kinds must be among {', '.join(KINDS)} (got {kinds!r})")
    dims = tuple(preset["dims"] if dims is None else dims)
    draw_list = list(range(preset["draws"] if draws is None else draws))
    sizes = [2 ** p for p in (preset["log2_n"] if log2_n is None else log2_n)]
    seed_list = list(range(preset["seeds"] if seeds is None else seeds))
    require(len(sizes) >= 2 and len(seed_list) >= 1, "need at least two sizes n and one seed")
    shape = (len(kinds), len(dims), len(draw_list), len(sizes), len(seed_list))
    error_exact, error_sample = np.full(shape, np.nan), np.full(shape, np.nan)
    run_time = np.zeros((len(kinds), len(sizes)))
    start = _time.perf_counter()
    with progress_bar(len(kinds) * len(dims) * len(draw_list) * len(sizes), "gaussian runs") as bar:
        for a, kind in enumerate(kinds):
            for d, dim in enumerate(dims):
                for r, draw in enumerate(draw_list):
                    problem = draw_problem(kind, dim, draw)
                    for i, n in enumerate(sizes):
                        tick = _time.perf_counter()
                        error_exact[a, d, r, i], error_sample[a, d, r, i] = errors_for(
                            problem, kind, n, seed_list, t_final, rtol)
                        run_time[a, i] += _time.perf_counter() - tick
                        bar.update()
    dims_names = ("attention", "dim", "draw", "n", "seed")
    coords = {"attention": list(kinds), "dim": list(dims), "draw": draw_list, "n": sizes, "seed": seed_list}
    ds = xr.Dataset({"error_exact": (dims_names, error_exact), "error_sample": (dims_names, error_sample),
                     "run_time": (("attention", "n"), run_time)}, coords=coords)
    for name, values in slopes(ds).items():
        ds[name] = (("attention", "dim"), values)
    ds.attrs = netcdf_safe({
        "study": "gaussian", "t_final": t_final, "beta": BETA, "matrix_scale": MATRIX_SCALE,
        "matrices": "entries N(0, 1/d) * matrix_scale; Q, K (d+1) x d; V d x d",
        "initial_law": f"mean 0.5 N(0, I); cov {COV_SCALE:g} (F F^T / d + I / 2), F standard normal",
        "kinds": "softmax: dot kernel, 1 head; l2: L2 kernel, 1 head; multihead: dot kernel, 2 heads; "
                 f"sinkhorn: doubly stochastic, eps = {SINKHORN_EPS:g}",
        "particle_rtol": rtol, "stepper": "dopri5", "attention_normalisation": "sa", "master_seed": MASTER_SEED,
        "error": "|mean difference| + ||covariance difference||_F at t_final (covariance ddof 0)",
        "slope_method": "least squares of log RMS(error over draws and seeds) against log n",
        "slope_spread_method": f"bootstrap over the (draw, seed) runs, {BOOTSTRAP_RESAMPLES} resamples: "
                               "std (spread) and 95 % percentile interval (ci_low, ci_high)",
        "quick": quick, "package_version": package_version(), "wall_time": _time.perf_counter() - start})
    if out_dir is not None:
        write_dataset(ds, Path(out_dir) / "gaussian.nc")
        save_figure(plot_study(ds), Path(out_dir) / "gaussian.png")
    return ds


# --------------------------------------------------------------------------------------- figure, table
def plot_study(ds: xr.Dataset) -> Figure:
    """Log-log error against n: one panel per attention kind, one colour per (reference, d)."""
    kinds = [str(k) for k in ds["attention"].values]
    fig = Figure(figsize=(5.5 * len(kinds), 4.8), layout="constrained")
    axes = fig.subplots(1, len(kinds), squeeze=False)[0]
    n = ds["n"].values.astype(float)
    styles = {"sample": ("o", "-"), "exact": ("s", "--")}
    colours = {"sample": "tab:blue", "exact": "tab:red"}
    for ax, kind in zip(axes, kinds):
        for ref in ("sample", "exact"):
            for k, dim in enumerate(ds["dim"].values):
                at = ds.sel(attention=kind, dim=dim)
                values = at[f"error_{ref}"].transpose("n", ...).values.reshape(n.size, -1)
                mean = np.sqrt((values ** 2).mean(axis=1))  # the RMS the slope is fitted to
                marker, line = styles[ref]
                alpha = 1.0 - 0.35 * k
                ax.errorbar(n, mean, yerr=(mean - values.min(axis=1), values.max(axis=1) - mean), fmt=marker,
                            color=colours[ref], alpha=alpha, ms=4, capsize=2,
                            label=f"vs ODE from {ref} moments, d = {int(dim)} "
                                  f"(slope {float(at[f'slope_{ref}']):.2f} ± {float(at[f'slope_{ref}_spread']):.2f})")
                ax.plot(n, np.exp(float(at[f"intercept_{ref}"])) * n ** float(at[f"slope_{ref}"]), line,
                        color=colours[ref], alpha=alpha, lw=1)
        top = float(ds["error_exact"].sel(attention=kind).isel(n=0).mean())
        ax.plot(n, top * (n / n[0]) ** -0.5, "k:", lw=1.2, label=r"$n^{-1/2}$")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("number of tokens $n$")
        ax.set_ylabel(r"$|\Delta$ mean$| + \|\Delta$ cov$\|_F$ at $t_{final}$")
        ax.set_title(kind)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="x-small", loc="lower left")
    fig.suptitle(f"Gaussian tokens: particles vs moment ODEs at t = {ds.attrs['t_final']:g} "
                 f"({ds.sizes['draw']} draws x {ds.sizes['seed']} seeds; points RMS, bars min-max)")
    return fig


def format_table(ds: xr.Dataset) -> str:
    """One line per (attention, d): slopes [95 % bootstrap interval] against both ODEs, RMS errors at the largest n."""
    n_max = int(ds["n"].values[-1])
    lines = [f"{'attention':>9} {'d':>2} {'slope vs sample [95 % CI]':>27} {'slope vs exact [95 % CI]':>27} "
             f"{'rms sample (n=' + str(n_max) + ')':>21} {'rms exact':>10}"]
    interval = lambda row, ref: (f"{float(row[f'slope_{ref}']):+.3f} [{float(row[f'slope_{ref}_ci_low']):+.3f}, "
                                 f"{float(row[f'slope_{ref}_ci_high']):+.3f}]")
    rms = lambda row, ref: float(np.sqrt((row[f"error_{ref}"].isel(n=-1) ** 2).mean()))
    for kind in ds["attention"].values:
        for dim in ds["dim"].values:
            row = ds.sel(attention=kind, dim=dim)
            lines.append(f"{str(kind):>9} {int(dim):>2} {interval(row, 'sample'):>27} {interval(row, 'exact'):>27} "
                         f"{rms(row, 'sample'):>21.3e} {rms(row, 'exact'):>10.3e}")
    return "\n".join(lines)


def main(argv=None) -> xr.Dataset:
    return study_main(argv, "Gaussian tokens: particles vs moment ODEs (error vs n).", "gaussian-study", run_study,
                      format_table, "gaussian")


if __name__ == "__main__":
    main()
