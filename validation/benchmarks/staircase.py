"""Benchmark of the metastable staircase: simulated time per wall-second with and without collapse.

A measurement, not a test: it prints ratios and asserts nothing about speed.

For each case the same run (same scheme, start and stepper) is timed twice in this process:
*with collapse* (the default: coincident nodes merge, MATH.md §5, and the step follows the K-point
dynamics) to ``t = 1e9`` on a log time axis, and *without* (``collapse_tol = 0``: the step stays
tied to the stiff contraction inside clusters) to a shorter ``t`` that fits a few seconds.
``speedup`` is the ratio of simulated time per wall-second.  Without collapse the cost grows
linearly in ``t``; with it, like the number of merges plus the log of the span.

Cases: Lagrangian circle (beta 9, N = 512, ``perturbed:1e-4``: the issue's run) and i.i.d.
particles on the circle (beta 9, n = 2048).  Threads: the setting of :mod:`meanfield.app.threads`
(``--threads``, default all cores), printed in the header; ``wall 1 core`` / ``wall all`` time the run
with collapse at 1 thread and at every core.
Run: ``python -m meanfield.validation.benchmarks.staircase [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import time

from meanfield.app.threads import add_threads_argument, apply_threads_argument, header, one_vs_all
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.solve import solve

from ..harness import column_table

LONG = 1e9
CASES = {
    "lagrangian circle N=512": (lambda **kw: solve("circle", scheme="lagrangian", beta=9.0, resolution=512,
                                                   init="perturbed:1e-4", seed=0, **kw), 2000.0, 500.0),
    "particles circle n=2048": (lambda **kw: simulate(dim=2, n=2048, beta=9.0, init="uniform", seed=0, **kw),
                                2000.0, 500.0),
}
COLUMNS = [("case", "case", "s"), ("t without", "t_plain", ".4g"), ("wall s", "wall_plain_s", ".2f"),
           ("steps", "steps_plain", "d"), ("t with", "t_collapse", ".3g"), ("wall s", "wall_collapse_s", ".2f"),
           ("steps", "steps_collapse", "d"), ("t/s without", "rate_plain", ".4g"),
           ("t/s with", "rate_collapse", ".4g"), ("ratio", "speedup", ".3g"),
           ("wall 1 core", "wall_1core_s", ".2f"), ("wall all", "wall_all_s", ".2f"), ("1core/all", "thread_gain", ".2f")]


def timed(run, **settings):
    start = time.perf_counter()
    dataset = run(**settings)
    return time.perf_counter() - start, dataset


def run_benchmark(quick: bool = False) -> list[dict]:
    rows = []
    for name, (run, plain_t, quick_t) in CASES.items():
        short = quick_t if quick else plain_t
        wall_plain, plain = timed(run, t_final=short, save_log=10, collapse_tol=0.0)
        wall_collapse, collapsed = timed(run, t_final=LONG, save_log=10)
        rate_plain, rate_collapse = short / wall_plain, LONG / wall_collapse
        single, every = one_vs_all(lambda: timed(run, t_final=LONG, save_log=10)[0])
        rows.append({"case": name, "t_plain": short, "wall_plain_s": wall_plain, "steps_plain": plain.attrs["steps"],
                     "t_collapse": LONG, "wall_collapse_s": wall_collapse, "steps_collapse": collapsed.attrs["steps"],
                     "rate_plain": rate_plain, "rate_collapse": rate_collapse, "speedup": rate_collapse / rate_plain,
                     "wall_1core_s": single, "wall_all_s": every, "thread_gain": single / every})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs without collapse")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    apply_threads_argument(args.threads)
    start = time.perf_counter()
    rows = run_benchmark(args.quick)
    print("metastable staircase: simulated time per wall-second (rate = t / wall), with and without collapse; "
          "1core/all = the run with collapse at 1 thread / at every core")
    print(header())
    print(column_table(rows, COLUMNS))
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
