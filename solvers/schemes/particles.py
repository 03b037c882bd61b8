"""Weighted particle systems of self-attention on S^{d-1} or in R^d (MATH.md §1).

:class:`ParticleScheme` is a scheme for the shared steppers and run loop
(``meanfield.solvers.steppers.steppers``, ``meanfield.solvers.runs.runloop``): ``rhs`` is the attention velocity
(``meanfield.solvers.schemes.interaction``), projected on the tangent space on the sphere, and
``after_step`` renormalises tokens to the sphere after every accepted step and,
with noise ``nu > 0``, moves each token by a geodesic random walk step::

    x <- cos|u| x + sin|u| u / |u|,   u = sqrt(2 nu h) P_x xi,   xi ~ N(0, I_d)

(a Lie splitting of the Stratonovich projected SDE whose mean-field limit adds
``nu Laplace_Beltrami(rho)`` to the PDE, MATH.md §1; weak order 1 in the step, so
cap the step with ``dt_max``).  With a noise schedule ``nu(t)`` (``nu_schedule``,
:mod:`meanfield.noise_schedule`) the step's variance is ``2 int_t^{t+h} nu`` instead of ``2 nu h``:
``u = sqrt(2 int_t^{t+h} nu) P_x xi``.  Tokens may carry weights (uniform for i.i.d.
samples, quadrature weights for deterministic nodes); a leading batch axis runs
``B`` independent systems at once (shape ``(B, n, d)``).

Collapse (``collapse_tol > 0``; one system on the sphere, no noise, one dot-product head;
MATH.md §5, :mod:`meanfield.solvers.tracking.clusters`): tokens closer than ``collapse_tol`` become one token with
the summed weight at their weighted mean direction.  Whatever ``Q, K, V``, tokens at one point
have one velocity, so without noise they never separate again and the merge is exact.  The state
then holds the remaining tokens (``weights`` are theirs, ``token_weights`` the original ones);
frames report one position per original token.

Normalisation schemes (``normalization``, :class:`meanfield.normalization.Normalization`, MATH.md §6):
with the attention output ``A_j`` of the directions ``theta_j`` (the velocity above before
projection), directions move by ``P_theta A / s`` and Pre-, Mix- and Peri-LN tokens also carry a
radius ``r_j`` with ``dr_j/dt`` from the scheme's table.  Those schemes hold the state as
``(B, n, d + 1)``: the direction, then the radius as the last column (``after_step`` renormalises
the direction only), so exact restarts carry the radius with the state.  Post-LN (the default) is
the model above, bit for bit.  On the circle with ``Q = K = V = I`` the ``O(n M)`` Fourier path also
gives ``<theta, A>`` (:meth:`meanfield.solvers.schemes.interaction.CircleFourierInteraction.attention_parts`; on S^2 the
harmonic path's :meth:`meanfield.solvers.schemes.interaction.SphereHarmonicInteraction.attention_parts`), so every
scheme keeps the fast path.  Radius-carrying schemes refuse noise and collapse.

Interaction paths (``interaction_path``): ``"direct"`` sums over all pairs
(:class:`meanfield.solvers.schemes.interaction.DirectInteraction`, ``O(n^2)``, any ``d``, ``Q, K, V``, heads, kernels);
``"harmonic"`` is the band-limited transform path of ``Q = K = V = I`` dot-product attention on the sphere:
on S^1 the Fourier sums (:class:`meanfield.solvers.schemes.interaction.CircleFourierInteraction`), on S^2 the spherical-harmonic
transforms (:class:`meanfield.solvers.schemes.interaction.SphereHarmonicInteraction`, accuracy ``harmonic_accuracy`` relative
to the direct sum, default 1e-12), refused elsewhere; ``"auto"`` (default) takes it on the circle always
(as before) and on S^2 from :func:`harmonic_crossover` tokens on, where it is measured to be faster.
Both paths handle SA and USA, weights, noise, collapse and every normalisation scheme.

Causal attention (``mask``, ``alibi``; MATH.md §8, :mod:`meanfield.solvers.schemes.causal_interaction`): token ``j`` (the
particle index, position ``j / n``) attends to the tokens ``k <= j`` (``mask="causal"``) or ``k < j``
(``"strict"``: token 1 does not move), with the ALiBi logit bias ``-lambda (j - k) / n`` (SA) or the normalised
positional weights of MATH.md §8 (USA).  ``"harmonic"`` (and ``"auto"``) on the circle with ``Q = K = V = I``
is the ``O(n M)`` path of decaying prefix sums (:class:`meanfield.solvers.schemes.causal_interaction.CausalCircleInteraction`);
otherwise, S^2 included, the masked direct sum (:class:`meanfield.solvers.schemes.causal_interaction.CausalDirectInteraction`).
A mask needs tokens on the sphere, the dot-product kernel, uniform weights (an ordered sequence of tokens, not
quadrature nodes) and no collapse (tokens at different positions feel different fields: merging them is not
exact); noise, several heads and the normalisation schemes apply per token as without a mask (``peri`` and
``ngpt`` divide by ``|A_j|``, which is 0 for token 1 under ``"strict"``: refused there).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield.errors import require
from meanfield.geometry import row_norms
from meanfield.model import Model
from meanfield.normalization import Normalization
from meanfield.qkv import bounded_entries
from meanfield.settings import Attention, Mask
from meanfield.seeding import stream
from meanfield.token_kernel import TOKEN_KERNELS, token_kernel

from .causal_interaction import CausalCircleInteraction, CausalDirectInteraction, token_positions
from ..tracking.clusters import ClosingPairsStep, NodeCollapse, closing_rate
from .contract import MergesNodes, Scheme
from .interaction import (SPHERE_ACCURACY, CircleFourierInteraction, DirectInteraction,
                          SphereHarmonicInteraction)

#: Tokens further than this from the unit sphere mean the run has lost validity.
SPHERE_TOL = 1e-10
#: S^2 auto choice: the harmonic path from this many tokens on (band <= 40; measured crossover, one core,
#: SA: direct/harmonic = 0.6 at n = 256, 1.1-1.7 at 512, 6-11 at 1024 for beta = 1, 4, 16)
HARMONIC_MIN_N = 512
#: ... and from ``n = HARMONIC_MIN_N band / HARMONIC_BAND`` at wider bands (beta = 64, band 67: 0.55 at 512,
#: 2.9 at 1024): the transforms' fixed cost grows with the band
HARMONIC_BAND = 40


def harmonic_crossover(band: int) -> int:
    """Smallest ``n`` at which ``interaction_path="auto"`` takes the S^2 harmonic path of band ``band``."""
    return int(math.ceil(HARMONIC_MIN_N * max(1.0, band / HARMONIC_BAND)))


def _is_identity(matrix, dim: int) -> bool:
    return matrix is None or (matrix.shape == (dim, dim) and np.array_equal(matrix, np.eye(dim)))


def check_matrix(name: str, matrix, dim: int):
    """A square ``dim x dim`` finite float matrix, or ``None`` for the identity."""
    if matrix is None:
        return None
    matrix = np.asarray(matrix, dtype=float)
    require(matrix.shape == (dim, dim), f"{name} must be a {dim} x {dim} matrix (got shape {matrix.shape})")
    return bounded_entries(name, matrix)


def check_projection(name: str, matrix, dim: int):
    """A ``k x dim`` finite float matrix (any ``k >= 1``), or ``None`` for the identity."""
    if matrix is None:
        return None
    matrix = np.asarray(matrix, dtype=float)
    require(matrix.ndim == 2 and matrix.shape[0] >= 1 and matrix.shape[1] == dim,
            f"{name} must be a k x {dim} matrix (got shape {matrix.shape})")
    return bounded_entries(name, matrix)


def check_head(label: str, Q, K, V, dim: int) -> tuple:
    """``(Q, K, V)`` with ``Q, K`` of one shape ``k x dim`` (``None``: identity) and ``V`` ``dim x dim``."""
    Q, K = check_projection(f"Q{label}", Q, dim), check_projection(f"K{label}", K, dim)
    rows = lambda m: dim if m is None else m.shape[0]
    require(rows(Q) == rows(K), f"Q{label} and K{label} must have the same number of rows "
                                f"(got {rows(Q)} and {rows(K)})")
    return Q, K, check_matrix(f"V{label}", V, dim)


def normalised_weights(weights, n: int) -> np.ndarray:
    """Weights summing to 1 (uniform ``1/n`` if ``None``); refuse negative or massless ones."""
    if weights is None:
        return np.full(n, 1.0 / n)
    weights = np.asarray(weights, dtype=float)
    require(weights.shape == (n,), f"weights must have one entry per particle ({n}), got shape {weights.shape}")
    require(bool(np.all(np.isfinite(weights))) and bool(np.all(weights >= 0)) and weights.sum() > 0,
            "weights must be finite, non-negative, with a positive sum")
    return weights / weights.sum()


class ParticleScheme(MergesNodes, ClosingPairsStep, Scheme):
    """Right-hand side, post-step map and checks for particle runs; see the module docstring.

    ``model``
        attention, beta, nu, dim (the tokens' dimension d).
    ``attention``
        a :class:`meanfield.settings.Attention` of the model's kind (``None``: ``Q = K = V = I``, the dot-product
        kernel, the ``auto`` path): its matrices (``Q, K, V``, ``d x d``, ``None`` the identity; in R^d ``Q, K``
        may be ``k x d``, the same ``k``; or ``heads``, whose outputs are summed, on the sphere then projected or
        normalised by the scheme of MATH.md §6), drawn or read from its ``qkv`` choice here, once
        (:meth:`meanfield.settings.Attention.matrices`, the ``random`` ones from ``seed``); its ``kernel``
        (``"dot"``: weights ``exp(beta <Qx, Ky>)``; ``"l2"``: ``exp(-beta |Qx - Ky|^2 / 2)``, R^d only;
        ``"sinkhorn"``: the doubly normalised plan of ``exp(beta <Qx, Ky> / eps)``, Sinkformers, R^d and SA only,
        :mod:`meanfield.solvers.schemes.interaction`) with ``sinkhorn_eps``; and its interaction path ``"auto"``,
        ``"harmonic"`` or ``"direct"`` (module docstring).
    ``weights``
        per-token weights, normalised to sum 1 (``None``: uniform).
    ``sphere``
        tokens on S^{d-1} (projected dynamics) or in R^d (no projection, no noise).
    ``seed``
        seeds the noise and the ``random`` matrices.
    ``collapse_tol``
        merge tokens closer than this (0: never; see the module docstring).
    ``normalization``
        a :class:`meanfield.normalization.Normalization` (``None``: Post-LN).
    ``mask``
        a :class:`meanfield.settings.Mask` (``None``: no mask): ``"causal"`` (``k <= j``) or ``"strict"``
        (``k < j``) with the ALiBi slope ``alibi``; MATH.md §8.
    ``nu_schedule``
        a :class:`meanfield.noise_schedule.NoiseSchedule` (``None``: the model's constant ``nu``, which must then
        be 0): the noise ``nu(t)``; tokens on the sphere, Post-LN, nGPT or LN-scaling, no collapse.
    ``block_bytes``, ``harmonic_accuracy``
        the direct sum's block size in bytes; the S^2 harmonic path's accuracy.
    """

    linear = None
    state_scale = 1.0
    name = "particles"
    #: mutable fields an exact restart carries (:mod:`meanfield.solvers.records.checkpoint`; the noise generator too)
    restart_fields = ("token_weights", "weights", "collapser.owner", "collapser.merged")

    @property
    def clusters_read_state_alone(self) -> bool:
        """A state's tokens are read through ``collapser.owner``, which a collapse changes: with collapse on, clusters
        are counted after every step; without (``collapse_tol = 0``) the state alone gives them, and they are counted
        at saved frames, the events located on the steps kept between (:mod:`meanfield.solvers.tracking.clusters`)."""
        return not self.collapser.enabled

    def __init__(self, model: Model, n: int, attention: Attention | None = None, *, weights=None,
                 sphere: bool = True, seed=None, collapse_tol: float = 0.0, normalization: Normalization | None = None,
                 mask: Mask | None = None, nu_schedule=None, block_bytes: int | None = None,
                 harmonic_accuracy: float = SPHERE_ACCURACY):
        require(isinstance(n, (int, np.integer)) and n >= 1, f"--n must be a positive integer (got {n!r})")
        attention = Attention(model.attention) if attention is None else attention
        require(isinstance(attention, Attention), f"attention must be a meanfield.Attention "
                                                  f"(got {type(attention).__name__})")
        require(attention.kind == model.attention, f"the attention's kind {attention.kind!r} must be the model's "
                                                   f"{model.attention!r}")
        mask = Mask() if mask is None else mask
        require(isinstance(mask, Mask), f"mask must be a meanfield.Mask (got {type(mask).__name__})")
        self.mask, self.alibi = mask.kind, mask.alibi
        dim = model.dim
        self.model, self.n, self.dim, self.sphere = model, int(n), dim, sphere
        kernel, sinkhorn_eps, interaction_path = attention.kernel, attention.sinkhorn_eps, attention.interaction
        Q, K, V, heads = attention.matrices(dim, seed)
        self.token_kernel = token = token_kernel(kernel)
        require(sphere is False or token.on_sphere,
                f"kernel={kernel!r} needs tokens in R^d (sphere=False); on the sphere: "
                f"{', '.join(repr(name) for name, each in TOKEN_KERNELS.items() if each.on_sphere)}")
        require(not token.needs_normalised or model.normalised,
                f"kernel={kernel!r} is normalised by construction: it needs attention 'sa', not {model.attention!r}")
        self.kernel, self.sinkhorn_eps = kernel, float(sinkhorn_eps)
        if sphere:
            self.Q, self.K, self.V = (check_matrix(name, m, dim) for name, m in (("Q", Q), ("K", K), ("V", V)))
        else:
            self.Q, self.K, self.V = check_head("", Q, K, V, dim)
        self.heads = None
        if heads is not None:
            self.heads = [check_head(f"[{h}]", *head, dim) for h, head in enumerate(heads)]
        self.weights = self.token_weights = normalised_weights(weights, self.n)
        require(sphere or model.nu == 0, "--nu must be 0 for tokens in R^d (noise is defined on the sphere)")
        self.normalization = Normalization() if normalization is None else normalization
        require(isinstance(self.normalization, Normalization), "normalization must be a Normalization")
        name = self.normalization.name
        require(name == "post" or sphere, f"--normalization {name} needs tokens on the sphere")
        self.carries_radius = self.normalization.carries_radius
        #: Mix-LN: whether the run is past its switch; the run loop's caller sets it at ``tau``, so the
        #: first stage of a step starting at ``tau`` (where ``acts_as`` still says post) moves as Pre-LN
        self.after_switch = False
        require(not self.carries_radius or model.nu == 0,
                f"--normalization {name} carries a radius: it needs --nu 0 (noise is defined for post, ngpt, lnscale)")
        require(not self.carries_radius or collapse_tol == 0,
                f"--normalization {name} carries a radius: it needs --collapse-tol 0 (merges are for post, ngpt, lnscale)")
        if nu_schedule is not None:
            self._check_schedule(nu_schedule, collapse_tol)
        if self.mask != "none":
            self._check_causal(collapse_tol)
        require(collapse_tol == 0 or (sphere and model.nu == 0 and self.one_head_geometry(heads)),
                "collapse_tol needs tokens on the sphere, no noise and one dot-product head")
        self.collapser = NodeCollapse(self.n, collapse_tol)
        identity = heads is None and all(_is_identity(m, dim) for m in (self.Q, self.K, self.V))
        kwargs = {} if block_bytes is None else {"block_bytes": block_bytes}
        self.interaction_path = self._choose_path(interaction_path, identity, harmonic_accuracy)
        causal = {"mask": self.mask, "alibi": self.alibi}
        if self.interaction_path == "harmonic" and dim == 2 and self.mask != "none":
            self.interaction = CausalCircleInteraction(model.beta, model.attention, self.weights, **causal)
        elif self.interaction_path == "harmonic" and dim == 2:
            self.interaction = CircleFourierInteraction(model.beta, model.attention, self.weights)
        elif self.interaction_path == "harmonic":
            self.interaction = self._sphere_harmonic
        elif self.mask != "none":
            self.interaction = CausalDirectInteraction(model.beta, model.attention, self.Q, self.K, self.V,
                                                       self.weights, heads=self.heads, **causal, **kwargs)
        elif self.one_head_geometry(heads):
            self.interaction = DirectInteraction(model.beta, model.attention, self.Q, self.K, self.V,
                                                 self.weights, **kwargs)
        else:
            self.interaction = DirectInteraction(model.beta, model.attention, self.Q, self.K, self.V,
                                                 self.weights, kernel=kernel, heads=self.heads,
                                                 sinkhorn_eps=self.sinkhorn_eps, **kwargs)
        self.identity = identity
        self.rng = stream(seed, "noise")
        self.max_speed = 0.0

    def one_head_geometry(self, heads) -> bool:
        """One head (``heads`` None) of a kernel with the sphere's geometry (the dot product): the energy, exact
        merges, the harmonic paths and masks apply (:attr:`meanfield.token_kernel.TokenKernel.single_head_geometry`)."""
        return heads is None and self.token_kernel.single_head_geometry

    def _check_schedule(self, schedule, collapse_tol) -> None:
        """A noise schedule (module docstring) and what it needs, one line each."""
        require(self.model.nu == 0, f"give --nu or --nu-schedule, not both (got --nu {self.model.nu:g})")
        require(self.sphere, "--nu-schedule needs tokens on the sphere (noise is defined on the sphere)")
        require(not self.carries_radius, f"--normalization {self.normalization.name} carries a radius: it takes no "
                                         f"--nu-schedule (noise is defined for post, ngpt, lnscale)")
        require(collapse_tol == 0, "--collapse-tol needs no noise: with --nu-schedule coincident tokens separate "
                                   "again (give --collapse-tol 0)")
        self.noise_schedule = schedule

    def _check_causal(self, collapse_tol) -> None:
        """The settings a mask needs (module docstring), one line each."""
        mask = f"--mask {self.mask}"
        require(self.sphere and self.token_kernel.single_head_geometry,
                f"{mask} needs tokens on the sphere and the dot-product kernel (got kernel={self.kernel!r}, "
                f"sphere={self.sphere})")
        require(collapse_tol == 0, f"{mask} needs --collapse-tol 0 (got {collapse_tol!r}): tokens at different "
                                   f"positions feel different fields, so merging them is not exact")
        require(bool(np.all(self.weights == self.weights[0])),
                f"{mask} needs uniform token weights: the tokens are an ordered sequence (MATH.md §8), not "
                f"quadrature nodes")
        require(self.mask != "strict" or self.normalization.name not in ("peri", "ngpt"),
                f"--normalization {self.normalization.name} divides by |A_j|, which is 0 for token 1 under "
                f"{mask}; use --mask causal or another normalisation")

    def _choose_path(self, path, identity: bool, accuracy) -> str:
        """``"harmonic"`` or ``"direct"`` from the requested ``interaction_path`` (module docstring)."""
        applies = self.sphere and self.dim in (2, 3) and identity and self.token_kernel.single_head_geometry
        if path == "harmonic":
            require(self.sphere and self.dim in (2, 3), f"--interaction harmonic needs tokens on S^1 or S^2 "
                                                       f"(--dim 2 or 3, got {self.dim}); use --interaction direct")
            require(self.mask == "none" or self.dim == 2, f"--interaction harmonic with --mask {self.mask} needs "
                                                          f"the circle (--dim 2); on S^2 use --interaction direct")
            require(applies, "--interaction harmonic needs Q = K = V = I (--qkv identity), one head and the "
                             "dot-product kernel; use --interaction direct")
        masked_sphere = self.mask != "none" and self.dim == 3       # a mask on S^2: the direct sum
        if path == "direct" or not applies or masked_sphere:
            return "direct"
        if self.dim == 3:
            band = SphereHarmonicInteraction.band_for(self.model.beta, accuracy)
            if path == "auto" and self.n < harmonic_crossover(band):    # decided before any table is built
                return "direct"
            self._sphere_harmonic = SphereHarmonicInteraction(self.model.beta, self.model.attention, self.weights,
                                                              accuracy=accuracy)
        return "harmonic"

    # -- dynamics ---------------------------------------------------------------------------------
    def directions(self, x: np.ndarray) -> np.ndarray:
        """The tokens' directions ``theta`` (``x`` without its radius column, if any)."""
        return x[..., :self.dim] if self.carries_radius else x

    def attention_parts(self, theta: np.ndarray):
        """``(<theta, A>, P_theta A, |A|)`` of the attention output ``A`` at the directions ``theta`` (MATH.md §6,
        §11): its radial part, its tangential part (the Post-LN velocity) and its length."""
        return self._attention_parts(theta)

    def _attention_parts(self, theta: np.ndarray):
        """``(<theta, A>, P_theta A, |A|)`` of the attention output ``A`` (MATH.md §6)."""
        if self.interaction.projected:
            return self.interaction.attention_parts(theta)
        output = self.interaction.velocity(theta)
        radial = np.sum(output * theta, axis=-1)
        norm = np.sqrt(np.sum(output * output, axis=-1))
        output -= radial[..., None] * theta
        return radial, output, norm

    def _normalized_rhs(self, x: np.ndarray, t: float) -> np.ndarray:
        """``dtheta/dt = P_theta A / s`` and, for radius-carrying schemes, ``dr/dt`` (MATH.md §6)."""
        theta = self.directions(x)
        radial, tangent, norm = self._attention_parts(theta)
        radius = x[..., self.dim] if self.carries_radius else None
        t = self.normalization.stage_time(t, self.after_switch)
        divisor = self.normalization.divisor(t, radius, norm)
        tangent /= divisor[..., None] if np.ndim(divisor) else divisor
        if not self.carries_radius:
            return tangent
        rate = self.normalization.radial_rate(t, radial, norm)
        return np.concatenate((tangent, rate[..., None]), axis=-1)

    def rhs(self, x: np.ndarray, t: float) -> np.ndarray:
        if self.normalization.name != "post":
            velocity = self._normalized_rhs(x, t)
            # the step bound follows the directions; the radius rate <theta, A> is bounded and moves nothing
            angular = velocity[..., :self.dim]
            self.max_speed = float(np.max(row_norms(angular)))
            self._field = (x, velocity)
            return velocity
        velocity = self.interaction.velocity(x)
        if self.sphere and not self.interaction.projected:
            velocity -= np.sum(velocity * x, axis=-1, keepdims=True) * x
        self.max_speed = float(np.max(row_norms(velocity)))   # sqrt is monotone: the bits of sqrt(max |v|^2)
        self._field = (x, velocity)
        return velocity

    def stable_dt(self, cfl: float) -> float:
        """``cfl / ((1 + beta |Q||K|) max|v|)``: the field's speed times a Lipschitz estimate."""
        heads = self.heads if self.heads is not None else [(self.Q, self.K, self.V)]
        lipschitz = self.token_kernel.lipschitz(self.model.beta, heads, self.heads is None, self.sinkhorn_eps)
        return cfl / max(lipschitz * self.max_speed, 1e-300)

    #: the last accepted state the collapse looked at (the step bound reuses its close pairs)
    _accepted = None

    def adaptive_dt(self, cfl: float) -> float:
        """:meth:`stable_dt`, and with collapse also ``cfl / closing_rate``
        (:func:`meanfield.solvers.tracking.clusters.closing_rate`): pairs about to coincide are resolved until they merge."""
        bound = self.stable_dt(cfl)
        if not self.collapser.enabled:
            return bound
        x, velocity = self._field
        accepted = self._accepted
        shared = accepted is not None and accepted.shape == x.shape   # its close pairs are known (clusters.close_pairs)
        if shared:
            x = accepted
        return min(bound, cfl / max(closing_rate(x[0], velocity[0], self.closing_within, remember=shared), 1e-300))

    def after_step(self, x: np.ndarray, h: float, t: float | None = None) -> np.ndarray:
        """Renormalise to the sphere; with noise, a geodesic random-walk step of variance ``2 nu h`` (with a noise
        schedule ``2 int_t^{t+h} nu``, ``t`` the step's start)."""
        if not self.sphere:
            return x
        if self.carries_radius:  # the direction back to the sphere; the radius as it is
            out = x.copy()
            out[..., :self.dim] /= row_norms(x[..., :self.dim], keepdims=True)
            return out
        scale = None
        if self.noise_schedule is not None:
            scale = math.sqrt(2 * self.noise_schedule.integral(t, t + h))
        elif self.model.nu > 0:
            scale = math.sqrt(2 * self.model.nu * h)
        if scale is not None:
            xi = self.rng.standard_normal(x.shape) * scale
            tangent = xi - np.sum(xi * x, axis=-1, keepdims=True) * x
            length = np.linalg.norm(tangent, axis=-1, keepdims=True)
            safe = np.where(length > 0, length, 1.0)
            x = np.cos(length) * x + np.sin(length) * tangent / safe
        return x / row_norms(x, keepdims=True)

    @property
    def dense_frames(self) -> bool:
        """Frames from the stepper's dense output only without noise (a random walk has no interpolant)."""
        return self.noise_schedule is None and self.model.nu == 0

    def frame_state(self, x: np.ndarray) -> np.ndarray:
        """An interpolated state back onto the sphere (:meth:`after_step` without noise)."""
        return self.after_step(x, 0.0)

    def after_restore(self) -> None:
        """The interaction sums over the restored (merged) weights (:mod:`meanfield.solvers.records.checkpoint`)."""
        self.interaction.weights = self.weights

    # -- collapse ---------------------------------------------------------------------------------------
    @staticmethod
    def points(x: np.ndarray) -> np.ndarray:
        """The tokens of the (single) system as unit vectors."""
        return x[0]

    def collapse(self, x: np.ndarray) -> np.ndarray:
        """Merge tokens within ``collapse_tol`` (module docstring); ``x`` itself if none are."""
        if not self.collapser.enabled:
            return x
        require(x.shape[0] == 1, "collapse_tol needs a single system (batch size 1)")
        self._accepted = x
        points = x[0]
        merged, weights = self.collapser.collapse_points(points, self.weights)
        if merged is points:         # nothing merged (x[0] would be a new view, never ``is`` the old one)
            return x
        self.weights = self.interaction.weights = weights
        self._accepted = merged[None]
        return self._accepted

    def will_merge(self, x: np.ndarray) -> bool:
        """Whether :meth:`collapse` merges tokens (the grouping is kept for it)."""
        return self.collapser.enabled and x.shape[0] == 1 and self.collapser.would_merge(x[0])

    # -- checks and records -------------------------------------------------------------------------
    def validity(self, x: np.ndarray, t: float) -> str | None:
        if not np.all(np.isfinite(x)):
            return f"non-finite values at t = {t:.6g}"
        if self.carries_radius and not np.all(x[..., self.dim] > 0):
            return f"a token's radius reached 0 at t = {t:.6g}"
        if self.sphere:
            drift = float(np.max(np.abs(row_norms(self.directions(x)) - 1.0)))
            if drift > SPHERE_TOL:
                return f"tokens left the sphere at t = {t:.6g} (| |x| - 1 | = {drift:.3g})"
        return None

    def scaled_energy(self, x: np.ndarray) -> np.ndarray:
        """``exp(-beta) E`` per system (MATH.md §2); at ``beta = 0`` the limit ``|sum_i w_i x_i|^2 / 2``
        of ``E - 1/(2 beta)``.  Defined for the single-head dot-product kernel only."""
        require(self.one_head_geometry(self.heads),
                "the interaction energy is defined only for the single-head dot-product kernel")
        x = self.directions(x)
        if self.model.beta == 0:
            mean = np.einsum("bnd,n->bd", x, self.weights)
            return 0.5 * np.sum(mean * mean, axis=-1)
        return self.interaction.scaled_energy(x)

    def cluster_variables(self, x: np.ndarray) -> dict:
        """What its clusters read (MATH.md §10): the tokens' directions, one per original token."""
        return {"positions": self.directions(x[:, self.collapser.owner] if self.collapser.merged else x)[0]}

    def static_variables(self) -> dict:
        """``weights(particle)``: the tokens' masses (sum 1)."""
        return {"weights": ("particle", self.token_weights.copy(), {"long_name": "token weights (sum 1)"})}

    def frame(self, x: np.ndarray) -> dict:
        tokens = x[:, self.collapser.owner] if self.collapser.merged else x
        record = {"positions": self.directions(tokens)[0].copy()}
        if self.carries_radius:
            record["radius"] = tokens[0, :, self.dim].copy()
        if self.one_head_geometry(self.heads):
            record["energy"] = float(self.scaled_energy(x)[0])
        if self.dim == 2 and self.sphere:
            tokens = self.directions(tokens)
            record["theta"] = np.mod(np.arctan2(tokens[0, :, 1], tokens[0, :, 0]), 2 * math.pi)
        return record

    def dims(self) -> dict:
        return {"positions": ("particle", "component"), "theta": ("particle",), "radius": ("particle",)}

    def coords(self) -> dict:
        coords = {"particle": ("particle", np.arange(self.n)), "component": ("component", np.arange(self.dim))}
        if self.mask != "none":      # the token's place in the sequence (MATH.md §8)
            coords["position"] = ("particle", token_positions(self.n), {"long_name": "token position s = j / n"})
        return coords
