"""F3: Slow thinking, not fast, gives irrelevant responses larger gradients than correct ones."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.checks.check_chapters import READING
from analysis.findings import averaging, roles
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.calibration import rule
from analysis.findings.check_parts import nearly_same
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import (
    log_rd,
    log_rd_mean_square,
    mean_rd,
)
from analysis.findings.rules import SAME_MARGIN, SAME_MARGIN_PERCENT, CheckId, Note, NoteKind, Part, Unit, beside
from analysis.findings.scopes import Inputs, LayerSplit, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition, SampleDesign

_MARGIN = SAME_MARGIN_PERCENT

# "Nearly the same" curves under None CoT (``check_parts.nearly_same``)
NONE_SAME = "None root-mean-square per-layer irrelevant / correct"


def f3_parts(context: DatasetContext) -> list[Part] | None:
    """F3: Detailed irrelevant / correct > 1 + margin (clearly different, irrelevant larger); under
    None CoT the root-mean-square over layers of the per-layer log ratio within the margin
    (``nearly_same``; identical pairs left out), its signed mean over layers shown beside."""
    cd, dataset, identical = context.curves, context.dataset, context.identical
    detailed = log_rd(cd, dataset, "detailed")
    none = log_rd(cd, dataset, "none", excluded=identical)
    size = log_rd_mean_square(cd, dataset, "none", excluded=identical)
    if detailed is None or none is None:
        return None
    parts = [
        Part(
            name="Detailed irrelevant / correct",
            estimate=detailed,
            side="above",
            bound=SAME_MARGIN,
            unit=Unit.RATIO,
            role=roles.F3_GAP,
            decides=True,
        ),
        nearly_same(NONE_SAME, size, role=roles.NONE_SAME),
        Part(
            name="None irrelevant / correct",
            estimate=none,
            side="within",
            bound=SAME_MARGIN,
            unit=Unit.RATIO,
            role=roles.NONE_RD,
            decides=False,
        ),
    ]
    return parts + [
        beside(parts[0], mean_rd(cd, dataset, "detailed")),
        beside(parts[2], mean_rd(cd, dataset, "none", excluded=identical)),
    ]


def identical_note(contexts: Sequence[DatasetContext]) -> Note | None:
    """Says how many stored None-CoT pairs were left out as one input twice, per dataset (None when none)."""
    counted = {}
    for c in contexts:
        key = (c.curves.condition_key(c.dataset, "none"), "q", "nuclear_norm")
        if key in c.curves.samples:
            counted[c.dataset] = len(set(c.curves.samples[key][1].tolist()) & set(c.identical))
    left_out = {d: n for d, n in counted.items() if n}
    if not left_out:
        return None
    listed = ", ".join(f"{d} {n}" for d, n in left_out.items())
    return Note(
        NoteKind.IDENTICAL_LEFT_OUT,
        f"None |RD| leaves out instructions whose irrelevant answer equals the correct one: {listed}",
        tuple(left_out),
    )


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
    parts=f3_parts,
    chapters=READING,
    layer_split=LayerSplit(averaging.F3_CONTRAST, "irrelevant - correct responses, Detailed CoT"),
    calibrated_by=(rule.GAP, rule.SAME),
    note=identical_note,
    battery=Fixture(
        verdicts=DECIDING,
        needs="correct and irrelevant responses under None and Detailed CoT",
        truth=lambda: _inputs(detailed=0.6),
        falsity=lambda: _inputs(detailed=0.0),
        missing=lambda: model_inputs({"none/correct": Condition(), "detailed/correct": Condition()}),
    ),
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
