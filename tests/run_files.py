"""Run files as one Dataset, for tests that edit a run's records by name (meanfield/app/run_records.py).

:func:`flat` reads a run file with its records (the group ``restart``) put back at the root: the layout files had
before the group, in which a test edits ``restart_time`` or ``initial_state`` like any attribute or variable.
:func:`write` writes such a Dataset as the package writes run files (the science at the root, the records in the
group), as told: no attribute is converted, so a lie stays the lie it was.  ``dataset.to_netcdf(path)`` of a flat
Dataset writes the old layout (the records at the root).
"""

import xarray as xr

from meanfield.app.run_records import GROUP, records_of, split


def flat(source) -> xr.Dataset:
    """The run file (or run Dataset) ``source`` as one Dataset, its records at the root."""
    if isinstance(source, xr.Dataset):
        run = source.copy(deep=True)
    else:
        with xr.open_dataset(source) as handle:
            run = handle.load()
    records = records_of(run)
    run.encoding = {}
    if records is not None:
        run.update(records.variables)
        run.attrs.update(records.attrs)
    return run


def write(run: xr.Dataset, path):
    """``run`` (records at its root) written with its records in the group; returns ``path``."""
    science, records = split(run)
    science.encoding = {}
    science.to_netcdf(path)
    records.to_netcdf(path, mode="a", group=GROUP)
    return path
