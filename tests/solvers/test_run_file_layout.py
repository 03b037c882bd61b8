"""Run files show the science first (issue 38, item 5): the restart record and the record of the start live in the
netCDF group ``restart`` (meanfield/app/run_records.py), so ``print(xr.open_dataset(run))`` lists the science
variables and their coordinates alone; in memory they are ``run.meanfield.restart``.  Restarts, re-runs (also on to a
later ``t_final``), ``plot`` and ``clusters`` read them from the group, or from the root of a file written before
the group; both continue bit for bit.
"""

import errno
import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.app.run_records import GROUP, PREFIXES
from meanfield.app.storage import FALLBACK_VARIABLE, Unwritable, load_run, save_run
from meanfield.cli import main

from ..run_files import flat
from .test_rerun import assert_same_run

#: What the cluster tracker adds to every density and particle run (DESIGN.md "Data contract").
CLUSTERS = {"cluster_count", "cluster_id", "cluster_mass", "cluster_centre", "event_time", "event_kind",
            "event_cluster_a", "event_cluster_b", "event_mass_a", "event_mass_b", "clusters_after_event", "merge_time",
            "merge_mass_a", "merge_mass_b", "clusters_after_merge"}
#: The science of a circle spectral run and of a particle run on S^2: every variable the file's root may show.
SOLVE_SCIENCE = {"density", "mass", "energy", "mode_amplitude"} | CLUSTERS
PARTICLE_SCIENCE = {"positions", "weights", "energy"} | CLUSTERS
#: Their coordinates (the dimensions of the science, nothing of the records).
SOLVE_COORDS, PARTICLE_COORDS = {"time", "theta", "mode"}, {"time", "particle", "component"}

SOLVE = dict(beta=6.0, resolution=64, init="perturbed:1e-3", seed=1, save_every=0.5)
PARTICLES = dict(dim=3, n=32, beta=4.0, nu=0.05, seed=1, save_every=0.5)    # noise: the generator in the record


def _solve(t_final, **more):
    return meanfield.solve("circle", **dict(SOLVE, t_final=t_final, **more))


def _particles(t_final, **more):
    return meanfield.simulate_particles(**dict(PARTICLES, t_final=t_final, **more))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A solve run and a particle run to t = 1, saved; the same runs to t = 2 straight."""
    folder = tmp_path_factory.mktemp("layout")
    return {"solve": (save_run(_solve(1.0), folder / "solve.nc"), _solve(2.0), _solve),
            "particles": (save_run(_particles(1.0), folder / "particles.nc"), _particles(2.0), _particles)}


def _shown(dataset: xr.Dataset) -> str:
    return str(dataset)          # what print(dataset) prints


@pytest.mark.parametrize("kind, science, coords", [("solve", SOLVE_SCIENCE, SOLVE_COORDS),
                                                   ("particles", PARTICLE_SCIENCE, PARTICLE_COORDS)])
def test_the_file_and_the_dataset_show_only_the_science(runs, kind, science, coords):
    path = runs[kind][0]
    with xr.open_dataset(path) as opened:
        assert set(opened.data_vars) == science and set(opened.coords) == coords
        assert set(opened.dims) == coords | {"event", "merge", "cluster", "centre_component"}
        assert not [key for key in opened.attrs if key.startswith(PREFIXES)]
        shown = _shown(opened)
    assert "restart_" not in shown and "initial_" not in shown, shown
    with xr.open_datatree(path) as tree:                          # the records: in their group
        assert list(tree.children) == [GROUP]
        records = tree[GROUP].to_dataset(inherit=False)
        assert {"restart_state", "initial_state"} <= set(records.data_vars)
        assert {"restart_time", "restart_fields", "initial_time", "initial_fields"} <= set(records.attrs)
        assert all(name.startswith(PREFIXES) for name in [*records.variables, *records.attrs])
    for dataset in (load_run(path), runs[kind][1]):                # loaded, and as the API returns it
        assert set(dataset.data_vars) == science
        assert "restart_" not in _shown(dataset) and "initial_" not in _shown(dataset)
        assert dataset.meanfield.restart.attrs["restart_time"] == float(dataset.time[-1])


@pytest.mark.parametrize("kind", ["solve", "particles"])
def test_a_restart_from_the_file_is_bit_for_bit(runs, kind):
    """From the path, from the Dataset ``load_run`` gives and from the one xarray reads (whose records are read from
    the group of the file its encoding names): each the straight run's frames and final record."""
    path, straight, run = runs[kind]
    starts = {"path": str(path), "load_run": load_run(path), "xr.load_dataset": xr.load_dataset(path)}
    for how, init in starts.items():
        second = run(2.0, init=init)
        assert second.attrs["restart"] == "exact", how
        _same_end(second, straight, how)


