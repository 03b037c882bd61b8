"""The study registry: every ``meanfield validate NAME`` command, declared once (DESIGN.md "Validation").

Each :class:`Study` names its module, its quick and full presets (attributes of that module),
its runner, its table formatter, the figures it writes and its *claims*: the name of the module's
function that turns the study's result into checks "claim, theory value, measured value, tolerance,
tolerance source, pass / fail" (:class:`meanfield.validation.claims.Check`), with the theory values and
tolerances that ``tests/validation`` asserts (a check that cannot fail is not a claim).  Each study's
module owns its claims function; the registry only names it.  Benchmarks have no claims: their printed
table is their result.

The command line (:mod:`meanfield.cli`) and the report (:mod:`meanfield.validation.report`) are generated
from :data:`STUDIES`; :mod:`meanfield.validation.harness` runs an entry.  Importing this module imports no
study: a study's module is loaded when it runs, and its claims function is looked up on it then.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import shlex
from dataclasses import dataclass
from typing import Callable

from meanfield.errors import require


# --------------------------------------------------------------------------------------------- parameters
#: The parameters a study may take from the command line: ``--<option>`` and what its value is.
PARAMETER_HELP = {
    "beta": "Inverse temperature(s) beta: a comma-separated list or START:STOP:COUNT.",
    "n": "Numbers of tokens n: a comma-separated list or START:STOP:COUNT.",
    "seeds": "How many seeded realisations (seeds 0 .. SEEDS-1) each size averages over.",
    "seed": "The seed of the study's random draws.",
    "init": "Initial density, in the --init text of meanfield solve (e.g. vonmises:4@0+vonmises:4@3).",
    "geometry": "Geometry of the study's runs.",
}


def as_given(values, option: str):
    """The option's value as the command line read it."""
    return values


def one(values, option: str):
    """One value of a list option (``--beta 4``)."""
    require(len(values) == 1, f"--{option} takes one value for this study (got {len(values)})")
    return values[0]


def several(values, option: str) -> tuple:
    """A list option's values, as a tuple."""
    return tuple(values)


def powers_of_two(values, option: str) -> tuple:
    """Token counts given as powers of two (``--n 128,256``) -> their exponents (the presets' ``log2_n``)."""
    require(all(int(n) == n and n >= 2 and int(n) & (int(n) - 1) == 0 for n in values),
            f"--{option} must be powers of two >= 2 for this study (got {', '.join(f'{n:g}' for n in values)})")
    return tuple(int(n).bit_length() - 1 for n in values)


@dataclass(frozen=True)
class Parameter:
    """A study parameter set from the command line: ``--<option>`` (a key of :data:`PARAMETER_HELP`) becomes the
    keyword ``argument`` of the study's runner, through ``convert(values, option)`` (:func:`one`, :func:`several`,
    :func:`powers_of_two`, :func:`as_given`); ``note`` adds what the study does with it to the option's help."""

    option: str
    argument: str
    convert: Callable = as_given
    note: str = ""
    low: int = 1

    @property
    def help(self) -> str:
        shape = {one: "One value.", powers_of_two: "Powers of two."}.get(self.convert, "")
        text = " ".join(part for part in (PARAMETER_HELP[self.option], shape, self.note) if part)
        return text + " [default: the preset's]"


