"""The metastable staircase (MATH.md §5): collapse of coincident nodes, steps that follow the slow
dynamics, log saving, merge bookkeeping, and the K-point ODE as theory."""

import math

import numpy as np
import pytest
from scipy.integrate import quad

from meanfield.cluster_dynamics import cluster_history, plateau_estimate, point_energy
from meanfield.errors import InputError
from meanfield.solvers.tracking.clusters import DEFAULT_COLLAPSE_TOL, frame_clusters
from meanfield.solvers.runs.particle_run import simulate
from meanfield.solvers.runs.runloop import log_save_times
from meanfield.solvers.runs.solve import solve
from meanfield.solvers.steppers.steppers import make_stepper


def pair_merge_time(d0, m_a, m_b, beta, attention, merge_distance=1e-3):
    """Time for two weighted points at angle d0 to come within merge_distance (MATH.md §5, d = 2)."""
    def closing(d):
        k = math.exp(beta * math.cos(d)) * math.sin(d)
        if attention == "usa":
            return (m_a + m_b) * k
        return k * (m_a / (m_b * math.exp(beta) + m_a * math.exp(beta * math.cos(d)))
                    + m_b / (m_a * math.exp(beta) + m_b * math.exp(beta * math.cos(d))))
    value, _ = quad(lambda d: 1.0 / closing(d), merge_distance, d0, epsabs=0, epsrel=1e-13, limit=200)
    return value


@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_two_weighted_points_merge_when_their_ode_says(attention):
    beta, d0, m_a, m_b = 3.0, 2.0, 0.3, 0.7
    exact = pair_merge_time(d0, m_a, m_b, beta, attention)
    theory = cluster_history([0.0, d0], [m_a, m_b], beta, attention)
    assert theory.merge_times[0] == pytest.approx(exact, rel=1e-8)
    assert theory.count_after == [1] and theory.mass_a[0] + theory.mass_b[0] == pytest.approx(1.0)
    positions = np.array([[1.0, 0.0], [math.cos(d0), math.sin(d0)]])
    run = simulate(dim=2, n=2, beta=beta, attention=attention, positions=positions, weights=[m_a, m_b],
                   t_final=1e6, save_log=4, rtol=1e-10)
    assert run.attrs["stop_reason"] == "completed"
    # the run's merge is the cluster observable's (MATH.md §10): the points' field becomes one hill, before the ODE
    # brings them within 1e-3 rad; the same observable on the ODE's dense output gives the same time
    observed = theory.observed_merges()
    assert [after for _, after in observed] == [1] and observed[0][0] < exact
    assert run["merge_time"].values[0] == pytest.approx(observed[0][0], rel=1e-7)
    assert run.sizes["event"] == 1 and run["event_kind"].values[0] == "merge"
    assert sorted(run[["merge_mass_a", "merge_mass_b"]].to_array().values.ravel()) == pytest.approx([m_a, m_b])
    assert run["cluster_count"].values[0] == 2 and run["cluster_count"].values[-1] == 1
    final = run["positions"].values[-1]
    assert np.array_equal(final[0], final[1])                  # collapsed: one node carries both tokens
    assert run["energy"].values[-1] == pytest.approx(1 / (2 * beta), rel=1e-12)   # one Dirac: exp(-beta) E


def test_dense_output_is_fourth_order_and_lands_on_the_step_ends():
    from meanfield.solvers.schemes.contract import Scheme

    class Growth(Scheme):
        linear, state_scale = None, 1.0

        def rhs(self, u, t):
            return u.copy()

        def stable_dt(self, cfl):
            return 10.0
    for name, order in (("dopri5", 4), ("rk4", 3)):
        errors = []
        for h in (0.2, 0.1):
            stepper = make_stepper(name, Growth(), rtol=1.0, atol=1.0)
            stepper.next_step = h
            u = np.array([1.0])
            new, t = stepper.step(u, 0.0, h)
            assert np.array_equal(stepper.dense(0.0), u)
            assert stepper.dense(1.0)[0] == pytest.approx(new[0], rel=1e-14)
            errors.append(abs(stepper.dense(0.5)[0] - math.exp(0.5 * t)))
        assert math.log2(errors[0] / errors[1]) > order + 0.5


def test_log_save_times():
    times = log_save_times(1000.0, 2)
    assert times[0] == pytest.approx(0.01) and times[-1] == 1000.0
    assert np.allclose(np.diff(np.log10(times)), 0.5)
    assert log_save_times(50.0, 1)[-2:].tolist() == pytest.approx([10.0, 50.0])


@pytest.fixture(scope="module")
def circle_staircase():
    """The issue's run: beta 9, 512 Lagrangian nodes, perturbed:1e-4, to t = 1e9 (about 1.5 s)."""
    return solve("circle", scheme="lagrangian", beta=9.0, resolution=512, init="perturbed:1e-4", seed=0,
                 t_final=1e9, save_log=20)


def test_circle_staircase_to_one_cluster_matches_the_k_point_ode(circle_staircase):
    run = circle_staircase
    assert run.attrs["stop_reason"] == "completed" and float(run.time[-1]) == 1e9
    assert run["cluster_count"].values[-1] == 1 and run.sizes["merge"] == 3
    assert run["clusters_after_merge"].values.tolist() == [3, 2, 1]
    start = int(np.argmin(np.abs(run.time.values - 200.0)))
    centres, masses = frame_clusters(run, start)
    assert centres.shape[0] == 4 and masses.sum() == pytest.approx(1.0, abs=1e-12)
    theory = cluster_history(centres, masses, 9.0, t_start=float(run.time[start]))
    observed = theory.observed_merges()
    assert [after for _, after in observed] == [3, 2, 1]
    measured = run["merge_time"].values
    assert np.allclose(measured, [time for time, _ in observed], rtol=1e-3)
    assert np.allclose(measured, [time for time, _ in observed], rtol=1e-6)
    assert np.all(measured < np.array(theory.merge_times))       # one hill before the points meet
    assert measured[-1] > 5e7                                      # the antipodal pair: ~ exp(2 beta)


