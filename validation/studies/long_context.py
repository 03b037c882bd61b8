"""Study: the long-context transition of one SA layer at ``beta = gamma log n`` (MATH.md §7).

* **Limit.**  For ``rho`` in ``RHOS`` the ``n -> oo`` output cosine of equiangular tokens against
  ``gamma`` (:func:`meanfield.long_context.limit_cosine`): 1 below ``gamma_c = 1/(1 - rho)``,
  ``4 rho / (1 + 3 rho)`` at it, ``rho`` above.
* **Finite n.**  The exact cosine (:func:`~meanfield.long_context.one_layer_cosine`) at
  ``n = 1e2 ... 1e18`` converging to it, and ``gamma_half(n)``, where the cosine crosses the midpoint
  ``(1 + rho) / 2`` (theory: ``-> gamma_c`` like ``1 / log n``).
* **Check.**  The formula against the layer applied directly to explicit vectors
  (:func:`~meanfield.long_context.gram_output_cosines`): the largest difference over the measured
  pairs and over ``beta = gamma log n`` at ``gamma in {1/2, 1, 3/2} gamma_c`` (``rho = RHO``), per ``n``.
* **Monte Carlo.**  One layer on ``n`` i.i.d. tokens (:func:`~meanfield.long_context.monte_carlo_layer`,
  ``MC_CASES``): ``rho = RHO`` (the "almost simplex" ``sqrt(rho) e_0 + sqrt(1 - rho) z_i``, ``z_i``
  uniform on ``S^{d-1}``, at ``d = DIM`` and ``4 DIM``), whose collapse stops near ``gamma_c`` like the
  equiangular formula at the same ``n`` (smeared at moderate ``d``: the pairwise cosines spread by
  ``(1 - rho)/sqrt(d)``; sharper at the larger ``d``.  At fixed ``d`` the nearest neighbours, at
  ``1 - <x_i, x_j> ~ n^(-2/(d-1))``, take over as ``n`` grows, so the ``log n`` transition belongs to
  ``d`` large against ``log n``), and ``rho = 0``, tokens uniform on ``S^{d-1}``: no common direction, so collapse stops at a ``gamma``
  that goes to 0 as ``n`` grows (the self tilt ``~ beta / d`` beats the mean, ``|mean| ~ n^-1/2``).

Output (``out_dir``): ``long_context.nc`` and ``long_context.png`` (limit against gamma for each rho;
finite-n curves converging to it; Monte Carlo against the formula; uniform tokens).

Run: ``python -m meanfield.validation.studies.long_context [--quick] [--out-dir DIR]`` or ``meanfield validate long-context``.
"""

from __future__ import annotations

import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.figure import Figure
from scipy.optimize import brentq

from meanfield.long_context import (critical_gamma, gram_output_cosines, gram_tokens, iid_cosine_estimate,
                                    limit_cosine, midpoint_gamma, monte_carlo_layer, one_layer_cosine)
from meanfield.plotting.style import outside_legend
from meanfield.app.storage import netcdf_safe, package_version
from meanfield.errors import require

from ..claims import EPSILON, Check, at_most, close, equal
from ..harness import save_figure, study_main, write_dataset
from ..registry import STUDIES

RHOS = (0.25, 0.5, 0.75)
#: The rho of the finite-n panel, the Gram check and the Monte Carlo.
RHO = 0.5
DIM = 16
#: Monte Carlo cases ``(rho, d)``: the almost simplex at ``DIM`` and at a larger d (closer to
#: equiangular), and uniform tokens on ``S^{DIM-1}``.
MC_CASES = ((RHO, DIM), (RHO, 4 * DIM), (0.0, DIM))
SEED = 0
#: Context lengths of the exact formula.
N_FORMULA = (1e2, 1e3, 1e4, 1e6, 1e9, 1e12, 1e18)
#: Multiples of gamma_c at which the Gram check runs.
CHECK_GAMMAS = (0.5, 1.0, 1.5)
_MC_SMALL = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2)
FULL = {"gamma_max": 5.0, "gamma_points": 501, "n_check": (10, 100, 1000, 10_000), "n_mc": (100, 1000, 10_000),
        "samples": {100: 8, 1000: 4, 10_000: 1}, "gamma_mc": _MC_SMALL + tuple(np.arange(0.25, 4.01, 0.25))}
