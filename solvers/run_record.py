"""The attributes every run records (DESIGN.md "Data contract"), built in one place for the PDE, particle, causal
and Gaussian drivers (:mod:`meanfield.solvers.solve`, :mod:`meanfield.solvers.particle_run`,
:mod:`meanfield.solvers.gaussian_run`).

A run's attributes are the settings that re-run it, then what every run says of itself (``geometry``,
``package_version``, the reproducing ``command``, ``stop_reason``, ``t_reached``, ``wall_time``, ``steps``,
``rejected_steps``), then what its driver and its scheme add (the clock it started from, thread counts, the
transform backend, ...), which may also refine a common one (the Gaussian driver classifies its own stop).
"""

from __future__ import annotations

from meanfield.storage import package_version


def run_attrs(settings: dict, record, geometry: str, command: str, **specific) -> dict:
    """The attributes of a run: ``settings``, the common ones read off the run loop's ``record``
    (:class:`meanfield.solvers.runloop.RunRecord`), then ``specific`` (module docstring)."""
    attrs = dict(settings, geometry=geometry, package_version=package_version(), command=command,
                 stop_reason=record.stop_reason, t_reached=record.t_reached, wall_time=record.wall_time,
                 steps=record.steps, rejected_steps=record.rejected_steps)
    attrs.update(specific)
    return attrs


def restart_attrs(t_start: float, restart: str, override: str) -> dict:
    """Where a continued run started (``t_start``), how (``restart``: ``exact``, ``remap`` or ``none``) and which
    recorded settings it was told to change (``override``; :mod:`meanfield.solvers.continuation`)."""
    return {"t_start": t_start, "restart": restart, "override": override}
