"""Study: Castin et al.'s Gaussian figures (seed 004, MATH.md §3) with :func:`meanfield.gaussian.solve`.

Softmax attention, one head, ``Q = A``, ``K = I`` (so ``A = K^T Q``), unscaled, mean 0.
The covariance obeys ``dSigma/dt = V Sigma A Sigma + Sigma A^T Sigma V^T``.

Closed forms used as checks.  With ``V = I`` the right-hand side is ``Sigma S Sigma`` with
``S = A + A^T`` (only the symmetric part of ``A`` matters), so ``d(Sigma^{-1})/dt = -S`` and

    Sigma(t) = (Sigma_0^{-1} - t S)^{-1}.

* ``S > 0``: finite-time blow-up at ``t* = 1 / lambda_max(Sigma_0^{1/2} S Sigma_0^{1/2})``;
  ``A = I`` gives ``t* = 1 / (2 lambda_max(Sigma_0))`` (MATH.md §3).  A nonsymmetric ``A``
  with ``A + A^T > 0`` therefore still has a closed form when ``V = I``; the blow-up table
  adds ``V != I`` cases, for which we know none, and only reports the detected time.
* ``S <= 0`` of rank ``r``: ``Sigma(t) -> Sigma_inf = P (P^T Sigma_0^{-1} P)^{-1} P^T`` with
  ``P`` an orthonormal basis of ``ker S``; the other eigenvalues decay like ``1 / t``
  (algebraically, not exponentially).  The limit has rank exactly ``d - r``.  ``S < 0``:
  ``Sigma -> 0``.

Consequence for the rank histograms (Castin et al., Fig. 3: ``A = -B B^T`` of rank
``floor(d/2)``): with ``V = I`` the limit rank is ``d - floor(d/2) = ceil(d/2)`` for every
sample, *not* smaller than ``ceil(d/2)`` as the caption states.  The study measures it.

Numerical rank of a limit.  Because the vanishing eigenvalues decay only like ``1/t``, a
threshold ``1e-6 * lambda_max`` at a moderate final time ``T`` sees none of them (at
``T = 1e4`` they are ~1e-4 relative).  We therefore call eigenvalue ``i`` persistent when it
is above ``RANK_TOL * lambda_max`` at ``T`` *and* ``lambda_i(T) / lambda_i(T / 10) > DECAY_KEEP``
(a ``1/t`` decay gives 0.1, a converged eigenvalue gives 1); if some ratio is neither
below 0.2 nor within 0.1 of 1 (a transient, seen for some random ``V`` at ``T = 1e4``), the
run is repeated with ``T`` x 100, up to ``1e8`` (``t_used``, ``clear`` are stored).  The
``1e-6`` rank at ``T`` is stored too.  For ``V = I`` the exact limit rank (``d - rank(S)``) and the solver's
agreement with the closed form at ``T`` are stored as well.  Runs that blow up
(``stop_reason`` ``blowup``, ``threshold`` or ``failed: ...``, all possible when ``V`` is a
random non-PSD matrix) are counted separately; for them we store the ``1e-6`` rank of the
last covariance (the direction of the blow-up).

Run: ``python -m meanfield.validation.studies.castin_figures [--quick] [--out-dir DIR]``.
"""

from __future__ import annotations

import argparse
import math
import time as _time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from meanfield.gaussian import RTOL, solve
from meanfield.app.storage import netcdf_safe, package_version
from ..claims import EPSILON, Check, below, fraction
from ..harness import save_figure, write_dataset

RANK_TOL = 1e-6
#: Samples per rank histogram: quick and full.
RANK_SAMPLES = {True: 20, False: 200}
DECAY_KEEP = 0.5
RANK_T_FINAL = 1e4
#: Final times tried in turn until the decay ratios are unambiguous (module docstring).
RANK_T_ESCALATION = 100.0
RANK_T_MAX = 1e8
#: lambda(T)/lambda(T/10) counts as "vanishing" below DECAY_CLEAR_LOW, "converged" within DECAY_CLEAR_BAND of 1.
DECAY_CLEAR_LOW = 0.2
DECAY_CLEAR_BAND = 0.1
CONE_T_FINAL = {"converging": 200.0, "rank-one": 1e7, "blow-up": 10.0}
#: Paths in the cone figure are drawn while trace(Sigma) stays below this.
CONE_TRACE_CLIP = 2.4
REGIMES = ("converging", "rank-one", "blow-up")


