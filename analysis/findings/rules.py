"""The paper's findings F1-F5, and two questions beyond it, as claims checked with intervals.

Each check is written once here. A check is a list of *parts*, each a quantity with a bound and
a side ("the quantity lies above 0", "the quantity lies below the margin"); the quantity's value,
interval and the verdict come from the same bootstrap resamples (``analysis.findings.bootstrap``). Every
check runs per dataset and per family: the family's value of a part is the mean of its datasets'
values, its interval a stratified bootstrap (instructions resampled within each dataset).

Every quantity that decides a verdict has a null value of zero at any number of instructions:
levels, gaps and correct-vs-irrelevant differences are means of the logs of per-sample values
(a geometric mean; the logs also make the values' skew small), and layer-to-layer variation is the
mean squared step of the log curve with its noise term removed. The paper's own numbers (MAD of
the mean curve) are shown beside them and do not decide.

Verdicts:
- "holds": every deciding part's 95% interval lies on the claim's side of its bound (an
  intersection-union test: the claim as a whole is wrongly called true at most 2.5% of the time);
  a part "within" a margin needs its whole interval inside (-margin, margin): two one-sided tests;
- "does not hold": some part's interval, widened for the number of parts (Bonferroni), lies on
  the other side;
- "not resolved": neither;
- "too few samples": fewer than ``bootstrap.MIN_VERDICT_SAMPLES`` instructions in some dataset
  behind a part;
- "not applicable": the check does not apply to these models (F4 on two models that are not an
  instruct model and its own base model).

The rules and their margins are stated on the methods page, one paragraph per finding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats as sps

from analysis import vocabulary
from analysis.findings.bootstrap import (
    LEVEL,
    MIN_VERDICT_SAMPLES,
    CurveDraws,
    Estimate,
    combine,
    pooled,
)
from analysis.findings.quantities import (
    log_gap,
    log_level,
    log_mad_ratio,
    log_rd,
    log_variance_change,
    mean_early_late,
    mean_gap,
    mean_rd,
    mean_rd_between,
    mean_roughness,
    mean_roughness_difference,
    roughness,
)
from analysis.findings.studentized import pool_any
from analysis.formatting import fmt_interval

HOLDS, FAILS, UNRESOLVED, TOO_FEW = "holds", "does not hold", "not resolved", "too few samples"
NOT_APPLICABLE = "not applicable"
VERDICTS = (HOLDS, FAILS, UNRESOLVED, TOO_FEW, NOT_APPLICABLE)
DECIDED = (HOLDS, FAILS, UNRESOLVED)  # the verdicts of cells that were tested

# "Nearly the same" and "clearly different" curves: a mean per-layer log ratio of irrelevant over
# correct within (or beyond) log 1.1, i.e. a difference of 10% of the curve's size, the size the
# paper calls a clear difference in its RD figures (F3, F5; F4 compares two models on it).
SAME_MARGIN = math.log(1.10)
NEARLY_SAME_RD = SAME_MARGIN  # the former name

CLAIMS = {
    "F1": "None CoT gives larger nuclear norms (geometric mean over instructions; the paper's mean nuclear norm "
    "shown beside) than Detailed CoT, and the gap is larger in the early layers than in the late ones",
    "F2": "Curves vary more from layer to layer the faster the thinking (None > Simplified > Detailed CoT), for "
    "each of Q, K, V and O (roughness of the mean log curve; None vs Simplified on the mean curve's roughness "
    "where None's log-scale spread changes across layers)",
    "F3": "Under Detailed CoT irrelevant responses give curves (geometric mean of nuclear norms; the paper's mean "
    "nuclear norm shown beside) clearly larger than correct ones (by more than "
    f"{math.exp(SAME_MARGIN) - 1:.0%}); under None CoT the two are nearly the same (within {math.exp(SAME_MARGIN) - 1:.0%})",
    "F4": "The instruct model separates correct from irrelevant Detailed-CoT responses no better than its own base "
    f"model (its irrelevant/correct ratio of geometric means of nuclear norms exceeds the base's by less than "
    f"{math.exp(SAME_MARGIN) - 1:.0%}; the paper's mean nuclear norm shown beside)",
    "F5": "Longer Wiki responses do not smooth the curves as much as slow thinking does (Detailed vs Simplified "
    f"CoT), and correct vs irrelevant Wiki curves are nearly the same (within {math.exp(SAME_MARGIN) - 1:.0%})",
    "L": "Content matters beyond length: Detailed CoT cut to the Simplified-CoT length still gives smaller "
    "nuclear norms (geometric mean; the paper's mean nuclear norm shown beside) than Simplified CoT, where the "
    "Simplified vs Detailed gap is established",
    "L2": "Length matters: Detailed CoT cut to the Simplified-CoT length gives larger nuclear norms (geometric "
    "mean; the paper's mean nuclear norm shown beside) than the full Detailed CoT, where the Simplified vs "
    "Detailed gap is established",
}
PAPER_CHECKS = ("F1", "F2", "F3", "F4", "F5")
LENGTH_CHECKS = ("L", "L2")
CHECKS = (*PAPER_CHECKS, *LENGTH_CHECKS)
# the parts a reader sees for the length control (the share is shown, never decides)
SHARE_PART = "share of the gap left at equal length"


# --------------------------------------------------------------------------- parts and verdicts


@dataclass(frozen=True)
class Part:
    """One quantity of a claim: the claim says it lies ``side`` ("above", "below" or "within",
    i.e. between -bound and bound) ``bound``.

    ``show`` turns the quantity into the number a reader sees (e.g. exp of a log ratio).
    ``decides``: False for a number shown beside the verdict only (the paper's own MAD ratio,
    the length share).
    """

    name: str
    estimate: Estimate | None
    side: str
    bound: float
    show: Callable[[float], float] = float
    group: str = ""  # parts of one group are written together, e.g. one ratio for Q, K, V and O
    decides: bool = True

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        return (math.nan, math.nan) if self.estimate is None else self.estimate.interval(level)

    def supports(self, level: float = LEVEL) -> bool:
        low, high = self.interval(level)
        if self.side == "within":
            return bool(low > -self.bound and high < self.bound)
        return bool(low > self.bound) if self.side == "above" else bool(high < self.bound)

    def contradicts(self, level: float = LEVEL) -> bool:
        low, high = self.interval(level)
        if self.side == "within":
            return bool(low > self.bound or high < -self.bound)
        return bool(high < self.bound) if self.side == "above" else bool(low > self.bound)

    @property
    def n(self) -> int:
        return 0 if self.estimate is None else self.estimate.n

    @property
    def n_smallest(self) -> int:
        """Instructions of the part's smallest dataset."""
        return 0 if self.estimate is None else self.estimate.n_smallest

    def text(self) -> str:
        """ "name est [low, high]" in the reader's units."""
        if self.estimate is None:
            return f"{self.name}: not computed"
        low, high = self.interval()
        shown = [self.show(v) if np.isfinite(v) else math.nan for v in (self.estimate.value, low, high)]
        return f"{self.name} {fmt_interval(*shown)}"

    @property
    def label(self) -> str:
        """The part's full name (its group and its own name)."""
        return f"{self.group} {self.name}".strip()


