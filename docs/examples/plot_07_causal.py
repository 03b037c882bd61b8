"""
Causal attention and the lost-in-the-middle profile
===================================================

In a decoder, token ``j`` attends only to the tokens before it, with an ALiBi bias of slope ``lambda``
(MATH.md §8).  The mean field is a density ``f(t, s, x)`` for every token position ``s`` in ``[0, 1]``,
and about the uniform state each Fourier mode evolves through an explicit Green's function.  The last
token's response to a perturbation placed at position ``s``, ``S_t(s)``, is U-shaped at first (the
middle of the context is heard least) and turns monotone at ``t_crit``.

We compare ``S_t`` with the kinetic PDE itself: a run perturbed by a narrow bump at ``s = 0.5``
gives the response of the last slice, which the theory of the same bump predicts.
"""

import math

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf

beta, alibi = 4.0, 1.0
model = mf.Model("sa", beta, 0.0, 2)
weights = mf.profile_weights(4.0, 6)                    # omega_k = exp(-pi^2 k^2 / (2 M^2)), k <= 6
critical = mf.t_crit(model, alibi, weights)
s = np.linspace(0.05, 1.0, 96)
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
for factor in (0.25, 0.5, 1.0, 2.0):
    left.plot(s, mf.lost_in_the_middle(model, alibi, factor * critical, s, weights),
              label=f"t = {factor:g} t_crit")
left.set_yscale("log")
left.set_xlabel("position s of the perturbation")
left.set_ylabel(r"$S_t(s)$")
left.set_title(f"lost in the middle, t_crit = {critical:.3f}")
left.legend()

# the kinetic PDE: uniform slices, plus a small bump in position with the same angular profile
eps, width = 1e-6, 0.05
bump = lambda x: np.exp(-0.5 * ((x - 0.5) / width) ** 2) / (width * math.sqrt(2 * math.pi))
modes = np.arange(1, weights.size + 1)


def start(position, theta):
    angular = np.tensordot(weights, np.cos(np.multiply.outer(modes, theta)), axes=1)
    return (1 + eps * bump(position) * angular) / (2 * math.pi)


run = mf.solve("circle", beta=beta, resolution=64, mask="causal", alibi=alibi, positions=129, init=start,
               t_final=2 * critical, save_every=critical / 8, rtol=1e-11)
theta = run["theta"].values
last = run["density"].isel(s=-1).values                  # the last token's slice, every frame
cosines = (last @ np.cos(np.outer(modes, theta)).T) * (4 * math.pi / theta.size) / eps
response = cosines.sum(axis=1)
rates = mf.mode_rates(model, modes)
times = run["time"].values
theory = sum(w * (mf.evolve_mode(bump, [1.0], times, r, alibi)[:, 0] - bump(1.0)) for w, r in zip(weights, rates))
right.plot(times / critical, response, "o", label="kinetic PDE, last slice")
right.plot(times / critical, theory, "-", label="Green's function (same bump)")
right.set_xlabel(r"$t / t_{crit}$")
right.set_ylabel("response to a bump at s = 0.5")
right.legend()
fig.tight_layout()
print(f"t_crit = {critical:.6f}; largest relative difference PDE vs theory: "
      f"{np.max(np.abs(response - theory)) / np.max(np.abs(theory)):.2e}")
