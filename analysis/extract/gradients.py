"""Per-sample gradients of every attention projection, captured as factors in one pass.

A forward hook on each Q/K/V/O projection keeps its input ``x`` and registers a tensor hook on
its output that keeps the output gradient ``g``; for each sample the weight gradient is
``g^T x`` over that sample's token positions (Opacus and BackPACK use the same identity). All
hooks live in one context manager, :func:`capture_factors`, which removes them in ``finally``.
The model's parameters stay frozen: only the input embeddings require grad, so the backward pass
computes activation gradients and no weight gradient at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from analysis import layer_stats
from analysis.extract import architectures, spectra
from analysis.vocabulary import PROJECTIONS


def attention_projections(model: nn.Module) -> dict[tuple[int, str], nn.Linear]:
    """The model's attention projections keyed by (layer, projection), as its architecture's adapter
    names them (``analysis.extract.architectures``); one line naming what is missing otherwise."""
    return architectures.projection_modules(model)


@dataclass
class CapturedFactors:
    """Inputs and output gradients of each projection for the current batch."""

    inputs: dict[tuple[int, str], torch.Tensor] = field(default_factory=dict)
    output_grads: dict[tuple[int, str], torch.Tensor] = field(default_factory=dict)

    def factors(self, key: tuple[int, str], sample: int, n_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(g, x) of one sample: its first ``n_tokens`` positions, (T x m) and (T x n)."""
        g = self.output_grads[key][sample, :n_tokens]
        x = self.inputs[key][sample, :n_tokens]
        return g, x


@contextmanager
def capture_factors(projections: dict[tuple[int, str], nn.Linear]) -> Iterator[CapturedFactors]:
    """Record the factors of every projection during one forward and backward pass."""
    captured = CapturedFactors()
    handles = []

    def make_forward_hook(key: tuple[int, str]):
        def keep_output_grad(grad: torch.Tensor) -> None:
            captured.output_grads[key] = grad.detach()

        def forward_hook(module: nn.Module, args: tuple, output: torch.Tensor) -> None:
            captured.inputs[key] = args[0].detach()
            if output.requires_grad:
                output.register_hook(keep_output_grad)

        return forward_hook

    try:
        for key, module in projections.items():
            handles.append(module.register_forward_hook(make_forward_hook(key)))
        yield captured
    finally:
        for handle in handles:
            handle.remove()


@dataclass
class Batch:
    """Right-padded token ids of several samples with their prompt lengths."""

    input_ids: torch.Tensor  # (B, T_max)
    attention_mask: torch.Tensor  # (B, T_max)
    prompt_lengths: list[int]
    lengths: list[int]


def make_batch(sequences: list[list[int]], prompt_lengths: list[int], pad_id: int, device: torch.device) -> Batch:
    """Pad token sequences on the right into one batch."""
    longest = max(len(s) for s in sequences)
    input_ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(sequences), longest), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        input_ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        attention_mask[row, : len(sequence)] = 1
    return Batch(input_ids.to(device), attention_mask.to(device), list(prompt_lengths), [len(s) for s in sequences])


def loss_positions(batch: Batch) -> torch.Tensor:
    """Positions whose next-token prediction is part of some sample's loss, sorted."""
    positions: set[int] = set()
    for prompt_length, length in zip(batch.prompt_lengths, batch.lengths):
        positions.update(range(max(prompt_length, 1) - 1, length - 1))
    return torch.tensor(sorted(positions), dtype=torch.long)


def per_sample_losses(model: nn.Module, batch: Batch) -> torch.Tensor:
    """Each sample's mean next-token cross-entropy over its response tokens, float32.

    The output head is evaluated only at positions that predict a response token. The batch's
    embeddings are made to require grad so that a backward pass runs through a frozen model.
    """
    embeddings = model.get_input_embeddings()(batch.input_ids).detach().requires_grad_(True)
    positions = loss_positions(batch).to(batch.input_ids.device)
    logits = model(
        inputs_embeds=embeddings, attention_mask=batch.attention_mask, logits_to_keep=positions, use_cache=False
    ).logits.float()
    targets = batch.input_ids[:, positions + 1]
    # the flat (tokens x vocabulary) layout: the (batch x vocabulary x tokens) layout of
    # cross_entropy differs from the Hugging Face loss by up to 2e-4 per token in float32
    token_losses = nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
    ).view(targets.shape)
    mask = torch.zeros_like(token_losses, dtype=torch.bool)
    for row, (prompt_length, length) in enumerate(zip(batch.prompt_lengths, batch.lengths)):
        first, last = max(prompt_length, 1) - 1, length - 1
        mask[row] = (positions >= first) & (positions < last)
    return torch.where(mask, token_losses, torch.zeros_like(token_losses)).sum(1) / mask.sum(1)


