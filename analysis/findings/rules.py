"""The verdict rule, and the typed results of a check: a claim is a list of *parts*, each a quantity
with a bound and a side, and a ``Finding`` is one check's parts on one model and scope with its
status.

A part says "the quantity lies above 0", "below the margin" or "within the margin"; its value,
interval and the verdict come from the same bootstrap resamples (``analysis.findings.bootstrap``).
The checks themselves are declared once in ``analysis.checks``, the quantities of each in
``analysis.findings.check_parts``, pooling over a family in ``analysis.findings.pooling``. What a
part is (``Role``), its unit (``Unit``), why a check does not apply (``NotApplicable``) and what a
finding notes (``Note``) travel as types: the report words them (``analysis.report.voice``) and
never parses a label, a prefix or a note.

Every quantity that decides a verdict has a null value of zero at any number of instructions:
levels, gaps and correct-vs-irrelevant differences are means of the logs of per-sample values
(a geometric mean; the logs also make the values' skew small), and layer-to-layer variation is the
mean squared step of the log curve with its noise term removed. The paper's own numbers (MAD of
the mean curve, the ratio of mean nuclear norms) are shown beside them and do not decide; a part
on the paper's mean nuclear norm has the role and facet of the part it accompanies and
``paper=True`` (``beside``), and a cell where the two point opposite ways is marked
(``sign_disagreements``).

Verdicts:
- "holds": every deciding part's 95% interval lies on the claim's side of its bound (an
  intersection-union test); a part on a permutation test (an ``Estimate`` with a ``null``, G1)
  needs its one-sided p-value below 2.5% instead, and never contradicts its claim; a part
  "within" a margin needs its whole interval inside (-margin, margin): two one-sided tests;
- "does not hold": some part's interval, widened for the number of parts (Bonferroni), lies on
  the other side;
- "not resolved": neither;
- "the datasets disagree": a family's deciding part whose datasets are decided in opposite directions
  (and no other part shows the claim false);
- "too few samples": fewer than ``bootstrap.MIN_VERDICT_SAMPLES`` instructions in some dataset
  behind a part;
- "not applicable": the check does not apply here (``NotApplicable``, with its kind and reason).

A family's part (``Part.per_dataset``, set where a family's parts are pooled) is decided by its
datasets as well as by their mean (``family_outcome``): two datasets decided in opposite directions
make it "the datasets disagree"; an "about the same" or "within" claim (``Part.each_dataset``) is
decided only where every dataset is decided alike (an intersection-union rule); any other part by
the mean, unless a dataset is decided against it.

The rules and their margins are stated on the methods page, one paragraph per finding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from functools import cached_property
from typing import Literal, NewType, get_args

import numpy as np
from scipy import stats as sps

from analysis.findings.bootstrap import LEVEL, MIN_VERDICT_SAMPLES, Estimate
from analysis.findings.roles import Role

__all__ = ["Role"]


class Verdict(str, Enum):
    """A finding's status. Its value is the word the book prints; a member equals, hashes and formats
    as that word, so tables and sets of either mix."""

    HOLDS = "holds"
    FAILS = "does not hold"
    DISAGREE = "the datasets disagree"  # a family whose datasets are decided in opposite directions
    UNRESOLVED = "not resolved"
    TOO_FEW = "too few samples"
    NOT_APPLICABLE = "not applicable"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __hash__(self) -> int:
        return hash(self.value)


HOLDS, FAILS, UNRESOLVED = Verdict.HOLDS, Verdict.FAILS, Verdict.UNRESOLVED
TOO_FEW, NOT_APPLICABLE, DISAGREE = Verdict.TOO_FEW, Verdict.NOT_APPLICABLE, Verdict.DISAGREE
DECIDED = (HOLDS, FAILS, UNRESOLVED, DISAGREE)  # the verdicts of cells that were tested

# "Nearly the same" and "clearly different" curves: a per-layer log ratio of irrelevant over correct
# whose root-mean-square over layers lies within log 1.1 (or whose mean lies beyond it), i.e. a
# difference of 10% of the curve's size, the size the paper calls a clear difference in its RD
# figures (F3, F5; F4 compares the sizes of two models' separations on it).
SAME_MARGIN = math.log(1.10)
SAME_MARGIN_PERCENT = f"{math.exp(SAME_MARGIN) - 1:.0%}"  # that margin as the claims word it


# A check's id ("F1", "A5"): declared by its check in the registry; a text becomes one only through
# ``checks.check_id``, which refuses an id the registry does not hold.
CheckId = NewType("CheckId", str)

# The side of its bound a part's claim puts it: above, below, or within (-bound, bound). A Literal, so
# that mypy checks every side written; a Part refuses any other at run time too.
Side = Literal["above", "below", "within"]
SIDES: tuple[Side, ...] = get_args(Side)


class Unit(Enum):
    """What a part's number is, which says how a reader sees it (``shown``) and how the book writes it."""

    RATIO = "ratio"  # a log ratio: the reader sees its exponential
    RMS_RATIO = "root-mean-square ratio"  # a noise-corrected mean square of log ratios: exp of its root
    DIFFERENCE = "difference"  # a difference on the quantity's own scale, 0 where there is none
    SHARE = "share"  # a share of a gap: 1 is all of it
    AUROC = "AUROC"  # 0.5 is chance
    P_VALUE = "p-value"
    LOSS = "loss"  # a mean token loss, in nats
    CORRELATION = "correlation"

    @property
    def is_ratio(self) -> bool:
        return self in (Unit.RATIO, Unit.RMS_RATIO)

    def shown(self, value: float) -> float:
        """The number a reader sees for a value of this unit (NaN stays NaN)."""
        if not np.isfinite(value):
            return math.nan
        if self is Unit.RATIO:
            return math.exp(value)
        if self is Unit.RMS_RATIO:
            return math.exp(math.sqrt(max(value, 0.0)))
        return float(value)


