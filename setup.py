"""Build hook for the three optional C extensions (metadata is in pyproject.toml).

``meanfield.solvers._circle_kernel`` fuses the pointwise work of the circle right-hand side
(solvers/schemes/circle_kernel.py); ``meanfield.solvers._fv_kernel`` the circle finite-volume right-hand side
(solvers/schemes/fv_kernel.py); ``meanfield._circle_clusters`` counts the clusters of a measure on the circle in one
call (meanfield/circle_clusters.py).  All are optional: without a C compiler the install goes on and the package
uses numpy for the same work (the same values for the kernels; the same decisions for the count), slower at small grids.
"""

import numpy
from setuptools import Extension, setup


def optional_extension(name: str, source: str) -> Extension:
    """An optional C extension compiled with IEEE arithmetic in numpy's order (no fast-math, no FMA contraction)."""
    return Extension(name, sources=[source], include_dirs=[numpy.get_include()],
                     extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math"], optional=True)


setup(ext_modules=[optional_extension("meanfield.solvers._circle_kernel", "solvers/_circle_kernel.c"),
                   optional_extension("meanfield.solvers._fv_kernel", "solvers/_fv_kernel.c"),
                   optional_extension("meanfield._circle_clusters", "meanfield/_circle_clusters.c")])
