"""Benchmark of counting the clusters of one frame against one right-hand side of the same state.

A measurement, not a test: it prints ratios and asserts nothing about speed.  Issue 32 asks that counting the
clusters of a frame (:mod:`meanfield.cluster_detection`, which runs records for every saved frame) cost at most one
right-hand-side evaluation of the same state, so that the count never dominates a run; ``ratio`` = count / rhs,
both timed in this process on the same data.

1. **Circle, finite volumes.**  ``CircleFiniteVolume(Model("sa", 9, 0, 2), 512).rhs(state, 0.0)`` against
   ``clusters_of_density(density, beta=9, theta=cell centres, volumes=cell volumes)`` (what the fv scheme's cluster
   tracker calls), on a clustered state: :data:`CIRCLE_BUMPS` von Mises bumps of concentration
   :data:`CIRCLE_KAPPA` at seeded, well separated angles over a 5 % uniform background.  The count is the compiled
   one (:mod:`meanfield.circle_clusters`) when the extension is built, numpy's otherwise; the table says which.
2. **S^2 particles.**  ``ParticleScheme(Model("sa", 9, dim=3), n).rhs(x, 0.0)`` (``Q = K = V = I``, the ``auto``
   path: spherical harmonics at these ``n``) against ``clusters_of_atoms(x, weights, beta=9)`` on the same tokens:
   :data:`SPHERE_CENTRES` seeded centres (at least :data:`MIN_SEPARATION` rad apart), tokens drawn around them
   with angular spread :data:`SPREAD`, plus :data:`BACKGROUND` of the tokens uniform.  ``n = 1e6`` is the issue's
   size; ``n = 1e5`` is the quicker view (``--quick``: only it).  Both the rhs and the count call ducc0's adjoint
   non-uniform synthesis on one thread (the count for the point-mass coefficients of its field).

Timings: :func:`meanfield.validation.harness.best_times` (interleaved, best of several runs).  Threads: the
setting of :mod:`meanfield.app.threads`, printed in the header.  The circle count's Fourier sums end in a small
complex matvec through BLAS; on this 2-core machine a 2-thread BLAS made that row erratic (the count 0.8 to 8 ms,
and the rhs timed next to it up to twice as slow): use ``--threads 1`` for a steady circle row.
Run: ``python -m meanfield.validation.benchmarks.clusters [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from meanfield.circle_clusters import AVAILABLE as COMPILED_COUNT
from meanfield.cluster_detection import clusters_of_atoms, clusters_of_density
from meanfield.model import Model
from meanfield.app.threads import add_threads_argument, apply_threads_argument, header
from meanfield.solvers.schemes.finite_volume import CircleFiniteVolume
from meanfield.solvers.schemes.particles import ParticleScheme

from ..harness import best_times, column_table

BETA = 9.0
CIRCLE_N = 512
CIRCLE_BUMPS, CIRCLE_KAPPA = 4, 400.0
#: S^2 token counts (full run and ``--quick``).
SIZES = (100_000, 1_000_000)
QUICK_SIZES = (100_000,)
SPHERE_CENTRES, MIN_SEPARATION, SPREAD, BACKGROUND = 8, 0.9, 0.08, 0.2
SEED = 20250132

COLUMNS = (("case", "case", "s"), ("rhs_s", "rhs_s", ".3e"), ("count_s", "count_s", ".3e"),
           ("ratio count/rhs", "ratio", ".2f"), ("clusters", "clusters", "d"))


def separated_directions(rng, count: int, dim: int, separation: float) -> np.ndarray:
    """``count`` random unit vectors in R^dim, pairwise at least ``separation`` rad apart (rejection)."""
    chosen = []
    while len(chosen) < count:
        v = rng.standard_normal(dim)
        v /= np.linalg.norm(v)
        if all(math.acos(min(1.0, float(v @ u))) >= separation for u in chosen):
            chosen.append(v)
    return np.array(chosen)


def clustered_circle_density(n: int, rng) -> np.ndarray:
    """A clustered circle density at the cell centres (module docstring, case 1), unit mass; taken as cell averages."""
    theta = 2 * math.pi * np.arange(n) / n
    centres = np.arctan2(*separated_directions(rng, CIRCLE_BUMPS, 2, 1.2).T[::-1])
    bumps = sum(np.exp(CIRCLE_KAPPA * (np.cos(theta - c) - 1.0)) for c in centres)
    bumps /= bumps.sum() * 2 * math.pi / n
    return 0.95 * bumps + 0.05 / (2 * math.pi)


def clustered_tokens(n: int, rng) -> np.ndarray:
    """``n`` tokens on S^2 around :data:`SPHERE_CENTRES` centres plus a uniform background, shape ``(n, 3)``."""
    centres = separated_directions(rng, SPHERE_CENTRES, 3, MIN_SEPARATION)
    x = rng.standard_normal((n, 3))
    clustered = rng.random(n) >= BACKGROUND
    x[clustered] = centres[rng.integers(0, SPHERE_CENTRES, clustered.sum())] + SPREAD * x[clustered]
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def circle_row(timing: dict) -> dict:
    """Case 1: fv rhs against ``clusters_of_density`` on the scheme's cells."""
    scheme = CircleFiniteVolume(Model("sa", BETA, 0.0, 2), CIRCLE_N)
    state = scheme.state_from_cell_averages(clustered_circle_density(CIRCLE_N, np.random.default_rng([SEED, 1])))
    density, theta, volumes = scheme.density(state), scheme.coordinate, scheme.fv.volumes

    def count():
        return clusters_of_density(density, beta=BETA, theta=theta, volumes=volumes)

    rhs, counting = best_times([lambda: scheme.rhs(state, 0.0), count], **timing)
    path = "compiled" if COMPILED_COUNT else "numpy"
    return {"case": f"circle fv N={CIRCLE_N} ({path})", "rhs_s": rhs, "count_s": counting, "ratio": counting / rhs,
            "clusters": count().count, "call": count}


