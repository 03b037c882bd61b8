"""Study: the mean-field limit on S^2, particles -> PDE as n grows (MATH.md §1, §2.2, §4).

One spectral PDE run on S^2 (``meanfield.solve("sphere", ...)``, SA, ``beta = BETA``, ``lmax`` from
:data:`meanfield.defaults.GEOMETRY_DEFAULTS`) and many particle runs (d = 3, Q = K = V = I) start
from the same smooth law, ``INIT = "vmf:1@45,0+vmf:1@-30,150"`` (an equal mixture of two von
Mises–Fisher bumps of concentration 1).  The tokens are i.i.d. samples of the PDE's initial
density, read as its spherical-harmonic series (:func:`series_function`), tabulated at the centres of
``SAMPLE_RESOLUTION x 2 SAMPLE_RESOLUTION`` equal-angle cells (:func:`sampling_law`) and sampled by
:func:`meanfield.sampling.sample_tokens` cell by cell (a cell by value at the centre x exact area,
then uniformly in it).  That law differs from the series by ``O(h^2)``, ``h = pi / 512``: the
H^-2 distance between point masses at the cell centres and the series is 1.7e-7 (6.8e-7 with 256
latitudes, 4.2e-8 with 1024), far below the ``n^-1/2`` being measured (about 1e-3 at n = 1.3e5).  Particle runs switch
merging off (``collapse_tol = 0``) so every frame holds all ``n`` tokens.

Distance (MATH.md §4 asks for a stated weak norm).  W1 has no cheap exact form on S^2; the study
uses the negative Sobolev norm from orthonormal spherical-harmonic coefficients::

    ||mu - rho||_{H^-s}^2 = sum_{l=1}^{L} (1 + l(l+1))^{-s} sum_{m=-l}^{l} |mu_lm - rho_lm|^2,

with ``s = SOBOLEV_S = 2`` and ``L`` the PDE's ``lmax``.  Why ``s > 1``: for a point mass,
``sum_m |Y_lm(x)|^2 = (2l+1) / (4 pi)`` (addition theorem), so the untruncated series is
``sum_l (2l+1) l^{-2s} / (4 pi)``, finite iff ``s > 1``; only then does the norm of an empirical
measure not depend on where it is cut off.  With ``s = 2`` the omitted degrees ``l > L`` add at
most ``1 / (pi L^2)`` to the square for any two probability measures (``sum_m |mu_lm|^2 <=
(2l+1) / (4 pi)``), ``2e-5`` at ``L = 63`` — but for i.i.d. tokens their expected contribution is
that divided by ``4 n`` (see below), negligible.  Degree 0 is left out (both measures have mass 1).

Coefficients: ``mu_lm = sum_j w_j conj(Y_lm(x_j))`` by ducc0's adjoint non-uniform synthesis
(:func:`meanfield.analysis.sphere_point_coefficients`, as :meth:`meanfield.solvers.schemes.lagrangian.SphereLagrangian.coefficients`);
``rho_lm`` by analysing each saved PDE density frame with
:func:`meanfield.solvers.bases.sphere_basis.make_sphere_basis` (exact: the frames are synthesised from degree-``lmax``
states on a dealiased Gauss–Legendre grid).  Both in the package's m-major orthonormal layout
(``m >= 0`` stored, ``m > 0`` counted twice).

Expected error at t = 0.  For ``n`` i.i.d. tokens of law ``rho`` (weights ``1/n``),
``E |mu_lm - rho_lm|^2 = (E |Y_lm(X)|^2 - |rho_lm|^2) / n``, so::

    E ||mu - rho||_{H^-s}^2 = (1/n) sum_{l>=1} (1 + l(l+1))^{-s} ((2l+1) / (4 pi) - sum_m |rho_lm|^2)

exactly (:func:`iid_mean_square`): the root-mean-square error over seeds is ``C n^-1/2`` at
``t = 0`` and, by Dobrushin's estimate (MATH.md §4), stays ``~ n^-1/2`` with a constant growing
in ``t`` on a fixed window before clusters form.  The rate is the least-squares slope of
``log RMS_seeds`` against ``log n``.  Times: the PDE loses resolution at ``lmax = 63`` at
``t ~ 4.1`` for this law (clusters narrowing), so the full study stops at ``t = 3`` (peak density
5.5 x uniform, up from 1.34).

Measured (shared, loaded 2-core machine, spherical-harmonic particle path from n ~ 1e3): full preset
(n = 2^7 .. 2^17, 8 seeds) slopes -0.477, -0.471, -0.459 at t = 0, 1.5, 3 (one-seed spread 0.06, 0.05,
0.04), RMS error at n = 131072 of 7.1e-4, 1.36e-3, 2.66e-3 (1.2, 2.4, 4.7 x the t = 0 expectation);
3.8 minutes, the n = 131072 runs 13.6 s each.  Quick preset (n = 2^7 .. 2^11, t <= 2): with 8 seeds slopes
-0.539, -0.522, -0.490 at t = 0, 1, 2 (spread 0.18, 0.15, 0.13), about 4 s; it runs 32 seeds, so that the
slopes' standard error (spread / sqrt(seeds)) is ~0.02 and its 1e-3 tolerance ~0.08: slopes -0.491,
-0.478, -0.450 (spread 0.13, 0.11, 0.10), about 13 s.

Run: ``python -m meanfield.validation.studies.mean_field_sphere [--quick] [--out-dir DIR]`` or
``meanfield validate mean-field-sphere [--quick] [--beta B] [--n N1,N2,...] [--seeds S] [--init SPEC]`` (``--n``:
powers of two, at least two of them; ``--seeds`` at least 2; ``--init`` an S^2 density of ``--init`` of
``meanfield solve sphere``, which the PDE starts from and the tokens are drawn from: the t = 0 expectation is
computed from it).  The particle path (direct ``n^2`` sums or the
harmonic transform path) is whatever :func:`meanfield.solvers.runs.particle_run.simulate` picks; the Dataset
records it (attribute ``interaction``) and the wall time of every run.
"""

