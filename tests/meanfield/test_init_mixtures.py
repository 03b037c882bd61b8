"""Weighted mixtures of text specs (``W*term+...``, meanfield.initial.spec.mixture): the density is the weighted sum
of the terms' densities with the weights normalised to 1, and the run records the weights."""

import numpy as np
import pytest

import meanfield
from meanfield.errors import InputError
from meanfield.initial.circle import circle_density

SPEC = "0.5*vonmises:8@0.5+0.3*vonmises:12@2.6"


def test_the_weighted_mixture_is_the_normalised_weighted_sum():
    terms = [circle_density("vonmises:8@0.5", 128), circle_density("vonmises:12@2.6", 128)]
    expected = 0.625 * terms[0] + 0.375 * terms[1]
    np.testing.assert_allclose(circle_density(SPEC, 128), expected, rtol=1e-15)
    assert np.array_equal(circle_density("0.7*vonmises:8@0.5+0.7*vonmises:12@2.6", 128),
                          0.5 * terms[0] + 0.5 * terms[1])                   # equal weights: the mean, bit for bit
    assert np.array_equal(circle_density("vonmises:8@0.5+vonmises:12@2.6", 128), (terms[0] + terms[1]) / 2)


def test_runs_record_the_normalised_weights():
    run = meanfield.solve("circle", beta=3.0, resolution=128, init=SPEC, t_final=0.2)
    weights = [float(text) for text in run.attrs["init_weights"].split(",")]
    assert run.attrs["init"] == SPEC and weights == [0.625, 0.5 * 0.3 / 0.4]            # exact, normalised
    tokens = meanfield.simulate_particles(dim=2, n=64, beta=3.0, init=SPEC, seed=1, t_final=0.2)
    assert tokens.attrs["init_weights"] == run.attrs["init_weights"]
    assert "init_weights" not in meanfield.solve("circle", beta=3.0, resolution=64, t_final=0.1).attrs


@pytest.mark.parametrize("spec, words", [("0.5*vonmises:8@0.5+vonmises:12@2.6", "weight every term"),
                                         ("0*vonmises:8@0.5+1*vonmises:12@2.6", "must be > 0")])
def test_bad_weights_are_one_line(spec, words):
    with pytest.raises(InputError, match=words):
        meanfield.solve("circle", beta=3.0, resolution=64, init=spec, t_final=0.1)
