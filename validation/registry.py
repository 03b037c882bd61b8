"""The study registry: every ``meanfield validate NAME`` command, declared once (DESIGN.md "Validation").

Each :class:`Study` names its module, its quick and full presets (attributes of that module),
its runner, its table formatter, the figures it writes and its *claims*: the checks
"claim, theory value, measured value, tolerance, pass / fail" computed from the study's result,
with the theory values and tolerances that ``tests/validation`` asserts (a check that cannot fail
is not a claim).  Benchmarks have no claims: their printed table is their result.

The command line (:mod:`meanfield.cli`) and the report (:mod:`validation.report`) are generated
from :data:`STUDIES`; :mod:`validation.harness` runs an entry.  Importing this module imports no
study: a study's module is loaded when it runs.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


# --------------------------------------------------------------------------------------------- checks
@dataclass(frozen=True)
class Check:
    """One claim of a study: ``passed`` is ``measured`` against ``theory`` within ``tolerance``."""

    claim: str
    theory: str
    measured: float
    tolerance: str
    passed: bool


def _number(value) -> float:
    return float(np.asarray(value, dtype=float).reshape(-1)[0]) if np.size(value) == 1 else float(value)


def close(claim: str, theory: float, measured, tolerance: float, relative: bool = False) -> Check:
    """``|measured - theory| <= tolerance`` (times ``|theory|`` when ``relative``)."""
    measured = _number(measured)
    bound = tolerance * abs(theory) if relative else tolerance
    return Check(claim, f"{theory:g}", measured, f"{'relative ' if relative else ''}± {tolerance:g}",
                 bool(abs(measured - theory) <= bound))


def below(claim: str, measured, bound: float, theory: str = "0") -> Check:
    """``measured < bound`` (an error, a gap, a mismatch whose theory value is ``theory``)."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"< {bound:g}", bool(measured < bound))


def at_most(claim: str, measured, bound: float, theory: str = "0") -> Check:
    """``measured <= bound`` (an error that rounding alone makes)."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"≤ {bound:g}", bool(measured <= bound))


def at_least(claim: str, measured, bound: float, theory: str) -> Check:
    """``measured >= bound``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"≥ {bound:g}", bool(measured >= bound))


def above(claim: str, measured, bound: float, theory: str) -> Check:
    """``measured > bound``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"> {bound:g}", bool(measured > bound))


def between(claim: str, measured, low: float, high: float, theory: str) -> Check:
    """``low < measured < high``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"in ({low:g}, {high:g})", bool(low < measured < high))


def equal(claim: str, theory, measured) -> Check:
    """Exact agreement of counts (one value, or element by element: measured is then the largest difference)."""
    theory_values = np.asarray(theory, dtype=float).ravel()
    measured_values = np.asarray(measured, dtype=float).ravel()
    if theory_values.size == 1 and measured_values.size == 1:
        return Check(claim, f"{theory_values[0]:g}", float(measured_values[0]), "exact",
                     bool(theory_values[0] == measured_values[0]))
    same_shape = theory_values.shape == measured_values.shape
    gap = float(np.max(np.abs(measured_values - theory_values))) if same_shape and theory_values.size else math.nan
    return Check(claim + " (measured: largest difference)", " ".join(f"{v:g}" for v in theory_values), gap, "exact",
                 bool(same_shape and gap == 0))


def fraction(claim: str, flags) -> Check:
    """Every one of ``flags`` holds: measured is the fraction that does."""
    flags = np.asarray(flags, dtype=bool).ravel()
    share = float(flags.mean()) if flags.size else math.nan
    return Check(claim, "all", share, "all (measured: the share that holds)",
                 bool(flags.size and flags.all()))


