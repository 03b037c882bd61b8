"""Reference runs: a record of what the package computes, to hold a refactor to the same bits.

Each case of :data:`CASES` is a short run of one scheme, geometry, attention, normalisation, mask, noise schedule
or a restart chain (a run to half its time continued from its file).  :func:`record` keeps, for every case, every
numeric variable's bytes and every attribute (``wall_time`` and the thread settings aside, which measure the machine)
in one ``.npz``, those of the run's records (``dataset.meanfield.restart``, :mod:`meanfield.app.run_records`) among
them under their own names; :func:`compare` lists what differs between two records, variable by variable and attribute by
attribute.  Record before a change, record after, compare: a behaviour-preserving change shows no difference.

Run: ``python -m meanfield.validation.reference_runs record FILE [--cases A,B]`` and
``python -m meanfield.validation.reference_runs compare BEFORE AFTER`` (exit 1 when they differ).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

#: Attributes that measure the machine or the moment, not the computation.
UNRECORDED = ("wall_time", "threads", "blas_threads")


def _solve(geometry, **settings):
    from meanfield.solvers.runs.solve import solve

    return lambda: solve(geometry, **settings)


def _particles(**settings):
    from meanfield.solvers.runs.particle_run import simulate

    return lambda: simulate(**settings)


def _restarted(make, **later):
    """The run of ``make(t_final)`` to half its time, saved, then continued from its file to the end."""
    def run():
        from meanfield.app.storage import save_run

        with tempfile.TemporaryDirectory() as folder:
            first = Path(folder) / "first.nc"
            save_run(make(0.5), first)
            dataset = make(1.0, init=str(first), **later)
        for key, value in dataset.attrs.items():     # the file's place is not the computation's
            if isinstance(value, str) and folder in value:
                dataset.attrs[key] = value.replace(folder, "FOLDER")
        return dataset
    return run


def _gaussian():
    from meanfield.solvers.runs.gaussian_run import solve

    return solve(np.zeros(2), np.eye(2), V=np.eye(2), Q=np.eye(2), K=np.eye(2), t_final=2.0)


#: name -> a function making the run (short runs: the whole record takes about a minute).
CASES = {
    "circle-spectral": _solve("circle", beta=6.0, resolution=128, t_final=8.0),
    "circle-spectral-noise": _solve("circle", beta=6.0, nu=0.05, resolution=128, t_final=5.0),
    "circle-spectral-rk4": _solve("circle", beta=6.0, stepper="rk4", resolution=128, t_final=4.0),
    "circle-spectral-schedule": _solve("circle", beta=6.0, nu_schedule="ramp:0.1>0.05@0..2", resolution=64,
                                       t_final=3.0),
    "circle-spectral-usa-ngpt": _solve("circle", attention="usa", beta=2.0, resolution=64, t_final=1.0,
                                       normalization="ngpt"),
    "circle-fv": _solve("circle", scheme="fv", beta=9.0, resolution=128, init="perturbed:1e-3", t_final=20.0,
                        save_every=1.0),
    "circle-lagrangian": _solve("circle", scheme="lagrangian", beta=9.0, resolution=128, init="perturbed:1e-3",
                                t_final=40.0),
    "circle-lagrangian-mix": _solve("circle", scheme="lagrangian", beta=4.0, resolution=64, t_final=3.0,
                                    normalization="mix", mix_switch=1.0),
    "circle-causal": _solve("circle", beta=2.0, resolution=32, t_final=0.5, mask="causal", positions=5),
    "sphere-spectral": _solve("sphere", beta=4.0, resolution=15, t_final=3.0),
    "sphere-spectral-noise": _solve("sphere", beta=4.0, nu=0.02, resolution=15, t_final=2.0),
    "sphere-lagrangian": _solve("sphere", scheme="lagrangian", beta=4.0, resolution=15, t_final=10.0),
    "zonal-galerkin": _solve("zonal", beta=4.0, dim=4, resolution=16, t_final=2.0),
    "zonal-fv": _solve("zonal", scheme="fv", beta=4.0, dim=4, resolution=32, t_final=5.0),
    "particles-circle": _particles(dim=2, n=64, beta=4.0, seed=1, t_final=2.0),
    "particles-sphere": _particles(dim=3, n=500, beta=4.0, seed=1, t_final=10.0),
    "particles-sphere-merging": _particles(dim=3, n=300, beta=4.0, seed=2, t_final=40.0),
    "particles-sphere-direct-usa": _particles(dim=3, n=200, attention="usa", beta=2.0, seed=3, t_final=1.0,
                                              interaction="direct"),
    "particles-noise": _particles(dim=3, n=300, beta=4.0, nu=0.05, t_final=1.0, seed=1),
    "particles-peri": _particles(dim=3, n=64, beta=4.0, seed=1, t_final=2.0, normalization="peri"),
    "particles-mask": _particles(dim=3, n=32, beta=4.0, seed=1, t_final=1.0, mask="causal", alibi=1.0),
    "particles-random-qkv": _particles(dim=3, n=32, beta=2.0, seed=1, t_final=1.0, qkv="random"),
    "particles-dim5": _particles(dim=5, n=64, beta=2.0, seed=1, t_final=1.0),
    "gaussian": _gaussian,
    "restart-circle-spectral": _restarted(lambda t, **more: _solve(
        "circle", beta=6.0, resolution=64, t_final=4.0 * t, save_every=0.5, **more)()),
    "restart-particles": _restarted(lambda t, **more: _particles(
        dim=3, n=200, beta=4.0, seed=5, t_final=6.0 * t, save_every=1.0, **more)()),
}


def _attr(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def record(path, cases=None) -> Path:
    """Run ``cases`` (default every one of :data:`CASES`) and keep their record in ``path`` (``.npz``)."""
    from meanfield.app import run_records  # noqa: F401 - the accessor dataset.meanfield

    arrays, attributes = {}, {}
    for name in cases or CASES:
        dataset = CASES[name]()
        records = dataset.meanfield.restart     # the restart record and the record of the start, kept apart
        attributes[name] = [[key, repr(_attr(value))] for key, value in [*dataset.attrs.items(),
                                                                         *records.attrs.items()]
                            if key not in UNRECORDED]
        for part in (dataset, records):
            for variable in part.variables:
                values = np.asarray(part[variable].values)
                if values.dtype.kind in "biufcSUM":
                    arrays[f"{name}/{variable}"] = values
                attributes[f"{name}/{variable}"] = [list(part[variable].dims),
                                                    [[key, repr(_attr(value))] for key, value in
                                                     part[variable].attrs.items()]]
    path = Path(path)
    np.savez(path, __attributes__=np.asarray(json.dumps(attributes)), **arrays)
    return path


def compare(before, after) -> list[str]:
    """What differs between two records of :func:`record` (empty: the same bits and attributes)."""
    with np.load(before) as old, np.load(after) as new:
        differences = []
        for key in sorted(set(old.files) | set(new.files)):
            if key not in old.files or key not in new.files:
                differences.append(f"{key}: only in {'after' if key in new.files else 'before'}")
            elif key == "__attributes__":
                first, second = json.loads(str(old[key])), json.loads(str(new[key]))
                differences += [f"{name}: attributes or dims differ" for name in sorted(set(first) | set(second))
                                if first.get(name) != second.get(name)]
            elif old[key].shape != new[key].shape or old[key].tobytes() != new[key].tobytes():
                differences.append(f"{key}: values differ")
    return differences


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    saving = commands.add_parser("record", help="run the cases and keep their record")
    saving.add_argument("file")
    saving.add_argument("--cases", help=f"comma-separated, of: {', '.join(CASES)}")
    comparing = commands.add_parser("compare", help="what differs between two records")
    comparing.add_argument("before")
    comparing.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "record":
        cases = args.cases.split(",") if args.cases else None
        unknown = sorted(set(cases or ()) - set(CASES))
        if unknown:
            parser.error(f"--cases: unknown {', '.join(unknown)} (one of {', '.join(CASES)})")
        print(f"recorded {len(cases or CASES)} cases in {record(args.file, cases)}")
        return 0
    differences = compare(args.before, args.after)
    print("\n".join(differences) if differences else "the same bits and attributes")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