from __future__ import annotations

import math
import time as _time
from pathlib import Path

import ducc0
import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from meanfield.defaults import geometry_default
from meanfield.errors import require
from meanfield.app.storage import netcdf_safe, package_version
from meanfield.analysis import SOBOLEV_S, iid_mean_square, lmax_of, negative_sobolev_norm, sphere_point_coefficients
from meanfield.solvers.schemes.lagrangian import SHT_EPSILON
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.solve import solve
from meanfield.solvers.bases.sphere_basis import make_sphere_basis
from ..claims import Check, within_errors
from ..harness import (curve_colours, fit_with_spread, progress_bar, save_figure, saved_frames, study_main,
                      write_dataset)

INIT = "vmf:1@45,0+vmf:1@-30,150"
BETA = 4.0
#: Sobolev exponent of the weak norm (``s > 1`` for point masses; module docstring).
#: Latitudes of the equal-angle cells the tokens are sampled on (``2 x`` as many longitudes).
SAMPLE_RESOLUTION = 512
PDE_RTOL = 1e-10
PARTICLE_RTOL = 1e-8
SAVE_EVERY = 0.5
FULL = {"times": (0.0, 1.5, 3.0), "log2_n": tuple(range(7, 18)), "seeds": 8}
QUICK = {"times": (0.0, 1.0, 2.0), "log2_n": tuple(range(7, 12)), "seeds": 32}


def sampling_law(rho_lm: np.ndarray, resolution: int = SAMPLE_RESOLUTION) -> xr.DataArray:
    """The series ``sum rho_lm Y_lm`` at the centres of ``resolution x 2 resolution`` equal-angle cells, as
    the ``lat``/``lon`` DataArray :func:`meanfield.sampling.sample_tokens` samples cell by cell (tabulated once
    for every run; the same cells as a function ``f(theta, phi)`` with ``resolution`` would get)."""
    lat = -90.0 + 180.0 * (np.arange(resolution) + 0.5) / resolution
    lon = 360.0 * (np.arange(2 * resolution) + 0.5) / (2 * resolution)
    values = series_function(rho_lm)(*np.meshgrid(lat, lon, indexing="ij"))
    return xr.DataArray(values, coords={"lat": ("lat", lat, {"units": "degrees_north"}),
                                        "lon": ("lon", lon, {"units": "degrees_east"})},
                        dims=("lat", "lon"), name="density")


