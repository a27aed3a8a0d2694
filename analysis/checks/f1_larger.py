"""F1: Fast thinking gives larger gradients than slow thinking, more so in early layers."""

from __future__ import annotations

from analysis.checks.check_chapters import READING
from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId
from analysis.findings.scopes import PerModelCheck, Words

CHECK = PerModelCheck(
    id=CheckId("F1"),
    paper=True,
    lead=1,
    says=((roles.F1_GAP, "larger"), (roles.EARLY_LATE, "more so in early layers")),
    words=Words(
        holds="None CoT gives larger gradients than Detailed CoT, more so in the early layers",
        fails="None CoT's gradients are not larger, or not more so in the early layers",
        unresolved="these instructions do not decide whether None CoT's gradients are larger, more so early",
    ),
    plain="Fast thinking gives larger gradients than slow thinking, more so in early layers",
    headline=roles.F1_GAP,
    claim=(
        "None CoT gives larger nuclear norms (geometric mean over instructions; the paper's mean nuclear norm "
        "shown beside) than Detailed CoT, and the gap is larger in the early layers than in the late ones"
    ),
    parts=cp.f1_parts,
    chapters=READING,
    calibrated_by=(rule.GAP,),
)