def decide(parts: Sequence[Part], level: float = LEVEL) -> str:
    """The verdict of a claim made of ``parts`` (see the module docstring); parts that do not
    decide are left out."""
    parts = [p for p in parts if p.decides]
    if not parts or any(p.estimate is None for p in parts):
        return UNRESOLVED
    if min(p.n_smallest for p in parts) < MIN_VERDICT_SAMPLES:
        return TOO_FEW
    if all(p.supports(level) for p in parts):
        return HOLDS
    widened = 1 - (1 - level) / len(parts)
    if any(p.contradicts(widened) for p in parts):
        return FAILS
    return UNRESOLVED


POWER = 0.8


def instructions_for_power(
    part: Part, power: float = POWER, level: float = LEVEL, assumed: float | None = None
) -> int | None:
    """Instructions per dataset at which the part would lie on the claim's side with probability
    ``power``, were its true value ``assumed`` (default: the measured value; 0 for a part that
    must lie within a margin) and its per-instruction spread the measured one.

    The usual normal-theory size, n = ((t(df) + z(power')) sd / distance)^2, with t taken at the
    size found (a few fixed-point steps) and, for a margin on both sides, z at (1 + power) / 2.
    None when the assumed value lies on the wrong side of the bound (no size would do), or the
    spread is unknown.
    """
    estimate = part.estimate
    if estimate is None or not part.decides:
        return None
    se, n = estimate.standard_error(), estimate.n_smallest
    if not (np.isfinite(se) and n >= 2):
        return None
    if part.side == "within":
        truth = 0.0 if assumed is None else assumed
        distance, z = part.bound - abs(truth), sps.norm.ppf((1 + power) / 2)
    else:
        truth = estimate.value if assumed is None else assumed
        distance, z = (truth - part.bound if part.side == "above" else part.bound - truth), sps.norm.ppf(power)
    if not distance > 0:
        return None
    if se == 0:
        return n
    size = float(n)
    for _ in range(20):
        t = sps.t.ppf(1 - (1 - level) / 2, max(size * max(estimate.df, 1.0) / n, 1.0))
        size = max(2.0, n * (se * (t + z) / distance) ** 2)
    return int(math.ceil(size))