QUICK = {"gamma_max": 5.0, "gamma_points": 201, "n_check": (10, 100, 1000), "n_mc": (100, 300, 1000),
         "samples": {100: 2, 300: 1, 1000: 1}, "gamma_mc": (0.0, 0.02, 0.1) + tuple(np.arange(0.5, 4.01, 0.5))}


# --------------------------------------------------------------------------------------- pieces
def gamma_half_formula(rho: float, n: float) -> float:
    """``gamma`` where the exact cosine at ``n`` crosses ``(1 + rho) / 2`` (it decreases in gamma)."""
    target = 0.5 * (1.0 + rho)
    return brentq(lambda g: one_layer_cosine(rho, n, g * math.log(n)) - target, 0.0, 50.0 * critical_gamma(rho),
                  xtol=1e-13)


def gamma_half_sampled(gammas: np.ndarray, cosines: np.ndarray, target: float) -> float:
    """First crossing of ``target`` from above by linear interpolation; NaN if the curve never crosses."""
    below = np.nonzero(cosines < target)[0]
    if below.size == 0 or below[0] == 0:
        return math.nan
    k = below[0]
    g0, g1, c0, c1 = gammas[k - 1], gammas[k], cosines[k - 1], cosines[k]
    return float(g0 + (target - c0) * (g1 - g0) / (c1 - c0))


def gram_error(rho: float, n: int) -> float:
    """Largest ``|direct - formula|`` over the measured output pairs and ``CHECK_GAMMAS x gamma_c``."""
    tokens = gram_tokens(n)
    off = ~np.eye(tokens.size, dtype=bool)
    worst = 0.0
    for multiple in CHECK_GAMMAS:
        beta = multiple * critical_gamma(rho) * math.log(n)
        cosines = gram_output_cosines(rho, n, beta, tokens)
        worst = max(worst, float(np.abs(cosines[off] - one_layer_cosine(rho, n, beta)).max()))
    return worst


def mc_samples(settings: dict, n: int) -> int:
    """Monte Carlo draws at ``n`` tokens: the preset's count at ``n``, else that of its largest size below ``n`` (its
    smallest size's when ``n`` is below them all): the cost ``samples n^2`` grows with ``n``, as in the presets."""
    table = settings["samples"]
    if n in table:
        return int(table[n])
    below = [size for size in table if size <= n]
    return int(table[max(below)] if below else table[min(table)])


def _monte_carlo(settings: dict, seed: int) -> dict:
    gammas = np.asarray(settings["gamma_mc"], dtype=float)
    ns = settings["n_mc"]
    shape = (len(MC_CASES), len(ns), gammas.size)
    out = {key: np.zeros(shape) for key in ("mc_cosine", "mc_cosine_std", "mc_self_weight")}
    out["mc_cosine_before"] = np.zeros(shape[:2])
    out["mc_gamma_half"] = np.zeros(shape[:2])
    out["mc_seconds"] = np.zeros(shape[:2])
    for i, (rho, dim) in enumerate(MC_CASES):
        for j, n in enumerate(ns):
            start = _time.perf_counter()
            sample = monte_carlo_layer(n, dim, gammas, seed=seed, samples=mc_samples(settings, n), rho=rho)
            out["mc_seconds"][i, j] = _time.perf_counter() - start
            out["mc_cosine"][i, j], out["mc_cosine_std"][i, j] = sample.cosine_after, sample.cosine_after_std
            out["mc_self_weight"][i, j], out["mc_cosine_before"][i, j] = sample.self_weight, sample.cosine_before[0]
            out["mc_gamma_half"][i, j] = gamma_half_sampled(gammas, sample.cosine_after, 0.5 * (1.0 + rho))
    return out


