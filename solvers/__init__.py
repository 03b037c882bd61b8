"""Discretisations of the mean-field PDE: bases, schemes, time steppers and the run loop."""

from .circle import CircleSpectral
from .contract import Scheme, SchemeProtocol
from .fourier import FourierBasis
from .runloop import run
from .solve import SCHEMES          # (the function solve stays in meanfield.solvers.solve: the name is its module's)
from .steppers import STEPPERS, make_stepper

from .trackers import Observer, SteadyState, Tracker

#: The sphere and zonal bases and schemes, imported on first use (a circle run loads neither; issue 36).
_GEOMETRIES = {"SphereBasis": "sphere", "SphereSpectral": "sphere", "ZonalBasis": "zonal", "ZonalGalerkin": "zonal"}


def __getattr__(name: str):
    if name not in _GEOMETRIES:
        raise AttributeError(f"module 'meanfield.solvers' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"meanfield.solvers.{_GEOMETRIES[name]}"), name)
    globals()[name] = value
    return value

__all__ = ["SphereBasis", "SphereSpectral", "ZonalBasis", "ZonalGalerkin", "CircleSpectral", "FourierBasis", "run", "SCHEMES", "STEPPERS", "make_stepper",
           "Scheme", "SchemeProtocol", "Tracker", "Observer", "SteadyState"]
