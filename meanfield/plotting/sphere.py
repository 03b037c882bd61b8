"""Runs on S^2 on equal-area (Mollweide) maps, for the sphere figure's map row (:func:`sphere_maps`) and the movie.

A density is drawn as its deviation from uniform on one colour scale for all frames
(:func:`sphere_deviation_maps`); Lagrangian nodes and tokens (:func:`has_nodes`) as markers, grouped
where they coincide (:func:`node_groups`), each group's marker area proportional to its mass
(:func:`marker_areas`, :func:`mass_legend`), so clusters are visible however small they are.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.lines import Line2D

from .run_data import frame_indices
from .style import (DEVIATION_COLORMAP, deviation_colorbar, deviation_norm, linear_range, mean_density,
                    relative_deviation, symlog)

#: Densities at this many times (first, ..., last) in the sphere figure's map row.
SPHERE_FRAMES = 4
#: Nodes in the same cube of this side (about a pixel of the maps) are drawn as one marker.
NODE_GROUP_SIZE = 0.02
#: Marker area (points^2) of a group carrying the whole mass; a group's area is proportional to its mass ...
FULL_MASS_AREA = 2500.0
#: ... but at least this, so single nodes stay visible before clusters form.
MIN_MARKER_AREA = 1.0
#: Colour of the node and token markers.
NODE_COLOUR = "tab:red"


def _cell_edges(centres: np.ndarray, low: float, high: float) -> np.ndarray:
    """Cell boundaries halfway between monotone ``centres``, closed by ``low`` and ``high``."""
    inner = 0.5 * (centres[1:] + centres[:-1])
    return np.concatenate([[low], inner, [high]]) if centres[-1] > centres[0] else \
        np.concatenate([[high], inner, [low]])


def _map_grid(dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Longitude edges in [-pi, pi], latitude edges in [-pi/2, pi/2], and the column order.

    Longitudes are wrapped to [-pi, pi) and sorted; the first column is repeated at +pi so
    the map closes without a gap at the antimeridian.
    """
    lon = np.deg2rad((np.asarray(dataset["lon"].values, dtype=float) + 180.0) % 360.0 - 180.0)
    order = np.argsort(lon)
    lon = np.append(lon[order], math.pi)
    order = np.append(order, order[0])
    lat = np.deg2rad(np.asarray(dataset["lat"].values, dtype=float))
    return _cell_edges(lon, -math.pi, math.pi), _cell_edges(lat, -math.pi / 2, math.pi / 2), order