def sphere_row(n: int, timing: dict) -> dict:
    """Case 2: particle rhs on S^2 against ``clusters_of_atoms`` on the same tokens."""
    x = clustered_tokens(n, np.random.default_rng([SEED, 2, n]))
    scheme = ParticleScheme(Model("sa", beta=BETA, dim=3), n)
    state, weights = x[None], np.full(n, 1.0 / n)

    def count():
        return clusters_of_atoms(x, weights, beta=BETA)

    rhs, counting = best_times([lambda: scheme.rhs(state, 0.0), count], **timing)
    return {"case": f"S^2 particles n={n:.0e} ({scheme.interaction_path})", "rhs_s": rhs, "count_s": counting,
            "ratio": counting / rhs, "clusters": count().count, "call": count}


def run_benchmark(quick: bool = False) -> list[dict]:
    """The rows of the table (module docstring); each also keeps its count call (``"call"``) for profiling."""
    small = {"target": 0.1, "repeats": 3} if quick else {"target": 0.5, "repeats": 7}
    large = {"target": 0.05, "repeats": 2} if quick else {"target": 0.1, "repeats": 3}
    return [circle_row(small)] + [sphere_row(n, large) for n in (QUICK_SIZES if quick else SIZES)]


def main(argv=None) -> None:
    """Command line: ``python -m meanfield.validation.benchmarks.clusters [--quick] [--threads N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="S^2 at n = 1e5 only, shorter timings")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    apply_threads_argument(args.threads)
    start = time.perf_counter()
    rows = run_benchmark(args.quick)
    print(f"cluster count of one frame vs one right-hand side, SA, beta = {BETA:g} (seconds per call; target: "
          f"ratio <= 1)")
    print(header())
    print(column_table(rows, COLUMNS))
    over = [row["case"] for row in rows if row["ratio"] > 1]
    print("count within one rhs: " + ("yes" if not over else f"NO for {', '.join(over)}"))
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
