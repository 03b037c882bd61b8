"""Names a package imports on first use (PEP 562), so that importing it loads only what is used."""

from __future__ import annotations

import importlib


def first_use(namespace: dict, package: str, table: dict):
    """A module ``__getattr__`` for ``package`` whose ``namespace`` (its ``globals()``) gains each name of ``table``
    on first use: ``table[name] = (module, attribute)``, ``attribute`` ``None`` for the module itself."""
    def __getattr__(name: str):
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = table[name]
        value = importlib.import_module(module)
        value = value if attribute is None else getattr(value, attribute)
        namespace[name] = value
        return value
    return __getattr__
