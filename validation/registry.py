"""The study registry: every ``meanfield validate NAME`` command, declared once (DESIGN.md "Validation").

Each :class:`Study` names its module, its quick and full presets (attributes of that module),
its runner, its table formatter, the figures it writes and its *claims*: the checks
"claim, theory value, measured value, tolerance, tolerance source, pass / fail" computed from the
study's result, with the theory values and tolerances that ``tests/validation`` asserts (a check
that cannot fail is not a claim).  Every tolerance names its source, one of :data:`SOURCE_KINDS`
(DESIGN.md "Validation"); statistical ones are ``z`` standard errors for a false alarm of
:data:`FALSE_ALARM` (:func:`within_errors`).  Benchmarks have no claims: their printed table is
their result.

The command line (:mod:`meanfield.cli`) and the report (:mod:`meanfield.validation.report`) are generated
from :data:`STUDIES`; :mod:`meanfield.validation.harness` runs an entry.  Importing this module imports no
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
#: What a tolerance rests on (DESIGN.md "Validation"): every check's ``source`` is ``"<kind>: <how>"``.
SOURCE_KINDS = {
    "exact": "integers or identities that hold exactly (counts, ranks, closed forms met bit for bit)",
    "round-off": "floating-point rounding only: a count of operations times the machine epsilon",
    "theory": "an error bound or estimate derived from the mathematics (a MATH.md section or a stated formula)",
    "standard error": "a statistical fluctuation: z standard errors of a fit or a mean, z for FALSE_ALARM",
    "measured convergence": "an error measured at two resolutions (or tolerances) and its observed behaviour",
}
#: Two-sided probability that a statistical check fails although the theory holds.
FALSE_ALARM = 1e-3
EPSILON = float(np.finfo(float).eps)


@dataclass(frozen=True)
class Check:
    """One claim of a study: ``passed`` is ``measured`` against ``theory`` within ``tolerance``; ``source``
    says where the tolerance comes from (``"<kind>: <how>"``, ``kind`` in :data:`SOURCE_KINDS`)."""

    claim: str
    theory: str
    measured: float
    tolerance: str
    source: str
    passed: bool


def _number(value) -> float:
    return float(np.asarray(value, dtype=float).reshape(-1)[0]) if np.size(value) == 1 else float(value)


def _source(source: str) -> str:
    """``source`` checked: a kind of :data:`SOURCE_KINDS`, a colon, and what the tolerance is made of."""
    kind, _, how = str(source).partition(":")
    if kind not in SOURCE_KINDS or not how.strip():
        raise ValueError(f"a claim's tolerance source must be '<kind>: <how>' with kind in {list(SOURCE_KINDS)} "
                         f"(got {source!r})")
    return source


def close(claim: str, theory: float, measured, tolerance: float, *, source: str, relative: bool = False) -> Check:
    """``|measured - theory| <= tolerance`` (times ``|theory|`` when ``relative``)."""
    measured = _number(measured)
    bound = tolerance * abs(theory) if relative else tolerance
    return Check(claim, f"{theory:g}", measured, f"{'relative ' if relative else ''}± {tolerance:.3g}",
                 _source(source), bool(abs(measured - theory) <= bound))


def below(claim: str, measured, bound: float, *, source: str, theory: str = "0") -> Check:
    """``measured < bound`` (an error, a gap, a mismatch whose theory value is ``theory``)."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"< {bound:.3g}", _source(source), bool(measured < bound))


def at_most(claim: str, measured, bound: float, *, source: str, theory: str = "0") -> Check:
    """``measured <= bound``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"≤ {bound:.3g}", _source(source), bool(measured <= bound))


def at_least(claim: str, measured, bound: float, theory: str, *, source: str) -> Check:
    """``measured >= bound``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"≥ {bound:.3g}", _source(source), bool(measured >= bound))


def above(claim: str, measured, bound: float, theory: str, *, source: str) -> Check:
    """``measured > bound``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"> {bound:.3g}", _source(source), bool(measured > bound))


def between(claim: str, measured, low: float, high: float, theory: str, *, source: str) -> Check:
    """``low < measured < high``."""
    measured = _number(measured)
    return Check(claim, theory, measured, f"in ({low:.3g}, {high:.3g})", _source(source), bool(low < measured < high))


def equal(claim: str, theory, measured, *, source: str) -> Check:
    """Exact agreement of counts (one value, or element by element: measured is then the largest difference)."""
    theory_values = np.asarray(theory, dtype=float).ravel()
    measured_values = np.asarray(measured, dtype=float).ravel()
    if theory_values.size == 1 and measured_values.size == 1:
        return Check(claim, f"{theory_values[0]:g}", float(measured_values[0]), "exact", _source(source),
                     bool(theory_values[0] == measured_values[0]))
    same_shape = theory_values.shape == measured_values.shape
    gap = float(np.max(np.abs(measured_values - theory_values))) if same_shape and theory_values.size else math.nan
    return Check(claim + " (measured: largest difference)", " ".join(f"{v:g}" for v in theory_values), gap, "exact",
                 _source(source), bool(same_shape and gap == 0))


def fraction(claim: str, flags, *, source: str) -> Check:
    """Every one of ``flags`` holds: measured is the fraction that does."""
    flags = np.asarray(flags, dtype=bool).ravel()
    share = float(flags.mean()) if flags.size else math.nan
    return Check(claim, "all", share, "all (measured: the share that holds)", _source(source),
                 bool(flags.size and flags.all()))


def standard_errors(dof: float | None = None, tests: int = 1) -> float:
    """``z`` with ``P(|error| > z x standard error) = FALSE_ALARM / tests``: normal (standard error known in
    advance) or Student's t with ``dof`` degrees of freedom (standard error estimated from the data)."""
    from scipy import stats

    quantile = 1.0 - FALSE_ALARM / (2.0 * tests)
    return float(stats.norm.ppf(quantile) if dof is None else stats.t.ppf(quantile, dof))


