"""Tokens in R^d and their rescaled limits (meanfield/rd_tokens.py, docs/MATH.md §12.1), against the stepping loop
of ``clustering-Tformers.py`` (borjanG/2023-transformers; ported with seeded inputs in ``rd_reference.py``) and the
limit sets of Geshkovski–Letrouit–Polyanskiy–Rigollet (NeurIPS 2023): polytope vertices for ``V = I``, parallel
hyperplanes for a simple positive top eigenvalue."""

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.spatial import ConvexHull

from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.rd_tokens import (PAPER_VALUE_MATRICES, equal_norm_polytope, frozen_attention_steps, hull_vertex_mask,
                                 limit_points, rd_limit_sets, rd_reference_convergence, rescaled_tokens,
                                 rescaled_velocity, top_eigenpair)
from meanfield.settings import Attention
from meanfield.solvers.schemes.particles import ParticleScheme

from .rd_reference import clustering_tformers_steps

PAPER_V2 = PAPER_VALUE_MATRICES["2d"]


def test_the_rescaled_velocity_is_the_unprojected_flow_seen_through_e_to_the_minus_tv():
    """``dz/dt = e^{-tV} F(e^{tV} z) - V z`` with ``F`` the package's R^d particle field (``sum_j P_ij V x_j``):
    equal to ``sum_j P_ij V (z_j - z_i)`` to rounding (MATH.md §12.1)."""
    rng = np.random.default_rng(0)
    d, n, beta = 3, 12, 1.5
    q, k, v = (rng.standard_normal((d, d)) for _ in range(3))
    z = rng.uniform(-1, 1, (n, d))
    scheme = ParticleScheme(Model("sa", beta, 0.0, d), n, Attention("sa", Q=q, K=k, V=v), sphere=False)
    for t in (0.0, 0.7):
        flow = expm(t * v)
        x = z @ flow.T
        seen = (scheme.rhs(x[None], 0.0)[0] - x @ v.T) @ np.linalg.inv(flow).T
        assert np.max(np.abs(seen - rescaled_velocity(t, z, q, k, v, beta))) < 1e-14 * np.max(np.abs(seen)) * 10


def test_the_reference_loop_is_an_euler_step_with_frozen_attention():
    """The script's RK4 stages add token i's own increment to every token, which leaves the differences
    ``z_j - z_i`` alone: its step is ``z + dt (P z - z) V^T`` with ``P`` frozen, to rounding; the package's
    ``frozen_attention_steps`` (stages "script") is the same loop."""
    rng = np.random.default_rng(1)
    z0, a = rng.uniform(-1, 1, (20, 2)), np.eye(2)
    reference = clustering_tformers_steps(z0, a, PAPER_V2, 2.0, 0.25)
    package = frozen_attention_steps(z0, a, a, PAPER_V2, 2.0, 0.25)
    scale = np.max(np.abs(reference))
    assert reference.shape == (9, 20, 2) and np.max(np.abs(package - reference)) < 4 * np.finfo(float).eps * scale
    euler = [z0]
    for t in np.linspace(0, 2.0, 9)[:-1]:
        x = euler[-1] @ expm(t * PAPER_V2).T
        s = x @ x.T
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        euler.append(euler[-1] + 0.25 * (p @ euler[-1] - euler[-1]) @ PAPER_V2.T)
    assert np.max(np.abs(np.array(euler) - reference)) < 16 * np.finfo(float).eps * scale
    # the stages the script meant (all tokens moved together) are a different scheme, of the same order
    whole = frozen_attention_steps(z0, a, a, PAPER_V2, 2.0, 0.25, stages="whole")
    assert np.max(np.abs(whole - reference)) > 1e-3


