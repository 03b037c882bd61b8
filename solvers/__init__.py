"""Discretisations of the mean-field PDE: bases, schemes, time steppers and the run loop."""

from .circle import CircleSpectral
from .fourier import FourierBasis
from .runloop import run
from .solve import SCHEMES, solve
from .steppers import STEPPERS, make_stepper

__all__ = ["CircleSpectral", "FourierBasis", "run", "solve", "SCHEMES", "STEPPERS", "make_stepper"]