def within_errors(claim: str, theory: float, measured, stderr: float, what: str, dof: float | None = None,
                  tests: int = 1) -> Check:
    """``|measured - theory| <= z stderr`` (:func:`standard_errors`); ``what`` says what ``stderr`` is."""
    z = standard_errors(dof, tests)
    spread = "normal" if dof is None else f"t, {dof:g} dof"
    split = f" / {tests} tests" if tests > 1 else ""
    return close(claim, theory, measured, z * float(stderr),
                 source=f"standard error: {z:.2f} x {float(stderr):.3g} ({what}; {spread}, p = {FALSE_ALARM:g}{split})")


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
        return importlib.import_module(f"meanfield.validation.{self.module}")

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
def _module(name: str):
    """A study module's constants for its claims (already imported when the study ran)."""
    return importlib.import_module(f"meanfield.validation.{name}")


def growth_claims(table) -> list[Check]:
    return [at_most("Fitted linear growth rates equal the MATH.md §2.3 rates, every case and mode 1-6 "
                    "(largest relative error over its bound)", (table["relative_error"] / table["tolerance"]).max(),
                    1.0, theory="≤ 1",
                    source="theory: dopri5's step error |log R(z) / z - 1| at z = mu T / FRAMES (R its stability "
                           "function; every step at most a save interval, equality when all are) plus the quadratic "
                           "feed 3 delta_k(T) / T from the run's initial amplitudes (MATH.md §2.3; "
                           "validation/growth_rates.py)")]


def mean_field_claims(ds) -> list[Check]:
    constant = _module("mean_field").QUADRATURE_CONSTANT
    checks = []
    at = ds.sel(time=1.0) if 1.0 in ds["time"].values else ds.isel(time=-1)
    time, seeds, n_min = float(at["time"]), ds.sizes["seed"], float(ds["n"].min())
    for beta in ds["beta"].values:
        row = at.sel(beta=beta)
        checks += [within_errors(f"i.i.d. tokens: W1 to the PDE falls like n^-1/2 (fitted slope, beta = {beta:g}, "
                                 f"t = {time:g})", -0.5, row.slope_iid, row.slope_iid_stderr,
                                 "one-seed slope spread / sqrt(seeds)", dof=seeds - 1),
                   close(f"Quadrature nodes: W1 falls like n^-1 (fitted slope, beta = {beta:g}, t = {time:g})",
                         -1.0, row.slope_quadrature, 2 * constant / n_min ** 2,
                         source=f"measured convergence: W1 = C(t) / n (1 + c / n^2), c = {constant:g} bounding the "
                                f"0.0256 measured at t = 0 (n = 128 ... 8192); c / n^2 tilts the slope by at most "
                                f"2 c / n_min^2")]
    if 0.0 in ds["time"].values:
        n = ds["n"]
        scaled = (np.abs(ds["w1_quadrature"].sel(time=0.0) * n / (math.pi / 2) - 1) * n ** 2).max()
        checks.append(at_most("Quadrature nodes at t = 0: n W1 = pi/2 (1 + O(n^-2)) (largest n^2 |n W1 / (pi/2) - 1| "
                              "over n and beta)", scaled, constant, theory="0.0256",
                              source=f"measured convergence: n^2 times the relative error is 0.0256 at n = 128 ... "
                                     f"8192 for this INIT (second order, constant to 0.1 %); {constant:g} = 2 x that"))
    return checks


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


def metastability_claims(table) -> list[Check]:
    study = _module("metastability")
    pde = table.where(table.source == "pde", drop=True)
    checks = [equal("The PDE forms k* clusters, k* from the linear theory (cluster count at formation)",
                    pde.k_star.values, pde.count_at_formation.values,
                    source="exact: counts; k* = argmax lambda_k (MATH.md §2.3)")]
    for i in range(pde.sizes["case"]):
        row = pde.isel(case=i)
        checks.append(below(f"beta = {float(row.beta):g}: emerging maxima sit at the linearised solution's "
                            f"(largest angle error, rad)", row.angle_error_emergence,
                            study.EMERGENCE / float(row.k_star),
                            source=f"theory: at emergence the largest amplitude is A = {study.EMERGENCE:g}; the "
                                   f"quadratic terms, O(A^2) against the linear O(A), move maxima by O(A / k*)"))
    for i in range(table.sizes["case"]):
        row = table.isel(case=i)
        rate = float(row.rate)
        checks.append(close(f"beta = {float(row.beta):g}, {row.source.values}: formation time from the initial "
                            f"amplitude of mode k*", float(row.t_form_refined), row.t_formed,
                            1.0 / rate + float(table.attrs["save_every"]),
                            source="theory: the linear growth of mode k* (MATH.md §2.3) fixes when it reaches 1/2; "
                                   "clusters show at an O(1) amplitude within a factor e of that, one e-fold "
                                   "1 / lambda_k*, located to one saved frame"))
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


