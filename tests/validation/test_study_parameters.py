"""``meanfield validate NAME --beta ... --n ... --seeds ... --init ...``: the parameters reach the study's runs (read
back from the file it wrote), the claims are printed and a failing one exits 3 (validation/registry.py, harness.py)."""

import pytest
import xarray as xr

from meanfield.cli import main
from meanfield.validation import claims as claims_module
from meanfield.validation.registry import STUDIES
from meanfield.validation.studies import mean_field

MEAN_FIELD = ["validate", "mean-field", "--quick", "--beta", "2", "--n", "128,256,512", "--seeds", "3",
              "--init", "vonmises:3@1"]


def _written(tmp_path, stem: str) -> xr.Dataset:
    with xr.open_dataset(tmp_path / f"{stem}.nc") as ds:
        return ds.load()


def test_mean_field_parameters_reach_the_runs(tmp_path, capsys):
    assert main(MEAN_FIELD + ["--out-dir", str(tmp_path)]) == 0
    ds = _written(tmp_path, "mean_field")
    assert ds["beta"].values.tolist() == [2.0]
    assert ds["n"].values.tolist() == [128, 256, 512]
    assert ds.sizes["seed"] == 3
    assert ds.attrs["init"] == "vonmises:3@1"
    # the quadrature constant is measured for the init given (0.0256 for the default one)
    assert ds.attrs["quadrature_constant"] == pytest.approx(mean_field.quadrature_constant("vonmises:3@1"), rel=0)
    assert ds.attrs["quadrature_constant"] > 0.1
    printed = capsys.readouterr().out
    assert "claims: 3 of 3 hold" in printed and "source: measured convergence" in printed


def test_a_failing_claim_exits_3(tmp_path, monkeypatch, capsys):
    """The i.i.d. slope claimed against n^-1/4 instead of n^-1/2 fails; the command says FAIL and exits 3."""
    honest = claims_module.within_errors

    def broken(claim, theory, *args, **kwargs):
        return honest(claim, -0.25 if theory == -0.5 else theory, *args, **kwargs)

    monkeypatch.setattr(mean_field, "within_errors", broken)
    code = main(["validate", "mean-field", "--quick", "--beta", "1", "--n", "128,256,512,1024,2048", "--seeds", "16",
                 "--out-dir", str(tmp_path)])
    printed = capsys.readouterr().out
    assert code == 3
    assert "FAIL" in printed and "1 FAIL" in printed


def test_parameters_are_checked_before_anything_runs(tmp_path, capsys):
    assert main(["validate", "mean-field", "--quick", "--n", "100,200", "--out-dir", str(tmp_path)]) == 2
    assert "--n must be powers of two" in capsys.readouterr().err
    assert main(["validate", "mean-field", "--quick", "--seeds", "0", "--out-dir", str(tmp_path)]) == 2
    assert "'--seeds': 0 is not in the range 2<=x" in capsys.readouterr().err
    assert not (tmp_path / "mean_field.nc").exists()


def test_every_parameter_names_a_keyword_of_its_runner():
    """A parameter the runner does not take would be a TypeError at run time: each is a keyword of ``run_study``."""
    import inspect

    for study in STUDIES.values():
        if not study.parameters:
            continue
        module = study.load()
        runner = module.run_all if hasattr(module, "run_all") else module.run_study
        keywords = inspect.signature(runner).parameters
        assert all(parameter.argument in keywords for parameter in study.parameters), study.name


def test_the_rerun_command_carries_the_parameters():
    command = STUDIES["mean-field"].command(True, "out dir", {"beta": "2,4", "init": "vonmises:3@1"})
    assert command == "meanfield validate mean-field --quick --beta 2,4 --init vonmises:3@1 --out-dir 'out dir'"


def test_every_study_takes_parameters_and_a_test_runs_it_with_them():
    """No study is left fixed: each has parameters, and one of the parameter tests runs its command with them."""
    from pathlib import Path

    here = Path(__file__).parent
    sources = "".join(path.read_text() for path in here.glob("test_study_parameters*.py"))
    for study in STUDIES.values():
        if study.benchmark:
            continue
        assert study.parameters, study.name
        assert f'"validate", "{study.name}"' in sources or f'_validate("{study.name}"' in sources, study.name