# --------------------------------------------------------------------------------------------- studies
@dataclass(frozen=True)
class Study:
    """One registered study or benchmark.

    ``output`` is ``"folder"`` (``--out-dir``, default ``default_out``), ``"file"`` (an optional
    ``--out`` netCDF file) or ``None`` (a benchmark: nothing written).  ``run(module, quick, out)``
    returns the result; ``table(module, result)`` the printed table; ``wrote(out, result)`` the
    closing line; ``claims(result)`` the checks; ``figures`` the PNG files written in the folder
    (``None``: every PNG there).  ``presets`` are the names of the module's quick and full presets.
    """

    name: str
    module: str
    help: str
    quick_help: str
    output: str | None = "folder"
    default_out: str | None = None
    presets: tuple[str, str] | None = ("QUICK", "FULL")
    figures: tuple[str, ...] | None = ()
    run: Callable = None
    table: Callable = None
    wrote: Callable = None
    claims: Callable = field(default=lambda result: [])

    @property
    def benchmark(self) -> bool:
        return self.output is None

    def load(self):
        """The study's module (imported on first use)."""
        return importlib.import_module(f"validation.{self.module}")

    def preset(self, quick: bool):
        """The module's quick or full preset (``None`` when it has none by that name)."""
        if self.presets is None:
            return None
        return getattr(self.load(), self.presets[0 if quick else 1], None)

    def command(self, quick: bool, out) -> str:
        """The command line that re-runs this study into ``out``."""
        words = ["meanfield", "validate", self.name] + (["--quick"] if quick else [])
        if self.output == "folder":
            words += ["--out-dir", str(out)]
        elif self.output == "file" and out is not None:
            words += ["--out", str(out)]
        return " ".join(words)


def _run_study(module, quick: bool, out):
    return module.run_study(quick=quick, out_dir=out)


def _table(module, result) -> str:
    return module.format_table(result)


def _wrote_files(stem: str):
    return lambda out, result: f"wrote {out}/{stem}.nc and {out}/{stem}.png"


def _run_printed(module, quick: bool, out) -> str:
    """A benchmark: its ``main`` prints its tables; the result is the printed text."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        module.main(["--quick"] if quick else [])
    return buffer.getvalue()


def _printed(module, result) -> str:
    return result.rstrip("\n")


def _run_growth(module, quick: bool, out):
    return module.run_study(quick=quick)


def _run_castin(module, quick: bool, out):
    return module.run_all(quick=quick, out_dir=out)


def _castin_table(module, result) -> str:
    cone, blow, ranks, _ = result
    return module.format_table(cone, blow, ranks)


def folder_study(name: str, module: str, help: str, claims, figures=None) -> Study:
    """A study with ``run_study(quick, out_dir)`` writing ``out_dir/<module>.{nc,png}``; the default folder is
    the module's name with dashes and ``-study`` (``mean_field`` -> ``mean-field-study``)."""
    return Study(name, module, help, "The small size the test suite uses.", "folder",
                 f"{module.replace('_', '-')}-study",
                 figures=(f"{module}.png",) if figures is None else figures, run=_run_study, table=_table,
                 wrote=_wrote_files(module), claims=claims)


def benchmark(name: str, module: str, help: str, quick_help: str, presets=("QUICK_SIZES", "SIZES")) -> Study:
    """A benchmark: ``main([--quick])`` prints its table; no claims, nothing written.  ``presets``: the module's
    quick and full size lists (``None``: it has none)."""
    return Study(name, module, help, quick_help, None, None, presets, (), run=_run_printed, table=_printed)


# --------------------------------------------------------------------------------------------- claims
def growth_claims(table) -> list[Check]:
    return [below("Fitted linear growth rates of PDE runs equal the MATH.md §2.3 rates (largest relative error)",
                  table["relative_error"].max(), 2e-3)]


def mean_field_claims(ds) -> list[Check]:
    checks = []
    at = ds.sel(time=1.0) if 1.0 in ds["time"].values else ds.isel(time=0)
    time = float(at["time"])
    for beta in ds["beta"].values:
        row = at.sel(beta=beta)
        checks += [close(f"i.i.d. tokens: W1 to the PDE falls like n^-1/2 (fitted slope, beta = {beta:g}, "
                         f"t = {time:g})", -0.5, row.slope_iid, 0.1),
                   close(f"Quadrature nodes: W1 falls like n^-1 (fitted slope, beta = {beta:g}, t = {time:g})",
                         -1.0, row.slope_quadrature, 0.02)]
    checks.append(above("Quadrature nodes are far closer than i.i.d. tokens (smallest ratio of W1)",
                        (ds.w1_iid.mean("seed") / ds.w1_quadrature).min(), 10, "≫ 1"))
    return checks


