"""One thread setting for BLAS, ducc0 and FFTW (DESIGN.md "Threads").

``meanfield --threads N ...`` and a script's ``use_threads(N)`` / ``set_threads(N)`` set the same
number, by default every core this process may run on (:func:`available_cores`).  It is applied

* to BLAS at once, through threadpoolctl (``threadpool_limits(N, user_api="blas")``): this works
  after numpy is loaded, unlike ``OPENBLAS_NUM_THREADS``, and :func:`blas_threads` reports the
  number threadpoolctl reads back from the loaded libraries, i.e. the one in effect;
* to ducc0 and FFTW when a scheme is *constructed*: the schemes read :func:`ducc0_threads` and
  :func:`fftw_threads` in ``__init__`` (so construct under the setting you want).

Runs repeat bit for bit at the same thread count.  Whether they also do at another count depends on
the library (measured on this machine; checked in tests/meanfield/test_threads.py):

* BLAS (OpenBLAS): *not* bitwise across counts.  The threads split the output into different tiles,
  and edge tiles round differently from full ones: ``X @ Y.T`` (n x 3 by 3 x n) differs by 1 ulp at
  n = 500 and 1500 between 1 and 2 threads (equal at 1000, 2000, 4000), ``exp(X Y^T) @ X`` in the
  last bits at n = 1000 .. 2000; long level-1/2 reductions (``w @ v``, ``X.T @ w`` over more than about 1e4 terms) are
  split across threads too.  Runs whose right-hand side goes through BLAS (particles, Lagrangian nodes
  on the circle) record ``bit_reproducible_across_threads = 0``; ``--threads 1`` makes them comparable;
* ducc0 ``sht.synthesis_2d`` / ``analysis_2d`` (spin 0 and 1, lmax 63..255): bitwise equal at every
  count: :func:`ducc0_threads`;
* FFTW (pyfftw, ``FFTW_ESTIMATE`` plans, N = 2^14 .. 2^20): bitwise equal at every count, but threads
  cost more than they save below :data:`FFTW_THREADED_MIN` points: :func:`fftw_threads` gives
  1 thread there;
* ducc0's non-uniform transforms: ``adjoint_synthesis_general`` and ``nufft.nu2u`` (spreading)
  add thread-local buffers in the order the threads finish, so at 2 threads they do not even repeat
  run to run (6/30 and 28/30 repeats differed); ``synthesis_general`` repeats, but its result differs
  between 1 and 2 threads by rounding (3e-14).  These run on :data:`NONUNIFORM_THREADS` = 1 thread.

:func:`thread_attrs` is what a run records (``threads``, ``blas_threads``,
``bit_reproducible_across_threads``).  :func:`header` and :func:`one_vs_all` serve the benchmarks
(``validation/benchmarks/*.py``): the thread counts in effect, and a timing at 1 thread and at all cores;
:func:`add_threads_argument` / :func:`apply_threads_argument` give a script the CLI's ``--threads``.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Callable

from threadpoolctl import ThreadpoolController

from ..errors import require

#: FFTW plans get threads from this many points on (below it one thread is faster here:
#: N = 16384 r2c + c2r 0.11 ms on 1 thread, 0.3-0.9 ms on 2; N = 65536 r2c 0.16-0.22 ms vs 0.14-0.15 ms).
FFTW_THREADED_MIN = 2 ** 16

#: Threads of ducc0's non-uniform transforms (spreading is not repeatable on more; see above).
NONUNIFORM_THREADS = 1

_setting: int | None = None       # None: every core (nothing set yet)
_blas_limit = None                # the threadpoolctl limiter of the current setting


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def check_threads(threads) -> int:
    """``threads`` as an int in ``[1, available_cores()]`` (one-line :class:`InputError` otherwise)."""
    cores = available_cores()
    require(isinstance(threads, int) and not isinstance(threads, bool) and 1 <= threads <= cores,
            f"--threads must be an integer in [1, {cores}] (the cores available; got {threads!r})")
    return threads


def _blas() -> ThreadpoolController:
    """The BLAS pools loaded now; scipy's own OpenBLAS is loaded first, so that it is limited too."""
    import scipy.linalg  # noqa: F401

    return ThreadpoolController().select(user_api="blas")


