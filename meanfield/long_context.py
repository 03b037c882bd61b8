"""Long context: one self-attention layer at ``beta = gamma log n`` (MATH.md §7).

``n`` equiangular unit tokens (``<x_i, x_j> = rho`` for ``i != j``, ``0 < rho < 1``) pass through
one SA layer with ``V = I``, ``y_i = sum_j W_ij x_j`` with ``W_ij`` the softmax over ``j`` of
``beta <x_i, x_j>``, and are normalised, ``theta_i = y_i / |y_i|``.

Derivation (MATH.md §7).  Token ``i`` sees itself at logit ``beta`` and every other token at
``beta rho``, so its self weight is ``a = 1 / (1 + (n - 1) E)`` with ``E = exp(-beta (1 - rho))`` and
each other weight is ``b = E a = (1 - a) / (n - 1)``.  With the Gram matrix
``G = rho 1 1^T + (1 - rho) I``, ``<y_i, y_j> = (W G W^T)_ij``; the row sums of ``W`` are 1, so
``(W G W^T)_ij = rho + (1 - rho) (W W^T)_ij``, and ``(W W^T)_ii = a^2 + (n - 1) b^2``,
``(W W^T)_ij = 2 a b + (n - 2) b^2``.  By symmetry every ``|y_i|`` is the same, hence

``<theta_i, theta_j> = (rho + (1 - rho)(2 a b + (n - 2) b^2)) / (rho + (1 - rho)(a^2 + (n - 1) b^2))``.

The difference of the two brackets is ``(a - b)^2``, so equivalently
``1 - <theta_i, theta_j> = (1 - rho)(a - b)^2 / D`` with ``D`` the denominator; this is how
:func:`one_layer_cosine` evaluates it, every term positive (no cancellation), the weights from
``L = log(n - 1) - beta (1 - rho)`` by ``a = 1 / (1 + e^L)``, ``(n - 1) b = 1 - a = 1 / (1 + e^-L)``
in log form (no overflow at ``n = 1e300``) and ``a - b = -expm1(-beta (1 - rho)) a`` (accurate as
``beta -> 0``).

Limits (MATH.md §7): with ``beta = gamma log n``, ``L ~ (1 - gamma (1 - rho)) log n``, so as
``n -> oo`` the self weight ``a`` tends to 0, 1/2 or 1 according as ``gamma`` is below, at or above
``critical_gamma(rho) = 1 / (1 - rho)``, and the cosine to 1 (collapse), ``4 rho / (1 + 3 rho)``, or
``rho`` (attention is the identity): :func:`limit_cosine`.

:func:`gram_cosine` applies the layer directly to explicit vectors (no formula) to check it, and
:func:`monte_carlo_layer` applies it to i.i.d. random tokens.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .errors import require
from .sampling import uniform_sphere

#: ``limit_cosine`` treats ``gamma (1 - rho)`` within this relative distance of 1 as critical, so
#: ``limit_cosine(rho, critical_gamma(rho))`` is the critical value despite rounding.
CRITICAL_RTOL = 1e-12
#: :func:`gram_cosine` measures every output pair up to this many tokens, a spread sample above.
GRAM_ALL_PAIRS = 2000
#: Tokens measured above ``GRAM_ALL_PAIRS`` (evenly spaced, first and last included).
GRAM_SAMPLE = 16
#: Largest ``n`` :func:`gram_cosine` accepts (its cost is ``~ 4 n^2 * measured tokens`` flops).
GRAM_MAX_N = 50_000
#: Rows of attention weights held at once (memory ``block * n * 8`` bytes).
BLOCK = 512


# ------------------------------------------------------------------------------------- checks
def _check_rho(rho) -> np.ndarray:
    rho = np.asarray(rho, dtype=float)
    require(bool(np.all(np.isfinite(rho)) and np.all(rho > 0) and np.all(rho < 1)),
            "rho must be in (0, 1) (the common cosine of the equiangular tokens)")
    return rho


def _check_n(n) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    require(bool(np.all(np.isfinite(n)) and np.all(n >= 2)), "n must be a finite number of tokens >= 2")
    return n


def _check_nonnegative(value, name: str) -> np.ndarray:
    value = np.asarray(value, dtype=float)
    require(bool(np.all(np.isfinite(value)) and np.all(value >= 0)), f"{name} must be finite and >= 0")
    return value


def _scalar_or_array(value: np.ndarray):
    return float(value) if value.ndim == 0 else value


# ------------------------------------------------------------------------------------ formula
def critical_gamma(rho):
    """``gamma_c = 1 / (1 - rho)``: the collapse threshold of ``beta = gamma log n`` (MATH.md §7)."""
    return _scalar_or_array(1.0 / (1.0 - _check_rho(rho)))


def _log_weights(rho, n, beta):
    """``(rho, -beta (1 - rho), log(1 + (n - 1) exp(-beta (1 - rho))))``: ``log b - log a`` and ``-log a``."""
    rho, n, beta = _check_rho(rho), _check_n(n), _check_nonnegative(beta, "beta")
    exponent = -beta * (1.0 - rho)
    return rho, exponent, np.logaddexp(0.0, np.log(n - 1.0) + exponent)


def attention_weights(rho, n, beta):
    """``(a, b)``: the self weight and each other weight of equiangular tokens (MATH.md §7), in log form."""
    _, exponent, log_total = _log_weights(rho, n, beta)
    return _scalar_or_array(np.exp(-log_total)), _scalar_or_array(np.exp(exponent - log_total))


def one_layer_cosine(rho, n, beta):
    """Exact output cosine ``<theta_i, theta_j>`` of ``n`` equiangular tokens after one SA layer, V = I.

    MATH.md §7 (derivation in the module docstring), evaluated as
    ``1 - (1 - rho)(a - b)^2 / (rho + (1 - rho)(a^2 + (n - 1) b^2))`` with every term positive and
    the weights in log form, so it neither overflows nor cancels for any ``n >= 2`` and ``beta >= 0``
    (``beta = gamma log n``, ``n = 1e12 ... 1e300``).  Against 80-digit decimal arithmetic on the same
    inputs (random ``rho``, ``gamma <= 3 gamma_c``) the largest absolute error was 4e-16 for
    ``n <= 1e4``, 1e-15 for ``n <= 1e12``, 3e-15 up to ``n = 1e300`` (the rounding of
    ``beta (1 - rho) ~ 1e3`` in the exponent).  ``rho``, ``n`` and ``beta`` broadcast.
    """
    rho, exponent, log_total = _log_weights(rho, n, beta)
    a = np.exp(-log_total)
    b = np.exp(exponent - log_total)
    others = -np.expm1(-log_total)                  # 1 - a = (n - 1) b
    gap = -np.expm1(exponent) * a                   # a - b
    denominator = rho + (1.0 - rho) * (a * a + others * b)
    return _scalar_or_array(1.0 - (1.0 - rho) * gap * gap / denominator)


def midpoint_gamma(rho, n):
    """The ``gamma`` at which the cosine at ``n`` crosses ``(1 + rho) / 2``, to ``O(1 / (n log n))`` (MATH.md §7):
    with the others' total weight ``x = (n - 1) exp(-beta (1 - rho))`` held fixed the cosine tends to
    ``rho / (rho + (1 - rho) a^2)``, ``a = 1 / (1 + x)``, which is ``(1 + rho) / 2`` at ``a^2 = rho / (1 + rho)``; so
    ``gamma = log((n - 1) / x) / ((1 - rho) log n)`` with ``x = sqrt((1 + rho) / rho) - 1``."""
    rho, n = _check_rho(rho), _check_n(n)
    x = np.sqrt((1.0 + rho) / rho) - 1.0
    return _scalar_or_array((np.log(n - 1.0) - np.log(x)) / ((1.0 - rho) * np.log(n)))


def iid_cosine_estimate(rho, n, beta, d):
    """:func:`one_layer_cosine` for i.i.d. tokens ``sqrt(rho) e_0 + sqrt(1 - rho) z_i`` (``z_i`` uniform on
    ``S^{d-1}``): their pairwise cosines spread by ``(1 - rho) / sqrt(d)`` about ``rho``, which multiplies the
    weight a token gives the others by about ``E exp(beta (1 - rho) <z, z'>) ~ exp(beta^2 (1 - rho)^2 / (2 d))``
    (Gaussian approximation of ``<z, z'>``, variance ``1 / d``): the equiangular formula at
    ``beta - beta^2 (1 - rho) / (2 d)`` (MATH.md §7)."""
    rho, beta = _check_rho(rho), _check_nonnegative(beta, "beta")
    return one_layer_cosine(rho, n, beta - beta ** 2 * (1.0 - rho) / (2.0 * float(d)))


def limit_cosine(rho, gamma):
    """``lim_{n -> oo}`` of :func:`one_layer_cosine` at ``beta = gamma log n`` (MATH.md §7).

    1 for ``gamma < 1/(1 - rho)``, ``4 rho / (1 + 3 rho)`` at ``gamma = 1/(1 - rho)`` (within
    ``CRITICAL_RTOL``), ``rho`` above.  Broadcasts.
    """
    rho, gamma = _check_rho(rho), _check_nonnegative(gamma, "gamma")
    ratio = gamma * (1.0 - rho)
    critical = np.abs(ratio - 1.0) <= CRITICAL_RTOL
    value = np.where(critical, 4.0 * rho / (1.0 + 3.0 * rho), np.where(ratio < 1.0, 1.0, rho))
    return _scalar_or_array(value)


# ------------------------------------------------------------------------------ direct (Gram)
def _equiangular_columns(rho: float, n: int, start: int, stop: int) -> np.ndarray:
    """Columns ``start:stop`` of the ``n x (n + 1)`` matrix whose rows are the tokens
    ``x_i = sqrt(rho) e_0 + sqrt(1 - rho) e_{i+1}``."""
    block = np.zeros((n, stop - start))
    if start == 0:
        block[:, 0] = math.sqrt(rho)
    rows = np.arange(max(start, 1) - 1, stop - 1)
    block[rows, rows + 1 - start] = math.sqrt(1.0 - rho)
    return block


def _row_softmax(logits: np.ndarray) -> np.ndarray:
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def gram_output_cosines(rho: float, n: int, beta: float, tokens=None, block: int = BLOCK) -> np.ndarray:
    """Output cosines ``<theta_i, theta_j>`` among the chosen ``tokens`` (indices), computed directly.

    The ``n`` tokens are explicit vectors ``x_i = sqrt(rho) e_0 + sqrt(1 - rho) e_{i+1}`` in
    ``R^{n+1}`` (built ``block`` columns at a time, never whole); for each chosen token the layer is
    applied as written: logits ``beta <x_i, x_k>`` from the vectors, softmax over all ``k``,
    ``y_i = sum_k W_ik x_k``, ``theta_i = y_i / |y_i|``.  No use of the formula of MATH.md §7.
    Cost ``~ 4 n^2 m`` flops for ``m`` chosen tokens.  Returns the ``m x m`` matrix.
    """
    rho = float(_check_rho(rho))
    require(float(n) == int(n) and 2 <= int(n) <= GRAM_MAX_N, f"n must be an integer in [2, {GRAM_MAX_N}]")
    n, beta = int(n), float(_check_nonnegative(beta, "beta"))
    tokens = np.arange(n) if tokens is None else np.asarray(tokens, dtype=int)
    require(tokens.ndim == 1 and tokens.size >= 2 and bool(np.all((tokens >= 0) & (tokens < n))),
            f"tokens must be at least two indices in [0, {n - 1}]")
    chunks = [(start, min(start + block, n + 1)) for start in range(0, n + 1, block)]
    logits = np.zeros((tokens.size, n))
    for start, stop in chunks:
        columns = _equiangular_columns(rho, n, start, stop)
        logits += columns[tokens] @ columns.T
    weights = _row_softmax(beta * logits)
    outputs = np.concatenate([weights @ _equiangular_columns(rho, n, start, stop) for start, stop in chunks], axis=1)
    outputs /= np.linalg.norm(outputs, axis=1, keepdims=True)
    return outputs @ outputs.T


def gram_tokens(n: int) -> np.ndarray:
    """The tokens :func:`gram_cosine` measures: all up to ``GRAM_ALL_PAIRS``, else ``GRAM_SAMPLE`` spread ones."""
    n = int(n)
    if n <= GRAM_ALL_PAIRS:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, GRAM_SAMPLE).round().astype(int))


def gram_cosine(rho: float, n: int, beta: float) -> float:
    """Mean off-diagonal output cosine of the direct layer computation (:func:`gram_output_cosines`),
    over every pair when ``n <= GRAM_ALL_PAIRS`` and over the pairs of ``GRAM_SAMPLE`` spread tokens
    above (each output still uses all ``n`` tokens).  Checks :func:`one_layer_cosine` (MATH.md §7)."""
    cosines = gram_output_cosines(rho, n, beta, gram_tokens(n))
    m = cosines.shape[0]
    return float((cosines.sum() - np.trace(cosines)) / (m * (m - 1)))


# -------------------------------------------------------------------------------- Monte Carlo
class LayerSample(NamedTuple):
    """:func:`monte_carlo_layer` results, one entry per ``gamma`` (means over the samples)."""

    gamma: np.ndarray
    cosine_before: np.ndarray    # mean pairwise <x_i, x_j>, i != j
    cosine_after: np.ndarray     # mean pairwise <theta_i, theta_j>, i != j
    cosine_after_std: np.ndarray  # standard deviation of cosine_after over the samples (0 for one sample)
    self_weight: np.ndarray      # mean W_ii


def random_tokens(n: int, d: int, rng, rho: float = 0.0) -> np.ndarray:
    """``n`` i.i.d. tokens: ``z_i`` uniform on ``S^{d-1}``; for ``rho = 0`` the tokens are ``z_i`` (in
    ``R^d``), otherwise ``x_i = sqrt(rho) e_0 + sqrt(1 - rho) z_i`` in ``R^{d+1}`` with ``z_i`` in
    ``e_0^perp`` (the "almost simplex": ``E <x_i, x_j> = rho``, spread ``(1 - rho) / sqrt(d)``)."""
    z = uniform_sphere(n, d, rng)
    if rho == 0.0:
        return z
    return np.concatenate([np.full((n, 1), math.sqrt(rho)), math.sqrt(1.0 - rho) * z], axis=1)


def _mean_pair_cosine(unit: np.ndarray) -> float:
    """Mean of ``<u_i, u_j>`` over ``i != j`` for unit rows: ``(|sum u|^2 - n) / (n (n - 1))``."""
    n = unit.shape[0]
    total = unit.sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


def _layer_statistics(x: np.ndarray, betas: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Per beta: mean pairwise output cosine and mean self weight of one SA layer (V = I) on unit ``x``.

    The row maximum of ``beta <x_i, x_k>`` is the self term ``beta |x_i|^2`` (Cauchy-Schwarz), so the
    unnormalised weights are ``exp(beta (<x_i, x_k> - |x_i|^2)) <= 1``; their row sum cancels in
    ``theta_i`` and is needed only for the self weight."""
    n = x.shape[0]
    sums = np.zeros((betas.size, x.shape[1]))
    self_weight = np.zeros(betas.size)
    for start in range(0, n, block):
        inner = x[start:start + block] @ x.T
        diagonal = (np.arange(inner.shape[0]), np.arange(start, start + inner.shape[0]))
        inner -= inner[diagonal][:, None]
        weights = np.empty_like(inner)
        for k, beta in enumerate(betas):
            np.multiply(inner, beta, out=weights)
            np.exp(weights, out=weights)
            y = weights @ x
            sums[k] += (y / np.linalg.norm(y, axis=1, keepdims=True)).sum(axis=0)
            self_weight[k] += float(np.sum(1.0 / weights.sum(axis=1)))
    cosine = (np.einsum("kd,kd->k", sums, sums) - n) / (n * (n - 1))
    return cosine, self_weight / n


def monte_carlo_layer(n: int, d: int, gamma, seed: int = 0, samples: int = 1, rho: float = 0.0,
                      block: int = BLOCK) -> LayerSample:
    """One SA layer (V = I) with ``beta = gamma log n`` on ``n`` i.i.d. random tokens (MATH.md §7).

    Tokens from :func:`random_tokens` (``rho = 0``: uniform on ``S^{d-1}``; ``rho > 0``: i.i.d.
    tokens with mean pairwise cosine ``rho``, which approach the equiangular configuration of
    :func:`one_layer_cosine` as ``d`` grows), ``samples`` independent draws from ``seed``.  Returns the
    mean pairwise cosine before and after the layer and the mean self weight for every ``gamma``
    (one draw serves all gammas).  Cost ``~ n^2 (2 d + 10)`` flops per gamma and sample, memory
    ``block * n`` floats.
    """
    require(float(n) == int(n) and int(n) >= 2, "n must be an integer >= 2")
    require(float(d) == int(d) and int(d) >= 2, "d must be an integer >= 2")
    require(float(samples) == int(samples) and int(samples) >= 1, "samples must be an integer >= 1")
    require(0.0 <= float(rho) < 1.0, "rho must be in [0, 1)")
    gamma = np.atleast_1d(_check_nonnegative(gamma, "gamma"))
    require(gamma.ndim == 1, "gamma must be a number or a 1-D list")
    n, d, samples = int(n), int(d), int(samples)
    betas = gamma * math.log(n)
    before, after, weight = np.zeros(samples), np.zeros((samples, gamma.size)), np.zeros((samples, gamma.size))
    for sample in range(samples):
        x = random_tokens(n, d, np.random.default_rng([seed, n, d, sample]), float(rho))
        before[sample] = _mean_pair_cosine(x)
        after[sample], weight[sample] = _layer_statistics(x, betas, block)
    spread = after.std(axis=0, ddof=1) if samples > 1 else np.zeros(gamma.size)
    return LayerSample(gamma, np.full(gamma.size, before.mean()), after.mean(axis=0), spread, weight.mean(axis=0))