def scheme_claims(ds) -> list[Check]:
    from meanfield.model import Model
    from meanfield.theory import dominant_mode

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
                             "(solvers/lagrangian.py), so the gap is their time-integration error, proportional to "
                             "rtol (2.5e-6, 2.4e-8 at rtol = 1e-6, 1e-8; N = 128, 256): 10 rtol"),
              equal(f"Clusters formed from a perturbation at beta = {beta:g} (k*)",
                    dominant_mode(Model("sa", beta, 0.0, 2)), ds.perturbed_clusters,
                    source="exact: counts; k* = argmax lambda_k (MATH.md §2.3)")]
    for label in ("perturbed", "structured"):
        count, smallest = int(ds[f"{label}_clusters"]), float(ds[f"{label}_min_cluster_mass"])
        steps = int(ds[f"{label}_fv_steps"])
        checks += [fraction(f"{label}: finite-volume and Lagrangian runs complete",
                            [str(ds[f"{label}_{scheme}_stop_reason"].values) == "completed"
                             for scheme in ("fv", "lagrangian")],
                            source="exact: a run's stop reason is 'completed' or it is not"),
                   at_least(f"{label}: finite-volume density stays non-negative (smallest value)",
                            ds[f"{label}_fv_min_density"], 0.0, "≥ 0",
                            source="theory: every forward-Euler stage keeps cell averages >= 0 under the CFL step and "
                                   "SSP-RK3 combines stages convexly (solvers/finite_volume.py)"),
                   at_most(f"{label}: finite-volume mass error", ds[f"{label}_fv_mass_error"],
                           (n + 10 * math.sqrt(3 * steps)) * EPSILON,
                           source=f"round-off: telescoping fluxes; each of 3 stages x {steps} steps rounds the mass by "
                                  f"~eps, a random walk (10 of its sd), plus N eps for the sum"),
                   at_most(f"{label}: Lagrangian mass error", ds[f"{label}_lagrangian_mass_error"], n * EPSILON,
                           source="round-off: the N weights never change; their sum rounds by at most N eps"),
                   below(f"{label}: Lagrangian cluster centres against finite volume (largest gap, rad)",
                         ds[f"{label}_lagrangian_centre_gap"], epsilon_fv * math.pi / (count * smallest),
                         source=f"theory: both conserve mass; the finite-volume density error before formation, "
                                f"{epsilon_fv:.3g} of the perturbation (L1), misplaces that fraction of mass at "
                                f"formation, moving a cluster of mass >= {smallest:.3g} by at most that x pi / K over "
                                f"its mass (K = {count}; the gap does not converge cleanly with N, the Lagrangian's "
                                f"cluster masses being whole node weights: perturbed 8.6e-3, 8.3e-3, 2.6e-3 and "
                                f"structured 1.3e-3, 3.8e-4, 7.1e-4 at N = 128, 256, 512, fv clusters read at "
                                f"their points)"),
                   below(f"{label}: Lagrangian cluster masses against finite volume (largest gap)",
                         ds[f"{label}_lagrangian_mass_gap"], epsilon_fv,
                         source=f"theory: both conserve mass; the finite-volume density error before formation, "
                                f"{epsilon_fv:.3g} of the perturbation (L1), bounds the mass it puts in a wrong basin")]
    count = int(ds["structured_clusters"])
    z = standard_errors(tests=count)
    checks += [below("Particles' cluster masses against the PDE's (largest gap)", ds.structured_particles_mass_gap,
                     z * float(ds.structured_particles_mass_stderr),
                     source=f"standard error: {z:.2f} x {float(ds.structured_particles_mass_stderr):.3g} (a cluster's "
                            f"token count is binomial, sd sqrt(m (1 - m) / n); normal, p = {FALSE_ALARM:g} / {count} "
                            f"clusters)"),
               below("Particles' cluster centres against the PDE's (largest gap, rad)",
                     ds.structured_particles_centre_gap, z * float(ds.structured_particles_centre_stderr),
                     source=f"standard error: {z:.2f} x {float(ds.structured_particles_centre_stderr):.3g} (spread of "
                            f"a cluster's tokens at t = 0 / sqrt(count), its centre taken as their mean; normal, "
                            f"p = {FALSE_ALARM:g} / {count} clusters)")]
    return checks


