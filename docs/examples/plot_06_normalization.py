"""
Normalisation schemes on the same tokens
========================================

Where a transformer normalises changes the speed at which tokens move (MATH.md §6): with
directions ``theta_j`` and radii ``r_j`` every scheme moves ``dtheta_j/dt = P A_j / s_j``, with
a speed divisor ``s_j`` of its own (Post-LN ``1``, Pre-LN ``r_j``, Peri-LN ``r_j |A_j|``, nGPT
``|A_j| / alpha``, LN-scaling ``sqrt(t + 1)``). We start the same 64 tokens on ``S^3`` and follow
the mean cosine ``<theta_i, theta_j>`` under each scheme: all of them cluster, at different speeds.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf

dim, n, beta = 4, 64, 1.0
fig, ax = plt.subplots(figsize=(6.4, 3.8))
for scheme in ("post", "pre", "peri", "ngpt", "lnscale"):
    run = mf.simulate_particles(dim=dim, n=n, beta=beta, init="uniform", seed=7, t_final=20.0,
                                save_every=0.25, normalization=scheme, progress=False)
    x = run["positions"].values                                   # directions (time, particle, component)
    mean_direction = x.mean(axis=1)
    cosine = (np.sum(mean_direction ** 2, axis=1) * n - 1) / (n - 1)   # mean of <theta_i, theta_j>, i != j
    ax.plot(run["time"], cosine, label=scheme)
    print(f"{scheme:8s} mean cosine at t = 5, 20: {cosine[20]:.3f}, {cosine[-1]:.3f}")
ax.set_xlabel("t")
ax.set_ylabel(r"mean $\langle\theta_i, \theta_j\rangle$")
ax.set_ylim(-0.05, 1.02)
ax.legend(title="--normalization")
fig.tight_layout()
