"""The groups of checks that a page answers together, declared beside the checks so that the report
names no check by hand: it reads these groups, the registry's fields (the first page's lead groups
are each check's ``lead``) and what each check's module exports (``a5_context.CHECK.id``)."""

from __future__ import annotations

from analysis.checks import (
    a3_equal_loss,
    a5_context,
    f1_larger,
    f3_irrelevant,
    g1_beyond_loss,
    l2_length,
    l_content,
    s_gap_split,
)
from analysis.findings.rules import CheckId

LENGTH_CHECKS: tuple[CheckId, ...] = (l_content.CHECK.id, l2_length.CHECK.id)  # the length question, answered together
# the answer's own tokens scored alone (S's reasoning step) and at equal answer loss (A3), in one
# section and one table
ANSWER_TOKENS: tuple[CheckId, ...] = (s_gap_split.CHECK.id, a3_equal_loss.CHECK.id)
# the controls on the reasoning step beyond the answer's loss: a context without the reasoning (A5)
CONTROLS: tuple[CheckId, ...] = (a5_context.CHECK.id,)
# where the gaps come from in the gap chapter's words: beyond the loss (G1)
GAP_SOURCES: tuple[CheckId, ...] = (g1_beyond_loss.CHECK.id,)
# the checks whose gap the gap chapter splits per layer into the log nuclear norm's terms
SPLIT_GAPS: tuple[CheckId, ...] = (f1_larger.CHECK.id, f3_irrelevant.CHECK.id)