def noise_claims(ds) -> list[Check]:
    study = _module("noise_transition")
    ratios = ds["ratio"].values
    above_ratio, below_ratio = (1.2 if 1.2 in ratios else ratios.max()), (0.7 if 0.7 in ratios else ratios.min())
    clustered = ds.order.sel(ratio=below_ratio)
    rule = (f"theory: a run stops once r moves by less than STATIONARY_TOL = {study.STATIONARY_TOL:g} (relative, "
            f"or absolute below UNIFORM_LEVEL = {study.UNIFORM_LEVEL:g}) over a chunk of 20 relaxation times")
    return [at_most(f"nu = {above_ratio:g} nu_c: both starts relax to the uniform state (largest order parameter)",
                    ds.order.sel(ratio=above_ratio).max(), study.STATIONARY_TOL * study.UNIFORM_LEVEL,
                    source=rule + "; above nu_c every mode decays (MATH.md §2.3), so r ends below the rule's step"),
            at_least(f"nu = {below_ratio:g} nu_c: both starts end clustered (smallest order parameter)",
                     clustered.min(), study.UNIFORM_LEVEL, "> 0 (clustered)",
                     source=f"theory: below nu_c the uniform state is unstable (MATH.md §2.3): r stays above "
                            f"UNIFORM_LEVEL = {study.UNIFORM_LEVEL:g}, the level the study calls uniform"),
            at_most(f"nu = {below_ratio:g} nu_c: no hysteresis (order parameter of the two starts)",
                    abs(ds.order.sel(ratio=below_ratio, start="perturbed")
                        - ds.order.sel(ratio=below_ratio, start="clustered")).max(),
                    2 * study.STATIONARY_TOL * float(clustered.max()),
                    source=rule + ": two runs to one stationary state end within twice that of each other"),
            at_most(f"nu = {below_ratio:g} nu_c: the end state is the zero-flux fixed point (largest gap / mean)",
                    ds.fixed_point_gap.sel(ratio=below_ratio).max(), study.STATIONARY_TOL,
                    source=rule + ", so the density is within about that of the stationary state; Newton-Krylov "
                                  "solves the zero-flux equation to f_tol = 1e-12")]


def staircase_claims(table) -> list[Check]:
    from meanfield.cluster_dynamics import MERGE_DISTANCE

    lagrangian = table.source.values == "lagrangian"
    rtol = float(np.max(table.rtol.values))
    beta = float(np.min(table.beta.values[lagrangian]))
    attrs = table.attrs
    return [fraction("Lagrangian runs end in one cluster", table.final_count.values[lagrangian] == 1,
                     source="theory: the K-point ODE from t_ref merges every pair before t_final (MATH.md §5)"),
            equal("Lagrangian runs: as many merges as the K-point ODE (MATH.md §5)",
                  table.merges_theory.values[lagrangian], table.merges_run.values[lagrangian],
                  source="exact: counts of merges"),
            below("Lagrangian merge times against the K-point ODE (largest relative error)",
                  np.nanmax(table.merge_rel_err.values[lagrangian]), 30 * rtol,
                  source="measured convergence: the error is the run's time-integration error, proportional to its "
                         "rtol (8.7e-8, 8.6e-10 at rtol = 1e-8, 1e-10 for beta = 4; 9.4e-8, 1.7e-9 for beta = 9): "
                         "30 rtol"),
            at_most("Lagrangian plateau energy is the K-point energy (largest relative gap)",
                    np.nanmax(table.plateau_energy_gap.values[lagrangian]),
                    beta * MERGE_DISTANCE ** 2 / 4 + 30 * rtol,
                    source=f"theory: the K-point ODE joins a pair at MERGE_DISTANCE = {MERGE_DISTANCE:g} rad, when "
                           f"the run's pair is still that far apart: a relative energy deficit <= beta d^2 / 4 "
                           f"(MATH.md §5; smallest beta, {beta:g}), plus the merge-time error 30 rtol"),
            within_errors("First merges follow the two-cluster plateau law exp(beta (1 - cos D)) / ((m_a/m_b + "
                          "m_b/m_a) beta sin^2 D) (slope of log merge time against log law, all circle runs)", 1.0,
                          attrs["slope_against_merge_estimate"], attrs["slope_against_merge_estimate_stderr"],
                          "least-squares standard error: the other clusters scatter the runs about the law",
                          dof=int(attrs["slope_against_merge_estimate_dof"]))]


#: fv merge times against the K-point ODE from the run's own clusters: ``C (POINT_STEP / 0.01)^3 + floor``.
FV_KPOINT_CONSTANT, FV_KPOINT_FLOOR = 3e-7, 5e-8


def _merges_after(table, label: str, start: float) -> np.ndarray:
    times = table["merge_time"].sel(run=label).values
    return times[np.isfinite(times) & (times > start)]


