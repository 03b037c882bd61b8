"""Two independent discretisations agree: the S^2 harmonic solver and the zonal Gegenbauer solver (d = 3)."""

import numpy as np
import pytest

from meanfield.solvers.runs.solve import solve


@pytest.mark.parametrize("attention, t_final", [("sa", 1.0), ("usa", 0.05)])
def test_zonal_start_on_s2_matches_the_zonal_solver(attention, t_final):
    common = dict(attention=attention, beta=3.0, t_final=t_final, save_every=t_final / 2, rtol=1e-12)
    sphere = solve("sphere", resolution=32, init="vmf:2@90,0+vmf:0.5@90,0", **common)
    zonal = solve("zonal", dim=3, resolution=32, init="vmf:2+vmf:0.5", **common)
    for run in (sphere, zonal):
        assert run.attrs["stop_reason"] == "completed"
    a = sphere["mode_amplitude"].values[-1]
    b = zonal["mode_amplitude"].values[-1]
    assert np.max(np.abs(a - b)) < 1e-8 * b[0]
    assert sphere["energy"].values[-1] == pytest.approx(zonal["energy"].values[-1], rel=1e-10)
    assert np.max(np.abs(a - sphere["mode_amplitude"].values[0])) > 1e-3 * b[0]  # the density did move
