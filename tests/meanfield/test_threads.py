"""One thread setting for BLAS, ducc0 and FFTW (meanfield.app.threads): parsing, limits, bit-for-bit results."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from meanfield import solve
from meanfield.cli import main
from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.app.threads import (FFTW_THREADED_MIN, NONUNIFORM_THREADS, available_cores, blas_threads, ducc0_threads,
                               fftw_threads, header, one_vs_all, set_threads, thread_attrs, thread_count, use_threads)
from meanfield.solvers.schemes.lagrangian import SphereLagrangian
from meanfield.solvers.schemes.sphere import SphereSpectral
from meanfield.solvers.bases.sphere_basis import SphereBasis

CORES = available_cores()
needs_two = pytest.mark.skipif(CORES < 2, reason="needs two cores to compare thread counts")


def blas_pools():
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_cli_option_sets_every_library_and_refuses_bad_counts(capsys):
    with use_threads():                       # restores the setting the CLI changes
        assert main(["--threads", "1", "theory", "--beta", "1"]) == 0
        assert thread_count() == ducc0_threads() == blas_threads() == 1
        assert blas_pools() and set(blas_pools()) == {1}
        assert fftw_threads(FFTW_THREADED_MIN) == 1
    for bad in ("0", str(CORES + 1)):
        assert main(["--threads", bad, "theory", "--beta", "1"]) == 2
        assert capsys.readouterr().err.strip() == \
            f"meanfield: error: --threads must be an integer in [1, {CORES}] (the cores available; got {bad})"
    for bad in (0, 1.5, True, CORES + 1):
        with pytest.raises(InputError, match="threads"):
            set_threads(bad)


def test_default_is_every_core_and_blocks_restore():
    with use_threads(1):
        with use_threads() as every:
            assert every == thread_count() == blas_threads() == CORES
            assert fftw_threads(FFTW_THREADED_MIN) == CORES and fftw_threads(FFTW_THREADED_MIN - 1) == 1
        assert thread_count() == blas_threads() == 1
        assert thread_attrs(uses_blas=False) == {"threads": 1, "blas_threads": 1, "bit_reproducible_across_threads": 1}
        assert thread_attrs(uses_blas=True)["bit_reproducible_across_threads"] == 0
        assert header().startswith(f"threads: 1 of {CORES} cores (BLAS 1 via threadpoolctl; ducc0 grid transforms 1;")


def test_one_vs_all_measures_at_one_thread_then_every_core():
    seen = []
    single, every = one_vs_all(lambda: float(seen.append((thread_count(), blas_threads())) or len(seen)))
    assert (single, every) == (1.0, 2.0) and seen == [(1, 1), (CORES, CORES)]


@needs_two
def test_ducc0_grid_transforms_are_bitwise_at_any_thread_count_blas_repeats_at_one(rng):
    x = rng.standard_normal((1500, 3))
    alm = rng.standard_normal(SphereBasis(127).nalm) + 1j * rng.standard_normal(SphereBasis(127).nalm)
    results = []
    for threads in (1, 2):
        with use_threads(threads):
            basis = SphereBasis(127)
            assert basis.nthreads == threads
            grid = basis.synthesise(alm)
            flux = basis.gradient(alm)
            results.append((grid, flux, basis.analyse(grid), basis.divergence(flux)))
            blas = [x @ x.T for _ in range(2)]
            assert np.array_equal(*blas)          # the same count repeats (another count need not: docstring)
    for one, two in zip(*results):
        assert np.array_equal(one, two)


@needs_two
def test_sphere_run_is_bitwise_at_one_and_two_threads():
    runs = []
    for threads in (1, 2):
        with use_threads(threads):
            runs.append(solve("sphere", beta=4.0, resolution=63, t_final=2.0, save_every=1.0, init="perturbed:1e-2"))
    assert runs[0].density.shape[0] == 3 and runs[0].attrs["steps"] >= 10
    assert np.array_equal(runs[0].density.values, runs[1].density.values)
    assert np.array_equal(runs[0].meanfield.restart.restart_state.values, runs[1].meanfield.restart.restart_state.values)


def test_nonuniform_transforms_stay_on_one_thread():
    with use_threads():
        scheme = SphereLagrangian(Model("sa", 4.0, 0.0, 3), 8)
        assert scheme.nthreads == NONUNIFORM_THREADS == 1
        assert scheme.basis.nthreads == CORES


def test_bench_script_takes_threads_and_prints_the_counts_in_effect(capsys, monkeypatch):
    import meanfield.validation.benchmarks.sphere as bench

    monkeypatch.setattr(bench, "QUICK_LMAXES", (15,))
    with use_threads():
        bench.main(["--quick", "--threads", "1"])
        assert thread_count() == blas_threads() == 1
    out = capsys.readouterr().out
    assert f"threads: 1 of {CORES} cores (BLAS 1 via threadpoolctl; ducc0 grid transforms 1;" in out
    row = out.splitlines()[3].split()
    assert row[:2] == ["15", "ducc0"] and len(row) == 13 and float(row[-1]) > 0


@needs_two
def test_sphere_lagrangian_run_is_bitwise_at_one_and_two_threads():
    runs = []
    for threads in (1, 2):
        with use_threads(threads):
            runs.append(solve("sphere", scheme="lagrangian", beta=4.0, resolution=12, t_final=1.0, save_every=0.5,
                              init="perturbed:1e-2"))
    assert runs[0].attrs["steps"] >= 5
    assert np.array_equal(runs[0].positions.values, runs[1].positions.values)
    assert np.array_equal(runs[0].density.values, runs[1].density.values)
    assert not SphereLagrangian.uses_blas and not SphereSpectral.uses_blas


def test_runs_record_their_threads_and_whether_the_bits_depend_on_them():
    import meanfield
    from meanfield.solvers.runs.particle_run import simulate

    sphere = meanfield.solve("sphere", beta=1.0, resolution=7, t_final=0.1, save_every=0.1)
    assert sphere.attrs["bit_reproducible_across_threads"] == 1 and sphere.attrs["threads"] >= 1
    assert "blas_threads" in sphere.attrs
    direct = simulate(dim=3, n=16, beta=1.0, t_final=0.1, save_every=0.1, interaction="direct")
    harmonic = simulate(dim=3, n=16, beta=1.0, t_final=0.1, save_every=0.1, interaction="harmonic")
    assert direct.attrs["bit_reproducible_across_threads"] == 0      # BLAS tiles differ between counts
    assert harmonic.attrs["bit_reproducible_across_threads"] == 1    # ducc0 non-uniform transforms on 1 thread
