"""S: F1's gap split into four steps; its claim is the reasoning step's: reasoning before the answer
makes the answer's own gradient smaller.

On the instructions that hold all five conditions of the chain (``findings.gap_split``), F1's gap
in mean log nuclear norm is the sum of four steps: the phrase, the reasoning, which tokens, how many
tokens. The check's one deciding part is the reasoning step (the same answer tokens scored after the
phrase alone and after the Detailed CoT: the paper's reading, that slow thinking's reasoning itself
makes the gradient smaller, predicts it above 0). The other steps, F1's gap on these instructions
and the reasoning step's early over late layers are shown beside it, each with what its interval
decides (``gap_split.step_outcome``); so are the answer-token gaps after other contexts, in the
Frobenius norm and where the chain states the answer word for word (``same_tokens.reasoning_beside``).
"""

from __future__ import annotations

import numpy as np

from analysis.checks.check_chapters import GAP
from analysis.findings import averaging, gap_split, roles, same_tokens
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.bootstrap import CurveDraws, Estimate, combine
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import log_level
from analysis.findings.roles import Role
from analysis.findings.rules import CheckId, Part, Unit
from analysis.findings.scopes import Inputs, PerModelCheck, Words
from analysis.findings.simulated_samples import Condition

TOTAL = Role("F1's gap on the instructions that hold the split's five conditions (S)")
PHRASE = Role('the phrase step: the bare answer over the answer after "The final answer is " (S)')
WHICH_TOKENS = Role("the which-tokens step: the answer's tokens over as many tokens of the chain (S)")
HOW_MANY = Role("the how-many-tokens step: those few tokens over all of the chain's (S)")
STEP_ROLES = {  # the step of each part, in the chain's order
    gap_split.STEPS[0].name: PHRASE,
    gap_split.STEPS[1].name: roles.SAME_TOKEN_GAP,
    gap_split.STEPS[2].name: WHICH_TOKENS,
    gap_split.STEPS[3].name: HOW_MANY,
}
REASONING_PART = "the reasoning: the answer's tokens after the phrase alone / after the Detailed CoT"


def _early_late(cd: CurveDraws, dataset: str, ids: np.ndarray) -> Estimate | None:
    """The reasoning step's early-layer gap less its late-layer gap, on the split's instructions."""
    step = gap_split.STEPS[1]
    gaps = []
    for segment in ("early", "late"):
        levels = []
        for setting in (step.fast, step.slow):
            key = cd.condition_key(dataset, setting)
            stored = set(cd.samples[(key, "q", gap_split.NUCLEAR)][1].tolist())
            level = log_level(cd, dataset, setting, segment, excluded=stored - set(ids.tolist()))
            if level is None:
                return None
            levels.append(level)
        gaps.append(combine(np.subtract, *levels))
    return combine(np.subtract, *gaps)


def s_parts(context: DatasetContext) -> list[Part] | None:
    """S: the reasoning step > 0 decides; F1's gap on the same instructions, the other three steps,
    the reasoning step's early / late and ``same_tokens.reasoning_beside`` shown beside it. None
    where a condition of the chain is not stored."""
    cd, dataset = context.curves, context.dataset
    split = gap_split.dataset_split(cd, dataset)
    found = gap_split.split_instructions(cd, dataset)
    if split is None or found is None:
        return None
    parts = [
        Part(
            "F1's gap on these instructions",
            split[gap_split.TOTAL],
            "above",
            0.0,
            Unit.RATIO,
            role=TOTAL,
            decides=False,
        )
    ]
    for step in gap_split.STEPS:
        role = STEP_ROLES[step.name]
        name = REASONING_PART if role is roles.SAME_TOKEN_GAP else step.name
        deciding = role is roles.SAME_TOKEN_GAP
        parts.append(Part(name, split[step.name], "above", 0.0, Unit.RATIO, role=role, decides=deciding))
    early_late = _early_late(cd, dataset, found[0])
    if early_late is not None:
        name = "early / late of the reasoning step"
        parts.append(Part(name, early_late, "above", 0.0, Unit.RATIO, role=roles.EARLY_LATE, decides=False))
    return parts + same_tokens.reasoning_beside(context)


CHECK = PerModelCheck(
    id=CheckId("S"),
    lead=1,
    says=((roles.SAME_TOKEN_GAP, "smaller after reasoning"),),
    words=Words(
        holds="the reasoning before the answer makes the answer's own gradient smaller",
        fails="the reasoning before the answer leaves the answer's own gradient larger, not smaller",
        unresolved="these instructions do not decide which way the reasoning moves the answer's own gradient",
    ),
    plain="F1's gap split into four steps: reasoning before the answer makes the answer's own gradient smaller",
    headline=roles.SAME_TOKEN_GAP,
    claim=(
        "F1's gap (None over Detailed CoT, mean log nuclear norm) on the instructions holding all five "
        "conditions splits exactly into four steps: the phrase (none against none_answer), the reasoning "
        "(none_answer against detailed_answer), which tokens (detailed_answer against detailed_scored_answer) "
        "and how many tokens (detailed_scored_answer against detailed). The claim is the reasoning step's: "
        "the answer's own tokens have larger nuclear norms after the phrase alone than after the Detailed CoT "
        "(geometric mean over the instructions, paired). Every step is shown with what its interval decides: "
        "larger, smaller, or about the same (within the margin of nearly the same, two one-sided tests)"
    ),
    parts=s_parts,
    chapters=GAP,
    calibrated_by=(rule.GAP, rule.WITHIN),
    # the answer-token statistics beside the reasoning step, and the token counts and energy the chapter's
    # split in the Frobenius norm and per layer read
    reads=tuple(dict.fromkeys((*same_tokens.READS, *averaging.READS))),
)


def _inputs(*, reasoning: float, chain: tuple[str, ...] = gap_split.CHAIN) -> Inputs:
    """The chain's conditions (``chain``: all five unless fewer) with F1's gap 2.0: the phrase 0.5,
    the reasoning step ``reasoning``, which tokens -0.2 and how many tokens the rest."""
    none, detailed = 2.0, 0.0
    levels = dict(zip(gap_split.CHAIN, (none, none - 0.5, none - 0.5 - reasoning, 1.4, detailed)))
    return model_inputs({f"{c}/correct": Condition(curve=levels[c]) for c in chain})


BATTERY = Fixture(
    verdicts=DECIDING,
    needs="the five conditions of the chain",
    truth=lambda: _inputs(reasoning=0.5),
    falsity=lambda: _inputs(reasoning=-0.5),
    missing=lambda: _inputs(reasoning=0.5, chain=gap_split.CHAIN[:2] + gap_split.CHAIN[3:]),
)
