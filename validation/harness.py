"""Run one registered study (:mod:`validation.registry`): output checks, timing, claims, errors.

The command line and the report share this: :func:`check_output` refuses a destination before
anything is computed (:func:`meanfield.storage.check_output_folder` / ``check_output_file``),
:func:`run` times a study, formats its table and evaluates its claims, and
:func:`run_caught` turns an exception into a one-line error so that the report goes on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from meanfield.storage import RUN_SUFFIXES, check_output_file, check_output_folder

from .registry import Check, Study


@dataclass
class Outcome:
    """What one study gave: its printed table, closing line, claims, figures, wall time, or an error."""

    study: Study
    quick: bool
    out: object
    text: str = ""
    wrote: str = ""
    checks: list[Check] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    wall: float = 0.0
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(check.passed for check in self.checks)


def check_output(study: Study, out, option: str | None = None) -> None:
    """Refuse an output the study cannot write (one-line :class:`~meanfield.errors.InputError`)."""
    if study.output == "folder":
        check_output_folder(out, option or "--out-dir")
    elif study.output == "file" and out is not None:
        check_output_file(out, option or "--out", RUN_SUFFIXES)


def figures(study: Study, out) -> list[Path]:
    """The PNG files the study wrote into its folder (declared ones, or every PNG there)."""
    if study.output != "folder" or out is None or not Path(out).is_dir():
        return []
    if study.figures is None:
        return sorted(Path(out).glob("*.png"))
    return [Path(out) / name for name in study.figures if (Path(out) / name).is_file()]


def run(study: Study, quick: bool, out) -> Outcome:
    """Run the study into ``out`` (checked beforehand by the caller), its table, claims and figures."""
    module = study.load()
    start = time.perf_counter()
    result = study.run(module, quick, out)
    if study.output == "file" and out is not None:
        from meanfield.storage import save_run
        save_run(result, out)
    outcome = Outcome(study, quick, out, text=study.table(module, result),
                      wrote=study.wrote(out, result) if study.wrote and out is not None else "")
    outcome.wall = time.perf_counter() - start
    outcome.checks = list(study.claims(result))
    outcome.figures = figures(study, out)
    return outcome


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def run_caught(study: Study, quick: bool, out) -> Outcome:
    """:func:`run`, with an exception turned into ``Outcome.error`` (the report goes on)."""
    start = time.perf_counter()
    try:
        return run(study, quick, out)
    except Exception as exc:  # noqa: BLE001 - reported in the page, one line
        return Outcome(study, quick, out, wall=time.perf_counter() - start, error=one_line(exc))
