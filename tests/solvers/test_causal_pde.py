"""The causal kinetic PDE (MATH.md §8): the positional average, the exact reductions, restarts and refusals."""

import math

import numpy as np
import pytest
import xarray as xr

from meanfield.cli import main
from meanfield.errors import InputError
from meanfield.solvers.schemes.causal import PositionalAverage, product_trapezoid_weights
from meanfield.solvers.runs.solve import solve


def exact_average(h_antiderivative_weighted, s, alibi):
    """``W h`` from a closed form of ``int_0^s e^{-lambda (s - s')} h ds'``."""
    normaliser = s if alibi == 0 else -np.expm1(-alibi * s) / alibi
    return h_antiderivative_weighted(s) / normaliser


# -- the positional average ----------------------------------------------------------------------------
@pytest.mark.parametrize("alibi", [0.0, 3.0, 400.0])
def test_the_average_keeps_constants_and_linear_profiles_exactly(alibi):
    """The product trapezoid integrates exp(-lambda (s - s')) times a linear function exactly, at any lambda and
    grid (a plain trapezoid rule is off by O((lambda ds)^2), i.e. everything at lambda = 400 on 9 nodes)."""
    average = PositionalAverage(9, alibi)
    s = average.s
    assert np.allclose(average(np.ones(9)), 1.0, rtol=0, atol=1e-15)
    assert np.allclose(average.matrix().sum(axis=1), 1.0, rtol=0, atol=1e-14)
    if alibi == 0:
        expected = s / 2
    else:   # int_0^s e^{-a (s - u)} u du / int_0^s e^{-a (s - u)} du
        expected = np.where(s > 0, s / -np.expm1(-alibi * np.where(s > 0, s, 1)) - 1 / alibi, 0.0)
    assert np.max(np.abs(average(s) - expected)) < 1e-13


def test_the_first_slice_is_its_own_average_and_the_map_is_causal():
    matrix = PositionalAverage(7, 1.5).matrix()
    assert np.array_equal(matrix[0], np.eye(7)[0])
    assert np.all(np.triu(matrix, 1) == 0)          # slice i sees slices j <= i only
    assert np.all(matrix >= 0)


@pytest.mark.parametrize("alibi", [0.0, 2.0])
def test_m_to_the_alpha_is_an_eigenfunction_and_the_rule_is_second_order(alibi):
    """``W[m^alpha] = m^alpha / (1 + alpha)`` with ``m = e^{lambda s} - 1`` (MATH.md §8); the error of the discrete
    average falls like ds^2 (fitted slope within 0.15 of 2) for a smooth power (a non-integer one is not smooth at
    s = 0 and converges like ds^(1 + alpha))."""
    alpha = 2.0
    errors = []
    for count in (33, 65, 129):
        average = PositionalAverage(count, alibi)
        m = average.s if alibi == 0 else np.expm1(alibi * average.s)
        errors.append(np.max(np.abs(average(m ** alpha) - m ** alpha / (1 + alpha))) / np.max(m ** alpha))
    slope = np.polyfit(np.log([1 / 32, 1 / 64, 1 / 128]), np.log(errors), 1)[0]
    assert abs(slope - 2) < 0.15, (errors, slope)
    assert errors[-1] < 1e-4


def test_product_weights_join_their_series_continuously():
    below = product_trapezoid_weights(0.999e-3 / 0.01, 0.01)
    above = product_trapezoid_weights(1.001e-3 / 0.01, 0.01)
    assert np.allclose(below, above, rtol=1e-5, atol=0)


# -- exact reductions (MATH.md §8) ---------------------------------------------------------------------------
CASES = {"circle": dict(resolution=64, init="vmf:1@0+vmf:1@2", t_final=1.0),
         "sphere": dict(resolution=12, init="vmf:1@0,0+vmf:1@40,100", t_final=0.3),
         "zonal": dict(resolution=24, dim=5, init="vmf:1+uniform", t_final=1.0)}


@pytest.mark.parametrize("geometry", list(CASES))
@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("alibi", [0.0, 2.5])
def test_data_independent_of_s_give_the_ordinary_run_at_every_slice(geometry, attention, alibi):
    t_final = CASES[geometry]["t_final"] * (math.exp(-2.0) if attention == "usa" else 1.0)   # USA: e^beta faster
    settings = dict(CASES[geometry], attention=attention, beta=2.0, t_final=t_final, save_every=t_final / 2,
                    rtol=1e-10)
    ordinary = solve(geometry, **settings)
    causal = solve(geometry, mask="causal", alibi=alibi, positions=3 if geometry == "sphere" else 9, **settings)
    assert causal["density"].dims[:2] == ("time", "s")
    assert ordinary.attrs["stop_reason"] == causal.attrs["stop_reason"] == "completed"
    reference = ordinary["density"].values[:, None]
    error = np.max(np.abs(causal["density"].values - reference)) / np.max(np.abs(reference))
    assert error < 1e-12
    assert np.allclose(causal["energy"], ordinary["energy"], rtol=1e-12, atol=0)


def test_the_first_slice_solves_the_ordinary_pde_on_its_own():
    causal = solve("circle", beta=3.0, resolution=64, mask="causal", alibi=1.0, positions=9,
                   init="bump:0.2@0~0.3:2", t_final=2.0, save_every=1.0, rtol=1e-10)
    first = causal["density"].isel(time=0, s=0).values
    ordinary = solve("circle", beta=3.0, resolution=64, init=first, t_final=2.0, save_every=1.0, rtol=1e-10)
    slices = causal["density"].isel(s=0).values
    assert np.max(np.abs(slices - ordinary["density"].values)) < 1e-12 * np.max(slices)
    # the other slices moved differently: the data depend on s
    assert np.max(np.abs(causal["density"].isel(time=-1, s=-1).values - slices[-1])) > 1e-4


