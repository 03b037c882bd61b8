"""The items of ``validate depth`` (validation/studies/depth.py), one module a theme; each :class:`Item` computes its
part of the Dataset, draws one panel of ``depth.png``, states its claims and writes its lines of the printed table:

- :mod:`.layers`: 1. **growth**, the layers' linear theory (§11): the per-layer growth of the dominant mode of a
  perturbed uniform state on quadrature-weighted nodes (the circle and S^2, SA and USA, ``alpha = 0.1`` and ``1``)
  against ``g_l = 1 + alpha lambda_l / (1 + alpha c_0)``, the flow's Euler factor ``1 + alpha lambda_l`` beside it;
  2. **flow**, ``L`` layers of step ``T / L`` (``T = 2``, ``L = 8 .. 256``) against the flow at ``T``: the error, the
  order fitted with its ``c / L`` term, the layers' Richardson limit from ``L = 256, 512, 1024``.
- :mod:`.hardmax` (§12): 3. **departure**, the hull vertices of a seeded polygon, at rest under hardmax, leave the
  hardmax trajectory at finite beta after a time growing as ``e^{beta g}`` (``g`` the smallest score gap; betas
  ``E / g`` for the preset's exponents ``E``); 4. **psd**, ``A = I``: the vertices do not move, every other token runs
  on a straight line to the vertex of its dominance cell (the rule of ``compute_cell_map`` in
  borjanG/2025-transformers-frank-wolfe/cells.py) and no argmax set changes.
- :mod:`.rd` (§12.1): 5. **rd-reference**, the stepping of clustering-Tformers.py (attention frozen over a step)
  against the package's rescaled tokens ``z = e^{-tV} x`` (order 1, Richardson value); 6. **rd-polytope**, ``V = I``:
  the limit points are exactly the initial hull's vertices; 7. **rd-hyperplanes**, the paper's 2-d ``V``: parallel
  hyperplanes ``<l_1, z> = c``, as many as the signs of ``<l_1, z(0)>``.
- :mod:`.gaussian`: 8. **gaussian** (§3.1), sampled tokens through two residual layers against the exact moment map
  (slope ``-1/2``) and ``L`` layers against the moment ODE (order 1, Richardson limit).
- :mod:`.random_weights`: 9. **random** (§11), ``V_l = I + sigma G_l / sqrt(d)`` against the homogenised flow of
  ``V = I``: the RMS over seeds falls at order 1/2.
- :mod:`.densities`: 10. **density** (§11), one layer pushing forward a perturbed uniform density on the circle's
  spectral, S^2's spectral and the zonal Galerkin schemes (growth ``g_l``, mass kept), and on the circle's finite
  volumes, whose factor converges to ``g_l`` at order 2 in the cells.

Items 5, 6, 7 and 9 run on fixed inputs (their modules' tests').
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

#: The linear theory's relative error the claims allow (items 1 and 10; the theory leaves ``O(eps)``).
GROWTH_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Item:
    """One part of the study: ``compute(preset) -> xr.Dataset`` (its own variables, dims prefixed by its name),
    ``plot(ax, table)`` (one panel of ``depth.png``), ``claims(table) -> list[Check]`` and ``lines(table) ->
    list[str]`` (its lines of the printed table)."""

    name: str
    compute: Callable
    plot: Callable
    claims: Callable
    lines: Callable
