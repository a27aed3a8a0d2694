"""F3: Slow thinking, not fast, gives irrelevant responses larger gradients than correct ones."""

from __future__ import annotations

from analysis.checks.check_chapters import READING
from analysis.findings import check_parts as cp
from analysis.findings import roles
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.calibration import rule
from analysis.findings.rules import SAME_MARGIN_PERCENT, CheckId
from analysis.findings.scopes import Inputs, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition, SampleDesign

_MARGIN = SAME_MARGIN_PERCENT

CHECK = PerModelCheck(
    id=CheckId("F3"),
    paper=True,
    lead=3,
    says=(
        (roles.F3_GAP, "irrelevant larger under Detailed CoT"),
        (roles.NONE_SAME, "nearly the same under None CoT"),
    ),
    words=Words(
        holds="under Detailed CoT irrelevant responses give larger gradients, under None CoT nearly the same",
        fails="the Detailed-CoT gap is too small, or the None-CoT curves differ",
        unresolved="these instructions do not decide the two settings' separations",
    ),
    plain="Slow thinking, not fast, gives irrelevant responses larger gradients than correct ones",
    headline=roles.F3_GAP,
    claim=(
        "Under Detailed CoT irrelevant responses give curves (geometric mean of nuclear norms; the paper's mean "
        f"nuclear norm shown beside) clearly larger than correct ones (by more than {_MARGIN}); under None CoT the "
        f"two curves are nearly the same (the root-mean-square over layers of the per-layer log ratio within {_MARGIN})"
    ),
    parts=cp.f3_parts,
    chapters=READING,
    calibrated_by=(rule.GAP, rule.SAME),
    note=cp.identical_note,
)


def _inputs(*, detailed: float) -> Inputs:
    """Irrelevant Detailed-CoT responses ``detailed`` above correct ones in log level; None CoT's
    alike (a quiet design: "nearly the same" needs a tight interval)."""
    return model_inputs(
        {
            "none/correct": Condition(),
            "none/irrelevant": Condition(),
            "detailed/correct": Condition(),
            "detailed/irrelevant": Condition(curve=detailed),
        },
        design=SampleDesign(sample_sd=0.05),
    )


BATTERY = Fixture(
    verdicts=DECIDING,
    needs="correct and irrelevant responses under None and Detailed CoT",
    truth=lambda: _inputs(detailed=0.6),
    falsity=lambda: _inputs(detailed=0.0),
    missing=lambda: model_inputs({"none/correct": Condition(), "detailed/correct": Condition()}),
)