def mean_field_sphere_claims(ds) -> list[Check]:
    checks = [close(f"i.i.d. tokens on S^2: H^-2 error falls like n^-1/2 (fitted slope, t = {float(t):g})", -0.5,
                    ds.slope.sel(time=t), 0.15) for t in ds["time"].values[:2]]
    ratio = ((ds.error_rms.sel(time=0.0) / ds.iid_theory) ** 2).mean()
    checks.append(close("t = 0: mean square error equals the i.i.d. expectation (ratio)", 1.0, ratio, 0.45))
    return checks


def cluster_formation_claims(ds) -> list[Check]:
    scaled = ds.initial_amplitude * np.sqrt(ds.n)
    times = ds.formation_time_any_mode.values
    return [fraction("Every run forms clusters (finite formation time, any mode)", np.isfinite(times)),
            between("i.i.d. tokens start at amplitude ~ n^-1/2 (smallest A(0) sqrt(n))", scaled.min(), 0.1, 3,
                    "O(1)"),
            between("i.i.d. tokens start at amplitude ~ n^-1/2 (largest A(0) sqrt(n))", scaled.max(), 0.1, 3, "O(1)")]


def metastability_claims(table) -> list[Check]:
    pde = table.where(table.source == "pde", drop=True)
    particles = table.where(table.source == "particles", drop=True)
    clustered = table.plateau_count > 0
    energy, points = table.plateau_energy.where(clustered), table.plateau_point_energy.where(clustered)
    return [equal("The PDE forms k* clusters, k* from the linear theory (cluster count at formation)",
                  pde.k_star.values, pde.count_at_formation.values),
            fraction("Emerging maxima sit at the linearised solution's, within a grid cell",
                     pde.angle_error_emergence.values < pde.grid_spacing.values),
            below("PDE formation time from the linearised solution of the start's modes (largest relative error)",
                  np.abs(pde.t_formed / pde.t_form_linear - 1).max(), 0.05),
            below("Plateau energy is that of point clusters (largest relative gap)",
                  np.nanmax(np.abs(energy / points - 1)), 0.02),
            below("Particle formation time from mode k* (largest relative error)",
                  np.abs(particles.t_formed / particles.t_form_refined - 1).max(), 0.25)]


def scheme_claims(ds) -> list[Check]:
    grid = 2 * math.pi / float(ds.attrs["resolution"])
    # Lagrangian cluster masses are sums of whole node weights (~1/N from the near-uniform perturbed start): the
    # node whose arc a cluster boundary splits goes to one side, so each mass is exact to two node weights
    mass_gap = {"perturbed": (2 / float(ds.attrs["resolution"]), "2 node weights"), "structured": (3e-3, None)}
    checks = [below("Finite volume against spectral before formation (largest difference)", ds.fv_vs_spectral, 1e-2),
              below("Finite volume against spectral before formation (L1)", ds.fv_vs_spectral_l1, 3e-3),
              below("Lagrangian against spectral before formation (largest difference)", ds.lagrangian_vs_spectral,
                    2e-4),
              equal("Clusters formed from a perturbation at beta = 9 (k*)", 4, ds.perturbed_clusters)]
    for label in ("perturbed", "structured"):
        checks += [fraction(f"{label}: finite-volume and Lagrangian runs complete",
                            [str(ds[f"{label}_{scheme}_stop_reason"].values) == "completed"
                             for scheme in ("fv", "lagrangian")]),
                   at_least(f"{label}: finite-volume density stays non-negative (smallest value)",
                            ds[f"{label}_fv_min_density"], 0.0, "≥ 0"),
                   at_most(f"{label}: finite-volume mass error", ds[f"{label}_fv_mass_error"], 1e-12),
                   at_most(f"{label}: Lagrangian mass error", ds[f"{label}_lagrangian_mass_error"], 1e-12),
                   below(f"{label}: Lagrangian cluster centres against finite volume (largest gap; 1.5 cells)",
                         ds[f"{label}_lagrangian_centre_gap"], 1.5 * grid),
                   below(f"{label}: Lagrangian cluster masses against finite volume (largest gap"
                         f"{'; ' + mass_gap[label][1] if mass_gap[label][1] else ''})",
                         ds[f"{label}_lagrangian_mass_gap"], mass_gap[label][0])]
    checks += [below("Particles' cluster masses against the PDE's (largest gap; 4 / sqrt(n))",
                     ds.structured_particles_mass_gap, 4 / math.sqrt(float(ds.attrs["n"]))),
               below("Particles' cluster centres against the PDE's (largest gap)", ds.structured_particles_centre_gap,
                     0.05)]
    return checks


