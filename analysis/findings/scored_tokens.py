"""A4: the same text scored two ways. Does scoring fewer tokens of the same Detailed CoT reproduce F1's gap?

F1 compares the gradient of a loss over a bare answer's 1-3 tokens with one over the hundreds of
tokens of a Detailed CoT: the text differs, and so does the number of tokens the loss averages
over. The scored-subset condition (``data.Condition.scored_reference``) keeps the instruction's own
Detailed-CoT text, read by the model exactly as before, and scores only a seeded random subset of
its response tokens, as many as the instruction's None-CoT response has: only the number of scored
tokens changes. If F1's gap were about how the model thinks, this would not move the gradient; if
it is the averaging over more tokens, it reproduces the gap.

- The gap: the subset's mean log nuclear norm over the all-token one's (geometric mean over the
  instructions the three conditions share, paired), above 0.
- The share of F1's log gap it reproduces: that log gap over F1's own (None over Detailed CoT, on
  the same instructions), above ``SHARE_MARGIN``: "at least half of F1's gap".
- Shown beside: F1's gap on these instructions, and what averaging alone predicts of the subset's
  gap in the Frobenius norm (1/2 log of the all-token over the subset's token count), where the
  store holds the token counts.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from analysis.findings import averaging, roles
from analysis.findings.bootstrap import CurveDraws, Estimate, combine
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import log_level
from analysis.findings.roles import Role
from analysis.findings.rules import Part, Unit
from analysis.findings.same_tokens import shared_instructions

SUBSET_GAP = Role("Detailed CoT scored on as many tokens as None CoT over scored on all of them (A4)")
F1_SHARE = Role("the share of F1's log gap that scoring fewer tokens of the same text reproduces (A4)")

SUBSET = "detailed_scored_none"  # Detailed CoT scored on as many of its tokens as None CoT's response has
NUCLEAR = "nuclear_norm"
SHARE_MARGIN = 0.5  # the claim: the subset reproduces at least half of F1's log gap

SUBSET_PART = "Detailed CoT scored on as many tokens as None CoT / on all its tokens"
SHARE_PART = "share of F1's log gap it reproduces"
F1_PART = "F1: None / Detailed CoT on these instructions"
AVERAGING_PART = "averaging alone: sqrt(R_all / R_subset), Frobenius norm"


def paired_levels(cd: CurveDraws, dataset: str, settings: Iterable[str]) -> dict[str, Estimate] | None:
    """Each setting's mean log nuclear norm on the instructions every one of them holds (None: a
    setting is not stored, or they share none)."""
    settings = tuple(settings)
    shared = shared_instructions(cd, dataset, settings, (NUCLEAR,))
    if shared is None or shared.size == 0:
        return None
    held = set()
    for setting in settings:
        key = (cd.condition_key(dataset, setting), "q", NUCLEAR)
        held |= set(cd.samples[key][1].tolist())
    excluded = held - set(shared.tolist())
    levels = {s: log_level(cd, dataset, s, excluded=excluded) for s in settings}
    return None if any(v is None for v in levels.values()) else levels  # type: ignore[return-value]


def _averaging(cd: CurveDraws, dataset: str) -> Estimate | None:
    """What averaging alone predicts of the subset's Frobenius gap: the gap in -1/2 log R."""
    subset, every = (averaging.log_terms(cd, cd.condition_key(dataset, s)) for s in (SUBSET, "detailed"))
    if subset is None or every is None:
        return None
    return averaging.term_contrast(cd, dataset, subset, every, term=averaging.AVERAGING)


def a4_parts(context: DatasetContext) -> list[Part] | None:
    """A4: the subset over the all-token Detailed CoT > 1, and the share of F1's log gap it
    reproduces > ``SHARE_MARGIN``; F1's gap and what averaging predicts shown beside."""
    cd, dataset = context.curves, context.dataset
    levels = paired_levels(cd, dataset, ("none", "detailed", SUBSET))
    if levels is None:
        return None
    gap = combine(np.subtract, levels[SUBSET], levels["detailed"])
    f1 = combine(np.subtract, levels["none"], levels["detailed"])
    parts = [
        Part(SUBSET_PART, gap, "above", 0.0, Unit.RATIO, role=SUBSET_GAP),
        Part(SHARE_PART, combine(np.divide, gap, f1), "above", SHARE_MARGIN, Unit.SHARE, role=F1_SHARE),
        Part(F1_PART, f1, "above", 0.0, Unit.RATIO, role=roles.F1_GAP, decides=False),
    ]
    predicted = _averaging(cd, dataset)
    if predicted is not None:
        parts.append(Part(AVERAGING_PART, predicted, "above", 0.0, Unit.RATIO, role=roles.AVERAGING, decides=False))
    return parts


READS = (averaging.FROBENIUS, averaging.TOKENS)  # for what averaging predicts, shown beside
