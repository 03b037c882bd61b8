"""
Layers against the flow
=======================

A transformer does not run a flow: it applies ``L`` layers of a finite step ``alpha``, each sending a token to
``(x + alpha A_x) / |x + alpha A_x|`` (Post-LN, MATH.md §11). ``stepper="layers"`` runs exactly that map, one layer
per step of size ``dt_max = alpha``, so layer ``l`` sits at time ``l alpha``.

Left: the same 64 tokens on the circle through ``L`` layers of step ``T / L`` and through the flow up to ``T = 2``.
The gap shrinks like ``1 / L``, since a layer is an Euler step of the flow to first order in ``alpha``.

Right: a uniform state perturbed in mode 3, on weighted quadrature nodes. Each layer multiplies the mode by
``g_3 = 1 + alpha lambda_3 / (1 + alpha c_0)`` (``meanfield.theory.layer_growth_factors``). The flow would multiply
it by ``e^{alpha lambda_3}`` over the same time.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
from meanfield.theory import layer_growth_factors

beta, n, final = 4.0, 64, 2.0
common = dict(dim=2, n=n, beta=beta, init="uniform", seed=3, collapse_tol=0, progress=False)
flow = mf.simulate_particles(**common, t_final=final, save_every=final, rtol=1e-12)
counts = np.array([4, 8, 16, 32, 64, 128])
errors = []
for count in counts:
    layered = mf.simulate_particles(**common, stepper="layers", dt_max=final / count, t_final=final, save_every=final)
    gap = layered["positions"].values[-1] - flow["positions"].values[-1]
    errors.append(np.linalg.norm(gap, axis=1).max())
    print(f"L = {count:3d} layers of step {final / count:.4f}: largest distance to the flow {errors[-1]:.2e}")

alpha, layers, mode = 0.5, 8, 3
perturbed = mf.simulate_particles(dim=2, n=512, beta=9.0, init=lambda theta: 1 + 1e-6 * np.cos(mode * theta),
                                  sampling="quadrature", stepper="layers", dt_max=alpha, t_final=layers * alpha,
                                  save_every=alpha, collapse_tol=0, progress=False)
amplitude = perturbed["mode_amplitude"].sel(mode=mode).values
model = mf.Model("sa", 9.0, 0.0, 2)
factor = layer_growth_factors(model, [mode], alpha)[0]
rate = mf.growth_rates(model, [mode])[0]
print(f"per-layer growth of mode {mode}: measured {amplitude[1] / amplitude[0]:.10f}, theory g = {factor:.10f}, "
      f"the flow's e^(alpha lambda) = {np.exp(alpha * rate):.4f}")

fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.8))
left.loglog(counts, errors, "o-", label="layers against the flow")
left.loglog(counts, errors[-1] * counts[-1] / counts, "k--", lw=0.8, label=r"$\propto 1/L$")
left.set(xlabel="layers L (step T / L, T = 2)", ylabel=r"$\max_j |x_j^L - x_j(T)|$")
left.legend()
layer = np.arange(layers + 1)
right.semilogy(layer, amplitude, "o", label="layers (measured)")
right.semilogy(layer, amplitude[0] * factor ** layer, "-", label=r"$g_3^{\,l}$ (theory)")
right.semilogy(layer, amplitude[0] * np.exp(rate * alpha * layer), "--", label=r"flow $e^{\lambda_3 t}$")
right.set(xlabel=f"layer l (step alpha = {alpha:g})", ylabel=f"amplitude of mode {mode}")
right.legend()
fig.tight_layout()
