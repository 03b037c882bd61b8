"""Study: linear growth rates of PDE runs against the theory (MATH.md §2.3), on the circle.

Each case starts from ``perturbed:1e-8`` and runs for ``T = 6 / max_k |lambda_k|``
(the fastest mode grows or decays by ``e^6``, so the run stays linear); the rate
of each mode 1..6 is the least-squares slope of ``log |rho_hat_k(t)|`` over the
saved frames.  Cases with ``nu`` above the critical noise check the decay rates.
Run: ``meanfield validate growth-circle [--quick]``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from meanfield.diagnostics import fit_growth_rates
from meanfield.model import Model
from meanfield.theory import critical_noise, growth_rates
from solvers.solve import solve

MODES = np.arange(1, 7)
EPS = 1e-8
E_FOLDS = 6.0


def fitted_rates(attention: str, beta: float, nu: float = 0.0, resolution: int = 256, seed: int = 1):
    """Fitted and theoretical rates of modes 1..6 for one case; returns ``(fitted, theory)``."""
    theory = growth_rates(Model(attention, beta, nu, 2), MODES)
    t_final = E_FOLDS / np.max(np.abs(theory))
    run = solve("circle", attention=attention, beta=beta, nu=nu, resolution=resolution,
                init=f"perturbed:{EPS:g}", seed=seed, t_final=t_final, save_every=t_final / 20,
                stepper="dopri5", rtol=1e-10)
    if run.attrs["stop_reason"] != "completed":
        raise RuntimeError(f"growth-rate run stopped: {run.attrs['stop_reason']}")
    return fit_growth_rates(run, MODES), theory


def cases(quick: bool):
    """(attention, beta, nu) triples of the study; noisy cases sit at 1.5 x the critical noise."""
    betas = (4.0, 9.0) if quick else (1.0, 2.0, 4.0, 9.0, 16.0)
    out = [(attention, beta, 0.0) for attention in ("sa", "usa") for beta in betas]
    for attention in ("sa", "usa"):
        beta = betas[0]
        out.append((attention, beta, 1.5 * critical_noise(Model(attention, beta, 0.0, 2))))
    return out


def run_study(quick: bool = False) -> xr.Dataset:
    """The table: fitted and theoretical rates, and their relative difference, per case and mode."""
    rows = [(a, b, n, *fitted_rates(a, b, n, resolution=128 if quick else 256)) for a, b, n in cases(quick)]
    fitted = np.array([r[3] for r in rows])
    theory = np.array([r[4] for r in rows])
    return xr.Dataset(
        {"fitted_rate": (("case", "mode"), fitted), "theory_rate": (("case", "mode"), theory),
         "relative_error": (("case", "mode"), np.abs(fitted / theory - 1))},
        coords={"case": np.arange(len(rows)), "mode": MODES,
                "attention": ("case", [r[0] for r in rows]), "beta": ("case", [r[1] for r in rows]),
                "nu": ("case", [r[2] for r in rows])},
        attrs={"study": "growth-circle", "eps": EPS, "e_folds": E_FOLDS})


def format_table(table: xr.Dataset) -> str:
    """One line per case: the worst relative error over modes 1..6."""
    lines = [f"{'attention':>9} {'beta':>6} {'nu':>10} {'max rel. error (modes 1-6)':>28}"]
    for case in table["case"].values:
        row = table.sel(case=case)
        lines.append(f"{str(row.attention.values):>9} {float(row.beta):>6g} {float(row.nu):>10.4g} "
                     f"{float(row.relative_error.max()):>28.3e}")
    return "\n".join(lines)
