"""Loss-matched draws: chain tokens scored in place of the answer's, each matched in loss to one of them.

A loss-matched condition (``data.Condition.loss_matched``, ``detailed_matched_answer``) reads the text
of its reference (``detailed_answer``: the Detailed CoT, a new line, "The final answer is " and the
answer) and scores as many of its chain tokens as the answer has where that condition scores it. Once
the forward pass of the text has given every token's loss, each of K draws matches one chain token to
each answer token, without replacement within the draw: at random among the unused chain tokens whose
log loss lies within ``CALIPER`` of that answer token's, or, where none does, the unused chain token
nearest in log loss, counted as flagged (an instruction is never dropped for it). The draws are then
backpropagated through the same graph, one backward pass each (``gradients.batch_statistics``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

# A chain token matches an answer token where their losses differ by at most a factor of 1.5. On log
# loss, not in nats: the answer's tokens span orders of magnitude (0.015 to 14 nats on the offline
# models, lower still where a chain has given the answer away), and a caliper in nats would match a
# 1e-3 token to any predictable chain token; a token's gradient scales with 1 - p, about its loss
# where that is small. On the cpu profile's draw of the six datasets with None CoT, both offline
# models, 8 draws each, a factor of 1.5 flagged none of 864 matched tokens and left a mean
# |log-loss gap| of 0.16 per draw (a factor of 2: none, 0.27; of 1.25: 3.7% flagged on SmolLM2).
CALIPER = math.log(1.5)
# A float32 loss of exactly 0 (probability 1) is taken as the smallest positive float32 for its log.
LOSS_FLOOR = float(np.finfo(np.float32).tiny)


@dataclass(frozen=True)
class MatchRequest:
    """What a sample's loss-matched draws need besides its forward pass: the indices of its chain's
    tokens in its ``input_ids`` (``pool``, consecutive), how many draws, the seed of their generator
    (``preparation.subset_seed``) and whether the answer's own gradient comes first in the same pass
    (its reference's rows, ``answer_gradient``) or is not wanted (the first draw is then the
    sample's first gradient, as in a scored-subset condition)."""

    pool: tuple[int, ...]
    draws: int
    seed: tuple[int, ...]
    answer_gradient: bool = True


@dataclass(frozen=True)
class Draw:
    """One draw: the matched chain tokens' indices in the text's tokens (sorted), how many lie
    outside the caliper of their answer token's loss, and their mean position in the chain (0 its
    first token, 1 its last)."""

    tokens: tuple[int, ...]
    flagged: int
    position: float


@dataclass(frozen=True)
class Matched:
    """A sample's draws, with the index of its chain's first token, or why none could be made."""

    draws: tuple[Draw, ...] = ()
    chain_start: int = 0
    failure: str | None = None

    def offsets(self) -> str:
        """Each draw's tokens as offsets in the chain (0: its first token), a JSON list of K lists."""
        return json.dumps([[token - self.chain_start for token in draw.tokens] for draw in self.draws])


def log_losses(losses: np.ndarray) -> np.ndarray:
    """Natural logs of token losses (float64), a loss of 0 taken as ``LOSS_FLOOR``."""
    return np.log(np.maximum(np.asarray(losses, dtype=np.float64), LOSS_FLOOR))


def match_once(
    answer: np.ndarray, chain: np.ndarray, rng: np.random.Generator, *, caliper: float
) -> tuple[list[int], int]:
    """One draw on log losses: per answer token (in a random order), the index of an unused chain
    token within ``caliper`` of it, drawn at random, else the unused one nearest to it (ties: the
    first); the indices in the answer's order, and how many were nearest rather than within."""
    used = np.zeros(chain.size, dtype=bool)
    chosen = [0] * answer.size
    flagged = 0
    for i in rng.permutation(answer.size):
        distance = np.where(used, np.inf, np.abs(chain - answer[i]))
        within = np.flatnonzero(distance <= caliper)
        if within.size:
            pick = int(rng.choice(within))
        else:
            pick = int(np.argmin(distance))
            flagged += 1
        used[pick] = True
        chosen[i] = pick
    return chosen, flagged


def draw_matched(
    request: MatchRequest, answer_losses: np.ndarray, chain_losses: np.ndarray, *, caliper: float | None = None
) -> Matched:
    """``request.draws`` draws (``match_once``, within ``caliper``, None: ``CALIPER``) of a sample
    whose answer tokens and chain tokens (``request.pool``, in order) have these losses; a failure
    where no draw can be made: a loss that is not finite, or a chain with fewer tokens than the answer."""
    caliper = CALIPER if caliper is None else caliper
    pool = request.pool
    start = pool[0] if pool else 0
    if not (np.isfinite(answer_losses).all() and np.isfinite(chain_losses).all()):
        why = "numerical failure: non-finite token loss before the loss-matched draw"
        return Matched(chain_start=start, failure=why)
    if len(pool) < answer_losses.size:
        why = f"chain too short: {len(pool)} chain tokens for {answer_losses.size} answer tokens to match"
        return Matched(chain_start=start, failure=why)
    rng = np.random.default_rng(list(request.seed))
    answer, chain = log_losses(answer_losses), log_losses(chain_losses)
    span = max(len(pool) - 1, 1)
    draws = []
    for _ in range(request.draws):
        chosen, flagged = match_once(answer, chain, rng, caliper=caliper)
        draws.append(Draw(tuple(sorted(pool[c] for c in chosen)), flagged, float(np.mean(chosen)) / span))
    return Matched(tuple(draws), chain_start=start)
