"""A4: Scoring as few Detailed-CoT tokens as its answer has reproduces at least half of F1's gap."""

from __future__ import annotations

from analysis.checks.check_chapters import GAP
from analysis.findings import scored_tokens
from analysis.findings.calibration import rule
from analysis.findings.rules import SAME_MARGIN_PERCENT, CheckId
from analysis.findings.scopes import PerModelCheck, Words

_MARGIN = SAME_MARGIN_PERCENT

CHECK = PerModelCheck(
    id=CheckId("A4"),
    plain="Scoring as few Detailed-CoT tokens as its answer has reproduces at least half of F1's gap",
    lead=1,
    headline=scored_tokens.F1_SHARE,
    says=(
        (scored_tokens.SUBSET_GAP, "larger with fewer tokens scored"),
        (scored_tokens.F1_SHARE, "at least half of F1's gap"),
    ),
    words=Words(
        holds="scoring fewer tokens of the same text reproduces most of F1's gap",
        fails="scoring fewer tokens of the same text reproduces less than half of F1's gap",
        unresolved="these instructions do not decide how much of F1's gap scoring fewer tokens reproduces",
    ),
    claim=(
        "F1 on the same text: scoring a seeded random subset of the Detailed CoT's response tokens, as many "
        "as its answer has after the Detailed CoT and the phrase, gives larger nuclear norms than scoring all of them "
        "(geometric mean over the instructions the conditions share, paired), and that log gap is at least "
        f"{scored_tokens.SHARE_MARGIN:.0%} of F1's (None over Detailed CoT on the same instructions)"
    ),
    parts=scored_tokens.a4_parts,
    chapters=GAP,
    calibrated_by=(rule.GAP, rule.GAP_SHARE),
    reads=scored_tokens.READS,
)
