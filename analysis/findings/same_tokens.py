"""S's reasoning step and A3: on the same scored tokens, the final answer, does reasoning before it
change the answer's own gradient?

F1 compares a loss over the 1-3 tokens of a bare answer with a loss over hundreds of chain-of-thought
tokens: which tokens are scored, as much as how the model thinks. The answer-scored conditions
(``data.AnswerView``) score the same tokens, the instruction's None-CoT answer after "The final answer
is ", with nothing, the Simplified CoT, the Detailed CoT or another instruction's Detailed CoT before
the phrase. The answer's token count R is the same on both sides of a gap, so no averaging enters,
and the phrase is held fixed (it alone moves the bare answer's gradient).

- the reasoning step (the check S decides on it, ``analysis.checks.s_gap_split``): ``none_answer``
  against ``detailed_answer``. Shown beside it (``reasoning_beside``): the same gap in Frobenius
  norm, and Simplified CoT or another instruction's Detailed CoT in place of the instruction's own
  Detailed CoT (is any long context enough, or does this reasoning matter?).
- A3, the reasoning step beyond the answer's loss: a single token's gradient scales with
  1 - p = 1 - exp(-loss), so the covariate is the span's mean of log(1 - exp(-loss_t)) (the stored ``log_miss``). Per dataset,
  the paired regression over instructions of the log-nuclear gap on the covariate's gap; its
  intercept, the gap where the answer is as predictable after the reasoning as without it, decides
  (above 0). Where the covariate's gaps all lie on one side of 0 the intercept is an extrapolation
  (A3's note). The answer's loss under both conditions is shown beside. A3's parts function, its
  gate and note are in ``analysis.checks.a3_equal_loss``; its regression is here, which its
  calibration reads too.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from analysis import data
from analysis.findings import gap_split, roles
from analysis.findings.bootstrap import PROJECTIONS, CurveDraws, combine, rows_of
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import log_level
from analysis.findings.rules import Part, Unit

NONE, DETAILED = gap_split.REASONING.fast, gap_split.REASONING.slow  # the reasoning step's two settings
SIMPLIFIED, OTHER = "simplified_answer", "detailed_other_answer"
SHUFFLED = "detailed_shuffled_answer"
NUCLEAR, FROBENIUS, LOG_MISS, LOSS = "nuclear_norm", "frobenius", "log_miss", "loss"
READS = (FROBENIUS, LOG_MISS, LOSS)  # what S and A3 read per sample beyond the nuclear norm

A3_PART = "None / Detailed on the answer tokens at equal answer loss"
VERBATIM = "verbatim"  # the facet of the reasoning step's gap on the chains that state the answer word for word
VERBATIM_PART = "the same where the Detailed CoT states the answer word for word"
# the contexts shown beside the reasoning step in place of the instruction's own Detailed CoT
BESIDE = {
    SIMPLIFIED: "None / Simplified on the answer tokens",
    OTHER: "None / another instruction's Detailed CoT on the answer tokens",
    SHUFFLED: "None / its own Detailed CoT with the words shuffled, on the answer tokens",
}


def _ids(cd: CurveDraws, condition: str, stat: str) -> set[int] | None:
    """The instructions with a value of ``stat`` in every projection of a condition (None: not stored)."""
    keys = [(condition, proj, stat) for proj in PROJECTIONS]
    if not all(k in cd.samples for k in keys):
        return None
    return set.intersection(*(set(cd.samples[k][1].tolist()) for k in keys))


def shared_instructions(
    cd: CurveDraws, dataset: str, settings: Iterable[str], stats: Iterable[str]
) -> np.ndarray | None:
    """The instructions of ``dataset`` that every setting holds for every statistic, sorted (None:
    a setting or statistic is not stored)."""
    held = [_ids(cd, cd.condition_key(dataset, s), stat) for s in settings for stat in stats]
    if any(h is None for h in held):
        return None
    return np.asarray(sorted(set.intersection(*held)), dtype=int)  # type: ignore[arg-type]


def answer_gap(
    cd: CurveDraws,
    dataset: str,
    fast: str,
    slow: str,
    *,
    segment: str = "all",
    stat: str = NUCLEAR,
    within: frozenset[int] | None = None,
):
    """Mean log ``stat`` of ``fast`` less that of ``slow`` on the instructions both hold (paired;
    ``within``: of those, only these)."""
    shared = shared_instructions(cd, dataset, (fast, slow), (stat,))
    if shared is None or shared.size == 0:
        return None
    kept = set(shared.tolist()) if within is None else set(shared.tolist()) & set(within)
    if not kept:
        return None
    held = set().union(*(_ids(cd, cd.condition_key(dataset, s), stat) or set() for s in (fast, slow)))
    excluded = held - kept
    a = log_level(cd, dataset, fast, segment, excluded=excluded, stat=stat)
    b = log_level(cd, dataset, slow, segment, excluded=excluded, stat=stat)
    return None if a is None or b is None else combine(np.subtract, a, b)


def verbatim_ids(context: DatasetContext) -> frozenset[int]:
    """The context's instructions whose Detailed CoT states the answer word for word
    (``data.verbatim_answer_ids``; none where the context comes with no data)."""
    return frozenset() if context.data_dir is None else data.verbatim_answer_ids(context.dataset, context.data_dir)


def reasoning_beside(context: DatasetContext) -> list[Part]:
    """What stands beside the reasoning step of F1's gap (the answer's gradient without the reasoning
    over that after the Detailed CoT, on the instructions both hold): the same gap in Frobenius norm,
    after the other contexts, and on the instructions whose Detailed CoT states the answer word for
    word (``verbatim_ids``): is it surprise at a label the chain never wrote?"""
    cd, dataset, verbatim = context.curves, context.dataset, verbatim_ids(context)
    parts: list[Part] = []
    frobenius = answer_gap(cd, dataset, NONE, DETAILED, stat=FROBENIUS)
    if frobenius is not None:
        name = "the same in Frobenius norm"
        parts.append(
            Part(
                name=name,
                estimate=frobenius,
                side="above",
                bound=0.0,
                unit=Unit.RATIO,
                role=roles.SAME_TOKEN_FROBENIUS,
                decides=False,
            )
        )
    stated = answer_gap(cd, dataset, NONE, DETAILED, within=verbatim)
    if stated is not None:
        parts.append(
            Part(
                name=VERBATIM_PART,
                estimate=stated,
                side="above",
                bound=0.0,
                unit=Unit.RATIO,
                role=roles.REASONING_STEP,
                facet=(VERBATIM,),
                decides=False,
            )
        )
    for setting, name in BESIDE.items():
        if cd.has(cd.condition_key(dataset, setting)):
            gap = answer_gap(cd, dataset, NONE, setting)
            parts.append(
                Part(
                    name=name,
                    estimate=gap,
                    side="above",
                    bound=0.0,
                    unit=Unit.RATIO,
                    role=roles.CONTEXT_GAP,
                    facet=(setting,),
                    decides=False,
                )
            )
    return parts


def per_instruction(cd: CurveDraws, condition: str, stat: str, ids: np.ndarray) -> np.ndarray:
    """Each of ``ids``'s mean over q, k, v, o and the layers of log ``stat`` (a per-sample column such
    as ``log_miss`` or ``loss`` is the same on every layer: its value, not its log, for those)."""
    values = []
    for proj in PROJECTIONS:
        matrix, own = cd.samples[(condition, proj, stat)]
        rows = rows_of(matrix, own, ids)
        values.append(np.nanmean(rows, axis=1) if stat in (LOG_MISS, LOSS) else np.log(rows).mean(axis=1))
    return np.mean(values, axis=0)


def covariate_gaps(cd: CurveDraws, dataset: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(ids, log-nuclear gap, log(1 - p) gap) per instruction of ``dataset`` that both answer
    conditions hold with every statistic A3 reads; None where one is not stored."""
    ids = shared_instructions(cd, dataset, (NONE, DETAILED), (NUCLEAR, LOG_MISS))
    if ids is None or ids.size == 0:
        return None
    none, detailed = cd.condition_key(dataset, NONE), cd.condition_key(dataset, DETAILED)
    y = per_instruction(cd, none, NUCLEAR, ids) - per_instruction(cd, detailed, NUCLEAR, ids)
    x = per_instruction(cd, none, LOG_MISS, ids) - per_instruction(cd, detailed, LOG_MISS, ids)
    finite = np.isfinite(x) & np.isfinite(y)
    return ids[finite], y[finite], x[finite]
