"""Attention velocity fields of weighted particle systems (MATH.md §1).

For tokens ``x_i`` (shape ``(B, n, d)``: ``B`` independent systems of ``n`` tokens in R^d)
with weights ``w_j`` (summing to 1; uniform ``1/n`` for i.i.d. tokens):

    SA:   v_i = sum_j w_j exp(beta <Q x_i, K x_j>) V x_j / sum_k w_k exp(beta <Q x_i, K x_k>)
    USA:  v_i = sum_j w_j exp(beta <Q x_i, K x_j>) V x_j

and on the sphere the tangent part ``P_{x_i} v_i``.  With uniform weights USA is MATH.md's
``1/n`` normalisation; both are the PDE's ``X[rho]`` evaluated on the empirical measure.

Generalisations (tokens in R^d, MATH.md §3): ``Q, K`` may be rectangular ``k x d`` (same
``k``; ``V`` stays ``d x d``); ``kernel="l2"`` replaces ``<Q x_i, K x_j>`` by
``-|Q x_i - K x_j|^2 / 2``, computed as the logits ``<Q x_i, K x_j> - |K x_j|^2 / 2``
(the ``-|Q x_i|^2 / 2`` term is constant in ``j`` and cancels in SA's normalisation; USA
keeps it); ``heads = [(Q_h, K_h, V_h), ...]`` sums the velocities of the heads.

Sinkhorn attention (``kernel="sinkhorn"``, Sander et al., "Sinkformers"; SA and R^d only): with
``G_ij = exp(beta <Q x_i, K x_j> / eps)`` find scalings ``a_i, b_j > 0`` such that the plan
``P_ij = a_i G_ij b_j w_i w_j`` has both marginals equal to the weights, and move each token by
the conditional mean ``v_i = sum_j (P_ij / w_i) V x_j``.  In log potentials ``f = log a``,
``g = log b`` the plan's rows are the softmax of ``beta <Q x_i, K x_j> / eps + g_j`` (weights
``w_j``), so once ``g`` is known the velocity is SA with a key bias.  :meth:`DirectInteraction.sinkhorn_potentials`
alternates exact log-domain row and column steps (log-sum-exp with the maximum subtracted: no
overflow at any ``beta / eps``) with cheap multiplicative steps on the stored kernel
``exp(logits + f_i + g_j)`` (two matrix-vector products per iteration), absorbing the scalings
into ``f, g`` whenever they leave ``[e^-30, e^30]`` (Schmitzer's stabilised scaling).  Above
``sinkhorn_dense_bytes`` the systems of a batch go through the dense path in chunks that fit;
only when one system does not, its ``n x n`` matrices are not stored: every iteration recomputes the
logits in row blocks (one GEMM and two ``exp`` per entry per iteration; memory bounded as in SA).
Iterations stop when the marginal error ``max_j |(sum_i P_ij) / w_j - 1|`` (rows exact) is below
``sinkhorn_tol``; ``sinkhorn_max_iter`` half-steps without that raise :class:`InputError`.
The potentials of the last call warm-start the next one (per head; the stepper calls ``rhs``
with nearby states).

:class:`DirectInteraction` forms the ``n x n`` logits in row blocks (memory bounded by
``block_bytes``), with one GEMM per block and the row maximum subtracted before ``exp``
for SA (so no overflow at any beta).  :class:`CircleFourierInteraction` is the
``Q = K = V = I`` circle case in ``O(n M)``: ``exp(beta cos t)`` is band-limited to
``M(beta)`` modes (MATH.md §2.1), so the sums over ``j`` become ``M`` weighted Fourier sums.
:class:`SphereHarmonicInteraction` is its S^2 counterpart (``d = 3``, ``Q = K = V = I``) in
``O(n + L^2 log L)``: non-uniform spherical-harmonic transforms through the band-limited kernel
(MATH.md §2.2).  Both return the velocity already projected on the tangent space (``projected``)
and give the radial part ``<theta, A>`` of the normalisation schemes (MATH.md §6) by
:meth:`attention_parts`.
"""

from __future__ import annotations

import math
from functools import cached_property

import ducc0
import numpy as np

from meanfield.attention_kind import attention_kind
from meanfield.token_kernel import token_kernel
from meanfield.errors import require
from meanfield.harmonics import SHT_MIN_EPSILON, m_major_layout, point_mass_coefficients, sphere_locations
from meanfield.memo import ArrayMemo
from meanfield.app.threads import NONUNIFORM_THREADS
from meanfield.kernel_operator import KernelOperator
from meanfield.kernels import band_limit, scaled_funk_hecke

