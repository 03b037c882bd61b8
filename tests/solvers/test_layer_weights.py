"""The layer maps of every normalisation scheme and per-layer weights (solvers/steppers/layers.py,
solvers/steppers/layer_weights.py, MATH.md §11): layer l multiplies a mode near the uniform state by 1 + m_l lambda_k
(theory.layer_displacements), measured on quadrature nodes to EPS = 1e-7 relative; per-layer random weights
V_l = I + sigma G_l / sqrt(d) approach the homogenised flow (V = E V_l = I) at order 1/2 in the number of layers."""

import numpy as np
import pytest

from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.settings import Attention
from meanfield.solvers.runs.layer_checks import EPS, circle_mode_growth, layer_errors
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.random_layer_checks import coupled_weights, mean_square_order, random_weight_errors
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.solvers.steppers.layer_weights import GaussianWeights, layer_weights
from meanfield.solvers.steppers.layers import pre_ln_layer, run_layers
from meanfield.theory import layer_growth_factors
from tests.solvers.test_layers import FINAL, _flow_case, _tokens

#: as in test_layers.py: the linear theory leaves the perturbation's own O(EPS) share
TOLERANCE = EPS
NORMALIZATIONS = (Normalization("pre", r0=1.5), Normalization("mix", mix_switch=0.1, r0=2.0), Normalization("peri", r0=0.5),
                  Normalization("ngpt", alpha=0.7), Normalization("lnscale"), Normalization("post"))


@pytest.mark.parametrize("alpha", [0.1, 1.0])
@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_every_normalisation_layer_multiplies_a_circle_mode_by_its_factor(attention, alpha):
    """The layer maps of MATH.md §6's schemes (layers.LAYER_MAPS): layer l's growth of mode 2 is 1 + m_l lambda_2
    (Pre- and Peri-LN's radius grows layer by layer, LN-scaling's step shrinks, Mix-LN switches to Pre-LN's map at
    the layer that starts at tau = 0.1 on, from r0 = 2) to EPS relative, over three layers."""
    model = Model(attention, 3.0, 0.0, 2)
    for normalization in NORMALIZATIONS:
        measured = circle_mode_growth(attention, 3.0, 2, alpha, 1024, EPS, 3, normalization)
        factors = np.array([layer_growth_factors(model, [2], alpha, normalization, layer)[0] for layer in range(3)])
        assert np.max(np.abs(measured / factors - 1)) < TOLERANCE, normalization.name
        if normalization.name != "post":         # each scheme's own factor, not Post-LN's
            assert np.max(np.abs(factors / layer_growth_factors(model, [2], alpha)[0] - 1)) > 100 * TOLERANCE
    assert np.array_equal(layer_growth_factors(model, [2, 4], alpha, Normalization(), 2),
                          layer_growth_factors(model, [2, 4], alpha))


def test_random_layer_weights_approach_the_homogenised_flow_at_order_one_half():
    """V_l = I + sigma G_l / sqrt(d) i.i.d. (Q = K = I, sigma = 0.5): L layers of step T / L (T = 2, L = 16 ... 256,
    12 seeds, each seed's draws one path refined across L: random_layer_checks.coupled_weights) against the flow of
    V = E V_l = I (dopri5, test_layers' cached run, SA beta = 4 on the circle).  The root mean square over seeds,
    fitted as E_rms = C L^-p (1 + c / L), has p = 1/2 within 0.1 (measured 0.483; 0.483 to 0.507 over eight blocks of
    12 seeds on the circle and S^2; independent draws per L scatter 0.42 to 0.62).  The fluctuations dominate: the
    layers of V = I (sigma = 0) are 5.5 to 22 times closer."""
    x, flow, scheme = _flow_case(2, "sa", 4.0)
    counts = [16, 32, 64, 128, 256]
    errors = random_weight_errors(scheme, x, flow, FINAL, counts, range(12), 0.5, coupled=True)
    assert abs(mean_square_order(counts, errors) - 0.5) < 0.1
    fixed = layer_errors(scheme, x, flow, FINAL, counts)
    assert np.all(fixed < 0.25 * np.sqrt(np.mean(errors ** 2, axis=0)))
    drawn = coupled_weights(3, 0.5, 2, [4, 8])       # the coarse draw is the fine one's pairs, summed over sqrt(2)
    coarse, fine = (np.array([drawn[count].heads(layer, 2)[0][2] for layer in range(count)]) for count in (4, 8))
    assert np.allclose(coarse - np.eye(2), (fine[0::2] + fine[1::2] - 2 * np.eye(2)) / np.sqrt(2), rtol=0, atol=1e-15)


def _weights_file(path, layers: int, dim: int, heads: int = 1, beta=None, **replace):
    rng = np.random.default_rng(11)
    arrays = {name: np.eye(dim) + 0.3 * rng.standard_normal((layers, heads, dim, dim)) for name in ("Q", "K", "V")}
    if heads == 1:
        arrays = {name: value[:, 0] for name, value in arrays.items()}
    if beta is not None:
        arrays["beta"] = beta
    np.savez(path, **{**arrays, **replace})
    return arrays


