"""Singular-value statistics of per-sample weight gradients, computed exactly from factors.

The gradient of a linear layer for one sample is ``G = g^T x`` where ``x`` (T x n) holds the
layer's inputs and ``g`` (T x m) the gradients at its outputs, one row per token position. Its
rank is at most T, so when T < min(m, n) the non-zero singular values of G are those of the
small T x T matrix ``R_g R_x^T`` built from thin QR factors of ``g^T`` and ``x^T``
(see STUDY.md §2). Otherwise G itself is formed. Either way the small linear algebra runs in
float64, so the statistics equal those of a full SVD of the materialised gradient.
"""

from __future__ import annotations

import math

import torch

STATISTICS = ("nuclear_norm", "sigma_max", "sigma_min", "sigma1_ratio", "frobenius", "effective_rank")
ENTRY_STATISTICS = ("entry_mean", "entry_max", "entry_min")


def uses_factored_path(n_tokens: int, shape: tuple[int, int]) -> bool:
    """Whether the singular values come from the T x T factor core rather than the gradient."""
    return n_tokens < min(shape)


def singular_values(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Singular values (descending, float64) of ``g^T x`` for a batch of factor pairs.

    ``g`` is (..., T, m) and ``x`` is (..., T, n); the result is (..., min(m, n)). Leading
    dimensions batch independent gradients that share T, m and n (e.g. all layers of a model).
    """
    g = g.to(torch.float64)
    x = x.to(torch.float64)
    n_tokens, m, n = g.shape[-2], g.shape[-1], x.shape[-1]
    k = min(m, n)
    if uses_factored_path(n_tokens, (m, n)):
        r_g = torch.linalg.qr(g.mT, mode="r").R
        r_x = torch.linalg.qr(x.mT, mode="r").R
        core = r_g @ r_x.mT
        values = _singular_values_of(core)
        padding = values.new_zeros(values.shape[:-1] + (k - n_tokens,))
        return torch.cat([values, padding], dim=-1)
    return _singular_values_of(g.mT @ x)


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


def statistics_from_singular_values(s: torch.Tensor) -> dict[str, torch.Tensor]:
    """The study's statistics of one or many gradients from their descending singular values."""
    s = s.to(torch.float64)
    nuclear = s.sum(-1)
    p = s / nuclear.unsqueeze(-1)
    entropy = -torch.where(p > 0, p * torch.log(p), torch.zeros_like(p)).sum(-1)
    return {
        "nuclear_norm": nuclear,
        "sigma_max": s[..., 0],
        "sigma_min": s[..., -1],
        "sigma1_ratio": s[..., 0] / nuclear,
        "frobenius": torch.sqrt((s * s).sum(-1)),
        "effective_rank": torch.exp(entropy),
    }


def entry_statistics(gradient: torch.Tensor) -> dict[str, torch.Tensor]:
    """Mean, max and min of the entries of (a batch of) dense gradients."""
    flat = gradient.flatten(-2)
    return {"entry_mean": flat.mean(-1), "entry_max": flat.amax(-1), "entry_min": flat.amin(-1)}


class LayerFactors:
    """Factors of one projection's per-sample gradients across layers: ``g`` (L, T, m), ``x`` (L, T, n).

    The dense gradients ``g^T x`` are formed at most once, in the factors' precision (as autograd
    forms ``param.grad``), and only when that is the cheaper route for the quantity asked for.
    """

    def __init__(self, g: torch.Tensor, x: torch.Tensor):
        self.g = g
        self.x = x
        self._dense: torch.Tensor | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.g.shape[-1], self.x.shape[-1]

    @property
    def n_tokens(self) -> int:
        return self.g.shape[-2]

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
            return singular_values(self.g, self.x)
        values = _singular_values_of(self.dense())
        if self.n_tokens < values.shape[-1]:
            values[..., self.n_tokens :] = 0.0  # rank(g^T x) <= T: the rest is rounding noise
        return values


def prefers_factored_spectrum(n_tokens: int, shape: tuple[int, int]) -> bool:
    """Whether the T x T factor route is cheaper than forming the gradient (both are exact).

    The factor route needs T < min(m, n); near that bound its two QR decompositions cost more
    than forming the gradient, so it is taken only below ``FACTORED_FRACTION * min(m, n)``.
    """
    return n_tokens < FACTORED_FRACTION * min(shape)


FACTORED_FRACTION = 0.8


def frobenius_inner(a: LayerFactors, b: LayerFactors, a_layers: slice = slice(None), b_layers: slice = slice(None)) -> torch.Tensor:
    """<G_a, G_b>_F per layer for gradients of one sample (same T and shape).

    From factors it is sum((g_a g_b^T) * (x_a x_b^T)) over T x T matrices; from dense
    gradients it is the entrywise product. Both give the same number; the cheaper is used.
    """
    if a.prefers_dense() and b.prefers_dense():
        return (a.dense()[a_layers] * b.dense()[b_layers]).sum((-2, -1))
    gram_g = a.g[a_layers].double() @ b.g[b_layers].double().mT
    gram_x = a.x[a_layers].double() @ b.x[b_layers].double().mT
    return (gram_g * gram_x).sum((-2, -1))


def cosine(inner: torch.Tensor, norm_a: torch.Tensor, norm_b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity from an inner product and two norms (NaN when a norm is zero)."""
    denominator = norm_a * norm_b
    return torch.where(denominator > 0, inner / denominator, torch.full_like(inner, math.nan))
