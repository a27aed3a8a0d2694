"""The parts of each check: the quantities it decides on and those shown beside its verdict.

One function per check (``analysis.checks`` points each registered check to its function).
A per-model function takes the context of one model's curves on one dataset
(``dataset_context.DatasetContext``) and returns the parts, or None when the curves lack a condition
it needs; a pair function takes the instruct and the base model's
curves. A quantity shown beside a verdict is one more ``Part(..., decides=False)`` in its
function: the paper's mean nuclear norm beside each magnitude part (``rules.beside``), F2's mean
curve's roughness and None's log-scale spread across layers. The quantities themselves are in
``analysis.findings.quantities``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from analysis.core import vocabulary
from analysis.findings import roles
from analysis.findings.bootstrap import MIN_VERDICT_SAMPLES, CurveDraws, Estimate, combine, pooled
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.quantities import (
    log_gap,
    log_level,
    log_mad_ratio,
    log_rd,
    log_rd_mean_square,
    log_variance_change,
    mean_early_late,
    mean_gap,
    mean_rd,
    mean_rd_between,
    mean_roughness,
    mean_roughness_difference,
    root_mean_square,
    roughness,
    size_excess,
)
from analysis.findings.rules import SAME_MARGIN, NotApplicable, Note, NoteKind, Part, Role, Unit, Why, beside

# The display names of the parts; code that reads a part back finds it by its ``rules.Role``.
# the parts a reader sees for the length control (the share is shown, never decides)
SHARE_PART = "share of the gap left at equal length"
# F2's parts on the paper's scale: the mean curve's roughness per pair of settings, and whether
# None's log-scale spread changes across layers (then None vs Simplified is decided on the former)
MEAN_CURVE_ROUGHNESS = "mean curve's roughness (paper's scale)"
LOG_SPREAD_CHANGE = "None log-scale variance, late - early layers"
GAP_PART = "Simplified / Detailed"  # the length checks' precondition (``gap_established``)
F5_SHARES = "share of roughness kept: Wiki 1000 / 100 words - reasoning Detailed / Simplified"
# "Nearly the same" curves (F3 under None CoT, F5's Wiki part): the root-mean-square over layers
# and q, k, v, o of the per-layer log ratio of irrelevant over correct, noise-corrected, within
# the margin (its square below the margin squared); the signed mean over layers is shown beside.
NONE_SAME = "None root-mean-square per-layer irrelevant / correct"
WIKI_SAME = "Wiki root-mean-square per-layer irrelevant / correct"


def nearly_same(name: str, mean_square: Estimate | None, *, role: Role) -> Part:
    """The part "the curves are nearly the same": the noise-corrected mean square over layers of
    the per-layer log ratio below the margin squared (a one-sided test at 2.5%)."""
    return Part(name, mean_square, "below", SAME_MARGIN**2, Unit.RMS_RATIO, role=role)


def _short(setting: str) -> str:
    return vocabulary.setting_label(setting).split()[0]


def _all_known(estimates: dict[str, Estimate | None]) -> dict[str, Estimate] | None:
    """The estimates when every one is known, else None."""
    known = {key: e for key, e in estimates.items() if e is not None}
    return known if len(known) == len(estimates) else None


def f1_parts(context: DatasetContext) -> list[Part] | None:
    """F1: None over Detailed CoT (geometric mean of nuclear norms, all layers) > 1, and that ratio
    larger early than late."""
    cd, dataset = context.curves, context.dataset
    gaps = _all_known({seg: log_gap(cd, dataset, "none", "detailed", segment=seg) for seg in ("all", "early", "late")})
    if gaps is None:
        return None
    parts = [
        Part("None / Detailed (all layers)", gaps["all"], "above", 0.0, Unit.RATIO, role=roles.F1_GAP),
        Part(
            "early / late of that ratio",
            combine(np.subtract, gaps["early"], gaps["late"]),
            "above",
            0.0,
            Unit.RATIO,
            role=roles.EARLY_LATE,
        ),
    ]
    return parts + [
        beside(parts[0], mean_gap(cd, dataset, "none", "detailed")),
        beside(parts[1], mean_early_late(cd, dataset, "none", "detailed")),
    ]


def f2_parts(context: DatasetContext) -> list[Part] | None:
    """F2: for each projection and adjacent pair of settings, the noise-corrected roughness of the
    log curve (``corrected_roughness``) of the faster setting minus that of the slower > 0; the
    paper's MAD ratio of the mean curves, the mean curve's roughness and None's log-scale spread
    across layers shown beside it (``spread_decides`` may make the mean curve's roughness decide)."""
    cd, dataset = context.curves, context.dataset
    settings = [s for s in vocabulary.COT_SETTINGS if cd.has(cd.condition_key(dataset, s))]
    if len(settings) < 2:
        return None
    parts = []
    for fast, slow in zip(settings, settings[1:]):
        group = f"roughness {_short(fast)} - {_short(slow)}"
        none_pair = (fast, slow) == ("none", "simplified")  # the pair ``mean_curve_decides`` may decide otherwise
        for proj in vocabulary.PROJECTIONS:
            a, b = roughness(cd, dataset, fast, proj), roughness(cd, dataset, slow, proj)
            difference_ = None if a is None or b is None else combine(np.subtract, a, b)
            role = roles.NONE_ROUGHNESS if none_pair else roles.ROUGHNESS
            facet = (fast, slow, proj)
            parts.append(Part(proj.upper(), difference_, "above", 0.0, role=role, facet=facet, group=group))
        mean_role = roles.NONE_MEAN_CURVE_ROUGHNESS if none_pair else roles.MEAN_CURVE_ROUGHNESS
        shown = (
            (
                "paper's MAD ratio (Q, K, V, O mean)",
                log_mad_ratio(cd, dataset, fast, slow),
                Unit.RATIO,
                roles.MAD_RATIO,
            ),
            (MEAN_CURVE_ROUGHNESS, mean_roughness_difference(cd, dataset, fast, slow), Unit.DIFFERENCE, mean_role),
        )
        parts += [
            Part(name, value, "above", 0.0, unit, role=role, facet=(fast, slow), group=group, decides=False)
            for name, value, unit, role in shown
        ]
    if settings[0] == "none":
        spread = log_variance_change(cd, dataset, "none")
        parts.append(Part(LOG_SPREAD_CHANGE, spread, "within", 0.0, role=roles.LOG_SPREAD_CHANGE, decides=False))
    return parts


def spread_decides(parts: Sequence[Part]) -> tuple[list[Part], Note | None]:
    """F2's parts and note where None's log-scale spread changes across layers (the interval of
    ``roles.LOG_SPREAD_CHANGE`` away from 0): the mean log curve's roughness is not the paper's mean
    curve's then, so None vs Simplified is decided on the mean curve's roughness
    (``mean_curve_decides``); elsewhere the parts unchanged and no note."""
    spread = [p for p in parts if p.role is roles.LOG_SPREAD_CHANGE and p.estimate is not None]
    if not (spread and (spread[0].interval()[0] > 0 or spread[0].interval()[1] < 0)):
        return list(parts), None
    return mean_curve_decides(parts), Note(
        NoteKind.DECIDED_OTHERWISE,
        "None's log-scale spread changes across layers, so the mean log curve's roughness is not the "
        "paper's mean curve's: None vs Simplified is decided on the mean curve's roughness",
    )


def mean_curve_decides(parts: Sequence[Part]) -> list[Part]:
    """F2's None vs Simplified parts where None's log-scale spread changes across layers: the mean
    curve's roughness (relative to its level) decides in place of the log curve's per projection.
    Its interval misses below the truth (a false "rougher") no more than 2.5% in the scenarios of
    ``scenarios`` (tests/test_calibration.py)."""
    out = []
    for p in parts:
        if p.role is roles.NONE_ROUGHNESS and p.decides:
            p = replace(p, decides=False)
        elif p.role is roles.NONE_MEAN_CURVE_ROUGHNESS:
            p = replace(p, decides=True)
        out.append(p)
    return out


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
        Part("Detailed irrelevant / correct", detailed, "above", SAME_MARGIN, Unit.RATIO, role=roles.F3_GAP),
        nearly_same(NONE_SAME, size, role=roles.NONE_SAME),
        Part("None irrelevant / correct", none, "within", SAME_MARGIN, Unit.RATIO, role=roles.NONE_RD, decides=False),
    ]
    return parts + [
        beside(parts[0], mean_rd(cd, dataset, "detailed")),
        beside(parts[2], mean_rd(cd, dataset, "none", excluded=identical)),
    ]


