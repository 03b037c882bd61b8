"""The installed distribution's version: ``meanfield.__version__`` and the ``package_version`` attribute of every
run (:func:`meanfield.app.storage.package_version`)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("meanfield")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"
