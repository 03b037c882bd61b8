"""Study: linear growth rates of PDE runs against the theory (MATH.md §2.3), on the circle.

Each case starts from ``perturbed:1e-12`` and runs for ``T = 6 / max_k |lambda_k|``
(the fastest mode grows or decays by ``e^6``, so the run stays linear); the rate
of each mode 1..6 is the least-squares slope of ``log |rho_hat_k(t)|`` over the
``FRAMES + 1`` saved frames.  Cases with ``nu`` above the linear noise threshold ``nu_#`` check the decay rates.

What the fit can be off by (``tolerance``, relative, per case and mode; MATH.md §2.3):

* dopri5's step error: a step ``h <= T / FRAMES`` (the run's ``dt_max``) multiplies the mode by ``R(h mu)``
  instead of ``exp(h mu)`` (``mu`` the noise-free rate; the noise is treated exactly), a rate error
  ``|mu (log R(z) / z - 1)|``, ``z = mu T / FRAMES`` (:func:`step_error`), about ``z^5 / 3600``;
* the frames' interpolation: a frame inside a step is dopri5's dense output (:mod:`meanfield.solvers.runs.runloop`),
  off by at most ``max_s |log R_s(z) - s z|`` in ``log |rho_hat_k|`` (:meth:`Dopri5.dense_stability`), an offset
  that does not accumulate and moves the slope by at most 3 times itself over ``T`` (:func:`frame_error`);
* the quadratic feed of the other modes, ``delta_k(T)`` of :func:`meanfield.theory.quadratic_feed`
  from the run's initial amplitudes, which moves a least-squares slope over ``[0, T]`` by at most
  ``3 delta_k(T) / T`` (:func:`feed_error`).  At ``1e-8`` it dominated slow modes (mode 6 at beta = 4:
  a relative error of 4e-5, proportional to the perturbation); at ``1e-12`` it is below the step error.

Run: ``meanfield validate growth-circle [--quick] [--beta B1,B2,...] [--seed S] [--out FILE]``: ``--beta`` replaces
the preset's betas (each runs SA and USA without noise; the two noisy cases at the first), ``--seed`` the
perturbation's; every tolerance above is derived for its case, so the claim holds at any ``beta > 0``.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from meanfield.attention_kind import attention_kind
from meanfield.diagnostics import fit_growth_rates
from meanfield.errors import require
from meanfield.model import Model
from meanfield.theory import linear_noise_threshold, growth_rates, quadratic_feed
from meanfield.solvers.runs.solve import solve
from meanfield.solvers.steppers.steppers import Dopri5

from ..claims import Check, at_most

MODES = np.arange(1, 7)
EPS = 1e-12
E_FOLDS = 6.0
FRAMES = 20


def step_error(coupling, step: float) -> np.ndarray:
    """Largest error of a rate fitted to a dopri5 run whose steps are at most ``step`` (module docstring):
    ``|mu (log R(mu step) / (mu step) - 1)|`` per noise-free rate ``mu`` in ``coupling``."""
    coupling = np.asarray(coupling, dtype=float)
    z = coupling * step
    return np.abs(coupling * (np.log(Dopri5.stability(z)) / z - 1.0))


def frame_error(coupling, step: float, length: float) -> np.ndarray:
    """:func:`step_error`, plus the offset of frames taken from dopri5's dense output inside steps of at most ``step``
    (module docstring): ``3 max_s |log R_s(z) - s z| / length``, ``s`` on a grid of 1/200 of the step."""
    coupling = np.asarray(coupling, dtype=float)
    z = coupling * step
    offset = np.max([np.abs(np.log(Dopri5.dense_stability(z, s)) - s * z) for s in np.linspace(0, 1, 201)], axis=0)
    return step_error(coupling, step) + 3.0 * offset / length


def feed_error(model: Model, amplitudes, modes, end: float, length: float) -> np.ndarray:
    """Largest change of a least-squares slope over a window of ``length`` ending at ``end`` (time, or the
    clock of a normalisation) by the quadratic feed of :func:`meanfield.theory.quadratic_feed`: a
    function bounded by ``delta`` moves such a slope by at most ``3 delta / length``."""
    return 3.0 * quadratic_feed(model, amplitudes, end, modes) / length


def initial_amplitudes(run) -> np.ndarray:
    """``A_m = 2 pi |rho_hat_m(0)|`` of a circle run, ``m = 0 .. N/2`` (the relative amplitudes)."""
    return 2 * np.pi * run["mode_amplitude"].isel(time=0).values


def fitted_rates(attention: str, beta: float, nu: float = 0.0, resolution: int = 256, seed: int = 1):
    """Fitted and theoretical rates of modes 1..6 for one case, and the relative error the fit may carry
    (module docstring); returns ``(fitted, theory, tolerance)``."""
    model = Model(attention, beta, nu, 2)
    theory = growth_rates(model, MODES)
    t_final = E_FOLDS / np.max(np.abs(theory))
    run = solve("circle", attention=attention, beta=beta, nu=nu, resolution=resolution,
                init=f"perturbed:{EPS:g}", seed=seed, t_final=t_final, save_every=t_final / FRAMES,
                stepper="dopri5", rtol=1e-10, dt_max=t_final / FRAMES)
    if run.attrs["stop_reason"] != "completed":
        raise RuntimeError(f"growth-rate run stopped: {run.attrs['stop_reason']}")
    coupling = growth_rates(Model(attention, beta, 0.0, 2), MODES)
    bound = (frame_error(coupling, t_final / FRAMES, t_final)
             + feed_error(model, initial_amplitudes(run), MODES, t_final, t_final))
    return fit_growth_rates(run, MODES), theory, bound / np.abs(theory)


#: The quick and full presets: the betas, the grid and the seed of the perturbation (``--beta``, ``--seed``).
QUICK = {"betas": (4.0, 9.0), "resolution": 128, "seed": 1}
FULL = {"betas": (1.0, 2.0, 4.0, 9.0, 16.0), "resolution": 256, "seed": 1}


def check_betas(betas) -> tuple:
    """``betas`` as floats, refused unless each is > 0 (at ``beta = 0`` every linear rate vanishes: no growth to
    fit) and within USA's range (the study runs both attentions)."""
    betas = tuple(float(beta) for beta in betas)
    top = attention_kind("usa").beta_max
    require(len(betas) >= 1 and all(math.isfinite(beta) and 0 < beta <= top for beta in betas),
            f"--beta must be > 0 and <= {top:g} for this study (got {', '.join(f'{beta:g}' for beta in betas)})")
    return betas


