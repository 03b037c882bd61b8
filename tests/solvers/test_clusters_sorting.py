"""The sorted-coordinate test of meanfield.point_groups.link_groups: never says "apart" wrongly; its shortcuts (sorted
coordinates, binned cubes, the previous frame's groups) give the k-d tree's labels."""

import numpy as np
import pytest
from scipy.spatial import cKDTree

from meanfield.point_groups import apart_by_sorting, link_groups


@pytest.mark.parametrize("n, chord", [(500, 1e-13), (500, 0.05), (20000, 1e-6), (20000, 1e-3), (20000, 0.2)])
def test_apart_by_sorting_agrees_with_the_tree_whenever_it_answers_apart(n, chord):
    rng = np.random.default_rng(n)
    points = rng.standard_normal((n, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    nearest = cKDTree(points).query(points, k=2)[0][:, 1].min()
    assert (not apart_by_sorting(points, chord)) or nearest >= chord
    if nearest >= chord and chord < 1e-5:        # few candidates: it must also answer
        assert apart_by_sorting(points, chord)


def test_a_planted_pair_is_found_whatever_lies_between_in_the_first_coordinate():
    rng = np.random.default_rng(1)
    points = rng.standard_normal((50000, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    points[9] = points[4321] + np.array([0.0, 3e-7, -2e-7])   # the same first coordinate, close in the others
    assert not apart_by_sorting(points, 1e-6)
    labels, count = link_groups(points, 1e-6)
    assert count == points.shape[0] - 1 and labels[9] == labels[4321]


def test_pairs_within_finds_every_close_pair_of_a_brute_force_search():
    from meanfield.point_groups import pairs_within

    rng = np.random.default_rng(5)
    centres = rng.standard_normal((40, 3))
    points = centres[rng.integers(0, 40, 1500)] + 0.01 * rng.standard_normal((1500, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    chord = 0.004
    found = pairs_within(points, chord, candidates=10 ** 6)
    gaps = np.linalg.norm(points[:, None] - points[None], axis=-1)
    i, j = np.nonzero(np.triu(gaps < chord, 1))
    np.testing.assert_array_equal(found, np.stack((i, j), axis=-1))
    assert pairs_within(points, chord, candidates=1) is None        # too many candidates: the tree's turn
    assert pairs_within(points, 1e-7) is None                        # cells too small for an int64 key


@pytest.mark.parametrize("kind", ["uniform", "small clusters", "dense clusters", "duplicates"])
def test_the_binned_links_give_the_trees_groups_label_for_label(monkeypatch, kind):
    """The two ways link_groups finds its links (cubes of the chord when close pairs are few, the k-d tree
    otherwise) must give the same labels, so no run's cluster records change with the path."""
    import meanfield.point_groups as clusters

    rng = np.random.default_rng(len(kind))

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    n = 2400
    if kind == "uniform":
        points = unit(rng.standard_normal((n, 3)))
    elif kind == "small clusters":
        points = unit(np.repeat(unit(rng.standard_normal((n // 3, 3))), 3, axis=0) + 3e-4 * rng.standard_normal((n, 3)))
    elif kind == "dense clusters":
        points = unit(unit(rng.standard_normal((5, 3)))[rng.integers(0, 5, n)] + 2e-3 * rng.standard_normal((n, 3)))
    else:
        points = unit(rng.standard_normal((n, 3)))
        points[:200] = points[200:400]
    for radius in (1e-3, 1e-2):
        binned = link_groups(points, radius)
        with monkeypatch.context() as patch:
            for shortcut in ("pairs_within", "close_pairs", "close_pairs_by_sorting"):
                patch.setattr(clusters, shortcut, lambda *args, **kwargs: None)
            tree = clusters.link_groups(points, radius)
        assert binned[1] == tree[1] and np.array_equal(binned[0], tree[0]), (kind, radius)


def test_close_pairs_are_remembered_only_for_run_states():
    """clusters.close_pairs: a caller that does not ask to remember (a user's array, changed in place between
    calls) always gets the pairs of the array as it is now; a run's state is searched once for its three checks."""
    import meanfield.point_groups as clusters

    rng = np.random.default_rng(3)
    points = rng.standard_normal((2000, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    assert clusters.close_pairs(points, 1e-6, remember=True).shape == (0, 2)
    points[1] = points[0]                                   # changed in place: a user's array, not a run state
    assert np.sort(clusters.close_pairs(points, 1e-6), axis=1).tolist() == [[0, 1]]
    labels, count = clusters.link_groups(points, 1e-6)
    assert count == 1999 and labels[0] == labels[1]
    state = points.copy()
    calls = []
    original = clusters.close_pairs_by_sorting
    try:
        clusters.close_pairs_by_sorting = lambda *a, **k: calls.append(a[1]) or original(*a, **k)
        first = clusters.close_pairs(state, 5.7e-14, remember=True)
        again = clusters.close_pairs(state, clusters.SHARED_CHORD, remember=True)   # the merge check's chord
    finally:
        clusters.close_pairs_by_sorting = original
    assert len(calls) == 1 and np.sort(first, axis=1).tolist() == np.sort(again, axis=1).tolist() == [[0, 1]]


def test_a_frame_energy_reuses_the_last_rhs_coefficients_and_rhs_reads_no_memo(monkeypatch):
    """SphereHarmonicInteraction: a step ends with a right-hand side at the accepted state; the frame's energy at
    that very array reuses its coefficients (the same energy, bit for bit), once; right-hand sides never read the
    memo, so a benchmark's repeated calls all compute."""
    from meanfield.solvers.schemes import interaction

    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 3000, 3))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    engine = interaction.SphereHarmonicInteraction(4.0, "sa", np.full(3000, 1 / 3000))
    fresh = engine.scaled_energy(x)
    located = []
    original = interaction.sphere_locations
    monkeypatch.setattr(interaction, "sphere_locations", lambda *a: located.append(1) or original(*a))
    engine.velocity(x)
    engine.velocity(x)
    assert len(located) == 2                                  # right-hand sides read no memo
    assert np.array_equal(engine.scaled_energy(x), fresh) and len(located) == 2   # served by the last rhs
    engine.scaled_energy(x)
    assert len(located) == 3                                  # ... once
    engine.velocity(x.copy())
    engine.scaled_energy(x)
    assert len(located) == 5                                  # another array's coefficients serve nothing here


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_unique_rows_is_numpys_unique_of_rows():
    from meanfield.point_groups import unique_rows

    rng = np.random.default_rng(8)
    points = _unit(rng.standard_normal((3000, 3)))
    points[::7] = points[3]
    points[1::11, 0] = points[5, 0]                         # ties in the first coordinate only
    rows, positions = unique_rows(points)
    expected_rows, expected_positions = np.unique(points, axis=0, return_inverse=True)
    assert np.array_equal(rows, expected_rows) and np.array_equal(positions, expected_positions.ravel())


def _rotation(rng):
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    return q * np.sign(np.diag(r))


def _clustered(rng, groups: int, spread: float, n: int = 1500):
    """``n`` unit vectors in ``groups`` blobs of width ``spread`` (rad) around random centres, and their blob."""
    centres = _unit(rng.standard_normal((groups, 3)))
    members = rng.integers(0, groups, n)
    return _unit(centres[members] + spread * rng.standard_normal((n, 3))), members


@pytest.mark.parametrize("seed", range(6))
def test_kept_groups_are_link_groups_labels_when_they_answer(seed):
    """The previous frame's groups, kept when provably unchanged, carry link_groups' own labels number for number
    (so a frame's energy has the same bits either way), after a rotation that reorders the groups."""
    from meanfield.point_groups import kept_groups

    rng = np.random.default_rng(seed)
    radius = 1e-3
    chord = 2 * np.sin(radius / 2)
    before, _ = _clustered(rng, int(rng.integers(2, 30)), 0.02 * chord)
    labels, count = link_groups(before, radius)
    moved = before @ _rotation(rng).T
    kept = kept_groups(moved, labels, count, radius)
    truth, truth_count = link_groups(moved, radius)
    assert kept is not None and truth_count == count and np.array_equal(kept, truth)
    assert not np.array_equal(kept, labels) or count < 3        # the rotation renumbered them


@pytest.mark.parametrize("seed", range(4))
def test_kept_groups_refuse_what_they_cannot_prove(seed):
    """A group wider than a quarter chord, two groups within reach of each other, a grouping of other points:
    None (the caller links afresh), never a wrong label."""
    from meanfield.point_groups import kept_groups

    rng = np.random.default_rng(10 + seed)
    radius = 1e-3
    chord = 2 * np.sin(radius / 2)
    points, members = _clustered(rng, 12, 0.02 * chord)
    labels, count = link_groups(points, radius)
    wide = points.copy()
    wide[0] = _unit(points[0] + 0.3 * chord * _unit(np.cross(points[0], rng.standard_normal(3))))   # not proved
    assert kept_groups(wide, labels, count, radius) is None
    other = labels[np.argmax(labels != labels[0])]
    near = points.copy()
    shift = points[labels == other].mean(axis=0) - points[labels == labels[0]].mean(axis=0)
    near[labels == labels[0]] = _unit(points[labels == labels[0]] + shift
                                      + 0.6 * chord * _unit(np.cross(points[0], rng.standard_normal(3))))
    assert kept_groups(near, labels, count, radius) is None                         # two groups within reach
    assert kept_groups(points[:-1], labels, count, radius) is None                 # labels of other points
    assert kept_groups(points, np.zeros(points.shape[0], dtype=int), 1, radius) is None   # one group 1 rad wide