def node_groups(points, weights, size: float = NODE_GROUP_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors grouped by the cube of side ``size`` they fall in: per group the weighted mean
    direction (the plain mean for a massless group) and the summed weight."""
    points, weights = np.asarray(points, dtype=float), np.asarray(weights, dtype=float)
    _, labels = np.unique(np.floor(points / size).astype(np.int64), axis=0, return_inverse=True)
    labels = labels.ravel()
    masses = np.bincount(labels, weights)
    factor = np.where(masses[labels] > 0, weights, 1.0)
    sums = np.stack([np.bincount(labels, factor * points[:, i]) for i in range(points.shape[1])], axis=-1)
    return sums / np.maximum(np.linalg.norm(sums, axis=-1, keepdims=True), 1e-300), masses


def marker_areas(masses, total: float) -> np.ndarray:
    """Marker areas proportional to mass (:data:`FULL_MASS_AREA` for ``total``), at least :data:`MIN_MARKER_AREA`."""
    return np.maximum(FULL_MASS_AREA * np.asarray(masses, dtype=float) / total, MIN_MARKER_AREA)


def mass_legend_handles(total: float, masses=(0.01, 0.1, 0.5)) -> tuple[list, list]:
    """Legend entries showing the marker size of a few masses (fractions of ``total``)."""
    handles = [Line2D([], [], ls="", marker="o", color=NODE_COLOUR, alpha=0.7,
                      markersize=math.sqrt(float(marker_areas([m * total], total)[0])))
               for m in masses]
    return handles, [f"mass {m:g}" for m in masses]


def mass_legend(target, total: float, **kwargs):
    """The marker-size legend of :func:`mass_legend_handles` on ``target`` (an axis or a figure)."""
    options = dict(fontsize="small", title="area $\\propto$ mass", title_fontsize="small", labelspacing=1.5,
                   borderpad=1.0, handletextpad=1.5)
    return target.legend(*mass_legend_handles(total), **(options | kwargs))


def lon_lat(points) -> tuple[np.ndarray, np.ndarray]:
    """Longitude in [-pi, pi) and latitude in [-pi/2, pi/2] (radians) of unit vectors in R^3."""
    points = np.asarray(points, dtype=float)
    return np.arctan2(points[:, 1], points[:, 0]), np.arcsin(np.clip(points[:, 2], -1.0, 1.0))


def draw_nodes(ax, points, weights, total: float):
    """Nodes on a Mollweide axis, grouped by :func:`node_groups`, marker area proportional to mass."""
    centres, masses = node_groups(points, weights)
    order = np.argsort(masses)[::-1]            # heavy groups first, so light ones stay visible on top
    lon, lat = lon_lat(centres[order])
    return ax.scatter(lon, lat, s=marker_areas(masses[order], total), color=NODE_COLOUR, alpha=0.7,
                      linewidths=0, rasterized=True)


def mollweide_style(ax) -> None:
    """A Mollweide axis with a light grid and no longitude labels (the sphere figure's maps, the movie)."""
    ax.set_xticklabels([])
    ax.tick_params(labelsize="x-small")
    ax.grid(True, alpha=0.3)


def mollweide_axes(fig, count: int) -> list:
    """``count`` Mollweide axes in a row (:func:`mollweide_style`)."""
    axes = [fig.add_subplot(1, count, i + 1, projection="mollweide") for i in range(count)]
    for ax in axes:
        mollweide_style(ax)
    return axes


def sphere_deviation_maps(dataset, indices):
    """``(lon edges, lat edges, symlog deviations of the frames at indices, deviations, linear range)``
    for Mollweide maps: one colour scale for all frames, linear range from the run's first frame."""
    lon_edges, lat_edges, order = _map_grid(dataset)
    density = np.asarray(dataset["density"].values, dtype=float)
    deviation = relative_deviation(density[indices][:, :, order], mean_density(dataset)[indices])
    linear = linear_range(relative_deviation(density[:1], mean_density(dataset)[:1]))
    return lon_edges, lat_edges, symlog(deviation, linear), deviation, linear


def has_nodes(dataset) -> bool:
    """Whether a run saved node or token positions on S^2 with their weights (Lagrangian, particles)."""
    return "positions" in dataset and "weights" in dataset and dataset["positions"].shape[-1] == 3


def sphere_maps(fig, dataset) -> None:
    """Row of equal-area (Mollweide) maps at a few times: the density's deviation from uniform on
    one shared colour scale, or for Lagrangian runs the nodes, marker area proportional to mass."""
    indices = frame_indices(dataset.sizes["time"], SPHERE_FRAMES).tolist()
    axes = mollweide_axes(fig, len(indices))
    for ax, index in zip(axes, indices):
        ax.set_title(f"t = {float(dataset['time'].values[index]):g}", fontsize="medium")
    if has_nodes(dataset):
        weights = np.asarray(dataset["weights"].values, dtype=float)
        for ax, index in zip(axes, indices):
            draw_nodes(ax, dataset["positions"].values[index], weights, float(weights.sum()))
        mass_legend(fig, float(weights.sum()), loc="outside right center")
        what = "Lagrangian nodes on $S^2$ (coincident nodes grouped, marker area $\\propto$ mass; "
    else:
        lon_edges, lat_edges, scaled, deviation, linear = sphere_deviation_maps(dataset, indices)
        norm = deviation_norm(scaled)
        for ax, frame in zip(axes, scaled):
            mesh = ax.pcolormesh(lon_edges, lat_edges, frame, shading="flat", cmap=DEVIATION_COLORMAP, norm=norm,
                                 rasterized=True)
        deviation_colorbar(fig, mesh, linear, deviation, ax=axes, shrink=0.8, pad=0.02)
        what = r"density relative to uniform, $\rho/\bar\rho - 1$, on $S^2$ ("
    fig.suptitle(f"(a) {what}Mollweide equal-area maps; longitude $-\\pi..\\pi$)", fontsize="medium")
