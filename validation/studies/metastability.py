"""Study: metastable clusters on the circle against the linear theory (MATH.md §2.3, Bruno et al.).

For each ``beta`` (SA, ``Q = K = V = I``) two runs:

* the PDE from ``perturbed:EPS`` (finite volume, which stays valid through cluster formation
  and merging), up to ``horizon x`` the predicted formation time;
* i.i.d. uniform particles (``n`` tokens, perturbation ``eps ~ n^{-1/2}``), to ``particle_horizon``.

Predicted (:mod:`meanfield.metastable`): the dominant mode ``k*``; the formation time
``log(1/A)/lambda_{k*}`` of :func:`meanfield.theory.formation_time` (``A`` the typical amplitude of mode
``k*`` under the law of ``perturbed:EPS``, MATH.md §2.4), the one from the actual initial amplitude of
mode ``k*`` (``t_form_refined``) and the first time the linearised solution of all the start's modes
shows ``k*`` clusters (``t_form_linear``: with a near tie, MATH.md §2.4, clusters form one after
another and the last one sets the plateau's start); cluster angles from the initial phase of mode ``k*`` and from the whole linearised
solution at the measured formation time.

Measured, from the cluster count of every saved frame (:func:`meanfield.diagnostics.detect_clusters`
on the density; for particles on their density smoothed by a heat kernel of width ``SMOOTHING_WIDTH``):
``t_half`` (the largest mode amplitude ``2 pi |rho_hat_k|`` crosses 1/2, interpolated),
``t_formed`` (start of the first plateau with clusters), the count and angles there, the plateaus
(``min_duration`` = one e-fold ``1/lambda_{k*}``), the energy at the end of each plateau next to
the energy of the same clusters collapsed to points, and the first merge time.

Plateau energy against point clusters.  A cluster of angular variance ``sigma^2`` (about its centre)
has self-energy short of a point's by a fraction ``<= beta sigma^2`` (``1 - e^{beta (cos d - 1)} <=
beta d^2 / 2`` for two of its members ``d`` apart, ``<d^2> = 2 sigma^2``); cross terms between clusters
at least ``pi / 2`` apart only add energy.  ``plateau_variance`` is the largest such variance at the
end of the plateau, of the points nearest each centre: for the PDE the density's grid values about the
detected centres, plus ``h^2 / 12`` for finite-volume cell averages (the run's energy treats them as
constant on their cells); for particles the tokens about their clusters' means, which with their masses
also give the point energy (the smoothed density's basins would misplace tokens between two clusters
about to merge).  A finite-volume run whose clusters have been handed over to points (MATH.md §5,
:mod:`meanfield.solvers.schemes.point_clusters`) is read the same way from its tokens (:func:`fv_tokens`): the grid's cells at
their centres and the points at their own positions (the recorded density puts a point's mass in its cell,
which would misplace it by up to ``h / 2`` and change the cross energy by ``beta sin D`` times that); the
``h^2 / 12`` is still added, a bound for the grid's share.

Angles.  ``angle_error_kstar`` / ``angle_error_linear``: the largest distance from a cluster's
density maximum at ``t_formed`` to the nearest angle predicted from the phase of mode ``k*`` /
by the linearised solution at ``t_formed``.  At formation the perturbation is O(1) and the
nonlinear stage has moved the maxima a little; ``angle_error_emergence`` compares the ``k*``
highest maxima with the linearised solution's at ``t_emergence``, the first frame at which the
largest ``2 pi |rho_hat_k|`` reaches ``EMERGENCE = 0.1`` (the pattern is visible, still linear).

Output (``out_dir``): ``metastability.nc`` (one row per ``(beta, source)`` case; plateau variables
padded with NaN / count -1 past the last plateau), the runs ``pde_beta*.nc`` and
``particles_beta*.nc``, and ``metastability.png``.

Run: ``python -m meanfield.validation.studies.metastability [--quick] [--out-dir DIR]`` or
``meanfield validate metastability [--beta B1,B2,...] [--n N] [--seed S]`` (``--n``: the particles').  The claims on
the count and the time of formation assume that mode ``k*`` forms first; each says by how much it leads its
neighbours (:func:`kstar_lead`): at a near tie (beta = 6: lambda_4 = 0.98 lambda_3) the count is random.
"""

