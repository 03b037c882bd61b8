"""``meanfield validate normalization --quick``: every scheme against its theory (MATH.md §6)."""

import numpy as np
import xarray as xr

from meanfield.cli import main
from meanfield.validation.studies.normalization import one_minus_rho


def test_one_minus_rho_has_no_cancellation_near_collapse():
    theta = np.array([[1.0, 0.0], [np.cos(1e-7), np.sin(1e-7)]])
    exact = 2 * np.sin(0.5e-7) ** 2                       # 5e-15: 1 - <x, y> would keep about 3 digits of it
    assert abs(one_minus_rho(theta[None])[0] / exact - 1) < 1e-8


def test_quick_study_matches_the_theory_of_every_scheme(tmp_path, capsys):
    assert main(["validate", "normalization", "--quick", "--out-dir", str(tmp_path)]) == 0
    assert "late-time law" in capsys.readouterr().out
    table = xr.load_dataset(tmp_path / "normalization.nc")
    assert (tmp_path / "normalization.png").stat().st_size > 50_000
    # particles follow the equiangular ODE of every scheme
    assert float(table.max_rho_error.max()) < 1e-8
    assert set(table.stop_reason.values) == {"completed"}
    # late-time laws fitted from the particles: the asymptotic rate (pre-asymptotic windows for t^-2)
    for scheme in ("post", "ngpt", "lnscale"):   # exponential laws: measured within 3e-6 of the rate
        assert abs(float(table.particle_rate.sel(scheme=scheme)) / float(table.theory_rate.sel(scheme=scheme)) - 1) < 1e-4
    for scheme in ("pre", "mix", "peri"):
        assert abs(float(table.particle_rate.sel(scheme=scheme)) - 2.0) < 0.1
        np.testing.assert_allclose(table.particle_rate.sel(scheme=scheme), table.ode_rate.sel(scheme=scheme), rtol=1e-6)
    # the initial speed gap: Peri and nGPT divide by |A| < 1, Post/Pre/LN-scaling (r0 = 1) move alike
    speed = table.initial_speed
    assert float(speed.sel(scheme="peri")) > 1.3 * float(speed.sel(scheme="post"))
    assert float(speed.sel(scheme="ngpt")) > 1.3 * float(speed.sel(scheme="post"))
    # (a finite difference over 1e-4: the Pre-LN radius grows by <theta, A> x 1e-4 meanwhile, |<theta, A>| <= 1,
    # so the speeds differ by less than 1e-4 relative; measured 3.4e-5)
    np.testing.assert_allclose(speed.sel(scheme="pre"), speed.sel(scheme="post"), rtol=1e-4)
    # PDE growth under Post-LN, nGPT and LN-scaling against the linear theory, to 1e-3
    assert float(table.pde_max_relative_error.max()) < 1e-3