def fv_staircase_claims(table) -> list[Check]:
    """Claims of ``fv-staircase`` (validation/fv_staircase.py): fv clusters become points that follow the K-point
    ODE and merge when the Lagrangian scheme's do; the start is one function at every resolution."""
    attrs = table.attrs
    size = {label: int(table.resolution.sel(run=label)) for label in table["run"].values}
    n, m = size["fv N"], size["lagrangian M"]
    t_ref = {label: float(table.t_ref.sel(run=label)) for label in table["run"].values}
    fv_runs = ("fv N/2", "fv N")
    step = float(attrs["point_step"])
    checks = [at_most(f"Finite volume (N = {size['fv N/2']}, {n}): every cluster becomes a point (largest mass left "
                      f"on the grid in the last frame)", np.max(np.abs(table.grid_mass_end.sel(run=list(fv_runs)))),
                      n * EPSILON,
                      source="round-off: without noise every cluster collapses to a point (MATH.md §5); the fv hands "
                             "each over once it is about a cell wide and sweeps the last 1e-6 of the mass to the "
                             "points (solvers/point_clusters.py), after which the grid holds exactly 0: the total "
                             "less the points' masses is a sum of N cells rounded to N eps")]
    kpoint_counts, run_counts, errors = [], [], []
    for label in fv_runs:
        start = t_ref[label]
        predicted = table.kpoint_merge_time.sel(run=label).values
        predicted = predicted[np.isfinite(predicted)]
        measured = _merges_after(table, label, start)
        kpoint_counts.append(predicted.size if math.isfinite(start) else math.nan)
        run_counts.append(measured.size)
        paired = min(predicted.size, measured.size)
        errors += list(np.abs(measured[:paired] / predicted[:paired] - 1.0))
    checks += [equal("Finite volume (N/2, N): as many merges after t_ref (grid empty) as the K-point ODE from the "
                     "run's own clusters there (MATH.md §5)", kpoint_counts, run_counts,
                     source="exact: counts of merges; no t_ref (the grid never empties) counts as no prediction"),
               below("Finite volume merge times against the K-point ODE from the run's own clusters at t_ref "
                     "(largest relative error, N/2 and N)", max(errors) if errors else math.nan,
                     FV_KPOINT_CONSTANT * (step / 0.01) ** 3 + FV_KPOINT_FLOOR,
                     source=f"measured convergence: after t_ref the run is the K-point ODE stepped by ssprk3 at "
                            f"POINT_STEP = {step:g} of the inverse pair rate; the error is third order in POINT_STEP: "
                            f"3.4e-6, 7.2e-7, 9.9e-8, 1.3e-8 at 0.04, 0.02, 0.01, 0.005 (ratios 4.7, 7.2, 7.5; "
                            f"beta = 9, N = 512; 7.0e-7 to 8.0e-7 at 0.02 for N = 256 to 1024), beside a floor of "
                            f"2e-8 that does not fall with the step (the last merge: two clusters leaving an "
                            f"unstable equilibrium over 6e7); DOP853 at rtol 1e-11 moves the ODE's merges by < 2e-9 "
                            f"(against 1e-12, 1e-13).  Tolerance 3x the measured constant (1e-7 at 0.01) and 2.5x "
                            f"the floor: {FV_KPOINT_CONSTANT:g} (POINT_STEP / 0.01)^3 + {FV_KPOINT_FLOOR:g}")]
    # merges against the Lagrangian scheme, after both runs' clusters are points
    start = float(np.nanmax([t_ref["fv N"], t_ref["lagrangian M"]]))
    reference, finer = _merges_after(table, "lagrangian M", start), _merges_after(table, "lagrangian 2M", start)
    fine_fv, coarse_fv = _merges_after(table, "fv N", start), _merges_after(table, "fv N/2", start)
    checks.append(equal(f"Finite volume (N/2, N) and Lagrangian (2M): as many merges after t = {start:.3g} as the "
                        f"Lagrangian at M = {m}", np.full(3, reference.size),
                        [coarse_fv.size, fine_fv.size, finer.size],
                        source="exact: counts of merges (both schemes follow the same PDE to one cluster)"))
    paired = min(reference.size, finer.size)
    level = 2 * float(np.max(np.abs(reference[:paired] / finer[:paired] - 1.0))) if paired else math.nan
    for i, t_merge in enumerate(reference):
        gap = abs(fine_fv[i] / t_merge - 1.0) if i < fine_fv.size else math.nan
        coarse = abs(coarse_fv[i] / t_merge - 1.0) if i < coarse_fv.size else math.nan
        checks.append(below(f"Merge {i + 1} (t = {t_merge:.5g}): finite volume (N = {n}) against Lagrangian "
                            f"(M = {m}) (relative gap)", gap, coarse + 2 * level,
                            source=f"measured convergence: the fv's gap at N/2 ({coarse:.3g}) plus twice the "
                                   f"Lagrangian's error level L = {level:.3g}: a convergent fv's error falls when h "
                                   f"halves (measured 5.6e-2, 1.4e-3, 7e-4 at N = 256, 512, 1024 for the first merge, "
                                   f"about first order from 512 on), and each gap is its error within L.  L is twice "
                                   f"the largest change of the Lagrangian's merges from M to 2M: its cluster masses "
                                   f"are whole node weights (1/M) and its centres move by ~2e-4 rad from one M to the "
                                   f"next, so its merge times move erratically; twice the largest change bounds its "
                                   f"error at M = 4096, 8192 (against 32768 nodes), not at 2048"))
    # the start: one function at every resolution
    checks.append(at_most(f"perturbed:{float(attrs['eps']):g} is one function at N/2 and N (largest difference of "
                          f"the fv's deconvolved initial Fourier coefficients, relative to the mean)",
                          attrs["spectrum_gap"], 4 * math.log2(n) * EPSILON,
                          source="round-off: the law's coefficients do not depend on the grid (MATH.md §2.4); the "
                                 "cell averages come from one FFT of them and are read back by another, on each "
                                 "grid: four FFTs of at most N values, each rounding a coefficient by ~log2(N) eps "
                                 "of the mean"))
    formation = {label: float(table.formation_time.sel(run=label)) for label in table["run"].values}
    rtol = float(attrs["rtol"])
    exact = formation["lagrangian 2M"]
    checks += [close(f"Formation time (mode k* at 1/2): Lagrangian at M = {m} and 2M agree", exact,
                     formation["lagrangian M"], 10 * rtol, relative=True,
                     source="measured convergence: the Lagrangian is spectrally accurate before formation for a "
                            "band-limited start; what stays is its time integration, proportional to rtol "
                            "(7.5e-9, 2.7e-10 relative at rtol = 1e-8, 1e-10; M = 2048 to 8192): 10 rtol.  A start "
                            "drawn anew on each grid moves it by ~1 / lambda_k*, 10 %"),
               below(f"Formation time: finite volume at N = {n} against the Lagrangian (absolute gap)",
                     abs(formation["fv N"] - exact),
                     abs(formation["fv N/2"] - exact) + 2 * 10 * rtol * abs(exact),
                     source=f"measured convergence: the fv's gap at N/2 ({abs(formation['fv N/2'] - exact):.3g}) plus "
                            f"twice the Lagrangian's 10 rtol: a convergent fv's gap falls when h halves (4.2e-2, "
                            f"1.4e-2, 6.5e-3, 3.6e-3 at N = 128, 256, 512, 1024: about first order, the limiter clips "
                            f"the growing maxima)")]
    return checks


