"""The package's one cluster definition (meanfield.cluster_detection; issue 22 item 2) on every geometry, for
densities and tokens alike, and the same count wherever a run reports one."""

import math

import numpy as np
import pytest

import meanfield as mf
from meanfield.cluster_detection import clusters_in_frame, clusters_of_atoms, clusters_of_density
from meanfield.errors import InputError
from meanfield.geometry import sphere_area
from meanfield.solvers.sphere import make_sphere_basis

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


def test_circle_density_three_bumps_with_basins_that_tile_the_mass():
    n = 512
    theta = 2 * math.pi * np.arange(n) / n
    density = sum(np.exp(40 * np.cos(theta - c)) for c in (1.0, 3.0, 5.0))
    density /= density.sum() * 2 * math.pi / n
    clusters = clusters_of_density(density)
    assert clusters.count == 3
    assert np.allclose(np.sort(clusters.angles), [1, 3, 5], atol=2 * math.pi / n)
    assert np.allclose(clusters.masses, 1 / 3, atol=1e-9) and clusters.masses.sum() == pytest.approx(1, abs=1e-12)
    assert np.all(clusters.dense_masses < clusters.masses)           # the tails are outside the dense arcs
    assert clusters.peaks.max() == pytest.approx(density.max() * 2 * math.pi, rel=1e-12)   # over the mean 1/(2 pi)
    assert mf.detect_clusters(density).count == 3


def test_the_level_is_twice_the_mean_density_exactly():
    """A plateau on 10 % of the circle at 2.01 x the mean density is a cluster (mass ~0.2); at 1.99 x it is not.
    Catches a level taken against anything but the mean (the maximum, the unweighted cell mass) or a >= slip."""
    n = 1000
    for ratio, expected in ((2.01, 1), (1.99, 0)):
        height = 0.9 * ratio / (1 - 0.1 * ratio)         # height / mean = ratio, mean = 0.1 height + 0.9
        density = np.ones(n)
        density[:100] = height
        density /= density.mean() * 2 * math.pi
        assert density[0] / density.mean() == pytest.approx(ratio, rel=1e-12)
        assert clusters_of_density(density).count == expected


def test_sphere_density_clusters_across_the_date_line_and_around_the_pole():
    basis, grid = _sphere_grid()
    weights = basis.weights[:, 0]
    kw = dict(geometry="sphere", lat=basis.lat, lon=basis.lon, volumes=weights)
    three = _vmf_mixture(grid, AXES, 30.0)
    clusters = clusters_of_density(three, **kw)
    assert clusters.count == 3
    assert np.max(np.abs(np.sort(np.abs(clusters.centres @ AXES.T).max(axis=1)) - 1)) < 1e-3
    assert clusters.masses.sum() == pytest.approx(1.0, rel=1e-12)
    assert np.allclose(clusters.masses, 1 / 3, atol=2e-3)
    # a bump on the date line (longitudes 0 and 360 are neighbours) and one on the pole (a polar row's cells meet)
    date_line = np.array([-1.0, 1e-3, 0.0]) / math.hypot(1.0, 1e-3)
    for centre in (date_line, AXES[2]):
        assert clusters_of_density(_vmf_mixture(grid, [centre], 30.0), **kw).count == 1
    assert clusters_of_density(np.full(grid.shape[:2], 1 / (4 * math.pi)), **kw).count == 0


