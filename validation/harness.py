"""What every study shares: progress, writing, fits, timing, output checks, and running a registered study.

- :func:`progress_bar`, :func:`write_dataset`, :func:`save_figure`: the studies' progress over runs
  and their output files, written safely (:func:`meanfield.app.storage.write_atomic`: a temporary file
  renamed into place, folders created); :func:`study_main` is ``python -m meanfield.validation.studies.<study>``.
- :func:`fit_with_spread`: a least-squares slope (:func:`meanfield.fits.fit_line`) and its one-seed spread;
  :func:`saved_frames` reads a run's frames at the study's times; :func:`curve_colours` colours one
  curve per time.
- :func:`best_times`, :func:`clock`: the benchmarks' timings (their exponents: :func:`meanfield.fits.log_log_slope`)
  and :func:`column_table` their printed tables.
- :func:`check_output` refuses a destination before anything is computed
  (:func:`meanfield.app.storage.check_output_folder` / ``check_output_file``); :func:`run` times a study
  of :mod:`meanfield.validation.registry`, formats its table and evaluates its claims (the study module's
  own claims function, :mod:`meanfield.validation.claims`), and :func:`run_caught` turns an exception into
  a one-line error so that the report (:mod:`meanfield.validation.report`) goes on.

The command line (``meanfield validate ...``) and the report both run studies through here.  This module
imports no study module.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield.errors import require
from meanfield.fits import fit_line
from meanfield.plotting.style import DPI
from meanfield.app.storage import RUN_SUFFIXES, check_output_file, check_output_folder, write_atomic

from .claims import Check
from .registry import Study


# --------------------------------------------------------------------------------------------- writing
def progress_bar(total: int, desc: str):
    """Progress over study runs: a bar on a terminal, a log line every 5 % otherwise
    (:func:`meanfield.app.progress.progress_bar`)."""
    from meanfield.app.progress import progress_bar as _progress_bar
    return _progress_bar(total, unit="run", desc=desc)


def save_figure(fig, path, dpi: int = DPI) -> Path:
    """Write a Matplotlib figure (format from the suffix) safely; parent folders are created."""
    return write_atomic(path, lambda temporary: fig.savefig(temporary, dpi=dpi))


def write_dataset(ds, path) -> Path:
    """Write a study's table as netCDF safely (the bytes ``ds.to_netcdf(path)`` writes)."""
    return write_atomic(path, lambda temporary: ds.to_netcdf(temporary))


def study_main(argv, description: str, out_dir: str, run, table, name: str):
    """``python -m meanfield.validation.studies.<study> [--quick] [--out-dir DIR]``: run, print the table, say what was written."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="the small size the test suite uses")
    parser.add_argument("--out-dir", default=out_dir)
    args = parser.parse_args(argv)
    ds = run(quick=args.quick, out_dir=args.out_dir)
    print(table(ds))
    print(f"wall time {ds.attrs['wall_time']:.1f} s; wrote {args.out_dir}/{name}.nc and {name}.png")
    return ds


# --------------------------------------------------------------------------------------------- fits, frames
def fit_with_spread(x, mean_values, per_seed_values) -> tuple[float, float, float]:
    """``(slope, intercept)`` fitted to ``mean_values`` against ``x``, and the spread of the slope:
    the standard deviation (ddof 1) of the slopes fitted to each column of ``per_seed_values``
    (shape ``(len(x), seeds)``) alone, i.e. the scatter of a one-seed experiment."""
    slope, intercept = fit_line(x, mean_values)
    per_seed = np.array([fit_line(x, column)[0] for column in np.asarray(per_seed_values, dtype=float).T])
    per_seed = per_seed[np.isfinite(per_seed)]
    spread = float(per_seed.std(ddof=1)) if per_seed.size > 1 else math.nan
    return slope, intercept, spread


def saved_frames(run: xr.Dataset, name: str, times) -> np.ndarray:
    """The run's variable ``name`` at ``times`` (the saved frames nearest them; raises unless they are saved)."""
    frames = run[name].sel(time=list(times), method="nearest")
    require(np.allclose(frames["time"].values, times, atol=1e-9), f"the run did not save times {times}")
    return np.asarray(frames.values, dtype=float)