def cases(quick: bool, betas=None):
    """(attention, beta, nu) triples of the study at ``betas`` (default: the preset's); noisy cases sit at 1.5 x
    the linear noise threshold nu_# of the first beta."""
    betas = (QUICK if quick else FULL)["betas"] if betas is None else check_betas(betas)
    out = [(attention, beta, 0.0) for attention in ("sa", "usa") for beta in betas]
    for attention in ("sa", "usa"):
        beta = betas[0]
        out.append((attention, beta, 1.5 * linear_noise_threshold(Model(attention, beta, 0.0, 2))))
    return out


def run_study(quick: bool = False, betas=None, seed: int | None = None) -> xr.Dataset:
    """The table: fitted and theoretical rates, their relative difference and the relative error the fit may
    carry (``tolerance``, module docstring), per case and mode.  ``betas`` and ``seed`` (the perturbation's)
    replace the preset's; the tolerance is derived for each case's beta and nu, so it follows them."""
    preset = QUICK if quick else FULL
    seed = preset["seed"] if seed is None else int(seed)
    rows = [(a, b, n, *fitted_rates(a, b, n, resolution=preset["resolution"], seed=seed))
            for a, b, n in cases(quick, betas)]
    fitted = np.array([r[3] for r in rows])
    theory = np.array([r[4] for r in rows])
    return xr.Dataset(
        {"fitted_rate": (("case", "mode"), fitted), "theory_rate": (("case", "mode"), theory),
         "relative_error": (("case", "mode"), np.abs(fitted / theory - 1)),
         "tolerance": (("case", "mode"), np.array([r[5] for r in rows]))},
        coords={"case": np.arange(len(rows)), "mode": MODES,
                "attention": ("case", [r[0] for r in rows]), "beta": ("case", [r[1] for r in rows]),
                "nu": ("case", [r[2] for r in rows])},
        attrs={"study": "growth-circle", "eps": EPS, "e_folds": E_FOLDS, "frames": FRAMES, "seed": seed,
               "resolution": preset["resolution"]})


def format_table(table: xr.Dataset) -> str:
    """One line per case: the worst relative error over modes 1..6, and the worst error over its bound."""
    lines = [f"{'attention':>9} {'beta':>6} {'nu':>10} {'max rel. error (modes 1-6)':>28} {'max error / bound':>18}"]
    for case in table["case"].values:
        row = table.sel(case=case)
        lines.append(f"{str(row.attention.values):>9} {float(row.beta):>6g} {float(row.nu):>10.4g} "
                     f"{float(row.relative_error.max()):>28.3e} "
                     f"{float((row.relative_error / row.tolerance).max()):>18.3f}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- claims
def growth_claims(table) -> list[Check]:
    return [at_most("Fitted linear growth rates equal the MATH.md §2.3 rates, every case and mode 1-6 "
                    "(largest relative error over its bound)", (table["relative_error"] / table["tolerance"]).max(),
                    1.0, theory="≤ 1",
                    source="theory: dopri5's step error |log R(z) / z - 1| at z = mu T / FRAMES (R its stability "
                           "function; every step at most a save interval, dt_max), the frames' dense-output offset "
                           "3 max_s |log R_s(z) - s z| / T, plus the quadratic feed 3 delta_k(T) / T from the run's initial amplitudes (MATH.md §2.3; "
                           "validation/studies/growth_rates.py)")]
