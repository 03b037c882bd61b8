"""What the hostile-input tests ask of a refusal: exactly one line ``meanfield: error: ...`` on stderr."""


def one_error_line(capsys) -> str:
    """The single stderr line of a refused command (asserted to be one line starting ``meanfield: error: ``)."""
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("meanfield: error: ")
    return lines[0]
