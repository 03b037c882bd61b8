"""Benchmark of the start-up: ``import meanfield`` and ``meanfield --version`` against ``import numpy``.

A measurement, not a test: it prints the best of ``REPEATS`` walls of each command in fresh interpreters, and their
ratios to ``python -c 'import numpy'`` timed the same way in the same process (the target is ``<= 3`` for both).
The package imports its modules on first use (PEP 562, ``meanfield/__init__.py``) and the command line reads
its output paths without xarray (``meanfield/app/output_paths.py``), so neither loads scipy, xarray or a solver.

Run: ``python -m meanfield.validation.benchmarks.startup [--quick]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time

#: Fresh interpreters per command (the best wall is kept).
REPEATS, QUICK_REPEATS = 5, 2


def commands() -> dict[str, list[str]]:
    """The timed commands: the baseline first."""
    meanfield = shutil.which("meanfield") or str(__import__("pathlib").Path(sys.executable).parent / "meanfield")
    return {"import numpy": [sys.executable, "-c", "import numpy"],
            "import meanfield": [sys.executable, "-c", "import meanfield"],
            "meanfield --version": [meanfield, "--version"]}


def best_wall(command: list[str], repeats: int) -> float:
    """The smallest wall time of ``repeats`` runs of ``command`` (seconds)."""
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
    return min(walls)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_REPEATS} repeats instead of {REPEATS}")
    args = parser.parse_args(argv)
    repeats = QUICK_REPEATS if args.quick else REPEATS
    walls = {name: best_wall(command, repeats) for name, command in commands().items()}
    baseline = walls["import numpy"]
    print(f"start-up, best of {repeats} fresh interpreters")
    for name, wall in walls.items():
        print(f"{name:<22} {wall * 1e3:8.1f} ms   x {wall / baseline:5.2f} import numpy")


if __name__ == "__main__":
    main()
