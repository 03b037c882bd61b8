"""Signals at random moments: SIGINT and SIGTERM sent to `meanfield solve` while it steps and while it writes.

Each trial starts a small finite-volume run in a subprocess (``python -m meanfield.cli``) and sends one signal
at a random moment: during the run (a long run, after its imports, within 0.5 s) or during the write of its
file (a short run with 1001 frames, within 4 ms of its temporary file appearing).  A trial passes when the
command ends within 15 s of the signal with exit status 130 (SIGINT) or 143 (SIGTERM) (or by the signal
itself, when it lands after the command finished), the folder holds ``run.nc`` and nothing else (no
temporary file), an interrupted run's ``stop_reason`` says so and it kept at least two frames, and a run
whose write was interrupted is whole (1001 frames, ``completed``): DESIGN.md "Stopping" and
:mod:`meanfield.app.signals`.

``meanfield validate bench-signals`` runs :data:`SIZES` trials (``--quick``: :data:`QUICK_SIZES`), four at
a time, and prints one row a trial; the unit test (tests/meanfield/test_hostile_inputs.py) runs a few.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import xarray as xr

#: Trials of the full and quick runs (one entry each: the registry's presets).
SIZES = (40,)
QUICK_SIZES = (8,)
#: The four kinds of trial, taken in turn.
KINDS = (("run", signal.SIGINT), ("run", signal.SIGTERM), ("write", signal.SIGINT), ("write", signal.SIGTERM))
#: CPU seconds after which a command has finished its imports and is stepping (imports take about 2 s here).
STARTUP_CPU = 3.0
#: The run each trial starts, without ``--t-final``, ``--save-every`` and ``--out``.
RUN = ["solve", "circle", "--scheme", "fv", "--beta", "9", "--resolution", "64", "--no-progress"]
#: Seconds within which a signalled command must end.
DEADLINE = 15.0
#: Trials running at once.
BATCH = 4


def launch(folder: Path, moment: str) -> subprocess.Popen:
    """The command of one trial: a long run (``moment = "run"``), or a short one with many frames to write."""
    t_final, save_every = ("1e5", "1") if moment == "run" else ("1", "0.001")
    return subprocess.Popen([sys.executable, "-m", "meanfield.cli", *RUN, "--t-final", t_final,
                             "--save-every", save_every, "--out", str(folder / "run.nc")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=Path(__file__).parents[1])


def _writing(folder: Path) -> bool:
    return any(entry.name.endswith(".tmp.nc") for entry in folder.iterdir())


def _cpu_seconds(process) -> float:
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")        # utime + stime


def _send_at_random_moments(trials: list[dict], draw: random.Random, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while any(trial["sent"] is None for trial in trials) and time.monotonic() < end:
        now = time.monotonic()
        for trial in trials:
            process = trial["process"]
            if trial["sent"] is not None or process.poll() is not None:
                continue
            if trial["at"] is None:
                write = trial["moment"] == "write"
                if _writing(trial["folder"]) if write else _cpu_seconds(process) >= STARTUP_CPU:
                    trial["at"] = now + (draw.uniform(0.0, 0.004) if write else draw.uniform(0.0, 0.5))
            elif now >= trial["at"]:
                process.send_signal(trial["sig"])
                trial["sent"] = now
        time.sleep(0.0005)


def _outcome(trial: dict) -> dict:
    """What one trial gave, and ``problem``: why it failed (empty when it passed)."""
    moment, sig, folder, process = trial["moment"], trial["sig"], trial["folder"], trial["process"]
    row = {"moment": moment, "signal": signal.Signals(sig).name, "exit": None, "seconds": None, "files": "",
           "stop_reason": "", "frames": 0, "problem": ""}
    if trial["sent"] is None:
        row["problem"] = f"the moment was not caught (the command ended with {process.poll()})"
        return row
    try:
        _, err = process.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        row["problem"] = f"still running {DEADLINE:g} s after the signal"
        return row
    row["seconds"] = time.monotonic() - trial["sent"]
    row["exit"] = process.returncode
    names = sorted(entry.name for entry in folder.iterdir())
    row["files"] = " ".join(names)
    if process.returncode not in (128 + sig, -sig):
        row["problem"] = f"exit status {process.returncode}: {err.decode(errors='replace').strip()[-200:]}"
    elif names != ["run.nc"]:
        row["problem"] = f"the folder holds {names}"
    else:
        with xr.open_dataset(folder / "run.nc") as run:
            row["stop_reason"], row["frames"] = str(run.attrs["stop_reason"]), int(run.sizes["time"])
        expected = "interrupted" + (" by SIGTERM" if sig == signal.SIGTERM else "") + " at t = "
        if moment == "run" and not (row["stop_reason"].startswith(expected) and row["frames"] >= 2):
            row["problem"] = f"stop_reason {row['stop_reason']!r} with {row['frames']} frames"
        if moment == "write" and not (row["stop_reason"] == "completed" and row["frames"] == 1001):
            row["problem"] = f"the written run is not whole ({row['stop_reason']!r}, {row['frames']} frames)"
    return row


def run_trials(count: int, folder, seed: int = 21) -> list[dict]:
    """``count`` trials (the :data:`KINDS` in turn, :data:`BATCH` at a time) in sub-folders of ``folder``;
    one row each (:func:`_outcome`).  No process outlives the call, whatever fails."""
    draw = random.Random(seed)
    rows = []
    for first in range(0, count, BATCH):
        trials = []
        try:
            for index in range(first, min(count, first + BATCH)):
                moment, sig = KINDS[index % len(KINDS)]
                trial_folder = Path(folder) / f"trial{index}"
                trial_folder.mkdir(parents=True)
                trials.append(dict(moment=moment, sig=sig, folder=trial_folder, process=launch(trial_folder, moment),
                                   at=None, sent=None))
            _send_at_random_moments(trials, draw)
            rows += [_outcome(trial) for trial in trials]
        finally:
            for trial in trials:
                process = trial["process"]
                if process.poll() is None:
                    process.kill()
                if not process.stderr.closed:
                    process.communicate()
    return rows


def format_rows(rows: list[dict]) -> str:
    lines = [f"{'trial':>5}  {'moment':<6}  {'signal':<7}  {'exit':>4}  {'ended (s)':>9}  {'frames':>6}  result"]
    for index, row in enumerate(rows):
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.2f}"
        lines.append(f"{index:>5}  {row['moment']:<6}  {row['signal']:<7}  {row['exit'] or '':>4}  {seconds:>9}  "
                     f"{row['frames']:>6}  {row['problem'] or 'saved, nothing else left'}")
    passed = sum(not row["problem"] for row in rows)
    lines.append(f"{passed} of {len(rows)} trials saved the run, ended within {DEADLINE:g} s with 130 / 143 and left "
                 f"no temporary file")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SIZES[0]} trials instead of {SIZES[0]}")
    parser.add_argument("--seed", type=int, default=21, help="seed of the random moments (default 21)")
    args = parser.parse_args(argv)
    count = (QUICK_SIZES if args.quick else SIZES)[0]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="meanfield-signal-trials-") as folder:
        rows = run_trials(count, folder, args.seed)
    print(f"SIGINT and SIGTERM at random moments of `meanfield {' '.join(RUN[:2])}` runs and writes")
    print(format_rows(rows))
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
