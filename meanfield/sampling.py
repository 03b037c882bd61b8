"""Initial tokens for particle runs, drawn from the same laws as the PDE's ``--init``.

``sample_tokens(spec, n, dim, seed, resolution, sampling)`` returns positions ``(n, d)`` on
S^{d-1} and weights ``(n,)`` summing to 1:

``uniform``                       i.i.d. uniform on S^{d-1} (normalised Gaussians), any d.
``perturbed:EPS``, ``vonmises:..`` (circle) i.i.d. samples of the density that
                                  ``meanfield solve circle --init SPEC --resolution R --seed S`` starts
                                  from (same ``R`` and ``S``), by exact rejection sampling of its
                                  trigonometric series.
``orthogonal``                    ``n <= d`` pairwise orthogonal tokens, randomly rotated (MATH.md §1).
``run.nc``                        a particle run's last positions and weights, or samples of a circle
                                  PDE run's last density.

``sampling="quadrature"`` (circle densities only) replaces i.i.d. samples by the
deterministic nodes ``theta_j = 2 pi (j + 1/2) / n`` with weights ``rho(theta_j)``
(normalised): a weighted particle system whose empirical measure is the trapezoidal
rule of the density, so it converges far faster than ``n^{-1/2}``.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import require
from .initial import INIT_HELP, circle_density
from .seeding import stream
from .storage import last_valid_density, load_run

SAMPLINGS = ("iid", "quadrature")


def uniform_sphere(n: int, dim: int, rng) -> np.ndarray:
    x = rng.standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def orthogonal_tokens(n: int, dim: int, rng) -> np.ndarray:
    require(n <= dim, f"--init orthogonal needs --n <= --dim (got n = {n}, d = {dim})")
    q, _ = np.linalg.qr(rng.standard_normal((dim, n)))
    return q.T.copy()


def on_circle(theta: np.ndarray) -> np.ndarray:
    return np.stack((np.cos(theta), np.sin(theta)), axis=1)


class TrigonometricDensity:
    """A circle density given by its Fourier coefficients, evaluated anywhere."""

    def __init__(self, grid_density: np.ndarray):
        self.coeffs = np.fft.rfft(grid_density, norm="forward")
        self.n = grid_density.size
        self.coeffs[self.n // 2] = 0.0 if self.n % 2 == 0 else self.coeffs[self.n // 2]

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        k = np.arange(self.coeffs.size)
        weights = np.where(k == 0, 1.0, 2.0) * self.coeffs
        out = np.zeros(theta.shape)
        for start in range(0, theta.size, 4096):
            block = theta[start:start + 4096]
            out[start:start + 4096] = (np.exp(1j * np.outer(block, k)) @ weights).real
        return out

    def upper_bound(self) -> float:
        fine = np.fft.irfft(self.coeffs, 8 * self.n, norm="forward")
        return 1.05 * float(fine.max())

    def sample(self, n: int, rng) -> np.ndarray:
        """Exact rejection sampling against the uniform proposal."""
        bound, accepted = self.upper_bound(), []
        count = 0
        while count < n:
            proposal = rng.uniform(0.0, 2 * math.pi, size=max(2 * (n - count), 64))
            keep = proposal[rng.uniform(0.0, bound, size=proposal.size) < self(proposal)]
            accepted.append(keep)
            count += keep.size
        return np.concatenate(accepted)[:n]


def _circle_law(spec: str, resolution: int, seed) -> TrigonometricDensity:
    if spec.endswith(".nc"):
        dataset = load_run(spec, geometry="circle")
        return TrigonometricDensity(last_valid_density(dataset, spec))
    return TrigonometricDensity(circle_density(spec, resolution, seed))


def _from_particle_file(path: str, n: int, dim: int):
    dataset = load_run(path)
    if "positions" not in dataset:
        return None
    positions = np.asarray(dataset["positions"].values[-1], dtype=float)
    require(positions.shape == (n, dim),
            f"--init {path}: holds {positions.shape[0]} tokens in dimension {positions.shape[1]}, "
            f"but --n {n} --dim {dim} were asked for")
    require(bool(np.all(np.isfinite(positions))), f"--init {path}: the last positions are not finite")
    return positions, np.asarray(dataset["weights"].values, dtype=float)


def sample_tokens(spec: str, n: int, dim: int, seed=None, resolution: int = 256, sampling: str = "iid"):
    """Positions ``(n, dim)`` and weights ``(n,)`` for ``--init spec`` (see the module docstring)."""
    require(isinstance(spec, str) and spec.strip() != "", f"--init must be one of: {INIT_HELP}, orthogonal")
    require(sampling in SAMPLINGS, f"--sampling must be one of {', '.join(SAMPLINGS)} (got {sampling!r})")
    spec = spec.strip()
    rng = stream(seed, "sampling")
    uniform_weights = np.full(n, 1.0 / n)
    if spec.endswith(".nc"):
        from_file = _from_particle_file(spec, n, dim)
        if from_file is not None:
            return from_file
    if spec == "orthogonal":
        require(sampling == "iid", "--sampling quadrature needs a circle density --init")
        return orthogonal_tokens(n, dim, rng), uniform_weights
    if spec == "uniform" and dim > 2:
        require(sampling == "iid", "--sampling quadrature is defined on the circle (--dim 2) only")
        return uniform_sphere(n, dim, rng), uniform_weights
    require(dim == 2, f"--init {spec!r} is a circle density: it needs --dim 2 (on S^{{d-1}}, d >= 3, "
                      f"use uniform or orthogonal)")
    law = _circle_law(spec, resolution, seed)
    if sampling == "quadrature":
        theta = 2 * math.pi * (np.arange(n) + 0.5) / n
        return on_circle(theta), law(theta) / law(theta).sum()
    return on_circle(law.sample(n, rng)), uniform_weights
