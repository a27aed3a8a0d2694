"""S: fast thinking's gap split into five steps; its claim is the reasoning step's: reasoning before the
answer makes the answer's own gradient smaller.

On the instructions that hold every condition of the chain (``findings.gap_split``), F1's gap in
mean log norm is the sum of five steps: the phrase, the reasoning, which tokens at equal loss, how
surprising, how many tokens. The
check's one deciding part is the reasoning step in the nuclear norm (the same answer tokens scored
after the phrase alone and after the Detailed CoT: the paper's reading, that slow thinking's
reasoning itself makes the gradient smaller, predicts it above 0). Its other parts are shown beside
it, each with its outcome (``rules.Part.outcome``): F1's gap on these instructions and the other
steps, the same split in the Frobenius norm with what averaging alone predicts of the last step, the
reasoning step's early over late layers, and the answer-token gaps after other contexts and where the
chain states the answer word for word (``same_tokens.reasoning_beside``). The check declares its
split as a ``Chain``, which the report draws as bars and tables.
"""

from __future__ import annotations

import numpy as np

from analysis.checks import f1_larger
from analysis.checks.check_chapters import GAP_CHAPTERS
from analysis.findings import averaging, gap_split, roles, same_tokens
from analysis.findings.battery import DECIDING, Fixture, model_inputs
from analysis.findings.bootstrap import CurveDraws, Estimate, combine
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import log_level
from analysis.findings.roles import Role
from analysis.findings.rules import SAME_MARGIN, CheckId, Part, Unit, above_zero
from analysis.findings.scopes import Chain, ChainStep, Inputs, PerModelCheck, Section, Words
from analysis.findings.simulated_samples import Condition

F1 = f1_larger.CHECK.id
TOTAL = Role("fast over slow thinking's gap on the instructions that hold every condition of the split")
PHRASE = Role('the phrase step: the bare answer over the answer after "The final answer is "')
EQUAL_LOSS = Role("the which-tokens step at equal loss: the answer's tokens over as many chain tokens matched in loss")
SURPRISE = Role("the how-surprising step: chain tokens matched in loss to the answer's over as many random ones")
HOW_MANY = Role("the how-many-tokens step: those few tokens over all of the chain's")
WHICH_TOKENS = Role("which tokens: the answer's tokens over as many random chain tokens (two steps together)")
TOGETHER = Role("which tokens and how many: the answer's tokens over all of the chain's (three steps together)")
PREDICTED = Role("what averaging alone predicts of the how-many-tokens step: half the gap in mean log R")
LOSS_INTERCEPT = Role("a step at equal scored-token loss: its line's intercept on the gap in log mean loss")
LOSS_SLOPE = Role("a step's line's slope on the gap in its scored tokens' log mean loss")
MATCHED_POSITION = Role("the mean position in the chain of the tokens matched in loss to the answer's (0 to 1)")
MATCHED_FLAGGED = Role("the matched tokens per draw whose loss lies outside the caliper of their answer token's")
# Each step of the chain (``gap_split.STEPS``, by name) with the role of its parts and the reader's words.
WORDS = {
    gap_split.PHRASE: (PHRASE, 'the phrase "The final answer is"'),
    gap_split.REASONING: (roles.REASONING_STEP, "the reasoning itself"),
    gap_split.EQUAL_LOSS: (EQUAL_LOSS, "which tokens are scored, at equal loss"),
    gap_split.SURPRISE: (SURPRISE, "how surprising the tokens are"),
    gap_split.HOW_MANY: (HOW_MANY, "how many tokens are averaged"),
}
STEPS = {step: ChainStep(WORDS[step][0], step.name, WORDS[step][1], step.fast, step.slow) for step in gap_split.STEPS}
SPANS = {gap_split.WHICH_TOKENS: WHICH_TOKENS, gap_split.TOGETHER: TOGETHER}  # beside the steps, no bars
REASONING_PART = "the reasoning: the answer's tokens after the phrase alone / after the Detailed CoT"
NORMS = {gap_split.NUCLEAR: (), gap_split.FROBENIUS: (gap_split.FROBENIUS,)}  # each norm's facet
MATCHED_POSITION_STAT, MATCHED_FLAGGED_STAT = "matched_position", "matched_flagged"  # the loss-matched draws' columns
NORM_NAMES = {gap_split.NUCLEAR: "nuclear norm", gap_split.FROBENIUS: "Frobenius norm"}


def _early_late(cd: CurveDraws, dataset: str, ids: np.ndarray) -> Estimate | None:
    """The reasoning step's early-layer gap less its late-layer gap, on the split's instructions."""
    step = gap_split.REASONING
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


def _shown(name: str, estimate: Estimate, role: Role, facet: tuple[str, ...], *, decides: bool) -> Part:
    """A part of the split: above 0 (it makes fast thinking's gradient larger), "about the same"
    within the margin of nearly the same."""
    return Part(
        name=name,
        estimate=estimate,
        side="above",
        bound=0.0,
        unit=Unit.RATIO,
        role=role,
        facet=facet,
        margin=SAME_MARGIN,
        decides=decides,
    )


