"""Which findings a page's summaries read, and which part of a cell they print.

A cell is one finding (a check on one model and scope). It prints the size of the part that decided
its verdict (``rules.Finding.decided_by``, from its check's headline): the headline where the claim
holds, the part on the wrong side where it does not hold, the part not yet on its side where it is
not resolved, the part whose datasets are decided in opposite directions where they disagree (and
each dataset's size, ``apart``); every other part is in its hover text and the tables. A pooled cell
whose datasets' values lie on opposite sides of that part's bound, undecided, says so too
(``disagreeing``).
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.checks import REGISTRY, Registry, all_ids, get
from analysis.core import vocabulary
from analysis.findings.rules import DISAGREE, FAILS, HOLDS, UNRESOLVED, Finding, Outcome, Part, Verdict
from analysis.report import voice


def of_check(findings: Sequence[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


def answers(findings: Sequence[Finding]) -> list[Finding]:
    """The cells a summary counts: the pooled ones (a model over a family) where there are any, since
    those are the answers; else every cell."""
    pooled = [f for f in findings if f.pooled]
    return pooled if pooled else list(findings)


def checks_of(findings: Sequence[Finding], registry: Registry = REGISTRY) -> list[str]:
    """The checks of ``findings`` in the registry's order."""
    present = {f.check for f in findings}
    return [c for c in all_ids(registry) if c in present]


def printed(finding: Finding, registry: Registry = REGISTRY) -> Part | None:
    """The part whose size the cell prints (``Finding.decided_by`` with its check's headline)."""
    return finding.decided_by(get(finding.check, registry).headline)


def part_verdict(part: Part, finding: Finding) -> Verdict:
    """How one deciding part of a finding went: on the claim's side (holds), its datasets decided in
    opposite directions (the datasets disagree), on the other side at the finding's widened level
    (does not hold), or none of these (not resolved)."""
    if part.supports():
        return HOLDS
    if part.outcome is Outcome.DISAGREE:
        return DISAGREE
    deciding = finding.deciding
    widened = 1 - (1 - 0.95) / max(len(deciding), 1)
    return FAILS if part.contradicts(widened) else UNRESOLVED


def datasets_of(finding: Finding, findings: Sequence[Finding]) -> list[Finding]:
    """The per-dataset cells behind a pooled cell (same check and model, datasets of its family)."""
    if not finding.pooled or finding.scope not in vocabulary.FAMILY_DATASETS:
        return []
    members = set(vocabulary.FAMILY_DATASETS[finding.scope])
    return [
        f
        for f in findings
        if f.check == finding.check and f.model == finding.model and not f.pooled and f.scope in members
    ]


def _side(part: Part) -> int:
    """+1 where a part's value lies on its claim's side of the bound, -1 on the other, 0 at it."""
    value = part.value
    if part.side == "within":
        return 1 if abs(value) < part.bound else -1
    sign = 1 if part.side == "above" else -1
    return int(sign * (1 if value > part.bound else -1 if value < part.bound else 0))


def apart(finding: Finding, registry: Registry = REGISTRY) -> str:
    """Where a family's datasets disagree (its verdict), each one's size and outcome on the part the
    cell prints ("aqua +33% larger, gsm8k x0.24 smaller"); "" elsewhere."""
    part = printed(finding, registry)
    return voice.dataset_sizes(part) if finding.verdict is DISAGREE and part is not None else ""


def disagreeing(finding: Finding, findings: Sequence[Finding], registry: Registry = REGISTRY) -> list[tuple[str, Part]]:
    """(dataset, part) of each dataset behind a pooled cell, its part of the role the cell prints,
    where those datasets' values lie on opposite sides of the part's bound (empty where they agree,
    the cell is not pooled, or its verdict already says they disagree: ``apart``)."""
    part = printed(finding, registry)
    if part is None or finding.verdict is DISAGREE:
        return []
    found = [
        (f.scope, p)
        for f in datasets_of(finding, findings)
        if (p := f.part(part.role, facet=part.facet)) is not None and p.estimate is not None
    ]
    return found if {-1, 1} <= {_side(p) for _, p in found} else []