# --------------------------------------------------------------------------------------------- studies
@dataclass(frozen=True)
class Study:
    """One registered study or benchmark.

    ``output`` is ``"folder"`` (``--out-dir``, default ``default_out``), ``"file"`` (an optional
    ``--out`` netCDF file) or ``None`` (a benchmark: nothing written).  ``run(module, quick, out)``
    returns the result; ``table(module, result)`` the printed table; ``wrote(out, result)`` the
    closing line; ``claims`` the name of the module's function ``claims(result)`` giving the checks
    (``None``: no claims; :meth:`checks`); ``figures`` the PNG files written in the folder
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
    claims: str | None = None
    parameters: tuple[Parameter, ...] = ()

    @property
    def benchmark(self) -> bool:
        return self.output is None

    @property
    def stem(self) -> str:
        """The module's own name (``mean_field`` of ``studies.mean_field``): its output files are named after it."""
        return self.module.rpartition(".")[2]

    def load(self):
        """The study's module (imported on first use): ``module`` under ``meanfield.validation``
        (``studies.<name>`` or ``benchmarks.<name>``)."""
        return importlib.import_module(f"meanfield.validation.{self.module}")

    def checks(self, module, result) -> list:
        """The checks of the study's claims on ``result``: its ``module``'s function named ``claims``."""
        return [] if self.claims is None else list(getattr(module, self.claims)(result))

    def preset(self, quick: bool):
        """The module's quick or full preset (``None`` when it has none by that name)."""
        if self.presets is None:
            return None
        return getattr(self.load(), self.presets[0 if quick else 1], None)

    def arguments(self, given: dict) -> dict:
        """The runner's keyword arguments from the command line's ``given`` values (``{option: value}``, ``None`` for
        an option not given: the preset's value stays)."""
        known = {parameter.option: parameter for parameter in self.parameters}
        unknown = sorted(set(option for option, value in given.items() if value is not None) - set(known))
        require(not unknown, f"study {self.name} takes no --{', --'.join(unknown)} "
                             f"(it takes: {', '.join('--' + option for option in known) or 'no parameter'})")
        return {known[option].argument: known[option].convert(value, option)
                for option, value in given.items() if value is not None}

    def command(self, quick: bool, out, given: dict | None = None) -> str:
        """The command line that re-runs this study into ``out`` with the parameters ``given`` (``{option: the
        command line's text}``), shell-quoted (a folder named ``x; rm -rf ~`` stays one word when pasted)."""
        words = ["meanfield", "validate", self.name] + (["--quick"] if quick else [])
        for option, text in (given or {}).items():
            if text is not None:
                words += [f"--{option}", str(text)]
        if self.output == "folder":
            words += ["--out-dir", str(out)]
        elif self.output == "file" and out is not None:
            words += ["--out", str(out)]
        return shlex.join(words)


def _run_study(module, quick: bool, out, **arguments):
    return module.run_study(quick=quick, out_dir=out, **arguments)


def _table(module, result) -> str:
    return module.format_table(result)


def _wrote_files(stem: str):
    return lambda out, result: f"wrote {out}/{stem}.nc and {out}/{stem}.png"


