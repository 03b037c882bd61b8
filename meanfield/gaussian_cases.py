"""Named Gaussian test cases for ``meanfield gaussian`` (MATH.md §3).

``identity``: ``V = Q = K = I``, zero mean, a random covariance with largest eigenvalue 1 drawn
from ``--seed``; the exact solution ``Sigma_0 (I - 2 t Sigma_0)^{-1}`` blows up at ``t* = 1/2``.
``random``: ``V, Q, K`` with i.i.d. ``N(0, 1/d)`` entries, a ``N(0, I/d)`` mean and a random
covariance, all from ``--seed``.
:func:`solve_case` runs a case with the attributes that repeat it (``command``), for the command line
and the API alike.
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
                 eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]) -> str:
    """The ``meanfield gaussian`` command line that runs a named case."""
    return " ".join(
        ["meanfield", "gaussian", "--attention", attention, "--dim", str(dim), "--case", case, "--seed", str(seed),
         "--t-final", str(t_final)] + (["--scaled"] if scaled else [])
        + (["--sinkhorn-eps", str(eps)] if attention == "sinkhorn" else [])
        + (["--save-every", str(save_every)] if save_every else []))


def solve_case(case: str = GAUSSIAN_DEFAULTS["case"], dim: int = GAUSSIAN_DEFAULTS["dim"],
               seed=GAUSSIAN_DEFAULTS["seed"], *, t_final, attention: str = GAUSSIAN_DEFAULTS["attention"],
               save_every=GAUSSIAN_DEFAULTS["save_every"], scaled: bool = GAUSSIAN_DEFAULTS["scaled"],
               eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]):
    """The moment ODEs (:func:`meanfield.gaussian.solve`) of a named case, as ``meanfield gaussian`` runs it.

    Parameters
    ----------
    case : {"identity", "random"}
        ``identity``: ``V = Q = K = I``, zero mean, a random covariance of largest eigenvalue 1; ``random``: random
        matrices, mean and covariance (module docstring).
    dim : int
        The dimension ``d`` of the tokens.
    seed : int
        Seed of the case's random draws.
    t_final : float
        The end time, > 0.
    attention : {"softmax", "l2", "sinkhorn"}
        The kernel (as :func:`meanfield.gaussian.solve`).
    save_every : float or None
        Output spacing (``None``: every accepted step).
    scaled : bool
        Divide the logits by ``sqrt(k)``.
    eps : float
        The entropic parameter of ``sinkhorn``, > 0.

    Returns
    -------
    xarray.Dataset
        The run (``mean``, ``covariance``) with ``V``, ``Q``, ``K`` as variables and ``case``, ``seed`` and the
        ``command`` that repeats it as attributes.
    """
    from .gaussian import solve

    data = gaussian_case(case, dim, seed)
    dataset = solve(data["mean"], data["cov"], V=data["V"], Q=data["Q"], K=data["K"], t_final=t_final,
                    attention=attention, save_every=save_every, scaled=scaled, eps=eps)
    dataset.attrs.update(case=case, seed=seed,
                         command=case_command(case, dim, seed, t_final, attention, save_every, scaled, eps))
    for name in ("V", "Q", "K"):
        dataset[name] = (("row", "column"), data[name])
    return dataset