@dataclass(frozen=True)
class Finding:
    """One check on one model and scope (a dataset, or a family of datasets pooled).

    ``not_applicable``: why the check does not apply here (then the verdict says so).
    """

    check: str
    model: str
    scope: str
    pooled: bool
    parts: tuple[Part, ...]
    note: str = ""
    not_applicable: str = ""

    @property
    def verdict(self) -> str:
        return NOT_APPLICABLE if self.not_applicable else decide(self.parts)

    @property
    def n(self) -> int:
        return min((p.n for p in self.parts if p.decides), default=0)

    @property
    def n_smallest(self) -> int:
        """Instructions of the smallest dataset behind a deciding part."""
        return min((p.n_smallest for p in self.parts if p.decides), default=0)

    def instructions_needed(self) -> float:
        """For a finding not resolved: instructions per dataset at which every deciding part not
        yet on the claim's side would get there with 80% probability at its measured value and
        spread (``instructions_for_power``); NaN when resolved, or when a part's measured value
        lies against the claim (no size would do)."""
        if self.verdict != UNRESOLVED:
            return math.nan
        sizes = [instructions_for_power(p) for p in self.parts if p.decides and not p.supports()]
        if not sizes or any(n is None for n in sizes):
            return math.nan
        return float(max(sizes))

    def numbers(self) -> str:
        """Each part with its interval; the parts of a group after one heading."""
        if self.not_applicable:
            return self.not_applicable
        groups: dict[str, list[Part]] = {}
        for part in self.parts:
            groups.setdefault(part.group, []).append(part)
        pieces = [
            (f"{group}: " if group else "") + ", ".join(p.text() for p in parts) for group, parts in groups.items()
        ]
        text = "; ".join(pieces)
        return f"{text} ({self.note})" if self.note else text


# --------------------------------------------------------------------------- the checks, per dataset


def _times(x: float) -> float:
    return math.exp(x)


def _short(setting: str) -> str:
    return vocabulary.setting_label(setting).split()[0]


def f1_parts(cd: CurveDraws, dataset: str, **_) -> list[Part] | None:
    """F1: None over Detailed CoT (geometric mean of nuclear norms, all layers) > 1, and that ratio
    larger early than late."""
    gaps = {seg: log_gap(cd, dataset, "none", "detailed", seg) for seg in ("all", "early", "late")}
    if any(v is None for v in gaps.values()):
        return None
    parts = [
        Part("None / Detailed (all layers) x", gaps["all"], "above", 0.0, _times),
        Part("early / late of that ratio x", combine(np.subtract, gaps["early"], gaps["late"]), "above", 0.0, _times),
    ]
    return parts + [
        beside(parts[0], mean_gap(cd, dataset, "none", "detailed")),
        beside(parts[1], mean_early_late(cd, dataset, "none", "detailed")),
    ]


