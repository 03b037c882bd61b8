"""Castin et al.'s Gaussian figures (MATH.md §3, seed 004): regimes, blow-up times, limit ranks."""

import math

import numpy as np
import pytest

from meanfield.validation.studies.castin_figures import (CONE_A, blowup_cases, cone_coordinates, exact_limit_v_identity,
                                       format_table, psd_cone_paths, rank_counts, rank_histograms, run)


@pytest.fixture(scope="module")
def cone():
    return psd_cone_paths()


@pytest.fixture(scope="module")
def blow():
    return blowup_cases()


def test_cone_coordinates_rank_one_on_boundary():
    u = np.array([0.3, -1.2])
    x, y, z = cone_coordinates(np.outer(u, u))
    assert math.isclose(z, math.hypot(x, y), rel_tol=1e-12)
    x, y, z = cone_coordinates(np.eye(2))
    assert (x, y, z) == (0.0, 0.0, 1.0)


def test_converging_path():
    cov0 = np.array([[1.0, 0.3], [0.3, 0.5]])
    ds = run(cov0, CONE_A["converging"], t_final=200.0)
    assert ds.attrs["stop_reason"] == "completed"
    norms = np.linalg.norm(ds.covariance.values, ord=2, axis=(1, 2))
    assert np.all(np.diff(norms) <= 1e-12 * norms[0])  # monotone decrease
    assert norms[-1] < 1e-2 * norms[0]  # Sigma -> 0 like 1/t


def test_blowup_time_matches_closed_form(blow):
    cov0 = np.array([[2.0, 0.7], [0.7, 1.0]])
    ds = run(cov0, np.eye(2), t_final=10.0)
    assert ds.attrs["stop_reason"] == "blowup"
    exact = 1.0 / (2.0 * np.linalg.eigvalsh(cov0)[-1])
    assert abs(float(ds.attrs["blowup_time"]) - exact) < 1e-3
    table = blow
    assert set(table.stop_reason.values.tolist()) == {"blowup"}
    known = np.isfinite(table.exact_blowup_time.values)
    assert known.sum() >= 5 and np.all(table.relative_error.values[known] < 1e-6)


def test_rank_one_limit():
    cov0 = np.array([[1.0, 0.3], [0.3, 0.5]])
    A = CONE_A["rank-one"]
    ds = run(cov0, A, t_final=1e7)
    assert ds.attrs["stop_reason"] == "completed"
    w = np.linalg.eigvalsh(ds.covariance.values[-1])
    assert w[0] / w[1] < 1e-6 and w[1] > 0.1
    limit = exact_limit_v_identity(cov0, A)
    assert np.allclose(ds.covariance.values[-1], limit, atol=1e-6)


def test_psd_cone_dataset(cone):
    ds = cone
    assert set(ds.stop_reason.sel(regime="converging").values) == {"completed"}
    assert set(ds.stop_reason.sel(regime="rank-one").values) == {"completed"}
    assert set(ds.stop_reason.sel(regime="blow-up").values) == {"blowup"}
    assert float(ds.final_rel_error_vs_exact.sel(regime=["converging", "rank-one"]).max()) < 1e-6
    blow = ds.sel(regime="blow-up")
    assert float((abs(blow.blowup_time - blow.exact_blowup_time) / blow.exact_blowup_time).max()) < 1e-6


def test_rank_histograms_quick(cone, blow):
    ds = rank_histograms(samples=6, seed=1)
    for d in (3, 4, 5):
        # V = I: every run converges; the limit rank is exactly d - rank(A) = ceil(d/2) (closed form),
        # so Castin et al.'s "rank < ceil(d/2)" is NOT reproduced; the theory guarantees <= ceil(d/2).
        ident = ds.sel(V="identity", d=d)
        assert set(ident.stop_reason.values) == {"completed"}
        assert set(ident["rank"].values.tolist()) == {math.ceil(d / 2)}
        assert set(ident.exact_rank.values.tolist()) == {math.ceil(d / 2)}
        assert float(ident.exact_error.max()) < 1e-8 and bool(ident.clear.all())
        # V random (not PSD): many runs blow up; those that converge are observed (not proven) to reach rank
        # <= d - rank(A) = ceil(d/2), as a stationary Sigma with Sigma A Sigma = 0 must.
        rnd = ds.sel(V="random", d=d)
        done = rnd.stop_reason.values == "completed"
        assert np.all(rnd["rank"].values[done] <= math.ceil(d / 2))
        counts = rank_counts(ds, "random", d)
        assert sum(counts.values()) == ds.sizes["sample"]
    assert "ceil(d/2)" in format_table(cone, blow, ds)
