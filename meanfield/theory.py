"""Linear stability of the uniform state: the perturbative theory (MATH.md §2.3).

Around ``rho_0 = 1 / |S^{d-1}|`` each spherical-harmonic degree ``l >= 1`` (each
Fourier mode on the circle) grows independently at the rate::

    USA:  lambda_l = l (l + d - 2) kappa_l / (beta |S^{d-1}|)              - nu l (l + d - 2)
    SA:   lambda_l = l (l + d - 2) I_{l+(d-2)/2}(beta) / (beta I_{(d-2)/2}(beta)) - nu l (l + d - 2)

All Bessel functions enter as ratios of ``ive`` (SA) or as ``exp(beta) ive`` (USA).

From a ``perturbed:EPS`` start (MATH.md §2.4) the initial amplitudes are random with a known law:
:func:`typical_amplitude`, :func:`formation_time` and :func:`dominance_probabilities` (which degree,
on the circle how many clusters, wins at formation).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import quad_vec
from scipy.special import digamma, gammainc, gammaln, ive

from .errors import require
from .geometry import laplace_eigenvalue, sphere_area
from .kernel_operator import KernelOperator
from .bessel import SMALLEST, scaled_mean
from .kernels import band_limit, funk_hecke_ratio, representable, scaled_funk_hecke
from .model import Model
from .perturbation import coefficients_per_degree, law_band


def interaction_rate(model: Model, degrees) -> np.ndarray:
    """The noise-free part of ``lambda_l``, divided by ``l (l + d - 2)`` (MATH.md §2.3).

    SA:  ``I_{l+(d-2)/2}(beta) / (beta I_{(d-2)/2}(beta))``;
    USA: ``kappa_l / (beta |S^{d-1}|) = Gamma(nu + 1) (2 / beta)^nu I_{l+nu}(beta) / beta``, ``nu = (d-2)/2``.
    At ``beta = 0`` the limit (only ``l = 1`` survives).  Where the scaled Bessel functions underflow (large
    ``d``, small ``beta``) the same formulas through the ratios themselves (:mod:`meanfield.bessel`).
    """
    degrees = np.asarray(degrees)
    if model.beta > 0 and _underflows(model, degrees):
        return _interaction_rate_by_ratios(model, degrees)
    operator = KernelOperator.of(model, degrees)
    if model.normalised:
        return operator.over_beta / scaled_funk_hecke(0, model.beta, model.dim)
    return operator.scaled(operator.over_beta) / sphere_area(model.dim)


def _underflows(model: Model, degrees: np.ndarray) -> bool:
    """Whether the coefficients are not :func:`~meanfield.kernels.representable`, or a scaled Bessel function of
    the rates has lost digits to underflow."""
    if not representable(model.beta, model.dim):
        return True
    with np.errstate(under="ignore"):
        return bool(np.any(ive(np.abs(degrees) + (model.dim - 2) / 2.0, model.beta) < SMALLEST))


def _interaction_rate_by_ratios(model: Model, degrees: np.ndarray) -> np.ndarray:
    """The rates through ``I_{nu+l} / I_nu`` (:func:`meanfield.kernels.funk_hecke_ratio`) and, for USA,
    ``Gamma(nu + 1) (2 / beta)^nu I_nu(beta)`` (:func:`meanfield.bessel.scaled_mean`): no Bessel function
    is formed."""
    nu, beta = (model.dim - 2) / 2.0, model.beta
    ratios = funk_hecke_ratio(degrees, beta, model.dim)
    if model.normalised:
        return ratios / beta
    rates = scaled_mean(nu, beta) * ratios / beta            # exp(beta) K's: USA's (another kind: its own scale)
    factor = model.kind.relative_scale(beta)
    return rates if factor == 1.0 else rates * factor


def growth_rates(model: Model, degrees) -> np.ndarray:
    """Linear growth rates ``lambda_l`` of degrees (circle: Fourier modes) ``degrees`` (MATH.md §2.3)."""
    degrees = np.asarray(degrees)
    require(np.all(degrees >= 1), "degrees must be >= 1 (degree 0 is the conserved mass)")
    eig = laplace_eigenvalue(degrees, model.dim)
    return eig * interaction_rate(model, degrees) - model.nu * eig


def uniform_radial_output(model: Model) -> float:
    """``c_0 = <x, A[rho_0](x)>``, the radial part of the attention output at the uniform state (MATH.md §11):
    ``beta`` times the degree-1 :func:`interaction_rate` (SA: ``I_{d/2}(beta) / I_{d/2-1}(beta)``; USA, on the
    package's scale: ``kappa_1 / |S^{d-1}|``, the circle's ``I_1(beta)``); 0 at ``beta = 0``."""
    return float(model.beta * interaction_rate(model, [1])[0])


def layer_growth_factors(model: Model, degrees, alpha: float, normalization=None, layer: int = 0) -> np.ndarray:
    """``g_l = 1 + alpha lambda_l / (1 + alpha c_0)``: the factor by which one Post-LN layer of step ``alpha``
    multiplies the density's degree-``l`` amplitude near the uniform state, exactly in the linear theory (MATH.md §11;
    ``lambda_l``: :func:`growth_rates`, ``c_0``: :func:`uniform_radial_output`).  A layer has no noise.

    Under another ``normalization`` (:class:`meanfield.normalization.Normalization`) the factor of layer ``layer``
    (0, 1, ...) is ``1 + lambda_l m_l`` with the displacement ``m_l`` of :func:`layer_displacements`."""
    require(model.nu == 0, f"--nu must be 0 for layers: a layer map has no noise (got {model.nu:g})")
    require(math.isfinite(alpha) and alpha > 0, f"--step must be > 0 and finite (got {alpha!r})")
    if normalization is None:
        return 1.0 + alpha * growth_rates(model, degrees) / (1.0 + alpha * uniform_radial_output(model))
    numerator, denominator = layer_displacements(model, alpha, layer + 1, normalization)[-1]
    return 1.0 + numerator * growth_rates(model, degrees) / denominator


#: The displacement ``m = numerator / denominator`` of one layer of each scheme at the uniform state (MATH.md §11):
#: a function of ``(alpha, c_0, r_l, layer, normalization)`` and the radius the layer leaves (``r_l`` the uniform
#: state's radius before it; 1 where the scheme has none).
_DISPLACEMENTS = {
    "post": lambda a, c, r, l, scheme: ((a, 1.0 + a * c), r),
    "lnscale": lambda a, c, r, l, scheme: ((a / math.sqrt(l * a + 1.0), 1.0 + a / math.sqrt(l * a + 1.0) * c), r),
    "ngpt": lambda a, c, r, l, scheme: ((a * scheme.alpha, c), r),
    "pre": lambda a, c, r, l, scheme: ((a, r + a * c), r + a * c),
    "peri": lambda a, c, r, l, scheme: ((a, c * (r + a)), r + a),
}


def layer_displacements(model: Model, alpha: float, layers: int, normalization) -> list[tuple[float, float]]:
    """``(numerator, denominator)`` of ``m_l``, ``l = 0 .. layers - 1``: to first order near the uniform state layer
    ``l`` moves a token by ``m_l P_x A_x``, so it multiplies degree ``l``'s amplitude by ``1 + m_l lambda_l``
    (MATH.md §11).  With ``c_0`` = :func:`uniform_radial_output`, ``a = alpha``, ``r_l`` the uniform radius before
    the layer (from ``r0``: Pre-LN adds ``a c_0`` per layer, Peri-LN ``a``):
    Post-LN ``a / (1 + a c_0)``; LN-scaling the same with ``a / sqrt(l a + 1)``; nGPT ``a alpha_nGPT / c_0``;
    Pre-LN ``a / (r_l + a c_0)``; Peri-LN ``a / (c_0 (r_l + a))``; Mix-LN Post-LN's before ``tau``, then Pre-LN's."""
    c_0 = uniform_radial_output(model)
    require(c_0 > 0 or normalization.name not in ("ngpt", "peri"),
            f"--normalization {normalization.name} divides by |A|, which is 0 at the uniform state at beta = 0")
    radius, out = normalization.r0 if normalization.carries_radius else 1.0, []
    for layer in range(layers):
        step, radius = _DISPLACEMENTS[normalization.at_layer(alpha, layer)](alpha, c_0, radius, layer, normalization)
        out.append(step)
    return out


def quadratic_feed(model: Model, amplitudes, t: float, modes) -> np.ndarray:
    """How far the quadratic term of the circle PDE can move modes ``modes`` off their linear growth by
    time ``t`` (MATH.md §2.3, "Quadratic feed"): a bound on ``|c_k(t) / (c_k(0) e^{lambda_k t}) - 1|`` to
    leading order, one value per mode.

    ``amplitudes``: ``A_m = 2 pi |rho_hat_m(0)|`` for ``m = 0, 1, ..., K`` (``A_0`` unused); pairs
    ``j + l = k`` with ``1 <= |j|, |l| <= K`` (negative: the conjugate mode) feed mode ``k`` at most at
    ``(|k| / |l|) mu_l A_j A_l`` (``mu_l`` the noise-free rate) while growing at ``lambda_j + lambda_l``::

        delta_k(t) = sum_{j + l = k} (|k| / |l|) mu_l A_j A_l E(lambda_j + lambda_l - lambda_k, t) / A_k,
        E(s, t) = (e^{s t} - 1) / s.
    """
    require(model.dim == 2, "the quadratic feed is derived on the circle (d = 2)")
    amplitudes = np.asarray(amplitudes, dtype=float)
    top = amplitudes.size - 1
    degrees = np.arange(1, top + 1)
    rates, coupling = np.zeros(top + 1), np.zeros(top + 1)
    rates[1:] = growth_rates(model, degrees)
    coupling[1:] = laplace_eigenvalue(degrees, 2) * interaction_rate(model, degrees)
    out = []
    for k in np.atleast_1d(modes):
        j = np.arange(-top, top + 1)
        l = k - j
        keep = (j != 0) & (l != 0) & (np.abs(l) <= top)
        j, l = np.abs(j[keep]), np.abs(l[keep])
        exponent = rates[j] + rates[l] - rates[k]
        growth = np.where(exponent == 0, t, np.expm1(exponent * t) / np.where(exponent == 0, 1.0, exponent))
        out.append(float(np.sum(k / l * coupling[l] * amplitudes[j] * amplitudes[l] * growth) / amplitudes[k]))
    return np.array(out)


def fastest_growth_rate(model: Model, degrees) -> float:
    """``max_l lambda_l`` over ``degrees`` without noise (floored at 1e-300): the fastest linear time
    scale a time step must resolve (MATH.md §2.3); noise only damps, and the steppers treat it exactly."""
    degrees = np.asarray(degrees)
    noise_free = laplace_eigenvalue(degrees, model.dim) * interaction_rate(model, degrees)
    return float(max(np.max(noise_free), 1e-300))


def _search_range(model: Model) -> np.ndarray:
    return np.arange(1, band_limit(model.beta, model.dim, 1e-12) + 3)


def dominant_mode(model: Model) -> int:
    """``l* = argmax_l lambda_l``, the fastest-growing (least stable) degree (MATH.md §2.3).

    With noise the maximiser can be stable (``lambda_{l*} < 0``); see :func:`linear_noise_threshold`.
    """
    degrees = _search_range(model)
    return int(degrees[np.argmax(growth_rates(model, degrees))])


def linear_noise_threshold(model: Model) -> float:
    """``nu_# = max_l lambda_l(nu=0) / (l (l+d-2))``: the uniform state is linearly stable iff ``nu > nu_#``
    (MATH.md §2.3; the notation of §9: ``nu_sn`` a fold, ``nu_c`` the first-order point where free energies cross)."""
    return float(np.max(interaction_rate(model, _search_range(model))))


def critical_noise(model: Model) -> float:
    """The former name of :func:`linear_noise_threshold` (``nu_#``; MATH.md §9 keeps ``nu_c`` for the first-order
    point): warns (``DeprecationWarning``) and returns it, so that code written for earlier versions runs."""
    import warnings

    warnings.warn("meanfield.critical_noise is linear_noise_threshold now (nu_#, MATH.md §9; nu_c is the first-order "
                  "point)", DeprecationWarning, stacklevel=2)
    return linear_noise_threshold(model)


def _require_zonal_dim(model: Model, zonal: bool) -> None:
    require(not zonal or model.dim >= 3, f"zonal densities need --dim >= 3 (got {model.dim})")


def _law(model: Model, zonal: bool) -> tuple[np.ndarray, np.ndarray]:
    """The degrees ``1..L0`` of the ``perturbed:`` law on ``model``'s sphere and their numbers of normals (MATH.md §2.4)."""
    _require_zonal_dim(model, zonal)
    degrees = np.arange(1, law_band(model.dim, zonal) + 1)
    return degrees, np.array([coefficients_per_degree(int(l), model.dim, zonal) for l in degrees])


