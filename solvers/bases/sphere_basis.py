"""The spherical-harmonic basis of S^2 (MATH.md §2.2): orthonormal coefficients in ducc0's m-major layout, the
dealiased Gauss–Legendre grid and its transforms (the gradient and divergence the spectral scheme of
:mod:`meanfield.solvers.schemes.sphere` takes), on ducc0 or, where installed and large enough, shtns.

The grid has ``nlat >= ceil(3 (lmax + 1) / 2)`` Gauss–Legendre rings and ``nlon >= 3 lmax + 1`` (an FFT-friendly
size) longitudes, so the product of two degree-``lmax`` fields is analysed back to degree ``lmax`` without aliasing;
``synthesis_2d`` / ``analysis_2d`` give the same bits at any thread count (tests/meanfield/test_threads.py).
"""

from __future__ import annotations

import math

import ducc0
import numpy as np

from meanfield.errors import require
from meanfield.harmonics import m_major_layout
from meanfield.app.threads import ducc0_threads


def _dealiased_grid(lmax: int) -> tuple[int, int]:
    """``(nlat, nlon)`` for unaliased quadratic products of degree-``lmax`` fields."""
    nlat = -(-3 * (lmax + 1) // 2)
    nlon = int(ducc0.fft.good_size(3 * lmax + 1, True))
    while nlon % 2:  # even nlon keeps the grid symmetric under phi -> phi + pi (good_size(26) is 27)
        nlon = int(ducc0.fft.good_size(nlon + 1, True))
    return nlat, nlon


def dealiased_grid_values(lmax: int) -> int:
    """Values of one density frame of degree ``lmax`` (an upper estimate): the dealiased Gauss–Legendre grid
    ``(3(L+1)/2 + 1) x (3L + 4)``."""
    return (3 * (lmax + 1) // 2 + 1) * (3 * lmax + 4)


class SphereBasis:
    """Spherical harmonics of degree ``<= lmax`` on a dealiased Gauss–Legendre grid (ducc0).

    Grids are ``(nlat, nlon)`` arrays, rows from the north pole (``colatitude`` increasing),
    columns at ``longitude = 2 pi j / nlon``.  Returned grids and coefficient arrays are
    fresh arrays unless a method says otherwise.
    """

    backend = "ducc0"

    def __init__(self, lmax: int, nthreads: int | None = None):
        require(isinstance(lmax, (int, np.integer)) and lmax >= 1, f"lmax must be an integer >= 1 (got {lmax!r})")
        self.lmax = int(lmax)
        #: ducc0 threads of the grid transforms (bitwise the same at any count; meanfield.app.threads)
        self.nthreads = ducc0_threads() if nthreads is None else int(nthreads)
        self.nlat, self.nlon = _dealiased_grid(self.lmax)
        self.shape = (self.nlat, self.nlon)
        self.nalm = (self.lmax + 1) * (self.lmax + 2) // 2
        self.colatitude = np.asarray(ducc0.misc.GL_thetas(self.nlat), dtype=float)
        self.longitude = 2.0 * math.pi * np.arange(self.nlon) / self.nlon
        self.lat = 90.0 - np.degrees(self.colatitude)
        self.lon = np.degrees(self.longitude)
        #: Quadrature weights per grid point (``sum(weights * grid)`` integrates over S^2).
        self.weights = np.asarray(ducc0.misc.GL_weights(self.nlat, self.nlon), dtype=float)[:, None] \
            * np.ones((1, self.nlon))
        l, m = m_major_layout(self.lmax)
        self.degree_of_index, self.m_of_index = l, m
        self.zonal = slice(0, self.lmax + 1)  # the m = 0 block of the layout
        #: ``sqrt(l(l+1))`` per coefficient (spin-0 <-> spin-1 ladder factor).
        self.ladder = np.sqrt(l * (l + 1.0))
        #: Multiplicity of each stored coefficient in ``sum over all m`` (m < 0 counted).
        self.multiplicity = np.where(m == 0, 1.0, 2.0)
        # preallocated buffers
        self._map0 = np.empty((1, self.nlat, self.nlon))
        self._map1 = np.empty((2, self.nlat, self.nlon))
        self._alm0 = np.empty((1, self.nalm), dtype=complex)
        self._alm1 = np.zeros((2, self.nalm), dtype=complex)  # B stays 0 for gradients

    # -- the grid a density lives on (initial data, band) -----------------------------------------------------
    @property
    def band(self) -> int:
        """The largest degree the grid keeps unaliased (``lmax``)."""
        return self.lmax

    #: the names of :meth:`grid_points`, in order
    point_names = ("theta", "phi")

    def grid_points(self) -> tuple:
        """The grid's coordinates, as a user's callable receives them and an array of values is laid out: colatitude
        ``theta`` in ``[0, pi]`` and longitude ``phi`` in ``[0, 2 pi)``, radians (MATH.md §2.2), each ``(nlat, nlon)``
        (rows from the north pole)."""
        return tuple(np.meshgrid(self.colatitude, self.longitude, indexing="ij"))

    def function_density(self, function, label: str) -> np.ndarray:
        """A user's callable ``f(theta, phi)`` on the grid, checked as :meth:`check_density`; one written for degrees is
        refused naming the convention (:func:`meanfield.initial.sphere.sphere_function_values`)."""
        from meanfield.initial.sphere import sphere_function_values

        return sphere_function_values(function, label, *self.grid_points(),
                                      lambda values: self.check_density(values, label),
                                      f"meanfield.grid('sphere', {self.lmax}) gives them")

    def text_density(self, spec: str, seed=None) -> np.ndarray:
        """The density of a text spec (``--init``) on the grid (:mod:`meanfield.initial.sphere`)."""
        from meanfield.initial.sphere import sphere_density

        return sphere_density(spec, self, seed)

    def check_density(self, density: np.ndarray, label: str) -> None:
        """Refuse, in one line naming ``label``, a density the grid does not hold (:mod:`meanfield.initial.sphere`)."""
        from meanfield.initial.sphere import check_sphere_density

        check_sphere_density(density, label, self)

    def density_from(self, source) -> np.ndarray:
        """A :class:`meanfield.initial.sources.GridSource` on a (lat, lon) grid, on this grid: resampled through the
        harmonics when the source's grid is another Gauss–Legendre grid, else interpolated."""
        from meanfield.initial import sphere

        lat, lon = source.coords
        old = _gauss_legendre_basis(lat, lon)
        if old is not None:
            return sphere.resample_grid(source.values[::-1], old, self)
        return sphere.latlon_values(source.values, lat, lon, self.lat, self.lon)

    def _kw(self):
        return dict(lmax=self.lmax, geometry="GL", nthreads=self.nthreads)

    # -- transforms --------------------------------------------------------------------------
    def synthesise(self, alm: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``f(theta, phi) = sum_lm f_lm Y_lm`` (real field), shape ``(nlat, nlon)``."""
        self._alm0[0] = alm
        out = np.empty(self.shape) if out is None else out
        ducc0.sht.synthesis_2d(alm=self._alm0, map=out[None], spin=0, **self._kw())
        return out

    def analyse(self, grid: np.ndarray) -> np.ndarray:
        """Orthonormal coefficients ``f_lm``, ``l <= lmax`` (exact for degree <= 2 nlat - 1 - lmax)."""
        self._map0[0] = grid
        ducc0.sht.analysis_2d(map=self._map0, alm=self._alm0, spin=0, **self._kw())
        out = self._alm0[0].copy()
        out[self.zonal] = out[self.zonal].real
        return out

    def gradient(self, alm: np.ndarray, out: np.ndarray | None = None):
        """``(d f/d theta, (1/sin theta) d f/d phi)`` of ``f = sum f_lm Y_lm``: a ``(2, nlat, nlon)`` array."""
        np.multiply(alm, self.ladder, out=self._alm1[0])
        self._alm1[1] = 0.0
        out = np.empty((2,) + self.shape) if out is None else out
        ducc0.sht.synthesis_2d(alm=self._alm1, map=out, spin=1, **self._kw())
        return out

    def divergence(self, v_theta: np.ndarray, v_phi: np.ndarray | None = None) -> np.ndarray:
        """Coefficients of ``div v`` for the tangent field ``(v_theta, v_phi)`` (or a stacked (2, ...) array)."""
        if v_phi is None:
            vec = np.asarray(v_theta)
        else:
            self._map1[0], self._map1[1] = v_theta, v_phi
            vec = self._map1
        ducc0.sht.analysis_2d(map=vec, alm=self._alm1, spin=1, **self._kw())
        out = -self.ladder * self._alm1[0]
        out[self.zonal] = out[self.zonal].real
        return out

    # -- quadrature and spectra ----------------------------------------------------------------
    def integrate(self, grid: np.ndarray) -> float:
        """Gauss–Legendre quadrature over S^2: exact for band-limited fields of degree <= 2 nlat - 1."""
        return float(np.sum(self.weights * grid))

    def degree_amplitude(self, alm: np.ndarray) -> np.ndarray:
        """``sqrt(sum_{m=-l..l} |rho_lm|^2)`` for ``l = 0 .. lmax`` (real field)."""
        power = np.bincount(self.degree_of_index, weights=self.multiplicity * np.abs(alm) ** 2,
                            minlength=self.lmax + 1)
        return np.sqrt(power)

    def resample(self, alm: np.ndarray, lmax_new: int) -> np.ndarray:
        """The same coefficients in the layout of ``lmax_new`` (truncate or zero-pad)."""
        old = int(round((math.sqrt(8 * len(alm) + 1) - 3) / 2))
        out = np.zeros((lmax_new + 1) * (lmax_new + 2) // 2, dtype=complex)
        for m in range(min(old, lmax_new) + 1):
            top = min(old, lmax_new)
            src = m * (2 * old + 1 - m) // 2 + m      # index of (l = m, m)
            dst = m * (2 * lmax_new + 1 - m) // 2 + m
            out[dst:dst + top + 1 - m] = alm[src:src + top + 1 - m]
        return out


class ShtnsSphereBasis(SphereBasis):
    """The same grid, coefficient layout and methods as :class:`SphereBasis`, with SHTns transforms.

    SHTns (orthonormal, Condon–Shortley phase) stores ``m >= 0`` in the same m-major order as
    ducc0, so coefficients are interchangeable.  Its vector convention is
    ``v = grad S - r x grad T``: the gradient of ``f`` is the spheroidal synthesis of ``f_lm``
    and ``(div v)_lm = -l(l+1) S_lm``.  SHTns needs at least 32 latitudes (``lmax >= 21``).
    """

    backend = "shtns"
    MIN_NLAT = 32

    def __init__(self, lmax: int, nthreads: int | None = None):
        import shtns

        super().__init__(lmax, nthreads)
        require(self.nlat >= self.MIN_NLAT, f"backend='shtns' needs lmax >= 21 (got lmax = {lmax})")
        self._sht = shtns.sht(self.lmax, self.lmax, 1, shtns.sht_orthonormal)
        self._sht.set_grid(self.nlat, self.nlon, shtns.sht_quick_init | shtns.SHT_PHI_CONTIGUOUS, 0.0)  # exact: no polar cut
        self._laplace = -(self.degree_of_index * (self.degree_of_index + 1.0))
        self._zero = np.zeros(self.nalm, dtype=complex)
        self._spheroidal = np.empty(self.nalm, dtype=complex)
        self._toroidal = np.empty(self.nalm, dtype=complex)

    def synthesise(self, alm: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = np.empty(self.shape) if out is None else out
        self._sht.SH_to_spat(np.ascontiguousarray(alm, dtype=complex), out)
        return out

    def analyse(self, grid: np.ndarray) -> np.ndarray:
        out = np.empty(self.nalm, dtype=complex)
        self._sht.spat_to_SH(np.array(grid, dtype=float), out)
        out[self.zonal] = out[self.zonal].real
        return out

    def gradient(self, alm: np.ndarray, out: np.ndarray | None = None):
        out = np.empty((2,) + self.shape) if out is None else out
        self._sht.SHsph_to_spat(np.ascontiguousarray(alm, dtype=complex), out[0], out[1])
        return out

    def divergence(self, v_theta: np.ndarray, v_phi: np.ndarray | None = None) -> np.ndarray:
        vec = np.asarray(v_theta) if v_phi is None else np.stack((v_theta, v_phi))
        self._sht.spat_to_SHsphtor(np.array(vec[0]), np.array(vec[1]), self._spheroidal, self._toroidal)
        out = self._laplace * self._spheroidal
        out[self.zonal] = out[self.zonal].real
        return out


def _gauss_legendre_basis(lat: np.ndarray, lon: np.ndarray):
    """The :class:`SphereBasis` whose grid is ``lat x lon`` (sorted), or ``None``."""
    for lmax in range(max(1, (2 * lat.size) // 3 - 2), (2 * lat.size) // 3 + 1):
        basis = SphereBasis(lmax)
        if (basis.shape == (lat.size, lon.size) and np.allclose(lat[::-1], basis.lat, rtol=0, atol=1e-9)
                and np.allclose(lon, basis.lon, rtol=0, atol=1e-9)):
            return basis
    return None


def shtns_available() -> bool:
    try:
        import shtns  # noqa: F401
    except ImportError:
        return False
    return True


SPHERE_BACKENDS = {"ducc0": SphereBasis, "shtns": ShtnsSphereBasis}


def make_sphere_basis(lmax: int, backend: str | None = None, nthreads: int | None = None) -> SphereBasis:
    """The sphere basis of ``backend``: ``"ducc0"`` (required), ``"shtns"`` (optional, faster), or
    ``None``: SHTns when it is importable and the grid is large enough for it, else ducc0.
    ``nthreads``: ducc0 threads, by default :func:`meanfield.app.threads.ducc0_threads` (read now)."""
    require(backend in (None, *SPHERE_BACKENDS),
            f"the backend= parameter must be one of {', '.join(SPHERE_BACKENDS)} for the sphere (got {backend!r})")
    if backend is None:
        big_enough = _dealiased_grid(lmax)[0] >= ShtnsSphereBasis.MIN_NLAT
        backend = "shtns" if shtns_available() and big_enough else "ducc0"
    if backend == "shtns":
        require(shtns_available(), "backend='shtns': the shtns package is not installed (pip install shtns)")
    return SPHERE_BACKENDS[backend](lmax, nthreads)
