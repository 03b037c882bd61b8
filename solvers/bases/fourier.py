"""The Fourier basis of the circle: it owns its transforms (MATH.md §2.1 normalisation).

Coefficients follow MATH.md §2.1, ``rho_hat_k = (1/2 pi) int rho(t) exp(-i k t) dt``,
stored for ``k = 0 .. N/2`` (real data, Hermitian symmetry).  Transforms use
pyfftw ``FFTW`` objects planned once per grid with aligned, preallocated
buffers (the fastest here, see DESIGN.md); scipy.fft is the fallback when
pyfftw is missing.  Several independent synthesis buffers can be requested so
that a right-hand side can hold several grid fields at once without copying.

Plans are made with FFTW_ESTIMATE, so that the same run repeats bit for bit.
FFTW_MEASURE times candidate algorithms and keeps the fastest; which one wins depends
on the machine's load, and the candidates round differently in the last bits (runs of
one command differed by up to 1.8e-13).  FFTW_ESTIMATE picks from a cost model, so
every process on one machine makes the same plans.  A plan may also take the algorithm
recorded in the process's FFTW *wisdom* for the same size by a more thorough planner
(an ESTIMATE plan made after any MEASURE plan of that size in the same process reuses
the measured algorithm), so the wisdom is set aside while planning and restored after.
The cost (a slower right-hand side at some sizes, far cheaper planning) is measured
by ``meanfield validate bench-circle``.
"""

from __future__ import annotations

import contextlib
import math
import sys

import numpy as np
import scipy.fft

from meanfield import fourier_series


def _import_pyfftw():
    """pyfftw without its Dask interface: ``pyfftw.interfaces`` imports ``dask.array`` when Dask is installed (0.33 s
    of every circle run's start, 0.4 s with Dask itself), and the package plans its own FFTW objects, never that
    interface.  Dask is kept out only while pyfftw loads, and only if nothing imported it before (a sweep on Dask
    keeps its modules); ``None`` when pyfftw is missing."""
    keep_out = "dask" not in sys.modules
    if keep_out:
        sys.modules["dask"] = None          # an import of it raises ImportError, which pyfftw expects
    try:
        import pyfftw
    except ImportError:  # pragma: no cover - exercised by whichever backend is installed
        return None
    finally:
        if keep_out and sys.modules.get("dask", False) is None:
            del sys.modules["dask"]
    return pyfftw


pyfftw = _import_pyfftw()

#: FFTW flags of each planning mode: ``"estimate"`` (the default: the same plans in every
#: run) or ``"measure"`` (timed, may differ from run to run: for benchmarks only).
PLANNING = {"estimate": ("FFTW_ESTIMATE",), "measure": ("FFTW_MEASURE",)}