def law_leader(model: Model, zonal: bool = False) -> int:
    """The fastest-growing degree that ``perturbed:EPS`` excites (degrees ``1..L0``, MATH.md §2.4): ``l*`` when it
    lies in the band, else the band's own fastest degree (at large beta its top, ``L0``)."""
    degrees, _ = _law(model, zonal)
    return int(degrees[np.argmax(growth_rates(model, degrees))])


def typical_amplitude(model: Model, eps: float, degree: int | None = None, *, zonal: bool = False) -> float:
    """``exp(E log A_l)`` for the initial amplitude ``A_l`` of degree ``l`` of ``perturbed:EPS`` (default: the law's
    fastest degree, :func:`law_leader`, which is ``l*`` while ``l*`` lies in the law's band).

    MATH.md §2.4: ``A_l`` (the RMS of the degree-``l`` part of ``rho / rho_0 - 1``) is ``EPS`` times a chi
    variable with ``m_l`` degrees of freedom (``m_l = 2`` on the circle, ``2 l + 1`` on S^2, 1 zonal), so
    ``exp(E log A_l) = EPS sqrt(2) exp(digamma(m_l / 2) / 2)``: the amplitude whose :func:`formation_time` is
    the law's mean formation time (the time is linear in ``log A``).  i.i.d. tokens: ``EPS = n^{-1/2}``.
    """
    require(math.isfinite(eps) and 0 < eps < 1, f"eps must be in (0, 1) (got {eps:g})")
    degree = law_leader(model, zonal) if degree is None else int(degree)
    band = law_band(model.dim, zonal)
    require(1 <= degree <= band, f"degree must be in [1, {band}], the degrees perturbed:EPS excites (got {degree})")
    _require_zonal_dim(model, zonal)
    count = coefficients_per_degree(degree, model.dim, zonal)
    return eps * math.sqrt(2.0) * math.exp(0.5 * digamma(0.5 * count))


