"""Singular-value statistics of per-sample weight gradients, computed exactly from factors.

The gradient of a linear layer for one sample is ``G = g^T x`` where ``x`` (T x n) holds the
layer's inputs and ``g`` (T x m) the gradients at its outputs, one row per token position. Its
rank is at most T. When T < min(m, n), write ``x^T = Q R`` (thin QR, R is T x T): then
``G = g^T R^T Q^T`` has the singular values of the small T x m matrix ``R g``, whose T x T Gram
matrix ``R g g^T R^T`` gives them as square roots of its eigenvalues (see the methods page, "Exact spectra without forming the gradient").
Q, K and V read the same input, so one R serves all three. Otherwise G itself is formed. Either
way the small linear algebra runs in float64, so the statistics equal those of a full SVD of the
materialised gradient.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from analysis.core import layer_stats
from analysis.core.errors import StudyError
from analysis.core.vocabulary import PROJECTIONS

# The statistics computed from singular values, as declared in analysis.core.layer_stats.
STATISTICS = layer_stats.names(layer_stats.of_source(layer_stats.SPECTRUM))

# The T x T route is taken below this fraction of min(m, n); above it, forming G is cheaper.
FACTORED_FRACTION = 0.8


def uses_factored_path(n_tokens: int, shape: tuple[int, int]) -> bool:
    """Whether the singular values can come from the T x T factor core rather than the gradient."""
    return n_tokens < min(shape)


def prefers_factored_spectrum(n_tokens: int, shape: tuple[int, int]) -> bool:
    """Whether the T x T factor route is cheaper than forming the gradient (both are exact).

    Near T = min(m, n) the QR decomposition and the T x T products cost more than forming G,
    so the factor route is taken only below ``FACTORED_FRACTION * min(m, n)``.
    """
    return n_tokens < FACTORED_FRACTION * min(shape)


def input_triangle(x: torch.Tensor) -> torch.Tensor:
    """R of the thin QR ``x^T = Q R`` for a batch of inputs (..., T, n) with T <= n, float64."""
    return torch.linalg.qr(x.to(torch.float64).mT, mode="r").R


def singular_values(g: torch.Tensor, x: torch.Tensor, triangle: torch.Tensor | None = None) -> torch.Tensor:
    """Singular values (descending, float64) of ``g^T x`` for a batch of factor pairs.

    ``g`` is (..., T, m) and ``x`` is (..., T, n); the result is (..., min(m, n)). Leading
    dimensions batch independent gradients that share T, m and n (e.g. all layers of a model).
    ``triangle`` is :func:`input_triangle` of ``x`` when the caller already has it.
    """
    n_tokens, m, n = g.shape[-2], g.shape[-1], x.shape[-1]
    k = min(m, n)
    if not uses_factored_path(n_tokens, (m, n)):
        return _singular_values_of(g.to(torch.float64).mT @ x.to(torch.float64))
    triangle = input_triangle(x) if triangle is None else triangle
    values = _singular_values_of(triangle @ g.to(torch.float64))
    padding = values.new_zeros(values.shape[:-1] + (k - n_tokens,))
    return torch.cat([values, padding], dim=-1)


def _singular_values_of(matrix: torch.Tensor) -> torch.Tensor:
    """Descending singular values of a (batch of) float64 matrix via the smaller Gram matrix.

    eigvalsh of the Gram matrix is about twice as fast as svdvals; in float64 its absolute error
    on a singular value s is about 1e-16 * s_max**2 / s, far below the float32 noise of any
    gradient, so every statistic keeps well inside 1e-4 relative of a direct SVD.
    """
    rows, cols = matrix.shape[-2], matrix.shape[-1]
    gram = matrix @ matrix.mT if rows <= cols else matrix.mT @ matrix
    eigenvalues = torch.linalg.eigvalsh(gram).clamp_min(0.0)
    return eigenvalues.flip(-1).sqrt()


# source -> statistic name -> its function, filled by the decorators below.
FUNCTIONS: dict[str, dict[str, Callable]] = {source: {} for source in layer_stats.SOURCES}


def _registers(source: str) -> Callable[[Callable], Callable]:
    def register(function: Callable) -> Callable:
        FUNCTIONS[source][function.__name__] = function
        return function

    return register


of_singular_values = _registers(layer_stats.SPECTRUM)  # f(descending singular values (..., k), float64) -> (...)
of_entries = _registers(layer_stats.ENTRIES)  # f(dense gradients (..., m, n)) -> (...)
of_factors = _registers(layer_stats.FACTORS)  # f(projection -> LayerFactors, statistic -> (L, 4)) -> (L, 4)


def functions(source: str) -> dict[str, Callable]:
    """Name -> function of every statistic that ``analysis.core.layer_stats`` declares for ``source``."""
    declared = layer_stats.of_source(source)
    missing = [s.name for s in declared if s.name not in FUNCTIONS[source]]
    if missing:
        decorator = {layer_stats.SPECTRUM: "of_singular_values", layer_stats.ENTRIES: "of_entries"}.get(
            source, "of_factors"
        )
        raise StudyError(
            f"statistic {missing[0]!r} is declared in analysis/core/layer_stats.py (computed from the {source}), "
            f"but analysis/extract/spectra.py has no function {missing[0]} decorated with @{decorator}"
        )
    return {s.name: FUNCTIONS[source][s.name] for s in declared}


def statistics_from_singular_values(s: torch.Tensor) -> dict[str, torch.Tensor]:
    """The study's statistics of one or many gradients from their descending singular values."""
    s = s.to(torch.float64)
    return {name: function(s) for name, function in functions(layer_stats.SPECTRUM).items()}


