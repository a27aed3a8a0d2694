"""F4: Instruction tuning does not sharpen how gradients tell irrelevant from correct responses."""

from __future__ import annotations

from analysis.checks.check_chapters import READING
from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.calibration import rule
from analysis.findings.rules import SAME_MARGIN_PERCENT, CheckId
from analysis.findings.scopes import PairCheck, Words

_MARGIN = SAME_MARGIN_PERCENT

CHECK = PairCheck(
    id=CheckId("F4"),
    paper=True,
    says=((roles.SIZE_EXCESS, "instruct no better than base"),),
    words=Words(
        holds="the instruct model separates correct from irrelevant no better than its base",
        fails="the instruct model separates them better than its base",
        unresolved="these instructions do not decide which model separates them better",
    ),
    plain="Instruction tuning does not sharpen how gradients tell irrelevant from correct responses",
    headline=roles.SIZE_RATIO,
    claim=(
        "The instruct model separates correct from irrelevant Detailed-CoT responses no better than its own base "
        "model: the size of its separation (root-mean-square over layers of the per-layer log ratio of geometric "
        f"means of nuclear norms, irrelevant over correct, whatever its direction) exceeds the base's by less than "
        f"{_MARGIN} (the signed ratios and the paper's mean nuclear norm shown beside)"
    ),
    parts=cp.f4_parts,
    chapters=READING,
    calibrated_by=(rule.NOT_BETTER,),
)