def test_a_layer_uses_its_own_weights_and_heads(tmp_path):
    """Layer l of a file schedule is the layer map of the scheme with the file's Q_l, K_l, V_l (two heads summed) and
    beta_l, bit for bit; the seeded law draws V_l from (seed, l) alone, whatever the number of layers."""
    x = _tokens(24, 3, 2)
    arrays = _weights_file(tmp_path / "w.npz", 4, 3, heads=2, beta=np.array([1.0, 2.0, 3.0, 4.0]))
    schedule = layer_weights(str(tmp_path / "w.npz"))
    base = ParticleScheme(Model("sa", 5.0, 0.0, 3), 24, normalization=Normalization("pre", r0=2.0))
    state = np.concatenate((x, np.full((24, 1), 2.0)), axis=-1)
    frames = run_layers(base, state, 0.3, 4, schedule)
    for layer in range(4):
        heads = [tuple(arrays[name][layer, h] for name in ("Q", "K", "V")) for h in range(2)]
        own = ParticleScheme(Model("sa", float(layer + 1), 0.0, 3), 24, Attention("sa", heads=heads),
                             normalization=Normalization("pre", r0=2.0))
        assert np.array_equal(frames[layer + 1], pre_ln_layer(own, frames[layer], 0.3, layer))
    short, long = GaussianWeights(3, 0.4), GaussianWeights(3, 0.4)
    plain = ParticleScheme(Model("usa", 1.0, 0.0, 2), 24)
    circle = _tokens(24, 2, 4)
    assert np.array_equal(run_layers(plain, circle, 0.2, 3, short), run_layers(plain, circle, 0.2, 6, long)[:4])
    assert np.array_equal(run_layers(plain, circle, 0.2, 6, long)[3:],
                          run_layers(plain, run_layers(plain, circle, 0.2, 3, short)[-1], 0.2, 3, short, first=3))


@pytest.mark.parametrize("chosen", NORMALIZATIONS[:1] + (Normalization("mix", mix_switch=0.5, r0=2.0),) + NORMALIZATIONS[2:5],
                         ids=lambda scheme: scheme.name)
def test_a_layered_run_takes_its_normalisations_layer_map(chosen):
    """The stepper 'layers' under every normalisation: the frames are run_layers' (layer l = t / alpha), bit for bit,
    with the radius where the scheme carries one (Mix-LN: Post-LN's map up to tau = 0.5, then Pre-LN's)."""
    x = _tokens(32, 2, 9)
    run = simulate(dim=2, n=32, beta=4.0, positions=x, stepper="layers", dt_max=0.25, t_final=1.5, save_every=0.25,
                   collapse_tol=0, normalization=chosen)
    scheme = ParticleScheme(Model("sa", 4.0, 0.0, 2), 32, normalization=chosen)
    start = np.concatenate((x, np.full((32, 1), chosen.r0)), axis=-1) if chosen.carries_radius else x
    frames = run_layers(scheme, start, 0.25, 6)
    assert np.array_equal(run["positions"].values, frames[..., :2])
    if chosen.carries_radius:
        assert np.array_equal(run["radius"].values, frames[..., 2])


def test_the_command_line_layer_weights_restart_and_rerun_bit_for_bit(tmp_path, capsys):
    """--layer-weights FILE.npz (per-layer beta too) and seed:S,sigma:X: a restart at layer 3, through the command
    line, gives the straight run's bits; so do the recorded command and `meanfield rerun` (which read a file's
    matrices from the run, not from the .npz: it is deleted first)."""
    import shlex

    from meanfield.app.storage import load_run
    from meanfield.cli import main

    arrays = _weights_file(tmp_path / "w.npz", 6, 3, beta=np.linspace(2.0, 6.0, 6))
    common = ["--dim", "3", "--n", "32", "--beta", "5", "--seed", "2", "--no-progress"]
    for spec in (str(tmp_path / "w.npz"), "seed:4,sigma:0.7"):
        whole, first, later = tmp_path / "whole.nc", tmp_path / "first.nc", tmp_path / "later.nc"
        for layers, out in (("6", whole), ("3", first)):
            assert main(["particles", *common, "--layers", layers, "--step", "0.4", "--layer-weights", spec,
                         "--out", str(out)]) == 0
        straight = load_run(whole)
        assert straight.attrs["layer_weights"] == spec
        assert main(["particles", "--dim", "3", "--n", "32", "--init", str(first), "--layers", "6", "--step", "0.4",
                     "--no-progress", "--out", str(later)]) == 0
        continued = load_run(later)
        assert continued.attrs["restart"] == "exact"
        assert np.array_equal(continued["positions"].values, straight["positions"].values[3:])
        again = tmp_path / "again.nc"
        words = shlex.split(straight.attrs["command"])[1:] + ["--out", str(again), "--no-progress"]
        assert "--layer-weights" in words and main(words) == 0
        assert np.array_equal(load_run(again)["positions"].values, straight["positions"].values)
        if spec.endswith(".npz"):
            assert np.array_equal(straight["layer_V"].values[:, 0], arrays["V"])
            assert np.array_equal(straight["layer_beta"].values, arrays["beta"])
            (tmp_path / "w.npz").unlink()
        assert main(["rerun", str(whole), "--out", str(again), "--no-progress"]) == 0
        assert np.array_equal(load_run(again)["positions"].values, straight["positions"].values)
    capsys.readouterr()


