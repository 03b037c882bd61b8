"""Progress reporting: tqdm on a terminal, plain lines every 5 % otherwise, nothing when disabled."""

import io

import pytest

from meanfield.app.progress import LineProgress, describe_seconds, progress_bar


class Clock:
    """A hand-driven clock (seconds)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def lines(stream) -> list[str]:
    return stream.getvalue().splitlines()


def test_a_line_at_every_five_percent_and_at_the_end():
    stream, clock = io.StringIO(), Clock()
    with progress_bar(20, unit="chunk", desc="phase diagram", stream=stream, clock=clock) as bar:
        assert isinstance(bar, LineProgress)
        for _ in range(7):
            clock.now += 12 / 7
            bar.update()
    out = lines(stream)
    assert len(out) == 7                                  # 7 of 20 chunks: 5, 10, ..., 35 %; close adds nothing new
    assert out[-1] == "phase diagram: 35% (7/20 chunk) elapsed 12 s, ~22 s left"
    assert out[0].startswith("phase diagram: 5% (1/20 chunk)")


def test_model_time_in_small_steps_logs_twenty_lines_not_thousands():
    stream, clock = io.StringIO(), Clock()
    bar = progress_bar(10.0, desc="run", stream=stream, clock=clock)
    for _ in range(4000):
        clock.now += 0.001
        bar.update(0.0025)
    bar.close()
    out = lines(stream)
    assert len(out) == 16                                  # 25 %, 30 %, ..., 100 %: the first second is quiet
    assert out[0].startswith("run: 25% (t = 2.5/10)") and out[5].startswith("run: 50% (t = 5/10)")
    assert out[-1] == "run: 100% (t = 10/10) elapsed 4 s"


def test_slow_stretches_get_a_heartbeat_line_every_30_s_and_the_end_is_always_logged():
    stream, clock = io.StringIO(), Clock()
    bar = progress_bar(1000, unit="run", desc="study", stream=stream, clock=clock)
    for _ in range(10):          # 0.1 % per update, 10 s apart: no 5 % step, heartbeats at 30, 60, 90 s
        clock.now += 10.0
        bar.update()
    clock.now += 0.5
    bar.update()                 # 0.5 s after the last line: nothing
    assert [line.split(" elapsed")[0] for line in lines(stream)] == [
        "study: 0.3% (3/1000 run)", "study: 0.6% (6/1000 run)", "study: 0.9% (9/1000 run)"]
    bar.close()
    bar.close()                  # idempotent
    assert len(lines(stream)) == 4
    assert lines(stream)[-1] == "study: 1.1% (11/1000 run) elapsed 1 min 40 s, ~2 h 30 min left"


def test_disabled_is_silent_and_a_terminal_gets_tqdm(capsys):
    with progress_bar(5, enabled=False) as bar:
        bar.update(5)
    assert capsys.readouterr().err == ""
    from tqdm.auto import tqdm
    terminal = Terminal()
    bar = progress_bar(5, unit="run", desc="bar", stream=terminal)
    assert isinstance(bar, tqdm)
    bar.update(5)
    bar.close()
    assert "bar" in terminal.getvalue()


def test_an_error_inside_the_block_leaves_only_its_own_message(capsys):
    with pytest.raises(ValueError):
        with progress_bar(100, unit="run", desc="study") as bar:
            bar.update(1)
            raise ValueError("bad input")
    bar.close()
    with progress_bar(100, unit="run", desc="nothing counted"):
        pass
    assert capsys.readouterr().err == ""


def test_not_a_terminal_by_default_logs_to_stderr(capsys):
    with progress_bar(2, unit="run", desc="pytest") as bar:
        bar.update(2)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("pytest: 100% (2/2 run) elapsed")


@pytest.mark.parametrize("seconds, text", [(0.4, "0 s"), (59.4, "59 s"), (185, "3 min 05 s"), (7620, "2 h 07 min")])
def test_durations(seconds, text):
    assert describe_seconds(seconds) == text


def test_a_run_shorter_than_the_quiet_start_writes_only_its_final_line():
    stream, clock = io.StringIO(), Clock()
    with progress_bar(10.0, unit="t", desc="run", stream=stream, clock=clock) as bar:
        for _ in range(80):
            clock.now += 0.005
            bar.update(0.125)
    assert lines(stream) == ["run: 100% (t = 10/10) elapsed 0 s"]
