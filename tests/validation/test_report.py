"""``meanfield validate report`` (validation/report.py) over a small registry: the page, its images, exit codes."""

import re
import shutil
import subprocess
import sys
import types
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

from meanfield.cli import main
from meanfield.validation import report
from meanfield.validation.claims import above, below, close, equal, fraction
from meanfield.validation.studies.growth_rates import growth_claims
from meanfield.validation.registry import STUDIES, Study


def _tiny_run(module, quick, out):
    fig = Figure(figsize=(2, 1.5))
    fig.subplots().plot([0, 1], [1, 0 if quick else 2])
    Path(out).mkdir(parents=True, exist_ok=True)
    fig.savefig(Path(out) / "tiny.png", dpi=50)
    return xr.Dataset({"error": ((), 1e-9), "slope": ((), -0.52)})


def _broken_run(module, quick, out):
    raise ValueError("the solver\ndiverged")


def _bench_run(module, quick, out):
    return "   N  time_us\n 256     3.25\n"


def _claims(ds):
    return [below("error of the tiny study", ds.error, 1e-6, source="round-off: a test's tiny error"),
            close("slope n^-1/2", -0.5, ds.slope, 0.1, source="standard error: a test's 0.1")]


def _table(module, ds):
    return f"error {float(ds.error):.1e} <small>"


#: The small registry's study module, ``meanfield.validation.tiny`` while the tests run (:func:`tiny_module`):
#: a study names its claims function, which is looked up on its module.
TINY = types.ModuleType("meanfield.validation.tiny")
TINY.tiny_claims = _claims

SMALL = {study.name: study for study in (
    Study("tiny", "tiny", "A tiny study & its figure.", "quick", "folder", "tiny-study", figures=("tiny.png",),
          run=_tiny_run, table=_table, wrote=lambda out, result: f"wrote {out}", claims="tiny_claims"),
    Study("broken", "tiny", "A study that raises.", "quick", "folder", "broken-study", run=_broken_run,
          table=_table, claims="tiny_claims"),
    Study("bench-tiny", "tiny", "A benchmark table.", "quick", None, None, None, (), run=_bench_run,
          table=lambda module, text: text.rstrip("\n")),
)}


