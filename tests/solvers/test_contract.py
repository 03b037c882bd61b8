"""The scheme contract (meanfield.solvers.schemes.contract): every registered scheme and the particle scheme satisfies it."""

import gc
import weakref

import numpy as np
import pytest

from meanfield.errors import InputError
from meanfield.model import Model
from meanfield.schemes import SCHEMES
from meanfield.solvers.schemes.contract import (OPTIONAL_PARTS, PDE_PARTS, REQUIRED_PARTS, Scheme, SchemeProtocol, conform,
                              missing_parts)
from meanfield.solvers.runs.initial_state import initial_state
from meanfield.solvers.schemes.particles import ParticleScheme
from meanfield.solvers.runs.solve import scheme_class
from meanfield.solvers.steppers.steppers import make_stepper

RESOLUTION = {"circle": 32, "sphere": 7, "zonal": 16}
DIM = {"circle": 2, "sphere": 3, "zonal": 4}
REGISTERED = [(geometry, name) for geometry, names in SCHEMES.items() for name in names]


def _scheme(geometry, name):
    return scheme_class(geometry, name)(Model(beta=2.0, dim=DIM[geometry]), RESOLUTION[geometry])


@pytest.mark.parametrize("geometry, name", REGISTERED, ids=[f"{g}-{n}" for g, n in REGISTERED])
def test_every_registered_scheme_satisfies_the_contract(geometry, name):
    scheme = conform(_scheme(geometry, name))
    assert isinstance(scheme, SchemeProtocol)
    assert missing_parts(scheme, REQUIRED_PARTS + PDE_PARTS) == []
    assert scheme.name == name and scheme.geometry == geometry
    assert missing_parts(scheme, OPTIONAL_PARTS) == []
    assert scheme.takes_cell_averages == (name == "fv")
    assert scheme.default_stepper == ("ssprk3" if name == "fv" else "dopri5")
    assert isinstance(scheme.static_variables(), dict) and scheme.rng is None
    state = initial_state("perturbed:1e-2", geometry, scheme, 0)
    assert scheme.validity(state, 0.0) is None
    assert np.isfinite(scheme.adaptive_dt(0.5)) and scheme.adaptive_dt(0.5) > 0
    # the band: (N - 1) // 3 on the circle, lmax on the sphere, L for galerkin, the cells' band for zonal fv
    assert scheme.largest_mode() == {"circle": 10, "sphere": 7, "zonal": 16 if name == "galerkin" else 5}[geometry]


@pytest.mark.parametrize("geometry, name", REGISTERED, ids=[f"{g}-{n}" for g, n in REGISTERED])
def test_every_registered_scheme_class_inherits_the_declared_base(geometry, name):
    """The package's own schemes declare the contract by inheritance; ``conform`` only checks it."""
    scheme = _scheme(geometry, name)
    assert issubclass(type(scheme), Scheme) and conform(scheme) is scheme


def test_the_particle_scheme_satisfies_the_contract():
    assert issubclass(ParticleScheme, Scheme)
    scheme = conform(ParticleScheme(Model(beta=1.0, dim=3), 8, seed=0))
    assert isinstance(scheme, SchemeProtocol)
    assert missing_parts(scheme, REQUIRED_PARTS) == [] and missing_parts(scheme, OPTIONAL_PARTS) == []
    assert scheme.name == "particles" and scheme.takes_cell_averages is False
    x = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0][:, :1].T.repeat(8, 0)[None]
    assert scheme.collapse(x) is x  # collapse off (collapse_tol 0): the state itself


def test_defaults_of_a_density_scheme_come_from_the_base_class():
    scheme = _scheme("circle", "spectral")
    assert isinstance(scheme, Scheme) and conform(scheme) is scheme
    state = scheme.state_from_density(np.ones(32))
    assert scheme.collapse(state) is state and scheme.after_step(state, 0.1) is state
    assert scheme.adaptive_dt(0.5) == scheme.stable_dt(0.5)
    assert scheme.static_variables() == {} and scheme.restart_fields == ("_tail_floor",)


def test_a_scheme_overrides_only_what_it_needs():
    """The Lagrangian scheme's collapse and step cap are its own; the rest comes from the base."""
    scheme = conform(_scheme("circle", "lagrangian"))
    assert scheme.collapse.__func__ is type(scheme).collapse is not Scheme.collapse
    assert scheme.adaptive_dt.__func__ is type(scheme).adaptive_dt is not Scheme.adaptive_dt
    assert type(scheme).default_stepper == Scheme.default_stepper  # not overridden: the base's


def test_a_scheme_outside_the_base_is_refused_in_one_line_and_nothing_is_bound():
    """The contract is declared by inheritance: an object whose class does not inherit ``Scheme`` is refused (one
    line naming the base), not adapted by binding methods onto it; one that inherits gets the defaults from its
    class."""
    class Decay:
        name, linear, state_scale = "decay", None, 1.0

        def rhs(self, state, t):
            return -state

        def stable_dt(self, cfl):
            return cfl

        def validity(self, state, t):
            return None

        def frame(self, state):
            return {"u": state.copy()}

        def dims(self):
            return {"u": ()}

        def coords(self):
            return {}

    with pytest.raises(InputError, match=r"must inherit meanfield.solvers.schemes.contract.Scheme, .*\(got Decay\)"):
        conform(Decay())
    declared = type("DeclaredDecay", (Decay, Scheme), {})()
    assert conform(declared) is declared and vars(declared) == {}
    assert missing_parts(declared, REQUIRED_PARTS + OPTIONAL_PARTS) == []
    assert declared.adaptive_dt(0.5) == 0.5 and declared.collapse(np.ones(1)).tolist() == [1.0]
    assert declared.takes_cell_averages is False and declared.default_stepper == "dopri5"


