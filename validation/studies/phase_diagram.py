"""Study: the clustering phase diagram of the rotf paper's Figure 3, as a resumable sweep.

The quantity (rotf paper §6.3, Fig. 3) is, for SA with ``Q = K = V = I`` (MATH.md §1),
``n`` tokens i.i.d. uniform on S^{d-1} and a threshold ``delta``,

    p(t, beta) = P( <x_1(t), x_2(t)> >= 1 - delta ).

Estimator (as the paper's code): for each realisation the fraction of ordered pairs
``i != j`` with ``<x_i, x_j> >= 1 - delta``, averaged over realisations.  By permutation
equivariance it has the same mean as the indicator of the pair (1, 2), with less variance;
``standard_error`` is the sample standard deviation of the per-realisation fractions over
``sqrt(realisations)``.  The overlaid curve ``t*(beta)`` is the time at which the
equiangular solution ``g`` of MATH.md §1 (orthogonal start, rotf Thm 6.8–6.9) reaches
``1 - delta``: the paper's ``Gamma_{infty, delta}``, which the transition approaches as
``d`` grows.

Work is split in chunks, one per ``(d, beta)``; each chunk integrates all realisations
as one batched :class:`~meanfield.solvers.schemes.particles.ParticleScheme` (``dopri5``, ``rtol = 1e-6``)
whose frames hold only the fractions (a :class:`meanfield.solvers.tracking.trackers.Observer`, ``scheme_frames=False``).  Two exact savings (MATH.md §1):

* ``d > n``: with ``Q = K = V = I`` each velocity is a combination of the tokens, so their
  span (dimension <= n) is invariant and the dynamics is rotation-equivariant; we integrate
  the tokens' coordinates in an orthonormal basis of that span, state ``(R, n, min(d, n))``.
  Same Gram matrix at every time, 4x less work at d = 128, n = 32.
* ``d = 2``: the direct ``O(n^2)`` interaction, cheaper than the Fourier one at ``n = 32``.

Chunks are seeded from ``SeedSequence(seed, spawn_key=(d, beta_index))`` and written
atomically to ``STORE/chunk-d{d}-b{index}.nc``; a re-run skips every stored chunk whose
settings match and refuses one whose settings differ.  Execution: in-process
(``scheduler="synchronous"``), a local ``dask.distributed`` cluster of processes (``None`` or
``"processes"``) or of threads (``"threads"``), or an existing scheduler (its address,
``tcp://host:port``).  Every setting is checked before the store is created, so a refused
sweep leaves nothing behind.  Run: ``meanfield sweep phase-diagram``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import time as _time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from meanfield.errors import require
from meanfield.limits import MAX_DIM, MAX_FRAMES, MAX_LIST, check_fits, check_seed, particle_work_bytes
from meanfield.model import USA_BETA_MAX, Model
from meanfield.sampling import uniform_sphere
from meanfield.app.storage import check_output_folder, netcdf_safe, package_version, write_atomic as write_file

from ..tasks import SYNCHRONOUS, machine_cores, read_attrs, run_tasks, write_compressed

#: The paper's figure: d = 2, 8, 32, 128, t in [0, 30] and beta in [0.1, 9] (its code: 90 betas,
#: 200 times).  We keep its window, with beta step 0.5 and t step 0.5: a chunk (d, beta) costs its
#: dopri5 step count (85-270 here, set by the dynamics, not by the save grid), so the full sweep
#: stays near 20 min on 2 cores; halving the beta step doubles that.
DIMS = (2, 8, 32, 128)
BETAS = tuple(np.round(np.linspace(0.0, 9.0, 19), 12))
T_FINAL = 30.0
N_TIMES = 61
STEPPER, RTOL = "dopri5", 1e-6
#: Test-sized sweep: runs in a few seconds with ``scheduler="synchronous"``.
QUICK = {"dims": (2, 8), "betas": (0.0, 1.0, 4.0), "t_final": 8.0, "n_times": 17, "realisations": 32}
CHUNK_NAME = re.compile(r"^chunk-d(\d+)-b(\d+)\.nc$")
RESULT_NAME = "phase_diagram.nc"
#: Named schedulers: in this process, or a local cluster of threads or of processes (the default).
SCHEDULERS = (SYNCHRONOUS, "threads", "processes")
#: A ``dask.distributed`` scheduler address: ``[protocol://]host:port``.
SCHEDULER_ADDRESS = re.compile(r"^((tcp|tls|ucx|ws|wss|inproc)://)?[A-Za-z0-9_.\-]+(\.[A-Za-z0-9_\-]+)*:\d{1,5}$"
                               r"|^((tcp|tls|ucx|ws|wss|inproc)://)?\[[0-9A-Fa-f:.]+\]:\d{1,5}$")
LOG = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class SweepSettings:
    """What every chunk of one sweep shares; stored in each chunk's attrs and compared on resume."""

    n: int = 32
    delta: float = 1e-3
    realisations: int = 1024
    seed: int = 0
    t_final: float = T_FINAL
    n_times: int = N_TIMES
    stepper: str = STEPPER
    rtol: float = RTOL

    def __post_init__(self):
        _check_int("n", self.n, 2)
        _check_int("realisations", self.realisations, 2)
        check_seed(self.seed)
        _check_int("n_times", self.n_times, 2, MAX_FRAMES)
        require(_is_real(self.delta) and 0 < self.delta < 1, f"--delta must be in (0, 1) (got {self.delta!r})")
        require(_is_real(self.t_final) and math.isfinite(self.t_final) and self.t_final > 0,
                f"--t-final must be a positive number (got {self.t_final!r})")

    def times(self) -> np.ndarray:
        """The saved times ``0, dt, ..., t_final`` (``n_times`` of them)."""
        return np.linspace(0.0, self.t_final, self.n_times)

    def mismatch(self, attrs: dict) -> str | None:
        """The first setting on which ``attrs`` (a stored chunk's) differ, as ``"key = stored, not wanted"``."""
        for key, wanted in asdict(self).items():
            if not _same(attrs.get(key), wanted):
                return _difference(key, attrs.get(key), wanted)
        return None


