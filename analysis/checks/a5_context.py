"""A5: reasoning or context? Its roles, its parts (``a5_parts``) and its registry entry (``CHECK``).

After a long chain the same answer tokens have a different gradient (S's reasoning step); is that the reasoning,
or any long text before the answer?

Two controls keep the answer, the phrase before it and a text of the chain's length, and take away
the reasoning: the instruction's own Detailed CoT with its words shuffled (the same words, no order:
``data.AnswerView.shuffled``), and another instruction's Detailed CoT (``other_instruction``). A5
claims that the context, not the reasoning, makes the difference: the answer's gradient after its
own chain is nearly the same as after either control, each paired log ratio (geometric mean of
nuclear norms over the instructions both hold) within the margin of "nearly the same"
(``rules.SAME_MARGIN``, two one-sided tests). Where it does not hold, the chain's order or content
matters beyond its length and words. The reasoning step's own gap is shown beside.
"""

from __future__ import annotations

from analysis.checks.check_chapters import GAP_CHAPTERS
from analysis.findings import roles, same_tokens
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.roles import Role
from analysis.findings.rules import SAME_MARGIN, SAME_MARGIN_PERCENT, CheckId, Part, Unit
from analysis.findings.same_tokens import DETAILED, NONE, OTHER, SHUFFLED, answer_gap
from analysis.findings.scopes import Inputs, PerModelCheck, Section, Words
from analysis.findings.simulated_samples import Condition, SampleDesign

ORDER = Role("the answer's gradient after its own chain over after the same words shuffled")
FOREIGN = Role("the answer's gradient after its own chain over after another instruction's chain")

ORDER_PART = "own Detailed CoT / its words shuffled, on the answer tokens"
FOREIGN_PART = "own Detailed CoT / another instruction's, on the answer tokens"
REASONING_PART = "the reasoning step: None / Detailed on the answer tokens"


def a5_parts(context: DatasetContext) -> list[Part] | None:
    """A5: the answer's gradient after its own chain over after its shuffled words, and over after
    another instruction's chain, each within the margin; the reasoning step shown beside. None where a control
    is not stored."""
    cd, dataset = context.curves, context.dataset
    order, foreign = answer_gap(cd, dataset, DETAILED, SHUFFLED), answer_gap(cd, dataset, DETAILED, OTHER)
    if order is None or foreign is None:
        return None
    parts = [
        Part(
            name=ORDER_PART, estimate=order, side="within", bound=SAME_MARGIN, unit=Unit.RATIO, role=ORDER, decides=True
        ),
        Part(
            name=FOREIGN_PART,
            estimate=foreign,
            side="within",
            bound=SAME_MARGIN,
            unit=Unit.RATIO,
            role=FOREIGN,
            decides=True,
        ),
    ]
    gap = answer_gap(cd, dataset, NONE, DETAILED)
    if gap is not None:
        parts.append(
            Part(
                name=REASONING_PART,
                estimate=gap,
                side="above",
                bound=0.0,
                unit=Unit.RATIO,
                role=roles.REASONING_STEP,
                decides=False,
            )
        )
    return parts


_MARGIN = SAME_MARGIN_PERCENT

CHECK = PerModelCheck(
    id=CheckId("A5"),
    plain="The answer's gradient after its own chain is nearly what the same words shuffled, or another chain, give",
    lead=2,
    headline=ORDER,
    says=(
        (ORDER, "nearly the same as after its words shuffled"),
        (FOREIGN, "nearly the same as after another chain"),
    ),
    words=Words(
        holds="any long context of the chain's words does what the reasoning does: the context, not the reasoning",
        fails="the chain's order or content changes the answer's gradient beyond its words and length",
        unresolved="these instructions do not tell the reasoning's effect from the context's",
    ),
    claim=(
        "S's reasoning step against its controls: scoring only the final answer after the same phrase, its gradient after the "
        "instruction's own Detailed CoT is nearly the same as after the same words shuffled and as after "
        "another instruction's Detailed CoT (each paired log ratio of nuclear norms, geometric mean over the "
        f"instructions both hold, within {_MARGIN}: two one-sided tests); the reasoning step's gap shown beside"
    ),
    parts=a5_parts,
    chapters=GAP_CHAPTERS,
    calibrated_by=(rule.WITHIN,),
    section=Section(
        title="Reasoning or context?",
        intro=(
            "{id} asks whether the answer's gradient after its own chain is the reasoning's doing or any long "
            "text's: the same answer after the chain's words shuffled, and after another instruction's chain."
        ),
        lead="The answer after its own chain over after the same words shuffled",
        columns=(
            ("own chain / its words shuffled", ORDER, None),
            ("own chain / another instruction's", FOREIGN, None),
        ),
        empty="{id} not computed: this run stores no shuffled chain.",
    ),
    reads=same_tokens.READS,
    battery=Fixture(
        verdicts=DECIDING,
        needs="the answer scored after its chain shuffled and after another chain",
        truth=lambda: _inputs(shuffled=0.0, other=0.0),
        falsity=lambda: _inputs(shuffled=-0.8, other=0.0),
        missing=lambda: _inputs(shuffled=0.0, other=0.0, controls=False),
    ),
)


def _inputs(*, shuffled: float, other: float, controls: bool = True) -> Inputs:
    """The answer's log level after its own chain, ``shuffled`` and ``other`` above it after the
    chain's words shuffled and after another instruction's chain (no controls unless ``controls``);
    quiet samples, many instructions: "nearly the same" needs a tight interval."""
    levels = {DETAILED: 0.0, NONE: 0.5, **({SHUFFLED: shuffled, OTHER: other} if controls else {})}
    settings = {f"{s}/correct": Condition(curve=level) for s, level in levels.items()}
    return model_inputs(settings, design=SampleDesign(n=60, sample_sd=0.05), sample_stats=same_tokens.READS)