@dataclass
class SampleGradientStats:
    """Statistics of one sample: loss and one row of values per (layer, projection)."""

    loss: float
    n_tokens: int
    values: dict[str, torch.Tensor]  # statistic -> (n_layers, 4) float64, columns in PROJECTIONS order
    failure: str | None = None
    spectra: dict[str, torch.Tensor] | None = None  # projection -> (n_layers, min(m, n)) singular values, if kept


def batch_statistics(
    model: nn.Module,
    batch: Batch,
    projections: dict[tuple[int, str], nn.Linear] | None = None,
    entry_stats: bool = False,
    similarities: bool = True,
    keep_spectra: bool = False,
) -> list[SampleGradientStats]:
    """Per-sample gradient statistics of every attention projection for one batch.

    One forward and one backward pass serve the whole batch: the summed per-sample mean losses
    give each sample exactly its own gradient, because samples never attend to each other. For
    the same reason a sample with a non-finite loss is left out of the sum and reported as
    failed, and the other samples of its batch are still computed. ``keep_spectra`` also returns
    every gradient's singular values (``SampleGradientStats.spectra``).
    """
    projections = projections or attention_projections(model)
    with capture_factors(projections) as captured:
        losses = per_sample_losses(model, batch)
        finite = torch.isfinite(losses)
        if finite.any():
            losses[finite].sum().backward()
    results = []
    for row, loss in enumerate(losses.tolist()):
        if not math.isfinite(loss):
            results.append(SampleGradientStats(loss, batch.lengths[row], {}, failure=f"non-finite loss ({loss})"))
            continue
        results.append(
            sample_statistics(captured, row, batch.lengths[row] - 1, loss, entry_stats, similarities, keep_spectra)
        )
    return results


def sample_statistics(
    captured: CapturedFactors,
    row: int,
    n_positions: int,
    loss: float,
    entry_stats: bool,
    similarities: bool,
    keep_spectra: bool = False,
) -> SampleGradientStats:
    """Statistics of one sample from its captured factors (and, with ``keep_spectra``, the
    singular values they come from).

    ``n_positions`` is the number of leading positions with a non-zero output gradient: the last
    token predicts nothing, so its row of ``g`` is exactly zero and is left out.
    """
    factors = layer_factors(captured, row, n_positions)
    broken = non_finite_gradients(factors)
    if broken:  # the eigensolver raises on NaN or inf; report the sample instead
        return SampleGradientStats(loss, n_positions + 1, {}, failure=f"non-finite gradient ({', '.join(broken[:4])})")
    columns: dict[str, list[torch.Tensor]] = {}
    kept: dict[str, torch.Tensor] = {}
    for proj in PROJECTIONS:
        singular_values = factors[proj].singular_values()
        if keep_spectra:
            kept[proj] = singular_values
        stats = spectra.statistics_from_singular_values(singular_values)
        if entry_stats:
            stats.update(spectra.entry_statistics(factors[proj].dense()))
        for name, value in stats.items():
            columns.setdefault(name, []).append(value)
    values = {name: torch.stack(cols, dim=1) for name, cols in columns.items()}
    if similarities:
        values.update(spectra.factor_statistics(factors, values))
    failure = None
    checked = layer_stats.names(layer_stats.of_source(layer_stats.SPECTRUM))
    bad = [name for name, value in values.items() if name in checked and not torch.isfinite(value).all()]
    if bad:
        failure = f"non-finite gradient statistics ({', '.join(bad)})"
    return SampleGradientStats(loss, n_positions + 1, values, failure, kept if keep_spectra else None)


def layer_factors(captured: CapturedFactors, row: int, n_positions: int) -> dict[str, spectra.LayerFactors]:
    """One sample's factors of each projection, stacked over layers.

    Projections that read the same input tensor (Q, K and V do) share one
    :class:`spectra.LayerInputs`, so its triangular factor and Gram matrices are computed once.
    """
    n_layers = 1 + max(layer for layer, _ in captured.inputs)
    shared: dict[tuple, spectra.LayerInputs] = {}
    factors = {}
    for proj in PROJECTIONS:
        pairs = [captured.factors((layer, proj), row, n_positions) for layer in range(n_layers)]
        identity = tuple((x.data_ptr(), x.shape, x.stride()) for _, x in pairs)
        if identity not in shared:
            shared[identity] = spectra.LayerInputs(torch.stack([x for _, x in pairs]))
        factors[proj] = spectra.LayerFactors(torch.stack([g for g, _ in pairs]), shared[identity])
    return factors


def non_finite_gradients(factors: dict[str, spectra.LayerFactors]) -> list[str]:
    """``layer.proj`` names of the gradients whose factors hold a NaN or an infinity."""
    broken = []
    for proj, layer_factors in factors.items():
        finite = layer_factors.finite_layers()
        broken.extend(f"layer {layer} {proj}" for layer in (~finite).nonzero().flatten().tolist())
    return broken