def series_function(rho_lm: np.ndarray):
    """``f(lat, lon)`` (degrees, any shape) evaluating ``sum_lm rho_lm Y_lm`` exactly (ducc0 ``synthesis_general``)."""
    lmax = lmax_of(rho_lm)
    alm = np.ascontiguousarray(np.asarray(rho_lm, dtype=complex)[None])

    def density(lat, lon):
        lat, lon = np.broadcast_arrays(np.asarray(lat, dtype=float), np.asarray(lon, dtype=float))
        loc = np.stack((np.radians(90.0 - lat.ravel()), np.mod(np.radians(lon.ravel()), 2 * math.pi)), axis=1)
        values = ducc0.sht.synthesis_general(alm=alm, spin=0, lmax=lmax, loc=np.ascontiguousarray(loc),
                                             epsilon=SHT_EPSILON)[0]
        return values.reshape(lat.shape)

    return density


# ------------------------------------------------------------------------------------------------ study
def _check_times(times) -> tuple:
    times = tuple(float(t) for t in times)
    require(len(times) >= 1 and all(t >= 0 and abs(t / SAVE_EVERY - round(t / SAVE_EVERY)) < 1e-9 for t in times)
            and max(times) > 0, f"study times must be non-negative multiples of {SAVE_EVERY}, one of them positive")
    return times


def pde_coefficients(beta: float, attention: str, times, lmax: int, init: str = INIT) -> np.ndarray:
    """``rho_lm`` of the PDE from ``init`` at the study times, shape ``(time, nalm)``; raises if the run stopped
    early."""
    run = solve("sphere", attention=attention, beta=beta, resolution=lmax, init=init, seed=0,
                t_final=float(max(times)), save_every=SAVE_EVERY, rtol=PDE_RTOL)
    require(run.attrs["stop_reason"] == "completed",
            f"PDE run (beta = {beta:g}) stopped early: {run.attrs['stop_reason']}")
    basis = make_sphere_basis(lmax)
    return np.stack([basis.analyse(frame) for frame in saved_frames(run, "density", times)])


def particle_errors(rho_lm: np.ndarray, law, beta: float, attention: str, times, n: int, seed: int):
    """H^-s errors of one particle run against ``rho_lm`` (one per study time), its wall time and interaction."""
    run = simulate(dim=3, n=n, attention=attention, beta=beta, init=law, seed=seed,
                   t_final=float(max(times)), save_every=SAVE_EVERY, rtol=PARTICLE_RTOL, collapse_tol=0.0)
    require(run.attrs["stop_reason"] == "completed", f"particle run stopped early: {run.attrs['stop_reason']}")
    positions, weights = saved_frames(run, "positions", times), run["weights"].values
    lmax = lmax_of(rho_lm[0])
    errors = [negative_sobolev_norm(sphere_point_coefficients(positions[i], weights, lmax), rho_lm[i])
              for i in range(len(times))]
    return np.array(errors), float(run.attrs["wall_time"]), str(run.attrs["interaction"])


def slopes(error: xr.DataArray) -> dict:
    """Per time: least-squares slope and intercept of ``log RMS_seeds`` against ``log n``, and the spread
    (std, ddof 1) of the slopes fitted to each seed alone."""
    log_n = np.log(error["n"].values.astype(float))
    values = error.transpose("time", "n", "seed").values
    out = {key: np.full(values.shape[0], np.nan) for key in ("slope", "intercept", "slope_spread")}
    for t in range(values.shape[0]):
        rms = np.sqrt(np.mean(values[t] ** 2, axis=-1))
        out["slope"][t], out["intercept"][t], out["slope_spread"][t] = fit_with_spread(log_n, np.log(rms),
                                                                                       np.log(values[t]))
    out["slope_stderr"] = out["slope_spread"] / math.sqrt(values.shape[-1])
    return out


def check_parameters(sizes, seeds: int) -> None:
    """The slopes need two sizes and their standard error two seeds (the spread of one-seed slopes)."""
    require(len(sizes) >= 2, f"--n must give at least two sizes for this study: the rate is a fitted slope "
                             f"(got {len(sizes)})")
    require(seeds >= 2, f"--seeds must be >= 2 for this study: the slopes' standard error is their spread over "
                        f"seeds (got {seeds})")


