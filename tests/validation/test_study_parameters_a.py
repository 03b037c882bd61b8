"""``meanfield validate NAME --beta ... --n ... --seed(s) ... --init ... --geometry ...`` for growth-circle,
mean-field-sphere, cluster-formation, metastability, schemes, noise-transition, staircase and cluster-events: each
parameter reaches the study's runs (the runs' own arguments, recorded by a spy, or the run files the study saved) and
the file the command wrote records it (validation/registry.py).  Sizes the parameters do not control are shrunk with
``monkeypatch.setitem`` on the study's QUICK preset, so that each test takes a few seconds."""

import math

import pytest
import xarray as xr

from meanfield.cli import main
from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.theory import linear_noise_threshold


def _written(path) -> xr.Dataset:
    with xr.open_dataset(path) as ds:
        return ds.load()


def _spy(monkeypatch, module, name: str) -> list[dict]:
    """Every call of ``module.name`` (the study's ``solve`` or ``simulate``) records its keyword arguments, and runs."""
    calls, real = [], getattr(module, name)

    def recorded(*args, **kwargs):
        calls.append(dict(kwargs, args=args))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, recorded)
    return calls


def _validate(name: str, tmp_path, *parameters, out: str = "--out-dir") -> int:
    target = tmp_path / "growth.nc" if out == "--out" else tmp_path
    return main(["validate", name, "--quick", *parameters, out, str(target)])


# ----------------------------------------------------------------------------------------------- growth-circle
def test_growth_circle_parameters_reach_the_runs(tmp_path, monkeypatch, capsys):
    from meanfield.validation.studies import growth_rates

    calls = _spy(monkeypatch, growth_rates, "solve")
    assert _validate("growth-circle", tmp_path, "--beta", "3", "--seed", "5", out="--out") == 0
    ds = _written(tmp_path / "growth.nc")
    assert ds["beta"].values.tolist() == [3.0] * 4 and ds.attrs["seed"] == 5
    # the noisy cases at 1.5 nu_# of the beta given: the tolerance is derived for each case's own beta and nu
    noisy = ds.where(ds.nu > 0, drop=True)
    assert noisy["nu"].values.tolist() == [1.5 * linear_noise_threshold(Model(str(a), 3.0, 0.0, 2))
                                           for a in noisy["attention"].values]
    assert [(call["beta"], call["seed"]) for call in calls] == [(3.0, 5)] * 4
    assert "claims: 1 of 1 hold" in capsys.readouterr().out
    assert _validate("growth-circle", tmp_path, "--beta", "0", out="--out") == 2
    assert "--beta must be > 0" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------- mean-field-sphere
def test_mean_field_sphere_parameters_reach_the_runs(tmp_path, monkeypatch, capsys):
    from meanfield.validation.studies import mean_field_sphere

    monkeypatch.setitem(mean_field_sphere.QUICK, "times", (0.0, 0.5))
    pde, particles = _spy(monkeypatch, mean_field_sphere, "solve"), _spy(monkeypatch, mean_field_sphere, "simulate")
    init = "vmf:2@10,20"
    assert _validate("mean-field-sphere", tmp_path, "--beta", "2", "--n", "64,128", "--seeds", "2",
                     "--init", init) == 0
    ds = _written(tmp_path / "mean_field_sphere.nc")
    assert ds.attrs["beta"] == 2.0 and ds.attrs["init"] == init
    assert ds["n"].values.tolist() == [64, 128] and ds["seed"].values.tolist() == [0, 1]
    assert [(call["beta"], call["init"]) for call in pde] == [(2.0, init)]
    assert sorted((call["n"], call["seed"], call["beta"]) for call in particles) == [
        (64, 0, 2.0), (64, 1, 2.0), (128, 0, 2.0), (128, 1, 2.0)]
    assert "claims: 3 of 3 hold" in capsys.readouterr().out
    assert _validate("mean-field-sphere", tmp_path, "--seeds", "1") == 2      # a slope's spread needs two seeds
    assert "'--seeds': 1 is not in the range 2<=x" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------- cluster-formation
def test_cluster_formation_parameters_reach_the_runs(tmp_path, monkeypatch, capsys):
    from meanfield.validation.studies import cluster_formation

    monkeypatch.setattr(cluster_formation, "SAVE_EVERY", 0.5)          # fewer frames (no claim reads the times)
    calls = _spy(monkeypatch, cluster_formation, "simulate")
    assert _validate("cluster-formation", tmp_path, "--beta", "4", "--n", "64,128", "--seeds", "2") == 0
    ds = _written(tmp_path / "cluster_formation.nc")
    assert ds.attrs["beta"] == 4.0 and ds["n"].values.tolist() == [64, 128] and ds.attrs["seeds"] == 2
    assert sorted((call["n"], call["seed"], call["beta"]) for call in calls) == [
        (64, 0, 4.0), (64, 1, 4.0), (128, 0, 4.0), (128, 1, 4.0)]
    # theory at the beta given: k* and its rate, the slope 1 / (2 lambda_k*)
    model = Model("sa", 4.0, 0.0, 2)
    from meanfield.theory import dominant_mode, growth_rates
    assert ds.attrs["k_star"] == dominant_mode(model)
    assert ds.attrs["theoretical_slope"] == 1 / (2 * float(growth_rates(model, [dominant_mode(model)])[0]))
    assert "claims: 3 of 3 hold" in capsys.readouterr().out


