"""The ``meanfield`` command line (DESIGN.md "Command line").

Flags are spelled the same in every subcommand, and their defaults come from
:mod:`meanfield.defaults`, as the Python API's do.  A user mistake prints one line,
``meanfield: error: ...``, and exits with status 2 before anything is computed or written;
never a traceback.  Every output path is checked before computing and written safely
(:func:`meanfield.app.storage.write_atomic`).  Exit statuses: :data:`EXIT_HELP`.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from pathlib import Path

import click
import numpy as np

from . import __version__

from .app import signals
from .defaults import GAUSSIAN_DEFAULTS, GEOMETRY_DEFAULTS, PARTICLE_DEFAULTS, RUN_DEFAULTS, SOLVE_DEFAULTS
from .errors import InputError, command_line, require
from .geometries import geometry_of
from .limits import (MAX_BRANCH_MODES, MAX_LIST, MAX_MODES, MAX_ZONAL_DIM, check_dim, check_frames, check_integer, check_matrix_dim, check_number,
                     RANGES, check_option, range_table,
                     check_seed)
from .model import Model
from .normalization import Normalization
from .number_text import read_integer, read_number
from .app.json_output import strict_json
from .app.option_types import INTEGER, NUMBER, RegisteredName
from .attention_kind import KINDS, attention_kind
from .settings import Monitor, Saving, StepControl, gather

from .app.output_paths import MOVIE_SUFFIXES, RUN_SUFFIXES, check_output_file, check_output_folder, image_suffixes
from .token_limits import (HARDMAX_CASES, MAX_HARDMAX_N, MAX_HARDMAX_T, MAX_RD_EXPONENT, MAX_RD_N, MAX_TOKEN_DIM,
                           MAX_TOKEN_FRAMES, MAX_TWIN_BETA, RD_VALUES)

EXIT_COMPLETED = 0
EXIT_USAGE = 2
EXIT_STOPPED = 3
EXIT_INTERRUPTED = 130
#: ``theory --eps`` shows at most this many modes' probabilities of dominating, each at least the floor.
DOMINANCE_SHOWN = 5
DOMINANCE_FLOOR = 1e-4

EXIT_HELP = ("Exit status: 0 when the run completed; 2 on bad input (one line on stderr, nothing computed or "
             "written); 3 when the run stopped before --t-final (the file is still written with every frame and "
             "the last valid state; stop_reason says why); 130 when interrupted by Ctrl-C, 143 by SIGTERM (the "
             "file is written likewise).")


def exit_status(stop_reason: str) -> int:
    """0 for ``"completed"``, 130 for ``"interrupted ..."`` (143 by SIGTERM), 3 for any other early stop."""
    if stop_reason == "completed":
        return EXIT_COMPLETED
    if stop_reason.startswith("interrupted"):
        return signals.EXIT_SIGTERM if stop_reason.startswith("interrupted" + signals.Terminated.note) \
            else EXIT_INTERRUPTED
    return EXIT_STOPPED


def _save(dataset, out) -> int | None:
    """Write the run; Ctrl-C and SIGTERM wait until it is written (:mod:`meanfield.app.signals`).  Returns the exit
    status a signal that arrived meanwhile asks for, or None."""
    from .app.storage import save_run

    try:
        save_run(dataset, out)
    finally:
        held = signals.release()
    return held


def _finish(stop_reason: str, held: int | None = None) -> None:
    """Exit with :func:`exit_status` of the run (a note on stderr when it did not complete), or with the status
    of a signal that arrived while the run was being saved."""
    code = exit_status(stop_reason)
    if code == EXIT_COMPLETED and held is not None:
        click.echo(f"meanfield: interrupted while the completed run was saved (it is saved); exit status {held}",
                   err=True)
        raise click.exceptions.Exit(held)
    if code != EXIT_COMPLETED:
        click.echo(f"meanfield: the run did not complete ({stop_reason}); exit status {code}", err=True)
        raise click.exceptions.Exit(code)


def _attention_option(f):
    return click.option("--attention", type=RegisteredName(KINDS),
                        default=SOLVE_DEFAULTS["attention"],
                        show_default=True, help="SA (softmax) or USA (unnormalised) attention.")(f)


def _model_options(f, beta_required: bool = True):
    f = click.option("--nu", type=NUMBER, default=SOLVE_DEFAULTS["nu"], show_default=True,
                     help=f"Noise strength nu {RANGES['--nu'].text()}.")(f)
    f = click.option("--beta", type=NUMBER, required=beta_required,
                     help=f"Inverse temperature beta {RANGES['--beta'].text()} (USA: <= 700)"
                          + ("." if beta_required else "; required except with --tricritical."))(f)
    return _attention_option(f)


def _kept_model_options(f):
    """The model options of a command that continues run files: not given, they are the file's
    (:mod:`meanfield.solvers.runs.restart`); given and different, refused unless --override."""
    f = click.option("--override", is_flag=True,
                     help="Allow the model (--attention, --beta, --nu, --normalization and its parameters; particles: "
                          "--qkv and its --seed) to differ from the --init run's (recorded in the file).")(f)
    f = click.option("--nu", type=NUMBER, default=None,
                     help=f"Noise strength nu {RANGES['--nu'].text()} [default: {SOLVE_DEFAULTS['nu']:g}, or the "
                          f"--init run's].")(f)
    f = click.option("--beta", type=NUMBER, default=None,
                     help=f"Inverse temperature beta {RANGES['--beta'].text()} (USA: <= 700; required unless --init is "
                          f"a run file, whose beta it keeps).")(f)
    return click.option("--attention", type=RegisteredName(KINDS), default=None,
                        help=f"SA (softmax) or USA (unnormalised) attention [default: {SOLVE_DEFAULTS['attention']}, "
                             f"or the --init run's].")(f)


def _alibi_option(with_mask: str, default: str):
    """``--alibi``, the ALiBi slope of causal attention (MATH.md §8), the same in every command."""
    return click.option("--alibi", type=NUMBER, default=None,
                        help=f"ALiBi slope lambda {RANGES['--alibi'].text()} in mean-field units, logit bias "
                             f"-lambda (j - k) / n ({with_mask}) [default: {default}].")


class _Commands(click.Group):
    """The command group: Ctrl-C or SIGTERM that reaches it (before a run started) becomes ``click.Abort`` here, so
    that :func:`main` prints its one line (click itself would first print an empty line to stderr)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as interrupt:
            raise click.Abort() from interrupt


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(version=__version__, prog_name="meanfield")
@click.option("--threads", type=INTEGER, default=None,
              help="Threads for BLAS, ducc0 and FFTW, in [1, cores] [default: all cores]. Runs repeat bit for bit "
                   "at the same count; runs through BLAS (particles) may differ in the last bits at another count "
                   "(attribute bit_reproducible_across_threads; DESIGN.md \"Threads\").")
def cli(threads):
    """Mean-field PDE of self-attention dynamics: solve, analyse, plot.

    \b
    Example:
      meanfield theory --dim 2 --attention sa --beta 9
      meanfield solve circle --beta 9 --resolution 1024 --init perturbed:1e-4 --t-final 17 --out run.nc
      meanfield plot run.nc -o run.png

    \b
    Exit status:
      0    the command completed
      2    bad input: one line on stderr naming the parameter; nothing computed or written
      3    a run (solve, particles, gaussian, demo, sweep) stopped before --t-final; its file is
           still written, with the last valid state; stop_reason says why
      130  interrupted (Ctrl-C); a run's file is still written likewise
      143  terminated (SIGTERM, as batch schedulers send); the same

    \b
    Numeric options take these values in every command (outside them: one line, exit 2):
    {ranges}
    """
    from .app.threads import set_threads

    set_threads(threads)
    if click.get_current_context().invoked_subcommand not in DASK_COMMANDS:
        keep_dask_out()


#: The commands that may use Dask (a sweep's cluster, the studies' tasks).  The others never do, and keep it out of
#: the process (:func:`keep_dask_out`).
DASK_COMMANDS = frozenset({"sweep", "validate"})


def keep_dask_out() -> None:
    """Make ``import dask`` fail in this process (unless it is imported already) when it is the ``meanfield`` console
    command: xarray imports ``dask.array`` and ``distributed`` (0.3 s of a 1 s ``meanfield solve``) only to ask
    whether each new variable is a dask array, and takes Dask's absence as the answer no.  A Python process that
    calls the command group (a test, a notebook) keeps its Dask."""
    import sys

    from .app._import_guard import is_console_command

    if is_console_command():
        sys.modules.setdefault("dask", None)


cli.help = cli.help.replace("{ranges}", "\n    ".join(range_table().splitlines()))


# --------------------------------------------------------------------------------------------- theory
@cli.command()
@click.option("--dim", type=INTEGER, default=GEOMETRY_DEFAULTS["circle"]["dim"], show_default=True,
              help="Ambient dimension d in [2, 4096] (sphere S^{d-1}).")
@lambda f: _model_options(f, beta_required=False)
@click.option("--modes", type=INTEGER, default=None,
              help=f"Show degrees/modes 1..MODES (<= {MAX_MODES}) [default: 10]; with --branch the branches of modes "
                   f"1..MODES (<= {MAX_BRANCH_MODES}) [default: 1].")
@click.option("--eps", type=NUMBER, default=None,
              help="EPS of a perturbed:EPS start (MATH.md §2.4), in (0, 1): also predict the formation time and "
                   "the probability that each mode dominates then (on the circle: the cluster count).")