@of_singular_values
def nuclear_norm(s: torch.Tensor) -> torch.Tensor:
    return s.sum(-1)


@of_singular_values
def sigma_max(s: torch.Tensor) -> torch.Tensor:
    return s[..., 0]


@of_singular_values
def sigma_min(s: torch.Tensor) -> torch.Tensor:
    return s[..., -1]


@of_singular_values
def sigma1_ratio(s: torch.Tensor) -> torch.Tensor:
    return s[..., 0] / s.sum(-1)


@of_singular_values
def frobenius(s: torch.Tensor) -> torch.Tensor:
    return torch.sqrt((s * s).sum(-1))


@of_singular_values
def effective_rank(s: torch.Tensor) -> torch.Tensor:
    """exp of the entropy of the normalised singular values (Roy and Vetterli)."""
    p = s / s.sum(-1).unsqueeze(-1)
    entropy = -torch.where(p > 0, p * torch.log(p), torch.zeros_like(p)).sum(-1)
    return torch.exp(entropy)


def entry_statistics(gradient: torch.Tensor) -> dict[str, torch.Tensor]:
    """The entry statistics (mean, max and min of the entries) of (a batch of) dense gradients."""
    return {name: function(gradient) for name, function in functions(layer_stats.ENTRIES).items()}


@of_entries
def entry_mean(gradient: torch.Tensor) -> torch.Tensor:
    return gradient.flatten(-2).mean(-1)


@of_entries
def entry_max(gradient: torch.Tensor) -> torch.Tensor:
    return gradient.flatten(-2).amax(-1)


@of_entries
def entry_min(gradient: torch.Tensor) -> torch.Tensor:
    return gradient.flatten(-2).amin(-1)


def all_finite(tensor: torch.Tensor) -> torch.Tensor:
    """Per leading index (e.g. per layer), whether every entry of the rest is finite.

    A sum is non-finite whenever an entry is (and, rarely, when finite entries overflow it); only
    then are the entries themselves checked, which keeps the common case to one pass of additions.
    """
    finite = torch.isfinite(tensor.flatten(1).sum(1))
    if not finite.all():
        finite = torch.isfinite(tensor).flatten(1).all(1)
    return finite


