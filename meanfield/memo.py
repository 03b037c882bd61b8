"""A value remembered for one numpy array, for work two callers would otherwise repeat on the same state.

The run loop hands the same accepted state to the collapse check, the next step's merge check and step bound
(:func:`meanfield.point_groups.close_pairs`), and to the frame's energy and the next step's first
right-hand side (:class:`meanfield.solvers.schemes.interaction.SphereHarmonicInteraction`).  States are never modified in
place once made (every stepper and post-step map returns new arrays), so an array is recognised by its buffer,
shape and strides while its owner is alive (a weak reference keeps the buffer from being reused unseen).
"""

from __future__ import annotations

import weakref

import numpy as np


class ArrayMemo:
    """One value remembered for one array (module docstring)."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self._owner, self._key, self.value = None, None, None

    @staticmethod
    def _identity(array: np.ndarray):
        owner = array if array.base is None else array.base
        return owner, (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype.str)

    def get(self, array: np.ndarray):
        """The value remembered for ``array``, or ``None``."""
        if self._owner is None:
            return None
        owner, key = self._identity(array)
        return self.value if self._owner() is owner and self._key == key else None

    def put(self, array: np.ndarray, value) -> None:
        """Remember ``value`` for ``array`` (nothing, if its owner cannot be referred to weakly)."""
        owner, key = self._identity(array)
        try:
            self._owner, self._key, self.value = weakref.ref(owner), key, value
        except TypeError:
            self.clear()