@pytest.mark.parametrize("v", [np.eye(2), PAPER_V2], ids=["identity", "paper-hyperplanes"])
def test_the_reference_loop_converges_to_the_rescaled_solution_at_order_one(v):
    """The script's loop (20 tokens uniform in [-1, 1]^2, seeded; Q = K = I) at T = 2 against DOP853 at rtol
    1e-12, dt = T / 8 ... T / 128. Freezing the attention over a step errs by O(dt^2) per step, so the scheme is
    first order (MATH.md §12.1): the fitted order is 1 +- 0.1 (measured 1.055 and 0.972), every error lies within
    10 % of the fitted C dt^p, the discretisation error (measured 2.9 % and 5.8 %; C = 0.83 and 0.56, errors
    0.19 ... 0.011 and 0.14 ... 0.0094), and the Richardson value 2 z_{dt/2} - z_dt of the two finest steps is
    20 times closer to the package's solution than the finest step (measured 30 and 79): the loop's limit is that
    solution, itself within 3e-13 of DOP853 at rtol 1e-13."""
    z0, a = np.random.default_rng(1).uniform(-1, 1, (20, 2)), np.eye(2)
    t_final = 2.0
    dts = t_final / 2.0 ** np.arange(3, 8)
    exact = rescaled_tokens(z0, a, a, v, [0.0, t_final])[-1]
    finals = [clustering_tformers_steps(z0, a, v, t_final, dt)[-1] for dt in dts]
    errors = np.array([np.max(np.abs(z - exact)) for z in finals])
    order, log_c = np.polyfit(np.log(dts), np.log(errors), 1)
    assert abs(order - 1) < 0.1
    assert np.max(np.abs(np.log(errors / (np.exp(log_c) * dts ** order)))) < np.log(1.1)
    assert np.max(np.abs(2 * finals[-1] - finals[-2] - exact)) < errors[-1] / 20
    # the package's own convergence study reads the same numbers off its port of the loop
    study = rd_reference_convergence(z0, a, a, v, t_final, dts)
    np.testing.assert_allclose(study.errors, errors, rtol=1e-9)
    assert study.order == pytest.approx(order, rel=1e-9)


@pytest.mark.parametrize("d, vertices, inside, seed, m", [
    (2, 7, 13, 4, None),
    (2, 5, 15, 1, [[1.0, 0.4], [0.0, 0.8]]),
    (3, 10, 14, 2, None),
], ids=["heptagon", "pentagon-Q=K=M", "3d-10-vertices"])
def test_v_identity_tokens_end_on_the_vertices_of_a_polytope(d, vertices, inside, seed, m):
    """V = I and Q = K = M (Q^T K positive definite): the rescaled tokens converge, and their distinct limits
    are exactly the vertices of their convex hull (the theorem). The count is predicted from the initial data:
    the hull's vertices (scipy ConvexHull of the initial tokens) all have the same A-norm, so each scores itself
    highest (a leader, which the rescaled attention, sharpening as e^{2t}, keeps) and no interior token does;
    every interior token joins a vertex. Counts exact: 7, 5, 10 (spread of the tokens about their limit points
    2e-13 to 6e-13 at t = 30, the points 1.9 to 3.2 apart; the vertices moved by 0.001 to 0.056 on the way).
    The attention matrix ends Boolean, of rank the count (the paper's low-rank limit, lowrank-attention.py): one
    followed token per limit point (not always the initial vertex: an interior token that ends a shade further
    out takes over)."""
    m = np.eye(d) if m is None else np.array(m)
    z0 = equal_norm_polytope(d, vertices, inside, seed, m)
    expected = len(ConvexHull(z0).vertices)
    assert expected == vertices
    limit = rd_limit_sets(z0, m, m, np.eye(d), t_final=30.0, frames=4)
    assert limit.geometry == "polytope" and limit.count == expected
    assert limit.spread < 1e-9 < 1.0 < limit.separation                  # converged, and distinct points
    assert len(ConvexHull(limit.values).vertices) == limit.count and limit.vertices.all()
    assert sorted(limit.labels[:vertices]) == list(range(vertices))       # each vertex its own limit point
    # the attention ends Boolean and of rank `count`: every token follows one token per limit point
    weights = limit.attention
    followed = np.flatnonzero(weights.max(axis=0) > 0.5)
    assert np.max(np.abs(weights - np.round(weights))) < 1e-12 and np.linalg.matrix_rank(weights) == expected
    assert sorted(limit.labels[followed]) == list(range(expected))


