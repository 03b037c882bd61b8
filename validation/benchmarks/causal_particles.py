"""Benchmark of causal circle particles (MATH.md §8): the prefix-sum path against the masked direct sum.

A measurement, not a test: it asserts nothing about speed.  One right-hand side of
``ParticleScheme(Model("sa", 9, dim=2), n, mask=Mask("causal", 1))`` (``Q = K = V = I``, tokens i.i.d. uniform on
the circle, seeded) on the ``O(n M)`` path of decaying prefix sums
(:class:`meanfield.solvers.schemes.causal_interaction.CausalCircleInteraction`) and, up to :data:`DIRECT_MAX` tokens, on the
masked ``O(n^2)`` direct sum (:class:`meanfield.solvers.schemes.causal_interaction.CausalDirectInteraction`), both on one core
(BLAS limited to 1 thread through threadpoolctl, :func:`meanfield.app.threads.use_threads`).  Timings as in
:mod:`meanfield.validation.benchmarks.particles` (:func:`~meanfield.validation.benchmarks.particles.timing_for`: best of
several interleaved runs at small ``n``, one call each at large ``n``).  Each row also gives the largest difference
of the two paths relative to the largest speed.  Run with ``python -m meanfield.validation.benchmarks.causal_particles
[--quick]``.
"""

from __future__ import annotations

import argparse

import numpy as np

from meanfield.model import Model
from meanfield.settings import Attention, Mask
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.app.threads import use_threads
from meanfield.validation.benchmarks.particles import time_calls, timing_for

#: The case timed: SA, beta = 9, ALiBi slope 1, mask causal.
BETA, ALIBI, MASK = 9.0, 1.0, "causal"
#: Largest ``n`` at which the O(n^2) direct sum is timed.
DIRECT_MAX = 10 ** 4
#: ``quick``: sizes up to this.
QUICK_MAX = 10 ** 5
SIZES = (1000, 10000, 100000, 1000000)


def _scheme(n: int, path: str) -> ParticleScheme:
    return ParticleScheme(Model("sa", BETA, 0.0, 2), n, Attention("sa", interaction=path), mask=Mask(MASK, ALIBI))


def _tokens(n: int) -> np.ndarray:
    theta = np.random.default_rng(n).uniform(0.0, 2 * np.pi, n)
    return np.stack((np.cos(theta), np.sin(theta)), axis=-1)[None]


def particle_row(n: int, quick: bool = False) -> dict:
    """``{n, prefix_s, direct_s, ratio, difference}`` at ``n`` tokens (``None`` where the direct sum is not timed)."""
    x = _tokens(n)
    paths = [_scheme(n, "harmonic")] + ([_scheme(n, "direct")] if n <= DIRECT_MAX else [])
    times = time_calls([lambda scheme=scheme: scheme.rhs(x, 0.0) for scheme in paths], timing_for(n, quick))
    row = {"n": n, "prefix_s": times[0], "direct_s": None, "ratio": None, "difference": None}
    if len(paths) == 2:
        fast, direct = (scheme.rhs(x, 0.0) for scheme in paths)
        scale = float(np.max(np.linalg.norm(direct, axis=-1)))
        row.update(direct_s=times[1], ratio=times[1] / times[0],
                   difference=float(np.max(np.abs(fast - direct))) / scale)
    return row


def particle_rows(sizes=SIZES, quick: bool = False) -> list[dict]:
    """One row per ``n`` of ``sizes`` (``quick``: those up to :data:`QUICK_MAX`, fewer repeats), on one core: the
    seconds per right-hand side on the prefix-sum path (``prefix_s``) and the direct path (``direct_s``, up to
    :data:`DIRECT_MAX`), their ``ratio`` (direct / prefix) and the paths' largest relative ``difference``."""
    with use_threads(1):
        return [particle_row(int(n), quick) for n in sizes if not quick or n <= QUICK_MAX]


def format_rows(rows: list[dict]) -> str:
    """The rows as a plain table."""
    shown = lambda value, spec: "-" if value is None else format(value, spec)
    lines = [f"{'n':>9}  {'prefix (s)':>11}  {'direct (s)':>11}  {'ratio':>8}  {'difference':>10}"]
    lines += [f"{row['n']:>9}  {row['prefix_s']:>11.4g}  {shown(row['direct_s'], '>11.4g')}  "
              f"{shown(row['ratio'], '>8.3g')}  {shown(row['difference'], '>10.2g')}" for row in rows]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes up to {QUICK_MAX:g}, fewer repeats")
    args = parser.parse_args(argv)
    print(f"causal circle particles, SA, beta = {BETA:g}, --mask {MASK} --alibi {ALIBI:g}, one core")
    print(format_rows(particle_rows(quick=args.quick)))


if __name__ == "__main__":
    main()
