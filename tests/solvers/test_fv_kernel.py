"""The compiled finite-volume kernel (solvers/schemes/fv_kernel.py, issue 34 item 2) gives numpy's values.

Its operations are numpy's, one IEEE operation per value in the same order, on multipliers split into a real and an
imaginary table, so the grid's rate of change, the fluxes the point clusters read, ``max_i r_i`` and whole runs
must be *identical* (raw bytes) with and without it; the speed it buys is measured by ``meanfield validate
bench-cluster-schemes``.
"""

import math

import numpy as np
import pytest

import meanfield
from meanfield.model import Model
from meanfield.solvers.schemes import finite_volume as fv_module
from meanfield.solvers.schemes import fv_kernel
from meanfield.solvers.schemes.finite_volume import CircleFiniteVolume

pytestmark = pytest.mark.skipif(not fv_kernel.AVAILABLE,
                                reason="the compiled fv kernel is not built in this install (no C compiler)")


def clustered_cells(n, rng):
    """Cell averages of sharp clusters on an empty background with noise (some cells exactly 0)."""
    theta = 2 * math.pi * np.arange(n) / n
    rho = np.exp(12.0 * (np.cos(3.0 * theta) - 1)) + 1e-3 * rng.random(n)
    rho[rng.random(n) < 0.2] = 0.0
    return rho / (rho.mean() * 2 * math.pi)


@pytest.mark.parametrize("n, beta, nu", [(16, 16.0, 0.0), (64, 9.0, 0.01), (1024, 9.0, 0.0), (4096, 30.0, 0.0)])
@pytest.mark.parametrize("normalization", ["post", "lnscale"])
@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_the_compiled_grid_change_has_numpys_bits(attention, normalization, n, beta, nu, rng):
    """16 cells at beta = 16: the band limit exceeds N/2, so the coefficients fold and the faces are strided."""
    model = Model(attention, beta, nu, 2)
    compiled = CircleFiniteVolume(model, n, normalization=normalization)
    reference = CircleFiniteVolume(model, n, normalization=normalization, pointwise="numpy")
    assert (compiled.pointwise_kernel, reference.pointwise_kernel) == ("compiled", "numpy")
    rho = clustered_cells(n, rng)
    points = compiled.point_coefficients(np.array([0.3, 2.0, 4.1]), np.array([0.2, 0.1, 0.05]))
    for given in (None, points):
        ours = compiled.grid_change(rho, 2.5, given)
        theirs = reference.grid_change(rho, 2.5, given)
        assert ours.tobytes() == theirs.tobytes()
        assert compiled.fv.flux.tobytes() == reference.fv.flux.tobytes()
        assert compiled.fv.max_rate == reference.fv.max_rate > 0


def test_ngpt_uses_numpy_and_refuses_the_compiled_kernel():
    model = Model("sa", 4.0, 0.0, 2)
    assert CircleFiniteVolume(model, 64, normalization="ngpt").pointwise_kernel == "numpy"
    with pytest.raises(ValueError, match="covers Post-LN and LN-scaling, not nGPT"):
        CircleFiniteVolume(model, 64, normalization="ngpt", pointwise="compiled")
    with pytest.raises(ValueError, match="fv pointwise must be one of auto, compiled, numpy"):
        CircleFiniteVolume(model, 64, pointwise="fast")


def test_a_nan_rate_is_reported_as_numpy_reports_it():
    compiled = CircleFiniteVolume(Model("sa", 4.0, 0.0, 2), 32)
    rho = np.full(32, 1 / (2 * math.pi))
    rho[7] = np.nan
    compiled.grid_change(rho, 0.0)
    assert math.isnan(compiled.fv.max_rate)


@pytest.mark.parametrize("options", [dict(attention="sa", beta=9.0, t_final=1e4, save_log=10),
                                     dict(attention="usa", beta=4.0, nu=0.02, t_final=2.0, save_every=0.5)])
def test_whole_runs_are_identical_with_and_without_the_kernel(monkeypatch, options):
    """Formation, hand-overs to points and merges (SA, no noise) or noise: every saved variable byte for byte."""
    run = dict(geometry="circle", scheme="fv", resolution=128, seed=3, init="perturbed:1e-3", **options)
    compiled = meanfield.solve(**run)
    monkeypatch.setattr(fv_module, "fused_kernel", lambda scheme, choice="auto": None)
    reference = meanfield.solve(**run)
    assert (compiled.attrs["pointwise_kernel"], reference.attrs["pointwise_kernel"]) == ("compiled", "numpy")
    assert compiled.attrs["steps"] == reference.attrs["steps"] > 10
    assert compiled.attrs["stop_reason"] == "completed"
    if "save_log" in options:
        assert compiled.sizes["merge"] >= 1
    for name, variable in compiled.data_vars.items():
        assert variable.values.tobytes() == reference[name].values.tobytes(), name
