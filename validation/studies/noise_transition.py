"""Study: the noise phase transition on the circle (MATH.md §2.3): uniform or clustered against ``nu``.

With noise the uniform state is linearly stable iff ``nu > nu_# = max_k lambda_k(nu=0) / k^2``
(:func:`meanfield.theory.linear_noise_threshold`).  For each ``beta`` and each ``nu = ratio x nu_#`` the
PDE (pseudo-spectral: noise keeps the density smooth) runs from two starts, a small perturbation
of the uniform state (``perturbed:1e-3``) and a cluster (``vonmises:CLUSTER_KAPPA@0``), until the
order parameter::

    r = 2 pi max_{k >= 1} |rho_hat_k|      (0: uniform; 1: a point mass)

stops changing (relative change below ``STATIONARY_TOL`` over the last ``SETTLE`` time units, or the
time limit; the flag ``stationary`` says which).  Two starts ending apart reveal bistability
(hysteresis of a subcritical branch); here they agree.

Independent check of the clustered branch: a stationary state has zero flux ``rho X[rho] = nu rho'``, so
(MATH.md §2, §9)

    SA:  rho = (K*rho)^{1/(beta nu)} / Z,        USA:  rho = exp((K*rho) / (beta nu)) / Z,

solved by the package's one stationary solver (:func:`meanfield.solvers.stationary.stationary.circle_stationary_near`,
Newton–GMRES from the PDE's final state); ``fixed_point_gap`` is ``max |rho_PDE - rho_fixed| / mean``.

Output: ``noise_transition.nc`` (``order(beta, ratio, start)``, ``stationary``, ``fixed_point_gap``,
``final_time``) and ``noise_transition.png`` (the bifurcation diagram with ``nu_#`` marked).

Run: ``python -m meanfield.validation.studies.noise_transition [--quick] [--out-dir DIR]`` or
``meanfield validate noise-transition [--beta B1,B2,...] [--seed S]``.  The claims (one branch, no hysteresis) need
mode 1 alone unstable at 0.7 nu_#: ``max_{k >= 2} lambda_k(0) / k^2 < 0.7 nu_#``, which holds for SA up to
beta = 4.64 (:func:`mode_one_limit`); above, mode 2 grows too and a perturbed start may settle on two clusters, so
``--beta`` is refused there (:func:`check_betas`).
"""

from __future__ import annotations

import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from meanfield.attention_kind import attention_kind
from meanfield.errors import require
from meanfield.model import Model
from meanfield.plotting.style import outside_legend
from meanfield.app.storage import netcdf_safe, package_version
from meanfield.theory import linear_noise_threshold, dominant_mode, growth_rates
from meanfield.initial.circle import circle_density
from meanfield.solvers.schemes.circle import CircleSpectral
from meanfield.solvers.runs.runloop import COMPLETED, run
from meanfield.solvers.stationary.stationary import circle_stationary_near
from meanfield.solvers.steppers.steppers import make_stepper

from ..claims import Check, at_least, at_most
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..registry import STUDIES

CLUSTER_KAPPA = 5.0
STARTS = {"perturbed": "perturbed:1e-3", "clustered": f"vonmises:{CLUSTER_KAPPA:g}@0"}
STATIONARY_TOL = 1e-6
UNIFORM_LEVEL = 1e-4
FULL = {"betas": (1.0, 4.0), "ratios": (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 1.02, 1.05, 1.1, 1.2, 1.4),
        "attention": "sa", "resolution": 128, "max_time": 4000.0}
#: Enough points to show the curve: three on the clustered branch, three on the uniform one (about 25 s).
QUICK = {"betas": (1.0,), "ratios": (0.5, 0.7, 0.95, 1.05, 1.2, 1.4), "attention": "sa", "resolution": 64,
         "max_time": 600.0}


def order_parameter(coefficients: np.ndarray) -> np.ndarray:
    """``2 pi max_{k>=1} |rho_hat_k|`` along the last axis (``coefficients``: ``|rho_hat_k|``, k = 0, 1, ...)."""
    return 2 * math.pi * np.max(np.asarray(coefficients)[..., 1:], axis=-1)