def test_circle_staircase_conserves_mass_and_climbs_the_energy_staircase(circle_staircase):
    run = circle_staircase
    assert np.max(np.abs(run["mass"].values - 1.0)) < 1e-13
    energy = run["energy"].values
    assert np.min(np.diff(energy)) >= -1e-12 * energy.max()
    assert np.all(np.isfinite(run["positions"].values))
    assert np.allclose(np.linalg.norm(run["positions"].values, axis=-1), 1.0, atol=1e-14)
    # on every plateau (frames after t = 100, outside merges) the energy is the point-cluster energy
    late = run.time.values > 100.0
    assert np.allclose(energy[late], run["cluster_energy"].values[late], rtol=1e-9)
    assert energy[-1] == pytest.approx(1 / 18, rel=1e-12)               # one Dirac mass at beta = 9
    first = int(np.argmax(run.time.values >= 200.0))
    assert energy[first] == pytest.approx(point_energy(*frame_clusters(run, first), 9.0), rel=1e-10)


def test_collapse_changes_nothing_before_the_first_merge():
    common = dict(scheme="lagrangian", beta=9.0, resolution=256, init="perturbed:1e-4", seed=3, t_final=30.0,
                  save_every=1.0)
    plain, collapsing = solve("circle", collapse_tol=0.0, **common), solve("circle", **common)
    for name in ("density", "node_theta", "energy", "mode_amplitude"):
        assert np.array_equal(plain[name].values, collapsing[name].values), name
    assert plain.attrs["steps"] == collapsing.attrs["steps"]
    assert collapsing.attrs["collapse_tol_used"] == DEFAULT_COLLAPSE_TOL and plain.attrs["collapse_tol_used"] == 0


def test_sphere_staircase_matches_the_k_point_ode():
    run = solve("sphere", scheme="lagrangian", beta=4.0, resolution=10, init="perturbed:1e-3", seed=1,
                t_final=1e7, save_log=10)
    assert run.attrs["stop_reason"] == "completed"
    assert np.max(np.abs(run["mass"].values - 1.0)) < 1e-13
    energy = run["energy"].values
    assert np.min(np.diff(energy)) >= -1e-12 * energy.max()
    assert np.allclose(np.linalg.norm(run["positions"].values, axis=-1), 1.0, atol=1e-13)
    assert run["cluster_count"].values[-1] == 1 and run.sizes["merge"] >= 1
    # the K-point ODE from the first frame after formation where every cluster is tight
    start = int(np.argmax(run.time.values >= 60.0))
    centres, masses = frame_clusters(run, start)
    later = run["merge_time"].values[run["merge_time"].values > float(run.time[start])]
    theory = cluster_history(centres, masses, 4.0, t_start=float(run.time[start]))
    observed = [time for time, _ in theory.observed_merges()]
    assert len(observed) == later.size
    assert np.allclose(later, observed, rtol=1e-3)


def test_particles_collapse_in_any_dimension_with_general_matrices(rng):
    """Tokens merged to round-off follow the same trajectories as the uncollapsed run (Q, K, V general)."""
    dim, n = 3, 48
    Q = np.eye(dim) + 0.2 * rng.standard_normal((dim, dim))
    common = dict(dim=dim, n=n, beta=4.0, init="uniform", seed=2, t_final=60.0, save_every=20.0, Q=Q, K=np.eye(dim),
                  V=np.eye(dim), rtol=1e-10)
    plain, collapsing = simulate(collapse_tol=0.0, **common), simulate(**common)
    final = collapsing["positions"].values[-1]
    assert np.unique(final.round(12), axis=0).shape[0] < n           # tokens did merge
    assert np.max(np.abs(final - plain["positions"].values[-1])) < 1e-7
    assert collapsing["weights"].values.sum() == pytest.approx(1.0)


def test_plateau_estimate_and_antipodal_pairs():
    assert plateau_estimate([0.0, 1.0, 3.0], 5.0) == pytest.approx(math.exp(5.0 * (1 - math.cos(1.0))))
    waiting = cluster_history([0.0, 2.5], [0.5, 0.5], 3.0, t_final=30.0)      # merges at t = 67
    assert waiting.merge_times == [] and waiting.t_end == pytest.approx(30.0) and len(waiting.masses) == 2


def test_collapse_and_log_saving_refuse_bad_values():
    with pytest.raises(InputError, match="collapse_tol"):
        simulate(n=8, beta=1.0, t_final=1.0, nu=0.1, collapse_tol=1e-13)
    with pytest.raises(InputError, match="save_log"):
        solve("circle", scheme="lagrangian", beta=4.0, resolution=64, t_final=1.0, save_log=0)


def test_massless_nodes_merge_without_nan():
    from meanfield.solvers.tracking.clusters import NodeCollapse
    points = np.array([[1.0, 0.0, 0.0], [1.0, 1e-15, 0.0], [0.0, 1.0, 0.0]])
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    merged, weights = NodeCollapse(3, DEFAULT_COLLAPSE_TOL).collapse_points(points, np.array([0.0, 0.0, 1.0]))
    assert merged.shape == (2, 3) and np.all(np.isfinite(merged)) and sorted(weights.tolist()) == [0.0, 1.0]
