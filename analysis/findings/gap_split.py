"""Where fast thinking's larger gradient comes from: F1's gap split exactly into four steps.

F1's gap is the mean log norm (over q, k, v, o and the layers, then over instructions) of None CoT
less that of Detailed CoT, correct responses. On the instructions that hold five conditions the
study extracts, it telescopes through three conditions between them, in this fixed order:

    none -> none_answer -> detailed_answer -> detailed_scored_answer -> detailed
       the phrase    the reasoning    which tokens          how many tokens

- the phrase: the bare answer against "The final answer is " and the answer's re-tokenization;
- the reasoning: the same answer tokens after the instruction's Detailed CoT (the check S decides on it);
- which tokens: the answer's tokens against as many tokens of the chain as ``detailed_answer``
  scores of that instruction's answer: equal counts, so no averaging enters this step;
- how many tokens: those few tokens of the chain against all of them (averaging).

Each step is the mean log norm of one condition less that of the next, on the same instructions,
so the four add up to F1's gap on them exactly. A step's size depends on where it sits in the
chain: the order is part of the estimand. Intervals resample instructions with the study's one
resampling (``bootstrap``) at its ``LEVEL``. A family's value is the mean over the datasets it
names (conditional on them), its interval within-dataset only (``bootstrap.pooled``): two datasets
say nothing about the other datasets of a family, and the note says where the datasets lie on
opposite sides of 0. A step is decided (``step_outcome``) when its interval clears 0 (it makes fast
thinking's gradient larger, or smaller) or lies wholly within the margin of "nearly the same"
(``rules.SAME_MARGIN``, two one-sided tests: it changes the gradient by less than that). In the Frobenius norm the averaging step stands beside what
averaging alone predicts, half the gap in mean log R (``averaging``), each as a share of F1's gap.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.core import vocabulary
from analysis.findings.bootstrap import (
    MIN_VERDICT_SAMPLES,
    PROJECTIONS,
    CurveDraws,
    Estimate,
    combine,
    pooled,
    resampled_mean,
    rows_of,
)
from analysis.findings.pooling import scope_rank
from analysis.findings.quantities import log_level
from analysis.findings.rules import SAME_MARGIN

NUCLEAR, FROBENIUS, TOKENS = "nuclear_norm", "frobenius", "n_response_tokens"
STATS = (NUCLEAR, FROBENIUS)  # the norms the split is computed in, the paper's first


@dataclass(frozen=True)
class Step:
    """One step of the chain: the mean log norm of ``fast`` less that of ``slow``."""

    name: str
    fast: str
    slow: str


STEPS = (
    Step("the phrase", "none", "none_answer"),
    Step("the reasoning", "none_answer", "detailed_answer"),
    Step("which tokens", "detailed_answer", "detailed_scored_answer"),
    Step("how many tokens", "detailed_scored_answer", "detailed"),
)
CHAIN = (STEPS[0].fast, *(s.slow for s in STEPS))  # the five conditions, fast to slow
TOTAL = "F1's gap"
PREDICTED = "averaging alone predicts"  # 1/2 the gap in mean log R of the last step (Frobenius)
SHARE = "share of F1's gap: "  # the prefix of a share's row
ORDER = (TOTAL, *(s.name for s in STEPS), PREDICTED)


class Outcome(enum.Enum):
    """What a step's interval decides (its value: the words the book prints)."""

    LARGER = "larger"  # the interval lies above 0: the step makes fast thinking's gradient larger
    SMALLER = "smaller"  # below 0
    SAME = "about the same"  # within (-SAME_MARGIN, SAME_MARGIN): less than that margin either way
    UNRESOLVED = "not decided"  # none of these
    TOO_FEW = "too few instructions"  # fewer than MIN_VERDICT_SAMPLES in some dataset

    @property
    def decided(self) -> bool:
        return self in (Outcome.LARGER, Outcome.SMALLER, Outcome.SAME)


def step_outcome(estimate: Estimate, *, margin: float = SAME_MARGIN) -> Outcome:
    """Whether a step's interval clears 0 (either way) or lies wholly within ``margin`` of 0, on at
    least ``MIN_VERDICT_SAMPLES`` instructions per dataset. The sign comes first: a step that clears
    0 by less than the margin is "larger" or "smaller", not "about the same". Clearing 0 is the
    study's gap rule, lying within the margin its "within" rule; both are calibrated
    (``calibration.rule.GAP``, ``calibration.rule.WITHIN``)."""
    if estimate.n_smallest < MIN_VERDICT_SAMPLES:
        return Outcome.TOO_FEW
    low, high = estimate.interval()
    if low > 0:
        return Outcome.LARGER
    if high < 0:
        return Outcome.SMALLER
    if -margin < low and high < margin:
        return Outcome.SAME
    return Outcome.UNRESOLVED


def share_name(step: str) -> str:
    """The row name of a step's share of F1's gap."""
    return SHARE + step


@dataclass(frozen=True)
class Row:
    """One estimate of the split: a ``step`` (or F1's gap, a share) of a model on a ``scope``, a
    dataset or a family (``pooled``); ``note`` says where a family's datasets disagree in sign."""

    model: str
    scope: str
    step: str
    estimate: Estimate
    pooled: bool = False
    note: str = ""

    @property
    def interval(self) -> tuple[float, float]:
        return self.estimate.interval()

    @property
    def outcome(self) -> Outcome:
        """What the row's interval decides (``step_outcome``; a share's bound is not 0: its outcome
        says only whether it is decided, on the share's own scale)."""
        return step_outcome(self.estimate)

    @property
    def decided(self) -> bool:
        return self.outcome.decided