def settle_time(model: Model) -> float:
    """Time scale of the slowest relevant mode: ``1 / max(|lambda_{k*}(nu)|, 1e-3)``."""
    rate = abs(float(growth_rates(model, [dominant_mode(model)])[0]))
    return 1.0 / max(rate, 1e-3)


def run_to_stationary(model: Model, init: str, resolution: int, max_time: float, seed: int = 0):
    """Run in chunks of ``20 x settle_time`` until ``r`` changes by less than ``STATIONARY_TOL`` (relative,
    or absolutely below ``UNIFORM_LEVEL``) over a chunk; returns ``(final density, r, t, stationary)``."""
    scheme = CircleSpectral(model, resolution)
    stepper = make_stepper("dopri5", scheme)
    state = scheme.state_from_density(circle_density(init, resolution, seed))
    chunk = min(max_time, max(20.0, 20.0 * settle_time(model)))
    t, previous = 0.0, None
    while t < max_time:
        record = run(scheme, stepper, state, chunk, chunk)
        if record.stop_reason != COMPLETED:
            raise RuntimeError(f"noise-transition run ({model}, {init}) stopped: {record.stop_reason}")
        state, t = record.state, t + chunk
        r = float(order_parameter(scheme.mode_amplitudes(state)))
        if previous is not None and abs(r - previous) <= STATIONARY_TOL * max(r, UNIFORM_LEVEL):
            return scheme.density(state), r, t, True
        previous = r
    return scheme.density(state), r, t, False


def fixed_point(model: Model, guess: np.ndarray) -> np.ndarray | None:
    """The stationary state nearest the grid density ``guess``, at the same angles (:func:`circle_stationary_near`);
    ``None`` if the solver fails."""
    return circle_stationary_near(model, guess)[1]


def claim_ratios(ratios) -> tuple[float, float]:
    """The ratios ``nu / nu_#`` the claims read: ``(above, below)``, 1.2 and 0.7 where swept, else the extremes."""
    ratios = np.asarray(ratios, dtype=float)
    return float(1.2 if 1.2 in ratios else ratios.max()), float(0.7 if 0.7 in ratios else ratios.min())


def mode_one_limit(attention: str, below: float) -> float:
    """The largest beta at which mode 1 alone is unstable at ``nu = below x nu_#``: ``max_{k >= 2} lambda_k(0) / k^2
    = below x nu_#`` (MATH.md §2.3), found by bisection (the left side grows with beta)."""
    from scipy.optimize import brentq

    def excess(beta: float) -> float:
        model = Model(attention, beta, 0.0, 2)
        modes = np.arange(2, 65)
        return float(np.max(growth_rates(model, modes) / modes ** 2)) / linear_noise_threshold(model) - below

    top = attention_kind(attention).beta_max if math.isfinite(attention_kind(attention).beta_max) else 700.0
    return brentq(excess, 1e-3, top, xtol=1e-6) if excess(top) > 0 else top


def check_betas(betas, attention: str, ratios) -> tuple:
    """``betas`` as floats, refused outside the claims' range: ``beta > 0`` (a transition to cross) and mode 1 the
    only unstable mode at the ratio below ``nu_#`` the claims read (else a perturbed start may settle on a
    multi-cluster state, and one branch without hysteresis is not what the theory predicts)."""
    betas = tuple(float(beta) for beta in betas)
    limit = mode_one_limit(attention, claim_ratios(ratios)[1])
    require(len(betas) >= 1 and all(0 < beta <= limit for beta in betas),
            f"--beta must be in (0, {limit:.4g}] for this study: above {limit:.4g} mode 2 also grows at "
            f"nu = {claim_ratios(ratios)[1]:g} nu_# ({attention.upper()}), so a perturbed start may settle on a "
            f"two-cluster state (got {', '.join(f'{beta:g}' for beta in betas)})")
    return betas


