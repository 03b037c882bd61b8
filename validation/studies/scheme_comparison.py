"""Study: the three circle schemes and i.i.d. particles against each other (MATH.md §1, §2, §2.1).

SA, ``Q = K = V = I``.  Three checks:

1. *Before clusters form* (``perturbed:EPS`` drawn on the coarse grid ``N/2`` and continued as its
   trigonometric series, the same function at ``N/2`` and ``N``; ``t_check = 0.8 x`` the predicted formation
   time from the initial amplitude of mode ``k*``, :func:`meanfield.metastable.refined_formation_time`):
   pseudo-spectral, finite volume and Lagrangian densities agree to their accuracy, at ``N`` and at ``N/2``
   (``_coarse``: the measured convergence the claims use).  The finite-volume
   state is cell averages, compared with the exact cell averages of the spectral solution (each
   ``rho_hat_k`` times ``sinc(k h / 2)``); the Lagrangian density (band-limited projection of the
   weighted nodes) is compared point by point.  Differences are ``max |.| / mean`` and, with
   ``_l1``, ``mean |.| / mean`` (the limiter clips smooth extrema, so the finite-volume maximum
   error converges more slowly than its L1 error).
2. *Through clustering* (same start, to ``horizon x`` that formation time): finite volume and
   Lagrangian keep mass and positivity (``mass_error``, ``min_density``, ``stop_reason``), and their
   clusters agree: centres and masses at the end.  Both schemes conserve mass, so what separates their
   clusters is the finite-volume density error carried through formation: part 1 measures it before
   formation relative to the perturbation (``fv_relative_error = fv_vs_spectral_l1 /
   perturbation_at_check``); at formation, where the perturbation is O(1), a fraction of about that
   much mass can sit in the wrong basin, and up to two Lagrangian node weights more (``_lagrangian_node_weight``:
   a cluster's Lagrangian mass is whole nodes; measured gaps 8.6e-3, 8.3e-3, 2.6e-3 at N = 128, 256, 512 do not
   converge cleanly for that reason); ``_min_cluster_mass`` and the cluster count give the claims' centre bound:
   that mass moved across a basin of half-width ``pi / K``.
3. *Against i.i.d. particles* (a structured start ``STRUCTURED``, three bumps whose Fourier content is
   far above the sampling noise ``n^{-1/2}``; from ``perturbed:EPS`` the particles' own noise would
   decide the clusters): clusters of the finite-volume, Lagrangian and particle runs at the same
   final time as part 2.  Statistical sizes (``structured_particles_mass_stderr``: the largest
   ``sqrt(m (1 - m) / n)``, a cluster's token count being binomial; ``_centre_stderr``: the largest
   circular spread of a cluster's tokens at ``t = 0`` over ``sqrt(count)``, its centre taken as the mean
   of its tokens).

Clusters are read the same way for all three: the finite-volume density's clusters
(:func:`meanfield.diagnostics.detect_clusters`) define the reference centres; tokens / nodes are
assigned to the nearest reference centre; a cluster's mass is the weight assigned to it and its
centre the weighted circular mean of its tokens.  The finite volume's tokens are its grid's cells at their
centres and the points its collapsed clusters were handed over to, at their own positions
(:func:`fv_tokens`; the recorded density puts a point's mass at its cell's centre, up to ``h / 2`` away).
Differences are maxima over clusters (angles in rad).

Output: ``scheme_comparison.nc`` and ``scheme_comparison.png``.
Run: ``python -m meanfield.validation.studies.scheme_comparison [--quick] [--out-dir DIR]`` or
``meanfield validate schemes [--beta B] [--n N] [--seed S] [--init SPEC]`` (``--init``: the structured start of part 3,
a circle density that forms clusters; ``--n``: the particles').
"""

from __future__ import annotations

import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from meanfield import fourier_series
from meanfield.diagnostics import detect_clusters
from meanfield.initial.circle import circle_density
from meanfield.metastable import refined_formation_time
from meanfield.errors import require
from meanfield.model import Model
from meanfield.plotting.style import legend_below
from meanfield.app.storage import netcdf_safe, package_version
from meanfield.theory import dominant_mode, growth_rates
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.solve import solve

from ..claims import EPSILON, FALSE_ALARM, Check, at_least, at_most, below, equal, fraction, standard_errors
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..registry import STUDIES

