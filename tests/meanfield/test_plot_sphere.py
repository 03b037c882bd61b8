"""The standard figure of sphere and zonal runs."""

import numpy as np
import pytest

from meanfield import Model, growth_rates
from meanfield.plotting.runs import plot_run
from meanfield.plotting.run_data import theory_curves
from meanfield.solvers.runs.solve import solve

RUNS = {
    "sphere": lambda: solve("sphere", attention="sa", beta=4.0, resolution=12, init="perturbed:1e-3", seed=0,
                            t_final=1.0, save_every=0.25),
    "zonal": lambda: solve("zonal", dim=4, attention="sa", beta=4.0, resolution=16, init="perturbed:1e-3",
                           seed=0, t_final=1.0, save_every=0.25),
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request):
    return RUNS[request.param]()


def test_plot_run_writes_a_figure(run, tmp_path):
    fig = plot_run(run, tmp_path / "f.png")
    assert len(fig.axes) >= 3 and (tmp_path / "f.png").stat().st_size > 20_000


def test_theory_curves_use_the_run_dimension(run):
    attrs = run.attrs
    model = Model(attrs["attention"], float(attrs["beta"]), float(attrs["nu"]), int(attrs["dim"]))
    times = run["time"].values
    expected = (run["mode_amplitude"].sel(mode=[1, 2]).values[0]
                * np.exp(np.outer(times - times[0], growth_rates(model, [1, 2]))))
    assert np.allclose(theory_curves(run, [1, 2]), expected, rtol=1e-12, atol=0)


def test_lagrangian_clusters_are_markers_sized_by_mass(tmp_path):
    from matplotlib.collections import PathCollection
    from meanfield.plotting.sphere import FULL_MASS_AREA
    run = solve("sphere", scheme="lagrangian", beta=9.0, resolution=6, init="perturbed:1e-2", t_final=15.0,
                save_every=5.0)
    fig = plot_run(run, tmp_path / "f.png")
    maps = [ax for ax in fig.axes if ax.name == "mollweide"]
    assert len(maps) == 4
    first, last = ([c for c in ax.collections if isinstance(c, PathCollection)][0].get_sizes() for ax in (maps[0], maps[-1]))
    total = float(run["weights"].sum())
    assert first.max() < 0.05 * FULL_MASS_AREA                        # before formation: single light nodes
    assert last.max() > 0.1 * FULL_MASS_AREA                          # after: clusters carrying > 10 % of the mass
    assert last.sum() == pytest.approx(FULL_MASS_AREA, rel=0.05)      # areas add up to the whole mass
    assert total == pytest.approx(float(run["mass"].values[0]), rel=1e-12)
