"""Residual layers on Gaussian data (meanfield/gaussian_layers.py, MATH.md §3.1): the moment map of a layer is exact.

- On Gauss–Hermite nodes of the Gaussian, weighted by the rule's weights, the package's R^d particle engine takes the
  same layers and its weighted moments equal the map to rounding (every attention sum is a quadrature of the
  Gaussian's own integral, and the affine image of the rule is the rule of the image Gaussian).
- n tokens drawn from the Gaussian differ from the map by their initial sampling error carried through it: RMS
  ``C n^{-1/2}`` with ``C`` computed from the map's Jacobian, slope -1/2 within 0.1.
- L layers of step T / L approach the moment ODE at T at order 1; their Richardson limit is the ODE.
"""

import math

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss

from meanfield.errors import InputError
from meanfield.gaussian import affine_field, initial_factor, validated_problem
from meanfield.gaussian_layers import gaussian_layer, gaussian_layers, heads_at_beta
from meanfield.solvers.runs.gaussian_layer_checks import (gaussian_layers_against_flow,
                                                          gaussian_layers_against_particles, particle_scheme,
                                                          weighted_moments)
from meanfield.solvers.steppers.layers import run_layers

BETA = 1.5     # not 1: the particle engine's exp(beta <Qx, Ky>) and the map must agree on where beta goes
ROUNDING = 1e-13


def _problem(dim: int = 2, seed: int = 11, heads: int = 1) -> dict:
    """Seeded mean, covariance and (d + 1) x d ``Q, K``, d x d ``V`` (entries N(0, 1/(4 d))), as the Gaussian study
    draws them: a covariance of scale 1/4 keeps the particles' tilt in its n^{-1/2} regime."""
    rng = np.random.default_rng([seed, dim])
    scale = 0.5 / math.sqrt(dim)
    draw = lambda rows: [scale * rng.standard_normal((rows, dim)) for _ in range(heads)]
    V, Q, K = draw(dim), draw(dim + 1), draw(dim + 1)
    mean = 0.5 * rng.standard_normal(dim)
    factor = rng.standard_normal((dim, dim))
    cov = 0.25 * (factor @ factor.T / dim + 0.5 * np.eye(dim))
    one = (lambda m: m[0]) if heads == 1 else (lambda m: m)
    return {"mean": mean, "cov": cov, "V": one(V), "Q": one(Q), "K": one(K)}


def _hermite_rule(mean, cov, nodes: int):
    """The tensor Gauss–Hermite rule of N(mean, cov): nodes ``mean + L z`` and normalised weights."""
    z, w = hermegauss(nodes)
    dim = mean.size
    grid = np.stack(np.meshgrid(*([z] * dim), indexing="ij"), -1).reshape(-1, dim)
    weights = np.prod(np.stack(np.meshgrid(*([w] * dim), indexing="ij"), -1).reshape(-1, dim), axis=1)
    return mean + grid @ initial_factor(cov).T, weights / weights.sum()