def run_study(quick: bool = False, out_dir="mean-field-sphere-study", beta: float = BETA, attention: str = "sa",
              times=None, log2_n=None, seeds=None, init: str = INIT) -> xr.Dataset:
    """The S^2 mean-field study (module docstring) from the S^2 density ``init`` (default ``INIT``); writes
    ``out_dir/mean_field_sphere.{nc,png}`` unless ``out_dir`` is None.  The claims follow every parameter: the
    t = 0 expectation is computed from the PDE's own initial coefficients and the slopes' standard error from
    the seeds.

    Variables: ``error(time, n, seed)``: ``||mu^n_t - rho_t||_{H^-s}``; ``error_rms(time, n)`` over
    seeds; ``slope(time)``, ``intercept``, ``slope_spread`` (one-seed scatter), ``slope_stderr``;
    ``iid_theory(n)``: ``sqrt(iid_mean_square(rho_0) / n)``, the expected RMS at ``t = 0``;
    ``particle_seconds(n, seed)``: wall time of each particle run.
    """
    preset = QUICK if quick else FULL
    times = _check_times(preset["times"] if times is None else times)
    sizes = [2 ** p for p in (preset["log2_n"] if log2_n is None else log2_n)]
    seed_list = list(range(preset["seeds"] if seeds is None else seeds))
    check_parameters(sizes, len(seed_list))
    lmax = int(geometry_default("sphere", "resolution"))
    start = _time.perf_counter()
    pde_times = (0.0,) + tuple(t for t in times if t != 0.0)    # the initial law is always needed
    pde_lm = pde_coefficients(float(beta), attention, pde_times, lmax, init)
    pde_seconds = _time.perf_counter() - start
    initial, rho_lm = pde_lm[0], pde_lm[[pde_times.index(t) for t in times]]
    law = sampling_law(initial)
    error = np.full((len(times), len(sizes), len(seed_list)), np.nan)
    seconds = np.full((len(sizes), len(seed_list)), np.nan)
    interactions = set()
    with progress_bar(len(sizes) * len(seed_list), "S^2 mean-field runs") as bar:
        for i, n in enumerate(sizes):
            for s, seed in enumerate(seed_list):
                error[:, i, s], seconds[i, s], interaction = particle_errors(rho_lm, law, beta, attention, times, n,
                                                                             seed)
                interactions.add(interaction)
                bar.update()
    coords = {"time": list(times), "n": sizes, "seed": seed_list}
    ds = xr.Dataset({"error": (("time", "n", "seed"), error, {"long_name": "||mu_n - rho||_{H^-s}"}),
                     "particle_seconds": (("n", "seed"), seconds, {"units": "s"})}, coords=coords)
    ds["error_rms"] = np.sqrt((ds["error"] ** 2).mean("seed"))
    ds["iid_theory"] = ("n", np.sqrt(iid_mean_square(initial) / np.asarray(sizes, dtype=float)),
                        {"long_name": "expected RMS error of i.i.d. tokens at t = 0"})
    for name, values in slopes(ds["error"]).items():
        ds[name] = ("time", values)
    ds.attrs = netcdf_safe({
        "study": "mean-field-sphere", "attention": attention, "beta": float(beta), "init": init, "lmax": lmax,
        "norm": f"H^-s, s = {SOBOLEV_S:g}: sum_(l=1..lmax) (1 + l(l+1))^-s sum_m |mu_lm - rho_lm|^2",
        "sobolev_s": SOBOLEV_S, "sample_resolution": SAMPLE_RESOLUTION, "pde_rtol": PDE_RTOL,
        "particle_rtol": PARTICLE_RTOL, "save_every": SAVE_EVERY, "seeds": len(seed_list), "quick": quick,
        "times": list(times), "sizes": sizes, "pde_scheme": "spectral", "stepper": "dopri5", "collapse_tol": 0.0,
        "sampling": "iid from the PDE's initial series on equal-angle cells; seeds 0..seeds-1",
        "interaction": ",".join(sorted(interactions)), "pde_seconds": pde_seconds,
        "slope_spread_method": "std (ddof 1) of per-seed least-squares slopes",
        "package_version": package_version(), "wall_time": _time.perf_counter() - start})
    if out_dir is not None:
        write_dataset(ds, Path(out_dir) / "mean_field_sphere.nc")
        save_figure(plot_study(ds), Path(out_dir) / "mean_field_sphere.png")
    return ds


