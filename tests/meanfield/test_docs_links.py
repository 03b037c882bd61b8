"""``docs/check_links.py`` (run by ``make docs`` after the build) finds what a built site would break on."""

import importlib.util
import pathlib

import pytest

CHECKER = pathlib.Path(__file__).resolve().parents[2] / "docs" / "check_links.py"


@pytest.fixture(scope="module")
def check_links():
    spec = importlib.util.spec_from_file_location("check_links", CHECKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site(tmp_path, index_body: str) -> pathlib.Path:
    (tmp_path / "api").mkdir()
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "a.png").write_bytes(b"\x89PNG")
    (tmp_path / "api" / "page.html").write_text('<html><body><h1 id="solve">solve</h1></body></html>')
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "macros.html").write_text("<link href=\"{{ pathto('x.css', 1) }}\">")  # a template
    (tmp_path / "index.html").write_text(f"<html><body>{index_body}</body></html>")
    return tmp_path


def test_a_sound_site_passes(check_links, tmp_path):
    site = _site(tmp_path, '<a href="api/page.html#solve">x</a><img src="_images/a.png">'
                           '<a href="https://example.org/missing">external</a><a href="#top">self</a><p id="top"></p>')
    assert check_links.broken_references(site) == []
    assert check_links.main([str(site)]) == 0


@pytest.mark.parametrize("body, why", [
    ('<a href="api/other.html">x</a>', "no such file"),
    ('<img src="_images/b.png">', "no such file"),
    ('<a href="api/page.html#run">x</a>', "no anchor #run"),
    ('<a href="#nowhere">x</a>', "no anchor #nowhere"),
])
def test_a_broken_link_or_missing_image_is_named_and_fails_the_build(check_links, tmp_path, body, why):
    site = _site(tmp_path, body)
    (broken,) = check_links.broken_references(site)
    assert broken.startswith("index.html:") and broken.endswith(f"({why})")
    assert check_links.main([str(site)]) == 1
