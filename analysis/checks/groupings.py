"""The groups of checks that a page answers together, declared beside the checks so that the report
names no check by hand: it reads these groups, the registry's fields (the first page's lead groups
are each check's ``lead``; a check's own section, chain and layer split are its declarations) and
nothing else of the checks."""

from __future__ import annotations

from analysis.checks import g1_beyond_loss, l2_length, l_content
from analysis.findings.rules import CheckId

LENGTH_CHECKS: tuple[CheckId, ...] = (l_content.CHECK.id, l2_length.CHECK.id)  # the length question, answered together
# the checks that decide on loss-matched pairs, which a run's loss screen finds: beyond the loss (G1)
GAP_SOURCES: tuple[CheckId, ...] = (g1_beyond_loss.CHECK.id,)
