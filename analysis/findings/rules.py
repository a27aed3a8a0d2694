"""The paper's findings F1-F5, and two questions beyond it, as claims checked with intervals.

Each check is written once here. A check is a list of *parts*, each a quantity with a bound and
a side ("the quantity lies above 0", "the quantity lies below the margin"); the quantity's value,
interval and the verdict come from the same bootstrap resamples (``analysis.findings.bootstrap``). Every
check runs per dataset and per family: the family's value of a part is the mean of its datasets'
values, its interval a stratified bootstrap (instructions resampled within each dataset).

Verdicts:
- "holds": every part's 95% interval lies on the claim's side of its bound (an intersection-union
  test: the claim as a whole is wrongly called true at most 2.5% of the time);
- "does not hold": some part's interval, widened for the number of parts (Bonferroni), lies on
  the other side;
- "not resolved": neither;
- "too few samples": fewer than ``bootstrap.MIN_VERDICT_SAMPLES`` instructions behind a part,
  where the intervals do not hold their level.

The rules and their margins are stated on the methods page, one paragraph per finding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import vocabulary
from analysis.findings import metrics
from analysis.findings.bootstrap import LEVEL, MIN_VERDICT_SAMPLES, CurveDraws, Estimate, combine, log_ratio, pooled
from analysis.formatting import fmt_interval

HOLDS, FAILS, UNRESOLVED, TOO_FEW = "holds", "does not hold", "not resolved", "too few samples"
VERDICTS = (HOLDS, FAILS, UNRESOLVED, TOO_FEW)

# "Nearly the same" curves: a mean |RD| below 10% of the curve's size (F3 under None CoT, F5).
# "Clearly different": a mean |RD| above it (F3 under Detailed CoT).
NEARLY_SAME_RD = 0.10
# F4: the instruct model "is not better" when its mean |RD| is at most 25% larger than the base's.
F4_MARGIN = math.log(1.25)
# L: the fast/slow gap is "not only length" when more than a quarter of it remains at equal length.
LENGTH_SHARE = 0.25

CLAIMS = {
    "F1": "None CoT gives larger nuclear norms than Detailed CoT, and the gap is larger in the early "
    "layers than in the late ones",
    "F2": "MAD falls from None to Simplified to Detailed CoT, for each of Q, K, V and O",
    "F3": f"Under Detailed CoT correct and irrelevant responses differ clearly (mean |RD| > {NEARLY_SAME_RD:g}, "
    f"irrelevant larger); under None CoT they are nearly the same (mean |RD| < {NEARLY_SAME_RD:g})",
    "F4": "The instruct model separates correct from irrelevant Detailed-CoT responses no better than its base "
    f"model (its mean |RD| at most {math.exp(F4_MARGIN) - 1:.0%} larger)",
    "F5": "Longer Wiki responses do not shrink MAD as much as slow thinking does at a similar length ratio "
    "(Detailed vs Simplified CoT), and correct vs irrelevant Wiki curves are nearly the same "
    f"(mean |RD| < {NEARLY_SAME_RD:g})",
    "L": f"The None vs Detailed CoT gap is not only response length: more than {LENGTH_SHARE:.0%} of it remains "
    "when Detailed CoT is cut to the None-CoT length",
}
PAPER_CHECKS = ("F1", "F2", "F3", "F4", "F5")
CHECKS = (*PAPER_CHECKS, "L")


# --------------------------------------------------------------------------- parts and verdicts


@dataclass(frozen=True)
class Part:
    """One quantity of a claim: the claim says it lies ``side`` ("above" or "below") ``bound``.

    ``show`` turns the quantity into the number a reader sees (e.g. exp of a log ratio).
    """

    name: str
    estimate: Estimate | None
    side: str
    bound: float
    show: Callable[[float], float] = float
    group: str = ""  # parts of one group are written together, e.g. one ratio for Q, K, V and O

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        return (math.nan, math.nan) if self.estimate is None else self.estimate.interval(level)

    def supports(self, level: float = LEVEL) -> bool:
        low, high = self.interval(level)
        return bool(low > self.bound) if self.side == "above" else bool(high < self.bound)

    def contradicts(self, level: float = LEVEL) -> bool:
        low, high = self.interval(level)
        return bool(high < self.bound) if self.side == "above" else bool(low > self.bound)

    @property
    def n(self) -> int:
        return 0 if self.estimate is None else self.estimate.n

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
    """The verdict of a claim made of ``parts`` (see the module docstring)."""
    if not parts or any(p.estimate is None for p in parts):
        return UNRESOLVED
    if min(p.n for p in parts) < MIN_VERDICT_SAMPLES:
        return TOO_FEW
    if all(p.supports(level) for p in parts):
        return HOLDS
    widened = 1 - (1 - level) / len(parts)
    if any(p.contradicts(widened) for p in parts):
        return FAILS
    return UNRESOLVED


@dataclass(frozen=True)
class Finding:
    """One check on one model and scope (a dataset, or a family of datasets pooled)."""

    check: str
    model: str
    scope: str
    pooled: bool
    parts: tuple[Part, ...]
    note: str = ""

    @property
    def verdict(self) -> str:
        return decide(self.parts)

    @property
    def n(self) -> int:
        return min((p.n for p in self.parts), default=0)

    def numbers(self) -> str:
        """Each part with its interval; the parts of a group after one heading."""
        groups: dict[str, list[Part]] = {}
        for part in self.parts:
            groups.setdefault(part.group, []).append(part)
        pieces = [
            (f"{group}: " if group else "") + ", ".join(p.text() for p in parts) for group, parts in groups.items()
        ]
        text = "; ".join(pieces)
        return f"{text} ({self.note})" if self.note else text


# --------------------------------------------------------------------------- quantities of one dataset


def _segment(n_layers: int, segment: str) -> tuple[int, int]:
    return (0, n_layers) if segment == "all" else metrics.layer_splits(n_layers)[segment]


def _estimate(value, draws, dataset: str, n: int) -> Estimate:
    return Estimate(float(value), np.asarray(draws, dtype=float), ((dataset, int(n)),))


def mean_level(
    cd: CurveDraws,
    dataset: str,
    setting: str,
    segment: str = "all",
    responses: str = vocabulary.CORRECT,
    stat: str = "nuclear_norm",
) -> Estimate | None:
    """Mean of a condition's curves over q, k, v, o and the segment's layers."""
    condition = cd.condition_key(dataset, setting, responses)
    if not cd.has(condition, stat):
        return None
    lo, hi = _segment(cd.n_layers, segment)
    estimate, draws = cd.stacked(condition, stat)
    return _estimate(
        estimate[:, lo:hi].mean(), draws[:, :, lo:hi].mean(axis=(0, 2)), dataset, cd.count(condition, stat)
    )


def mad(cd: CurveDraws, dataset: str, setting: str, proj: str, stat: str = "nuclear_norm") -> Estimate | None:
    """All-layer MAD of one projection's mean curve (correct responses)."""
    key = (cd.condition_key(dataset, setting), proj, stat)
    if key not in cd.estimate:
        return None
    return _estimate(
        metrics.mean_absolute_difference(cd.estimate[key]),
        metrics.mean_absolute_difference(cd.draws[key]),
        dataset,
        cd.n_samples[key],
    )


