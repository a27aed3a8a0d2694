"""What was found, in at most three sentences, for the top of a book's first page.

Generated from the page's pooled findings and its store, each clause only where the store holds what
it reads: fast over slow thinking's gap (the part of role ``roles.F1_GAP`` that decides a cell); the
answer's own tokens scored with and without reasoning before them (``roles.REASONING_STEP``, where it
decides), with the gap under a loss summed over tokens. The checks are found by those roles, never by
their ids. Every size is the value of the part named beside it, over the cells a summary reads
(``cells.answers``), worded by ``voice``. Where the first page shows a chain, only the summed
loss's sentence follows it (``token_sum_sentence``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.findings import roles
from analysis.findings.roles import Role
from analysis.findings.rules import Finding, Part, Unit
from analysis.report import cells, voice


def _deciding(findings: Sequence[Finding], role: Role) -> list[Finding]:
    """The cells a summary reads (pooled where there are any) of the check whose part of that role decides."""
    check = next((f.check for f in findings if (p := f.part(role)) is not None and p.decides), None)
    return [] if check is None else cells.answers(cells.of_check(findings, check))


def _parts(findings: Sequence[Finding], role: Role) -> list[Part]:
    """The parts of one role of the cells of the check it decides (pooled where there are any)."""
    return [p for f in _deciding(findings, role) if (p := f.part(role)) is not None and p.estimate is not None]


def _range(parts: Sequence[Part]) -> str:
    return voice.sized_range(parts, interval=False)


def _part_verdicts(findings: Sequence[Finding], role: Role) -> str:
    """How the parts of that role went, cell by cell: "3 holds, 1 not resolved" (each part's own
    verdict, ``cells.part_verdict``: the number beside it is the one that decided it)."""
    return voice.verdict_counts(
        cells.part_verdict(p, f)
        for f in _deciding(findings, role)
        if (p := f.part(role)) is not None and p.estimate is not None and p.decides
    )


def _check(findings: Sequence[Finding], role: Role) -> str:
    """The id of the check whose part of that role decides ("" where none does)."""
    found = _deciding(findings, role)
    return found[0].check if found else ""


def f1_sentence(findings: Sequence[Finding]) -> str:
    """Fast over slow thinking's gap, with how its cells went ("" without its cells)."""
    gap = _parts(findings, roles.F1_GAP)
    if not gap:
        return ""
    return (
        f"Fast thinking's gradient is {_range(gap)} slow thinking's (None over Detailed CoT; "
        f'{_check(findings, roles.F1_GAP)}\'s "larger": {_part_verdicts(findings, roles.F1_GAP)}).'
    )


def reasoning_sentence(findings: Sequence[Finding], token_sum: Sequence[float] = ()) -> str:
    """The answer's own tokens scored with and without reasoning before them (S's reasoning step), and
    F1's gap under a loss summed over tokens (``token_sum``: its ratios, None over Detailed CoT); ""
    without either."""
    gap = _parts(findings, roles.REASONING_STEP)
    pieces = []
    if gap:
        pieces.append(
            f"scoring only the final answer's own tokens, its gradient without reasoning before it over with "
            f'reasoning is {_range(gap)} ({_check(findings, roles.REASONING_STEP)}\'s "smaller after reasoning": '
            f"{_part_verdicts(findings, roles.REASONING_STEP)})"
        )
    summed = _token_sum_clause(token_sum, _check(findings, roles.F1_GAP))
    pieces += [summed] if summed else []
    if not pieces:
        return ""
    text = "; ".join(pieces)
    return text[0].upper() + text[1:] + "."


def _token_sum(token_sum: Sequence[float]) -> tuple[str, str] | None:
    """F1's gap under a loss summed over tokens (``token_sum``: its ratios, None over Detailed CoT):
    which way it goes and its sizes ("reverses", "x0.05 to x0.8"); None where the store cannot say."""
    sums = [v for v in token_sum if np.isfinite(v)]
    if not sums:
        return None
    low, high = voice.size(min(sums), Unit.RATIO, times=True), voice.size(max(sums), Unit.RATIO, times=True)
    goes = "reverses" if max(sums) < 1 else "stays" if min(sums) > 1 else "goes either way"
    return goes, low if low == high else f"{low} to {high}"


def _token_sum_clause(token_sum: Sequence[float], gap_check: str) -> str:
    said = _token_sum(token_sum)
    named = f"{gap_check}'s gap" if gap_check else "the gap"
    return f"under a loss summed over tokens {named} {said[0]} ({said[1]})" if said else ""


def token_sum_sentence(token_sum: Sequence[float]) -> str:
    """The sentence that follows the split on the first page: fast thinking's larger gradient under a
    loss summed over tokens, no check named ("" where the store cannot say)."""
    said = _token_sum(token_sum)
    if said is None:
        return ""
    return f"Under a loss summed over response tokens instead of averaged, fast thinking's larger gradient {said[0]} ({said[1]})."


def found(findings: Sequence[Finding], *, token_sum: Sequence[float] = ()) -> str:
    """At most three sentences of what was found, with sizes ("" where the store holds none of it)."""
    return " ".join(s for s in (f1_sentence(findings), reasoning_sentence(findings, token_sum)) if s)
