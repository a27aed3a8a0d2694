"""Token energy: the sum over a sample's response tokens of each token gradient's squared norm.

A sample's stored gradient is a mean, G = (1/R) sum_r g_r with g_r = grad_W l_r the gradient of
response token r's cross-entropy. Its token energy E = sum_r ||g_r||_F^2 splits the Frobenius norm
into token size e = E / R and alignment kappa = R^2 ||G||_F^2 / E (``analysis.findings.averaging``).

E comes from extra backward passes through the graph of the one forward pass, each of the loss
sum_r c_r l_r for weights c chosen here (:func:`pass_weights`); the captured factors of a pass give
||sum_r c_r g_r||_F^2 = sum((g g^T) * (x x^T)) per layer and projection (:func:`squared_norms`),
x x^T computed once per sample. With R <= k passes the weights pick one token each (c = e_j):
exact. Otherwise they are random signs (Rademacher, seeded by the sample's tokens), and the mean
over the k passes is an unbiased estimate, E[||sum_r eps_r g_r||^2] = sum_r ||g_r||^2 since
E[eps_r eps_s] = 0 for r != s; its variance is estimated by the sample variance of the k values / k.
"""

from __future__ import annotations

import zlib

import torch

from analysis.core import layer_stats
from analysis.core.vocabulary import PROJECTIONS
from analysis.extract import spectra

# The columns, as declared in analysis.core.layer_stats: the energy, its estimate's variance, whether exact.
COLUMNS = layer_stats.names(layer_stats.of_source(layer_stats.ENERGY))
ENERGY, VARIANCE, EXACT = COLUMNS


def sample_seed(token_ids: list[int], seed: int = 0) -> int:
    """The random signs' seed of one sample: its tokens' checksum with ``seed`` (the same signs for
    the same sample in any batch, run or order)."""
    return zlib.crc32(torch.tensor(token_ids, dtype=torch.int64).numpy().tobytes(), seed & 0xFFFFFFFF)


def pass_weights(
    mask: torch.Tensor, finite: torch.Tensor, passes: int, seeds: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight of each token loss (B, P) in each backward pass, (n_passes, B, P), and which
    samples are computed exactly (B,).

    ``mask`` marks each sample's response tokens among the P predicted positions; a sample that
    is not ``finite`` gets weight 0 everywhere. A sample with R <= ``passes`` response tokens has
    weight 1 on its j-th token in pass j (and 0 in the passes after its R-th), one of more tokens
    random signs in each of ``passes`` passes. There are as many passes as the batch needs.
    """
    counts = mask.sum(1)
    exact = counts <= passes
    live = finite & (counts > 0)
    needed = [int(counts[b]) if exact[b] else passes for b in range(mask.shape[0]) if live[b]]
    weights = torch.zeros((max(needed, default=0), *mask.shape), dtype=torch.float32)
    for b in range(mask.shape[0]):
        if not live[b]:
            continue
        tokens = mask[b].nonzero().flatten().cpu()
        if exact[b]:
            weights[torch.arange(tokens.numel()), b, tokens] = 1.0
        else:
            generator = torch.Generator().manual_seed(seeds[b])
            signs = torch.randint(0, 2, (passes, tokens.numel()), generator=generator).float() * 2 - 1
            weights[:passes, b, tokens] = signs
    return weights.to(mask.device), exact.cpu()


def squared_norms(factors: dict[str, spectra.LayerFactors]) -> torch.Tensor:
    """||g^T x||_F^2 of one sample's gradient of every projection and layer, (L, 4) float64, from
    the T x T Gram matrices of its factors (the inputs' Gram matrix cached with them)."""
    columns = []
    for proj in PROJECTIONS:
        f = factors[proj]
        g = f.g_float64()
        gram_x = f.inputs.gram_with(f.inputs, slice(None), slice(None))
        columns.append(((g @ g.mT) * gram_x).sum((-2, -1)))
    return torch.stack(columns, dim=1)


class EnergyAccumulator:
    """Each pass's squared norms of one sample, and the energy, its variance and exactness they give."""

    def __init__(self, exact: bool):
        self.exact = exact
        self.values: list[torch.Tensor] = []

    def add(self, norms: torch.Tensor) -> None:
        self.values.append(norms)

    def statistics(self) -> dict[str, torch.Tensor]:
        """``token_energy``, ``token_energy_variance`` (0 when exact) and ``token_energy_exact`` (1.0
        exact, 0.0 estimated: a number, so that a store's rows imported without it stay one schema), (L, 4)."""
        stacked = torch.stack(self.values)
        if self.exact:
            energy, variance = stacked.sum(0), torch.zeros_like(stacked[0])
        else:
            energy, variance = stacked.mean(0), stacked.var(0, correction=1) / stacked.shape[0]
        exact = torch.full(energy.shape, 1.0 if self.exact else 0.0, dtype=torch.float64)
        return {ENERGY: energy, VARIANCE: variance, EXACT: exact}