def test_tokens_and_the_density_they_sample_have_the_same_clusters(rng):
    """On S^2: 40000 exact samples of three vMF bumps give the density's three clusters, centres within a cell,
    basin masses within the sampling error (1/3 +- 3 sqrt(2 / 9 / n)); uniform tokens give none.  The resolution
    keeps 8 tokens in a cell's uniform share: N^2 / 2 = 40000 / 8, N = 100 cells around."""
    tokens = _sample_vmf(rng, AXES, 30.0, 40000)
    clusters = clusters_of_atoms(tokens)
    assert clusters.count == 3 and clusters.cells == 100
    assert np.all(np.abs(clusters.centres @ AXES.T).max(axis=1) > math.cos(2 * math.pi / 100))
    assert np.allclose(clusters.masses, 1 / 3, atol=3 * math.sqrt(2 / 9 / 40000))
    uniform = rng.standard_normal((40000, 3))
    uniform /= np.linalg.norm(uniform, axis=1, keepdims=True)
    assert clusters_of_atoms(uniform).count == 0
    # on the circle, tokens at three angles and their own cell count
    angles = np.concatenate([rng.normal(c, 0.02, 3000) for c in (0.5, 2.5, 4.5)])
    on_circle = clusters_of_atoms(angles)
    assert on_circle.count == 3 and np.allclose(np.sort(on_circle.angles), [0.5, 2.5, 4.5], atol=0.01)


def test_zonal_rings_as_a_density_and_as_tokens():
    """S^4 (d = 5): a cap on the pole and a ring at polar angle 2 are two clusters, as a density on Gauss nodes
    and as tokens on S^4 (their zonal rings); a uniform zonal density has none."""
    from meanfield.solvers.zonal import ZonalBasis

    dim = 5
    basis = ZonalBasis(40, dim)
    polar = np.arccos(basis.nodes)
    cap, ring = np.exp(20 * (np.cos(polar) - 1)), np.exp(-((polar - 2.0) / 0.1) ** 2)
    density = cap / (cap @ basis.quad) + ring / (ring @ basis.quad)      # half the mass each
    clusters = clusters_of_density(density, geometry="zonal", polar=polar, volumes=basis.quad, dim=dim)
    assert clusters.count == 2 and np.allclose(np.sort(clusters.angles), [0.0, 2.0], atol=0.1)
    assert clusters.angles.min() == 0.0                       # the cap is centred on the pole itself
    # basins are drawn from the reported centres: each node's mass goes to the nearer one
    nearer = np.argmin(np.abs(polar[:, None] - clusters.angles[None, :]), axis=1)
    assert np.allclose(clusters.masses, np.bincount(nearer, density * basis.quad), rtol=1e-12)
    uniform = np.full(polar.size, 1 / sphere_area(dim))
    assert clusters_of_density(uniform, geometry="zonal", polar=polar, volumes=basis.quad, dim=dim).count == 0
    rng = np.random.default_rng(5)
    around = rng.standard_normal((4000, dim - 1))
    around /= np.linalg.norm(around, axis=1, keepdims=True)
    rings = np.where(rng.uniform(size=4000) < 0.5, 0.05, 2.0) + rng.normal(0, 0.01, 4000)
    tokens = np.hstack((np.sin(rings)[:, None] * around, np.cos(rings)[:, None]))
    assert clusters_of_atoms(tokens, zonal=True, dim=dim).count == 2


def test_tokens_in_high_dimension_are_grouped_by_linkage(rng):
    """S^7: four tight groups and a uniform background of 20 % of the mass: four clusters of ~20 % each."""
    d = 8
    centres = np.eye(d)[:4]
    tight = centres[rng.integers(0, 4, 800)] + 1e-4 * rng.standard_normal((800, d))
    background = rng.standard_normal((200, d))
    tokens = np.vstack((tight, background))
    tokens /= np.linalg.norm(tokens, axis=1, keepdims=True)
    clusters = clusters_of_atoms(tokens)
    assert clusters.count == 4
    assert np.all(np.abs(clusters.centres @ centres.T).max(axis=1) > 1 - 1e-6)
    assert np.allclose(clusters.dense_masses, 0.2, atol=0.05) and clusters.masses.sum() == pytest.approx(1.0)
    assert clusters_of_atoms(background / np.linalg.norm(background, axis=1, keepdims=True)).count == 0


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
        clusters_of_density(np.array([1.0, np.nan, 1.0, 1.0]))
    with pytest.raises(InputError, match="level must be > 1"):
        clusters_of_density(np.ones(8), level=1.0)
    with pytest.raises(InputError, match="cells must be an integer >= 8"):
        clusters_of_atoms(np.zeros(10), cells=4)


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
