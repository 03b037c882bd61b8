"""Hostile inputs, round two (issue 35): paths, numbers, ranges, silent wrong answers, warnings, signals at import.

Each cause is walked over every entry point it can reach (every path option, every number option, both ends of
each range of ``theory``); each refusal is one line ``meanfield: error: ...`` on stderr with exit status 2, nothing
written.  (Hangs and npz headers: tests/meanfield/test_hostile_guards.py; run files: test_hostile_runfiles.py.)
"""

import json
import math
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import numpy as np
import pytest

import meanfield
from tests.meanfield.error_lines import one_error_line
from meanfield.cli import cli, main
from meanfield.errors import InputError
from meanfield.app.json_output import strict_json
from meanfield.limits import RANGES
from meanfield.noise_schedule import NoiseSchedule
from meanfield.app.option_types import INTEGER, NUMBER




def _commands(group=cli, prefix=()):
    """Every leaf command of the command line, with its words."""
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, prefix + (name,))
        else:
            yield prefix + (name,), command


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("runs") / "small.nc"
    assert main(["solve", "circle", "--beta", "2", "--t-final", "0.01", "--resolution", "16", "--no-progress",
                 "--out", str(path)]) == 0
    return path


def _base(words, run) -> list[str]:
    """The required arguments of a command, small and fast (the option under test is added after them)."""
    first = words[0]
    if first == "solve":
        return ["--beta", "2", "--t-final", "0.01", "--no-progress"]
    return {"particles": ["--n", "4", "--t-final", "0.01", "--no-progress"], "rerun": [str(run)],
            "gaussian": ["--t-final", "0.01"], "plot": [str(run)], "clusters": [str(run)],
            "compare": [str(run), str(run)], "validate": ["--quick"]}.get(first, [])


# -- ~user paths -----------------------------------------------------------------------------------------------
def test_every_path_option_refuses_a_home_folder_of_no_user(small_run, tmp_path, monkeypatch, capsys):
    """``Path.expanduser`` raises RuntimeError for ``~nouser``: every output path option says so in one line."""
    monkeypatch.chdir(tmp_path)
    walked = 0
    for words, command in _commands():
        for param in command.params:
            if not (isinstance(param.type, click.Path) and param.param_type_name == "option"):
                continue
            name = param.opts[0]
            suffix = ".gif" if "movie" in name else ".png" if words[0] in ("plot", "compare") else \
                ".html" if words[-1] == "report" else ".nc"
            value = "~nouser_meanfield/x" + ("" if not param.type.file_okay else suffix)       # a folder: no suffix
            assert main([*words, *_base(words, small_run), name, value]) == 2, (words, name)
            line = one_error_line(capsys)
            assert "names no user of this system" in line and name in line, line
            walked += 1
    assert walked >= 25 and not any(tmp_path.iterdir())


@pytest.mark.parametrize("command", [["solve", "circle", "--beta", "2", "--t-final", "0.01"],
                                     ["particles", "--n", "4", "--t-final", "0.01"], ["gaussian", "--t-final", "0.01"]])
def test_an_output_file_name_ending_in_a_slash_is_refused(command, tmp_path, capsys):
    """``run.nc/`` names a folder: it was written to ``run.nc`` quietly."""
    assert main([*command, "--out", str(tmp_path / "run.nc") + "/"]) == 2
    assert "ends in a slash" in one_error_line(capsys)
    assert not any(tmp_path.iterdir())


# -- numbers: ASCII decimals only ----------------------------------------------------------------------------------
def test_every_number_option_reads_ascii_decimals_only(small_run, tmp_path, monkeypatch, capsys):
    """``1_0`` (Python's float reads 10) and Arabic-Indic digits (12) are refused by every number option."""
    monkeypatch.chdir(tmp_path)
    walked = 0
    for words, command in _commands():
        for param in command.params:
            if param.type not in (NUMBER, INTEGER) or param.param_type_name != "option":
                continue
            name = param.opts[0]
            base = _base(words, small_run)
            if name in base:                                   # the option under test replaces the base's value
                index = base.index(name)
                base = base[:index] + base[index + 2:]
            for text in ("1_0", "\u0661\u0662"):
                assert main([*words, *base, name, text]) == 2, (words, name, text)
                line = one_error_line(capsys)
                assert name in line and "ASCII digits" in line, line
            walked += 1
    assert walked >= 60 and not any(tmp_path.iterdir())


def test_spec_numbers_and_schedules_read_ascii_decimals_only():
    for spec in ("perturbed:1_0e-3", "perturbed:\u0661e-3", "vonmises:1_0"):
        with pytest.raises(InputError, match="must be a number"):
            meanfield.solve("circle", beta=2.0, init=spec, t_final=0.01, resolution=16, progress=False)
    with pytest.raises(InputError, match="exactly two dots"):
        NoiseSchedule.parse("ramp:1>2@0...1")                         # was read as @0..0.1
    with pytest.raises(InputError, match="is not a number"):
        NoiseSchedule.parse("ramp:1>2@0..1_0")
    assert NoiseSchedule.parse("ramp:1>2@0..1").spec == "ramp:1>2@0..1"


