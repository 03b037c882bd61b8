"""Study: causal (decoder) attention, MATH.md §8 — the kinetic PDE, its linear theory, particles.

* **Exact reductions.**  Data independent of ``s``: every slice of the kinetic PDE against the ordinary
  solver run side by side (circle and S^2, SA and USA, ``lambda = 0`` and ``> 0``): largest relative difference.
* **Linear regime.**  PDE runs from ``f = f_0 (1 + eps u0(s) sum_l phi_l)`` (``u0`` a Gaussian in ``s``, ``phi_l``
  the zonal harmonics of degrees 1..3, ``eps = 1e-7``) against the Green's function solution
  (:func:`meanfield.causal_theory.evolve_mode`) per degree, on nested position grids: the error at each grid and
  its fitted order (the product trapezoid rule: 2).
* **Mean field.**  Causal circle particles (ordered tokens, token ``j`` drawn from ``f_0(j / n, .)``, a von Mises
  law whose centre turns with ``s``) against the kinetic PDE from ``f_0``: ``W1`` per position window at
  ``t = T`` (:func:`meanfield.analysis.wasserstein1_circle`), mean over seeds, fitted rate against ``n``.
* **Lost in the middle.**  The last token's response to a perturbation placed at position ``s0`` with the
  wrapped-Gaussian angular profile ``sum_k omega_k cos(k theta)``, from PDE runs whose perturbation is a
  Gaussian bump in ``s`` of unit mass: a bump of width ``w`` gives ``S_t`` smoothed by it,
  ``S_t(s0) + (w^2 / 2) S_t''(s0) + O(w^4)``, so two widths (:data:`BUMP_WIDTHS`, each on two position grids
  combined by Richardson extrapolation in ``ds``) extrapolate to ``S_t(s0)`` itself, compared with the formula
  at ``t = t_crit / 2`` (U-shaped) and ``2 t_crit`` (monotone).  ``t_crit`` is measured from runs whose
  perturbation is a dipole at ``s = 1`` (moments 0, 1, 0, 0 of ``s - 1``): the response is then the slope
  ``dS_t/ds(1)``, whose zero is ``t_crit``, at three ``(beta, lambda)`` (two grids, Richardson).
* **Causal clustering.**  Particles (SA, ``Q = K = V = I``, circle): token 1 fixed to round-off, the cluster
  count against ``log t``, every token ending at token 1's direction, the metastable centres
  (:func:`causal_clustering`).

Output (``out_dir``): ``causal.nc`` and ``causal.png``.  Run: ``meanfield validate causal [--quick]``.
"""

from __future__ import annotations

import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from scipy.special import eval_legendre, i0e
from scipy.stats import vonmises

from meanfield.analysis import wasserstein1_circle
from meanfield.attention_kind import attention_kind
from meanfield.causal_theory import end_slope, evolve_mode, lost_in_the_middle, mode_rates, profile_weights, t_crit
from meanfield.errors import require
from meanfield.geometries import geometry_of
from meanfield.model import Model
from meanfield.plotting.style import outside_legend
from meanfield.solvers.runs.solve import solve
from meanfield.app.storage import netcdf_safe, package_version
from meanfield.fits import log_log_slope

from ..claims import Check, at_most, between, close, equal, within_errors
from ..harness import progress_bar, save_figure, study_main, write_dataset
from ..registry import STUDIES

#: Amplitude of the linear-regime perturbations (the nonlinear terms are eps times smaller).
EPS = 1e-7
#: The linear runs' tolerance and degrees.
LINEAR_RTOL = 1e-12
LINEAR_DEGREES = (1, 2, 3)
#: The linear runs' profile in position: a Gaussian centred at 0.4 of width 0.2.
LINEAR_CENTRE, LINEAR_WIDTH = 0.4, 0.2
#: The lost-in-the-middle profile: omega_k = exp(-pi^2 k^2 / (2 M^2)), k <= K (MATH.md §8).
PROFILE_WIDTH, PROFILE_MODES = 4.0, 6
#: Widths in s of the bumps of the profile runs, each with its two position grids (Richardson in ds), and the
#: width of the dipole of the t_crit runs.  A bump stays 5 widths inside [0, 1] (its tail is not cut off).
BUMP_WIDTHS = ((0.03, (129, 257)), (0.015, (257, 513)))
DIPOLE_WIDTH = 0.06
#: The mean-field runs: beta, lambda, the von Mises concentration, the end time, windows in s.
MEAN_FIELD = {"beta": 4.0, "alibi": 1.0, "kappa": 1.0, "t_final": 2.0, "windows": 4}

FULL = {"linear_positions": (65, 129, 257), "sphere_cases": (("sa", 0.0), ("sa", 2.0), ("usa", 0.0), ("usa", 2.0)),
        "mf_sizes": (1000, 4000, 16000, 64000), "mf_seeds": 3, "mf_positions": 129,
        "profile_positions": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8), "profile_grids": (129, 257),
        "tcrit_cases": ((4.0, 1.0), (9.0, 2.0), (16.0, 0.5)), "cluster": {"n": 200, "beta": 64.0}}
