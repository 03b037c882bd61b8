"""Which discretisations exist for which geometry (names only; DESIGN.md "shape of the code").

A plain table, so the command line can list the choices without importing the solvers
(``meanfield`` never imports ``solvers`` at module load).  :func:`solvers.solve.scheme_class`
turns an entry into its class.
"""

#: ``geometry -> scheme name -> "module:Class"``; the first name is the geometry's default.
SCHEMES = {"circle": {"spectral": "solvers.circle:CircleSpectral",
                      "fv": "solvers.finite_volume:CircleFiniteVolume",
                      "lagrangian": "solvers.lagrangian:CircleLagrangian"},
           "sphere": {"spectral": "solvers.sphere:SphereSpectral",
                      "lagrangian": "solvers.lagrangian:SphereLagrangian"},
           "zonal": {"galerkin": "solvers.zonal:ZonalGalerkin",
                     "fv": "solvers.finite_volume:ZonalFiniteVolume"}}
DEFAULT_SCHEME = {geometry: next(iter(names)) for geometry, names in SCHEMES.items()}
