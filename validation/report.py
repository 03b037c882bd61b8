"""``meanfield validate report``: every registered study, one self-contained HTML page.

:func:`run_report` runs each study of :data:`meanfield.validation.registry.STUDIES` (quick presets with
``quick``) into ``DIR/<name>/`` through :func:`meanfield.validation.harness.run_caught`, so that a study
that raises is reported as an error and the others still run.  The studies (deterministic, each in its own folder)
run side by side in :func:`report_workers` processes, each with its share of the cores' threads and its printing
silenced; the benchmarks, whose numbers are timings, run afterwards one at a time in this process, alone on the
machine.  It writes ``DIR/index.html``
(:func:`render`): a summary table, then per study its claims (the claim, theory value, measured
value, tolerance, the tolerance's source, pass / fail), its figures (PNG files in ``DIR``, relative
links), its printed table, wall time and the command that re-runs it; benchmarks show their printed
tables.  The page has no script, no style sheet and no link outside ``DIR``.
"""

from __future__ import annotations

import html
import os
import shlex
import time
from pathlib import Path

from meanfield.app.storage import write_atomic

from . import harness
from .registry import STUDIES, Study

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-family: monospace; white-space: nowrap; }
td.source { font-size: 0.85em; color: #444; }
.pass { background: #d8f3d8; } .fail { background: #f8d0d0; } .error { background: #f8d0d0; }
pre { background: #f4f4f4; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
img { max-width: 100%; max-height: 42em; border: 1px solid #ddd; margin: 0.3em 0; }
"""


def study_out(study: Study, root: Path) -> Path:
    """Where the report puts a study's output: ``root/<name>`` (a folder, or ``<name>.nc`` inside it)."""
    folder = root / study.name
    return folder / f"{study.stem}.nc" if study.output == "file" else folder


def report_workers(studies: int) -> int:
    """Processes the studies run in: one per core (at most 4, at most one per study)."""
    from meanfield.app.threads import available_cores
    return max(1, min(available_cores(), 4, studies))


def _prepared_out(study: Study, root: Path):
    out = study_out(study, root)
    if study.output == "file":
        out.parent.mkdir(parents=True, exist_ok=True)
    return None if study.benchmark else out


def _run_in_worker(name: str, quick: bool, out, threads: int) -> dict:
    """One study in a worker process (:func:`run_report`): its outcome's fields, the study named (its registry entry
    holds functions, which a process boundary does not carry)."""
    from meanfield.app.threads import set_threads

    set_threads(threads)
    with open(os.devnull, "w") as quiet:
        import contextlib
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            outcome = harness.run_caught(STUDIES[name], quick, out)
    return {field: getattr(outcome, field) for field in ("text", "wrote", "checks", "figures", "wall", "error")}


def run_report(out_dir, quick: bool = False, studies: dict[str, Study] | None = None, echo=print,
               workers: int | None = None) -> list:
    """Run every study into ``out_dir`` and write ``out_dir/index.html``; returns the outcomes in the registry's
    order.  The studies run in ``workers`` processes (default :func:`report_workers`; 1: in this process, one after
    the other), the benchmarks afterwards in this process."""
    root = Path(out_dir)
    studies = STUDIES if studies is None else studies
    ordered = list(studies.values())
    total, start, done = len(ordered), time.perf_counter(), {}

    def finished(study: Study, outcome) -> None:
        done[study.name] = outcome
        passed = sum(check.passed for check in outcome.checks)
        state = (f"error: {outcome.error}" if outcome.error else "table only" if study.benchmark
                 else f"{passed}/{len(outcome.checks)} claims pass")
        echo(f"[{len(done)}/{total}] {study.name}: {state} ({outcome.wall:.1f} s)")
        write_page(root, [done[s.name] for s in ordered if s.name in done], quick, time.perf_counter() - start,
                   final=len(done) == total)

    claims = [study for study in ordered if not study.benchmark]
    workers = report_workers(len(claims)) if workers is None else workers
    parallel = workers > 1 and all(STUDIES.get(study.name) is study for study in claims)
    if parallel:
        _run_side_by_side(claims, quick, root, workers, echo, finished)
    for study in ordered:
        if study.name in done:
            continue
        echo(f"[{len(done) + 1}/{total}] {study.name} ...")
        finished(study, harness.run_caught(study, quick, _prepared_out(study, root)))
    return [done[study.name] for study in ordered]


def _run_side_by_side(claims: list, quick: bool, root: Path, workers: int, echo, finished) -> None:
    """The studies in ``workers`` fresh processes (spawned: no thread or FFTW plan state is inherited), each with
    ``cores / workers`` threads; every outcome is reported as it comes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from meanfield.app.threads import available_cores

    threads = max(1, available_cores() // workers)
    echo(f"{len(claims)} studies in {workers} processes ({threads} thread{'s' if threads > 1 else ''} each), "
         f"then the benchmarks one at a time")
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_run_in_worker, study.name, quick, _prepared_out(study, root), threads): study
                   for study in claims}
        for future in as_completed(futures):
            study = futures[future]
            try:
                fields = future.result()
            except Exception as exc:  # noqa: BLE001 - a worker that died: reported in the page, one line
                fields = {"error": harness.one_line(exc)}
            finished(study, harness.Outcome(study, quick, study_out(study, root), **fields))


def write_page(root: Path, outcomes: list, quick: bool, wall: float, final: bool = True) -> Path:
    """Write ``root/index.html`` atomically (also after each study, so a long report can be watched)."""
    page = render(outcomes, root, quick, wall, final)
    return write_atomic(root / "index.html", lambda temporary: Path(temporary).write_text(page, encoding="utf-8"))


def _status(outcome) -> tuple[str, str]:
    if outcome.error:
        return "error", "ERROR"
    if not outcome.checks:
        return "", "table only" if outcome.study.benchmark else "no claims"
    return ("pass", "PASS") if outcome.passed else ("fail", "FAIL")


def _value(value) -> str:
    return f"{value:.6g}"


def _claims_table(outcome) -> str:
    rows = ["<tr><th>claim</th><th>theory</th><th>measured</th><th>tolerance</th><th>tolerance source</th>"
            "<th>result</th></tr>"]
    for check in outcome.checks:
        kind = "pass" if check.passed else "fail"
        rows.append(f"<tr><td>{html.escape(check.claim)}</td><td class=\"num\">{html.escape(check.theory)}</td>"
                    f"<td class=\"num\">{_value(check.measured)}</td><td>{html.escape(check.tolerance)}</td>"
                    f"<td class=\"source\">{html.escape(check.source)}</td><td class=\"{kind}\">{kind}</td></tr>")
    return "<table>\n" + "\n".join(rows) + "\n</table>"


def _report_command(quick: bool, root) -> str:
    """The shell-quoted command that re-runs the whole report into ``root``."""
    return shlex.join(["meanfield", "validate", "report"] + (["--quick"] if quick else []) + ["--out", str(root)])


def _section(outcome, root: Path) -> str:
    study = outcome.study
    kind, label = _status(outcome)
    parts = [f"<h2 id=\"{study.name}\">{html.escape(study.name)} <span class=\"{kind}\">{label}</span></h2>",
             f"<p>{html.escape(study.help)}</p>",
             f"<p>Wall time {outcome.wall:.1f} s. Re-run: <code>"
             f"{html.escape(study.command(outcome.quick, _shown_out(study, outcome, root)))}</code>"
             + (f" (full size: <code>{html.escape(study.command(False, study.default_out or study.name))}</code>)"
                if outcome.quick and study.output == "folder" else "") + "</p>"]
    preset = _preset(study, outcome.quick)
    if preset:
        parts.append(f"<p>Preset: <code>{html.escape(preset)}</code></p>")
    if outcome.error:
        parts.append(f"<p class=\"error\">Error: {html.escape(outcome.error)}</p>")
    if outcome.checks:
        parts.append(_claims_table(outcome))
    for figure in outcome.figures:
        link = html.escape(figure.relative_to(root).as_posix())
        parts.append(f"<p><a href=\"{link}\"><img src=\"{link}\" alt=\"{html.escape(figure.name)}\"></a></p>")
    if outcome.text:
        parts.append(f"<pre>{html.escape(outcome.text)}</pre>")
    return "\n".join(parts)


def _preset(study: Study, quick: bool) -> str:
    """``meanfield.validation.<module>.QUICK = {...}`` (or FULL), when the study declares presets."""
    try:
        values = study.preset(quick)
    except Exception:  # noqa: BLE001 - the module did not import: the error is shown already
        return ""
    if values is None:
        return ""
    return f"meanfield.validation.{study.module}.{study.presets[0 if quick else 1]} = {values!r}"


def _shown_out(study: Study, outcome, root: Path):
    return None if study.benchmark else outcome.out


def render(outcomes: list, root, quick: bool, wall: float, final: bool = True) -> str:
    """The page (module docstring)."""
    root = Path(root)
    checks = [check for outcome in outcomes for check in outcome.checks]
    errors = sum(outcome.error is not None for outcome in outcomes)
    passed = sum(check.passed for check in checks)
    summary = ["<tr><th>study</th><th>result</th><th>claims passed</th><th>wall time (s)</th></tr>"]
    for outcome in outcomes:
        kind, label = _status(outcome)
        count = f"{sum(check.passed for check in outcome.checks)}/{len(outcome.checks)}" if outcome.checks else "–"
        summary.append(f"<tr><td><a href=\"#{outcome.study.name}\">{html.escape(outcome.study.name)}</a></td>"
                       f"<td class=\"{kind}\">{label}</td><td class=\"num\">{count}</td>"
                       f"<td class=\"num\">{outcome.wall:.1f}</td></tr>")
    title = f"meanfield validation report{' (quick presets)' if quick else ''}"
    state = "" if final else "<p><strong>In progress</strong>: the studies below have run so far.</p>"
    head = (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n{state}"
            f"<p>{passed} of {len(checks)} claims pass; studies that raised an error: {errors}; total wall time "
            f"{wall:.1f} s. Re-run everything: <code>{html.escape(_report_command(quick, root))}</code></p>\n<table>\n"
            + "\n".join(summary) + "\n</table>\n")
    body = "\n<hr>\n".join(_section(outcome, root) for outcome in outcomes)
    return head + body + "\n</body>\n</html>\n"


def exit_code(outcomes: list) -> int:
    """0 when every claim passes and no study raised, 3 otherwise."""
    return 0 if all(outcome.passed for outcome in outcomes) else 3
