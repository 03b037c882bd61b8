"""Every default setting in one place, read by the command line and the Python API alike.

``meanfield solve sphere`` and ``meanfield.solve("sphere")`` must run the same case, so
neither spells a default itself: both read the tables here.
"""

from __future__ import annotations

#: Per geometry: the ambient dimension d and the resolution (circle: grid points N;
#: sphere: largest spherical-harmonic degree lmax; zonal: largest Gegenbauer degree L).
GEOMETRY_DEFAULTS = {"circle": {"dim": 2, "resolution": 256},
                     "sphere": {"dim": 3, "resolution": 63},
                     "zonal": {"dim": 3, "resolution": 64}}

#: ``solve`` settings shared by every geometry.
SOLVE_DEFAULTS = {"attention": "sa", "beta": 1.0, "nu": 0.0, "init": "perturbed:1e-3", "seed": 0,
                  "t_final": 10.0, "rtol": 1e-8, "cfl": 0.5, "resolution_tol": 1e-6, "positivity_tol": 1e-6}

#: ``particles`` settings.
PARTICLE_DEFAULTS = {"dim": 2, "n": 256, "attention": "sa", "beta": 1.0, "nu": 0.0, "init": "uniform", "seed": 0,
                     "t_final": 10.0, "sampling": "iid", "resolution": 256, "qkv": "identity",
                     "stepper": "dopri5", "rtol": 1e-8, "cfl": 0.5, "interaction": "auto"}


def geometry_default(geometry: str, name: str):
    """The default ``name`` (``"dim"`` or ``"resolution"``) of ``geometry``."""
    return GEOMETRY_DEFAULTS[geometry][name]
