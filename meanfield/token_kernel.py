"""The token kernels of particle attention (MATH.md §1, §11): how two tokens' queries and keys weigh each other.

* :class:`DotProduct` (``dot``): weights ``exp(beta <Q x_i, K x_j>)``, the transformer's; the only kernel on the
  sphere, with an interaction energy, exact merges of coincident tokens and the harmonic paths;
* :class:`SquaredDistance` (``l2``): weights ``exp(-beta |Q x_i - K x_j|^2 / 2)`` (tokens in R^d);
* :class:`Sinkhorn` (``sinkhorn``, Sander et al., "Sinkformers"): the doubly normalised plan of
  ``exp(beta <Q x_i, K x_j> / eps)`` (tokens in R^d, normalised attention only).

What the particle scheme and the direct interaction ask (:mod:`meanfield.solvers.schemes.particles`,
:mod:`meanfield.solvers.schemes.interaction`) is the object's: where it applies, whether it has the energy and merges,
its Lipschitz estimate (the step bound) and the logits' extra columns.  :data:`TOKEN_KERNELS` registers each by the name
``--kernel`` takes.  The attention *kind* (SA, USA: :mod:`meanfield.attention_kind`) is another concept, and so are
the compiled routines of the circle (``pointwise_kernel``, :mod:`meanfield.solvers.schemes.circle_kernel`).
"""

from __future__ import annotations

import numpy as np

from .errors import registered


def _norm(matrix) -> float:
    """The spectral norm (1 for the identity, given as ``None``)."""
    return 1.0 if matrix is None else float(np.linalg.norm(matrix, 2))


class TokenKernel:
    """What a token kernel is asked (module docstring)."""

    name: str = ""
    #: Tokens on the sphere may use it (else tokens in R^d only).
    on_sphere: bool = False
    #: It needs normalised attention (SA).
    needs_normalised: bool = False
    #: Its weights are a transport plan found by Sinkhorn iterations, not the logits' exponentials.
    plan: bool = False
    #: One head of it has the interaction energy ``E`` (MATH.md §2), exact merges of coincident tokens (§5), the
    #: harmonic and Fourier paths and causal masks (§8).
    single_head_geometry: bool = False

    def lipschitz(self, beta: float, heads: list, single: bool, eps: float) -> float:
        """A Lipschitz estimate of the velocity field, the step bound's factor: every head's
        ``|V| (1 + beta |K| (|Q| + |K|))`` (the logits also carry ``K^T K``)."""
        return sum(_norm(v) * (1.0 + beta * _norm(k) * (_norm(q) + _norm(k))) for q, k, v in heads)

    def logits(self, queries: np.ndarray, keys: np.ndarray, beta: float, normalised: bool):
        """``(queries, keys)`` whose products are the logits (``queries`` already scaled by ``beta``)."""
        return queries, keys

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class DotProduct(TokenKernel):
    """``exp(beta <Q x_i, K x_j>)`` (module docstring)."""

    name, on_sphere, single_head_geometry = "dot", True, True

    def lipschitz(self, beta, heads, single, eps):
        """One head: ``1 + beta |Q| |K|``; several: as :class:`TokenKernel`."""
        if single:
            q, k, _ = heads[0]
            return 1.0 + beta * _norm(q) * _norm(k)
        return super().lipschitz(beta, heads, single, eps)


class SquaredDistance(TokenKernel):
    """``exp(-beta |Q x_i - K x_j|^2 / 2)``: ``beta <q, k>`` less the keys' ``beta |k|^2 / 2`` (a column) and, for
    unnormalised attention, the queries' ``|beta q|^2 / 2 beta`` (SA's normalisation cancels it)."""

    name = "l2"

    def logits(self, queries, keys, beta, normalised):
        ones = np.ones(queries.shape[:-1] + (1,))
        key_bias = -0.5 * beta * np.sum(keys * keys, axis=-1, keepdims=True)
        queries, keys = np.concatenate((queries, ones), -1), np.concatenate((keys, key_bias), -1)
        if not normalised and beta > 0:
            query_bias = -0.5 * np.sum(queries[..., :-1] ** 2, axis=-1, keepdims=True) / beta
            queries, keys = np.concatenate((queries, query_bias), -1), np.concatenate((keys, ones), -1)
        return queries, keys


class Sinkhorn(TokenKernel):
    """The doubly normalised plan of ``exp(beta <Q x_i, K x_j> / eps)`` (module docstring)."""

    name, needs_normalised, plan = "sinkhorn", True, True

    def lipschitz(self, beta, heads, single, eps):
        """``|V| (1 + 2 beta / eps |Q| |K|)`` per head: ``x_j`` moves the logits and the potentials."""
        return sum(_norm(v) * (1.0 + 2 * beta / eps * _norm(q) * _norm(k)) for q, k, v in heads)


#: The registered token kernels, by ``--kernel`` name.
TOKEN_KERNELS: dict[str, TokenKernel] = {kernel.name: kernel for kernel in (DotProduct(), SquaredDistance(),
                                                                             Sinkhorn())}


def row_softmax(scores: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``P_ij = w_j e^{s_ij} / sum_k w_k e^{s_ik}``: the dot-product kernel's weights normalised over each row of the
    scores ``s`` (token weights ``w``: uniform when ``None``), shifted by each row's largest score so that no
    exponential overflows.  ``scores`` is overwritten."""
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores) if weights is None else weights[None, :] * np.exp(scores)
    p /= p.sum(axis=1, keepdims=True)
    return p


def token_kernel(name, option: str = "kernel") -> TokenKernel:
    """The token kernel registered as ``name`` (a kernel passes through); one line naming ``option`` otherwise."""
    return registered(TOKEN_KERNELS, name, option, TokenKernel)
