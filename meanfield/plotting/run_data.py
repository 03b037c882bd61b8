"""What the figures and movies read from a run (the data contract of DESIGN.md).

The geometries drawn (:data:`PLOTTABLE`) and the variables and attributes each figure needs
(:data:`REQUIRED`, :func:`check_plottable`, :func:`require_run`); the run's model and the modes its
figure shows (:func:`run_model`, :func:`default_modes`, :func:`checked_modes`); the linear theory of
its mode amplitudes (:func:`theory_curves`, MATH.md §2.3); which frames to draw (:func:`frame_indices`);
why it stopped, shortened for a title (:func:`short_reason`).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError, require
from ..geometries import run_geometry
from ..model import Model
from ..normalization import Normalization
from ..theory import dominant_mode, growth_rates, layer_growth_factors

#: The geometries with a figure (and a movie).
PLOTTABLE = ("circle", "sphere", "zonal", "particles", "gaussian")
#: What each figure reads besides the ``time`` axis: variables / coordinates, then attributes.
REQUIRED = {"circle": ("density", "theta", "mass", "energy", "mode_amplitude"),
            "zonal": ("density", "polar", "mass", "energy", "mode_amplitude"),
            "sphere": ("lat", "lon", "mass", "energy", "mode_amplitude"),
            "particles": ("positions", "weights", "energy"),
            "gaussian": ("mean", "covariance")}
REQUIRED_ATTRS = ("attention", "beta", "nu")
#: What the figures of token runs in R^d read (:mod:`meanfield.plotting.tokens`), by their ``geometry``.
TOKEN_REQUIRED = {"hardmax": ("positions", "event_time"), "rd-tokens": ("positions", "limit_value", "limit_label")}
#: The default mode panel shows modes ``1 .. max(MIN_MODES, 2 k*)``.
MIN_MODES = 6
#: A title quotes at most this many characters of why a run stopped early.
TITLE_REASON_CHARS = 60


def check_plottable(dataset) -> None:
    """Refuse, in one line, a dataset whose figure cannot be drawn: an unknown geometry, a missing
    variable, attribute or time axis (e.g. a file holding only attributes and times)."""
    geometry = dataset.attrs.get("geometry", "unknown")
    if geometry in TOKEN_REQUIRED:                # tokens in R^d (meanfield.plotting.tokens)
        require_run(dataset, "plot", "figure", TOKEN_REQUIRED[geometry], "positions")
        return
    if geometry not in PLOTTABLE:
        raise InputError(f"plot: geometry {geometry} is not supported (circle, sphere, zonal, particle and gaussian "
                         f"runs only; tokens in R^d: {' and '.join(TOKEN_REQUIRED)} runs)")
    shape = run_geometry(dataset.attrs)           # a map (S^2) is drawn from its density or from its nodes
    needed = REQUIRED[geometry] + (("density",) if shape is not None and not shape.curve and "positions" not in dataset
                                   else ())
    require_run(dataset, "plot", "figure", needed, "mean" if geometry == "gaussian" else "energy",
                () if geometry == "gaussian" else REQUIRED_ATTRS)


def require_run(dataset, command: str, product: str, needed, timed: str, attrs=()) -> None:
    """One line, prefixed ``command:``, unless ``dataset`` has the variables ``needed`` for its ``product``
    (figure, movie), the attributes ``attrs``, and a time axis of at least one time on variable ``timed``."""
    geometry = dataset.attrs.get("geometry", "unknown")
    missing = [name for name in needed if name not in dataset.variables]
    require(not missing, f"{command}: this {geometry} run lacks {', '.join(missing)} (a {geometry} {product} needs "
                         f"{', '.join(needed)}); is it a complete meanfield run file?")
    missing = [name for name in attrs if name not in dataset.attrs]
    require(not missing, f"{command}: this {geometry} run lacks the attribute(s) {', '.join(missing)}; "
                         f"is it a meanfield run file?")
    require("time" in dataset.dims and dataset.sizes["time"] >= 1 and "time" in dataset[timed].dims,
            f"{command}: this {geometry} run has no frames ({timed} needs a time axis with at least one time)")


def run_model(dataset) -> Model:
    """The :class:`~meanfield.model.Model` of a run, from its attributes."""
    attrs = dataset.attrs
    return Model(attention=attrs["attention"], beta=attrs["beta"], nu=attrs["nu"],
                 dim=int(attrs.get("dim", 2)))


def run_dominant_mode(dataset) -> int:
    """The run's ``dominant_mode`` attribute, else the most unstable mode of its model (MATH.md §2.3)."""
    if "dominant_mode" in dataset.attrs:
        return int(dataset.attrs["dominant_mode"])
    return dominant_mode(run_model(dataset))


def default_modes(dataset) -> list[int]:
    """Modes ``1 .. max(6, 2 k*)``, capped by the modes the run resolved (stored and not dealiased)."""
    resolved = int(dataset.attrs.get("dealiased_modes", dataset["mode"].max()))
    return list(range(1, min(max(MIN_MODES, 2 * run_dominant_mode(dataset)), resolved) + 1))


