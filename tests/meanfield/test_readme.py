"""README.md is the landing page (issue 38, item 6): at most 200 lines, the two commands first, every relative link
and image a file of the repository, and every ``meanfield ...`` command of its code blocks run here, exit status 0,
writing the files it names.  ``make demo`` and ``make test`` are the only commands not run: they are what CI runs."""

import re
import shlex
from pathlib import Path

import pytest

from meanfield.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
NOT_RUN = ("make demo", "make test")                    # skipped by name: CI runs them itself
OUTPUT_FLAGS = ("--out", "-o", "--output", "--movie", "--out-dir")
FILE_NAME = re.compile(r"[\w./-]+\.[A-Za-z0-9]+")


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _blocks() -> list[tuple[str, list[str]]]:
    """``(heading above, commands)`` for every fenced code block; a line ending in a backslash continues."""
    blocks, heading, inside, commands, pending = [], "top", False, [], ""
    for line in _text().splitlines():
        if line.startswith("```"):
            if inside:
                blocks.append((heading, [" ".join(command.split()) for command in commands if command.strip()]))
            inside, commands = not inside, []
        elif inside and line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
        elif inside:
            commands, pending = [*commands, pending + line], ""
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    return blocks


def _commands() -> list[tuple[str, list[str]]]:
    """The blocks that hold ``meanfield`` commands, with those commands (their comments included)."""
    return [(heading, [c for c in commands if c.startswith("meanfield ")]) for heading, commands in _blocks()
            if any(c.startswith("meanfield ") for c in commands)]


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_is_a_landing_page_of_at_most_200_lines():
    assert len(_text().splitlines()) <= 200


def test_readme_starts_with_the_two_commands():
    lines = _text().splitlines()
    assert lines[0] == "# meanfield" and lines[1] == "" and lines[2] == "```"
    assert lines[3].startswith("make demo    # sets up .venv, installs meanfield")
    assert lines[4].startswith("make test    # sets up the same .venv") and lines[5] == "```"
    assert "Both need only Python 3.11+ and pip" in lines[7]


def test_every_relative_link_and_image_of_readme_resolves_in_the_repository():
    links = re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", _text())
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", _text())
    assert len(images) == 1 and images[0].endswith(".png")                          # one picture
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(relative) >= 8                                                      # the docs pages and the picture
    for link in relative:
        path, _, anchor = link.partition("#")
        target = (ROOT / path).resolve()
        assert target.is_relative_to(ROOT) and target.exists(), link
        if anchor:
            headings = re.findall(r"^#+ (.*)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(heading) for heading in headings}, link


def test_every_command_of_readme_is_either_run_here_or_one_of_the_two_ci_runs():
    commands = [command for _, block in _blocks() for command in block]
    others = [command for command in commands if not command.startswith("meanfield ")]
    assert [command.split("#")[0].split() for command in others] == [name.split() for name in NOT_RUN]
    assert len(_commands()) == 3                                                   # one block per job


def _outputs(command: str) -> list[str]:
    """The files a README command says it writes: its output flags, and the files its comment says ``writes``."""
    words = shlex.split(command, comments=True)
    named = [words[i + 1] for i, word in enumerate(words[:-1]) if word in OUTPUT_FLAGS]
    comment = command.partition("#")[2]
    said = FILE_NAME.findall(comment.partition("writes")[2]) if "writes" in comment else []
    return named + said


@pytest.mark.parametrize("heading, commands", _commands(), ids=[heading for heading, _ in _commands()])
def test_every_meanfield_command_in_readme_runs_and_writes_what_it_names(heading, commands, tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for command in commands:
        status = main(shlex.split(command, comments=True)[1:])
        assert status == 0, f"{command}: exit {status}\n{capsys.readouterr().err[-2000:]}"
        for name in _outputs(command):
            assert (tmp_path / name).exists(), f"{command}: no {name}"
