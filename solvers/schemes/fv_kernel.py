"""The circle finite-volume right-hand side in one compiled call (MATH.md §2.5).

:class:`meanfield.solvers.schemes.finite_volume.CircleFiniteVolume` spends, at the grids it runs on, more time in the numpy
calls around its three transforms (the spectral products, the velocity at the faces, the reconstruction, the
fluxes, the divergence, and Python's per-call cost) than in the transforms (``meanfield validate
bench-cluster-schemes``).  The optional C extension ``meanfield.solvers._fv_kernel`` (``solvers/_fv_kernel.c``, built
by ``pip install`` when a C compiler is present) does that work in one call that also runs the bases' FFTW plans.
Each of its operations is numpy's, in numpy's order, on the same arrays (every spectral multiplier is split into a
real and an imaginary table, which makes the complex products numpy's whether numpy fuses them or not), so it gives
the **same values** as the numpy path (``tests/solvers/test_fv_kernel.py``); the fluxes it leaves in
:class:`meanfield.solvers.schemes.finite_volume.FiniteVolume1D`'s buffers are the ones the point clusters read.

Covered: Post-LN and LN-scaling, SA and USA, either FFT backend, with or without point clusters.  nGPT, the zonal
grids or a missing extension use numpy (:data:`AVAILABLE`; a run records the path in ``attrs["pointwise_kernel"]``).
"""

from __future__ import annotations

import numpy as np

from .circle_kernel import compiled_wanted

try:  # built by `pip install` when a C compiler is present (setup.py)
    from meanfield.solvers._fv_kernel import FvKernel
except ImportError:  # pragma: no cover - depends on the install
    FvKernel = None

#: Whether the compiled kernel loaded in this install.
AVAILABLE = FvKernel is not None


def split(multiplier: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(real, imaginary)``: two complex128 tables summing to ``multiplier``, each with one part exactly ``+0``."""
    multiplier = np.asarray(multiplier, dtype=complex)
    real, imaginary = np.zeros(multiplier.shape, dtype=complex), np.zeros(multiplier.shape, dtype=complex)
    real.real, imaginary.imag = multiplier.real, multiplier.imag
    return real, imaginary


def fused_kernel(scheme, choice: str = "auto"):
    """A :class:`FvKernel` for ``scheme`` (a :class:`meanfield.solvers.schemes.finite_volume.CircleFiniteVolume`), or ``None``.

    ``choice``: ``"auto"`` (compiled where covered, see the module docstring), ``"compiled"`` (refused in one line
    where it cannot be used) or ``"numpy"``.
    """
    if not compiled_wanted("fv", AVAILABLE, scheme.speed_divisor.ngpt, choice):
        return None
    slots = (0, 1) if scheme.model.normalised else (0,)             # SA: the ratio of two syntheses
    fv, synthesis = scheme.fv, scheme._slots
    synthesise, _ = synthesis.plan_calls()
    _, analyse = scheme.basis.plan_calls()
    tables = tuple(tuple(table[slot] for slot in slots) for table in scheme.split_tables)
    geometry = (fv.inv_spacing, fv.w_left, fv.w_right, fv.d_west, fv.d_east, fv._inv_d_west, fv._minus_inv_d_east,
                fv.areas, fv._out_east, fv._minus_out_west, fv._inv_volumes, fv.diff_coeff, fv.diff_rate)
    return FvKernel(scheme.basis.analysis_input(), scheme.basis.analysis_output(),
                    tuple(synthesis.synthesis_input(slot) for slot in slots),
                    tuple(synthesis.synthesis_output(slot) for slot in slots),
                    np.ascontiguousarray(scheme._source, dtype=np.int64), np.ascontiguousarray(scheme._conjugate),
                    tables, tuple(np.ascontiguousarray(row, dtype=float) for row in geometry),
                    (fv._jumps, fv._left_state, fv._right_state, fv._flux), fv.nu,
                    tuple(synthesise[slot] for slot in slots), analyse)