QUICK = {"linear_positions": (65, 129, 257), "sphere_cases": (("sa", 2.0), ("usa", 0.0)),
         "mf_sizes": (1000, 4000, 16000), "mf_seeds": 2, "mf_positions": 65,
         "profile_positions": (0.2, 0.5, 0.8), "profile_grids": (129, 257),
         "tcrit_cases": ((4.0, 1.0), (9.0, 2.0), (16.0, 0.5)), "cluster": {"n": 64, "beta": 16.0}}


# ------------------------------------------------------------------------------------------ helpers
def zonal_harmonic(geometry: str, degree: int, *points) -> np.ndarray:
    """``cos(k theta)`` (circle) or ``P_l(cos theta)`` (S^2, colatitude ``theta`` and longitude in radians, the
    package's callable convention, MATH.md §2.2): value 1 at the pole."""
    if geometry_of(geometry).fourier:
        return np.cos(degree * points[0])
    return eval_legendre(degree, np.cos(points[0])) + 0.0 * points[1]


def harmonic_norm(geometry: str, degree: int) -> float:
    """The stored amplitude of ``f_0 phi_l`` per unit: circle ``|rho_hat_k| = 1 / (4 pi)``; S^2 the orthonormal
    ``|rho_l0| = sqrt(4 pi / (2l + 1)) / (4 pi)``."""
    if geometry_of(geometry).fourier:
        return 1.0 / (4 * math.pi)
    return math.sqrt(4 * math.pi / (2 * degree + 1)) / (4 * math.pi)


def perturbed(geometry: str, profile, weights: dict):
    """``f(s, *points) = f_0 (1 + EPS profile(s) sum_l weights[l] phi_l)`` (``f_0`` uniform)."""
    area = 2 * math.pi if geometry_of(geometry).fourier else 4 * math.pi

    def density(s, *points):
        angular = sum(weight * zonal_harmonic(geometry, degree, *points) for degree, weight in weights.items())
        return (1.0 + EPS * profile(s) * angular) / area

    return density


def fitted_order(sizes, errors) -> float:
    """The slope of ``log error`` against ``log ds`` (``ds = 1 / (N_S - 1)``)."""
    spacing = 1.0 / (np.asarray(sizes, dtype=float) - 1)
    return log_log_slope(spacing, errors)


def richardson(coarse: np.ndarray, fine: np.ndarray) -> np.ndarray:
    """Second-order Richardson extrapolation from grids of spacing ``2 ds`` and ``ds``."""
    return (4 * fine - coarse) / 3


# ------------------------------------------------------------------------------------------ parts
def reduction(geometry: str, attention: str, alibi: float) -> float:
    """Largest relative difference between every slice of a causal run from s-independent data and the ordinary
    run (MATH.md §8's exact reduction)."""
    base = {"circle": dict(resolution=64, init="vmf:1@0+vmf:1@2", t_final=1.0),
            "sphere": dict(resolution=12, init="vmf:1@0,0+vmf:1@40,100", t_final=0.3)}[geometry]
    t_final = base["t_final"] * (1.0 if attention_kind(attention).normalised else math.exp(-2.0))
    settings = dict(base, attention=attention, beta=2.0, t_final=t_final, save_every=t_final / 2, rtol=1e-10)
    ordinary = solve(geometry, **settings)
    causal = solve(geometry, mask="causal", alibi=alibi, positions=5, **settings)
    reference = ordinary["density"].values[:, None]
    return float(np.max(np.abs(causal["density"].values - reference)) / np.max(np.abs(reference)))


def linear_case(geometry: str, attention: str, alibi: float, positions: int, beta: float = 4.0) -> float:
    """Largest error, relative to the largest amplitude, of every degree of :data:`LINEAR_DEGREES` at every
    position and frame against the Green's function solution (MATH.md §8)."""
    model = Model(attention, beta, 0.0, geometry_of(geometry).default_dim)
    rates = mode_rates(model, LINEAR_DEGREES)
    t_final = 2.5 / float(rates.max())
    profile = lambda s: np.exp(-0.5 * ((s - LINEAR_CENTRE) / LINEAR_WIDTH) ** 2)
    run = solve(geometry, attention=attention, beta=beta, resolution=16 if geometry_of(geometry).fourier else 6,
                mask="causal", alibi=alibi, positions=positions, init=perturbed(geometry, profile,
                                                                                 dict.fromkeys(LINEAR_DEGREES, 1.0)),
                t_final=t_final, save_every=t_final / 4, rtol=LINEAR_RTOL)
    errors = []
    for degree, rate in zip(LINEAR_DEGREES, rates):
        measured = run["mode_amplitude"].sel(mode=degree).values / (EPS * harmonic_norm(geometry, degree))
        theory = evolve_mode(profile, run["s"].values, run["time"].values, float(rate), alibi)
        errors.append(np.max(np.abs(measured - theory)) / np.max(np.abs(theory)))
    return float(max(errors))