@pytest.mark.parametrize("value", [True, np.True_, "1_0"])
def test_a_bool_or_a_loose_string_is_not_a_beta(value):
    """``beta=True`` ran with beta = 1."""
    with pytest.raises(InputError, match=r"^beta must be a number"):
        meanfield.solve("circle", beta=value, t_final=0.01, resolution=16, progress=False)
    with pytest.raises(InputError, match=r"^beta must be a number"):
        meanfield.simulate_particles(dim=2, n=4, beta=value, t_final=0.01, progress=False)


# -- arrays and callables ---------------------------------------------------------------------------------------
def test_a_masked_array_is_refused_and_a_callable_cannot_change_the_grid():
    masked = np.ma.masked_array(np.ones(16), mask=[True] * 8 + [False] * 8)
    with pytest.raises(InputError, match="a masked array"):
        meanfield.solve("circle", beta=2.0, init=masked, t_final=0.01, resolution=16, progress=False)

    def writes_into_its_argument(theta):
        theta[:] = 0.0                                 # zeroed the run's saved theta when given the grid itself
        return np.ones_like(theta)

    run = meanfield.solve("circle", beta=2.0, init=writes_into_its_argument, t_final=0.01, resolution=16,
                          progress=False)
    np.testing.assert_array_equal(run["theta"].values, 2 * np.pi * np.arange(16) / 16)