def f2_parts(cd: CurveDraws, dataset: str, **_) -> list[Part] | None:
    """F2: for each projection and adjacent pair of settings, the noise-corrected roughness of the
    log curve (``corrected_roughness``) of the faster setting minus that of the slower > 0; the
    paper's MAD ratio of the mean curves shown beside it."""
    settings = [s for s in vocabulary.COT_SETTINGS if cd.has(cd.condition_key(dataset, s))]
    if len(settings) < 2:
        return None
    parts = []
    for fast, slow in zip(settings, settings[1:]):
        group = f"roughness {_short(fast)} - {_short(slow)}"
        for proj in vocabulary.PROJECTIONS:
            a, b = roughness(cd, dataset, fast, proj), roughness(cd, dataset, slow, proj)
            difference_ = None if a is None or b is None else combine(np.subtract, a, b)
            parts.append(Part(proj.upper(), difference_, "above", 0.0, float, group))
        parts.append(
            Part(
                "paper's MAD ratio (Q, K, V, O mean) x",
                log_mad_ratio(cd, dataset, fast, slow),
                "above",
                0.0,
                _times,
                group,
                decides=False,
            )
        )
        parts.append(
            Part(
                MEAN_CURVE_ROUGHNESS,
                mean_roughness_difference(cd, dataset, fast, slow),
                "above",
                0.0,
                float,
                group,
                False,
            )
        )
    if settings[0] == "none":
        parts.append(Part(LOG_SPREAD_CHANGE, log_variance_change(cd, dataset, "none"), "within", 0.0, decides=False))
    return parts


def f3_parts(cd: CurveDraws, dataset: str, identical: Iterable[int] = (), **_) -> list[Part] | None:
    """F3: Detailed irrelevant / correct > 1 + margin (clearly different, irrelevant larger);
    None irrelevant / correct within 1 -/+ margin (two one-sided tests; identical pairs left out)."""
    detailed = log_rd(cd, dataset, "detailed")
    none = log_rd(cd, dataset, "none", excluded=identical)
    if detailed is None or none is None:
        return None
    parts = [
        Part("Detailed irrelevant / correct x", detailed, "above", SAME_MARGIN, _times),
        Part("None irrelevant / correct x", none, "within", SAME_MARGIN, _times),
    ]
    return parts + [
        beside(parts[0], mean_rd(cd, dataset, "detailed")),
        beside(parts[1], mean_rd(cd, dataset, "none", excluded=identical)),
    ]


def f4_parts(instruct: CurveDraws, base: CurveDraws, dataset: str) -> list[Part] | None:
    """F4: the instruct model's Detailed irrelevant/correct log ratio minus its base model's < margin."""
    a, b = log_rd(instruct, dataset, "detailed"), log_rd(base, dataset, "detailed")
    if a is None or b is None:
        return None
    part = Part(
        "instruct / base of Detailed irrelevant / correct x", combine(np.subtract, a, b), "below", SAME_MARGIN, _times
    )
    return [part, beside(part, mean_rd_between(instruct, base, dataset))]


def with_share(parts: list[Part]) -> list[Part]:
    """The length parts with the share of the gap left at equal length, (gap - length effect) / gap
    or content / gap, in place of any earlier one: shown only where the gap itself is established
    (its interval above 0), since a ratio over a gap that may be zero has no stable interval."""
    parts = [p for p in parts if p.name != SHARE_PART]
    gap, effect = parts[0], parts[1]
    if gap.estimate is None or effect.estimate is None or not gap.supports():
        return parts
    if effect.name.startswith("Simplified"):
        share = combine(np.divide, effect.estimate, gap.estimate)
    else:
        share = combine(lambda e, g: 1 - e / g, effect.estimate, gap.estimate)
    return [*parts[:2], Part(SHARE_PART, share, "above", 0.0, decides=False), *parts[2:]]


