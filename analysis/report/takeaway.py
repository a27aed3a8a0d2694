"""What was found, in at most three sentences, for the top of a book's first page.

Generated from the page's pooled findings and its store, each clause only where the store holds what
it reads: F1's gap beside how many more tokens the Detailed CoT's loss averages over and what that
averaging alone predicts (A1, with what is left of F1's own nuclear norm beyond it); the same text
scored on as few tokens as the bare answer (A4); and the answer's own tokens scored with and without
reasoning before them (A2), with F1's gap under a loss summed over tokens. Every size is the value of
the part named beside it, over the cells a summary reads (``cells.answers``), worded by ``voice``.
Where the first page shows the split of F1's gap, only the summed loss's sentence follows it
(``token_sum_sentence``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from analysis.checks import a1_averaging, a2_same_tokens, a4_scored_tokens, f1_larger
from analysis.findings import roles, scored_tokens
from analysis.findings.roles import Role
from analysis.findings.rules import Finding, Part, Unit
from analysis.report import cells, voice

F1, A1, A2, A4 = (m.CHECK.id for m in (f1_larger, a1_averaging, a2_same_tokens, a4_scored_tokens))


def _parts(findings: Sequence[Finding], check: str, role: Role) -> list[Part]:
    """The parts of one role of a check's cells that a summary reads (pooled where there are any)."""
    found = cells.answers(cells.of_check(findings, check))
    return [p for f in found if (p := f.part(role)) is not None and p.estimate is not None]


def _range(parts: Sequence[Part]) -> str:
    return voice.sized_range(parts, interval=False)


def _part_verdicts(findings: Sequence[Finding], check: str, role: Role) -> str:
    """How the parts of that role went, cell by cell: "3 holds, 1 not resolved" (each part's own
    verdict, ``cells.part_verdict``: the number beside it is the one that decided it)."""
    found = cells.answers(cells.of_check(findings, check))
    return voice.verdict_counts(
        cells.part_verdict(p, f)
        for f in found
        if (p := f.part(role)) is not None and p.estimate is not None and p.decides
    )


def _counts(averaging: Sequence[Part]) -> str:
    """How many times more tokens the Detailed CoT's loss averages over, from A1's averaging part
    (sqrt(R_Detailed / R_None)): "126 to 580"."""
    ratios = sorted(math.exp(2 * p.value) for p in averaging)
    low, high = (f"{r:.0f}" if r >= 10 else f"{r:.2g}" for r in (ratios[0], ratios[-1]))
    return low if low == high else f"{low} to {high}"


def f1_sentence(findings: Sequence[Finding]) -> str:
    """F1's gap, how many more tokens the slower loss averages over, what averaging alone predicts,
    and what is left of F1's nuclear norm beyond it ("" without F1's cells)."""
    gap = _parts(findings, F1, roles.F1_GAP)
    if not gap:
        return ""
    text = (
        f"Fast thinking's gradient is {_range(gap)} slow thinking's (None over Detailed CoT; F1's \"larger\": "
        f"{_part_verdicts(findings, F1, roles.F1_GAP)})"
    )
    averaging = _parts(findings, A1, roles.AVERAGING)
    rest = _parts(findings, A1, roles.NUCLEAR_BEYOND_AVERAGING)
    if averaging:
        text += (
            f", and the Detailed CoT's loss averages over {_counts(averaging)} times more tokens, which alone "
            f"predicts {_range(averaging)} (A1)"
        )
    if rest:
        text += f"; beyond that averaging, None CoT's nuclear norm is {_range(rest)} Detailed CoT's"
    return text + "."


def a4_sentence(findings: Sequence[Finding]) -> str:
    """The same Detailed-CoT text scored on as few tokens as the bare answer: its gradient over the
    all-token one and the share of F1's gap that reproduces ("" without A4's cells)."""
    gap, share = _parts(findings, A4, scored_tokens.SUBSET_GAP), _parts(findings, A4, scored_tokens.F1_SHARE)
    if not gap:
        return ""
    text = (
        f"On the same Detailed-CoT text, scoring only as many of its tokens as the bare answer has makes the "
        f"gradient {_range(gap)} larger"
    )
    if share:
        text += (
            f", {_range(share)} of F1's log gap (A4's \"at least half of F1's gap\": "
            f"{_part_verdicts(findings, A4, scored_tokens.F1_SHARE)})"
        )
    return text + "."


def a2_sentence(findings: Sequence[Finding], token_sum: Sequence[float] = ()) -> str:
    """The answer's own tokens scored with and without reasoning before them (A2), and F1's gap under
    a loss summed over tokens (``token_sum``: its ratios, None over Detailed CoT); "" without either."""
    gap = _parts(findings, A2, roles.SAME_TOKEN_GAP)
    pieces = []
    if gap:
        pieces.append(
            f"scoring only the final answer's own tokens, its gradient without reasoning before it over with "
            f'reasoning is {_range(gap)} (A2\'s "smaller after reasoning": '
            f"{_part_verdicts(findings, A2, roles.SAME_TOKEN_GAP)})"
        )
    summed = _token_sum_clause(token_sum)
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


def _token_sum_clause(token_sum: Sequence[float]) -> str:
    said = _token_sum(token_sum)
    return f"under a loss summed over tokens F1's gap {said[0]} ({said[1]})" if said else ""


def token_sum_sentence(token_sum: Sequence[float]) -> str:
    """The sentence that follows the split on the first page: fast thinking's larger gradient under a
    loss summed over tokens, no check named ("" where the store cannot say)."""
    said = _token_sum(token_sum)
    if said is None:
        return ""
    return f"Under a loss summed over response tokens instead of averaged, fast thinking's larger gradient {said[0]} ({said[1]})."


def found(findings: Sequence[Finding], *, token_sum: Sequence[float] = ()) -> str:
    """At most three sentences of what was found, with sizes ("" where the store holds none of it)."""
    return " ".join(s for s in (f1_sentence(findings), a4_sentence(findings), a2_sentence(findings, token_sum)) if s)
