"""The stepping loop of ``clustering-Tformers.py`` (borjanG/2023-transformers, Geshkovski–Letrouit–Polyanskiy–
Rigollet, "The emergence of clusters in self-attention dynamics", NeurIPS 2023), rewritten for the tests with
the inputs passed in (seeded by the caller) and no plotting.

The script advances the rescaled tokens ``z_i = e^{-tV} x_i`` (docs/MATH.md §12.1). At each grid time ``t_l`` of
``linspace(0, T, int(T / dt) + 1)`` it forms the attention once, token ``i`` giving token ``j`` the weight
``1 / sum_k exp(<A e^{t_l V} z_i, A e^{t_l V} (z_k - z_j)>)`` (the softmax of ``<Q x_i, K x_j>`` with ``Q = K = A``),
and then, token by token, takes four Runge–Kutta stages of ``f_i(z) = sum_j P_ij V (z_j - z_i)`` with that attention
held fixed. As in the script, the stage arguments add token ``i``'s own increment to every token (``z + k1 / 2``
with ``k1`` of shape ``(d,)``), which leaves every difference ``z_j - z_i`` as it was: the four stages agree up to
rounding, and the step is an Euler step with frozen attention. The overflow of ``exp`` for far-off tokens gives
``1 / inf = 0``, the weight the script gets too; it is silenced here because the test suite turns warnings into
errors.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import expm


def _token_velocity(z: np.ndarray, row: np.ndarray, v: np.ndarray, i: int) -> np.ndarray:
    """``sum_j row_j V (z_j - z_i)``: the script's ``get_dynamics`` for token ``i``."""
    return (row[:, None] * ((z - z[i]) @ v.T)).sum(axis=0)


def clustering_tformers_steps(z0: np.ndarray, a: np.ndarray, v: np.ndarray, t_final: float,
                              dt: float) -> np.ndarray:
    """The rescaled tokens ``(int(T / dt) + 1, n, d)`` on the script's grid, stepped as the script steps them."""
    n = z0.shape[0]
    count = int(t_final / dt) + 1
    grid = np.linspace(0.0, t_final, count)
    z = np.zeros((count,) + z0.shape)
    z[0] = z0
    for step in range(count - 1):
        now = z[step]
        mapped = now @ (a @ expm(v * grid[step])).T          # A e^{tV} z_k, one row per token
        scores = mapped @ mapped.T                            # scores[i, k] = <A e^{tV} z_i, A e^{tV} z_k>
        with np.errstate(over="ignore"):                      # row i, column j: 1 / sum_k exp(s_ik - s_ij)
            attention = np.array([1.0 / np.exp(scores[i][None, :] - scores[i][:, None]).sum(axis=1)
                                  for i in range(n)])
        after = np.zeros_like(now)
        for i in range(n):
            k1 = dt * _token_velocity(now, attention[i], v, i)
            k2 = dt * _token_velocity(now + k1 / 2, attention[i], v, i)
            k3 = dt * _token_velocity(now + k2 / 2, attention[i], v, i)
            k4 = dt * _token_velocity(now + k3, attention[i], v, i)
            after[i] = now[i] + (k1 + 2 * k2 + 2 * k3 + k4) / 6
        z[step + 1] = after
    return z