# ---------------------------------------------------------------------------------------- study
def run_study(quick: bool = False, out_dir="long-context-study", seed: int = SEED, n_mc=None) -> xr.Dataset:
    """The study of the module docstring; writes ``long_context.nc`` and ``.png``, returns the table.  ``seed``: the
    Monte Carlo's draws; ``n_mc``: its context lengths (default the preset's; draws per length :func:`mc_samples`)."""
    settings = dict(QUICK if quick else FULL)
    if n_mc is not None:
        require(len(n_mc) >= 1 and all(int(n) == n and n >= 2 for n in n_mc),
                f"--n must be integers >= 2 for this study (got {', '.join(f'{n:g}' for n in n_mc)})")
        settings["n_mc"] = tuple(sorted({int(n) for n in n_mc}))
    command = STUDIES["long-context"].command(quick, out_dir, {
        "n": None if n_mc is None else ",".join(str(n) for n in settings["n_mc"]), "seed": None if seed == SEED else seed})
    start = _time.perf_counter()
    rhos = np.array(RHOS)
    gammas = np.linspace(0.0, settings["gamma_max"], settings["gamma_points"])
    n_formula = np.array(N_FORMULA)
    finite = one_layer_cosine(rhos[:, None, None], n_formula[None, :, None],
                              gammas[None, None, :] * np.log(n_formula)[None, :, None])
    half = np.array([[gamma_half_formula(rho, n) for n in n_formula] for rho in rhos])
    check_start = _time.perf_counter()
    errors = np.array([gram_error(RHO, n) for n in settings["n_check"]])
    check_seconds = _time.perf_counter() - check_start
    mc = _monte_carlo(settings, seed)
    gamma_mc = np.asarray(settings["gamma_mc"], dtype=float)
    n_mc = np.array(settings["n_mc"], dtype=float)
    ds = xr.Dataset(
        {"limit_cosine": (("rho", "gamma"), limit_cosine(rhos[:, None], gammas[None, :]),
                          {"long_name": "n -> oo output cosine (MATH.md §7)"}),
         "critical_gamma": ("rho", critical_gamma(rhos), {"long_name": "1 / (1 - rho)"}),
         "critical_cosine": ("rho", limit_cosine(rhos, critical_gamma(rhos)), {"long_name": "4 rho / (1 + 3 rho)"}),
         "cosine": (("rho", "n", "gamma"), finite, {"long_name": "exact output cosine at n tokens"}),
         "cosine_at_critical": (("rho", "n"), one_layer_cosine(rhos[:, None], n_formula[None, :],
                                                               (critical_gamma(rhos)[:, None]) * np.log(n_formula))),
         "gamma_half": (("rho", "n"), half, {"long_name": "gamma where the exact cosine crosses (1 + rho) / 2"}),
         "gram_error": ("n_check", errors, {"long_name": "max |direct layer - formula| over measured pairs"}),
         "gram_pairs": ("n_check", [gram_tokens(n).size for n in settings["n_check"]],
                        {"long_name": "tokens whose output pairs were measured"}),
         "mc_cosine": (("mc_case", "n_mc", "gamma_mc"), mc["mc_cosine"],
                       {"long_name": "mean pairwise output cosine, i.i.d. tokens"}),
         "mc_cosine_std": (("mc_case", "n_mc", "gamma_mc"), mc["mc_cosine_std"]),
         "mc_self_weight": (("mc_case", "n_mc", "gamma_mc"), mc["mc_self_weight"]),
         "mc_cosine_before": (("mc_case", "n_mc"), mc["mc_cosine_before"]),
         "mc_gamma_half": (("mc_case", "n_mc"), mc["mc_gamma_half"],
                           {"long_name": "gamma where the Monte Carlo cosine crosses (1 + rho) / 2"}),
         "mc_formula": (("n_mc", "gamma_mc"), one_layer_cosine(RHO, n_mc[:, None], gamma_mc[None, :] *
                                                              np.log(n_mc)[:, None]),
                        {"long_name": f"exact equiangular cosine at rho = {RHO}, same n"}),
         "mc_formula_gamma_half": ("n_mc", [gamma_half_formula(RHO, n) for n in n_mc]),
         "mc_samples": ("n_mc", [mc_samples(settings, n) for n in settings["n_mc"]]),
         "mc_seconds": (("mc_case", "n_mc"), mc["mc_seconds"])},
        coords={"rho": rhos, "gamma": gammas, "n": n_formula, "n_check": list(settings["n_check"]),
                "mc_case": np.arange(len(MC_CASES)), "mc_rho": ("mc_case", [case[0] for case in MC_CASES]),
                "mc_dim": ("mc_case", [case[1] for case in MC_CASES]), "n_mc": n_mc, "gamma_mc": gamma_mc},
        attrs=netcdf_safe(dict(rho_check=RHO, seed=seed, quick=int(quick), check_gammas=str(CHECK_GAMMAS),
                               check_seconds=check_seconds, package_version=package_version(),
                               wall_time=_time.perf_counter() - start,
                               command=command)))
    out = Path(out_dir)   # write_dataset creates the folder
    write_dataset(ds, out / "long_context.nc")
    save_figure(plot_study(ds), out / "long_context.png")
    return ds


