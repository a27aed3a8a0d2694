"""The samples of a run made ready to compute: encoded into prompt and response tokens (a sample
with no scored token left is a skip; a loss-matched one with the chain tokens its draws are made
among), and grouped into batches of similar length.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from analysis import data
from analysis.data.records import Record
from analysis.extract import loss_matching, models, prompts


@dataclass
class PreparedSample:
    """A sample chosen for computing: its index in the data file and its encoded tokens."""

    index: int
    encoded: prompts.EncodedSample


def prepare_samples(
    loaded: models.LoadedModel,
    resolved: data.ResolvedData,
    indices: list[int],
    max_length: int,
    *,
    data_dir=None,
    scored_subsets: int = 1,
    with_reference: bool = False,
) -> tuple[list[PreparedSample], dict[int, str]]:
    """Encode the chosen samples; those with no scored token left are returned as skips (an
    answer-scored sample whose text does not fit in ``max_length`` tokens has lost its answer).
    A scored-subset condition's sample gets ``scored_subsets`` draws (``prompts.scored_subsets``)
    of as many tokens as its reference scores; none where the reference scores none (a skip). A
    loss-matched condition's sample is its reference's (the answer scored after the chain) with the
    request for as many draws after its forward pass (``matching_request``); ``with_reference``:
    the reference's own gradient is computed first in the same pass."""
    condition = resolved.condition
    records = data.condition_records(condition, resolved.path, data_dir)
    counts = reference_counts(loaded, condition, indices, max_length, data_dir=data_dir)
    limits = counts if condition.length_reference is not None else {}
    prepared, skips = [], {}
    for index in indices:
        encoded = encode_record(loaded, records[index], max_length, response_token_limit=limits.get(index))
        if condition.loss_matched:
            counts[index] = encoded.n_response_tokens  # its reference's encoding is this one
            if encoded.n_response_tokens:
                request = matching_request(
                    loaded, records[index], condition, index, draws=scored_subsets, answer_gradient=with_reference
                )
                encoded = replace(encoded, matching=request)
        elif condition.scored_reference is not None:
            rng = subset_rng(condition.key, index)
            encoded = prompts.scored_subsets(encoded, counts[index], rng, scored_subsets)
        if encoded.n_response_tokens == 0:
            skips[index] = skip_reason(
                condition, records[index], encoded, max_length=max_length, reference_count=counts.get(index)
            )
        else:
            prepared.append(PreparedSample(index, encoded))
    return prepared, skips


def matching_request(
    loaded: models.LoadedModel,
    record: Record,
    condition: data.Condition,
    index: int,
    *,
    draws: int,
    answer_gradient: bool,
) -> loss_matching.MatchRequest:
    """What sample ``index`` of a loss-matched condition draws among after its forward pass: the
    tokens of its chain (``prompts.chain_tokens``), ``draws`` times, seeded as a scored subset's."""
    instruction = prompts.instruction_text(record.instruction, record.input)
    prompt = prompts.prompt_text(loaded.tokenizer, instruction, loaded.template, loaded.system_message)
    end = data.chain_end(record, where=f"{condition.key}: record {index}")
    pool = prompts.chain_tokens(loaded.tokenizer, prompt, record.output, chain_end=end)
    return loss_matching.MatchRequest(pool, draws, subset_seed(condition.key, index), answer_gradient)


def encode_record(
    loaded: models.LoadedModel, record: Record, max_length: int, *, response_token_limit: int | None = None
) -> prompts.EncodedSample:
    """A record encoded as the extraction scores it: an answer-scored record (``answer_start`` set)
    scores its answer's tokens only (``prompts.encode_answer``), any other its whole response, at
    most ``response_token_limit`` tokens of it (``prompts.encode``)."""
    instruction = prompts.instruction_text(record.instruction, record.input)
    prompt = prompts.prompt_text(loaded.tokenizer, instruction, loaded.template, loaded.system_message)
    if record.answer_start is None:
        return prompts.encode(
            loaded.tokenizer, prompt, record.output, max_length, response_token_limit=response_token_limit
        )
    return prompts.encode_answer(
        loaded.tokenizer, prompt, record.output, answer_start=record.answer_start, max_length=max_length
    )


