"""A run's records, kept apart from its science (DESIGN.md "Run files: the science and the records").

A solve or particle run carries, besides its frames, two records (:mod:`meanfield.solvers.records.checkpoint`):
the restart record (``restart_state``, ``restart_<field>`` variables and the attributes ``restart_time``,
``restart_step_size``, ``restart_fields``, ``restart_rng``, ``restart_step_start``), from which ``--init RUN.nc``
continues exactly, and the record of its start (the same with ``initial_``), from which ``meanfield rerun`` repeats
it.  They are raw bytes for the machine, not results, so they are kept out of the researcher's view:

* in a run file, in the netCDF group :data:`GROUP` (``restart``): ``xr.open_dataset(RUN.nc)`` reads the root group,
  the science alone; ``xr.open_datatree(RUN.nc)`` both (the records: its node ``restart``);
* in memory (the Dataset :func:`meanfield.solve`, :func:`meanfield.simulate_particles` and
  :func:`meanfield.load_run` return), in ``dataset.encoding["restart"]``, an ``xarray.Dataset`` which the accessor
  ``dataset.meanfield.restart`` shows.  xarray's operations carry a Dataset's ``encoding`` along (``copy``,
  ``isel``, ``assign``, pickling); :func:`meanfield.save_run` writes it to the group, xarray's own ``to_netcdf``
  does not (a file written so holds the science only, and a run continued from it remaps its last frame).

Readers ask :func:`records_of`, which finds the records wherever a Dataset has them: in its encoding; at its root
(a file written before the group existed, or a Dataset assembled by hand); else in the group of the file it was
opened from (``xr.open_dataset(RUN.nc)`` given as ``init``, whose encoding names the file).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import xarray as xr

#: The netCDF group of a run file that holds its records, and the key of a run Dataset's ``encoding`` that does.
GROUP = "restart"
#: The names of the records' variables and attributes begin so: the restart record, the record of the start.
PREFIXES = ("restart_", "initial_")


def is_record_name(name) -> bool:
    """Whether a variable or attribute name is one of a record's (:data:`PREFIXES`; the attribute ``restart``,
    which says how a run started, is science)."""
    return isinstance(name, str) and name.startswith(PREFIXES)


def _has_root_records(dataset: xr.Dataset) -> bool:
    return any(map(is_record_name, dataset.variables)) or any(map(is_record_name, dataset.attrs))


def _root_records(dataset: xr.Dataset) -> xr.Dataset:
    """The record variables and attributes at the root of ``dataset``, as a Dataset of their own."""
    return xr.Dataset({name: dataset[name].variable for name in dataset.variables if is_record_name(name)},
                      attrs={key: value for key, value in dataset.attrs.items() if is_record_name(key)})


def split(dataset: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset]:
    """``(science, records)``: ``dataset`` without the record variables and attributes at its root, and those as a
    Dataset of their own (new objects; ``dataset`` is left as it is; ``science`` keeps ``dataset``'s encoding)."""
    science = dataset.drop_vars([name for name in dataset.variables if is_record_name(name)])
    science.attrs = {key: value for key, value in dataset.attrs.items() if not is_record_name(key)}
    return science, _root_records(dataset)


def held(dataset: xr.Dataset) -> xr.Dataset:
    """The records ``dataset`` holds in its encoding, an empty Dataset put there first if it holds none: where a run
    adds its records (:func:`meanfield.solvers.records.checkpoint.add_to_dataset`)."""
    return dataset.encoding.setdefault(GROUP, xr.Dataset())


def keep(dataset: xr.Dataset, records: xr.Dataset) -> xr.Dataset:
    """``dataset`` with ``records`` as its records (in its encoding, in place); returns ``dataset``."""
    dataset.encoding[GROUP] = records
    return dataset


def read(path, check=None) -> tuple[xr.Dataset, xr.Dataset | None]:
    """``(root, records)`` of run file ``path``: its root group and its group :data:`GROUP` (``None`` without one),
    loaded after ``check(part)`` of each part's header, if given.

    The file is opened once, for both (``xr.open_datatree``): HDF5 can crash the process (a segmentation fault, not
    an exception) when a file holding variable-length strings, as ``event_kind`` is, is opened again while another
    handle holds it (pydata/xarray#8289); ``xr.open_dataset(path, group=...)`` after an open of the root was one way
    there."""
    with xr.open_datatree(path) as tree:
        root = tree.to_dataset(inherit=False)
        group = tree.children.get(GROUP)
        records = None if group is None else group.to_dataset(inherit=False)
        parts = [part for part in (root, records) if part is not None]
        for part in parts:
            if check is not None:
                check(part)
        for part in parts:
            part.load()
    return root, records


def _from_source(dataset: xr.Dataset) -> xr.Dataset | None:
    """The group of the netCDF file ``dataset`` was opened from by ``xr.open_dataset`` (its ``encoding["source"]``),
    or ``None`` (no such file, or no group)."""
    source = dataset.encoding.get("source")
    if not isinstance(source, (str, Path)) or not str(source).endswith(".nc") or not os.path.isfile(source):
        return None
    with contextlib.suppress(OSError, ValueError, KeyError, RuntimeError, TypeError):
        return read(source)[1]
    return None


def records_of(dataset: xr.Dataset) -> xr.Dataset | None:
    """The records of a run Dataset (module docstring): those in its encoding, else those at its root (an older
    file, a Dataset assembled by hand), else the group of the file it was opened from; ``None`` without any."""
    records = dataset.encoding.get(GROUP)
    if isinstance(records, xr.Dataset):
        return records
    if _has_root_records(dataset):
        return _root_records(dataset)
    records = _from_source(dataset)
    return records if records is None else keep(dataset, records).encoding[GROUP]   # read once


def science_and_records(dataset: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset | None]:
    """``(science, records)`` of a run Dataset as :func:`meanfield.app.storage.save_run` writes it: the root group
    (no record names, no records in its encoding) and the group (``None``: no records)."""
    records = records_of(dataset)
    science = split(dataset)[0] if _has_root_records(dataset) else dataset.copy(deep=False)
    science.encoding = {key: value for key, value in science.encoding.items() if key != GROUP}
    return science, (records if records is not None and (records.variables or records.attrs) else None)


@xr.register_dataset_accessor("meanfield")
class RunAccessor:
    """``dataset.meanfield``: what the package keeps of a run beside its science.

    ``dataset.meanfield.restart`` is the run's records (:func:`records_of`: the restart record and the record of its
    start, an empty Dataset for a run without them), the Dataset ``save_run`` writes to the file's group
    ``restart``; assigning a Dataset to it replaces them (``run.meanfield.restart = records``)."""

    def __init__(self, dataset: xr.Dataset):
        self._dataset = dataset

    @property
    def restart(self) -> xr.Dataset:
        records = records_of(self._dataset)
        return xr.Dataset() if records is None else records

    @restart.setter
    def restart(self, records: xr.Dataset) -> None:
        keep(self._dataset, records)
