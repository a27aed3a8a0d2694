"""A2: On the answer tokens alone, reasoning before them makes their gradient smaller."""

from __future__ import annotations

from analysis.checks.check_chapters import GAP
from analysis.findings import roles, same_tokens
from analysis.findings.battery import NotInBattery
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId
from analysis.findings.scopes import PerModelCheck, Words

CHECK = PerModelCheck(
    id=CheckId("A2"),
    lead=2,
    says=((roles.SAME_TOKEN_GAP, "smaller after reasoning"), (roles.EARLY_LATE, "more so in early layers")),
    words=Words(
        holds="the answer's gradient is smaller after the reasoning, more so in the early layers",
        fails="the answer's gradient is not smaller after the reasoning, or not more so early",
        unresolved="these instructions do not decide how reasoning changes the answer's gradient",
    ),
    plain="On the answer tokens alone, reasoning before them makes their gradient smaller",
    headline=roles.SAME_TOKEN_GAP,
    claim=(
        "F1 on the same tokens: scoring only the final answer, after the same phrase, the answer's gradient "
        "without reasoning has larger nuclear norms than after the Detailed CoT (geometric mean over the "
        "instructions both hold, paired), and that ratio is larger in the early layers than in the late ones"
    ),
    parts=same_tokens.a2_parts,
    chapters=GAP,
    calibrated_by=(rule.GAP,),
    reads=same_tokens.READS,
)

BATTERY = NotInBattery("retired by the split of F1's gap into its steps (its own issue): no new fixture")