# --------------------------------------------------------------------------------------- figure
def _limit_steps(ax, rho: float, gamma_max: float, colour, label: str) -> None:
    """The discontinuous limit: 1 up to gamma_c (open end), the value at gamma_c (dot), rho after (open start)."""
    gc = critical_gamma(rho)
    ax.plot([0.0, gc], [1.0, 1.0], color=colour, lw=2.2, label=label)
    ax.plot([gc, gamma_max], [rho, rho], color=colour, lw=2.2)
    ax.plot([gc, gc], [1.0, rho], color=colour, lw=0.8, ls=":")
    ax.plot([gc, gc], [1.0, rho], ls="", marker="o", mfc="white", color=colour, ms=5)
    ax.plot([gc], [4 * rho / (1 + 3 * rho)], ls="", marker="o", color=colour, ms=6)


def _gamma_axis(ax, gamma_max: float) -> None:
    ax.set_xlim(0.0, gamma_max)
    ax.set_xlabel(r"$\gamma$  ($\beta = \gamma \log n$)")
    ax.set_ylabel(r"output cosine $\langle\theta_i, \theta_j\rangle$")
    ax.grid(alpha=0.3)


def plot_study(ds: xr.Dataset) -> Figure:
    gamma_max = float(ds.gamma.values[-1])
    fig = Figure(figsize=(13.5, 8.4), layout="constrained")
    (limits, finite), (mc, uniform) = fig.subplots(2, 2)
    colours = colormaps["tab10"].colors
    for k, rho in enumerate(ds.rho.values):
        _limit_steps(limits, float(rho), gamma_max, colours[k], rf"$\rho = {rho:g}$, $\gamma_c = {1 / (1 - rho):.3g}$")
    _gamma_axis(limits, gamma_max)
    limits.set_title(r"(a) $n \to \infty$: 1, then $4\rho/(1+3\rho)$ at $\gamma_c = 1/(1-\rho)$, then $\rho$")
    outside_legend(limits)

    rho = float(ds.attrs["rho_check"])
    shades = colormaps["viridis"](np.linspace(0.0, 0.9, ds.sizes["n"]))
    for colour, n in zip(shades, ds.n.values):
        finite.plot(ds.gamma, ds.cosine.sel(rho=rho, n=n), color=colour, lw=1.2, label=rf"$n = 10^{{{math.log10(n):.0f}}}$")
    _limit_steps(finite, rho, gamma_max, "k", "limit")
    _gamma_axis(finite, gamma_max)
    finite.set_title(rf"(b) exact cosine at finite $n$, equiangular $\rho = {rho:g}$")
    outside_legend(finite)

    gammas = ds.gamma_mc.values
    almost = [int(case) for case in ds.mc_case.values if float(ds.mc_rho[case]) == rho]
    for k, n in enumerate(ds.n_mc.values):
        for case, marker, fill in zip(almost, ("o", "s"), (colours[k], "white")):
            cell = ds.isel(mc_case=case).sel(n_mc=n)
            mc.errorbar(gammas, cell.mc_cosine, yerr=cell.mc_cosine_std, color=colours[k], marker=marker, mfc=fill,
                        ms=3.5, lw=0.8, capsize=2, label=rf"i.i.d., $n = {n:.0f}$, $d = {int(cell.mc_dim)}$")
        mc.plot(ds.gamma, one_layer_cosine(rho, n, ds.gamma.values * math.log(n)), color=colours[k], lw=1, ls="--",
                label=rf"equiangular, $n = {n:.0f}$")
    _limit_steps(mc, rho, gamma_max, "k", "limit")
    _gamma_axis(mc, gamma_max)
    mc.set_title(rf"(c) one layer on i.i.d. tokens with mean cosine $\rho = {rho:g}$")
    outside_legend(mc)

    uniform_case = ds.isel(mc_case=int(np.nonzero(ds.mc_rho.values == 0.0)[0][0]))
    positive = gammas > 0
    for k, n in enumerate(ds.n_mc.values):
        cell = uniform_case.sel(n_mc=n)
        uniform.plot(gammas[positive], cell.mc_cosine.values[positive], color=colours[k], marker="o", ms=3.5, lw=1,
                     label=rf"$n = {n:.0f}$")
    uniform.axhline(0.0, color="k", lw=0.8)
    uniform.set_xscale("log")
    uniform.set_xlabel(r"$\gamma$  ($\beta = \gamma \log n$)")
    uniform.set_ylabel(r"mean output cosine")
    uniform.grid(alpha=0.3)
    uniform.set_title(rf"(d) i.i.d. uniform tokens on $S^{{{int(uniform_case.mc_dim) - 1}}}$: collapse stops at $\gamma \to 0$")
    outside_legend(uniform)
    return fig