def _same_end(second: xr.Dataset, straight: xr.Dataset, how: str) -> None:
    """``second`` continued to ``straight``'s end is its second half bit for bit, the restart record included."""
    for name, values in second.data_vars.items():
        if "time" in values.dims:
            np.testing.assert_array_equal(values.values, straight[name].values[-values.sizes["time"]:],
                                          err_msg=f"{how}: {name}", strict=True)
    for name in ("restart_state", "restart_weights"):
        if name in straight.meanfield.restart:
            np.testing.assert_array_equal(second.meanfield.restart[name].values,
                                          straight.meanfield.restart[name].values, err_msg=f"{how}: {name}")


@pytest.mark.parametrize("kind", ["solve", "particles"])
def test_a_file_written_before_the_group_still_restarts_and_reruns(runs, tmp_path, capsys, kind):
    """The old layout (records at the root, no group): a restart, ``rerun`` and ``rerun --t-final`` read them
    there, bit for bit; ``load_run`` moves them aside, so the loaded run shows the science alone."""
    path, straight, run = runs[kind]
    old = tmp_path / "old.nc"
    flat(path).to_netcdf(old)
    with xr.open_dataset(old) as opened:
        assert {"restart_state", "initial_state"} <= set(opened.data_vars) and "restart_time" in opened.attrs
    import netCDF4
    with netCDF4.Dataset(old) as handle:
        assert not handle.groups                                   # the old layout indeed
    second = run(2.0, init=str(old))
    assert second.attrs["restart"] == "exact"
    _same_end(second, straight, "old layout")
    loaded = load_run(old)
    assert set(loaded.data_vars) == set(load_run(path).data_vars)
    assert_same_run(load_run(path), meanfield.rerun(old))
    assert main(["rerun", str(old), "--t-final", "2", "--no-progress"]) == 0   # on to t = 2: the straight run
    longer = load_run(tmp_path / "old-rerun.nc")
    for name, values in longer.data_vars.items():
        np.testing.assert_array_equal(values.values, straight[name].values, err_msg=name, strict=True)
    np.testing.assert_array_equal(longer.meanfield.restart["restart_state"].values,
                                  straight.meanfield.restart["restart_state"].values)
    capsys.readouterr()


def test_clusters_reads_either_layout(runs, tmp_path, capsys):
    """``meanfield clusters`` (and ``plot``, through the same ``load_run``) reads both layouts alike."""
    path = runs["solve"][0]
    old = tmp_path / "old.nc"
    flat(path).to_netcdf(old)
    tables = []
    for source in (path, old):
        capsys.readouterr()
        assert main(["clusters", str(source)]) == 0
        tables.append(capsys.readouterr().out)
    assert tables[0] == tables[1] and "clusters" in tables[0]


def test_both_groups_are_written_or_neither(runs, tmp_path, monkeypatch):
    """One temporary file holds the science and the records and is renamed into place when both are written: a
    disk that fills while the records are written leaves no file and no temporary where asked, and the fallback
    folder gets the whole run (meanfield/app/storage.py write_atomic)."""
    target, spare = tmp_path / "out", tmp_path / "spare"
    target.mkdir()
    spare.mkdir()
    monkeypatch.setenv(FALLBACK_VARIABLE, str(spare))
    original = xr.Dataset.to_netcdf

    def to_netcdf(self, path, *args, **kwargs):
        if Path(path).parent == target and kwargs.get("group") == GROUP:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(xr.Dataset, "to_netcdf", to_netcdf)
    with pytest.raises(Unwritable, match="No space left on device"):
        save_run(load_run(runs["solve"][0]), target / "run.nc")
    assert list(target.iterdir()) == []
    [saved] = spare.iterdir()
    assert_same_run(load_run(runs["solve"][0]), load_run(saved))


def test_xarrays_own_to_netcdf_writes_the_science_alone(runs, tmp_path):
    """As the guide says: ``run.to_netcdf`` (not ``save_run``) keeps no records, so a run continued from its file
    remaps the last frame onto the grid instead of continuing exactly."""
    path = tmp_path / "science.nc"
    load_run(runs["solve"][0]).to_netcdf(path)
    with xr.open_datatree(path) as tree:
        assert not tree.children and set(tree.to_dataset().data_vars) == SOLVE_SCIENCE
    assert not load_run(path).meanfield.restart.variables
    assert _solve(2.0, init=str(path)).attrs["restart"] == "remap"
