"""Build hook for the one optional C extension, ``meanfield.solvers._circle_kernel`` (metadata is in pyproject.toml).

The extension fuses the pointwise work of the circle right-hand side (solvers/circle_kernel.py).
It is optional: without a C compiler the install goes on and the package uses numpy for the
same work, with the same bits (slower at small grids).
"""

import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "meanfield.solvers._circle_kernel",
            sources=["solvers/_circle_kernel.c"],
            include_dirs=[numpy.get_include()],
            # IEEE arithmetic in numpy's order: no fast-math, no fused multiply-add contraction
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        )
    ]
)
