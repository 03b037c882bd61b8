"""The ``meanfield`` command's Ctrl-C and SIGTERM while its modules load (imported first by ``meanfield/__init__``).

Nothing is computed or open yet, so one line and the signal's exit status (130, 143) rather than a
``KeyboardInterrupt`` traceback or a silent death; :mod:`meanfield.app.signals` takes over once the modules have loaded.
Library use is untouched: the handlers go in only when this process is the ``meanfield`` console command.
"""

from __future__ import annotations

import os
import signal
import sys
import threading


def _stop_while_importing(number, frame):  # pragma: no cover - exercised in a subprocess
    os.write(2, b"meanfield: aborted\n")
    os._exit(128 + number)


def is_console_command() -> bool:
    """Whether this process is the ``meanfield`` console command (not a Python session calling the package)."""
    return os.path.basename((getattr(sys, "argv", None) or [""])[0]) == "meanfield"


def guard() -> None:
    """Install :func:`_stop_while_importing` for SIGINT and SIGTERM when this process is the ``meanfield`` command."""
    if not is_console_command() or threading.current_thread() is not threading.main_thread():
        return
    for number in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(number) in (signal.default_int_handler, signal.SIG_DFL):
            signal.signal(number, _stop_while_importing)


guard()
