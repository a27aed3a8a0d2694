"""L: Content matters beyond length: a Detailed CoT cut to the Simplified length still gives smaller gradients."""

from __future__ import annotations

from analysis.checks.check_chapters import LENGTH
from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.battery import length_fixture
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId
from analysis.findings.scopes import PartFigure, PerModelCheck, Words

LENGTH_FIGURE = PartFigure(
    roles.SHARE,
    "share of the Simplified vs Detailed gap left at equal length",
    "Length: share of the Simplified vs Detailed gap left at equal length, with intervals",
    "No Simplified vs Detailed gap is established here, so no share is shown.",
)

CHECK = PerModelCheck(
    id=CheckId("L"),
    says=((roles.CONTENT, "smaller at equal length"),),
    words=Words(
        holds="a Detailed CoT cut to the Simplified length still gives smaller gradients",
        fails="at equal length the Detailed CoT's gradients are not smaller",
        unresolved="these instructions do not decide the gap at equal length",
    ),
    plain="Content matters beyond length: a Detailed CoT cut to the Simplified length still gives smaller gradients",
    headline=roles.CONTENT,
    claim=(
        "Content matters beyond length: Detailed CoT cut to the Simplified-CoT length still gives smaller "
        "nuclear norms (geometric mean; the paper's mean nuclear norm shown beside) than Simplified CoT, where the "
        "Simplified vs Detailed gap is established"
    ),
    parts=cp.length_parts,
    chapters=LENGTH,
    calibrated_by=(rule.GAP,),
    figure=LENGTH_FIGURE,
    after_pooling=cp.with_share,
    gate=cp.gap_established,
    battery=length_fixture(cut_if_false=1.2),
)
