"""A3: S's reasoning step holds also at equal answer loss."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.checks.check_chapters import GAP_CHAPTERS
from analysis.findings import roles, same_tokens
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.bootstrap import Estimate, resampled_mean
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.regression import equal_loss_regression
from analysis.findings.rules import NOT_APPLICABLE, CheckId, NotApplicable, Note, NoteKind, Part, Unit, Why
from analysis.findings.same_tokens import (
    A3_PART,
    DETAILED,
    LOSS,
    NONE,
    covariate_gaps,
    per_instruction,
)
from analysis.findings.scopes import Inputs, PerModelCheck, Section, Words
from analysis.findings.simulated_samples import Condition

SLOPE_PART = "slope: log nuclear gap per unit of the log(1 - p) gap"
LOSS_PARTS = {NONE: "answer loss after the phrase alone", DETAILED: "answer loss after Detailed CoT"}
LOSS_CHANGE_PART = "answer loss, after Detailed CoT - after the phrase alone"
# Where more than this share of resamples leave the line undetermined, A3 has no verdict.
UNDETERMINED_SHARE = 0.10


def _mean(values: np.ndarray, weights: np.ndarray, dataset: str) -> Estimate:
    return Estimate(
        float(values.mean()), resampled_mean(values[:, None], weights)[:, 0], ((dataset, int(values.size)),)
    )


def a3_parts(context: DatasetContext) -> list[Part] | None:
    """A3: the reasoning step's gap where the answer is equally predictable (the paired regression's
    intercept) > 1;
    beside it the slope, each condition's mean answer loss and their difference."""
    cd, dataset = context.curves, context.dataset
    gaps = covariate_gaps(cd, dataset)
    if gaps is None or gaps[0].size < 3:
        return None
    ids, y, x = gaps
    weights = cd.resampling.weights(dataset, ids)
    intercept, slope = equal_loss_regression(y, x, weights, dataset)
    losses = {s: per_instruction(cd, cd.condition_key(dataset, s), LOSS, ids) for s in (NONE, DETAILED)}
    loss = {s: _mean(losses[s], weights, dataset) for s in (NONE, DETAILED)}
    change = _mean(losses[DETAILED] - losses[NONE], weights, dataset)
    return [
        Part(
            name=A3_PART,
            estimate=intercept,
            side="above",
            bound=0.0,
            unit=Unit.RATIO,
            role=roles.EQUAL_LOSS_GAP,
            decides=True,
        ),
        Part(name=SLOPE_PART, estimate=slope, side="above", bound=0.0, role=roles.SLOPE, decides=False),
        Part(
            name=LOSS_PARTS[NONE],
            estimate=loss[NONE],
            side="above",
            bound=0.0,
            unit=Unit.LOSS,
            role=roles.ANSWER_LOSS,
            facet=(NONE,),
            decides=False,
        ),
        Part(
            name=LOSS_PARTS[DETAILED],
            estimate=loss[DETAILED],
            side="above",
            bound=0.0,
            unit=Unit.LOSS,
            role=roles.ANSWER_LOSS,
            facet=(DETAILED,),
            decides=False,
        ),
        Part(
            name=LOSS_CHANGE_PART,
            estimate=change,
            side="above",
            bound=0.0,
            unit=Unit.LOSS,
            role=roles.ANSWER_LOSS_CHANGE,
            decides=False,
        ),
    ]


def line_determined(parts: Sequence[Part]) -> NotApplicable | None:
    """Why A3 has no verdict where its line is not determined (None where it is): more than
    ``UNDETERMINED_SHARE`` of the resamples spread the answer-loss gaps too little to fit a line
    (``weighted_intercepts``), or none was fitted."""
    intercept = next((p for p in parts if p.role is roles.EQUAL_LOSS_GAP), None)
    if intercept is None or intercept.estimate is None:
        return None
    draws = np.asarray(intercept.estimate.draws, dtype=float)
    share = float(np.mean(~np.isfinite(draws))) if draws.size else 1.0
    if share <= UNDETERMINED_SHARE and np.isfinite(intercept.value):
        return None
    return NotApplicable(
        Why.UNDETERMINED,
        "the line is not determined",
        f"in {share:.0%} of the resamples the answer-loss gaps are (nearly) all equal, so no line is fitted",
    )


def extrapolation_note(contexts: Sequence[DatasetContext]) -> Note | None:
    """A3's note: the datasets where every instruction's answer is more (or every one less)
    predictable after the Detailed CoT, so that equal loss lies outside what was observed."""
    one_sided = []
    for c in contexts:
        gaps = covariate_gaps(c.curves, c.dataset)
        if gaps is not None and gaps[2].size and (gaps[2].min() > 0 or gaps[2].max() < 0):
            one_sided.append(c.dataset)
    if not one_sided:
        return None
    return Note(
        NoteKind.EXTRAPOLATION,
        f"On {', '.join(one_sided)} the answer's log(1 - p) gap has one sign for every instruction: the "
        "intercept (equal answer loss) lies outside the gaps observed, an extrapolation of the line",
        tuple(one_sided),
    )


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
    parts=a3_parts,
    chapters=GAP_CHAPTERS,
    calibrated_by=(rule.EQUAL_LOSS,),
    reads=same_tokens.READS,
    note=extrapolation_note,
    gate=line_determined,
    section=Section(
        title="At equal answer loss.",
        intro=(
            "{id} asks whether the reasoning step survives where the answer is as predictable after the Detailed "
            "CoT as without it: the intercept of the paired line of the gap on the answer's loss."
        ),
        lead="The answer's gradient without reasoning over that after the Detailed CoT, at equal answer loss",
        notes=(NoteKind.EXTRAPOLATION,),
        columns=(
            ("at equal answer loss", roles.EQUAL_LOSS_GAP, None),
            ("answer loss, no reasoning", roles.ANSWER_LOSS, (same_tokens.NONE,)),
            ("answer loss, after Detailed CoT", roles.ANSWER_LOSS, (same_tokens.DETAILED,)),
        ),
        empty="{id} not computed: the store holds no answer-scored pair.",
    ),
    battery=Fixture(
        verdicts=DECIDING | {NOT_APPLICABLE},
        needs="the answer scored alone with and without reasoning, and its loss",
        truth=lambda: _inputs(gap=0.5),
        falsity=lambda: _inputs(gap=-0.5),
        missing=lambda: _inputs(gap=0.5, losses=False),
    ),
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