# ----------------------------------------------------------------------------------------------- metastability
def test_metastability_parameters_reach_the_runs(tmp_path, monkeypatch, capsys):
    from meanfield.validation.studies import metastability

    monkeypatch.setitem(metastability.QUICK, "resolution", 256)
    monkeypatch.setitem(metastability.QUICK, "particle_horizon", 10.0)
    assert _validate("metastability", tmp_path, "--beta", "5", "--n", "512", "--seed", "2") == 0
    ds = _written(tmp_path / "metastability.nc")
    assert ds["beta"].values.tolist() == [5.0, 5.0] and ds.attrs["n"] == 512 and ds.attrs["seed"] == 2
    assert ds["size"].values.tolist() == [256, 512]                      # the PDE's cells, the particles' count
    pde, particles = _written(tmp_path / "pde_beta5.nc"), _written(tmp_path / "particles_beta5_formation.nc")
    assert (pde.attrs["beta"], pde.attrs["seed"]) == (5.0, 2)
    assert (particles.attrs["beta"], particles.attrs["seed"], particles.sizes["particle"]) == (5.0, 2, 512)
    assert ds.attrs["command"] == ("meanfield validate metastability --quick --beta 5 --n 512 --seed 2 "
                                   f"--out-dir {tmp_path}")
    printed = capsys.readouterr().out
    # the claims say how far mode k* leads its neighbours at this beta and eps (1.74 sd for the PDE at beta = 5)
    assert "claims: 5 of 5 hold" in printed and "beta = 5, particles" in printed and "lead over" in printed


# ----------------------------------------------------------------------------------------------- schemes
def test_schemes_parameters_reach_the_runs(tmp_path, monkeypatch, capsys):
    from meanfield.validation.studies import scheme_comparison

    monkeypatch.setitem(scheme_comparison.QUICK, "resolution", 128)
    monkeypatch.setitem(scheme_comparison.QUICK, "horizon", 2.5)
    pde, particles = _spy(monkeypatch, scheme_comparison, "solve"), _spy(monkeypatch, scheme_comparison, "simulate")
    init = "vonmises:8@1+vonmises:8@3.5"
    assert _validate("schemes", tmp_path, "--beta", "5", "--n", "256", "--seed", "2", "--init", init) == 0
    ds = _written(tmp_path / "scheme_comparison.nc")
    assert (ds.attrs["beta"], ds.attrs["n"], ds.attrs["seed"], ds.attrs["structured_init"]) == (5.0, 256, 2, init)
    assert {call["beta"] for call in pde} == {5.0} and {call["seed"] for call in pde if "seed" in call} == {2}
    assert [(call["n"], call["beta"], call["seed"], call["init"]) for call in particles] == [(256, 5.0, 2, init)]
    assert int(ds["structured_clusters"]) == 2                          # the two bumps given, not STRUCTURED's three
    printed = capsys.readouterr().out
    assert "FAIL" not in printed and "hold" in printed
    assert _validate("schemes", tmp_path / "refused", "--init", "vonmises:8@x") == 2   # checked before anything runs
    assert "init" in capsys.readouterr().err and not (tmp_path / "refused").exists()
    # a start that forms no cluster is refused in one line, not a traceback of an empty comparison
    uniform = {"fv": scheme_comparison.solve("circle", scheme="fv", beta=5, resolution=64, t_final=1.0,
                                             init="uniform")}
    with pytest.raises(InputError, match="holds no cluster"):
        scheme_comparison._cluster_comparison(uniform)


# ----------------------------------------------------------------------------------------------- noise-transition
def test_noise_transition_parameters_reach_the_runs(tmp_path, monkeypatch, capsys):
    """The runs are cut at t = 40 (far from stationary, about 600 at this beta): the parameters reach them, and the
    claims, which need the stationary state, fail; the command says so and exits 3."""
    from meanfield.validation.studies import noise_transition

    monkeypatch.setitem(noise_transition.QUICK, "ratios", (0.7, 1.2))
    monkeypatch.setitem(noise_transition.QUICK, "resolution", 32)
    monkeypatch.setitem(noise_transition.QUICK, "max_time", 40.0)
    calls = _spy(monkeypatch, noise_transition, "circle_density")
    assert _validate("noise-transition", tmp_path, "--beta", "2", "--seed", "3") == 3
    ds = _written(tmp_path / "noise_transition.nc")
    assert ds["beta"].values.tolist() == [2.0] and ds.attrs["seed"] == 3
    assert ds["nu_sharp"].values.tolist() == [linear_noise_threshold(Model("sa", 2.0, 0.0, 2))]
    assert [call["args"][2] for call in calls] == [3] * 4                 # every start drawn with the seed given
    assert "FAIL" in capsys.readouterr().out
    # beyond the range the claims hold in (mode 2 unstable at 0.7 nu_#), refused before anything runs
    assert _validate("noise-transition", tmp_path / "refused", "--beta", "1,9") == 2
    assert "--beta must be in (0, 4.644]" in capsys.readouterr().err
    assert not (tmp_path / "refused" / "noise_transition.nc").exists()


