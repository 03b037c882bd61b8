"""An independent computation of USA's first branch (issue 33): nothing shared with meanfield's stationary solver.

The unknowns are the density's logarithm at quadrature nodes (not spectral coefficients) and ``nu``; the kernel is
summed directly at the nodes (not through Funk–Hecke coefficients): on the circle's even functions
``(e^{beta cos(th - th')} + e^{beta cos(th + th')}) pi / n`` at midpoints, on S^{d-1}'s zonal functions the exact
average over the sphere S^{d-2} of the other coordinates, ``(2 pi)^{(d-1)/2} a^{-(d-3)/2} I_{(d-3)/2}(a)
e^{beta t t'}``, ``a = beta s s'``, at Gauss–Jacobi nodes; the parameter is the first moment ``int rho t`` (not a
spectral coefficient); each state is a root of the self-consistency equation found by scipy's MINPACK (hybrid, then
Levenberg–Marquardt) with finite-difference Jacobians (not Newton-GMRES with the exact derivative); the fold is the
maximum of ``nu`` over the moment (bounded Brent), ``nu_c`` a root of the free-energy gap in the moment.
"""
import math
import numpy as np
from scipy.optimize import root, minimize_scalar, brentq
from scipy.special import ive, roots_jacobi, gamma


class Nodal:
    """Nodes, weights (whole-sphere integrals) and the kernel's quadrature matrix (module docstring)."""

    def __init__(self, beta, dim, n=128):
        self.beta, self.dim = beta, dim
        if dim == 2:
            theta = math.pi * (np.arange(n) + 0.5) / n
            self.w = np.full(n, 2 * math.pi / n)
            self.t = np.cos(theta)
            d = theta[:, None]
            self.K = (np.exp(beta * np.cos(d - theta)) + np.exp(beta * np.cos(d + theta))) * (math.pi / n)
        else:
            alpha = (dim - 3) / 2
            t, omega = roots_jacobi(n, alpha, alpha)
            s = np.sqrt(1 - t * t)
            area_below = 2 * math.pi ** ((dim - 1) / 2) / gamma((dim - 1) / 2)        # |S^{d-2}|
            self.w = area_below * omega
            a = beta * np.outer(s, s)
            order = (dim - 3) / 2
            with np.errstate(divide="ignore", invalid="ignore"):
                inner = (2 * math.pi) ** ((dim - 1) / 2) * a ** (-order) * ive(order, a) * np.exp(a)
            inner = np.where(a > 0, inner, area_below)
            self.K = inner * np.exp(beta * np.outer(t, t)) * omega
            self.t = t
        self.area = self.w.sum()

    def solve(self, moment, guess):
        """(log rho, nu) with int rho t = moment."""
        beta = self.beta

        def equations(x):
            u, nu = x[:-1], x[-1]
            rho = np.exp(u)
            phi = self.K @ rho / (beta * nu)
            top = phi.max()
            log_z = top + math.log(self.w @ np.exp(phi - top))
            return np.append(u - phi + log_z, (self.w @ (rho * self.t)) - moment)

        for method in ("hybr", "lm"):
            found = root(equations, guess, method=method, options={"xtol": 1e-15})
            if np.all(np.isfinite(found.x)) and np.max(np.abs(equations(found.x))) < 1e-10:
                return found.x
        return None

    def free_energy_gap(self, x):
        """``F(rho) - F(uniform)``, ``F = nu int rho log rho - (1/2 beta) int int e^{beta <x,y>} rho rho``."""
        u, nu = x[:-1], x[-1]
        rho = np.exp(u)
        uniform = np.full(rho.size, 1 / self.area)
        def energy(r):
            return (self.w @ (r * (self.K @ r))) / (2 * self.beta)

        return (nu * (self.w @ (rho * u)) - energy(rho)) - (nu * math.log(1 / self.area) - energy(uniform))


def fold_and_first_order(beta, dim, n=128, moments=None):
    """``(nu_sn, nu_c, nu_#)`` of the branch, following it in the moment over ``moments`` until ``nu < 0.3 nu_#``."""
    m = Nodal(beta, dim, n)
    # start near onset: small moment, guess from linear theory: nu from the kernel's degree-1 eigenvalue
    u0 = np.full(n, -math.log(m.area))
    # degree-1 eigenvalue of K on zonal functions: K t = kappa_1 t
    kappa1 = (m.K @ m.t)[0] / m.t[0]
    nu0 = kappa1 / (beta * m.area)
    x = np.append(u0 + 1e-3 * m.t * m.area, nu0)
    moments = np.linspace(1e-3, 0.95, 400) if moments is None else moments
    path = []
    for moment in moments:
        # predictor: secant of the last two
        guess = x if len(path) < 2 else path[-1][1] + (moment - path[-1][0]) / (path[-1][0] - path[-2][0]) * (
            path[-1][1] - path[-2][1])
        found = m.solve(moment, guess)
        if found is None:
            break
        path.append((moment, found))
        x = found
        if found[-1] < 0.3 * nu0:
            break
    nus = np.array([p[1][-1] for p in path])
    top = int(np.argmax(nus))
    lo, hi = path[max(top - 1, 0)][0], path[min(top + 1, len(path) - 1)][0]

    def state(moment):
        near = min(path, key=lambda p: abs(p[0] - moment))
        return m.solve(moment, near[1])

    best = minimize_scalar(lambda mo: -state(mo)[-1], bounds=(lo, hi), method="bounded", options={"xatol": 1e-11})
    nu_sn = -best.fun
    gaps = [m.free_energy_gap(p[1]) for p in path]
    nu_c = math.nan
    for i in range(top, len(path) - 1):
        if gaps[i] > 0 >= gaps[i + 1]:
            root_moment = brentq(lambda mo: m.free_energy_gap(state(mo)), path[i][0], path[i + 1][0], xtol=1e-14)
            nu_c = state(root_moment)[-1]
            break
    return nu_sn, nu_c, nu0
