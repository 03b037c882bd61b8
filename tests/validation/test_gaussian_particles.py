"""The R^d particle engine's L2 / rectangular / multi-head options, and the Gaussian study (MATH.md §3)."""

import numpy as np
import pytest

from meanfield.errors import InputError
from meanfield.gaussian import velocity_field
from meanfield.model import Model
from meanfield.settings import Attention
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.validation.studies.gaussian import FULL, KIND_SETTINGS, format_table, rms_slope, run_study, slopes, study_tasks

D = 2
N = 4000


def _gaussian_setup(seed=0):
    rng = np.random.default_rng(seed)
    mean = np.array([0.3, -0.2])
    factor = rng.standard_normal((D, D))
    cov = factor @ factor.T / 2 + 0.3 * np.eye(D)
    x = rng.multivariate_normal(mean, cov, size=N)
    mean, cov = x.mean(axis=0), np.cov(x.T, bias=True)   # the field of N(sample moments): no O(n^-1/2) shift
    mats = lambda rows: 0.5 * rng.standard_normal((rows, D))
    return rng, mean, cov, x, mats


def _relative_rms(v, ref):
    return float(np.sqrt(np.mean((v - ref) ** 2) / np.mean(ref ** 2)))


@pytest.mark.parametrize("kernel, attention", [("dot", "softmax"), ("l2", "l2")])
def test_rectangular_velocity_matches_gaussian_field(kernel, attention):
    _, mean, cov, x, mats = _gaussian_setup()
    Q, K, V = mats(3), mats(3), mats(D)
    scheme = ParticleScheme(Model("sa", 1.0, dim=D), N, Attention("sa", Q=Q, K=K, V=V, kernel=kernel), sphere=False)
    v = scheme.rhs(x[None], 0.0)[0]
    ref = velocity_field(x, mean, cov, V=V, Q=Q, K=K, attention=attention)
    assert _relative_rms(v, ref) < 0.05


@pytest.mark.parametrize("kernel, attention", [("dot", "softmax"), ("l2", "l2")])
def test_multihead_velocity_matches_gaussian_field(kernel, attention):
    _, mean, cov, x, mats = _gaussian_setup(1)
    heads = [(mats(3), mats(3), mats(D)), (mats(2), mats(2), mats(D))]
    scheme = ParticleScheme(Model("sa", 1.0, dim=D), N, Attention("sa", kernel=kernel, heads=heads), sphere=False)
    v = scheme.rhs(x[None], 0.0)[0]
    ref = velocity_field(x, mean, cov, Q=[h[0] for h in heads], K=[h[1] for h in heads],
                         V=[h[2] for h in heads], attention=attention)
    assert _relative_rms(v, ref) < 0.05


@pytest.mark.parametrize("kernel", ["dot", "l2"])
def test_identical_heads_equal_one_head_with_summed_values(kernel):
    rng, _, _, x, mats = _gaussian_setup(2)
    Q, K, V1, V2 = mats(3), mats(3), mats(D), mats(D)
    model = Model("sa", 1.0, dim=D)
    two = ParticleScheme(model, N, Attention("sa", kernel=kernel, heads=[(Q, K, V1), (Q, K, V2)]),
                         sphere=False).rhs(x[None], 0.0)
    one = ParticleScheme(model, N, Attention("sa", Q=Q, K=K, V=V1 + V2, kernel=kernel), sphere=False).rhs(x[None], 0.0)
    np.testing.assert_allclose(two, one, rtol=0, atol=1e-13 * np.max(np.abs(one)))


def test_l2_usa_is_the_unnormalised_kernel_sum():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 50, D))
    Q, K, V = 0.5 * rng.standard_normal((3, D)), 0.5 * rng.standard_normal((3, D)), rng.standard_normal((D, D))
    beta = 0.7
    v = ParticleScheme(Model("usa", beta, dim=D), 50, Attention("usa", Q=Q, K=K, V=V, kernel="l2"),
                       sphere=False).rhs(x, 0.0)[0]
    diff = (x[0] @ Q.T)[:, None, :] - (x[0] @ K.T)[None, :, :]
    w = np.exp(-beta * np.sum(diff ** 2, axis=-1) / 2) / 50
    np.testing.assert_allclose(v, w @ (x[0] @ V.T), rtol=1e-12, atol=1e-14)


