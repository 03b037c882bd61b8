"""
Gaussian tokens: the mean and covariance ODEs
=============================================

For Gaussian data in ``R^d`` the attention dynamics stays Gaussian and closes on its mean and
covariance (Castin et al., MATH.md §3). With ``Q = K = V = I`` and softmax attention the
covariance of ``N(0, Sigma)`` keeps its eigenvectors and each eigenvalue follows
``lambda(t) = lambda / (1 - 2 lambda t)``: it blows up at ``t = 1 / (2 lambda_max(Sigma))``. The run
detects the blow-up and estimates its time.
"""

import matplotlib.pyplot as plt
import numpy as np

from meanfield import gaussian

dim = 3
identity = np.eye(dim)
cov = np.diag([1.0, 0.5, 0.25])                 # lambda_max = 1: blow-up at t = 1/2
run = gaussian.solve(np.zeros(dim), cov, V=identity, Q=identity, K=identity, t_final=0.6,
                     attention="softmax", save_every=None)
print(run.attrs["stop_reason"], "at t =", run.attrs["t_reached"])
print(f"estimated blow-up time {run.attrs['blowup_time']:.6f} (theory 0.5)")

# %%
# The eigenvalues of the covariance against time, and the closed form.
eigenvalues = np.linalg.eigvalsh(run["covariance"].values)
time = run["time"].values
start = np.linalg.eigvalsh(cov)
exact = start / (1.0 - 2.0 * start * time[:, None])
early = time <= 0.45                            # away from the pole, where a time error is amplified
print(f"relative error against the closed form for t <= 0.45: {np.max(np.abs(eigenvalues / exact - 1)[early]):.1e}")
fig, ax = plt.subplots(figsize=(6, 3.6))
ax.semilogy(time, eigenvalues, lw=1.5)
ax.semilogy(time, exact, "k:", lw=1.0)
ax.plot([], [], "k:", label=r"$\lambda / (1 - 2 \lambda t)$")
ax.axvline(0.5, color="grey", lw=0.8)
ax.set_xlabel("t")
ax.set_ylabel(r"eigenvalues of $\Sigma(t)$")
ax.legend()
fig.tight_layout()
