"""A value remembered for one numpy array: :class:`meanfield.memo.ArrayMemo`, which lives in ``meanfield`` with the
close pairs it serves (:func:`meanfield.point_groups.close_pairs`); the name stays importable from here."""

from __future__ import annotations

from meanfield.memo import ArrayMemo  # noqa: F401  (re-exported)