def gaussian_claims(ds) -> list[Check]:
    slope, spread = ds["slope_sample"].isel(dim=0), ds["slope_sample_spread"].isel(dim=0)
    exact, exact_spread = ds["slope_exact"].isel(dim=0), ds["slope_exact_spread"].isel(dim=0)
    what = "bootstrap sd of the slope over the seeds"
    checks = [within_errors(f"{kind}: error against the sample-moment ODE falls like n^-1/2 (fitted slope)", -0.5,
                            slope.sel(attention=kind), spread.sel(attention=kind), what)
              for kind in ("softmax", "l2", "multihead")]
    checks.append(within_errors("sinkhorn: error against the sample-moment ODE falls like n^-1 (fitted slope)", -1.0,
                                slope.sel(attention="sinkhorn"), spread.sel(attention="sinkhorn"), what))
    checks += [within_errors(f"{kind}: error against the exact-moment ODE falls like n^-1/2 (fitted slope)", -0.5,
                             exact.sel(attention=kind), exact_spread.sel(attention=kind), what)
               for kind in ds["attention"].values]
    ratio = (ds["error_sample"].mean(("draw", "seed")) / ds["error_exact"].mean(("draw", "seed"))).values
    checks.append(below("The sample-moment ODE is closer than the exact-moment one (largest ratio of errors, sizes "
                        "run)", np.nanmax(ratio), 1.0, theory="≪ 1",
                        source="theory: the sample-moment ODE starts from the particles' own moments, so it carries "
                               "none of the initial sampling error that the exact-moment ODE propagates (MATH.md §3, "
                               "§4): the ratio is below 1; no closer bound is derived"))
    return checks


