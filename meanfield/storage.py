"""Run datasets: build, write and read them (DESIGN.md data contract).

Every run is one ``xarray.Dataset`` with ``time`` as the leading dimension and
provenance attributes sufficient to re-run it.  Files are netCDF4.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import xarray as xr

from .errors import InputError

#: Attributes every run file carries (DESIGN.md).
REQUIRED_ATTRS = ("geometry", "attention", "beta", "nu", "dim", "scheme", "stepper", "resolution",
                  "seed", "init", "package_version", "command", "stop_reason", "wall_time")

VARIABLE_ATTRS = {
    "density": {"long_name": "token density rho with respect to arc length / surface measure"},
    "mass": {"long_name": "total mass int rho"},
    "energy": {"long_name": "scaled interaction energy exp(-beta) E(rho), E as in MATH.md section 2",
               "note": "the constant factor exp(beta) is omitted so that large beta does not overflow"},
    "mode_amplitude": {"long_name": "spectral amplitude |rho_hat_k| (circle) or sqrt(sum_m |rho_lm|^2)"},
    "positions": {"long_name": "token / node positions on the unit sphere (Cartesian components)"},
    "theta": {"long_name": "token angles in [0, 2 pi)"},
    "node_theta": {"long_name": "Lagrangian node angles in [0, 2 pi) (theta is the grid of density)"},
    "density_resolved": {"long_name": "1: density is the flow map's band-limited projection (resolved); "
                                      "0: unresolved, density holds non-negative mass-exact cell averages"},
    "flow_map_tail": {"long_name": "top-sixth spectral tail of the Lagrangian node displacement"},
    "cluster_count": {"long_name": "number of clusters: groups of nodes linked within merge_distance with mass "
                                   ">= min_cluster_mass (solvers.clusters)"},
    "cluster_energy": {"long_name": "exp(-beta) E of the clusters collapsed to points (MATH.md section 5): "
                                    "the energy of a plateau"},
}


def package_version() -> str:
    from . import __version__
    return __version__


def netcdf_safe(attrs: dict) -> dict:
    """Attributes converted to types netCDF stores (None -> 'none', bool -> int)."""
    out = {}
    for key, value in attrs.items():
        if value is None:
            value = "none"
        elif isinstance(value, bool):
            value = int(value)
        elif isinstance(value, (np.integer, np.floating)):
            value = value.item()
        elif not isinstance(value, (int, float, str)):
            value = str(value)
        out[key] = value
    return out


def build_run_dataset(times, frames: list[dict], dims: dict, coords: dict, attrs: dict) -> xr.Dataset:
    """Stack per-frame records into the DESIGN.md Dataset."""
    data_vars = {}
    for name in frames[0]:
        values = np.stack([np.asarray(frame[name]) for frame in frames])
        data_vars[name] = (("time",) + tuple(dims.get(name, ())), values, VARIABLE_ATTRS.get(name, {}))
    coords = dict(coords)
    coords["time"] = ("time", np.asarray(times, dtype=float), {"long_name": "time"})
    return xr.Dataset(data_vars, coords=coords, attrs=netcdf_safe(attrs))


def save_run(dataset: xr.Dataset, path) -> Path:
    """Write a run to netCDF (creating parent folders)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dataset.to_netcdf(path)
    return path


def load_run(path, geometry: str | None = None) -> xr.Dataset:
    """Read a run written by :func:`save_run`; refuse anything else with one line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        with xr.open_dataset(path) as handle:
            dataset = handle.load()
    except Exception as exc:  # corrupt, truncated or not netCDF at all
        raise InputError(f"{path}: not a readable netCDF file ({type(exc).__name__})") from None
    missing = [name for name in ("geometry", "stop_reason") if name not in dataset.attrs]
    if missing or "time" not in dataset.dims:
        raise InputError(f"{path}: not a meanfield run file (missing {', '.join(missing) or 'time'})")
    if geometry is not None and dataset.attrs["geometry"] != geometry:
        raise InputError(f"{path}: a {dataset.attrs['geometry']} run, but a {geometry} run is needed")
    return dataset


def last_valid_density(dataset: xr.Dataset, path) -> np.ndarray:
    """The last saved density frame of a run, checked finite."""
    if "density" not in dataset or dataset.sizes.get("time", 0) == 0:
        raise InputError(f"{path}: the run has no density frames")
    density = np.asarray(dataset["density"].isel(time=-1).values, dtype=float)
    if not np.all(np.isfinite(density)):
        raise InputError(f"{path}: the last density frame is not finite")
    return density


def describe_time(t: float) -> str:
    return "inf" if math.isinf(t) else f"{t:.6g}"
