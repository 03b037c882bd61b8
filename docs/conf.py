"""Sphinx configuration of the meanfield documentation site (``make docs``).

Pages: the user guide (guide.md; the top-level README is the landing page that links to it), MATH.md,
DESIGN.md and staircase.md (MyST), the API reference generated from the docstrings (autodoc + autosummary,
numpydoc), and a gallery of examples executed at every build (sphinx-gallery). The build treats warnings as
errors (``-W`` in the Makefile) and ``docs/check_links.py`` then checks every internal link and image of the built
site.
"""

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

import meanfield  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import gallery_figures  # noqa: E402

gallery_figures.track_figures()

project = "meanfield"
author = "meanfield developers"
copyright = "2026, meanfield developers (GPL-3.0-or-later)"
release = version = getattr(meanfield, "__version__", "0.1.0")

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "examples/GALLERY_HEADER.rst", "_templates", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.md5",
                    "auto_examples/*.json"]

# MyST: the Markdown pages keep their GitHub anchors (``MATH.md#5-clusters-...``).
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath", "colon_fence"]

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_typehints = "none"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "matplotlib_animations": False,
    "image_scrapers": ("gallery_figures.package_figures", "matplotlib"),  # the package's first: it skips pyplot's
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
}

html_theme = "pydata_sphinx_theme"
html_title = "meanfield"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
templates_path = ["_templates"]
html_show_sourcelink = False
