"""Progress of long runs and studies: a bar on a terminal, plain log lines otherwise.

:func:`progress_bar` returns an object with ``update(n=1)``, ``close()`` and context-manager
support:

* stderr is a terminal: a :mod:`tqdm` bar (``tqdm.auto``, removed when done);
* stderr is not a terminal (a batch job, a pipe, a log file, a notebook): one plain line such as
  ``phase diagram: 35% (7/20 chunk) elapsed 12 s, ~22 s left`` each time the count crosses a
  multiple of :data:`LOG_STEP` of the total, and at the end.  Between those steps an update writes
  a line only when :data:`HEARTBEAT` seconds have passed since the last one, so a slow stretch
  still shows life without flooding the log.  Nothing but the final line is written during the
  first :data:`QUIET_START` seconds, so a run that takes less does not fill a log with 20 lines;
* ``enabled=False``: nothing at all.

Leaving a ``with progress_bar(...)`` block by an exception writes no final line, so a command
that fails still prints only its one-line error.
"""

from __future__ import annotations

import math
import sys
import time

#: A line every time the count crosses another multiple of this fraction of the total.
LOG_STEP = 0.05
#: Seconds without a line after which the next update writes one anyway.
HEARTBEAT = 30.0
#: Seconds after the start before the first line (short runs only write their final line).
QUIET_START = 1.0


def describe_seconds(seconds: float) -> str:
    """``"12 s"``, ``"3 min 05 s"``, ``"2 h 07 min"``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def _number(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) and not float(value).is_integer() else f"{int(value)}"


def _percent(fraction: float) -> str:
    """``"35%"``; one decimal below 10 % (``"0.3%"``), so the first heartbeat lines are not all ``0%``."""
    percent = 100 * fraction
    return f"{percent:.1f}%" if percent < 9.95 and abs(percent - round(percent)) > 0.05 else f"{percent:.0f}%"


class _Silent:
    """The disabled progress bar: every call does nothing."""

    n = 0

    def update(self, n: float = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LineProgress(_Silent):
    """Plain progress lines to ``stream`` (see the module docstring); ``clock`` returns seconds."""

    def __init__(self, total: float, unit: str = "t", desc: str | None = None, stream=None, clock=time.monotonic):
        self.total, self.unit, self.desc = float(total), unit, desc
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.n = 0.0
        self.start = clock()
        self.last_line = self.start
        self.last_step = 0
        self.closed = False
        self.written_at = None

    def _step(self) -> int:
        """How many multiples of :data:`LOG_STEP` of the total the count has reached."""
        if self.total <= 0:
            return int(round(1 / LOG_STEP))
        return int(math.floor(self.n / self.total / LOG_STEP + 1e-9))

    def line(self) -> str:
        """The progress line for the present count."""
        fraction = 1.0 if self.total <= 0 else min(self.n / self.total, 1.0)
        elapsed = self.clock() - self.start
        count = (f"{self.unit} = {_number(self.n)}/{_number(self.total)}" if self.unit == "t"
                 else f"{_number(self.n)}/{_number(self.total)} {self.unit}")
        text = f"{self.desc or 'progress'}: {_percent(fraction)} ({count}) elapsed {describe_seconds(elapsed)}"
        if 0 < fraction < 1:
            text += f", ~{describe_seconds(elapsed * (1 - fraction) / fraction)} left"
        return text

    def _write(self) -> None:
        print(self.line(), file=self.stream, flush=True)
        self.last_line = self.clock()
        self.written_at = self.n

    def update(self, n: float = 1) -> None:
        if self.closed:
            return
        self.n += n
        step = self._step()
        now = self.clock()
        if now - self.start < QUIET_START:
            return
        if step > self.last_step:
            self.last_step = step
            self._write()
        elif now - self.last_line >= HEARTBEAT:
            self._write()

    def close(self) -> None:
        """Write the final line (unless nothing was counted or the last line showed this count); idempotent."""
        if self.closed:
            return
        if self.n > 0 and self.written_at != self.n:
            self._write()
        self.closed = True

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:                   # the error's own message is the last word: no progress line after it
            self.closed = True


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):     # no isatty, or a closed stream
        return False


def progress_bar(total: float, *, enabled: bool = True, unit: str = "t", desc: str | None = None,
                 bar_format: str | None = None, stream=None, clock=time.monotonic):
    """A progress reporter over ``total`` units (see the module docstring).

    ``unit``: what is counted (``"t"``: model time, shown as ``t = 3.5/10``; otherwise ``7/20 chunk``);
    ``desc``: the name at the start of the bar or line; ``bar_format``: tqdm's, on a terminal only.
    ``stream`` (default ``sys.stderr``) and ``clock`` exist for tests.
    """
    if not enabled:
        return _Silent()
    stream = sys.stderr if stream is None else stream
    if _is_terminal(stream):
        from tqdm.auto import tqdm
        return tqdm(total=total, desc=desc, unit=unit, leave=False, bar_format=bar_format, file=stream)
    return LineProgress(total, unit=unit, desc=desc, stream=stream, clock=clock)