def _check_int(name: str, value, low: int, high: int | None = None) -> None:
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= low
    ok = ok and (high is None or value <= high)
    allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
    require(ok, f"--{name.replace('_', '-')} must be an integer {allowed} (got {value!r})")


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _difference(key: str, stored, wanted) -> str:
    plain = lambda value: value.item() if isinstance(value, np.generic) else value
    return f"{key} = {plain(stored)!r} (this sweep: {plain(wanted)!r})"


def _same(stored, wanted) -> bool:
    if isinstance(wanted, str) or not _is_real(stored):
        return stored == wanted
    return math.isclose(float(stored), float(wanted), rel_tol=1e-12, abs_tol=1e-300)


def check_grid(dims, betas) -> tuple[tuple[int, ...], np.ndarray]:
    """Validated dimensions (distinct integers in [2, MAX_DIM]) and betas (distinct, finite, >= 0),
    at most :data:`~meanfield.limits.MAX_LIST` of each."""
    dims = tuple(int(d) for d in dims) if all(isinstance(d, (int, np.integer)) for d in dims) else None
    require(bool(dims) and len(dims) <= MAX_LIST and min(dims) >= 2 and max(dims) <= MAX_DIM
            and len(set(dims)) == len(dims), f"--dims must be at most {MAX_LIST} distinct integers in [2, {MAX_DIM}]")
    require(len(betas) <= MAX_LIST, f"--betas must list at most {MAX_LIST} values (got {len(betas)})")
    betas = np.asarray(betas, dtype=float)
    require(betas.ndim == 1 and betas.size > 0 and bool(np.all(np.isfinite(betas))) and betas.min() >= 0
            and np.unique(betas).size == betas.size, "--betas must be distinct finite numbers >= 0")
    require(betas.max() <= USA_BETA_MAX, f"--betas must be <= {USA_BETA_MAX:g}: the equiangular curve drawn over the "
                                         f"diagram needs exp(beta) (got {betas.max():g})")
    return dims, betas