def curve_colours(count: int) -> list:
    """``count`` colours along viridis (to 0.9 of it), one per curve (a study's times)."""
    import matplotlib as mpl
    palette = mpl.colormaps["viridis"]
    return [palette(i / max(1, count - 1) * 0.9) for i in range(count)]


# --------------------------------------------------------------------------------------------- timing
def clock(fn, number: int) -> float:
    """Wall time of ``number`` consecutive calls of ``fn``."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


def _calls_per_run(fn, per_run: float) -> int:
    """How many calls of ``fn`` last about ``per_run`` seconds (at least 1; the first call warms up)."""
    elapsed = clock(fn, 1)
    if elapsed >= per_run:
        return 1
    number = math.ceil(per_run / elapsed)
    return max(1, math.ceil(number * per_run / clock(fn, number)))


def best_times(fns, target: float = 0.2, repeats: int = 5) -> list[float]:
    """Best per-call time (s) of each of ``fns``: ``repeats`` runs each, about ``target`` in total.

    The runs of the different functions are interleaved, so that a slow spell of the
    machine affects every function of a ratio alike.  A function slower than
    ``target / repeats`` is timed one call per run.
    """
    numbers = [_calls_per_run(fn, target / repeats) for fn in fns]
    best = [math.inf] * len(fns)
    for _ in range(repeats):
        for i, (fn, number) in enumerate(zip(fns, numbers)):
            best[i] = min(best[i], clock(fn, number) / number)
    return best


def column_table(rows: list[dict], columns) -> str:
    """An aligned text table: one line of headers, then one line per row; ``columns`` are ``(header, row key,
    format)``, and a missing entry reads 'skipped'."""
    cells = [[h for h, _, _ in columns]]
    cells += [["skipped" if row.get(key) is None else format(row[key], fmt) for _, key, fmt in columns]
              for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells)


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


def run(study: Study, quick: bool, out, claims: bool = True, arguments: dict | None = None) -> Outcome:
    """Run the study into ``out`` (checked beforehand by the caller) with its runner's keyword ``arguments``
    (:meth:`Study.arguments`; none: the preset): its table, figures and (with ``claims``) the checks of its claims."""
    module = study.load()
    start = time.perf_counter()
    result = study.run(module, quick, out, **(arguments or {}))
    if study.output == "file" and out is not None:
        from meanfield.app.storage import save_run
        save_run(result, out)
    outcome = Outcome(study, quick, out, text=study.table(module, result),
                      wrote=study.wrote(out, result) if study.wrote and out is not None else "")
    outcome.wall = time.perf_counter() - start
    outcome.checks = study.checks(module, result) if claims else []
    outcome.figures = figures(study, out)
    return outcome


def claims_table(checks: list[Check]) -> str:
    """The checks as aligned text: a count line, then per claim pass / FAIL, measured, theory, tolerance, the claim
    and (indented below) the tolerance's source."""
    cells = [("", "measured", "theory", "tolerance", "claim")]
    cells += [("pass" if check.passed else "FAIL", f"{check.measured:.6g}", check.theory, check.tolerance, check.claim)
              for check in checks]
    widths = [max(len(row[i]) for row in cells) for i in range(4)]
    lines = []
    for index, row in enumerate(cells):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4])
        if index:
            lines.append(" " * (sum(widths) + 8) + "  source: " + checks[index - 1].source)
    failed = sum(not check.passed for check in checks)
    return "\n".join([f"claims: {len(checks) - failed} of {len(checks)} hold" + (f", {failed} FAIL" if failed else "")]
                     + lines)


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
