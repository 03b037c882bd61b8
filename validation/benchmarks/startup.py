"""Benchmark of the start-up: ``import meanfield`` and ``meanfield --version`` against ``import numpy``, and
``meanfield theory --branch`` against plain ``meanfield theory``.

A measurement, not a test: it prints the best of ``REPEATS`` walls of each command in fresh interpreters, and their
ratios to their baseline timed the same way in the same process: ``python -c 'import numpy'`` (the target is
``<= 3`` for both) and ``meanfield theory --beta 4 --dim 3 --json`` for the USA branch at the same beta and d (target
``<= 3``).  The package imports its modules on first use (PEP 562, ``meanfield/__init__.py``) and the command line
reads its output paths without xarray (``meanfield/app/output_paths.py``), so neither loads scipy, xarray or a
solver; ``theory --branch`` reads the branches as arrays (:class:`meanfield.solvers.stationary.branch.BranchTable`),
without xarray.  Measured on 2 idle cores: 0.59 and 1.87 (import, --version), 2.7 (the branch).

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


THEORY = ["theory", "--beta", "4", "--dim", "3", "--json"]


def commands() -> dict[str, tuple[list[str], str]]:
    """The timed commands and the baseline each is compared with (the baselines first)."""
    meanfield = shutil.which("meanfield") or str(__import__("pathlib").Path(sys.executable).parent / "meanfield")
    return {"import numpy": ([sys.executable, "-c", "import numpy"], "import numpy"),
            "import meanfield": ([sys.executable, "-c", "import meanfield"], "import numpy"),
            "meanfield --version": ([meanfield, "--version"], "import numpy"),
            "theory": ([meanfield, *THEORY], "theory"),
            "theory --branch (USA)": ([meanfield, *THEORY, "--branch", "--attention", "usa"], "theory")}


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
    timed = commands()
    walls = {name: best_wall(command, repeats) for name, (command, _) in timed.items()}
    print(f"start-up, best of {repeats} fresh interpreters")
    for name, (_, baseline) in timed.items():
        print(f"{name:<22} {walls[name] * 1e3:8.1f} ms   x {walls[name] / walls[baseline]:5.2f} {baseline}")


if __name__ == "__main__":
    main()