# ------------------------------------------------------------------------------------------- helpers
def run(cov0, A, V=None, t_final=1.0, save_every=None) -> xr.Dataset:
    """``solve`` from ``N(0, cov0)`` with softmax attention, ``Q = A``, ``K = I``."""
    cov0 = np.asarray(cov0, dtype=float)
    d = cov0.shape[0]
    V = np.eye(d) if V is None else np.asarray(V, dtype=float)
    return solve(np.zeros(d), cov0, V=V, Q=np.asarray(A, dtype=float), K=np.eye(d), t_final=t_final,
                 attention="softmax", save_every=save_every)


def exact_covariance_v_identity(cov0, A, t) -> np.ndarray:
    """``(Sigma_0^{-1} - t (A + A^T))^{-1}`` (``V = I``)."""
    return np.linalg.inv(np.linalg.inv(cov0) - t * (A + A.T))


def exact_blowup_v_identity(cov0, A) -> float:
    """``1 / lambda_max(Sigma_0^{1/2} (A + A^T) Sigma_0^{1/2})`` (``inf`` if that is <= 0)."""
    w, U = np.linalg.eigh(cov0)
    root = (U * np.sqrt(w)) @ U.T
    top = float(np.linalg.eigvalsh(root @ (A + A.T) @ root)[-1])
    return 1.0 / top if top > 0 else math.inf


def exact_limit_v_identity(cov0, A) -> np.ndarray:
    """``P (P^T Sigma_0^{-1} P)^{-1} P^T``, ``P`` a basis of ``ker(A + A^T)`` (requires ``A + A^T <= 0``)."""
    S = A + A.T
    w, U = np.linalg.eigh(S)
    P = U[:, np.abs(w) <= 1e-10 * max(1.0, np.abs(w).max())]
    if P.shape[1] == 0:
        return np.zeros_like(cov0)
    return P @ np.linalg.inv(P.T @ np.linalg.inv(cov0) @ P) @ P.T


def cone_coordinates(cov) -> np.ndarray:
    """``S = [[a, b], [b, c]] -> (b, (a - c)/2, (a + c)/2)``: PSD iff ``z >= sqrt(x^2 + y^2)``, rank 1 on the cone."""
    cov = np.asarray(cov)
    a, b, c = cov[..., 0, 0], cov[..., 0, 1], cov[..., 1, 1]
    return np.stack([b, (a - c) / 2, (a + c) / 2], axis=-1)


def random_spd(rng, d: int) -> np.ndarray:
    W = rng.standard_normal((d, d))
    return W @ W.T / d + 0.1 * np.eye(d)


def persistent_rank(eig_end, eig_tenth) -> int:
    """Eigenvalues above ``RANK_TOL * max`` that did not decay between ``T/10`` and ``T``."""
    top = eig_end.max()
    keep = (eig_end > RANK_TOL * top) & (eig_end > DECAY_KEEP * np.maximum(eig_tenth, 1e-300))
    return int(keep.sum())


def decay_is_clear(eig_end, eig_tenth) -> bool:
    """Every eigenvalue either decays like ``1/t`` (ratio < 0.2) or has converged (ratio within 0.1 of 1)."""
    ratio = eig_end / np.maximum(eig_tenth, 1e-300)
    tiny = eig_end <= RANK_TOL * eig_end.max()
    return bool(np.all(tiny | (ratio < DECAY_CLEAR_LOW) | (np.abs(ratio - 1.0) < DECAY_CLEAR_BAND)))


def threshold_rank(eig) -> int:
    return int((eig > RANK_TOL * eig.max()).sum())


# ----------------------------------------------------------------------------------- 1. PSD cone paths
CONE_A = {
    "converging": np.array([[-1.0, 0.6], [-0.2, -0.7]]),  # A + A^T < 0, nonsymmetric
    "rank-one": -np.outer([1.0, 0.5], [1.0, 0.5]),         # A = -u u^T: A + A^T <= 0 of rank 1
    "blow-up": np.array([[1.0, 0.8], [-0.4, 0.6]]),        # A + A^T > 0, nonsymmetric
}


def _cone_initials() -> list[np.ndarray]:
    """Six SPD starting points of trace ~1.2 spread around the cone."""
    out = []
    for k in range(6):
        phi = 2 * math.pi * k / 6 + 0.3
        x, y, z = 0.4 * math.cos(phi), 0.4 * math.sin(phi), 0.6
        out.append(np.array([[z + y, x], [x, z - y]]))
    return out


