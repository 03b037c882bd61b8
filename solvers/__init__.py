"""Discretisations of the mean-field PDE: bases, schemes, time steppers and the run loop."""

from .circle import CircleSpectral
from .contract import Scheme, SchemeProtocol
from .fourier import FourierBasis
from .runloop import run
from .solve import SCHEMES          # (the function solve stays in meanfield.solvers.solve: the name is its module's)
from .steppers import STEPPERS, make_stepper

from .trackers import Observer, SteadyState, Tracker

from meanfield.lazy_names import first_use

#: The sphere and zonal bases and schemes, imported on first use (a circle run loads neither; issue 36).
__getattr__ = first_use(globals(), "meanfield.solvers", {
    name: (f"meanfield.solvers.{geometry}", name) for name, geometry in
    (("SphereBasis", "sphere"), ("SphereSpectral", "sphere"), ("ZonalBasis", "zonal"), ("ZonalGalerkin", "zonal"))})

__all__ = ["SphereBasis", "SphereSpectral", "ZonalBasis", "ZonalGalerkin", "CircleSpectral", "FourierBasis", "run", "SCHEMES", "STEPPERS", "make_stepper",
           "Scheme", "SchemeProtocol", "Tracker", "Observer", "SteadyState"]
