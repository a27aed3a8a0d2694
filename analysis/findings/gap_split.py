"""Where fast thinking's larger gradient comes from: its gap split exactly into steps.

The whole gap is the mean log norm (over q, k, v, o and the layers, then over instructions) of None
CoT less that of Detailed CoT, correct responses. On the instructions that hold every condition of
the chain the study extracts, it telescopes through the conditions between them, in this fixed
order (``STEPS``, each declared by name; ``chain_of`` refuses steps that do not link up):

    none -> none_answer -> detailed_answer -> detailed_scored_answer -> detailed
       the phrase    the reasoning    which tokens          how many tokens

- the phrase: the bare answer against "The final answer is " and the answer's re-tokenization;
- the reasoning: the same answer tokens after the instruction's Detailed CoT;
- which tokens: the answer's tokens against as many tokens of the chain as ``detailed_answer``
  scores of that instruction's answer: equal counts, so no averaging enters this step;
- how many tokens: those few tokens of the chain against all of them (averaging).

Each step is the mean log norm of one condition less that of the next, on the same instructions,
so the steps add up to the whole gap on them exactly. A step's size depends on where it sits in the
chain: the order is part of the estimand. Intervals resample instructions with the study's one
resampling (``bootstrap``) at its ``LEVEL``. The check that shows the split turns these estimates
into parts (``analysis.checks``), pooled per family like every check's, each with its outcome
decided once (``rules.Part.outcome``). In the Frobenius norm the averaging step stands beside what
averaging alone predicts, half the gap in mean log R (``averaging``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.core import vocabulary
from analysis.findings.bootstrap import PROJECTIONS, CurveDraws, Estimate, combine, resampled_mean, rows_of
from analysis.findings.quantities import log_level
from analysis.findings.regression import equal_loss_regression

NUCLEAR, FROBENIUS, TOKENS, LOSS = "nuclear_norm", "frobenius", "n_response_tokens", "loss"
STATS = (NUCLEAR, FROBENIUS)  # the norms the split is computed in, the paper's first


@dataclass(frozen=True)
class Step:
    """One step of the chain: the mean log norm of ``fast`` less that of ``slow``."""

    name: str
    fast: str
    slow: str


PHRASE = Step("the phrase", "none", "none_answer")
REASONING = Step("the reasoning", "none_answer", "detailed_answer")
EQUAL_LOSS = Step("which tokens at equal loss", "detailed_answer", "detailed_matched_answer")
SURPRISE = Step("how surprising", "detailed_matched_answer", "detailed_scored_answer")
HOW_MANY = Step("how many tokens", "detailed_scored_answer", "detailed")
STEPS = (PHRASE, REASONING, EQUAL_LOSS, SURPRISE, HOW_MANY)  # the chain's fixed order, fast to slow
# Shown beside the steps, each the sum of steps next to each other: which tokens (the answer's against
# as many random chain tokens: at equal loss, then how surprising) and which tokens and how many
# together (the answer's against every chain token: no draw enters it).
WHICH_TOKENS = Step("which tokens", EQUAL_LOSS.fast, SURPRISE.slow)
TOGETHER = Step("which tokens and how many", EQUAL_LOSS.fast, HOW_MANY.slow)
SPANS = (WHICH_TOKENS, TOGETHER)


def chain_of(steps: Sequence[Step]) -> tuple[str, ...]:
    """The conditions a chain of steps passes through, fast to slow; a step that does not start
    where the one before it ends is refused (the steps would not add up)."""
    for before, after in zip(steps, steps[1:]):
        if before.slow != after.fast:
            raise ValueError(
                f"step {after.name!r} starts at {after.fast!r}, not where {before.name!r} ends ({before.slow!r})"
            )
    return (steps[0].fast, *(s.slow for s in steps))


CHAIN = chain_of(STEPS)  # the five conditions, fast to slow
TOTAL = "the whole gap"  # None over Detailed CoT on the instructions every condition of the chain holds
PREDICTED = "averaging alone predicts"  # 1/2 the gap in mean log R of the last step (Frobenius)


@dataclass(frozen=True)
class Dropped:
    """Instructions of a dataset that some of the five conditions hold and ``condition`` lacks (its
    sample skipped: too long for ``max_length``, a zero gradient; or a value missing), of ``of``."""

    model: str
    dataset: str
    condition: str
    dropped: int
    of: int


def held_ids(cd: CurveDraws, condition: str, stat: str) -> set[int] | None:
    """The instructions with a positive value of ``stat`` in every projection and layer of a
    condition (None: not stored)."""
    keys = [(condition, proj, stat) for proj in PROJECTIONS]
    if not all(k in cd.samples for k in keys):
        return None
    held = []
    for key in keys:
        matrix, ids = cd.samples[key]
        held.append(set(ids[np.all(matrix > 0, axis=1)].tolist()))
    return set.intersection(*held)


def split_instructions(
    cd: CurveDraws, dataset: str, *, stat: str = NUCLEAR
) -> tuple[np.ndarray, dict[str, int]] | None:
    """(the instructions every condition of the chain holds, sorted; per condition the number of
    instructions some condition holds and it lacks); None where a condition is not stored."""
    held = {c: held_ids(cd, cd.condition_key(dataset, c), stat) for c in CHAIN}
    if any(h is None for h in held.values()):
        return None
    sets = [h for h in held.values() if h is not None]
    union = set().union(*sets)
    shared = np.asarray(sorted(set.intersection(*sets)), dtype=int)
    return shared, {c: len(union - h) for c, h in held.items() if h is not None}


def _predicted(cd: CurveDraws, dataset: str, ids: np.ndarray) -> Estimate | None:
    """What averaging alone predicts of the last step in the Frobenius norm: the mean over ``ids``
    of -1/2 log R_subset + 1/2 log R_all (None where a token count is not stored)."""
    halves = []
    for setting, sign in ((HOW_MANY.fast, -0.5), (HOW_MANY.slow, 0.5)):
        key = (cd.condition_key(dataset, setting), PROJECTIONS[0], TOKENS)
        if key not in cd.samples or not np.isin(ids, cd.samples[key][1]).all():
            return None
        counts = np.nanmax(rows_of(*cd.samples[key], ids), axis=1)
        if not np.all(counts > 0):
            return None
        halves.append(sign * np.log(counts))
    values = halves[0] + halves[1]
    weights = cd.resampling.weights(dataset, ids)
    return Estimate(float(values.mean()), resampled_mean(values[:, None], weights)[:, 0], ((dataset, int(ids.size)),))


def shares(estimates: Mapping[str, Estimate]) -> dict[str, Estimate]:
    """Each estimate of ``estimates`` (the steps, what averaging predicts) as a share of the whole
    gap (``TOTAL``, which must be among them)."""
    total = estimates[TOTAL]
    return {n: combine(np.divide, e, total) for n, e in estimates.items() if n != TOTAL}


def dataset_split(cd: CurveDraws, dataset: str, *, stat: str = NUCLEAR) -> dict[str, Estimate] | None:
    """The whole gap and its steps on the instructions every condition holds (and, in the Frobenius
    norm, what averaging alone predicts of the last step); None where a condition is not stored or
    they share no instruction."""
    if stat not in STATS:
        raise ValueError(f"the split is computed in {' or '.join(STATS)}, not {stat!r}")
    found = split_instructions(cd, dataset, stat=stat)
    if found is None or found[0].size == 0:
        return None
    shared = set(found[0].tolist())
    levels: dict[str, Estimate] = {}
    for condition in CHAIN:
        key = cd.condition_key(dataset, condition)
        stored = set().union(*(cd.samples[(key, proj, stat)][1].tolist() for proj in PROJECTIONS))
        level = log_level(cd, dataset, condition, excluded=stored - shared, stat=stat)
        if level is None:
            return None
        levels[condition] = level
    out = {TOTAL: combine(np.subtract, levels[CHAIN[0]], levels[CHAIN[-1]])}
    out |= {s.name: combine(np.subtract, levels[s.fast], levels[s.slow]) for s in (*STEPS, *SPANS)}
    predicted = _predicted(cd, dataset, found[0]) if stat == FROBENIUS else None
    if predicted is not None:
        out[PREDICTED] = predicted
    return out


def _per_instruction(cd: CurveDraws, condition: str, stat: str, ids: np.ndarray) -> np.ndarray:
    """Each of ``ids``'s mean over q, k, v, o and the layers of log ``stat`` (a per-sample value such as
    the mean token loss is the same on every layer: the mean of its log)."""
    return np.mean(
        [np.log(rows_of(*cd.samples[(condition, proj, stat)], ids)).mean(axis=1) for proj in PROJECTIONS], axis=0
    )


def loss_line(cd: CurveDraws, dataset: str, step: Step) -> tuple[Estimate, Estimate] | None:
    """(intercept, slope) of the line, over the instructions every condition of the chain holds, of a
    step's per-instruction gap of mean log nuclear norm on the gap in its scored tokens' log mean token
    loss (``LOSS``, fast less slow): the intercept is the step where the scored tokens are equally
    surprising on both sides. None where the loss is not stored, or is the same gap for every instruction."""
    found = split_instructions(cd, dataset)
    if found is None or found[0].size < 3:
        return None
    ids = found[0]
    keys = [cd.condition_key(dataset, s) for s in (step.fast, step.slow)]
    if not all(
        (k, p, LOSS) in cd.samples and np.isin(ids, cd.samples[(k, p, LOSS)][1]).all()
        for k in keys
        for p in PROJECTIONS
    ):
        return None
    y = _per_instruction(cd, keys[0], NUCLEAR, ids) - _per_instruction(cd, keys[1], NUCLEAR, ids)
    x = _per_instruction(cd, keys[0], LOSS, ids) - _per_instruction(cd, keys[1], LOSS, ids)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or np.ptp(x) == 0:
        return None
    return equal_loss_regression(y, x, cd.resampling.weights(dataset, ids), dataset)


def sample_mean(cd: CurveDraws, dataset: str, condition: str, stat: str) -> Estimate | None:
    """The mean over the instructions every condition of the chain holds of a per-sample value of
    ``condition`` (the same on every row of a sample, e.g. a draw's matched tokens' position), with
    its resampled draws; None where it is not stored for them."""
    found = split_instructions(cd, dataset)
    key = (condition, PROJECTIONS[0], stat)
    if found is None or found[0].size == 0 or key not in cd.samples or not np.isin(found[0], cd.samples[key][1]).all():
        return None
    values = np.nanmean(rows_of(*cd.samples[key], found[0]), axis=1)
    if not np.all(np.isfinite(values)):
        return None
    weights = cd.resampling.weights(dataset, found[0])
    return Estimate(
        float(values.mean()), resampled_mean(values[:, None], weights)[:, 0], ((dataset, int(values.size)),)
    )


def dropped(cd: CurveDraws, *, stat: str = NUCLEAR) -> list[Dropped]:
    """Per dataset with every condition of the chain stored and per condition, the instructions some
    condition holds and it lacks."""
    out = []
    for dataset in cd.datasets():
        found = split_instructions(cd, dataset, stat=stat)
        if found is None:
            continue
        union = len(set().union(*(held_ids(cd, cd.condition_key(dataset, c), stat) or set() for c in CHAIN)))
        out += [Dropped(cd.model, dataset, c, n, union) for c, n in found[1].items()]
    return out


def dropped_table(dropped: Sequence[Dropped]) -> pd.DataFrame:
    """One line per condition that dropped instructions: model, dataset, condition, dropped, of."""
    columns = ["model", "dataset", "condition", "dropped", "of"]
    return pd.DataFrame([dataclasses.asdict(d) for d in dropped if d.dropped], columns=columns)


def missing_conditions(cd: CurveDraws) -> list[str]:
    """The chain's conditions a model lacks on the datasets with None CoT where it holds any of them."""
    missing = []
    for dataset in cd.datasets():
        if dataset not in vocabulary.REASONING_DATASETS:
            continue
        keys = [cd.condition_key(dataset, c) for c in CHAIN]
        if any(k in cd.conditions for k in keys):
            missing += [k for k in keys if k not in cd.conditions]
    return missing
