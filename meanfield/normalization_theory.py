"""Theory of the normalisation schemes: equiangular tokens and linear growth (MATH.md §6).

Every scheme moves a token's direction by ``dtheta_j/dt = P_{theta_j} A_j / s_j`` and its radius
by ``dr_j/dt`` (the table of :mod:`meanfield.normalization`, which this module uses and never
re-types).  ``A_j = sum_k w_k exp(beta <theta_j, theta_k>) theta_k / Z_j`` with ``Q = K = V = I``;
SA normalises by ``Z_j = sum_k exp(beta <theta_j, theta_k>)``, USA has ``Z_j = n`` (weights ``1/n``,
MATH.md §1; exactly what ``solvers/schemes/interaction.py`` computes with uniform weights).

**1. Orthonormal (equiangular) start** (:func:`equiangular_solution`, :func:`equiangular_rhs`).
With ``n`` pairwise orthogonal unit tokens and one radius ``r0`` (``n <= d`` to realise it with
particles) all pairwise inner products stay equal to ``rho(t)`` and all radii to ``r(t)``.
Write ``u = 1 - rho`` and ``q = exp(-beta u)``.  Token ``i`` puts the weight ``w`` on itself and
``w q`` on each other token, with ``w = 1 / (1 + (n-1) q)`` (SA; ``Z = e^beta + (n-1) e^{beta rho}``)
or ``w = e^beta / n`` (USA).  From the Gram matrix ``(1 - rho) I + rho 1 1^T``:

* ``<theta_i, A_i> = w (1 + (n-1) rho q)``  (the radial part),
* ``<P_{theta_i} A_i, theta_j> = w q (1 - rho)(1 + (n-1) rho)``, so
  ``drho/dt = 2 <P A_i, theta_j> / s = (2 / s) w q (1 - rho)(1 + (n-1) rho)``,
* ``|A_i|^2 = w^2 (1 + 2 (n-1) rho q + (n-1)(1 + (n-2) rho) q^2)``,

which are MATH.md §6's formulas divided through by ``e^{2 beta}`` (no overflow at any beta).  The
divisor ``s = Normalization.divisor(t, r, |A|)`` and ``dr/dt = Normalization.radial_rate(t, <theta, A>, |A|)``.
The code integrates ``log(1 - rho)`` and ``r`` (``d log u/dt = -(2/s) w q (1 + (n-1) rho)``), so
``1 - rho`` keeps its relative accuracy long after ``rho`` rounds to 1; Mix-LN is integrated in two
pieces, Post-LN on ``[0, tau]`` and Pre-LN after (the right-hand side jumps at ``tau``).

**2. The initial rate** (:func:`initial_rate`): at ``rho = 0``, ``q = e^{-beta}``, so
``drho/dt(0) = 2 e^{-beta} w / s(0)`` with ``<theta, A> = w``, ``|A| = w sqrt(1 + (n-1) e^{-2 beta})``:

==========  ======================================  ==========================================
scheme      SA                                      USA
==========  ======================================  ==========================================
post, mix   ``2 / (e^beta + n - 1)``                ``2 / n``
pre         ``2 / (r0 (e^beta + n - 1))``           ``2 / (n r0)``
peri        ``2 / (r0 sqrt(e^{2 beta} + n - 1))``      the same (``Z`` cancels in ``P A / |A|``)
ngpt        ``2 alpha / sqrt(e^{2 beta} + n - 1)``     the same
lnscale     ``2 / (e^beta + n - 1)``                ``2 / n``
==========  ======================================  ==========================================

(Mix-LN acts as Post-LN at ``t = 0 <= tau``.)

**3. Late times** (:func:`late_time_decay`): as ``rho -> 1``, ``q -> 1`` and the weights tend to the
collapsed state's, ``w q (1 + (n-1) rho) -> c`` with ``c = 1`` (SA) or ``c = e^beta`` (USA); ``<theta, A>``
and ``|A|`` tend to ``c`` too.  So ``du/dt ~ -2 c u / s``:

* Post: ``s = 1``: ``u ~ exp(-2 c t)``; nGPT: ``s = c / alpha``: ``u ~ exp(-2 alpha t)``;
* Pre (and Mix after ``tau``): ``dr/dt -> c``, ``r ~ c t``: ``u ~ t^{-2}``; Peri: ``dr/dt -> 1``,
  ``s = r |A| ~ c t``: ``u ~ t^{-2}``;
* LN-scaling: ``s = sqrt(t + 1)``: ``u ~ exp(-4 c sqrt(t + 1))`` (``~ exp(-4 sqrt t)`` for SA).

**4. Linear growth about the uniform state** (:func:`mode_amplitude_factor`,
:func:`effective_growth_rate`).  At the uniform density ``P A = 0``: ``A(theta) = a theta`` with
``a = <theta, A>``.  By Funk–Hecke (MATH.md §2.2) ``int e^{beta <theta, y>} <theta, y> dsigma(y) = kappa_1``, so

* SA: ``a = kappa_1 / kappa_0 = I_{d/2}(beta) / I_{d/2-1}(beta)`` (:func:`uniform_output`);
* USA: ``a = kappa_1 / |S^{d-1}|`` (the package's weights ``1/n`` become the uniform density).

A perturbation changes ``|A|`` and ``r`` only at first order while ``P A`` is itself first order, so
the linearised PDE is MATH.md §2.3's with the attention part divided by ``s_0(t)``, the divisor of
the uniform state: ``s_0 = divisor(t, r_0(t), a)`` with ``dr_0/dt = radial_rate(t, a, a)``:

==========  ===============================  ===========================================
scheme      ``s_0(t)``                       ``G(t) = int_0^t dt' / s_0(t')``
==========  ===============================  ===========================================
post        1                                ``t``
pre         ``r0 + a t``                     ``log(1 + a t / r0) / a``
mix         1, then ``r0 + a (t - tau)``     ``t``, then ``tau + log(1 + a (t - tau) / r0) / a``
peri        ``(r0 + t) a`` (``dr/dt = 1``)   ``log(1 + t / r0) / a``
ngpt        ``a / alpha``                    ``alpha t / a``
lnscale     ``sqrt(t + 1)``                  ``2 (sqrt(t + 1) - 1)``
==========  ===============================  ===========================================

Degree ``l`` then grows as ``amplitude(t) / amplitude(0) = exp(Lambda_l G(t) - nu l (l + d - 2) t)``,
where ``Lambda_l`` is ``lambda_l`` of MATH.md §2.3 without noise (the noise is not an attention
output, so it is not divided by ``s``): Pre ``(1 + a t / r0)^{Lambda_l / a}`` (polynomial),
Peri ``(1 + t / r0)^{Lambda_l / a}``, nGPT ``exp(Lambda_l alpha t / a)``, LN-scaling
``exp(2 Lambda_l (sqrt(t + 1) - 1))``, Mix ``exp(Lambda_l tau)`` then Pre from ``r0`` at ``tau``.
The effective rate ``d log amplitude / dt = Lambda_l / s_0(t) - nu l (l + d - 2)``.  For ``a -> 0``
(SA or USA at ``beta = 0``) Pre's ``G`` tends to ``t / r0``; Peri and nGPT divide by ``|A| = a = 0``
there and are refused at ``beta = 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from .errors import require
from .geometry import laplace_eigenvalue, sphere_area
from .attention_kind import attention_kind
from .kernels import scaled_funk_hecke
from .limits import check_integer
from .model import Model
from .normalization import Normalization
from .theory import growth_rates, interaction_rate
from .fits import fit_line

#: Tolerances of the equiangular ODE (DOP853).
ODE_RTOL = 1e-12
ODE_ATOL = 1e-14


# ------------------------------------------------------------------------------------------ inputs
def as_normalization(normalization) -> Normalization:
    """A :class:`Normalization` from itself or a scheme name (one line for an unknown scheme)."""
    if isinstance(normalization, Normalization):
        return normalization
    return Normalization(normalization)


def _check_equiangular(n, beta, attention) -> tuple[int, float, str]:
    n = check_integer("--n", n, 2)
    model = Model(attention=attention, beta=beta)       # validates attention and beta (USA: <= 700)
    return n, model.beta, model.attention


# -------------------------------------------------------------------------------- equiangular ODE
def _weights(n: int, beta: float, attention: str, u):
    """Self weight ``w`` and ``q = exp(-beta u)`` (module docstring, part 1)."""
    q = np.exp(-beta * u)
    kind = attention_kind(attention)
    w = 1.0 / (1.0 + (n - 1) * q) if kind.normalised else kind.scale(beta) / n
    return w, q


def _outputs(n: int, beta: float, attention: str, u):
    """``(w q (1 + (n-1) rho), <theta, A>, |A|)`` of equiangular tokens at ``rho = 1 - u``."""
    rho = 1.0 - u
    w, q = _weights(n, beta, attention, u)
    pull = w * q * (1.0 + (n - 1) * rho)
    radial = w * (1.0 + (n - 1) * rho * q)
    norm = w * np.sqrt(1.0 + 2.0 * (n - 1) * rho * q + (n - 1) * (1.0 + (n - 2) * rho) * q * q)
    return pull, radial, norm


def _log_rhs(scheme: Normalization, n: int, beta: float, attention: str):
    """Right-hand side of ``(log(1 - rho), r)`` for ``solve_ivp`` under ``scheme``."""
    def rhs(t, y):
        u = math.exp(y[0])
        pull, radial, norm = _outputs(n, beta, attention, u)
        s = scheme.divisor(t, radius=y[1], norm=norm)
        return [-2.0 * pull / s, float(scheme.radial_rate(t, radial, norm))]
    return rhs


def equiangular_rhs(normalization, n: int, beta: float, t: float, rho: float, radius: float,
                    attention: str = "sa") -> tuple[float, float]:
    """``(drho/dt, dr/dt)`` of ``n`` equiangular tokens at time ``t`` (MATH.md §6; module docstring, part 1).

    ``drho/dt = (2 / s) w q (1 - rho)(1 + (n-1) rho)``, ``s`` and ``dr/dt`` from
    :class:`~meanfield.normalization.Normalization` (Mix-LN: the scheme in force at ``t``).
    """
    scheme = as_normalization(normalization)
    n, beta, attention = _check_equiangular(n, beta, attention)
    u = 1.0 - rho
    pull, radial, norm = _outputs(n, beta, attention, u)
    s = scheme.divisor(t, radius=radius, norm=norm)
    return float(2.0 * pull * u / s), float(scheme.radial_rate(t, radial, norm))


@dataclass(frozen=True)
class EquiangularSolution:
    """``rho(t)`` (common inner product), ``1 - rho`` (accurate where ``rho`` rounds to 1) and ``r(t)``."""

    t: np.ndarray
    rho: np.ndarray
    one_minus_rho: np.ndarray
    radius: np.ndarray
    normalization: Normalization
    n: int
    beta: float
    attention: str


def equiangular_solution(normalization, n: int, beta: float, t, attention: str = "sa") -> EquiangularSolution:
    """The orthonormal-start ODE of MATH.md §6 at the times ``t`` (module docstring, part 1).

    ``rho(0) = 0``, ``r(0) = r0``; ``n >= 2`` tokens, ``Q = K = V = I``; DOP853 with
    ``rtol = 1e-12``, ``atol = 1e-14`` on ``(log(1 - rho), r)``.  Mix-LN: Post-LN on ``[0, tau]``, then
    Pre-LN from the state at ``tau``.  ``t``: non-decreasing times ``>= 0``.
    """
    scheme = as_normalization(normalization)
    n, beta, attention = _check_equiangular(n, beta, attention)
    times = np.atleast_1d(np.asarray(t, dtype=float))
    require(times.ndim == 1 and times.size >= 1 and np.all(np.isfinite(times)) and np.all(times >= 0)
            and np.all(np.diff(times) >= 0), "t must be finite, non-decreasing times >= 0")
    if scheme.name == "mix":
        pieces = [(Normalization("post", r0=scheme.r0, alpha=scheme.alpha), 0.0, scheme.mix_switch),
                  (Normalization("pre", r0=scheme.r0, alpha=scheme.alpha), scheme.mix_switch, math.inf)]
    else:
        pieces = [(scheme, 0.0, math.inf)]
    grid, back = np.unique(times, return_inverse=True)
    state = np.array([0.0, scheme.r0])
    log_u, radius = np.zeros(grid.size), np.full(grid.size, scheme.r0)
    for piece, start, stop in pieces:
        end = min(stop, grid[-1])
        if end <= start:
            continue
        inside = (grid > start) & (grid <= stop)
        wanted = grid[inside]
        t_eval = wanted if wanted.size and wanted[-1] == end else np.append(wanted, end)
        solution = solve_ivp(_log_rhs(piece, n, beta, attention), (start, end), state, method="DOP853",
                             t_eval=t_eval, rtol=ODE_RTOL, atol=ODE_ATOL)
        require(solution.success, f"the equiangular ODE failed: {solution.message}")
        log_u[inside], radius[inside] = solution.y[0][:wanted.size], solution.y[1][:wanted.size]
        state = solution.y[:, -1]
    log_u, radius = log_u[back], radius[back]
    one_minus_rho = np.exp(log_u)
    return EquiangularSolution(times, -np.expm1(log_u), one_minus_rho, radius, scheme, n, beta, attention)


def initial_rate(normalization, n: int, beta: float, attention: str = "sa") -> float:
    """``drho/dt`` at ``t = 0`` from the orthonormal start, in closed form (module docstring, part 2)."""
    scheme = as_normalization(normalization)
    n, beta, attention = _check_equiangular(n, beta, attention)
    name = scheme.acts_as(0.0)
    if name in ("peri", "ngpt"):          # 2 / sqrt(e^{2 beta} + n - 1), scaled: no overflow
        base = 2.0 * math.exp(-beta) / math.sqrt(1.0 + (n - 1) * math.exp(-2.0 * beta))
        return base / scheme.r0 if name == "peri" else base * scheme.alpha
    base = 2.0 * math.exp(-beta) / (1.0 + (n - 1) * math.exp(-beta)) if attention_kind(attention).normalised else 2.0 / n
    return base / scheme.r0 if name == "pre" else base


# ------------------------------------------------------------------------------------- late times
#: Kinds of late-time law of ``1 - rho``: ``exp(-rate t)``, ``t^-rate``, ``exp(-rate sqrt(t + 1))``.
LAW_KINDS = ("exponential", "power", "stretched")


@dataclass(frozen=True)
class LateTimeLaw:
    """The predicted late-time shape of ``1 - rho`` up to a constant factor (module docstring, part 3).

    ``kind`` in :data:`LAW_KINDS`; ``rate`` the exponential rate, power exponent, or the rate in ``sqrt(t + 1)``.
    """

    kind: str
    rate: float

    @property
    def formula(self) -> str:
        return {"exponential": f"exp(-{self.rate:.6g} t)", "power": f"t^-{self.rate:.6g}",
                "stretched": f"exp(-{self.rate:.6g} sqrt(t + 1))"}[self.kind]

    def variable(self, t):
        """The variable in which ``log(1 - rho)`` is asymptotically linear: ``t``, ``log t`` or ``sqrt(t + 1)``."""
        t = np.asarray(t, dtype=float)
        return {"exponential": t, "power": np.log(t), "stretched": np.sqrt(t + 1.0)}[self.kind]

    def __call__(self, t):
        """The law at ``t`` (normalised to 1 at the origin of its variable)."""
        return np.exp(-self.rate * self.variable(t))

    def fit(self, t, one_minus_rho) -> float:
        """The rate (or exponent) fitted by least squares to ``log(1 - rho)`` against :meth:`variable`."""
        return -fit_line(self.variable(t), np.log(np.asarray(one_minus_rho, dtype=float)))[0]


def late_time_decay(normalization, beta: float = 1.0, attention: str = "sa") -> LateTimeLaw:
    """The late-time law of ``1 - rho`` from the orthonormal start (MATH.md §6; module docstring, part 3).

    SA: ``exp(-2t)`` Post, ``exp(-2 alpha t)`` nGPT, ``t^-2`` Pre/Mix/Peri, ``exp(-4 sqrt(t + 1))`` LN-scaling;
    USA multiplies the Post and LN-scaling rates by ``e^beta`` (the collapsed output is ``e^beta theta``).
    Independent of ``n``.
    """
    scheme = as_normalization(normalization)
    _, beta, attention = _check_equiangular(2, beta, attention)
    scale = attention_kind(attention).scale(beta)
    if scheme.name == "post":
        return LateTimeLaw("exponential", 2.0 * scale)
    if scheme.name == "ngpt":
        return LateTimeLaw("exponential", 2.0 * scheme.alpha)
    if scheme.name == "lnscale":
        return LateTimeLaw("stretched", 4.0 * scale)
    return LateTimeLaw("power", 2.0)


# ------------------------------------------------------------------------- linear growth (uniform)
def uniform_output(model: Model) -> float:
    """``a = <theta, A>`` at the uniform state (module docstring, part 4): SA ``I_{d/2}(beta) / I_{d/2-1}(beta)``,
    USA ``kappa_1 / |S^{d-1}|``; 0 at ``beta = 0``."""
    kappa_1 = float(scaled_funk_hecke(1, model.beta, model.dim))        # exp(-beta) kappa_1
    if model.normalised:
        return kappa_1 / float(scaled_funk_hecke(0, model.beta, model.dim))
    return kappa_1 * model.kind.scale(model.beta) / sphere_area(model.dim)


def _check_uniform(scheme: Normalization, model: Model) -> float:
    a = uniform_output(model)
    require(not (scheme.needs_norm and a <= 0.0),
            f"--beta must be > 0 for --normalization {scheme.name}: it divides by |A|, which is 0 at the "
            "uniform state when beta = 0")
    return a


def _times(t) -> np.ndarray:
    t = np.asarray(t, dtype=float)
    require(np.all(np.isfinite(t)) and np.all(t >= 0), f"--t must be finite and >= 0 (got {t!r})")
    return t


def _log1p_over(a: float, x):
    """``log(1 + a x) / a``, and its limit ``x`` at ``a = 0``."""
    return np.log1p(a * x) / a if a > 0 else x


def uniform_radius(normalization, model: Model, t):
    """``r_0(t)`` of the uniform state: ``r0 + int radial_rate(t, a, a)`` (Pre ``r0 + a t``, Peri ``r0 + t``,
    Mix ``r0 + a (t - tau)^+``; ``r0`` otherwise)."""
    scheme = as_normalization(normalization)
    a, t = _check_uniform(scheme, model), _times(t)
    if scheme.name == "pre":
        return scheme.r0 + a * t
    if scheme.name == "peri":
        return scheme.r0 + t
    if scheme.name == "mix":
        return scheme.r0 + a * np.maximum(t - scheme.mix_switch, 0.0)
    return np.full_like(t, scheme.r0)


def uniform_divisor(normalization, model: Model, t):
    """``s_0(t) = Normalization.divisor(t, r_0(t), a)`` at the uniform state (module docstring, part 4)."""
    scheme = as_normalization(normalization)
    a, t = _check_uniform(scheme, model), _times(t)
    radius = uniform_radius(scheme, model, t)
    values = [scheme.divisor(float(time), radius=float(r), norm=a) for time, r in zip(t.ravel(), radius.ravel())]
    return np.asarray(values, dtype=float).reshape(t.shape)


def attention_time(normalization, model: Model, t):
    """``G(t) = int_0^t dt' / s_0(t')`` in closed form (module docstring, part 4)."""
    scheme = as_normalization(normalization)
    a, t = _check_uniform(scheme, model), _times(t)
    if scheme.name == "post":
        return t.copy()
    if scheme.name == "pre":
        return _log1p_over(a / scheme.r0, t) / scheme.r0
    if scheme.name == "mix":
        tau = scheme.mix_switch
        return np.minimum(t, tau) + _log1p_over(a / scheme.r0, np.maximum(t - tau, 0.0)) / scheme.r0
    if scheme.name == "peri":
        return np.log1p(t / scheme.r0) / a
    if scheme.name == "ngpt":
        return scheme.alpha * t / a
    return 2.0 * (np.sqrt(t + 1.0) - 1.0)


def _split_rates(model: Model, degree):
    degree = np.asarray(degree)
    growth_rates(model, degree)                     # validates the degrees (>= 1)
    eig = laplace_eigenvalue(degree, model.dim)
    return eig * interaction_rate(model, degree), model.nu * eig


def log_mode_amplitude_factor(normalization, model: Model, degree, t):
    """``log(amplitude(t) / amplitude(0)) = Lambda_l G(t) - nu l (l + d - 2) t`` (module docstring, part 4).

    ``degree`` and ``t`` broadcast against each other."""
    attention_part, noise = _split_rates(model, degree)
    return attention_part * attention_time(normalization, model, t) - noise * _times(t)


def mode_amplitude_factor(normalization, model: Model, degree, t):
    """``amplitude(t) / amplitude(0)`` of degree ``degree`` about the uniform state, in closed form (MATH.md §6).

    Post ``exp(lambda_l t)``; Pre ``(1 + a t / r0)^{lambda_l / a}``; Mix ``exp(lambda_l tau)`` then Pre from
    ``r0`` at ``tau``; Peri ``(1 + t / r0)^{lambda_l / a}``; nGPT ``exp(lambda_l alpha t / a)``; LN-scaling
    ``exp(2 lambda_l (sqrt(t + 1) - 1))`` (noise-free ``lambda_l``; noise adds ``exp(-nu l (l+d-2) t)``).
    ``inf`` where the factor overflows double precision.
    """
    with np.errstate(over="ignore"):
        return np.exp(log_mode_amplitude_factor(normalization, model, degree, t))


def effective_growth_rate(normalization, model: Model, degree, t):
    """``d log amplitude / dt = Lambda_l / s_0(t) - nu l (l + d - 2)`` (module docstring, part 4)."""
    attention_part, noise = _split_rates(model, degree)
    return attention_part / uniform_divisor(normalization, model, t) - noise


# ----------------------------------------------------------------------------------------- report
#: The closed form of ``amplitude(t) / amplitude(0)`` per scheme (noise-free ``lambda_l``; module docstring, part 4).
GROWTH_LAWS = {"post": "exp(lambda_l t)", "pre": "(1 + a t / r0)^(lambda_l / a)",
               "mix": "exp(lambda_l t) up to tau, then exp(lambda_l tau) (1 + a (t - tau) / r0)^(lambda_l / a)",
               "peri": "(1 + t / r0)^(lambda_l / a)", "ngpt": "exp(lambda_l alpha t / a)",
               "lnscale": "exp(2 lambda_l (sqrt(t + 1) - 1))"}


def _finite_or_none(values) -> list:
    return [float(v) if math.isfinite(v) else None for v in np.asarray(values, dtype=float).ravel()]


def normalization_report(normalization, model: Model, degrees, n: int, t: float) -> dict:
    """Everything ``meanfield theory --normalization`` prints, as JSON-ready values (MATH.md §6).

    Keys: the scheme's attributes (``normalization``, ``r0``, ``alpha``, ``mix_switch``), ``n``, ``t``,
    ``uniform_output`` (``a``), ``growth_law``, ``effective_growth_rates`` (at ``t = 0``),
    ``amplitude_factors`` and ``log_amplitude_factors`` (at ``t``; ``None`` where the factor overflows),
    ``initial_rate`` (``drho/dt(0)`` of ``n`` orthonormal tokens), ``late_time_kind``, ``late_time_rate``,
    ``late_time_law``.
    """
    scheme = as_normalization(normalization)
    degrees = np.asarray(degrees)
    law = late_time_decay(scheme, model.beta, model.attention)
    report = dict(scheme.as_attrs())
    report.update(n=int(n), t=float(t), uniform_output=uniform_output(model), growth_law=GROWTH_LAWS[scheme.name],
                  effective_growth_rates=_finite_or_none(effective_growth_rate(scheme, model, degrees, 0.0)),
                  amplitude_factors=_finite_or_none(mode_amplitude_factor(scheme, model, degrees, t)),
                  log_amplitude_factors=_finite_or_none(log_mode_amplitude_factor(scheme, model, degrees, t)),
                  initial_rate=initial_rate(scheme, n, model.beta, model.attention),
                  late_time_kind=law.kind, late_time_rate=law.rate, late_time_law=law.formula)
    return report


def report_lines(report: dict, degrees) -> list[str]:
    """The table of :func:`normalization_report` (what the command line prints after the linear rates)."""
    lines = [f"normalization: {report['normalization']} (r0 = {report['r0']:g}, alpha = {report['alpha']:g}, "
             f"mix switch tau = {report['mix_switch']:g})",
             f"uniform state: a = <theta, A> = {report['uniform_output']:.8g}; mode l grows as {report['growth_law']}",
             f"{'mode':>6}  {'rate at t = 0':>14}  {'amplitude factor at t = ' + format(report['t'], 'g'):>30}"]
    for degree, rate, factor in zip(np.asarray(degrees).tolist(), report["effective_growth_rates"],
                                    report["amplitude_factors"]):
        shown = "overflow" if factor is None else format(factor, ".8g")
        lines.append(f"{degree:>6}  {'overflow' if rate is None else format(rate, '.8g'):>14}  {shown:>30}")
    lines.append(f"orthonormal start, n = {report['n']} tokens: drho/dt(0) = {report['initial_rate']:.12g}")
    lines.append(f"late time: 1 - rho ~ {report['late_time_law']} ({report['late_time_kind']})")
    return lines


__all__ = ["EquiangularSolution", "GROWTH_LAWS", "LateTimeLaw", "LAW_KINDS", "as_normalization", "attention_time",
           "effective_growth_rate", "equiangular_rhs", "equiangular_solution", "initial_rate", "late_time_decay",
           "log_mode_amplitude_factor", "mode_amplitude_factor", "normalization_report", "report_lines",
           "uniform_divisor", "uniform_output", "uniform_radius"]