def psd_cone_paths(out_dir=None) -> xr.Dataset:
    """2x2 covariance paths in the three regimes (module docstring); ``out_dir/psd_cone.{nc,png}``."""
    initials = _cone_initials()
    runs = {regime: [run(c0, CONE_A[regime], t_final=CONE_T_FINAL[regime]) for c0 in initials]
            for regime in REGIMES}
    steps = max(r.sizes["time"] for rs in runs.values() for r in rs)
    shape = (len(REGIMES), len(initials))
    cov = np.full(shape + (steps, 2, 2), np.nan)
    times = np.full(shape + (steps,), np.nan)
    reason = np.empty(shape, dtype=object)
    blowup = np.full(shape, np.nan)
    exact_blow = np.full(shape, np.nan)
    eig_min, eig_max = np.full(shape, np.nan), np.full(shape, np.nan)
    exact_err = np.full(shape, np.nan)
    for g, regime in enumerate(REGIMES):
        A = CONE_A[regime]
        for p, r in enumerate(runs[regime]):
            n = r.sizes["time"]
            cov[g, p, :n], times[g, p, :n] = r.covariance.values, r.time.values
            reason[g, p] = r.attrs["stop_reason"]
            if r.attrs["stop_reason"] == "blowup":
                blowup[g, p] = float(r.attrs["blowup_time"])
            exact_blow[g, p] = exact_blowup_v_identity(initials[p], A)
            final = r.covariance.values[-1]
            w = np.linalg.eigvalsh(final)
            eig_min[g, p], eig_max[g, p] = w[0], w[-1]
            if regime != "blow-up":
                ref = exact_covariance_v_identity(initials[p], A, float(r.time.values[-1]))
                exact_err[g, p] = float(np.abs(final - ref).max() / np.abs(ref).max())
    xyz = cone_coordinates(cov)
    ds = xr.Dataset(
        {"covariance": (("regime", "path", "step", "i", "j"), cov),
         "time": (("regime", "path", "step"), times),
         "x": (("regime", "path", "step"), xyz[..., 0], {"long_name": "b"}),
         "y": (("regime", "path", "step"), xyz[..., 1], {"long_name": "(a - c) / 2"}),
         "z": (("regime", "path", "step"), xyz[..., 2], {"long_name": "(a + c) / 2"}),
         "stop_reason": (("regime", "path"), reason.astype(str)),
         "blowup_time": (("regime", "path"), blowup),
         "exact_blowup_time": (("regime", "path"), exact_blow),
         "final_eig_min": (("regime", "path"), eig_min),
         "final_eig_max": (("regime", "path"), eig_max),
         "final_rel_error_vs_exact": (("regime", "path"), exact_err),
         "A": (("regime", "i", "j"), np.stack([CONE_A[r] for r in REGIMES]))},
        coords={"regime": list(REGIMES), "path": np.arange(len(initials)), "i": [0, 1], "j": [0, 1]})
    ds.attrs = netcdf_safe({"study": "castin-psd-cone", "V": "identity", "Q": "A", "K": "identity",
                            "attention": "softmax", "t_final": [CONE_T_FINAL[r] for r in REGIMES],
                            "package_version": package_version()})
    if out_dir is not None:
        write_dataset(ds, Path(out_dir) / "psd_cone.nc")
        save_figure(plot_cone(ds), Path(out_dir) / "psd_cone.png")
    return ds


def _cone_wireframe(ax, height: float) -> None:
    phi = np.linspace(0, 2 * np.pi, 49)
    z = np.linspace(0, height, 7)
    P, Z = np.meshgrid(phi, z)
    ax.plot_wireframe(Z * np.cos(P), Z * np.sin(P), Z, color="grey", lw=0.4, alpha=0.5, rstride=1, cstride=4)


