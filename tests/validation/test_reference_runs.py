"""The reference-run record (meanfield.validation.reference_runs): the same runs give the same record; a changed
value, attribute or variable is named."""

import json

import numpy as np

from meanfield.validation.reference_runs import CASES, compare, main, record

QUICK = ["circle-spectral-rk4", "particles-circle", "restart-circle-spectral"]


def test_the_same_runs_record_the_same_bits_and_a_change_is_named(tmp_path):
    first, second = record(tmp_path / "a.npz", QUICK), record(tmp_path / "b.npz", QUICK)
    assert compare(first, second) == [] and main(["compare", str(first), str(second)]) == 0
    with np.load(second) as saved:
        arrays = {key: saved[key] for key in saved.files}
    arrays["particles-circle/positions"] = arrays["particles-circle/positions"] + 1e-16   # one ulp or so
    attributes = json.loads(str(arrays["__attributes__"]))
    attributes["circle-spectral-rk4"].append(["steps", "99"])
    arrays["__attributes__"] = np.asarray(json.dumps(attributes))
    del arrays["restart-circle-spectral/energy"]
    np.savez(tmp_path / "c.npz", **arrays)
    assert compare(first, tmp_path / "c.npz") == ["circle-spectral-rk4: attributes or dims differ",
                                                   "particles-circle/positions: values differ",
                                                   "restart-circle-spectral/energy: only in before"]
    assert main(["compare", str(first), str(tmp_path / "c.npz")]) == 1


def test_every_case_has_a_name_the_command_line_takes():
    assert len(CASES) >= 20 and all(name == name.strip() and "," not in name for name in CASES)
