"""Causal (decoder) particles with ALiBi (MATH.md §8): the masked direct sum against a naive reference, the
circle's prefix sums against the direct sum, exact facts (token 1 stays put; every token ends at token 1), mask
none unchanged, refusals, and the record a run keeps (attrs, position, command, restart, rerun)."""

import math

import numpy as np
import pytest

from meanfield import InputError, Model, rerun
from meanfield import simulate_particles as simulate
from meanfield.cli import main
from meanfield.normalization import Normalization
from meanfield.settings import Attention, Mask
from meanfield.solvers.schemes import causal_interaction
from meanfield.solvers.schemes.particles import ParticleScheme

MASKS = ("causal", "strict")


def unit(rng, shape):
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def naive_velocity(x, beta, attention, heads, mask, alibi):
    """MATH.md §8 term by term: every token, every attended token, every head; then the tangent part."""
    n = x.shape[0]
    out = np.zeros_like(x)
    for j in range(n):
        attended = range(j + 1) if mask == "causal" else range(j)
        if not attended:
            continue
        for Q, K, V in heads:
            logits = np.array([beta * (Q @ x[j]) @ (K @ x[k]) for k in attended])
            bias = np.array([-alibi * (j - k) / n for k in attended])
            values = np.array([V @ x[k] for k in attended])
            if attention == "sa":
                weights = np.exp(logits + bias - np.max(logits + bias))
                out[j] += weights @ values / weights.sum()
            else:
                positional = np.exp(bias) / np.exp(bias).sum()
                out[j] += (positional * np.exp(logits)) @ values
        out[j] -= (out[j] @ x[j]) * x[j]
    return out


def scheme(n, dim=2, attention="sa", beta=4.0, **options):
    return ParticleScheme(Model(attention, beta, 0.0, dim), n,
                          Attention(attention, heads=options.pop("heads", None),
                                    interaction=options.pop("interaction_path", "auto")),
                          mask=Mask(options.pop("mask", "none"), options.pop("alibi", 0.0)), **options)


def relative(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.linalg.norm(b, axis=-1)))


# -- the right-hand sides ----------------------------------------------------------------------------------
@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("alibi", [0.0, 1.7])
def test_masked_direct_sum_is_math_8(attention, mask, alibi):
    """General Q, K, V, two heads, S^2, row blocks of 16 (three blocks): the naive sum of MATH.md §8 to 1e-12."""
    rng = np.random.default_rng(8)
    n, dim = 40, 3
    heads = [tuple(rng.standard_normal((dim, dim)) / math.sqrt(dim) for _ in range(3)) for _ in range(2)]
    x = unit(rng, (n, dim))
    particles = scheme(n, dim, attention, 2.0, heads=heads, mask=mask, alibi=alibi, block_bytes=1)
    assert particles.interaction_path == "direct"
    assert relative(particles.rhs(x[None], 0.0)[0], naive_velocity(x, 2.0, attention, heads, mask, alibi)) < 1e-12


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("n, alibi", [(200, 0.0), (200, 3.0), (200, 700.0), (2000, 0.0), (2000, 700.0)])
def test_prefix_sums_equal_the_masked_direct_sum(attention, mask, n, alibi):
    """The circle's O(n M) path against the direct sum, relative to the largest speed (several chunks where the
    slope shortens them: lambda = 700 at n = 2000 takes chunks of 1463 rows)."""
    x = unit(np.random.default_rng(n), (2, n, 2))          # two systems at once
    fast = scheme(n, attention=attention, mask=mask, alibi=alibi)
    direct = scheme(n, attention=attention, mask=mask, alibi=alibi, interaction_path="direct")
    assert type(fast.interaction).__name__ == "CausalCircleInteraction" and direct.interaction_path == "direct"
    assert relative(fast.rhs(x, 0.0), direct.rhs(x, 0.0)) < 1e-12


def test_short_chunks_carry_the_prefix_sums(monkeypatch):
    """Chunks of 96 rows (21 chunks at n = 2000): the carried sums give the direct sum's velocities."""
    monkeypatch.setattr(causal_interaction, "CHUNK_ROWS", 96)
    x = unit(np.random.default_rng(3), (1, 2000, 2))
    for attention in ("sa", "usa"):
        fast = scheme(2000, attention=attention, mask="causal", alibi=2.0)
        direct = scheme(2000, attention=attention, mask="causal", alibi=2.0, interaction_path="direct")
        assert relative(fast.rhs(x, 0.0), direct.rhs(x, 0.0)) < 1e-12