def run_study(quick: bool = False, out_dir="noise-transition-study", seed: int = 0, betas=None) -> xr.Dataset:
    """The sweep of the module docstring; writes the table and the figure, returns the table.  ``betas`` replace
    the preset's (:func:`check_betas`: within the range the claims hold in); ``seed`` draws the perturbed start."""
    settings = dict(QUICK if quick else FULL)
    if betas is not None:
        settings["betas"] = check_betas(betas, settings["attention"], settings["ratios"])
    betas, ratios, starts = settings["betas"], settings["ratios"], list(STARTS)
    shape = (len(betas), len(ratios), len(starts))
    order, stationary, final_time, gap = np.zeros(shape), np.zeros(shape, dtype=np.int8), np.zeros(shape), np.full(shape, np.nan)
    critical = np.array([linear_noise_threshold(Model(settings["attention"], beta, 0.0, 2)) for beta in betas])
    start_time = _time.perf_counter()
    bar = progress_bar(int(np.prod(shape)), "noise transition")
    for i, beta in enumerate(betas):
        for j, ratio in enumerate(ratios):
            model = Model(settings["attention"], beta, ratio * critical[i], 2)
            for s, start in enumerate(starts):
                density, r, t, settled = run_to_stationary(model, STARTS[start], settings["resolution"],
                                                           settings["max_time"], seed)
                order[i, j, s], final_time[i, j, s], stationary[i, j, s] = r, t, settled
                if r > UNIFORM_LEVEL:
                    solution = fixed_point(model, density)
                    if solution is not None:
                        gap[i, j, s] = float(np.max(np.abs(solution - density)) * 2 * math.pi)
                bar.update()
    bar.close()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dims = ("beta", "ratio", "start")
    ds = xr.Dataset({"order": (dims, order, {"long_name": "r = 2 pi max_k>=1 |rho_hat_k| at the end"}),
                     "stationary": (dims, stationary), "final_time": (dims, final_time),
                     "fixed_point_gap": (dims, gap, {"long_name": "max |rho_PDE - rho_fixed| / mean (NaN: uniform)"}),
                     "nu_sharp": ("beta", critical)},
                    coords={"beta": list(betas), "ratio": list(ratios), "start": starts},
                    attrs=netcdf_safe(dict(settings, seed=seed, quick=int(quick), package_version=package_version(),
                                           wall_time=_time.perf_counter() - start_time,
                                           starts=str(STARTS), stationary_tol=STATIONARY_TOL,
                                           command=STUDIES["noise-transition"].command(quick, out_dir, {
                                               "beta": None if betas is None
                                               else ",".join(f"{beta:g}" for beta in settings["betas"]),
                                               "seed": seed or None}))))
    write_dataset(ds, out / "noise_transition.nc")
    save_figure(plot_study(ds), out / "noise_transition.png")
    return ds


def plot_study(ds: xr.Dataset) -> Figure:
    """Bifurcation diagram: ``r`` against ``nu / nu_#`` for both starts, the threshold at 1; points whose
    run was not stationary by the time limit are drawn hollow."""
    betas = ds.beta.values
    fig = Figure(figsize=(5.2 * len(betas) + 2.2, 4.2), layout="constrained")
    axes = fig.subplots(1, len(betas), squeeze=False)[0]
    for ax, beta in zip(axes, betas):
        for start, marker, size, colour in zip(ds.start.values, ("o", "x"), (7, 7), ("tab:blue", "tab:orange")):
            cell = ds.sel(beta=beta, start=start)
            order, settled = cell.order.values, cell.stationary.values.astype(bool)
            ax.plot(ds.ratio, order, color=colour, lw=1, alpha=0.6)
            ax.plot(ds.ratio[settled], order[settled], ls="", marker=marker, ms=size, color=colour,
                    label=f"from {start} start")
            if (~settled).any():
                ax.plot(ds.ratio[~settled], order[~settled], ls="", marker=marker, ms=size, color=colour,
                        mfc="none", alpha=0.6)
        if not ds.stationary.sel(beta=beta).values.all():
            ax.plot([], [], ls="", marker="o", ms=7, color="grey", mfc="none",
                    label=f"not stationary by t = {float(ds.attrs['max_time']):g}")
        ax.axvline(1.0, color="k", ls="--", lw=1,
                   label=rf"$\nu_\#$ = {float(ds.nu_sharp.sel(beta=beta)):.4g} (linear theory)")
        ax.set(xlabel=r"noise relative to the threshold, $\nu / \nu_\#$",
               ylabel=r"order parameter $r = 2\pi \max_{k \geq 1} |\hat\rho_k|$ at the end",
               title=rf"{ds.attrs['attention'].upper()}, $\beta$ = {beta:g}: stationary state against noise")
        ax.set_ylim(-0.03, 1.0)
        ax.grid(True, alpha=0.3)
    outside_legend(axes[-1])
    return fig


