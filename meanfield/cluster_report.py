"""The clusters of one frame of a run file and the run's cluster events, as a table or JSON (``meanfield clusters``).

The clusters are the package's one definition (:func:`meanfield.cluster_detection.clusters_in_frame`, MATH.md §10)
read off the frame itself; their ids and the events (formation, merge, dissolution, with times located on the
stepper's dense output) are what the run recorded (:class:`meanfield.solvers.tracking.clusters.ClusterTracker`:
``cluster_id``, ``event_*``).  A file without that record (written before it existed, or a causal run) gets the
clusters without ids and no event list.
"""

from __future__ import annotations

import math

import numpy as np

from .cluster_detection import clusters_in_frame
from .errors import require
from .geometries import atoms_geometry, run_geometry


def frame_index(run, frame: int | None, time: float | None) -> int:
    """The frame asked for: ``frame`` (negative counts from the end), the saved frame nearest ``time``, or the
    last; one line naming the option and its range otherwise."""
    count = run.sizes["time"]
    require(frame is None or time is None, "give --frame or --time, not both")
    if frame is not None:
        require(-count <= frame < count, f"--frame must be in [{-count}, {count - 1}] for this run (got {frame})")
        return int(frame) % count
    if time is not None:
        times = run.time.values
        require(math.isfinite(time) and times[0] <= time <= times[-1],
                f"--time must be in [{times[0]:.6g}, {times[-1]:.6g}], the run's saved times (got {time:.6g})")
        return int(np.argmin(np.abs(times - time)))
    return count - 1


def _position(centre: np.ndarray, geometry) -> dict:
    """A cluster's position in the geometry's own coordinates (a zonal ring's polar angle; a point's by the dimension
    of its unit vector, PDE and particle runs alike), and its unit vector."""
    if geometry is None or not geometry.rings:
        geometry = atoms_geometry(centre.size)
    return geometry.position(centre) if geometry is not None else {"vector": centre.tolist()}


def _finite(value) -> float | None:
    """A number for JSON: ``None`` where it is not measured (NaN)."""
    return float(value) if math.isfinite(value) else None


def cluster_table(run, index: int) -> dict:
    """The clusters of frame ``index`` (ids from the run's record when it has one) and the run's events."""
    require("density" in run or "positions" in run,
            "the file has no density or token positions to read clusters from (not a PDE or particle run)")
    require("s" not in run.dims, "clusters of a causal kinetic run are read per slice; this command reads a "
                                 "density or particle run")
    clusters = clusters_in_frame(run, index)
    ids = [None] * clusters.count
    if "cluster_id" in run:
        recorded = np.asarray(run["cluster_id"].values[index])
        recorded = recorded[recorded >= 0]
        if recorded.size == clusters.count:
            ids = [int(value) for value in recorded]
    geometry = run_geometry(run.attrs)
    rows = [dict(id=ids[i], mass=float(clusters.masses[i]), basin_size=int(clusters.basin_sizes[i]),
                 concentration=float(clusters.concentrations[i]), prominence=_finite(clusters.prominences[i]),
                 **_position(clusters.centres[i], geometry)) for i in range(clusters.count)]
    events = []
    if "event_time" in run:
        for time, kind, a, b, mass_a, mass_b, after in zip(*(run[name].values for name in (
                "event_time", "event_kind", "event_cluster_a", "event_cluster_b", "event_mass_a", "event_mass_b",
                "clusters_after_event"))):
            events.append(dict(time=float(time), kind=str(kind), cluster_a=int(a), cluster_b=int(b) if b >= 0 else None,
                               mass_a=float(mass_a), mass_b=float(mass_b) if b >= 0 else None,
                               clusters_after=int(after)))
    formation = float(run.attrs.get("formation_time", math.nan))
    return {"frame": int(index), "time": float(run.time.values[index]), "geometry": str(run.attrs.get("geometry")),
            "beta": float(run.attrs["beta"]), "count": clusters.count, "clusters": rows,
            "events": events if "event_time" in run else None,
            "formation_time": formation if math.isfinite(formation) else None}


def format_table(table: dict) -> str:
    """The table as text: one line per cluster, then one per event."""
    lines = [f"frame {table['frame']} (t = {table['time']:.8g}), beta = {table['beta']:g}: {table['count']} "
             f"cluster{'s' if table['count'] != 1 else ''} (maxima of the attention field standing out, MATH.md §10)"]
    if table["clusters"]:
        where = next(key for key in ("angle", "polar_angle", "lat", "vector") if key in table["clusters"][0])
        header = {"angle": "angle (rad)", "polar_angle": "polar (rad)", "lat": "lat, lon (deg)",
                  "vector": "direction"}[where]
        lines.append(f"  {'id':>4}  {header:>22}  {'mass':>8}  {'basin':>7}  {'conc.':>6}  {'prom.':>6}")
        for row in table["clusters"]:
            vector = " ".join(f"{v:+.3f}" for v in row.get("vector", [])[:3]) + (" ..." if len(row.get("vector", [])) > 3
                                                                                   else "")
            position = (f"{row['lat']:8.3f}, {row['lon']:8.3f}" if where == "lat" else
                        vector if where == "vector" else f"{row[where]:.6f}")
            ident = "-" if row["id"] is None else str(row["id"])
            prominence = "-" if row["prominence"] is None else f"{row['prominence']:6.3f}"
            lines.append(f"  {ident:>4}  {position:>22}  {row['mass']:8.4f}  {row['basin_size']:>7}  "
                         f"{row['concentration']:6.3f}  {prominence:>6}")
    if table["formation_time"] is not None:
        lines.append(f"formation time (first cluster): {table['formation_time']:.8g}")
    if table["events"] is None:
        lines.append("no event record in this file (older file, or a run without cluster bookkeeping)")
    else:
        lines.append(f"{len(table['events'])} event{'s' if len(table['events']) != 1 else ''}:")
        for event in table["events"]:
            what = (f"cluster {event['cluster_b']} ({event['mass_b']:.4f}) merges into {event['cluster_a']} "
                    f"({event['mass_a']:.4f})" if event["kind"] == "merge" else
                    f"cluster {event['cluster_a']} {'forms' if event['kind'] == 'formation' else 'dissolves'} "
                    f"({event['mass_a']:.4f})")
            lines.append(f"  t = {event['time']:.10g}: {what} -> {event['clusters_after']} cluster{'s' if event['clusters_after'] != 1 else ''}")
    return "\n".join(lines)