def test_capabilities_are_declared_by_inheritance():
    """Cell averages, remapped averages, a radius per node, merging nodes and a noise schedule are mixins of
    meanfield.solvers.schemes.contract, each scheme declaring the ones it has."""
    from meanfield.solvers.schemes.contract import (CarriesRadius, FollowsNoiseSchedule, MergesNodes,
                                                    RemapsCellAverages, TakesCellAverages)

    has = {(geometry, name): {mixin.__name__ for mixin in (TakesCellAverages, RemapsCellAverages, CarriesRadius,
                                                           MergesNodes, FollowsNoiseSchedule)
                              if issubclass(scheme_class(geometry, name), mixin)}
           for geometry, name in REGISTERED}
    assert has == {("circle", "spectral"): {"FollowsNoiseSchedule"}, ("sphere", "spectral"): {"FollowsNoiseSchedule"},
                   ("zonal", "galerkin"): {"FollowsNoiseSchedule"}, ("circle", "fv"): {"TakesCellAverages"},
                   ("zonal", "fv"): {"TakesCellAverages"},
                   ("circle", "lagrangian"): {"RemapsCellAverages", "CarriesRadius", "MergesNodes"},
                   ("sphere", "lagrangian"): {"CarriesRadius", "MergesNodes"}}
    assert issubclass(ParticleScheme, MergesNodes)


@pytest.mark.parametrize("geometry, name", REGISTERED, ids=[f"{g}-{n}" for g, n in REGISTERED])
def test_a_scheme_declares_the_cells_whose_averages_it_takes(geometry, name):
    """Initial data ask the scheme's ``cells()`` and ``remaps_cell_averages``, not its name or its fields: the
    finite volumes and the circle Lagrangian nodes take cell averages on cells that tile the manifold."""
    scheme = _scheme(geometry, name)
    assert scheme.remaps_cell_averages == ((geometry, name) == ("circle", "lagrangian"))
    if not (scheme.takes_cell_averages or scheme.remaps_cell_averages or geometry == "circle"):
        with pytest.raises(NotImplementedError, match="declares no cells"):
            scheme.cells()
        return
    faces, volumes, weight, period = scheme.cells()
    assert faces.shape == (scheme.resolution + 1,) and volumes.shape == (scheme.resolution,)
    assert np.all(np.diff(faces) > 0) and np.all(volumes > 0)
    area = 2 * np.pi if geometry == "circle" else 2 * np.pi ** 2            # |S^1|, |S^3| (zonal: dim 4)
    assert volumes.sum() == pytest.approx(area, rel=1e-13)
    assert (period == 2 * np.pi and weight is None) if geometry == "circle" else (period is None and weight is not None)


def test_a_stepper_does_not_keep_its_scheme_alive():
    for name in ("rk4", "etdrk4", "dopri5"):
        scheme = scheme_class("circle", "spectral")(Model(beta=2.0, nu=0.01), 32)
        stepper = make_stepper(name, scheme)
        state = scheme.state_from_density(1 + 0.1 * np.cos(scheme.basis.theta))
        stepper.step(state, 0.0, 0.1)
        ref = weakref.ref(scheme)
        del scheme, stepper
        gc.collect()
        assert ref() is None, name


@pytest.mark.parametrize("geometry, name", REGISTERED, ids=[f"{g}-{n}" for g, n in REGISTERED])
def test_what_a_scheme_declares_is_what_its_run_records(geometry, name):
    """The PDE driver asks the scheme, not its name (DESIGN.md "Scheme contract"): its trackers' variables, its run
    and variable attributes reach the Dataset, and only a scheme whose ``build_options`` hold ``collapse_tol``
    takes it (the finite volumes' cell averages are CF ``<grid>: mean``; the Lagrangian nodes record
    ``collapse_tol_used``; both count clusters)."""
    from meanfield.errors import InputError
    from meanfield.solvers.runs.solve import solve

    cls = scheme_class(geometry, name)
    init = {"circle": "vonmises:1@0", "sphere": "perturbed:0.01", "zonal": "vmf:1"}[geometry]
    settings = dict(scheme=name, beta=2.0, init=init, t_final=0.05, resolution=16 if geometry != "circle" else 32,
                    seed=0)
    run = solve(geometry, **settings)
    scheme = _scheme(geometry, name)
    for variable, attrs in scheme.variable_attrs().items():
        assert {key: run[variable].attrs[key] for key in attrs} == attrs
    assert ("cell_methods" in run["density"].attrs) == (name == "fv")
    assert set(scheme.run_attrs()) <= set(run.attrs) and ("collapse_tol_used" in run.attrs) == (name == "lagrangian")
    assert "cluster_count" in run and bool(scheme.trackers())          # every PDE scheme counts its clusters
    assert ("cluster_energy" in run) == (name in ("fv", "lagrangian"))  # the point energy: schemes with points
    if "collapse_tol" in cls.build_options:
        assert solve(geometry, collapse_tol=0.0, **settings).attrs["collapse_tol_used"] == 0.0
    else:
        with pytest.raises(InputError, match="^collapse_tol applies to scheme lagrangian only"):
            solve(geometry, collapse_tol=0.0, **settings)
