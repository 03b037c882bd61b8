"""Tokens in R^d without projection, and the limits of their rescaled positions (docs/MATH.md §12.1).

Geshkovski–Letrouit–Polyanskiy–Rigollet ("The emergence of clusters in self-attention dynamics", NeurIPS 2023,
code borjanG/2023-transformers) follow the unprojected tokens ``dx_i/dt = sum_j P_ij V x_j`` through
``z_i = e^{-tV} x_i``, which moves by::

    dz_i/dt = sum_j P_ij(t) V (z_j - z_i),      P_ij = softmax_j beta <Q e^{tV} z_i, K e^{tV} z_j>

(the same weights as the tokens ``x``). This module integrates that equation accurately (:func:`rescaled_tokens`,
DOP853), steps it as the reference script does (:func:`frozen_attention_steps`: RK4 stages with the attention
frozen over each step), measures that scheme's convergence (:func:`rd_reference_convergence`) and reads the limit
sets the theorems describe (:func:`rd_limit_sets`): for ``V = I`` (and ``Q^T K`` positive definite) the distinct
limit points are the vertices of their convex hull; for a simple positive top eigenvalue ``lambda_1`` of ``V``
(and ``<Q phi_1, K phi_1> > 0``) the coordinate ``<l_1, z>`` along the top eigenvector takes finitely many values,
so the tokens end on parallel hyperplanes ``{<l_1, z> = c}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.integrate import solve_ivp
from scipy.linalg import expm
from scipy.spatial import ConvexHull

from meanfield.errors import require
from meanfield.token_kernel import row_softmax

#: The reference script's stage rules (:func:`frozen_attention_steps`).
STAGES = ("script", "whole")

#: The value matrices of the paper's hyperplane examples (clustering-Tformers.py): top eigenvalues 1.348 (the other
#: -0.068), 0.991 (the others -0.055 +- 0.254 i) and 1.078 (the others 0.099 +- 0.082 i).
PAPER_VALUE_MATRICES = {
    "2d": np.array([[0.64709742, 0.81911926], [0.61210449, 0.63263484]]),
    "3d-negative": np.array([[0.2362413, 0.0599536, 0.40506019], [0.81321448, 0.49948705, 0.33754772],
                             [0.2160645, 0.38505272, 0.14588075]]),
    "3d-positive": np.array([[0.18608476, 0.34391026, 0.13905949], [0.35244288, 0.6694859, 0.39992145],
                             [0.46685606, 0.17094454, 0.42092308]]),
}


def _check_inputs(z0, q, k, v, beta: float = 1.0):
    """``(z0, q, k, v)`` as float arrays: ``z0`` of shape ``(n, d)``, the matrices ``d x d``; all finite."""
    z0 = np.asarray(z0, dtype=float)
    require(z0.ndim == 2 and z0.shape[0] >= 1 and z0.shape[1] >= 1 and bool(np.isfinite(z0).all()),
            f"z0 must be an (n, d) array of finite numbers with n, d >= 1 (got shape {z0.shape})")
    d = z0.shape[1]
    mats = []
    for name, m in (("q", q), ("k", k), ("v", v)):
        m = np.asarray(m, dtype=float)
        require(m.shape == (d, d) and bool(np.isfinite(m).all()),
                f"{name} must be a finite {d} x {d} matrix, d from z0 (got shape {m.shape})")
        mats.append(m)
    require(np.isfinite(beta) and beta > 0, f"beta must be > 0 and finite (got {beta!r})")
    return (z0, *mats)


def _check_time(name: str, value, low_open: float = 0.0) -> float:
    """A finite time ``> low_open``."""
    require(isinstance(value, (int, float, np.floating, np.integer)) and np.isfinite(value) and value > low_open,
            f"{name} must be > {low_open:g} and finite (got {value!r})")
    return float(value)


class Propagator:
    """``t -> e^{tV}``: from an eigendecomposition ``V = S diag(lambda) S^{-1}`` when ``S`` is well conditioned
    (the real part of ``S e^{t lambda} S^{-1}``, exact to ``cond(S)`` roundings), by ``scipy.linalg.expm``
    otherwise (a defective or nearly defective ``V``)."""

    def __init__(self, v: np.ndarray):
        self.v = v
        values, vectors = np.linalg.eig(v)
        self.eigen = np.linalg.cond(vectors) < 1e6
        if self.eigen:
            self.values, self.vectors, self.inverse = values, vectors, np.linalg.inv(vectors)

    def __call__(self, t: float) -> np.ndarray:
        if not self.eigen:
            return expm(t * self.v)
        return ((self.vectors * np.exp(t * self.values)[None, :]) @ self.inverse).real


def _weights(z: np.ndarray, q: np.ndarray, k: np.ndarray, flow: np.ndarray, beta: float) -> np.ndarray:
    """The softmax weights ``P_ij`` of ``beta <Q x_i, K x_j>`` at ``x = z flow^T`` (stable form)."""
    x = z @ flow.T
    return row_softmax(beta * ((x @ q.T) @ (x @ k.T).T))


def attention_matrix(t: float, z, q, k, v, beta: float = 1.0) -> np.ndarray:
    """The weights ``P_ij(t)`` ``(n, n)`` at the rescaled tokens ``z`` (the softmax of
    ``beta <Q e^{tV} z_i, K e^{tV} z_j>``, MATH.md §12.1): row-stochastic, and in the limits of
    :func:`rd_limit_sets` Boolean, each row a 1 at the token it follows."""
    z, q, k, v = _check_inputs(z, q, k, v, beta)
    return _weights(z, q, k, Propagator(v)(float(t)), beta)


def rescaled_velocity(t: float, z: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                      beta: float = 1.0, flow: Propagator | None = None) -> np.ndarray:
    """``dz_i/dt = sum_j P_ij V (z_j - z_i)`` with ``P`` the softmax of ``beta <Q e^{tV} z_i, K e^{tV} z_j>``
    (MATH.md §12.1); ``flow``: a :class:`Propagator` of ``v`` to reuse."""
    flow = Propagator(v) if flow is None else flow
    p = _weights(z, q, k, flow(t), beta)
    return (p @ z - z) @ v.T


def rescaled_tokens(z0, q, k, v, times, beta: float = 1.0, rtol: float = 1e-12, atol: float = 1e-14) -> np.ndarray:
    """The rescaled tokens ``(len(times), n, d)`` at the sorted ``times`` (from ``t = 0``), DOP853 at ``rtol``,
    ``atol`` (MATH.md §12.1)."""
    z0, q, k, v = _check_inputs(z0, q, k, v, beta)
    times = np.asarray(times, dtype=float)
    require(times.ndim == 1 and times.size >= 1 and bool(np.isfinite(times).all()) and times[0] >= 0
            and bool(np.all(np.diff(times) > 0)), "times must be increasing finite times >= 0")
    _check_time("rtol", rtol)
    _check_time("atol", atol)
    shape = z0.shape

    flow = Propagator(v)

    def rhs(t, y):
        return rescaled_velocity(t, y.reshape(shape), q, k, v, beta, flow).ravel()

    if times[-1] == 0:
        return z0[None].copy()
    done = solve_ivp(rhs, (0.0, float(times[-1])), z0.ravel(), method="DOP853", t_eval=times, rtol=rtol, atol=atol)
    if not done.success:                                     # pragma: no cover - DOP853 does not fail on this smooth ODE
        raise RuntimeError(f"the rescaled integration failed: {done.message}")
    return done.y.T.reshape((len(times),) + shape)


def _frozen_step(z: np.ndarray, p: np.ndarray, v: np.ndarray, dt: float, stages: str) -> np.ndarray:
    """One RK4 step of ``F(z)_i = sum_j P_ij V (z_j - z_i)`` with ``P`` fixed. ``"script"``: token ``i``'s stages
    shift every token by token ``i``'s own increment (as the reference script does, so they coincide up to
    rounding); ``"whole"``: the stages move all tokens together (RK4 of the frozen linear system)."""
    if stages == "whole":
        f = lambda y: dt * ((p @ y - y) @ v.T)
        k1 = f(z)
        k2 = f(z + k1 / 2)
        k3 = f(z + k2 / 2)
        k4 = f(z + k3)
        return z + (k1 + 2 * k2 + 2 * k3 + k4) / 6

    def f(shift):          # row i: dt sum_j P_ij V ((z_j + shift_i) - (z_i + shift_i))
        moved = z[None, :, :] + shift[:, None, :]
        own = (z + shift)[:, None, :]
        return dt * np.einsum("ij,ijd->id", p, (moved - own) @ v.T)

    k1 = f(np.zeros_like(z))
    k2 = f(k1 / 2)
    k3 = f(k2 / 2)
    k4 = f(k3)
    return z + (k1 + 2 * k2 + 2 * k3 + k4) / 6


def frozen_attention_steps(z0, q, k, v, t_final: float, dt: float, stages: str = "script",
                           beta: float = 1.0) -> np.ndarray:
    """The rescaled tokens ``(int(T / dt) + 1, n, d)`` stepped as ``clustering-Tformers.py`` steps them: the
    attention formed at the grid time ``linspace(0, T, int(T / dt) + 1)[l]`` and frozen over an RK4 step of
    length ``dt`` (``stages``: :func:`_frozen_step`). Freezing the attention costs ``O(dt^2)`` per step: the
    scheme is first order whatever the stages (MATH.md §12.1)."""
    z0, q, k, v = _check_inputs(z0, q, k, v, beta)
    t_final = _check_time("t_final", t_final)
    dt = _check_time("dt", dt)
    require(dt <= t_final, f"dt must be <= t_final = {t_final:g} (got {dt!r})")
    require(stages in STAGES, f"stages must be one of {', '.join(STAGES)} (got {stages!r})")
    count = int(t_final / dt) + 1
    grid = np.linspace(0.0, t_final, count)
    z = np.empty((count,) + z0.shape)
    z[0] = z0
    flow = Propagator(v)
    for step in range(count - 1):
        p = _weights(z[step], q, k, flow(grid[step]), beta)
        z[step + 1] = _frozen_step(z[step], p, v, dt, stages)
    return z


@dataclass(frozen=True)
class Convergence:
    """Errors of the frozen-attention scheme at ``T`` against the accurate rescaled solution: ``dts``,
    ``errors`` (max over tokens and components), the fitted ``order`` ``p`` and ``constant`` ``C`` of
    ``E = C dt^p``, and the Richardson value ``extrapolated_error`` of ``2 z_{dt/2} - z_dt`` at the two finest
    steps (small when the scheme's limit is the accurate solution)."""
    dts: np.ndarray
    errors: np.ndarray
    order: float
    constant: float
    extrapolated_error: float


def rd_reference_convergence(z0, q, k, v, t_final: float = 2.0, dts=None, stages: str = "script",
                             beta: float = 1.0) -> Convergence:
    """:func:`frozen_attention_steps` at each ``dts`` (default ``T / 2^3 ... T / 2^8``) against
    :func:`rescaled_tokens` at ``t_final`` (MATH.md §12.1)."""
    t_final = _check_time("t_final", t_final)
    dts = t_final / 2.0 ** np.arange(3, 9) if dts is None else np.sort(np.asarray(dts, dtype=float))[::-1]
    require(dts.size >= 2 and bool(np.all(dts > 0)) and bool(np.all(dts <= t_final)),
            f"dts must hold two or more steps in (0, t_final = {t_final:g}]")
    exact = rescaled_tokens(z0, q, k, v, [0.0, t_final], beta)[-1]
    finals = [frozen_attention_steps(z0, q, k, v, t_final, dt, stages, beta)[-1] for dt in dts]
    errors = np.array([np.max(np.abs(z - exact)) for z in finals])
    slope, intercept = np.polyfit(np.log(dts), np.log(errors), 1)
    ratio = dts[-2] / dts[-1]
    extrapolated = (ratio * finals[-1] - finals[-2]) / (ratio - 1)
    return Convergence(dts, errors, float(slope), float(np.exp(intercept)),
                       float(np.max(np.abs(extrapolated - exact))))


def top_eigenpair(v) -> tuple[float, np.ndarray, np.ndarray]:
    """``(lambda_1, phi_1, l_1)``: the eigenvalue of largest real part of ``V``, which must be real, positive and
    simple; its unit right eigenvector ``phi_1`` (sign: largest entry positive) and the left one ``l_1``
    (``l_1^T V = lambda_1 l_1^T``, ``<l_1, phi_1> = 1``), so ``<l_1, z>`` is ``z``'s coordinate along ``phi_1``
    in the splitting ``R^d = span(phi_1) + (the other eigenspaces)`` (MATH.md §12.1)."""
    v = np.asarray(v, dtype=float)
    require(v.ndim == 2 and v.shape[0] == v.shape[1] >= 1 and bool(np.isfinite(v).all()),
            f"v must be a finite square matrix (got shape {v.shape})")
    values, right = np.linalg.eig(v)
    order = np.argsort(-values.real)
    top = values[order[0]]
    gap = top.real - values[order[1]].real if len(values) > 1 else np.inf
    scale = max(1.0, float(np.max(np.abs(values))))
    require(abs(top.imag) <= 1e-12 * scale and top.real > 0 and gap > 1e-9 * scale,
            f"v must have a simple, real, positive eigenvalue of largest real part (got eigenvalues "
            f"{np.round(values, 6).tolist()})")
    phi = right[:, order[0]].real
    phi = phi / np.linalg.norm(phi)
    phi = phi * np.sign(phi[np.argmax(np.abs(phi))])
    values_left, left = np.linalg.eig(v.T)
    ell = left[:, np.argmin(np.abs(values_left - top))].real
    return float(top.real), phi, ell / float(ell @ phi)


def limit_points(z: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The distinct points of ``z`` ``(n, d)``: tokens chained by distances ``<= tol`` are one point (their mean).
    Returns ``(points, labels)``, ``labels[i]`` the index of token ``i``'s point."""
    z = np.atleast_2d(np.asarray(z, dtype=float))
    if len(z) == 1:
        return z.copy(), np.zeros(1, dtype=int)
    labels = fcluster(linkage(z, method="single"), tol, criterion="distance") - 1
    points = np.array([z[labels == c].mean(axis=0) for c in range(labels.max() + 1)])
    return points, labels


def hull_vertex_mask(points: np.ndarray) -> np.ndarray:
    """For each point, whether it is a vertex of the convex hull of ``points`` (computed in the points' affine
    hull, so a flat set works too: one point is a vertex, collinear points have two)."""
    points = np.asarray(points, dtype=float)
    centred = points - points.mean(axis=0)
    if len(points) == 1:
        return np.ones(1, dtype=bool)
    _, sing, vt = np.linalg.svd(centred, full_matrices=False)
    rank = int(np.sum(sing > 1e-10 * max(1.0, sing[0])))
    flat = centred @ vt[:rank].T
    mask = np.zeros(len(points), dtype=bool)
    if rank == 0:
        mask[0] = True
    elif rank == 1:
        mask[[np.argmin(flat[:, 0]), np.argmax(flat[:, 0])]] = True
    else:
        mask[ConvexHull(flat).vertices] = True
    return mask


def hyperplane_levels(z: np.ndarray, v, tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values ``c`` of ``<l_1, z_i>`` (:func:`top_eigenpair`), levels within ``tol`` chained into one:
    ``(levels, labels, l_1)``, the tokens lying on the hyperplanes ``{<l_1, z> = c}``."""
    _, _, ell = top_eigenpair(v)
    levels, labels = limit_points((np.asarray(z, dtype=float) @ ell)[:, None], tol)
    return levels[:, 0], labels, ell


@dataclass(frozen=True)
class LimitSet:
    """The rescaled tokens ``tokens`` ``(len(times), n, d)`` and the limit set read at the last time.

    ``geometry`` is ``"polytope"`` (``V = c I``) or ``"hyperplanes"`` (simple positive top eigenvalue);
    ``values`` the distinct limit points ``(count, d)`` or hyperplane levels ``(count,)``; ``labels[i]`` token
    ``i``'s index among them; ``vertices`` (polytope) whether each point is a vertex of their convex hull;
    ``direction`` (hyperplanes) the left eigenvector ``l_1``; ``spread`` the largest distance of a token from its
    point or level, ``separation`` the smallest distance between two of them (``inf`` for one); ``attention``
    the weights ``P`` at the last time (:func:`attention_matrix`), which tend to a Boolean matrix of rank
    ``count`` (the leaders' columns)."""
    geometry: str
    times: np.ndarray
    tokens: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    count: int
    vertices: np.ndarray | None
    direction: np.ndarray | None
    spread: float
    separation: float
    attention: np.ndarray


def _separation(values: np.ndarray) -> float:
    """The smallest distance between two distinct rows of ``values`` (``inf`` for one row)."""
    values = values.reshape(len(values), -1)
    if len(values) < 2:
        return float("inf")
    gaps = np.linalg.norm(values[:, None, :] - values[None, :, :], axis=-1)
    return float(gaps[np.triu_indices(len(values), 1)].min())


def rd_limit_sets(z0, q, k, v, t_final: float = 30.0, frames: int = 61, tol: float = 1e-6,
                  beta: float = 1.0, rtol: float = 1e-10) -> LimitSet:
    """Integrate the rescaled tokens to ``t_final`` (``frames`` equally spaced times, :func:`rescaled_tokens`) and
    read the limit set the theorem for ``V`` describes (MATH.md §12.1): ``V = c I`` (``c > 0``) with ``Q^T K``
    positive definite, the distinct points (within ``tol``) and which are hull vertices; a simple positive top
    eigenvalue with ``<Q phi_1, K phi_1> > 0``, the levels of ``<l_1, z>`` (within ``tol``). DOP853 at ``rtol``
    (``atol = rtol / 100``): the limits are read to about ``rtol`` times the tokens' size."""
    z0, q, k, v = _check_inputs(z0, q, k, v, beta)
    t_final = _check_time("t_final", t_final)
    require(isinstance(frames, (int, np.integer)) and frames >= 2, f"frames must be an integer >= 2 (got {frames!r})")
    _check_time("tol", tol)
    _check_time("rtol", rtol)
    d = z0.shape[1]
    scalar = bool(np.array_equal(v, v[0, 0] * np.eye(d))) and v[0, 0] > 0
    if scalar:
        a = q.T @ k
        require(bool(np.all(np.linalg.eigvalsh(a + a.T) > 0)),
                "q^T k must be positive definite for V = c I (the polytope theorem's hypothesis)")
    else:
        _, phi, _ = top_eigenpair(v)
        require(float((q @ phi) @ (k @ phi)) > 0, "<q phi_1, k phi_1> must be > 0, phi_1 the top eigenvector of v "
                                                  "(the hyperplane theorem's hypothesis)")
    times = np.linspace(0.0, t_final, int(frames))
    tokens = rescaled_tokens(z0, q, k, v, times, beta, rtol=rtol, atol=rtol / 100)
    last = tokens[-1]
    weights = attention_matrix(t_final, last, q, k, v, beta)
    if scalar:
        values, labels = limit_points(last, tol)
        spread = float(np.max(np.linalg.norm(last - values[labels], axis=1)))
        return LimitSet("polytope", times, tokens, values, labels, len(values), hull_vertex_mask(values), None,
                        spread, _separation(values), weights)
    values, labels, ell = hyperplane_levels(last, v, tol)
    spread = float(np.max(np.abs(last @ ell - values[labels])))
    return LimitSet("hyperplanes", times, tokens, values, labels, len(values), None, ell, spread,
                    _separation(values), weights)


def equal_norm_polytope(d: int, vertices: int, inside: int, seed: int, m=None, radius: float = 4.0) -> np.ndarray:
    """``vertices + inside`` tokens ``(n, d)``: hull vertices of one ``A``-norm ``radius`` (``A = M^T M``, ``M``
    the identity by default; in 2-d at jittered equal angles, otherwise at seeded random directions), then seeded
    convex combinations of them. Every vertex scores itself highest and no interior token does, so for ``V = I``,
    ``Q = K = M`` the limit points are the ``vertices`` (MATH.md §12.1)."""
    require(isinstance(d, (int, np.integer)) and d >= 2, f"d must be an integer >= 2 (got {d!r})")
    require(isinstance(vertices, (int, np.integer)) and vertices > d,
            f"vertices must be an integer > d = {d} (got {vertices!r})")
    require(isinstance(inside, (int, np.integer)) and inside >= 0, f"inside must be an integer >= 0 (got {inside!r})")
    rng = np.random.default_rng(seed)
    if d == 2:
        angles = 2 * np.pi * (np.arange(vertices) + 0.3 * rng.random(vertices)) / vertices
        u = np.c_[np.cos(angles), np.sin(angles)]
    else:
        u = rng.standard_normal((vertices, d))
        u /= np.linalg.norm(u, axis=1)[:, None]
    m = np.eye(d) if m is None else np.asarray(m, dtype=float)
    corners = np.linalg.solve(m, radius * u.T).T
    return np.r_[corners, rng.dirichlet(np.ones(vertices), inside) @ corners]