def sample_ordered_tokens(n: int, seed: int, kappa: float) -> np.ndarray:
    """Angles of ``n`` ordered tokens, token ``j`` drawn from the von Mises law of centre ``pi s_j``, ``s_j = j / n``."""
    rng = np.random.default_rng(seed)
    centres = math.pi * np.arange(1, n + 1) / n
    return vonmises.rvs(kappa, loc=centres, random_state=rng)


def mean_field_density(kappa: float):
    """``f_0(s, theta)``: the von Mises density of centre ``pi s`` and concentration ``kappa``."""
    return lambda s, theta: np.exp(kappa * (np.cos(theta - math.pi * s) - 1.0)) / (2 * math.pi * i0e(kappa))


def mean_field_errors(sizes, seeds: int, positions: int, beta: float = MEAN_FIELD["beta"]) -> tuple[np.ndarray, xr.Dataset]:
    """``W1`` per window between causal particles and the kinetic PDE at ``t_final`` (shape (n, seed, window)), both at
    ``beta`` (default :data:`MEAN_FIELD`'s)."""
    from meanfield.solvers.runs.particle_run import simulate as simulate_particles

    p = dict(MEAN_FIELD, beta=beta)
    pde = solve("circle", beta=p["beta"], resolution=256, mask="causal", alibi=p["alibi"], positions=positions,
                init=mean_field_density(p["kappa"]), t_final=p["t_final"], save_every=p["t_final"], rtol=1e-10)
    s, final = pde["s"].values, pde["density"].isel(time=-1).values
    edges = np.linspace(0.0, 1.0, p["windows"] + 1)
    window_of = lambda x: np.minimum(np.searchsorted(edges, x, side="right") - 1, p["windows"] - 1)
    slice_window = window_of(s)
    densities = [final[slice_window == w].mean(axis=0) for w in range(p["windows"])]
    errors = np.empty((len(sizes), seeds, p["windows"]))
    for i, n in enumerate(sizes):
        for seed in range(seeds):
            angles = sample_ordered_tokens(n, seed, p["kappa"])
            run = simulate_particles(dim=2, n=n, beta=p["beta"], mask="causal", alibi=p["alibi"],
                                     positions=np.column_stack((np.cos(angles), np.sin(angles))),
                                     t_final=p["t_final"], save_every=p["t_final"], rtol=1e-10)
            theta = run["theta"].isel(time=-1).values
            token_window = window_of(np.arange(1, n + 1) / n)
            for w in range(p["windows"]):
                chosen = token_window == w
                errors[i, seed, w] = wasserstein1_circle(theta[chosen], np.ones(int(chosen.sum())), densities[w])
    return errors, pde


def _response(run, geometry_weights: np.ndarray, direct: float) -> np.ndarray:
    """``sum_k [cos-coefficient of 2 pi f at s = 1 / EPS - omega_k direct]``: the last token's response per frame."""
    modes = np.arange(1, geometry_weights.size + 1)
    theta = run["theta"].values
    last = run["density"].isel(s=-1).values
    coefficients = (last @ np.cos(np.outer(modes, theta)).T) * (4 * math.pi / theta.size)
    return (coefficients / EPS - geometry_weights * direct).sum(axis=1)


def bump_profile(s0: float, width: float):
    """A Gaussian bump of ``width`` centred at ``s0``, normalised to unit integral on the line."""
    scale = 1.0 / (width * math.sqrt(2 * math.pi))
    return lambda s: scale * np.exp(-0.5 * ((s - s0) / width) ** 2)


def profile_run(model: Model, alibi: float, s0: float, width: float, positions: int, times: np.ndarray) -> np.ndarray:
    """The last token's measured response to a bump of ``width`` at ``s0`` at ``times`` (one PDE run)."""
    weights = profile_weights(PROFILE_WIDTH, PROFILE_MODES)
    profile = bump_profile(s0, width)
    init = perturbed("circle", profile, {k: float(w) for k, w in enumerate(weights, 1)})
    run = solve("circle", attention=model.attention, beta=model.beta, resolution=64, mask="causal", alibi=alibi,
                positions=positions, init=init, t_final=float(times[-1]), save_every=float(times[0]),
                rtol=LINEAR_RTOL)
    response = _response(run, weights, float(profile(1.0)))
    return np.interp(times, run["time"].values, response)


def smoothed_profile(model: Model, alibi: float, s0: float, width: float, times: np.ndarray) -> np.ndarray:
    """The theory of :func:`profile_run`: ``sum_k omega_k [evolve_mode(bump, 1) - bump(1)]`` (MATH.md §8)."""
    weights = profile_weights(PROFILE_WIDTH, PROFILE_MODES)
    rates = mode_rates(model, np.arange(1, PROFILE_MODES + 1))
    profile = bump_profile(s0, width)
    total = sum(w * (np.asarray(evolve_mode(profile, [1.0], times, float(rate), alibi))[:, 0] - profile(1.0))
                for w, rate in zip(weights, rates))
    return np.asarray(total, dtype=float)


