"""Study: when do clusters form from i.i.d. uniform tokens, as a function of n? (MATH.md §1, §2.3)

Particles (MATH.md §1, on the circle, SA, ``Q = K = V = I``) start i.i.d. uniform.  The
empirical measure is the uniform state plus fluctuations of size ``eps ~ n^{-1/2}`` in every
Fourier mode; the linear theory of MATH.md §2.3 (Bruno et al.) lets the dominant mode ``k*``
grow like ``exp(lambda_{k*} t)``, so its amplitude reaches O(1), and about ``k*`` clusters
appear, after a time

    t_n = log(1 / eps) / lambda_{k*} + c = log(n) / (2 lambda_{k*}) + c.

Formation criterion (measured per run).  With the empirical dominant-mode amplitude
``A(t) = 2 pi |rho_hat_{k*}(t)| = |sum_j w_j exp(-i k* theta_j(t))|`` (1 for k* equal,
evenly spaced point clusters, ~ sqrt(pi / 4n) at t = 0), the formation time is the first
time at which ``A`` exceeds ``THRESHOLD = 1/2``, located between the two saved frames
(every ``SAVE_EVERY = 0.1``) that straddle it by linear interpolation in ``log A``.  A run
whose ``A`` never reaches 1/2 before ``t_final = (log(n)/2 + MARGIN) / lambda_{k*}`` gets NaN,
is counted in the attribute ``not_formed`` and left out of the seed mean (so that mean is
over the runs that formed ``k*`` clusters, a selected subset).  This happens often at
beta = 9: the neighbours of ``k* = 4`` grow almost as fast (lambda_3, lambda_5 = 0.84, 0.94
lambda_4), so a run whose initial fluctuation favours them ends with 3 or 5 clusters and
``A`` stays below 1/2.  The study therefore also records a second criterion, met by every
run we tried: the same threshold on the largest amplitude ``max_{k >= 1} 2 pi |rho_hat_k|``
(the modes the particle run stores, 1..max(16, 2 k*)), in the variables ending ``_any_mode``.
The two agree whenever mode k* is the first to cross 1/2.

Initial amplitudes.  For i.i.d. uniform tokens every ``n A_k(0)^2`` has mean exactly 1 and variance
``1 - 1/n`` (``A_k = |sum_j exp(-i k theta_j)| / n``), modes nearly uncorrelated; ``initial_modes(n, seed,
mode)`` keeps ``A_k(0)`` of every stored mode ``k >= 1``: their mean of ``n A^2`` and the slope of the log
RMS against ``log n`` (``-1/2``) have standard errors known in advance (:func:`initial_amplitude_fit`).

Fits (for each criterion).  ``slope`` / ``intercept``: least squares of the seed-mean
formation time against ``log n``; ``slope_spread``: the standard deviation (ddof 1) of the
slopes fitted to each seed alone (over the n at which it formed).  Compare with the
theoretical slope ``1 / (2 lambda_{k*})`` (lambda from :func:`meanfield.theory.growth_rates`).
``prediction_intercept``: the constant ``c`` of ``t_n`` above, fitted by least squares with
the slope held at its theoretical value.

Run: ``python -m meanfield.validation.studies.cluster_formation [--quick] [--out-dir DIR]`` or ``meanfield validate
cluster-formation [--quick] [--beta B] [--n N1,N2,...] [--seeds S]`` (``--n``: powers of two, at least two; the
claims' standard errors are computed for the runs made).
"""

from __future__ import annotations

import argparse
import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from meanfield.errors import require
from meanfield.model import Model
from meanfield.plotting.style import legend_below
from meanfield.app.storage import netcdf_safe, package_version
from meanfield.theory import dominant_mode, formation_time, growth_rates
from meanfield.solvers.runs.particle_run import simulate
from meanfield.fits import fit_line

from ..claims import Check, fraction, within_errors
from ..harness import fit_with_spread, progress_bar, save_figure, write_dataset