def test_default_path_unchanged():
    """The single-head dot-product path against the formula it implemented before the extension."""
    rng = np.random.default_rng(4)
    for sphere in (True, False):
        x = rng.standard_normal((2, 40, 3))
        if sphere:
            x /= np.linalg.norm(x, axis=-1, keepdims=True)
        Q, K, V = (rng.standard_normal((3, 3)) for _ in range(3))
        for attention in ("sa", "usa"):
            scheme = ParticleScheme(Model(attention, 1.5, dim=3), 40, Attention(attention, Q=Q, K=K, V=V),
                                    sphere=sphere)
            logits = 1.5 * np.einsum("bid,bjd->bij", x @ Q.T, x @ K.T)
            w = np.exp(logits) / 40
            ref = w @ (x @ V.T)
            if attention == "sa":
                ref /= w.sum(axis=-1, keepdims=True)
            if sphere:
                ref -= np.sum(ref * x, axis=-1, keepdims=True) * x
            np.testing.assert_allclose(scheme.rhs(x.copy(), 0.0), ref, rtol=1e-12, atol=1e-12)
            assert "energy" in scheme.frame(x)


def test_refusals():
    model = Model("sa", 1.0, dim=2)
    with pytest.raises(InputError):
        ParticleScheme(model, 10, Attention("sa", kernel="l2"))                 # sphere
    with pytest.raises(InputError):
        ParticleScheme(model, 10, Attention("sa", kernel="cosine"), sphere=False)
    with pytest.raises(InputError):
        ParticleScheme(model, 10, Attention("sa", Q=np.ones((3, 2)), K=np.ones((2, 2))), sphere=False)
    with pytest.raises(InputError):
        ParticleScheme(model, 10, Attention("sa", Q=np.ones((3, 2)), K=np.ones((3, 2))))  # rectangular on the sphere
    with pytest.raises(InputError):
        ParticleScheme(model, 10, Attention("sa", Q=np.eye(2), heads=[(None, None, None)]), sphere=False)
    with pytest.raises(InputError):
        ParticleScheme(model, 10, Attention("sa", heads=[]), sphere=False)
    scheme = ParticleScheme(model, 10, Attention("sa", kernel="l2"), sphere=False)
    with pytest.raises(InputError):
        scheme.scaled_energy(np.zeros((1, 10, 2)))


def test_study_rates_against_the_moment_odes(tmp_path):
    """Particles vs the ODEs from the sample moments: the error falls like n^-1/2 (softmax, L2, multi-head:
    the empirical measure's non-Gaussian fluctuation), like n^-1 for Sinkhorn (the doubly stochastic plan
    cancels the first-order term); vs the ODE from the exact moments like n^-1/2 (MATH.md §3, §4)."""
    ds = run_study(out_dir=tmp_path, dims=(2,), draws=1, log2_n=(5, 6, 7, 8), seeds=16, workers=1)
    assert np.all(ds["slope_sample_ci_low"] <= ds["slope_sample"]) and np.all(ds["slope_sample"] <= ds["slope_sample_ci_high"])
    assert (tmp_path / "gaussian.nc").exists() and (tmp_path / "gaussian.png").exists()
    assert set(ds["attention"].values) == {"softmax", "l2", "multihead", "sinkhorn"}
    for name in ("error_exact", "error_sample"):
        assert np.all(np.isfinite(ds[name].values)) and np.all(ds[name].values > 0)
    slope_sample = ds["slope_sample"].sel(dim=2)
    for kind in ("softmax", "l2", "multihead"):
        assert float(slope_sample.sel(attention=kind)) < -0.4
    assert float(slope_sample.sel(attention="sinkhorn")) < -0.8
    assert np.all((ds["slope_exact"].values < -0.4) & (ds["slope_exact"].values > -0.75))
    # the sample-moment ODE removes the initial sampling error: far closer than the exact-moment ODE
    assert np.all(ds["error_sample"].mean(("draw", "seed")) < 0.2 * ds["error_exact"].mean(("draw", "seed")))
    assert "sinkhorn" in format_table(ds)


