"""Hardmax attention (``beta = inf``) in R^d, integrated exactly (meanfield/hardmax.py, docs/MATH.md section 12),
against the statements of Alcalde–Geshkovski–Ruiz-Balet ("Attention's forward pass and Frank–Wolfe", 2025):
positive semidefinite ``Q^T K``: hull vertices stay, every other token runs on a straight line to the vertex of its
dominance cell (the cells as ``compute_cell_map`` of borjanG/2025-transformers-frank-wolfe/cells.py draws them);
negative definite: contraction to the origin at rate 2; finite beta: the departure time grows as ``e^{beta g}``."""

import numpy as np
import pytest
from matplotlib.path import Path
from scipy.spatial import ConvexHull

from meanfield.hardmax import HardmaxError, hardmax_run, hardmax_trajectory, softmax_trajectory


def reference_sample_vertices(k, seed):
    """The vertices as cells.py's ``sample_vertices`` draws them with ``equal_norm=True, enforce_bijection=True``:
    ``k`` angles uniform on the unit circle, redrawn until all are hull vertices (seeded here, no plotting)."""
    rng = np.random.default_rng(seed)
    for _ in range(500):
        theta = rng.uniform(0, 2 * np.pi, size=k)
        v = np.c_[np.cos(theta), np.sin(theta)]
        hull = ConvexHull(v)
        if len(hull.vertices) == k:
            return v, hull
    raise RuntimeError("no bijective hull")


def reference_compute_cell_map(grid, basis, inside):
    """The rule of cells.py's ``compute_cell_map``, written here: each point goes to the vertex of largest inner
    product with it, -1 outside the hull."""
    cell_map = np.argmax(grid @ basis.T, axis=1)
    cell_map[~inside] = -1
    return cell_map


@pytest.fixture
def polygon_tokens():
    """Seeded: the reference's hull vertices ``K`` (7, on the unit circle) and 40 tokens inside their hull."""
    v, hull = reference_sample_vertices(7, seed=42)
    corners = v[hull.vertices]
    rng = np.random.default_rng(4)
    inner = rng.dirichlet(np.ones(len(corners)), size=40) @ corners
    return corners, inner


@pytest.mark.parametrize("t_final", [0.5, 3.0, 30.0])
def test_psd_vertices_stay_and_the_others_run_straight_to_their_cells_vertex(polygon_tokens, t_final):
    corners, inner = polygon_tokens
    tokens = np.vstack([corners, inner])
    hull = ConvexHull(tokens)
    assert sorted(hull.vertices) == list(range(len(corners)))
    times = np.linspace(0.0, t_final, 7)
    positions, events = hardmax_trajectory(tokens, np.eye(2), times)
    assert events == []                                          # no argmax set ever changes
    assert np.array_equal(positions[:, :len(corners)], np.broadcast_to(corners, positions[:, :7].shape))
    cells = reference_compute_cell_map(inner, corners, Path(corners).contains_points(inner))
    assert (cells >= 0).all()
    target = corners[cells]
    line = target + (inner - target) * np.exp(-times)[:, None, None]
    assert np.abs(positions[:, len(corners):] - line).max() < 1e-14 * max(1.0, t_final)


def test_a_psd_q_k_pair_gives_the_same_cells_in_the_metric_of_a(polygon_tokens):
    """``Q = K = M``: ``A = M^T M``; the cells are ``compute_cell_map`` of the tokens against ``A``-weighted vertices
    (``argmax_j x^T A v_j``), and the vertices (equal ``A``-norm after the map) stay."""
    corners, inner = polygon_tokens
    m = np.array([[1.3, 0.4], [0.0, 0.8]])
    a = m.T @ m
    corners = corners / np.sqrt(np.einsum("ni,ij,nj->n", corners, a, corners))[:, None]
    inner = np.random.default_rng(5).dirichlet(np.ones(len(corners)), size=30) @ corners
    positions = hardmax_run(np.vstack([corners, inner]), m, m, [0.0, 1.0, 4.0]).positions.values
    assert np.array_equal(positions[:, :len(corners)], np.broadcast_to(corners, positions[:, :7].shape))
    cells = reference_compute_cell_map(inner, corners @ a, Path(corners).contains_points(inner))
    target = corners[cells]
    assert np.abs(positions[-1, len(corners):] - (target + (inner - target) * np.exp(-4.0))).max() < 1e-14


def test_nsd_symmetric_tokens_contract_to_the_origin_at_rate_two():
    """``A = -B`` negative definite, tokens ``+-x_i`` on ``|x|_B = 1``: each attends to its antipode alone, so
    ``x_i(t) = x_i(0) e^{-2t}`` exactly."""
    rng = np.random.default_rng(8)
    m = rng.normal(size=(3, 3))
    b = m @ m.T + 0.1 * np.eye(3)
    half = rng.normal(size=(12, 3))
    half /= np.sqrt(np.einsum("ni,ij,nj->n", half, b, half))[:, None]
    tokens = np.vstack([half, -half])
    times = np.linspace(0.0, 8.0, 9)
    positions, events = hardmax_trajectory(tokens, -b, times)
    assert events == []
    exact = tokens[None] * np.exp(-2.0 * times)[:, None, None]
    error = np.abs(positions - exact).max(axis=(1, 2)) / np.abs(tokens).max()
    assert error.max() < 2e-14            # absolute, in units of |x(0)|: expm's accuracy (9.4e-15 measured)
    # relative to e^{-2t} it is 2e-14 e^{2t}: expm computes e^{-t} (cosh t - sinh t) by cancellation
    early = times <= 4.0
    fitted = np.polyfit(times[early], np.log(np.abs(positions[early]).max(axis=(1, 2))), 1)[0]
    assert fitted == pytest.approx(-2.0, abs=1e-12)


