"""What a run may ask for: ranges of settings, and sizes checked against memory before allocating.

Every check here raises :class:`~meanfield.errors.InputError` with one line that names the
parameter and the values it may take, *before* anything is allocated or computed: a
``--resolution``, ``--n``, ``--dim`` or ``--save-every`` that would need more memory than the
machine has is refused at once instead of failing minutes later with a ``MemoryError``.

Sizes are estimates of the peak memory of a run: the scheme's work arrays plus the saved
frames, which the run loop keeps in memory until the end.  The per-value byte counts below
were measured with ``tracemalloc`` (peak over setup and the first steps, 2026-11, numpy
allocations; ducc0's own buffers are of the size of one grid) and rounded up about twofold:

==================================  ================================  ==========================
scheme                              measured peak                     used here
==================================  ================================  ==========================
circle spectral / fv / lagrangian   ~250 / ~390 / ~950 B per point    400 / 600 / 2000 B
sphere spectral / lagrangian        ~145 / ~1000 B per grid value     400 / 2500 B
zonal galerkin / fv                 ~75-95 / ~20-32 B x L^2           200 / 64 B x L^2 (+ grid)
particles                           ~150-220 B x n d (+256 B x n)     400 B x n (d + 2)
==================================  ================================  ==========================

A run may use at most half of the physical memory (:func:`memory_budget`), so that the
machine stays usable; a run that fits is not guaranteed to be fast.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from .errors import InputError, require

#: Largest seed: seeds are stored as netCDF int64 attributes.
MAX_SEED = 2 ** 63 - 1
#: Largest ambient dimension d (tokens on S^{d-1} or in R^d).
MAX_DIM = 4096
#: Largest dimension of the Gaussian moment ODEs (``meanfield gaussian``): a step costs ``d^3`` (matrix products);
#: measured to t = 0.05: 1.3 s at d = 256, 5.3 s at 1024, 36 s at 2048 (4096 ran past a minute).
MAX_GAUSSIAN_DIM = 1024
#: Largest ambient dimension of the zonal solvers: beyond it their Gegenbauer normalisations and sphere areas
#: leave double precision (d = 300: a math domain error; measured).  Particles and the theory go to MAX_DIM.
MAX_ZONAL_DIM = 256
#: Most frames a run may save, a bound in time as :func:`check_frames` bounds them in memory: every frame lands a step
#: on its save time and records the scheme's diagnostics, 0.6 ms for a 64-cell finite-volume circle, 0.9 ms for its
#: Lagrangian run and 3.4 ms for 8 particles (measured, 2026-11), so 2e5 frames are 2-11 minutes of bookkeeping alone
#: (``--save-log 1000 --t-final 1e300`` asked for 3e5).
MAX_FRAMES = 2 * 10 ** 5
#: Latest end time: the schemes floor a vanishing rate at 1e-300, so the steps of a field at rest stop near
#: ``cfl x 1e300`` (finite volumes, Lagrangian nodes, particles); a Lagrangian run to 1e308 took 2e8 steps of 5e299.
MAX_T_FINAL = 1e300
#: Longest list of values a sweep may ask for (``--betas``, ``--dims``).
MAX_LIST = 10 ** 4
#: Most modes ``meanfield theory --modes`` prints.
MAX_MODES = 10 ** 6
#: Most mode branches ``theory --branch --modes`` follows (MATH.md §9).
MAX_BRANCH_MODES = 8
#: Highest degree ``meanfield compare --lmax`` sums: S^2 coefficients of token runs, (lmax + 1)(lmax + 2) / 2 per
#: frame, stay within 0.2 GB.
MAX_COMPARE_DEGREE = 4096
#: Largest inverse temperature: scipy's scaled Bessel functions return NaN from beta = 2^30 ~ 1.07e9 (measured),
#: and the band of the kernel, ~ sqrt(2 beta log(1/tol)), is then 2e5 modes.  USA attention stops at 700
#: (:data:`meanfield.model.USA_BETA_MAX`, its time scale exp(beta)).
MAX_BETA = 1e9
#: Largest noise: the decay rates ``-nu l (l + d - 2)`` stay finite for every mode (<= 1e6) and dimension (<= 4096)
#: allowed, with room (at 1e308 they overflowed to -inf and ``theory --json`` printed -Infinity).
MAX_NU = 1e100
#: Largest magnitude of an entry of Q, K, V (particles): ``beta <Qx, Ky>`` and ``|V x|^2`` stay far inside double precision.
MAX_MATRIX_ENTRY = 1e100
#: Physical memory assumed where the operating system does not say.
FALLBACK_MEMORY = 8 * 2 ** 30

#: Saved values per grid value and frame (density, node positions, amplitudes), 8 bytes each.
FRAME_VALUES_PER_GRID_VALUE = 3
#: Particle work bytes per token and coordinate (``n (d + 2)``), and per circle grid point sampled from.
PARTICLE_WORK_BYTES = 400
#: Fixed overhead of any run (interpreter, libraries' tables).
BASE_BYTES = 64 * 2 ** 20


# ------------------------------------------------------------------------------------------ plain ranges
def is_integer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_integer(option: str, value, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; one line naming ``option`` otherwise."""
    allowed = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
    require(is_integer(value) and value >= low and (high is None or value <= high),
            f"{option} must be {allowed} (got {value!r})")
    return int(value)


