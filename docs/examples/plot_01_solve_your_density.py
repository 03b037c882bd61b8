"""
Solve from your own density
===========================

The PDE of self-attention (MATH.md §1) on the circle, started from a density array of your own:
values on the scheme's grid, with the mass they have. The finite-volume scheme keeps going
through cluster formation (clusters are handed over to weighted points), so the run reaches
``t_final`` with the mass exact and the density non-negative.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf

# %%
# A density of our own: three bumps of different heights on 256 cells, mass 1.
cells = 256
theta = mf.grid("circle", cells, "fv")       # the cell centres 2 pi k / N of --scheme fv (faces half a cell off)
values = 1 + 0.3 * np.cos(3 * theta) + 0.1 * np.sin(theta)
values /= values.mean() * 2 * np.pi

run = mf.solve("circle", attention="sa", beta=9.0, scheme="fv", resolution=cells,
               init=values, t_final=20.0, save_every=0.25, progress=False)
print(run.attrs["stop_reason"])
mass = run["mass"].values
print(f"mass drift over the run: {np.max(np.abs(mass - mass[0])):.1e}")

# %%
# The package's own figure of a run: the density against time, mode amplitudes against the
# linear theory of MATH.md §2.3, and the interaction energy.
figure = mf.plot_run(run)

# %%
# Frames of the density: three clusters form where the bumps were.
fig, ax = plt.subplots(figsize=(7, 3.2))
for t in (0.0, 5.0, 10.0, 20.0):
    frame = run["density"].sel(time=t, method="nearest")
    ax.plot(frame["theta"], frame, label=f"t = {float(frame.time):g}")
ax.set_xlabel(r"$\theta$")
ax.set_ylabel(r"$\rho$")
ax.set_yscale("log")
ax.legend()
fig.tight_layout()
