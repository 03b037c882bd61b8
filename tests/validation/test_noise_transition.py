"""The noise phase transition (MATH.md §2.3): uniform above nu_c, clustered below, at the zero-flux fixed point."""

import math

import numpy as np
import pytest

from meanfield.model import Model
from meanfield.theory import critical_noise
from validation.noise_transition import fixed_point, fixed_point_residual, format_table, run_study


def test_quick_sweep_has_the_transition_at_nu_c(tmp_path):
    ds = run_study(quick=True, out_dir=tmp_path)
    above = ds.order.sel(ratio=1.2)
    below = ds.order.sel(ratio=0.7)
    assert float(above.max()) < 1e-12                       # both starts relax to the uniform state
    assert float(below.min()) > 0.5                         # both starts end clustered (mode 1)
    assert float(abs(below.sel(start="perturbed") - below.sel(start="clustered")).max()) < 1e-6  # no hysteresis here
    assert float(ds.fixed_point_gap.sel(ratio=0.7).max()) < 1e-6
    assert (tmp_path / "noise_transition.nc").exists() and (tmp_path / "noise_transition.png").exists()
    assert "nu/nu_c" in format_table(ds)


def test_uniform_density_is_a_fixed_point_and_a_cluster_is_not():
    model = Model("sa", 2.0, 0.5 * critical_noise(Model("sa", 2.0, 0.0, 2)), 2)
    n = 64
    uniform = np.full(n, 1 / (2 * math.pi))
    assert np.max(np.abs(fixed_point_residual(model, uniform))) < 1e-15
    theta = 2 * math.pi * np.arange(n) / n
    bump = np.exp(3 * np.cos(theta))
    bump /= bump.mean() * 2 * math.pi
    assert np.max(np.abs(fixed_point_residual(model, bump))) > 1e-2
    solution = fixed_point(model, bump)
    assert solution is not None
    assert np.max(np.abs(fixed_point_residual(model, solution))) < 1e-10
    assert solution.mean() * 2 * math.pi == pytest.approx(1.0, abs=1e-12)