def check_number(option: str, value, low: float = -math.inf, high: float = math.inf,
                 low_closed: bool = False, high_closed: bool = False) -> float:
    """``value`` as a finite float in the interval (``low``, ``high``) with the given closed ends."""
    interval = f"{'[' if low_closed else '('}{low:g}, {high:g}{']' if high_closed else ')'}"
    number = _finite_within(value, low, high, low_closed, high_closed)
    require(number is not None, f"{option} must be a finite number in {interval} (got {value!r})")
    return number


def _finite_within(value, low: float, high: float, low_closed: bool, high_closed: bool) -> float | None:
    """``value`` as a float when it is a finite real number (not a bool) between the ends, else ``None``."""
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, (bool, np.bool_)):
        return None
    number = float(value)
    inside = (low <= number if low_closed else low < number) and (number <= high if high_closed else number < high)
    return number if math.isfinite(number) and inside else None


# ------------------------------------------------------------------------------------------ the range table
@dataclass(frozen=True)
class Range:
    """The values an option takes: from ``low`` to ``high`` (ends closed or open), integers or finite numbers;
    ``note`` says why a bound is where it is."""

    low: float
    high: float = math.inf
    low_closed: bool = True
    high_closed: bool = True
    integer: bool = False
    note: str = ""

    def text(self) -> str:
        """``"in [0, 1e+09]"``, ``"an integer in [2, 4096]"``, ``"> 0"``: how messages and ``--help`` say it."""
        if self.integer:
            return f"an integer >= {int(self.low)}" if math.isinf(self.high) else \
                f"an integer in [{int(self.low)}, {int(self.high)}]"
        if math.isinf(self.high):
            return f"{'>=' if self.low_closed else '>'} {self.low:g}"
        return f"in {'[' if self.low_closed else '('}{self.low:g}, {self.high:g}{']' if self.high_closed else ')'}"

    def check(self, option: str, value):
        """``value`` (int or float) in range, else one :class:`InputError` line naming ``option``, the range
        (:meth:`text`) and its note."""
        note = f" ({self.note})" if self.note else ""
        if self.integer:
            require(is_integer(value) and self.low <= value <= self.high,
                    f"{option} must be {self.text()}{note} (got {value!r})")
            return int(value)
        number = _finite_within(value, self.low, self.high, self.low_closed, self.high_closed)
        require(number is not None, f"{option} must be a finite number {self.text()}{note} (got {value!r})")
        return number


