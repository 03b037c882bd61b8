"""What every study shares: progress, writing, output checks, and running a registered study.

- :func:`progress_bar`, :func:`write_dataset`, :func:`save_figure`: the studies' progress over runs
  and their output files, written safely (:func:`meanfield.storage.write_atomic`: a temporary file
  renamed into place, folders created); :func:`study_main` is ``python -m meanfield.validation.<study>``.
- :func:`check_output` refuses a destination before anything is computed
  (:func:`meanfield.storage.check_output_folder` / ``check_output_file``); :func:`run` times a study
  of :mod:`meanfield.validation.registry`, formats its table and evaluates its claims, and :func:`run_caught`
  turns an exception into a one-line error so that the report (:mod:`meanfield.validation.report`) goes on.

The command line (``meanfield validate ...``) and the report both run studies through here.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

from meanfield.plotting import DPI
from meanfield.storage import RUN_SUFFIXES, check_output_file, check_output_folder, write_atomic

from .registry import Check, Study


# --------------------------------------------------------------------------------------------- writing
def progress_bar(total: int, desc: str):
    """Progress over study runs: a bar on a terminal, a log line every 5 % otherwise
    (:func:`meanfield.progress.progress_bar`)."""
    from meanfield.progress import progress_bar as _progress_bar
    return _progress_bar(total, unit="run", desc=desc)


def save_figure(fig, path, dpi: int = DPI) -> Path:
    """Write a Matplotlib figure (format from the suffix) safely; parent folders are created."""
    return write_atomic(path, lambda temporary: fig.savefig(temporary, dpi=dpi))


def write_dataset(ds, path) -> Path:
    """Write a study's table as netCDF safely (the bytes ``ds.to_netcdf(path)`` writes)."""
    return write_atomic(path, lambda temporary: ds.to_netcdf(temporary))


def study_main(argv, description: str, out_dir: str, run, table, name: str):
    """``python -m meanfield.validation.<study> [--quick] [--out-dir DIR]``: run, print the table, say what was written."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="the small size the test suite uses")
    parser.add_argument("--out-dir", default=out_dir)
    args = parser.parse_args(argv)
    ds = run(quick=args.quick, out_dir=args.out_dir)
    print(table(ds))
    print(f"wall time {ds.attrs['wall_time']:.1f} s; wrote {args.out_dir}/{name}.nc and {name}.png")
    return ds


# --------------------------------------------------------------------------------------------- running


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


def run(study: Study, quick: bool, out, claims: bool = True) -> Outcome:
    """Run the study into ``out`` (checked beforehand by the caller): its table, figures and (with
    ``claims``) the checks of its claims."""
    module = study.load()
    start = time.perf_counter()
    result = study.run(module, quick, out)
    if study.output == "file" and out is not None:
        from meanfield.storage import save_run
        save_run(result, out)
    outcome = Outcome(study, quick, out, text=study.table(module, result),
                      wrote=study.wrote(out, result) if study.wrote and out is not None else "")
    outcome.wall = time.perf_counter() - start
    outcome.checks = list(study.claims(result)) if claims else []
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
