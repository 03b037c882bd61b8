"""Benchmark of the circle pseudo-spectral scheme against baselines timed in the same process.

This is a measurement, not a test: it prints ratios and asserts nothing about speed.

1. **Right-hand side vs its transforms.**  One ``CircleSpectral.rhs`` call does three
   syntheses and one analysis (``solvers/schemes/circle.py``).  Its cost is divided by the
   cost of exactly those four transforms, run through the basis's own FFTW objects
   on the buffers the right-hand side just filled.  A ratio close to 1 means the
   right-hand side costs little beyond its transforms; a large ratio means time goes
   into the pointwise work around them (products, the division, ``max|X|``, the
   allocation of the returned array) or into Python call overhead.  Measured for
   SA and USA: USA does two syntheses and no division, and is compared both with the
   same four-transform baseline (``ratio_usa``, the issue's measure) and with its own
   three transforms (``ratio_usa_own``).  The pointwise work runs in the compiled kernel of
   :mod:`meanfield.solvers.schemes.circle_kernel` where it is built (the header says which path ``rhs_us`` took);
   ``ratio_sa_numpy`` times the numpy path of the same scheme (same bits) for comparison.
2. **Spectral vs direct convolution.**  ``K*rho`` the way the scheme computes it
   (coefficients times ``scheme.conv``, then one synthesis) against the direct
   ``O(N^2)`` trapezoidal quadrature ``(2 pi / N) exp(beta cos(theta_i - theta_j)) @ rho``,
   timed twice: with the kernel matrix formed once outside the timing (matvec only),
   and as a one-off convolution that has to form the kernel (blocked by rows, so
   memory stays bounded; ``cos(a - b)`` via the addition formula, so the ``N^2``
   transcendental work is one ``exp`` per entry).  ``scheme.conv`` is scaled by
   ``exp(-beta)``, so the spectral result times ``exp(beta)`` must agree with the
   direct one to about 1e-13 relative; the largest pointwise relative difference
   is printed.  The direct method is skipped above ``DIRECT_MAX`` points.
3. **Reproducible vs timed FFTW plans.**  The package plans FFTW with FFTW_ESTIMATE so
   that runs repeat bit for bit (``solvers/bases/fourier.py``); FFTW_MEASURE, which times
   candidate algorithms, was used before.  At ``N`` in :data:`PLANNING_SIZES` the SA
   right-hand side and the bare transform pair (one analysis, a copy of the ``N/2 + 1``
   coefficients, one synthesis) are timed with both kinds of plan in this process
   (``*_est/meas`` > 1: the reproducible plan is slower), together with the time to
   plan a basis (one analysis and three synthesis plans, as ``CircleSpectral`` makes).
   ``rhs_rel_diff``: how far the two right-hand sides differ (largest entry, relative to
   the largest): rounding only, the size of the run-to-run differences MEASURE caused.
4. **Scaling.**  The SA right-hand side and its four transforms against ``N`` (the rows of
   part 1), each also per ``N log2 N`` (ns), and the exponents ``p`` of least-squares fits
   ``time ~ N^p`` and ``time / (N log N) ~ N^q`` over the sizes ``N >= SCALING_FIT_FROM``:
   ``q`` near 0 is the ``O(N log N)`` regime; at small ``N`` fixed per-call costs flatten
   the curve (``p`` well below 1), and the cost per ``N log N`` steps up once the data no
   longer fit the fastest cache (measured here between ``N = 4096`` and ``8192``), which is
   why the fit starts above it.

Timings are the best of several runs (``time.perf_counter``), each run long enough
that a measurement takes about ``target`` seconds; the per-call cost is printed in
microseconds.  Many short runs make it likely that one of them ran undisturbed on a
shared machine; the load average before and after is printed with the tables.  Threads: the
setting of :mod:`meanfield.app.threads` (``--threads``, default all cores: BLAS through threadpoolctl,
FFTW threaded from 2^16 points), printed in the header; the scaling table also times the SA
right-hand side at 1 thread and at every core.  A multithreaded matvec on this 2-core machine was
erratic (the same 1024 x 1024 matvec took 0.17 ms or 8 ms from run to run): use ``--threads 1``
for steady direct-quadrature columns.  Run with ``python -m meanfield.validation.benchmarks.circle [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np  # noqa: E402

from meanfield.model import Model  # noqa: E402
from meanfield.app.threads import add_threads_argument, apply_threads_argument, header, one_vs_all  # noqa: E402
from meanfield.solvers.schemes import circle_kernel  # noqa: E402
from meanfield.solvers.bases import fourier
from meanfield.solvers.schemes.circle import CircleSpectral  # noqa: E402

from meanfield.fits import log_log_slope  # noqa: E402

from ..harness import best_times, column_table  # noqa: E402

SIZES = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
QUICK_SIZES = (256, 1024, 4096, 16384, 32768, 65536)
#: Smallest grid of the scaling fits (part 4 of the docstring): above the step in cost per
#: ``N log N`` where the transforms' data leave the fastest cache (between 4096 and 8192 here).
SCALING_FIT_FROM = 8192
#: Grids at which FFTW_ESTIMATE and FFTW_MEASURE plans are compared (part 3 of the docstring).
PLANNING_SIZES = (256, 1024, 4096, 16384)
#: Largest grid for the direct quadrature (its N x N kernel is 0.5 GB at 8192).
DIRECT_MAX = 8192
#: Entries per row block of the one-off direct convolution (512 kB of doubles: stays in cache).
BLOCK_ENTRIES = 1 << 16

COLUMNS = (  # (header, row key, format)
    ("N", "N", "d"),
    ("rhs_us", "rhs_sa_us", ".2f"),
    ("ffts_us", "ffts_us", ".2f"),
    ("ratio_sa", "ratio_sa", ".2f"),
    ("ratio_sa_numpy", "ratio_numpy", ".2f"),
    ("ratio_usa", "ratio_usa", ".2f"),
    ("ratio_usa_own", "ratio_usa_own", ".2f"),
    ("conv_spectral_us", "conv_spectral_us", ".2f"),
    ("conv_direct_matvec_us", "conv_direct_matvec_us", ".1f"),
    ("conv_direct_full_us", "conv_direct_full_us", ".1f"),
    ("speedup_matvec", "speedup_matvec", ".1f"),
    ("speedup_full", "speedup_full", ".1f"),
    ("max_rel_diff", "max_rel_diff", ".2e"),
)
PLANNING_COLUMNS = (
    ("N", "N", "d"),
    ("rhs_meas_us", "rhs_measure_us", ".2f"),
    ("rhs_est_us", "rhs_estimate_us", ".2f"),
    ("rhs_est/meas", "rhs_ratio", ".2f"),
    ("pair_meas_us", "pair_measure_us", ".2f"),
    ("pair_est_us", "pair_estimate_us", ".2f"),
    ("pair_est/meas", "pair_ratio", ".2f"),
    ("plan_meas_ms", "plan_measure_ms", ".1f"),
    ("plan_est_ms", "plan_estimate_ms", ".2f"),
    ("rhs_rel_diff", "rhs_rel_diff", ".1e"),
)

SCALING_COLUMNS = (
    ("N", "N", "d"),
    ("rhs_us", "rhs_sa_us", ".2f"),
    ("ffts_us", "ffts_us", ".2f"),
    ("rhs_ns/NlogN", "rhs_per_nlogn_ns", ".3f"),
    ("ffts_ns/NlogN", "ffts_per_nlogn_ns", ".3f"),
    ("ratio_sa", "ratio_sa", ".2f"),
    ("rhs_1core_us", "rhs_1core_us", ".2f"),
    ("rhs_all_us", "rhs_all_us", ".2f"),
    ("1core/all", "thread_gain", ".2f"),
)


# -- the pieces being timed -----------------------------------------------------------------------
def initial_state(scheme: CircleSpectral) -> np.ndarray:
    """Coefficients of the smooth positive density ``(1 + 0.1 cos 3 theta) / (2 pi)``."""
    theta = scheme.coordinate
    return scheme.state_from_density((1.0 + 0.1 * np.cos(3.0 * theta)) / (2.0 * math.pi))


def transform_baseline(scheme: CircleSpectral, state: np.ndarray):
    """The bare transforms of one right-hand side (SA: three syntheses and one analysis;
    USA: two and one), on the buffers it fills.

    Returns ``(call, preserved)``.  If FFTW's plan overwrites a synthesis input (it
    may for complex-to-real transforms), the call restores the inputs before each
    transform, which slightly overstates the baseline; ``preserved`` says whether
    that was needed (False) or not (True).
    """
    basis = scheme.basis
    slots = range(basis.slots)
    scheme.rhs(state, 0.0)  # fills all four input buffers with the real data
    saved = [basis.synthesis_input(slot).copy() for slot in slots]
    synthesise, analyse = basis.plan_calls()
    calls = (*synthesise, analyse)

    def transforms():  # the plans' own execute calls: no Python wrapper of the basis's around them
        for execute in calls:
            execute()

    transforms()
    if all(np.array_equal(basis.synthesis_input(s), x) for s, x in zip(slots, saved)):
        return transforms, True

    def refill_and_transform():
        for slot, inputs in zip(slots, saved):
            np.copyto(basis.synthesis_input(slot), inputs)
            basis.synthesise(slot)
        basis.analyse()

    return refill_and_transform, False


def spectral_convolution(scheme: CircleSpectral, state: np.ndarray):
    """``exp(-beta) K*rho`` on the grid as the scheme computes it (a view of slot 2)."""
    basis = scheme.basis
    np.multiply(state, scheme.conv, out=basis.synthesis_input(2))
    return basis.synthesise(2)


def kernel_rows(points: np.ndarray, rows: slice, beta: float, out: np.ndarray | None = None) -> np.ndarray:
    """Rows ``rows`` of ``exp(beta cos(theta_i - theta_j))``; ``points`` holds ``(cos, sin)``.

    ``cos(theta_i - theta_j)`` is the inner product of unit vectors (one small matmul),
    then scaled and exponentiated in place.
    """
    block = np.matmul(points[rows], points.T, out=out)
    block *= beta
    return np.exp(block, out=block)


def unit_vectors(theta: np.ndarray) -> np.ndarray:
    """The points ``(cos theta, sin theta)`` as an ``N x 2`` array."""
    return np.column_stack((np.cos(theta), np.sin(theta)))


def kernel_matrix(theta: np.ndarray, beta: float) -> np.ndarray:
    """The full ``N x N`` kernel matrix (formed once, outside the matvec timing)."""
    return kernel_rows(unit_vectors(theta), slice(None), beta)


def direct_convolution(theta: np.ndarray, rho: np.ndarray, beta: float) -> np.ndarray:
    """One-off ``(2 pi / N) exp(beta cos(theta_i - theta_j)) @ rho``, forming the kernel by row blocks."""
    n = len(theta)
    points, rows = unit_vectors(theta), max(1, BLOCK_ENTRIES // n)
    block, result = np.empty((rows, n)), np.empty(n)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        kernel = kernel_rows(points, slice(start, stop), beta, out=block[: stop - start])
        np.matmul(kernel, rho, out=result[start:stop])
    result *= 2.0 * math.pi / n
    return result


def max_relative_difference(approx: np.ndarray, exact: np.ndarray) -> float:
    """``max_i |approx_i - exact_i| / |exact_i|`` (the convolution of a positive density is positive)."""
    return float(np.max(np.abs(approx - exact) / np.abs(exact)))


# -- the benchmark --------------------------------------------------------------------------------
def _rhs_rows(n: int, beta: float, timing: dict) -> dict:
    """Right-hand side (SA, USA) vs its four bare transforms at ``n`` points."""
    sa, usa = (CircleSpectral(Model(attention, beta=beta), n) for attention in ("sa", "usa"))
    sa_numpy = CircleSpectral(Model("sa", beta=beta), n, pointwise="numpy")
    state = initial_state(sa)
    transforms, preserved = transform_baseline(sa, state)
    usa_transforms, usa_preserved = transform_baseline(usa, state)
    rhs_sa, rhs_usa, ffts, ffts_usa, rhs_numpy = best_times(
        [lambda: sa.rhs(state, 0.0), lambda: usa.rhs(state, 0.0), transforms, usa_transforms,
         lambda: sa_numpy.rhs(state, 0.0)], **timing)
    per_nlogn = 1e9 / (n * math.log2(n))

    def rhs_seconds() -> float:  # a scheme built now reads the thread setting in effect
        scheme = CircleSpectral(Model("sa", beta=beta), n)
        return best_times([lambda: scheme.rhs(state, 0.0)], **timing)[0]

    single, every = one_vs_all(rhs_seconds)
    return {"rhs_1core_us": 1e6 * single, "rhs_all_us": 1e6 * every, "thread_gain": single / every,
            "rhs_sa_us": 1e6 * rhs_sa, "rhs_usa_us": 1e6 * rhs_usa, "ffts_us": 1e6 * ffts,
            "ratio_sa": rhs_sa / ffts, "rhs_numpy_us": 1e6 * rhs_numpy, "ratio_numpy": rhs_numpy / ffts,
            "ratio_usa": rhs_usa / ffts, "ratio_usa_own": rhs_usa / ffts_usa,
            "rhs_per_nlogn_ns": per_nlogn * rhs_sa, "ffts_per_nlogn_ns": per_nlogn * ffts,
            "fft_inputs_preserved": preserved and usa_preserved, "scheme": sa, "state": state}


def _convolution_rows(scheme: CircleSpectral, state: np.ndarray, beta: float,
                      timing: dict, direct: bool) -> dict:
    """Spectral convolution vs direct quadrature (matvec only, and including the kernel)."""
    def spectral():
        return spectral_convolution(scheme, state)

    row = dict.fromkeys(("conv_direct_matvec_us", "conv_direct_full_us", "speedup_matvec",
                         "speedup_full", "max_rel_diff"))
    if not direct:
        [seconds] = best_times([spectral], **timing)
        return {"conv_spectral_us": 1e6 * seconds, **row}
    theta, cell = scheme.coordinate, scheme.basis.cell
    rho = scheme.density(state)
    convolved = spectral() * math.exp(beta)
    matrix = kernel_matrix(theta, beta)
    fast, matvec, full = best_times(
        [spectral, lambda: cell * (matrix @ rho), lambda: direct_convolution(theta, rho, beta)], **timing)
    return {"conv_spectral_us": 1e6 * fast, "conv_direct_matvec_us": 1e6 * matvec,
            "conv_direct_full_us": 1e6 * full, "speedup_matvec": matvec / fast, "speedup_full": full / fast,
            "max_rel_diff": max_relative_difference(convolved, direct_convolution(theta, rho, beta))}


def transform_pair(basis: fourier.FourierBasis, state: np.ndarray):
    """One bare analysis and synthesis on ``basis``'s buffers (the synthesis input is refilled
    by copying the analysis output each time, since a complex-to-real plan may overwrite it)."""
    np.copyto(basis.analysis_input(), basis.to_grid(state))

    def pair():
        np.copyto(basis.synthesis_input(), basis.analyse())
        return basis.synthesise()

    return pair


def _planned_basis(n: int, planning: str):
    """A three-slot pyfftw basis planned with ``planning`` and the seconds its planning took."""
    start = time.perf_counter()
    basis = fourier.FourierBasis(n, "pyfftw", slots=3, planning=planning)
    return basis, time.perf_counter() - start


def _planning_rows(n: int, beta: float, timing: dict) -> dict:
    """SA right-hand side and bare transform pair with FFTW_MEASURE vs FFTW_ESTIMATE plans.

    Two schemes that differ only in their basis's plans; the ESTIMATE ones are planned first
    (each plan sets the process's wisdom aside anyway, see :mod:`meanfield.solvers.bases.fourier`).  The
    planning time is that of a separate basis of the scheme's (three synthesis slots).
    """
    bases, plan_seconds, schemes = {}, {}, {}
    for planning in ("estimate", "measure"):
        bases[planning], plan_seconds[planning] = _planned_basis(n, planning)
        schemes[planning] = CircleSpectral(Model("sa", beta=beta), n, backend="pyfftw", planning=planning)
    state = initial_state(schemes["estimate"])
    measured = schemes["measure"].rhs(state, 0.0)
    difference = np.max(np.abs(schemes["estimate"].rhs(state, 0.0) - measured)) / np.max(np.abs(measured))
    calls = [call for planning in ("measure", "estimate")
             for call in (lambda s=schemes[planning]: s.rhs(state, 0.0), transform_pair(bases[planning], state))]
    rhs_meas, pair_meas, rhs_est, pair_est = best_times(calls, **timing)
    return {"N": n, "rhs_measure_us": 1e6 * rhs_meas, "rhs_estimate_us": 1e6 * rhs_est,
            "rhs_ratio": rhs_est / rhs_meas, "pair_measure_us": 1e6 * pair_meas,
            "pair_estimate_us": 1e6 * pair_est, "pair_ratio": pair_est / pair_meas,
            "plan_measure_ms": 1e3 * plan_seconds["measure"], "plan_estimate_ms": 1e3 * plan_seconds["estimate"],
            "rhs_rel_diff": float(difference)}


def scaling_fits(rows: list[dict], fit_from: int = SCALING_FIT_FROM) -> dict:
    """Exponents of the SA right-hand side and its transforms over the rows with ``N >= fit_from``
    (part 4 of the module docstring): ``{"sizes": [...], "rhs": (p, q), "ffts": (p, q)}`` with
    ``time ~ N^p`` and ``time / (N log N) ~ N^q``; ``None`` with fewer than two such rows."""
    upper = [row for row in rows if row["N"] >= fit_from]
    if len(upper) < 2:
        return None
    sizes = [row["N"] for row in upper]
    fits = {"sizes": sizes}
    for name, key in (("rhs", "rhs_sa_us"), ("ffts", "ffts_us")):
        times = [row[key] for row in upper]
        fits[name] = (log_log_slope(sizes, times),
                      log_log_slope(sizes, [t / (n * math.log(n)) for n, t in zip(sizes, times)]))
    return fits


def run_benchmark(sizes=SIZES, beta: float = 9.0, quick: bool = False) -> list[dict]:
    """Measure every size; one dict per ``N`` with the keys of :data:`COLUMNS` (times in µs).

    ``quick`` uses :data:`QUICK_SIZES` (unless ``sizes`` is given explicitly) and shorter
    measurements.  Direct-method entries are ``None`` above :data:`DIRECT_MAX`.  Rows at
    :data:`PLANNING_SIZES` also carry ``"planning"``: the dict of :data:`PLANNING_COLUMNS`
    (when pyfftw is installed).
    """
    if quick and tuple(sizes) == SIZES:
        sizes = QUICK_SIZES
    timing = {"target": 0.06, "repeats": 9} if quick else {"target": 0.3, "repeats": 15}
    rows = []
    for n in sizes:
        row = {"N": n, **_rhs_rows(n, beta, timing)}
        scheme, state = row.pop("scheme"), row.pop("state")
        row.update(_convolution_rows(scheme, state, beta, timing, direct=n <= DIRECT_MAX))
        if n in PLANNING_SIZES and fourier.pyfftw is not None:
            row["planning"] = _planning_rows(n, beta, timing)
        rows.append(row)
    return rows


def format_table(rows: list[dict], columns=None) -> str:
    """An aligned text table of ``columns``; missing entries read 'skipped'.

    Without ``columns``: the benchmark's report, the table of :data:`COLUMNS` (``rhs_us``
    is SA), the scaling table (:data:`SCALING_COLUMNS`) with its fitted exponents and the
    FFTW planning table (:data:`PLANNING_COLUMNS`) of the rows that carry one.
    """
    if columns is None:
        report = format_table(rows, COLUMNS)
        report += ("\n\nScaling (SA): time per call and per N log2 N; ratio_sa = rhs / ffts\n"
                   + format_table(rows, SCALING_COLUMNS))
        fits = scaling_fits(rows)
        if fits is None:
            report += f"\n(no fit: fewer than two sizes N >= {SCALING_FIT_FROM})"
        else:
            sizes = ", ".join(str(n) for n in fits["sizes"])
            for name in ("rhs", "ffts"):
                p, q = fits[name]
                report += (f"\nfit over N = {sizes}: {name:4s} time ~ N^{p:.3f}, "
                           f"time / (N log N) ~ N^{q:+.3f}")
        planning = [row["planning"] for row in rows if "planning" in row]
        if planning:
            report += ("\n\nFFTW plans: FFTW_MEASURE (timed; may differ from run to run) vs FFTW_ESTIMATE "
                       "(the package's; runs repeat bit for bit); rhs = SA right-hand side, pair = analysis + "
                       "synthesis, plan = one analysis and three synthesis plans, rhs_rel_diff = max |rhs_est - rhs_meas| / "
                       "max |rhs_meas|\n"
                       + format_table(planning, PLANNING_COLUMNS))
        return report
    return column_table(rows, columns)


def main(argv=None) -> None:
    """Command line: ``python -m meanfield.validation.benchmarks.circle [--quick] [--beta B]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"N = {', '.join(map(str, QUICK_SIZES))} and shorter timings")
    parser.add_argument("--beta", type=float, default=9.0, help="inverse temperature (default 9)")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    apply_threads_argument(args.threads)
    start, load = time.perf_counter(), os.getloadavg()[0]
    rows = run_benchmark(beta=args.beta, quick=args.quick)
    print(header())
    print(f"circle pseudo-spectral benchmark, beta = {args.beta:g} "
          f"(times per call in µs; ratio = rhs / its 3 syntheses + 1 analysis, "
          f"ratio_usa_own = USA rhs / its 2 syntheses + 1 analysis; speedup = direct / spectral)")
    print(f"pointwise work of rhs_us: {'compiled kernel' if circle_kernel.AVAILABLE else 'numpy (kernel not built)'}"
          f"; ratio_sa_numpy: the numpy path")
    print(format_table(rows))
    rewritten = [row["N"] for row in rows if not row["fft_inputs_preserved"]]
    if rewritten:
        print(f"note: FFTW overwrote synthesis inputs at N = {rewritten}; "
              f"the transform baseline includes restoring them")
    print(f"total {time.perf_counter() - start:.1f} s; load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores (wall-clock timings: "
          f"a load near the core count or above makes them noisy)")


if __name__ == "__main__":
    main()