# --------------------------------------------------------------------------------------- figure, table
def plot_study(ds: xr.Dataset) -> Figure:
    """Log-log H^-s error against n, one colour per time: seed RMS with min-max bars, fitted lines, the
    expected t = 0 error and an ``n^-1/2`` reference."""
    from meanfield.plotting.style import legend_below

    fig = Figure(figsize=(7.5, 6.2), layout="constrained")
    ax = fig.subplots()
    n = ds["n"].values.astype(float)
    for time, colour in zip(ds["time"].values, curve_colours(ds.sizes["time"])):
        at = ds.sel(time=time)
        rms, err = at["error_rms"].values, at["error"].values
        ax.errorbar(n, rms, yerr=(rms - err.min(axis=-1), err.max(axis=-1) - rms), fmt="o", color=colour, ms=4,
                    capsize=2, label=f"t = {time:g}: slope {float(at.slope):+.3f} ± {float(at.slope_spread):.3f}")
        ax.plot(n, np.exp(float(at.intercept)) * n ** float(at.slope), "--", color=colour, lw=1.2)
    ax.plot(n, ds["iid_theory"].values, ":", color="k", lw=1.5, label="expected at t = 0")
    top = float(ds["error_rms"].max())
    ax.plot(n, 1.6 * top * (n / n[0]) ** -0.5, "-", color="grey", lw=1.2, label=r"$n^{-1/2}$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("number of particles $n$")
    ax.set_ylabel(rf"$\|\mu^n_t - \rho_t\|_{{H^{{-{ds.attrs['sobolev_s']:g}}}}}$ (RMS over seeds)")
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: not labels[i].startswith("t = "))  # times first
    legend_below(ax, [handles[i] for i in order], [labels[i] for i in order], ncol=2)
    fig.suptitle(f"Mean-field limit on $S^2$: {str(ds.attrs['attention']).upper()}, beta = {ds.attrs['beta']:g}, "
                 f"init {ds.attrs['init']}, lmax {ds.attrs['lmax']}, {ds.attrs['seeds']} seeds", fontsize="medium")
    return fig


def format_table(ds: xr.Dataset) -> str:
    """One line per time: the fitted slope, the RMS error at the largest n, the t = 0 expectation; then timings."""
    n_max = int(ds["n"].values[-1])
    lines = [f"{'time':>5} {'slope ± spread':>18} {'RMS error (n=' + str(n_max) + ')':>22} {'/ expected t=0':>15}"]
    expected = float(ds["iid_theory"].isel(n=-1))
    for time in ds["time"].values:
        row = ds.sel(time=time)
        rms = float(row["error_rms"].isel(n=-1))
        lines.append(f"{time:>5g} {float(row.slope):>+10.3f} ± {float(row.slope_spread):<5.3f} {rms:>22.3e} "
                     f"{rms / expected:>15.3f}")
    seconds = ds["particle_seconds"].mean("seed").values
    lines.append(f"particle run wall time (mean over seeds, {ds.attrs['interaction']}): "
                 + ", ".join(f"n={int(n)}: {s:.2f} s" for n, s in zip(ds["n"].values, seconds))
                 + f"; PDE {ds.attrs['pde_seconds']:.1f} s")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- claims
def mean_field_sphere_claims(ds) -> list[Check]:
    seeds = ds.sizes["seed"]
    checks = [within_errors(f"i.i.d. tokens on S^2: H^-2 error falls like n^-1/2 (fitted slope, t = {float(t):g})",
                            -0.5, ds.slope.sel(time=t), ds.slope_stderr.sel(time=t),
                            "one-seed slope spread / sqrt(seeds)", dof=seeds - 1) for t in ds["time"].values[:2]]
    ratios = ((ds.error.sel(time=0.0) / ds.iid_theory) ** 2).values.ravel()
    checks.append(within_errors("t = 0: mean square error equals the i.i.d. expectation (mean over sizes and seeds of "
                                "error^2 / expectation)", 1.0, ratios.mean(),
                                ratios.std(ddof=1) / math.sqrt(ratios.size),
                                "spread of the (n, seed) ratios / sqrt(count)", dof=ratios.size - 1))
    return checks


def main(argv=None) -> xr.Dataset:
    return study_main(argv, "Mean-field limit study on S^2 (H^-2 error vs n).", "mean-field-sphere-study",
                      run_study, format_table, "mean_field_sphere")


if __name__ == "__main__":
    main()