def noise_claims(ds) -> list[Check]:
    ratios = ds["ratio"].values
    above_ratio, below_ratio = (1.2 if 1.2 in ratios else ratios.max()), (0.7 if 0.7 in ratios else ratios.min())
    return [below(f"nu = {above_ratio:g} nu_c: both starts relax to the uniform state (largest order parameter)",
                  ds.order.sel(ratio=above_ratio).max(), 1e-12),
            above(f"nu = {below_ratio:g} nu_c: both starts end clustered (smallest order parameter)",
                  ds.order.sel(ratio=below_ratio).min(), 0.5, "> 0 (clustered)"),
            below(f"nu = {below_ratio:g} nu_c: no hysteresis (order parameter of the two starts)",
                  abs(ds.order.sel(ratio=below_ratio, start="perturbed")
                      - ds.order.sel(ratio=below_ratio, start="clustered")).max(), 1e-6),
            below(f"nu = {below_ratio:g} nu_c: the end state is the zero-flux fixed point (gap)",
                  ds.fixed_point_gap.sel(ratio=below_ratio).max(), 1e-6)]


def staircase_claims(table) -> list[Check]:
    lagrangian = table.source.values == "lagrangian"
    checks = [fraction("Lagrangian runs end in one cluster", table.final_count.values[lagrangian] == 1),
              equal("Lagrangian runs: as many merges as the K-point ODE (MATH.md §5)",
                    table.merges_theory.values[lagrangian], table.merges_run.values[lagrangian]),
              below("Lagrangian merge times against the K-point ODE (largest relative error)",
                    np.nanmax(table.merge_rel_err.values[lagrangian]), 1e-3),
              below("Lagrangian plateau energy is the K-point energy (largest gap)",
                    np.nanmax(table.plateau_energy_gap.values[lagrangian]), 1e-5)]
    checks.append(above("Merge times grow like exp(beta (1 - cos D)), D the nearest pair at t_ref (fitted slope of "
                        "log merge time against log estimate, circle cases)", table.attrs["slope_against_estimate"], 0,
                        "> 0 (theory 1)"))
    return checks


def gaussian_claims(ds) -> list[Check]:
    slope = ds["slope_sample"].isel(dim=0)
    checks = [below(f"{kind}: error against the sample-moment ODE falls at least like n^-1/2 (fitted slope)",
                    slope.sel(attention=kind), -0.4, "-0.5") for kind in ("softmax", "l2", "multihead")]
    checks.append(below("sinkhorn: error against the sample-moment ODE falls like n^-1 (fitted slope)",
                        slope.sel(attention="sinkhorn"), -0.8, "-1"))
    exact = ds["slope_exact"].values
    checks += [between("Error against the exact-moment ODE falls like n^-1/2 (steepest fitted slope)", exact.min(),
                       -0.75, -0.4, "-0.5"),
               between("Error against the exact-moment ODE falls like n^-1/2 (shallowest fitted slope)", exact.max(),
                       -0.75, -0.4, "-0.5")]
    ratio = (ds["error_sample"].mean(("draw", "seed")) / ds["error_exact"].mean(("draw", "seed"))).values
    checks.append(below("The sample-moment ODE is far closer than the exact-moment one (largest ratio of errors, "
                        "sizes run)", np.nanmax(ratio), 0.2, "≪ 1"))
    return checks


