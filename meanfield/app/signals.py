"""Ctrl-C and SIGTERM on the command line: the run stops, is saved, and the exit status says which.

A batch scheduler ends a job with SIGTERM; a user with Ctrl-C (SIGINT).  Both must stop a run
between two steps with every frame kept, and neither may interrupt the writing of the file (an
exception raised inside netCDF's close can leave xarray's file lock held, and the process hangs).
So, on the command line (:func:`install`, called by :func:`meanfield.cli.main`):

* SIGTERM raises :class:`Terminated`, a ``KeyboardInterrupt``: the run loop
  (:func:`meanfield.solvers.runs.runloop.run`) catches it like Ctrl-C and the run ends with
  ``stop_reason = "interrupted by SIGTERM at t = ..."``;
* in a command that saves one run (``solve``, ``particles``, ``gaussian``, ``demo``: :func:`save_runs_whole`),
  both signals are only remembered, never raised in the middle of a step, a frame or the write: the run
  loop looks between steps (:func:`check`) and stops there as on Ctrl-C, with its state, clock and frames
  in agreement; a signal during the set-up stops the run at its first frame; one during the write waits for
  it (:func:`release`, once the file is written).  The command then exits with the signal's status:
  :data:`EXIT_SIGINT` (130) or :data:`EXIT_SIGTERM` (143), the shell's ``128 + signal number``.

Library use (no :func:`install`) is untouched: Python's own Ctrl-C, nothing held.
"""

from __future__ import annotations

import signal
import threading

EXIT_SIGINT = 128 + signal.SIGINT
EXIT_SIGTERM = 128 + signal.SIGTERM

_installed = False
_holding = False
_held: list[int] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises ``KeyboardInterrupt``."""

    exit_status = EXIT_SIGTERM
    note = " by SIGTERM"


def exit_status_of(interrupt: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    return getattr(interrupt, "exit_status", EXIT_SIGINT)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _terminate(signum, frame):
    raise Terminated()


def _remember(signum, frame):
    _held.append(signum)


def _raising() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)


def install() -> None:
    """Command-line mode: SIGTERM interrupts like Ctrl-C, and runs hold both while they are saved."""
    global _installed
    if _in_main_thread():
        _held.clear()
        _raising()
        _installed = True


def save_runs_whole() -> None:
    """This command writes the run it computes: from now on both signals are only remembered, and its run loop
    stops at the next step boundary (:func:`check`), where the state, the clock and the frames agree."""
    global _holding
    _holding = _installed
    if _holding and _in_main_thread():
        signal.signal(signal.SIGINT, _remember)
        signal.signal(signal.SIGTERM, _remember)


def check() -> None:
    """Called by the run loop between steps: a remembered signal stops the run here (it stays remembered, so
    a second leg stops at once too and the exit status reports it)."""
    if _holding and _held:
        raise Terminated() if signal.SIGTERM in _held else KeyboardInterrupt()


def uninstall() -> None:
    """Back to Python's defaults (after a command; tests call the CLI in-process)."""
    global _installed, _holding
    if _installed and _in_main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _installed = _holding = False
    _held.clear()


def release() -> int | None:
    """The file is written: signals raise again; the exit status of a signal remembered meanwhile, or None."""
    if not (_installed and _in_main_thread()):
        return None
    _raising()
    if not _held:
        return None
    status = EXIT_SIGTERM if signal.SIGTERM in _held else EXIT_SIGINT
    _held.clear()
    return status
