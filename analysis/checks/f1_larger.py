"""F1: Fast thinking gives larger gradients than slow thinking, more so in early layers."""

from __future__ import annotations

import numpy as np

from analysis.checks.check_chapters import READING
from analysis.findings import averaging, roles
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.bootstrap import combine
from analysis.findings.calibration import rule
from analysis.findings.check_parts import all_known
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import (
    log_gap,
    mean_early_late,
    mean_gap,
)
from analysis.findings.rules import CheckId, Part, Unit, beside
from analysis.findings.scopes import Inputs, LayerSplit, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition


def f1_parts(context: DatasetContext) -> list[Part] | None:
    """F1: None over Detailed CoT (geometric mean of nuclear norms, all layers) > 1, and that ratio
    larger early than late."""
    cd, dataset = context.curves, context.dataset
    gaps = all_known({seg: log_gap(cd, dataset, "none", "detailed", segment=seg) for seg in ("all", "early", "late")})
    if gaps is None:
        return None
    parts = [
        Part(
            name="None / Detailed (all layers)",
            estimate=gaps["all"],
            side="above",
            bound=0.0,
            unit=Unit.RATIO,
            role=roles.F1_GAP,
            decides=True,
        ),
        Part(
            name="early / late of that ratio",
            estimate=combine(np.subtract, gaps["early"], gaps["late"]),
            side="above",
            bound=0.0,
            unit=Unit.RATIO,
            role=roles.EARLY_LATE,
            decides=True,
        ),
    ]
    return parts + [
        beside(parts[0], mean_gap(cd, dataset, "none", "detailed")),
        beside(parts[1], mean_early_late(cd, dataset, "none", "detailed")),
    ]


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
    parts=f1_parts,
    chapters=READING,
    layer_split=LayerSplit(averaging.F1_CONTRAST, "None CoT - Detailed CoT, correct responses"),
    calibrated_by=(rule.GAP,),
    battery=Fixture(
        verdicts=DECIDING,
        needs="None and Detailed CoT",
        truth=lambda: _inputs(gap=0.5, early=0.4),
        falsity=lambda: _inputs(gap=-0.5, early=-0.4),
        missing=lambda: model_inputs({"detailed/correct": Condition()}),
    ),
)


def _inputs(*, gap: float, early: float = 0.0) -> Inputs:
    """None CoT's log level ``gap`` above Detailed CoT's, ``early`` more in the early layers."""
    return model_inputs(
        {"none/correct": Condition(curve=lambda layers: gap + early * (layers < 4)), "detailed/correct": Condition()}
    )
