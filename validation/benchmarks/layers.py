"""Benchmark of a density through one Post-LN layer: its cost against a right-hand side and the non-uniform transform.

This is a measurement, not a test: it prints times and ratios and asserts nothing about speed.

A layer (MATH.md §11, :mod:`meanfield.solvers.schemes.density_layers`) computes the attention output at the grid
nodes (the work of about one right-hand side), moves the nodes, and projects their masses back by a non-uniform
transform (circle: ducc0's NUFFT; S^2: ducc0's adjoint non-uniform synthesis; zonal: a dense Gegenbauer matrix).
The table gives, per scheme and resolution, one ``layer`` call, one ``rhs`` call and the bare non-uniform
projection of the moved nodes, and the ratio ``layer / (rhs + projection)``: near 1 the layer costs what its parts
cost.  SA at ``beta = 9``, a perturbed uniform start.
Run with ``python -m meanfield.validation.benchmarks.layers [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from meanfield.attention_field import circle_mass_coefficients
from meanfield.harmonics import SHT_EPSILON, point_mass_coefficients, sphere_locations
from meanfield.model import Model
from meanfield.solvers.schemes.circle import CircleSpectral
from meanfield.solvers.schemes.density_layers import sphere_frame
from meanfield.solvers.schemes.sphere import SphereSpectral
from meanfield.solvers.schemes.zonal import ZonalGalerkin

from ..harness import best_times, column_table

SIZES = {"circle": (1024, 4096, 16384), "sphere": (63, 127, 255), "zonal": (64, 256)}
QUICK_SIZES = {"circle": (1024, 4096), "sphere": (31, 63), "zonal": (64,)}
ALPHA = 0.5

COLUMNS = (("scheme", "scheme", "s"), ("resolution", "resolution", "d"), ("nodes", "nodes", "d"),
           ("layer_ms", "layer_ms", ".3f"), ("rhs_ms", "rhs_ms", ".3f"), ("projection_ms", "projection_ms", ".3f"),
           ("layer/(rhs+proj)", "ratio", ".2f"))


def _circle(resolution: int, model: Model):
    scheme = CircleSpectral(model, resolution)
    theta = scheme.basis.theta
    state = scheme.analysed((1 + 0.01 * np.cos(4 * theta)) / (2 * math.pi))
    masses, moved = scheme.density(state) * scheme.basis.cell, theta + 1e-3 * np.sin(3 * theta)
    return scheme, state, lambda: circle_mass_coefficients(moved, masses, resolution // 2), theta.size


def _sphere(resolution: int, model: Model):
    scheme = SphereSpectral(model, resolution)
    basis = scheme.basis
    colatitude, longitude = np.meshgrid(basis.colatitude, basis.longitude, indexing="ij")
    x = sphere_frame(colatitude, longitude)[0]
    state = scheme.analysed((1 + 0.01 * x[..., 0] * x[..., 1]) / (4 * math.pi))
    moved = x.reshape(-1, 3) + 1e-3 * np.roll(x.reshape(-1, 3), 1, axis=1)
    moved /= np.linalg.norm(moved, axis=1, keepdims=True)
    loc, masses = sphere_locations(moved)[0], (scheme.density(state) * basis.weights).reshape(-1)
    return scheme, state, lambda: point_mass_coefficients(masses, loc, basis.lmax, SHT_EPSILON), masses.size


def _zonal(resolution: int, model: Model):
    scheme = ZonalGalerkin(model, resolution)
    basis = scheme.basis
    state = scheme.analysed((1 + 0.01 * basis.nodes ** 2) / (4 * math.pi))
    masses, moved = basis.quad * scheme.density(state), np.clip(basis.nodes * (1 - 1e-3), -1, 1)
    return scheme, state, lambda: masses @ basis.polynomials(moved, basis.lmax), masses.size


#: each geometry's case and the dimension of its model
CASES = {"circle": (_circle, 2), "sphere": (_sphere, 3), "zonal": (_zonal, 3)}


def measure(geometry: str, resolution: int, timing: dict) -> dict:
    case, dim = CASES[geometry]
    scheme, state, projection, nodes = case(resolution, Model("sa", 9.0, 0.0, dim))
    layer, rhs, bare = best_times([lambda: scheme.layer(state, ALPHA), lambda: scheme.rhs(state, 0.0), projection],
                                  **timing)
    return {"scheme": f"{geometry} {scheme.name}", "resolution": resolution, "nodes": nodes, "layer_ms": 1e3 * layer,
            "rhs_ms": 1e3 * rhs, "projection_ms": 1e3 * bare, "ratio": layer / (rhs + bare)}


def run_benchmark(quick: bool = False) -> list[dict]:
    sizes = QUICK_SIZES if quick else SIZES
    timing = {"target": 0.1, "repeats": 3} if quick else {"target": 0.5, "repeats": 5}
    return [measure(geometry, resolution, timing) for geometry, resolutions in sizes.items()
            for resolution in resolutions]


def main(argv=None) -> None:
    """Command line: ``python -m meanfield.validation.benchmarks.layers [--quick]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller resolutions and shorter timings")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run_benchmark(quick=args.quick)
    print(f"A density through one Post-LN layer (alpha = {ALPHA:g}, SA, beta = 9); times per call in ms; "
          f"ratio = layer / (rhs + the bare non-uniform projection)")
    print(column_table(rows, COLUMNS))
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
