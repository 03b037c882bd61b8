"""Measurements of discrete Post-LN layers against their theory (MATH.md §11), shared by the tests and ``validate depth``.

- :func:`circle_mode_growth`, :func:`sphere_degree_growth`: the per-layer growth of one mode of a perturbed uniform
  state, measured on quadrature nodes weighted by the perturbed density, so that every attention sum is an exact
  quadrature of the density's own integral and the measured ratio is the linear factor
  ``g_l = 1 + alpha lambda_l / (1 + alpha c_0)`` (:func:`meanfield.theory.layer_growth_factors`) up to the
  perturbation's own share, ``O(eps)`` relative.
- :func:`layer_errors`, :func:`fitted_layer_order`: ``L`` layers of step ``T / L`` against the flow at ``T`` and the
  order ``p`` of the error expansion ``E = C L^-p (1 + c / L)``.
- :func:`richardson_limit`: the layers at ``L``, ``2L``, ``4L`` extrapolated twice to ``L -> infinity`` (the flow).
- :func:`circle_density_growth`, :func:`sphere_density_growth`, :func:`zonal_density_growth`,
  :func:`fv_density_growth`: one layer pushing forward a perturbed uniform density on a density scheme (the spectral
  remaps and the finite-volume cell remap, ``scheme.layer``): the growth of the perturbed mode (against ``g_l``) and
  the mass before and after (:class:`DensityLayerGrowth`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.polynomial.legendre import leggauss, legval
from scipy.special import eval_legendre

from meanfield.gegenbauer import normalised_gegenbauer
from meanfield.geometry import sphere_area
from meanfield.model import Model
from meanfield.settings import Attention

from ..schemes.circle import CircleSpectral
from ..schemes.finite_volume import CircleFiniteVolume, ZonalFiniteVolume
from ..schemes.particles import ParticleScheme
from ..schemes.sphere import SphereSpectral
from ..schemes.zonal import ZonalGalerkin
from ..steppers.layers import run_layers

#: The default relative perturbation of the uniform state (the tests' and the study's).
EPS = 1e-7


def circle_mode_growth(attention: str, beta: float, k: int, alpha: float, n: int = 4096, eps: float = EPS,
                       layers: int = 3, normalization=None) -> np.ndarray:
    """Per-layer ratios of ``|sum_j w_j exp(-i k theta_j)|`` over ``layers`` layers of step ``alpha``, from the nodes
    ``2 pi (j + 1/2) / n`` weighted by ``1 + eps cos(k theta)`` (normalised), under ``normalization`` (a
    :class:`meanfield.normalization.Normalization`; default Post-LN; the tokens start at radius ``r0`` where it
    carries one)."""
    theta = 2 * math.pi * (np.arange(n) + 0.5) / n
    weights = 1 + eps * np.cos(k * theta)
    weights /= weights.sum()
    scheme = ParticleScheme(Model(attention, beta, 0.0, 2), n, weights=weights, normalization=normalization)
    tokens = np.stack((np.cos(theta), np.sin(theta)), -1)
    if scheme.carries_radius:
        tokens = np.concatenate((tokens, np.full((n, 1), scheme.normalization.r0)), axis=-1)
    frames = run_layers(scheme, tokens, alpha, layers)
    amplitudes = np.array([abs(np.sum(weights * np.exp(-1j * k * np.arctan2(f[:, 1], f[:, 0])))) for f in frames])
    return amplitudes[1:] / amplitudes[:-1]


def sphere_degree_growth(attention: str, beta: float, degree: int, alpha: float, nlat: int = 32, eps: float = EPS,
                         layers: int = 3) -> np.ndarray:
    """Per-layer ratios of ``sum_j w_j P_l(z_j)`` on S^2, from a Gauss–Legendre (``nlat``) x uniform (``2 nlat``) grid
    weighted by its quadrature weights times ``1 + eps P_l(z)`` (the direct interaction: the sums are exact
    quadrature)."""
    z, gauss = leggauss(nlat)
    phi = 2 * math.pi * np.arange(2 * nlat) / (2 * nlat)
    height, angle = np.meshgrid(z, phi, indexing="ij")
    legendre = [0] * degree + [1]
    weights = (gauss[:, None] * (1 + eps * legval(height, legendre))).ravel()
    weights /= weights.sum()
    ring = np.sqrt(1 - height ** 2)
    x = np.stack((ring * np.cos(angle), ring * np.sin(angle), height), -1).reshape(-1, 3)
    scheme = ParticleScheme(Model(attention, beta, 0.0, 3), x.shape[0], Attention(attention, interaction="direct"),
                            weights=weights)
    amplitudes = np.array([np.sum(weights * legval(f[:, 2], legendre)) for f in run_layers(scheme, x, alpha, layers)])
    return amplitudes[1:] / amplitudes[:-1]


def token_rms(difference: np.ndarray) -> float:
    """``(mean_j |d_j|^2)^{1/2}`` over the tokens (rows) of ``difference``: the error the layer studies fit.  The
    largest token's error converges at the same order but can stay pre-asymptotic longer (a token near a saddle of
    the field): over 120 draws of L = 8 .. 256 layers against the flow its fitted order read 0.91 .. 1.01, the root
    mean square's 0.983 .. 1.010."""
    return float(np.sqrt(np.mean(np.sum(np.square(difference), axis=-1))))


