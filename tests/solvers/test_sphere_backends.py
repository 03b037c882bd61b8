"""The optional SHTns backend behind the ducc0 coefficient layout: both must agree."""

import numpy as np
import pytest

from meanfield import InputError, Model
from meanfield.initial.sphere import sphere_density
from meanfield.solvers.schemes.sphere import SphereSpectral
from meanfield.solvers.bases.sphere_basis import make_sphere_basis, shtns_available

needs_shtns = pytest.mark.skipif(not shtns_available(), reason="optional backend shtns is not installed")


@needs_shtns
@pytest.mark.parametrize("attention", ["sa", "usa"])
def test_shtns_and_ducc0_right_hand_sides_agree(attention):
    model = Model(attention, 4.0, 0.0, 3)
    ducc, shtns = (SphereSpectral(model, 31, backend=name) for name in ("ducc0", "shtns"))
    density = sphere_density("vmf:3@30,40+perturbed:1e-2", ducc.basis, 0)
    state = ducc.state_from_density(density)
    assert np.max(np.abs(shtns.state_from_density(density) - state)) < 1e-15
    reference = ducc.rhs(state, 0.0)
    assert np.max(np.abs(shtns.rhs(state, 0.0) - reference)) < 1e-13 * np.max(np.abs(reference))


@needs_shtns
def test_shtns_needs_a_large_enough_grid():
    with pytest.raises(InputError, match="lmax >= 21"):
        make_sphere_basis(12, "shtns")
    assert make_sphere_basis(12).backend == "ducc0"  # automatic choice falls back
    assert make_sphere_basis(31).backend == "shtns"


def test_unknown_backend_is_refused():
    with pytest.raises(InputError, match="backend= parameter"):
        make_sphere_basis(31, "healpy")