@pytest.mark.parametrize("normalization", ["pre", "ngpt"])
def test_prefix_sums_give_the_normalised_parts(normalization):
    """Normalisation schemes (MATH.md §6) act per token on the masked output: both paths agree, radius included."""
    rng = np.random.default_rng(6)
    n = 300
    x = unit(rng, (1, n, 2))
    if normalization == "pre":
        x = np.concatenate((x, rng.uniform(0.5, 2.0, (1, n, 1))), -1)
    options = dict(attention="usa", mask="causal", alibi=1.0, normalization=Normalization(normalization))
    fast, direct = scheme(n, **options), scheme(n, interaction_path="direct", **options)
    assert relative(fast.rhs(x, 0.0), direct.rhs(x, 0.0)) < 1e-12


# -- exact facts of particles (MATH.md §8) ---------------------------------------------------------------------
@pytest.mark.parametrize("dim, attention, mask", [(2, "sa", "causal"), (2, "sa", "strict"), (3, "sa", "causal"),
                                                  (3, "sa", "strict"), (2, "usa", "causal"), (3, "usa", "strict"),
                                                  (3, "usa", "causal")])
def test_token_one_stays_put(dim, attention, mask):
    """Token 1 attends to itself only (causal: ``P_x x = 0``) or to nothing (strict): it does not move; on S^2
    with random Q, K (V = I) through the direct sum, on the circle through the prefix sums."""
    rng = np.random.default_rng(dim)
    Q, K = (rng.standard_normal((dim, dim)) / dim for _ in range(2)) if dim == 3 else (None, None)
    run = simulate(dim=dim, n=24, attention=attention, beta=1.0 if attention == "usa" else 4.0, Q=Q, K=K,
                   mask=mask, alibi=1.0, seed=2, t_final=3.0, save_every=1.0)
    first = run.positions.values[:, 0]
    assert np.max(np.abs(first - first[0])) < 1e-13
    assert np.max(np.abs(run.positions.values[-1, 1:] - run.positions.values[0, 1:])) > 1e-2   # the others move


def test_every_token_ends_at_token_one():
    """Q = K = V = I, circle, SA, beta = 4 (Karagodin et al.): all 32 tokens end at token 1's direction."""
    run = simulate(dim=2, n=32, beta=4.0, mask="causal", seed=1, t_final=40.0, save_every=20.0)
    theta = run.theta.values[-1]
    assert np.max(np.abs(np.angle(np.exp(1j * (theta - theta[0]))))) < 1e-6


# -- mask none is today's run; the record of a causal run ------------------------------------------------------
@pytest.mark.parametrize("dim", [2, 3])
def test_mask_none_is_the_run_without_it(dim):
    options = dict(dim=dim, n=48, beta=4.0, seed=3, t_final=1.0, save_every=0.5)
    plain, masked = simulate(**options), simulate(mask="none", alibi=0.0, **options)
    assert set(plain.variables) == set(masked.variables) and "position" not in masked.coords
    for name in plain.variables:
        values = plain[name].values
        assert np.array_equal(values, masked[name].values, equal_nan=values.dtype.kind == "f"), name
    skip = {"wall_time"}
    assert {k: v for k, v in plain.attrs.items() if k not in skip} == \
        {k: v for k, v in masked.attrs.items() if k not in skip}
    assert "mask" not in plain.attrs and "--mask" not in plain.attrs["command"]


def test_noise_and_heads_run_under_a_mask():
    """Noise (the geodesic random walk after each step) and two heads on S^2 take the masked direct sum."""
    rng = np.random.default_rng(7)
    heads = [tuple(rng.standard_normal((3, 3)) / 3 for _ in range(3)) for _ in range(2)]
    options = dict(dim=3, n=12, beta=2.0, nu=0.05, heads=heads, mask="causal", alibi=0.5, seed=7, t_final=0.2)
    first, second = simulate(**options), simulate(**options)
    assert first.attrs["stop_reason"] == "completed" and first.attrs["interaction"] == "CausalDirectInteraction"
    assert np.array_equal(first.positions.values, second.positions.values)


@pytest.fixture(scope="module")
def causal_run():
    return simulate(dim=2, n=16, beta=4.0, mask="strict", alibi=2.0, seed=4, t_final=1.0, save_every=0.5)


