"""A3: S's reasoning step holds also at equal answer loss."""

from __future__ import annotations

from analysis.checks.check_chapters import GAP
from analysis.findings import roles, same_tokens
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.calibration import rule
from analysis.findings.rules import NOT_APPLICABLE, CheckId
from analysis.findings.scopes import Inputs, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition

CHECK = PerModelCheck(
    id=CheckId("A3"),
    lead=2,
    says=((roles.EQUAL_LOSS_GAP, "smaller at equal answer loss"),),
    words=Words(
        holds="at equal answer loss the answer's gradient is still smaller after the reasoning",
        fails="at equal answer loss the answer's gradient is not smaller after the reasoning",
        unresolved="these instructions do not decide the gap at equal answer loss",
    ),
    plain="S's reasoning step holds also at equal answer loss",
    headline=roles.EQUAL_LOSS_GAP,
    claim=(
        "S's reasoning step beyond the answer's loss: where the answer is as predictable after the Detailed CoT as without it, "
        "the answer's gradient is still larger without reasoning (the intercept of the paired regression of "
        "the answer tokens' log nuclear-norm gap (phrase alone over Detailed CoT) on the gap in the answer tokens' mean log(1 - p), its interval with the "
        "n - 2 degrees of freedom of a line; no verdict where the resamples leave the line undetermined)"
    ),
    parts=same_tokens.a3_parts,
    chapters=GAP,
    calibrated_by=(rule.EQUAL_LOSS,),
    reads=same_tokens.READS,
    note=same_tokens.extrapolation_note,
    gate=same_tokens.line_determined,
)

_LOSSES = {same_tokens.LOG_MISS: -1.0, same_tokens.LOSS: 2.0}


def _inputs(*, gap: float, losses: bool = True) -> Inputs:
    """The answer's log level ``gap`` higher without reasoning than after the Detailed CoT, whatever
    its loss (drawn per sample around the same mean in both; none stored unless ``losses``)."""
    stats = _LOSSES if losses else {}
    settings = {
        f"{same_tokens.NONE}/correct": Condition(curve=gap, stats=stats),
        f"{same_tokens.DETAILED}/correct": Condition(stats=stats),
    }
    return model_inputs(settings, sample_stats=same_tokens.READS)


BATTERY = Fixture(
    verdicts=DECIDING | {NOT_APPLICABLE},
    needs="the answer scored alone with and without reasoning, and its loss",
    truth=lambda: _inputs(gap=0.5),
    falsity=lambda: _inputs(gap=-0.5),
    missing=lambda: _inputs(gap=0.5, losses=False),
)
