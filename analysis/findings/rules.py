"""The verdict rule: a claim is a list of *parts*, each a quantity with a bound and a side.

A part says "the quantity lies above 0", "below the margin" or "within the margin"; its value,
interval and the verdict come from the same bootstrap resamples (``analysis.findings.bootstrap``).
The checks themselves (F1-F5, L, L2, each declared once) are in ``analysis.findings.checks``, the
quantities of each in ``analysis.findings.check_parts``, pooling over a family in
``analysis.findings.pooling``.

Every quantity that decides a verdict has a null value of zero at any number of instructions:
levels, gaps and correct-vs-irrelevant differences are means of the logs of per-sample values
(a geometric mean; the logs also make the values' skew small), and layer-to-layer variation is the
mean squared step of the log curve with its noise term removed. The paper's own numbers (MAD of
the mean curve, the ratio of mean nuclear norms) are shown beside them and do not decide; a part
on the paper's mean nuclear norm is named after the part it accompanies (``beside``), and a cell
where the two differ in sign is marked (``sign_disagreements``).

Verdicts:
- "holds": every deciding part's 95% interval lies on the claim's side of its bound (an
  intersection-union test: the claim as a whole is wrongly called true at most 2.5% of the time);
  a part on a permutation test (an ``Estimate`` with a ``null``, G1) needs its one-sided p-value
  below 2.5% instead, and never contradicts its claim;
  a part "within" a margin needs its whole interval inside (-margin, margin): two one-sided tests;
- "does not hold": some part's interval, widened for the number of parts (Bonferroni), lies on
  the other side;
- "not resolved": neither;
- "too few samples": fewer than ``bootstrap.MIN_VERDICT_SAMPLES`` instructions in some dataset
  behind a part;
- "not applicable": the check does not apply here (F4 on two models that are not an instruct
  model and its own base model; L and L2 where the gap they are about is not established).

The rules and their margins are stated on the methods page, one paragraph per finding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from enum import Enum

import numpy as np
from scipy import stats as sps

from analysis.core.formatting import fmt_interval
from analysis.findings.bootstrap import LEVEL, MIN_VERDICT_SAMPLES, Estimate

HOLDS, FAILS, UNRESOLVED, TOO_FEW = "holds", "does not hold", "not resolved", "too few samples"
NOT_APPLICABLE = "not applicable"
VERDICTS = (HOLDS, FAILS, UNRESOLVED, TOO_FEW, NOT_APPLICABLE)
DECIDED = (HOLDS, FAILS, UNRESOLVED)  # the verdicts of cells that were tested

# "Nearly the same" and "clearly different" curves: a per-layer log ratio of irrelevant over correct
# whose root-mean-square over layers lies within log 1.1 (or whose mean lies beyond it), i.e. a
# difference of 10% of the curve's size, the size the paper calls a clear difference in its RD
# figures (F3, F5; F4 compares the sizes of two models' separations on it).
SAME_MARGIN = math.log(1.10)


class Role(Enum):
    """What a part is to the code that reads it back (a check's precondition, what its adjustment
    changes, what its figure shows): parts are found by their role, never by their display name."""

    GAP = "the Simplified vs Detailed gap the length checks are about"
    CONTENT = "the fast setting against Detailed CoT cut to its length (L)"
    LENGTH = "Detailed CoT cut to the fast setting's length against full Detailed CoT (L2)"
    SHARE = "the share of the gap left at equal length"
    NONE_ROUGHNESS = "a projection's None vs Simplified roughness of the mean log curve (F2)"
    NONE_MEAN_CURVE_ROUGHNESS = "None vs Simplified roughness of the mean curve, on the paper's scale (F2)"
    LOG_SPREAD_CHANGE = "the change of None's log-scale spread across layers (F2)"
    PAPER_QUANTITY = "the paper's quantity beside the deciding part of the same name and group (``beside``)"
    FROBENIUS_GAP = "None over Detailed CoT of the Frobenius norm (A1)"
    AVERAGING = "what averaging over more response tokens alone predicts of that gap (A1)"
    BEYOND_AVERAGING = "what is left of the Frobenius gap beyond averaging: token size and alignment (A1)"
    TOKEN_SIZE = "the token-size share of what is left (A1, where the token energy is stored)"
    ALIGNMENT = "the alignment share of what is left (A1, where the token energy is stored)"
    BEYOND_LOSS = "the AUROC of the curves with the loss covariates partialled out, deciding (G1)"
    P_VALUE = "the one-sided sign-flip p-value of that AUROC (G1)"
    AUROC_LOSS = "the AUROC of the loss covariates alone under the deciding setting (G1)"
    AUROC_CURVES = "the AUROC of the layer curves alone under the deciding setting (G1)"
    LOSS_ORDER = "the share of pairs whose mean-loss difference has the majority sign (G1)"
    F1_GAP = "None over Detailed CoT, all layers (F1)"
    MAD_RATIO = "the paper's MAD ratio of the faster over the slower setting's mean curves (F2)"
    F3_GAP = "irrelevant over correct responses under Detailed CoT (F3)"
    SIZE_RATIO = "the instruct over the base model's size of the Detailed irrelevant / correct ratio (F4)"
    SHARES = "Wiki's share of roughness kept less reasoning's (F5)"
    SAME_TOKEN_GAP = "None over Detailed CoT on the answer tokens, all layers (A2)"
    EQUAL_LOSS_GAP = "that ratio at equal answer loss (A3)"


@dataclass(frozen=True)
class Part:
    """One quantity of a claim: the claim says it lies ``side`` ("above", "below" or "within",
    i.e. between -bound and bound) ``bound``.

    ``show`` turns the quantity into the number a reader sees (e.g. exp of a log ratio).
    ``group``, ``decides`` and ``role`` are keyword-only. ``decides``: False for a number shown
    beside the verdict only (the paper's own MAD ratio, the length share). ``role``: what the part
    is to the code that looks it up (None: nothing looks it up). ``opposite``: a part on the paper's
    quantity whose sign differs from that of the part it accompanies (``pooling.marked``).
    """

    name: str
    estimate: Estimate | None
    side: str
    bound: float
    show: Callable[[float], float] = float
    _: KW_ONLY
    group: str = ""  # parts of one group are written together, e.g. one ratio for Q, K, V and O
    decides: bool = True
    role: Role | None = None
    opposite: bool = False

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        return (math.nan, math.nan) if self.estimate is None else self.estimate.interval(level)

    def supports(self, level: float = LEVEL) -> bool:
        if self.estimate is not None and self.estimate.null is not None:  # a permutation test, one-sided
            return self.side == "above" and self.estimate.p_value() < (1 - level) / 2
        low, high = self.interval(level)
        if self.side == "within":
            return bool(low > -self.bound and high < self.bound)
        return bool(low > self.bound) if self.side == "above" else bool(high < self.bound)

    def contradicts(self, level: float = LEVEL) -> bool:
        if self.estimate is not None and self.estimate.null is not None:
            return False  # a permutation test of "no information" cannot show the claim false
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

    @property
    def shown_name(self) -> str:
        """The name a reader sees: a part on the paper's quantity is named after the part it
        accompanies, with ``PAPER_QUANTITY`` before it (and ``OPPOSITE_SIGN`` after it where marked)."""
        if self.role is not Role.PAPER_QUANTITY:
            return self.name
        return PAPER_QUANTITY + self.name + (OPPOSITE_SIGN if self.opposite else "")

    def text(self) -> str:
        """ "name est [low, high]" in the reader's units."""
        if self.estimate is None:
            return f"{self.shown_name}: not computed"
        low, high = self.interval()
        shown = [self.show(v) if np.isfinite(v) else math.nan for v in (self.estimate.value, low, high)]
        return f"{self.shown_name} {fmt_interval(*shown)}"

    @property
    def label(self) -> str:
        """The part's full name as a reader sees it (its group and its own name)."""
        return f"{self.group} {self.shown_name}".strip()


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
    if estimate is None or not part.decides or estimate.null is not None:
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


# --------------------------------------------------------------------------- the paper's quantity beside

# A part on the paper's quantity (the log ratio of arithmetic means of nuclear norms, bootstrap-t
# interval) has the name and group of the geometric-mean part it accompanies and the role
# ``Role.PAPER_QUANTITY``; a reader sees it with this prefix (``Part.shown_name``). It never
# decides: its intervals miss far more than 2.5% on one side at a few instructions
# (``scenarios``), so the geometric mean decides and the claim says so.
PAPER_QUANTITY = "paper's mean nuclear norm: "
OPPOSITE_SIGN = " (opposite sign to the geometric mean)"


def beside(part: Part, estimate: Estimate | None) -> Part:
    """The paper's-quantity counterpart of a deciding part, shown beside it."""
    return Part(
        part.name,
        estimate,
        part.side,
        part.bound,
        part.show,
        group=part.group,
        decides=False,
        role=Role.PAPER_QUANTITY,
    )


def sign_disagreements(parts: Sequence[Part]) -> list[str]:
    """Names of the deciding parts whose geometric-mean value and paper's-quantity value have
    opposite signs (both away from zero)."""
    twins = {(p.group, p.name): p for p in parts if p.role is not Role.PAPER_QUANTITY}
    out = []
    for p in parts:
        if p.role is not Role.PAPER_QUANTITY or p.estimate is None:
            continue
        twin = twins.get((p.group, p.name))
        if twin is not None and twin.estimate is not None and twin.estimate.value * p.estimate.value < 0:
            out.append(twin.name)
    return out
