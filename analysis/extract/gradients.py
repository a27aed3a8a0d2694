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
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn

from analysis.core import layer_stats
from analysis.core.vocabulary import PROJECTIONS
from analysis.extract import architectures, loss_matching, spectra, token_energy


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
    """Right-padded token ids of several samples with their prompt lengths, and for a sample whose
    loss scores only some of its response tokens, their indices (``prompts.EncodedSample.scored``)."""

    input_ids: torch.Tensor  # (B, T_max)
    attention_mask: torch.Tensor  # (B, T_max)
    prompt_lengths: list[int]
    lengths: list[int]
    scored: list[tuple[int, ...] | None] = field(default_factory=list)
    more_scored: list[tuple[tuple[int, ...], ...]] = field(default_factory=list)  # ``EncodedSample.more_scored``
    matching: list[loss_matching.MatchRequest | None] = field(default_factory=list)  # ``EncodedSample.matching``

    def scored_tokens(self, row: int) -> range | tuple[int, ...]:
        """The indices of the tokens of sample ``row`` whose prediction enters its loss."""
        chosen = self.scored[row] if row < len(self.scored) else None
        return chosen if chosen is not None else range(max(self.prompt_lengths[row], 1), self.lengths[row])

    def further_subsets(self, row: int) -> tuple[tuple[int, ...], ...]:
        """The further scored subsets of sample ``row`` (each a gradient of its own; none by default)."""
        return self.more_scored[row] if row < len(self.more_scored) else ()

    def match_request(self, row: int) -> loss_matching.MatchRequest | None:
        """Sample ``row``'s loss-matched draws to make after the forward pass (None: it has none)."""
        return self.matching[row] if row < len(self.matching) else None

    def carries_other_condition(self, row: int) -> bool:
        """Whether sample ``row``'s further subsets are another condition's (loss-matched draws after
        its reference's own gradient), so that their failure is not its own."""
        request = self.match_request(row)
        return request is not None and request.answer_gradient


def make_batch(
    sequences: list[list[int]],
    prompt_lengths: list[int],
    pad_id: int,
    device: torch.device,
    *,
    scored: list[tuple[int, ...] | None] | None = None,
    more_scored: list[tuple[tuple[int, ...], ...]] | None = None,
    matching: list[loss_matching.MatchRequest | None] | None = None,
) -> Batch:
    """Pad token sequences on the right into one batch (``scored``: per sample, the response tokens
    its loss scores where not all of them; ``more_scored``: further subsets of them, each scored alone;
    ``matching``: the loss-matched draws to make after the forward pass)."""
    longest = max(len(s) for s in sequences)
    input_ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(sequences), longest), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        input_ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        attention_mask[row, : len(sequence)] = 1
    lengths = [len(s) for s in sequences]
    return Batch(
        input_ids.to(device),
        attention_mask.to(device),
        list(prompt_lengths),
        lengths,
        list(scored or []),
        list(more_scored or []),
        list(matching or []),
    )


def loss_positions(batch: Batch) -> torch.Tensor:
    """Positions whose next-token prediction is part of some sample's loss (of any of its subsets), sorted;
    with loss-matched draws to make, those of its answer's and its chain's tokens, before and after the draw."""
    positions: set[int] = set()
    for row in range(len(batch.lengths)):
        positions.update(token - 1 for token in batch.scored_tokens(row))
        for subset in batch.further_subsets(row):
            positions.update(token - 1 for token in subset)
        request = batch.match_request(row)
        if request is not None:
            positions.update(token - 1 for token in (*request.pool, *answer_tokens(batch, row)))
    return torch.tensor(sorted(positions), dtype=torch.long)


def answer_tokens(batch: Batch, row: int) -> range:
    """The tokens of sample ``row`` after its prompt (an answer-scored text's: its answer's)."""
    return range(max(batch.prompt_lengths[row], 1), batch.lengths[row])


