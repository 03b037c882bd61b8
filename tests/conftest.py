"""Test configuration: Agg backend, numpy floating-point errors raise, seeded data."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

np.seterr(all="raise", under="ignore")


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