def dipole(positions: int | None = None):
    """``u(s) = p((s - 1)/w) exp(-((s - 1)/w)^2 / 2)``, ``w`` = :data:`DIPOLE_WIDTH`, cubic ``p`` with
    ``int_{-oo}^1 (s - 1)^i u ds = (0, 1, 0, 0)`` for ``i = 0..3`` (half-line Gaussian moments)."""
    def half_moment(power: int) -> float:     # int_{-oo}^0 x^power e^{-x^2/2} dx
        return (-1) ** power * 2 ** ((power - 1) / 2) * math.gamma((power + 1) / 2)

    w = DIPOLE_WIDTH
    matrix = np.array([[w ** (i + 1) * half_moment(i + j) for j in range(4)] for i in range(4)])
    coefficients = np.linalg.solve(matrix, [0.0, 1.0, 0.0, 0.0])
    return lambda s: np.polyval(coefficients[::-1], (s - 1) / w) * np.exp(-0.5 * ((s - 1) / w) ** 2)


def measured_end_slope(model: Model, alibi: float, positions: int, times: np.ndarray) -> np.ndarray:
    """``dS_t/ds(1)`` measured from one PDE run whose perturbation is :func:`dipole` (module docstring)."""
    weights = profile_weights(PROFILE_WIDTH, PROFILE_MODES)
    profile = dipole()
    init = perturbed("circle", profile, {k: float(w) for k, w in enumerate(weights, 1)})
    run = solve("circle", attention=model.attention, beta=model.beta, resolution=64, mask="causal", alibi=alibi,
                positions=positions, init=init, t_final=float(times[-1]), save_every=float(times[1] - times[0]),
                rtol=LINEAR_RTOL)
    return np.interp(times, run["time"].values, _response(run, weights, float(profile(1.0))))


def first_zero(times: np.ndarray, values: np.ndarray) -> float:
    """The first sign change of ``values`` after ``t = 0`` (linear interpolation)."""
    change = np.nonzero(np.sign(values[1:-1]) != np.sign(values[2:]))[0]
    if change.size == 0:
        return math.nan
    i = int(change[0]) + 1
    return float(times[i] - values[i] * (times[i + 1] - times[i]) / (values[i + 1] - values[i]))


# ------------------------------------------------------------------------------------------ the study
def run_study(quick: bool = False, out_dir="causal-study", sizes=None, seeds: int | None = None,
              beta: float | None = None) -> xr.Dataset:
    """The study of the module docstring; writes ``causal.nc`` and ``causal.png``, returns the table.  The mean-field
    part's token counts ``sizes``, ``seeds`` (seeds ``0 .. seeds - 1``) and ``beta`` replace the preset's and
    :data:`MEAN_FIELD`'s (:func:`mean_field_settings`)."""
    preset = mean_field_settings(QUICK if quick else FULL, sizes, seeds)
    mean_field = dict(MEAN_FIELD, beta=mean_field_beta(beta))
    command = STUDIES["causal"].command(quick, out_dir, {
        "n": None if sizes is None else ",".join(str(n) for n in preset["mf_sizes"]), "seeds": seeds,
        "beta": None if beta is None else f"{beta:g}"})
    start = _time.perf_counter()
    grids = list(preset["linear_positions"])
    reduction_cases = [(g, a, lam) for g in ("circle", "sphere") for a in ("sa", "usa") for lam in (0.0, 2.5)]
    linear_cases = [("circle", a, lam) for a in ("sa", "usa") for lam in (0.0, 2.0)] + \
        [("sphere", a, lam) for a, lam in preset["sphere_cases"]]
    sizes, seeds = preset["mf_sizes"], preset["mf_seeds"]
    total = len(reduction_cases) + len(linear_cases) * len(grids) + 1 + len(sizes) * seeds \
        + len(preset["profile_positions"]) * 4 + len(preset["tcrit_cases"]) * 2 + 1
    with progress_bar(total, "causal study") as bar:
        def step(value):
            bar.update(1)
            return value

        reductions = [step(reduction(*case)) for case in reduction_cases]
        linear = np.array([[step(linear_case(*case, positions)) for positions in grids] for case in linear_cases])
        errors, pde = mean_field_errors(sizes, seeds, preset["mf_positions"], mean_field["beta"])
        bar.update(1 + len(sizes) * seeds)
        profile = lost_in_the_middle_profiles(preset, step)
        tcrit = measured_t_crits(preset, step)
        clusters = causal_clustering(**preset["cluster"])
        bar.update(1)
    mean_errors = errors.mean(axis=1)
    rates = np.array([[log_log_slope(sizes, errors[:, seed, window])
                       for window in range(errors.shape[2])] for seed in range(seeds)])
    ds = xr.Dataset(
        {"reduction_error": ("reduction_case", reductions,
                             {"long_name": "max |causal slice - ordinary run| / max density, s-independent data"}),
         "linear_error": (("linear_case", "positions"), linear,
                          {"long_name": "max |PDE mode - Green's function solution| / max amplitude (MATH.md §8)"}),
         "linear_order": ("linear_case", [fitted_order(grids, row) for row in linear],
                          {"long_name": "fitted order of the error in ds"}),
         "mf_w1": (("n", "seed", "window"), errors, {"long_name": "W1(tokens in the window, PDE window average)"}),
         "mf_w1_mean": (("n", "window"), mean_errors),
         "mf_rate_per_seed": (("seed", "window"), rates, {"long_name": "fitted exponent of W1 against n"}),
         "mf_rate": ((), float(rates.mean()), {"long_name": "mean fitted exponent over seeds and windows"}),
         "mf_rate_stderr": ((), float(rates.std(ddof=1) / math.sqrt(rates.size)),
                            {"long_name": "standard error of mf_rate (seeds x windows replicates)"}),
         **profile, **tcrit, **clusters},
        coords={"reduction_case": [f"{g} {a} lambda={lam:g}" for g, a, lam in reduction_cases],
                "linear_case": [f"{g} {a} lambda={lam:g}" for g, a, lam in linear_cases],
                "positions": grids, "n": list(sizes), "seed": np.arange(seeds),
                "window": (np.arange(MEAN_FIELD["windows"]) + 0.5) / MEAN_FIELD["windows"]},
        attrs=netcdf_safe(dict(quick=int(quick), eps=EPS, profile_width=PROFILE_WIDTH, profile_modes=PROFILE_MODES,
                               bump_widths=str(BUMP_WIDTHS), dipole_width=DIPOLE_WIDTH, package_version=package_version(),
                               wall_time=_time.perf_counter() - start, **{f"mf_{k}": v for k, v in mean_field.items()},
                               command=command)))
    out = Path(out_dir)
    write_dataset(ds, out / "causal.nc")
    save_figure(plot_study(ds), out / "causal.png")
    return ds