def with_matched_draws(
    batch: Batch, by_token: torch.Tensor, positions: torch.Tensor
) -> tuple[Batch, list[loss_matching.Matched | None]]:
    """The batch with each loss-matched sample's draws made from its token losses (B, P) at
    ``positions`` (``loss_matching.draw_matched``): after its answer's own scored tokens as further
    subsets, or, where the answer's gradient is not wanted, the first draw scored in its place and
    the others further; and each sample's draws (None: it has none to make)."""
    matched: list[loss_matching.Matched | None] = [None] * len(batch.lengths)
    scored, more = list(batch.scored), list(batch.more_scored)
    scored += [None] * (len(batch.lengths) - len(scored))
    more += [()] * (len(batch.lengths) - len(more))
    for row in range(len(batch.lengths)):
        request = batch.match_request(row)
        if request is None:
            continue
        answer = row_losses(by_token, positions, row, answer_tokens(batch, row))
        drawn = loss_matching.draw_matched(request, answer, row_losses(by_token, positions, row, request.pool))
        matched[row] = drawn
        draws = [draw.tokens for draw in drawn.draws]
        if draws and request.answer_gradient:
            more[row] = tuple(draws)
        elif draws:
            scored[row], more[row] = draws[0], tuple(draws[1:])
    return replace(batch, scored=scored, more_scored=more), matched


def row_losses(by_token: torch.Tensor, positions: torch.Tensor, row: int, tokens) -> np.ndarray:
    """Sample ``row``'s losses (float64) of predicting ``tokens``, from the batch's (B, P) token losses."""
    predicting = torch.tensor([t - 1 for t in tokens], dtype=torch.long, device=positions.device)
    columns = torch.searchsorted(positions, predicting)
    return by_token[row, columns.to(by_token.device)].detach().double().cpu().numpy()


def per_sample_losses(model: nn.Module, batch: Batch, *, train_embeddings: bool = False) -> torch.Tensor:
    """Each sample's mean next-token cross-entropy over its response tokens, float32.

    The output head is evaluated only at positions that predict a response token. The batch's
    embeddings are made to require grad so that a backward pass runs through a frozen model;
    ``train_embeddings`` keeps them attached to the embedding weights instead (fine-tuning,
    :mod:`analysis.train`), so that those weights receive their gradient too.
    """
    return mean_losses(*token_losses(model, batch, train_embeddings=train_embeddings))