def formation_time(model: Model, eps: float | None = None, *, amplitude: float | None = None,
                   zonal: bool = False) -> float:
    """Predicted cluster formation time ``log(1/A) / lambda_l`` (MATH.md §2.3-2.4), ``0`` once ``A >= 1``.

    ``A`` is the initial amplitude of the dominant degree ``l = l*`` (MATH.md §2.4: the RMS of its part of
    ``rho / rho_0 - 1``; on the circle ``sqrt(2) |rho_hat_k| / rho_hat_0``): give it as ``amplitude``, or give
    the ``eps`` of a ``perturbed:EPS`` start and ``A`` is the law's :func:`typical_amplitude` (so the time is
    the mean over the law's draws; ``zonal`` for the zonal law).  That law excites the degrees ``1..L0`` only,
    so with ``eps`` ``l`` is the fastest of them (:func:`law_leader`: ``l*`` while ``l* <= L0``, i.e. up to
    ``beta`` about 128 on the circle; beyond, ``l*`` is not in the start at all).  i.i.d. tokens have every
    degree, with ``eps = n^{-1/2}`` (Bruno et al.): give their ``amplitude``.  Infinite when the uniform state is
    linearly stable (``nu >= nu_#``, :func:`linear_noise_threshold`).
    """
    require((eps is None) != (amplitude is None), "give exactly one of eps (a perturbed:EPS start) and amplitude")
    degree = dominant_mode(model) if amplitude is not None else law_leader(model, zonal)
    if amplitude is None:
        amplitude = typical_amplitude(model, eps, zonal=zonal)
    require(math.isfinite(amplitude) and amplitude > 0, f"amplitude must be a finite number > 0 (got {amplitude:g})")
    rate = growth_rates(model, [degree])[0]
    return max(0.0, math.log(1.0 / amplitude) / rate) if rate > 0 else math.inf