from __future__ import annotations

import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from meanfield import fourier_series
from meanfield.cluster_dynamics import point_energy
from meanfield.diagnostics import detect_clusters
from meanfield.initial.circle import circle_density
from meanfield.metastable import (angle_errors, first_merge_time, kstar_angles, linear_formation_time,
                                  linearised_density, local_maxima_angles, plateaus, refined_formation_time)
from meanfield.errors import require
from meanfield.model import Model
from meanfield.plotting.style import deviation_heat_map, mean_density, theta_axis
from meanfield.app.storage import netcdf_safe, package_version, save_run
from meanfield.theory import dominant_mode, formation_time, growth_rates
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.solve import solve

from ..claims import EPSILON, Check, at_most, below, close, equal
from .cluster_formation import crossing_time
from .scheme_comparison import cluster_readout, fv_tokens
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..registry import STUDIES

EPS = 1e-4
#: The pattern has emerged, still in the linear regime, when the largest ``2 pi |rho_hat_k|`` reaches this.
EMERGENCE = 0.1
#: Modes whose empirical amplitudes the particle readout tracks.
AMPLITUDE_MODES = 48
#: Heat-kernel width (rad) of the particles' smoothed density.
SMOOTHING_WIDTH = 0.05
FULL = {"betas": (4.0, 9.0, 16.0), "resolution": 1024, "horizon": 10.0, "n": 2 ** 14, "particle_horizon": 2000.0,
        "save_every": 0.25}
QUICK = {"betas": (4.0, 9.0), "resolution": 512, "horizon": 3.0, "n": 2 ** 11, "particle_horizon": 60.0,
         "save_every": 0.25}
MAX_PLATEAUS = 8
#: Frames of the second (long) particle segment.
LONG_FRAMES = 200
SOURCES = ("pde", "particles")


