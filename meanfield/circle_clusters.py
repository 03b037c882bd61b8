"""The clusters of a measure on the circle in one compiled call (MATH.md §10), at a fraction of a right-hand side's cost.

Counting the clusters of a circle frame with numpy (:func:`meanfield.cluster_detection.clusters_of_field` on a
:class:`meanfield.attention_field.CircleField`) takes some forty numpy calls and a Python loop over the saddles:
about ten right-hand sides of a finite-volume run at ``N = 512``, although the arithmetic is a few microseconds.
The optional C extension ``meanfield._circle_clusters`` (``meanfield/_circle_clusters.c``, built by ``pip
install`` when a C compiler is present) takes the field's Fourier coefficients and its values at the sampling nodes (computed here as
:class:`meanfield.attention_field.CircleField` computes them, the same bits) and does the rest in one call: steepest
ascent, the saddles, the standing-out decisions, the masses,
labels and tops, and the refined maxima.  Its steps and tie rules are those of the numpy path, so both make the
same decisions; its sums are direct (an inverse FFT there), so values and centres agree to rounding (about
``1e-15``), not bit for bit (``tests/meanfield/test_circle_clusters.py``).  A run uses one path throughout, so
reruns stay bit for bit.

:data:`COMPILED` maps a geometry to its compiled count (``circle`` when the extension is built; empty otherwise).
"""

from __future__ import annotations

import numpy as np

from .attention_field import _circle_sampling, circle_mass_coefficients

try:  # built by `pip install` when a C compiler is present (setup.py)
    from meanfield._circle_clusters import clusters as _compiled_clusters
except ImportError:  # pragma: no cover - depends on the install
    _compiled_clusters = None

#: Whether the compiled count loaded in this install.
AVAILABLE = _compiled_clusters is not None


def field_samples(angles: np.ndarray, masses: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``exp(-beta)``-scaled Fourier coefficients ``exp(-beta) kappa_k mu_hat_k``, ``k = 0 .. band``, of the
    field of ``masses`` at ``angles`` (MATH.md §2.1) and the field at the sampling nodes: the same arithmetic as
    :class:`CircleField`, so the same bits."""
    band, nodes, multipliers = _circle_sampling(float(beta))
    coefficients = circle_mass_coefficients(angles, masses, band) * multipliers
    return coefficients, np.fft.irfft(coefficients, nodes) * nodes


def circle_clusters(angles: np.ndarray, masses: np.ndarray, beta: float, *, least_mass: float, prominence: float,
                    concentration: float, flat: float, refine: bool):
    """The compiled count (module docstring): ``(centre, concentration, prominence, mass, basin_size, labels, tops)``
    (``centre``: ``(k, 2)`` unit vectors)
    of the clusters of ``masses`` at ``angles`` (heaviest first), clusters lighter than ``least_mass`` dropped, mass at
    nodes flat to ``flat`` of ``max |A|`` in no cluster."""
    coefficients, values = field_samples(angles, masses, beta)
    return _compiled_clusters(coefficients, values, angles, masses, float(beta), prominence, concentration,
                              least_mass, flat, refine)


#: Geometry -> compiled count, for the geometries whose extension is built.
COMPILED = {"circle": circle_clusters} if AVAILABLE else {}
