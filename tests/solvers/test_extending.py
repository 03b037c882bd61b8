"""A new attention kind and a new scheme, defined in this file only and registered as docs/extending.md says, run
through the package like its own: ``meanfield.solve``, ``meanfield.simulate_particles`` and the command line's entry
function, each continued from its file bit for bit.  Nothing in the package is edited for them.

The kind is USA at half speed (its output the pull scaled by ``exp(beta) / 2``): halving a velocity is exact in
binary floating point, and the adaptive stepper then takes every step twice as long (the stages, the error norms and
the step factors are the same numbers), so its runs are USA's at half the time bit for bit.  The scheme evaluates the
circle's field ``K * rho`` by direct quadrature on the grid instead of spectral multipliers, an independent
evaluation of the same PDE (MATH.md §2), so its runs are the spectral scheme's to rounding.
"""

import math

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.attention_kind import KINDS, Unnormalised
from meanfield.cli import main
from meanfield.schemes import SCHEMES
from meanfield.solvers.schemes.circle import CircleSpectral

#: The quadrature and the spectral multipliers give the field to rounding (1e-15), the stepper then takes the same
#: steps, and the clusters' growth amplifies the rounding to 2.5e-14 over these runs (measured); a wrong field, speed
#: or quadrature weight is off by far more than this.
AGREEMENT = 1e-9


class HalfUnnormalised(Unnormalised):
    """USA at half speed: the output is the pull scaled by ``exp(beta) / 2`` (module docstring)."""

    name = "halfusa"

    def scale(self, beta: float) -> float:
        return math.exp(beta) / 2


class CircleQuadrature(CircleSpectral):
    """The circle's transport ``-d/dtheta(rho X)`` with ``K * rho`` and its derivative summed over the grid (the
    trapezoid rule, exact for the band-limited density up to the kernel's modes beyond ``N - kmax``)."""

    name = "quadrature"

    def __init__(self, model, resolution, **options):
        super().__init__(model, resolution, pointwise="numpy", **options)
        theta = self.basis.theta
        gap = theta[:, None] - theta[None, :]
        self._mass = np.exp(model.beta * (np.cos(gap) - 1.0)) * (2 * math.pi / theta.size)   # exp(-beta) K dtheta
        self._pull = -np.sin(gap) * self._mass                                               # its d/dtheta / beta

    def rhs(self, state, t):
        rho = self.basis.to_grid(state).copy()
        speed = self.model.kind.output(self._pull @ rho, self._mass @ rho, self.model.beta)
        self.max_speed = float(np.max(np.abs(speed)))
        return self.analysed(rho * speed) * (-1j * self.basis.wavenumbers)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(KINDS, HalfUnnormalised.name, HalfUnnormalised())
    monkeypatch.setitem(SCHEMES["circle"], CircleQuadrature.name, f"{__name__}:CircleQuadrature")


def _relative(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(np.asarray(b))))


@pytest.mark.parametrize("attention, beta, t_final", [("sa", 4.0, 2.5), ("usa", 2.0, 1.0)])
def test_the_new_scheme_solves_the_same_pde_as_the_spectral_one(registered, attention, beta, t_final):
    common = dict(attention=attention, beta=beta, resolution=64, init="perturbed:1e-2", seed=1, t_final=t_final,
                  save_every=t_final / 5)
    ours = meanfield.solve("circle", scheme="quadrature", **common)
    theirs = meanfield.solve("circle", scheme="spectral", **common)
    assert ours.attrs["scheme"] == "quadrature" and ours.attrs["stop_reason"] == theirs.attrs["stop_reason"] == "completed"
    density = theirs["density"].values
    assert _relative(density[-1] - density[0], density[0]) > 0.5         # clusters formed: the field matters
    assert _relative(ours["density"].values, density) < AGREEMENT


@pytest.mark.parametrize("geometry, resolution, t_final", [("circle", 64, 2.0), ("sphere", 15, 4.0)])
def test_the_new_attention_is_usa_at_half_the_time_for_densities(registered, geometry, resolution, t_final):
    common = dict(beta=2.0, resolution=resolution, init="perturbed:1e-2", seed=2)
    half = meanfield.solve(geometry, attention="halfusa", t_final=t_final, save_every=t_final / 4, **common)
    usa = meanfield.solve(geometry, attention="usa", t_final=t_final / 2, save_every=t_final / 8, **common)
    assert half.attrs["attention"] == "halfusa" and half.attrs["stop_reason"] == "completed"
    assert np.array_equal(half["density"].values, usa["density"].values)
    assert _relative(half["density"].values[-1], half["density"].values[0]) > 0.1       # it moved


@pytest.mark.parametrize("interaction", ["harmonic", "direct"])
def test_the_new_attention_is_usa_at_half_the_time_for_particles(registered, interaction):
    common = dict(dim=3, n=200, beta=2.0, seed=3, interaction=interaction)
    half = meanfield.simulate_particles(attention="halfusa", t_final=2.0, save_every=1.0, **common)
    usa = meanfield.simulate_particles(attention="usa", t_final=1.0, save_every=0.5, **common)
    assert half.attrs["interaction_path"] == interaction
    assert np.array_equal(half["positions"].values, usa["positions"].values)
    assert _relative(half["positions"].values[-1], half["positions"].values[0]) > 0.1


@pytest.mark.parametrize("tokens, command", [
    (["solve", "circle"], ["--scheme", "quadrature", "--attention", "halfusa", "--beta", "3", "--resolution", "32",
                           "--init", "perturbed:1e-2", "--seed", "4"]),
    (["particles", "--dim", "3", "--n", "64"], ["--attention", "halfusa", "--beta", "3", "--seed", "4"])])
def test_the_command_line_runs_them_and_continues_each_bit_for_bit(registered, tmp_path, tokens, command):
    """A run to t = 2 in one go and the same run to t = 1 continued to 2 from its file hold the same frames."""
    whole, first, second = (str(tmp_path / f"{name}.nc") for name in ("whole", "first", "second"))
    assert main([*tokens, *command, "--t-final", "2", "--save-every", "0.25", "--out", whole]) == 0
    assert main([*tokens, *command, "--t-final", "1", "--save-every", "0.25", "--out", first]) == 0
    assert main([*tokens, "--init", first, "--t-final", "2", "--out", second]) == 0
    command = tokens
    name = "density" if command[0] == "solve" else "positions"
    with xr.open_dataset(whole) as whole, xr.open_dataset(second) as second:
        assert second.attrs["restart"] == "exact" and second.attrs["attention"] == "halfusa"
        assert second.attrs.get("scheme") == ("quadrature" if command[0] == "solve" else "particles")
        times = second["time"].values
        np.testing.assert_array_equal(times, whole["time"].values[-times.size:])
        assert np.array_equal(second[name].values, whole[name].values[-times.size:])
