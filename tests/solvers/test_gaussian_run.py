"""The Gaussian moment ODEs run in the package's run loop (meanfield.solvers.steppers.steppers.ScipyStepper): the same steps,
event roots and dense output as scipy's solve_ivp, and the attrs contract of every run."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from meanfield import gaussian
from meanfield.gaussian_cases import gaussian_case
from meanfield.solvers.runs import gaussian_run
from meanfield.solvers.runs.gaussian_run import solve_case


@pytest.mark.parametrize("case, attention, save_every", [("identity", "softmax", None), ("identity", "l2", 0.05),
                                                         ("random", "sinkhorn", None), ("random", "softmax", 0.1)])
def test_the_run_loop_takes_exactly_the_steps_of_solve_ivp(case, attention, save_every):
    data = gaussian_case(case, 3, 4)
    run = gaussian.solve(data["mean"], data["cov"], V=data["V"], Q=data["Q"], K=data["K"], t_final=0.8,
                         attention=attention, save_every=save_every)
    alpha, sigma, heads, attention = gaussian.validated_problem(data["mean"], data["cov"], data["V"], data["Q"],
                                                                data["K"], attention, False)
    y0 = np.concatenate([alpha, gaussian.initial_factor(sigma).ravel()])
    event = gaussian.blowup_event(3, gaussian.BLOWUP_FACTOR * float(np.linalg.norm(sigma, 2)))
    sol = solve_ivp(gaussian.factor_rhs(3, heads, attention, 1.0), (0.0, 0.8), y0, method="DOP853",
                    rtol=gaussian.RTOL, atol=gaussian.ATOL, events=[event], dense_output=True)
    times = gaussian_run.save_times(sol, save_every)
    states = sol.y if save_every is None else sol.sol(times)
    assert np.array_equal(run.time.values, times)
    assert np.array_equal(run["mean"].values, states[:3].T)
    assert run.attrs["steps"] == len(sol.t) - 1
    softmax_identity = case == "identity" and attention == "softmax"
    assert (run.attrs["stop_reason"] == "blowup") == (sol.status == 1) == softmax_identity
    if softmax_identity:  # Sigma_0 (I - 2 t Sigma_0)^{-1}: blow-up at t* = 1/2 (largest eigenvalue 1)
        assert run.attrs["blowup_time"] == pytest.approx(0.5, rel=1e-6)
        assert run.attrs["t_reached"] == sol.t[-1] < 0.5


def test_every_gaussian_run_has_the_attrs_contract():
    data = gaussian_case("random", 2, 1)
    run = gaussian.solve(data["mean"], data["cov"], V=data["V"], Q=data["Q"], K=data["K"], t_final=0.3)
    for name in ("command", "package_version", "stop_reason", "wall_time", "t_reached", "steps"):
        assert name in run.attrs, name
    assert run.attrs["command"].startswith("meanfield.gaussian.solve(") and "command_reproduces_run" not in run.attrs
    assert run.attrs["stop_reason"] == "completed" and run.attrs["t_reached"] == 0.3 and run.attrs["wall_time"] > 0
    case = solve_case("random", 2, 1, t_final=0.3, attention="sinkhorn", eps=0.5, save_every=0.1, scaled=True)
    assert case.attrs["command"] == ("meanfield gaussian --attention sinkhorn --dim 2 --case random --seed 1 "
                                     "--t-final 0.3 --scaled --sinkhorn-eps 0.5 --save-every 0.1")
    assert case.attrs["case"] == "random" and case.attrs["seed"] == 1
    assert np.array_equal(case["V"].values, data["V"])


def test_ctrl_c_keeps_the_steps_computed_so_far(monkeypatch):
    from meanfield.solvers.steppers.steppers import ScipyStepper
    step, calls = ScipyStepper.step, []

    def interrupted(self, u, t, h_max):
        calls.append(t)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return step(self, u, t, h_max)

    monkeypatch.setattr(ScipyStepper, "step", interrupted)
    data = gaussian_case("identity", 2, 0)
    run = gaussian.solve(data["mean"], data["cov"], V=data["V"], Q=data["Q"], K=data["K"], t_final=0.4)
    assert run.attrs["stop_reason"].startswith("interrupted at t = ") and run.sizes["time"] == 4
    assert run.attrs["blowup_time"] == "none" and run.attrs["t_reached"] == run.time.values[-1] < 0.4