@dataclass(frozen=True)
class Dropped:
    """Instructions of a dataset that some of the five conditions hold and ``condition`` lacks (its
    sample skipped: too long for ``max_length``, a zero gradient; or a value missing), of ``of``."""

    model: str
    dataset: str
    condition: str
    dropped: int
    of: int


@dataclass(frozen=True)
class Split:
    """The split of every model and scope in one norm (``stat``), with the instructions dropped."""

    stat: str
    rows: tuple[Row, ...]
    dropped: tuple[Dropped, ...]

    def table(self) -> pd.DataFrame:
        """One line per row: model, scope, step, estimate, low, high, instructions, outcome, decided, note."""
        lines = [
            {
                "model": r.model,
                "scope": r.scope,
                "step": r.step,
                "estimate": r.estimate.value,
                "low": r.interval[0],
                "high": r.interval[1],
                "instructions": r.estimate.n,
                "outcome": r.outcome.value,
                "decided": r.decided,
                "note": r.note,
            }
            for r in self.rows
        ]
        columns = ["model", "scope", "step", "estimate", "low", "high", "instructions", "outcome", "decided", "note"]
        return pd.DataFrame(lines, columns=columns)

    def dropped_table(self) -> pd.DataFrame:
        """One line per condition that dropped instructions: model, dataset, condition, dropped, of."""
        columns = ["model", "dataset", "condition", "dropped", "of"]
        return pd.DataFrame([dataclasses.asdict(d) for d in self.dropped if d.dropped], columns=columns)


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
    for setting, sign in ((STEPS[-1].fast, -0.5), (STEPS[-1].slow, 0.5)):
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


def with_shares(estimates: Mapping[str, Estimate]) -> dict[str, Estimate]:
    """``estimates`` (F1's gap, the steps, what averaging predicts) and each one's share of F1's gap."""
    total = estimates[TOTAL]
    shares = {share_name(n): combine(np.divide, e, total) for n, e in estimates.items() if n != TOTAL}
    return {**estimates, **shares}


def dataset_split(cd: CurveDraws, dataset: str, *, stat: str = NUCLEAR) -> dict[str, Estimate] | None:
    """F1's gap and its four steps on the instructions every condition holds (and, in the Frobenius
    norm, what averaging alone predicts of the last step), without shares; None where a condition
    is not stored or they share no instruction."""
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
    out |= {s.name: combine(np.subtract, levels[s.fast], levels[s.slow]) for s in STEPS}
    predicted = _predicted(cd, dataset, found[0]) if stat == FROBENIUS else None
    if predicted is not None:
        out[PREDICTED] = predicted
    return out


def opposite_sides(by_dataset: Mapping[str, Estimate]) -> str:
    """Where datasets lie on opposite sides of 0, each one's value and instructions ('' if not)."""
    values = {d: e.value for d, e in by_dataset.items() if np.isfinite(e.value)}
    if not (any(v > 0 for v in values.values()) and any(v < 0 for v in values.values())):
        return ""
    each = ", ".join(f"{d} {values[d]:+.3g} ({by_dataset[d].n} instructions)" for d in values)
    return f"datasets on opposite sides of 0: {each}"


def model_rows(cd: CurveDraws, *, stat: str = NUCLEAR) -> tuple[list[Row], list[Dropped]]:
    """The rows of one model (datasets, then each family of two datasets or more) and what each
    condition dropped."""
    rows: list[Row] = []
    dropped: list[Dropped] = []
    by_dataset: dict[str, dict[str, Estimate]] = {}
    for dataset in cd.datasets():
        found = split_instructions(cd, dataset, stat=stat)
        if found is None:
            continue
        union = len(set().union(*(held_ids(cd, cd.condition_key(dataset, c), stat) or set() for c in CHAIN)))
        dropped += [Dropped(cd.model, dataset, c, n, union) for c, n in found[1].items()]
        split = dataset_split(cd, dataset, stat=stat)
        if split is not None:
            by_dataset[dataset] = split
            rows += [Row(cd.model, dataset, n, e) for n, e in with_shares(split).items()]
    for family in vocabulary.REASONING_FAMILIES:
        members = {d: s for d, s in by_dataset.items() if vocabulary.family_of(d) == family}
        if len(members) < 2:
            continue
        names = [n for n in ORDER if all(n in s for s in members.values())]
        means = {n: pooled([s[n] for s in members.values()]) for n in names}
        for name, estimate in with_shares({n: e for n, e in means.items() if e is not None}).items():
            note = opposite_sides({d: s[name] for d, s in members.items()}) if name in names else ""
            rows.append(Row(cd.model, family, name, estimate, pooled=True, note=note))
    return rows, dropped


def row_rank(row: Row) -> tuple[int, int]:
    """Families first, then datasets in the book's order; in each, F1's gap, the steps, the shares."""
    names = [*ORDER, *(share_name(n) for n in ORDER[1:])]
    return scope_rank(row.scope), names.index(row.step) if row.step in names else len(names)


def gap_split(draws: Mapping[str, CurveDraws], *, stat: str = NUCLEAR) -> Split:
    """The split of every model's datasets and families in ``stat`` (``STATS``), in the models' order."""
    if stat not in STATS:
        raise ValueError(f"the split is computed in {' or '.join(STATS)}, not {stat!r}")
    rows: list[Row] = []
    dropped: list[Dropped] = []
    for cd in draws.values():
        own, lost = model_rows(cd, stat=stat)
        rows += sorted(own, key=row_rank)
        dropped += lost
    return Split(stat, tuple(rows), tuple(dropped))


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