#: Every numeric option's range, enforced by :func:`check_option` and printed by ``meanfield --help``
#: (:func:`range_table`).  The range is what the code computes correctly (DESIGN.md "Command line").
#: The largest ALiBi slope (MATH.md §8): ``exp(-lambda)`` stays a normal double (and a grid of positions
#: resolves the positional window ``1 / lambda`` only when it is far finer than this anyway).
MAX_ALIBI = 700.0
RANGES = {
    "--beta": Range(0.0, MAX_BETA, note="USA: <= 700; the PDE solvers: > 0"),
    "--nu": Range(0.0, MAX_NU, note="decay rates -nu l (l + d - 2) stay finite"),
    "--dim": Range(2, MAX_DIM, integer=True, note=f"zonal solvers <= {MAX_ZONAL_DIM}; gaussian <= {MAX_GAUSSIAN_DIM}"),
    "--n": Range(1, integer=True, note="and within memory"),
    "--resolution": Range(1, integer=True, note="and within memory; circle: even"),
    "--seed": Range(0, MAX_SEED, integer=True),
    "--t-final": Range(0.0, MAX_T_FINAL, low_closed=False, note="a field at rest steps at most ~cfl x 1e300"),
    "--save-every": Range(0.0, low_closed=False, note=f"at most {MAX_FRAMES:g} frames"),
    "--save-log": Range(1, 1000, integer=True, note="frames per decade"),
    "--rtol": Range(0.0, 1.0, low_closed=False, high_closed=False),
    "--cfl": Range(0.0, 2.0, low_closed=False),
    "--dt-max": Range(0.0, low_closed=False),
    "--collapse-tol": Range(0.0, 0.1, high_closed=False, note="rad; 0: no collapse"),
    "--resolution-tol": Range(0.0, low_closed=False),
    "--positivity-tol": Range(0.0),
    "--r0": Range(1e-300, 1e300, note="the normalisations' rates ~ 1/r0 stay finite"),
    "--alpha": Range(0.0, low_closed=False),
    "--mix-switch": Range(0.0),
    "--eps": Range(0.0, 1.0, low_closed=False, high_closed=False),
    "--modes": Range(1, MAX_MODES, integer=True),
    "--sinkhorn-eps": Range(0.0, low_closed=False),
    "--alibi": Range(0.0, MAX_ALIBI, note="ALiBi slope lambda in mean-field units (MATH.md §8); with --mask causal"),
    "--positions": Range(2, integer=True, note="grid of token positions s of the causal kinetic PDE; and within "
                                               "memory"),
    "--qkv": Range(-MAX_MATRIX_ENTRY, MAX_MATRIX_ENTRY, note="every entry of Q, K, V; a stiff beta |Q| |K| stops "
                                                              "the run on step-size underflow"),
    "--s": Range(0.0, 100.0, note="order of the negative Sobolev norm H^-s of `meanfield compare`"),
    "--lmax": Range(1, MAX_COMPARE_DEGREE, integer=True,
                    note="highest degree (circle: mode) of `meanfield compare`'s H^-s sum; at most the runs' grids"),
}


def check_option(option: str, value):
    """``value`` checked against :data:`RANGES` ``[option]``; returns it as an int or float."""
    return RANGES[option].check(option, value)


def range_table() -> str:
    """The table of :data:`RANGES`, one option a line (the epilog of ``meanfield --help``)."""
    width = max(len(option) for option in RANGES)
    return "\n".join(f"{option:<{width}}  {limits.text()}{f'  ({limits.note})' if limits.note else ''}"
                     for option, limits in RANGES.items())


def check_seed(seed, option: str = "--seed"):
    """A seed: ``None`` (fresh entropy) or an integer in ``[0, 2**63 - 1]`` (stored as int64)."""
    if seed is None:
        return None
    return RANGES["--seed"].check(option, seed)


def check_dim(dim, option: str = "--dim", low: int = 2) -> int:
    """An ambient dimension in ``[low, MAX_DIM]``."""
    return check_integer(option, dim, low, MAX_DIM)