def plot_cone(ds: xr.Dataset) -> Figure:
    """Top: paths in the PSD cone (clipped at trace = CONE_TRACE_CLIP). Bottom: the trace-1 slice (x/z, y/z)."""
    import matplotlib as mpl
    fig = Figure(figsize=(15, 9.5), layout="constrained")
    colours = [mpl.colormaps["tab10"](k) for k in range(ds.sizes["path"])]
    titles = {"converging": r"converging: $A + A^\top \prec 0$",
              "rank-one": r"rank-one limit: $A = -uu^\top$",
              "blow-up": r"blow-up: $A + A^\top \succ 0$"}
    height = CONE_TRACE_CLIP / 2
    for g, regime in enumerate(ds["regime"].values):
        ax = fig.add_subplot(2, 3, g + 1, projection="3d")
        _cone_wireframe(ax, height)
        disc = fig.add_subplot(2, 3, g + 4)
        t = np.linspace(0, 2 * np.pi, 200)
        disc.plot(np.cos(t), np.sin(t), "k-", lw=1)
        for p in ds["path"].values:
            row = ds.sel(regime=regime, path=p)
            x, y, z = (row[v].values for v in "xyz")
            ok = np.isfinite(z)
            x, y, z = x[ok], y[ok], z[ok]
            inside = z <= height
            ax.plot(x[inside], y[inside], z[inside], color=colours[p], lw=1.5)
            ax.scatter([x[0]], [y[0]], [z[0]], color=colours[p], s=15)
            if inside[-1]:
                ax.scatter([x[-1]], [y[-1]], [z[-1]], color=colours[p], marker="*", s=60, edgecolor="k", lw=0.4)
            disc.plot(x / z, y / z, color=colours[p], lw=1.5)
            disc.plot(x[0] / z[0], y[0] / z[0], "o", color=colours[p], ms=4)
            disc.plot(x[-1] / z[-1], y[-1] / z[-1], "*", color=colours[p], ms=10, mec="k", mew=0.5)
        ax.set_xlabel("b")
        ax.set_ylabel("(a - c)/2")
        ax.set_zlabel("(a + c)/2")
        ax.set_xlim(-height, height)
        ax.set_ylim(-height, height)
        ax.set_zlim(0, height)
        ax.view_init(elev=22, azim=-60)
        A = ds["A"].sel(regime=regime).values
        reasons = sorted(set(ds["stop_reason"].sel(regime=regime).values.tolist()))
        ax.set_title(f"{titles[str(regime)]}\nA = {np.array2string(A, precision=2).replace(chr(10), '')}, V = I; "
                     f"stop: {', '.join(reasons)}", fontsize=10)
        disc.set_aspect("equal")
        disc.set_xlim(-1.08, 1.08)
        disc.set_ylim(-1.08, 1.08)
        disc.set_xlabel("x / z = 2b / (a + c)")
        disc.set_ylabel("y / z = (a - c) / (a + c)")
        disc.grid(True, alpha=0.3)
        disc.set_title(_disc_caption(ds, str(regime)), fontsize=9)
    fig.legend([Line2D([], [], color="k", lw=1), Line2D([], [], ls="", marker="o", color="grey"),
                Line2D([], [], ls="", marker="*", color="grey", mec="k", ms=10)],
               ["rank-one boundary (det = 0)", "start", "end of run (limit / blow-up direction)"],
               loc="outside lower center", ncol=3, fontsize="small")
    fig.suptitle(r"2x2 covariance in the PSD cone $z \geq \sqrt{x^2+y^2}$, $\Sigma = [[a, b], [b, c]]$ "
                 r"$\mapsto (b, (a-c)/2, (a+c)/2)$; top: paths (drawn while tr $\Sigma \leq$ "
                 f"{CONE_TRACE_CLIP:g}); bottom: projection on trace-1 matrices")
    return fig


def _disc_caption(ds: xr.Dataset, regime: str) -> str:
    row = ds.sel(regime=regime)
    if regime == "blow-up":
        err = np.abs(row.blowup_time - row.exact_blowup_time) / row.exact_blowup_time
        return (f"blow-up time $t^*$ detected {float(row.blowup_time.min()):.3f} - {float(row.blowup_time.max()):.3f};\n"
                f"max rel. error vs exact {float(err.max()):.1e}")
    t_end = float(np.nanmax(row.time.values))
    return (f"t = {t_end:g}: $\\lambda_{{min}}(\\Sigma)$ {float(row.final_eig_min.max()):.1e} (max over paths), "
            f"$\\lambda_{{max}}(\\Sigma)$ {float(row.final_eig_max.min()):.2g} - {float(row.final_eig_max.max()):.2g};\n"
            f"max rel. error vs closed form {float(row.final_rel_error_vs_exact.max()):.1e}")


