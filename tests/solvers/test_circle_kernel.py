"""The compiled circle kernel (solvers/schemes/circle_kernel.py, issue 14 item 2) gives numpy's bits.

Its operations are numpy's, one IEEE operation per value in the same order, so the
right-hand side, ``max|X|`` and whole runs must be *identical* (raw bytes) with and
without it; the speed it buys is measured by ``meanfield validate bench-circle``.
"""

import numpy as np
import pytest

import meanfield
from meanfield.model import Model
from meanfield.solvers.schemes import circle as circle_module
from meanfield.solvers.schemes import circle_kernel
from meanfield.solvers.schemes.circle import CircleSpectral

pytestmark = pytest.mark.skipif(not circle_kernel.AVAILABLE,
                                reason="the compiled circle kernel is not built in this install (no C compiler)")


def clustered_state(scheme, seed=0):
    """Coefficients of a positive, far-from-uniform density (clusters forming) with noise in every mode."""
    rng = np.random.default_rng(seed)
    theta = scheme.coordinate
    density = np.exp(3.0 * np.cos(4.0 * theta)) + 0.05 * rng.random(theta.size)
    return scheme.state_from_density(density / density.mean() / (2 * np.pi)).copy()


def pair(attention, normalization, n, beta=7.0):
    model = Model(attention, beta=beta)
    return (CircleSpectral(model, n, normalization=normalization),
            CircleSpectral(model, n, normalization=normalization, pointwise="numpy"))


@pytest.mark.parametrize("n", [16, 250, 1024, 4096])
@pytest.mark.parametrize("normalization", ["post", "lnscale"])
@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_the_compiled_right_hand_side_has_numpys_bits(attention, normalization, n):
    compiled, reference = pair(attention, normalization, n)
    assert (compiled.pointwise_kernel, reference.pointwise_kernel) == ("compiled", "numpy")
    state = clustered_state(compiled)
    for t in (0.0, 2.5):
        fast, slow = compiled.rhs(state, t), reference.rhs(state, t)
        assert fast.dtype == slow.dtype and fast.shape == slow.shape
        assert fast.tobytes() == slow.tobytes()
        assert compiled.max_speed == reference.max_speed > 0
    # a fresh array each call (steppers keep stages): the next call must not overwrite it
    first = compiled.rhs(state, 0.0)
    kept = first.copy()
    compiled.rhs(2 * state, 0.0)
    assert first.tobytes() == kept.tobytes()


def test_a_strided_or_real_state_is_read_like_numpy_reads_it():
    compiled, reference = pair("sa", "post", 64)
    state = clustered_state(compiled)
    strided = np.repeat(state, 2)[::2]
    assert not strided.flags.c_contiguous
    assert compiled.rhs(strided, 0.0).tobytes() == reference.rhs(state, 0.0).tobytes()
    real = state.real.copy()
    assert compiled.rhs(real, 0.0).tobytes() == reference.rhs(real, 0.0).tobytes()


def test_a_state_of_the_wrong_size_is_refused():
    compiled, _ = pair("sa", "post", 64)
    for wrong in (np.ones(32, dtype=complex), np.ones(66 + 1, dtype=complex)):
        with pytest.raises(ValueError, match="state must be a contiguous complex128 array of rows of 33 modes"):
            compiled.rhs(wrong, 0.0)
    with pytest.raises(ValueError, match="source must be a contiguous complex128 array of rows of 33 modes"):
        compiled._kernel.rhs(np.ones(33, dtype=complex), 1.0, np.ones(66, dtype=complex))


def test_rows_in_one_call_are_the_rows_one_by_one():
    """The compiled kernel's rows (the causal PDE's slices) and a source: the bits of the numpy path, row by row."""
    compiled, reference = pair("usa", "post", 64)
    state = clustered_state(compiled)
    states = np.stack([state, state * 0.5, np.roll(state, 1)])
    sources = np.stack([state, state[::-1].copy(), state * 2.0])
    together = compiled.transport_rows(states, sources, 0.0)
    assert together.shape == states.shape
    for row, (one, field) in enumerate(zip(states, sources)):
        assert together[row].tobytes() == reference.transport(one, field, 0.0).tobytes()
    speeds = []
    for one, field in zip(states, sources):
        reference.transport(one, field, 0.0)
        speeds.append(reference.max_speed)
    assert compiled.max_speed == max(speeds)


def test_ngpt_uses_numpy_and_refuses_the_compiled_kernel():
    model = Model("sa", beta=4.0)
    assert CircleSpectral(model, 64, normalization="ngpt").pointwise_kernel == "numpy"
    with pytest.raises(ValueError, match="covers Post-LN and LN-scaling, not nGPT"):
        CircleSpectral(model, 64, normalization="ngpt", pointwise="compiled")
    with pytest.raises(ValueError, match="circle pointwise must be one of auto, compiled, numpy"):
        CircleSpectral(model, 64, pointwise="fast")


@pytest.mark.parametrize("options", [
    dict(attention="sa", beta=9.0, t_final=11.0, save_every=1.0),
    dict(attention="usa", beta=5.0, nu=0.02, stepper="etdrk4", t_final=0.45, save_every=0.05),
    dict(attention="sa", beta=9.0, normalization="lnscale", t_final=40.0, save_every=5.0)])
def test_whole_runs_are_identical_with_and_without_the_kernel(monkeypatch, options):
    """Cluster formation (the state moves far from uniform), every saved variable byte for byte."""
    # a band-limited start (MATH.md §2.4) leaves the monitored spectral tail empty: resolution_tol 1e-3 lets
    # the runs go through formation (they are compared byte for byte, not for accuracy)
    run = dict(geometry="circle", resolution=128, seed=3, init="perturbed:1e-4", resolution_tol=1e-3, **options)
    compiled = meanfield.solve(**run)
    monkeypatch.setattr(circle_module, "fused_kernel", lambda scheme, choice="auto": None)
    reference = meanfield.solve(**run)
    assert (compiled.attrs["pointwise_kernel"], reference.attrs["pointwise_kernel"]) == ("compiled", "numpy")
    assert compiled.attrs["steps"] == reference.attrs["steps"] > 10
    assert compiled.attrs["stop_reason"] == "completed"
    assert float(compiled["density"].max()) > 2 * float(compiled["density"].isel(time=0).max())
    for name, variable in compiled.data_vars.items():
        assert variable.values.tobytes() == reference[name].values.tobytes(), name
