"""Benchmark of causal attention (MATH.md §8): the kinetic PDE's right-hand side and causal circle particles.

This is a measurement, not a test: it prints times and ratios and asserts nothing about speed.

* **Kinetic PDE.**  One right-hand side of the causal kinetic PDE on ``N_S`` positions
  (:class:`meanfield.solvers.schemes.causal.CausalKinetic`) against ``N_S`` right-hand sides of the ordinary scheme of the
  same resolution, on the same slices, timed in the same process (``ratio = causal / (N_S x ordinary)``; the
  issue's target is at most 1.5).  Both run the compiled circle kernel where it is built; the causal one adds
  the positional average (cumulative sums over the positions) and one loop over the slices.
* **Causal circle particles** (``Q = K = V = I``, SA, ``lambda = 1``): the ``O(n M)`` decaying prefix sums
  against the masked direct sum, one right-hand side on one core, ``n = 1e3 .. 1e6``
  (:mod:`meanfield.validation.benchmarks.causal_particles`).

Run with ``meanfield validate bench-causal [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from meanfield.geometries import geometry_of
from meanfield.model import Model
from meanfield.solvers.schemes.causal import CausalKinetic
from meanfield.solvers.schemes.circle import CircleSpectral
from meanfield.solvers.schemes.sphere import SphereSpectral
from meanfield.app.threads import add_threads_argument, apply_threads_argument, header

from ..harness import best_times, column_table

#: (geometry, resolution, positions) of the PDE rows
CASES = (("circle", 256, 33), ("circle", 256, 129), ("circle", 1024, 65), ("circle", 4096, 65),
         ("sphere", 31, 17), ("sphere", 63, 17))
QUICK_CASES = (("circle", 256, 33), ("circle", 1024, 65), ("sphere", 31, 9))
#: particle sizes (the direct path only up to DIRECT_LIMIT tokens)
SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)

PDE_COLUMNS = (("geometry", "geometry", "s"), ("resolution", "resolution", "d"), ("N_S", "positions", "d"),
               ("causal_ms", "causal_ms", ".3f"), ("N_S x ordinary_ms", "ordinary_ms", ".3f"),
               ("ratio", "ratio", ".2f"))
PARTICLE_COLUMNS = (("n", "n", "d"), ("prefix_s", "prefix_s", ".4g"), ("direct_s", "direct_s", ".4g"),
                    ("direct/prefix", "ratio", ".3g"))


def _schemes(geometry: str, resolution: int, positions: int, attention: str, beta: float, alibi: float):
    """The ordinary scheme, the causal one on ``positions`` slices, and a state of smooth slices."""
    model = Model(attention, beta, 0.0, geometry_of(geometry).default_dim)
    if geometry_of(geometry).fourier:
        one = CircleSpectral(model, resolution)
        theta = one.basis.theta
        density = lambda s: (1 + 0.1 * s * np.cos(theta) + 0.05 * np.sin(3 * theta)) / (2 * math.pi)
    else:
        one = SphereSpectral(model, resolution)
        lat = np.radians(one.basis.lat)[:, None]
        lon = np.radians(one.basis.lon)[None, :]
        density = lambda s: (1 + 0.1 * s * np.sin(lat) + 0.05 * np.cos(lat) * np.cos(2 * lon)) / (4 * math.pi)
    causal = CausalKinetic(one, positions, alibi)
    state = causal.state_from_density(np.stack([density(s) for s in causal.positions]))
    return one, causal, state


def pde_row(geometry: str, resolution: int, positions: int, timing: dict, attention: str = "sa",
            beta: float = 9.0, alibi: float = 1.0) -> dict:
    """One row of the kinetic-PDE table (module docstring)."""
    one, causal, state = _schemes(geometry, resolution, positions, attention, beta, alibi)

    def ordinary():
        for row in state:
            one.rhs(row, 0.0)

    causal_time, ordinary_time = best_times([lambda: causal.rhs(state, 0.0), ordinary], **timing)
    return {"geometry": geometry, "resolution": resolution, "positions": positions, "causal_ms": 1e3 * causal_time,
            "ordinary_ms": 1e3 * ordinary_time, "ratio": causal_time / ordinary_time}


def run_benchmark(quick: bool = False) -> tuple[list[dict], list[dict]]:
    """The PDE rows and the particle rows."""
    from meanfield.validation.benchmarks.causal_particles import particle_rows

    timing = {"target": 0.1, "repeats": 3} if quick else {"target": 0.4, "repeats": 5}
    pde = [pde_row(*case, timing) for case in (QUICK_CASES if quick else CASES)]
    return pde, particle_rows(QUICK_SIZES if quick else SIZES, quick=quick)


def main(argv=None) -> None:
    """Command line: ``meanfield validate bench-causal [--quick]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and shorter timings")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    apply_threads_argument(args.threads)
    start = time.perf_counter()
    pde, particles = run_benchmark(quick=args.quick)
    print(header())
    print("Causal kinetic PDE (SA, beta = 9, lambda = 1): one right-hand side on N_S positions against N_S ordinary "
          "right-hand sides of the same resolution (times in ms)")
    print(column_table(pde, PDE_COLUMNS))
    print("Causal circle particles (SA, beta = 9, lambda = 1, Q = K = V = I, one core): seconds per right-hand side")
    print(column_table(particles, PARTICLE_COLUMNS))
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
