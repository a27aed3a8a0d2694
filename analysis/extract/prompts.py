"""Prompt templates and the response-only label mask (the methods page, "One gradient per sample").

Base models see ``instruction + "\\n" + output``; instruct models see the tokenizer's chat
template over a system and a user message, with the generation prompt, then ``output``
appended directly. Gemma-family templates take no system message. The prompt's tokens are the
tokenization of the text before the response, exactly as in the original study: both the whole
text and the prompt text are encoded with the tokenizer's default special tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.errors import StudyError
from analysis.extract.loss_matching import MatchRequest

TEMPLATES = ("base", "instruct")
SYSTEM_MESSAGE = "You are a helpful assistant."


class TemplateError(StudyError, ValueError):
    """The requested template cannot be applied with this tokenizer."""


def instruction_text(instruction: str, input_text: str = "") -> str:
    """The instruction as the model sees it: ``input`` joins it on a new line when non-empty."""
    return instruction + "\n" + input_text if input_text else instruction


def prompt_text(tokenizer, instruction: str, template: str, system_message: bool = True) -> str:
    """The text that precedes the response under ``template``."""
    if template == "base":
        return instruction + "\n"
    if template != "instruct":
        raise TemplateError(f"unknown template {template!r}; expected one of {TEMPLATES}")
    if not getattr(tokenizer, "chat_template", None):
        raise TemplateError(
            "the instruct template needs a tokenizer with a chat template, and this one has none; "
            "use --template base for a pre-trained model"
        )
    messages = [{"role": "user", "content": instruction}]
    if system_message:
        messages.insert(0, {"role": "system", "content": SYSTEM_MESSAGE})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


@dataclass(frozen=True)
class EncodedSample:
    """Token ids of one sample and how many of its leading tokens are not scored: the prompt's
    (an answer-scored sample's: every token before its answer's first, ``encode_answer``).

    ``scored``: where only some of the tokens after the prompt enter the loss (``scored_subset``),
    their indices in ``input_ids``, sorted; None: every token after the prompt does.
    ``more_scored``: further draws of as many tokens (``scored_subsets``), each scored in a
    gradient of its own; ``scored`` is the first. ``matching``: the chain tokens among which
    loss-matched draws are made once the forward pass has given their losses (``loss_matching``).
    """

    input_ids: list[int]
    prompt_length: int
    scored: tuple[int, ...] | None = None
    more_scored: tuple[tuple[int, ...], ...] = ()
    matching: MatchRequest | None = None

    @property
    def n_response_tokens(self) -> int:
        """Tokens whose prediction enters the loss (the first token is never predicted)."""
        if self.scored is not None:
            return len(self.scored)
        return max(0, len(self.input_ids) - max(self.prompt_length, 1))

    def scored_tokens(self) -> range | tuple[int, ...]:
        """The indices in ``input_ids`` of the tokens whose prediction enters the loss."""
        return self.scored if self.scored is not None else range(max(self.prompt_length, 1), len(self.input_ids))


def scored_subset(sample: EncodedSample, size: int, rng: np.random.Generator) -> EncodedSample:
    """The same text with only ``size`` of its response tokens scored, drawn at random by ``rng``
    without replacement (all of them where it has no more): the number of scored tokens changes,
    the text and the model's reading of it do not."""
    tokens = np.asarray(sample.scored_tokens())
    chosen = np.sort(rng.choice(tokens, size=min(size, tokens.size), replace=False)) if tokens.size else tokens
    return EncodedSample(sample.input_ids, sample.prompt_length, tuple(int(t) for t in chosen))


def scored_subsets(sample: EncodedSample, size: int, rng: np.random.Generator, count: int) -> EncodedSample:
    """``count`` draws of ``size`` response tokens by one ``rng``: the first is ``scored_subset``'s
    draw (the same tokens as one draw alone), the others follow it in ``more_scored``."""
    first = scored_subset(sample, size, rng)
    more = tuple(scored_subset(sample, size, rng).scored or () for _ in range(count - 1))
    return EncodedSample(first.input_ids, first.prompt_length, first.scored, more)


def encode(
    tokenizer, prompt: str, response: str, max_length: int, *, response_token_limit: int | None = None
) -> EncodedSample:
    """Tokenize ``prompt + response`` truncated to ``max_length``; mask length from ``prompt``.

    ``response_token_limit`` keeps at most that many response tokens (the length-control
    conditions cut a long response to the token count of a shorter one).
    """
    ids = tokenizer(prompt + response, truncation=True, max_length=max_length)["input_ids"]
    prompt_length = len(tokenizer(prompt)["input_ids"])
    if response_token_limit is not None:
        ids = ids[: prompt_length + response_token_limit]
    return EncodedSample(list(ids), prompt_length)


def chain_tokens(tokenizer, prompt: str, response: str, *, chain_end: int) -> tuple[int, ...]:
    """The indices in the tokenization of ``prompt + response`` of the chain's tokens: from the first
    response token (after the prompt's own tokens, as ``encode`` counts them) up to the last that
    ends within the response's first ``chain_end`` characters (a token reaching past them, into what
    follows the chain, is not the chain's)."""
    offsets = tokenizer(prompt + response, return_offsets_mapping=True)["offset_mapping"]
    first = max(len(tokenizer(prompt)["input_ids"]), 1)
    end = len(prompt) + chain_end
    last = next((i for i in range(first, len(offsets)) if offsets[i][1] > end), len(offsets))
    return tuple(range(first, last))


def encode_answer(tokenizer, prompt: str, response: str, *, answer_start: int, max_length: int) -> EncodedSample:
    """Tokenize ``prompt + response``; only the tokens that overlap the answer, the characters of
    ``response`` from ``answer_start`` on, are scored.

    The first scored token is the first whose characters (the tokenizer's offset mapping) end after
    the answer begins, not a count of the tokens before it: a token may carry the answer's first
    character together with what precedes it (Gemma 3's "▁yes" holds the space after "is").
    A text longer than ``max_length`` tokens has lost (part of) its answer: no token is scored then.
    """
    if not getattr(tokenizer, "is_fast", False):
        raise TemplateError(
            "the answer-scored conditions need a fast tokenizer (its offset mapping locates the answer)"
        )
    encoded = tokenizer(prompt + response, return_offsets_mapping=True)
    ids, offsets = list(encoded["input_ids"]), encoded["offset_mapping"]
    if len(ids) > max_length:
        return EncodedSample(ids[:max_length], max_length)
    start = len(prompt) + answer_start
    first = next((i for i, (a, b) in enumerate(offsets) if b > start and b > a), len(ids))
    return EncodedSample(ids, first)