class Outcome(str, Enum):
    """What one part's interval says at its own level about its bound, decided once for every reader
    (the rules' verdicts, the split's tables and figure, the resolution counts). Its value is the word
    the book prints."""

    LARGER = "larger"  # the interval lies above the bound (for a "within" part: above the margin)
    SMALLER = "smaller"  # below the bound (below minus the margin)
    SAME = "about the same"  # within the margin either side of the bound
    UNRESOLVED = "not decided"  # none of these
    TOO_FEW = "too few instructions"  # fewer than MIN_VERDICT_SAMPLES in some dataset behind it
    DISAGREE = "the datasets disagree"  # a family's datasets decided larger and smaller

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __hash__(self) -> int:
        return hash(self.value)

    @property
    def decided(self) -> bool:
        """Whether the interval (a family's datasets) says something: larger, smaller, about the same,
        or the datasets disagree."""
        return self in (Outcome.LARGER, Outcome.SMALLER, Outcome.SAME, Outcome.DISAGREE)


# The outcome a part's claim needs, by its side.
CLAIMED = {"above": Outcome.LARGER, "below": Outcome.SMALLER, "within": Outcome.SAME}


@dataclass(frozen=True, kw_only=True)
class Part:
    """One quantity of a claim: the claim says it lies ``side`` ("above", "below" or "within",
    i.e. between -bound and bound) ``bound``, in the units of its estimate (a ratio's log).

    Built with keywords only, and every part says whether it ``decides`` (False for a number shown
    beside the verdict only). ``role`` is what the part is; with ``facet`` (the projection, pair of
    settings, setting or norm among several parts of one role) it is the part's identity, ``key``;
    ``group``, the heading a reader sees it under; ``margin``, for a part "above" or "below" its
    bound, the distance from it within which its outcome is "about the same" (None: it has none);
    ``paper``, a part on the paper's mean nuclear norm beside the part of the same role and facet
    (``beside``); ``opposite``, such a part whose sign differs from that of the part it accompanies;
    ``equivalence``, a one-sided part that states an equivalence ("nearly the same", "no better"),
    decided over a family as a "within" part is (``each_dataset``); ``per_dataset``, a family's
    part only: each dataset's own part (name, part) of those it pools, whose outcomes decide it with
    the mean (``family_outcome``).
    """

    name: str
    estimate: Estimate | None
    side: Side
    bound: float
    unit: Unit = Unit.DIFFERENCE
    role: Role
    decides: bool
    facet: tuple[str, ...] = ()
    group: str = ""
    margin: float | None = None
    paper: bool = False
    opposite: bool = False
    equivalence: bool = False
    per_dataset: tuple[tuple[str, Part], ...] = ()

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"part {self.name!r}: side {self.side!r} is none of {', '.join(SIDES)}")

    @property
    def key(self) -> tuple[Role, tuple[str, ...], bool]:
        """The part's identity within a finding, the same in every dataset of a family."""
        return self.role, self.facet, self.paper

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        return (math.nan, math.nan) if self.estimate is None else self.estimate.interval(level)

    @property
    def value(self) -> float:
        return math.nan if self.estimate is None else float(self.estimate.value)

    def shown(self) -> tuple[float, float, float]:
        """(value, low, high) as a reader sees them (``Unit.shown``)."""
        low, high = self.interval()
        return self.unit.shown(self.value), self.unit.shown(low), self.unit.shown(high)

    @property
    def each_dataset(self) -> bool:
        """Whether a family decides this part only where each of its datasets is decided alike (an
        intersection-union rule): an "about the same" or "within" claim, i.e. a part "within" its
        bound, one with a ``margin`` (a step read as a mechanism) or an ``equivalence``."""
        return self.side == "within" or self.margin is not None or self.equivalence

    @property
    def datasets(self) -> tuple[str, ...]:
        """The datasets a family's part pools (empty for a dataset's own part)."""
        return tuple(d for d, _ in self.per_dataset)

    def outcome_at(self, level: float = LEVEL) -> Outcome:
        """What the part's interval at ``level`` says of its bound, whatever its instructions; for a
        family's part, with what its datasets' intervals say (``family_outcome``)."""
        own = self.interval_outcome(level)
        if not self.per_dataset:
            return own
        return family_outcome(own, [p.outcome_at(level) for _, p in self.per_dataset], every=self.each_dataset)

    def interval_outcome(self, level: float = LEVEL) -> Outcome:
        """What the part's own interval at ``level`` says of its bound: a part on a permutation test
        (an ``Estimate`` with a ``null``, G1) is "larger" when its one-sided p-value lies below
        (1 - level) / 2 and "not decided" otherwise."""
        if self.estimate is not None and self.estimate.null is not None:
            return Outcome.LARGER if self.estimate.p_value() < (1 - level) / 2 else Outcome.UNRESOLVED
        low, high = self.interval(level)
        if self.side == "within":
            if low > -self.bound and high < self.bound:
                return Outcome.SAME
            return Outcome.LARGER if low > self.bound else Outcome.SMALLER if high < -self.bound else Outcome.UNRESOLVED
        if low > self.bound:
            return Outcome.LARGER
        if high < self.bound:
            return Outcome.SMALLER
        if self.margin is not None and self.bound - self.margin < low and high < self.bound + self.margin:
            return Outcome.SAME
        return Outcome.UNRESOLVED

    @cached_property
    def outcome(self) -> Outcome:
        """The part's outcome at the study's level, on at least ``MIN_VERDICT_SAMPLES`` instructions
        per dataset (else "too few instructions"): computed once, read by every verdict and table."""
        if self.n_smallest < MIN_VERDICT_SAMPLES:
            return Outcome.TOO_FEW
        return self.outcome_at()

    def supports(self, level: float = LEVEL) -> bool:
        """Whether the interval at ``level`` lies on the claim's side (``outcome`` at the study's level)."""
        return self.outcome_at(level) is CLAIMED[self.side]

    def contradicts(self, level: float = LEVEL) -> bool:
        """Whether the interval at ``level`` lies on the other side of the claim's bound. A family's
        part decided dataset by dataset (``each_dataset``) does where one of its datasets does, at
        ``level`` widened for the number of datasets (Bonferroni); any other family's part where its
        mean does and no dataset lies on the claim's side."""
        if self.estimate is not None and self.estimate.null is not None:
            return False  # a permutation test of "no information" cannot show the claim false
        if self.per_dataset:
            if self.each_dataset:
                widened = 1 - (1 - level) / len(self.per_dataset)
                return any(p.contradicts(widened) for _, p in self.per_dataset)
            if any(p.supports() for _, p in self.per_dataset):
                return False
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


