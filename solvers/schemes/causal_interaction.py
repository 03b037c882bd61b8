"""Causal (decoder) attention velocity fields of particles, with an optional ALiBi bias (MATH.md §8).

Tokens are ordered: particle ``j = 1..n`` sits at position ``s_j = j / n`` (:func:`token_positions`).
Under ``mask="causal"`` token ``j`` attends to the tokens ``k <= j``, under ``mask="strict"`` to ``k < j``
(token 1 then attends to nothing: its velocity is 0).  With the ALiBi slope ``lambda >= 0`` (mean-field
units, ``m = lambda / n``) and ``q = exp(-lambda / n)``::

    SA:   v_j = sum_k e^{beta <Q x_j, K x_k> - lambda (j - k) / n} V x_k / sum_k e^{beta <Q x_j, K x_k> - lambda (j - k) / n}
    USA:  v_j = sum_k w_jk e^{beta <Q x_j, K x_k>} V x_k,   w_jk = q^{j-k} / sum_k' q^{j-k'}

sums over the attended ``k`` (and ``k'``); on the sphere the velocity is the tangent part ``P_{x_j} v_j``.
The positional weights ``w_jk`` sum to 1 over the attended tokens (:func:`positional_norm` is their
denominator), so USA with ``lambda = 0`` and ``j = n`` is the USA of MATH.md §1.  Under ``mask="strict"``
token ``j`` has the positional weights of token ``j - 1`` under ``mask="causal"`` (the factor ``q``
cancels): both classes compute the causal weights of the *last attended* token ``j' = j - offset``.
Token weights (quadrature weights) do not enter: causal runs take uniform weights (the scheme refuses others).

:class:`CausalDirectInteraction` is :class:`meanfield.solvers.schemes.interaction.DirectInteraction` with the mask and
the bias added to the logits of each row block (SA: the row maximum of the masked, biased logits subtracted
before ``exp``); any ``d``, ``Q, K, V``, several heads; only the columns a block attends to are formed (half
the work of the unmasked sum).

:class:`CausalCircleInteraction` is the circle's ``Q = K = V = I`` path in ``O(n M)`` (MATH.md §2.1, §8): the
Fourier sums ``T_k`` of :class:`meanfield.solvers.schemes.interaction.CircleFourierInteraction` become decaying prefix
sums ``T_k(j) = sum_{k' <= j} q^{j-k'} e^{i k theta_k'} = q T_k(j-1) + e^{i k theta_j}``, computed in chunks of
rows: inside a chunk by one cumulative sum of ``q^{-r} e^{i k theta}`` rescaled by ``q^r`` (``r`` the row in the
chunk; chunks short enough that ``q^{-r} <= e^{CHUNK_SPAN}``, so nothing overflows at any slope), and the
chunk's last row carried into the next.  Rounding stays that of the recursion: the error of ``T_k(j)`` is at
most a few ``eps sum_{k'} q^{j-k'}``, relative to the magnitudes summed, whatever the rescaling.
"""

from __future__ import annotations

import math

import numpy as np


from .interaction import CircleFourierInteraction, DirectInteraction, fourier_phases

#: How many earlier tokens each mask skips: token ``j`` (0-based ``i``) attends to ``k <= i - offset``.
MASK_OFFSET = {"causal": 0, "strict": 1}
#: Rows per chunk of the prefix sums: the chunk's arrays (``(M + 1) x rows`` complex) stay in cache.
CHUNK_ROWS = 2048
#: Largest ``lambda r / n`` rescaling inside a chunk: ``e^512 ~ 2e222`` times ``n`` terms stays finite.
CHUNK_SPAN = 512.0
#: Below this ``lambda`` (all ``n`` tokens), ``sum_{i < c} q^i = c`` to double precision.
FLAT_BELOW = 1e-17