@click.option("--zonal", is_flag=True, help="With --eps: the zonal law (one coefficient per degree, --dim >= 3).")
@click.option("--normalization", default=None,
              help="Also the theory of a normalisation scheme (MATH.md §6): post, pre, mix, peri, ngpt or lnscale.")
@click.option("--r0", type=NUMBER, default=None, help="Initial radius r0 in [1e-300, 1e300] (with --normalization) [default: 1].")
@click.option("--alpha", type=NUMBER, default=None, help="nGPT step alpha > 0 (with --normalization) [default: 1].")
@click.option("--mix-switch", type=NUMBER, default=None,
              help="Mix-LN switch time tau >= 0 (with --normalization) [default: 1].")
@click.option("--n", "tokens", type=INTEGER, default=None,
              help="Tokens of the orthonormal start, >= 2 (with --normalization) [default: --dim].")
@click.option("--t", "at_time", type=NUMBER, default=None,
              help="Time >= 0 of the amplitude factors (with --normalization) [default: 10]; with --mask causal, of "
                   "the lost-in-the-middle profile [default: t_crit / 2, or 1 when t_crit = 0].")
@click.option("--mask", type=click.Choice(["none", "causal", "strict"]), default="none", show_default=True,
              help="Attention mask. causal: token j attends to tokens k <= j (decoders; MATH.md §8): also t_crit and "
                   "the lost-in-the-middle profile S_t(s) of the linear theory. strict (k < j): the same mean field.")
@_alibi_option("with --mask causal", "0")
@click.option("--profile-width", type=NUMBER, default=None,
              help="Width M > 0 of the perturbation's angular profile omega_k = exp(-pi^2 k^2 / (2 M^2)), "
                   "k = 1..MODES (with --mask causal) [default: 8].")
@click.option("--branch", is_flag=True,
              help="The branch of stationary states leaving the uniform state at nu_# (MATH.md §9), by continuation: "
                   "nu_#, the fold nu_sn, the first-order point nu_c (USA), the curvature C and the transition "
                   "(continuous or first-order); circle: even states, --dim >= 3: zonal states.")
@click.option("--verify", is_flag=True,
              help="With --branch: check every fold and nu_c by time evolution: the PDE with noise started from the "
                   "fold state at nu_sn (1 - 1e-3) must stay clustered and at nu_sn (1 + 1e-2) decay to uniform over "
                   "t = 200; the state at nu_c must stay (a second per run on the circle, about 40 s on S^{d-1}).")
@click.option("--tricritical", is_flag=True,
              help="The tricritical beta*(d) of USA (MATH.md §9; SA has none: it is supercritical at every beta): "
                   "bisection on the sign of C, with the Bessel-ratio root I_{d/2+1}(beta) / I_{d/2}(beta) = 1/d "
                   "beside it (--dim in [2, 64]).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def theory(dim, attention, beta, nu, modes, eps, zonal, normalization, r0, alpha, mix_switch, tokens, at_time,
           mask, alibi, profile_width, branch, verify, tricritical, as_json):
    """Linear growth rates of the uniform state (MATH.md §2.3); with --normalization also the
    scheme's mode growth, the orthonormal start's drho/dt(0) and its late-time law (MATH.md §6); with
    --mask causal the causal linear theory (MATH.md §8): t_crit and the lost-in-the-middle profile.

    \b
    Example:
      meanfield theory --dim 3 --attention usa --beta 4 --nu 0.01 --modes 8 --json
      meanfield theory --dim 8 --beta 3 --normalization pre --r0 1.5 --n 6 --t 5
      meanfield theory --beta 4 --mask causal --alibi 1 --profile-width 8 --modes 20
    """
    from .theory import linear_noise_threshold, dominant_mode, formation_time, growth_rates, law_leader

    check_dim(dim)
    if branch or tricritical:
        _phase_transition_report(attention, beta, nu, dim, branch, tricritical, as_json, modes, verify,
                                 others=(eps, normalization, at_time, alibi, profile_width, mask != "none"))
        return
    require(not verify, "--verify checks the folds of --branch: give --branch")
    modes = 10 if modes is None else modes
    require(beta is not None, "--beta is required (except with --tricritical)")
    model = Model(attention=attention, beta=beta, nu=nu, dim=dim)
    check_option("--modes", modes)
    if eps is not None:
        check_option("--eps", eps)
    require(not zonal or eps is not None, "--zonal needs --eps")
    require(not zonal or dim >= 3, f"--zonal needs --dim >= 3 (got {dim})")
    causal = mask != "none"
    require(causal or alibi is None, "--alibi needs --mask causal")
    require(causal or profile_width is None, "--profile-width needs --mask causal")
    require(not causal or normalization is None, f"--mask {mask} has no normalisation theory: give --mask or "
                                                 f"--normalization, not both")
    require(not causal or eps is None, "--eps needs --mask none (the formation time of MATH.md §2.4 is unmasked)")
    if causal:
        from .causal_theory import DEFAULT_PROFILE_WIDTH, MIN_PROFILE_WIDTH, causal_report, causal_report_lines
        alibi = check_option("--alibi", 0.0 if alibi is None else alibi)
        profile_width = check_number("--profile-width", DEFAULT_PROFILE_WIDTH if profile_width is None
                                     else profile_width, 0.0)
        require(profile_width >= MIN_PROFILE_WIDTH, f"--profile-width must be >= {MIN_PROFILE_WIDTH:.4f}: below it "
                                                    f"every omega_k underflows to 0 (got {profile_width!r})")
        if at_time is not None:
            at_time = check_number("--t", at_time, 0.0, low_closed=True)
    require(at_time is None or causal or normalization is not None, "--t needs --normalization or --mask causal")
    normalization_options = {"--r0": r0, "--alpha": alpha, "--mix-switch": mix_switch, "--n": tokens}
    if normalization is None:
        for option, value in normalization_options.items():
            require(value is None, f"{option} needs --normalization")
    else:
        from .normalization import Normalization
        from .normalization_theory import normalization_report, report_lines
        chosen = Normalization(normalization, **{key: value for key, value in
                                                  (("r0", r0), ("alpha", alpha), ("mix_switch", mix_switch))
                                                  if value is not None})
        tokens = check_integer("--n", dim if tokens is None else tokens, 2)
        at_time = check_number("--t", 10.0 if at_time is None else at_time, 0.0, low_closed=True)
    degrees = np.arange(1, modes + 1)
    report = None if normalization is None else normalization_report(chosen, model, degrees, tokens, at_time)
    causal_part = causal_report(model, alibi, profile_width, modes, at_time, mask) if causal else None
    rates = growth_rates(model, degrees)
    k_star = dominant_mode(model)
    if as_json:
        result = {"dim": dim, "attention": model.attention, "beta": model.beta, "nu": model.nu,
                  "modes": degrees.tolist(), "growth_rates": rates.tolist(), "dominant_mode": k_star,
                  "nu_sharp": linear_noise_threshold(model)}
        if eps is not None:
            time = formation_time(model, eps, zonal=zonal)
            formed = math.isfinite(time)
            result.update(eps=eps, formation_time=time if formed else None,
                          dominance=_dominance(model, eps, zonal) if formed else None,
                          count_at_formation=_count_at_formation(model, eps, zonal) if formed else None)
        result.update(report or {})
        result.update(causal_part or {})
        click.echo(strict_json(result))
        return
    click.echo(f"{model.attention.upper()} attention on S^{dim - 1}, beta = {model.beta:g}, nu = {model.nu:g}")
    click.echo(f"{'mode':>6}  {'growth rate':>14}")
    for degree, rate in zip(degrees, rates):
        click.echo(f"{degree:>6}  {rate:>14.8g}{'   <- dominant' if degree == k_star else ''}")
    click.echo(f"dominant mode: {k_star} (rate {growth_rates(model, [k_star])[0]:.8g})")
    click.echo(f"linear noise threshold: nu_# = {linear_noise_threshold(model):.8g} (the uniform state is linearly "
               f"stable iff nu > nu_#; MATH.md §2.3)")
    if eps is not None:
        time = formation_time(model, eps, zonal=zonal)
        leader = law_leader(model, zonal)
        outside = "" if leader == k_star else (f" (mode {leader}, the fastest of the modes perturbed: excites; "
                                               f"mode {k_star} is not in the start)")
        click.echo(f"formation time from perturbed:{eps:g}{' (zonal)' if zonal else ''}: {time:.6g}{outside}")
        ranked = ", ".join(f"{degree} ({probability:.3g})" for degree, probability in
                           zip(*_dominance(model, eps, zonal).values())) if math.isfinite(time) else \
            "none (the uniform state is linearly stable)"
        click.echo(f"dominant {'mode' if dim == 2 else 'degree'} at formation (probability): {ranked}")
        predicted = _count_at_formation(model, eps, zonal) if math.isfinite(time) else None
        if predicted is not None:
            click.echo(f"cluster count at formation (the cluster observable on the linear theory, MATH.md §10; "
                       f"{predicted['draws']} draws of the law): " + ", ".join(
                           f"{count} ({p:.3f} +- {e:.3f})" for count, p, e in
                           zip(predicted["counts"], predicted["probabilities"], predicted["standard_errors"])))
    for line in report_lines(report, degrees) if report else ():
        click.echo(line)
    for line in causal_report_lines(causal_part, model) if causal else ():
        click.echo(line)


#: Draws of the perturbed:EPS law behind ``theory --eps``'s predicted count at formation.
THEORY_DRAWS = 400