def _dominance_integrands(r: np.ndarray, counts: np.ndarray, log_lead: np.ndarray) -> np.ndarray:
    """``f_k(r) prod_{j != k} F_j(r exp(log_lead[k, j]))`` for every ``k`` (MATH.md §2.4): chi laws of ``counts``
    degrees of freedom, ``F_m(x) = P(m/2, x^2/2)``, ``f_m(r) = r^{m-1} exp(-r^2/2) / (2^{m/2-1} Gamma(m/2))``."""
    half = 0.5 * counts
    log_pdf = (counts - 1) * np.log(r) - 0.5 * r * r - (half - 1) * math.log(2.0) - gammaln(half)
    scaled = r * np.exp(np.minimum(log_lead, 300.0))            # F_j = 1 there already; its square stays finite
    cdf = gammainc(half[None, :], 0.5 * scaled * scaled)
    np.fill_diagonal(cdf, 1.0)
    return np.exp(log_pdf) * np.prod(cdf, axis=1)


def dominance_probabilities(model: Model, eps: float | None = None, *, time: float | None = None,
                            zonal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(degrees, P)``: the probability that each degree ``l = 1..L0`` of ``perturbed:EPS`` dominates at time ``t``.

    MATH.md §2.4: degree ``l`` dominates when its linear amplitude ``A_l exp(lambda_l t)`` is the largest; the
    ``A_l / EPS`` are independent chi variables, so by exact 1-D quadrature (``scipy.integrate.quad_vec``)
    ``P_k = int_0^inf f_k(r) prod_{j != k} F_j(r exp((lambda_k - lambda_j) t)) dr``.  On the circle ``P_k`` is the
    probability of ``k`` clusters.  ``t``: ``time``, or the :func:`formation_time` of ``eps``; when it is
    infinite (a linearly stable uniform state) the limit: the fastest degree, surely.
    """
    require((eps is None) != (time is None), "give exactly one of eps (a perturbed:EPS start) and time")
    degrees, counts = _law(model, zonal)
    rates = growth_rates(model, degrees)
    t = formation_time(model, eps, zonal=zonal) if time is None else float(time)
    require(not math.isnan(t) and t >= 0, f"time must be >= 0 (got {t:g})")
    if math.isinf(t):
        return degrees, (np.arange(degrees.size) == np.argmax(rates)).astype(float)
    log_lead = (rates[:, None] - rates[None, :]) * t
    upper = math.sqrt(float(counts.max())) + 40.0                       # chi tails below exp(-800)
    with np.errstate(divide="ignore", under="ignore"):
        integral, _ = quad_vec(lambda r: _dominance_integrands(r, counts, log_lead), 0.0, upper,
                               epsabs=1e-14, epsrel=1e-12)
    return degrees, integral