def _length_view(cd: CurveDraws, dataset: str, fast: str, cut: str) -> dict[str, Estimate] | None:
    """Gap fast vs Detailed, fast vs the cut (content at equal length), cut vs Detailed (length)."""
    levels = {s: log_level(cd, dataset, s) for s in (fast, "detailed", cut)}
    if any(v is None for v in levels.values()):
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
    gap = Part("Simplified / Detailed x", main["gap"], "above", 0.0, _times)
    if claim == "content":
        effect = Part("Simplified / Detailed cut to its length x", main["content"], "above", 0.0, _times)
        paper = mean_gap(cd, dataset, "simplified", "detailed_cut_simplified")
    else:
        effect = Part("Detailed cut to Simplified length / Detailed x", main["length"], "above", 0.0, _times)
        paper = mean_gap(cd, dataset, "detailed_cut_simplified", "detailed")
    parts = with_share([gap, effect])
    parts += [beside(gap, mean_gap(cd, dataset, "simplified", "detailed")), beside(effect, paper)]
    second = _length_view(cd, dataset, "none", "detailed_cut_none")
    if second is not None:
        parts.append(
            Part("None / Detailed cut to None length x", second["content"], "above", 0.0, _times, "second view", False)
        )
    return parts


def length_parts(cd: CurveDraws, dataset: str, **_) -> list[Part] | None:
    """L (content beyond length): the Simplified vs Detailed gap > 0 and Simplified vs Detailed
    cut to the Simplified length > 0, in mean log nuclear norm; the share of the gap left at
    equal length and the None-length view shown."""
    return _length_parts(cd, dataset, "content")


def length_effect_parts(cd: CurveDraws, dataset: str, **_) -> list[Part] | None:
    """L2 (length matters): the gap > 0 and Detailed cut to the Simplified length vs full Detailed > 0."""
    return _length_parts(cd, dataset, "length")


def f5_parts(cd: CurveDraws, reference: CurveDraws | None = None) -> list[Part] | None:
    """F5: the roughness lost from Simplified to Detailed CoT (pooled over the reasoning datasets)
    minus that lost from Wiki 100 to 1000 words > 0; Wiki irrelevant/correct (mean over the Wiki
    settings) within 1 -/+ margin."""
    wiki = vocabulary.WIKI_DATASET
    short, long = mean_roughness(cd, wiki, "len100"), mean_roughness(cd, wiki, "len1000")
    if short is None or long is None:
        return None
    wiki_shrink = combine(np.subtract, short, long)
    ref = reference if reference is not None else cd
    shrinks = []
    for dataset in ref.datasets():
        if dataset == wiki:
            continue
        a, b = mean_roughness(ref, dataset, "simplified"), mean_roughness(ref, dataset, "detailed")
        if a is not None and b is not None:
            shrinks.append(combine(np.subtract, a, b))
    reasoning = pooled(shrinks)
    contrast = None if reasoning is None else combine(np.subtract, reasoning, wiki_shrink)
    rds = [r for s in vocabulary.WIKI_SETTINGS if (r := log_rd(cd, wiki, s)) is not None]
    wiki_rd = combine(lambda *r: np.mean(np.stack(r), axis=0), *rds) if rds else None
    wiki_mad = log_mad_ratio(cd, wiki, "len1000", "len100")
    return [
        Part("reasoning roughness lost - Wiki roughness lost", contrast, "above", 0.0),
        Part("Wiki irrelevant / correct x", wiki_rd, "within", SAME_MARGIN, _times),
        Part("paper's Wiki MAD 1000 / 100 words x", wiki_mad, "above", 0.0, _times, decides=False),
    ]


PER_DATASET = {"F1": f1_parts, "F2": f2_parts, "F3": f3_parts, "L": length_parts, "L2": length_effect_parts}


# --------------------------------------------------------------------------- pooling and the table


def pool_parts(per_dataset: Sequence[list[Part]]) -> list[Part]:
    """A family's parts: each part (matched by name) pooled over the datasets that have it."""
    labels = list(dict.fromkeys(p.label for parts in per_dataset for p in parts))
    out = []
    for label in labels:
        same = [p for parts in per_dataset for p in parts if p.label == label]
        first = same[0]
        out.append(
            Part(
                first.name,
                pool_any([p.estimate for p in same]),
                first.side,
                first.bound,
                first.show,
                first.group,
                first.decides,
            )
        )
    return out


