"""S^2 tokens through spherical harmonics (issue 14 item 1): meanfield.solvers.schemes.interaction.SphereHarmonicInteraction
against the direct sums, the auto choice of ParticleScheme and its refusals."""

import numpy as np
import pytest

from meanfield.cli import main
from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.settings import Attention
from meanfield.solvers.schemes.interaction import CircleFourierInteraction, DirectInteraction, SphereHarmonicInteraction
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.schemes.particles import ParticleScheme, harmonic_crossover
from meanfield.fits import log_log_slope


def tokens(rng, n, batch=1, tilt=1.0):
    """Unit vectors, biased towards the north pole (a non-uniform measure: a large field)."""
    x = rng.standard_normal((batch, n, 3))
    x[..., 2] += tilt
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def relative(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("attention", ["sa", "usa"])
@pytest.mark.parametrize("beta", [0.5, 4.0, 30.0])
def test_harmonic_velocity_equals_the_direct_sum(attention, beta, rng):
    n = 600
    x = tokens(rng, n, batch=2)
    weights = rng.random(n)
    weights /= weights.sum()
    harmonic = SphereHarmonicInteraction(beta, attention, weights)
    direct = DirectInteraction(beta, attention, weights=weights)
    output = direct.velocity(x)
    radial = np.sum(output * x, axis=-1)
    tangent = output - radial[..., None] * x
    assert relative(harmonic.velocity(x), tangent) < 1e-12
    parts = harmonic.attention_parts(x)
    assert relative(parts[0], radial) < 1e-12
    assert relative(parts[1], tangent) < 1e-12
    assert relative(parts[2], np.linalg.norm(output, axis=-1)) < 1e-12
    assert relative(harmonic.scaled_energy(x), direct.scaled_energy(x)) < 1e-13


def test_accuracy_sets_the_band_and_the_error(rng):
    x = tokens(rng, 400)
    weights = np.full(400, 1 / 400)
    output = DirectInteraction(9.0, "sa", weights=weights).velocity(x)
    tangent = output - np.sum(output * x, axis=-1, keepdims=True) * x
    coarse = SphereHarmonicInteraction(9.0, "sa", weights, accuracy=1e-6)
    fine = SphereHarmonicInteraction(9.0, "sa", weights)
    assert coarse.band < fine.band
    assert 1e-12 < relative(coarse.velocity(x), tangent) < 1e-6
    with pytest.raises(InputError, match="accuracy"):
        SphereHarmonicInteraction(9.0, "sa", weights, accuracy=0.0)


@pytest.mark.parametrize("name", ["post", "peri", "ngpt"])
def test_scheme_rhs_matches_the_direct_path(name, rng):
    n = 600
    model = Model(attention="sa", beta=4.0, dim=3)
    normalization = Normalization(name)
    x = tokens(rng, n)
    if normalization.carries_radius:
        x = np.concatenate((x, 1 + rng.random((1, n, 1))), axis=-1)
    fast = ParticleScheme(model, n, Attention(model.attention, interaction="harmonic"), normalization=normalization)
    slow = ParticleScheme(model, n, Attention(model.attention, interaction="direct"), normalization=normalization)
    assert isinstance(fast.interaction, SphereHarmonicInteraction)
    assert isinstance(slow.interaction, DirectInteraction)
    assert relative(fast.rhs(x, 0.5), slow.rhs(x, 0.5)) < 1e-12


def test_short_run_agrees_with_the_direct_path():
    settings = dict(dim=3, n=300, attention="sa", beta=4.0, init="uniform", seed=3, t_final=2.0,
                    save_every=1.0, rtol=1e-10)
    fast = simulate(interaction="harmonic", **settings)
    slow = simulate(interaction="direct", **settings)
    assert fast.attrs["interaction"] == "SphereHarmonicInteraction" and fast.attrs["interaction_path"] == "harmonic"
    assert slow.attrs["interaction"] == "DirectInteraction" and slow.attrs["interaction_path"] == "direct"
    assert "--interaction harmonic" in fast.attrs["command"]
    moved = float(np.max(np.abs(slow.positions.values[-1] - slow.positions.values[0])))
    assert moved > 0.1
    assert float(np.max(np.abs(fast.positions.values - slow.positions.values))) < 1e-9
    # frames from dopri5's dense output of the two paths' own steps (their sums differ by ~1e-12, which may change
    # a step): the energies agree to the runs' rtol
    np.testing.assert_allclose(fast.energy.values, slow.energy.values, rtol=settings["rtol"])


def test_noise_and_weights_run_on_the_harmonic_path(rng):
    weights = rng.random(200)
    settings = dict(dim=3, n=200, beta=2.0, nu=0.05, seed=1, t_final=0.2, save_every=0.1)
    fast = simulate(interaction="harmonic", positions=tokens(rng, 200)[0], weights=weights, **settings)
    slow = simulate(interaction="direct", positions=fast.positions.values[0], weights=weights, **settings)
    assert fast.attrs["stop_reason"] == "completed"
    assert float(np.max(np.abs(fast.positions.values - slow.positions.values))) < 1e-9


def test_auto_choice():
    model = Model(attention="sa", beta=4.0, dim=3)
    band = SphereHarmonicInteraction(4.0, "sa", None).band
    crossover = harmonic_crossover(band)
    assert 256 < crossover <= 1024
    assert isinstance(ParticleScheme(model, crossover).interaction, SphereHarmonicInteraction)
    assert isinstance(ParticleScheme(model, crossover - 1).interaction, DirectInteraction)
    assert harmonic_crossover(SphereHarmonicInteraction(64.0, "sa", None).band) > crossover
    # not applicable: the direct sums, whatever n
    assert isinstance(ParticleScheme(model, 2000, Attention("sa", V=-np.eye(3))).interaction, DirectInteraction)
    assert isinstance(ParticleScheme(Model(attention="sa", beta=4.0, dim=4), 2000).interaction, DirectInteraction)
    # the circle keeps its Fourier path; direct is forced everywhere
    circle = Model(attention="sa", beta=4.0, dim=2)
    assert isinstance(ParticleScheme(circle, 8).interaction, CircleFourierInteraction)
    assert isinstance(ParticleScheme(circle, 8, Attention("sa", interaction="harmonic")).interaction,
                      CircleFourierInteraction)
    assert isinstance(ParticleScheme(circle, 8, Attention("sa", interaction="direct")).interaction, DirectInteraction)
    assert isinstance(ParticleScheme(model, 4000, Attention("sa", interaction="direct")).interaction, DirectInteraction)


@pytest.mark.parametrize("kwargs, words", [
    (dict(dim=4), "dim 2 or 3"),
    (dict(dim=3, V=-np.eye(3)), "Q = K = V = I"),
    (dict(dim=3, path="fast"), "interaction must be one of"),
])
def test_refusals(kwargs, words):
    dim = kwargs.pop("dim")
    path = kwargs.pop("path", "harmonic")
    with pytest.raises(InputError, match=words):
        ParticleScheme(Model(attention="sa", beta=1.0, dim=dim), 10, Attention("sa", interaction=path, **kwargs))


def test_cli_refuses_in_one_line(tmp_path, capsys):
    code = main(["particles", "--dim", "3", "--n", "10", "--beta", "1", "--qkv", "repulsive", "--t-final", "0.1",
                 "--interaction", "harmonic", "--no-progress", "--out", str(tmp_path / "run.nc")])
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield: error: --interaction harmonic needs Q = K = V = I")
    assert not (tmp_path / "run.nc").exists()


def test_benchmark_tables_measure_and_extrapolate(monkeypatch):
    import meanfield.validation.benchmarks.particles as bench

    monkeypatch.setattr(bench, "DIRECT_MAX", 700)
    times = bench.SphereTimes(quick=True)
    rows, fits = bench._scaling_rows(times, (300, 600), (300, 600))
    assert [row["path"] for row in rows] == ["harmonic"] * 2 + ["direct"] * 2
    assert all(fit[0] is None and np.isfinite(fit[1]) for fit in fits.values())
    table = bench._harmonic_rows(times, (600, 1200))
    assert table[0]["direct_source"] == "measured" and table[0]["max_rel_diff"] < 1e-12
    assert table[1]["direct_source"] == "extrap n^2 from 600" and table[1]["max_rel_diff"] is None
    assert table[1]["direct_ms"] == pytest.approx(4 * table[0]["direct_ms"])
    assert "speedup" in bench.format_table(table, bench.HARMONIC_COLUMNS)
    assert log_log_slope([10, 100, 1000], [1.0, 100.0, 1e4]) == pytest.approx(2.0)


def test_continued_harmonic_run_is_exact_and_keeps_its_path():
    settings = dict(dim=3, n=200, attention="usa", beta=3.0, init="uniform", seed=5, save_every=0.5)
    whole = simulate(interaction="harmonic", t_final=2.0, **settings)
    half = simulate(interaction="harmonic", t_final=1.0, **settings)
    continued = simulate(t_final=2.0, **dict(settings, init=half))     # auto: n = 200 alone would be direct
    assert continued.attrs["restart"] == "exact" and continued.attrs["interaction_path"] == "harmonic"
    np.testing.assert_array_equal(continued.positions.values[-1], whole.positions.values[-1])


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_fields_with_the_lagrangian_band_are_the_lagrangian_sums(attention, rng):
    """One implementation of the transforms can serve both: with SphereLagrangian's band and epsilon the
    harmonic fields are its right-hand side to rounding."""
    from meanfield.solvers.schemes.lagrangian import SHT_EPSILON, SphereLagrangian

    scheme = SphereLagrangian(Model(attention=attention, beta=3.0, dim=3), 12)
    state = scheme.state_from_density(1 + 0.3 * rng.random(scheme.basis.shape))
    state += 0.05 * rng.standard_normal(state.shape)
    state /= np.linalg.norm(state, axis=1, keepdims=True)
    harmonic = SphereHarmonicInteraction(3.0, attention, scheme.weights, band=scheme.band, epsilon=SHT_EPSILON)
    fields = harmonic.fields(state, density=True)
    assert fields["density"] is not None
    assert relative(harmonic.cartesian(fields["trig"], fields["v_theta"], fields["v_phi"]),
                    scheme.rhs(state, 0.0)) < 1e-14


def test_whole_run_table_times_every_rhs_and_restores_the_scheme():
    """Table 8 of bench-particles: every right-hand side of the run is timed (the stepper's calls counted), the
    share outside them is a fraction of the wall time, and the scheme's rhs is the original afterwards."""
    import meanfield.validation.benchmarks.particles as bench
    from meanfield.solvers.schemes.particles import ParticleScheme

    original = ParticleScheme.rhs
    row = bench.whole_run_row("small", dict(dim=3, n=400, beta=4.0, t_final=0.5, save_every=0.25))
    assert ParticleScheme.rhs is original
    assert row["frames"] == 3 and row["steps"] >= 2 and row["rhs_calls"] >= 6 * row["steps"]
    assert 0 < row["rhs_s"] < row["wall_s"] and 0 < row["outside_pct"] < 100
    assert "outside %" in bench.format_table([row], bench.RUN_COLUMNS)
