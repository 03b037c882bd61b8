"""Discretisations of the mean-field PDE: bases, schemes, time steppers and the run loop."""

from .circle import CircleSpectral
from .fourier import FourierBasis
from .runloop import run
from .solve import SCHEMES, solve
from .steppers import STEPPERS, make_stepper

from .sphere import SphereBasis, SphereSpectral
from .zonal import ZonalBasis, ZonalGalerkin

__all__ = ["SphereBasis", "SphereSpectral", "ZonalBasis", "ZonalGalerkin", "CircleSpectral", "FourierBasis", "run", "solve", "SCHEMES", "STEPPERS", "make_stepper"]