@pytest.fixture(scope="module", autouse=True)
def tiny_module():
    """:data:`TINY` importable as ``meanfield.validation.tiny`` (the module :data:`SMALL`'s studies load)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, TINY.__name__, TINY)
        yield TINY


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.ids, self.cells, self.scripts, self.pres, self.rows = [], [], [], 0, [], []
        self._cell = self._pre = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "td":
            self._cell = [attrs.get("class", ""), ""]
        if tag == "tr":
            self.rows.append([])
        self.scripts += tag in ("script", "link")
        self._pre = "" if tag == "pre" else self._pre

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data
        if self._pre is not None:
            self._pre += data

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.cells.append(tuple(self._cell))
            self.rows[-1].append(tuple(self._cell))
            self._cell = None
        if tag == "pre":
            self.pres.append(self._pre)
            self._pre = None


def parse(path) -> Page:
    page = Page()
    page.feed(Path(path).read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def small_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    lines = []
    outcomes = report.run_report(root, quick=True, studies=SMALL, echo=lines.append)
    return root, outcomes, lines


def test_page_lists_every_study_with_claims_images_and_tables(small_report):
    root, outcomes, lines = small_report
    page = parse(root / "index.html")
    assert set(SMALL) <= set(page.ids)
    assert page.scripts == 0                                      # self-contained: no script, no style sheet
    assert page.images == ["tiny/tiny.png"]
    for src in page.images:                                       # every linked image exists and decodes
        pixels = matplotlib.image.imread(root / src)
        assert pixels.shape[0] == 75 and pixels.shape[1] == 100 and np.ptp(pixels) > 0
    results = [text for kind, text in page.cells if kind in ("pass", "fail")]
    assert results.count("pass") == 2 and "fail" not in results   # the tiny study's two claims
    claims = [row for row in page.rows if len(row) == 6 and row[-1][0] in ("pass", "fail")]
    assert [[text for _, text in row] for row in claims] == [   # claim, theory, measured, tolerance, source, result
        ["error of the tiny study", "0", "1e-09", "< 1e-06", "round-off: a test's tiny error", "pass"],
        ["slope n^-1/2", "-0.5", "-0.52", "± 0.1", "standard error: a test's 0.1", "pass"]]
    assert claims[0][4][0] == "source" and "<th>tolerance source</th>" in root.joinpath("index.html").read_text()
    assert ("error", "ERROR") in page.cells                       # the summary row of the broken study
    assert "ValueError: the solver diverged" in root.joinpath("index.html").read_text()
    assert " 256     3.25" in page.pres[-1] and "error 1.0e-09 <small>" in page.pres   # escaped, verbatim
    assert "meanfield validate tiny --quick --out-dir " + str(root / "tiny") in root.joinpath("index.html").read_text()
    assert lines[0] == "[1/3] tiny ..." and lines[3].startswith("[2/3] broken: error: ValueError")
    assert report.exit_code(outcomes) == 3 and report.exit_code(outcomes[:1]) == 0


def test_chromium_renders_every_image(small_report, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium on this machine (apt-get install chromium): headless rendering not checked")
    root, _, _ = small_report
    text = root.joinpath("index.html").read_text(encoding="utf-8")
    # a copy of the page whose images write their decoded width into the DOM (the report itself has no script)
    marked = text.replace("<img ", "<img onload=\"this.setAttribute('data-width', this.naturalWidth)\" ")
    probe = root / "probe.html"
    probe.write_text(marked, encoding="utf-8")
    result = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                             f"--user-data-dir={tmp_path}", "--dump-dom", probe.as_uri()],
                            capture_output=True, text=True, timeout=60)
    widths = re.findall(r'data-width="(\d+)"', result.stdout)
    assert len(widths) == text.count("<img ") == 1 and all(int(w) == 100 for w in widths), result.stderr[-500:]


def test_claims_can_fail():
    why = {"source": "theory: a test"}
    assert not below("x", 2.0, 1.0, **why).passed and below("x", 0.5, 1.0, **why).passed
    assert not above("x", 0.5, 1.0, "2", **why).passed and not close("x", -0.5, -0.7, 0.1, **why).passed
    assert close("x", 2.0, 2.0001, 1e-4, relative=True, **why).passed
    assert not close("x", 2.0, 2.001, 1e-4, relative=True, **why).passed
    assert equal("k", [3, 4], [3, 4], **why).passed and not equal("k", [3, 4], [3, 5], **why).passed
    assert not equal("k", 4, 5, **why).passed
    assert fraction("all", [True, True], **why).passed and not fraction("all", [True, False], **why).passed
    assert not fraction("all", [], **why).passed


def test_growth_claims_read_the_table():
    table = xr.Dataset({"relative_error": ("case", [1e-7, 3e-3]), "tolerance": ("case", [4e-7, 4e-7])})
    assert [check.passed for check in growth_claims(table)] == [False]
    assert [check.passed for check in growth_claims(table.isel(case=[0]))] == [True]


def test_registry_names_every_command():
    assert list(STUDIES) == ["growth-circle", "mean-field", "mean-field-sphere", "cluster-formation", "metastability",
                             "schemes", "noise-transition", "staircase", "cluster-events", "formation-count", "fv-staircase", "gaussian", "long-context", "normalization",
                             "castin-figures", "causal", "phase-transitions", "depth", "bench-circle", "bench-particles", "bench-sphere",
                             "bench-staircase", "bench-startup", "bench-frames", "bench-cluster-schemes", "bench-clusters", "bench-causal",
                             "bench-signals", "bench-layers"]
    assert all(study.benchmark == study.name.startswith("bench-") for study in STUDIES.values())
    quick = STUDIES["mean-field"].preset(True)
    assert quick["seeds"] == 16 and STUDIES["mean-field"].preset(False)["seeds"] == 8


def test_cli_report_exit_status_and_bad_out(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(report, "STUDIES", {"tiny": SMALL["tiny"]})
    assert main(["validate", "report", "--quick", "--out", str(tmp_path / "ok")]) == 0
    captured = capsys.readouterr()
    assert "[1/1] tiny: 2/2 claims pass" in captured.err and "index.html" in captured.out
    monkeypatch.setattr(report, "STUDIES", SMALL)
    assert main(["validate", "report", "--quick", "--out", str(tmp_path / "bad")]) == 3
    capsys.readouterr()
    existing = tmp_path / "file"
    existing.write_text("x")
    for args in (["--out", str(existing)], ["--out", str(existing / "below")], []):
        assert main(["validate", "report", "--quick", *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--out" in err and "Traceback" not in err


def test_validate_help_lists_every_registered_study(capsys):
    assert main(["validate", "--help"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(STUDIES) | {"report"}


def test_studies_run_side_by_side_give_the_claims_of_one_process(tmp_path):
    """Two registered studies in two worker processes: the same claims and measured values as run one after the other
    here (their tables hold wall times), and the outcomes in the registry's order (a field lost across the process boundary, or a study
    run with the other's settings, would differ)."""
    from meanfield.validation.registry import STUDIES

    chosen = {name: STUDIES[name] for name in ("long-context", "growth-circle")}
    lines = []
    apart = report.run_report(tmp_path / "apart", quick=True, studies=chosen, echo=lines.append, workers=2)
    together = report.run_report(tmp_path / "here", quick=True, studies=chosen, echo=lambda line: None, workers=1)
    assert any("2 studies in 2 processes" in line for line in lines)
    assert [o.study.name for o in apart] == list(chosen)
    for a, b in zip(apart, together):
        assert a.error is None and b.error is None and a.passed
        assert a.text and a.text.splitlines()[0] == b.text.splitlines()[0]
        assert [(c.claim, c.measured, c.passed) for c in a.checks] == [(c.claim, c.measured, c.passed) for c in b.checks]
    assert (tmp_path / "apart" / "index.html").exists()
