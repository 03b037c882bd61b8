"""Every default setting in one place, read by the command line, the Python API and the settings objects.

``meanfield solve sphere`` and ``meanfield.solve("sphere")`` must run the same case, so
neither spells a default itself: both read the tables here, and so do the fields of the
settings objects of :mod:`meanfield.settings` (read when an object is made, so a changed
entry shows in every object made after it).  ``None`` means "decided by the run": the
scheme's stepper, a cadence of ``t_final / 100``, the stepper's ``atol``, and so on.
"""

from __future__ import annotations

from collections import ChainMap

#: Per geometry: the ambient dimension d and the resolution (circle: grid points N;
#: sphere: largest spherical-harmonic degree lmax; zonal: largest Gegenbauer degree L).
GEOMETRY_DEFAULTS = {"circle": {"dim": 2, "resolution": 256},
                     "sphere": {"dim": 3, "resolution": 63},
                     "zonal": {"dim": 3, "resolution": 64}}

#: Settings every run shares, ``solve`` and ``particles`` alike: the model, the clock and saving
#: (:class:`meanfield.settings.Saving`; ``save_every`` ``None``: ``frames`` frames over the run), the time
#: stepper (:class:`meanfield.settings.StepControl`; ``stepper`` and ``cfl`` ``None``: the scheme's) and the merges of
#: coincident nodes or tokens.
RUN_DEFAULTS = {"attention": "sa", "beta": 1.0, "nu": 0.0, "seed": 0,
                "t_final": 10.0, "save_every": None, "save_log": None, "frames": 100,
                "stepper": None, "rtol": 1e-8, "atol": None, "cfl": None, "dt_max": None,
                "collapse_tol": None}

#: ``solve`` settings: the shared ones and the validity monitor's tolerances
#: (:class:`meanfield.settings.Monitor`).
SOLVE_DEFAULTS = ChainMap({"init": "perturbed:1e-3", "resolution_tol": 1e-6, "positivity_tol": 1e-6},
                          RUN_DEFAULTS)

#: ``particles`` settings: the shared ones, the tokens, the stepper (``dt_max`` ``None``: ``noise_dt_max``
#: with noise, else no cap), and the attention of :class:`meanfield.settings.Attention` (``qkv``,
#: ``kernel``, ``sinkhorn_eps``, ``interaction``).
PARTICLE_DEFAULTS = ChainMap({"dim": 2, "n": 256, "init": "uniform", "sampling": "iid", "resolution": 256,
                              "stepper": "dopri5", "noise_dt_max": 1e-2,
                              "qkv": "identity", "kernel": "dot", "sinkhorn_eps": 1.0,
                              "interaction": "auto"},
                             RUN_DEFAULTS)

#: Causal (decoder) attention, MATH.md §8, for ``solve`` and ``particles``: the mask (``none``: every token attends
#: to all, today's model), the ALiBi slope lambda, and the kinetic PDE's grid of token positions ``s``.
CAUSAL_DEFAULTS = {"mask": "none", "alibi": 0.0, "positions": 65}
#: the masks: none, causal (token j attends to k <= j), strict (k < j)
MASKS = ("none", "causal", "strict")

#: ``gaussian`` settings (the moment ODEs of MATH.md §3, :mod:`meanfield.gaussian_cases`).
GAUSSIAN_DEFAULTS = {"attention": "softmax", "dim": 2, "case": "identity", "seed": 0, "sinkhorn_eps": 1.0,
                     "scaled": False, "save_every": None}


def geometry_default(geometry: str, name: str):
    """The default ``name`` (``"dim"`` or ``"resolution"``) of ``geometry``."""
    return GEOMETRY_DEFAULTS[geometry][name]
