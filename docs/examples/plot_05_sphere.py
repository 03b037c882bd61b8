"""
Clusters on the sphere S^2
==========================

The PDE on ``S^2`` by spherical harmonics (MATH.md §2.2): a small random perturbation of the
uniform density grows at the linear rates ``lambda_l`` of its degrees, the fastest degree ``l*``
leads, and the density gathers into clusters (a little later they become narrower than the degree-127
grid; a run continued past that stops and says so in ``stop_reason``). The package's figure shows equal-area maps of
the density, the energy and the degree amplitudes against the linear theory.
"""

import numpy as np

import meanfield as mf

model = mf.Model(attention="sa", beta=9.0, dim=3)
print("fastest degree l* =", mf.dominant_mode(model), " rates l = 1..6:", np.round(mf.growth_rates(model, range(1, 7)), 3))
print(f"predicted formation time of perturbed:1e-3: {mf.formation_time(model, 1e-3):.2f}")

run = mf.solve("sphere", attention="sa", beta=9.0, resolution=127, init="perturbed:1e-3", seed=3, t_final=8.0,
               save_every=0.5, progress=False)
print(run.attrs["stop_reason"], "| lmax", run.attrs["resolution"])
figure = mf.plot_run(run)