def set_threads(threads: int | None = None) -> int:
    """Use ``threads`` threads (``None``: every core) from now on; returns the number set.

    BLAS is limited at once; ducc0 and FFTW take the number when the next scheme is constructed."""
    global _setting, _blas_limit
    threads = available_cores() if threads is None else check_threads(threads)
    if _blas_limit is not None:
        _blas_limit.restore_original_limits()
    _blas_limit = _blas().limit(limits=threads)
    _setting = threads
    return threads


@contextlib.contextmanager
def use_threads(threads: int | None = None):
    """``with use_threads(n):`` the setting of :func:`set_threads` inside the block, restored after it."""
    global _setting, _blas_limit
    saved_setting, saved_limit = _setting, _blas_limit
    _blas_limit = None
    try:
        yield set_threads(threads)
    finally:
        if _blas_limit is not None:
            _blas_limit.restore_original_limits()
        _setting, _blas_limit = saved_setting, saved_limit


def thread_count() -> int:
    """The thread setting in effect (every core until :func:`set_threads` says otherwise)."""
    return available_cores() if _setting is None else _setting


def blas_threads() -> int:
    """Threads of the loaded BLAS libraries as threadpoolctl reads them back (the largest, if several)."""
    pools = [pool.num_threads for pool in _blas().lib_controllers]
    return max(pools, default=1)


def ducc0_threads() -> int:
    """``nthreads`` for ducc0's grid transforms (``sht.synthesis_2d``, ``analysis_2d``; bitwise at every count)."""
    return thread_count()


def fftw_threads(size: int) -> int:
    """``threads`` for a pyfftw plan of ``size`` points: the setting from :data:`FFTW_THREADED_MIN` on, else 1."""
    return thread_count() if size >= FFTW_THREADED_MIN else 1


def thread_attrs(uses_blas: bool) -> dict:
    """Run attributes: the thread setting, BLAS threads in effect, and whether the result is the same bit
    for bit at any thread count: yes unless the right-hand side goes through BLAS (``uses_blas``), whose
    threaded results change with the count (module docstring).  A scheme says so in its class attribute
    ``uses_blas`` (``False`` on the schemes checked bitwise; a scheme without it is taken to use BLAS)."""
    return {"threads": thread_count(), "blas_threads": blas_threads(),
            "bit_reproducible_across_threads": int(not uses_blas)}


def header() -> str:
    """One line for a benchmark: the threads each library actually uses."""
    n = thread_count()
    return (f"threads: {n} of {available_cores()} cores (BLAS {blas_threads()} via threadpoolctl; ducc0 grid "
            f"transforms {ducc0_threads()}; FFTW {fftw_threads(FFTW_THREADED_MIN)} from N = {FFTW_THREADED_MIN}, "
            f"else 1; ducc0 non-uniform {NONUNIFORM_THREADS})")


def one_vs_all(measure: Callable[[], float]) -> tuple[float, float]:
    """``measure()`` (seconds; build schemes inside it, they read the setting) at 1 thread and at every core."""
    with use_threads(1):
        single = measure()
    with use_threads(None):
        every = measure()
    return single, every


def wall_time(call: Callable[[], object], repeats: int = 3) -> float:
    """Best of ``repeats`` wall times of ``call()`` in seconds (for :func:`one_vs_all`)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def add_threads_argument(parser) -> None:
    """``--threads N`` on a script's argparse ``parser``, spelled and checked as ``meanfield --threads``."""
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for BLAS, ducc0 and FFTW in [1, cores] (default: the current setting, "
                             "all cores unless `meanfield --threads` or set_threads chose another)")


def apply_threads_argument(threads: int | None) -> int:
    """Set a script's ``--threads`` when given (else keep the setting, e.g. the CLI's); the count in effect."""
    if threads is not None:
        set_threads(threads)
    return thread_count()
