"""L: Content matters beyond length: a Detailed CoT cut to the Simplified length still gives smaller gradients."""

from __future__ import annotations

from analysis.checks.check_chapters import LENGTH
from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.calibration import rule
from analysis.findings.rules import NOT_APPLICABLE, CheckId
from analysis.findings.scopes import Inputs, PartFigure, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition

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
    falsity=lambda: _inputs(simplified=0.7, cut=1.2),
    missing=lambda: _inputs(simplified=-0.5, cut=-0.25),
)