F4_SIZE = f"instruct size^2 - (base size + {math.exp(SAME_MARGIN) - 1:.0%})^2 of Detailed irrelevant / correct"


def f4_parts(instruct: CurveDraws, base: CurveDraws, dataset: str) -> list[Part] | None:
    """F4 on the size of the separation: the root-mean-square over layers of the per-layer Detailed
    irrelevant/correct log ratio of the instruct model exceeds its base model's by less than the
    margin (``size_excess`` below 0; paired by instruction); the sizes' difference, the signed
    ratios' difference and the paper's quantity shown beside."""
    square_a, square_b = (log_rd_mean_square(cd, dataset, "detailed") for cd in (instruct, base))
    a, b = log_rd(instruct, dataset, "detailed"), log_rd(base, dataset, "detailed")
    if a is None or b is None or square_a is None or square_b is None:
        return None
    sizes = combine(np.subtract, root_mean_square(square_a), root_mean_square(square_b))
    signed = Part(
        "instruct / base of Detailed irrelevant / correct",
        combine(np.subtract, a, b),
        "below",
        SAME_MARGIN,
        Unit.RATIO,
        role=roles.SIGNED_RATIO,
    )
    return [
        Part(F4_SIZE, size_excess(square_a, square_b, SAME_MARGIN), "below", 0.0, role=roles.SIZE_EXCESS),
        Part(
            "instruct / base of Detailed size",
            sizes,
            "below",
            SAME_MARGIN,
            Unit.RATIO,
            role=roles.SIZE_RATIO,
            decides=False,
        ),
        replace(signed, decides=False),
        beside(signed, mean_rd_between(instruct, base, dataset)),
    ]