def family_outcome(mean: Outcome, each: Sequence[Outcome], *, every: bool) -> Outcome:
    """A family's outcome from its mean's (``mean``) and its datasets' (``each``): "the datasets
    disagree" where one dataset is decided larger and another smaller; else, where ``every``
    dataset must agree (an "about the same" or "within" claim: ``Part.each_dataset``), the
    datasets' common outcome where all are decided alike and "not decided" otherwise (an
    intersection-union rule: the family's claim is wrong no more often than one dataset's); else
    the mean's, unless a dataset is decided against it ("not decided")."""
    if Outcome.LARGER in each and Outcome.SMALLER in each:
        return Outcome.DISAGREE
    if every:
        return each[0] if each and each[0].decided and all(o is each[0] for o in each) else Outcome.UNRESOLVED
    against = {Outcome.LARGER: Outcome.SMALLER, Outcome.SMALLER: Outcome.LARGER}.get(mean)
    return Outcome.UNRESOLVED if against is not None and against in each else mean


def above_zero(
    name: str,
    estimate: Estimate | None,
    *,
    role: Role,
    decides: bool,
    unit: Unit = Unit.DIFFERENCE,
    facet: tuple[str, ...] = (),
    group: str = "",
) -> Part:
    """A part whose claim is that it lies above 0 (the most common claim: a gap, a difference)."""
    return Part(
        name=name,
        estimate=estimate,
        side="above",
        bound=0.0,
        unit=unit,
        role=role,
        facet=facet,
        group=group,
        decides=decides,
    )


