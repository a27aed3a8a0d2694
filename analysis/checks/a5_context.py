"""A5: The answer's gradient after its own chain is nearly what the same words shuffled, or another chain, give."""

from __future__ import annotations

from analysis.checks.check_chapters import GAP
from analysis.findings import context, same_tokens
from analysis.findings.calibration import rule
from analysis.findings.rules import SAME_MARGIN_PERCENT, CheckId
from analysis.findings.scopes import PerModelCheck, Words

_MARGIN = SAME_MARGIN_PERCENT

CHECK = PerModelCheck(
    id=CheckId("A5"),
    plain="The answer's gradient after its own chain is nearly what the same words shuffled, or another chain, give",
    lead=2,
    headline=context.ORDER,
    says=(
        (context.ORDER, "nearly the same as after its words shuffled"),
        (context.FOREIGN, "nearly the same as after another chain"),
    ),
    words=Words(
        holds="any long context of the chain's words does what the reasoning does: the context, not the reasoning",
        fails="the chain's order or content changes the answer's gradient beyond its words and length",
        unresolved="these instructions do not tell the reasoning's effect from the context's",
    ),
    claim=(
        "A2 against its controls: scoring only the final answer after the same phrase, its gradient after the "
        "instruction's own Detailed CoT is nearly the same as after the same words shuffled and as after "
        "another instruction's Detailed CoT (each paired log ratio of nuclear norms, geometric mean over the "
        f"instructions both hold, within {_MARGIN}: two one-sided tests); A2's gap shown beside"
    ),
    parts=context.a5_parts,
    chapters=GAP,
    calibrated_by=(rule.WITHIN,),
    reads=same_tokens.READS,
)