# ------------------------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("attention, heads", [("softmax", 1), ("l2", 1), ("sinkhorn", 1), ("softmax", 2)])
@pytest.mark.parametrize("dim, nodes", [(2, 32), (3, 14)])
def test_particles_on_a_hermite_rule_take_the_moment_map_to_rounding(attention, heads, dim, nodes):
    """Three layers of step 0.5 at beta = 1.5 on 32^2 (d = 2) and 14^3 (d = 3) nodes: the particle engine's weighted
    moments equal the map to 1e-13 at every layer (measured 1e-15 to 1.6e-14), while the moments moved by O(0.1) and
    the map with beta = 1 is off by > 1e-3.  The quadrature converges spectrally to rounding (L2, whose tilt is a
    Gaussian rather than an exponential of a linear form, is the slowest: 1.4e-8, 9e-13, 1.4e-15 on 16^2, 24^2, 32^2
    nodes): an O(alpha^2) defect of the map would not go away with more nodes."""
    problem = _problem(dim, heads=heads)
    x, weights = _hermite_rule(problem["mean"], problem["cov"], nodes)
    matrices = {name: problem[name] for name in ("V", "Q", "K")}
    scheme = particle_scheme(x.shape[0], dim, *matrices.values(), BETA, attention, 1.0, weights=weights)
    frames = run_layers(scheme, x, 0.5, 3)
    exact = gaussian_layers(problem["mean"], problem["cov"], **matrices, alpha=0.5, layers=3, beta=BETA,
                            attention=attention)
    wrong_beta = gaussian_layers(problem["mean"], problem["cov"], **matrices, alpha=0.5, layers=3, beta=1.0,
                                 attention=attention)
    for layer, frame in enumerate(frames):
        mean, cov = weighted_moments(frame, weights)
        assert np.max(np.abs(mean - exact["mean"].values[layer])) < ROUNDING
        assert np.max(np.abs(cov - exact["covariance"].values[layer])) < ROUNDING
    moved = np.max(np.abs(exact["covariance"].values[-1] - problem["cov"])) + np.max(np.abs(exact["mean"].values[-1]
                                                                                             - problem["mean"]))
    assert moved > 0.05
    assert np.max(np.abs(wrong_beta["covariance"].values[-1] - exact["covariance"].values[-1])) > 1e-3


def test_an_affine_field_moves_any_tokens_moments_by_the_map():
    """The layer map is the push-forward by ``x -> x + alpha (c + M x)``: for any tokens, the moments of the pushed
    tokens are the map of the tokens' moments, with (c, M) the field of the Gaussian of those moments (to 1e-13)."""
    problem = _problem(3)
    x = np.random.default_rng(5).standard_normal((50, 3)) ** 3          # far from Gaussian: the identity is algebra
    mean, cov = weighted_moments(x)
    alpha = 0.7
    _, _, heads, attention = validated_problem(mean, cov, problem["V"], problem["Q"], problem["K"], "softmax", False)
    c, M = affine_field(mean, initial_factor(cov), heads_at_beta(heads, BETA), attention)
    pushed_mean, pushed_cov = weighted_moments(x + alpha * (c + x @ M.T))
    map_mean, map_cov = gaussian_layer(mean, cov, V=problem["V"], Q=problem["Q"], K=problem["K"], alpha=alpha,
                                       beta=BETA)
    assert np.max(np.abs(pushed_mean - map_mean)) < ROUNDING * max(1.0, np.max(np.abs(map_mean)))
    assert np.max(np.abs(pushed_cov - map_cov)) < ROUNDING * np.max(np.abs(map_cov))
    step = np.eye(3) + alpha * M
    assert np.allclose(map_cov, step @ cov @ step.T, rtol=ROUNDING, atol=0)


# ---------------------------------------------------------------------------------------- sampled tokens


def test_sampled_tokens_meet_the_map_within_their_sampling_band():
    """n = 2^8 ... 2^13 tokens drawn from N(m, Sigma) (d = 2), two layers of step 0.5 at beta = 1.5 (128 ... 4 draws
    per size): the RMS moment error lies in the band of the initial sampling error carried through the map (Chernoff
    bounds of the linearised error, probability <= 1e-4 per side; C = 2.12), every single error below its 1e-4 bound
    (measured: at most 0.62 of it), and the fitted slope is -1/2 within 0.1 (measured -0.52; over 26 master seeds
    -0.42 ... -0.56, mean -0.50, standard deviation 0.033, the weighted fit's prediction 0.032)."""
    problem = _problem(2)
    result = gaussian_layers_against_particles(problem["mean"], problem["cov"], V=problem["V"], Q=problem["Q"],
                                               K=problem["K"], alpha=0.5, layers=2, beta=BETA)
    assert abs(result.attrs["slope"] + 0.5) < 0.1
    assert np.all(result["rms"] > result["rms_low"]) and np.all(result["rms"] < result["rms_high"])
    assert np.all((result["error"] < result["error_high"]) | result["error"].isnull())
    # the band is the theory's, not a fit: C n^{-1/2} with C from the map's Jacobian; at 128 draws it is +-20 %
    assert result["rms_high"].values[0] < 1.2 * result["predicted"].values[0]
    assert result["rms_low"].values[0] > 0.8 * result["predicted"].values[0]