def _count_at_formation(model: Model, eps: float, zonal: bool) -> dict | None:
    """The predicted count at formation (:func:`meanfield.formation_count.count_distribution`) on the circle, S^2 and
    zonal S^{d-1}, or ``None`` on S^{d-1}, ``d >= 4``, without ``--zonal`` (no sampling of that law there)."""
    from .formation_count import count_distribution, pattern_geometry

    geometry = pattern_geometry(model.dim, zonal)
    if geometry is None:
        return None
    found = count_distribution(model, eps, geometry=geometry, draws=THEORY_DRAWS)
    return {"draws": found.draws, "counts": found.counts.tolist(), "probabilities": found.probabilities.tolist(),
            "standard_errors": found.standard_errors.tolist()}


#: ``theory --tricritical`` bisects the curvature on this bracket of beta, for --dim up to this.
#: The bracket of ``theory --tricritical``'s bisection and the dimensions where its first branch starts (measured:
#: d = 2 .. 30; from d = 31 the Newton solve at the bracket's end fails, also on a bracket about the Bessel root).
TRICRITICAL_BRACKET, TRICRITICAL_MAX_DIM = (0.3, 8.0), 30
#: The largest ``--beta`` of ``theory --branch`` per attention (measured at d = 3: SA starts and follows its branch
#: to beta = 14 and fails from 16 on a singular Newton system; USA to 30, in 72 s, and fails to start at 40).
BRANCH_MAX_BETA = {"sa": 14.0, "usa": 30.0}


def _phase_transition_report(attention, beta, nu, dim, branch, tricritical, as_json, modes, verify, others) -> None:
    """``theory --branch`` / ``--tricritical`` (MATH.md §9; :mod:`meanfield.solvers.stationary.branch`)."""
    from meanfield.solvers.stationary.branch import bessel_root, tricritical_beta

    require(not (branch and tricritical), "give --branch or --tricritical, not both")
    require(not any(value not in (None, False) for value in others),
            "--branch and --tricritical take only --attention, --beta, --dim, --modes, --verify and --json")
    require(nu == SOLVE_DEFAULTS["nu"], "--branch and --tricritical follow nu themselves: leave --nu out")
    if tricritical:        # USA's (SA is supercritical at every beta, MATH.md §9)
        given = click.get_current_context().get_parameter_source("attention") != click.core.ParameterSource.DEFAULT
        require(not given or not attention_kind(attention).normalised,
                f"--tricritical is USA's: SA is supercritical at every beta and has no tricritical point (MATH.md §9); "
                f"leave --attention out or give usa (got --attention {attention})")
        attention = "usa"
        require(beta is None, "--tricritical finds beta: leave --beta out")
        require(modes is None and not verify, "--tricritical takes only --dim and --json")
        require(dim <= TRICRITICAL_MAX_DIM, f"--tricritical takes --dim in [2, {TRICRITICAL_MAX_DIM}] (got {dim})")
        result = {"attention": attention, "dim": dim, "beta_star": tricritical_beta(dim, bracket=TRICRITICAL_BRACKET),
                  "bessel_root": bessel_root(dim)}
        lines = [f"tricritical beta*(d = {dim}) = {result['beta_star']:.8g} (bisection on the sign of C); Bessel-ratio "
                 f"root I_(d/2+1)/I_(d/2) = 1/d: {result['bessel_root']:.8g}"]
    else:
        require(beta is not None, "--branch needs --beta")
        require(dim <= MAX_ZONAL_DIM, f"--branch takes --dim <= {MAX_ZONAL_DIM} (zonal states)")
        largest = BRANCH_MAX_BETA[attention.lower()]
        require(beta <= largest, f"--branch takes --beta <= {largest:g} for {attention.upper()} attention, where its "
                                 f"stationary states are followed (got {beta:g})")
        try:
            result, lines = _branch_report(attention, beta, dim, 1 if modes is None else modes, verify)
        except (np.linalg.LinAlgError, FloatingPointError) as failure:
            raise InputError(f"--branch: the stationary states could not be followed at beta = {beta:g}, d = {dim} "
                             f"({type(failure).__name__}: a singular or non-finite Newton system); try a smaller "
                             f"--beta or --dim") from None
    click.echo(strict_json(result) if as_json else "\n".join(lines))


def _branch_report(attention, beta, dim, modes, verify) -> tuple[dict, list[str]]:
    """``theory --branch [--modes K] [--verify]``: mode 1's numbers at the top level (the keys of older versions),
    every mode's branch under ``branches``, USA's free-energy minimiser and the checks by time evolution."""
    from meanfield.solvers.stationary.branch_family import branch_tables, free_energy_minimiser

    family = branch_tables(attention, beta, dim, modes)
    first = family["mode 1"].attrs
    result = {"attention": attention, "beta": beta, "dim": dim, "nu_sharp": first["nu_sharp"],
              "nu_sn": _finite_or_none(first["nu_sn"]), "nu_c": _finite_or_none(first["nu_c"]),
              "C": first["curvature"], "transition": first["transition"], "points": family["mode 1"].points,
              "stop_reason": first["stop_reason"]}
    lines = [f"{attention.upper()} on S^{dim - 1}, beta = {beta:g}: the branches of stationary states (MATH.md §9)",
             f"{'branch':>9} {'nu_#':>13} {'type':>13} {'onset C/B':>11} {'(theory)':>11} {'folds nu_sn':>16} "
             f"{'nu_c':>13} {'stable':>6}  stopped"]
    result["branches"] = {}
    for label, ds in family.items():
        attrs = ds.attrs
        folds = [float(nu) for nu in np.atleast_1d(attrs["folds"])]
        result["branches"][label] = {
            "mode": int(attrs["mode"]), "sign": float(attrs["sign"]), "nu_sharp": attrs["nu_sharp"],
            "bifurcation": attrs["bifurcation"], "type": attrs["branch_type"], "transition": attrs["transition"],
            "onset_coefficient": attrs["onset_coefficient"], "onset_theory": attrs["onset_theory"], "folds": folds,
            "nu_c": _finite_or_none(attrs["nu_c"]), "stable_points": int(ds["stable"].sum()),
            "points": ds.points, "stop_reason": attrs["stop_reason"]}
        lines.append(f"{label:>9} {attrs['nu_sharp']:13.10g} {attrs['branch_type']:>13} "
                     f"{attrs['onset_coefficient']:11.6g} {attrs['onset_theory']:11.6g} "
                     f"{', '.join(f'{nu:.10g}' for nu in folds) or 'none':>16} "
                     f"{attrs['nu_c']:13.10g} {int(ds['stable'].sum()):6d}  {attrs['stop_reason']}")
    minimiser = free_energy_minimiser(family)
    if minimiser:
        result["free_energy_minimiser"] = minimiser
        lines.append("least free energy: " + "; ".join(f"{part['state']} on [{part['low']:.6g}, {part['high']:.6g}]"
                                                        for part in minimiser))
    if verify:
        result["verify"] = _verify_branches(family, attention, beta, dim, lines)
    return result, lines


def _verify_branches(family, attention, beta, dim, lines) -> dict:
    """``--verify``: every fold and ``nu_c`` of the family checked by time evolution
    (:mod:`meanfield.solvers.stationary.branch_check`)."""
    from meanfield.solvers.stationary.branch import Branch
    from meanfield.solvers.stationary.branch_check import check_fold, check_stable_state

    checks = {}
    for label, ds in family.items():
        attrs = ds.attrs
        if not np.atleast_1d(attrs["folds"]).size and not math.isfinite(attrs["nu_c"]):
            continue
        branch = Branch(Model(attention, beta, 0.0, dim), mode=int(attrs["mode"]), sign=float(attrs["sign"]))
        branch.amplitude_phase()
        branch.continuation_phase()
        found = {"folds": [check_fold(branch, coefficient, nu) for nu, coefficient in branch.folds()]}
        for fold in found["folds"]:
            lines.append(f"verify {label}: fold: at nu = {fold['below']['nu']:.10g} (1 - 1e-3) "
                         f"{fold['below']['outcome']}, at {fold['above']['nu']:.10g} (1 + 1e-2) "
                         f"{fold['above']['outcome']} over t = {fold['t_final']:g}: "
                         f"{'as the branch says' if fold['agrees'] else 'NOT as the branch says'}")
        if math.isfinite(attrs["nu_c"]):
            state = check_stable_state(branch, attrs["nu_c"])
            found["nu_c"] = state
            lines.append(f"verify {label}: the state at nu_c stays {state['outcome']} (drift {state['drift']:.2g} over "
                         f"t = {state['t_final']:g}): {'as the branch says' if state['agrees'] else 'NOT stable'}")
        checks[label] = found
    return checks


def _finite_or_none(value: float):
    return float(value) if math.isfinite(value) else None


def _dominance(model: Model, eps: float, zonal: bool) -> dict:
    """The modes most likely to dominate at formation from ``perturbed:EPS`` (MATH.md §2.4): the most likely
    first, at most :data:`DOMINANCE_SHOWN`, those of probability >= :data:`DOMINANCE_FLOOR`."""
    from .theory import dominance_probabilities

    degrees, probabilities = dominance_probabilities(model, eps, zonal=zonal)
    order = [i for i in np.argsort(-probabilities, kind="stable")[:DOMINANCE_SHOWN]
             if probabilities[i] >= DOMINANCE_FLOOR]
    return {"modes": [int(degrees[i]) for i in order], "probabilities": [float(probabilities[i]) for i in order]}