def _split_parts(split: dict[str, Estimate], stat: str) -> list[Part]:
    """F1's gap on these instructions and its steps in one norm (the reasoning step decides in the
    nuclear norm), the spans of steps shown beside them, and in the Frobenius norm what averaging
    alone predicts of the last step."""
    facet = NORMS[stat]
    suffix = f" ({NORM_NAMES[stat]})" if facet else ""
    parts = [_shown(f"{F1}'s gap on these instructions{suffix}", split[gap_split.TOTAL], TOTAL, facet, decides=False)]
    for step, shown in STEPS.items():
        deciding = shown.role is roles.REASONING_STEP and not facet
        name = (REASONING_PART if deciding else step.name) + suffix
        parts.append(_shown(name, split[step.name], shown.role, facet, decides=deciding))
    parts += [_shown(span.name + suffix, split[span.name], role, facet, decides=False) for span, role in SPANS.items()]
    if gap_split.PREDICTED in split:
        parts.append(_shown(gap_split.PREDICTED + suffix, split[gap_split.PREDICTED], PREDICTED, facet, decides=False))
    return parts


def _loss_lines(cd: CurveDraws, dataset: str) -> list[Part]:
    """Each step's (and span's) line on the gap in its scored tokens' log mean loss: the intercept
    (the step at equal loss, by regression) and the slope, shown beside; none where the loss is not
    stored."""
    parts = []
    for step in (*gap_split.STEPS, *gap_split.SPANS):
        line = gap_split.loss_line(cd, dataset, step)
        if line is None:
            continue
        intercept, slope = line
        parts += [
            Part(
                name=f"{step.name}: intercept on log loss",
                estimate=intercept,
                side="above",
                bound=0.0,
                unit=Unit.RATIO,
                role=LOSS_INTERCEPT,
                facet=(step.name,),
                margin=SAME_MARGIN,
                decides=False,
            ),
            Part(
                name=f"{step.name}: slope on log loss",
                estimate=slope,
                side="above",
                bound=0.0,
                role=LOSS_SLOPE,
                facet=(step.name,),
                decides=False,
            ),
        ]
    return parts


def _matched_draws(cd: CurveDraws, dataset: str) -> list[Part]:
    """Where the loss-matched condition stores its draws: the matched tokens' mean position in the
    chain (the answer always comes last: position is a confound the split states) and the share of
    them flagged outside the caliper, each a mean over the instructions with its interval."""
    condition = cd.condition_key(dataset, gap_split.EQUAL_LOSS.slow)
    parts = []
    for stat, role, name in (
        (MATCHED_POSITION_STAT, MATCHED_POSITION, "matched tokens' mean position in the chain"),
        (MATCHED_FLAGGED_STAT, MATCHED_FLAGGED, "matched tokens per draw flagged outside the caliper"),
    ):
        estimate = gap_split.sample_mean(cd, dataset, condition, stat)
        if estimate is not None:
            parts.append(above_zero(name, estimate, role=role, decides=False))
    return parts


def s_parts(context: DatasetContext) -> list[Part] | None:
    """S: the reasoning step > 0 decides; F1's gap on the same instructions, the other three steps,
    the reasoning step's early / late, ``same_tokens.reasoning_beside`` and the split in the
    Frobenius norm shown beside it. None where a condition of the chain is not stored."""
    cd, dataset = context.curves, context.dataset
    split = gap_split.dataset_split(cd, dataset)
    found = gap_split.split_instructions(cd, dataset)
    if split is None or found is None:
        return None
    parts = _split_parts(split, gap_split.NUCLEAR)
    early_late = _early_late(cd, dataset, found[0])
    if early_late is not None:
        name = "early / late of the reasoning step"
        parts.append(
            Part(
                name=name,
                estimate=early_late,
                side="above",
                bound=0.0,
                unit=Unit.RATIO,
                role=roles.EARLY_LATE,
                decides=False,
            )
        )
    parts += same_tokens.reasoning_beside(context)
    frobenius = gap_split.dataset_split(cd, dataset, stat=gap_split.FROBENIUS)
    parts += _split_parts(frobenius, gap_split.FROBENIUS) if frobenius is not None else []
    return parts + _loss_lines(cd, dataset) + _matched_draws(cd, dataset)


CAPTION = (
    "Each panel is one model on one family of datasets (the mean over the datasets named in its title, each "
    "dataset weighing the same) or one dataset. The top bar is F1's gap: fast thinking's gradient (None CoT) "
    "over slow thinking's (Detailed CoT), the ratio of their geometric mean {norm} (over Q, K, V, O, the "
    "layers and the instructions), on the instructions that hold all six conditions; the axis is a log scale, "
    "on which the five bars under it add up to it exactly (their ratios multiply to its), "
    "in a fixed order from fast to slow (a step's size depends on its place): the phrase (the bare answer "
    'against "The final answer is " and the answer), the reasoning (the same answer tokens after the '
    "Detailed CoT), which tokens at equal loss (the answer's tokens against as many chain tokens whose loss "
    "matches theirs), how surprising (those matched tokens against as many random chain tokens) and how many "
    "tokens (those few against all the chain's tokens: averaging). A bar right of x1: that step makes fast "
    "thinking's gradient larger. Black lines: {level} intervals, instructions resampled within each dataset. A step "
    'is decided when its interval clears x1 or lies within {margin} of no change ("about the same"); '
    "a pale bar is not decided. A family's value holds for the datasets named, not for others."
).replace("F1", F1)