# ------------------------------------------------------------------------------------ 2. blow-up cases
def _blowup_setups():
    s0 = [np.array([[1.0, 0.0], [0.0, 0.5]]), np.array([[2.0, 0.7], [0.7, 1.0]]), np.diag([0.3, 0.2, 0.1]),
          np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.2], [0.0, 0.2, 0.5]])]
    rng = np.random.default_rng(7)
    cases = [(f"A = I, Sigma_0 #{k}", c, np.eye(len(c)), np.eye(len(c))) for k, c in enumerate(s0)]
    cases.append(("A = I, Sigma_0 random d=5", random_spd(rng, 5), np.eye(5), np.eye(5)))
    A2 = np.array([[1.0, 0.8], [-0.4, 0.6]])
    A3 = np.array([[1.0, 2.0, 0.0], [-1.5, 0.5, 0.3], [0.0, 0.1, 0.8]])
    cases += [("A nonsym, A+A^T>0, V = I", s0[1], A2, np.eye(2)),
              ("A nonsym, A+A^T>0, V = I (d=3)", s0[3], A3, np.eye(3)),
              ("A nonsym, V = I + skew", s0[1], A2, np.array([[1.0, 0.5], [-0.5, 1.0]])),
              ("A nonsym, V = diag(1, 2)", s0[1], A2, np.diag([1.0, 2.0])),
              ("A = I, V = [[1, 1], [0, 1]]", s0[0], np.eye(2), np.array([[1.0, 1.0], [0.0, 1.0]]))]
    return cases


def blowup_cases(t_final: float = 50.0) -> xr.Dataset:
    """Detected blow-up times vs the closed form (``V = I``; NaN when ``V != I``: no closed form known)."""
    cases = _blowup_setups()
    detected, exact, stop, dims, rank = [], [], [], [], []
    for _, cov0, A, V in cases:
        r = run(cov0, A, V=V, t_final=t_final)
        stop.append(r.attrs["stop_reason"])
        detected.append(float(r.attrs["blowup_time"]) if r.attrs["stop_reason"] == "blowup" else math.nan)
        exact.append(exact_blowup_v_identity(cov0, A) if np.allclose(V, np.eye(len(V))) else math.nan)
        dims.append(len(cov0))
        rank.append(threshold_rank(np.linalg.eigvalsh(r.covariance.values[-1])))
    ds = xr.Dataset({"detected_blowup_time": ("case", detected), "exact_blowup_time": ("case", exact),
                     "stop_reason": ("case", np.array(stop, dtype=str)), "dim": ("case", dims),
                     "rank_at_stop": ("case", rank)},
                    coords={"case": [c[0] for c in cases]})
    ds["relative_error"] = np.abs(ds.detected_blowup_time - ds.exact_blowup_time) / ds.exact_blowup_time
    ds.attrs = netcdf_safe({"study": "castin-blowup", "t_final": t_final,
                            "exact": "V = I: 1 / lambda_max(Sigma_0^1/2 (A + A^T) Sigma_0^1/2)",
                            "rank_at_stop": f"eigenvalues above {RANK_TOL} x largest at the last step",
                            "package_version": package_version()})
    return ds


