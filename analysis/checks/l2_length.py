"""L2: Length matters: cutting a Detailed CoT to the Simplified length gives larger gradients."""

from __future__ import annotations

from analysis.checks.check_chapters import LENGTH
from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.calibration import rule
from analysis.findings.rules import NOT_APPLICABLE, CheckId
from analysis.findings.scopes import Inputs, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition

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
)


def _inputs(*, simplified: float, cut: float) -> Inputs:
    """Simplified CoT and Detailed CoT cut to its length ``simplified`` and ``cut`` above the full
    Detailed CoT in log level."""
    levels = {"simplified": simplified, "detailed": 0.0, "detailed_cut_simplified": cut}
    return model_inputs({f"{s}/correct": Condition(curve=level) for s, level in levels.items()})


BATTERY = Fixture(
    verdicts=DECIDING | {NOT_APPLICABLE},
    needs="a Simplified vs Detailed gap, established",
    truth=lambda: _inputs(simplified=0.7, cut=0.35),
    falsity=lambda: _inputs(simplified=0.7, cut=-0.5),
    missing=lambda: _inputs(simplified=-0.5, cut=-0.25),
)