CHECK = PerModelCheck(
    id=CheckId("S"),
    lead=1,
    says=((roles.REASONING_STEP, "smaller after reasoning"),),
    words=Words(
        holds="the reasoning before the answer makes the answer's own gradient smaller",
        fails="the reasoning before the answer leaves the answer's own gradient larger, not smaller",
        unresolved="these instructions do not decide which way the reasoning moves the answer's own gradient",
    ),
    plain=f"{F1}'s gap split into five steps: reasoning before the answer makes the answer's own gradient smaller",
    headline=roles.REASONING_STEP,
    claim=(
        f"{F1}'s gap (None over Detailed CoT, mean log nuclear norm) on the instructions holding all six "
        "conditions splits exactly into five steps: the phrase (none against none_answer), the reasoning "
        "(none_answer against detailed_answer), which tokens at equal loss (detailed_answer against "
        "detailed_matched_answer), how surprising (detailed_matched_answer against detailed_scored_answer) and "
        "how many tokens (detailed_scored_answer against detailed). The claim is the reasoning step's: "
        "the answer's own tokens have larger nuclear norms after the phrase alone than after the Detailed CoT "
        "(geometric mean over the instructions, paired). Every step is shown with what its interval decides, "
        "in the nuclear and the Frobenius norm: larger, smaller, or about the same (within the margin of "
        "nearly the same, two one-sided tests), beside its line on the gap in its scored tokens' log mean loss"
    ),
    parts=s_parts,
    chapters=GAP_CHAPTERS,
    calibrated_by=(rule.GAP, rule.WITHIN),
    chain=Chain(
        total=TOTAL,
        total_name=f"{F1}'s gap",
        steps=tuple(STEPS.values()),
        beside=(*((role, span.name) for span, role in SPANS.items()), (PREDICTED, gap_split.PREDICTED)),
        lines=(LOSS_INTERCEPT, LOSS_SLOPE),
        by_design=(EQUAL_LOSS, gap_split.WHICH_TOKENS.name),
        norms=tuple((facet, NORM_NAMES[stat]) for stat, facet in NORMS.items()),
        conditions=gap_split.CHAIN,
        dropped=gap_split.dropped,
        caption=CAPTION,
    ),
    section=Section(
        title="The reasoning step.",
        intro=(
            "{id} decides on the answer's own tokens scored after the phrase alone and after the Detailed CoT: "
            "the same tokens on both sides, so that no averaging enters."
        ),
        lead="The answer's gradient without reasoning over that after the Detailed CoT (geometric mean of nuclear norms)",
        columns=(
            ("None / Detailed, answer tokens", roles.REASONING_STEP, ()),
            ("the same where the chain states the answer", roles.REASONING_STEP, (same_tokens.VERBATIM,)),
            ("matched tokens' position in the chain", MATCHED_POSITION, None),
            ("matched tokens flagged per draw", MATCHED_FLAGGED, None),
        ),
        empty="{id} not computed: the store holds no answer-scored pair.",
    ),
    # the answer-token statistics beside the reasoning step, and the token counts and energy the chapter's
    # split in the Frobenius norm and per layer read
    reads=tuple(dict.fromkeys((*same_tokens.READS, *averaging.READS, MATCHED_POSITION_STAT, MATCHED_FLAGGED_STAT))),
    battery=Fixture(
        verdicts=DECIDING,
        needs="the six conditions of the chain",
        truth=lambda: _inputs(reasoning=0.5),
        falsity=lambda: _inputs(reasoning=-0.5),
        missing=lambda: _inputs(reasoning=0.5, chain=tuple(c for c in gap_split.CHAIN if c != gap_split.SURPRISE.fast)),
    ),
)


def _inputs(*, reasoning: float, chain: tuple[str, ...] = gap_split.CHAIN) -> Inputs:
    """The chain's conditions (``chain``: all six unless fewer) with F1's gap 2.0: the phrase 0.5, the
    reasoning step ``reasoning``, which tokens at equal loss and how surprising -0.1 each, and how many
    tokens the rest."""
    none, detailed = 2.0, 0.0
    levels = {
        gap_split.PHRASE.fast: none,
        gap_split.PHRASE.slow: none - 0.5,
        gap_split.REASONING.slow: none - 0.5 - reasoning,
        gap_split.EQUAL_LOSS.slow: none - 0.4 - reasoning,
        gap_split.SURPRISE.slow: 1.4,
        gap_split.HOW_MANY.slow: detailed,
    }
    return model_inputs({f"{c}/correct": Condition(curve=levels[c]) for c in chain})