# -- strict JSON ---------------------------------------------------------------------------------------------------
def _strict(text: str):
    def refuse(token):
        raise AssertionError(f"non-JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def test_strict_json_writes_null_with_its_reason():
    document = _strict(strict_json({"rates": [1.0, -math.inf, math.nan], "t": np.float64(math.inf), "k": np.int64(3)}))
    assert document["rates"] == [1.0, None, None] and document["t"] is None and document["k"] == 3
    assert document["not_finite"]["paths"] == ["rates[1]", "rates[2]", "t"]


def test_theory_json_is_strict_at_both_ends_of_every_range(capsys):
    """Both ends of each range of every ``theory`` number option: exit 0 with strict JSON (finite values or null
    with its reason) or one refusal line; never a traceback, a warning or a NaN token."""
    command = dict(_commands())[("theory",)]
    options = [p.opts[0] for p in command.params if p.opts[0] in RANGES]
    walked = 0
    for option in options:
        limits = RANGES[option]
        low = limits.low if limits.low_closed else (5e-324 if limits.low == 0 else math.nextafter(limits.low, 1e308))
        high = (limits.high if limits.high_closed else math.nextafter(limits.high, -1e308)) \
            if math.isfinite(limits.high) else 1e300
        for value in (low, high):
            text = str(int(value)) if limits.integer else repr(value)
            if limits.integer and value > 10 ** 4:
                continue                                # --modes 1e6: a million rows, checked below at 10^4
            args = ["theory", "--json", option, text] + ([] if option == "--beta" else ["--beta", "2"])
            if option in ("--r0", "--alpha", "--mix-switch", "--n"):
                args += ["--normalization", {"--alpha": "ngpt", "--mix-switch": "mix"}.get(option, "peri")]
            if option == "--alibi":
                args += ["--mask", "causal"]
            status = main(args)
            captured = capsys.readouterr()
            if status == 0:
                assert captured.err == "", (args, captured.err)
                _strict(captured.out)
            else:
                assert status == 2 and len(captured.err.strip().splitlines()) == 1, (args, captured.err)
            walked += 1
    assert walked >= 16


def test_narrowed_ranges_refuse_in_one_line(capsys):
    """What broke inside the old ranges is refused by the new ones (limits.RANGES and the commands' own)."""
    cases = [(["theory", "--beta", "9", "--nu", "1e308", "--json"], "--nu must be a finite number in [0, 1e+100]"),
             (["theory", "--beta", "2", "--normalization", "peri", "--r0", "1e-320"], "--r0 must be"),
             (["theory", "--branch", "--attention", "sa", "--beta", "1e9"], "--branch takes --beta <= 14"),
             (["theory", "--branch", "--attention", "usa", "--beta", "700"], "--branch takes --beta <= 30"),
             (["theory", "--tricritical", "--dim", "64"], "--tricritical takes --dim in [2, 30]"),
             (["gaussian", "--dim", "4096", "--t-final", "0.01"], "--dim must be an integer in [1, 1024]")]
    for args, start in cases:
        assert main(args) == 2, args
        assert start in one_error_line(capsys), args


def test_a_zonal_grid_whose_cells_underflow_is_refused_before_computing(tmp_path, capsys):
    out = tmp_path / "z.nc"
    assert main(["solve", "zonal", "--scheme", "fv", "--dim", "256", "--resolution", "16", "--beta", "1",
                 "--init", "uniform", "--t-final", "0.1", "--no-progress", "--out", str(out)]) == 2
    assert "underflows double precision" in one_error_line(capsys) and not out.exists()


def test_high_dimensional_sphere_areas_are_finite():
    """``math.gamma(d / 2)`` overflows from d = 344 (the area is 5.2e-224 there): past it the lgamma form must follow
    the recursion ``|S^{d+1}| = 2 pi |S^{d-1}| / d`` from the Gamma form's last dimensions (d = 340, 341)."""
    area = meanfield.sphere_area
    assert area(342) == pytest.approx(area(340) * 2 * math.pi / 340, rel=1e-12)
    assert area(344) == pytest.approx(area(340) * (2 * math.pi) ** 2 / (340 * 342), rel=1e-12)
    assert area(345) == pytest.approx(area(341) * (2 * math.pi) ** 2 / (341 * 343), rel=1e-12)
    assert area(455) > 0 and area(456) == 0.0                  # the stated underflow (MATH-free: double precision)


# -- warnings, the default start, the report's commands -------------------------------------------------------------
def test_numpy_warnings_stay_off_the_terminal(tmp_path, capsys):
    """With numpy's default error state (warn; the suite raises), a RuntimeWarning printed before the error line."""
    with np.errstate(all="warn"):
        status = main(["solve", "circle", "--beta", "2", "--init", "vonmises:1e308", "--t-final", "0.1",
                       "--no-progress", "--out", str(tmp_path / "v.nc")])
    assert status == 2
    assert "--init 'vonmises:1e308'" in one_error_line(capsys)
    assert main(["theory", "--beta", "9", "--nu", "1e100", "--modes", "10000", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and _strict(captured.out)["growth_rates"][-1] == pytest.approx(-1e108, rel=1e-6)


def test_the_default_start_fits_a_coarse_spectral_grid():
    """perturbed:1e-3's degree-32 products reach the monitored top of a 64-point grid at EPS^2 = 1e-6: the monitor's
    reference includes them (the run stopped at t = 0.27 for a tail it made itself)."""
    run = meanfield.solve("circle", beta=3.0, resolution=64, t_final=0.5, progress=False)
    assert run.attrs["stop_reason"] == "completed"


def test_the_reports_rerun_commands_are_shell_quoted():
    from meanfield.validation.registry import STUDIES

    folder = "out; rm -rf ~"
    command = STUDIES["staircase"].command(True, folder)
    assert shlex.split(command) == ["meanfield", "validate", "staircase", "--quick", "--out-dir", folder]


# -- signals while the command's modules load -------------------------------------------------------------------
@pytest.mark.parametrize("number, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_modules_load_is_one_line(number, status, tmp_path):
    """Ctrl-C gave a KeyboardInterrupt traceback and SIGTERM killed silently during the 1-3 s of imports."""
    command = Path(sys.executable).parent / "meanfield"
    process = subprocess.Popen([str(command), "solve", "circle", "--beta", "9", "--t-final", "1e4", "--no-progress",
                                "--out", str(tmp_path / "s.nc")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    time.sleep(0.1)
    process.send_signal(number)
    _, err = process.communicate(timeout=60)
    assert process.returncode == status and err == "meanfield: aborted\n", err
    assert not (tmp_path / "s.nc").exists()


def test_sinkhorn_at_the_smallest_epsilon_is_its_small_epsilon_limit(tmp_path, capsys):
    """``c = 2 b / (1 + sqrt(1 + 4 b^2))`` overflowed to c = 0 for ``b ~ 1 / eps`` past 1e150 (the limit is c = 1):
    ``--sinkhorn-eps 1e-300`` ran to completion with a wrong plan."""
    import xarray as xr

    paths = [tmp_path / f"{eps}.nc" for eps in ("1e-300", "1e-12")]
    for eps, path in zip(("1e-300", "1e-12"), paths):
        assert main(["gaussian", "--attention", "sinkhorn", "--sinkhorn-eps", eps, "--t-final", "0.05",
                     "--out", str(path)]) == 0
    capsys.readouterr()
    tiny, small = (xr.load_dataset(path)["covariance"].values for path in paths)
    np.testing.assert_allclose(tiny, small, rtol=0, atol=1e-12)


def test_an_interrupt_inside_a_frame_keeps_the_cluster_table_and_the_frames_in_step():
    """SIGTERM landing after the cluster bookkeeping had recorded a frame's row but before the run loop recorded the
    frame left one row too many: building the run failed (conflicting sizes for 'time', 277 against 276; seen once
    in CI).  A tracker after the bookkeeping interrupts the third frame."""
    from meanfield.solvers.tracking.trackers import Tracker

    class InterruptsAFrame(Tracker):
        def __init__(self):
            self.frames = 0

        def frame(self, scheme, state, record):
            self.frames += 1
            if self.frames == 3:
                raise KeyboardInterrupt
            return {}

    run = meanfield.solve("circle", scheme="fv", beta=9.0, resolution=64, init="perturbed:1e-4", seed=0,
                          t_final=10.0, save_every=1.0, trackers=[InterruptsAFrame()], progress=False)
    assert run.attrs["stop_reason"].startswith("interrupted at t = ")
    assert run.sizes["time"] == run["cluster_id"].sizes["time"] == 3