def long_context_claims(table) -> list[Check]:
    rho = importlib.import_module("validation.long_context").RHO
    at = table.sel(rho=rho)
    half = at.gamma_half.values
    almost = table.isel(mc_case=0).sel(n_mc=table["n_mc"].values[-1])
    return [equal("Critical gamma of equiangular tokens (MATH.md §7)", 2.0, at.critical_gamma),
            below("Formula against a direct SA layer (largest Gram error)", table.gram_error.max(), 1e-12),
            close("Cosine at gamma_c for n = 1e18", 0.8, at.cosine_at_critical.sel(n=1e18), 1e-15),
            between("The midpoint crossing approaches gamma_c from above (largest n)", half[-1], 2.0, 2.02, "2"),
            close("Monte Carlo: beta = 0 collapses every token onto the mean (cosine)", 1.0,
                  almost.mc_cosine.sel(gamma_mc=0.0), 1e-12),
            close("Monte Carlo: large gamma keeps rho (cosine at gamma = 4)", rho, almost.mc_cosine.sel(gamma_mc=4.0),
                  0.05),
            close("Monte Carlo: cosine near 0.8 at gamma_c", 0.8, almost.mc_cosine.sel(gamma_mc=2.0), 0.03)]


def normalization_claims(table) -> list[Check]:
    checks = [below("Particles follow the equiangular ODE of every scheme (largest error in rho)",
                    table.max_rho_error.max(), 1e-8),
              fraction("Every particle run completes", table.stop_reason.values == "completed")]
    for scheme in ("post", "ngpt", "lnscale"):
        checks.append(close(f"{scheme}: late-time exponential rate from the particles", 1.0,
                            table.particle_rate.sel(scheme=scheme) / table.theory_rate.sel(scheme=scheme), 1e-4))
    for scheme in ("pre", "mix", "peri"):
        checks.append(close(f"{scheme}: late-time power law t^-2 from the particles (exponent)", 2.0,
                            table.particle_rate.sel(scheme=scheme), 0.1))
    speed = table.initial_speed
    checks += [above("Peri-LN moves faster at first than Post-LN (speed ratio)",
                     speed.sel(scheme="peri") / speed.sel(scheme="post"), 1.3, "1 / |A| > 1"),
               above("nGPT moves faster at first than Post-LN (speed ratio)",
                     speed.sel(scheme="ngpt") / speed.sel(scheme="post"), 1.3, "1 / |A| > 1"),
               close("Pre-LN and Post-LN start at the same speed (ratio)", 1.0,
                     speed.sel(scheme="pre") / speed.sel(scheme="post"), 1e-4),
               below("PDE mode growth under Post-LN, nGPT and LN-scaling against the linear theory (relative error)",
                     table.pde_max_relative_error.max(), 1e-3)]
    return checks


def castin_claims(result) -> list[Check]:
    cone, blow, ranks, _ = result
    checks = [below("PSD-cone paths (converging, rank-one) end at the closed-form limit (relative error)",
                    cone.final_rel_error_vs_exact.sel(regime=["converging", "rank-one"]).max(), 1e-6)]
    known = np.isfinite(blow.exact_blowup_time.values)
    checks.append(below("Blow-up times against the closed form (largest relative error)",
                        np.max(blow.relative_error.values[known]), 1e-6))
    for d in ranks["d"].values:
        limit = math.ceil(int(d) / 2)
        checks.append(fraction(f"V = I, d = {int(d)}: every limit rank is ceil(d/2) = {limit}",
                               ranks.sel(V="identity", d=d)["rank"].values == limit))
        rnd = ranks.sel(V="random", d=d)
        done = rnd.stop_reason.values == "completed"
        checks.append(fraction(f"V random, d = {int(d)}: every run that converges reaches rank <= {limit}",
                               rnd["rank"].values[done] <= limit))
    return checks


