"""Run the Castin et al. moment ODEs (MATH.md §3) through the package's run loop; returns the DESIGN.md Dataset.

What :func:`meanfield.gaussian.solve` and ``meanfield gaussian`` call (the name ``meanfield.gaussian.solve`` is
wired to :func:`solve` here by ``meanfield/__init__.py``, so the model module :mod:`meanfield.gaussian` imports no
solver).  ``(alpha, L)``, ``Sigma = L L^T``, is integrated by scipy's DOP853 inside the one run loop
(:func:`meanfield.solvers.runs.runloop.run` with :class:`meanfield.solvers.steppers.steppers.ScipyStepper`, step for step what
``scipy.integrate.solve_ivp`` does; every step is saved by :class:`meanfield.solvers.tracking.trackers.StepRecorder`), and the
Dataset is built by :func:`meanfield.app.storage.build_run_dataset` with the attributes of every run
(:func:`meanfield.solvers.records.run_record.run_attrs`).  The blow-up event, its extrapolated time and the
classification of a stop are those of :mod:`meanfield.gaussian`.  :func:`solve_case` runs a named case
(:mod:`meanfield.gaussian_cases`) as ``meanfield gaussian`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.integrate import OdeSolution

from meanfield.defaults import GAUSSIAN_DEFAULTS
from meanfield.gaussian import (ATOL, BLOWUP_FACTOR, FINITE_TIME_GAP, RTOL, Head, blowup_event, covariance_norm,
                                extrapolate_blowup, factor_rhs, initial_factor, moment_frames, positive_number,
                                validated_problem)
from meanfield.gaussian_cases import case_command, gaussian_case
from meanfield.app.storage import build_run_dataset

from ..records.run_record import loop_attrs, run_attrs
from ..schemes.contract import Scheme
from .runloop import run
from ..steppers.steppers import ScipyStepper
from ..tracking.trackers import StepRecorder


def classify_stop(status: int, message, sol, dim: int):
    """``(stop_reason, blowup_time or None)`` of a run that ended with the integrator's ``status``
    (``0`` reached ``t_final``, ``1`` the blow-up event, ``-1`` failed with ``message``)."""
    if status == -1:
        return f"failed: {message}", None
    if status == 0:
        return "completed", None
    norms = [covariance_norm(y, dim) for y in sol.y.T]
    estimate = extrapolate_blowup(sol.t, norms)
    if math.isfinite(estimate) and estimate - sol.t[-1] <= FINITE_TIME_GAP * estimate:
        return "blowup", float(estimate)
    return "threshold", None


def save_times(sol, save_every):
    """The saved times: every accepted step (``save_every`` ``None``), else a regular grid ending at the last step."""
    if save_every is None:
        return sol.t
    times = np.arange(0.0, sol.t[-1], save_every)
    return times if math.isclose(times[-1], sol.t[-1]) else np.append(times, sol.t[-1])


def solve(mean, cov, *, V, Q, K, t_final, attention: str = GAUSSIAN_DEFAULTS["attention"],
          save_every=GAUSSIAN_DEFAULTS["save_every"], scaled: bool = GAUSSIAN_DEFAULTS["scaled"],
          eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]) -> xr.Dataset:
    """Integrate the moment ODEs of MATH.md §3 from ``N(mean, cov)`` up to ``t_final``.

    Parameters
    ----------
    mean : array, shape (d,)
        The initial mean.
    cov : array, shape (d, d)
        The initial covariance (symmetric positive semi-definite).
    V, Q, K : array or list of arrays
        ``V`` (d x d), ``Q``, ``K`` (k x d, k may differ between heads): one matrix each, or lists of per-head
        matrices (multi-head: fields summed).
    t_final : float
        The end time, > 0.
    attention : {"softmax", "l2", "sinkhorn"}
        The kernel; ``sinkhorn`` with entropic parameter ``eps`` (log-kernel ``<Qx, Ky> / eps``).
    save_every : float or None
        Output spacing (``None``: every accepted step).
    scaled : bool
        Divide the logits by ``sqrt(k)``, as in transformers.
    eps : float
        The entropic parameter of ``sinkhorn``, > 0.

    Returns
    -------
    xarray.Dataset
        ``mean(time, i)``, ``covariance(time, i, j)`` and attrs ``stop_reason`` (``completed``, ``blowup``,
        ``threshold`` or ``failed: ...``) and ``blowup_time`` (estimated blow-up time, or ``"none"``).
    """
    alpha, sigma, heads, attention = validated_problem(mean, cov, V, Q, K, attention, scaled)
    t_final = positive_number("t_final", t_final)
    eps = positive_number("eps", eps)
    if save_every is not None:
        save_every = positive_number("save_every", save_every)
    dim = alpha.size
    y0 = np.concatenate([alpha, initial_factor(sigma).ravel()])
    norm0 = float(np.linalg.norm(sigma, 2))
    events = [blowup_event(dim, BLOWUP_FACTOR * norm0)] if norm0 > 0 else []
    moments = GaussianMoments(dim, heads, attention, eps)
    stepper = ScipyStepper(moments, "DOP853", 0.0, y0, t_final, RTOL, ATOL, events)
    recorder = StepRecorder()
    record = run(moments, stepper, y0, t_final, t_final, trackers=[recorder])
    sol = _Solution(np.array(recorder.times), np.vstack(recorder.states).T,
                    OdeSolution(np.array(recorder.times), recorder.interpolants) if recorder.interpolants else None)
    if record.stop_reason.startswith("interrupted"):  # Ctrl-C: what was computed is kept
        stop_reason, blowup_time = record.stop_reason, None
    else:
        stop_reason, blowup_time = classify_stop(stepper.status, stepper.message, sol, dim)
    times = save_times(sol, save_every)
    states = sol.y if save_every is None else sol.sol(times)
    settings = {"attention": attention, "dim": dim, "t_final": t_final, "save_every": save_every,
                "scaled": bool(scaled), "eps": eps if attention == "sinkhorn" else None}
    model = {"attention": attention, "scaled": bool(scaled), "t_final": t_final,
             "eps": eps if attention == "sinkhorn" else "none", "dim": dim, "heads": len(heads)}
    command = ("meanfield.gaussian.solve(mean, cov, V=V, Q=Q, K=K, "
               + ", ".join(f"{key}={value!r}" for key, value in settings.items() if value is not None) + ")")
    attrs = run_attrs(model, "gaussian", command, **dict(loop_attrs(record), stop_reason=stop_reason,
                                                         t_reached=float(sol.t[-1])),
                      blowup_time=blowup_time, stepper="scipy solve_ivp DOP853 on (alpha, L), Sigma = L L^T",
                      rtol=RTOL, atol=ATOL, blowup_factor=BLOWUP_FACTOR)
    return moments_dataset(np.asarray(times), states, moments, attrs)


@dataclass
class _Solution:
    """What ``solve_ivp`` would return: the step times ``t``, the states ``y`` (columns) and the dense output."""

    t: np.ndarray
    y: np.ndarray
    sol: OdeSolution | None


class GaussianMoments(Scheme):
    """The moment ODEs as a scheme of the run loop (the contract of ``meanfield.solvers.schemes.contract``): the state is
    ``(alpha, L)`` flattened; no validity check of its own (the integrator reports failures)."""

    name = geometry = "gaussian"
    linear = None
    state_scale = 1.0

    def __init__(self, dim: int, heads: list[Head], attention: str, eps: float):
        self.dim, self._rhs = dim, factor_rhs(dim, heads, attention, eps)

    def rhs(self, y: np.ndarray, t: float) -> np.ndarray:
        return self._rhs(t, y)

    def stable_dt(self, cfl: float) -> float:
        return math.inf

    def validity(self, y: np.ndarray, t: float) -> None:
        return None

    def frame(self, y: np.ndarray) -> dict:
        """Nothing: the run saves every step (``StepRecorder``), and the Dataset is built from those."""
        return {}

    def dims(self) -> dict:
        return {"mean": ("i",), "covariance": ("i", "j")}

    def coords(self) -> dict:
        return {"i": np.arange(self.dim), "j": np.arange(self.dim)}


def moments_dataset(times: np.ndarray, states: np.ndarray, moments: GaussianMoments, attrs: dict) -> xr.Dataset:
    """The run's Dataset: ``mean(time, i)`` and ``covariance(time, i, j)`` = ``L L^T`` (symmetrised) of ``states``,
    on the dims and coordinates of ``moments``."""
    frames = moment_frames(states.T, moments.dim)
    return build_run_dataset(times, frames, moments.dims(), moments.coords(), attrs)


def solve_case(case: str = GAUSSIAN_DEFAULTS["case"], dim: int = GAUSSIAN_DEFAULTS["dim"],
               seed=GAUSSIAN_DEFAULTS["seed"], *, t_final, attention: str = GAUSSIAN_DEFAULTS["attention"],
               save_every=GAUSSIAN_DEFAULTS["save_every"], scaled: bool = GAUSSIAN_DEFAULTS["scaled"],
               eps: float = GAUSSIAN_DEFAULTS["sinkhorn_eps"]):
    """The moment ODEs (:func:`meanfield.gaussian.solve`) of a named case, as ``meanfield gaussian`` runs it.

    Parameters
    ----------
    case : {"identity", "random"}
        ``identity``: ``V = Q = K = I``, zero mean, a random covariance of largest eigenvalue 1; ``random``: random
        matrices, mean and covariance (module docstring).
    dim : int
        The dimension ``d`` of the tokens.
    seed : int
        Seed of the case's random draws.
    t_final : float
        The end time, > 0.
    attention : {"softmax", "l2", "sinkhorn"}
        The kernel (as :func:`solve`).
    save_every : float or None
        Output spacing (``None``: every accepted step).
    scaled : bool
        Divide the logits by ``sqrt(k)``.
    eps : float
        The entropic parameter of ``sinkhorn``, > 0.

    Returns
    -------
    xarray.Dataset
        The run (``mean``, ``covariance``) with ``V``, ``Q``, ``K`` as variables and ``case``, ``seed`` and the
        ``command`` that repeats it as attributes.
    """
    data = gaussian_case(case, dim, seed)
    dataset = solve(data["mean"], data["cov"], V=data["V"], Q=data["Q"], K=data["K"], t_final=t_final,
                    attention=attention, save_every=save_every, scaled=scaled, eps=eps)
    dataset.attrs.update(case=case, seed=seed,
                         command=case_command(case, dim, seed, t_final, attention, save_every, scaled, eps))
    for name in ("V", "Q", "K"):
        dataset[name] = (("row", "column"), data[name])
    return dataset
