"""The standard figure and the demo."""

import numpy as np
import pytest
import xarray as xr

from meanfield import InputError, Model, growth_rates
from meanfield.cli import main
from meanfield.plotting import plot_run, theory_curves
from solvers import solve


def test_theory_curves_are_the_linear_prediction():
    ds = solve("circle", attention="usa", beta=4.0, resolution=64, init="perturbed:1e-6", t_final=0.5,
               save_every=0.1)
    curves = theory_curves(ds, [1, 2, 3])
    rates = growth_rates(Model("usa", 4.0), [1, 2, 3])
    expected = ds["mode_amplitude"].sel(mode=[1, 2, 3]).values[0] * np.exp(np.outer(ds.time.values, rates))
    assert np.allclose(curves, expected, rtol=1e-14)
    observed = ds["mode_amplitude"].sel(mode=[1, 2, 3]).values  # linear regime: the curves fit the run
    assert np.allclose(observed, curves, rtol=1e-4)


def test_plot_run_writes_a_figure(tmp_path):
    ds = solve("circle", attention="sa", beta=4.0, resolution=64, init="perturbed:1e-3", t_final=1.0,
               save_every=0.25)
    fig = plot_run(ds, tmp_path / "f.png")
    assert len(fig.axes) >= 3 and (tmp_path / "f.png").stat().st_size > 20_000


def test_plot_refuses_other_geometries():
    ds = xr.Dataset(attrs={"geometry": "torus"})
    with pytest.raises(InputError, match="circle, sphere, zonal, particle and gaussian runs only"):
        plot_run(ds)


def test_demo_predicts_and_finds_four_clusters(tmp_path, capsys):
    assert main(["demo", "--out-dir", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "predicted clusters: 4" in out and out.split("observed at t = ")[1].split(": ")[1].startswith("4")
    assert "stop_reason: completed" in out and "observed at t = 60.00" in out   # through formation (finite volume)
    assert (tmp_path / "run.nc").exists() and (tmp_path / "run.png").stat().st_size > 20_000


@pytest.mark.parametrize("dim", [2, 3])
def test_plot_particle_runs(dim, tmp_path):
    from solvers.particle_run import simulate
    ds = simulate(dim=dim, n=64, beta=4.0, init="uniform", seed=0, t_final=2.0, save_every=0.5)
    fig = plot_run(ds, tmp_path / "p.png")
    assert len(fig.axes) >= 3 and (tmp_path / "p.png").stat().st_size > 20_000
