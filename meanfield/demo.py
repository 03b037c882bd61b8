"""The default case a newcomer sees first (``meanfield demo``, ``make demo``).

SA attention at beta = 9 on the circle from ``perturbed:1e-4``: the linear theory
(MATH.md §2.3) predicts that mode k* = 4 dominates and that about four clusters form.  One formation time,
from the one cluster observable (MATH.md §10): the first time a cluster stands out in the attention field,
predicted by applying the observable to the linear theory grown from the run's own start
(:func:`meanfield.metastable.linear_formation_time`) and observed: the run's first formation event (its
``formation_time``, located between steps on the dense output).  The finite-volume
scheme follows the density through cluster formation into the metastable phase (t = 60, mass exact, density
non-negative); the demo reports the predicted and the observed cluster count and formation time.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import fourier_series
from .cluster_detection import clusters_in_frame
from .limits import check_integer, check_solve_size
from .model import Model
from .app.storage import save_run
from .metastable import linear_formation_time
from .theory import dominant_mode

DEMO_CASE = {"attention": "sa", "beta": 9.0, "nu": 0.0, "init": "perturbed:1e-4", "seed": 0,
             "t_final": 60.0, "save_every": 0.25, "scheme": "fv"}
DEMO_EPS = 1e-4


def run_demo(out_dir="meanfield-demo", resolution: int = 1024, progress: bool = True, echo=print):
    """Run the demo case, write ``run.nc`` and ``run.png`` into ``out_dir``, return the Dataset.

    ``resolution`` is checked (an integer >= 8 that fits in memory) before anything is printed.
    """
    from meanfield.solvers.runs.solve import scheme_class, solve
    from .plotting.runs import plot_run

    check_integer("--resolution", resolution, 8)
    check_solve_size(scheme_class("circle", DEMO_CASE["scheme"]), f"the circle {DEMO_CASE['scheme']} scheme", resolution,
                     2, DEMO_CASE["t_final"], DEMO_CASE["save_every"])
    model = Model(DEMO_CASE["attention"], DEMO_CASE["beta"], DEMO_CASE["nu"], 2)
    k_star = dominant_mode(model)
    echo(f"SA attention, beta = {model.beta:g}, start perturbed:{DEMO_EPS:g}, N = {resolution}; "
         f"finite-volume run to t = {DEMO_CASE['t_final']:g}")
    dataset = solve("circle", resolution=resolution, progress=progress, **DEMO_CASE)
    initial = fourier_series.coefficients(dataset["density"].values[0])
    predicted = linear_formation_time(initial, model, 1, resolution, tol=1e-3)
    echo(f"linear theory: dominant mode k* = {k_star}; first cluster (MATH.md §10) of the linear theory grown from "
         f"this start at t = {predicted:.2f}")
    out = Path(out_dir)
    save_run(dataset, out / "run.nc")
    plot_run(dataset, out / "run.png")  # written through a temporary file renamed into place
    final = clusters_in_frame(dataset)
    formed = float(dataset.attrs.get("formation_time", math.nan))
    echo(f"stop_reason: {dataset.attrs['stop_reason']}")
    if math.isfinite(formed):
        echo(f"observed: first cluster at t = {formed:.2f} (the run's first formation event, located between steps)")
    echo(f"predicted clusters: {k_star}   observed at t = {float(dataset.time[-1]):.2f}: {final.count}")
    if final.count:
        echo("cluster centres (rad): " + ", ".join(f"{c:.3f}" for c in np.sort(final.angles)))
        echo("cluster masses:        " + ", ".join(f"{m:.3f}" for m in final.masses[np.argsort(final.angles)]))
    echo(f"wrote {out / 'run.nc'} and {out / 'run.png'}")
    return dataset