def phase_transition_claims(ds) -> list[Check]:
    """The phase-transition study's checks (MATH.md §9; :mod:`meanfield.validation.phase_transitions`)."""
    study = _module("phase_transitions")
    checks = [at_most("Stationary states solve their equation (largest residual over every branch, spectral norm)",
                      np.nanmax(ds["branch_residual"].values), 1e-12,
                      source="round-off: Newton stops below 1e-13; the issue's bound is 1e-12"),
              at_most("A stable stationary state stays put under the time-dependent solver (drift over t = 10)",
                      ds["drift"], 1e-10, source="theory: a stationary state of the PDE does not move; what moves is "
                                                 "the two discretisations' difference and the stepper's rtol 1e-12")]
    for beta, measured, independent in zip(ds["independent_beta"].values, ds["usa_curvature"].values,
                                           ds["independent_curvature"].values):
        checks.append(close(f"Curvature C of the circle's USA branch at beta = {beta:g} (MATH.md §9)", float(independent),
                            measured, 1e-2, relative=True,
                            source="theory: MATH.md §9's independent continuation, quoted to 3 digits"))
    for dim, star, root in zip(ds["tricritical_dim"].values, ds["beta_star"].values, ds["bessel_root"].values):
        checks.append(close(f"Tricritical beta*(d = {dim}) by bisection on the sign of C, against the Bessel-ratio root",
                            float(root), star, 1e-5, relative=True,
                            source="theory: MATH.md §9's criterion; C from Newton solves exact to 1e-13 resolves the "
                                   "sign within 1e-7 of beta*"))
    sn, nu_c = ds["resolution_nu_sn"].values, ds["resolution_nu_c"].values
    checks += [at_most("nu_sn located (USA, circle, beta = 4): relative change between the two resolutions",
                       abs(sn[-1] / sn[0] - 1), 1e-6, source="measured convergence: two resolutions of the stationary "
                                                             "basis; the issue's 1e-6"),
               at_most("nu_c located (USA, circle, beta = 4): relative change between the two resolutions",
                       abs(nu_c[-1] / nu_c[0] - 1), 1e-6, source="measured convergence: two resolutions of the "
                                                                "stationary basis; the issue's 1e-6"),
               fraction("SA is supercritical (C < 0) at every beta and d tried", ds["sa_curvature"].values < 0,
                        source="exact: the sign of each fitted C, far from 0 (MATH.md §9)")]
    labels = list(ds["diagram"].values)
    ordered, falling = 0, 0
    usa_first_order = [i for i, label in enumerate(labels) if ds["branch_transition"].values[i] == "first-order"]
    for i in usa_first_order:
        sharp, fold, point = (float(ds[name].values[i]) for name in ("branch_nu_sharp", "branch_nu_sn", "branch_nu_c"))
        ordered += int(sharp < point < fold)
        stable = ds["branch_stable"].values[i] == 1
        gap, nu = ds["branch_free_energy_gap"].values[i][stable], ds["branch_nu"].values[i][stable]
        falling += int(bool(np.all(np.diff(gap) * np.diff(nu) > 0)))
    checks += [equal("USA above beta*: nu_# < nu_c < nu_sn on every first-order branch", len(usa_first_order), ordered,
                     source="exact: an ordering of three numbers per branch"),
               equal("USA: the free energy falls with nu along the stable part of every first-order branch",
                     len(usa_first_order), falling, source="exact: the sign of every difference (MATH.md §9: USA is "
                                                          "the gradient flow of F)")]
    sharp, fold = float(ds["loop_nu_sharp"]), float(ds["loop_nu_sn"])
    down, up = ds["jump_down"].values, ds["jump_up"].values
    rates = ds["rate"].values
    at_particle_rate = float(ds["jump_down"].sel(rate=float(ds["particle_rate"]))) \
        if float(ds["particle_rate"]) in rates else sharp
    checks += [equal("Hysteresis: every ramped PDE run jumps down below nu_# and up above nu_sn", len(down),
                     int(np.sum((down < sharp) & (up > fold))), source="exact: a comparison per rate"),
               equal("Hysteresis: the jumps approach nu_# and nu_sn as the ramp slows (monotone in the rate)", 1,
                     int(bool(np.all(np.diff(sharp - down) > 0) and np.all(np.diff(up - fold) > 0))),
                     source="theory: slow passage through a bifurcation; the delay shrinks with the rate"),
               between("Hysteresis: the jump-down delay's exponent in the rate (pitchfork: 1/2)",
                       study.delay_exponent(rates, sharp - down), 0.4, 0.6, "0.5",
                       source="theory: delay = sqrt(2 rate log(1/eps) / nu_#) below nu_# from an amplitude eps "
                              "(measured 0.5 to 2 %); three rates, a factor 4 apart"),
               equal("Particles show the loop: they leave the uniform state below nu_# (and no later than the PDE "
                     "started 1e-3 from it, their fluctuations being larger) and the cluster above nu_sn", 1,
                     int(at_particle_rate <= float(ds["particle_jump_down"]) < sharp
                         and float(ds["particle_jump_up"]) > fold),
                     source="exact: three comparisons")]
    return checks


def causal_claims(ds) -> list[Check]:
    """The causal study's checks (MATH.md §8; :mod:`meanfield.validation.causal`)."""
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


def long_context_claims(table) -> list[Check]:
    from meanfield.long_context import iid_cosine_estimate, midpoint_gamma, one_layer_cosine

    rho = _module("long_context").RHO
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


def normalization_claims(table) -> list[Check]:
    study = _module("normalization")
    step = study.SPEED_STEP
    checks = [at_most("Particles follow the equiangular ODE of every scheme (largest error in rho)",
                      table.max_rho_error.max(), 1e-9,
                      source="measured convergence: the particles' part falls with their rtol (about 0.5 rtol at "
                             "1e-9, 1e-11, 1e-13); what stays, 3.4e-10 (LN-scaling), is the equiangular ODE's own "
                             "DOP853 error at rtol = 1e-12: 1e-9 is 3x it"),
              fraction("Every particle run completes", table.stop_reason.values == "completed",
                       source="exact: a run's stop reason is 'completed' or it is not")]
    for scheme in table["scheme"].values:
        row = table.sel(scheme=scheme)
        theory, ode = float(row.theory_rate), float(row.ode_rate)
        tolerance = abs(ode - theory) + 1e-6 * theory
        checks.append(close(f"{scheme}: late-time law {row.law.values} from the particles (fitted "
                            f"{'exponent' if str(row.law_kind.values) == 'power' else 'rate'})", theory,
                            row.particle_rate, tolerance,
                            source=f"theory: the law (MATH.md §6) holds on the fit's window up to its "
                                   f"pre-asymptotic correction, which the equiangular ODE's own fit there measures "
                                   f"({ode - theory:+.3g}); plus 1e-6 relative for the particles' integration "
                                   f"(measured <= 7e-9)"))
    speed, predicted = table.initial_speed, table.initial_speed_theory
    one_step = f"one RK4 step of h = {step:g} moves the directions and (Pre, Peri) the radii by O(h) relative"
    checks.append(at_most("Every scheme's initial speed is mean |P A| / s at t = 0 from the same tokens (largest "
                          "relative error)", np.abs(speed / predicted - 1).max(), step,
                          source=f"theory: MATH.md §6 divisors at t = 0; {one_step}"))
    for scheme, label in (("peri", "Peri-LN"), ("ngpt", "nGPT")):
        ratio = float(predicted.sel(scheme=scheme) / predicted.sel(scheme="post"))
        checks.append(close(f"{label} moves faster at first than Post-LN (speed ratio)", ratio,
                            speed.sel(scheme=scheme) / speed.sel(scheme="post"), 2 * step, relative=True,
                            source=f"theory: the ratio of mean |P A| / |A| to mean |P A| (1 / |A| > 1) from the same "
                                   f"tokens; {one_step}, each speed"))
    checks += [close("Pre-LN and Post-LN start at the same speed (ratio)", 1.0,
                     speed.sel(scheme="pre") / speed.sel(scheme="post"), step / 2,
                     source="theory: s = r0 = 1 for both at t = 0; over the step h Pre-LN's radius grows by "
                            "h <theta, A> <= h, slowing it by at most h / (2 r0)"),
               at_most("PDE mode growth under Post-LN, nGPT and LN-scaling against the linear theory (largest relative "
                       "error over its bound)", (np.abs(table.pde_fitted_rate / table.pde_theory_rate - 1)
                                                  / table.pde_tolerance).max(), 1.0, theory="≤ 1",
                       source="theory: dopri5's step error at the clock's fastest rate (equality when every step in "
                              "the window is a save interval) plus the quadratic feed, as in growth-circle (MATH.md "
                              "§2.3, §6)")]
    return checks


