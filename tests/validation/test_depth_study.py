"""``meanfield validate depth --quick`` (validation/studies/depth.py): every item's numbers against its theory
(MATH.md §11, §12), one panel per item, and claims that fail when the numbers are off."""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.cli import main
from meanfield.model import Model
from meanfield.theory import layer_growth_factors
from meanfield.validation.studies import depth
from meanfield.validation.studies.depth_items import hardmax


def test_the_smallest_gap_and_the_departure_time():
    square = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    assert hardmax.smallest_gap(square) == 1.0                         # |v|^2 - <v, its neighbour> = 1 - 0
    times = np.array([1.0, 10.0, 100.0])
    distance = np.array([1e-4, 1e-3, 1e-1])                          # log-linear between 10 and 100: 1e-2 at 10^1.5
    assert hardmax.departure_time(distance, times, 1e-2) == pytest.approx(10 ** 1.5, rel=1e-12)
    assert math.isnan(hardmax.departure_time(distance, times, 1.0))    # never reached
    assert math.isnan(hardmax.departure_time(distance, times, 1e-5))   # already beyond it at the first frame


def test_quick_study_holds_every_items_theory(tmp_path, capsys):
    assert main(["validate", "depth", "--quick", "--out-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "claims: 35 of 35 hold" in printed
    assert (tmp_path / "depth.png").stat().st_size > 50_000
    with xr.open_dataset(tmp_path / "depth.nc") as stored:
        table = stored.load()
    # 1. the circle and S^2, SA and USA, alpha 0.1 and 1: the dominant degree's factor is g_l, to the perturbation's
    # O(1e-7) share (measured 4e-10 to 1.3e-8)
    assert table.sizes["growth_case"] == 8 and sorted(set(table.growth_alpha.values)) == [0.1, 1.0]
    for index in range(8):
        model = Model(str(table.growth_attention.values[index]), 4.0, 0.0, int(table.growth_dim[index]))
        degrees = np.arange(1, 9)
        factors = layer_growth_factors(model, degrees, float(table.growth_alpha[index]))
        assert int(table.growth_degree[index]) == degrees[np.argmax(factors)]
        assert float(table.growth_theory[index]) == factors.max()
    assert float(np.abs(table.growth_measured / table.growth_theory - 1).max()) < 1e-7
    # 2. order 1 within 0.05 (measured 0.992 to 0.996) and the Richardson limit within 1e-6 of the flow (1.1e-7 to
    # 2.2e-7), which the once-extrapolated layers are not
    assert table.flow_layers.values.tolist() == [8, 16, 32, 64, 128, 256]
    assert float(np.abs(table.flow_order - 1).max()) < 0.05
    assert float(table.flow_limit_error.max()) < 1e-6 < float(table.flow_once_error.min())
    # 3. the departure exponent is g to the drift's own O(delta) correction (-3 %)
    assert float(table.departure_exponent) == pytest.approx(float(table.departure_gap), rel=0.05)
    assert np.all(np.diff(table.departure_time.values) > 0)
    # 4. hardmax, A = I: the vertices stay bit for bit, no event, straight lines to round-off
    assert float(table.psd_vertex_motion) == 0.0 and int(table.psd_events) == 0
    assert float(table.psd_line_error) < 1e-14
    # 5-7. R^d: the reference loop at order 1 within 0.1 (measured 1.055, 0.972), its Richardson value 20 times
    # closer than its finest step; the limit counts exact (7 hull vertices; 2 signs of <l_1, z(0)>)
    assert float(np.abs(table.rd_order - 1).max()) < 0.1
    assert float((table.rd_error[:, -1] / table.rd_extrapolated_error).min()) > 20
    assert table.sizes["polytope_limit"] == int(table.polytope_expected) == 7 and bool(table.polytope_is_vertex.all())
    assert table.sizes["hyperplane_level"] == int(table.hyperplane_expected) == 2
    # 8. Gaussian data: slope -1/2 within 0.1 (measured -0.46), order 1 within 0.05, Richardson limit the ODE
    assert abs(float(table.gaussian_slope) + 0.5) < 0.1 and abs(float(table.gaussian_flow_order) - 1) < 0.05
    assert float(table.gaussian_richardson_error) < 1e-9
    # 9. random weights: order 1/2 within 0.1 (measured 0.501), the fluctuations above the fixed weights' error
    assert abs(float(table.random_order) - 0.5) < 0.1
    assert np.all(table.random_fixed_error < np.sqrt((table.random_error ** 2).mean("random_seed")))
    # 10. densities: g_l within 1e-6 on every scheme (measured 3e-10 to 3e-8), mass to rounding
    assert table.sizes["density_case"] == 12 and float(np.abs(table.density_measured / table.density_theory - 1).max()) < 1e-7
    assert float(table.density_mass_change.max()) < 16 * np.finfo(float).eps
    # the circle's finite volumes: the factor's error falls at order 2 within 0.05 (measured 1.9995 .. 2.0016) from
    # N = 512 to 1024, and one Richardson step leaves less than 1e-6 (measured 1e-9 to 3e-9)
    assert table.density_fv_cells.values.tolist() == [512, 1024] and table.sizes["density_fv_case"] == 4
    errors = (table.density_fv_measured / table.density_fv_theory - 1).values
    assert np.all(np.abs(np.log2(errors[:, 0] / errors[:, 1]) - 2) < 0.05)
    assert np.all(np.abs((4 * errors[:, 1] - errors[:, 0]) / 3) < 1e-6)
    # a claim fails when its number is off: the order read as 0.9 (a fit blind to c / L), the limit off by 1e-5
    broken = table.copy(deep=True)
    broken["flow_order"][0] = 0.9
    broken["flow_limit_error"][1] = 1e-5
    failed = [check.claim for check in depth.depth_claims(broken) if not check.passed]
    assert len(failed) == 2 and "order 1" in failed[0] and "limit" in failed[1]
    # a finite-volume remap of first order (its finer error only halved) fails both of its claims
    broken = table.copy(deep=True)
    theory = broken.density_fv_theory.values[1]
    broken["density_fv_measured"][1, 1] = theory * (1 + (broken.density_fv_measured.values[1, 0] / theory - 1) / 2)
    failed = [check.claim for check in depth.depth_claims(broken) if not check.passed]
    assert len(failed) == 2 and "order 2" in failed[0] and "Richardson" in failed[1]