def layer_errors(scheme, x: np.ndarray, flow: np.ndarray, final: float, counts) -> np.ndarray:
    """The tokens' root mean square distance (:func:`token_rms`) of ``L`` layers of step ``final / L`` from ``x`` to
    the flow's tokens ``flow`` at ``T = final``, one value per ``L`` of ``counts``."""
    return np.array([token_rms(run_layers(scheme, x, final / count, count)[-1] - flow) for count in counts])


def fitted_layer_order(counts, errors) -> float:
    """The order ``p`` of ``E = C L^-p (1 + c / L)``, fitted by least squares as ``log E = log C - p log L + c / L``
    (a plain log-log slope, blind to the ``c / L`` term, reads low at small ``L``)."""
    counts = np.asarray(counts, dtype=float)
    design = np.stack((np.ones(counts.size), -np.log(counts), 1.0 / counts), axis=1)
    return float(np.linalg.lstsq(design, np.log(errors), rcond=None)[0][1])


def richardson_limit(scheme, x: np.ndarray, final: float, coarsest: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """The layers' ``L -> infinity`` limit at ``T = final``: ``L``, ``2L``, ``4L`` layers (``L = coarsest``) with the
    expansion ``C_1 / L + C_2 / L^2 + ...`` removed twice by Richardson extrapolation.  Returns the limit and the
    once-extrapolated tokens of the two finest counts (to show what the second extrapolation gains)."""
    coarse, middle, fine = (run_layers(scheme, x, final / count, count)[-1]
                            for count in (coarsest, 2 * coarsest, 4 * coarsest))
    once_coarse, once_fine = 2 * middle - coarse, 2 * fine - middle
    return (4 * once_fine - once_coarse) / 3, once_fine


class DensityLayerGrowth(NamedTuple):
    """One layer on a perturbed uniform density: ``factor``, the perturbed mode's amplitude after over before (the
    measured ``g_l``); the scheme's mass before and after (coefficient 0 of the spectral schemes, the cells' integral
    of finite volumes); ``lowest``, the smallest cell average after the layer (finite volumes; NaN for the spectral
    schemes, whose state holds coefficients)."""

    factor: float
    mass_before: complex
    mass_after: complex
    lowest: float = math.nan

    @property
    def mass_change(self) -> float:
        """``|m_after - m_before| / |m_before|``."""
        return abs(self.mass_after - self.mass_before) / abs(self.mass_before)


def degree_amplitude(basis, coefficients: np.ndarray, degree: int) -> float:
    """The degree-``l`` amplitude of S^2 coefficients: the root of the sum of ``|c_lm|^2`` over its orders."""
    at = basis.degree_of_index == degree
    return math.sqrt(float(np.sum(basis.multiplicity[at] * np.abs(coefficients[at]) ** 2)))


def _spectral_layer(scheme, density: np.ndarray, amplitude, alpha: float) -> DensityLayerGrowth:
    """One layer of the spectral ``scheme`` from the grid ``density``: the growth of ``amplitude(coefficients)``."""
    state = scheme.analysed(density)
    after = scheme.layer(state, alpha)
    return DensityLayerGrowth(amplitude(after) / amplitude(state), state[0], after[0])


def circle_density_growth(attention: str, beta: float, k: int, alpha: float, resolution: int = 128,
                          eps: float = EPS) -> DensityLayerGrowth:
    """The circle's spectral scheme (``resolution`` modes), the uniform density perturbed by ``eps cos(k theta)``: the
    ratio of ``|c_k|``."""
    scheme = CircleSpectral(Model(attention, beta, 0.0, 2), resolution)
    density = (1 + eps * np.cos(k * scheme.basis.theta)) / (2 * math.pi)
    return _spectral_layer(scheme, density, lambda c: abs(c[k]), alpha)


def sphere_density_growth(attention: str, beta: float, degree: int, alpha: float, resolution: int = 16,
                          eps: float = EPS) -> DensityLayerGrowth:
    """S^2's spectral scheme, perturbed by ``eps P_l(x_1)`` (a Legendre profile about the x axis, not the grid's:
    every order ``m`` moves): the ratio of the degree's amplitude (:func:`degree_amplitude`)."""
    scheme = SphereSpectral(Model(attention, beta, 0.0, 3), resolution)
    basis = scheme.basis
    colatitude, longitude = np.meshgrid(basis.colatitude, basis.longitude, indexing="ij")
    density = (1 + eps * eval_legendre(degree, np.sin(colatitude) * np.cos(longitude))) / (4 * math.pi)
    return _spectral_layer(scheme, density, lambda c: degree_amplitude(basis, c, degree), alpha)


def zonal_density_growth(attention: str, beta: float, degree: int, alpha: float, resolution: int = 16,
                         eps: float = EPS) -> DensityLayerGrowth:
    """The zonal Galerkin scheme on S^2, perturbed by ``eps P_l(cos polar angle)``: the ratio of the (real) degree-``l``
    coefficients, signed (a layer that flipped the mode would read negative)."""
    scheme = ZonalGalerkin(Model(attention, beta, 0.0, 3), resolution)
    density = (1 + eps * eval_legendre(degree, scheme.basis.nodes)) / (4 * math.pi)
    return _spectral_layer(scheme, density, lambda c: c[degree], alpha)


def fv_density_growth(attention: str, beta: float, k: int, alpha: float, cells: int,
                      eps: float = EPS) -> DensityLayerGrowth:
    """The circle's finite volumes (``cells`` cells) from the EXACT cell averages of ``(1 + eps cos(k theta)) / 2 pi``:
    the ratio of the cells' ``k``-th DFT coefficient (the remap is second order: the factor errs by ``O(cells^-2)``)."""
    scheme = CircleFiniteVolume(Model(attention, beta, 0.0, 2), cells)
    faces = scheme.faces
    averages = (1 + eps * np.diff(np.sin(k * faces)) / (k * np.diff(faces))) / (2 * math.pi)
    state = scheme.state_from_cell_averages(averages)
    after = scheme.layer(state, alpha)
    return DensityLayerGrowth(abs(np.fft.rfft(after)[k]) / abs(np.fft.rfft(state)[k]), scheme.mass(state),
                              scheme.mass(after), float(np.min(after)))


def zonal_fv_density_growth(attention: str, beta: float, degree: int, alpha: float, cells: int, dim: int = 3,
                            eps: float = EPS) -> DensityLayerGrowth:
    """The zonal finite volumes (``cells`` polar cells on S^{dim-1}) from the EXACT cell averages of
    ``(1 + eps P_l) / |S^{d-1}|`` (``P_l`` the Gegenbauer polynomial normalised to ``P_l(1) = 1``): the ratio of the
    cells' degree-``l`` coefficients (exact cell integrals; second order in ``1 / cells``, as on the circle)."""
    scheme = ZonalFiniteVolume(Model(attention, beta, 0.0, dim), cells)
    unit = normalised_gegenbauer(np.ones(1), degree, dim)[0]          # P_l(1) of the orthonormal polynomials
    coefficients = np.zeros(degree + 1)
    coefficients[0] = 1.0 / (sphere_area(dim) * unit[0])
    coefficients[degree] = eps * coefficients[0] * unit[0] / unit[degree]
    state = scheme.state_from_cell_averages(scheme.cell_averages(coefficients))
    after = scheme.layer(state, alpha)
    rows = scheme.G[:degree + 1]
    return DensityLayerGrowth(float((rows @ after)[degree] / (rows @ state)[degree]), scheme.mass(state),
                              scheme.mass(after), float(np.min(after)))