# --------------------------------------------------------------------------------------------- solve
def _save_options(f):
    f = click.option("--save-log", type=INTEGER, default=None,
                     help="Save PER_DECADE frames per decade of time (10^(j/PER_DECADE) from t = 0.01) "
                          "instead of every --save-every.")(f)
    return click.option("--save-every", type=NUMBER, default=None,
                        help=f"Save cadence [default: t-final/{RUN_DEFAULTS['frames']}].")(f)


def _step_options(defaults: dict):
    """``--rtol`` and ``--cfl`` with the defaults of ``defaults`` (:mod:`meanfield.defaults`)."""
    def decorate(f):
        f = click.option("--cfl", type=NUMBER, default=defaults["cfl"],
                         help="Fraction of the stable step, in (0, 2] [default: the scheme's: 0.9 for fv "
                              "(SSP-RK3 keeps cells non-negative up to 1), else 0.5].")(f)
        return click.option("--rtol", type=NUMBER, default=defaults["rtol"], show_default=True,
                            help="Relative tolerance (dopri5), in (0, 1).")(f)
    return decorate


def _collapse_option(text: str):
    return click.option("--collapse-tol", type=NUMBER, default=None, help=text)


def _normalization_options(scheme_help: str, carrier: str):
    """--normalization (default post, help ``scheme_help``) and its parameters --alpha, --r0, --mix-switch
    (default None: "not given", :meth:`meanfield.normalization.Normalization.from_options`); ``carrier`` names
    what carries the radius r0 ("node" or "token")."""
    def decorate(f):
        f = click.option("--mix-switch", type=NUMBER, default=None,
                         help="Mix-LN switch time tau >= 0: post before, pre after (--normalization mix) "
                              f"[default: {Normalization.mix_switch:g}].")(f)
        f = click.option("--r0", type=NUMBER, default=None,
                         help=f"Initial {carrier} radius r0 in [1e-300, 1e300] (--normalization pre, mix, peri) "
                              f"[default: {Normalization.r0:g}].")(f)
        f = click.option("--alpha", type=NUMBER, default=None,
                         help=f"nGPT step alpha > 0 (--normalization ngpt) [default: {Normalization.alpha:g}].")(f)
        return click.option("--normalization", default=None,
                            help=f"{scheme_help} [default: {Normalization.name}, or the --init run's].")(f)
    return decorate


def _grouped(settings: dict, **groups) -> dict:
    """The command's options with each group made into its settings object (``step=StepControl``, ...;
    :mod:`meanfield.settings`: the objects the Python API takes, with the same checks and defaults); the model
    (attention, ``--qkv``, the normalisation and their parameters) stays flat, ``None`` where not given."""
    grouped = {name: gather(cls, name, None, settings) for name, cls in groups.items()}
    return dict(settings, **grouped)     # the model stays flat: a run file given to --init may supply it


@cli.group()
def solve():
    """Solve the mean-field PDE from a density: circle, sphere S^2, zonal densities on S^{d-1}."""


#: Per geometry: what --resolution means, the MATH.md section, an example (defaults: meanfield.defaults).
GEOMETRIES = {
    "circle": {"unit": "grid points N (even, >= 8; fv: cells, >= 8; lagrangian: nodes, even, >= 8)", "section": "§2.1",
               "what": "Fourier pseudo-spectral solve on the circle",
               "example": "--attention sa --beta 9 --resolution 1024 --init perturbed:1e-4 --seed 0 "
                          "--t-final 17 --save-every 0.1 --out run.nc"},
    "sphere": {"unit": "largest spherical-harmonic degree lmax (>= 6)", "section": "§2.2",
               "what": "Spherical-harmonic pseudo-spectral solve on S^2 (ducc0)",
               "example": "--attention sa --beta 9 --resolution 63 --init perturbed:1e-4 --t-final 16 "
                          "--save-every 0.5 --out sphere.nc"},
    "zonal": {"unit": "largest Gegenbauer degree L (>= 8; fv: cells, >= 8)", "section": "§2.2",
              "what": "Zonal densities on S^{d-1}: Galerkin solve in Gegenbauer polynomials",
              "example": "--dim 8 --attention sa --beta 9 --scheme fv --resolution 64 --init vmf:2+perturbed:1e-3 "
                         "--t-final 10 --out zonal.nc"},
}


def _scheme_names(geometry: str) -> list[str]:
    """The geometry's schemes, default first (names only: the scheme modules load when used)."""
    from .schemes import DEFAULT_SCHEME, SCHEMES
    default = DEFAULT_SCHEME[geometry]
    return [default] + [name for name in SCHEMES[geometry] if name != default]


def _layer_options(what: str, kind: str = "Post-LN layers instead of the flow (MATH.md §11)",
                   sets: str = "; a continued run goes on to layer LAYERS); sets --stepper layers, --dt-max ALPHA, "
                               "--t-final LAYERS x ALPHA."):
    """``--t-final`` (required unless ``--layers`` sets it), ``--layers`` and ``--step``: the flow or its discrete
    layers, ``kind`` naming them, ``what`` saying what a layer moves and ``sets`` what ``--layers`` sets."""
    def decorate(command):
        command = click.option("--step", "layer_step", type=NUMBER, default=None,
                               help="The layers' step alpha > 0 (with --layers).")(command)
        command = click.option("--layers", type=INTEGER, default=None,
                               help=f"Discrete {kind}: LAYERS maps of {what} of step --step, a frame after each "
                                    f"(time = layer x alpha, coordinate layer{sets}")(command)
        return click.option("--t-final", type=NUMBER, default=None,
                            help="End time (a continued run goes on from its file's time); required unless --layers "
                                 "sets it.")(command)
    return decorate


def _solve_command(geometry: str, spec: dict):
    """``meanfield solve GEOMETRY``: the same flags for every geometry."""

    defaults = GEOMETRY_DEFAULTS[geometry]

    @_kept_model_options
    @click.option("--nu-schedule", default=None,
                  help="Time-dependent noise instead of --nu: ramp:A>B@T0..T1 (nu = A up to T0, linear to B at T1, "
                       "B after), segments joined by ',', e.g. ramp:0.3>0.1@0..500,ramp:0.1>0.3@500..1000 "
                       "(--scheme spectral or galerkin; not etdrk4) [default: none, or the --init run's].")
    @click.option("--dim", type=INTEGER, default=None,
                  help=f"Ambient dimension d [default: {defaults['dim']}, or the --init run's]"
                       + (f" ({geometry}: at most {geometry_of(geometry).max_dim})." if geometry_of(geometry).free_dim
                          else "."))
    @click.option("--scheme", default=None,
                  help=f"Discretisation: {' | '.join(spec['schemes'])} [default: {spec['schemes'][0]}, "
                       f"or the --init run's].")
    @click.option("--stepper", default=None,
                  help="Time stepper: dopri5, rk4, etdrk4, ssprk3; layers (the normalisation's layers of step --dt-max: "
                       "use --layers) [default: the scheme's; ssprk3 for fv, else dopri5].")
    @click.option("--resolution", type=INTEGER, default=None,
                  help=f"{spec['unit']} [default: {defaults['resolution']}, or the --init run's].")
    @click.option("--init", "init", default=SOLVE_DEFAULTS["init"], show_default=True,
                  help="Initial density: a text spec, a density file (.npy, .txt or .csv: values on the grid; .nc or .zarr: "
                       "a density DataArray on the geometry's coordinates), or a run file to restart (see docs/guide.md).")
    @click.option("--seed", type=INTEGER, default=SOLVE_DEFAULTS["seed"], show_default=True,
                  help="Random seed of perturbed starts, in [0, 2^63 - 1].")
    @_layer_options("the density pushed forward by x <- (x + alpha A_x) / |x + alpha A_x| (--scheme spectral, "
                    "galerkin or lagrangian)")
    @_save_options
    @_step_options(SOLVE_DEFAULTS)
    @click.option("--dt-max", type=NUMBER, default=None,
                  help="Largest step, > 0 [default: none: dopri5 without noise takes its frames from its dense "
                       "output, so its steps follow --rtol alone].")
    @_collapse_option("--scheme lagrangian: merge nodes closer than this (rad); 0: never "
                      "[default: 256 machine epsilons].")
    @click.option("--resolution-tol", type=NUMBER, default=SOLVE_DEFAULTS["resolution_tol"], show_default=True,
                  help="Stop when the spectral tail exceeds max(this, 10 x its initial value) x mean.")
    @click.option("--positivity-tol", type=NUMBER, default=SOLVE_DEFAULTS["positivity_tol"], show_default=True,
                  help="Stop when min density < -this x mean density.")
    @_normalization_options("post | ngpt | lnscale (MATH.md §6) with every scheme; pre | mix | peri carry a "
                            "radius per node: --scheme lagrangian (or `meanfield particles`).", "node")
    @click.option("--mask", default=None,
                  help="none | causal: decoder attention, the kinetic PDE in (position s, direction) of MATH.md §8 "
                       "(--scheme spectral; zonal: galerkin) [default: none, or the --init run's].")
    @_alibi_option("with --mask causal", "0, or the --init run's")
    @click.option("--positions", type=INTEGER, default=None,
                  help="Grid of token positions s_i = i/(N_S-1), N_S >= 2 (--mask causal) [default: 65, or the "
                       "--init run's].")
    @click.option("--out", type=click.Path(dir_okay=False), default="run.nc", show_default=True,
                  help="netCDF output (.nc).")
    @click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
    def command(out, no_progress, **settings):
        from meanfield.solvers.runs.solve import solve as run_solver

        settings.update(_layer_settings(settings.pop("layers"), settings.pop("layer_step"), settings, None))
        out = check_output_file(out, "--out", RUN_SUFFIXES)
        signals.save_runs_whole()
        dataset = run_solver(geometry, progress=not no_progress,
                             **_grouped(settings, step=StepControl, monitor=Monitor, saving=Saving))
        held = _save(dataset, out)
        _report_run(dataset, out)
        _finish(dataset.attrs["stop_reason"], held)

    command.__doc__ = f"""{spec['what']} (MATH.md {spec['section']}).

    {EXIT_HELP}

    \b
    Example:
      meanfield solve {geometry} {spec['example']}
    """
    return solve.command(geometry)(command)