# ------------------------------------------------------------------------------------------ one chunk
def chunk_rng(seed: int, dim: int, index: int) -> np.random.Generator:
    """The generator of chunk ``(dim, beta index)``: independent of scheduling and of other chunks."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(dim, index)))


def span_coordinates(x: np.ndarray) -> np.ndarray:
    """Coordinates of each system's tokens in an orthonormal basis of their span.

    ``x`` has shape ``(R, n, d)`` with ``d > n``; the result ``(R, n, n)`` has the same Gram
    matrices.  With ``Q = K = V = I`` the span is invariant (MATH.md §1), so the dynamics of
    the coordinates is the same particle system with ``d = n``.
    """
    _, triangular = np.linalg.qr(x.transpose(0, 2, 1))       # x_r^T = Q_r R_r, so x_r = R_r^T Q_r^T
    y = triangular.transpose(0, 2, 1)
    return y / np.linalg.norm(y, axis=-1, keepdims=True)


def initial_tokens(settings: SweepSettings, dim: int, index: int) -> np.ndarray:
    """``R`` systems of ``n`` i.i.d. uniform tokens on S^{d-1}, shape ``(R, n, min(d, n))``."""
    rng = chunk_rng(settings.seed, dim, index)
    x = uniform_sphere(settings.realisations * settings.n, dim, rng).reshape(settings.realisations, settings.n, dim)
    return span_coordinates(x) if dim > settings.n else x


def clustered_fraction(x: np.ndarray, delta: float) -> np.ndarray:
    """Per system, the fraction of ordered pairs ``i != j`` with ``<x_i, x_j> >= 1 - delta``."""
    n = x.shape[1]
    close = (x @ x.transpose(0, 2, 1)) >= 1.0 - delta
    close[:, np.arange(n), np.arange(n)] = False
    return close.sum(axis=(1, 2)) / (n * (n - 1))


def simulate_chunk(settings: SweepSettings, dim: int, index: int, beta: float) -> xr.Dataset:
    """One chunk: ``clustered(time, realisation)`` for SA, ``Q = K = V = I`` (MATH.md §1).

    Raises ``KeyboardInterrupt`` if the run loop was interrupted (never store a partial chunk
    as finished); any other early stop is recorded in ``attrs["stop_reason"]`` with NaN after it.
    """
    from meanfield.settings import Attention
    from meanfield.solvers.schemes.particles import ParticleScheme
    from meanfield.solvers.runs.runloop import run
    from meanfield.solvers.tracking.trackers import Observer
    from meanfield.solvers.steppers.steppers import make_stepper

    x = initial_tokens(settings, dim, index)
    model = Model(attention="sa", beta=float(beta), nu=0.0, dim=x.shape[-1])
    # the direct sum on the circle (not its Fourier path); S^2 and above: the default path
    scheme = ParticleScheme(model, settings.n, Attention("sa", interaction="direct" if model.dim == 2 else "auto"))
    observer = Observer(lambda y: {"clustered": clustered_fraction(y, settings.delta)})
    stepper = make_stepper(settings.stepper, scheme, rtol=settings.rtol)
    record = run(scheme, stepper, x, settings.t_final, settings.t_final / (settings.n_times - 1), trackers=[observer],
                 scheme_frames=False)
    if record.stop_reason.startswith("interrupted"):
        raise KeyboardInterrupt(record.stop_reason)
    return _chunk_dataset(settings, dim, index, beta, record)


def _chunk_dataset(settings: SweepSettings, dim: int, index: int, beta: float, record) -> xr.Dataset:
    saved = len(record.times)
    if not np.allclose(record.times, settings.times()[:saved], rtol=1e-12, atol=0):  # pragma: no cover
        raise RuntimeError(f"chunk d = {dim}, beta = {beta:g}: the run loop saved other times than the grid")
    values = np.full((settings.n_times, settings.realisations), np.nan)
    values[:len(record.frames)] = [frame["clustered"] for frame in record.frames]
    attrs = dict(asdict(settings), dim=dim, beta=float(beta), beta_index=index, attention="sa",
                 integrated_dim=int(record.state.shape[-1]), stop_reason=record.stop_reason,
                 t_reached=record.t_reached, steps=record.steps, rejected_steps=record.rejected_steps,
                 wall_time=record.wall_time, package_version=package_version())
    return xr.Dataset({"clustered": (("time", "realisation"), values,
                                     {"long_name": "fraction of ordered pairs i != j with <x_i,x_j> >= 1 - delta"})},
                      coords={"time": settings.times()}, attrs=netcdf_safe(attrs))


# ------------------------------------------------------------------------------------------ theory
def scaled_time_density(g: float, beta: float, n: int) -> float:
    """``exp(-beta) dt/dg`` along the equiangular SA solution (MATH.md §1, orthogonal start).

    From ``g' = 2 exp(beta g)(1-g)(1+(n-1)g) / (exp(beta) + (n-1) exp(beta g))``:
    ``exp(-beta) / g' = (exp(-beta g) + (n-1) exp(-beta)) / (2 (1-g)(1 + (n-1) g))``,
    bounded by ``n / (2 (1-g))`` for every ``beta >= 0``: no overflow.
    """
    return (math.exp(-beta * g) + (n - 1) * math.exp(-beta)) / (2.0 * (1.0 - g) * (1.0 + (n - 1) * g))


def equiangular_time(beta: float, n: int, delta: float) -> float:
    """Time at which the equiangular solution (``g(0) = 0``, MATH.md §1) reaches ``1 - delta``.

    The curve ``beta -> t*(beta)`` is the rotf paper's ``Gamma_{infty, delta}`` (Thm 6.9).
    ``g`` increases strictly on ``[0, 1)``, so ``t*`` solves ``d tau/dg = exp(-beta) / g'(g)``,
    ``tau(0) = 0`` on ``g in [0, 1 - delta]`` (solve_ivp, DOP853, rtol 1e-12), and
    ``t* = exp(beta) tau(1 - delta)``.  (Integrating ``g'`` in ``t`` up to an event loses the
    final O(1) transition in round-off once ``t* ~ exp(beta) / 2n`` passes ~1e15, beta >~ 40.)
    """
    from scipy.integrate import solve_ivp

    beta, n, delta = float(beta), int(n), float(delta)
    require(math.isfinite(beta) and 0 <= beta <= 700, f"beta must be in [0, 700] (got {beta!r})")
    require(n >= 2 and 0 < delta < 1, f"need n >= 2 and 0 < delta < 1 (got n = {n}, delta = {delta!r})")
    solution = solve_ivp(lambda g, tau: [scaled_time_density(g, beta, n)], (0.0, 1.0 - delta), [0.0],
                         method="DOP853", rtol=1e-12, atol=1e-16)
    if solution.status != 0:  # pragma: no cover - the integrand is smooth, positive and bounded
        raise RuntimeError(f"equiangular_time(beta = {beta:g}): {solution.message}")
    return math.exp(beta) * float(solution.y[0, -1])


# ------------------------------------------------------------------------------------------ the store
def chunk_path(store, dim: int, index: int) -> Path:
    return Path(store) / f"chunk-d{dim}-b{index}.nc"


def stored_chunks(store, settings: SweepSettings, dims, betas) -> set[tuple[int, int]]:
    """``(d, index)`` of every chunk of this sweep already in ``store``; refuse mismatched settings.

    Chunk files of other ``d`` or indices (e.g. a larger beta grid) are left alone; a chunk
    whose settings, ``d`` or ``beta`` differ from this sweep's raises a one-line ``InputError``.
    """
    found = set()
    for path in sorted(Path(store).glob("chunk-d*-b*.nc")):
        match = CHUNK_NAME.match(path.name)
        dim, index = (int(match.group(1)), int(match.group(2))) if match else (None, None)
        if dim not in dims or not 0 <= index < len(betas):
            continue
        attrs = read_attrs(path, "phase-diagram chunk")
        problem = settings.mismatch(attrs) or _grid_mismatch(attrs, dim, betas[index])
        require(problem is None, f"{path}: stored with {problem}; use another store or the same settings")
        found.add((dim, index))
    return found


def _grid_mismatch(attrs: dict, dim: int, beta: float) -> str | None:
    for key, wanted in (("dim", dim), ("beta", beta)):
        if not _same(attrs.get(key), wanted):
            return _difference(key, attrs.get(key), wanted)
    return None


# ------------------------------------------------------------------------------------------ execution
def check_scheduler(scheduler):
    """``None``, one of :data:`SCHEDULERS`, or a scheduler address ``[tcp://]host:port``."""
    ok = scheduler is None or (isinstance(scheduler, str)
                               and (scheduler in SCHEDULERS or SCHEDULER_ADDRESS.match(scheduler) is not None))
    require(ok, f"--scheduler must be one of {', '.join(SCHEDULERS)} or a Dask scheduler address such as "
                f"tcp://host:8786 (got {scheduler!r})")
    return scheduler


def check_chunk_memory(settings: SweepSettings, dims, scheduler) -> None:
    """One chunk per worker at a time: ``realisations x n`` tokens of dimension ``min(d, n)`` each."""
    workers = 1 if scheduler == SYNCHRONOUS else machine_cores()
    coordinates = min(max(dims), settings.n)
    check_fits("--realisations", settings.realisations,
               lambda r: workers * (particle_work_bytes(r * settings.n, coordinates)
                                    + 8.0 * settings.n_times * r), f"{workers} chunks of {settings.n} tokens")


def compute_chunks(jobs: list, settings: SweepSettings, store, scheduler=None, progress: bool = True) -> int:
    """Run ``jobs`` (``(d, index, beta)`` triples) and write each chunk as it completes.

    ``scheduler``: ``"synchronous"`` (in this process, no Dask), ``None`` or ``"processes"`` (a local
    cluster of one single-threaded worker process per core), ``"threads"`` or a scheduler address.  Returns the number of
    chunks written.  A chunk that raises does not stop the others: they are computed and saved,
    then the first exception is raised.  On Ctrl-C the chunks written so far stay in ``store``.
    """
    from meanfield.app.progress import progress_bar

    with progress_bar(len(jobs), enabled=progress, unit="chunk", desc="phase diagram") as bar:
        def save(args, dataset: xr.Dataset) -> None:
            path = write_compressed(dataset, chunk_path(store, int(dataset.attrs["dim"]),
                                                        int(dataset.attrs["beta_index"])))
            if dataset.attrs["stop_reason"] != "completed":
                LOG.warning("%s stopped early: %s", path.name, dataset.attrs["stop_reason"])
            bar.update()

        run_tasks(simulate_chunk, [(settings, dim, index, beta) for dim, index, beta in jobs], save, scheduler,
                  keep_going=True)
    return len(jobs)


# ------------------------------------------------------------------------------------------ merge
def chunk_summary(dataset: xr.Dataset) -> dict:
    """Probability, its standard error (over realisations) and run facts of one chunk."""
    fractions = dataset["clustered"].values
    return {"probability": fractions.mean(axis=1),
            "standard_error": fractions.std(axis=1, ddof=1) / math.sqrt(fractions.shape[1]),
            "stop_reason": str(dataset.attrs["stop_reason"]), "steps": int(dataset.attrs["steps"]),
            "wall_time": float(dataset.attrs["wall_time"])}


def _load_summary(path: Path) -> dict:
    with xr.open_dataset(path) as handle:
        return chunk_summary(handle.load())


def merge_chunks(store, settings: SweepSettings, dims, betas) -> xr.Dataset:
    """All chunks of the sweep as ``probability(dim, beta, time)`` and ``standard_error(...)``,
    with ``stop_reason``, ``steps``, ``wall_time`` per chunk and ``equiangular_time(beta)``."""
    rows = [[_load_summary(chunk_path(store, dim, index)) for index in range(len(betas))] for dim in dims]
    stack = lambda key: np.array([[cell[key] for cell in row] for row in rows])
    variables = {
        "probability": (("dim", "beta", "time"), stack("probability"),
                        {"long_name": "P(<x_1(t), x_2(t)> >= 1 - delta), mean over realisations of the "
                                      "fraction of ordered pairs i != j with <x_i, x_j> >= 1 - delta"}),
        "standard_error": (("dim", "beta", "time"), stack("standard_error"),
                           {"long_name": "standard error of probability (std of the per-realisation "
                                         "fractions / sqrt(realisations))"}),
        "stop_reason": (("dim", "beta"), stack("stop_reason").astype(object)),
        "steps": (("dim", "beta"), stack("steps"), {"long_name": "accepted dopri5 steps"}),
        "wall_time": (("dim", "beta"), stack("wall_time"), {"long_name": "chunk wall time", "units": "s"}),
        "equiangular_time": (("beta",), np.array([equiangular_time(b, settings.n, settings.delta) for b in betas]),
                             {"long_name": "t*(beta): equiangular solution reaches 1 - delta (rotf Thm 6.9, "
                                           "Gamma_{infty,delta}; MATH.md section 1)"}),
    }
    return xr.Dataset(variables, coords={"dim": list(dims), "beta": np.asarray(betas), "time": settings.times()})


# ------------------------------------------------------------------------------------------ the sweep
def run_sweep(store, dims=DIMS, betas=BETAS, t_final: float = T_FINAL, n_times: int = N_TIMES,
              realisations: int = 1024, n: int = 32, delta: float = 1e-3, seed: int = 0,
              scheduler=None, progress: bool = True) -> xr.Dataset:
    """The phase diagram of rotf Fig. 3 (module docstring), resumable; written to ``store/phase_diagram.nc``.

    Computes only the chunks missing from ``store`` (``attrs["computed_chunks"]``; the rest,
    ``attrs["reused_chunks"]``, are read back).  ``scheduler``: ``None`` (local Dask cluster),
    ``"synchronous"`` (this process) or a ``dask.distributed`` scheduler address.
    """
    settings = SweepSettings(n=n, delta=delta, realisations=realisations, seed=seed, t_final=t_final,
                             n_times=n_times)
    dims, betas = check_grid(dims, betas)
    check_scheduler(scheduler)
    check_chunk_memory(settings, dims, scheduler)
    store = check_output_folder(store, "--store")
    with _new_store(store):
        done = stored_chunks(store, settings, dims, betas)
        jobs = [(d, i, float(b)) for d in sorted(dims, reverse=True) for i, b in enumerate(betas)
                if (d, i) not in done]
        start = _time.perf_counter()
        computed = compute_chunks(jobs, settings, store, scheduler, progress)
    dataset = merge_chunks(store, settings, dims, betas)
    dataset.attrs = netcdf_safe(dict(
        asdict(settings), study="phase-diagram", attention="sa", qkv="identity", init="uniform",
        figure="rotf paper Fig. 3", scheduler=scheduler or "local", computed_chunks=computed,
        reused_chunks=len(done), incomplete_chunks=int(np.sum(dataset["stop_reason"].values != "completed")),
        sweep_wall_time=_time.perf_counter() - start, package_version=package_version()))
    write_compressed(dataset, store / RESULT_NAME)
    return dataset


@contextlib.contextmanager
def _new_store(store: Path):
    """Create ``store`` if needed; remove it again if this sweep created it and left it empty."""
    created = not store.exists()
    store.mkdir(parents=True, exist_ok=True)
    try:
        yield store
    except BaseException:
        if created and not any(store.iterdir()):
            store.rmdir()
        raise


# ------------------------------------------------------------------------------------------ summary
def crossing_times(dataset: xr.Dataset, level: float = 0.5) -> xr.DataArray:
    """``t_level(dim, beta)``: first time ``probability`` reaches ``level`` (linear interpolation
    between saved times; NaN if never).  For large ``d`` it approaches ``equiangular_time`` (rotf Thm 6.9)."""
    p, t = dataset["probability"].values, dataset["time"].values
    above = p >= level
    k = np.clip(above.argmax(axis=-1), 1, t.size - 1)[..., None]
    p0, p1 = np.take_along_axis(p, k - 1, -1)[..., 0], np.take_along_axis(p, k, -1)[..., 0]
    t0, t1 = t[k[..., 0] - 1], t[k[..., 0]]
    times = np.where(p0 >= level, t0, t0 + (level - p0) / np.where(p1 > p0, p1 - p0, 1.0) * (t1 - t0))
    return xr.DataArray(np.where(above.any(axis=-1), times, np.nan), dims=("dim", "beta"),
                        coords={"dim": dataset["dim"], "beta": dataset["beta"]}, name=f"t_{level:g}")


def format_summary(dataset: xr.Dataset, level: float = 0.5) -> str:
    """One line per beta: the equiangular time ``t*`` and, per ``d``, the time ``probability`` reaches ``level``."""
    crossing = crossing_times(dataset, level)
    dims = [int(d) for d in dataset["dim"].values]
    lines = [f"{'beta':>6} {'t*(beta)':>10} " + " ".join(f"{f't_{level:g}(d={d})':>14}" for d in dims)]
    for j, beta in enumerate(dataset["beta"].values):
        cells = " ".join(f"{crossing.values[i, j]:>14.3f}" for i in range(len(dims)))
        lines.append(f"{beta:>6g} {float(dataset['equiangular_time'].values[j]):>10.4g} {cells}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ the figure
def _realisations_label(count: int) -> str:
    power = int(round(math.log2(count)))
    return f"$2^{{{power}}}$" if 2 ** power == count else f"{count}"


def _equiangular_curve(dataset, points: int = 200):
    betas = np.linspace(float(dataset["beta"].min()), float(dataset["beta"].max()), points)
    times = np.array([equiangular_time(b, int(dataset.attrs["n"]), float(dataset.attrs["delta"])) for b in betas])
    return times, betas


def _panel(ax, dataset, dim, curve):
    from matplotlib import patheffects

    probability = dataset["probability"].sel(dim=dim).values
    mesh = ax.pcolormesh(dataset["time"].values, dataset["beta"].values, probability, shading="nearest",
                         cmap="viridis", vmin=0.0, vmax=1.0, rasterized=True)
    ax.plot(*curve, color="red", lw=2.0, label=r"$\Gamma_{\infty,\delta}$: equiangular $t^*(\beta)$",
            path_effects=[patheffects.withStroke(linewidth=3.5, foreground="white")])
    ax.set_xlim(float(dataset["time"].min()), float(dataset["time"].max()))
    low, high = float(dataset["beta"].min()), float(dataset["beta"].max())
    if high > low:   # one beta: matplotlib's own margins around the single row
        ax.set_ylim(low, high)
    ax.set_title(f"$d = {dim}$")
    ax.set_xlabel("time $t$")
    return mesh


def plot_phase_diagram(dataset: xr.Dataset, path=None):
    """One panel per ``d``: ``probability`` over (t, beta), the equiangular curve in red; saved to ``path``."""
    from matplotlib.figure import Figure

    from meanfield.plotting.style import DPI

    dims = [int(d) for d in dataset["dim"].values]
    fig = Figure(figsize=(max(3.6 * len(dims) + 1.2, 6.4), 4.4), layout="constrained")   # room for the title
    axes = np.atleast_1d(fig.subplots(1, len(dims), sharey=True))
    curve = _equiangular_curve(dataset)
    meshes = [_panel(ax, dataset, dim, curve) for ax, dim in zip(axes, dims)]
    axes[0].set_ylabel(r"inverse temperature $\beta$")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", fontsize="small",
               frameon=False)   # under all panels: it covers no part of a heat map
    fig.colorbar(meshes[-1], ax=list(axes), label=r"$\mathbb{P}(\langle x_1(t), x_2(t)\rangle \geq 1-\delta)$",
                 pad=0.01)
    attrs = dataset.attrs
    fig.suptitle(f"SA, $Q = K = V = I$:  $n = {int(attrs['n'])}$,  $\\delta = {float(attrs['delta']):g}$,  "
                 f"{_realisations_label(int(attrs['realisations']))} realisations per $\\beta$")
    if path is not None:
        write_file(path, lambda temporary: fig.savefig(temporary, dpi=DPI))
    return fig