def cluster_variance(theta: np.ndarray, weights: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Angular variance about each of ``centres`` of the weighted points nearest it (module docstring)."""
    gap = np.abs((theta[:, None] - centres[None, :] + math.pi) % (2 * math.pi) - math.pi)
    nearest = np.argmin(gap, axis=1)
    spread = np.bincount(nearest, weights=weights * gap[np.arange(theta.size), nearest] ** 2, minlength=centres.size)
    return spread / np.bincount(nearest, weights=weights, minlength=centres.size)


def _plateau_clusters(clusters, density: np.ndarray, tokens, cell_variance: float):
    """``(centres, masses, largest variance)`` of a plateau's last frame (module docstring): from the density's
    clusters and grid values, or from ``tokens = (theta, weights)`` nearest those clusters."""
    if tokens is None:
        theta = 2 * math.pi * np.arange(density.size) / density.size
        centres, masses, weights = clusters.angles, clusters.masses, density
    else:
        theta, weights = tokens
        centres, masses = cluster_readout(theta, weights, clusters.angles)
    return centres, masses, float(np.max(cluster_variance(theta, weights, centres))) + cell_variance


def _formation_readout(times, densities, energies, amplitudes, coefficients, model: Model, beta: float,
                       tokens=None, cell_variance: float = 0.0) -> dict:
    """Everything measured and predicted from one run's frames (see the module docstring); ``tokens``:
    ``(theta (frames, n), weights)`` of the particles (weights ``(n,)``) or of a finite-volume run's cells and
    points (weights ``(frames, n)``, :func:`fv_tokens`); ``cell_variance``: ``h^2 / 12`` for cell averages."""
    k = dominant_mode(model)
    rate = float(growth_rates(model, [k])[0])
    counts, found_clusters = [], []
    for density in densities:
        clusters = detect_clusters(density, model.beta)
        counts.append(clusters.count)
        found_clusters.append(clusters)
    found = plateaus(times, counts, energies, min_duration=1.0 / rate)
    formed = next((p for p in found if p.count > 0), None)
    grid = densities.shape[1]
    row = {"k_star": k, "rate": rate, "t_form_refined": refined_formation_time(coefficients[k], rate),
           "t_form_linear": linear_formation_time(coefficients, model, k, densities.shape[1]),
           "t_half": crossing_time(times, 2 * math.pi * np.max(amplitudes[:, 1:], axis=1)),
           "grid_spacing": 2 * math.pi / grid, "first_merge_time": first_merge_time(found)}
    if formed is None:
        row.update(t_formed=math.nan, count_at_formation=0, angle_error_kstar=math.nan,
                   angle_error_linear=math.nan)
        centres = np.zeros(0)
    else:
        index = int(np.searchsorted(times, formed.start))
        centres = local_maxima_angles(densities[index], formed.count)
        linear = linearised_density(coefficients, model, formed.start, grid)
        row.update(t_formed=formed.start, count_at_formation=formed.count,
                   angle_error_kstar=float(np.max(angle_errors(centres, kstar_angles(coefficients[k], k)))),
                   angle_error_linear=float(np.max(angle_errors(centres, local_maxima_angles(linear, formed.count)))))
    dominant = 2 * math.pi * np.max(amplitudes[:, 1:], axis=1)
    emerged = np.nonzero(dominant >= EMERGENCE)[0]
    if emerged.size and emerged[0] > 0:
        index = int(emerged[0])
        linear = linearised_density(coefficients, model, times[index], grid)
        errors = angle_errors(local_maxima_angles(densities[index], k), local_maxima_angles(linear, k))
        row.update(t_emergence=float(times[index]), angle_error_emergence=float(np.max(errors)))
    else:
        row.update(t_emergence=math.nan, angle_error_emergence=math.nan)
    row["plateaus"] = []
    for plateau in found[:MAX_PLATEAUS]:
        index = int(np.searchsorted(times, plateau.end))
        clusters = found_clusters[index]
        if clusters.count == 0:
            row["plateaus"].append((plateau, point_energy(clusters.angles, clusters.masses, beta), math.nan))
            continue
        frame_tokens = None if tokens is None else (tokens[0][index], tokens[1] if tokens[1].ndim == 1
                                                    else tokens[1][index])
        centres, masses, variance = _plateau_clusters(clusters, densities[index], frame_tokens, cell_variance)
        row["plateaus"].append((plateau, point_energy(centres, masses, beta), variance))
    row["centres_at_formation"] = centres
    return row


def pde_case(beta: float, settings: dict, scheme: str = "fv", seed: int = 0):
    """The PDE from ``perturbed:EPS`` to ``horizon x log(1/EPS)/lambda_{k*}``: (run, readout)."""
    model = Model("sa", beta, 0.0, 2)
    t_final = settings["horizon"] * formation_time(model, EPS)
    init = f"perturbed:{EPS:g}"
    run = solve("circle", attention="sa", beta=beta, resolution=settings["resolution"], init=init, seed=seed,
                t_final=t_final, save_every=settings["save_every"], scheme=scheme)
    coefficients = fourier_series.sums(circle_density(init, settings["resolution"], seed)) / settings["resolution"]
    cells = (2 * math.pi / settings["resolution"]) ** 2 / 12 if scheme == "fv" else 0.0
    readout = _formation_readout(run.time.values, run.density.values, run.energy.values,
                                 run.mode_amplitude.values, coefficients, model, beta,
                                 tokens=fv_tokens(run) if "point_mass" in run else None, cell_variance=cells)
    readout.update(eps=EPS, t_form_issue=formation_time(model, EPS), stop_reason=run.attrs["stop_reason"],
                   t_reached=float(run.attrs["t_reached"]), size=settings["resolution"],
                   series=(run.time.values, run.energy.values))
    return run, readout


def frame_coefficients(theta: np.ndarray, weights: np.ndarray, modes: int, chunk: int = 64) -> np.ndarray:
    """``mu_hat_k`` for ``k = 0 .. modes`` of every frame of ``theta`` ``(frames, n)``: ``(frames, modes + 1)``.

    The same sums as :func:`meanfield.diagnostics.empirical_coefficients` (MATH.md §2.1), with
    ``exp(-i k theta)`` built as powers of ``exp(-i theta)`` (one multiplication per mode instead of a
    complex exponential; rounding grows like ``k`` ulps, 1e-14 at k = 200) over ``chunk`` frames at a time.
    """
    theta = np.atleast_2d(theta)
    out = np.empty((theta.shape[0], modes + 1), dtype=complex)
    for start in range(0, theta.shape[0], chunk):
        rotation = np.exp(-1j * theta[start:start + chunk])
        power = np.ones_like(rotation)
        for k in range(modes + 1):
            out[start:start + chunk, k] = power @ weights
            if k < modes:
                power *= rotation
    return out / (2 * math.pi)


def smoothed_densities(theta: np.ndarray, weights: np.ndarray, width: float, points: int, least_modes: int = 0):
    """:func:`meanfield.metastable.smoothed_density` of every frame of ``theta`` ``(frames, n)``, and the
    coefficients it used (at least ``least_modes + 1`` of them): ``(densities, coefficients)``.

    Same heat kernel and mode cut as that function (modes kept while ``exp(-k^2 width^2 / 2) > 1e-17``),
    computed for all frames at once by :func:`frame_coefficients`."""
    kept = min(points // 2, int(math.ceil(math.sqrt(2 * math.log(1e17)) / width)))
    coefficients = frame_coefficients(theta, weights, max(kept, least_modes))
    k = np.arange(kept + 1)
    spectrum = np.zeros((coefficients.shape[0], points // 2 + 1), dtype=complex)
    spectrum[:, : kept + 1] = coefficients[:, : kept + 1] * np.exp(-0.5 * (k * width) ** 2)
    return fourier_series.values_from_sums(spectrum * points, points, axis=-1), coefficients


def particle_case(beta: float, settings: dict, seed: int = 0):
    """i.i.d. uniform tokens (``eps = n^{-1/2}``) to ``particle_horizon``: (runs, readout).

    Two segments: to ``horizon x`` the predicted formation time every ``save_every`` (formation), then
    on from the last positions every ``particle_horizon / LONG_FRAMES`` (plateaus and merges), so the
    saved positions stay a few hundred frames."""
    model = Model("sa", beta, 0.0, 2)
    n, points = settings["n"], settings["resolution"]
    eps = 1.0 / math.sqrt(n)
    t_formation = min(settings["particle_horizon"], settings["horizon"] * formation_time(model, eps))
    first = simulate(dim=2, n=n, attention="sa", beta=beta, init="uniform", seed=seed, t_final=t_formation,
                     save_every=settings["save_every"], rtol=1e-7)
    runs = [first]
    if settings["particle_horizon"] > t_formation:
        remaining = settings["particle_horizon"] - t_formation
        last = first.positions.values[-1]
        runs.append(simulate(dim=2, n=n, attention="sa", beta=beta, seed=seed, t_final=remaining,
                             save_every=remaining / LONG_FRAMES, rtol=1e-7, positions=last,
                             weights=first.weights.values))
    times = np.concatenate([first.time.values] + [run.time.values[1:] + t_formation for run in runs[1:]])
    theta = np.concatenate([first.theta.values] + [run.theta.values[1:] for run in runs[1:]])
    energies = np.concatenate([first.energy.values] + [run.energy.values[1:] for run in runs[1:]])
    weights = first.weights.values
    densities, all_coefficients = smoothed_densities(theta, weights, SMOOTHING_WIDTH, points, AMPLITUDE_MODES)
    amplitudes = np.abs(all_coefficients[:, : AMPLITUDE_MODES + 1])
    coefficients = all_coefficients[0, : AMPLITUDE_MODES + 1]
    readout = _formation_readout(times, densities, energies, amplitudes, coefficients, model, beta,
                                 tokens=(theta, weights))
    readout.update(eps=eps, t_form_issue=formation_time(model, eps), t_reached=float(times[-1]), size=n,
                   stop_reason="; ".join(sorted({run.attrs["stop_reason"] for run in runs})),
                   series=(times, energies))
    return runs, readout


def _table(rows: list[dict], cases: list[tuple], attrs: dict) -> xr.Dataset:
    scalars = ["k_star", "rate", "eps", "size", "t_form_issue", "t_form_refined", "t_form_linear", "t_half", "t_formed",
               "count_at_formation", "angle_error_kstar", "angle_error_linear", "t_emergence",
               "angle_error_emergence", "grid_spacing",
               "first_merge_time", "t_reached"]
    data = {name: ("case", np.array([row[name] for row in rows])) for name in scalars}
    data["stop_reason"] = ("case", np.array([row["stop_reason"] for row in rows], dtype=object))
    shape = (len(rows), MAX_PLATEAUS)
    plateau = {"plateau_count": np.full(shape, -1), "plateau_start": np.full(shape, np.nan),
               "plateau_end": np.full(shape, np.nan), "plateau_energy": np.full(shape, np.nan),
               "plateau_point_energy": np.full(shape, np.nan), "plateau_variance": np.full(shape, np.nan)}
    for i, row in enumerate(rows):
        for j, (p, energy_of_points, variance) in enumerate(row["plateaus"]):
            plateau["plateau_count"][i, j], plateau["plateau_start"][i, j] = p.count, p.start
            plateau["plateau_end"][i, j], plateau["plateau_energy"][i, j] = p.end, p.energy
            plateau["plateau_point_energy"][i, j] = energy_of_points
            plateau["plateau_variance"][i, j] = variance
    data.update({name: (("case", "plateau"), values) for name, values in plateau.items()})
    coords = {"case": np.arange(len(rows)), "plateau": np.arange(MAX_PLATEAUS),
              "beta": ("case", np.array([beta for beta, _ in cases])),
              "source": ("case", np.array([source for _, source in cases], dtype=object))}
    ds = xr.Dataset(data, coords=coords, attrs=netcdf_safe(attrs))
    ds["plateau_energy"].attrs["long_name"] = "exp(-beta) E at the end of the plateau"
    ds["plateau_point_energy"].attrs["long_name"] = "exp(-beta) E of the plateau's clusters collapsed to points"
    ds["plateau_variance"].attrs["long_name"] = "largest angular variance of a cluster at the end of the plateau"
    return ds


def study_settings(quick: bool, betas=None, n=None) -> dict:
    """The preset with ``betas`` and the particle count ``n`` given (None: the preset's), checked: the linear
    theory the claims test needs a growing mode (``beta > 0``) and the particles at least two tokens."""
    settings = dict(QUICK if quick else FULL)
    if betas is not None:
        settings["betas"] = tuple(float(beta) for beta in betas)
        require(len(betas) >= 1 and all(beta > 0 for beta in settings["betas"]),
                f"--beta must be > 0 for this study: at beta = 0 no mode grows (got "
                f"{', '.join(f'{beta:g}' for beta in settings['betas'])})")
    if n is not None:
        require(int(n) == n and n >= 2, f"--n must be an integer >= 2 for this study (got {n:g})")
        settings["n"] = int(n)
    return settings


def run_study(quick: bool = False, out_dir="metastability-study", scheme: str = "fv", seed: int = 0, betas=None,
              n: int | None = None) -> xr.Dataset:
    """Run every case, write the table, the runs and the figure; returns the table.  ``betas`` and the particle
    count ``n`` replace the preset's (every claim's theory value and tolerance is computed for the case's own beta
    and, for particles, its ``eps = n^-1/2``)."""
    settings = study_settings(quick, betas, n)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = _time.perf_counter()
    rows, cases, runs = [], [], {}
    bar = progress_bar(2 * len(settings["betas"]), "metastability")
    for beta in settings["betas"]:
        for source in SOURCES:
            if source == "pde":
                run, row = pde_case(beta, settings, scheme, seed)
                save_run(run, out / f"pde_beta{beta:g}.nc")
            else:
                segments, row = particle_case(beta, settings, seed)
                for segment, suffix in zip(segments, ("formation", "long")):
                    save_run(segment, out / f"particles_beta{beta:g}_{suffix}.nc")
                run = segments[0]
            rows.append(row)
            cases.append((beta, source))
            runs[(beta, source)] = (run, row)
            bar.update()
    bar.close()
    attrs = dict(settings, eps=EPS, scheme=scheme, seed=seed, smoothing_width=SMOOTHING_WIDTH, quick=int(quick),
                 package_version=package_version(), wall_time=_time.perf_counter() - start,
                 command=STUDIES["metastability"].command(quick, out_dir, {
                     "beta": None if betas is None else ",".join(f"{beta:g}" for beta in settings["betas"]),
                     "n": n, "seed": seed or None}))
    table = _table(rows, cases, attrs)
    write_dataset(table, out / "metastability.nc")
    save_figure(plot_study(runs, settings), out / "metastability.png")
    return table


def plot_study(runs: dict, settings: dict) -> Figure:
    """Top: the PDE density relative to uniform in (angle, time), with its colour bar, the predicted
    formation times and the angles predicted from the phase of mode k*.  Bottom: cluster count (steps)
    and energy (dashed, right axis) against time on a log axis, PDE and particles, predicted formation dotted."""
    betas = settings["betas"]
    fig = Figure(figsize=(5.6 * len(betas), 9.0), layout="constrained")
    rows = fig.subfigures(2, 1)      # rows laid out apart: the twin axes below do not push the colour bars above
    axes = np.array([row.subplots(1, len(betas), squeeze=False)[0] for row in rows])
    for column, beta in enumerate(betas):
        run, row = runs[(beta, "pde")]
        ax = axes[0, column]
        deviation_heat_map(rows[0], ax, run.theta.values, run.time.values, run.density.values, mean_density(run))
        theta_axis(ax)
        for label, t, style in ((r"$\log(1/A)/\lambda_{k^*}$ (law mean)", row["t_form_issue"], ":"),
                                (r"from $|a_{k^*}(0)|$", row["t_form_refined"], "--"),
                                ("from all modes (linearised)", row["t_form_linear"], "-.")):
            ax.axhline(t, color="k", ls=style, lw=1.2, label=f"formation predicted {label}")
        if math.isfinite(row["t_formed"]):
            coefficients = fourier_series.sums(run.density.values[0])
            predicted = kstar_angles(coefficients[row["k_star"]], row["k_star"])
            ax.plot(predicted, np.full(predicted.size, row["t_formed"]), "k^", ms=7, mfc="yellow",
                    label="cluster angles from the phase of mode $k^*$ (at the measured formation)")
        ax.set_title(f"PDE ({run.attrs['scheme']}), $\\beta$ = {beta:g}, $k^*$ = {row['k_star']}")
        top_handles = ax.get_legend_handles_labels()
        ax = axes[1, column]
        energy_axis = ax.twinx()
        handles = []
        for source, colour in zip(SOURCES, ("C0", "C1")):
            _, row_s = runs[(beta, source)]
            times, energies = row_s["series"]
            counts = np.zeros(times.size)
            for plateau, *_ in row_s["plateaus"]:
                counts[(times >= plateau.start) & (times <= plateau.end)] = plateau.count
            label = "PDE" if source == "pde" else f"particles, n = {row_s['size']}"
            handles += ax.step(times[1:], counts[1:], where="post", color=colour, label=f"{label}: clusters")
            handles += energy_axis.plot(times[1:], energies[1:], color=colour, ls="--", lw=1,
                                        label=f"{label}: energy (right axis)")
            handles.append(ax.axvline(row_s["t_form_refined"], color=colour, ls=":", lw=1.2,
                                      label=f"{label}: formation predicted"))
        ax.set(xscale="log", xlabel="time $t$ (log scale)", ylabel="number of clusters (on plateaus)",
               title=f"$\\beta$ = {beta:g}: clusters and energy against time")
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, alpha=0.3)
        energy_axis.set_ylabel(r"energy $e^{-\beta} E$")
        bottom_handles = handles
    # the entries are the same in every column: one legend above the maps, one below the curves
    columns = min(3, len(betas))      # a legend column per panel column: never wider than the figure
    rows[0].legend(*top_handles, loc="outside upper center", ncol=columns, fontsize="small", frameon=False)
    rows[1].legend(bottom_handles, [h.get_label() for h in bottom_handles], loc="outside lower center",
                   ncol=columns, fontsize="small", frameon=False)
    return fig


#: What each column of :func:`format_table` holds (the module docstring says how each is computed).
TABLE_KEY = (
    "k*: dominant mode (MATH.md §2.3); count: clusters at formation (measured)",
    "t_law: predicted formation time log(1/A)/lambda_k*, A the typical start amplitude (MATH.md §2.4); "
    "t_a(0): predicted from this start's amplitude of mode k*; t_lin: from all its modes, linearised",
    "t_half: largest 2 pi |rho_k| crosses 1/2 (measured); t_formed: start of the first plateau with clusters",
    "err_k*, err_lin: largest angle (rad) from a cluster to the nearest predicted by mode k*'s phase / by the "
    "linearised solution at t_formed; err_emg: the same at emergence (largest 2 pi |rho_k| = 0.1)",
    "grid: cell width 2 pi / N (rad); merge1: first merge time; plateaus: count: start-end, energy E, "
    "E of the clusters collapsed to points")


def format_table(ds: xr.Dataset) -> str:
    """One line per (beta, source) case, then :data:`TABLE_KEY`: what each column holds."""
    lines = [f"{'beta':>5} {'source':>9} {'k*':>3} {'count':>5} {'t_law':>8} {'t_a(0)':>9} {'t_lin':>8} {'t_half':>7} "
             f"{'t_formed':>8} {'err_k*':>7} {'err_lin':>7} {'err_emg':>7} {'grid':>6} {'merge1':>8}  plateaus (count: start-end, E, E_points)"]
    for i in range(ds.sizes["case"]):
        row = ds.isel(case=i)
        text = []
        for j in range(ds.sizes["plateau"]):
            if int(row.plateau_count[j]) < 0:
                break
            text.append(f"{int(row.plateau_count[j])}: {float(row.plateau_start[j]):.3g}-{float(row.plateau_end[j]):.4g}, "
                        f"{float(row.plateau_energy[j]):.4g}, {float(row.plateau_point_energy[j]):.4g}")
        lines.append(f"{float(row.beta):5g} {str(row.source.values):>9} {int(row.k_star):3d} {int(row.count_at_formation):5d} "
                     f"{float(row.t_form_issue):8.2f} {float(row.t_form_refined):9.2f} {float(row.t_form_linear):8.2f} "
                     f"{float(row.t_half):7.2f} "
                     f"{float(row.t_formed):8.2f} {float(row.angle_error_kstar):7.4f} {float(row.angle_error_linear):7.4f} {float(row.angle_error_emergence):7.4f} "
                     f"{float(row.grid_spacing):6.4f} {float(row.first_merge_time):8.2f}  " + "; ".join(text))
    return "\n".join(lines + ["key:"] + [f"  {line}" for line in TABLE_KEY])


# --------------------------------------------------------------------------------------------- claims
def kstar_lead(beta: float, eps: float) -> float:
    """How far mode ``k*`` outgrows its neighbours by formation, in standard deviations of a start's log amplitude
    (a Rayleigh amplitude's log has ``pi / sqrt 24``, MATH.md §2.4): ``min_{k = k* +- 1} (1 - lambda_k / lambda_k*)
    log(1 / eps)`` over that.  Small (a near tie): another mode may form first, and the count and time of mode
    ``k*`` are not what the start predicts."""
    model = Model("sa", beta, 0.0, 2)
    k = dominant_mode(model)
    rates = growth_rates(model, [k, *(j for j in (k - 1, k + 1) if j >= 1)])
    return float(np.min(1 - rates[1:] / rates[0]) * math.log(1 / eps) / (math.pi / math.sqrt(24)))


def _lead_caveat(rows) -> str:
    """What the claims on mode k* assume, with its lead at each row's beta and eps (none for a table without eps)."""
    leads = ", ".join(f"{kstar_lead(float(row.beta), float(row.eps)):.2g}" for row in rows if "eps" in row)
    if not leads:
        return ""
    return (f"; it assumes mode k* forms first: its lead over its neighbours (kstar_lead) is {leads} standard "
            f"deviations of a start's log amplitude here; at a near tie (below about 2, MATH.md §2.4) the count at "
            f"formation is random, and this claim holds only for some starts (the formation-count study)")


def metastability_claims(table) -> list[Check]:
    pde = table.where(table.source == "pde", drop=True)
    checks = [equal("The PDE forms k* clusters, k* from the linear theory (cluster count at formation)",
                    pde.k_star.values, pde.count_at_formation.values,
                    source="exact: counts; k* = argmax lambda_k (MATH.md §2.3)"
                           + _lead_caveat(pde.isel(case=i) for i in range(pde.sizes["case"])))]
    for i in range(pde.sizes["case"]):
        row = pde.isel(case=i)
        checks.append(below(f"beta = {float(row.beta):g}: emerging maxima sit at the linearised solution's "
                            f"(largest angle error, rad)", row.angle_error_emergence,
                            EMERGENCE / float(row.k_star),
                            source=f"theory: at emergence the largest amplitude is A = {EMERGENCE:g}; the "
                                   f"quadratic terms, O(A^2) against the linear O(A), move maxima by O(A / k*)"))
    for i in range(table.sizes["case"]):
        row = table.isel(case=i)
        rate = float(row.rate)
        checks.append(close(f"beta = {float(row.beta):g}, {row.source.values}: formation time from the initial "
                            f"amplitude of mode k*", float(row.t_form_refined), row.t_formed,
                            1.0 / rate + float(table.attrs["save_every"]),
                            source="theory: the linear growth of mode k* (MATH.md §2.3) fixes when it reaches 1/2; "
                                   "clusters show at an O(1) amplitude within a factor e of that, one e-fold "
                                   "1 / lambda_k*, located to one saved frame" + _lead_caveat([row])))
    clustered = table.plateau_count > 0
    gap = np.abs(table.plateau_energy / table.plateau_point_energy - 1).where(clustered)
    bound = table.beta * table.plateau_variance + 2 * np.log2(table["size"]) * EPSILON
    checks.append(at_most("Plateau energy is that of point clusters (largest relative gap over its bound "
                          "beta sigma^2 + round-off)", (gap / bound).max(), 1.0, theory="≤ 1",
                          source="theory: a cluster of angular variance sigma^2 has self-energy short of a point's by "
                                 "at most beta sigma^2 (1 - exp(beta (cos d - 1)) <= beta d^2 / 2, <d^2> = 2 sigma^2; "
                                 "MATH.md §5); cross terms only add (beta sin^2 D >= cos D); both energies are sums "
                                 "rounded to 2 log2(size) eps.  Finite volume: grid cells and handed-over points are "
                                 "read as tokens at the cells' centres and the points' own positions, and sigma^2 "
                                 "includes the cells' h^2 / 12 (a bound for the grid's share)"))
    return checks


def main(argv=None) -> xr.Dataset:
    return study_main(argv, "Metastable clusters on the circle against the linear theory.", "metastability-study",
                      run_study, format_table, "metastability")


if __name__ == "__main__":
    main()
