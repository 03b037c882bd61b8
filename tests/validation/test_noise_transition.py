"""The noise phase transition (MATH.md §2.3): uniform above nu_#, clustered below, at the zero-flux fixed point."""

import math

import numpy as np
import pytest

from meanfield.model import Model
from meanfield.theory import linear_noise_threshold
from meanfield.solvers.stationary.stationary import circle_stationary_near
from meanfield.validation.studies.noise_transition import QUICK, fixed_point, format_table, plot_study, run_study


def test_quick_sweep_has_the_transition_at_nu_sharp(tmp_path, monkeypatch):
    monkeypatch.setitem(QUICK, "ratios", (0.7, 1.2))      # the two points the physics needs (the rest take ~15 s)
    ds = run_study(quick=True, out_dir=tmp_path)
    above = ds.order.sel(ratio=1.2)
    below = ds.order.sel(ratio=0.7)
    assert float(above.max()) < 1e-12                       # both starts relax to the uniform state
    assert float(below.min()) > 0.5                         # both starts end clustered (mode 1)
    assert float(abs(below.sel(start="perturbed") - below.sel(start="clustered")).max()) < 1e-6  # no hysteresis here
    assert float(ds.fixed_point_gap.sel(ratio=0.7).max()) < 1e-6
    assert (tmp_path / "noise_transition.nc").exists() and (tmp_path / "noise_transition.png").exists()
    assert "nu/nu_#" in format_table(ds)


def test_the_fixed_point_is_the_stationary_solver_s_nearest_state_at_the_frame_s_angles():
    """One stationary solver (meanfield.solvers.stationary.stationary): from a cluster turned away from 0 it finds the state at the
    cluster's own angle, of mass 1, solving its equation to 1e-12; the uniform density is its own fixed point."""
    model = Model("sa", 2.0, 0.5 * linear_noise_threshold(Model("sa", 2.0, 0.0, 2)), 2)
    n = 64
    uniform = np.full(n, 1 / (2 * math.pi))
    point, values = circle_stationary_near(model, uniform)
    assert point.residual < 1e-12 and np.max(np.abs(values - uniform)) < 1e-14
    theta = 2 * math.pi * np.arange(n) / n
    bump = np.exp(3 * np.cos(theta - 1.0))
    bump /= bump.mean() * 2 * math.pi
    point, solution = circle_stationary_near(model, bump)
    assert point is not None and point.residual < 1e-12 and point.c[1] > 0
    assert np.max(np.abs(solution - fixed_point(model, bump))) == 0
    assert abs(theta[np.argmax(solution)] - 1.0) < 2 * math.pi / n          # the cluster stays where it was
    assert np.max(np.abs(solution - bump)) > 1e-2                          # a cluster of kappa = 3 is not stationary here
    assert solution.mean() * 2 * math.pi == pytest.approx(1.0, abs=1e-12)


def test_quick_preset_draws_the_curve_on_both_sides_of_nu_sharp():
    ratios = np.array(QUICK["ratios"])
    assert (ratios < 1).sum() >= 3 and (ratios > 1).sum() >= 3


def test_bifurcation_figure_draws_every_point_and_marks_unsettled_runs():
    import xarray as xr
    ratios = [0.5, 0.7, 0.95, 1.05, 1.2]
    order = np.array([[[0.8, 0.8], [0.7, 0.7], [0.3, 0.3], [0.0, 0.0], [0.0, 0.0]]])
    stationary = np.ones(order.shape, dtype=np.int8)
    stationary[0, 2:4] = 0
    ds = xr.Dataset({"order": (("beta", "ratio", "start"), order), "stationary": (("beta", "ratio", "start"), stationary),
                     "nu_sharp": ("beta", [0.45])},
                    coords={"beta": [1.0], "ratio": ratios, "start": ["perturbed", "clustered"]},
                    attrs={"attention": "sa", "max_time": 600.0})
    ax = plot_study(ds).axes[0]
    filled = [line for line in ax.lines if line.get_linestyle() == "None" and line.get_markerfacecolor() != "none"]
    hollow = [line for line in ax.lines if line.get_linestyle() == "None" and line.get_markerfacecolor() == "none"]
    assert sum(len(line.get_xdata()) for line in filled) == 2 * 3          # settled points, both starts
    assert sum(len(line.get_xdata()) for line in hollow) == 2 * 2          # unsettled points drawn hollow
    labels = ax.get_legend().get_texts()
    assert any("not stationary by t = 600" in text.get_text() for text in labels)