def checked_modes(dataset, modes) -> list[int]:
    """``modes`` (default :func:`default_modes`) as a list, refused in one line unless each is a stored mode >= 1."""
    modes = default_modes(dataset) if modes is None else [int(k) for k in np.atleast_1d(modes)]
    stored = set(int(k) for k in dataset["mode"].values)
    require(len(modes) > 0, "plot: modes must name at least one mode")
    require(all(k >= 1 and k in stored for k in modes),
            f"plot: modes must be stored modes >= 1 (got {modes}; the run stores 0..{max(stored)})")
    return modes


def observed_amplitudes(dataset, modes) -> np.ndarray:
    """The saved amplitudes of ``modes``, shape ``(time, modes)``."""
    return np.asarray(dataset["mode_amplitude"].sel(mode=modes).values, dtype=float)


def _rates(dataset, modes) -> np.ndarray:
    """The growth per unit time of each mode: the flow's ``lambda_k`` (MATH.md §2.3), or for a layered run
    (coordinate ``layer``, step ``dt_max``) ``log(g_k) / alpha`` of its layers' factors (MATH.md §11)."""
    if "layer" not in dataset.coords:
        return growth_rates(run_model(dataset), modes)
    alpha = float(dataset.attrs["dt_max"])
    return np.log(layer_growth_factors(run_model(dataset), modes, alpha)) / alpha


def _exponents(dataset, modes, times: np.ndarray) -> np.ndarray:
    """``log`` of the linear growth from the first saved time, shape ``(time, modes)``: ``(t - t0)`` times
    :func:`_rates`, or for layers under a normalisation other than Post-LN, whose factor changes from layer to layer,
    the sum of ``log g_k`` over the layers passed (:func:`meanfield.theory.layer_growth_factors`, MATH.md §11)."""
    attrs = dataset.attrs
    if "layer" not in dataset.coords or str(attrs.get("normalization", "post")) == "post":
        return np.outer(times - times[0], _rates(dataset, modes))
    alpha = float(attrs["dt_max"])
    scheme = Normalization(str(attrs["normalization"]), **{key: float(attrs[key]) for key in ("r0", "alpha",
                                                                                            "mix_switch")})
    layers = np.rint(times / alpha).astype(int)
    logs = [np.log(layer_growth_factors(run_model(dataset), modes, alpha, scheme, layer))
            for layer in range(layers[0], layers[-1])]
    return np.vstack((np.zeros(len(modes)), np.cumsum(np.reshape(logs, (-1, len(modes))), axis=0)))[layers - layers[0]]


def theory_curves(dataset, modes=None) -> np.ndarray:
    """Linear-theory amplitudes ``|rho_hat_k(t0)| exp(lambda_k (t - t0))``, shape ``(time, modes)``.

    ``lambda_k`` from :func:`meanfield.theory.growth_rates` (MATH.md §2.3); ``t0`` is the
    first saved time (0 for a run started from ``--init``).  A run with a noise schedule
    (:mod:`meanfield.noise_schedule`) has ``lambda_k(nu(t))``: the exponent is
    ``lambda_k(0) (t - t0) - k (k + d - 2) int_{t0}^t nu`` (the integral exact from the spec, or the trapezoids of
    the saved ``nu(time)`` for a Python function).
    """
    check_plottable(dataset)
    modes = checked_modes(dataset, modes)
    times = np.asarray(dataset["time"].values, dtype=float)
    exponent = _exponents(dataset, modes, times)
    noise = _noise_integrals(dataset, times)
    if noise is not None:
        degrees = np.asarray(modes, dtype=float)
        exponent -= np.outer(noise, degrees * (degrees + int(dataset.attrs.get("dim", 2)) - 2))
    with np.errstate(over="ignore"):
        return observed_amplitudes(dataset, modes)[0] * np.exp(exponent)


def _noise_integrals(dataset, times: np.ndarray) -> np.ndarray | None:
    """``int_{t0}^t nu`` at each saved time of a run with a noise schedule, else ``None``."""
    from ..noise_schedule import NoiseSchedule, is_function_spec

    spec = dataset.attrs.get("nu_schedule")
    if spec is None:
        return None
    if not is_function_spec(str(spec)):
        schedule = NoiseSchedule.parse(str(spec))
        return np.array([schedule.integral(times[0], t) for t in times])
    values = np.asarray(dataset["nu"].values, dtype=float)
    return np.concatenate(([0.0], np.cumsum(np.diff(times) * (values[1:] + values[:-1]) / 2)))


def frame_indices(count: int, frames: int) -> np.ndarray:
    """``min(frames, count)`` indices from first to last, evenly spaced, without repeats (the sphere
    figure's map row and the movie's frames)."""
    return np.unique(np.linspace(0, count - 1, min(frames, count)).round().astype(int))


def short_reason(reason: str) -> str:
    """Why a run stopped, for a title: the text before the first colon, cut to :data:`TITLE_REASON_CHARS`."""
    reason = reason.split(":")[0].strip()
    if len(reason) > TITLE_REASON_CHARS:
        reason = reason[:TITLE_REASON_CHARS - 1].rstrip() + "\u2026"
    return reason