def mean_losses(losses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each sample's mean of its response tokens' losses (``token_losses``' two tensors)."""
    return torch.where(mask, losses, torch.zeros_like(losses)).sum(1) / mask.sum(1)


def token_losses(
    model: nn.Module, batch: Batch, *, train_embeddings: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cross-entropy of every predicted position (B, P) and which of them are response tokens
    of their sample (B, P) bool, P the batch's ``loss_positions`` (see ``per_sample_losses``)."""
    positions = loss_positions(batch).to(batch.input_ids.device)
    logits = forward_logits(model, batch, positions, train_embeddings=train_embeddings)
    losses = cross_entropies(logits, batch.input_ids[:, positions + 1])
    return losses, scored_mask(batch, positions, [batch.scored_tokens(row) for row in range(len(batch.lengths))])


def forward_logits(
    model: nn.Module, batch: Batch, positions: torch.Tensor, *, train_embeddings: bool = False
) -> torch.Tensor:
    """The logits (B, P, vocabulary) at ``positions`` of one forward pass of the batch, float32, its
    embeddings made to require grad (``per_sample_losses``)."""
    embeddings = model.get_input_embeddings()(batch.input_ids)
    if not train_embeddings:
        embeddings = embeddings.detach().requires_grad_(True)
    return model(
        inputs_embeds=embeddings, attention_mask=batch.attention_mask, logits_to_keep=positions, use_cache=False
    ).logits.float()


def cross_entropies(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The cross-entropy of each of (B, P) logits against its target token, (B, P)."""
    # the flat (tokens x vocabulary) layout: the (batch x vocabulary x tokens) layout of
    # cross_entropy differs from the Hugging Face loss by up to 2e-4 per token in float32
    return nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
    ).view(targets.shape)


@contextmanager
def head_inputs(model: nn.Module) -> Iterator[list[torch.Tensor]]:
    """Within it, the model's output head keeps its input (the final hidden states at the positions
    kept, with their graph) and returns its logits detached: the losses of a forward pass then carry
    no graph through the head, whose backward pass would run over every position kept."""
    kept: list[torch.Tensor] = []

    def detach_logits(module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
        kept.append(args[0])
        return output.detach()

    handle = model.get_output_embeddings().register_forward_hook(detach_logits)
    try:
        yield kept
    finally:
        handle.remove()


def matched_token_losses(
    model: nn.Module, batch: Batch
) -> tuple[torch.Tensor, torch.Tensor, Batch, list[loss_matching.Matched | None]]:
    """``token_losses`` of a batch with loss-matched draws to make, and the batch with its draws and
    each sample's draws (``with_matched_draws``). Every position's loss (the chain's) comes from a
    forward pass whose head carries no graph (``head_inputs``); once the draws are made, the
    positions that some gradient scores get their losses again from the kept hidden states through
    the head (``architectures.output_logits``), with their graph, in their place."""
    positions = loss_positions(batch).to(batch.input_ids.device)
    with head_inputs(model) as kept:
        logits = forward_logits(model, batch, positions)
    targets = batch.input_ids[:, positions + 1]
    by_token = cross_entropies(logits, targets)
    del logits
    batch, matched = with_matched_draws(batch, by_token, positions)
    for group in scored_groups(batch):
        columns = torch.searchsorted(positions, torch.tensor(group, dtype=torch.long, device=positions.device))
        graph = cross_entropies(architectures.output_logits(model, kept[0][:, columns]).float(), targets[:, columns])
        by_token = by_token.index_copy(1, columns, graph)
    mask = scored_mask(batch, positions, [batch.scored_tokens(row) for row in range(len(batch.lengths))])
    return by_token, mask, batch, matched


def scored_groups(batch: Batch) -> list[list[int]]:
    """The predicted positions that some gradient of a batch with loss-matched draws scores, sorted,
    in two groups whose head is evaluated apart: the answers' where their own gradient is computed,
    then the draws'. Each group is then evaluated as a pass of its condition alone evaluates it (the
    answer's as ``detailed_answer``'s extraction, the draws as the loss-matched condition's alone),
    so that a shared pass gives their numbers to the last bit on a batch of one."""
    answers: set[int] = set()
    scored: set[int] = set()
    for row in range(len(batch.lengths)):
        request = batch.match_request(row)
        if request is None or request.answer_gradient:
            answers.update(token - 1 for token in batch.scored_tokens(row))
        for tokens in (batch.scored_tokens(row), *batch.further_subsets(row)):
            scored.update(token - 1 for token in tokens)
    return [group for group in (sorted(answers), sorted(scored - answers)) if group]


def scored_mask(batch: Batch, positions: torch.Tensor, tokens: list) -> torch.Tensor:
    """(B, P) bool: which of the predicted ``positions`` predict one of ``tokens[row]``, per sample."""
    mask = torch.zeros((len(batch.lengths), positions.numel()), dtype=torch.bool, device=positions.device)
    for row, scored in enumerate(tokens):
        predicting = torch.tensor([token - 1 for token in scored], dtype=torch.long)
        mask[row] = torch.isin(positions, predicting.to(positions.device))
    return mask


@dataclass
class SampleGradientStats:
    """Statistics of one sample: loss and one row of values per (layer, projection)."""

    loss: float
    n_tokens: int
    values: dict[str, torch.Tensor]  # statistic -> (n_layers, 4) float64, columns in PROJECTIONS order
    failure: str | None = None  # why the sample is skipped, "<label>: <what happened>"
    spectra: dict[str, torch.Tensor] | None = None  # projection -> (n_layers, min(m, n)) singular values, if kept
    token_losses: dict[str, float] = field(default_factory=dict)  # ``token_loss_summary``
    # the statistics of the sample's further scored subsets (``Batch.more_scored``), in their order
    further_subsets: list[SampleGradientStats] = field(default_factory=list)
    matched: loss_matching.Matched | None = None  # its loss-matched draws (``Batch.matching``), if it made any


def token_loss_summary(by_token: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """One sample's scored token losses beyond their mean: the largest (``loss_max``), their
    standard deviation (``loss_sd``, 0 for one token) and the mean of log(1 - exp(-loss))
    (``log_miss``: the log of the probability given to other tokens; -inf for a certain token)."""
    losses = by_token[mask].detach().double()
    return {
        "loss_max": float(losses.max()),
        "loss_sd": float(losses.std(unbiased=False)),
        "log_miss": float(torch.log(-torch.expm1(-losses)).mean()),
    }


@dataclass(frozen=True)
class Outputs:
    """What each sample's statistics include beyond the spectral ones.

    ``entry_stats``: the mean, max and min of the gradient entries; ``similarities``: the cosine
    similarities between projections and layers; ``keep_spectra``: every gradient's singular values
    (``SampleGradientStats.spectra``); ``token_energy_passes`` k > 0: the token energy, in up to k
    more backward passes of the same graph (:mod:`analysis.extract.token_energy`; random signs
    seeded by ``energy_seed``).
    """

    entry_stats: bool = False
    similarities: bool = True
    keep_spectra: bool = False
    token_energy_passes: int = 0
    energy_seed: int = 0


def batch_statistics(
    model: nn.Module,
    batch: Batch,
    projections: dict[tuple[int, str], nn.Linear] | None = None,
    *,
    entry_stats: bool = False,
    similarities: bool = True,
    keep_spectra: bool = False,
    token_energy_passes: int = 0,
    energy_seed: int = 0,
) -> list[SampleGradientStats]:
    """Per-sample gradient statistics of every attention projection for one batch, with what
    :class:`Outputs` describes beyond the spectral ones. One forward and one backward pass serve the whole batch: the summed per-sample mean losses
    give each sample exactly its own gradient, because samples never attend to each other. For
    the same reason a sample with a non-finite loss is left out of the sum and reported as
    failed, and the other samples of its batch are still computed. A sample's further scored
    subsets (``Batch.more_scored``) each take one more backward pass of the same graph
    (:func:`add_further_subsets`); its loss-matched draws (``Batch.matching``) are made from the
    forward pass's token losses before any backward pass (:func:`matched_token_losses`), kept in its
    ``matched``, and computed as further subsets.
    """
    wanted = Outputs(
        entry_stats=entry_stats,
        similarities=similarities,
        keep_spectra=keep_spectra,
        token_energy_passes=token_energy_passes,
        energy_seed=energy_seed,
    )
    projections = projections or attention_projections(model)
    with capture_factors(projections) as captured:
        matched: list[loss_matching.Matched | None] = []
        if any(batch.match_request(row) is not None for row in range(len(batch.lengths))):
            by_token, mask, batch, matched = matched_token_losses(model, batch)
        else:
            by_token, mask = token_losses(model, batch)
        losses = mean_losses(by_token, mask)
        finite = torch.isfinite(losses)
        further = max((len(batch.further_subsets(row)) for row in range(len(batch.lengths))), default=0)
        if finite.any():
            losses[finite].sum().backward(retain_graph=wanted.token_energy_passes > 0 or further > 0)
        results: list[SampleGradientStats] = []
        kept = inputs_kept(batch)
        for row, loss in enumerate(losses.tolist()):
            if not math.isfinite(loss):
                failure = f"numerical failure: non-finite loss ({loss})"
                results.append(SampleGradientStats(loss, batch.lengths[row], {}, failure=failure))
                continue
            results.append(
                sample_statistics(captured, row, batch.lengths[row] - 1, loss, wanted=wanted, shared=kept[row])
            )
            results[-1].token_losses = token_loss_summary(by_token[row], mask[row])
        for row, drawn in enumerate(matched):
            results[row].matched = drawn
            if drawn is not None and drawn.failure and not batch.carries_other_condition(row):
                results[row].failure = results[row].failure or drawn.failure
        if further:
            add_further_subsets(captured, batch, by_token, results, wanted=wanted, shared=kept)
        if wanted.token_energy_passes and finite.any():
            add_token_energy(captured, batch, TokenLosses(by_token, mask, finite), results, wanted=wanted)
    return results


def inputs_kept(batch: Batch) -> list[dict | None]:
    """Per sample, where its inputs' float64 copy and triangular factor are kept for the gradients of
    its further subsets, which read the same forward pass (``layer_factors``); None where it has none."""
    return [{} if batch.further_subsets(row) else None for row in range(len(batch.lengths))]


def add_further_subsets(
    captured: CapturedFactors,
    batch: Batch,
    by_token: torch.Tensor,
    results: list[SampleGradientStats],
    *,
    wanted: Outputs,
    shared: list[dict | None],
) -> None:
    """Each computed sample's further scored subsets' statistics into its ``further_subsets``: the
    k-th pass backpropagates the sum over samples of the mean loss of their k-th further subset
    (the graph kept for the passes after it and the token energy's); a subset that fails fails its
    sample, unless the subsets are another condition's (``Batch.carries_other_condition``)."""
    positions = loss_positions(batch).to(by_token.device)
    further = [
        batch.further_subsets(row) if results[row].failure is None or batch.carries_other_condition(row) else ()
        for row in range(len(results))
    ]
    passes = max(map(len, further), default=0)
    for index in range(passes):
        tokens = [subsets[index] if index < len(subsets) else () for subsets in further]
        mask = scored_mask(batch, positions, tokens)
        rows = [row for row, chosen in enumerate(tokens) if chosen]
        losses = mean_losses(by_token[rows], mask[rows])
        keep = index < passes - 1 or wanted.token_energy_passes > 0
        finite = torch.isfinite(losses)
        if finite.any():
            losses[finite].sum().backward(retain_graph=keep)
        for row, loss in zip(rows, losses.tolist()):
            if not math.isfinite(loss):
                stats = SampleGradientStats(loss, batch.lengths[row], {}, failure="numerical failure: non-finite loss")
            else:
                n_positions = batch.lengths[row] - 1
                stats = sample_statistics(captured, row, n_positions, loss, wanted=wanted, shared=shared[row])
                stats.token_losses = token_loss_summary(by_token[row], mask[row])
            results[row].further_subsets.append(stats)
            if stats.failure and results[row].failure is None and not batch.carries_other_condition(row):
                results[row].failure = f"{stats.failure} (scored subset {index + 1})"


@dataclass(frozen=True)
class TokenLosses:
    """A batch's loss of every predicted position (B, P), which of them are response tokens (B, P)
    and which samples' losses are finite (B,)."""

    by_token: torch.Tensor
    mask: torch.Tensor
    finite: torch.Tensor


def add_token_energy(
    captured: CapturedFactors,
    batch: Batch,
    losses: TokenLosses,
    results: list[SampleGradientStats],
    *,
    wanted: Outputs,
) -> None:
    """Each computed sample's token energy into its ``values``, from backward passes of the loss
    sum over samples and tokens of weight x token loss (``token_energy.pass_weights``): each
    pass's captured output gradients are those of every sample's weighted sum of token gradients."""
    seeds = [
        token_energy.sample_seed(batch.input_ids[b, : batch.lengths[b]].tolist(), wanted.energy_seed)
        for b in range(len(results))
    ]
    weights, exact = token_energy.pass_weights(losses.mask, losses.finite, wanted.token_energy_passes, seeds)
    rows = [b for b, r in enumerate(results) if r.failure is None]
    shared: dict[int, dict] = {b: {} for b in rows}  # each sample's inputs, x x^T computed once
    energies = {b: token_energy.EnergyAccumulator(bool(exact[b])) for b in rows}
    kept = torch.where(losses.mask & losses.finite[:, None], losses.by_token, torch.zeros_like(losses.by_token))
    for index in range(weights.shape[0]):
        (weights[index] * kept).sum().backward(retain_graph=index < weights.shape[0] - 1)
        for b in rows:
            if weights[index, b].any():
                factors = layer_factors(captured, b, batch.lengths[b] - 1, shared[b])
                energies[b].add(token_energy.squared_norms(factors))
    for b in rows:
        values = energies[b].statistics()
        if not all(torch.isfinite(values[name]).all() for name in (token_energy.ENERGY, token_energy.VARIANCE)):
            results[b].failure = "numerical failure: non-finite token energy"
        results[b].values.update(values)


def sample_statistics(
    captured: CapturedFactors,
    row: int,
    n_positions: int,
    loss: float,
    *,
    wanted: Outputs = Outputs(),
    shared: dict | None = None,
) -> SampleGradientStats:
    """Statistics of one sample from its captured factors (and, with ``wanted.keep_spectra``, the
    singular values they come from).

    ``n_positions`` is the number of leading positions that can have a non-zero output gradient: the
    last token predicts nothing, so its row of ``g`` is exactly zero and is left out. ``shared``: the
    sample's inputs as earlier passes of the same forward pass computed them (``layer_factors``).
    """
    factors = layer_factors(captured, row, n_positions, shared)
    broken = non_finite_gradients(factors)
    if broken:  # the eigensolver raises on NaN or inf; report the sample instead
        broken_text = f"numerical failure: non-finite gradient ({', '.join(broken[:4])})"
        return SampleGradientStats(loss, n_positions + 1, {}, failure=broken_text)
    columns: dict[str, list[torch.Tensor]] = {}
    kept: dict[str, torch.Tensor] = {}
    for proj in PROJECTIONS:
        singular_values = factors[proj].singular_values()
        if wanted.keep_spectra:
            kept[proj] = singular_values
        stats = spectra.statistics_from_singular_values(singular_values)
        if wanted.entry_stats:
            stats.update(spectra.entry_statistics(factors[proj].dense()))
        for name, value in stats.items():
            columns.setdefault(name, []).append(value)
    values = {name: torch.stack(cols, dim=1) for name, cols in columns.items()}
    if wanted.similarities:
        values.update(spectra.factor_statistics(factors, values))
    checked = layer_stats.names(layer_stats.of_source(layer_stats.SPECTRUM))
    bad = [name for name, value in values.items() if name in checked and not torch.isfinite(value).all()]
    failure = (
        f"numerical failure: non-finite gradient statistics ({', '.join(bad)})" if bad else zero_gradient(values, loss)
    )
    return SampleGradientStats(loss, n_positions + 1, values, failure, kept if wanted.keep_spectra else None)


ZERO_GRADIENT = "zero gradient"  # how the reason of a sample skipped for an exactly zero gradient begins


def zero_gradient(values: dict[str, torch.Tensor], loss: float) -> str | None:
    """Why a sample whose gradient is exactly zero in some projection is skipped (its logs are
    undefined), or None. A loss of exactly 0 in float32 means the model gives every scored token
    probability 1, and the gradient vanishes with it."""
    zero = (values["nuclear_norm"] == 0).nonzero().tolist()
    if not zero:
        return None
    where = ", ".join(f"layer {layer} {PROJECTIONS[p]}" for layer, p in zero[:4]) + (" ..." if len(zero) > 4 else "")
    why = (
        "the loss is exactly 0: the model gives every scored token probability 1 in float32"
        if loss == 0
        else f"loss {loss:.3g}"
    )
    return (
        f"{ZERO_GRADIENT}: exactly zero in {len(zero)} of {values['nuclear_norm'].numel()} projections ({where}); {why}"
    )


def layer_factors(
    captured: CapturedFactors, row: int, n_positions: int, shared: dict | None = None
) -> dict[str, spectra.LayerFactors]:
    """One sample's factors of each projection, stacked over layers.

    Projections that read the same input tensor (Q, K and V do) share one
    :class:`spectra.LayerInputs`, so its triangular factor and Gram matrices are computed once
    (``shared``: those of earlier calls for the same sample, kept across backward passes).
    """
    n_layers = 1 + max(layer for layer, _ in captured.inputs)
    shared = {} if shared is None else shared
    factors = {}
    for proj in PROJECTIONS:
        pairs = [captured.factors((layer, proj), row, n_positions) for layer in range(n_layers)]
        identity = tuple((x.data_ptr(), x.shape, x.stride()) for _, x in pairs)
        if identity not in shared:
            shared[identity] = spectra.LayerInputs(torch.stack([x for _, x in pairs]))
        factors[proj] = spectra.LayerFactors(torch.stack([g for g, _ in pairs]), shared[identity])
    reached = positions_reached(factors)
    return {proj: layer_factors.leading(reached) for proj, layer_factors in factors.items()}


def positions_reached(factors: dict[str, spectra.LayerFactors]) -> int:
    """How many leading positions the loss reaches: 1 + the last position whose output gradient is not
    exactly zero in some projection and layer (at least 1). After the last scored token a causal
    model's output gradients are exactly zero, and their rows add nothing to ``g^T x``."""
    reached = torch.zeros(next(iter(factors.values())).n_tokens, dtype=torch.bool, device=factors["q"].g.device)
    for layer_factors in factors.values():
        reached |= (layer_factors.g != 0).any(dim=-1).any(dim=0)
    where = reached.nonzero()
    return max(int(where[-1]) + 1, 1) if where.numel() else 1


def non_finite_gradients(factors: dict[str, spectra.LayerFactors]) -> list[str]:
    """``layer.proj`` names of the gradients whose factors hold a NaN or an infinity."""
    broken: list[str] = []
    for proj, layer_factors in factors.items():
        finite = layer_factors.finite_layers()
        broken.extend(f"layer {layer} {proj}" for layer in (~finite).nonzero().flatten().tolist())
    return broken