def _widened(level: float, parts: Sequence[Part]) -> float:
    """The level at which a part of ``parts`` contradicts its claim (Bonferroni over the parts)."""
    return 1 - (1 - level) / max(len(parts), 1)


def decide(parts: Sequence[Part], level: float = LEVEL) -> Verdict:
    """The verdict of a claim made of ``parts`` (see the module docstring); parts that do not
    decide are left out. A part whose datasets disagree is not read as showing the claim false: the
    finding says the datasets disagree, unless another part shows it false."""
    deciding = [p for p in parts if p.decides]
    return _decided(deciding, deciding, level)


def decide_role(parts: Sequence[Part], role: Role, level: float = LEVEL) -> Verdict:
    """What the deciding parts of one ``role`` say of their share of a claim made of ``parts``, by
    ``decide``'s rule: no verdict where the claim has none (a part without an estimate, too few
    instructions in any part), and a contradiction read at the claim's own level (its Bonferroni over
    all its deciding parts), so that a claim holds exactly where every role holds and fails exactly
    where some role fails."""
    deciding = [p for p in parts if p.decides]
    return _decided([p for p in deciding if p.role is role], deciding, level)


def contradicting(parts: Sequence[Part], level: float = LEVEL) -> list[Part]:
    """The deciding parts of a claim that show it false by ``decide``'s rule: each on the other side
    of the claim at the claim's level widened over its deciding parts (Bonferroni), its datasets not
    in disagreement. The claim fails exactly where there is one."""
    deciding = [p for p in parts if p.decides]
    return [p for p in deciding if _shows_false(p, _outcome(p, level), _widened(level, deciding))]


def _outcome(part: Part, level: float) -> Outcome:
    """A part's outcome at ``level`` (its own, as the book prints it, at the usual level)."""
    return part.outcome if level == LEVEL else part.outcome_at(level)


def _shows_false(part: Part, outcome: Outcome, widened: float) -> bool:
    return outcome is not Outcome.DISAGREE and part.contradicts(widened)


def _decided(mine: Sequence[Part], deciding: Sequence[Part], level: float) -> Verdict:
    """``decide``'s rule for the parts ``mine`` of a claim whose deciding parts are ``deciding``."""
    if not mine or any(p.estimate is None for p in deciding):
        return UNRESOLVED
    if min(p.n_smallest for p in deciding) < MIN_VERDICT_SAMPLES:
        return TOO_FEW
    outcomes = [_outcome(p, level) for p in mine]
    if all(o is CLAIMED[p.side] for p, o in zip(mine, outcomes)):
        return HOLDS
    if any(_shows_false(p, o, _widened(level, deciding)) for p, o in zip(mine, outcomes)):
        return FAILS
    return DISAGREE if Outcome.DISAGREE in outcomes else UNRESOLVED


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
    if estimate is None or not part.decides or estimate.null is not None:
        return None
    if part.per_dataset and part.each_dataset:  # every dataset must get there: the largest of theirs
        sizes = [
            instructions_for_power(replace(p, decides=True), power, level, assumed)
            for _, p in part.per_dataset
            if not p.supports(level)
        ]
        known = [n for n in sizes if n is not None]
        return max(known) if known and len(known) == len(sizes) else None
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
    variance, df_now = se**2, estimate.df
    size = float(n)
    for _ in range(20):
        df = max(df_now * size / n, 1.0)
        t = sps.t.ppf(1 - (1 - level) / 2, df)
        size = max(2.0, variance * n * ((t + z) / distance) ** 2)
    return int(math.ceil(size))


class Why(Enum):
    """The kinds of reason a check does not apply to a cell."""

    NOT_ITS_BASE = "the two models are not an instruct model and its own base"
    PRECONDITION = "the gap the claim is about is not established"
    NOT_STORED = "a statistic the check reads is not stored"
    LOSS_SEPARATES = "the loss alone separates the responses"
    NOT_TRAINED = "an arm the check compares was not trained"
    UNDETERMINED = "the fit the check decides on is not determined by these instructions"