def with_share(parts: list[Part]) -> list[Part]:
    """The length parts with the share of the gap left at equal length, (gap - length effect) / gap
    or content / gap, in place of any earlier one: shown only where the gap itself is established
    (its interval above 0), since a ratio over a gap that may be zero has no stable interval."""
    parts = [p for p in parts if p.role is not roles.SHARE]
    gap = next(p for p in parts if p.role is roles.GAP and not p.paper)
    effect = next(p for p in parts if p.role in (roles.CONTENT, roles.LENGTH) and not p.paper)
    if gap.estimate is None or effect.estimate is None or not gap.supports():
        return parts
    if effect.role is roles.CONTENT:
        share = combine(np.divide, effect.estimate, gap.estimate)
    else:
        share = combine(lambda e, g: 1 - e / g, effect.estimate, gap.estimate)
    after = next(i for i, p in enumerate(parts) if p is effect) + 1  # the share is shown after the effect
    shown = Part(SHARE_PART, share, "above", 0.0, Unit.SHARE, role=roles.SHARE, decides=False)
    return [*parts[:after], shown, *parts[after:]]


def _length_view(cd: CurveDraws, dataset: str, fast: str, cut: str) -> dict[str, Estimate] | None:
    """Gap fast vs Detailed, fast vs the cut (content at equal length), cut vs Detailed (length)."""
    levels = _all_known({s: log_level(cd, dataset, s) for s in (fast, "detailed", cut)})
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
    gap = Part(GAP_PART, main["gap"], "above", 0.0, Unit.RATIO, role=roles.GAP, decides=False)
    if claim == "content":
        name = "Simplified / Detailed cut to its length"
        effect = Part(name, main["content"], "above", 0.0, Unit.RATIO, role=roles.CONTENT)
        paper = mean_gap(cd, dataset, "simplified", "detailed_cut_simplified")
    else:
        name = "Detailed cut to Simplified length / Detailed"
        effect = Part(name, main["length"], "above", 0.0, Unit.RATIO, role=roles.LENGTH)
        paper = mean_gap(cd, dataset, "detailed_cut_simplified", "detailed")
    parts = with_share([gap, effect])
    parts += [beside(gap, mean_gap(cd, dataset, "simplified", "detailed")), beside(effect, paper)]
    second = _length_view(cd, dataset, "none", "detailed_cut_none")
    if second is not None:
        parts.append(
            Part(
                "None / Detailed cut to None length",
                second["content"],
                "above",
                0.0,
                Unit.RATIO,
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
    gap = next((p for p in parts if p.role is roles.GAP and not p.paper), None)
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
    return estimate is not None and Part("", estimate, "above", 0.0, role=roles.SIMULATED).supports()


def share_contrast(short: Estimate, long: Estimate, simplified: Estimate, detailed: Estimate) -> Estimate | None:
    """F5's deciding quantity from four roughnesses: the share a curve keeps from Wiki 100 to 1000
    words minus the share it keeps from Simplified to Detailed CoT; None (not resolved) unless both
    shorter curves' roughness is established."""
    if not (_established(simplified) and _established(short)):
        return None
    return combine(lambda w1, w2, s, d: w2 / w1 - d / s, short, long, simplified, detailed)


def f5_parts(cd: CurveDraws, reference: CurveDraws | None = None) -> list[Part] | None:
    """F5: the share of its roughness a curve keeps from Wiki 100 to 1000 words minus the share it
    keeps from Simplified to Detailed CoT (pooled over the reasoning datasets) > 0, computed only
    where both shorter curves' roughness is established (a curve already smooth at 100 words has
    no roughness to lose, and is not counted as "not smoothed"); the Wiki curves nearly the same
    (``nearly_same``), their signed mean ratio and the paper's Wiki MAD ratio shown beside."""
    wiki = vocabulary.WIKI_DATASET
    short, long = mean_roughness(cd, wiki, "len100"), mean_roughness(cd, wiki, "len1000")
    if short is None or long is None:
        return None
    ref = reference if reference is not None else cd
    pairs = [
        (a, b)
        for dataset in ref.datasets()
        if dataset != wiki
        and (a := mean_roughness(ref, dataset, "simplified")) is not None
        and (b := mean_roughness(ref, dataset, "detailed")) is not None
    ]
    simplified, detailed = pooled([a for a, _ in pairs]), pooled([b for _, b in pairs])
    contrast = None if simplified is None or detailed is None else share_contrast(short, long, simplified, detailed)
    rds = [r for s in vocabulary.WIKI_SETTINGS if (r := log_rd(cd, wiki, s)) is not None]
    wiki_rd = combine(lambda *r: np.mean(np.stack(r), axis=0), *rds) if rds else None
    squares = [r for s in vocabulary.WIKI_SETTINGS if (r := log_rd_mean_square(cd, wiki, s)) is not None]
    wiki_square = combine(lambda *r: np.mean(np.stack(r), axis=0), *squares) if squares else None
    wiki_mad = log_mad_ratio(cd, wiki, "len1000", "len100")
    return [
        Part(F5_SHARES, contrast, "above", 0.0, role=roles.SHARES),
        Part("Wiki 100 words roughness", short, "above", 0.0, role=roles.WIKI_ROUGHNESS, decides=False),
        Part(
            "reasoning Simplified CoT roughness",
            simplified,
            "above",
            0.0,
            role=roles.REASONING_ROUGHNESS,
            decides=False,
        ),
        nearly_same(WIKI_SAME, wiki_square, role=roles.WIKI_SAME),
        Part(
            "Wiki irrelevant / correct", wiki_rd, "within", SAME_MARGIN, Unit.RATIO, role=roles.WIKI_RD, decides=False
        ),
        Part(
            "paper's Wiki MAD 1000 / 100 words", wiki_mad, "above", 0.0, Unit.RATIO, role=roles.WIKI_MAD, decides=False
        ),
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