# ---------------------------------------------------------------------------------- 3. rank histograms
def _rank_sample(rng, d: int, v_random: bool, t_final: float) -> dict:
    B = rng.standard_normal((d, d // 2))
    A = -B @ B.T
    cov0 = random_spd(rng, d)
    V = rng.standard_normal((d, d)) if v_random else np.eye(d)
    while True:
        r = run(cov0, A, V=V, t_final=t_final)
        reason = r.attrs["stop_reason"]
        covs, times = r.covariance.values, r.time.values
        eig_end = np.linalg.eigvalsh(covs[-1])
        if reason != "completed":
            clear = True
            break
        eig_tenth = np.linalg.eigvalsh(covs[np.searchsorted(times, times[-1] / 10)])
        clear = decay_is_clear(eig_end, eig_tenth)
        if clear or t_final * RANK_T_ESCALATION > RANK_T_MAX * (1 + 1e-12):
            break
        t_final *= RANK_T_ESCALATION
    out = {"stop": reason, "threshold_rank": threshold_rank(eig_end), "rank": -1, "t_used": t_final,
           "clear": clear, "exact_rank": -1, "exact_error": math.nan, "eig_ratio": float(eig_end[0] / eig_end[-1])}
    if reason == "completed":
        out["rank"] = persistent_rank(eig_end, eig_tenth)
    if not v_random:
        limit = exact_limit_v_identity(cov0, A)
        out["exact_rank"] = int(np.linalg.matrix_rank(limit, tol=RANK_TOL * np.abs(limit).max()))
        ref = exact_covariance_v_identity(cov0, A, float(times[-1]))
        out["exact_error"] = float(np.abs(covs[-1] - ref).max() / np.abs(ref).max())
    return out


def rank_histograms(dims=(3, 4, 5), samples: int = 200, seed: int = 0, out_dir=None,
                    t_final: float = RANK_T_FINAL) -> xr.Dataset:
    """Castin et al. Fig. 3 (module docstring); ``out_dir/rank_histograms.{nc,png}``."""
    rng = np.random.default_rng(seed)
    rows = ("identity", "random")
    shape = (len(rows), len(dims), samples)
    fields = {k: np.full(shape, v) for k, v in
              (("rank", -1), ("threshold_rank", -1), ("exact_rank", -1), ("exact_error", math.nan),
               ("eig_ratio", math.nan), ("t_used", math.nan), ("clear", True))}
    stop = np.empty(shape, dtype=object)
    for a, row in enumerate(rows):
        for b, d in enumerate(dims):
            for s in range(samples):
                res = _rank_sample(rng, d, row == "random", t_final)
                stop[a, b, s] = res.pop("stop")
                for k, v in res.items():
                    fields[k][a, b, s] = v
    dims_names = ("V", "d", "sample")
    ds = xr.Dataset({k: (dims_names, v) for k, v in fields.items()},
                    coords={"V": list(rows), "d": list(dims), "sample": np.arange(samples)})
    ds["stop_reason"] = (dims_names, stop.astype(str))
    ds["rank"].attrs["long_name"] = (f"persistent rank at T (> {RANK_TOL} x max and lambda(T)/lambda(T/10) > "
                                     f"{DECAY_KEEP}); -1 if the run did not complete")
    ds["t_used"].attrs["long_name"] = "final time of the run used (escalated x100 while the decay was ambiguous)"
    ds["clear"].attrs["long_name"] = "decay ratios unambiguous at t_used (always True for non-completed runs)"
    ds["threshold_rank"].attrs["long_name"] = f"eigenvalues > {RANK_TOL} x max at the last step (any stop reason)"
    ds["exact_rank"].attrs["long_name"] = "V = I: rank of the exact limit P (P^T Sigma_0^-1 P)^-1 P^T; -1 otherwise"
    ds["exact_error"].attrs["long_name"] = "V = I: max |Sigma(T) - closed form| / max |closed form|"
    ds.attrs = netcdf_safe({"study": "castin-rank-histograms", "seed": seed, "t_final": t_final,
                            "A": "-B B^T, B d x floor(d/2) standard Gaussian", "Q": "A", "K": "identity",
                            "Sigma_0": "W W^T / d + 0.1 I, W standard Gaussian",
                            "V random": "standard Gaussian d x d", "attention": "softmax",
                            "package_version": package_version()})
    if out_dir is not None:
        write_dataset(ds, Path(out_dir) / "rank_histograms.nc")
        save_figure(plot_ranks(ds), Path(out_dir) / "rank_histograms.png")
    return ds


def rank_counts(ds: xr.Dataset, row: str, d: int) -> dict:
    """``{"rank k": count}`` of completed runs plus counts per other stop reason."""
    sel = ds.sel(V=row, d=d)
    stop = sel.stop_reason.values
    ranks = sel["rank"].values[stop == "completed"]
    out = {f"rank {k}": int((ranks == k).sum()) for k in range(1, d + 1)}
    for reason in ("blowup", "threshold"):
        out[reason] = int((stop == reason).sum())
    out["failed"] = int(np.char.startswith(stop.astype(str), "failed").sum())
    return out


def plot_ranks(ds: xr.Dataset) -> Figure:
    dims = [int(d) for d in ds["d"].values]
    fig = Figure(figsize=(4.6 * len(dims), 8), layout="constrained")
    axes = fig.subplots(2, len(dims), squeeze=False)
    labels = {"identity": "$V = I_d$", "random": "$V$ random"}
    for a, row in enumerate(ds["V"].values):
        for b, d in enumerate(dims):
            ax = axes[a, b]
            counts = rank_counts(ds, str(row), d)
            ranks = np.arange(1, d + 1)
            ax.bar(ranks, [counts[f"rank {k}"] for k in ranks], color="tab:blue")
            sel = ds.sel(V=row, d=d)
            blown = sel["threshold_rank"].values[sel.stop_reason.values != "completed"]
            if blown.size:
                ax.bar(ranks, [int((blown == k).sum()) for k in ranks], color="tab:red", alpha=0.6, width=0.5)
            ax.axvline(math.ceil(d / 2) - 0.5, color="k", ls="--", lw=1)
            ax.set_xticks(ranks)
            ax.set_xlabel(r"rank of the limiting covariance $\Sigma_\infty$")
            ax.set_ylabel("number of samples")
            ax.yaxis.get_major_locator().set_params(integer=True)
            note = ", ".join(f"{k} {counts[k]}" for k in ("blowup", "threshold", "failed") if counts[k])
            ax.set_title(f"{labels[str(row)]}, $d$ = {d}, rank $A$ = {d // 2}\n"
                         f"completed {int((sel.stop_reason.values == 'completed').sum())}/{ds.sizes['sample']}"
                         + (f"; {note}" if note else ""), fontsize=10)
            ax.grid(True, axis="y", alpha=0.3)
    from matplotlib.patches import Patch
    fig.legend([Patch(color="tab:blue"), Patch(color="tab:red", alpha=0.6), Line2D([], [], color="k", ls="--")],
               ["completed run: persistent rank of the limit",
                f"blow-up / threshold / failed run: rank (> {RANK_TOL:g} x max) of the last covariance",
                r"$\lceil d/2 \rceil - 1/2$ (Castin et al.: limit rank below this line)"],
               loc="outside lower center", ncol=3, fontsize="small")
    escalated = int((ds.t_used.values > ds.attrs["t_final"]).sum())
    fig.suptitle(f"Rank of the limiting covariance, softmax, $A = -BB^\\top$ of rank $\\lfloor d/2 \\rfloor$, "
                 f"$T$ = {ds.attrs['t_final']:g}"
                 + (f" ({escalated} ambiguous runs extended up to T = {float(ds.t_used.max()):g})" if escalated else "")
                 + f"; {ds.sizes['sample']} samples per panel, seed {ds.attrs['seed']}")
    return fig


# --------------------------------------------------------------------------------------- run all, table
def format_table(cone: xr.Dataset, blow: xr.Dataset, ranks: xr.Dataset) -> str:
    lines = ["PSD cone paths (2x2, V = I):"]
    for regime in cone["regime"].values:
        row = cone.sel(regime=regime)
        reasons = ",".join(sorted(set(row.stop_reason.values.tolist())))
        if str(regime) == "blow-up":
            err = float((np.abs(row.blowup_time - row.exact_blowup_time) / row.exact_blowup_time).max())
            check = f"blow-up time rel err vs exact {err:.1e}"
        else:
            check = f"Sigma(T) rel err vs closed form {float(row.final_rel_error_vs_exact.max()):.1e}"
        lines.append(f"  {str(regime):<11} stop {reasons:<10} final eig min <= {float(row.final_eig_min.max()):.2e} "
                     f"max <= {float(row.final_eig_max.max()):.2e}  {check}")
    lines.append("Blow-up times:")
    lines.append(f"  {'case':<32} {'stop':<9} {'detected':>10} {'exact':>10} {'rel err':>9} {'rank':>4}")
    for case in blow["case"].values:
        r = blow.sel(case=case)
        lines.append(f"  {str(case):<32} {str(r.stop_reason.values):<9} {float(r.detected_blowup_time):>10.6f} "
                     f"{float(r.exact_blowup_time):>10.6f} {float(r.relative_error):>9.1e} {int(r.rank_at_stop):>4}")
    lines.append("Rank of limits (completed runs: persistent rank; others counted by stop reason):")
    for row in ranks["V"].values:
        for d in ranks["d"].values:
            counts = rank_counts(ranks, str(row), int(d))
            text = "  ".join(f"{k}:{v}" for k, v in counts.items() if v)
            sel = ranks.sel(V=row, d=d)
            extra = ""
            if str(row) == "identity":
                extra = (f"  exact limit ranks {sorted(set(sel.exact_rank.values.tolist()))}, "
                         f"max rel err vs closed form {float(sel.exact_error.max()):.1e}")
            used = ", ".join(f"T={t:g}:{int((sel.t_used.values == t).sum())}" for t in np.unique(sel.t_used.values))
            ambiguous = int((~sel.clear.values.astype(bool)).sum())
            lines.append(f"  V {str(row):<8} d={int(d)} ceil(d/2)={math.ceil(int(d) / 2)}  {text}{extra}  [{used}"
                         f"{'; still ambiguous ' + str(ambiguous) if ambiguous else ''}]")
    return "\n".join(lines)


def run_all(quick: bool = False, out_dir="castin-figures", seed: int = 0):
    """The three parts (module docstring); ``seed``: the rank histograms' random draws (``A``, ``Sigma_0``, ``V``)."""
    start = _time.perf_counter()
    cone = psd_cone_paths(out_dir=out_dir)
    blow = blowup_cases()
    ranks = rank_histograms(samples=RANK_SAMPLES[bool(quick)], seed=seed, out_dir=out_dir)
    if out_dir is not None:
        write_dataset(blow, Path(out_dir) / "blowup_cases.nc")
    return cone, blow, ranks, _time.perf_counter() - start


# --------------------------------------------------------------------------------------------- claims
def _closed_form_conditioning(cone, regimes) -> float:
    """Largest ``T |A + A^T| |Sigma_0|`` over the cone paths of ``regimes``: the condition number of
    ``Sigma_0^{-1} - T (A + A^T)``, which the closed form inverts (validation/studies/castin_figures.py)."""
    worst = 0.0
    for regime in regimes:
        a = cone.A.sel(regime=regime).values
        for path in cone["path"].values:
            at = cone.sel(regime=regime, path=path)
            worst = max(worst, float(np.nanmax(at.time.values)) * np.linalg.norm(a + a.T, 2)
                        * np.linalg.norm(at.covariance.isel(step=0).values, 2))
    return worst


def castin_claims(result) -> list[Check]:
    cone, blow, ranks, _ = result
    regimes = ["converging", "rank-one"]
    condition = _closed_form_conditioning(cone, regimes)
    checks = [below("PSD-cone paths (converging, rank-one) end at the closed-form limit (relative error)",
                    cone.final_rel_error_vs_exact.sel(regime=regimes).max(), condition * EPSILON + 10 * RTOL,
                    source=f"round-off: the closed form inverts Sigma_0^-1 - T (A + A^T), condition up to T |A + A^T| "
                           f"|Sigma_0| = {condition:.3g} (T = 1e7 for rank one): eps times that (the error stayed "
                           f"1.36e-9 at rtol = 1e-8 ... 1e-12); plus 10 rtol for DOP853")]
    known = np.isfinite(blow.exact_blowup_time.values)
    checks.append(below("Blow-up times against the closed form (largest relative error)",
                        np.max(blow.relative_error.values[known]), 10 * RTOL,
                        source="measured convergence: proportional to DOP853's rtol (3.6e-9, 4.0e-11, 5.9e-13 at "
                               "rtol = 1e-8, 1e-10, 1e-12): 10 rtol"))
    for d in ranks["d"].values:
        limit = math.ceil(int(d) / 2)
        checks.append(fraction(f"V = I, d = {int(d)}: every limit rank is ceil(d/2) = {limit}",
                               ranks.sel(V="identity", d=d)["rank"].values == limit,
                               source="exact: with V = I the limit has rank d - rank(A + A^T) = ceil(d/2) "
                                      "(validation/studies/castin_figures.py docstring)"))
        rnd = ranks.sel(V="random", d=d)
        done = rnd.stop_reason.values == "completed"
        checks.append(fraction(f"V random, d = {int(d)}: every run that converges reaches rank <= {limit}",
                               rnd["rank"].values[done] <= limit,
                               source="exact: ranks are integers; the bound ceil(d/2) is Castin et al.'s "
                                      "(MATH.md §3)"))
    return checks


def main(argv=None):
    parser = argparse.ArgumentParser(description="Castin et al. Gaussian figures (PSD cone, blow-up, ranks).")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out-dir", default="castin-figures")
    args = parser.parse_args(argv)
    cone, blow, ranks, wall = run_all(quick=args.quick, out_dir=args.out_dir)
    print(format_table(cone, blow, ranks))
    print(f"wall time {wall:.1f} s; wrote {args.out_dir}/")


if __name__ == "__main__":
    main()
