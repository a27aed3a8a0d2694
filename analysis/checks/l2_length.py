"""L2: Length matters: cutting a Detailed CoT to the Simplified length gives larger gradients."""

from __future__ import annotations

from analysis.checks.check_chapters import LENGTH
from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.battery import length_fixture
from analysis.findings.calibration import rule
from analysis.findings.rules import CheckId
from analysis.findings.scopes import PerModelCheck, Words

CHECK = PerModelCheck(
    id=CheckId("L2"),
    says=((roles.LENGTH, "larger when cut"),),
    words=Words(
        holds="cutting a Detailed CoT to the Simplified length makes its gradients larger",
        fails="cutting a Detailed CoT does not make its gradients larger",
        unresolved="these instructions do not decide what cutting does",
    ),
    plain="Length matters: cutting a Detailed CoT to the Simplified length gives larger gradients",
    headline=roles.LENGTH,
    claim=(
        "Length matters: Detailed CoT cut to the Simplified-CoT length gives larger nuclear norms (geometric "
        "mean; the paper's mean nuclear norm shown beside) than the full Detailed CoT, where the Simplified vs "
        "Detailed gap is established"
    ),
    parts=cp.length_effect_parts,
    chapters=LENGTH,
    calibrated_by=(rule.GAP,),
    after_pooling=cp.with_share,
    gate=cp.gap_established,
    battery=length_fixture(cut_if_false=-0.5),
)
