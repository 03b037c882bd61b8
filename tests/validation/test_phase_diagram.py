"""The phase-diagram sweep (rotf Fig. 3): resumable store, Dask, the equiangular curve."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from meanfield import InputError, Model
from meanfield.sampling import uniform_sphere
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.solvers.runs.runloop import run
from meanfield.solvers.tracking.trackers import Observer
from meanfield.solvers.steppers.steppers import make_stepper
from meanfield.validation.studies.phase_diagram import QUICK, clustered_fraction, equiangular_time, run_sweep, span_coordinates

SYNC = "synchronous"


@pytest.fixture(scope="module")
def quick_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("sweep")
    first = run_sweep(store, scheduler=SYNC, progress=False, **QUICK)
    return store, first


def test_quick_sweep_computes_every_chunk_once(quick_store):
    store, first = quick_store
    chunks = len(QUICK["dims"]) * len(QUICK["betas"])
    assert first.attrs["computed_chunks"] == chunks and first.attrs["reused_chunks"] == 0
    again = run_sweep(store, scheduler=SYNC, progress=False, **QUICK)
    assert again.attrs["computed_chunks"] == 0 and again.attrs["reused_chunks"] == chunks
    assert np.array_equal(again["probability"].values, first["probability"].values)


def test_an_interrupted_sweep_recomputes_only_what_is_missing(quick_store):
    store, first = quick_store
    for path in sorted(store.glob("chunk-*.nc"))[:2]:  # as if the sweep had stopped before these
        path.unlink()
    resumed = run_sweep(store, scheduler=SYNC, progress=False, **QUICK)
    assert resumed.attrs["computed_chunks"] == 2
    assert np.array_equal(resumed["probability"].values, first["probability"].values)  # seeded per chunk


def test_a_store_with_other_settings_is_refused(quick_store):
    store, _ = quick_store
    with pytest.raises(InputError, match="realisations"):
        run_sweep(store, scheduler=SYNC, progress=False, **(QUICK | {"realisations": 16}))


def test_probabilities_are_probabilities_and_clusters_form(quick_store):
    _, first = quick_store
    p = first["probability"]
    assert float(p.min()) >= 0 and float(p.max()) <= 1
    start = first.isel(time=0)
    exact = math.acos(1 - 1e-3) / math.pi  # two uniform angles within arccos(1 - delta) of each other
    for beta in QUICK["betas"]:
        cell = start.sel(dim=2, beta=beta)
        assert abs(float(cell.probability) - exact) < 4 * float(cell.standard_error)
    assert float(start["probability"].sel(dim=8).max()) < 1e-3  # in d = 8 that cap is tiny
    assert float(p.sel(beta=0.0, dim=8).isel(time=-1)) > 0.99  # beta = 0: tokens collapse to one point
    assert np.all(p.sel(beta=0.0).isel(time=-1).values > 20 * p.sel(beta=0.0).isel(time=0).values)


def test_equiangular_time_solves_the_math_md_ode():
    n, delta = 32, 1e-3
    for beta in (0.0, 2.0, 6.0):
        rhs = lambda t, g: 2 * np.exp(beta * g) * (1 - g) * (1 + (n - 1) * g) / (np.exp(beta) + (n - 1) * np.exp(beta * g))
        hit = lambda t, g: g[0] - (1 - delta)
        hit.terminal = True
        solution = solve_ivp(rhs, (0, 1e4), [0.0], events=hit, method="DOP853", rtol=1e-12, atol=1e-14)
        assert equiangular_time(beta, n, delta) == pytest.approx(solution.t_events[0][0], rel=1e-8)


def test_span_coordinates_give_the_same_dynamics(rng):
    """d > n: integrating coordinates in the tokens' span reproduces the Gram matrices."""
    systems, n, dim = 4, 6, 20
    x = uniform_sphere(systems * n, dim, rng).reshape(systems, n, dim)
    y = span_coordinates(x)
    assert np.allclose(y @ y.transpose(0, 2, 1), x @ x.transpose(0, 2, 1), atol=1e-14)
    grams = []
    for start, d in ((x, dim), (y, n)):
        scheme = ParticleScheme(Model("sa", 3.0, 0.0, d), n)
        record = run(scheme, make_stepper("dopri5", scheme, rtol=1e-11), start, t_final=3.0, save_every=3.0,
                     trackers=[Observer(lambda z: {"gram": z @ z.transpose(0, 2, 1)})], scheme_frames=False)
        grams.append(record.frames[-1]["gram"])
    assert np.max(np.abs(grams[0] - grams[1])) < 1e-8
    assert clustered_fraction(np.repeat(x[:, :1], n, axis=1), 1e-3).tolist() == [1.0] * systems


def test_local_dask_cluster(tmp_path):
    ds = run_sweep(tmp_path, dims=(2,), betas=(0.0, 1.0), t_final=2.0, n_times=3, realisations=8,
                   scheduler=None, progress=False)
    assert ds.attrs["computed_chunks"] == 2 and ds.attrs["scheduler"] == "local"
    reference = run_sweep(tmp_path / "sync", dims=(2,), betas=(0.0, 1.0), t_final=2.0, n_times=3,
                          realisations=8, scheduler=SYNC, progress=False)
    assert np.array_equal(ds["probability"].values, reference["probability"].values)


def test_a_failing_chunk_on_the_local_cluster_raises_and_keeps_the_others(tmp_path):
    """An exception inside a worker surfaces in the caller (it once looked like a hang), after the other
    chunks are computed and saved, so a corrected re-run computes only the failed one."""
    from meanfield.validation.studies.phase_diagram import SweepSettings, compute_chunks
    settings = SweepSettings(realisations=4, t_final=1.0, n_times=2)
    for scheduler in (None, SYNC):
        store = tmp_path / str(scheduler)
        store.mkdir()
        with pytest.raises(InputError, match=r"beta must be a finite number in \[0, 1e\+09\]"):
            compute_chunks([(2, 0, -1.0), (2, 1, 1.0)], settings, store, scheduler=scheduler, progress=False)
        assert (store / "chunk-d2-b1.nc").exists() and not (store / "chunk-d2-b0.nc").exists()


def test_equiangular_time_matches_closed_form_and_quadrature():
    from scipy.integrate import quad
    n, delta = 32, 1e-3
    assert equiangular_time(0.0, n, delta) == pytest.approx(0.5 * math.log((1 + 31 * 0.999) / 1e-3), rel=1e-10)
    for beta in (4.0, 9.0, 60.0):  # t* = int_0^{1-delta} dg / g'(g), MATH.md §1
        exact = quad(lambda g: (math.exp(beta * (1 - g)) + n - 1) / (2 * (1 - g) * (1 + (n - 1) * g)), 0.0, 1 - delta,
                     epsabs=0, epsrel=1e-13, limit=400, points=[1 / beta])[0]
        assert equiangular_time(beta, n, delta) == pytest.approx(exact, rel=1e-9)
    times = [equiangular_time(b, n, delta) for b in np.linspace(0, 9, 10)]
    assert np.all(np.diff(times) > 0)
