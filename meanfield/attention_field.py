"""The attention field ``A = K * mu`` of a measure, sampled finely enough to see its maxima (MATH.md §10).

Both attentions move a token up ``A(x) = int exp(beta <x, y>) dmu(y)`` (MATH.md §2, §10), so the clusters of a
measure are read off ``A`` (:mod:`meanfield.cluster_detection`).  A measure is given as weighted *masses at
places*: tokens, Lagrangian nodes and point clusters are their own places; a density is the mass of each grid
node or cell (quadrature weight or cell volume times its value) at that node; a mixture is both at once.  Each
geometry is an object that turns those masses into ``A`` on its own sampling graph:

* :class:`CircleField` — Fourier coefficients ``mu_hat_k = sum_j w_j exp(-i k theta_j) / 2 pi`` (ducc0's NUFFT), then
  ``A = sum_k exp(-beta) kappa_k mu_hat_k exp(i k theta)``, ``kappa_k = 2 pi I_k(beta)``, on a uniform grid
  (MATH.md §2.1);
* :class:`SphereField` — point-mass coefficients ``mu_lm`` (ducc0's adjoint non-uniform synthesis), then
  ``A = sum exp(-beta) kappa_l mu_lm Y_lm`` on a Gauss–Legendre grid (MATH.md §2.2);
* :class:`ZonalField` — zonal rings on S^{d-1}: Gegenbauer sums ``g_l``, then ``A`` along the polar angle;
* :class:`AtomField` — atoms on S^{d-1}, ``d >= 4`` (no practical grid): ``A`` at the atoms themselves by the
  direct sum, on the graph of each atom's nearest neighbours.

Every field is stored ``exp(-beta)``-scaled (``sum_j w_j exp(beta (<x, y_j> - 1))``, no overflow at any beta).  With
it each field gives the *concentration* ``c = -Laplace A / ((d - 1) beta A)`` at its nodes (zonal rings: the polar
second derivative, ``-A_thth / (beta A)``): 1 at a point mass, ``1 / (1 + beta s^2)`` at a cluster of angular
spread ``s``, ``O(eps)`` at a perturbation ``eps`` of the uniform state (MATH.md §10).

Sampling.  ``A`` is band-limited: its degrees above the kernel's band limit ``M(beta)`` (MATH.md §2.1) are below
1e-13 of its mean.  The grids sample it at least at that band and with a spacing of at most
:data:`SPACING` ``/ sqrt(beta)`` (a tenth of the kernel's width on the circle and zonal rings, a fifth on S^2), so
maxima, saddles and basins are those of ``A`` and not of the grid the measure came on.

:data:`FIELDS` names the field of each geometry (``circle``, ``sphere``, ``zonal``, ``atoms``); every field is made
as ``Field(places, masses, beta, dim)``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .errors import require
from .kernels import band_limit, scaled_funk_hecke

try:  # the grid test of meanfield/_circle_clusters.c, built by `pip install` when a C compiler is present
    from meanfield._circle_clusters import equispaced as _compiled_equispaced
except ImportError:  # pragma: no cover - depends on the install
    _compiled_equispaced = None

#: Sampling spacing in units of the kernel's width ``1 / sqrt(beta)``: circle and zonal rings; S^2 twice this.
SPACING = 0.1
#: The sampled band: degrees whose kernel coefficient is above this fraction of degree 0's.
BAND_TOL = 1e-13
#: Fewest sampling nodes around a great circle.
MIN_NODES = 64
#: Neighbours of each atom in :class:`AtomField`'s graph.
ATOM_NEIGHBOURS = 12
#: Atoms closer than this many kernel widths ``1 / sqrt(beta)`` are one node of :class:`AtomField` (the field differs
#: across them by about ``1e-6`` of itself).
SAME_PLACE = 1e-3
#: Accuracy of the circle's NUFFT sums.
NUFFT_EPSILON = 1e-13
#: Circle places within this (rad) of an equispaced grid are that grid (a real FFT gives their Fourier sums).
GRID_TOL = 1e-12


def _nodes_around(band: int, beta: float, spacing: float) -> int:
    """Sampling nodes around a great circle: the band twice over and ``spacing / sqrt(beta)`` apart, even."""
    wanted = max(MIN_NODES, 2 * band + 2, int(math.ceil(2 * math.pi * math.sqrt(max(beta, 1.0)) / spacing)))
    return wanted + (wanted % 2)


class SampledField:
    """``A`` (``exp(-beta)``-scaled) and its concentration at the nodes of a sampling graph.

    ``directions``: the nodes as unit vectors (zonal: ``(cos th, sin th)`` in a meridian half-plane);
    ``neighbours``: ``(nodes, K)`` indices, a node's own index padding the rows with fewer neighbours;
    ``values``: ``A``; ``concentration``: ``c``; ``place``: which node each given mass sits at.

    Class attributes: ``one_angle`` (the places are one angle, so a density's cells there can hold point clusters
    of their own: the circle and zonal rings) and ``periodic`` (that angle wraps around: the circle).
    """

    one_angle = False
    periodic = False

    def __init__(self, beta: float, directions, neighbours, values, concentration, place, apart=None):
        self.beta = float(beta)
        self.directions = directions
        self.neighbours = neighbours
        self.values = values
        self.concentration = concentration
        self.place = place
        #: which neighbours lie farther than :data:`SAME_PLACE` kernel widths (:meth:`flat_nodes`; known for a
        #: fixed grid, :func:`_apart_neighbours`)
        self.apart = apart

    def refine(self, node: int) -> np.ndarray:
        """The maximum of ``A`` near ``node`` as a unit vector (the node's own direction unless refined)."""
        return self.directions[node]

    def flat_nodes(self, fraction: float) -> np.ndarray:
        """The nodes where ``A`` differs from the value at each neighbour farther than :data:`SAME_PLACE` kernel
        widths by at most ``fraction`` of ``max |A|``, and that have such a neighbour: where the direction of ascent
        is decided by rounding (MATH.md §10).  Nearer neighbours are the same place (coincident atoms, an atom and
        the maximum it climbs to), not a step of the sampling."""
        table = self.neighbours
        apart = self.apart if self.apart is not None else _apart(self.directions, table, self.beta)
        level = fraction * float(np.max(np.abs(self.values)))
        close = np.abs(self.values[table] - self.values[:, None]) <= level
        return np.all(close | ~apart, axis=1) & np.any(apart, axis=1)

    def ascent_roots(self) -> np.ndarray:
        """Each node's local maximum by steepest ascent on the graph (ties broken towards the larger index)."""
        return steepest_ascent(self.values, self.neighbours)

    def peak(self, node: int) -> tuple[np.ndarray, float]:
        """The refined maximum near ``node`` and the concentration there (the node's, unless known exactly)."""
        return self.refine(node), float(self.concentration[node])


def _apart(directions: np.ndarray, table: np.ndarray, beta: float) -> np.ndarray:
    """Which neighbours ``table`` of each node lie farther than :data:`SAME_PLACE` kernel widths."""
    return np.linalg.norm(directions[table] - directions[:, None, :], axis=-1) >= SAME_PLACE / math.sqrt(beta)


# ------------------------------------------------------------------------------------------------ circle
def circle_mass_coefficients(angles: np.ndarray, masses: np.ndarray, band: int) -> np.ndarray:
    """``2 pi mu_hat_k = sum_j w_j exp(-i k theta_j)``, ``k = 0 .. band`` (MATH.md §2.1): a real FFT when the
    places are an equispaced grid ``theta_0 + 2 pi j / n`` with ``n >= 2 band`` (a grid's nodes or cells; exact),
    ducc0's NUFFT otherwise."""
    n = angles.size
    if n >= max(2, 2 * band) and _equispaced(angles):
        spectrum = np.fft.rfft(masses)[:band + 1]
        if angles[0] != 0:
            spectrum = spectrum * np.exp(-1j * angles[0] * np.arange(band + 1))
        return spectrum
    import ducc0

    full = ducc0.nufft.nu2u(points=masses.astype(complex), coord=np.mod(angles, 2 * math.pi)[:, None],
                            forward=True, epsilon=NUFFT_EPSILON, nthreads=1,
                            out=np.empty(2 * band + 2, dtype=complex))
    return full[band + 1:]                      # the centred layout: index band + 1 + k holds mode k


class CircleField(SampledField):
    """``A`` on ``N`` equal arcs of the circle from masses at angles (module docstring; ``dim`` is 2)."""

    one_angle = periodic = True

    def __init__(self, angles, masses, beta: float, dim: int = 2):
        raw = np.asarray(angles, dtype=float)
        angles = np.mod(raw, 2 * math.pi)
        masses = np.asarray(masses, dtype=float)
        band, n, multipliers = _circle_sampling(float(beta))
        self.coefficients = circle_mass_coefficients(raw, masses, band) * multipliers
        k = np.arange(band + 1)
        values = np.fft.irfft(self.coefficients, n) * n
        second = -np.fft.irfft(self.coefficients * k * k, n) * n
        self.step = 2 * math.pi / n
        directions, neighbours = _circle_graph(n)
        place = np.rint(angles / self.step).astype(np.intp) % n
        super().__init__(beta, directions, neighbours, values, _concentration(second, values, beta), place)


    def series_at(self, theta: float) -> tuple[float, float, float]:
        """``A``, ``A'`` and ``A''`` at ``theta`` from the series (exact)."""
        if not hasattr(self, "_weighted"):
            k = np.arange(self.coefficients.size)
            self._weighted = np.where(k == 0, 1.0, 2.0) * self.coefficients
            self._ik = 1j * k
        terms = self._weighted * np.exp(self._ik * theta)
        first = terms * self._ik
        return float(terms.sum().real), float(first.sum().real), float((first * self._ik).sum().real)

    def peak(self, node: int) -> tuple[np.ndarray, float]:
        """The refined maximum (Newton's method on ``A'`` from the node, a few steps kept within a node spacing) and
        its exact concentration ``-A'' / (beta A)`` from the series."""
        theta = self.step * node
        value, first, second = self.series_at(theta)
        for _ in range(8):
            move = -first / second if second < 0 else math.inf
            if abs(move) > self.step:
                break
            theta += move
            value, first, second = self.series_at(theta)
            if abs(move) < 1e-14:
                break
        return np.array([math.cos(theta), math.sin(theta)]), -second / (self.beta * value)

    def refine(self, node: int) -> np.ndarray:
        """The refined maximum near ``node`` (:meth:`peak`)."""
        return self.peak(node)[0]


@lru_cache(maxsize=16)
def _circle_sampling(beta: float) -> tuple[int, int, np.ndarray]:
    """The circle field's band, node count and multipliers ``exp(-beta) kappa_k / 2 pi``, ``k = 0 .. band`` (of the
    sums ``2 pi mu_hat_k``)."""
    band = band_limit(beta, 2, BAND_TOL)
    multipliers = scaled_funk_hecke(np.arange(band + 1), beta, 2) / (2 * math.pi)
    multipliers.setflags(write=False)
    return band, _nodes_around(band, beta, SPACING), multipliers


@lru_cache(maxsize=16)
def _ramp(n: int) -> np.ndarray:
    """``(2 pi / n) j``, ``j = 0 .. n - 1`` (read-only)."""
    ramp = (2 * math.pi / n) * np.arange(n)
    ramp.setflags(write=False)
    return ramp


def _equispaced(angles: np.ndarray) -> bool:
    """Whether ``angles`` are ``angles[0] + (2 pi / n) j`` to within :data:`GRID_TOL` (compiled when built)."""
    if _compiled_equispaced is not None:
        return _compiled_equispaced(angles, GRID_TOL)
    return float(np.max(np.abs(angles - angles[0] - _ramp(angles.size)))) <= GRID_TOL


@lru_cache(maxsize=16)
def _circle_graph(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` equispaced nodes of the circle as unit vectors and each one's two neighbours (read-only)."""
    theta = 2 * math.pi * np.arange(n) / n
    directions = np.stack((np.cos(theta), np.sin(theta)), axis=-1)
    index = np.arange(n)
    neighbours = np.stack((np.roll(index, 1), np.roll(index, -1)), axis=-1)
    directions.setflags(write=False)
    neighbours.setflags(write=False)
    return directions, neighbours


def steepest_ascent(values: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """The node each node reaches by moving to its highest neighbour while one is higher (value, then index)."""
    n = values.size
    key = np.argsort(values, kind="stable")           # a strict order: value, then index
    rank = np.empty(n, dtype=np.intp)
    rank[key] = np.arange(n)
    candidates = np.concatenate((np.arange(n)[:, None], neighbours), axis=1)
    up = candidates[np.arange(n), np.argmax(rank[candidates], axis=1)]
    while True:
        nxt = up[up]
        if np.array_equal(nxt, up):
            return up
        up = nxt


def _concentration(second: np.ndarray, values: np.ndarray, beta: float) -> np.ndarray:
    """``-second / (beta A)`` where ``A > 0`` (0 elsewhere)."""
    positive = values > 0
    return np.where(positive, -second / (beta * np.where(positive, values, 1.0)), 0.0)


# ------------------------------------------------------------------------------------------------ S^2
class SphereField(SampledField):
    """``A`` on a Gauss–Legendre grid of S^2 from masses at unit vectors (module docstring; ``dim`` is 3)."""

    def __init__(self, points, masses, beta: float, dim: int = 3):
        import ducc0

        from .harmonics import SHT_EPSILON, point_mass_coefficients, sphere_locations

        points = np.asarray(points, dtype=float)
        masses = np.asarray(masses, dtype=float)
        lmax, multiplier, laplacian = _sphere_sampling(float(beta))
        nlat, nlon = lmax + 2, 2 * lmax + 2
        loc, _ = sphere_locations(points)
        alm = point_mass_coefficients(masses, loc, lmax, SHT_EPSILON)[0] * multiplier
        maps = np.empty((2, nlat, nlon))
        kw = dict(lmax=lmax, geometry="GL", spin=0, nthreads=1)
        ducc0.sht.synthesis_2d(alm=alm[None], map=maps[0:1], **kw)
        ducc0.sht.synthesis_2d(alm=(laplacian * alm)[None], map=maps[1:2], **kw)
        colatitude, directions, neighbours, apart = _gauss_legendre_grid(nlat, nlon, float(beta))
        self.colatitude, self.lon_step, self.shape = colatitude, 2 * math.pi / nlon, (nlat, nlon)
        values = maps[0].reshape(-1)
        concentration = _concentration(maps[1].reshape(-1) / 2.0, values, beta)
        row = np.clip(np.searchsorted(colatitude, loc[:, 0]), 1, nlat - 1)
        row -= (loc[:, 0] - colatitude[row - 1]) < (colatitude[row] - loc[:, 0])
        column = np.rint(loc[:, 1] / self.lon_step).astype(np.intp) % nlon
        super().__init__(beta, directions, neighbours, values, concentration, row * nlon + column, apart)

    def refine(self, node: int) -> np.ndarray:
        """The vertex of the quadratic fitted (least squares) to ``A`` at the node and its neighbours, in the tangent
        plane at the node (kept when it lies within a grid spacing; the node otherwise)."""
        x = self.directions[node]
        around = np.unique(np.append(self.neighbours[node], node))
        e1 = _cross3(x, (0.0, 0.0, 1.0) if abs(x[2]) < 0.9 else (1.0, 0.0, 0.0))
        e1 /= np.linalg.norm(e1)
        e2 = _cross3(x, e1)
        u, v = self.directions[around] @ e1, self.directions[around] @ e2
        design = np.stack((np.ones_like(u), u, v, u * u, u * v, v * v), axis=1)
        coef, *_ = np.linalg.lstsq(design, self.values[around], rcond=None)
        hessian = np.array([[2 * coef[3], coef[4]], [coef[4], 2 * coef[5]]])
        if around.size < 6 or np.any(np.linalg.eigvalsh(hessian) >= 0):
            return x
        step = np.linalg.solve(hessian, -coef[1:3])
        if np.hypot(*step) > np.max(np.hypot(u, v)):
            return x
        moved = x + step[0] * e1 + step[1] * e2
        return moved / np.linalg.norm(moved)


def _cross3(a, b) -> np.ndarray:
    """``numpy.cross`` of two 3-vectors, the same products and differences, without its general machinery."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@lru_cache(maxsize=16)
def _sphere_sampling(beta: float) -> tuple[int, np.ndarray, np.ndarray]:
    """The S^2 field's ``lmax`` (at least the kernel's band, nodes every ``2 SPACING`` kernel widths, ``MIN_NODES``
    around) and, per stored coefficient (m-major), the multiplier ``exp(-beta) kappa_l`` of ``mu_lm`` and the
    Laplacian's ``-l(l+1)`` (read-only)."""
    from .harmonics import m_major_layout

    band = band_limit(beta, 3, BAND_TOL)
    lmax = max(band, _nodes_around(band, beta, 2 * SPACING) // 2, MIN_NODES // 2)
    degree, _ = m_major_layout(lmax)
    multiplier, laplacian = scaled_funk_hecke(degree, beta, 3), -degree * (degree + 1.0)
    multiplier.setflags(write=False)
    laplacian.setflags(write=False)
    return lmax, multiplier, laplacian


def _parabola_offset(left: float, centre: float, right: float) -> float:
    """The vertex of the parabola through three equally spaced values, in spacings from the centre (|.| <= 1/2)."""
    curvature = left - 2 * centre + right
    if curvature >= 0:
        return 0.0
    return float(np.clip(0.5 * (left - right) / curvature, -0.5, 0.5))


@lru_cache(maxsize=8)
def _gauss_legendre_grid(nlat: int, nlon: int, beta: float) -> tuple:
    """``(colatitude, directions, neighbours, apart)`` of the ``(nlat, nlon)`` Gauss–Legendre grid: the same for
    every field of one ``beta`` (read only)."""
    import ducc0

    colatitude = np.asarray(ducc0.misc.GL_thetas(nlat), dtype=float)
    longitude = 2 * math.pi * np.arange(nlon) / nlon
    sin_c = np.sin(colatitude)[:, None]
    directions = np.stack(np.broadcast_arrays(sin_c * np.cos(longitude), sin_c * np.sin(longitude),
                                              np.cos(colatitude)[:, None]), axis=-1).reshape(-1, 3)
    neighbours = _lat_lon_neighbours(nlat, nlon)
    grid = (colatitude, directions, neighbours, _apart(directions, neighbours, beta))
    for array in grid:
        array.flags.writeable = False
    return grid


@lru_cache(maxsize=8)
def _lat_lon_neighbours(nlat: int, nlon: int) -> np.ndarray:
    """The 8 neighbours of each node of a ``(nlat, nlon)`` latitude–longitude grid (longitudes wrap), and across the
    pole for the polar rows (the node half way round), padded with the node itself."""
    row, column = np.divmod(np.arange(nlat * nlon), nlon)
    table = []
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr == dc == 0:
                continue
            r, c = row + dr, (column + dc) % nlon
            inside = (r >= 0) & (r < nlat)
            table.append(np.where(inside, np.clip(r, 0, nlat - 1) * nlon + c, row * nlon + column))
    polar = (row == 0) | (row == nlat - 1)
    table.append(np.where(polar, row * nlon + (column + nlon // 2) % nlon, row * nlon + column))
    table = np.stack(table, axis=-1)
    table.flags.writeable = False       # shared by every field on this grid
    return table


# ------------------------------------------------------------------------------------------------ zonal rings
class ZonalField(SampledField):
    """``A`` of zonal rings on S^{dim-1} along the polar angle, poles included (module docstring); the nodes are points
    ``(cos th, sin th)`` of a meridian half-plane."""

    one_angle = True

    def __init__(self, polar, masses, beta: float, dim: int):
        from .gegenbauer import normalised_gegenbauer

        polar = np.clip(np.asarray(polar, dtype=float), 0.0, math.pi)
        masses = np.asarray(masses, dtype=float)
        lmax = band_limit(beta, dim, BAND_TOL)
        count = _nodes_around(lmax, beta, SPACING) // 2 + 1
        self.step = math.pi / (count - 1)
        theta = self.step * np.arange(count)
        g = normalised_gegenbauer(np.cos(polar), lmax, dim).T @ masses
        series = g * scaled_funk_hecke(np.arange(lmax + 1), beta, dim)
        # one more node beyond each pole, by symmetry, for the second difference there
        outer = np.concatenate(([-self.step], theta, [math.pi + self.step]))
        on_outer = normalised_gegenbauer(np.cos(outer), lmax, dim) @ series
        values = on_outer[1:-1]
        second = (on_outer[:-2] - 2 * values + on_outer[2:]) / self.step ** 2
        directions = np.stack((np.cos(theta), np.sin(theta)), axis=-1)
        index = np.arange(count)
        neighbours = np.stack((np.maximum(index - 1, 0), np.minimum(index + 1, count - 1)), axis=-1)
        place = np.rint(polar / self.step).astype(np.intp)
        super().__init__(beta, directions, neighbours, values, _concentration(second, values, beta), place)

    def refine(self, node: int) -> np.ndarray:
        node = int(node)
        theta = self.step * node
        if 0 < node < self.values.size - 1:
            theta += self.step * _parabola_offset(*self.values[node - 1:node + 2])
        return np.array([math.cos(theta), math.sin(theta)])


# ------------------------------------------------------------------------------------------------ atoms, d >= 4
class AtomField(SampledField):
    """``A`` at the atoms themselves on S^{d-1} (any ``d``; used for ``d >= 4``), by the direct sum in blocks
    (module docstring).  Coincident atoms (within :data:`SAME_PLACE` rad) are one node carrying their summed mass;
    each node is joined to its :data:`ATOM_NEIGHBOURS` nearest nodes within the kernel's width ``1 / sqrt(beta)``
    (the field's own scale: the ascent never jumps across a gap wider than that).

    A maximum of ``A`` need not sit at an atom (tokens spread evenly around a point have their maximum between
    them, at no atom).  So the ascent on the atoms is continued off them: from each atom where it stops, mean-shift
    steps ``x <- P(sum_j w_j e^{beta <x, y_j>} y_j)`` (each raises ``A``, MATH.md §10) climb to a maximum of ``A``;
    maxima reached from several atoms (within :data:`SAME_PLACE`) are one, and each is a node of the graph above
    the atoms that climbed to it."""

    #: Mean-shift steps: at most this many, and stop once no maximum moves by more than :data:`SHIFT_TOL` rad (the
    #: maximum's value and concentration are then exact to its square, 1e-16).
    MAX_SHIFTS = 200
    SHIFT_TOL = 1e-8

    def __init__(self, points, masses, beta: float, dim: int | None = None, block: int = 2048):
        from scipy.spatial import cKDTree

        from .point_groups import link_groups, merge_points

        points = np.asarray(points, dtype=float)
        masses = np.asarray(masses, dtype=float)
        self.dim, self.beta, self.block = points.shape[1], float(beta), block
        same = SAME_PLACE / math.sqrt(self.beta)
        labels, count = link_groups(np.ascontiguousarray(points), same)
        nodes, node_masses = merge_points(points, masses, labels, count)
        self.points, self.masses = nodes, node_masses
        values, laplace = self._field_at(nodes)
        k = min(ATOM_NEIGHBOURS + 1, count)
        reach = 2 * math.sin(min(math.pi, 1.0 / math.sqrt(self.beta)) / 2)
        distance, neighbours = cKDTree(nodes).query(nodes, k=k, distance_upper_bound=reach)
        neighbours = np.asarray(neighbours).reshape(count, k)
        neighbours = np.where(np.isfinite(np.asarray(distance).reshape(count, k)), neighbours,
                              np.arange(count)[:, None])
        tops = np.unique(steepest_ascent(values, neighbours))
        modes = self._climb(nodes[tops])
        mode_labels, mode_count = link_groups(np.ascontiguousarray(modes), same)
        modes = merge_points(modes, np.ones(tops.size), mode_labels, mode_count)[0]
        mode_values, mode_laplace = self._field_at(modes)
        up = np.arange(count)                       # each atom's way up off the atoms: itself, or its maximum
        up[tops] = count + mode_labels
        neighbours = np.concatenate((neighbours, up[:, None]), axis=1)
        mode_rows = np.repeat(np.arange(count, count + mode_count)[:, None], k + 1, axis=1)
        super().__init__(beta, np.concatenate((nodes, modes)), np.concatenate((neighbours, mode_rows)),
                         np.concatenate((values, mode_values)),
                         _concentration(np.concatenate((laplace, mode_laplace)) / (self.dim - 1),
                                        np.concatenate((values, mode_values)), beta), labels)

    def _field_at(self, x: np.ndarray):
        """``A`` and ``Laplace A`` at the unit vectors ``x``, in blocks (:meth:`_sums`)."""
        values, laplace = np.empty(x.shape[0]), np.empty(x.shape[0])
        for start in range(0, x.shape[0], self.block):
            values[start:start + self.block], laplace[start:start + self.block] = self._sums(x[start:start + self.block])
        return values, laplace

    def _sums(self, x: np.ndarray):
        """``A`` and ``Laplace A`` at ``x``: ``sum_j w_j e^{beta(<x,y_j>-1)}`` and
        ``sum_j w_j e^{beta(<x,y_j>-1)} (beta^2 (1 - <x,y_j>^2) - beta (d - 1) <x,y_j>)``."""
        cosine = np.clip(x @ self.points.T, -1.0, 1.0)
        kernel = np.exp(self.beta * (cosine - 1.0)) * self.masses
        shape = self.beta ** 2 * (1.0 - cosine ** 2) - self.beta * (self.dim - 1) * cosine
        return kernel.sum(axis=1), (kernel * shape).sum(axis=1)

    def _climb(self, x: np.ndarray) -> np.ndarray:
        """Mean-shift steps from the rows of ``x`` (class docstring) to the maxima of ``A`` they lead to."""
        x = x.copy()
        for _ in range(self.MAX_SHIFTS):
            pull = (np.exp(self.beta * (np.clip(x @ self.points.T, -1.0, 1.0) - 1.0)) * self.masses) @ self.points
            norm = np.linalg.norm(pull, axis=1, keepdims=True)
            new = np.where(norm > 0, pull / np.where(norm > 0, norm, 1.0), x)
            moved = float(np.max(np.linalg.norm(new - x, axis=1)))
            x = new
            if moved < self.SHIFT_TOL:
                break
        return x


#: The field of each geometry: ``circle`` (angles), ``sphere`` (S^2, unit vectors), ``zonal`` (polar angles of
#: rings on S^{dim-1}), ``atoms`` (unit vectors on S^{dim-1}, any dim).
FIELDS = {"circle": CircleField, "sphere": SphereField, "zonal": ZonalField, "atoms": AtomField}


def field_of(places, masses, beta: float, *, geometry: str, dim: int) -> SampledField:
    """The sampled field of ``masses`` at ``places`` for ``geometry`` (a name of :data:`FIELDS`)."""
    require(beta > 0, f"clusters are read off the attention field at beta > 0 (got beta = {beta:g})")
    require(geometry in FIELDS, f"geometry must be one of {', '.join(FIELDS)} (got {geometry!r})")
    return FIELDS[geometry](places, masses, beta, dim)