def token_positions(n: int) -> np.ndarray:
    """The positions ``s_j = j / n`` of tokens ``j = 1..n`` (MATH.md §8)."""
    return np.arange(1, n + 1) / n


def positional_norm(count, decay: float) -> np.ndarray:
    """``sum_{i < c} e^{-decay i}`` for counts ``c >= 1`` of attended tokens, ``decay = lambda / n``: the denominator
    of the USA positional weights ``w_jk`` (MATH.md §8), ``(1 - q^c) / (1 - q)`` (``c`` at ``decay = 0``)."""
    count = np.asarray(count, dtype=float)
    if decay * np.max(count, initial=1.0) < FLAT_BELOW:
        return count
    return np.expm1(-decay * count) / math.expm1(-decay)


class CausalDirectInteraction(DirectInteraction):
    """The masked, ALiBi-biased direct sum (module docstring): ``O(B n^2 (k + d) / 2)`` in row blocks.

    ``mask``: ``"causal"`` or ``"strict"``; ``alibi``: the slope ``lambda >= 0``.  The other parameters are
    :class:`meanfield.solvers.schemes.interaction.DirectInteraction`'s (dot-product kernel only: ``kernel`` stays ``"dot"``).
    """

    def __init__(self, beta: float, attention: str, Q=None, K=None, V=None, weights=None, *, mask: str,
                 alibi: float, heads=None, **options):
        super().__init__(beta, attention, Q, K, V, weights, heads=heads, **options)
        self.mask, self.alibi, self.offset = mask, float(alibi), MASK_OFFSET[mask]

    def _bias(self, rows: range, columns: int, n: int) -> np.ndarray:
        """The logits' bias of query rows ``rows`` (0-based) against keys ``0 .. columns-1``: ``-lambda lag / n``
        with ``lag = j' - k`` (USA: minus ``log`` of the positional norm of ``j'``), ``-inf`` where masked."""
        decay = self.alibi / n
        last = np.arange(rows.start, rows.stop) - self.offset          # j', the last attended key of each row
        lag = last[:, None] - np.arange(columns)[None, :]
        bias = -decay * lag if decay > 0 else np.zeros(lag.shape)
        if not self.normalised:
            bias -= np.log(positional_norm(last + 1, decay))[:, None]
        bias[lag < 0] = -np.inf
        return bias

    def _attend(self, queries: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``sum_k w_jk exp(<q_j, k_k>) v_k`` over the attended keys (SA: normalised, row max subtracted) in row
        blocks; rows without attended keys (token 1 under ``mask="strict"``) get 0."""
        batch, n, dim = values.shape
        sa = self.normalised
        if sa:       # the normaliser rides in the GEMM as a last column of ones
            values = np.concatenate((values, np.ones((batch, n, 1))), -1)
        out = np.zeros((batch, n, dim))
        size = self.block_rows(batch, n)
        for start in range(self.offset, n, size):
            rows = range(start, min(n, start + size))
            columns = rows.stop - self.offset                          # keys 0 .. j' of the block's last row
            logits = queries[:, start:rows.stop] @ keys[:, :columns].transpose(0, 2, 1)
            logits += self._bias(rows, columns, n)
            if sa:
                logits -= logits.max(axis=2, keepdims=True)
            np.exp(logits, out=logits)
            sums = logits @ values[:, :columns]
            out[:, start:rows.stop] = sums[..., :dim] / sums[..., dim:] if sa else sums
        if not sa and self.unnormalised_factor != 1.0:
            out *= self.unnormalised_factor
        return out


class CausalCircleInteraction(CircleFourierInteraction):
    """``Q = K = V = I`` on the circle under a mask, in ``O(n M)`` by decaying prefix sums (module docstring).

    The coefficients are :class:`meanfield.solvers.schemes.interaction.CircleFourierInteraction`'s; only the sums ``T_k`` change:
    token ``j`` reads the positional average ``U_k(j) = T_k(j') / sum_{k' <= j'} q^{j'-k'}`` of its last attended
    token ``j'``.  :meth:`velocity`, :meth:`attention_parts` (normalisation schemes, MATH.md §6) and the
    ``exp(-beta)`` scaling are inherited; :meth:`scaled_energy` stays the energy of all tokens (MATH.md §2.1), a
    record of where the tokens are, not a Lyapunov function under a mask.
    """

    def __init__(self, beta: float, attention: str, weights, *, mask: str, alibi: float, tol: float = 1e-16):
        super().__init__(beta, attention, weights, tol)
        self.mask, self.alibi, self.offset = mask, float(alibi), MASK_OFFSET[mask]

    def _chunk_rows(self, decay: float) -> int:
        """Rows per chunk: :data:`CHUNK_ROWS`, fewer where ``decay (rows - 1)`` would pass :data:`CHUNK_SPAN`."""
        return CHUNK_ROWS if decay == 0 else max(1, min(CHUNK_ROWS, 1 + int(CHUNK_SPAN / decay)))

    def _averages(self, theta: np.ndarray):
        """Per chunk of rows: ``(rows, phases, U)``, ``phases = exp(i k theta_j)`` and ``U`` the positional average
        each row attends to, both ``(M + 1, B, rows)``; 0 for a row that attends to nothing."""
        batch, n = theta.shape
        count, decay = self.modes.size, self.alibi / n
        size = self._chunk_rows(decay)
        lag = np.arange(size)
        grow, shrink = np.exp(decay * lag), np.exp(-decay * lag)       # q^{-r}, q^r
        carry = np.zeros((count, batch), dtype=complex)                # T at the row before the chunk
        previous = np.zeros((count, batch), dtype=complex)             # U at the row before the chunk
        for start in range(0, n, size):
            stop = min(n, start + size)
            phases = fourier_phases(theta[:, start:stop], count, modes_last=False)
            sums = phases * grow[:stop - start] if decay > 0 else phases.copy()
            sums[..., 0] += math.exp(-decay) * carry                   # q T(start - 1) rides in the first term
            np.cumsum(sums, axis=-1, out=sums)
            carry = sums[..., -1] * shrink[stop - start - 1]           # T at the chunk's last row
            sums *= shrink[:stop - start] / positional_norm(np.arange(start + 1, stop + 1), decay)
            if self.offset:                                            # strict: the row before's average
                sums, previous = np.concatenate((previous[..., None], sums[..., :-1]), -1), sums[..., -1].copy()
            yield slice(start, stop), phases, sums

    def _parts(self, theta: np.ndarray, radial: bool):
        """``(<x, A>, d theta/dt)`` (the first ``None`` unless ``radial``) for angles of shape ``(B, n)``."""
        speed = np.empty(theta.shape)
        out = np.empty(theta.shape) if radial else None
        for rows, phases, means in self._averages(theta):
            local = np.conj(phases)
            local *= means                                             # exp(-ik theta_j) U_k(j)
            speed[:, rows] = np.tensordot(self.speed_coeffs, local.imag, axes=1)
            if radial:
                out[:, rows] = np.tensordot(self.radial_coeffs, local.real, axes=1)
            if self.normalised:
                density = np.tensordot(self.density_coeffs, local.real, axes=1)
                if rows.start == 0 and self.offset:
                    density[:, 0] = 1.0                                # token 1 attends to nothing: speed 0
                speed[:, rows] /= density
                if radial:
                    out[:, rows] /= density
        return out, speed

    def angular_velocity(self, theta: np.ndarray) -> np.ndarray:
        """``d theta_j / dt`` for angles of shape ``(B, n)`` (MATH.md §8)."""
        return self._parts(theta, False)[1]

    def components(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(<x_j, v_j>, d theta_j/dt)``: the radial and angular parts of ``v_j`` (before projection; MATH.md §6)."""
        return self._parts(theta, True)