# ------------------------------------------------------------------------------------------------ the flow


@pytest.mark.parametrize("attention, heads", [("softmax", 1), ("l2", 1), ("sinkhorn", 1), ("softmax", 2)])
def test_layers_approach_the_moment_ode_at_order_one(attention, heads):
    """L = 8 ... 256 layers of step T / L (T = 1, beta = 1.5) against meanfield.gaussian.solve at T: the order p of
    E = C L^-p (1 + c / L) is 1 within 0.05 (measured 0.9997 to 1.0000), and the layers at 1024, 2048, 4096
    extrapolated twice to L -> infinity equal the ODE to 1e-9 (measured 2e-14 to 2.5e-12; the ODE's rtol is 1e-10)."""
    problem = _problem(2, heads=heads)
    result = gaussian_layers_against_flow(problem["mean"], problem["cov"], V=problem["V"], Q=problem["Q"],
                                          K=problem["K"], t_final=1.0, beta=BETA, attention=attention)
    assert abs(result.attrs["order"] - 1) < 0.05
    assert result.attrs["richardson_error"] < 1e-9
    assert result["error"].values[0] > 1e-3            # the layers are visibly not the flow at L = 8


# ------------------------------------------------------------------------------------------------- the run


def test_the_layers_dataset_names_and_records_the_run():
    problem = _problem(2)
    run = gaussian_layers(problem["mean"], problem["cov"], V=problem["V"], Q=problem["Q"], K=problem["K"],
                          alpha=0.25, layers=4, beta=BETA)
    assert run["layer"].values.tolist() == [0, 1, 2, 3, 4]
    assert np.array_equal(run["time"].values, np.arange(5) * 0.25)
    assert run["mean"].dims == ("time", "i") and run["covariance"].dims == ("time", "i", "j")
    assert np.array_equal(run["mean"].values[0], problem["mean"])
    attrs = run.attrs
    assert (attrs["alpha"], attrs["layers"], attrs["beta"], attrs["attention"], attrs["stop_reason"]) == (
        0.25, 4, BETA, "softmax", "completed")
    assert attrs["t_final"] == 1.0 and attrs["geometry"] == "gaussian"
    again = gaussian_layers(run["mean"].values[2], run["covariance"].values[2], V=problem["V"], Q=problem["Q"],
                            K=problem["K"], alpha=0.25, layers=2, beta=BETA)
    assert np.allclose(again["covariance"].values[-1], run["covariance"].values[-1], rtol=1e-14, atol=0)
    assert gaussian_layers(problem["mean"], problem["cov"], V=problem["V"], Q=problem["Q"], K=problem["K"],
                           alpha=0.25, layers=0)["layer"].values.tolist() == [0]


def test_moments_that_overflow_end_the_run_at_that_layer():
    """V = A = I, zero mean: Sigma -> (I + alpha Sigma) Sigma (I + alpha Sigma), growing like Sigma^3 per layer."""
    eye = np.eye(2)
    run = gaussian_layers(np.zeros(2), 10 * eye, V=eye, Q=eye, K=eye, alpha=1.0, layers=50)
    assert run.attrs["stop_reason"].startswith("overflow at layer ")
    last = int(run.attrs["stop_reason"].split()[-1])
    assert run["layer"].values[-1] == last < 50
    assert run["covariance"].values[1, 0, 0] == pytest.approx(10 * 11 ** 2, rel=1e-14)


@pytest.mark.parametrize("changes, parameter", [
    ({"alpha": 0.0}, "alpha"), ({"alpha": -1.0}, "alpha"), ({"alpha": math.nan}, "alpha"),
    ({"layers": -1}, "layers"), ({"layers": 1.5}, "layers"), ({"beta": -1.0}, "beta"),
    ({"cov": np.array([[1.0, 0.0], [0.0, -0.5]])}, "cov"), ({"attention": "hardmax"}, "attention"),
    ({"eps": 0.0}, "eps")])