def log_mad_ratio(cd: CurveDraws, dataset: str, slow: str, fast: str) -> Estimate | None:
    """log(MAD(slow) / MAD(fast)) averaged over q, k, v, o."""
    ratios = [
        log_ratio(a, b)
        for p in vocabulary.PROJECTIONS
        if (a := mad(cd, dataset, slow, p)) is not None and (b := mad(cd, dataset, fast, p)) is not None
    ]
    if len(ratios) < len(vocabulary.PROJECTIONS):
        return None
    return combine(lambda *r: np.mean(np.stack(r), axis=0), *ratios)


def rd_level(
    cd: CurveDraws, dataset: str, setting: str, signed: bool = False, excluded: Iterable[int] = ()
) -> Estimate | None:
    """Mean |RD| (or mean RD) over layers of irrelevant against correct curves, averaged over
    q, k, v, o; instructions in ``excluded`` are left out of both curves."""
    a, b = (cd.condition_key(dataset, setting, r) for r in vocabulary.RESPONSES)
    if not (cd.has(a) and cd.has(b)):
        return None
    excluded = set(excluded)
    (ea, da, na), (eb, db, nb) = cd.stacked_without(a, excluded), cd.stacked_without(b, excluded)
    if min(na, nb) == 0:
        return None

    def summary(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        rd = metrics.relative_difference(x, y)
        return metrics.finite_mean(rd if signed else np.abs(rd))

    return _estimate(np.mean(summary(ea, eb)), np.mean(summary(da, db), axis=0), dataset, min(na, nb))


# --------------------------------------------------------------------------- the checks, per dataset


def _times(x: float) -> float:
    return math.exp(x)


def f1_parts(cd: CurveDraws, dataset: str, **_) -> list[Part] | None:
    """F1: None over Detailed CoT nuclear norm (all layers) > 1, and that ratio larger early than late."""
    levels = {
        (s, seg): mean_level(cd, dataset, s, seg) for s in ("none", "detailed") for seg in ("all", "early", "late")
    }
    if any(v is None for v in levels.values()):
        return None
    overall = log_ratio(levels["none", "all"], levels["detailed", "all"])
    early = log_ratio(levels["none", "early"], levels["detailed", "early"])
    late = log_ratio(levels["none", "late"], levels["detailed", "late"])
    return [
        Part("None / Detailed (all layers) x", overall, "above", 0.0, _times),
        Part("early / late of that ratio x", combine(np.subtract, early, late), "above", 0.0, _times),
    ]


def f2_parts(cd: CurveDraws, dataset: str, **_) -> list[Part] | None:
    """F2: MAD(faster) / MAD(slower) > 1 for each projection and each adjacent pair of settings."""
    settings = [s for s in vocabulary.COT_SETTINGS if cd.has(cd.condition_key(dataset, s))]
    if len(settings) < 2:
        return None
    parts = []
    for fast, slow in zip(settings, settings[1:]):
        for proj in vocabulary.PROJECTIONS:
            ratio = log_ratio(mad(cd, dataset, fast, proj), mad(cd, dataset, slow, proj))
            group = f"MAD {vocabulary.setting_label(fast).split()[0]} / {vocabulary.setting_label(slow).split()[0]} x"
            parts.append(Part(proj.upper(), ratio, "above", 0.0, _times, group))
    return parts


def f3_parts(cd: CurveDraws, dataset: str, identical: Iterable[int] = (), **_) -> list[Part] | None:
    """F3: Detailed |RD| > margin with irrelevant larger; None |RD| < margin (identical pairs left out)."""
    detailed = rd_level(cd, dataset, "detailed")
    signed = rd_level(cd, dataset, "detailed", signed=True)
    none = rd_level(cd, dataset, "none", excluded=identical)
    if detailed is None or none is None:
        return None
    return [
        Part("Detailed mean |RD|", detailed, "above", NEARLY_SAME_RD),
        Part("Detailed mean RD", signed, "above", 0.0),
        Part("None mean |RD|", none, "below", NEARLY_SAME_RD),
    ]


def f4_parts(instruct: CurveDraws, base: CurveDraws, dataset: str) -> list[Part] | None:
    """F4: mean |RD| (Detailed CoT) of the instruct model over the base's < 1 + margin."""
    a, b = rd_level(instruct, dataset, "detailed"), rd_level(base, dataset, "detailed")
    if a is None or b is None:
        return None
    return [Part("instruct / base Detailed mean |RD| x", log_ratio(a, b), "below", F4_MARGIN, _times)]


def length_parts(cd: CurveDraws, dataset: str, **_) -> list[Part] | None:
    """L: the share of the None/Detailed gap (log nuclear norm) left when Detailed is cut to None length."""
    none, detailed, cut = (mean_level(cd, dataset, s) for s in ("none", "detailed", "detailed_cut_none"))
    if none is None or detailed is None or cut is None:
        return None
    share = combine(lambda n, d, c: np.log(n / c) / np.log(n / d), none, detailed, cut)
    return [Part("share of the gap left at equal length", share, "above", LENGTH_SHARE)]


def f5_parts(cd: CurveDraws, reference: CurveDraws | None = None) -> list[Part] | None:
    """F5: log MAD ratio len1000/len100 minus the reasoning log MAD ratio Detailed/Simplified > 0,
    and Wiki mean |RD| (over the Wiki settings) < margin."""
    wiki = vocabulary.WIKI_DATASET
    wiki_ratio = log_mad_ratio(cd, wiki, "len1000", "len100")
    if wiki_ratio is None:
        return None
    ref = reference if reference is not None else cd
    reasoning = pooled([log_mad_ratio(ref, d, "detailed", "simplified") for d in ref.datasets() if d != wiki])
    contrast = None if reasoning is None else combine(np.subtract, wiki_ratio, reasoning)
    rds = [rd_level(cd, wiki, s) for s in vocabulary.WIKI_SETTINGS]
    rds = [r for r in rds if r is not None]
    wiki_rd = combine(lambda *r: np.mean(np.stack(r), axis=0), *rds) if rds else None
    return [
        Part("Wiki MAD shrink / reasoning MAD shrink x", contrast, "above", 0.0, _times),
        Part("Wiki mean |RD|", wiki_rd, "below", NEARLY_SAME_RD),
    ]


PER_DATASET = {"F1": f1_parts, "F2": f2_parts, "F3": f3_parts, "L": length_parts}


# --------------------------------------------------------------------------- pooling and the table


def pool_parts(per_dataset: Sequence[list[Part]]) -> list[Part]:
    """A family's parts: each part (matched by name) pooled over the datasets that have it."""
    labels = list(dict.fromkeys(p.label for parts in per_dataset for p in parts))
    out = []
    for label in labels:
        same = [p for parts in per_dataset for p in parts if p.label == label]
        first = same[0]
        out.append(
            Part(first.name, pooled([p.estimate for p in same]), first.side, first.bound, first.show, first.group)
        )
    return out


def _family_findings(check: str, model: str, by_dataset: dict[str, list[Part]], note: str = "") -> list[Finding]:
    """Per-dataset findings of one check, then one pooled finding per family with two datasets or more."""
    out = [Finding(check, model, d, False, tuple(parts), note) for d, parts in by_dataset.items()]
    for family in vocabulary.REASONING_FAMILIES:
        members = [parts for d, parts in by_dataset.items() if vocabulary.family_of(d) == family]
        if len(members) >= 2:
            out.append(Finding(check, model, family, True, tuple(pool_parts(members)), note))
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


def pair_findings(draws: dict[str, CurveDraws], pairs: dict[str, str]) -> list[Finding]:
    """F4 for every (instruct -> base) pair present, per dataset and per family."""
    out = []
    for instruct, base in pairs.items():
        if instruct not in draws or base not in draws:
            continue
        by_dataset = {}
        for dataset in reasoning_datasets(draws[instruct]):
            parts = f4_parts(draws[instruct], draws[base], dataset)
            if parts is not None:
                by_dataset[dataset] = parts
        out += _family_findings("F4", instruct, by_dataset, note=f"base: {base}")
    return out


FINDING_COLUMNS = ["check", "model", "scope", "pooled", "verdict", "n", "numbers", "claim"]


def findings_table(findings: Iterable[Finding]) -> pd.DataFrame:
    """One row per finding: check, model, scope, pooled, verdict, n (instructions behind the
    smallest part), numbers (each part with its interval) and the claim."""
    rows = [
        {
            "check": f.check,
            "model": f.model,
            "scope": f.scope,
            "pooled": f.pooled,
            "verdict": f.verdict,
            "n": f.n,
            "numbers": f.numbers(),
            "claim": CLAIMS[f.check],
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
                    "n": p.n,
                }
            )
    return pd.DataFrame(rows)
