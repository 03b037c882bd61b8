"""Discretisations of the mean-field PDE: bases, schemes, time steppers and the run loop.

Every name is imported on first use (PEP 562, :func:`meanfield.lazy_names.first_use`): importing one module of the
package (``meanfield.solvers.stationary.branch`` for ``meanfield theory --branch``) loads neither the circle's FFTW plans nor
xarray.
"""

from meanfield.lazy_names import first_use

_NAMES = {"CircleSpectral": "circle", "FourierBasis": "fourier", "SphereBasis": "sphere_basis", "SphereSpectral": "sphere",
          "ZonalBasis": "zonal_basis", "ZonalGalerkin": "zonal", "Scheme": "contract", "SchemeProtocol": "contract",
          "run": "runloop", "SCHEMES": "solve", "STEPPERS": "steppers", "make_stepper": "steppers",
          "Tracker": "trackers", "Observer": "trackers", "SteadyState": "trackers"}
#: The folder of each module the names come from.
_FOLDER = {'circle': 'schemes', 'fourier': 'bases', 'sphere_basis': 'bases', 'sphere': 'schemes', 'zonal_basis': 'bases', 'zonal': 'schemes', 'contract': 'schemes', 'runloop': 'runs', 'solve': 'runs', 'steppers': 'steppers', 'trackers': 'tracking'}
__getattr__ = first_use(globals(), "meanfield.solvers",
                        {name: (f"meanfield.solvers.{_FOLDER[module]}.{module}", name) for name, module in _NAMES.items()})

__all__ = list(_NAMES)