for _geometry, _spec in GEOMETRIES.items():
    _solve_command(_geometry, dict(_spec, schemes=_scheme_names(_geometry)))


def _report_clusters(dataset):
    """The clusters of the last frame (meanfield.cluster_detection, the one definition that ``cluster_count`` uses
    too), and every merge of runs that track them (meanfield.solvers.tracking.clusters)."""
    from .cluster_detection import clusters_in_frame

    if "density" in dataset or "positions" in dataset:
        causal = "s" in dataset.dims        # a causal kinetic run: the last token's slice (MATH.md §8)
        clusters = clusters_in_frame(dataset.isel(s=-1) if causal else dataset)
        click.echo(f"clusters in the last frame{' at s = 1' if causal else ''}: {clusters.count} (maxima of the "
                   f"attention field K * mu standing out, >= 1 % of the mass; MATH.md §10)")
    if "merge_time" not in dataset:
        return
    click.echo(f"{dataset.sizes['merge']} merges (two clusters of the attention field become one; MATH.md §10)")
    for time, a, b, after in zip(*(dataset[name].values for name in
                                   ("merge_time", "merge_mass_a", "merge_mass_b", "clusters_after_merge"))):
        click.echo(f"  t = {time:.8g}: masses {a:.4f} + {b:.4f} -> {after} cluster{'s' if after != 1 else ''} left")


def _report_saved(dataset, out):
    """Why the run stopped, the frames saved to ``out``, and the merges (solve and particles)."""
    attrs = dataset.attrs
    click.echo(f"stop_reason: {attrs['stop_reason']}")
    click.echo(f"saved {dataset.sizes['time']} frames up to t = {float(dataset.time[-1]):.6g} "
               f"({attrs['steps']} steps, {attrs['wall_time']:.2f} s) -> {out}")
    _report_clusters(dataset)


def _report_run(dataset, out):
    attrs = dataset.attrs
    _report_saved(dataset, out)
    word = geometry_of(attrs["geometry"]).mode_word
    click.echo(f"dominant {word} predicted by the linear theory: {attrs['dominant_mode']}")


# --------------------------------------------------------------------------------------------- particles
@cli.command()
@click.option("--dim", type=INTEGER, default=PARTICLE_DEFAULTS["dim"], show_default=True,
              help="Tokens on S^{d-1} in R^d, d in [2, 4096].")
@click.option("--n", "n", type=INTEGER, required=True, help="Number of tokens (>= 1).")
@_kept_model_options
@click.option("--nu-schedule", default=None,
              help="Time-dependent noise instead of --nu: ramp:A>B@T0..T1 (nu = A up to T0, linear to B at T1, B "
                   "after), segments joined by ',', e.g. ramp:0.3>0.1@0..500,ramp:0.1>0.3@500..1000; each step's "
                   "random walk has variance 2 int nu [default: none, or the --init run's].")
@click.option("--init", "init", default=PARTICLE_DEFAULTS["init"], show_default=True,
              help="uniform | orthogonal | perturbed:EPS | vonmises:KAPPA@MU[+...] | a density file (.npy, .txt, .csv, "
                   ".nc, .zarr) to sample | run.nc")
@click.option("--seed", type=INTEGER, default=None,
              help=f"Seed of sampling, noise, matrices, in [0, 2^63 - 1] [default: {PARTICLE_DEFAULTS['seed']}, or the "
                   f"--init run's].")
@click.option("--sampling", type=click.Choice(["iid", "quadrature"]), default=PARTICLE_DEFAULTS["sampling"],
              show_default=True, help="i.i.d. tokens, or deterministic nodes with quadrature weights (circle densities).")
@click.option("--resolution", type=INTEGER, default=PARTICLE_DEFAULTS["resolution"], show_default=True,
              help="Grid of the circle density the tokens are drawn from (as in `solve circle`).")
@click.option("--qkv", default=None,
              help="identity (Q = K = V = I) | repulsive (V = -I) | random (Gaussian, from --seed) | FILE.npz "
                   "(arrays Q, K, V, each d x d, or HEADS x d x d: the heads' outputs are summed) "
                   f"[default: {PARTICLE_DEFAULTS['qkv']}, or the --init run's].")
@_layer_options("tokens x <- (x + alpha A_x) / |x + alpha A_x| (with --normalization other than post, that scheme's "
                "layer map)")
@click.option("--layer-weights", default=None,
              help="Per-layer attention for --layers (MATH.md §11): FILE.npz (arrays Q, K: LAYERS x d x d, V: "
                   "LAYERS x d x d, or LAYERS x HEADS x d x d each; optional beta: one per layer) or seed:S,sigma:X "
                   "(V_l = I + X G_l / sqrt(d), G_l standard Gaussian drawn for layer l from S; Q = K = I) "
                   "[default: none, or the --init run's].")
@_save_options
@click.option("--stepper", default=PARTICLE_DEFAULTS["stepper"], show_default=True,
              help="Time stepper: dopri5, rk4, etdrk4; layers (the normalisation's layers of step --dt-max: use "
                   "--layers).")
@_step_options(PARTICLE_DEFAULTS)
@_collapse_option("Merge tokens closer than this (rad); 0: never [default: 256 machine epsilons "
                  "without noise; refused with --nu > 0].")
@click.option("--dt-max", type=NUMBER, default=None,
              help="Largest step (noise splitting step), > 0 "
                   f"[default: {PARTICLE_DEFAULTS['noise_dt_max']:g} with noise, else none].")
@_normalization_options("post | pre | mix | peri | ngpt | lnscale (MATH.md §6); pre, mix, peri carry a radius "
                        "per token (no noise, no collapse).", "token")
@click.option("--interaction", type=click.Choice(["auto", "harmonic", "direct"]),
              default=PARTICLE_DEFAULTS["interaction"], show_default=True,
              help="Interaction path: harmonic = band-limited transforms (Fourier on S^1, spherical harmonics on "
                   "S^2; --qkv identity only, 1e-12 of the direct sum), direct = all pairs (O(n^2)), auto = "
                   "harmonic where it is faster.")
@click.option("--mask", type=click.Choice(["none", "causal", "strict"]), default=None,
              help="Causal attention (MATH.md §8): token j (the particle index, position j/n) attends to all tokens "
                   "(none), to k <= j (causal, decoders) or to k < j (strict: token 1 does not move). A mask takes "
                   "--sampling iid and no --collapse-tol; on the circle with --qkv identity it keeps the O(n M) "
                   "path (prefix sums) [default: none, or the --init run's].")