def test_a_causal_run_records_its_mask(causal_run):
    attrs = causal_run.attrs
    assert attrs["mask"] == "strict" and attrs["alibi"] == 2.0 and attrs["collapse_tol_used"] == 0.0
    assert "--mask strict --alibi 2.0" in attrs["command"]
    assert np.array_equal(causal_run.position.values, np.arange(1, 17) / 16)
    assert causal_run.position.dims == ("particle",)


def test_continuation_and_rerun_keep_the_mask(causal_run):
    whole = simulate(dim=2, n=16, beta=4.0, mask="strict", alibi=2.0, seed=4, t_final=2.0, save_every=0.5)
    continued = simulate(dim=2, n=16, init=causal_run, t_final=2.0)
    assert continued.attrs["restart"] == "exact" and continued.attrs["mask"] == "strict"
    assert continued.attrs["alibi"] == 2.0 and continued.attrs["override"] == ""
    assert np.max(np.abs(continued.positions.values[-1] - whole.positions.values[-1])) < 1e-12
    again = rerun(causal_run)
    assert np.array_equal(again.positions.values, causal_run.positions.values)
    assert again.attrs["mask"] == "strict" and again.attrs["alibi"] == 2.0


@pytest.mark.parametrize("change", [{"mask": "causal"}, {"mask": "none", "alibi": 0.0}, {"alibi": 1.0}])
def test_a_continuation_refuses_another_mask(causal_run, change):
    name = next(iter(change))
    with pytest.raises(InputError, match=f"^{name} = .* differs from .* override=True"):
        simulate(dim=2, n=16, init=causal_run, t_final=2.0, **change)
    changed = simulate(dim=2, n=16, init=causal_run, t_final=1.5, override=True, **change)
    assert f"{name}: " in changed.attrs["override"]


def test_a_plain_run_continued_with_a_mask_is_a_change():
    plain = simulate(dim=2, n=8, beta=1.0, seed=1, t_final=0.5)
    with pytest.raises(InputError, match="^mask = causal differs from none"):
        simulate(dim=2, n=8, init=plain, t_final=1.0, mask="causal")


# -- refusals --------------------------------------------------------------------------------------------------
RUN = dict(dim=2, n=8, beta=1.0, t_final=0.5)


@pytest.mark.parametrize("options, named", [
    (dict(mask="causal", alibi=-1.0), "alibi"),
    (dict(mask="causal", alibi=float("nan")), "alibi"),
    (dict(mask="causal", alibi=float("inf")), "alibi"),
    (dict(mask="causal", alibi=701.0), "alibi"),
    (dict(mask="decoder"), "mask"),
    (dict(mask=1), "mask"),
    (dict(alibi=1.0), "alibi 1 needs mask"),
    (dict(mask="causal", collapse_tol=1e-9), "mask causal needs collapse_tol 0"),
    (dict(mask="causal", sampling="quadrature", init="vonmises:2@1"), "sampling quadrature needs mask none"),
    (dict(mask="causal", dim=3, interaction="harmonic"), "interaction harmonic with mask causal"),
    (dict(mask="strict", normalization="ngpt"), "normalization ngpt"),
    (dict(mask="strict", normalization="peri"), "normalization peri"),
])
def test_bad_causal_settings_are_refused(options, named):
    with pytest.raises(InputError, match="^" + named.replace("-", r"\-")):
        simulate(**{**RUN, **options})


def test_masks_need_the_sphere_and_uniform_weights():
    model = Model("sa", 1.0, 0.0, 2)
    with pytest.raises(InputError, match="^mask causal needs tokens on the sphere"):
        ParticleScheme(model, 8, Attention("sa", kernel="l2"), sphere=False, mask=Mask("causal"))
    with pytest.raises(InputError, match="^mask strict needs uniform token weights"):
        ParticleScheme(model, 8, weights=np.arange(1.0, 9.0), mask=Mask("strict"))


@pytest.mark.parametrize("flags", [["--mask", "causal", "--alibi", "-1"], ["--mask", "causal", "--alibi", "nan"],
                                   ["--mask", "decoder"], ["--alibi", "2"],
                                   ["--mask", "causal", "--collapse-tol", "1e-9"]])
def test_the_command_line_refuses_in_one_line(tmp_path, capsys, flags):
    out = tmp_path / "run.nc"
    code = main(["particles", "--n", "8", "--beta", "1", "--t-final", "0.5", "--no-progress", "--out", str(out),
                 *flags])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists() and list(tmp_path.iterdir()) == []
    assert err.startswith("meanfield: error: ") and err.count("\n") == 1
    assert "--mask" in err or "--alibi" in err or "mask" in err