def format_table(ds: xr.Dataset) -> str:
    lines = [f"{'beta':>5} {'nu/nu_#':>8} " + " ".join(f"{'r(' + s + ')':>15} {'t':>7}" for s in ds.start.values)
             + f" {'fixed-point gap':>16}"]
    for beta in ds.beta.values:
        for ratio in ds.ratio.values:
            cell = ds.sel(beta=beta, ratio=ratio)
            parts = " ".join(f"{float(cell.order.sel(start=s)):15.6g} {float(cell.final_time.sel(start=s)):7.0f}"
                             + ("" if int(cell.stationary.sel(start=s)) else "*") for s in ds.start.values)
            lines.append(f"{beta:5g} {ratio:8.3g} {parts} {float(np.nanmax(cell.fixed_point_gap.values)) if np.any(np.isfinite(cell.fixed_point_gap.values)) else math.nan:16.3g}")
    lines.append("(* not stationary by the time limit)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- claims
def noise_claims(ds) -> list[Check]:
    above_ratio, below_ratio = claim_ratios(ds["ratio"].values)
    clustered = ds.order.sel(ratio=below_ratio)
    rule = (f"theory: a run stops once r moves by less than STATIONARY_TOL = {STATIONARY_TOL:g} (relative, "
            f"or absolute below UNIFORM_LEVEL = {UNIFORM_LEVEL:g}) over a chunk of 20 relaxation times")
    return [at_most(f"nu = {above_ratio:g} nu_#: both starts relax to the uniform state (largest order parameter)",
                    ds.order.sel(ratio=above_ratio).max(), STATIONARY_TOL * UNIFORM_LEVEL,
                    source=rule + "; above nu_# every mode decays (MATH.md §2.3), so r ends below the rule's step"),
            at_least(f"nu = {below_ratio:g} nu_#: both starts end clustered (smallest order parameter)",
                     clustered.min(), UNIFORM_LEVEL, "> 0 (clustered)",
                     source=f"theory: below nu_# the uniform state is unstable (MATH.md §2.3): r stays above "
                            f"UNIFORM_LEVEL = {UNIFORM_LEVEL:g}, the level the study calls uniform"),
            at_most(f"nu = {below_ratio:g} nu_#: no hysteresis (order parameter of the two starts)",
                    abs(ds.order.sel(ratio=below_ratio, start="perturbed")
                        - ds.order.sel(ratio=below_ratio, start="clustered")).max(),
                    2 * STATIONARY_TOL * float(clustered.max()),
                    source=rule + ": two runs to one stationary state end within twice that of each other"),
            at_most(f"nu = {below_ratio:g} nu_#: the end state is the zero-flux fixed point (largest gap / mean)",
                    ds.fixed_point_gap.sel(ratio=below_ratio).max(), STATIONARY_TOL,
                    source=rule + ", so the density is within about that of the stationary state; Newton-Krylov "
                                  "solves the zero-flux equation to f_tol = 1e-12")]


def main(argv=None) -> xr.Dataset:
    return study_main(argv, "Noise phase transition: stationary order parameter against nu / nu_#.",
                      "noise-transition-study", run_study, format_table, "noise_transition")


if __name__ == "__main__":
    main()