@dataclass(frozen=True)
class NotApplicable:
    """Why a check does not apply to a cell: its kind, the reason in a few words, the rest of the
    explanation, the command that would compute what is missing, and the parts that show it (a
    precondition's own part)."""

    why: Why
    reason: str
    detail: str = ""
    command: str = ""
    evidence: tuple[Part, ...] = ()


class NoteKind(Enum):
    """What a finding's note says, for code that reads it."""

    IDENTICAL_LEFT_OUT = "instructions left out as one input twice"
    DECIDED_OTHERWISE = "the check decided on another of its parts"
    OPPOSITE_SIGN = "the paper's quantity and the geometric mean point opposite ways"
    COVARIATES = "the covariates partialled out"
    LOSS_MATCHED = "the check decided on the pairs matched on the loss"
    EXTRAPOLATION = "the datasets where a fit extrapolates"
    BASE_MODEL = "the base model an instruct model is compared with"
    FAMILY_DATASETS = "the datasets a family pools, where one does not decide alone or one is left out"


@dataclass(frozen=True)
class Note:
    """A line under a finding's numbers, in words (``text``) and as data (``items``: the datasets,
    parts or covariates it names)."""

    kind: NoteKind
    text: str
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One check on one model and scope (a dataset, or a family of datasets pooled): its parts, its
    notes, and why it does not apply here (``not_applicable``; None where it applies)."""

    check: CheckId
    model: str
    scope: str
    pooled: bool
    parts: tuple[Part, ...]
    notes: tuple[Note, ...] = ()
    not_applicable: NotApplicable | None = None

    @cached_property
    def verdict(self) -> Verdict:
        return NOT_APPLICABLE if self.not_applicable is not None else decide(self.parts)

    def part(self, role: Role, *, facet: tuple[str, ...] | None = None, paper: bool = False) -> Part | None:
        """The part of that role (and facet, where given; else the first of the role), None if absent."""
        for p in self.parts:
            if p.role is role and p.paper == paper and (facet is None or p.facet == facet):
                return p
        return None

    def note(self, kind: NoteKind) -> Note | None:
        return next((n for n in self.notes if n.kind is kind), None)

    @property
    def deciding(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if p.decides)

    def decided_by(self, headline: Role | None = None) -> Part | None:
        """The part whose size a cell prints, the one that decided its verdict: the headline part
        (else the first deciding part) where the claim holds or the samples are too few; the part on
        the wrong side where it does not hold (the headline among them first); the part not yet on
        its side where it is not resolved, and the part whose datasets disagree where they do (the
        headline among them first). None where it does not apply."""
        deciding = self.deciding
        if self.not_applicable is not None or not deciding:
            return None
        first = self.part(headline) if headline is not None else None
        first = first if first is not None and first.decides else deciding[0]
        verdict = self.verdict
        if verdict is DISAGREE:
            wrong = [p for p in deciding if p.outcome is Outcome.DISAGREE]
        elif verdict is FAILS:
            wrong = [
                p for p in deciding if p.outcome is not Outcome.DISAGREE and p.contradicts(_widened(LEVEL, deciding))
            ]
        elif verdict is UNRESOLVED:
            wrong = [p for p in deciding if not p.supports()]
        else:
            return first
        return first if any(p is first for p in wrong) or not wrong else wrong[0]

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
        known = [n for n in sizes if n is not None]
        if not sizes or len(known) < len(sizes):
            return math.nan
        return float(max(known))


# --------------------------------------------------------------------------- the paper's quantity beside


def beside(part: Part, estimate: Estimate | None) -> Part:
    """The paper's-quantity counterpart of a deciding part (its role and facet, ``paper=True``), shown
    beside it. It never decides: its intervals miss far more than 2.5% on one side at a few
    instructions (``scenarios``), so the geometric mean decides and the claim says so."""
    return Part(
        name=part.name,
        estimate=estimate,
        side=part.side,
        bound=part.bound,
        unit=part.unit,
        role=part.role,
        facet=part.facet,
        group=part.group,
        decides=False,
        paper=True,
    )


def sign_disagreements(parts: Sequence[Part]) -> list[Part]:
    """The parts whose geometric-mean value and paper's-quantity value have opposite signs."""
    twins = {p.key[:2]: p for p in parts if not p.paper}
    out = []
    for p in parts:
        if not p.paper or p.estimate is None:
            continue
        twin = twins.get(p.key[:2])
        if twin is not None and twin.estimate is not None and twin.estimate.value * p.estimate.value < 0:
            out.append(twin)
    return out
