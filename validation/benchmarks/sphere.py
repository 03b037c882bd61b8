"""Benchmark of the S^2 pseudo-spectral scheme: one right-hand side against its bare transforms.

This is a measurement, not a test: it prints times and ratios and asserts nothing about speed.

One ``SphereSpectral.rhs`` call (``solvers/schemes/sphere.py``) does, on the dealiased
Gauss–Legendre grid of ``SphereBasis(lmax)``: a spin-0 synthesis of ``rho``, a spin-1
synthesis of the velocity potential's gradient, (SA only) a spin-0 synthesis of
``K*rho``, and one spin-1 analysis of the flux.  Its cost is divided by the cost of
exactly those ducc0 transforms, called on the scheme's own preallocated buffers
(SA: 2 spin-0 syntheses + 1 spin-1 synthesis + 1 spin-1 analysis; USA one spin-0
synthesis fewer).  A ratio close to 1 means the right-hand side costs little beyond
its transforms.  Threads: the setting of :mod:`meanfield.app.threads` (``--threads``, default all cores),
printed in the header; ``sa_1core_ms`` / ``sa_all_ms`` time the SA right-hand side of a scheme built at
1 thread and at every core (ducc0's grid transforms give the same bits at both).
Run with ``python -m meanfield.validation.benchmarks.sphere [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import time


from meanfield.attention_kind import attention_kind
from meanfield.initial.sphere import sphere_density
from meanfield.model import Model
from meanfield.app.threads import add_threads_argument, apply_threads_argument, header, one_vs_all
from meanfield.solvers.schemes.sphere import SphereSpectral
from meanfield.solvers.bases.sphere_basis import shtns_available

from ..harness import best_times, column_table

LMAXES = (63, 127, 255, 511)
QUICK_LMAXES = (63, 127, 255)

COLUMNS = (  # (header, row key, format)
    ("lmax", "lmax", "d"),
    ("backend", "backend", "s"),
    ("nlat", "nlat", "d"),
    ("nlon", "nlon", "d"),
    ("rhs_sa_ms", "rhs_sa_ms", ".3f"),
    ("sht_sa_ms", "sht_sa_ms", ".3f"),
    ("ratio_sa", "ratio_sa", ".2f"),
    ("rhs_usa_ms", "rhs_usa_ms", ".3f"),
    ("sht_usa_ms", "sht_usa_ms", ".3f"),
    ("ratio_usa", "ratio_usa", ".2f"),
    ("sa_1core_ms", "sa_1core_ms", ".3f"),
    ("sa_all_ms", "sa_all_ms", ".3f"),
    ("1core/all", "thread_gain", ".2f"),
)


def transforms(scheme: SphereSpectral, state, sa: bool):
    """The bare transforms of one right-hand side, through the scheme's basis and buffers."""
    basis = scheme.basis

    def call():
        basis.synthesise(state, out=scheme._rho[0])
        basis.gradient(state, out=scheme._vel)
        if sa:
            basis.synthesise(state, out=scheme._conv_grid[0])
        basis.divergence(scheme._vel)
    return call


def scheme_and_state(attention: str, beta: float, lmax: int, backend: str):
    """A scheme (on the thread setting in effect now) and a smooth positive state."""
    scheme = SphereSpectral(Model(attention, beta, 0.0, 3), lmax, backend=backend)
    return scheme, scheme.state_from_density(sphere_density("perturbed:0.01", scheme.basis, 1))


def rhs_seconds(beta: float, lmax: int, backend: str, timing: dict) -> float:
    """Best time of one SA right-hand side of a scheme built under the thread setting in effect."""
    scheme, state = scheme_and_state("sa", beta, lmax, backend)
    return best_times([lambda: scheme.rhs(state, 0.0)], **timing)[0]


def measure(lmax: int, beta: float, timing: dict, backend: str) -> dict:
    row = {"lmax": lmax, "backend": backend}
    for attention in ("sa", "usa"):
        scheme, state = scheme_and_state(attention, beta, lmax, backend)
        row["nlat"], row["nlon"] = scheme.basis.shape
        rhs_time, sht_time = best_times([lambda: scheme.rhs(state, 0.0), transforms(scheme, state, attention_kind(attention).normalised)],
                                        **timing)
        row[f"rhs_{attention}_ms"] = 1e3 * rhs_time
        row[f"sht_{attention}_ms"] = 1e3 * sht_time
        row[f"ratio_{attention}"] = rhs_time / sht_time
    single, every = one_vs_all(lambda: rhs_seconds(beta, lmax, backend, timing))
    row["sa_1core_ms"], row["sa_all_ms"], row["thread_gain"] = 1e3 * single, 1e3 * every, single / every
    return row


def run_benchmark(beta: float = 9.0, quick: bool = False, lmaxes=None) -> list[dict]:
    lmaxes = lmaxes or (QUICK_LMAXES if quick else LMAXES)
    timing = {"target": 0.1, "repeats": 3} if quick else {"target": 0.5, "repeats": 5}
    backends = ["ducc0"] + (["shtns"] if shtns_available() else [])
    return [measure(lmax, beta, timing, backend) for lmax in lmaxes for backend in backends
            if backend == "ducc0" or lmax >= 21]


def main(argv=None) -> None:
    """Command line: ``python -m meanfield.validation.benchmarks.sphere [--quick] [--beta B]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="lmax = 63, 127, 255 and shorter timings")
    parser.add_argument("--beta", type=float, default=9.0, help="inverse temperature (default 9)")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    apply_threads_argument(args.threads)
    start = time.perf_counter()
    rows = run_benchmark(beta=args.beta, quick=args.quick)
    print(f"S^2 pseudo-spectral benchmark (shtns when installed, its own threading), beta = {args.beta:g}; times per "
          f"call in ms; ratio = rhs / its bare transforms; 1core/all = SA rhs at 1 thread / at every core")
    print(header())
    print(column_table(rows, COLUMNS))
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
