"""One notation for the noise thresholds (MATH.md §9): ``nu_#`` the linear threshold (key ``nu_sharp``), ``nu_sn`` a
fold, ``nu_c`` the first-order point; "critical noise" names none of them."""

import json
import re
from pathlib import Path


from meanfield.cli import main
from meanfield.model import Model
from meanfield.theory import linear_noise_threshold

ROOT = Path(__file__).resolve().parents[2]


def test_plain_theory_calls_the_linear_threshold_nu_sharp(capsys):
    assert main(["theory", "--beta", "4", "--dim", "3"]) == 0
    text = capsys.readouterr().out
    assert "nu_# = 0.18766779" in text and "nu_c" not in text
    assert main(["theory", "--beta", "4", "--dim", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["nu_sharp"] == linear_noise_threshold(Model("sa", 4.0, 0.0, 3)) and "nu_c" not in result


def test_the_branch_keys_are_the_names_math_md_gives(capsys):
    """theory --branch reports nu_sharp, nu_sn and nu_c, and MATH.md §9's notation paragraph names each key."""
    assert main(["theory", "--branch", "--attention", "usa", "--beta", "4", "--dim", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["nu_sharp"] < result["nu_c"] < result["nu_sn"]                  # MATH.md §9: nu_# < nu_c < nu_sn
    notation = re.search(r"\*Notation\*(.*?)\n\n", (ROOT / "docs" / "MATH.md").read_text(), re.S).group(1)
    for symbol, key in (("nu_#", "nu_sharp"), ("nu_sn", "nu_sn"), ("nu_c", "nu_c")):
        assert f"`{symbol}`" in notation and f"`{key}`" in notation and key in result


def test_no_text_calls_a_threshold_the_critical_noise():
    found = [f"{path.relative_to(ROOT)}:{number}" for folder in ("meanfield", "solvers", "validation", "docs", "tests")
             for path in sorted((ROOT / folder).rglob("*")) if path.suffix in (".py", ".md")
             and "_build" not in path.parts and "generated" not in path.parts and path.name != "test_notation.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if "critical noise" in line.lower()]
    found += [f"README.md:{number}" for number, line in enumerate((ROOT / "README.md").read_text().splitlines(), 1)
              if "critical noise" in line.lower()]
    assert found == []


def test_tricritical_refuses_sa_in_one_line(capsys):
    assert main(["theory", "--tricritical", "--attention", "sa", "--dim", "3"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "SA is supercritical at every beta and has no tricritical point" in error[0]
    assert main(["theory", "--tricritical", "--dim", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["attention"] == "usa"


def test_the_former_name_warns_and_gives_the_linear_threshold():
    import warnings

    import meanfield

    model = Model("usa", 4.0, 0.0, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert meanfield.critical_noise(model) == linear_noise_threshold(model)
    assert [warning.category for warning in caught] == [DeprecationWarning]
    assert "linear_noise_threshold" in str(caught[0].message)
