"""Named Gaussian test cases for ``meanfield gaussian`` (MATH.md §3).

``identity``: ``V = Q = K = I``, zero mean, a random covariance with largest eigenvalue 1 drawn
from ``--seed``; the exact solution ``Sigma_0 (I - 2 t Sigma_0)^{-1}`` blows up at ``t* = 1/2``.
``random``: ``V, Q, K`` with i.i.d. ``N(0, 1/d)`` entries, a ``N(0, I/d)`` mean and a random
covariance, all from ``--seed``.
:func:`meanfield.solvers.runs.gaussian_run.solve_case` (``meanfield.solve_gaussian_case``) runs a case with the
attributes that repeat it (``command``), for the command line and the API alike.
"""

from __future__ import annotations

import math

import numpy as np

from .defaults import GAUSSIAN_DEFAULTS
from .errors import require
from .seeding import stream

CASES = ("identity", "random")


def random_covariance(dim: int, rng) -> np.ndarray:
    """A symmetric positive definite matrix with largest eigenvalue 1 (Wishart with 2d samples)."""
    samples = rng.standard_normal((dim, 2 * dim))
    cov = samples @ samples.T
    return cov / np.linalg.eigvalsh(cov)[-1]


def gaussian_case(case: str, dim: int, seed=None) -> dict:
    """``mean, cov, V, Q, K`` of a named case (see the module docstring)."""
    require(case in CASES, f"--case must be one of {', '.join(CASES)} (got {case!r})")
    require(isinstance(dim, int) and dim >= 1, f"--dim must be a positive integer (got {dim!r})")
    rng = stream(seed, "matrices")
    cov = random_covariance(dim, rng)
    if case == "identity":
        eye = np.eye(dim)
        return {"mean": np.zeros(dim), "cov": cov, "V": eye, "Q": eye, "K": eye}
    scale = 1.0 / math.sqrt(dim)
    V, Q, K = (scale * rng.standard_normal((dim, dim)) for _ in range(3))
    return {"mean": scale * rng.standard_normal(dim), "cov": cov, "V": V, "Q": Q, "K": K}


def case_command(case: str, dim: int, seed, t_final, attention: str = GAUSSIAN_DEFAULTS["attention"],
                 save_every=GAUSSIAN_DEFAULTS["save_every"], scaled: bool = GAUSSIAN_DEFAULTS["scaled"],
                 eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"], layers: tuple | None = None) -> str:
    """The ``meanfield gaussian`` command line that runs a named case; ``layers = (L, alpha)``: its ``L`` residual
    layers of step ``alpha`` (MATH.md §3.1) instead of the flow to ``t_final``."""
    clock = ["--t-final", str(t_final)] if layers is None else ["--layers", str(layers[0]), "--step", repr(layers[1])]
    return " ".join(
        ["meanfield", "gaussian", "--attention", attention, "--dim", str(dim), "--case", case, "--seed", str(seed)]
        + clock + (["--scaled"] if scaled else [])
        + (["--sinkhorn-eps", str(eps)] if attention == "sinkhorn" else [])
        + (["--save-every", str(save_every)] if save_every else []))