@_alibi_option("with --mask causal or strict", "0, or the --init run's")
@click.option("--out", type=click.Path(dir_okay=False), default="particles.nc", show_default=True,
              help="netCDF output (.nc).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def particles(out, no_progress, **settings):
    """Simulate the interacting tokens (MATH.md §1): SA/USA on S^{d-1}, optional noise; with --mask,
    causal (decoder) attention with an optional ALiBi bias (MATH.md §8).

    {exit_help}

    \b
    Example:
      meanfield particles --dim 2 --n 4096 --attention sa --beta 9 --init perturbed:1e-4 \\
          --seed 1 --t-final 20 --save-every 0.1 --out particles.nc
      meanfield particles --dim 2 --n 200 --beta 64 --mask causal --alibi 1 --t-final 50 \\
          --out causal.nc
    """
    from meanfield.solvers.runs.particle_run import simulate

    if settings["seed"] is None and not str(settings["init"]).strip().endswith(".nc"):   # a run file: its seed
        settings["seed"] = PARTICLE_DEFAULTS["seed"]
    settings.update(_layer_settings(settings.pop("layers"), settings.pop("layer_step"), settings,
                                    PARTICLE_DEFAULTS["stepper"]))
    out = check_output_file(out, "--out", RUN_SUFFIXES)
    signals.save_runs_whole()
    dataset = simulate(progress=not no_progress, **_grouped(settings, step=StepControl, saving=Saving))
    held = _save(dataset, out)
    _report_saved(dataset, out)
    _finish(dataset.attrs["stop_reason"], held)


particles.help = particles.help.replace("{exit_help}", EXIT_HELP)


def _layer_settings(layers, alpha, settings: dict, default_stepper) -> dict:
    """``--layers L --step ALPHA`` as the run's settings: the layer stepper, ``dt_max = ALPHA``, ``t_final = L ALPHA``
    and a frame per layer unless ``--save-every`` says otherwise (MATH.md §11)."""
    if layers is None and alpha is None:
        return {}
    require(layers is not None and alpha is not None, "--layers and --step go together: L layers of step ALPHA")
    check_integer("--layers", layers, 1)
    require(math.isfinite(alpha) and alpha > 0, f"--step must be > 0 and finite (got {alpha:g})")
    require(settings["t_final"] is None and settings["dt_max"] is None
            and settings["stepper"] == default_stepper,
            "--layers sets --t-final (LAYERS x STEP), --dt-max and --stepper: give one or the other")
    return {"stepper": "layers", "dt_max": alpha, "t_final": layers * alpha,
            "save_every": alpha if settings["save_every"] is None and settings["save_log"] is None
            else settings["save_every"]}


@cli.command()
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="netCDF output of the new run (.nc) [default: RUN's name with -rerun, beside it].")
@click.option("--t-final", type=NUMBER, default=None,
              help="Run on to this later end time [default: RUN's]; the same as one run started to it.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def rerun(run, out, t_final, no_progress):
    """Run RUN again from the record of its start in the file, bit for bit (solve and particle runs).

    Whatever the run started from (a spec, an array, a DataArray, a function, a run file since changed or
    gone), the model, scheme, stepper, save times and Q, K, V come from RUN's attributes and variables, and
    the new frames, merges and final state are the same numbers.  The `command` attribute of a run that
    started from data in memory is `meanfield rerun FILE`.

    {exit_help}

    \b
    Example:
      meanfield rerun run.nc --out again.nc
      meanfield rerun run.nc --t-final 20        # on to t = 20, written to run-rerun.nc
    """
    from meanfield.solvers.runs.rerun import rerun as run_again

    out = check_output_file(str(Path(run).with_name(f"{Path(run).stem}-rerun.nc")) if out is None else out, "--out",
                            RUN_SUFFIXES)
    signals.save_runs_whole()
    dataset = run_again(run, progress=not no_progress, t_final=t_final)
    held = _save(dataset, out)
    _report_saved(dataset, out)
    _finish(dataset.attrs["stop_reason"], held)


rerun.help = rerun.help.replace("{exit_help}", EXIT_HELP)


# --------------------------------------------------------------------------------------------- gaussian
@cli.command()
@click.option("--attention", type=click.Choice(["softmax", "l2", "sinkhorn"]), default=GAUSSIAN_DEFAULTS["attention"],
              show_default=True,
              help="Softmax weights exp(<Qx, Ky>), L2 weights exp(-|Qx - Ky|^2 / 2), or Sinkhorn "
                   "(weights exp(<Qx, Ky> / eps) made doubly stochastic).")
@click.option("--sinkhorn-eps", "eps", type=NUMBER, default=GAUSSIAN_DEFAULTS["sinkhorn_eps"], show_default=True,
              help="Entropic parameter of Sinkhorn attention.")
@click.option("--dim", type=INTEGER, default=GAUSSIAN_DEFAULTS["dim"], show_default=True,
              help="Token dimension d in [1, 4096] (tokens in R^d).")
@click.option("--case", type=click.Choice(["identity", "random"]), default=GAUSSIAN_DEFAULTS["case"], show_default=True,
              help="V = Q = K = I with a random covariance, or random V, Q, K, mean and covariance.")
@click.option("--seed", type=INTEGER, default=GAUSSIAN_DEFAULTS["seed"], show_default=True,
              help="Seed of the matrices, in [0, 2^63 - 1].")
@click.option("--scaled", is_flag=True, help="Scale the logits by 1/sqrt(k) as in transformers.")
@_layer_options("the moments, x <- x + alpha Gamma(x) (exact for Gaussian data)",
                "residual layers instead of the flow (MATH.md §3.1)", ").")
@click.option("--save-every", type=NUMBER, default=GAUSSIAN_DEFAULTS["save_every"],
              help="Save cadence [default: every accepted step].")
@click.option("--out", type=click.Path(dir_okay=False), default="gaussian.nc", show_default=True,
              help="netCDF output (.nc).")
def gaussian(attention, dim, case, seed, scaled, eps, t_final, layers, layer_step, save_every, out):
    """Mean and covariance of Gaussian tokens in R^d (Castin et al., MATH.md §3).

    Exit status: 0 when the moments reach --t-final; 2 on bad input; 3 when they blow up or the
    integration stops before --t-final (the file is still written; stop_reason says why).

    \b
    Example:
      meanfield gaussian --attention softmax --dim 2 --case identity --t-final 0.4 --out gaussian.nc
    """
    from meanfield.solvers.runs.gaussian_run import solve_case

    out = check_output_file(out, "--out", RUN_SUFFIXES)
    check_matrix_dim(dim)
    check_seed(seed)
    check_option("--sinkhorn-eps", eps)
    signals.save_runs_whole()
    if layers is not None or layer_step is not None:
        dataset = _gaussian_layers(case, dim, seed, layers, layer_step, t_final, save_every, attention, scaled, eps)
    else:
        require(t_final is not None, "--t-final is required: the end time of the moments' flow (or give --layers)")
        check_option("--t-final", t_final)
        if save_every is not None:
            check_option("--save-every", save_every)
            check_frames(t_final, save_every, None, 8.0 * (dim * dim + dim), 0.0)
        dataset = solve_case(case, dim, seed, t_final=t_final, attention=attention, save_every=save_every,
                             scaled=scaled, eps=eps)
    held = _save(dataset, out)
    click.echo(f"stop_reason: {dataset.attrs['stop_reason']}   blowup_time: {dataset.attrs.get('blowup_time', 'none')}")
    click.echo(f"saved {dataset.sizes['time']} times up to t = {float(dataset.time[-1]):.6g} -> {out}")
    _finish(dataset.attrs["stop_reason"], held)


def _gaussian_layers(case, dim, seed, layers, alpha, t_final, save_every, attention, scaled, eps):
    """``meanfield gaussian --layers L --step ALPHA``: the exact moment map of ``L`` residual layers (MATH.md §3.1)."""
    from meanfield.gaussian_layers import layers_case

    require(layers is not None and alpha is not None, "--layers and --step go together: L layers of step ALPHA")
    require(t_final is None and save_every is None, "--layers sets the end time (LAYERS x STEP) and a frame per "
                                                    "layer: give --t-final and --save-every only without it")
    check_integer("--layers", layers, 1)
    require(math.isfinite(alpha) and alpha > 0, f"--step must be > 0 and finite (got {alpha:g})")
    check_frames(layers * alpha, alpha, None, 8.0 * (dim * dim + dim), 0.0)
    return layers_case(case, dim, seed, layers=layers, alpha=alpha, attention=attention, scaled=scaled, eps=eps)


# --------------------------------------------------------------------------------------------- tokens in R^d
def _token_options(out_default: str):
    """``--seed``, ``--frames`` and ``--out`` of the token runs in R^d (``hardmax``, ``rd``)."""
    def options(f):
        f = click.option("--out", type=click.Path(dir_okay=False), default=out_default, show_default=True,
                         help="netCDF output (.nc).")(f)
        f = click.option("--frames", type=INTEGER, default=61, show_default=True,
                         help=f"Saved frames, equally spaced from t = 0, an integer in [2, {MAX_TOKEN_FRAMES}].")(f)
        return click.option("--seed", type=INTEGER, default=0, show_default=True,
                            help="Seed of the drawn tokens (and matrices), in [0, 2^63 - 1].")(f)
    return options


def _token_run(make, summary, out) -> None:
    """Check ``--out``, run ``make()`` (the run Dataset of :mod:`meanfield.token_runs`), save it, print ``summary`` of
    it and exit with its status (3 when it stopped early)."""
    out = check_output_file(out, "--out", RUN_SUFFIXES)
    signals.save_runs_whole()
    dataset = make()
    held = _save(dataset, out)
    for line in summary(dataset):
        click.echo(line)
    click.echo(f"stop_reason: {dataset.attrs['stop_reason']}")
    click.echo(f"saved {dataset.sizes['time']} frames up to t = {float(dataset.time[-1]):.6g} -> {out}")
    _finish(dataset.attrs["stop_reason"], held)


@cli.command()
@click.option("--case", default="psd", show_default=True,
              help=f"{' | '.join(HARDMAX_CASES)} | FILE.npz: psd: Q = K = I, equal-norm hull vertices (max(d + 1, "
                   "n/4)) and tokens inside them; nsd: Q = I, K = -(M M^T + I/10), tokens in antipodal pairs; random: "
                   "Gaussian tokens, Q, K; FILE.npz: arrays x0 (n x d) and A = Q^T K (d x d) (then --n, --dim, "
                   "--seed are the file's).")
@click.option("--n", "n", type=INTEGER, default=24, show_default=True,
              help=f"Number of tokens, an integer in [1, {MAX_HARDMAX_N}] (psd: >= d + 1; nsd: even).")
@click.option("--dim", type=INTEGER, default=2, show_default=True,
              help=f"Token dimension d, an integer in [1, {MAX_TOKEN_DIM}] (psd: >= 2).")
@click.option("--t-final", type=NUMBER, default=3.0, show_default=True,
              help=f"Final time, in (0, {MAX_HARDMAX_T:g}].")
@click.option("--beta", type=NUMBER, default=None,
              help=f"Also the finite-beta softmax twin at this beta, in (0, {MAX_TWIN_BETA:g}], and its distance "
                   "from the hardmax tokens [default: none].")
@_token_options("hardmax.nc")
def hardmax(case, n, dim, t_final, beta, seed, frames, out):
    """Hardmax attention (beta = inf) of tokens in R^d, exact and event-driven (MATH.md §12).

    Each token moves toward the average of its argmax set (argmax_j <Q x_i, K x_j>); between the times a set
    changes (events, dated to 1e-14) the motion is a matrix exponential.  Prints the events, the final cells and,
    with --beta, the distance from the softmax twin.  `meanfield plot FILE` draws the trajectories.

    Exit status: 0 when the run reaches --t-final; 2 on bad input; 3 when the exact integration stops early (a
    sliding mode, events accumulating: the file keeps the frames before it; stop_reason says why).

    \b
    Example:
      meanfield hardmax --case psd --n 24 --t-final 3 --beta 20 --out hardmax.nc
    """
    from .token_runs import hardmax_case_run, hardmax_summary

    _token_run(lambda: hardmax_case_run(case, n, dim, t_final, beta, seed, frames), hardmax_summary, out)


@cli.command()
@click.option("--value", default="identity", show_default=True,
              help=f"{' | '.join(RD_VALUES)} | FILE.npz: V = Q = K = I with equal-norm polytope data (--vertices of "
                   "them, the rest inside); the value matrices of the paper's hyperplane examples (Q = K = I, "
                   "tokens uniform in [-5, 5]^d); FILE.npz: arrays z0 (n x d), V (d x d), optional Q, K (then --n, "
                   "--dim, --seed are the file's).")
@click.option("--n", "n", type=INTEGER, default=20, show_default=True,
              help=f"Number of tokens, an integer in [1, {MAX_RD_N}].")
@click.option("--dim", type=INTEGER, default=None,
              help=f"Token dimension d: identity: an integer in [2, {MAX_TOKEN_DIM}]; a paper matrix: its size "
                   "[default: 2, or the matrix's].")
@click.option("--vertices", type=INTEGER, default=7, show_default=True,
              help="--value identity: polytope vertices, an integer in [d + 1, n].")
@click.option("--t-final", type=NUMBER, default=30.0, show_default=True,
              help=f"Final time, > 0 with 2 lambda_1 t-final <= {MAX_RD_EXPONENT:g} (lambda_1: the largest real part "
                   "of V's eigenvalues).")
@click.option("--tol", type=NUMBER, default=1e-6, show_default=True,
              help="Tokens (levels) closer than this are one limit point (hyperplane), in (0, 1).")
@_token_options("rd.nc")
def rd(value, n, dim, vertices, t_final, seed, frames, tol, out):
    """Tokens in R^d without projection, rescaled z = e^{-tV} x, and their limit set (MATH.md §12.1).

    V = I: the limit points are the vertices of a polytope; V with a simple positive top eigenvalue: the tokens
    end on parallel hyperplanes <l_1, z> = c.  Prints the limit set (count, geometry) and stores it in the file;
    `meanfield plot FILE` draws the rescaled trajectories and the limit set.

    Exit status: 0; 2 on bad input (also data outside the theorems' hypotheses).

    \b
    Example:
      meanfield rd --value paper-2d --n 20 --seed 2 --t-final 19 --out rd.nc
    """
    from .token_runs import rd_case_run, rd_summary

    _token_run(lambda: rd_case_run(value, n, dim, t_final, seed, vertices, frames, tol), rd_summary, out)


# --------------------------------------------------------------------------------------------- plot
@cli.command()
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("-o", "--out", "--output", "output", type=click.Path(dir_okay=False), default=None,
              help="Image file: .png, .pdf, .svg, .jpg, ... [default: RUN with .png, unless --movie is given].")
@click.option("--movie", type=click.Path(dir_okay=False), default=None,
              help="Movie of the run's frames: OUT.gif or OUT.mp4 (mp4 through the ffmpeg of imageio-ffmpeg).")
def plot(run, output, movie):
    """Plot a run: density heat map, energy, mode amplitudes with the linear theory; or a movie.

    \b
    Example:
      meanfield plot run.nc -o run.png
      meanfield plot run.nc --movie run.mp4
    """
    from .plotting.movie import check_movie_dataset, write_movie
    from .plotting.run_data import check_plottable
    from .plotting.runs import plot_run
    from .app.storage import load_run

    if output is None and movie is None:
        output = str(Path(run).with_suffix(".png"))
    if output is not None:
        check_output_file(output, "-o/--out", image_suffixes())
    if movie is not None:
        check_output_file(movie, "--movie", MOVIE_SUFFIXES)
    dataset = load_run(run)
    if output is not None:
        check_plottable(dataset)
    if movie is not None:
        check_movie_dataset(dataset)
    if output is not None:  # plot_run and write_movie write through a temporary file renamed into place
        plot_run(dataset, output)
        click.echo(f"wrote {output}")
    if movie is not None:
        write_movie(dataset, movie)
        click.echo(f"wrote {movie}")


# --------------------------------------------------------------------------------------------- clusters
@cli.command()
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("--frame", type=INTEGER, default=None, help="Saved frame (negative: from the end) [default: the last].")
@click.option("--time", "time_", type=NUMBER, default=None, help="The saved frame nearest this time.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of the table.")
def clusters(run, frame, time_, as_json):
    """The clusters of a frame of a run file (id, position, mass, basin size) and the run's cluster events.

    Clusters are the maxima of the attention field K * mu that stand out, holding >= 1 % of the mass (MATH.md
    §10); ids and events (formation, merge, dissolution) are those the run recorded.

    Exit status: 0, or 2 on bad input.

    \b
    Example:
      meanfield clusters run.nc
      meanfield clusters run.nc --time 150 --json
    """

    from .cluster_report import cluster_table, format_table, frame_index
    from .app.storage import load_run

    dataset = load_run(run)
    table = cluster_table(dataset, frame_index(dataset, frame, time_))
    click.echo(strict_json(table, indent=1) if as_json else format_table(table))


# --------------------------------------------------------------------------------------------- compare
@cli.command()
@click.argument("first", metavar="A", type=click.Path(dir_okay=False))
@click.argument("second", metavar="B", type=click.Path(dir_okay=False))
@click.option("--metric", type=click.Choice(["w1", "sobolev"]), default=None,
              help="w1: the exact Wasserstein-1 distance (circle) | sobolev: the H^-s norm [default: w1 on the "
                   "circle, sobolev on S^2 and zonal S^{d-1}].")
@click.option("--s", "s", type=NUMBER, default=None,
              help=f"Order s of the H^-s norm, {RANGES['--s'].text()} (--metric sobolev) [default: 2].")
@click.option("--lmax", type=INTEGER, default=None,
              help=f"Highest degree (circle: Fourier mode) of the H^-s sum, {RANGES['--lmax'].text()} [default: the "
                   f"fewest either run's grid holds; two token runs: the geometry's default --resolution].")
@click.option("--plot", "figure", type=click.Path(dir_okay=False), default=None,
              help="Figure of the distance against time: .png, .pdf, .svg, ... [default: A_vs_B.png beside A].")
@click.option("--no-plot", is_flag=True, help="Write no figure.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def compare(first, second, metric, s, lmax, figure, no_plot, as_json):
    """The distance between two runs of one geometry at their common times (MATH.md §4), and its figure.

    Particles against the PDE, scheme against scheme, particles against particles: circle runs (and particles
    --dim 2) by the exact W1 distance, S^2 and zonal runs (particles --dim 3, --dim d) by the H^-s norm of the
    difference. Common times: saved by both runs, to a relative 1e-9.

    Exit status: 0, or 2 on bad input (runs of different geometries or dimensions, no common time, not a run).

    \b
    Example:
      meanfield particles --dim 2 --n 4000 --beta 4 --init vonmises:1@0+vonmises:1@3 --t-final 2 --out p.nc
      meanfield solve circle --beta 4 --init vonmises:1@0+vonmises:1@3 --t-final 2 --out pde.nc
      meanfield compare p.nc pde.nc
    """
    from .run_comparison import compare_runs, comparison_record, default_figure_path, format_comparison

    require(not (no_plot and figure is not None), "--plot and --no-plot exclude each other")
    if not no_plot:
        figure = check_output_file(default_figure_path(first, second) if figure is None else figure, "--plot",
                                   image_suffixes())
    comparison = compare_runs(first, second, metric=metric, s=s, lmax=lmax)
    if not no_plot:
        from .plotting.comparison import plot_comparison

        plot_comparison(comparison, figure)
    figure = None if no_plot else figure
    click.echo(strict_json(comparison_record(comparison, figure), indent=1) if as_json else
               format_comparison(comparison) + ("" if figure is None else f"\nwrote {figure}"))


# --------------------------------------------------------------------------------------------- demo
@cli.command()
@click.option("--out-dir", type=click.Path(file_okay=False), default="meanfield-demo", show_default=True,
              help="Folder for run.nc and run.png (created if needed).")
@click.option("--resolution", type=INTEGER, default=1024, show_default=True, help="Finite-volume cells (>= 8).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def demo(out_dir, resolution, no_progress):
    """Solve the default case (SA, beta 9, perturbed start) through cluster formation.

    Exit status as for `meanfield solve`: 0 completed, 2 bad input, 3 stopped early, 130 interrupted.

    \b
    Example:
      meanfield demo --out-dir meanfield-demo
    """
    from .demo import run_demo

    check_output_folder(out_dir, "--out-dir")
    signals.save_runs_whole()
    dataset = run_demo(out_dir, resolution=resolution, progress=not no_progress, echo=click.echo)
    _finish(dataset.attrs["stop_reason"], signals.release())


# --------------------------------------------------------------------------------------------- validate
@cli.group()
def validate():
    """Validation studies and benchmarks."""


#: The click type of each study parameter's value (:data:`meanfield.validation.registry.PARAMETER_HELP`).
STUDY_PARAMETER_TYPES = {"beta": "numbers", "n": "integers", "seeds": "count", "seed": click.IntRange(0, 2 ** 32 - 1),
                         "init": str, "geometry": click.Choice(GEOMETRIES)}


def _study_parameter_option(parameter):
    """The ``--<option>`` of one study parameter: lists are read as ``--beta 2,4`` or ``START:STOP:COUNT``."""
    kind = STUDY_PARAMETER_TYPES[parameter.option]
    if kind == "count":                  # the study's fewest realisations (a standard error needs two)
        kind = click.IntRange(parameter.low, MAX_LIST)
    if kind in ("numbers", "integers"):
        integer = kind == "integers"
        return click.option(f"--{parameter.option}", parameter.option, default=None, help=parameter.help,
                            callback=lambda ctx, param, text: None if text is None else _number_list(
                                text, param.name, int if integer else float))
    return click.option(f"--{parameter.option}", parameter.option, type=kind, default=None, help=parameter.help)


def _validate_command(study):
    """``meanfield validate NAME`` for one entry of :data:`meanfield.validation.registry.STUDIES`: check the output and
    the parameters, run (:func:`meanfield.validation.harness.run`), print the table, what was written and the claims;
    exit 3 when a claim fails."""
    example = study.command(True, study.default_out)

    @click.option("--quick", is_flag=True, help=study.quick_help)
    def command(quick, out=None, **given):
        from meanfield.validation import harness

        harness.check_output(study, out)
        arguments = study.arguments(given)
        outcome = harness.run(study, quick, out, arguments=arguments)
        click.echo(outcome.text)
        if outcome.wrote:
            click.echo(outcome.wrote)
        if outcome.checks:
            click.echo(harness.claims_table(outcome.checks))
        if not outcome.passed:
            raise click.exceptions.Exit(EXIT_STOPPED)

    for parameter in reversed(study.parameters):
        command = _study_parameter_option(parameter)(command)
    if study.output == "folder":
        command = click.option("--out-dir", "out", type=click.Path(file_okay=False),
                               default=study.default_out, show_default=True,
                               help="Folder for the tables and figures.")(command)
    elif study.output == "file":
        command = click.option("--out", type=click.Path(dir_okay=False), default=None,
                               help="Write the table as netCDF (.nc).")(command)
    claims = ("\n\n    Prints its claims (measured, theory, tolerance, source); exit status 3 when one fails."
              if study.claims else "")
    command.__doc__ = f"""{study.help}{claims}

    \b
    Example:
      {example}
    """
    return validate.command(study.name)(command)


def _register_validate_commands():
    from meanfield.validation.registry import STUDIES

    for study in STUDIES.values():
        _validate_command(study)


_register_validate_commands()


@validate.command("report")
@click.option("--quick", is_flag=True, help="Every study at its quick preset (the sizes the test suite uses).")
@click.option("--out", "out", type=click.Path(file_okay=False), required=True,
              help="Folder for index.html, every study's tables and figures.")
def report(quick, out):
    """Run every registered study and write OUT/index.html: claims against theory, pass / fail, figures,
    wall times, the commands that re-run each study, and the benchmark tables.

    Exit status 0 when every claim passes, 3 when a claim fails or a study raises (the page says which).

    \b
    Example:
      meanfield validate report --quick --out validation-report
    """
    from meanfield.validation.report import exit_code, run_report

    check_output_folder(out, "--out")
    outcomes = run_report(out, quick=quick, echo=lambda line: click.echo(line, err=True))
    click.echo(f"wrote {Path(out) / 'index.html'}")
    code = exit_code(outcomes)
    if code:
        raise click.exceptions.Exit(code)


# --------------------------------------------------------------------------------------------- sweep
@cli.group()
def sweep():
    """Parameter sweeps on Dask (a local cluster by default, or --scheduler ADDRESS)."""


def _number_list(text: str, name: str, kind=float) -> list:
    """``"a,b,c"`` or ``"start:stop:count"`` (inclusive linspace), at most ``MAX_LIST`` values."""
    wrong = f"--{name} must be a comma-separated list or START:STOP:COUNT with COUNT in [1, {MAX_LIST}] (got {text!r})"
    read = read_integer if kind is int else read_number
    try:
        if ":" in text:
            start, stop, count = (read_number(part.strip()) for part in text.split(":"))
            require(None not in (start, stop, count) and count == int(count) and 1 <= count <= MAX_LIST, wrong)
            values = [kind(v) for v in np.linspace(start, stop, int(count))]
        else:
            values = [read(v.strip()) for v in text.split(",") if v.strip()]
            require(None not in values, wrong)
    except (ValueError, OverflowError):
        raise InputError(wrong) from None
    require(0 < len(values) <= MAX_LIST, wrong)
    return values


@sweep.command("phase-diagram")
@click.option("--store", type=click.Path(file_okay=False), default="phase-diagram", show_default=True,
              help="Folder of finished chunks; a re-run skips them.")
@click.option("--dims", default="2,8,32,128", show_default=True, help="Dimensions d (list).")
@click.option("--betas", default="0:9:19", show_default=True, help="Inverse temperatures: list or START:STOP:COUNT.")
@click.option("--t-final", type=NUMBER, default=30.0, show_default=True)
@click.option("--n-times", type=INTEGER, default=61, show_default=True, help="Saved times in [0, t-final].")
@click.option("--realisations", type=INTEGER, default=1024, show_default=True, help="Independent starts per beta.")
@click.option("--n", "n", type=INTEGER, default=32, show_default=True, help="Tokens per realisation.")
@click.option("--delta", type=NUMBER, default=1e-3, show_default=True, help="Clustered: <x_1, x_2> >= 1 - delta.")
@click.option("--seed", type=INTEGER, default=0, show_default=True)
@click.option("--scheduler", default=None,
              help="synchronous (this process), threads, processes, or a Dask scheduler address tcp://HOST:PORT "
                   "[default: a local cluster of processes].")
@click.option("--quick", is_flag=True, help="The small sweep the test suite uses: presets the grid, times and "
                                            "realisations; flags given explicitly win.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@click.pass_context
def phase_diagram(ctx, store, dims, betas, quick, no_progress, **settings):
    """The rotf paper's Fig. 3: P(<x_1(t), x_2(t)> >= 1 - delta) over (t, beta), per d.

    Every setting is checked before the store is created.  Exit status 3 when some chunks
    stopped early (their stop_reason is in the result), 130 when interrupted (re-run to resume).

    \b
    Example:
      meanfield sweep phase-diagram --store phase-diagram --dims 2,8 --betas 0:9:10 --realisations 256
      meanfield sweep phase-diagram --scheduler tcp://scheduler:8786        # an existing Dask cluster
    """
    from click.core import ParameterSource
    from meanfield.validation.studies.phase_diagram import QUICK, check_scheduler, format_summary, plot_phase_diagram, run_sweep

    check_output_folder(store, "--store")
    check_scheduler(settings["scheduler"])
    values = dict(settings, dims=_number_list(dims, "dims", int), betas=_number_list(betas, "betas"))
    if quick:  # the preset fills in what the user did not give
        values.update({key: preset for key, preset in QUICK.items()
                       if ctx.get_parameter_source(key) is ParameterSource.DEFAULT})
    try:
        dataset = run_sweep(store, progress=not no_progress, **values)
    except KeyboardInterrupt as interrupt:      # Ctrl-C, or SIGTERM (meanfield.app.signals)
        click.echo(f"interrupted: the chunks finished so far are stored in {store}; re-run to resume", err=True)
        raise click.exceptions.Exit(signals.exit_status_of(interrupt)) from None
    figure = Path(store) / "phase_diagram.png"
    plot_phase_diagram(dataset, figure)
    click.echo(format_summary(dataset))
    if dataset.attrs.get("incomplete_chunks", 0):
        click.echo(f"warning: {dataset.attrs['incomplete_chunks']} chunks stopped early (see stop_reason)", err=True)
    click.echo(f"computed {dataset.attrs['computed_chunks']} chunks, reused {dataset.attrs['reused_chunks']}; "
               f"wrote {Path(store) / 'phase_diagram.nc'} and {figure}")
    if dataset.attrs.get("incomplete_chunks", 0):
        raise click.exceptions.Exit(EXIT_STOPPED)


# --------------------------------------------------------------------------------------------- entry
def main(argv=None) -> int:
    """Entry point: run the CLI, turning user mistakes into one line and exit status 2.  Python warnings raised while
    a command runs (numpy's overflow and underflow notices) stay off the terminal: a command's outcome is its one
    error line or its output and file (``MEANFIELD_SHOW_WARNINGS=1`` shows them, for debugging)."""
    signals.install()
    try:
        with warnings.catch_warnings(), command_line():       # its refusals name flags (meanfield.errors)
            if not os.environ.get("MEANFIELD_SHOW_WARNINGS"):
                warnings.simplefilter("ignore")
            code = cli.main(args=argv, prog_name="meanfield", standalone_mode=False)
    except InputError as exc:
        with command_line():          # with flags, also a refusal raised in a worker process
            click.echo(f"meanfield: error: {exc}", err=True)
        return EXIT_USAGE
    except click.UsageError as exc:
        click.echo(f"meanfield: error: {exc.format_message()}", err=True)
        return EXIT_USAGE
    except click.Abort as exc:   # Ctrl-C or SIGTERM before a run started (nothing computed yet)
        click.echo("meanfield: aborted", err=True)
        return signals.exit_status_of(exc.__cause__) if exc.__cause__ else EXIT_INTERRUPTED
    except click.ClickException as exc:
        click.echo(f"meanfield: error: {exc.format_message()}", err=True)
        return exc.exit_code
    except MemoryError:  # the size checks of meanfield.limits should have refused the input first
        click.echo("meanfield: error: out of memory: lower --resolution, --n, --dim or the number of frames", err=True)
        return EXIT_USAGE
    finally:
        signals.uninstall()
    return code if isinstance(code, int) else 0


def _entry():  # pragma: no cover - console script
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    _entry()