#: The command line's smallest ``--n`` of the mean-field part: each of its four windows in s holds 4 tokens or more.
MEAN_FIELD_SMALLEST_N = 16


def mean_field_settings(preset: dict, sizes=None, seeds: int | None = None) -> dict:
    """``preset`` with the mean-field part's ``mf_sizes`` and ``mf_seeds`` replaced by ``sizes``, ``seeds`` (the
    command line's ``--n``, ``--seeds``; a fitted rate needs two sizes)."""
    preset = dict(preset)
    if sizes is not None:
        require(len(set(sizes)) >= 2 and all(int(n) == n and n >= MEAN_FIELD_SMALLEST_N for n in sizes),
                f"--n must be two or more integers >= {MEAN_FIELD_SMALLEST_N} for this study "
                f"(got {', '.join(f'{n:g}' for n in sizes)})")
        preset["mf_sizes"] = tuple(sorted({int(n) for n in sizes}))
    if seeds is not None:
        preset["mf_seeds"] = int(seeds)
    return preset


def mean_field_beta(beta: float | None) -> float:
    """The mean-field part's beta: :data:`MEAN_FIELD`'s, or the command line's ``--beta`` in its range."""
    if beta is None:
        return MEAN_FIELD["beta"]
    require(math.isfinite(beta) and beta > 0, f"--beta must be > 0 for this study (got {beta:g})")
    return float(beta)


#: The (beta, lambda) of the lost-in-the-middle profile (circle, SA).
PROFILE_CASE = (4.0, 1.0)


def lost_in_the_middle_profiles(preset: dict, step) -> dict:
    """The response extrapolated from the runs (module docstring) at ``t_crit / 2`` and ``2 t_crit`` against ``S_t``,
    with the widest bump's runs against their own smoothed theory."""
    beta, alibi = PROFILE_CASE
    model = Model("sa", beta, 0.0, 2)
    weights = profile_weights(PROFILE_WIDTH, PROFILE_MODES)
    critical = t_crit(model, alibi, weights)
    times = np.array([0.5, 2.0]) * critical
    measured, wide, theory = [], [], []
    for s0 in preset["profile_positions"]:
        per_width = [richardson(*[step(profile_run(model, alibi, s0, width, grid, times)) for grid in grids])
                     for width, grids in BUMP_WIDTHS]
        (wide_width, _), (narrow_width, _) = BUMP_WIDTHS
        ratio = (wide_width / narrow_width) ** 2
        measured.append((ratio * per_width[1] - per_width[0]) / (ratio - 1))
        wide.append(per_width[0])
        theory.append(smoothed_profile(model, alibi, s0, wide_width, times))
    pointwise = np.array([lost_in_the_middle(model, alibi, float(t), preset["profile_positions"], weights)
                          for t in times]).T
    return {"profile_measured": (("profile_s", "profile_time"), np.array(measured),
                                 {"long_name": "last token's response to a perturbation at s, from PDE runs "
                                               "(extrapolated in bump width and ds)"}),
            "profile_wide": (("profile_s", "profile_time"), np.array(wide),
                             {"long_name": "response to the widest bump (PDE runs, Richardson in ds)"}),
            "profile_theory": (("profile_s", "profile_time"), np.array(theory),
                               {"long_name": "S_t smoothed by the widest bump (MATH.md §8)"}),
            "profile_pointwise": (("profile_s", "profile_time"), pointwise, {"long_name": "S_t(s) (MATH.md §8)"}),
            "profile_t_crit": ((), critical),
            "profile_s": ("profile_s", list(preset["profile_positions"])),
            "profile_time": ("profile_time", times)}