def check_stepper_settings(rtol, cfl, dt_max=None) -> None:
    """The time stepper's settings: ``rtol`` in (0, 1), ``cfl`` in (0, 2] (``None``: the scheme's), ``dt_max`` > 0
    (finite)."""
    check_option("--rtol", rtol)
    if cfl is not None:
        check_option("--cfl", cfl)
    if dt_max is not None:
        check_option("--dt-max", dt_max)


# ------------------------------------------------------------------------------------------ memory
def physical_memory() -> int:
    """Bytes of physical memory (``SC_PHYS_PAGES x SC_PAGE_SIZE``), or :data:`FALLBACK_MEMORY`."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return FALLBACK_MEMORY


def memory_budget() -> int:
    """What one run may use: half of the physical memory."""
    return physical_memory() // 2


def describe_bytes(count: float) -> str:
    for unit, size in (("TB", 2 ** 40), ("GB", 2 ** 30), ("MB", 2 ** 20)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count / 2 ** 10:.3g} kB"


def largest_within(estimate, budget: float, low: int = 1) -> int:
    """The largest integer ``x >= low`` with ``estimate(x) <= budget`` (``estimate`` increasing), or ``low - 1``."""
    if estimate(low) > budget:
        return low - 1
    high = max(low, 1)
    while estimate(2 * high) <= budget:
        high *= 2
    high *= 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if estimate(middle) <= budget else (low, middle)
    return low


def check_fits(option: str, value, estimate, what: str) -> None:
    """Refuse ``value`` of ``option`` when ``estimate(value)`` bytes exceed :func:`memory_budget`."""
    budget = memory_budget()
    needed = estimate(value)
    if needed > budget:
        largest = largest_within(estimate, budget)
        raise InputError(f"{option} {value} needs about {describe_bytes(needed)} of memory for {what}, more than half "
                         f"of this machine's {describe_bytes(physical_memory())}; allowed: {option} <= {largest}")


# ------------------------------------------------------------------------------------------ frames
def frame_count(t_final: float, save_every: float | None, save_log: int | None, t_start: float = 0.0) -> float:
    """How many frames a run saves: every ``save_every`` from ``t_start``, or ``save_log`` per decade from 0.01."""
    if save_log is not None:
        return save_log * _decades(t_final) + 2.0
    return (t_final - t_start) / save_every + 2.0


def _decades(t_final: float) -> float:
    """Decades of a log time axis, from :data:`meanfield.solvers.runs.runloop.LOG_SAVE_START` (0.01) to ``t_final``."""
    return max(0.0, math.log10(max(t_final, 1e-2)) + 2.0)


def _fewer_frames(t_final: float, save_log: int | None, length: float, most: float) -> str:
    """What saves at most ``most`` frames: the largest ``--save-log``, or the smallest ``--save-every``."""
    if save_log is None:
        return f"--save-every >= {length / max(most - 2, 1):.3g}"
    largest = int((most - 2) / max(_decades(t_final), 1e-300))
    return f"--save-log <= {largest}" if largest >= 1 else "a shorter --t-final"


def check_frames(t_final: float, save_every: float | None, save_log: int | None, frame_bytes: float,
                 work_bytes: float, t_start: float = 0.0) -> None:
    """At most :data:`MAX_FRAMES` frames (a bound in time: each costs a step and its record), and the frames and the
    work arrays within :func:`memory_budget`; refused in one line before anything is computed."""
    frames = frame_count(t_final, save_every, save_log, t_start)
    option = "--save-log" if save_log is not None else "--save-every"
    value = save_log if save_log is not None else save_every
    length = t_final - t_start
    require(frames <= MAX_FRAMES, f"{option} {value:g} saves {frames:.3g} frames up to --t-final {t_final:g}; at most "
                                  f"{MAX_FRAMES} frames are allowed, each a step and its record "
                                  f"({_fewer_frames(t_final, save_log, length, MAX_FRAMES)})")
    budget = memory_budget() - work_bytes
    if frames * frame_bytes > budget:
        most = max(budget, 0) / frame_bytes
        raise InputError(f"{option} {value:g} keeps {frames:.3g} frames of {describe_bytes(frame_bytes)} in memory "
                         f"({describe_bytes(frames * frame_bytes)}), more than half of this machine's memory; allowed: "
                         f"at most {max(int(most), 0)} frames ({_fewer_frames(t_final, save_log, length, most)})")


# ------------------------------------------------------------------------------------------ PDE runs
def solve_work_bytes(memory, resolution: int) -> float:
    """Estimated peak bytes of a PDE scheme's work arrays (table in the module docstring), from what the scheme
    class declares (:class:`meanfield.solvers.schemes.contract.Scheme`): ``work_bytes_per_value`` per value of a frame
    (``frame_values(resolution)``) and ``work_bytes_per_resolution_squared``."""
    return (BASE_BYTES + memory.work_bytes_per_value * memory.frame_values(resolution)
            + memory.work_bytes_per_resolution_squared * float(resolution) ** 2)


def check_solve_size(memory, label: str, resolution, dim, t_final: float, save_every: float | None,
                     save_log: int | None = None, t_start: float = 0.0, positions: int = 1) -> None:
    """A PDE run's ``resolution`` and ``dim`` within range and its memory within :func:`memory_budget`;
    ``memory``: the scheme class (:func:`solve_work_bytes`), ``label`` how refusals name it; ``positions``: the
    slices of a causal kinetic run (MATH.md §8), each a density of that resolution."""
    check_dim(dim)
    check_option("--resolution", resolution)
    check_fits("--resolution", int(resolution), lambda r: solve_work_bytes(memory, r), label)
    work = lambda count: BASE_BYTES + count * (solve_work_bytes(memory, int(resolution)) - BASE_BYTES)
    if positions > 1:
        check_fits("--positions", int(positions), work, f"--resolution {resolution} at each position")
    frame = 8.0 * FRAME_VALUES_PER_GRID_VALUE * memory.frame_values(int(resolution)) * positions
    check_frames(t_final, save_every, save_log, frame, work(positions), t_start)


# ------------------------------------------------------------------------------------------ particles
def particle_work_bytes(n: int, dim: int, resolution: int = 0) -> float:
    """Estimated peak bytes of a particle run: the stepper's copies of the ``n x d`` state, the
    row blocks of the interaction, random ``Q, K, V`` and the circle density tokens are drawn from."""
    return BASE_BYTES + PARTICLE_WORK_BYTES * (float(n) * (dim + 2) + resolution) + 64.0 * dim * dim


def check_particle_size(n, dim, t_final: float, save_every: float | None, save_log: int | None = None,
                        resolution: int = 0, t_start: float = 0.0) -> None:
    """A particle run's ``n``, ``dim`` and ``resolution`` within range and memory."""
    check_dim(dim)
    check_option("--n", n)
    check_integer("--resolution", resolution, 0)
    check_fits("--resolution", int(resolution), lambda r: particle_work_bytes(1, dim, r), "the density sampled from")
    check_fits("--n", int(n), lambda count: particle_work_bytes(count, dim, resolution), f"{dim}-dimensional tokens")
    frame = 8.0 * n * (dim + 2)
    check_frames(t_final, save_every, save_log, frame, particle_work_bytes(n, dim, resolution), t_start)


def check_matrix_dim(dim, option: str = "--dim", low: int = 1) -> int:
    """Tokens in R^d with ``d x d`` matrices (Gaussian moment ODEs): range (:data:`MAX_GAUSSIAN_DIM`) and memory."""
    dim = check_integer(option, dim, low, MAX_GAUSSIAN_DIM)
    check_fits(option, dim, lambda d: BASE_BYTES + 400.0 * d * d, "d x d matrices")
    return dim