# ----------------------------------------------------------------------------------------------- staircase
def test_staircase_parameters_reach_the_runs(tmp_path, monkeypatch, capsys):
    from meanfield.validation.studies import staircase

    monkeypatch.setitem(staircase.QUICK, "t_final", 1e6)              # every merge of these runs is before 3e5
    assert _validate("staircase", tmp_path, "--beta", "4,6", "--n", "512", "--seed", "3", "--geometry", "circle") == 0
    ds = _written(tmp_path / "staircase.nc")
    assert ds["beta"].values.tolist() == [4.0, 4.0, 6.0, 6.0]
    assert ds["source"].values.tolist() == ["lagrangian", "particles"] * 2         # no S^2 case
    assert (ds.attrs["seed"], ds.attrs["preset_tokens"], ds.attrs["geometry"]) == (3, "512", "circle")
    for beta in (4, 6):
        particles = _written(tmp_path / f"particles-beta{beta}.nc")
        assert (particles.attrs["beta"], particles.attrs["seed"], particles.sizes["particle"]) == (beta, 3, 512)
        assert _written(tmp_path / f"lagrangian-beta{beta}.nc").attrs["seed"] == 3
    assert not list(tmp_path.glob("sphere-*.nc"))
    assert "claims: 5 of 5 hold" in capsys.readouterr().out
    assert _validate("staircase", tmp_path, "--beta", "4") == 2              # the merge law is fitted across beta
    assert "at least two values" in capsys.readouterr().err
    assert _validate("staircase", tmp_path, "--n", "256") == 2               # chance clumps would count as clusters
    assert "--n must be an integer >= 500" in capsys.readouterr().err
    assert _validate("staircase", tmp_path, "--geometry", "zonal") == 2
    assert "--geometry must be one of circle, sphere" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------- cluster-events
def test_cluster_events_parameters_reach_the_runs(tmp_path, monkeypatch, capsys):
    from meanfield.validation.studies import cluster_events

    monkeypatch.setitem(cluster_events.QUICK, "sphere_t_final", 1e5)
    assert _validate("cluster-events", tmp_path, "--geometry", "sphere", "--beta", "3", "--seed", "2") == 0
    ds = _written(tmp_path / "cluster_events.nc")
    assert ds["case"].values.tolist() == ["sphere staircase"] and ds.attrs["geometry"] == "sphere"
    run = _written(tmp_path / "sphere-staircase-lagrangian.nc")
    assert (run.attrs["beta"], run.attrs["seed"]) == (3.0, 2)
    assert (ds.attrs["preset_sphere_beta"], ds.attrs["preset_seed"]) == ("3.0", "2")
    # one scheme on S^2: the run's own three claims; the comparisons of schemes need the circle's cases
    printed = capsys.readouterr().out
    assert "claims: 3 of 3 hold" in printed and "Three bumps" not in printed
    assert math.isfinite(float(ds["formation_time"].values[0])) and int(ds["final_count"].values[0]) >= 1


def test_the_parameters_keep_the_claims_of_the_default_runs():
    """Tables of the default runs: the full cluster-events study keeps its strict frame count (the full sizes at
    beta = 9, seed 0); other parameters get the one the quick study uses."""
    from meanfield.validation.studies.cluster_events import staircase_check, study_preset

    table = xr.Dataset(attrs={"quick": 0, "staircase_disagreements": 0, "staircase_disagreements_strict": 1})
    assert not staircase_check(table).passed                                        # the strict count
    assert study_preset(False)["strict_frames"] == 1
    assert study_preset(False, seed=1)["strict_frames"] == study_preset(False, beta=8)["strict_frames"] == 0
    table.attrs["strict_frames"] = 0
    assert staircase_check(table).passed
    with pytest.raises(Exception, match="n must be an integer >= 2"):
        study_preset(True, n=1)
    carried = study_preset(True, beta=3, n=64, seed=2, geometry="sphere")        # every parameter reaches the preset
    assert (carried["staircase_beta"], carried["sphere_beta"], carried["tokens"], carried["seed"],
            carried["geometries"]) == (3.0, 3.0, 64, 2, ("sphere",))
