"""Independent random streams derived from one user seed.

One ``--seed`` drives several independent random choices (the perturbation of a density
start, the sampling of tokens, the noise of a run, random matrices).  Each purpose gets
its own stream, so changing how many numbers one of them draws never changes another.
The density perturbation itself uses ``numpy.random.default_rng(seed)``, drawn in the fixed order of
MATH.md §2.4 (so that a PDE run and a particle run with the same seed, at any resolution that holds
the band, start from the same function).
"""

import numpy as np

PURPOSES = {"sampling": 1, "noise": 2, "matrices": 3}


def stream(seed, purpose: str) -> np.random.Generator:
    """The generator for ``purpose`` derived from ``seed`` (fresh entropy if ``seed`` is None)."""
    sequence = np.random.SeedSequence(seed, spawn_key=(PURPOSES[purpose],))
    return np.random.default_rng(sequence)
