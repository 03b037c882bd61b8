"""The standard figure and the demo."""

import numpy as np
import pytest
import xarray as xr

from meanfield import InputError, Model, growth_rates
from meanfield.cli import main
from meanfield.plotting.runs import plot_run
from meanfield.plotting.run_data import theory_curves
from meanfield.solvers.runs.solve import solve


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
    assert main(["demo", "--out-dir", str(tmp_path), "--resolution", "256", "--no-progress"]) == 0   # the default case
    out = capsys.readouterr().out
    assert "predicted clusters: 4" in out and out.split("observed at t = ")[1].split(": ")[1].startswith("4")
    assert "stop_reason: completed" in out and "observed at t = 60.00" in out   # through formation (finite volume)
    assert (tmp_path / "run.nc").exists() and (tmp_path / "run.png").stat().st_size > 20_000


@pytest.mark.parametrize("dim", [2, 3])
def test_plot_particle_runs(dim, tmp_path):
    from meanfield.solvers.runs.particle_run import simulate
    ds = simulate(dim=dim, n=64, beta=4.0, init="uniform", seed=0, t_final=2.0, save_every=0.5)
    fig = plot_run(ds, tmp_path / "p.png")
    assert len(fig.axes) >= 3 and (tmp_path / "p.png").stat().st_size > 20_000


def test_the_early_perturbation_is_visible_in_the_heat_map():
    """A 1e-3 perturbation must not be one flat colour: on the old log scale of rho it spanned < 1 % of the map."""
    from meanfield.plotting.style import deviation_norm, density_norm, linear_range, mean_density, relative_deviation, symlog
    ds = solve("circle", beta=9.0, resolution=128, scheme="fv", init="perturbed:1e-3", t_final=20.0, save_every=1.0)
    deviation = relative_deviation(ds["density"].values, mean_density(ds))
    assert np.allclose(np.mean(deviation, axis=1), 0.0, atol=1e-12)        # rho_bar = mass / 2 pi is the frame mean
    linear = linear_range(deviation[0])
    assert linear == pytest.approx(0.1 * np.abs(deviation[0]).max())
    colour = np.asarray(deviation_norm(symlog(deviation, linear))(symlog(deviation, linear)))
    first, last = colour[0], colour[-1]
    assert np.ptp(first) > 0.2                      # the start spans a fifth of the colour map ...
    density = ds["density"].values
    assert np.ptp(np.asarray(density_norm(density)(density[0]))) < 0.01    # ... where a log scale of rho was flat
    assert last.max() > 0.99 and last.min() < 0.01  # clusters and the empty space between them saturate


def test_node_groups_sum_the_mass_of_coincident_nodes():
    from meanfield.plotting.sphere import marker_areas, node_groups
    points = np.array([[1.0, 0.0, 0.0], [1.0, 1e-9, 0.0], [0.0, 0.0, 1.0]])
    centres, masses = node_groups(points, np.array([0.25, 0.25, 0.5]))
    assert sorted(masses.tolist()) == [0.5, 0.5] and np.allclose(np.linalg.norm(centres, axis=1), 1.0)
    assert np.allclose(sorted(marker_areas(masses, 1.0)), [1250.0, 1250.0])
    assert marker_areas([1e-9], 1.0)[0] == 1.0      # a single light node stays visible


def test_gaussian_tokens_on_a_line_are_drawn_as_densities(tmp_path):
    from meanfield.gaussian import solve as solve_moments
    ds = solve_moments(np.zeros(1), np.eye(1), V=np.eye(1), Q=np.eye(1), K=np.eye(1), t_final=0.4, save_every=0.05)
    fig = plot_run(ds, tmp_path / "g.png")
    curves = fig.axes[0].lines
    assert len(curves) == 8 and (tmp_path / "g.png").stat().st_size > 20_000
    x, y = curves[0].get_data()
    assert np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(x)) == pytest.approx(1.0, abs=1e-3)   # N(alpha, Sigma) at t = 0
    assert "law of the tokens" in fig.axes[0].get_title() and fig.axes[1].get_xlabel() == "time $t$ (dimensionless)"


def test_a_run_under_a_normalisation_scheme_names_it_and_draws_the_radii():
    from meanfield import plot_run
    from meanfield.solvers.runs.particle_run import simulate

    run = simulate(dim=3, n=20, beta=2.0, t_final=1.0, save_every=0.25, normalization="pre", r0=1.5)
    fig = plot_run(run)
    assert "Pre-LN (r0 = 1.5)" in fig._suptitle.get_text()
    radius_axes = [ax for ax in fig.axes if "radius" in ax.get_ylabel()]
    assert len(radius_axes) == 1
    low, high = radius_axes[0].get_ylim()
    assert low <= 1.5 and high >= float(run["radius"].values.max())


def test_the_title_names_every_scheme_with_only_the_parameters_it_uses():
    from meanfield.plotting.runs import normalization_label

    attrs = {"r0": 1.5, "alpha": 2.0, "mix_switch": 3.0}
    expected = {"post": "", "pre": ",  Pre-LN (r0 = 1.5)", "mix": ",  Mix-LN (r0 = 1.5, tau = 3)",
                "peri": ",  Peri-LN (r0 = 1.5)", "ngpt": ",  nGPT (alpha = 2)", "lnscale": ",  LN-scaling"}
    for name, label in expected.items():
        assert normalization_label(dict(attrs, normalization=name)) == label
    assert normalization_label({}) == ""                                    # runs from before the schemes
