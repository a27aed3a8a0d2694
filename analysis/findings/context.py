"""A5: reasoning or context? After a long chain the same answer tokens have a different gradient
(A2); is that the reasoning, or any long text before the answer?

Two controls keep the answer, the phrase before it and a text of the chain's length, and take away
the reasoning: the instruction's own Detailed CoT with its words shuffled (the same words, no order:
``data.AnswerView.shuffled``), and another instruction's Detailed CoT (``other_instruction``). A5
claims that the context, not the reasoning, makes the difference: the answer's gradient after its
own chain is nearly the same as after either control, each paired log ratio (geometric mean of
nuclear norms over the instructions both hold) within the margin of "nearly the same"
(``rules.SAME_MARGIN``, two one-sided tests). Where it does not hold, the chain's order or content
matters beyond its length and words. A2's own gap is shown beside.
"""

from __future__ import annotations

from analysis.findings import roles
from analysis.findings.roles import Role
from analysis.findings.rules import SAME_MARGIN, Part, Unit
from analysis.findings.same_tokens import DETAILED, NONE, OTHER, SHUFFLED, answer_gap

ORDER = Role("the answer's gradient after its own chain over after the same words shuffled (A5)")
FOREIGN = Role("the answer's gradient after its own chain over after another instruction's chain (A5)")

ORDER_PART = "own Detailed CoT / its words shuffled, on the answer tokens"
FOREIGN_PART = "own Detailed CoT / another instruction's, on the answer tokens"
A2_PART = "A2: None / Detailed on the answer tokens"


def a5_parts(cd, dataset: str, **_) -> list[Part] | None:
    """A5: the answer's gradient after its own chain over after its shuffled words, and over after
    another instruction's chain, each within the margin; A2's gap shown beside. None where a control
    is not stored."""
    order, foreign = answer_gap(cd, dataset, DETAILED, SHUFFLED), answer_gap(cd, dataset, DETAILED, OTHER)
    if order is None or foreign is None:
        return None
    parts = [
        Part(ORDER_PART, order, "within", SAME_MARGIN, Unit.RATIO, role=ORDER),
        Part(FOREIGN_PART, foreign, "within", SAME_MARGIN, Unit.RATIO, role=FOREIGN),
    ]
    gap = answer_gap(cd, dataset, NONE, DETAILED)
    if gap is not None:
        parts.append(Part(A2_PART, gap, "above", 0.0, Unit.RATIO, role=roles.SAME_TOKEN_GAP, decides=False))
    return parts
