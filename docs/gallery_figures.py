"""Sphinx-gallery image scraper for the package's own figures (``docs/conf.py`` names it).

``meanfield.plotting`` builds :class:`matplotlib.figure.Figure` objects directly, without pyplot (a
library must not touch pyplot's global state), so sphinx-gallery's ``matplotlib`` scraper, which asks
pyplot for its figures, does not see them. :func:`track_figures` records every Figure made while an
example runs; :func:`package_figures` saves those pyplot does not manage, in the order they were made.
"""

from __future__ import annotations

import weakref

from matplotlib.figure import Figure

_made: list[weakref.ref] = []
_original_init = Figure.__init__


def _recording_init(self, *args, **kwargs):
    _original_init(self, *args, **kwargs)
    _made.append(weakref.ref(self))


def track_figures() -> None:
    """Record every Figure made from now on (idempotent)."""
    Figure.__init__ = _recording_init


def package_figures(block, block_vars, gallery_conf):
    """Save the figures made since the last call that pyplot does not manage and that hold axes."""
    from sphinx_gallery.scrapers import figure_rst

    figures = [ref() for ref in _made]
    _made.clear()
    paths = []
    for figure in figures:
        if figure is None or figure.canvas.manager is not None or not figure.axes:
            continue
        path = next(block_vars["image_path_iterator"])
        figure.savefig(path, dpi=100)
        paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])