def _closed_form_conditioning(cone, regimes) -> float:
    """Largest ``T |A + A^T| |Sigma_0|`` over the cone paths of ``regimes``: the condition number of
    ``Sigma_0^{-1} - T (A + A^T)``, which the closed form inverts (validation/castin_figures.py)."""
    worst = 0.0
    for regime in regimes:
        a = cone.A.sel(regime=regime).values
        for path in cone["path"].values:
            at = cone.sel(regime=regime, path=path)
            worst = max(worst, float(np.nanmax(at.time.values)) * np.linalg.norm(a + a.T, 2)
                        * np.linalg.norm(at.covariance.isel(step=0).values, 2))
    return worst


def castin_claims(result) -> list[Check]:
    from meanfield.gaussian import RTOL

    cone, blow, ranks, _ = result
    regimes = ["converging", "rank-one"]
    condition = _closed_form_conditioning(cone, regimes)
    checks = [below("PSD-cone paths (converging, rank-one) end at the closed-form limit (relative error)",
                    cone.final_rel_error_vs_exact.sel(regime=regimes).max(), condition * EPSILON + 10 * RTOL,
                    source=f"round-off: the closed form inverts Sigma_0^-1 - T (A + A^T), condition up to T |A + A^T| "
                           f"|Sigma_0| = {condition:.3g} (T = 1e7 for rank one): eps times that (the error stayed "
                           f"1.36e-9 at rtol = 1e-8 ... 1e-12); plus 10 rtol for DOP853")]
    known = np.isfinite(blow.exact_blowup_time.values)
    checks.append(below("Blow-up times against the closed form (largest relative error)",
                        np.max(blow.relative_error.values[known]), 10 * RTOL,
                        source="measured convergence: proportional to DOP853's rtol (3.6e-9, 4.0e-11, 5.9e-13 at "
                               "rtol = 1e-8, 1e-10, 1e-12): 10 rtol"))
    for d in ranks["d"].values:
        limit = math.ceil(int(d) / 2)
        checks.append(fraction(f"V = I, d = {int(d)}: every limit rank is ceil(d/2) = {limit}",
                               ranks.sel(V="identity", d=d)["rank"].values == limit,
                               source="exact: with V = I the limit has rank d - rank(A + A^T) = ceil(d/2) "
                                      "(validation/castin_figures.py docstring)"))
        rnd = ranks.sel(V="random", d=d)
        done = rnd.stop_reason.values == "completed"
        checks.append(fraction(f"V random, d = {int(d)}: every run that converges reaches rank <= {limit}",
                               rnd["rank"].values[done] <= limit,
                               source="exact: ranks are integers; the bound ceil(d/2) is Castin et al.'s "
                                      "(MATH.md §3)"))
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
    folder_study("fv-staircase", "fv_staircase",
                 "Finite-volume clusters handed over to points (circle, SA): merges against the K-point ODE from the "
                 "run's own clusters and against the Lagrangian scheme, the start at two resolutions.",
                 fv_staircase_claims),
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
    folder_study("causal", "causal",
                 "Causal attention (MATH.md §8): the kinetic PDE's exact reductions, its linear regime against the "
                 "Green's function, causal particles against it (rate in n), lost in the middle and t_crit from runs, "
                 "causal clustering of particles.", causal_claims),
    folder_study("phase-transitions", "phase_transitions",
                 "Noise-driven phase transitions (MATH.md §9): stationary branches with stability, folds and nu_c, the "
                 "curvature C and the tricritical beta*(d), hysteresis loops of ramped PDE runs and particles.",
                 phase_transition_claims),
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
    benchmark("bench-causal", "bench_causal",
              "Benchmark: one causal kinetic-PDE right-hand side against N_S ordinary ones; causal circle particles, "
              "prefix sums against the masked direct sum.", "Fewer sizes and shorter timings.",
              ("QUICK_CASES", "CASES")),
    benchmark("bench-signals", "signal_trials",
              "SIGINT and SIGTERM at random moments of runs and of their writes (subprocesses): every run saved, "
              "exit 130 / 143, no temporary file left.", "8 trials instead of 40."),
)}
