"""Discretisations of the mean-field PDE: bases, schemes, time steppers and the run loop."""

from .circle import CircleSpectral
from .contract import Scheme, SchemeProtocol
from .fourier import FourierBasis
from .runloop import run
from .solve import SCHEMES          # (the function solve stays in meanfield.solvers.solve: the name is its module's)
from .steppers import STEPPERS, make_stepper

from .sphere import SphereBasis, SphereSpectral
from .zonal import ZonalBasis, ZonalGalerkin
from .trackers import Observer, SteadyState, Tracker

__all__ = ["SphereBasis", "SphereSpectral", "ZonalBasis", "ZonalGalerkin", "CircleSpectral", "FourierBasis", "run", "SCHEMES", "STEPPERS", "make_stepper",
           "Scheme", "SchemeProtocol", "Tracker", "Observer", "SteadyState"]