def measured_t_crits(preset: dict, step) -> dict:
    """``t_crit`` from dipole runs (Richardson on two grids) against the formula, per ``(beta, lambda)``."""
    weights = profile_weights(PROFILE_WIDTH, PROFILE_MODES)
    coarse, fine = preset["profile_grids"]
    formula, measured, slope_error = [], [], []
    for beta, alibi in preset["tcrit_cases"]:
        model = Model("sa", beta, 0.0, 2)
        critical = t_crit(model, alibi, weights)
        times = np.linspace(0.0, 2.0 * critical, 81)
        slopes = richardson(*[step(measured_end_slope(model, alibi, grid, times)) for grid in (coarse, fine)])
        exact = np.array([end_slope(model, alibi, float(t), weights) for t in times])
        formula.append(critical)
        measured.append(first_zero(times, slopes))
        slope_error.append(float(np.max(np.abs(slopes - exact)) / np.max(np.abs(exact))))
    cases = [f"beta={b:g} lambda={lam:g}" for b, lam in preset["tcrit_cases"]]
    return {"t_crit_formula": ("tcrit_case", formula), "t_crit_measured": ("tcrit_case", measured),
            "end_slope_error": ("tcrit_case", slope_error,
                                {"long_name": "max |measured - exact dS/ds(1)| / max |exact|, t in [0, 2 t_crit]"}),
            "tcrit_case": ("tcrit_case", cases)}


# ------------------------------------------------------------------------------------------ causal clustering
#: The consensus run: a beta at which every token reaches token 1 in reachable time (at beta = 64 the last merges of
#: antipodal clusters take ``~exp(2 beta)``, MATH.md §5: out of reach of any run), its end time and save density.
CONSENSUS = {"beta": 4.0, "t_final": 1e4}
#: The metastable run's end time and frames per decade.
METASTABLE_T, PER_DECADE = 1e3, 8


def _angle_to_first(theta: np.ndarray) -> np.ndarray:
    """Per frame, every token's angular distance to token 1 (``theta``: (time, particle))."""
    return np.abs(np.angle(np.exp(1j * (theta - theta[:, :1]))))


def causal_clustering(n: int, beta: float, seed: int = 1, metastable_t: float = METASTABLE_T,
                      consensus_t: float = CONSENSUS["t_final"]) -> dict:
    """Two particle runs (SA, ``Q = K = V = I``, circle, uniform i.i.d. tokens, mask causal): the metastable run at
    ``beta`` (token 1's drift, the cluster count per frame, the centres of the last frame) and the consensus run at
    :data:`CONSENSUS` ``beta`` (every token's final distance to token 1)."""
    from meanfield.cluster_detection import clusters_in_frame
    from meanfield.solvers.runs.particle_run import simulate as simulate_particles

    runs = {}
    for name, b, t_final in (("metastable", beta, metastable_t), ("consensus", CONSENSUS["beta"], consensus_t)):
        runs[name] = simulate_particles(dim=2, n=n, beta=b, mask="causal", init="uniform", seed=seed,
                                        t_final=t_final, save_log=PER_DECADE)
    metastable, consensus = runs["metastable"], runs["consensus"]
    theta = metastable["theta"].values
    counts = [clusters_in_frame(metastable, index).count for index in range(metastable.sizes["time"])]
    last = clusters_in_frame(metastable)
    distance = _angle_to_first(consensus["theta"].values)
    return {"cluster_time": ("cluster_time", metastable["time"].values),
            "cluster_count": ("cluster_time", counts, {"long_name": f"clusters of the tokens (n = {n}, beta = {beta:g})"}),
            "token1_drift": ((), float(max(np.max(np.abs(run["theta"].values[:, 0] - run["theta"].values[0, 0]))
                                           for run in runs.values())),
                             {"long_name": "largest change of token 1's angle over both runs"}),
            "metastable_centres": ("centre", np.sort(last.angles), {"long_name": "cluster centres, last frame"}),
            "metastable_masses": ("centre", last.masses[np.argsort(last.angles)]),
            "consensus_time": ("consensus_time", consensus["time"].values),
            "consensus_distance": ("consensus_time", distance.max(axis=1),
                                   {"long_name": f"largest distance to token 1 (beta = {CONSENSUS['beta']:g})"}),
            "first_token_angle": ((), float(theta[0, 0])),
            "cluster_n": ((), n), "cluster_beta": ((), beta),
            "consensus_rtol": ((), float(consensus.attrs["rtol"]))}


