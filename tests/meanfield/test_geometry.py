"""Elementary geometry (meanfield.geometry): the fast row norms are numpy's, bit for bit."""

import numpy as np
import pytest

from meanfield.geometry import COLUMN_SUM_UP_TO, row_norms


@pytest.mark.parametrize("components", [1, 2, 3, COLUMN_SUM_UP_TO, COLUMN_SUM_UP_TO + 1, 64])
def test_row_norms_are_numpys_bit_for_bit(components):
    rng = np.random.default_rng(components)
    # several scales, so that a different order of the additions would show in the last bits of many rows
    x = rng.standard_normal((2, 50_000, components)) * 10.0 ** rng.integers(-3, 4, size=(2, 50_000, 1))
    np.testing.assert_array_equal(row_norms(x), np.linalg.norm(x, axis=-1))
    np.testing.assert_array_equal(row_norms(x, keepdims=True), np.linalg.norm(x, axis=-1, keepdims=True))


def test_row_norms_of_a_strided_view_and_of_complex_values():
    x = np.random.default_rng(3).standard_normal((1000, 5))
    np.testing.assert_array_equal(row_norms(x[:, :3]), np.linalg.norm(x[:, :3], axis=-1))
    z = x[:, :2] + 1j * x[:, 2:4]
    np.testing.assert_array_equal(row_norms(z), np.linalg.norm(z, axis=-1))