def test_an_event_is_dated_exactly_and_the_motion_after_it_is_exact():
    """R^1, ``A = -1``, tokens -1, 2, 3: ``a`` attends to ``c``, ``b`` and ``c`` to ``a``, so ``a = 1 - 2e^{-2t}``,
    ``b = 1 + 2e^{-2t} - e^{-t}``, ``c = 1 + 2e^{-2t}`` until ``a`` reaches 0 at ``t* = ln(2)/2``; then ``a``
    attends to itself and rests at 0, and ``b``, ``c`` decay as ``e^{-(t - t*)}`` toward it."""
    star = np.log(2.0) / 2
    times = np.array([0.1, 0.3, star + 0.01, 1.0, 3.0])
    positions, events = hardmax_trajectory(np.array([[-1.0], [2.0], [3.0]]), -np.eye(1), times)
    assert len(events) == 1 and abs(events[0] - star) < 2e-15
    before, after = times < star, times > star
    e1, e2 = np.exp(-times[before]), np.exp(-2 * times[before])
    exact_before = np.stack([1 - 2 * e2, 1 + 2 * e2 - e1, 1 + 2 * e2], axis=1)
    decay = np.exp(-(times[after] - star))
    exact_after = np.stack([0 * decay, (2 - 2 ** -0.5) * decay, 2 * decay], axis=1)
    assert np.abs(positions[before, :, 0] - exact_before).max() < 2e-15
    assert np.abs(positions[after, :, 0] - exact_after).max() < 4e-15


def test_chattering_argmax_sets_are_refused():
    """General negative definite data reach a sliding mode (a token's set changes and its new motion takes it back
    at once: here at the first event, t = 0.0524): refused, never followed or hung."""
    rng = np.random.default_rng(5)
    half = rng.normal(size=(10, 3))
    m = rng.normal(size=(3, 3))
    with pytest.raises(HardmaxError, match="sliding mode"):
        hardmax_trajectory(np.vstack([half, -half]), -(m @ m.T + 0.1 * np.eye(3)), [0.0, 2.0])


def test_finite_beta_leaves_the_hardmax_trajectory_after_a_time_growing_as_exp_beta_gap():
    """Hull vertices alone (hardmax: at rest). At finite beta vertex ``i`` drifts at speed about
    ``e^{-beta g}``, ``g = min_{i != j} (v_i^T A v_i - v_i^T A v_j)``, so the first time the distance (max over
    tokens) reaches ``delta = 1e-2`` grows as ``e^{beta g}``: the fitted exponent is ``g`` within 5 %."""
    rng = np.random.default_rng(11)
    theta = np.cumsum(rng.uniform(0.6, 1.3, 6))
    theta *= 2 * np.pi / theta[-1]
    v = np.c_[np.cos(theta), np.sin(theta)]
    scores = v @ v.T
    gap = min(scores[i, i] - scores[i, j] for i in range(6) for j in range(6) if i != j)
    betas, departures, delta = np.array([20.0, 30.0, 40.0]), [], 1e-2
    times = np.geomspace(1e-2, 4e3, 240)
    hard, _ = hardmax_trajectory(v, np.eye(2), times)
    for beta in betas:
        soft = softmax_trajectory(v, np.eye(2), beta, times, rtol=1e-10, atol=1e-13)
        distance = np.linalg.norm(soft - hard, axis=-1).max(axis=1)
        i = np.flatnonzero(distance > delta)[0]
        assert i > 0 and distance[:i].max() <= delta
        departures.append(np.exp(np.interp(np.log(delta), np.log(distance[i - 1:i + 1]), np.log(times[i - 1:i + 1]))))
    slope = np.polyfit(betas, np.log(departures), 1)[0]
    assert slope == pytest.approx(gap, rel=0.05)


def test_a_run_is_a_particle_dataset():
    tokens = np.random.default_rng(2).normal(size=(5, 3))
    run = hardmax_run(tokens, np.eye(3), np.eye(3), [0.0, 0.5, 1.0])
    assert run.positions.dims == ("time", "particle", "component")
    assert run.attrs["model"] == "hardmax" and np.isinf(run.attrs["beta"])
    assert np.array_equal(run.positions.values[0], tokens)
    soft = hardmax_run(tokens, np.eye(3), np.eye(3), [0.0, 0.5, 1.0], beta=200.0)
    assert soft.attrs["model"] == "softmax-rd"
    assert np.abs(soft.positions.values - run.positions.values).max() < 1e-3
