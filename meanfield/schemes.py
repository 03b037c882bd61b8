"""Which discretisations exist for which geometry (names only; DESIGN.md "shape of the code").

A plain table, so the command line can list the choices without importing the solvers
(``meanfield`` never imports ``solvers`` at module load).  :func:`meanfield.solvers.runs.solve.scheme_class`
turns an entry into its class.
"""

#: ``geometry -> scheme name -> "module:Class"``; the first name is the geometry's default.
SCHEMES = {"circle": {"spectral": "meanfield.solvers.schemes.circle:CircleSpectral",
                      "fv": "meanfield.solvers.schemes.finite_volume:CircleFiniteVolume",
                      "lagrangian": "meanfield.solvers.schemes.lagrangian:CircleLagrangian"},
           "sphere": {"spectral": "meanfield.solvers.schemes.sphere:SphereSpectral",
                      "lagrangian": "meanfield.solvers.schemes.lagrangian:SphereLagrangian"},
           "zonal": {"galerkin": "meanfield.solvers.schemes.zonal:ZonalGalerkin",
                     "fv": "meanfield.solvers.schemes.finite_volume:ZonalFiniteVolume"}}
DEFAULT_SCHEME = {geometry: next(iter(names)) for geometry, names in SCHEMES.items()}
