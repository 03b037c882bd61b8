"""Every stepper against an exact solution, with its convergence order (Dedalus-style)."""

import math

import numpy as np
import pytest

from meanfield.solvers.schemes.contract import Scheme
from meanfield.solvers.steppers.steppers import STEPPERS, make_stepper, phi_functions


class Bernoulli(Scheme):
    """``u' = L u + u^2`` (diagonal L), exact ``u = L u0 e^{Lt} / (L + u0 (1 - e^{Lt}))``."""

    def __init__(self, linear, dt):
        self.linear = linear
        self.dt = dt
        self.state_scale = 1.0

    def rhs(self, u, t):
        return u * u

    def stable_dt(self, cfl):
        return cfl * self.dt

    @staticmethod
    def exact(u0, linear, t):
        growth = np.exp(linear * t)
        return linear * u0 * growth / (linear + u0 * (1 - growth))


def integrate(name, dt, t_final=1.0, **kw):
    linear = np.array([-1.0, -4.0, -0.5])
    u0 = np.array([0.3, 0.2, 0.1], dtype=complex)
    scheme = Bernoulli(linear, dt)
    stepper = make_stepper(name, scheme, cfl=1.0, **kw)
    u, t = u0, 0.0
    while t < t_final - 1e-14:
        u, t = stepper.step(u, t, t_final - t)
    return np.max(np.abs(u - Bernoulli.exact(u0, linear, t_final)))


@pytest.mark.parametrize("name", ["rk4", "etdrk4"])
def test_fixed_step_methods_are_fourth_order(name):
    steps = [2.0 ** -3, 2.0 ** -4, 2.0 ** -5, 2.0 ** -6]
    errors = [integrate(name, dt) for dt in steps]
    slope = np.polyfit(np.log(steps), np.log(errors), 1)[0]
    assert 3.8 < slope < 4.4
    assert errors[-1] < 1e-9


def test_ssprk3_is_third_order():
    """Without a linear part (how the finite-volume schemes use it): ``u' = u^2``, ``u = u0 / (1 - u0 t)``."""
    u0 = np.array([0.5 + 0j])
    errors, steps = [], [2.0 ** -4, 2.0 ** -5, 2.0 ** -6, 2.0 ** -7]
    for dt in steps:
        stepper = make_stepper("ssprk3", Bernoulli(None, dt), cfl=1.0)
        u, t = u0, 0.0
        while t < 1.0 - 1e-14:
            u, t = stepper.step(u, t, 1.0 - t)
        errors.append(abs(u[0] - u0[0] / (1 - u0[0])))
    slope = np.polyfit(np.log(steps), np.log(errors), 1)[0]
    assert 2.8 < slope < 3.3


def test_ssprk3_stages_are_convex_combinations_of_euler_steps():
    """Shu–Osher form: u1 = u + h f(u); u2 = 3/4 u + 1/4 (u1 + h f(u1)); u' = 1/3 u + 2/3 (u2 + h f(u2))."""
    scheme = Bernoulli(None, 0.1)
    stepper = make_stepper("ssprk3", scheme, cfl=1.0)
    u0 = np.array([0.5 + 0j])
    u, _ = stepper.step(u0, 0.0, 1.0)
    h = 0.0625
    euler = lambda v: v + h * v ** 2
    u1 = euler(u0)
    u2 = 0.75 * u0 + 0.25 * euler(u1)
    assert np.allclose(u, u0 / 3 + 2 / 3 * euler(u2), rtol=1e-15)


def test_dopri5_meets_its_tolerance():
    for rtol in (1e-6, 1e-9, 1e-12):
        assert integrate("dopri5", 1.0, rtol=rtol, atol=1e-16) < 50 * rtol


def test_without_linear_part_rk4_is_classical():
    scheme = Bernoulli(None, 0.1)
    stepper = make_stepper("rk4", scheme, cfl=1.0)
    u0 = np.array([0.5 + 0j])
    u, _ = stepper.step(u0, 0.0, 1.0)
    h = 0.0625  # 0.1 rounded down to a power of two
    k1 = u0 ** 2
    k2 = (u0 + h / 2 * k1) ** 2
    k3 = (u0 + h / 2 * k2) ** 2
    k4 = (u0 + h * k3) ** 2
    assert np.allclose(u, u0 + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), rtol=1e-15)


def test_phi_functions_continuous_across_branches():
    z = np.array([-0.999999, -1.000001, -1e-8, 0.0, -30.0])
    p1, p2, p3 = phi_functions(z)
    assert p1[0] == pytest.approx(p1[1], rel=1e-5) and p3[0] == pytest.approx(p3[1], rel=1e-5)
    assert p1[3] == 1 and p2[3] == 0.5 and p3[3] == pytest.approx(1 / 6)
    assert p1[4] == pytest.approx((math.exp(-30) - 1) / -30, rel=1e-14)
    assert p3[2] == pytest.approx(1 / 6 - 1e-8 / 24, rel=1e-14)


def test_registry_names():
    assert set(STEPPERS) == {"rk4", "ssprk3", "etdrk4", "dopri5", "layers"}