def test_bad_input_names_its_parameter(changes, parameter):
    arguments = dict(mean=np.zeros(2), cov=np.eye(2), V=np.eye(2), Q=np.eye(2), K=np.eye(2), alpha=0.5, layers=2)
    arguments.update(changes)
    with pytest.raises(InputError) as error:
        gaussian_layers(arguments.pop("mean"), arguments.pop("cov"), **arguments)
    message = str(error.value)
    assert "\n" not in message and message.startswith(parameter)


def test_the_layers_file_holds_what_reruns_it(tmp_path):
    """Written and read back, the file's matrices and attributes repeat the run bit for bit."""
    from meanfield.app.storage import load_run, save_run

    problem = _problem(2, heads=2)
    run = gaussian_layers(problem["mean"], problem["cov"], V=problem["V"], Q=problem["Q"], K=problem["K"],
                          alpha=0.3, layers=3, beta=BETA, attention="l2")
    save_run(run, tmp_path / "layers.nc")
    back = load_run(tmp_path / "layers.nc")
    again = gaussian_layers(back["mean"].values[0], back["covariance"].values[0], V=list(back["V"].values),
                            Q=list(back["Q"].values), K=list(back["K"].values), alpha=back.attrs["alpha"],
                            layers=int(back.attrs["layers"]), beta=back.attrs["beta"], attention=back.attrs["attention"])
    assert np.array_equal(again["covariance"].values, run["covariance"].values)
    assert np.array_equal(again["mean"].values, run["mean"].values)


def test_the_command_line_runs_a_cases_layers_and_its_command_repeats_them(tmp_path, capsys):
    """``meanfield gaussian --layers L --step ALPHA``: the file holds the API's layers of the named case bit for bit,
    its recorded command writes the same file again, and the layers' options are refused in one line each."""
    import shlex

    from meanfield.app.storage import load_run
    from meanfield.cli import main
    from meanfield.gaussian_cases import gaussian_case
    from meanfield.gaussian_layers import layers_case

    out = tmp_path / "layers.nc"
    assert main(["gaussian", "--case", "random", "--dim", "3", "--seed", "5", "--attention", "l2", "--layers", "6",
                 "--step", "0.25", "--out", str(out)]) == 0
    saved = load_run(out)
    data = gaussian_case("random", 3, 5)
    direct = gaussian_layers(data["mean"], data["cov"], V=data["V"], Q=data["Q"], K=data["K"], alpha=0.25, layers=6,
                             attention="l2")
    api = layers_case("random", 3, 5, layers=6, alpha=0.25, attention="l2")
    for name in ("mean", "covariance"):
        assert np.array_equal(saved[name].values, direct[name].values)
        assert np.array_equal(api[name].values, direct[name].values)
    assert saved["layer"].values.tolist() == list(range(7)) and saved.attrs["stop_reason"] == "completed"
    from meanfield.plotting.gaussian import gaussian_title
    assert "6 residual layers of step 0.25" in gaussian_title(saved)            # not the flow's "moment ODEs"
    again = tmp_path / "again.nc"
    assert main(shlex.split(saved.attrs["command"])[1:] + ["--out", str(again)]) == 0
    assert np.array_equal(load_run(again)["covariance"].values, saved["covariance"].values)
    capsys.readouterr()
    for extra, words in ((["--layers", "3"], "--layers and --step go together"),
                         (["--layers", "3", "--step", "0.1", "--t-final", "1"], "--layers sets the end time"),
                         (["--layers", "0", "--step", "0.1"], "--layers must be"),
                         (["--layers", "3", "--step", "-1"], "--step must be > 0"),
                         ([], "--t-final is required")):
        assert main(["gaussian", *extra, "--out", str(tmp_path / "refused.nc")]) == 2
        assert words in capsys.readouterr().err
