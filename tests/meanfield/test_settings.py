"""Settings objects (meanfield.settings): defaults from meanfield.defaults, the same runs as the flat keywords,
one-line refusals of conflicts and bad values (API and command line), immutable and printable."""

import dataclasses

import numpy as np
import pytest

import meanfield
from meanfield import Attention, InputError, Monitor, Normalization, Saving, StepControl
from meanfield.cli import main
from meanfield.defaults import PARTICLE_DEFAULTS, RUN_DEFAULTS, SOLVE_DEFAULTS

CIRCLE = {"beta": 4.0, "resolution": 64}
TOKENS = {"dim": 2, "n": 24, "beta": 2.0, "init": "perturbed:1e-2"}


def _same_run(a, b):
    """Every variable bit for bit, every attribute but the wall time equal (as text: NaN equals NaN)."""
    assert set(a.variables) == set(b.variables)
    for name in a.variables:
        assert a[name].values.tobytes() == b[name].values.tobytes(), name
    drop = lambda attrs: {key: str(value) for key, value in attrs.items() if key != "wall_time"}
    assert drop(a.attrs) == drop(b.attrs)


def test_defaults_are_the_tables_entries_read_when_an_object_is_made(monkeypatch):
    assert StepControl() == StepControl(stepper=None, rtol=1e-8, atol=None, cfl=None, dt_max=None)
    assert (StepControl().rtol, Monitor().resolution_tol, Saving().t_final, Attention().interaction) == (
        RUN_DEFAULTS["rtol"], SOLVE_DEFAULTS["resolution_tol"], RUN_DEFAULTS["t_final"],
        PARTICLE_DEFAULTS["interaction"])
    monkeypatch.setitem(RUN_DEFAULTS, "rtol", 1e-6)
    monkeypatch.setitem(RUN_DEFAULTS, "t_final", 2.5)
    monkeypatch.setitem(SOLVE_DEFAULTS, "positivity_tol", 0.0)
    monkeypatch.setitem(PARTICLE_DEFAULTS, "interaction", "direct")
    assert StepControl().rtol == 1e-6 and SOLVE_DEFAULTS["rtol"] == PARTICLE_DEFAULTS["rtol"] == 1e-6
    assert Saving().t_final == 2.5 and Monitor().positivity_tol == 0.0
    assert Attention().interaction == "direct"


def test_objects_run_what_the_flat_keywords_run():
    flat = meanfield.solve("circle", **CIRCLE, t_final=0.5, save_every=0.25, rtol=1e-6, cfl=0.4,
                           positivity_tol=1e-5, normalization="ngpt", alpha=0.5)
    grouped = meanfield.solve("circle", **CIRCLE, saving=Saving(t_final=0.5, save_every=0.25),
                              step=StepControl(rtol=1e-6, cfl=0.4), monitor=Monitor(positivity_tol=1e-5),
                              normalization=Normalization("ngpt", alpha=0.5))
    _same_run(flat, grouped)
    assert flat.attrs["rtol"] == 1e-6 and flat.attrs["alpha"] == 0.5 and flat.attrs["positivity_tol"] == 1e-5
    assert "--rtol 1e-06" in grouped.attrs["command"] and "--alpha 0.5" in grouped.attrs["command"]
    # one object, the other groups flat
    mixed = meanfield.solve("circle", **CIRCLE, t_final=0.5, save_every=0.25, step=StepControl(rtol=1e-6, cfl=0.4),
                            positivity_tol=1e-5, normalization="ngpt", alpha=0.5)
    _same_run(flat, mixed)


def test_particle_objects_run_what_the_flat_keywords_run():
    flat = meanfield.simulate_particles(**TOKENS, qkv="random", interaction="direct", stepper="rk4", cfl=0.3,
                                        t_final=0.2, save_log=5)
    grouped = meanfield.simulate_particles(**TOKENS, attention=Attention(qkv="random", interaction="direct"),
                                           step=StepControl(stepper="rk4", cfl=0.3), saving=Saving(0.2, save_log=5))
    _same_run(flat, grouped)
    assert grouped.attrs["qkv"] == "random" and grouped.attrs["interaction_path"] == "direct"
    assert grouped.attrs["stepper"] == "rk4" and grouped.attrs["save_log"] == 5
    # matrices in the object are the run's Q, K, V (recorded as custom)
    Q = 2.0 * np.eye(2)
    by_matrix = meanfield.simulate_particles(**TOKENS, t_final=0.1, Q=Q)
    by_object = meanfield.simulate_particles(**TOKENS, t_final=0.1, attention=Attention("sa", Q=Q))
    _same_run(by_matrix, by_object)
    assert by_object.attrs["qkv"] == "custom" and np.array_equal(by_object["Q"].values, Q)