class _ScipyTransform:
    """Fallback with the same interface as a pyfftw FFTW object."""

    def __init__(self, n: int, direction: str):
        self.n, self.direction = n, direction
        if direction == "forward":
            self.input_array = np.empty(n)
            self.output_array = np.empty(n // 2 + 1, dtype=complex)
        else:
            self.input_array = np.empty(n // 2 + 1, dtype=complex)
            self.output_array = np.empty(n)

    def execute(self):
        if self.direction == "forward":
            self.output_array[:] = scipy.fft.rfft(self.input_array)
        else:
            self.output_array[:] = scipy.fft.irfft(self.input_array, self.n, norm="forward")


@contextlib.contextmanager
def _wisdom_set_aside(active: bool):
    """Plan inside this block without the process's FFTW wisdom, which is restored afterwards.

    Without it, an FFTW_ESTIMATE plan reuses an algorithm measured earlier in the process
    for the same size (FFTW lets a plan use wisdom from a more thorough planner), so the
    plan would depend on what ran before (module docstring).
    """
    if not active:
        yield
        return
    saved = pyfftw.export_wisdom()
    pyfftw.forget_wisdom()
    try:
        yield
    finally:
        pyfftw.forget_wisdom()
        pyfftw.import_wisdom(saved)


def _make_transform(n: int, direction: str, backend: str, planning: str = "estimate"):
    if backend == "scipy":
        return _ScipyTransform(n, direction)
    real = pyfftw.empty_aligned(n, dtype="float64")
    spec = pyfftw.empty_aligned(n // 2 + 1, dtype="complex128")
    if direction == "forward":
        return pyfftw.FFTW(real, spec, direction="FFTW_FORWARD", flags=PLANNING[planning])
    return pyfftw.FFTW(spec, real, direction="FFTW_BACKWARD", flags=PLANNING[planning])


class FourierBasis:
    """Equispaced grid ``theta_j = 2 pi j / N`` and its real Fourier transforms.

    ``to_grid(coeffs, slot)`` synthesises ``sum_k rho_hat_k exp(i k theta)`` into the
    grid buffer ``slot`` and returns it (a view owned by the basis: copy it to keep it);
    ``to_coeffs(grid)`` analyses into a returned view of the spectral buffer.
    ``planning`` (pyfftw only): ``"estimate"`` (reproducible, the default) or ``"measure"``
    (:data:`PLANNING`; timed plans that may differ between runs, for benchmarks).
    """

    def __init__(self, n: int, backend: str | None = None, slots: int = 1, planning: str = "estimate"):
        if backend is None:
            backend = "pyfftw" if pyfftw is not None else "scipy"
        if backend not in ("pyfftw", "scipy") or (backend == "pyfftw" and pyfftw is None):
            raise ValueError(f"FFT backend must be 'pyfftw' (if installed) or 'scipy' (got {backend!r})")
        if planning not in PLANNING:
            raise ValueError(f"FFTW planning must be one of {', '.join(PLANNING)} (got {planning!r})")
        self.n, self.backend, self.planning, self.slots = n, backend, planning, slots
        self.theta = 2.0 * math.pi * np.arange(n) / n
        self.wavenumbers = np.arange(n // 2 + 1)
        #: 2/3-rule dealiasing: modes ``|k| <= kmax`` survive a quadratic product unaliased.
        self.kmax = fourier_series.dealiased_band(n)
        self.dealias = (self.wavenumbers <= self.kmax).astype(float)
        with _wisdom_set_aside(backend == "pyfftw" and planning == "estimate"):
            self._forward = _make_transform(n, "forward", backend, planning)
            self._backward = [_make_transform(n, "backward", backend, planning) for _ in range(slots)]
        self.cell = 2.0 * math.pi / n
        #: how often each stored coefficient counts in the full series (the energy's quadratic form)
        self.multiplicity = fourier_series.multiplicity(n // 2 + 1, n)

    # -- transforms --------------------------------------------------------------------------
    # -- the grid a density lives on (initial data, cells, band) ----------------------------------------------
    @property
    def band(self) -> int:
        """The largest Fourier mode the grid keeps unaliased (``kmax``)."""
        return int(self.kmax)

    #: the names of :meth:`grid_points`, in order
    point_names = ("theta",)

    def grid_points(self) -> tuple:
        """The grid's coordinates, as a user's callable receives them: ``(theta,)``."""
        return (self.theta,)

    def function_density(self, function, label: str) -> np.ndarray:
        """A user's callable ``f(theta)`` at the grid points, checked as :meth:`check_density`."""
        from meanfield.initial.sources import checked_function_values

        return checked_function_values(function, label, self.grid_points(),
                                       lambda values: self.check_density(values, label))

    def cells(self) -> tuple:
        """``(faces, volumes, weight, period)``: the ``N`` equal arcs centred on the grid points (periodic, measure
        ``dtheta``)."""
        h = 2 * math.pi / self.n
        faces = self.theta[0] - h / 2 + h * np.arange(self.n + 1)
        return faces, np.full(self.n, h), None, 2 * math.pi

    def text_density(self, spec: str, seed=None) -> np.ndarray:
        """The density of a text spec (``--init``) at the grid points (:mod:`meanfield.initial.circle`)."""
        from meanfield.initial.circle import circle_density

        return circle_density(spec, self.n, seed)

    def check_density(self, density: np.ndarray, label: str) -> None:
        """Refuse, in one line naming ``label``, a density the grid does not hold (:mod:`meanfield.initial.circle`)."""
        from meanfield.initial.circle import check_density

        check_density(density, label, self.n)

    def density_from(self, source) -> np.ndarray:
        """A :class:`meanfield.initial.sources.GridSource` on another circle grid, at these grid points."""
        from meanfield.initial.circle import circle_values

        return circle_values(source.coords[0], source.values, self.n)

    def synthesis_input(self, slot: int = 0) -> np.ndarray:
        """The spectral input buffer of synthesis slot ``slot`` (fill it, then :meth:`synthesise`)."""
        return self._backward[slot].input_array

    def synthesis_output(self, slot: int = 0) -> np.ndarray:
        """The grid buffer of synthesis slot ``slot`` (what :meth:`synthesise` fills and returns)."""
        return self._backward[slot].output_array

    def synthesise_all(self) -> None:
        """Run the synthesis of every slot on its filled input buffer."""
        for transform in self._backward:
            transform.execute()

    def synthesise(self, slot: int = 0) -> np.ndarray:
        """Run synthesis on the filled input buffer of ``slot``; return its grid buffer."""
        transform = self._backward[slot]
        transform.execute()
        return transform.output_array

    def to_grid(self, coeffs: np.ndarray, slot: int = 0) -> np.ndarray:
        """``rho(theta_j) = sum_k rho_hat_k exp(i k theta_j)`` (a view of slot ``slot``)."""
        self._backward[slot].input_array[:] = coeffs
        return self.synthesise(slot)

    def analysis_input(self) -> np.ndarray:
        """The grid input buffer of the analysis transform."""
        return self._forward.input_array

    def analysis_output(self) -> np.ndarray:
        """The spectral output buffer of the analysis transform (what :meth:`analyse` fills)."""
        return self._forward.output_array

    def plan_calls(self) -> tuple[tuple, object]:
        """The bare ``execute`` callables: one per synthesis slot, and the analysis's (for compiled callers)."""
        return tuple(transform.execute for transform in self._backward), self._forward.execute

    def analyse(self) -> np.ndarray:
        """Run analysis on the filled grid buffer; returns unnormalised sums ``N rho_hat_k``."""
        self._forward.execute()
        return self._forward.output_array

    def to_coeffs(self, grid: np.ndarray) -> np.ndarray:
        """``rho_hat_k = (1/N) sum_j rho_j exp(-i k theta_j)`` (a fresh array)."""
        self._forward.input_array[:] = grid
        return self.analyse() / self.n

    #: one-off transforms of any length, outside the planned buffers (:mod:`meanfield.fourier_series`)
    coefficients_of = staticmethod(fourier_series.coefficients)
    values_of = staticmethod(fourier_series.synthesis)

    # -- quadrature and spectral operators ------------------------------------------------------
    def integrate(self, grid: np.ndarray) -> float:
        """Trapezoidal rule, spectrally accurate for periodic functions."""
        return float(np.sum(grid) * self.cell)

    def cell_average_factor(self, k) -> np.ndarray:
        """``sinc(k / N)``: the factor from the coefficient ``k`` of a function to that of its averages over
        the cells ``[theta_j - pi/N, theta_j + pi/N]`` (the transform of one cell's indicator, MATH.md §2.1)."""
        return np.sinc(np.asarray(k) / self.n)

    def resample(self, coeffs: np.ndarray, n_new: int) -> np.ndarray:
        """Coefficients of the same band-limited function on an ``n_new`` grid (truncate or zero-pad)."""
        out = np.zeros(n_new // 2 + 1, dtype=complex)
        keep = min(len(coeffs), len(out))
        out[:keep] = coeffs[:keep]
        if n_new % 2 == 0:
            out[-1] = out[-1].real  # the Nyquist mode of a real signal is real
        return out