#: Memory budget of one row block (logits take half of it): 4 MiB keeps a block in cache;
#: 256 MiB blocks were 3-6x slower (freshly mapped memory every call; validation/benchmarks/particles.py).
DEFAULT_BLOCK_BYTES = 4 * 2 ** 20
#: Fewer rows per block cost more in per-block overhead than they save (n = 10^5: 25 MB per block).
MIN_BLOCK_ROWS = 16


#: Sinkhorn: largest marginal error accepted (max norm, relative to the weights).
SINKHORN_TOL = 1e-12
#: Sinkhorn: half-steps (row or column updates) allowed before giving up.
SINKHORN_MAX_ITER = 20000
#: Sinkhorn: memory for the stored ``n x n`` logits and kernel (two ``B n^2`` float arrays);
#: 256 MiB holds n = 4096 for one system.  Larger problems recompute the logits in row blocks.
SINKHORN_DENSE_BYTES = 2 ** 28
#: Sinkhorn: scalings beyond ``exp(+-SINKHORN_ABSORB)`` are absorbed into the log potentials.
SINKHORN_ABSORB = 30.0
#: Stand-in for ``log 0`` (massless tokens): finite, so no ``inf - inf`` in the blocked reductions.
LOG_ZERO = -1e300


class DirectInteraction:
    """General ``Q, K`` (``k x d``), ``V`` (``d x d``), any ``d``; cost ``O(B n^2 (k + d))`` in row blocks.

    ``kernel``: ``"dot"`` (weights ``exp(beta <Q x_i, K x_j>)``), ``"l2"`` (weights
    ``exp(-beta |Q x_i - K x_j|^2 / 2)``) or ``"sinkhorn"`` (the doubly normalised plan of
    ``exp(beta <Q x_i, K x_j> / sinkhorn_eps)``; SA only).  ``heads``: optional list of
    ``(Q_h, K_h, V_h)`` (``None`` entries: identity) whose velocities are summed; then ``Q, K, V``
    must be ``None``.  ``sinkhorn_*``: see the module docstring.  After a Sinkhorn call,
    ``sinkhorn_iterations`` lists the half-steps each head took.
    """

    #: the output is ``v_i`` before the tangent projection
    projected = False

    def __init__(self, beta: float, attention: str, Q=None, K=None, V=None, weights=None,
                 block_bytes: int = DEFAULT_BLOCK_BYTES, kernel: str = "dot", heads=None,
                 sinkhorn_eps: float = 1.0, sinkhorn_tol: float = SINKHORN_TOL,
                 sinkhorn_max_iter: int = SINKHORN_MAX_ITER, sinkhorn_dense_bytes: int = SINKHORN_DENSE_BYTES,
                 warm_start: bool = True):
        self.beta, self.attention = beta, attention
        kind = attention_kind(attention)
        self.normalised = kind.normalised     # SA: the output over the kernel's mass
        #: an unnormalised kind's output over the plain sum ``sum_j w_j e^{beta <q, k>} v_j`` (USA's: exactly 1)
        self.unnormalised_factor = kind.relative_scale(beta)
        self.Q, self.K, self.V = Q, K, V
        self.weights = weights
        self.block_bytes = block_bytes
        self.kernel, self.token_kernel = kernel, token_kernel(kernel)
        self.heads = None if heads is None else [tuple(head) for head in heads]
        self.sinkhorn_eps, self.sinkhorn_tol, self.sinkhorn_max_iter = sinkhorn_eps, sinkhorn_tol, sinkhorn_max_iter
        self.sinkhorn_dense_bytes, self.warm_start = sinkhorn_dense_bytes, warm_start
        self._potentials = {}           # head index -> (f, g) of the last call (warm start)
        self.sinkhorn_iterations = []

    @staticmethod
    def _apply(matrix, x):
        return x if matrix is None else x @ matrix.T

    def block_rows(self, batch: int, n: int) -> int:
        """Rows per block: the byte budget, but at least ``MIN_BLOCK_ROWS`` (per-block overhead)."""
        return max(1, min(n, max(MIN_BLOCK_ROWS, self.block_bytes // (16 * batch * n))))

    @property
    def head_list(self) -> list:
        """The heads ``[(Q_h, K_h, V_h), ...]``; a single head when ``heads`` was not given."""
        return self.heads if self.heads is not None else [(self.Q, self.K, self.V)]

    @property
    def general(self) -> bool:
        """Whether another kernel than the dot product's or several heads are in use (the generalised path)."""
        return not self.token_kernel.single_head_geometry or self.heads is not None

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """``v_i`` (before projection) for all tokens; ``x`` has shape ``(B, n, d)``."""
        if self.general:
            heads = self.head_list
            if self.token_kernel.plan:
                self.sinkhorn_iterations = []
                out = self._sinkhorn_velocity(x, 0, *heads[0])
                for index, head in enumerate(heads[1:], 1):
                    out += self._sinkhorn_velocity(x, index, *head)
                return out
            out = self._head_velocity(x, *heads[0])
            for head in heads[1:]:
                out += self._head_velocity(x, *head)
            return out
        return self._attend(self.beta * self._apply(self.Q, x), self._apply(self.K, x), self._apply(self.V, x))

    def _attend(self, queries: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``sum_j w_j exp(<q_i, k_j>) v_j`` (SA: normalised, row max subtracted) in row blocks.

        The weights ride in the right-hand factor (``w_j v_j``, and for SA a last column ``w_j``),
        so one GEMM per block gives the numerator and the normaliser: three passes over the
        logits (GEMM, max, exp) besides the product.
        """
        batch, n, _ = queries.shape
        dim = values.shape[-1]
        sa = self.normalised
        weights = np.asarray(self.weights, dtype=float)[:, None]
        weighted = values * weights
        if sa:
            weighted = np.concatenate((weighted, np.broadcast_to(weights, (batch, n, 1))), -1)
        out = np.empty_like(values)
        rows = self.block_rows(batch, n)
        for start in range(0, n, rows):
            block = slice(start, min(n, start + rows))
            logits = queries[:, block] @ keys.transpose(0, 2, 1)          # (B, b, n)
            if sa:
                logits -= logits.max(axis=2, keepdims=True)
            np.exp(logits, out=logits)
            sums = logits @ weighted
            out[:, block] = sums[..., :dim] / sums[..., dim:] if sa else sums
        if not sa and self.unnormalised_factor != 1.0:
            out *= self.unnormalised_factor
        return out

    def _head_velocity(self, x: np.ndarray, Q, K, V) -> np.ndarray:
        """One head's ``v_i`` with either kernel (see the module docstring)."""
        queries = self.beta * self._apply(Q, x)
        keys = self._apply(K, x)
        values = self._apply(V, x)
        queries, keys = self.token_kernel.logits(queries, keys, self.beta, self.normalised)  # biases: extra columns
        return self._attend(queries, keys, values)

    # -- Sinkhorn attention -----------------------------------------------------------------------
    def _log_weights(self) -> np.ndarray:
        w = np.asarray(self.weights, dtype=float)
        return np.where(w > 0, np.log(np.where(w > 0, w, 1.0)), LOG_ZERO)

    def _dense_systems(self, n: int) -> int:
        """How many systems of ``n`` tokens fit the dense path's budget (two ``n x n`` float arrays each)."""
        return self.sinkhorn_dense_bytes // (2 * 8 * n * n)

    def sinkhorn_potentials(self, x: np.ndarray, head: int = 0):
        """Log potentials ``(f, g)`` (each ``(B, n)``) of head ``head``'s plan for tokens ``x`` of shape ``(B, n, d)``:
        ``P_ij = w_i w_j exp(beta <Q x_i, K x_j> / eps + f_i + g_j)``."""
        queries, keys = self._sinkhorn_queries_keys(x, *self.head_list[head][:2])
        f, g, _ = self._sinkhorn(queries, keys, head, None)
        return f, g

    def sinkhorn_plan(self, x: np.ndarray, head: int = 0) -> np.ndarray:
        """The dense ``(B, n, n)`` plan ``P`` of head ``head`` (for tests and small ``n``)."""
        queries, keys = self._sinkhorn_queries_keys(x, *self.head_list[head][:2])
        f, g, _ = self._sinkhorn(queries, keys, head, None)
        log_w = self._log_weights()
        return np.exp(queries @ keys.transpose(0, 2, 1) + (f + log_w)[:, :, None] + (g + log_w)[:, None, :])

    def _sinkhorn_queries_keys(self, x: np.ndarray, Q, K):
        """``(beta / eps) Q x`` and ``K x``: their inner products are the Sinkhorn logits."""
        return (self.beta / self.sinkhorn_eps) * self._apply(Q, x), self._apply(K, x)

    def _sinkhorn_velocity(self, x: np.ndarray, head: int, Q, K, V) -> np.ndarray:
        queries, keys = self._sinkhorn_queries_keys(x, Q, K)
        values = self._apply(V, x)
        _, g, out = self._sinkhorn(queries, keys, head, values)
        if out is not None:
            return out
        # the plan's rows: SA with the key bias g_j riding in the GEMM as an extra column
        ones = np.ones(queries.shape[:-1] + (1,))
        return self._attend(np.concatenate((queries, ones), -1), np.concatenate((keys, g[..., None]), -1), values)

    def _fail(self, error: float):
        require(False, f"Sinkhorn did not reach marginal error {self.sinkhorn_tol:g} in "
                              f"{self.sinkhorn_max_iter} half-steps (reached {error:.3g}); raise sinkhorn_eps, "
                              f"lower beta or raise sinkhorn_max_iter")

    def _sinkhorn(self, queries, keys, head: int, values):
        """Potentials ``(f, g)`` for logits ``<q_i, k_j>``; with ``values``, also the velocity (dense path only)."""
        batch, n, _ = queries.shape
        previous = self._potentials.get(head) if self.warm_start else None
        g = previous[1].copy() if previous is not None and previous[1].shape == (batch, n) else np.zeros((batch, n))
        per_chunk = self._dense_systems(n)
        if per_chunk >= 1:   # the systems are independent: dense in chunks that fit the budget
            parts = [self._sinkhorn_dense(queries[c], keys[c], g[c], None if values is None else values[c])
                     for c in (slice(start, start + per_chunk) for start in range(0, batch, per_chunk))]
            f, g = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
            out = None if values is None else np.concatenate([p[2] for p in parts])
            steps = max(p[3] for p in parts)
        else:
            f, g, steps = self._sinkhorn_blocked(queries, keys, g)
            out = None
        self._potentials[head] = (f, g)
        self.sinkhorn_iterations.append(steps)
        return f, g, out

    def _sinkhorn_dense(self, queries, keys, g, values):
        """Stored logits; log-domain steps, then multiplicative steps on the kernel until absorption or convergence."""
        w = np.asarray(self.weights, dtype=float)
        log_w, massive = self._log_weights(), w > 0
        logits = queries @ keys.transpose(0, 2, 1)                        # (B, n, n)
        work = np.empty_like(logits)

        def log_step(potential, axis):   # -logsumexp over `axis` of logits + potential + log w
            if axis == 2:
                np.add(logits, (potential + log_w)[:, None, :], out=work)
            else:
                np.add(logits, (potential + log_w)[:, :, None], out=work)
            top = work.max(axis=axis, keepdims=True)
            np.subtract(work, top, out=work)
            np.exp(work, out=work)
            return -(np.squeeze(top, axis) + np.log(work.sum(axis=axis)))

        steps, error = 0, np.inf
        f = log_step(g, 2)                                               # rows exact
        steps += 1
        while True:
            np.add(logits, f[:, :, None], out=work)
            work += g[:, None, :]
            np.exp(work, out=work)                                       # kernel; w_j-weighted rows sum to 1
            kernel = work
            u, v = np.ones_like(f), np.ones_like(g)
            absorbed = False
            while steps < self.sinkhorn_max_iter:
                column = ((w * u)[:, None, :] @ kernel)[:, 0, :]         # sum_i w_i u_i K_ij
                error = float(np.max(np.abs(v[:, massive] * column[:, massive] - 1.0)))
                if error < self.sinkhorn_tol:
                    break
                with np.errstate(divide="ignore", over="ignore"):
                    v_new = 1.0 / column
                    u_new = 1.0 / (kernel @ (w * v_new)[:, :, None])[..., 0]
                steps += 2
                if not (np.all(np.isfinite(v_new)) and np.all(np.isfinite(u_new))
                        and np.max(np.abs(np.log(v_new))) < SINKHORN_ABSORB
                        and np.max(np.abs(np.log(u_new))) < SINKHORN_ABSORB):
                    absorbed = True
                    break
                u, v = u_new, v_new
            f, g = f + np.log(u), g + np.log(v)
            if not absorbed:
                break
            g = log_step(f, 1)
            f = log_step(g, 2)
            steps += 2
        if error >= self.sinkhorn_tol:
            self._fail(error)
        out = None
        if values is not None:   # rows of the plan: K_ij w_j v_j (u_i cancels)
            scale = (w * v)[:, :, None]
            out = (kernel @ (scale * values)) / (kernel @ scale)
        return f, g, out, steps

    def _sinkhorn_blocked(self, queries, keys, g):
        """Log-domain iterations recomputing the logits in row blocks: the row step per block, and the
        column log-sum-exp accumulated block by block (running maximum).  With ``f`` the new rows
        (exact), ``exp(g_old - g_new)`` is the column marginal of ``(f, g_old)`` over the weights."""
        batch, n, _ = queries.shape
        log_w = self._log_weights()
        massive = np.asarray(self.weights) > 0
        rows = self.block_rows(batch, n)
        f = np.empty((batch, n))
        keys_t = keys.transpose(0, 2, 1)
        steps = 0
        while True:
            col_max = np.full((batch, n), LOG_ZERO)
            col_sum = np.zeros((batch, n))
            key_bias = (g + log_w)[:, None, :]
            for start in range(0, n, rows):
                block = slice(start, min(n, start + rows))
                logits = queries[:, block] @ keys_t                       # (B, b, n)
                work = logits + key_bias
                top = work.max(axis=2, keepdims=True)
                work -= top
                np.exp(work, out=work)
                f[:, block] = -(top[..., 0] + np.log(work.sum(axis=2)))
                logits += (f[:, block] + log_w[block])[:, :, None]
                top = np.maximum(col_max, logits.max(axis=1))
                col_sum *= np.exp(col_max - top)
                logits -= top[:, None, :]
                np.exp(logits, out=logits)
                col_sum += logits.sum(axis=1)
                col_max = top
            g_new = -(col_max + np.log(col_sum))
            steps += 2
            error = float(np.max(np.abs(np.expm1(g[:, massive] - g_new[:, massive]))))
            if error < self.sinkhorn_tol:
                return f, g, steps
            if steps >= self.sinkhorn_max_iter:
                self._fail(error)
            g = g_new

    def scaled_energy(self, x: np.ndarray) -> np.ndarray:
        """``exp(-beta) E`` per system, ``E = (1/2 beta) sum_ij w_i w_j exp(beta <x_i, x_j>)`` (MATH.md §2)."""
        batch, n, _ = x.shape
        total = np.zeros(batch)
        rows = self.block_rows(batch, n)
        for start in range(0, n, rows):
            block = slice(start, min(n, start + rows))
            gram = x[:, block] @ x.transpose(0, 2, 1)
            total += (np.exp(self.beta * (gram - 1.0)) @ self.weights) @ self.weights[block]
        return total / (2 * self.beta)


def fourier_phases(theta: np.ndarray, count: int, modes_last: bool = True) -> np.ndarray:
    """``exp(i k theta)`` for ``k = 0 .. count-1`` by repeated multiplication (MATH.md §2.1): shape
    ``theta.shape + (count,)``, or ``(count,) + theta.shape`` (one contiguous row per mode) if not ``modes_last``.
    The phases of the circle's O(n M) Bessel sums, for particles and Lagrangian nodes alike.  (numpy's
    complex product rounds differently on strided and contiguous rows: the two layouts agree to round-off,
    each repeats itself bit for bit.)"""
    phases = np.empty(theta.shape + (count,) if modes_last else (count,) + theta.shape, dtype=complex)
    rows = np.moveaxis(phases, -1, 0) if modes_last else phases
    rows[0] = 1.0
    rows[1] = base = np.exp(1j * theta)
    for k in range(2, count):
        np.multiply(rows[k - 1], base, out=rows[k])
    return phases


class CircleFourierInteraction:
    """``Q = K = V = I`` on the circle in ``O(n M)`` with ``M = M(beta, 1e-16)`` (MATH.md §2.1).

    With ``T_k = sum_j w_j exp(i k theta_j)`` and ``phi = theta_j - theta_i``:
    ``sum_j w_j exp(beta cos phi) = I_0 T_0 + 2 sum_k I_k Re(exp(-i k theta_i) T_k)`` and
    ``sum_j w_j exp(beta cos phi) sin phi = sum_k (2 k I_k / beta) Im(exp(-i k theta_i) T_k)``
    (differentiate the Bessel series of ``exp(beta cos phi)``); ``exp(-beta)`` scaling throughout.
    The radial part (normalisation schemes, MATH.md §6) is the beta-derivative of the first sum:
    ``sum_j w_j exp(beta cos phi) cos phi = I_1 T_0 + sum_{k >= 1} (I_{k-1} + I_{k+1}) Re(exp(-i k theta_i) T_k)``.
    """

    #: :meth:`velocity` is already the tangent part
    projected = True

    def __init__(self, beta: float, attention: str, weights, tol: float = 1e-16):
        self.beta, self.attention, self.weights = beta, attention, weights
        self.normalised = attention_kind(attention).normalised
        self.kernel_operator = operator = KernelOperator.banded(beta, 2, attention, tol, extra=1)
        self.modes = modes = operator.degrees
        self.multiplicity = np.where(modes == 0, 1.0, 2.0)                    # T_k and its conjugate T_-k
        scaled = operator.conv / (2 * math.pi)                                  # ive_k(beta)
        self.density_coeffs = operator.scaled(self.multiplicity * scaled)
        self.speed_coeffs = operator.scaled(2 * modes * operator.over_beta / (2 * math.pi))
        below, above = scaled_funk_hecke(np.abs(modes - 1), beta, 2), scaled_funk_hecke(modes + 1, beta, 2)
        self.radial_coeffs = operator.scaled(np.where(modes == 0, above, below + above) / (2 * math.pi))

    def _phases(self, theta: np.ndarray) -> np.ndarray:
        """``exp(i k theta)`` for k = 0..M, shape ``(B, n, M+1)`` (:func:`fourier_phases`)."""
        return fourier_phases(theta, self.modes.size)

    def angular_velocity(self, theta: np.ndarray) -> np.ndarray:
        """``d theta_i / dt`` for angles of shape ``(B, n)``."""
        phases = self._phases(theta)
        sums = np.einsum("bjk,j->bk", phases, self.weights)                # T_k
        local = phases.conj() * sums[:, None, :]                          # exp(-ik theta_i) T_k
        speed = local.imag @ self.speed_coeffs
        if self.normalised:
            speed /= local.real @ self.density_coeffs
        return speed

    @cached_property
    def _node_tables(self):
        """The coefficient rows of :meth:`node_sums` and :meth:`node_radial`."""
        modes, speed_c, density_c = self.modes, self.speed_coeffs, self.density_coeffs
        # rows: numerator sum s_k Im, its derivative sum -k s_k Re, denominator sum d_k Re, its derivative
        # sum k d_k Im (d/dtheta_i of exp(-i k theta_i) T_k is -i k times it); Im = b C - a S, Re = a C + b S
        uses_b = np.array([True, False, False, True])[:, None]            # rows whose C-coefficient is b
        coeffs_c = np.stack((speed_c, -modes * speed_c, density_c, modes * density_c))
        coeffs_s = np.stack((-speed_c, -modes * speed_c, density_c, -modes * density_c))
        # <theta_i, A_i> numerator: exp(beta cos phi) cos phi = d/dbeta of the Bessel series, exp(-beta)
        # scaled, in the Re rows like the density's (MATH.md §6)
        operator = self.kernel_operator
        radial = operator.scaled(self.multiplicity * operator.radial / (2 * math.pi))
        return uses_b, coeffs_c, coeffs_s, radial

    def node_sums(self, theta: np.ndarray):
        """The sums at the nodes themselves (angles of shape ``(n,)``), with their ``theta``-derivatives, in
        real form: with ``C_kj = cos(k theta_j)``, ``S_kj = sin(k theta_j)``, ``T_k = a_k + i b_k``, the terms
        ``exp(-i k theta_i) T_k`` have real part ``a_k C_ki + b_k S_ki`` and imaginary part ``b_k C_ki - a_k S_ki``.
        Returns the rows (numerator, its derivative, denominator, its derivative), two GEMMs, and the parts
        ``(C, S, a, b)`` that :meth:`node_radial` reuses."""
        uses_b, coeffs_c, coeffs_s, _ = self._node_tables
        phases = fourier_phases(theta, self.modes.size, modes_last=False)    # rows exp(i k theta), contiguous
        cos, sin = phases.real.copy(), phases.imag.copy()
        a, b = cos @ self.weights, sin @ self.weights
        sums = (coeffs_c * np.where(uses_b, b, a)) @ cos + (coeffs_s * np.where(uses_b, a, b)) @ sin
        return sums, (cos, sin, a, b)

    def node_radial(self, parts) -> np.ndarray:
        """The numerator of ``<theta_i, A_i>`` (MATH.md §6) at the nodes of :meth:`node_sums` from its ``parts``."""
        cos, sin, a, b = parts
        radial = self._node_tables[3]
        return (radial * a) @ cos + (radial * b) @ sin

    def components(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(<x_i, v_i>, d theta_i/dt)``: the radial and angular parts of ``v_i`` (before projection)
        for angles of shape ``(B, n)``; ``|v_i|^2`` is the sum of their squares (MATH.md §6)."""
        phases = self._phases(theta)
        sums = np.einsum("bjk,j->bk", phases, self.weights)
        local = phases.conj() * sums[:, None, :]
        radial, speed = local.real @ self.radial_coeffs, local.imag @ self.speed_coeffs
        if self.normalised:
            density = local.real @ self.density_coeffs
            radial, speed = radial / density, speed / density
        return radial, speed

    def attention_parts(self, x: np.ndarray):
        """``(<x, A>, P_x A, |A|)`` of the attention output ``A`` (MATH.md §6) for unit vectors ``(B, n, 2)``."""
        angle = np.arctan2(x[..., 1], x[..., 0])
        radial, speed = self.components(angle)
        tangent = np.stack((-np.sin(angle) * speed, np.cos(angle) * speed), axis=-1)
        return radial, tangent, np.hypot(radial, speed)

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """Tangent velocity ``(d theta/dt) (-sin theta, cos theta)`` (already projected)."""
        theta = np.arctan2(x[..., 1], x[..., 0])
        speed = self.angular_velocity(theta)
        return np.stack((-np.sin(theta) * speed, np.cos(theta) * speed), axis=-1)

    def scaled_energy(self, x: np.ndarray) -> np.ndarray:
        """``exp(-beta) E = (1/2 beta) sum_k ive_|k| |T_k|^2`` (MATH.md §2.1)."""
        theta = np.arctan2(x[..., 1], x[..., 0])
        sums = np.einsum("bjk,j->bk", self._phases(theta), self.weights)
        return (np.abs(sums) ** 2 @ (self.multiplicity * (self.kernel_operator.conv / (2 * math.pi)))) / (2 * self.beta)


#: Relative accuracy of :class:`SphereHarmonicInteraction` against the direct sum (default).
SPHERE_ACCURACY = 1e-12


class SphereHarmonicInteraction:
    """``Q = K = V = I`` on S^2 (``d = 3``) in ``O(n + L^2 log L)`` by spherical harmonics (MATH.md §2.2).

    With ``mu_lm = sum_j w_j conj(Y_lm(x_j))`` (``ducc0.sht.adjoint_synthesis_general``) and
    the Funk–Hecke coefficients ``kappa_l`` of ``exp(beta t)``:
    ``sum_j w_j exp(beta <x, x_j>) = (K * mu)(x) = sum_lm kappa_l mu_lm Y_lm(x)``, so the tangent part of
    the USA output is ``grad (K * mu) / beta`` (spin-1 ``DERIV1`` synthesis of ``kappa_l mu_lm / beta``),
    SA's is that over ``K * mu`` (spin-0 synthesis), and the radial part ``<x, A>`` is ``d/dbeta (K * mu)``
    (coefficients :func:`meanfield.kernels.scaled_funk_hecke_beta_derivative`; MATH.md §6), SA divided by
    ``K * mu``.  All sums are ``exp(-beta)`` scaled (SA's cancels; USA multiplies ``exp(beta)`` back).

    Accuracy: ``accuracy`` (default :data:`SPHERE_ACCURACY`) relative to the direct sum.  The band is
    ``L = band_limit(beta, 3, accuracy / (1 + beta)) + 2`` (every ``kappa_l / kappa_0`` below that beyond
    ``L - 2``; the gradient weighs degree ``l`` by up to ``l ~ beta`` more: with ``accuracy`` alone the error
    was 1.7e-12 at ``beta = 30`` and 6.6e-12 at 60 for 1e-12) and the transforms'
    ``epsilon = max(accuracy / 4, SHT_MIN_EPSILON)``.  Measured against :class:`DirectInteraction` at
    ``beta = 0.5 .. 60`` the largest difference relative to ``max |v|`` stays below ``accuracy``
    (tests/solvers/test_sphere_harmonic_particles.py, ``validate bench-particles``).
    The transforms' error is absolute (relative to the coefficients' size), so SA tokens where
    ``exp(-beta) K * mu`` is tiny (an isolated token at large ``beta``, where it can fall to ``w_i``) get a
    larger relative error; :attr:`min_density` reports the smallest value of the last call.
    ``nthreads``: ducc0 threads (its adjoint is not bit-reproducible across thread counts).  ``band`` and
    ``epsilon`` override the two settings derived from ``accuracy`` (a scheme with its own band).
    """

    projected = True

    def __init__(self, beta: float, attention: str, weights, accuracy: float = SPHERE_ACCURACY,
                 nthreads: int = NONUNIFORM_THREADS, band: int | None = None, epsilon: float | None = None):
        require(isinstance(accuracy, (int, float)) and 1e-16 <= accuracy < 1,
                f"accuracy must be in [1e-16, 1) (got {accuracy!r})")
        self.beta, self.attention, self.weights = beta, attention, weights
        self.normalised = attention_kind(attention).normalised
        self.accuracy, self.nthreads = float(accuracy), int(nthreads)
        self.band = band = self.band_for(beta, self.accuracy) if band is None else int(band)
        self.epsilon = max(self.accuracy / 4, SHT_MIN_EPSILON) if epsilon is None else float(epsilon)
        degree, order = m_major_layout(band)
        self.multiplicity = np.where(order == 0, 1.0, 2.0)
        self.kernel_operator = operator = KernelOperator(degree, beta, 3, attention)
        self.conv = operator.conv                                                 # exp(-beta) kappa_l
        self.potential = operator.velocity()                                      # gradient / beta
        self.radial = operator.scaled(operator.radial)
        self.min_density = math.inf
        self._memo = ArrayMemo()

    @staticmethod
    def band_for(beta: float, accuracy: float = SPHERE_ACCURACY) -> int:
        """The band ``L = band_limit(beta, 3, accuracy / (1 + beta)) + 2`` of the class docstring (cheap: what
        a caller weighs before building the transforms' tables)."""
        return band_limit(beta, 3, float(accuracy) / (1 + beta)) + 2

    def _transforms(self, loc: np.ndarray) -> dict:
        return dict(lmax=self.band, loc=loc, epsilon=self.epsilon, nthreads=self.nthreads)

    def coefficients(self, x: np.ndarray) -> np.ndarray:
        """``mu_lm`` (``l <= band``, m-major) of one system of tokens ``x`` (shape ``(n, 3)``): those the last
        right-hand side left for this very array when there are (:class:`meanfield.memo.ArrayMemo`; the step
        ends with one at the accepted state, whose frame energy then costs no transform), used once."""
        known = self._memo.get(x)
        self._memo.clear()
        if known is not None and known[1] is self.weights:
            return known[0]
        loc, _ = sphere_locations(x)
        return self._coefficients(loc)

    def _coefficients(self, loc: np.ndarray) -> np.ndarray:
        return point_mass_coefficients(self.weights, loc, self.band, self.epsilon, self.nthreads)

    def fields(self, x: np.ndarray, radial: bool = False, density: bool = False) -> dict:
        """The band-limited sums at one system of tokens ``x`` (shape ``(n, 3)``), spherical components:
        ``v_theta, v_phi`` (the tangent output ``P A``; SA divided by ``K * mu``), ``radial`` (``<x, A>``, with
        ``radial``), ``density`` (``exp(-beta) K * mu``; always for SA, for USA with ``density``), and
        ``loc``, ``trig`` (:func:`sphere_locations`).  What a weighted-node scheme on S^2 needs besides the
        Cartesian velocity (e.g. :class:`meanfield.solvers.schemes.lagrangian.SphereLagrangian`: ``K * mu`` for its step bound)."""
        loc, trig = sphere_locations(x)          # always computed: a right-hand side reads no memo
        mu = self._coefficients(loc)
        self._memo.put(x, (mu, self.weights))   # for the frame's energy at this state (coefficients)
        kw = self._transforms(loc)
        v_theta, v_phi = ducc0.sht.synthesis_general(alm=mu * self.potential, spin=1, mode="DERIV1", **kw)
        out = {"loc": loc, "trig": trig, "radial": None, "density": None}
        if radial:
            out["radial"] = ducc0.sht.synthesis_general(alm=mu * self.radial, spin=0, **kw)[0]
        if self.normalised or density:
            out["density"] = ducc0.sht.synthesis_general(alm=mu * self.conv, spin=0, **kw)[0]
        if self.normalised:
            conv = out["density"]
            self.min_density = min(self.min_density, float(np.min(conv)))
            v_theta /= conv
            v_phi /= conv
            if radial:
                out["radial"] /= conv
        out["v_theta"], out["v_phi"] = v_theta, v_phi
        return out

    @staticmethod
    def cartesian(trig: tuple, v_theta: np.ndarray, v_phi: np.ndarray) -> np.ndarray:
        """Tangent vectors ``v_theta e_theta + v_phi e_phi`` in R^3 (shape ``(n, 3)``) at the tokens of ``trig``."""
        cos_t, sin_t, cos_p, sin_p = trig
        tangent = np.empty((v_theta.size, 3))
        along = v_theta * cos_t
        east, north = along * cos_p, along * sin_p          # each component whole, then one strided write
        east -= v_phi * sin_p
        north += v_phi * cos_p
        tangent[:, 0], tangent[:, 1] = east, north
        np.multiply(v_theta, sin_t, out=along)
        tangent[:, 2] = np.negative(along, out=along)
        return tangent

    def _system(self, x: np.ndarray, radial: bool):
        """Tangent output ``P A`` (Cartesian, ``(n, 3)``) and, with ``radial``, ``<x, A>`` for one system."""
        f = self.fields(x, radial)
        return self.cartesian(f["trig"], f["v_theta"], f["v_phi"]), f["radial"]

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """The tangent velocity ``P_x v`` (already projected) for tokens of shape ``(B, n, 3)``."""
        self.min_density = math.inf
        if x.shape[0] == 1:                                  # one system: its array, not a copy of it
            return self._system(x[0], False)[0][None]
        return np.stack([self._system(system, False)[0] for system in x])

    def attention_parts(self, theta: np.ndarray):
        """``(<theta, A>, P_theta A, |A|)`` of the attention output ``A`` (MATH.md §6), shapes ``(B, n)``,
        ``(B, n, 3)``, ``(B, n)``."""
        self.min_density = math.inf
        parts = [self._system(system, True) for system in theta]
        tangent = np.stack([p[0] for p in parts])
        radial = np.stack([p[1] for p in parts])
        return radial, tangent, np.sqrt(np.sum(tangent * tangent, axis=-1) + radial * radial)

    def scaled_energy(self, x: np.ndarray) -> np.ndarray:
        """``exp(-beta) E = (1/2 beta) sum_lm exp(-beta) kappa_l |mu_lm|^2`` per system (MATH.md §2.2)."""
        return np.array([self.kernel_operator.energy(self.coefficients(system), self.multiplicity) for system in x])
