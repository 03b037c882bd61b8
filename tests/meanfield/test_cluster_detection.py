"""The package's one cluster definition (meanfield.cluster_detection, MATH.md §10; issue 32 item 1): the maxima of
the attention field that stand out, on every geometry, for densities, weighted nodes and tokens alike, and the same
count wherever a run reports one."""

import math

import numpy as np
import pytest

import meanfield as mf
from meanfield.cluster_detection import clusters_in_frame, clusters_of_atoms, clusters_of_density
from meanfield.errors import InputError
from meanfield.geometry import sphere_area
from meanfield.solvers.bases.sphere_basis import make_sphere_basis

AXES = np.eye(3)


def _sphere_grid(lmax=31):
    basis = make_sphere_basis(lmax)
    lat, lon = np.radians(basis.lat), np.radians(basis.lon)
    grid = np.stack(np.broadcast_arrays(np.cos(lat)[:, None] * np.cos(lon), np.cos(lat)[:, None] * np.sin(lon),
                                        np.sin(lat)[:, None]), axis=-1)
    return basis, grid


def _vmf_mixture(x, centres, kappa):
    """The equal mixture of von Mises-Fisher densities on S^2 at ``x`` (..., 3)."""
    return np.mean([kappa / (4 * math.pi * math.sinh(kappa)) * np.exp(kappa * (x @ c)) for c in centres], axis=0)


def _sample_vmf(rng, centres, kappa, n):
    """Exact samples of the mixture (Wood's algorithm on S^2: w = 1 + log(u + (1 - u) e^{-2 kappa}) / kappa)."""
    pick = np.asarray(centres)[rng.integers(0, len(centres), n)]
    u = rng.uniform(size=n)
    w = 1 + np.log(u + (1 - u) * math.exp(-2 * kappa)) / kappa
    v = rng.standard_normal((n, 3))
    v -= np.sum(v * pick, axis=1, keepdims=True) * pick
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return w[:, None] * pick + np.sqrt(np.maximum(1 - w * w, 0))[:, None] * v


def _separated(rng, count, dim, distance):
    """``count`` random unit vectors of R^dim pairwise at least ``distance`` (rad) apart (the circle: random gaps
    of at least ``distance``; elsewhere rejection)."""
    if dim == 2:
        gaps = distance + (2 * math.pi - count * distance) * rng.dirichlet(np.ones(count))
        angles = rng.uniform(0, 2 * math.pi) + np.cumsum(gaps)
        return np.stack((np.cos(angles), np.sin(angles)), axis=-1)
    points = []
    for _ in range(200000):
        if len(points) == count:
            return np.array(points)
        x = rng.standard_normal(dim)
        x /= np.linalg.norm(x)
        if all(math.acos(min(1.0, float(x @ p))) >= distance for p in points):
            points.append(x)
    raise AssertionError(f"could not place {count} points {distance:g} apart on S^{dim - 1}")