@pytest.mark.parametrize("call, words", [
    (lambda: meanfield.solve("circle", beta=1, t_final=1, rtol=1e-6, step=StepControl()),
     "rtol given twice: as a keyword and in step="),
    (lambda: meanfield.solve("circle", beta=1, t_final=1.0, save_log=3, saving=Saving()), "t_final, save_log given twice"),
    (lambda: meanfield.solve("circle", beta=1, t_final=1, positivity_tol=0.0, monitor=Monitor()),
     "positivity_tol given twice"),
    (lambda: meanfield.solve("circle", beta=1, t_final=1, alpha=0.5, normalization=Normalization("ngpt")),
     "alpha given twice: as a keyword and in normalization=Normalization(...)"),
    (lambda: meanfield.simulate_particles(beta=1, t_final=1, qkv="random", attention=Attention()), "qkv given twice"),
    (lambda: meanfield.simulate_particles(beta=1, t_final=1, dt_max=0.1, step=StepControl()), "dt_max given twice"),
    (lambda: meanfield.solve("circle", beta=1, t_final=1, step={"rtol": 1e-6}),
     "step= must be a meanfield.StepControl (got dict)"),
    (lambda: meanfield.solve("circle", beta=1, t_final=1, dt_max=0), "dt_max must be a finite number > 0 (got 0)"),
    (lambda: meanfield.simulate_particles(beta=1, t_final=1, step=StepControl(atol=1e-12)), "atol applies to solve() only"),
    (lambda: meanfield.solve("circle", beta=1), "t_final is required"),
    (lambda: meanfield.solve("circle", t_final=1), "beta is required unless init is a run file"),
    (lambda: meanfield.simulate_particles(t_final=1), "beta is required unless init is a particle run file"),
])
def test_a_setting_given_twice_or_where_it_does_not_apply_is_refused_in_one_line(call, words):
    with pytest.raises(InputError) as error:
        call()
    assert words in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("make, words", [
    (lambda: StepControl(rtol=2), "rtol must be a finite number in (0, 1) (got 2)"),
    (lambda: StepControl(cfl=0.0), "cfl must be a finite number in (0, 2] (got 0.0)"),
    (lambda: StepControl(dt_max=-1.0), "dt_max must be a finite number > 0 (got -1.0)"),
    (lambda: StepControl(atol=float("nan")), "atol must be a finite number in (0, inf) (got nan)"),
    (lambda: StepControl(stepper=4), "stepper must be a stepper's name (got 4)"),
    (lambda: Monitor(resolution_tol=0.0), "resolution_tol must be a finite number > 0 (got 0.0)"),
    (lambda: Monitor(positivity_tol=-1e-3), "positivity_tol must be a finite number >= 0 (got -0.001)"),
    (lambda: Saving(t_final=-1.0), "t_final must be a finite number in (0, 1e+300]"),
    (lambda: Saving(save_every=0.1, save_log=4), "give save_every or save_log, not both"),
    (lambda: Saving(save_log=0), "save_log must be an integer in [1, 1000] (frames per decade) (got 0)"),
    (lambda: Attention(kind="softmax"), "attention must be one of sa, usa (got 'softmax')"),
    (lambda: Attention(qkv="orthogonal"), "qkv must be one of identity, repulsive, random or a FILE.npz"),
    (lambda: Attention(interaction="fast"), "interaction must be one of auto, harmonic, direct (got 'fast')"),
    (lambda: Attention(kernel="cosine"), "kernel must be one of"),
    (lambda: Attention(sinkhorn_eps=0.5), "sinkhorn_eps applies to kernel='sinkhorn' only (got kernel='dot')"),
    (lambda: Attention(kernel="sinkhorn", sinkhorn_eps=0.0), "sinkhorn_eps must be a finite number > 0"),
    (lambda: Attention(Q=np.eye(2), heads=[(None, None, None)]), "pass either Q, K, V or heads, not both"),
])
def test_bad_values_are_refused_in_one_line_when_the_object_is_made(make, words):
    with pytest.raises(InputError) as error:
        make()
    assert words in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("args, words", [
    (["solve", "circle", "--beta", "1", "--t-final", "1", "--rtol", "2"],
     "--rtol must be a finite number in (0, 1)"),
    (["solve", "sphere", "--beta", "1", "--t-final", "1", "--resolution-tol", "0"], "--resolution-tol must be"),
    (["particles", "--n", "8", "--beta", "1", "--t-final", "1", "--cfl", "3"],
     "--cfl must be a finite number in (0, 2]"),
    (["particles", "--n", "8", "--beta", "1", "--t-final", "1", "--save-every", "0.1", "--save-log", "4"],
     "give --save-every or --save-log, not both"),
])
def test_bad_settings_on_the_command_line_exit_2_with_one_line(args, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(args + ["--no-progress"])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith("meanfield: error: ") and err.count("\n") == 1
    assert words in err and out == "" and list(tmp_path.iterdir()) == []


def test_objects_are_immutable_and_printable():
    step = StepControl(rtol=1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.rtol = 1e-3
    assert repr(step) == "StepControl(stepper=None, rtol=1e-06, atol=None, cfl=None, dt_max=None)"
    assert eval(repr(step)) == step and eval(repr(Monitor())) == Monitor() and eval(repr(Saving(3.0))) == Saving(3.0)
    assert dataclasses.replace(step, cfl=1.0).cfl == 1.0 and step.cfl is None
    matrix = np.eye(3)
    attention = Attention("USA", Q=matrix, heads=None)
    matrix[0, 0] = 7.0  # the object holds its own copy, read-only
    assert attention.Q[0, 0] == 1.0 and attention.kind == "usa"
    with pytest.raises(ValueError):
        attention.Q[0, 0] = 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        attention.qkv = "random"
    assert repr(Attention()).startswith("Attention(kind='sa', qkv='identity', Q=None, K=None, V=None, heads=None, "
                                        "kernel='dot', sinkhorn_eps=1.0, interaction='auto')")


def test_unknown_keywords_are_a_type_error_as_in_python():
    with pytest.raises(TypeError, match="solve\\(\\) got an unexpected keyword argument 'rtoll'"):
        meanfield.solve("circle", rtoll=1e-6)
    with pytest.raises(TypeError, match="simulate\\(\\) got an unexpected keyword argument 'monitor'"):
        meanfield.simulate_particles(monitor=Monitor())


@pytest.mark.parametrize("command", ["solve circle", "solve sphere", "solve zonal", "particles"])
def test_the_command_line_options_default_to_the_objects_defaults(command):
    from meanfield.cli import cli

    group = cli
    for word in command.split():
        group = group.commands[word]
    options = {param.name: param.default for param in group.params if not param.required}  # not --t-final
    objects = [StepControl(), Saving(), Monitor()] + ([Attention()] if command == "particles" else [])
    checked = 0
    for settings in objects:
        for field in dataclasses.fields(settings):
            if field.name in options and options[field.name] is not None:  # None: the run decides, as the API
                expected = getattr(settings, field.name)
                if field.name == "stepper":  # the particles' stepper; the API's None means the same one
                    expected = PARTICLE_DEFAULTS["stepper"]
                assert options[field.name] == expected, field.name
                checked += 1
    assert checked == 3  # rtol (+ stepper, interaction | 2 tols); cfl: None, the scheme's; qkv: None, the --init run's or identity


def test_a_normalization_object_records_what_its_name_would():
    by_name = meanfield.solve("circle", **CIRCLE, t_final=0.2)
    by_object = meanfield.solve("circle", **CIRCLE, t_final=0.2, normalization=Normalization("post", alpha=3.0))
    _same_run(by_name, by_object)  # post does not use alpha: the run records the default 1, as the name's run
    assert by_object.attrs["alpha"] == 1.0 and by_object.attrs["normalization"] == "post"


def test_the_particles_default_stepper_is_the_tables(monkeypatch):
    monkeypatch.setitem(PARTICLE_DEFAULTS, "stepper", "rk4")
    run = meanfield.simulate_particles(**TOKENS, t_final=0.1)
    assert run.attrs["stepper"] == "rk4" and "--stepper rk4" in run.attrs["command"]
    assert meanfield.simulate_particles(**TOKENS, t_final=0.1, stepper="dopri5").attrs["stepper"] == "dopri5"


def test_the_command_line_runs_what_the_objects_run(tmp_path):
    out = tmp_path / "cli.nc"
    assert main(["solve", "circle", "--beta", "4", "--resolution", "64", "--t-final", "0.2", "--rtol", "1e-6",
                 "--positivity-tol", "1e-5", "--save-log", "4", "--no-progress", "--out", str(out)]) == 0
    api = meanfield.solve("circle", **CIRCLE, step=StepControl(rtol=1e-6), monitor=Monitor(positivity_tol=1e-5),
                          saving=Saving(0.2, save_log=4))
    meanfield.save_run(api, tmp_path / "api.nc")
    _same_run(meanfield.load_run(out), meanfield.load_run(tmp_path / "api.nc"))
    out = tmp_path / "tokens.nc"
    assert main(["particles", "--n", "24", "--beta", "2", "--init", "perturbed:1e-2", "--t-final", "0.2",
                 "--qkv", "random", "--cfl", "0.3", "--stepper", "rk4", "--no-progress", "--out", str(out)]) == 0
    api = meanfield.simulate_particles(**TOKENS, attention=Attention(qkv="random"), step=StepControl("rk4", cfl=0.3),
                                       saving=Saving(0.2))
    meanfield.save_run(api, tmp_path / "api_tokens.nc")
    _same_run(meanfield.load_run(out), meanfield.load_run(tmp_path / "api_tokens.nc"))