def _family_findings(check: str, model: str, by_dataset: dict[str, list[Part]], note: str = "") -> list[Finding]:
    """Per-dataset findings of one check, then one pooled finding per family with two datasets or more."""
    out = [Finding(check, model, d, False, *marked(parts, note)) for d, parts in by_dataset.items()]
    for family in vocabulary.REASONING_FAMILIES:
        members = [parts for d, parts in by_dataset.items() if vocabulary.family_of(d) == family]
        if len(members) >= 2:
            parts = pool_parts(members)
            if check in LENGTH_CHECKS:
                parts = with_share(parts)
            out.append(Finding(check, model, family, True, *marked(parts, note)))
    return out


def reasoning_datasets(cd: CurveDraws) -> list[str]:
    return [d for d in cd.datasets() if d != vocabulary.WIKI_DATASET]


def model_findings(
    cd: CurveDraws,
    checks: Sequence[str] = CHECKS,
    identical: dict[str, frozenset] | None = None,
    reference: CurveDraws | None = None,
) -> list[Finding]:
    """Every check of one model that its curves cover, per dataset and per family.

    ``identical``: dataset -> instruction ids whose None-CoT irrelevant response equals the
    correct one (left out of F3's None |RD|). ``reference``: curves of reasoning data for F5
    when ``cd`` holds Wiki data only.
    """
    identical = identical or {}
    out = []
    for check in checks:
        if check in PER_DATASET:
            by_dataset = {}
            for dataset in reasoning_datasets(cd):
                parts = PER_DATASET[check](cd, dataset, identical=identical.get(dataset, ()))
                if parts is not None:
                    by_dataset[dataset] = parts
            note = _identical_note(cd, identical, by_dataset) if check == "F3" else ""
            out += _family_findings(check, cd.model, by_dataset, note)
        elif check == "F5":
            parts = f5_parts(cd, reference)
            if parts is not None:
                out.append(Finding("F5", cd.model, vocabulary.WIKI_DATASET, True, tuple(parts)))
    return out


def _identical_note(cd: CurveDraws, identical: dict[str, frozenset], by_dataset: dict) -> str:
    """Says how many stored None-CoT pairs were left out as one input twice (empty when none)."""
    counted = {}
    for dataset in by_dataset:
        key = (cd.condition_key(dataset, "none"), "q", "nuclear_norm")
        if key in cd.samples:
            counted[dataset] = len(set(cd.samples[key][1].tolist()) & set(identical.get(dataset, ())))
    left_out = {d: n for d, n in counted.items() if n}
    if not left_out:
        return ""
    listed = ", ".join(f"{d} {n}" for d, n in left_out.items())
    return f"None |RD| leaves out instructions whose irrelevant answer equals the correct one: {listed}"