def skip_reason(
    condition: data.Condition,
    record: Record,
    encoded: prompts.EncodedSample,
    *,
    max_length: int,
    reference_count: int | None = None,
) -> str:
    """Why a sample has no scored token: (a scored subset) its reference scores none, so there is
    no count to draw; else its answer or its response truncated away."""
    if condition.scored_reference is not None and reference_count == 0:
        return (
            f"reference scores no token: {condition.scored_reference} has none left at max_length {max_length} "
            "(its answer truncated away), so there is no count of tokens to draw"
        )
    if record.answer_start is not None:
        return answer_truncated(max_length)
    return f"response truncated away: prompt has {encoded.prompt_length} tokens, max_length is {max_length}"


def answer_truncated(max_length: int) -> str:
    """Why an answer-scored sample has no scored token: its text does not fit in ``max_length`` tokens."""
    return f"answer truncated away: the text has more than {max_length} tokens, max_length is {max_length}"


# The seed of the scored subsets' draws: each sample's subset is drawn by a generator seeded by it,
# the condition and the sample's index, so that a run, a resumed run and a shard draw the same tokens.
SUBSET_SEED = 0


def subset_seed(condition: str, index: int) -> tuple[int, int, int]:
    """The seed of the generator that draws sample ``index``'s scored tokens in a scored-subset condition."""
    return (SUBSET_SEED, zlib.crc32(condition.encode()), index)


def subset_rng(condition: str, index: int) -> np.random.Generator:
    """The generator that draws sample ``index``'s scored tokens in a scored-subset condition."""
    return np.random.default_rng(list(subset_seed(condition, index)))


def reference_counts(loaded, condition: data.Condition, indices, max_length, *, data_dir=None) -> dict[int, int]:
    """For a length-control or scored-subset condition, how many tokens each sample's reference
    scores, encoded as its own extraction encodes it (``encode_record``: an answer-scored reference
    counts its answer's tokens, 0 where they are truncated away): a cut's cap, a subset's size;
    empty for the other conditions."""
    if condition.token_reference is None or condition.loss_matched:  # the latter: counted as it is encoded
        return {}
    reference = data.resolve(condition.token_reference, data_dir)
    records = data.condition_records(reference.condition, reference.path, data_dir)
    return {index: encode_record(loaded, records[index], max_length).n_response_tokens for index in indices}


# Samples per forward/backward pass when none is given. On a CPU, batching saves nothing (each
# matrix product is already large) while the larger activations cost memory bandwidth: two
# Detailed-CoT samples of Gemma 3 270M took 30% longer together than one after the other.
CPU_BATCH_SIZE = 1
GPU_BATCH_SIZE = 8


def batch_size_for(device: torch.device | str, batch_size: int | None = None) -> int:
    """``batch_size`` when given, else the default for the device (1 on a CPU, 8 on a GPU)."""
    if batch_size is not None:
        return batch_size
    return CPU_BATCH_SIZE if torch.device(device).type == "cpu" else GPU_BATCH_SIZE


# At most this fraction of a batch's positions may be padding: padded positions cost as much
# compute as real ones, and on a CPU batching saves nothing that would pay for them.
MAX_PADDING = 0.1


def length_sorted_batches(
    samples: list[PreparedSample],
    batch_size: int,
    token_budget: int,
    *,
    max_padding: float = MAX_PADDING,
    fits: Callable[[int, int], bool] | None = None,
) -> list[list[PreparedSample]]:
    """Batches of samples of similar length.

    A batch holds at most ``batch_size`` samples and ``token_budget`` padded positions, of which
    at most a ``max_padding`` fraction are padding; with ``fits`` (n_samples, longest) -> bool,
    only batches that it accepts (a device's memory plan, see :mod:`analysis.extract.batching`).
    """
    ordered = sorted(samples, key=lambda s: len(s.encoded.input_ids))
    batches: list[list[PreparedSample]] = []
    current: list[PreparedSample] = []
    for sample in ordered:
        lengths = [len(s.encoded.input_ids) for s in current] + [len(sample.encoded.input_ids)]
        padded = max(lengths) * len(lengths)
        too_big = len(lengths) > batch_size or padded > token_budget
        too_big = too_big or (fits is not None and not fits(len(lengths), max(lengths)))
        if current and (too_big or padded > (1 + max_padding) * sum(lengths)):
            batches.append(current)
            current = []
        current.append(sample)
    if current:
        batches.append(current)
    return batches
