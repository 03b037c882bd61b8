"""
Metastable clusters: linear theory, formation and the staircase
===============================================================

The perturbative study of MATH.md §2.3–2.4 and §5 on the circle, SA attention at ``beta = 9``:

1. the linear growth rates ``lambda_k`` of the uniform state, the dominant mode ``k*`` (the
   predicted cluster count) and the predicted formation time of a ``perturbed:1e-4`` start;
2. the nonlinear PDE from that start: its mode amplitudes grow at the predicted rates and
   ``k*`` clusters form near the predicted time;
3. the whole metastable staircase (MATH.md §5): Lagrangian nodes followed to ``t = 1e9``,
   clusters merging one pair at a time on plateaus of exponentially growing length, against
   the K-point ODE integrated from the clusters the PDE formed.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf

# %%
# Linear theory (MATH.md §2.3): rates, dominant mode, formation time, and the probability that
# each mode leads at formation (MATH.md §2.4).
model = mf.Model(attention="sa", beta=9.0)
modes = np.arange(1, 9)
rates = mf.growth_rates(model, modes)
k_star = mf.dominant_mode(model)
t_form = mf.formation_time(model, 1e-4)
leaders, probability = mf.dominance_probabilities(model, 1e-4)
print(f"dominant mode k* = {k_star}, predicted formation time {t_form:.2f}")
print("P(k clusters):", {int(k): round(float(p), 3) for k, p in zip(leaders, probability) if p > 1e-3})

# %%
# The PDE from ``perturbed:1e-4`` (pseudo-spectral, until the clusters are narrower than the grid).
run = mf.solve("circle", attention="sa", beta=9.0, resolution=1024, init="perturbed:1e-4", seed=0,
               t_final=14.0, save_every=0.1, progress=False)
fitted = mf.fit_growth_rates(run, modes[:6], t_max=6.0)
for k, measured, predicted in zip(modes[:6], fitted, rates[:6]):
    print(f"mode {k}: fitted rate {measured:.4f}, theory {predicted:.4f}")
print("clusters at the end:", mf.clusters_in_frame(run).count)

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
left.plot(modes, rates, "o-")
left.axvline(k_star, color="grey", lw=0.8)
left.set_xlabel("mode k")
left.set_ylabel(r"growth rate $\lambda_k$")
amplitude = run["mode_amplitude"]
for k in (1, 2, 3, 4, 5):
    curve = amplitude.sel(mode=k)
    right.semilogy(run["time"], curve, label=f"k = {k}")
    right.semilogy(run["time"], float(curve[0]) * np.exp(rates[k - 1] * run["time"]), "k:", lw=0.7)
right.axvline(t_form, color="grey", lw=0.8)
right.set_xlabel("t")
right.set_ylabel(r"$|\hat\rho_k(t)|$ (dotted: linear theory)")
right.legend(fontsize=8)
fig.tight_layout()

# %%
# The staircase (MATH.md §5): Lagrangian nodes from the same start, saved on a log-spaced clock.
# Coincident nodes collapse to weighted points, so each plateau costs the log of its length.
stairs = mf.solve("circle", scheme="lagrangian", attention="sa", beta=9.0, resolution=512,
                  init="perturbed:1e-4", seed=0, t_final=1e9, save_log=20, progress=False)
print("merges at t =", np.round(stairs["merge_time"].values, 1))

# %%
# The K-point ODE from the clusters present at t = 50: its merges, dated by the same cluster observable
# (MATH.md §10: two clusters become one hill of the attention field), should be the PDE's.
start = stairs.sel(time=50.0, method="nearest")
theta, weights = start["node_theta"].values, stairs["weights"].values
centres, index = np.unique(np.round(theta, 9), return_inverse=True)
masses = np.bincount(index, weights=weights)
big = masses > 1e-2
history = mf.cluster_history(centres[big], masses[big] / masses[big].sum(), beta=9.0,
                             t_start=float(start.time))
observed = history.observed_merges()
print("K-point ODE merges at t =", np.round([time for time, _ in observed], 1))

fig, ax = plt.subplots(figsize=(7, 3.2))
ax.step(stairs["time"], stairs["cluster_count"], where="post", label="Lagrangian PDE")
counts = [len(centres[big])] + [after for _, after in observed]
ax.step([float(start.time)] + [time for time, _ in observed], counts, where="post", ls="--",
        label="K-point ODE from t = 50")
ax.set_xscale("symlog", linthresh=1.0)
ax.set_xlabel("t")
ax.set_ylabel("clusters")
ax.legend()
fig.tight_layout()