EPS = 1e-4
STRUCTURED = "vonmises:6@0.4+vonmises:6@2.5+vonmises:6@4.3"
FULL = {"beta": 9.0, "resolution": 1024, "horizon": 10.0, "n": 2 ** 16, "save_every": 0.5}
QUICK = {"beta": 9.0, "resolution": 256, "horizon": 10.0, "n": 2 ** 12, "save_every": 0.5}


def cell_averages_of_point_values(density: np.ndarray) -> np.ndarray:
    """Exact cell averages (cells of width ``h = 2 pi / N`` centred at the grid points) of the trigonometric
    interpolant of grid values: ``rho_hat_k`` times ``sinc(k h / 2)`` (MATH.md §2.1)."""
    n = density.size
    k = np.arange(n // 2 + 1)
    return fourier_series.filtered(density, np.sinc(k / n))


def cluster_readout(theta: np.ndarray, weights: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(centres, masses)`` of tokens assigned to the nearest reference centre (see the module docstring)."""
    gap = np.abs((theta[:, None] - centres[None, :] + math.pi) % (2 * math.pi) - math.pi)
    nearest = np.argmin(gap, axis=1)
    masses = np.bincount(nearest, weights=weights, minlength=centres.size)
    phase = np.bincount(nearest, weights=weights * np.cos(theta), minlength=centres.size) \
        + 1j * np.bincount(nearest, weights=weights * np.sin(theta), minlength=centres.size)
    return np.angle(phase) % (2 * math.pi), masses


def _grid_tokens(density: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A grid density as weighted tokens at its grid points (cell masses)."""
    n = density.size
    return 2 * math.pi * np.arange(n) / n, density * 2 * math.pi / n


def fv_tokens(run: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """A finite-volume run's frames as weighted tokens ``(theta, weights)``, each ``(frames, N + P)``: the grid's
    cells at their centres with the grid's mass (the recorded density less the points' masses in their cells) and
    the points at their own positions with their masses (unused slots: weight 0)."""
    density = run["density"].values
    frames, n = density.shape
    h = 2 * math.pi / n
    positions, masses = run["point_position"].values, run["point_mass"].values
    used = np.isfinite(positions) & np.isfinite(masses)
    positions, masses = np.where(used, positions, 0.0) % (2 * math.pi), np.where(used, masses, 0.0)
    grid = density * h
    cells = np.floor(positions / h + 0.5).astype(int) % n                 # the cell centred nearest each point
    for frame in range(frames):
        np.subtract.at(grid[frame], cells[frame], masses[frame])
    theta = np.concatenate((np.broadcast_to(h * np.arange(n), (frames, n)), positions), axis=1)
    return theta, np.concatenate((np.maximum(grid, 0.0), masses), axis=1)


def _differences(reference: tuple, other: tuple) -> tuple[float, float]:
    angle = np.abs((other[0] - reference[0] + math.pi) % (2 * math.pi) - math.pi)
    return float(np.max(angle)), float(np.max(np.abs(other[1] - reference[1])))


def _node_theta(run: xr.Dataset) -> np.ndarray:
    return run["node_theta"].values[-1] if "node_theta" in run else run["theta"].values[-1]


def band_limited_start(init: str, resolution: int, seed: int):
    """``f(n)``: the grid values on ``n`` points of ``init`` drawn on ``resolution`` points and continued as its
    trigonometric series (Nyquist mode dropped), the same function on every grid of at least ``resolution``."""
    sums = fourier_series.sums(circle_density(init, resolution, seed)) / resolution
    sums[resolution // 2:] = 0.0

    def values(n: int) -> np.ndarray:
        spectrum = np.zeros(n // 2 + 1, dtype=complex)
        spectrum[:sums.size] = sums[:n // 2 + 1]
        return fourier_series.values_from_sums(spectrum * n, n)

    return values, sums


def _early_gaps(values: np.ndarray, beta: float, t_check: float) -> dict:
    """The three schemes from the same grid values to ``t_check`` and their gaps (part 1)."""
    runs = {scheme: solve("circle", beta=beta, resolution=values.size, t_final=t_check, save_every=t_check / 4,
                          init=cell_averages_of_point_values(values) if scheme == "fv" else values, scheme=scheme)
            for scheme in ("spectral", "fv", "lagrangian")}
    spectral = runs["spectral"].density.values[-1]
    mean = 1 / (2 * math.pi)
    fv_gap = np.abs(runs["fv"].density.values[-1] - cell_averages_of_point_values(spectral)) / mean
    lagrangian_gap = np.abs(runs["lagrangian"].density.values[-1] - spectral) / mean
    return {"runs": runs, "fv_vs_spectral": float(fv_gap.max()), "fv_vs_spectral_l1": float(fv_gap.mean()),
            "lagrangian_vs_spectral": float(lagrangian_gap.max()),
            "lagrangian_vs_spectral_l1": float(lagrangian_gap.mean()),
            "perturbation": float(np.max(np.abs(spectral - mean)) / mean),
            "rtol": float(runs["spectral"].attrs["rtol"]),
            "stop_reasons": [run.attrs["stop_reason"] for run in runs.values()]}


def before_formation(settings: dict, seed: int) -> dict:
    """Part 1 of the module docstring: the gaps at ``N`` and (keys ending ``_coarse``) at ``N/2``."""
    beta, n = settings["beta"], settings["resolution"]
    model = Model("sa", beta, 0.0, 2)
    k = dominant_mode(model)
    values, sums = band_limited_start(f"perturbed:{EPS:g}", n // 2, seed)
    t_check = 0.8 * refined_formation_time(sums[k], float(growth_rates(model, [k])[0]))
    out = _early_gaps(values(n), beta, t_check)
    coarse = _early_gaps(values(n // 2), beta, t_check)
    out.update({f"{key}_coarse": coarse[key] for key in ("fv_vs_spectral", "fv_vs_spectral_l1",
                                                         "lagrangian_vs_spectral", "lagrangian_vs_spectral_l1")})
    out["stop_reasons"] += coarse["stop_reasons"]
    return dict(out, t_check=t_check)


def _long_runs(init: str, t_final: float, settings: dict, seed: int, with_particles: bool) -> dict:
    beta, n = settings["beta"], settings["resolution"]
    runs = {scheme: solve("circle", beta=beta, resolution=n, init=init, seed=seed, t_final=t_final,
                          save_every=settings["save_every"], scheme=scheme) for scheme in ("fv", "lagrangian")}
    if with_particles:
        runs["particles"] = simulate(dim=2, n=settings["n"], beta=beta, init=init, seed=seed, resolution=n,
                                     t_final=t_final, save_every=settings["save_every"], rtol=1e-7)
    return runs


def centre_standard_error(start: np.ndarray, end: np.ndarray, weights: np.ndarray, centres: np.ndarray) -> float:
    """The largest standard error of a cluster's centre (module docstring): the circular spread at the start
    of the tokens that end nearest each centre, over the square root of their count."""
    nearest = np.argmin(np.abs((end[:, None] - centres[None, :] + math.pi) % (2 * math.pi) - math.pi), axis=1)
    errors = []
    for a in range(centres.size):
        mine = nearest == a
        mean = np.angle(np.sum(weights[mine] * np.exp(1j * start[mine])))
        spread = np.sqrt(np.average(((start[mine] - mean + math.pi) % (2 * math.pi) - math.pi) ** 2,
                                    weights=weights[mine]))
        errors.append(spread / math.sqrt(np.count_nonzero(mine)))
    return float(max(errors))


def _cluster_comparison(runs: dict) -> dict:
    reference = detect_clusters(runs["fv"].density.values[-1], float(runs["fv"].attrs["beta"]))
    require(reference.count > 0, f"the finite-volume run from {runs['fv'].attrs['init']} holds no cluster at "
                                 f"t = {float(runs['fv'].time[-1]):.4g}: this study compares clusters (--init must "
                                 f"be a circle density that forms them)")
    if "point_mass" in runs["fv"]:                  # clusters handed over to points: read at their own positions
        theta, weights = fv_tokens(runs["fv"])
        fv = cluster_readout(theta[-1], weights[-1], reference.angles)
    else:
        fv = cluster_readout(*_grid_tokens(runs["fv"].density.values[-1]), reference.angles)
    out = {"clusters": reference.count, "fv_clusters": fv, "min_cluster_mass": float(fv[1].min())}
    for name in ("lagrangian", "particles"):
        if name in runs:
            readout = cluster_readout(_node_theta(runs[name]), runs[name].weights.values, reference.angles)
            out[f"{name}_clusters"] = readout
            out[f"{name}_centre_gap"], out[f"{name}_mass_gap"] = _differences(fv, readout)
    out["lagrangian_node_weight"] = float(np.max(runs["lagrangian"].weights.values))
    if "particles" in runs:
        tokens = runs["particles"]
        n = tokens.weights.size
        out["particles_mass_stderr"] = float(np.max(np.sqrt(np.maximum(fv[1] * (1 - fv[1]), 0.0) / n)))
        out["particles_centre_stderr"] = centre_standard_error(tokens.theta.values[0], _node_theta(tokens),
                                                               tokens.weights.values, reference.angles)
    return out


def _validity(runs: dict) -> dict:
    fv, lagrangian = runs["fv"], runs["lagrangian"]
    return {"fv_min_density": float(fv.density.min()), "fv_mass_error": float(np.max(np.abs(fv.mass - 1.0))),
            "lagrangian_mass_error": float(np.max(np.abs(lagrangian.mass - 1.0))),
            "lagrangian_min_density": float(lagrangian.density.min()),
            "lagrangian_resolved_until": float(lagrangian.time.values[np.nonzero(lagrangian.density_resolved.values)[0][-1]])
            if "density_resolved" in lagrangian else math.nan,
            "fv_stop_reason": fv.attrs["stop_reason"], "lagrangian_stop_reason": lagrangian.attrs["stop_reason"],
            "fv_steps": int(fv.attrs["steps"])}


def run_study(quick: bool = False, out_dir="scheme-comparison-study", seed: int = 0, beta: float | None = None,
              n: int | None = None, init: str | None = None) -> xr.Dataset:
    """Parts 1-3 of the module docstring; writes the table and the figure, returns the table.  ``beta``, the
    particle count ``n`` and the structured start ``init`` of part 3 (a circle density that forms clusters;
    default ``STRUCTURED``) replace the preset's; the claims' bounds are computed from the runs themselves."""
    settings = dict(QUICK if quick else FULL)
    if beta is not None:
        require(float(beta) > 0, f"--beta must be > 0 for this study: at beta = 0 no cluster forms (got {beta:g})")
        settings["beta"] = float(beta)
    if n is not None:
        require(int(n) == n and n >= 2, f"--n must be an integer >= 2 for this study (got {n:g})")
        settings["n"] = int(n)
    structured_init = STRUCTURED if init is None else str(init)
    circle_density(structured_init, settings["resolution"], seed)          # a circle density, or refused now
    start = _time.perf_counter()
    bar = progress_bar(3, "scheme comparison")
    early = before_formation(settings, seed)
    bar.update()
    formation = early["t_check"] / 0.8
    through = _long_runs(f"perturbed:{EPS:g}", settings["horizon"] * formation, settings, seed, with_particles=False)
    bar.update()
    structured = _long_runs(structured_init, settings["horizon"] * formation, settings, seed, with_particles=True)
    bar.update()
    bar.close()
    clusters_through, clusters_structured = _cluster_comparison(through), _cluster_comparison(structured)
    gaps = [f"{name}{suffix}" for name in ("fv_vs_spectral", "fv_vs_spectral_l1", "lagrangian_vs_spectral",
                                           "lagrangian_vs_spectral_l1") for suffix in ("", "_coarse")]
    values = {"t_check": early["t_check"], "perturbation_at_check": early["perturbation"],
              **{key: early[key] for key in gaps}, "rtol": early["rtol"],
              "fv_relative_error": early["fv_vs_spectral_l1"] / early["perturbation"],
              "t_final": settings["horizon"] * formation}
    for label, runs, clusters in (("perturbed", through, clusters_through),
                                  ("structured", structured, clusters_structured)):
        for key, value in _validity(runs).items():
            values[f"{label}_{key}"] = value
        values[f"{label}_clusters"] = clusters["clusters"]
        values[f"{label}_min_cluster_mass"] = clusters["min_cluster_mass"]
        for key in ("lagrangian_centre_gap", "lagrangian_mass_gap", "lagrangian_node_weight", "particles_centre_gap",
                    "particles_mass_gap",
                    "particles_mass_stderr", "particles_centre_stderr"):
            if key in clusters:
                values[f"{label}_{key}"] = clusters[key]
    ds = xr.Dataset({key: ((), value) for key, value in values.items()},
                    attrs=netcdf_safe(dict(settings, eps=EPS, structured_init=structured_init, seed=seed,
                                           quick=int(quick),
                                           early_stop_reasons=str(early["stop_reasons"]),
                                           package_version=package_version(), wall_time=_time.perf_counter() - start,
                                           command=STUDIES["schemes"].command(quick, out_dir, {
                                               "beta": None if beta is None else f"{beta:g}", "n": n,
                                               "seed": seed or None, "init": init}))))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_dataset(ds, out / "scheme_comparison.nc")
    save_figure(plot_study(early, through, structured, clusters_through, clusters_structured),
                out / "scheme_comparison.png")
    return ds


def plot_study(early, through, structured, clusters_through, clusters_structured) -> Figure:
    """Left: the three densities before formation and their differences.  Middle / right: the final
    finite-volume density with the cluster masses of every run as stems."""
    fig = Figure(figsize=(15, 4.8), layout="constrained")
    axes = fig.subplots(1, 3)
    ax = axes[0]
    spectral = early["runs"]["spectral"]
    theta = spectral.theta.values
    for scheme, style in (("spectral", "-"), ("fv", "--"), ("lagrangian", ":")):
        ax.plot(theta, early["runs"][scheme].density.values[-1], style, label=scheme)
    ax.set(title=f"before formation, t = {early['t_check']:.3g}\nmax |difference| / mean density: "
                 f"FV {early['fv_vs_spectral']:.1e}, Lagrangian {early['lagrangian_vs_spectral']:.1e}",
           xlabel=r"angle $\theta$ (rad)", ylabel=r"density $\rho(\theta)$")
    ax.title.set_fontsize("medium")
    legend_below(ax)
    for ax, runs, clusters, label in ((axes[1], through, clusters_through, f"perturbed:{EPS:g}"),
                                      (axes[2], structured, clusters_structured, "structured start")):
        fv = runs["fv"]
        ax.semilogy(fv.theta.values, np.maximum(fv.density.values[-1], 1e-8), color="0.6", lw=1, label="FV density")
        twin = ax.twinx()
        for name, colour, shift in (("fv", "C0", 0.0), ("lagrangian", "C1", 0.01), ("particles", "C2", 0.02)):
            if f"{name}_clusters" in clusters:
                centres, masses = clusters[f"{name}_clusters"]
                twin.stem(centres + shift, masses, linefmt=colour, markerfmt=f"{colour}o", basefmt=" ",
                          label=f"{name} clusters")
        twin.set_ylabel("cluster mass (stems)")
        handles, labels = ax.get_legend_handles_labels()
        more_handles, more_labels = twin.get_legend_handles_labels()
        legend_below(ax, handles + more_handles, labels + more_labels)
        ax.set(title=f"{label}: t = {float(fv.time[-1]):.4g}", xlabel=r"angle $\theta$ (rad)",
               ylabel="finite-volume density (log scale)")
    return fig


def format_table(ds: xr.Dataset) -> str:
    return "\n".join(f"{name:>42}: {ds[name].values}" for name in ds.data_vars)


# --------------------------------------------------------------------------------------------- claims
def scheme_claims(ds) -> list[Check]:
    n, rtol, epsilon_fv = int(ds.attrs["resolution"]), float(ds.rtol), float(ds.fv_relative_error)
    beta = float(ds.attrs["beta"])
    refined = ("measured convergence: the same gap at N/2 from the same start; a convergent scheme's gap falls "
               "when h halves (second order: by 4; less where the limiter clips extrema and at the time step's floor)")
    checks = [below("Finite volume against spectral before formation (largest difference)", ds.fv_vs_spectral,
                    float(ds.fv_vs_spectral_coarse), source=refined),
              below("Finite volume against spectral before formation (L1)", ds.fv_vs_spectral_l1,
                    float(ds.fv_vs_spectral_l1_coarse), source=refined),
              at_most("Lagrangian against spectral before formation (largest difference)", ds.lagrangian_vs_spectral,
                      10 * rtol,
                      source="measured convergence: both are spectrally accurate for a band-limited start "
                             "(solvers/schemes/lagrangian.py), so the gap is their time-integration error, proportional to "
                             "rtol (2.5e-6, 2.4e-8 at rtol = 1e-6, 1e-8; N = 128, 256): 10 rtol"),
              equal(f"Clusters formed from a perturbation at beta = {beta:g} (k*)",
                    dominant_mode(Model("sa", beta, 0.0, 2)), ds.perturbed_clusters,
                    source="exact: counts; k* = argmax lambda_k (MATH.md §2.3)")]
    for label in ("perturbed", "structured"):
        count, smallest = int(ds[f"{label}_clusters"]), float(ds[f"{label}_min_cluster_mass"])
        steps = int(ds[f"{label}_fv_steps"])
        weight = float(ds[f"{label}_lagrangian_node_weight"])
        misplaced = epsilon_fv + 2 * weight
        checks += [fraction(f"{label}: finite-volume and Lagrangian runs complete",
                            [str(ds[f"{label}_{scheme}_stop_reason"].values) == "completed"
                             for scheme in ("fv", "lagrangian")],
                            source="exact: a run's stop reason is 'completed' or it is not"),
                   at_least(f"{label}: finite-volume density stays non-negative (smallest value)",
                            ds[f"{label}_fv_min_density"], 0.0, "≥ 0",
                            source="theory: every forward-Euler stage keeps cell averages >= 0 under the CFL step and "
                                   "SSP-RK3 combines stages convexly (solvers/schemes/finite_volume.py)"),
                   at_most(f"{label}: finite-volume mass error", ds[f"{label}_fv_mass_error"],
                           (n + 10 * math.sqrt(3 * steps)) * EPSILON,
                           source=f"round-off: telescoping fluxes; each of 3 stages x {steps} steps rounds the mass by "
                                  f"~eps, a random walk (10 of its sd), plus N eps for the sum"),
                   at_most(f"{label}: Lagrangian mass error", ds[f"{label}_lagrangian_mass_error"], n * EPSILON,
                           source="round-off: the N weights never change; their sum rounds by at most N eps"),
                   below(f"{label}: Lagrangian cluster centres against finite volume (largest gap, rad)",
                         ds[f"{label}_lagrangian_centre_gap"], misplaced * math.pi / (count * smallest),
                         source=f"theory: both conserve mass; a cluster's mass can be off by the finite-volume "
                                f"density error before formation, {epsilon_fv:.3g} of the perturbation (L1), plus "
                                f"two Lagrangian node weights (the nodes nearest its two basin edges, at most "
                                f"{weight:.3g} each); that mass moved by pi / K moves a cluster of mass >= "
                                f"{smallest:.3g} by at most that x pi / K over its mass (K = {count})"),
                   below(f"{label}: Lagrangian cluster masses against finite volume (largest gap)",
                         ds[f"{label}_lagrangian_mass_gap"], misplaced,
                         source=f"theory: both conserve mass; the finite-volume density error before formation, "
                                f"{epsilon_fv:.3g} of the perturbation (L1), plus two Lagrangian node weights "
                                f"(at most {weight:.3g} each) bound the mass in a wrong basin")]
    count = int(ds["structured_clusters"])
    z = standard_errors(tests=count)
    if count == 1:                  # one cluster holds all the mass of both: no statistics, their sums' round-off
        checks.append(at_most("Particles' cluster mass against the PDE's (one cluster: both hold all the mass)",
                              ds.structured_particles_mass_gap, (int(ds.attrs["n"]) + n) * EPSILON,
                              source="round-off: two sums of n tokens' and N cells' weights, each rounded by at most "
                                     "its count x eps"))
    else:
        checks.append(below("Particles' cluster masses against the PDE's (largest gap)",
                            ds.structured_particles_mass_gap, z * float(ds.structured_particles_mass_stderr),
                            source=f"standard error: {z:.2f} x {float(ds.structured_particles_mass_stderr):.3g} (a "
                                   f"cluster's token count is binomial, sd sqrt(m (1 - m) / n); normal, "
                                   f"p = {FALSE_ALARM:g} / {count} clusters)"))
    checks += [below("Particles' cluster centres against the PDE's (largest gap, rad)",
                     ds.structured_particles_centre_gap, z * float(ds.structured_particles_centre_stderr),
                     source=f"standard error: {z:.2f} x {float(ds.structured_particles_centre_stderr):.3g} (spread of "
                            f"a cluster's tokens at t = 0 / sqrt(count), its centre taken as their mean; normal, "
                            f"p = {FALSE_ALARM:g} / {count} clusters)")]
    return checks


def main(argv=None) -> xr.Dataset:
    return study_main(argv, "Spectral, finite-volume, Lagrangian and particle runs against each other.",
                      "scheme-comparison-study", run_study, format_table, "scheme_comparison")


if __name__ == "__main__":
    main()
