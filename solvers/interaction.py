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

:class:`DirectInteraction` forms the ``n x n`` logits in row blocks (memory bounded by
``block_bytes``), with one GEMM per block and the row maximum subtracted before ``exp``
for SA (so no overflow at any beta).  :class:`CircleFourierInteraction` is the
``Q = K = V = I`` circle case in ``O(n M)``: ``exp(beta cos t)`` is band-limited to
``M(beta)`` modes (MATH.md §2.1), so the sums over ``j`` become ``M`` weighted Fourier sums.
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.kernels import band_limit, scaled_funk_hecke, scaled_funk_hecke_over_beta

#: Memory budget of one row block (logits take half of it): 4 MiB keeps a block in cache;
#: 256 MiB blocks were 3-6x slower (freshly mapped memory every call; validation/bench_particles.py).
DEFAULT_BLOCK_BYTES = 4 * 2 ** 20
#: Fewer rows per block cost more in per-block overhead than they save (n = 10^5: 25 MB per block).
MIN_BLOCK_ROWS = 16


KERNELS = ("dot", "l2")


class DirectInteraction:
    """General ``Q, K`` (``k x d``), ``V`` (``d x d``), any ``d``; cost ``O(B n^2 (k + d))`` in row blocks.

    ``kernel``: ``"dot"`` (weights ``exp(beta <Q x_i, K x_j>)``) or ``"l2"`` (weights
    ``exp(-beta |Q x_i - K x_j|^2 / 2)``).  ``heads``: optional list of ``(Q_h, K_h, V_h)``
    (``None`` entries: identity) whose velocities are summed; then ``Q, K, V`` must be ``None``.
    """

    def __init__(self, beta: float, attention: str, Q=None, K=None, V=None, weights=None,
                 block_bytes: int = DEFAULT_BLOCK_BYTES, kernel: str = "dot", heads=None):
        self.beta, self.attention = beta, attention
        self.Q, self.K, self.V = Q, K, V
        self.weights = weights
        self.block_bytes = block_bytes
        self.kernel = kernel
        self.heads = None if heads is None else [tuple(head) for head in heads]

    @staticmethod
    def _apply(matrix, x):
        return x if matrix is None else x @ matrix.T

    def block_rows(self, batch: int, n: int) -> int:
        """Rows per block: the byte budget, but at least ``MIN_BLOCK_ROWS`` (per-block overhead)."""
        return max(1, min(n, max(MIN_BLOCK_ROWS, self.block_bytes // (16 * batch * n))))

    @property
    def general(self) -> bool:
        """Whether the L2 kernel or several heads are in use (the generalised path)."""
        return self.kernel != "dot" or self.heads is not None

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """``v_i`` (before projection) for all tokens; ``x`` has shape ``(B, n, d)``."""
        if self.general:
            heads = self.heads if self.heads is not None else [(self.Q, self.K, self.V)]
            out = self._head_velocity(x, *heads[0])
            for head in heads[1:]:
                out += self._head_velocity(x, *head)
            return out
        return self._attend(self.beta * self._apply(self.Q, x), self._apply(self.K, x), self._apply(self.V, x))

    def _attend(self, queries: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``sum_j w_j exp(<q_i, k_j>) v_j`` (SA: normalised, row max subtracted) in row blocks."""
        batch, n, _ = queries.shape
        out = np.empty_like(values)
        rows = self.block_rows(batch, n)
        for start in range(0, n, rows):
            block = slice(start, min(n, start + rows))
            logits = queries[:, block] @ keys.transpose(0, 2, 1)          # (B, b, n)
            if self.attention == "sa":
                logits -= logits.max(axis=2, keepdims=True)
            np.exp(logits, out=logits)
            logits *= self.weights
            out[:, block] = logits @ values
            if self.attention == "sa":
                out[:, block] /= logits.sum(axis=2, keepdims=True)
        return out

    def _head_velocity(self, x: np.ndarray, Q, K, V) -> np.ndarray:
        """One head's ``v_i`` with either kernel (see the module docstring)."""
        queries = self.beta * self._apply(Q, x)
        keys = self._apply(K, x)
        values = self._apply(V, x)
        if self.kernel == "l2":  # the biases ride in the GEMM as extra columns
            ones = np.ones(queries.shape[:-1] + (1,))
            key_bias = -0.5 * self.beta * np.sum(keys * keys, axis=-1, keepdims=True)
            queries, keys = np.concatenate((queries, ones), -1), np.concatenate((keys, key_bias), -1)
            if self.attention != "sa" and self.beta > 0:
                query_bias = -0.5 * np.sum(queries[..., :-1] ** 2, axis=-1, keepdims=True) / self.beta
                queries, keys = np.concatenate((queries, query_bias), -1), np.concatenate((keys, ones), -1)
        return self._attend(queries, keys, values)

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


class CircleFourierInteraction:
    """``Q = K = V = I`` on the circle in ``O(n M)`` with ``M = M(beta, 1e-16)`` (MATH.md §2.1).

    With ``T_k = sum_j w_j exp(i k theta_j)`` and ``phi = theta_j - theta_i``:
    ``sum_j w_j exp(beta cos phi) = I_0 T_0 + 2 sum_k I_k Re(exp(-i k theta_i) T_k)`` and
    ``sum_j w_j exp(beta cos phi) sin phi = sum_k (2 k I_k / beta) Im(exp(-i k theta_i) T_k)``
    (differentiate the Bessel series of ``exp(beta cos phi)``); ``exp(-beta)`` scaling throughout.
    """

    def __init__(self, beta: float, attention: str, weights, tol: float = 1e-16):
        self.beta, self.attention, self.weights = beta, attention, weights
        modes = np.arange(band_limit(beta, 2, tol) + 2)
        self.modes = modes
        scale = math.exp(beta) if attention == "usa" else 1.0
        scaled = scaled_funk_hecke(modes, beta, 2) / (2 * math.pi)            # ive_k(beta)
        self.density_coeffs = np.where(modes == 0, 1.0, 2.0) * scaled * scale
        self.speed_coeffs = 2 * modes * scaled_funk_hecke_over_beta(modes, beta, 2) / (2 * math.pi) * scale

    def _phases(self, theta: np.ndarray) -> np.ndarray:
        """``exp(i k theta)`` for k = 0..M, shape ``(B, n, M+1)``, by repeated multiplication."""
        base = np.exp(1j * theta)
        phases = np.empty(theta.shape + (self.modes.size,), dtype=complex)
        phases[..., 0] = 1.0
        for k in range(1, self.modes.size):
            np.multiply(phases[..., k - 1], base, out=phases[..., k])
        return phases

    def angular_velocity(self, theta: np.ndarray) -> np.ndarray:
        """``d theta_i / dt`` for angles of shape ``(B, n)``."""
        phases = self._phases(theta)
        sums = np.einsum("bjk,j->bk", phases, self.weights)                # T_k
        local = phases.conj() * sums[:, None, :]                          # exp(-ik theta_i) T_k
        speed = local.imag @ self.speed_coeffs
        if self.attention == "sa":
            speed /= local.real @ self.density_coeffs
        return speed

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """Tangent velocity ``(d theta/dt) (-sin theta, cos theta)`` (already projected)."""
        theta = np.arctan2(x[..., 1], x[..., 0])
        speed = self.angular_velocity(theta)
        return np.stack((-np.sin(theta) * speed, np.cos(theta) * speed), axis=-1)

    def scaled_energy(self, x: np.ndarray) -> np.ndarray:
        """``exp(-beta) E = (1/2 beta) sum_k ive_|k| |T_k|^2`` (MATH.md §2.1)."""
        theta = np.arctan2(x[..., 1], x[..., 0])
        sums = np.einsum("bjk,j->bk", self._phases(theta), self.weights)
        ive = scaled_funk_hecke(self.modes, self.beta, 2) / (2 * math.pi)
        return (np.abs(sums) ** 2 @ (np.where(self.modes == 0, 1.0, 2.0) * ive)) / (2 * self.beta)