# ------------------------------------------------------------------------------------------ figure and table
def plot_study(ds: xr.Dataset) -> Figure:
    """Six panels: linear error against N_S; mean-field W1 against n; the lost-in-the-middle profile; the end slope
    zero against the formula; the cluster count against log t; the distance to token 1 (consensus)."""
    fig = Figure(figsize=(18, 10), layout="constrained")
    axes = fig.subplots(2, 3)
    ax = axes[0, 0]
    spacing = 1.0 / (ds["positions"].values - 1)
    for case in ds["linear_case"].values:
        ax.loglog(spacing, ds["linear_error"].sel(linear_case=case), "o-", label=str(case))
    ax.loglog(spacing, 0.5 * ds["linear_error"].values.max() * (spacing / spacing[0]) ** 2, "k--", label="ds^2")
    ax.set_xlabel("position spacing ds")
    ax.set_ylabel("relative error vs Green's function")
    ax.set_title("(a) linear regime (MATH.md §8)")
    outside_legend(ax, *ax.get_legend_handles_labels(), fontsize="small")
    ax = axes[0, 1]
    sizes = ds["n"].values
    for w in ds["window"].values:
        ax.loglog(sizes, ds["mf_w1_mean"].sel(window=w), "o-", label=f"window s ~ {w:.3g}")
    ax.loglog(sizes, ds["mf_w1_mean"].values.mean() * (sizes / sizes.mean()) ** -0.5, "k--", label="n^-1/2")
    ax.set_xlabel("tokens n")
    ax.set_ylabel("W1(tokens, PDE)")
    ax.set_title(f"(b) mean field: fitted exponent {float(ds['mf_rate']):.3f}")
    outside_legend(ax, *ax.get_legend_handles_labels(), fontsize="small")
    ax = axes[0, 2]
    for index, time in enumerate(ds["profile_time"].values):
        colour = f"C{index}"
        ax.plot(ds["profile_s"], ds["profile_measured"][:, index], "o", color=colour, label=f"runs, t = {time:.3g}")
        ax.plot(ds["profile_s"], ds["profile_pointwise"][:, index], "-", color=colour, label="S_t(s), MATH.md §8")
    ax.set_xlabel("position s of the perturbation")
    ax.set_ylabel("last token's response")
    ax.set_yscale("log")
    ax.set_title(f"(c) lost in the middle (t_crit = {float(ds['profile_t_crit']):.4g})")
    outside_legend(ax, *ax.get_legend_handles_labels(), fontsize="small")
    ax = axes[1, 0]
    formula, measured = ds["t_crit_formula"].values, ds["t_crit_measured"].values
    ax.plot(formula, measured, "o")
    ax.plot([0, formula.max() * 1.1], [0, formula.max() * 1.1], "k--", lw=0.8)
    for case, x, y in zip(ds["tcrit_case"].values, formula, measured):
        ax.annotate(str(case), (x, y), fontsize="small")
    ax.set_xlabel("t_crit, formula (MATH.md §8)")
    ax.set_ylabel("t_crit, measured (dipole runs)")
    ax.set_title("(d) the end slope's zero")
    ax = axes[1, 1]
    ax.semilogx(ds["cluster_time"][1:], ds["cluster_count"][1:], drawstyle="steps-post")
    ax.set_xlabel("time t")
    ax.set_ylabel("clusters")
    ax.set_title(f"(e) causal clustering, n = {int(ds['cluster_n'])}, beta = {float(ds['cluster_beta']):g}")
    ax = axes[1, 2]
    ax.loglog(ds["consensus_time"][1:], np.maximum(ds["consensus_distance"][1:], 1e-17))
    ax.set_xlabel("time t")
    ax.set_ylabel("max distance to token 1 (rad)")
    ax.set_title(f"(f) consensus at beta = {CONSENSUS['beta']:g}: every token at token 1")
    return fig