@pytest.mark.parametrize("v, shift, expected", [
    (PAPER_V2, 0.0, 2),
    (PAPER_VALUE_MATRICES["3d-negative"], 8.0, 1),
    (PAPER_VALUE_MATRICES["3d-positive"], 0.0, 2),
], ids=["paper-2d", "paper-3d-one-side", "paper-3d"])
def test_a_simple_positive_top_eigenvalue_puts_the_tokens_on_parallel_hyperplanes(v, shift, expected):
    """V with a simple positive top eigenvalue lambda_1 (eigenvector phi_1, left eigenvector l_1), Q = K = I so
    <Q phi_1, K phi_1> > 0: the coordinate a_i = <l_1, z_i> converges to finitely many levels, each a hyperplane
    parallel to the other eigenspaces (the theorem: at most three, the outer two of opposite signs, the middle one
    0). Predicted count: a' = lambda_1 sum_j P_ij (a_j - a_i) keeps every a_i in [min a(0), max a(0)], and the
    attention, sharpening as e^{2 lambda_1 t} a_i a_j, sends positive a to the top and negative to the bottom: two
    levels when a(0) has both signs, one when all a_i(0) > 0 (the tokens shifted by 8 phi_1). Read at
    lambda_1 t = 26: spread about the levels 3e-11 to 4e-11, levels 10.2 and 10.8 apart, equal to those of
    rtol 1e-12 to 1e-13. The attention ends Boolean, its columns the tokens of extreme a(0) (those score
    themselves highest in the limit), so of rank the count."""
    d = len(v)
    lam, phi, ell = top_eigenpair(v)
    z0 = np.random.default_rng(2).uniform(-5, 5, (20, d)) + shift * phi
    a0 = z0 @ ell
    assert len(set(np.sign(a0))) == expected
    limit = rd_limit_sets(z0, np.eye(d), np.eye(d), v, t_final=26.0 / lam, frames=4)
    assert limit.geometry == "hyperplanes" and limit.count == expected
    assert limit.spread < 1e-9 < 1.0 < limit.separation
    assert a0.min() <= limit.values.min() and limit.values.max() <= a0.max()
    assert expected == 1 or limit.values.min() < 0 < limit.values.max()
    # the attention ends Boolean: every token follows the token of largest a(0) (a > 0) or of smallest (a < 0)
    weights = limit.attention
    followed = np.flatnonzero(weights.max(axis=0) > 0.5)
    assert np.max(np.abs(weights - np.round(weights))) < 1e-12
    assert followed.tolist() == sorted({int(np.argmax(a0)), int(np.argmin(a0)) if expected == 2 else int(np.argmax(a0))})
    if np.min(np.linalg.eigvals(v).real) < 0:      # a contracting direction spreads the tokens along the planes
        assert len(np.unique(np.round(limit.tokens[-1], 3), axis=0)) == len(z0)


def test_hull_vertices_of_flat_sets_and_chained_limit_points():
    """A point is a vertex of itself, collinear points have their two ends, a square's centre is not a vertex;
    tokens chained by gaps <= tol are one limit point, their mean."""
    assert hull_vertex_mask(np.array([[1.0, 2.0]])).tolist() == [True]
    line = np.array([[0.0, 0.0, 0.0], [2.0, 2.0, 0.0], [1.0, 1.0, 0.0], [3.0, 3.0, 0.0]])
    assert hull_vertex_mask(line).tolist() == [True, False, False, True]
    square = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.5], [1.0, 1.0], [0.0, 1.0]])
    assert hull_vertex_mask(square).tolist() == [True, True, False, True, True]
    points, labels = limit_points(np.array([[0.0, 0.0], [0.0, 0.6e-6], [0.0, 1.2e-6], [1.0, 0.0]]), 1e-6)
    assert labels.tolist() == [0, 0, 0, 1] and np.array_equal(points, [[0.0, 0.6e-6], [1.0, 0.0]])


def test_bad_inputs_raise_one_line_input_errors():
    z0, eye = np.zeros((4, 2)), np.eye(2)
    cases = [
        (lambda: rescaled_tokens(np.zeros(3), eye, eye, eye, [0, 1]), "z0 must be an (n, d) array"),
        (lambda: rescaled_tokens(z0, np.eye(3), eye, eye, [0, 1]), "q must be a finite 2 x 2 matrix"),
        (lambda: rescaled_tokens(z0, eye, eye, eye, [1, 0]), "times must be increasing"),
        (lambda: frozen_attention_steps(z0, eye, eye, eye, 1.0, 2.0), "dt must be <= t_final"),
        (lambda: frozen_attention_steps(z0, eye, eye, eye, -1.0, 0.1), "t_final must be > 0"),
        (lambda: frozen_attention_steps(z0, eye, eye, eye, 1.0, 0.1, stages="rk4"), "stages must be one of"),
        (lambda: rd_limit_sets(z0, eye, -eye, eye), "q^T k must be positive definite"),
        (lambda: rd_limit_sets(z0, eye, eye, np.array([[0.0, -1.0], [1.0, 0.0]])), "v must have a simple"),
        (lambda: rd_limit_sets(z0, eye, -eye, PAPER_V2), "<q phi_1, k phi_1> must be > 0"),
        (lambda: rd_limit_sets(z0, eye, eye, eye, frames=1), "frames must be an integer >= 2"),
        (lambda: rd_reference_convergence(z0, eye, eye, eye, 1.0, [0.5]), "dts must hold two or more"),
        (lambda: equal_norm_polytope(3, 3, 5, 0), "vertices must be an integer > d = 3"),
        (lambda: top_eigenpair(np.ones((2, 3))), "v must be a finite square matrix"),
    ]
    for call, words in cases:
        with pytest.raises(InputError) as refused:
            call()
        assert words in str(refused.value) and "\n" not in str(refused.value)