@pytest.mark.parametrize("dim", [2, 3, 5])
@pytest.mark.parametrize("beta", [9.0, 64.0])
def test_k_separated_points_are_k_clusters_as_tokens_and_as_weighted_nodes(dim, beta):
    """K <= 12 points pairwise >= 4 / sqrt(beta) apart, each holding >= 1 of n = 100 tokens (mass >= 1/n = 1 %):
    exactly K clusters on the circle, S^2 and S^4, from the tokens and from the K weighted nodes, each centred on
    its point.  The old definition (cells twice as dense as uniform, tokens binned) saw 4 of 6 such points."""
    rng = np.random.default_rng(int(beta) * 10 + dim)
    most = 12 if beta >= 64 else {2: 3, 3: 4, 5: 8}[dim]     # what fits 4 / sqrt(beta) apart, placed at random
    for count in sorted({1, 2, most // 2, most}):
        points = _separated(rng, count, dim, 4 / math.sqrt(beta))
        tokens_per_point = 1 + rng.multinomial(100 - count, np.full(count, 1 / count))
        tokens = np.repeat(points, tokens_per_point, axis=0)
        for clusters in (clusters_of_atoms(tokens, beta=beta), clusters_of_atoms(points, tokens_per_point / 100,
                                                                                  beta=beta)):
            assert clusters.count == count
            nearest = np.max(clusters.centres @ points.T, axis=1)
            assert np.all(nearest > math.cos(0.05 / math.sqrt(beta)))
            assert sorted(clusters.masses * 100) == pytest.approx(sorted(tokens_per_point), abs=1e-6)


def test_the_causal_run_counts_its_distinct_points():
    """Issue 32: `particles --mask causal --n 200 --beta 64` ends with its tokens at distinct points of masses
    0.06 .. 0.34; the old definition counted 4 of 6.  Here (seed 0, t = 200) the tokens make 6 groups more than
    4 / sqrt(beta) apart, of masses 0.34, 0.33, 0.12, 0.09, 0.06, 0.06: 6 clusters with those masses."""
    run = mf.simulate_particles(dim=2, n=200, beta=64.0, mask="causal", seed=0, t_final=200.0, save_every=200.0,
                                progress=False)
    angles = np.mod(np.arctan2(run["positions"].values[-1][:, 1], run["positions"].values[-1][:, 0]), 2 * math.pi)
    order = np.sort(angles)
    gaps = np.diff(np.concatenate((order, [order[0] + 2 * math.pi])))
    groups = np.count_nonzero(gaps > 4 / math.sqrt(64.0))
    clusters = clusters_in_frame(run)
    assert clusters.count == groups == 6
    assert clusters.masses == pytest.approx([0.34, 0.33, 0.12, 0.09, 0.06, 0.06], abs=1e-12)


@pytest.mark.parametrize("beta", [6.0, 9.0])
def test_uniform_states_have_no_cluster(beta):
    """The uniform density, a 1e-4 perturbation of it, and i.i.d. uniform tokens (n = 2000, 20 seeds) on the circle
    and S^2: no cluster.  (The field of n i.i.d. tokens fluctuates by ~ (beta^((d-1)/2) / n)^(1/2): at n = 2000 its
    largest prominence and concentration over 20 seeds stay below 0.14 and 0.18 at beta <= 9, MATH.md §10.)"""
    n = 512
    theta = 2 * math.pi * np.arange(n) / n
    uniform = np.full(n, 1 / (2 * math.pi))
    assert clusters_of_density(uniform, beta=beta).count == 0
    assert clusters_of_density(uniform * (1 + 1e-4 * np.cos(4 * theta)), beta=beta).count == 0
    basis, _ = _sphere_grid()
    assert clusters_of_density(np.full(basis.shape, 1 / (4 * math.pi)), beta=beta, geometry="sphere", lat=basis.lat,
                               lon=basis.lon, volumes=basis.weights[:, 0]).count == 0
    rng = np.random.default_rng(int(beta))
    for _ in range(20):
        assert clusters_of_atoms(rng.uniform(0, 2 * math.pi, 2000), beta=beta).count == 0
        x = rng.standard_normal((2000, 3))
        assert clusters_of_atoms(x / np.linalg.norm(x, axis=1, keepdims=True), beta=beta).count == 0


def _three_bumps(theta):
    """Issue 32's case: von Mises bumps of weights 0.5 / 0.3 / 0.2, kappa 8 / 12 / 6, at 0.5 / 2.6 / 4.4 rad on a
    0.05 background (density), normalised to mass 1."""
    from scipy.special import i0e

    density = 0.05 + sum(w * np.exp(k * (np.cos(theta - c) - 1)) / (2 * math.pi * i0e(k))
                         for w, k, c in ((0.5, 8, 0.5), (0.3, 12, 2.6), (0.2, 6, 4.4)))
    return density / (1 + 0.05 * 2 * math.pi)


def test_the_three_bumps_are_three_clusters_in_every_representation():
    """Issue 32's three bumps at t = 0, beta = 6: grid values (N = 512), cell averages (N = 512), Lagrangian nodes and
    quadrature tokens (n = 10^4, equal masses at the quantiles of the density): 3 clusters each, the same centres
    (to 2e-3 rad) and masses (to 2e-3).  The old definition gave 1 (fv) and 6 (Lagrangian) here."""
    from scipy.integrate import cumulative_trapezoid

    n = 512
    theta = 2 * math.pi * np.arange(n) / n
    grid = clusters_of_density(_three_bumps(theta), beta=6.0)
    fine = np.linspace(0, 2 * math.pi, 2 ** 16 + 1)
    cdf = cumulative_trapezoid(_three_bumps(fine), fine, initial=0.0)
    faces = 2 * math.pi * np.arange(n + 1) / n - math.pi / n
    faces[0] = 0.0
    averages = np.diff(np.interp(np.mod(faces, 2 * math.pi), fine, cdf)) * n / (2 * math.pi)
    averages[0] += (cdf[-1] - np.interp(2 * math.pi - math.pi / n, fine, cdf)) * n / (2 * math.pi)
    cells = clusters_of_density(averages, beta=6.0)
    quantiles = [np.interp((np.arange(m) + 0.5) / m * cdf[-1], cdf, fine) for m in (n, 10 ** 4)]
    nodes, tokens = (clusters_of_atoms(q, beta=6.0) for q in quantiles)
    for clusters in (grid, cells, nodes, tokens):
        assert clusters.count == 3
        order = np.argsort(clusters.angles)
        assert clusters.angles[order] == pytest.approx(grid.angles[np.argsort(grid.angles)], abs=2e-3)
        assert clusters.masses[order] == pytest.approx(grid.masses[np.argsort(grid.angles)], abs=2e-3)


def test_the_concentration_of_a_von_mises_bump_is_exact():
    """For ``rho`` a von Mises density of concentration ``kappa``, ``K * rho ~ I_0(|kappa + beta e^{i theta}|)``, so at
    its maximum ``c = kappa I_1(kappa + beta) / ((kappa + beta) I_0(kappa + beta))`` exactly (MATH.md §10); a point
    mass has ``c = 1``.  Catches a wrong Laplacian, kernel scaling or normalisation."""
    from scipy.special import i0e, i1e

    n = 1024
    theta = 2 * math.pi * np.arange(n) / n
    for kappa, beta in ((6.0, 6.0), (20.0, 9.0), (2.0, 30.0)):
        density = np.exp(kappa * (np.cos(theta - 1.0) - 1)) / (2 * math.pi * i0e(kappa))
        clusters = clusters_of_density(density, beta=beta)
        r = kappa + beta
        assert clusters.concentrations[0] == pytest.approx(kappa * i1e(r) / (r * i0e(r)), rel=1e-9)
        assert clusters.angles[0] == pytest.approx(1.0, abs=1e-10)
    assert clusters_of_atoms(np.array([2.0]), beta=9.0).concentrations[0] == pytest.approx(1.0, rel=1e-10)


def test_two_points_closing_in_go_from_two_clusters_to_one_and_never_to_none():
    """Two point masses (0.6, 0.4) brought together: the count is 2 while they are apart, 1 once they are one hill of
    the field, never 0 in between (a maximum that stops standing out joins its neighbour's basin, MATH.md §10)."""
    beta = 16.0
    counts = [clusters_of_atoms(np.array([0.0, d / math.sqrt(beta)]), np.array([0.6, 0.4]), beta=beta).count
              for d in np.linspace(4.0, 0.0, 81)]
    assert counts[0] == 2 and counts[-1] == 1 and set(counts) == {1, 2}
    assert np.all(np.diff(counts) <= 0)          # one fall, no return


def test_sphere_density_clusters_across_the_date_line_and_around_the_pole():
    basis, grid = _sphere_grid()
    kw = dict(beta=9.0, geometry="sphere", lat=basis.lat, lon=basis.lon, volumes=basis.weights[:, 0])
    clusters = clusters_of_density(_vmf_mixture(grid, AXES, 30.0), **kw)
    assert clusters.count == 3
    assert np.all(np.abs(clusters.centres @ AXES.T).max(axis=1) > math.cos(1e-2))
    assert np.allclose(clusters.masses, 1 / 3, atol=1e-4)
    date_line = np.array([-1.0, 1e-3, 0.0]) / math.hypot(1.0, 1e-3)
    for centre in (date_line, AXES[2], -AXES[2]):
        one = clusters_of_density(_vmf_mixture(grid, [centre], 30.0), **kw)
        assert one.count == 1 and float(one.centres[0] @ centre) > math.cos(1e-2)


def test_tokens_and_the_density_they_sample_have_the_same_clusters(rng):
    """On S^2: 40000 exact samples of three vMF bumps give the density's three clusters, centres within 0.02 rad,
    basin masses within the sampling error (1/3 +- 3 sqrt(2 / 9 / n))."""
    tokens = _sample_vmf(rng, AXES, 30.0, 40000)
    clusters = clusters_of_atoms(tokens, beta=9.0)
    assert clusters.count == 3
    assert np.all(np.abs(clusters.centres @ AXES.T).max(axis=1) > math.cos(0.02))
    assert np.allclose(clusters.masses, 1 / 3, atol=3 * math.sqrt(2 / 9 / 40000))


def test_zonal_rings_as_a_density_and_as_tokens():
    """S^4 (d = 5): a cap on the pole and a ring at polar angle 2 are two clusters, as a density on Gauss nodes
    and as tokens on S^4 (their zonal rings); a uniform zonal density has none."""
    from meanfield.solvers.bases.zonal_basis import ZonalBasis

    dim = 5
    basis = ZonalBasis(40, dim)
    polar = np.arccos(basis.nodes)
    cap, ring = np.exp(20 * (np.cos(polar) - 1)), np.exp(-((polar - 2.0) / 0.1) ** 2)
    density = cap / (cap @ basis.quad) + ring / (ring @ basis.quad)      # half the mass each
    kw = dict(beta=9.0, geometry="zonal", polar=polar, volumes=basis.quad, dim=dim)
    clusters = clusters_of_density(density, **kw)
    # the field of a ring peaks beside it (2.08 here; checked against the direct sum over the ring's points)
    assert clusters.count == 2 and np.allclose(np.sort(clusters.angles), [0.0, 2.08], atol=0.02)
    assert clusters.masses == pytest.approx([1.0, 1.0], abs=1e-5)
    uniform = np.full(polar.size, 1 / sphere_area(dim))
    assert clusters_of_density(uniform, **kw).count == 0
    rng = np.random.default_rng(5)
    around = rng.standard_normal((4000, dim - 1))
    around /= np.linalg.norm(around, axis=1, keepdims=True)
    rings = np.where(rng.uniform(size=4000) < 0.5, 0.05, 2.0) + rng.normal(0, 0.01, 4000)
    tokens = np.hstack((np.sin(rings)[:, None] * around, np.cos(rings)[:, None]))
    assert clusters_of_atoms(tokens, beta=9.0, zonal=True, dim=dim).count == 2


def test_tokens_in_high_dimension_with_a_background(rng):
    """S^7: four tight groups (80 % of the mass) and a uniform background: four clusters holding the groups."""
    d = 8
    centres = np.eye(d)[:4]
    tight = centres[rng.integers(0, 4, 800)] + 1e-4 * rng.standard_normal((800, d))
    background = rng.standard_normal((200, d))
    tokens = np.vstack((tight, background))
    tokens /= np.linalg.norm(tokens, axis=1, keepdims=True)
    clusters = clusters_of_atoms(tokens, beta=9.0)
    assert clusters.count == 4
    assert np.all(np.abs(clusters.centres @ centres.T).max(axis=1) > 1 - 1e-6)
    assert np.all(clusters.masses >= 0.19)


@pytest.mark.parametrize("make", [
    lambda: mf.solve("circle", scheme="lagrangian", beta=9.0, resolution=256, init="perturbed:1e-3", seed=0,
                     t_final=60.0, save_every=5.0),
    lambda: mf.solve("circle", scheme="fv", beta=9.0, resolution=128, init="perturbed:1e-2", seed=0,
                     t_final=30.0, save_every=3.0),
    lambda: mf.simulate_particles(dim=3, n=4000, beta=9.0, seed=2, t_final=15.0, save_every=1.5),
], ids=["lagrangian", "fv", "particles"])
def test_every_frame_of_a_run_counts_as_its_cluster_count(make):
    """One definition everywhere: a run's cluster_count is clusters_in_frame of each of its frames, from the file."""
    run = make()
    counts = [clusters_in_frame(run, i).count for i in range(run.sizes["time"])]
    assert counts == run["cluster_count"].values.tolist()
    assert counts[0] == 0 and counts[-1] >= 2


def test_bad_input_is_one_line():
    with pytest.raises(InputError, match="finite"):
        clusters_of_density(np.array([1.0, np.nan, 1.0, 1.0]), beta=9.0)
    with pytest.raises(InputError, match="prominence must be in"):
        clusters_of_density(np.ones(8), beta=9.0, prominence=1.0)
    with pytest.raises(InputError, match="concentration must be in"):
        clusters_of_atoms(np.zeros(10), beta=9.0, concentration=0.0)
    with pytest.raises(InputError, match="beta must be a finite number > 0"):
        clusters_of_atoms(np.zeros(10), beta=0.0)
    with pytest.raises(InputError, match="positive total mass"):
        clusters_of_density(np.zeros(8), beta=9.0)


def test_the_plot_and_the_command_line_say_the_same_count(tmp_path):
    """The figure's title and the command line's line give clusters_in_frame's count of the last frame."""
    from click.testing import CliRunner

    from meanfield.cli import cli

    out = tmp_path / "run.nc"
    result = CliRunner().invoke(cli, ["solve", "circle", "--scheme", "lagrangian", "--beta", "9", "--resolution", "256",
                                      "--init", "perturbed:1e-3", "--seed", "0", "--t-final", "60", "--no-progress",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    run = mf.load_run(out)
    count = clusters_in_frame(run).count
    assert count == int(run["cluster_count"].values[-1]) >= 2
    assert f"clusters in the last frame: {count} " in result.output
    assert f"{count} clusters at the end" in mf.plot_run(run).texts[0].get_text()