def _run_printed(module, quick: bool, out, **arguments) -> str:
    """A benchmark: its ``main`` prints its tables; the result is the printed text."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        module.main(["--quick"] if quick else [])
    return buffer.getvalue()


def _printed(module, result) -> str:
    return result.rstrip("\n")


def _run_growth(module, quick: bool, out, **arguments):
    return module.run_study(quick=quick, **arguments)


def _run_castin(module, quick: bool, out, **arguments):
    return module.run_all(quick=quick, out_dir=out, **arguments)


def _castin_table(module, result) -> str:
    cone, blow, ranks, _ = result
    return module.format_table(cone, blow, ranks)


def folder_study(name: str, module: str, help: str, claims: str, figures=None, parameters=()) -> Study:
    """A study with ``run_study(quick, out_dir, **arguments)`` writing ``out_dir/<module>.{nc,png}``; the default
    folder is the module's name with dashes and ``-study`` (``mean_field`` -> ``mean-field-study``); ``claims``
    names the module's claims function; ``parameters`` the command line's :class:`Parameter` s."""
    return Study(name, f"studies.{module}", help, "The small size the test suite uses.", "folder",
                 f"{module.replace('_', '-')}-study",
                 figures=(f"{module}.png",) if figures is None else figures, run=_run_study, table=_table,
                 wrote=_wrote_files(module), claims=claims, parameters=tuple(parameters))


def benchmark(name: str, module: str, help: str, quick_help: str, presets=("QUICK_SIZES", "SIZES")) -> Study:
    """A benchmark: ``main([--quick])`` prints its table; no claims, nothing written.  ``presets``: the module's
    quick and full size lists (``None``: it has none)."""
    return Study(name, f"benchmarks.{module}", help, quick_help, None, None, presets, (), run=_run_printed,
                 table=_printed)


# --------------------------------------------------------------------------------------------- registry
STUDIES: dict[str, Study] = {study.name: study for study in (
    Study("growth-circle", "studies.growth_rates", "Fitted linear growth rates of PDE runs against MATH.md §2.3 (circle).",
          "Fewer cases.", "file", None, None, (), run=_run_growth, table=_table,
          wrote=lambda out, result: f"wrote {out}", claims="growth_claims",
          parameters=(Parameter("beta", "betas", several,
                                note="Each runs SA and USA without noise; the noisy cases at the first beta."),
                      Parameter("seed", "seed", note="The seed of the perturbed:1e-12 start."))),
    folder_study("mean-field", "mean_field",
                 "Particles -> PDE on the circle: W1 against n (i.i.d. and quadrature nodes), fitted slopes.",
                 "mean_field_claims",
                 parameters=(Parameter("beta", "betas", several), Parameter("n", "log2_n", powers_of_two),
                             Parameter("seeds", "seeds", low=2), Parameter("init", "init", note="A circle density."))),
    folder_study("mean-field-sphere", "mean_field_sphere",
                 "Particles -> PDE on S^2 (SA, d = 3): H^-2 error from spherical-harmonic coefficients against n, "
                 "fitted slopes against n^-1/2 and the expected t = 0 error.", "mean_field_sphere_claims",
                 parameters=(Parameter("beta", "beta", one), Parameter("n", "log2_n", powers_of_two),
                             Parameter("seeds", "seeds", low=2), Parameter("init", "init", note="An S^2 density."))),
    folder_study("cluster-formation", "cluster_formation",
                 "Cluster formation time of i.i.d. tokens against n, with log(n) / (2 lambda_k*) overlaid.",
                 "cluster_formation_claims",
                 parameters=(Parameter("beta", "beta", one), Parameter("n", "log2_n", powers_of_two),
                             Parameter("seeds", "seeds"))),
    folder_study("metastability", "metastability",
                 "Metastable clusters on the circle: predicted k*, formation time and angles against the PDE "
                 "(finite volume) and i.i.d. particles; plateaus, energy staircase, first merge.",
                 "metastability_claims",
                 parameters=(Parameter("beta", "betas", several),
                             Parameter("n", "n", one, note="The particle runs' count."),
                             Parameter("seed", "seed", note="The PDE's perturbation and the particles' draw."))),
    folder_study("schemes", "scheme_comparison",
                 "Spectral, finite-volume and Lagrangian circle schemes against each other, before and "
                 "through clustering (mass, positivity, cluster centres and masses), and against particles.",
                 "scheme_claims",
                 parameters=(Parameter("beta", "beta", one),
                             Parameter("n", "n", one, note="The particle runs' count."),
                             Parameter("seed", "seed"),
                             Parameter("init", "init", note="The structured start of the comparison with particles: "
                                                            "a circle density that forms clusters."))),
    folder_study("noise-transition", "noise_transition",
                 "Noise phase transition on the circle: stationary order parameter against nu / nu_# from a "
                 "perturbed and a clustered start, checked against the zero-flux fixed point.", "noise_claims",
                 parameters=(Parameter("beta", "betas", several,
                                       note="Where mode 1 alone is unstable at 0.7 nu_# (SA: beta <= 4.64)."),
                             Parameter("seed", "seed", note="The perturbed start's."))),
    folder_study("staircase", "staircase",
                 "The metastable staircase: formation, every merge and one cluster (circle at several beta, "
                 "particles, S^2) against the K-point ODE of MATH.md §5.", "staircase_claims",
                 parameters=(Parameter("beta", "betas", several,
                                       note="Of every geometry's runs; at least two on the circle."),
                             Parameter("n", "n", one, note="The particle runs' count."),
                             Parameter("seed", "seed"),
                             Parameter("geometry", "geometry", note="circle or sphere (default: both)."))),
    folder_study("cluster-events", "cluster_events",
                 "Cluster counts and events of every scheme on the same data (three bumps; the circle and S^2 "
                 "staircases): counts alike frame by frame, falls only at merges (MATH.md §10).",
                 "cluster_events_claims",
                 parameters=(Parameter("beta", "beta", one, note="The staircases' (the three bumps stay at 6)."),
                             Parameter("n", "n", one, note="The circle staircase's particles."),
                             Parameter("seed", "seed", note="The staircases' perturbation."),
                             Parameter("geometry", "geometry", note="circle or sphere (default: both)."))),
    folder_study("formation-count", "formation_count",
                 "The cluster count at formation of runs (circle at two near ties, S^2 at two beta) against the "
                 "distribution the linear theory predicts (MATH.md §2.4, §10), by a chi-square test.",
                 "formation_count_claims",
                 parameters=(Parameter("beta", "betas", several, note="Each > 0; every geometry of the study at each."),
                             Parameter("seeds", "seeds", note="Runs per case."),
                             Parameter("geometry", "geometry", note="circle or sphere: that geometry's cases only."))),
    folder_study("fv-staircase", "fv_staircase",
                 "Finite-volume clusters handed over to points (circle, SA): merges against the K-point ODE from the "
                 "run's own clusters and against the Lagrangian scheme, the start at two resolutions.",
                 "fv_staircase_claims",
                 parameters=(Parameter("beta", "beta", one, note="> 0."),
                             Parameter("seed", "seed", note="The draw of perturbed:1e-4 every run starts from."))),
    folder_study("gaussian", "gaussian",
                 "Gaussian tokens: particle moments against the Castin et al. ODEs, error against n.",
                 "gaussian_claims",
                 parameters=(Parameter("n", "log2_n", powers_of_two, note="Each >= 16."),
                             Parameter("seeds", "seeds", note="Per draw and size.", low=2))),
    folder_study("long-context", "long_context",
                 "Long context (MATH.md §7): one SA layer at beta = gamma log n; exact cosine of equiangular tokens "
                 "against gamma, its limit, a direct check, and a Monte Carlo of i.i.d. tokens.",
                 "long_context_claims",
                 parameters=(Parameter("n", "n_mc", several, note="Each >= 2: the Monte Carlo's context lengths "
                                                                  "(the exact formula's are fixed)."),
                             Parameter("seed", "seed", note="The Monte Carlo's tokens."))),
    folder_study("normalization", "normalization",
                 "Normalisation schemes (MATH.md §6): particles from an orthonormal start against the equiangular "
                 "ODE with fitted late-time laws, the initial speed of i.i.d. tokens, and PDE mode growth under "
                 "Post-LN, nGPT and LN-scaling against the linear theory.", "normalization_claims",
                 parameters=(Parameter("beta", "beta", one, note="> 0; of all three parts (particles "
                                                                 "and PDE)."),
                             Parameter("n", "n", one, note=">= 2: tokens of the orthonormal start (n = d); "
                                                           "beta and n whose late-time laws are out of reach by the "
                                                           "runs' end are refused."))),
    Study("castin-figures", "studies.castin_figures",
          "Castin et al.'s figures: 2x2 covariance paths in the PSD cone, blow-up times, limit ranks.",
          "20 samples per rank histogram instead of 200.", "folder", "castin-figures", None,
          ("psd_cone.png", "rank_histograms.png"),
          run=_run_castin, table=_castin_table, wrote=lambda out, result: f"wall time {result[3]:.1f} s; wrote {out}/",
          claims="castin_claims", parameters=(Parameter("seed", "seed", note="The rank histograms' draws."),)),
    folder_study("causal", "causal",
                 "Causal attention (MATH.md §8): the kinetic PDE's exact reductions, its linear regime against the "
                 "Green's function, causal particles against it (rate in n), lost in the middle and t_crit from runs, "
                 "causal clustering of particles.", "causal_claims",
                 parameters=(Parameter("n", "sizes", several, note="Two or more, each >= 16: the causal particles' "
                                                                   "counts (mean-field part)."),
                             Parameter("seeds", "seeds", note="Of the mean-field part.", low=2),
                             Parameter("beta", "beta", one, note="> 0; of the mean-field part."))),
    folder_study("phase-transitions", "phase_transitions",
                 "Noise-driven phase transitions (MATH.md §9): stationary branches with stability, folds and nu_c, the "
                 "curvature C and the tricritical beta*(d), hysteresis loops of ramped PDE runs and particles.",
                 "phase_transition_claims",
                 parameters=(Parameter("beta", "betas", several, note="Each in (0, 6]: the bifurcation diagrams' "
                                                                     "(each attention and d of the preset at each)."),
                             Parameter("n", "n", one, note="In [300, 1000000]: the hysteresis loop's "
                                                           "particles."),
                             Parameter("seed", "seed", note="The hysteresis loop's particles."))),
    folder_study("depth", "depth",
                 "Depth (MATH.md §3.1, §11, §12): per-layer growth of the dominant mode against the layers' linear "
                 "theory (particles, densities), L layers against the flow (fixed and random weights), hardmax's "
                 "finite-beta departure and straight lines, tokens in R^d (reference loop, limit sets), Gaussian "
                 "data through layers.", "depth_claims",
                 parameters=(Parameter("beta", "beta", one, note="In (0, 12]: of the linear theory (SA and USA; "
                                                                 "particles, densities) and of the SA flow cases."),
                             Parameter("n", "n", one, note="In [2, 1024]: the flow cases' tokens."),
                             Parameter("seed", "seed", note="The flow cases' tokens, the hardmax polygons and the "
                                                            "Gaussian data."))),
    benchmark("bench-circle", "circle",
              "Benchmark: circle right-hand side vs its bare FFTs; spectral vs direct convolution.",
              "Fewer sizes and repeats."),
    benchmark("bench-particles", "particles",
              "Benchmark: particle right-hand side vs GEMM + exp, vs a per-particle loop; O(nM) circle path.",
              "Fewer sizes and shorter timings."),
    benchmark("bench-sphere", "sphere",
              "Benchmark: one S^2 right-hand side against the bare ducc0 transforms it performs.",
              "Fewer degrees and shorter timings.", ("QUICK_LMAXES", "LMAXES")),
    benchmark("bench-staircase", "staircase",
              "Benchmark: simulated time per wall-second with and without collapse of coincident nodes.",
              "Shorter runs without collapse.", None),
    benchmark("bench-startup", "startup",
              "Start-up: import meanfield and meanfield --version against import numpy (best of 5 interpreters).",
              "2 interpreters each.", presets=None),
    benchmark("bench-frames", "frames",
              "Frames: a default run (101 frames) against a 2-frame run of the same problem (circle spectral, S^2 "
              "particles n = 2000, 8000).", "1 timed run each.", presets=None),
    benchmark("bench-cluster-schemes", "cluster_schemes",
              "Benchmark: finite-volume rhs vs its FFTs and the spectral rhs; Lagrangian O(N M) vs direct O(N^2).",
              "Fewer sizes and shorter timings."),
    benchmark("bench-clusters", "clusters",
              "Benchmark: counting the clusters of one frame against one right-hand side of the same state (circle fv "
              "N = 512, S^2 particles n = 1e5, 1e6; SA, beta = 9).", "S^2 at n = 1e5 only, shorter timings."),
    benchmark("bench-causal", "causal",
              "Benchmark: one causal kinetic-PDE right-hand side against N_S ordinary ones; causal circle particles, "
              "prefix sums against the masked direct sum.", "Fewer sizes and shorter timings.",
              ("QUICK_CASES", "CASES")),
    benchmark("bench-signals", "signal_trials",
              "SIGINT and SIGTERM at random moments of runs and of their writes (subprocesses): every run saved, "
              "exit 130 / 143, no temporary file left.", "8 trials instead of 40."),
    benchmark("bench-layers", "layers",
              "Benchmark: a density through one Post-LN layer against one right-hand side plus the bare non-uniform "
              "projection of its moved nodes (circle, S^2, zonal; SA, beta = 9).", "Smaller resolutions, shorter "
              "timings."),
)}
