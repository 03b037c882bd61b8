"""The circle right-hand side's pointwise work fused into one compiled call (MATH.md §2.1).

:class:`meanfield.solvers.schemes.circle.CircleSpectral` spends, at small grids, more time in the numpy calls
around its four transforms (three products, a division, ``max|X|``, the flux, the divergence,
and Python's per-call cost) than in the transforms (``meanfield validate bench-circle``).  The
optional C extension ``meanfield.solvers._circle_kernel`` (``solvers/_circle_kernel.c``, built by
``pip install`` when a C compiler is present) does that work in one call that also runs the
basis's FFTW plans.  Each of its operations is numpy's, in numpy's order, on the same
multiplier arrays (each real or purely imaginary, which makes the complex products exact in
all but one rounding, see the C file), so it gives the **same bits** as the numpy path for
finite data, signed zeros included (``tests/solvers/test_circle_kernel.py``); only ``max|X|`` of a state
holding NaN may differ (NaN entries skipped here, whatever BLAS ``idamax`` picks there), and
such a state is stopped by the validity monitor either way.

Covered: Post-LN and LN-scaling, SA and USA, either FFT backend.  nGPT or a
missing extension use numpy (:data:`AVAILABLE` says whether the extension loaded; a run
records the path in ``attrs["circle_kernel"]``).
"""

from __future__ import annotations

import numpy as np

try:  # built by `pip install` when a C compiler is present (setup.py)
    from meanfield.solvers._circle_kernel import CircleKernel
except ImportError:  # pragma: no cover - depends on the install
    CircleKernel = None

#: Whether the compiled kernel loaded in this install.
AVAILABLE = CircleKernel is not None
#: ``pointwise`` choices of :class:`meanfield.solvers.schemes.circle.CircleSpectral` (the compiled routine).
CHOICES = ("auto", "compiled", "numpy")


def one_part_zero(multiplier: np.ndarray) -> np.ndarray:
    """``multiplier`` as complex128 (a real array gains ``+0`` imaginary parts, as numpy's cast gives), checked
    to have a zero real or imaginary part in every mode (what makes the kernel's products numpy's bits)."""
    multiplier = np.ascontiguousarray(multiplier, dtype=complex)
    if np.any((multiplier.real != 0) & (multiplier.imag != 0)):
        raise ValueError("circle kernel: every multiplier must be real or purely imaginary in each mode")
    return multiplier


def compiled_wanted(label: str, available: bool, ngpt: bool, choice: str) -> bool:
    """Whether to build a compiled kernel (``label``: "circle", "fv") for a scheme: ``choice`` ``"auto"`` (where the
    extension is built and the normalisation is not nGPT), ``"compiled"`` (refused in one line otherwise) or
    ``"numpy"``."""
    if choice not in CHOICES:
        raise ValueError(f"{label} pointwise must be one of {', '.join(CHOICES)} (got {choice!r})")
    reason = None
    if not available:
        reason = f"the compiled {label} kernel is not built in this install (no C compiler at pip install)"
    elif ngpt:
        reason = f"the compiled {label} kernel covers Post-LN and LN-scaling, not nGPT"
    if choice == "numpy" or (reason is not None and choice == "auto"):
        return False
    if reason is not None:
        raise ValueError(reason)
    return True


def fused_kernel(scheme, choice: str = "auto"):
    """A :class:`CircleKernel` for ``scheme`` (a :class:`meanfield.solvers.schemes.circle.CircleSpectral`), or ``None``.

    ``choice``: ``"auto"`` (compiled where covered, see the module docstring), ``"compiled"``
    (refused in one line where it cannot be used) or ``"numpy"``.
    """
    if not compiled_wanted("circle", AVAILABLE, scheme.speed_divisor.ngpt, choice):
        return None
    basis = scheme.basis
    slots = range(basis.slots)
    synthesise, analyse = basis.plan_calls()
    conv = scheme.conv if basis.slots == 3 else np.zeros(len(basis.wavenumbers))
    return CircleKernel(tuple(map(basis.synthesis_input, slots)), tuple(map(basis.synthesis_output, slots)),
                        basis.analysis_input(), basis.analysis_output(),
                        *map(one_part_zero, (conv, scheme.velocity, scheme.divergence)), synthesise, analyse)
