"""Parts that several checks share: the "nearly the same" part (F3, F5), the length checks' parts
(L and L2 read the same views), the share contrast F5 and its calibration read, and ``all_known``.
Each check's own parts function is in its module (``analysis.checks``). A per-model function takes
the context of one model's curves on one dataset (``dataset_context.DatasetContext``) and returns
the parts, or None when the curves lack a condition it needs. A quantity shown beside a verdict is
one more ``Part(..., decides=False)``: the paper's mean nuclear norm beside each magnitude part
(``rules.beside``). The quantities themselves are in ``analysis.findings.quantities``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.findings import roles
from analysis.findings.bootstrap import MIN_VERDICT_SAMPLES, CurveDraws, Estimate, combine
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import (
    log_level,
    mean_gap,
)
from analysis.findings.rules import SAME_MARGIN, NotApplicable, Part, Role, Unit, Why, beside

# The display names of the parts; code that reads a part back finds it by its ``rules.Role``.
# the parts a reader sees for the length control (the share is shown, never decides)
SHARE_PART = "share of the gap left at equal length"
GAP_PART = "Simplified / Detailed"  # the length checks' precondition (``gap_established``)


def nearly_same(name: str, mean_square: Estimate | None, *, role: Role) -> Part:
    """The part "the curves are nearly the same" (F3 under None CoT, F5's Wiki part): the
    noise-corrected mean square over layers and q, k, v, o of the per-layer log ratio of irrelevant
    over correct below the margin squared (a one-sided test at 2.5%; over a family, in every dataset:
    ``equivalence``); the signed mean over layers is shown beside it."""
    return Part(
        name=name,
        estimate=mean_square,
        side="below",
        bound=SAME_MARGIN**2,
        unit=Unit.RMS_RATIO,
        role=role,
        decides=True,
        equivalence=True,
    )


def all_known(estimates: dict[str, Estimate | None]) -> dict[str, Estimate] | None:
    """The estimates when every one is known, else None."""
    known = {key: e for key, e in estimates.items() if e is not None}
    return known if len(known) == len(estimates) else None


def with_share(parts: list[Part]) -> list[Part]:
    """The length parts with the share of the gap left at equal length, (gap - length effect) / gap
    or content / gap, in place of any earlier one: shown only where the gap itself is established
    (its interval above 0), since a ratio over a gap that may be zero has no stable interval."""
    parts = [p for p in parts if p.role is not roles.SHARE]
    gap = next(p for p in parts if p.role is roles.LENGTH_GAP and not p.paper)
    effect = next(p for p in parts if p.role in (roles.CONTENT, roles.LENGTH) and not p.paper)
    if gap.estimate is None or effect.estimate is None or not gap.supports():
        return parts
    if effect.role is roles.CONTENT:
        share = combine(np.divide, effect.estimate, gap.estimate)
    else:
        share = combine(lambda e, g: 1 - e / g, effect.estimate, gap.estimate)
    after = next(i for i, p in enumerate(parts) if p is effect) + 1  # the share is shown after the effect
    shown = Part(
        name=SHARE_PART, estimate=share, side="above", bound=0.0, unit=Unit.SHARE, role=roles.SHARE, decides=False
    )
    return [*parts[:after], shown, *parts[after:]]


def _length_view(cd: CurveDraws, dataset: str, fast: str, cut: str) -> dict[str, Estimate] | None:
    """Gap fast vs Detailed, fast vs the cut (content at equal length), cut vs Detailed (length)."""
    levels = all_known({s: log_level(cd, dataset, s) for s in (fast, "detailed", cut)})
    if levels is None:
        return None
    return {
        "gap": combine(np.subtract, levels[fast], levels["detailed"]),
        "content": combine(np.subtract, levels[fast], levels[cut]),
        "length": combine(np.subtract, levels[cut], levels["detailed"]),
    }


def _length_parts(cd: CurveDraws, dataset: str, claim: str) -> list[Part] | None:
    main = _length_view(cd, dataset, "simplified", "detailed_cut_simplified")
    if main is None:
        return None
    gap = Part(
        name=GAP_PART,
        estimate=main["gap"],
        side="above",
        bound=0.0,
        unit=Unit.RATIO,
        role=roles.LENGTH_GAP,
        decides=False,
    )
    if claim == "content":
        name = "Simplified / Detailed cut to its length"
        effect = Part(
            name=name,
            estimate=main["content"],
            side="above",
            bound=0.0,
            unit=Unit.RATIO,
            role=roles.CONTENT,
            decides=True,
        )
        paper = mean_gap(cd, dataset, "simplified", "detailed_cut_simplified")
    else:
        name = "Detailed cut to Simplified length / Detailed"
        effect = Part(
            name=name,
            estimate=main["length"],
            side="above",
            bound=0.0,
            unit=Unit.RATIO,
            role=roles.LENGTH,
            decides=True,
        )
        paper = mean_gap(cd, dataset, "detailed_cut_simplified", "detailed")
    parts = with_share([gap, effect])
    parts += [beside(gap, mean_gap(cd, dataset, "simplified", "detailed")), beside(effect, paper)]
    second = _length_view(cd, dataset, "none", "detailed_cut_none")
    if second is not None:
        parts.append(
            Part(
                name="None / Detailed cut to None length",
                estimate=second["content"],
                side="above",
                bound=0.0,
                unit=Unit.RATIO,
                role=roles.SECOND_VIEW,
                group="second view",
                decides=False,
            )
        )
    return parts


def gap_established(parts: Sequence[Part]) -> NotApplicable | None:
    """Why L or L2 does not apply to a finding (None where it does): both are claims about the
    Simplified vs Detailed gap, so where its interval does not lie above 0 (reversed, or not
    resolved) the claim has nothing to apply to; the gap is its evidence. Too few instructions or a
    missing gap are left to the verdict rule (``rules.decide``)."""
    gap = next((p for p in parts if p.role is roles.LENGTH_GAP and not p.paper), None)
    if gap is None or gap.estimate is None or gap.n_smallest < MIN_VERDICT_SAMPLES or gap.supports():
        return None
    state = "reversed" if gap.contradicts() else "not resolved"
    return NotApplicable(
        Why.PRECONDITION,
        f"the Simplified vs Detailed gap is {state} here",
        "the claim is about that gap",
        evidence=(gap,),
    )


def length_parts(context: DatasetContext) -> list[Part] | None:
    """L (content beyond length): the Simplified vs Detailed gap > 0 and Simplified vs Detailed
    cut to the Simplified length > 0, in mean log nuclear norm; the share of the gap left at
    equal length and the None-length view shown."""
    return _length_parts(context.curves, context.dataset, "content")


def length_effect_parts(context: DatasetContext) -> list[Part] | None:
    """L2 (length matters): the gap > 0 and Detailed cut to the Simplified length vs full Detailed > 0."""
    return _length_parts(context.curves, context.dataset, "length")


def _established(estimate: Estimate | None) -> bool:
    return (
        estimate is not None
        and Part(name="", estimate=estimate, side="above", bound=0.0, role=roles.SIMULATED, decides=True).supports()
    )


def share_contrast(short: Estimate, long: Estimate, simplified: Estimate, detailed: Estimate) -> Estimate | None:
    """F5's deciding quantity from four roughnesses: the share a curve keeps from Wiki 100 to 1000
    words minus the share it keeps from Simplified to Detailed CoT; None (not resolved) unless both
    shorter curves' roughness is established."""
    if not (_established(simplified) and _established(short)):
        return None
    return combine(lambda w1, w2, s, d: w2 / w1 - d / s, short, long, simplified, detailed)