class LayerInputs:
    """Inputs ``x`` (L, T, n) of a projection across layers, shared by projections that read them.

    Q, K and V of a layer read the same hidden states, so their float64 copy, their triangular
    factor, their Gram matrices and their finiteness check are computed once here for all three.
    """

    def __init__(self, x: torch.Tensor, *, whole: LayerInputs | None = None):
        self.x = x
        self.whole = whole  # the inputs whose leading positions these are (``leading``), or None
        self._float64: torch.Tensor | None = None
        self._triangle: torch.Tensor | None = None
        self._finite: torch.Tensor | None = None
        self._grams: dict[tuple, torch.Tensor] = {}
        self._leading: dict[int, LayerInputs] = {}

    def leading(self, n_tokens: int) -> LayerInputs:
        """These inputs' first ``n_tokens`` positions, whose float64 copy, triangular factor and Gram
        matrices are blocks of these inputs' own, computed once for every such view.

        Exact: the leading block of ``x x^T`` is the Gram matrix of the leading rows, and the leading
        block of an upper-triangular R with ``R^T R = x x^T`` is that block's own factor. A gradient
        scored on a subset of tokens has exactly zero output gradients after its last scored token
        (attention is causal), so its draws read views of the inputs their sample shares.
        """
        if n_tokens == self.x.shape[-2]:
            return self
        if n_tokens not in self._leading:
            self._leading[n_tokens] = LayerInputs(self.x[..., :n_tokens, :], whole=self)
        return self._leading[n_tokens]

    def finite_layers(self) -> torch.Tensor:
        """(L,) whether each layer's inputs are free of NaN and infinity."""
        if self._finite is None:
            self._finite = all_finite(self.x)
        return self._finite

    def float64(self) -> torch.Tensor:
        if self._float64 is None:
            n_tokens = self.x.shape[-2]
            self._float64 = self.x.to(torch.float64) if self.whole is None else self.whole.float64()[..., :n_tokens, :]
        return self._float64

    def triangle(self) -> torch.Tensor:
        """(L, T, T) upper-triangular R with ``R^T R = x x^T``, computed on first use.

        It comes from the Cholesky factor of the Gram matrix ``x x^T`` (also needed for the
        gradients' inner products), which is backward stable: the eigenvalues built from it move
        by about 1e-16 of ``|g|^2 |x|^2``, the same order as with a QR factor. Layers whose Gram matrix is numerically singular (repeated
        tokens at layer 0 give identical rows of x) fall back to the QR decomposition of ``x^T``.
        """
        if self._triangle is None and self.whole is not None and self.whole.triangle_is_square():
            n_tokens = self.x.shape[-2]
            self._triangle = self.whole.triangle()[..., :n_tokens, :n_tokens]
        if self._triangle is None:
            lower, info = torch.linalg.cholesky_ex(self.gram_with(self, slice(None), slice(None)))
            triangle = lower.mT.contiguous()
            singular = info != 0
            if singular.any():
                triangle[singular] = input_triangle(self.float64()[singular])
            self._triangle = triangle
        return self._triangle

    def triangle_is_square(self) -> bool:
        """Whether ``triangle`` is square: at most as many positions as the inputs have dimensions."""
        return self.x.shape[-2] <= self.x.shape[-1]

    def gram_with(self, other: LayerInputs, layers: slice, other_layers: slice) -> torch.Tensor:
        """``x[layers] @ other.x[other_layers]^T`` in float64, (L', T, T), cached."""
        key = (id(other), layers.start, layers.stop, other_layers.start, other_layers.stop)
        if key not in self._grams and self.whole is not None and other.whole is not None:
            n_tokens, other_tokens = self.x.shape[-2], other.x.shape[-2]
            whole = self.whole.gram_with(other.whole, layers, other_layers)
            self._grams[key] = whole[..., :n_tokens, :other_tokens]
        if key not in self._grams:
            self._grams[key] = self.float64()[layers] @ other.float64()[other_layers].mT
        return self._grams[key]


class LayerFactors:
    """Factors of one projection's per-sample gradients across layers: ``g`` (L, T, m), ``x`` (L, T, n).

    The dense gradients ``g^T x`` are formed at most once, in the factors' precision (as autograd
    forms ``param.grad``), and only when that is the cheaper route for the quantity asked for.
    """

    def __init__(self, g: torch.Tensor, inputs: LayerInputs | torch.Tensor):
        self.g = g
        self.inputs = inputs if isinstance(inputs, LayerInputs) else LayerInputs(inputs)
        self._g64: torch.Tensor | None = None
        self._dense: torch.Tensor | None = None

    @property
    def x(self) -> torch.Tensor:
        return self.inputs.x

    def leading(self, n_tokens: int) -> LayerFactors:
        """The factors of the first ``n_tokens`` positions (``LayerInputs.leading``): the same gradient
        wherever the output gradients after them are exactly zero."""
        if n_tokens == self.n_tokens:
            return self
        return LayerFactors(self.g[..., :n_tokens, :], self.inputs.leading(n_tokens))

    @property
    def shape(self) -> tuple[int, int]:
        return self.g.shape[-1], self.x.shape[-1]

    @property
    def n_tokens(self) -> int:
        return self.g.shape[-2]

    def g_float64(self) -> torch.Tensor:
        if self._g64 is None:
            self._g64 = self.g.to(torch.float64)
        return self._g64

    def dense(self) -> torch.Tensor:
        """The gradients themselves, (L, m, n) float64."""
        if self._dense is None:
            self._dense = (self.g.mT @ self.x).to(torch.float64)
        return self._dense

    def prefers_dense(self) -> bool:
        """Whether inner products are cheaper from dense gradients than from T x T Gram matrices."""
        m, n = self.shape
        return self._dense is not None or self.n_tokens * (m + n) >= m * n

    def singular_values(self) -> torch.Tensor:
        """(L, min(m, n)) descending singular values of every layer's gradient."""
        if prefers_factored_spectrum(self.n_tokens, self.shape):
            return singular_values(self.g_float64(), self.inputs.float64(), self.inputs.triangle())
        values = _singular_values_of(self.dense())
        if self.n_tokens < values.shape[-1]:
            values[..., self.n_tokens :] = 0.0  # rank(g^T x) <= T: the rest is rounding noise
        return values

    def finite_layers(self) -> torch.Tensor:
        """(L,) whether each layer's factors are free of NaN and infinity."""
        return all_finite(self.g) & self.inputs.finite_layers()