# ---------------------------------------------------------------------------------------- table
def format_table(ds: xr.Dataset) -> str:
    ns = ds.n.values
    lines = ["exact cosine of equiangular tokens after one layer, beta = gamma log n (MATH.md §7)",
             f"{'rho':>5} {'gamma_c':>8} {'4rho/(1+3rho)':>13} {'cos(gamma_c) n=1e18':>19}   gamma_half at n = "
             + " ".join(f"{'1e' + format(math.log10(n), '.0f'):>6}" for n in ns)]
    for rho in ds.rho.values:
        cell = ds.sel(rho=rho)
        lines.append(f"{rho:5g} {float(cell.critical_gamma):8.4g} {float(cell.critical_cosine):13.6g} "
                     f"{float(cell.cosine_at_critical.values[-1]):19.12g}   "
                     + " ".join(f"{value:6.4g}" for value in cell.gamma_half.values))
    lines.append(f"formula vs direct layer (rho = {ds.attrs['rho_check']:g}, gamma = {ds.attrs['check_gammas']} x gamma_c), "
                 "max |difference|: " + ", ".join(f"n={n}: {e:.1e} ({p} tokens)" for n, e, p in
                                                   zip(ds.n_check.values, ds.gram_error.values, ds.gram_pairs.values)))
    lines.append("Monte Carlo, one layer, i.i.d. tokens: gamma where the mean cosine crosses (1 + rho)/2")
    lines.append(f"{'rho':>5} {'d':>4} {'n':>7} {'samples':>7} {'cos before':>10} {'gamma_half':>10} {'equiangular':>11} "
                 f"{'cos(gamma_c)':>12} {'equiangular':>11} {'seconds':>7}")
    gc_index = int(np.argmin(np.abs(ds.gamma_mc.values - 1.0 / (1.0 - ds.attrs["rho_check"]))))
    for case in ds.mc_case.values:
        rho, dim = float(ds.mc_rho[case]), int(ds.mc_dim[case])
        for n in ds.n_mc.values:
            cell = ds.sel(mc_case=case, n_mc=n)
            equiangular = (f"{float(cell.mc_formula_gamma_half):11.4g}", f"{float(cell.mc_formula[gc_index]):11.4g}") \
                if rho > 0 else (f"{'-':>11}", f"{'-':>11}")
            lines.append(f"{rho:5g} {dim:4d} {n:7.0f} {int(cell.mc_samples):7d} {float(cell.mc_cosine_before):10.4f} "
                         f"{float(cell.mc_gamma_half):10.4g} {equiangular[0]} {float(cell.mc_cosine[gc_index]):12.4g} "
                         f"{equiangular[1]} {float(cell.mc_seconds):7.2f}")
    lines.append(f"(cos(gamma_c) columns at gamma = {float(ds.gamma_mc.values[gc_index]):g}; "
                 f"wall time {ds.attrs['wall_time']:.1f} s)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- claims
def long_context_claims(table) -> list[Check]:
    rho = RHO
    at = table.sel(rho=rho)
    n = float(table["n"].values[-1])
    cases = [case for case in table["mc_case"].values if float(table.mc_rho[case]) == rho]
    mc = table.sel(mc_case=max(cases, key=lambda case: int(table.mc_dim[case])))
    mc = mc.sel(n_mc=mc["n_mc"].values[-1])
    n_mc, dim, start = float(mc.n_mc), int(mc.mc_dim), float(mc.mc_cosine_before)
    checks = [equal("Critical gamma of equiangular tokens (MATH.md §7)", 2.0, at.critical_gamma,
                    source="exact: 1 / (1 - rho) at rho = 1/2 is 2 in floating point"),
              at_most("Formula against a direct SA layer (largest Gram error)", table.gram_error.max(),
                      float(table["n_check"].max()) * EPSILON,
                      source="round-off: the direct layer sums n terms per output: at most n eps (largest n checked)"),
              close(f"Cosine at gamma_c for n = {n:g}", 0.8, at.cosine_at_critical.sel(n=n), 4 * math.log(n) * EPSILON,
                    source="round-off: exp(-beta (1 - rho)) at beta (1 - rho) = log n carries log(n) eps, the cosine "
                           "at most twice that (twice again for the rest); the finite-n term is O(1/n)"),
              close(f"The midpoint crossing at n = {n:g} is the large-n asymptote (MATH.md §7)",
                    midpoint_gamma(rho, n), at.gamma_half.sel(n=n), 1e-12,
                    source="theory: gamma = log((n - 1) / x) / ((1 - rho) log n), x = sqrt((1 + rho) / rho) - 1, "
                           "exact to O(1 / (n log n)); brentq's xtol = 1e-13 and the cosine's round-off: 1e-12"),
              close(f"Monte Carlo (d = {dim}, n = {n_mc:g}): beta = 0 collapses every token onto the mean (cosine)",
                    1.0, mc.mc_cosine.sel(gamma_mc=0.0), n_mc * EPSILON,
                    source="round-off: every output is the same mean of n tokens: equal to within n eps")]
    for gamma, label in ((4.0, "large gamma keeps the input cosine"), (2.0, "the cosine at gamma_c")):
        beta = gamma * math.log(n_mc)
        formula = float(one_layer_cosine(start, n_mc, beta))
        spread = abs(float(iid_cosine_estimate(start, n_mc, beta, dim)) - formula)
        checks.append(close(f"Monte Carlo (d = {dim}, n = {n_mc:g}): {label} (gamma = {gamma:g}) is the equiangular "
                            f"formula's at the tokens' own cosine {start:.4f}", formula,
                            mc.mc_cosine.sel(gamma_mc=gamma), spread,
                            source="theory: i.i.d. tokens' cosines spread by (1 - rho) / sqrt(d) about rho, which "
                                   "multiplies their weight on the others by at most exp(beta^2 (1 - rho)^2 / (2 d)) "
                                   "(sub-Gaussian <z, z'>, MATH.md §7): the formula's change under that factor"))
    return checks


def main(argv=None) -> xr.Dataset:
    return study_main(argv, "Long context: one SA layer at beta = gamma log n (MATH.md §7).", "long-context-study",
                      run_study, format_table, "long_context")


if __name__ == "__main__":
    main()