THRESHOLD = 0.5
SAVE_EVERY = 0.1
#: e-folds of the dominant mode simulated past the naive prediction ``log(n) / (2 lambda)``.
MARGIN = 4.0
FULL = {"log2_n": tuple(range(8, 15)), "seeds": 8}
QUICK = {"log2_n": tuple(range(8, 12)), "seeds": 3}


def crossing_time(times, amplitude, threshold: float = THRESHOLD) -> float:
    """First time ``amplitude`` exceeds ``threshold``, interpolated linearly in ``log amplitude``; NaN if never."""
    times, amplitude = np.asarray(times, dtype=float), np.asarray(amplitude, dtype=float)
    above = np.nonzero(amplitude > threshold)[0]
    if above.size == 0:
        return math.nan
    j = int(above[0])
    if j == 0:
        return float(times[0])
    low, high = math.log(max(amplitude[j - 1], 1e-300)), math.log(amplitude[j])
    return float(times[j - 1] + (math.log(threshold) - low) / (high - low) * (times[j] - times[j - 1]))


def amplitudes(run: xr.Dataset) -> np.ndarray:
    """``2 pi |rho_hat_k(t)|`` of a particle run, shape ``(time, mode)`` (``mode_amplitude`` is ``|rho_hat_k|``)."""
    return 2 * math.pi * np.asarray(run["mode_amplitude"].values, dtype=float)


def one_run(model: Model, n: int, seed: int) -> dict:
    """Formation times (dominant mode; any mode) and ``A(0)`` of one i.i.d. uniform particle run."""
    k = dominant_mode(model)
    rate = float(growth_rates(model, [k])[0])
    t_final = (math.log(n) / 2 + MARGIN) / rate
    run = simulate(dim=2, n=n, attention=model.attention, beta=model.beta, init="uniform", seed=seed,
                   sampling="iid", t_final=t_final, save_every=SAVE_EVERY)
    amplitude = amplitudes(run)
    modes = run["mode"].values
    times = run["time"].values
    return {"dominant": crossing_time(times, amplitude[:, modes == k][:, 0]),
            "any_mode": crossing_time(times, amplitude[:, modes >= 1].max(axis=1)),
            "initial": float(amplitude[0, modes == k][0]), "initial_modes": amplitude[0, modes >= 1]}