def frobenius_inner(
    a: LayerFactors, b: LayerFactors, a_layers: slice = slice(None), b_layers: slice = slice(None)
) -> torch.Tensor:
    """<G_a, G_b>_F per layer for gradients of one sample (same T and shape).

    From factors it is sum((g_a g_b^T) * (x_a x_b^T)) over T x T matrices; from dense
    gradients it is the entrywise product. Both give the same number; the cheaper is used.
    """
    if a.prefers_dense() and b.prefers_dense():
        return _row_dots(a.dense()[a_layers].flatten(-2), b.dense()[b_layers].flatten(-2))
    gram_g = a.g_float64()[a_layers] @ b.g_float64()[b_layers].mT
    gram_x = a.inputs.gram_with(b.inputs, a_layers, b_layers)
    return _row_dots(gram_g.flatten(-2), gram_x.flatten(-2))


def _row_dots(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Dot products of matching rows of two (L, N) matrices, without an (L, N) temporary."""
    return (a.unsqueeze(-2) @ b.unsqueeze(-1)).squeeze(-1).squeeze(-1)


def cosine(inner: torch.Tensor, norm_a: torch.Tensor, norm_b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity from an inner product and two norms (NaN when a norm is zero)."""
    denominator = norm_a * norm_b
    return torch.where(denominator > 0, inner / denominator, torch.full_like(inner, math.nan))


def factor_statistics(factors: dict[str, LayerFactors], values: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The statistics computed from one sample's factors of every projection, each (L, 4), columns in
    PROJECTIONS order (``values``: its statistics computed so far, e.g. ``frobenius``)."""
    return {name: function(factors, values) for name, function in functions(layer_stats.FACTORS).items()}


@of_factors
def cos_same_layer(factors: dict[str, LayerFactors], values: dict[str, torch.Tensor]) -> torch.Tensor:
    """Cosine similarity of Q with O and of K with V of the same layer (NaN where shapes differ);
    the methods page, the measure of 2504.10766."""
    frobenius = values["frobenius"]
    same = torch.full((frobenius.shape[0], len(PROJECTIONS)), math.nan, dtype=torch.float64)
    for a, b in (("q", "o"), ("k", "v")):
        if factors[a].shape != factors[b].shape:
            continue
        inner = frobenius_inner(factors[a], factors[b])
        value = cosine(inner, frobenius[:, PROJECTIONS.index(a)], frobenius[:, PROJECTIONS.index(b)])
        same[:, PROJECTIONS.index(a)] = value
        same[:, PROJECTIONS.index(b)] = value
    return same


@of_factors
def cos_next_layer(factors: dict[str, LayerFactors], values: dict[str, torch.Tensor]) -> torch.Tensor:
    """Cosine similarity of each projection in layer i with the same projection in layer i + 1
    (NaN for the last layer)."""
    frobenius = values["frobenius"]
    n_layers = frobenius.shape[0]
    following = torch.full((n_layers, len(PROJECTIONS)), math.nan, dtype=torch.float64)
    if n_layers > 1:
        for index, proj in enumerate(PROJECTIONS):
            inner = frobenius_inner(factors[proj], factors[proj], slice(0, -1), slice(1, None))
            norms = frobenius[:, index]
            following[:-1, index] = cosine(inner, norms[:-1], norms[1:])
    return following