def test_every_slice_keeps_its_mass():
    run = solve("circle", beta=4.0, resolution=64, mask="causal", alibi=3.0, positions=9, init="bump:0.5@0.6~0.2:1",
                t_final=3.0, save_every=1.0)
    assert run["slice_mass"].dims == ("time", "s")
    assert np.max(np.abs(run["slice_mass"].values - 1.0)) < 1e-13
    assert run["density"].dims == ("time", "s", "theta")
    assert run.attrs["mask"] == "causal" and run.attrs["alibi"] == 3.0 and run.attrs["positions"] == 9
    assert "--mask causal --alibi 3.0 --positions 9" in run.attrs["command"]


# -- initial data --------------------------------------------------------------------------------------
def test_every_kind_of_s_dependent_data_gives_the_same_start():
    """A callable f(s, theta), an (N_S x N) array and a DataArray with s (on another s-grid, read linearly) agree."""
    base = dict(beta=2.0, resolution=32, mask="causal", positions=5, t_final=0.01)

    def profile(s, theta):
        return (1 + 0.3 * s * np.cos(theta)) / (2 * math.pi)

    from_function = solve("circle", init=profile, **base)
    start = from_function["density"].isel(time=0)
    s, theta = start["s"].values, start["theta"].values
    from_array = solve("circle", init=profile(s[:, None], theta[None]), **base)
    fine_s = np.linspace(0, 1, 9)     # linear in s: read exactly from any grid
    data = xr.DataArray(profile(fine_s[:, None], theta[None]), dims=("s", "theta"), coords={"s": fine_s, "theta": theta})
    from_dataarray = solve("circle", init=data, **base)
    for run in (from_array, from_dataarray):
        assert np.max(np.abs(run["density"].isel(time=0).values - start.values)) < 1e-14


def test_a_causal_run_continues_exactly():
    settings = dict(beta=3.0, resolution=64, mask="causal", alibi=1.0, positions=5, init="bump:0.3@0.5~0.2:2")
    whole = solve("circle", t_final=2.0, save_every=1.0, **settings)
    half = solve("circle", t_final=1.0, save_every=1.0, **settings)
    rest = solve("circle", init=half, t_final=2.0, save_every=1.0, beta=3.0)
    assert rest.attrs["restart"] == "exact" and rest.attrs["mask"] == "causal"
    assert np.array_equal(rest["density"].isel(time=-1).values, whole["density"].isel(time=-1).values)


def test_a_causal_run_from_a_function_reruns_bit_for_bit(tmp_path):
    from meanfield import rerun, save_run

    run = solve("circle", beta=3.0, resolution=32, mask="causal", alibi=1.0, positions=9, t_final=1.0,
                init=lambda s, theta: (1 + 0.2 * s * np.cos(2 * theta)) / (2 * math.pi))
    save_run(run, tmp_path / "run.nc")
    again = rerun(tmp_path / "run.nc")
    assert run.attrs["command"] == "meanfield rerun FILE" and again.attrs["mask"] == "causal"
    assert np.array_equal(again["density"].values, run["density"].values)


# -- refusals ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("settings, named", [
    (dict(mask="causal", alibi=-1.0), "alibi"),
    (dict(mask="causal", alibi=math.nan), "alibi"),
    (dict(mask="causal", positions=1), "positions"),
    (dict(mask="causal", positions=10**9), "positions"),
    (dict(mask="strict"), "mask"),
    (dict(mask="sideways"), "mask"),
    (dict(alibi=1.0), "alibi"),
    (dict(positions=9), "positions"),
    (dict(mask="causal", scheme="fv"), "scheme"),
    (dict(mask="causal", positions=5, init=np.ones((4, 32)) / (2 * math.pi)), "expected shape (5, 32)"),
    (dict(mask="causal", init="bump:2@0.5~0.1"), "EPS"),
])
def test_bad_causal_settings_are_one_line(settings, named):
    with pytest.raises(InputError) as error:
        solve("circle", **dict(dict(beta=2.0, resolution=32, t_final=1.0), **settings))
    assert named in str(error.value) and "\n" not in str(error.value)


def test_the_command_line_refuses_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "run.nc"
    for flags in (["--mask", "causal", "--alibi", "-2"], ["--mask", "causal", "--positions", "1"],
                  ["--mask", "causal", "--alibi", "nan"], ["--alibi", "1"]):
        code = main(["solve", "circle", "--beta", "2", "--t-final", "1", "--out", str(out), *flags])
        error = capsys.readouterr().err
        assert code == 2 and not out.exists()
        assert error.startswith("meanfield: error: ") and len(error.strip().splitlines()) == 1


# -- figures ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("geometry", ["circle", "sphere"])
def test_a_causal_run_has_its_figure_and_movie(geometry, tmp_path):
    from meanfield import plot_run
    from meanfield.plotting.movie import write_movie

    resolution = 32 if geometry == "circle" else 8
    run = solve(geometry, beta=3.0, resolution=resolution, mask="causal", alibi=1.0, positions=5,
                init="bump:0.3@0.5~0.2:2", t_final=0.5, save_every=0.25)
    figure = plot_run(run, tmp_path / "run.png")
    assert len(figure.axes) >= 3 and (tmp_path / "run.png").stat().st_size > 20_000
    assert "position" in figure.axes[0].get_ylabel()
    write_movie(run, tmp_path / "run.gif", frames=3)
    assert (tmp_path / "run.gif").stat().st_size > 5_000