def _common_prefix_length(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def default_model_pairs(templates: dict[str, str]) -> dict[str, str]:
    """Pair each instruct model with the base model whose name shares its longest prefix.

    `templates` maps model name -> "base" | "instruct". Returns instruct -> base. Ties go to the
    alphabetically first base model.
    """
    bases = sorted(m for m, t in templates.items() if t == "base")
    if not bases:
        return {}
    return {
        m: max(bases, key=lambda b: (_common_prefix_length(m, b), -bases.index(b)))
        for m, t in sorted(templates.items())
        if t == "instruct"
    }


def model_pairs(models: Sequence[str], templates: dict[str, str]) -> dict[str, str]:
    """instruct -> base: the paper's matched pairs where both are present, the rest by
    ``default_model_pairs``."""
    from analysis.registry import PAPER_PAIRS

    pairs = {ins: base for base, ins in PAPER_PAIRS if base in models and ins in models}
    rest = {m: t for m, t in templates.items() if m in models and m not in pairs and m not in pairs.values()}
    if any(t == "base" for t in rest.values()) and any(t == "instruct" for t in rest.values()):
        pairs.update(default_model_pairs(rest))
    elif any(t == "instruct" for t in rest.values()):
        bases = {m: t for m, t in templates.items() if t == "base" and m in models}
        pairs.update({k: v for k, v in default_model_pairs({**bases, **rest}).items() if k in rest})
    return pairs


def is_own_base(instruct: str, base: str, declared: dict[str, str] | None = None) -> bool:
    """Whether ``base`` is the base model ``instruct`` was tuned from: a pair of the paper
    (``registry.PAPER_PAIRS``) or one the user declares (instruct -> base)."""
    from analysis.registry import PAPER_PAIRS

    return (base, instruct) in set(map(tuple, PAPER_PAIRS)) or (declared or {}).get(instruct) == base


def not_applicable_reason(instruct: str, base: str) -> str:
    """Why F4 does not apply to a pair of models."""
    return (
        f"not applicable: {instruct} is not an instruct model of {base} (not a pair of the paper, none declared); "
        "F4 compares an instruct model with its own base model, and across families it measures something else"
    )


def pair_findings(
    draws: dict[str, CurveDraws], pairs: dict[str, str], declared: dict[str, str] | None = None
) -> list[Finding]:
    """F4 for every (instruct -> base) pair present, per dataset and per family; a pair that is not
    an instruct model with its own base (``is_own_base``) gets one "not applicable" finding per
    scope, with the reason."""
    out = []
    for instruct, base in pairs.items():
        if instruct not in draws or base not in draws:
            continue
        by_dataset = {}
        for dataset in reasoning_datasets(draws[instruct]):
            parts = f4_parts(draws[instruct], draws[base], dataset)
            if parts is not None:
                by_dataset[dataset] = parts
        found = _family_findings("F4", instruct, by_dataset, note=f"base: {base}")
        if not is_own_base(instruct, base, declared):
            reason = not_applicable_reason(instruct, base)
            found = [
                Finding(f.check, f.model, f.scope, f.pooled, f.parts, f.note, not_applicable=reason) for f in found
            ]
        out += found
    return out


FINDING_COLUMNS = [
    "check",
    "model",
    "scope",
    "pooled",
    "verdict",
    "n",
    "n_smallest",
    "n_for_power",
    "numbers",
    "claim",
    "opposite_sign",
]


def findings_table(findings: Iterable[Finding]) -> pd.DataFrame:
    """One row per finding: check, model, scope, pooled, verdict, n (instructions behind the
    smallest part), n_smallest (those of its smallest dataset), n_for_power (for a finding not
    resolved, the instructions per dataset that would resolve it with 80% power at the measured
    values, ``Finding.instructions_needed``), numbers (each part with its interval), the claim, and
    opposite_sign (the paper's mean nuclear norm and the geometric mean differ in sign in some part)."""
    rows = [
        {
            "check": f.check,
            "model": f.model,
            "scope": f.scope,
            "pooled": f.pooled,
            "verdict": f.verdict,
            "n": f.n,
            "n_smallest": f.n_smallest,
            "n_for_power": f.instructions_needed(),
            "numbers": f.numbers(),
            "claim": CLAIMS[f.check],
            "opposite_sign": bool(sign_disagreements(f.parts)),
        }
        for f in findings
    ]
    table = pd.DataFrame(rows, columns=FINDING_COLUMNS)
    if table.empty:
        return table
    order = {c: i for i, c in enumerate(CHECKS)}
    table["_c"] = table["check"].map(order)
    table["_s"] = table["scope"].map(scope_rank)
    return table.sort_values(["_c", "model", "_s"], kind="stable").drop(columns=["_c", "_s"]).reset_index(drop=True)


def scope_rank(scope: str) -> int:
    """Families first (math, commonsense, Wiki), then datasets in the book's order."""
    families = list(vocabulary.FAMILY_DATASETS)
    return families.index(scope) if scope in families else len(families) + vocabulary.dataset_rank(scope)


def part_table(findings: Iterable[Finding]) -> pd.DataFrame:
    """One row per part of every finding, with its value and interval in the reader's units."""
    rows = []
    for f in findings:
        for p in f.parts:
            low, high = p.interval()
            value = math.nan if p.estimate is None else p.estimate.value
            shown = [p.show(v) if np.isfinite(v) else math.nan for v in (value, low, high)]
            rows.append(
                {
                    "check": f.check,
                    "model": f.model,
                    "scope": f.scope,
                    "pooled": f.pooled,
                    "part": p.label,
                    "value": shown[0],
                    "low": shown[1],
                    "high": shown[2],
                    "bound": p.show(p.bound),
                    "side": p.side,
                    "supports": p.supports(),
                    "decides": p.decides,
                    "n": p.n,
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the paper's quantity beside

# A part on the paper's quantity (the log ratio of arithmetic means of nuclear norms, bootstrap-t
# interval) is named after the geometric-mean part it accompanies, with this prefix; it never
# decides: its intervals miss far more than 2.5% on one side at a few instructions
# (``scenarios``), so the geometric mean decides and the claim says so.
PAPER_QUANTITY = "paper's mean nuclear norm: "
OPPOSITE_SIGN = " (opposite sign to the geometric mean)"
MEAN_CURVE_ROUGHNESS = "mean curve's roughness (paper's scale)"
LOG_SPREAD_CHANGE = "None log-scale variance, late - early layers"


def beside(part: Part, estimate: Estimate | None) -> Part:
    """The paper's-quantity counterpart of a deciding part, shown beside it."""
    return Part(PAPER_QUANTITY + part.name, estimate, part.side, part.bound, part.show, part.group, decides=False)


def sign_disagreements(parts: Sequence[Part]) -> list[str]:
    """Names of the deciding parts whose geometric-mean value and paper's-quantity value have
    opposite signs (both away from zero)."""
    by_label = {p.label: p for p in parts}
    out = []
    for p in parts:
        if not p.name.startswith(PAPER_QUANTITY) or p.estimate is None:
            continue
        twin_name = p.name.removeprefix(PAPER_QUANTITY).removesuffix(OPPOSITE_SIGN)
        twin = by_label.get(f"{p.group} {twin_name}".strip())
        if twin is not None and twin.estimate is not None and twin.estimate.value * p.estimate.value < 0:
            out.append(twin.name)
    return out


def marked(parts: Sequence[Part], note: str = "") -> tuple[tuple[Part, ...], str]:
    """(parts, note) of a finding: the paper's-quantity parts that disagree in sign with their
    geometric-mean part renamed to say so, and the note saying it and whether None's log-scale
    spread changes across layers (then F2's log roughness is not the paper's)."""
    notes = [note] if note else []
    spread = [p for p in parts if p.name == LOG_SPREAD_CHANGE and p.estimate is not None]
    if spread and (spread[0].interval()[0] > 0 or spread[0].interval()[1] < 0):
        parts = mean_curve_decides(parts)
        notes.append(
            "None's log-scale spread changes across layers, so the mean log curve's roughness is not the "
            "paper's mean curve's: None vs Simplified is decided on the mean curve's roughness"
        )
    opposite = set(sign_disagreements(parts))
    if opposite:
        parts = [
            replace(p, name=p.name + OPPOSITE_SIGN)
            if p.name.startswith(PAPER_QUANTITY) and p.name.removeprefix(PAPER_QUANTITY) in opposite
            else p
            for p in parts
        ]
        notes.append(
            "the paper's mean nuclear norm and the geometric mean differ in sign: " + ", ".join(sorted(opposite))
        )
    return tuple(parts), "; ".join(notes)


NONE_GROUP = "roughness None - Simplified"


def mean_curve_decides(parts: Sequence[Part]) -> list[Part]:
    """F2's None vs Simplified parts where None's log-scale spread changes across layers: the mean
    curve's roughness (relative to its level) decides in place of the log curve's per projection.
    Its interval misses below the truth (a false "rougher") no more than 2.5% in the scenarios of
    ``scenarios`` (tests/test_calibration.py)."""
    out = []
    for p in parts:
        if p.group == NONE_GROUP and p.decides:
            p = replace(p, decides=False)
        elif p.group == NONE_GROUP and p.name == MEAN_CURVE_ROUGHNESS:
            p = replace(p, decides=True)
        out.append(p)
    return out