def format_table(ds: xr.Dataset) -> str:
    lines = ["causal attention (MATH.md §8)",
             "exact reductions (s-independent data): max relative difference to the ordinary run"]
    lines += [f"  {case:<28} {value:.2e}" for case, value in zip(ds["reduction_case"].values,
                                                                  ds["reduction_error"].values)]
    lines.append("linear regime: relative error against the Green's function, per N_S, and the fitted order")
    lines.append(f"  {'case':<28} " + " ".join(f"{int(p):>9}" for p in ds["positions"].values) + "     order")
    for case in ds["linear_case"].values:
        row = ds.sel(linear_case=case)
        lines.append(f"  {case:<28} " + " ".join(f"{e:9.2e}" for e in row["linear_error"].values)
                     + f" {float(row['linear_order']):9.3f}")
    lines.append(f"mean field (beta = {float(ds.attrs['mf_beta']):g}): mean W1 per position window (columns) against n; "
                 "fitted exponent "
                 f"{float(ds['mf_rate']):.3f} +- {float(ds['mf_rate_stderr']):.3f} (seeds x windows)")
    for n in ds["n"].values:
        lines.append(f"  n = {int(n):>7} " + " ".join(f"{e:9.3e}" for e in ds["mf_w1_mean"].sel(n=n).values))
    lines.append(f"lost in the middle (beta, lambda = {PROFILE_CASE}): response at s: runs extrapolated / S_t(s); "
                 "widest bump: runs / theory")
    for index, time in enumerate(ds["profile_time"].values):
        lines.append(f"  t = {time:.4g}")
        for s in ds["profile_s"].values:
            cell = ds.sel(profile_s=s).isel(profile_time=index)
            lines.append(f"    s = {s:4.2f}  {float(cell['profile_measured']):12.7g} {float(cell['profile_pointwise']):12.7g}"
                         f"   {float(cell['profile_wide']):12.7g} {float(cell['profile_theory']):12.7g}")
    lines.append("t_crit: formula, measured from dipole runs, relative difference, max end-slope error")
    for case in ds["tcrit_case"].values:
        cell = ds.sel(tcrit_case=case)
        formula, measured = float(cell["t_crit_formula"]), float(cell["t_crit_measured"])
        lines.append(f"  {case:<22} {formula:10.6g} {measured:10.6g} {measured / formula - 1:10.2e} "
                     f"{float(cell['end_slope_error']):10.2e}")
    lines.append(f"causal clustering (n = {int(ds['cluster_n'])}, beta = {float(ds['cluster_beta']):g}): token 1 drift "
                 f"{float(ds['token1_drift']):.1e}; clusters at t = {float(ds['cluster_time'][-1]):.3g}: "
                 f"{int(ds['cluster_count'][-1])}, centres " + ", ".join(f"{a:.3f}" for a in
                                                                          ds["metastable_centres"].values))
    lines.append(f"consensus (beta = {CONSENSUS['beta']:g}): max distance to token 1 at t = "
                 f"{float(ds['consensus_time'][-1]):.3g}: {float(ds['consensus_distance'][-1]):.2e} rad")
    lines.append(f"(wall time {ds.attrs['wall_time']:.1f} s)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- claims
def causal_claims(ds) -> list[Check]:
    """The causal study's checks (MATH.md §8)."""
    finest = ds["linear_error"].isel(positions=-1)
    profile = ds["profile_measured"].values
    pointwise = ds["profile_pointwise"].values
    early, late = profile[:, 0], profile[:, 1]
    replicates = int(ds["mf_rate_per_seed"].size)
    checks = [at_most("s-independent data: every slice is the ordinary run (largest relative difference)",
                      ds["reduction_error"].max(), 1e-12,
                      source="round-off: the positional average of equal slices is the slice to a few eps per step; "
                             "1e-12 allows 1e3 steps' growth"),
              at_most("Linear regime: modes against the Green's function at the finest N_S (largest relative error)",
                      finest.max(), 1e-4,
                      source="measured convergence: second-order error in ds, about 3.6e-5 at N_S = 257 "
                             "(and 4x larger at each coarser grid)"),
              between("Linear regime: fitted order of the position quadrature (smallest over cases)",
                      ds["linear_order"].min(), 1.8, 2.2, "2",
                      source="theory: the product trapezoid rule is second order in ds for a smooth profile"),
              within_errors("Causal particles converge to the kinetic PDE like n^-1/2 (fitted W1 exponent)", -0.5,
                            ds["mf_rate"], float(ds["mf_rate_stderr"]), f"{replicates} seed x window fits",
                            dof=replicates - 1),
              at_most("Lost in the middle: the runs' profile against S_t(s) (largest error / largest |S_t|)",
                      np.max(np.abs(profile - pointwise)) / np.max(np.abs(pointwise)), 1e-3,
                      source="theory: bumps of two widths remove the w^2 S'' term (w^4 left: 2e-4 at s = 0.2) and "
                             "Richardson in ds the ds^2 term"),
              equal("Lost in the middle: U-shaped before t_crit (interior minimum of the runs' profile)", 1,
                    int(np.argmin(early) not in (0, early.size - 1)),
                    source="exact: the profile's minimum is at an interior position or it is not"),
              equal("Lost in the middle: decreasing after t_crit (runs' profile at 2 t_crit)", 1,
                    int(bool(np.all(np.diff(late) < 0))), source="exact: the sign of every difference")]
    for case in ds["tcrit_case"].values:
        cell = ds.sel(tcrit_case=case)
        checks.append(close(f"t_crit measured from runs ({case}) against the formula (MATH.md §8)",
                            float(cell["t_crit_formula"]), cell["t_crit_measured"], 1e-2, relative=True,
                            source="theory: the dipole's fourth moment and ds^4 after Richardson leave about 1e-3"))
    checks += [at_most("Token 1 never moves (SA, mask causal): largest change of its angle", ds["token1_drift"],
                       1e-13, source="round-off: its velocity is P_x x = 0 exactly; 1e-13 is the issue's bound"),
               at_most("Every token ends at token 1's direction (consensus run, largest distance, rad)",
                       ds["consensus_distance"][-1], 100 * float(ds["consensus_rtol"]),
                       source="theory: Karagodin et al.'s consensus; the run resolves positions to about its rtol: "
                              "100 rtol")]
    return checks


def main(argv=None) -> xr.Dataset:
    return study_main(argv, "Causal attention: kinetic PDE, linear theory, particles (MATH.md §8).", "causal-study",
                      run_study, format_table, "causal")


if __name__ == "__main__":
    main()