def _ragged_errors(rng, n, seeds, scale):
    """|N(0, 1)| x scale_draw x n^-1/2 for ``seeds[i]`` seeds at ``n[i]`` (NaN beyond), shape (n, draw, seed)."""
    errors = np.full((n.size, scale.size, max(seeds)), np.nan)
    for row, count in enumerate(seeds):
        errors[row, :, :count] = scale[:, None] * n[row] ** -0.5 * np.abs(rng.standard_normal((scale.size, count)))
    return errors


def test_rms_slope_is_unbiased_with_ragged_runs_and_unequal_draws():
    """The full study's layout (64 seeds per draw up to 2^11, 3 at 2^14; draws 10x apart): one slope
    with an intercept per draw returns an exact power law's exponent, and over 200 noisy copies
    (one-degree-of-freedom errors, the heaviest case) the slope's mean is -1/2 to 0.007 — the
    delta-method correction removes the steepening that fewer runs at large n would cause."""
    import xarray as xr

    n = 2.0 ** np.arange(8, 15)
    seeds = [64, 64, 64, 64, 24, 8, 3]
    scale = np.array([0.1, 0.3, 1.0])
    exact = np.where(np.isfinite(_ragged_errors(np.random.default_rng(0), n, seeds, scale)),
                     scale[None, :, None] * n[:, None, None] ** -0.5, np.nan)
    slope, intercept = rms_slope(np.log(n), exact)
    assert abs(slope + 0.5) < 1e-12
    assert abs(intercept - 0.5 * np.log(np.mean(scale ** 2))) < 1e-12   # the line through the pooled RMS
    fitted = np.array([rms_slope(np.log(n), _ragged_errors(np.random.default_rng(k), n, seeds, scale))[0]
                       for k in range(200)])
    assert abs(fitted.mean() + 0.5) < 0.007 and fitted.std() < 0.04    # uncorrected: -0.510
    errors = _ragged_errors(np.random.default_rng(1), n, seeds, scale)
    errors[-1] = np.nan                                                 # a size that never ran is left out
    ds = xr.Dataset({f"error_{ref}": (("attention", "dim", "n", "draw", "seed"), errors[None, None])
                     for ref in ("sample", "exact")},
                    coords={"attention": ["softmax"], "dim": [2], "n": n.astype(int), "draw": range(3),
                            "seed": range(64)})
    result = slopes(ds, resamples=200)
    low, high = float(result["slope_sample_ci_low"][0, 0]), float(result["slope_sample_ci_high"][0, 0])
    assert low < float(result["slope_sample"][0, 0]) < high and high - low < 0.2


def test_full_study_plan_matches_the_issue():
    """n = 2^8 .. 2^14 for softmax, L2 and multi-head, several draws; the costliest tasks first."""
    tasks = study_tasks(("softmax", "l2", "multihead", "sinkhorn"), FULL["dims"], FULL["draws"], FULL["log2_n"],
                        FULL["seeds"], FULL["largest_log2_n"])
    sizes = {kind: sorted({task[3] for task in tasks if task[0] == kind}) for kind in KIND_SETTINGS}
    for kind in ("softmax", "l2", "multihead"):
        assert sizes[kind] == [2 ** p for p in range(8, 15)]
    assert max(sizes["sinkhorn"]) == 2 ** FULL["largest_log2_n"]["sinkhorn"]
    assert FULL["draws"] >= 3
    cost = [task[3] ** 2 * task[4] * KIND_SETTINGS[task[0]][2] for task in tasks]
    assert cost == sorted(cost, reverse=True)


def test_study_resumes_from_its_task_files(tmp_path):
    """Every finished task is on disk at once; a re-run reuses them (same numbers), a changed
    setting does not."""
    small = dict(kinds=("softmax",), dims=(2,), draws=1, log2_n=(4, 5), seeds=3, workers=1)
    first = run_study(out_dir=tmp_path, **small)
    assert first.attrs["reused_tasks"] == 0 and len(list((tmp_path / "gaussian-tasks").glob("*.nc"))) == 2
    again = run_study(out_dir=tmp_path, **small)
    assert again.attrs["reused_tasks"] == 2
    np.testing.assert_array_equal(again["error_sample"].values, first["error_sample"].values)
    other = run_study(out_dir=tmp_path, t_final=0.5, **small)
    assert other.attrs["reused_tasks"] == 0