# --------------------------------------------------------------------------------------------- registry
STUDIES: dict[str, Study] = {study.name: study for study in (
    Study("growth-circle", "growth_rates", "Fitted linear growth rates of PDE runs against MATH.md §2.3 (circle).",
          "Fewer cases.", "file", None, None, (), run=_run_growth, table=_table,
          wrote=lambda out, result: f"wrote {out}", claims=growth_claims),
    folder_study("mean-field", "mean_field",
                 "Particles -> PDE on the circle: W1 against n (i.i.d. and quadrature nodes), fitted slopes.",
                 mean_field_claims),
    folder_study("mean-field-sphere", "mean_field_sphere",
                 "Particles -> PDE on S^2 (SA, d = 3): H^-2 error from spherical-harmonic coefficients against n, "
                 "fitted slopes against n^-1/2 and the expected t = 0 error.", mean_field_sphere_claims),
    folder_study("cluster-formation", "cluster_formation",
                 "Cluster formation time of i.i.d. tokens against n, with log(n) / (2 lambda_k*) overlaid.",
                 cluster_formation_claims),
    folder_study("metastability", "metastability",
                 "Metastable clusters on the circle: predicted k*, formation time and angles against the PDE "
                 "(finite volume) and i.i.d. particles; plateaus, energy staircase, first merge.",
                 metastability_claims),
    folder_study("schemes", "scheme_comparison",
                 "Spectral, finite-volume and Lagrangian circle schemes against each other, before and "
                 "through clustering (mass, positivity, cluster centres and masses), and against particles.",
                 scheme_claims),
    folder_study("noise-transition", "noise_transition",
                 "Noise phase transition on the circle: stationary order parameter against nu / nu_c from a "
                 "perturbed and a clustered start, checked against the zero-flux fixed point.", noise_claims),
    folder_study("staircase", "staircase",
                 "The metastable staircase: formation, every merge and one cluster (circle at several beta, "
                 "particles, S^2) against the K-point ODE of MATH.md §5.", staircase_claims),
    folder_study("gaussian", "gaussian",
                 "Gaussian tokens: particle moments against the Castin et al. ODEs, error against n.",
                 gaussian_claims),
    folder_study("long-context", "long_context",
                 "Long context (MATH.md §7): one SA layer at beta = gamma log n; exact cosine of equiangular tokens "
                 "against gamma, its limit, a direct check, and a Monte Carlo of i.i.d. tokens.", long_context_claims),
    folder_study("normalization", "normalization",
                 "Normalisation schemes (MATH.md §6): particles from an orthonormal start against the equiangular "
                 "ODE with fitted late-time laws, the initial speed of i.i.d. tokens, and PDE mode growth under "
                 "Post-LN, nGPT and LN-scaling against the linear theory.", normalization_claims),
    Study("castin-figures", "castin_figures",
          "Castin et al.'s figures: 2x2 covariance paths in the PSD cone, blow-up times, limit ranks.",
          "20 samples per rank histogram instead of 200.", "folder", "castin-figures", None,
          ("psd_cone.png", "rank_histograms.png"),
          run=_run_castin, table=_castin_table, wrote=lambda out, result: f"wall time {result[3]:.1f} s; wrote {out}/",
          claims=castin_claims),
    benchmark("bench-circle", "bench_circle",
              "Benchmark: circle right-hand side vs its bare FFTs; spectral vs direct convolution.",
              "Fewer sizes and repeats."),
    benchmark("bench-particles", "bench_particles",
              "Benchmark: particle right-hand side vs GEMM + exp, vs a per-particle loop; O(nM) circle path.",
              "Fewer sizes and shorter timings."),
    benchmark("bench-sphere", "bench_sphere",
              "Benchmark: one S^2 right-hand side against the bare ducc0 transforms it performs.",
              "Fewer degrees and shorter timings.", ("QUICK_LMAXES", "LMAXES")),
    benchmark("bench-staircase", "bench_staircase",
              "Benchmark: simulated time per wall-second with and without collapse of coincident nodes.",
              "Shorter runs without collapse.", None),
    benchmark("bench-cluster-schemes", "bench_cluster_schemes",
              "Benchmark: finite-volume rhs vs its FFTs and the spectral rhs; Lagrangian O(N M) vs direct O(N^2).",
              "Fewer sizes and shorter timings."),
)}