def test_bad_layer_weights_are_refused_in_one_line(tmp_path, capsys):
    from meanfield.cli import main

    _weights_file(tmp_path / "nan.npz", 4, 3, V=np.full((4, 3, 3), np.nan))
    _weights_file(tmp_path / "shape.npz", 4, 3, K=np.zeros((4, 2, 3)))
    _weights_file(tmp_path / "beta.npz", 4, 3, beta=np.array([1.0, -1.0, 2.0, 2.0]))
    _weights_file(tmp_path / "short.npz", 2, 3)
    _weights_file(tmp_path / "dim.npz", 4, 2)
    np.savez(tmp_path / "missing.npz", Q=np.zeros((4, 3, 3)))
    common = ["particles", "--dim", "3", "--n", "8", "--beta", "2", "--no-progress", "--out", str(tmp_path / "x.nc")]
    for spec, words in (("nan.npz", "nan.npz: V must be finite"), ("shape.npz", "Q and K must have one shape"),
                        ("beta.npz", "beta must be finite and in [0"), ("short.npz", "holds 2 layers, the run needs 4"),
                        ("dim.npz", "--dim 3 needs 3 x 3"), ("missing.npz", "must hold arrays Q, K and V"),
                        ("gone.npz", "gone.npz: cannot read it"), ("seed:1,sigma:-1", "sigma must be a finite"),
                        ("seed:x,sigma:1", "seed must be an integer"), ("sigma:1", "FILE.npz or seed:S,sigma:X")):
        target = spec if spec.startswith(("seed", "sigma")) else str(tmp_path / spec)
        assert main([*common, "--layers", "4", "--step", "0.5", "--layer-weights", target]) == 2
        error = capsys.readouterr().err.strip()
        assert words in error and "\n" not in error and "--layer-weights" in error, (spec, error)
    assert main([*common, "--t-final", "1", "--layer-weights", "seed:1,sigma:1"]) == 2
    assert "--layer-weights needs the layer stepper" in capsys.readouterr().err


def test_merged_tokens_stay_exact_under_per_layer_weights():
    """Tokens at one point share every layer's map whatever its weights, so a collapse is exact: three doubled tokens
    merged by the run's scheme (15 -> 12 tokens, summed weights) move under per-layer weights as the unmerged ones
    do, to rounding (measured 4e-16); a layered run with merges on records the same tokens as one without."""
    x = _tokens(12, 3, 6)
    x = np.concatenate((x, x[:3]))
    schedule = GaussianWeights(5, 1.0)
    merging = ParticleScheme(Model("sa", 3.0, 0.0, 3), 15, collapse_tol=1e-12)
    merged = merging.collapse(x[None])
    assert merged.shape == (1, 12, 3) and np.sum(np.isclose(merging.weights, 2 / 15)) == 3
    plain = ParticleScheme(Model("sa", 3.0, 0.0, 3), 15)
    together, apart = (run_layers(scheme, state, 0.3, 6, schedule)[-1] for scheme, state in ((merging, merged[0]),
                                                                                              (plain, x)))
    assert np.max(np.abs(together[merging.collapser.owner] - apart)) < 1e-14
    runs = [simulate(dim=3, n=15, beta=3.0, positions=x, stepper="layers", dt_max=0.3, t_final=1.8, save_every=0.3,
                     layer_weights="seed:5,sigma:1.0", collapse_tol=tol) for tol in (None, 0.0)]
    assert np.max(np.abs(runs[0]["positions"].values - runs[1]["positions"].values)) < 1e-14


def test_the_figure_of_a_pre_ln_layered_run_draws_its_layers_factors():
    """Panel (c) of a layered Pre-LN run: |rho_k(0)| prod_{l < layer} g_k(l), the factor changing from layer to layer
    as the radius grows (not Post-LN's g_k^layer); the title names the scheme's layers."""
    import meanfield
    from meanfield.plotting.run_data import observed_amplitudes, theory_curves

    chosen = Normalization("pre", r0=2.0)
    run = simulate(dim=2, n=256, beta=9.0, seed=1, stepper="layers", dt_max=0.5, t_final=3.0, save_every=0.5,
                   normalization=chosen)
    factors = np.array([layer_growth_factors(Model("sa", 9.0, 0.0, 2), [2, 4], 0.5, chosen, layer)
                        for layer in range(6)])
    expected = observed_amplitudes(run, [2, 4])[0] * np.vstack((np.ones(2), np.cumprod(factors, axis=0)))
    np.testing.assert_allclose(theory_curves(run, [2, 4]), expected, rtol=1e-12)
    assert "6 Pre-LN layers of step 0.5" in meanfield.plot_run(run)._suptitle.get_text()
