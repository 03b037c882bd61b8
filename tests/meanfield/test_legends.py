"""Legends never cover data: in the standard figure of every kind of run, no legend box overlaps an axes."""

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.legend import Legend

import meanfield
from meanfield import gaussian
from meanfield.solvers.runs.particle_run import simulate


def legend_cover(fig) -> float:
    """The largest fraction of any axes' area that a legend covers (colour bars count as axes too)."""
    FigureCanvasAgg(fig).draw()
    legends = [c for c in fig.get_children() if isinstance(c, Legend)]
    legends += [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends, "the figure has no legend to check"
    worst = 0.0
    for legend in legends:
        box = legend.get_window_extent()
        for ax in fig.axes:
            area = ax.get_window_extent()
            dx = min(box.x1, area.x1) - max(box.x0, area.x0)
            dy = min(box.y1, area.y1) - max(box.y0, area.y0)
            if dx > 0 and dy > 0:
                worst = max(worst, dx * dy / (area.width * area.height))
    return worst


RUNS = {
    "circle": lambda: meanfield.solve("circle", beta=4.0, resolution=64, t_final=2.0, save_every=0.5),
    "zonal": lambda: meanfield.solve("zonal", scheme="fv", beta=4.0, resolution=32, t_final=2.0, save_every=0.5),
    "particles": lambda: simulate(dim=2, n=64, beta=4.0, t_final=2.0, save_every=0.5),
    "gaussian": lambda: gaussian.solve(np.zeros(2), np.diag([1.0, 0.5]), V=np.eye(2), Q=np.eye(2), K=np.eye(2),
                                       t_final=0.2),
}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_no_legend_covers_an_axes(kind):
    assert legend_cover(meanfield.plot_run(RUNS[kind]())) == 0.0