def seed_mean(values: np.ndarray) -> np.ndarray:
    """Mean over the last axis of the finite entries (NaN where there are none), without warnings."""
    finite = np.isfinite(values)
    count = finite.sum(axis=-1)
    total = np.where(finite, values, 0.0).sum(axis=-1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def initial_amplitude_fit(initial: xr.DataArray) -> dict:
    """Statistics of ``A_k(0)`` ``(n, seed, mode)`` with their standard errors (module docstring): the mean
    of ``n A^2`` (``mean_power``; standard error ``sqrt((1 - 1/n) / count)``) and the least-squares slope
    of ``log RMS_{seed, mode} A`` against ``log n`` (``amplitude_slope``; each log RMS has standard
    deviation ``1 / (2 sqrt(count at n))``, so the slope's is that over ``sqrt(sum (log n - mean)^2)``)."""
    n = initial["n"].values.astype(float)
    power = (initial ** 2 * initial["n"]).values.reshape(n.size, -1)
    per_n = power.shape[1]
    log_n = np.log(n)
    slope = fit_line(log_n, 0.5 * np.log(power.mean(axis=1) / n))[0]
    return {"mean_power": float(power.mean()),
            "mean_power_stderr": math.sqrt(float(np.mean(1 - 1 / n)) / power.size),
            "amplitude_slope": slope,
            "amplitude_slope_stderr": 0.5 / math.sqrt(per_n * float(np.sum((log_n - log_n.mean()) ** 2)))}


def fits(sizes, formation: np.ndarray, rate: float) -> dict:
    """Free fit of the seed-mean formation time against log n, and the fixed-slope (theory) intercept."""
    log_n = np.log(np.asarray(sizes, dtype=float))
    mean = seed_mean(formation)
    slope, intercept, spread = fit_with_spread(log_n, mean, formation)
    theory_slope = 1.0 / (2.0 * rate)
    keep = np.isfinite(mean)
    c = float(np.mean(mean[keep] - theory_slope * log_n[keep])) if keep.any() else math.nan
    return {"slope": slope, "intercept": intercept, "slope_spread": spread, "theoretical_slope": theory_slope,
            "prediction_intercept": c}


def run_study(quick: bool = False, out_dir="cluster-formation-study", beta: float = 9.0, attention: str = "sa",
              log2_n=None, seeds=None) -> xr.Dataset:
    """The study of the module docstring; writes ``out_dir/cluster_formation.{nc,png}`` unless ``out_dir`` is None.

    Variables: ``formation_time(n, seed)`` (dominant-mode criterion), ``mean_formation_time(n)``
    (mean over the seeds that formed), ``predicted_formation_time(n)`` (``log(n) / (2 lambda_{k*})
    + prediction_intercept``), the same three ending ``_any_mode`` for the any-mode criterion,
    and ``initial_amplitude(n, seed)`` (``A(0)``).  Fits are attributes (``slope``, ``intercept``,
    ``slope_spread``, ``prediction_intercept``, ``not_formed``; ``..._any_mode``) next to
    ``theoretical_slope = 1 / (2 lambda_{k*})``.
    """
    preset = QUICK if quick else FULL
    sizes = [2 ** p for p in (preset["log2_n"] if log2_n is None else log2_n)]
    seed_list = list(range(preset["seeds"] if seeds is None else seeds))
    require(len(sizes) >= 2, f"--n must give at least two sizes for this study: the amplitude's rate in n is a "
                             f"fitted slope (got {len(sizes)})")
    require(float(beta) > 0, f"--beta must be > 0 for this study: at beta = 0 no mode grows (got {float(beta):g})")
    model = Model(attention=attention, beta=float(beta), nu=0.0, dim=2)
    k = dominant_mode(model)
    rate = float(growth_rates(model, [k])[0])
    start = _time.perf_counter()
    table = {key: np.full((len(sizes), len(seed_list)), np.nan) for key in ("dominant", "any_mode", "initial")}
    initial_modes = []
    with progress_bar(len(sizes) * len(seed_list), "cluster-formation runs") as bar:
        for i, n in enumerate(sizes):
            for s, seed in enumerate(seed_list):
                result = one_run(model, n, seed)
                initial_modes.append(result.pop("initial_modes"))
                for key, value in result.items():
                    table[key][i, s] = value
                bar.update()
    modes = np.arange(1, len(initial_modes[0]) + 1)
    ds = xr.Dataset({"initial_amplitude": (("n", "seed"), table["initial"]),
                     "initial_modes": (("n", "seed", "mode"),
                                       np.array(initial_modes).reshape(len(sizes), len(seed_list), modes.size))},
                    coords={"n": sizes, "seed": seed_list, "mode": modes})
    attrs = {}
    for key, suffix in (("dominant", ""), ("any_mode", "_any_mode")):
        fitted = fits(sizes, table[key], rate)
        ds["formation_time" + suffix] = (("n", "seed"), table[key])
        ds["mean_formation_time" + suffix] = (("n",), seed_mean(table[key]))
        ds["predicted_formation_time" + suffix] = (
            ("n",), np.array([formation_time(model, amplitude=n ** -0.5) + fitted["prediction_intercept"] for n in sizes]))
        fitted["not_formed"] = int(np.count_nonzero(~np.isfinite(table[key])))
        attrs.update({name + suffix: value for name, value in fitted.items() if name != "theoretical_slope"})
    attrs.update(initial_amplitude_fit(ds["initial_modes"]))
    ds.attrs = netcdf_safe(dict(
        attrs, study="cluster-formation", attention=attention, beta=float(beta), init="uniform", sampling="iid",
        k_star=k, lambda_k_star=rate, theoretical_slope=1.0 / (2.0 * rate), threshold=THRESHOLD,
        save_every=SAVE_EVERY, margin=MARGIN,
        criterion="first time 2 pi |rho_hat_k*| > threshold, linear interpolation in log amplitude",
        criterion_any_mode="the same with max over stored modes k >= 1 of 2 pi |rho_hat_k|",
        slope_spread_method="std (ddof 1) of per-seed least-squares slopes",
        seeds=len(seed_list), quick=quick, package_version=package_version(),
        wall_time=_time.perf_counter() - start))
    if out_dir is not None:
        write_dataset(ds, Path(out_dir) / "cluster_formation.nc")
        save_figure(plot_study(ds), Path(out_dir) / "cluster_formation.png")
    return ds


def _criterion_points(ax, ds: xr.Dataset, log_n, suffix: str, colour, label: str, offset: float) -> None:
    attrs = ds.attrs
    times = ds["formation_time" + suffix].values
    ax.plot(np.repeat(log_n + offset, times.shape[1]), times.ravel(), ".", color=colour, alpha=0.45, ms=5)
    ax.plot(log_n + offset, ds["mean_formation_time" + suffix].values, "o", color=colour, ms=7,
            label=f"{label}: seeds (dots), mean (o); fit slope {attrs['slope' + suffix]:.3f} "
                  f"± {attrs['slope_spread' + suffix]:.3f}")
    ax.plot(log_n, attrs["slope" + suffix] * log_n + attrs["intercept" + suffix], "--", color=colour, lw=1)
    ax.plot(log_n, ds["predicted_formation_time" + suffix].values, "-", color=colour, lw=1.8, alpha=0.8)


def plot_study(ds: xr.Dataset) -> Figure:
    """Formation time against log n for both criteria: seeds, means, free fits (dashed) and the
    prediction ``log n / (2 lambda_k*) + c`` with fitted ``c`` (solid)."""
    attrs = ds.attrs
    fig = Figure(figsize=(8, 6.2), layout="constrained")
    ax = fig.subplots()
    n = ds["n"].values
    log_n = np.log(n.astype(float))
    _criterion_points(ax, ds, log_n, "", "C0", r"$2\pi|\hat\rho_{{k^*}}| > 1/2$", -0.03)
    _criterion_points(ax, ds, log_n, "_any_mode", "C3", r"$\max_k 2\pi|\hat\rho_k| > 1/2$", 0.03)
    ax.plot([], [], "k-",
            label=rf"prediction $\log n / (2\lambda_{{k^*}}) + c$, slope {attrs['theoretical_slope']:.3f}")
    ax.plot([], [], "k--", lw=1, label="least-squares fit of the means")
    ax.set_xticks(log_n)
    ax.set_xticklabels([f"$2^{{{int(round(math.log2(v)))}}}$" for v in n])
    ax.set_xlabel("number of particles $n$ (log scale)")
    ax.set_ylabel("cluster formation time $t$")
    ax.set_title(rf"{str(attrs['attention']).upper()}, $\beta$ = {attrs['beta']:g}, $k^*$ = {attrs['k_star']}, "
                 rf"$\lambda_{{k^*}}$ = {attrs['lambda_k_star']:.4f}; i.i.d. uniform, {attrs['seeds']} seeds"
                 f"\nruns whose mode $k^*$ never reaches 1/2: {attrs['not_formed']} of {ds['formation_time'].size}",
                 fontsize="medium")
    ax.grid(True, alpha=0.3)
    legend_below(ax, ncol=1)
    return fig


def format_table(ds: xr.Dataset) -> str:
    """One line per n (both criteria), then the fitted and theoretical slopes."""
    attrs = ds.attrs
    lines = [f"{'n':>6} {'t_form k*':>9} {'sd':>6} {'formed':>7} {'pred.':>6} | {'t_form any':>10} {'sd':>6} "
             f"{'pred.':>6} | {'A(0) sqrt(n)':>12}"]
    for n in ds["n"].values:
        row = ds.sel(n=n)
        cells = []
        for suffix in ("", "_any_mode"):
            times = row["formation_time" + suffix].values
            formed = times[np.isfinite(times)]
            sd = float(np.std(formed, ddof=1)) if formed.size > 1 else math.nan
            cells.append((float(row["mean_formation_time" + suffix]), sd, formed.size, times.size,
                          float(row["predicted_formation_time" + suffix])))
        (m1, s1, f1, total, p1), (m2, s2, _, _, p2) = cells
        lines.append(f"{int(n):>6} {m1:>9.3f} {s1:>6.3f} {f1:>3}/{total:<3} {p1:>6.3f} | {m2:>10.3f} {s2:>6.3f} "
                     f"{p2:>6.3f} | {float(row.initial_amplitude.mean()) * math.sqrt(n):>12.3f}")
    lines.append(f"initial amplitudes (every stored mode): mean n A^2 = {attrs['mean_power']:.3f} "
                 f"± {attrs['mean_power_stderr']:.3f} (theory 1); slope of log RMS A against log n "
                 f"{attrs['amplitude_slope']:.3f} ± {attrs['amplitude_slope_stderr']:.3f} (theory -1/2)")
    lines.append(f"theory: slope 1/(2 lambda_k*) = {attrs['theoretical_slope']:.4f} "
                 f"(k* = {attrs['k_star']}, lambda_k* = {attrs['lambda_k_star']:.4f})")
    for suffix, name in (("", "k* mode "), ("_any_mode", "any mode")):
        lines.append(f"{name}: fitted slope {attrs['slope' + suffix]:.4f} ± {attrs['slope_spread' + suffix]:.4f} "
                     f"(per-seed sd), intercept {attrs['intercept' + suffix]:.3f}; c at theory slope "
                     f"{attrs['prediction_intercept' + suffix]:.3f}; not formed {attrs['not_formed' + suffix]}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- claims
def cluster_formation_claims(ds) -> list[Check]:
    attrs = ds.attrs
    return [fraction("Every run forms clusters (finite formation time, any mode)",
                     np.isfinite(ds.formation_time_any_mode.values),
                     source="theory: without noise every lambda_k > 0 (MATH.md §2.3); each run goes MARGIN = 4 "
                            "e-folds of lambda_k* past log(n) / (2 lambda_k*)"),
            within_errors("i.i.d. tokens start at n A_k(0)^2 = 1 (mean over runs and stored modes)", 1.0,
                          attrs["mean_power"], attrs["mean_power_stderr"],
                          "sqrt((1 - 1/n) / count): n A_k(0)^2 has mean 1 and variance 1 - 1/n"),
            within_errors("i.i.d. tokens start at amplitude ~ n^-1/2 (fitted slope of log RMS A_k(0) against log n)",
                          -0.5, attrs["amplitude_slope"], attrs["amplitude_slope_stderr"],
                          "a log RMS over m runs x modes has sd 1 / (2 sqrt m)")]


def main(argv=None) -> xr.Dataset:
    parser = argparse.ArgumentParser(description="Cluster formation time against n (i.i.d. uniform tokens).")
    parser.add_argument("--quick", action="store_true", help="small study")
    parser.add_argument("--beta", type=float, default=9.0)
    parser.add_argument("--out-dir", default="cluster-formation-study")
    args = parser.parse_args(argv)
    ds = run_study(quick=args.quick, out_dir=args.out_dir, beta=args.beta)
    print(format_table(ds))
    print(f"wall time {ds.attrs['wall_time']:.1f} s; wrote {args.out_dir}/cluster_formation.nc and .png")
    return ds


if __name__ == "__main__":
    main()
