"""The token kernels of particle attention as objects (meanfield.token_kernel): what each says of itself, and the L2
kernel's logits against their formula."""

import numpy as np
import pytest

from meanfield.errors import InputError
from meanfield.token_kernel import TOKEN_KERNELS, token_kernel


def test_each_kernel_says_where_it_applies():
    assert set(TOKEN_KERNELS) == {"dot", "l2", "sinkhorn"}
    assert [name for name, kernel in TOKEN_KERNELS.items() if kernel.on_sphere] == ["dot"]
    assert [name for name, kernel in TOKEN_KERNELS.items() if kernel.needs_normalised] == ["sinkhorn"]
    assert [name for name, kernel in TOKEN_KERNELS.items() if kernel.plan] == ["sinkhorn"]
    with pytest.raises(InputError, match="kernel must be one of dot, l2, sinkhorn"):
        token_kernel("cosine")


@pytest.mark.parametrize("normalised", [True, False])
def test_the_l2_logits_are_minus_half_beta_the_squared_distance(normalised):
    """USA: exactly ``-beta |q - k|^2 / 2``; SA: that plus a constant per query row, which its normalisation cancels."""
    rng = np.random.default_rng(2)
    beta, q, k = 1.7, rng.standard_normal((1, 6, 3)), rng.standard_normal((1, 6, 3))   # one set of tokens
    queries, keys = TOKEN_KERNELS["l2"].logits(beta * q, k, beta, normalised)
    logits = queries @ keys.transpose(0, 2, 1)
    expected = -0.5 * beta * np.sum((q[:, :, None, :] - k[:, None, :, :]) ** 2, axis=-1)
    difference = logits - expected
    if normalised:
        difference -= difference[..., :1]                        # a row constant
    assert np.max(np.abs(difference)) < 1e-13


def test_the_lipschitz_bounds_are_the_stated_products():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((3, 3)) for _ in range(3))
    norm = lambda m: np.linalg.norm(m, 2)
    beta, eps = 2.0, 0.5
    assert TOKEN_KERNELS["dot"].lipschitz(beta, [(q, k, v)], True, eps) == pytest.approx(1 + beta * norm(q) * norm(k))
    assert TOKEN_KERNELS["l2"].lipschitz(beta, [(q, k, v)], True, eps) == pytest.approx(
        norm(v) * (1 + beta * norm(k) * (norm(q) + norm(k))))
    assert TOKEN_KERNELS["sinkhorn"].lipschitz(beta, [(q, k, v)] * 2, False, eps) == pytest.approx(
        2 * norm(v) * (1 + 2 * beta / eps * norm(q) * norm(k)))
    assert TOKEN_KERNELS["dot"].lipschitz(beta, [(None, None, None)], True, eps) == 1 + beta
