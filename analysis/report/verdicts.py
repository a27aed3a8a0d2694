"""The findings as a reader sees them: the verdict matrix, short paragraphs, the exact numbers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from analysis import vocabulary
from analysis.findings.bootstrap import MIN_VERDICT_SAMPLES
from analysis.findings.rules import CHECKS, CLAIMS, FAILS, HOLDS, VERDICTS, Finding, findings_table


def table(found: Iterable[Finding]) -> pd.DataFrame:
    """The findings as one table (``rules.findings_table``)."""
    return findings_table(found)


def claims_text(checks: Sequence[str] = CHECKS) -> str:
    """Markdown list of the claims checked, as the methods page states them."""
    return "\n".join(f"- **{c}**: {CLAIMS[c]}." for c in checks)


def verdict_counts(rows: pd.DataFrame) -> str:
    """ "a holds, b does not hold, ..." over the verdicts of some findings."""
    counts = rows["verdict"].value_counts()
    return ", ".join(f"{int(counts[v])} {v}" for v in VERDICTS if counts.get(v, 0))


def scope_text(scope: str, pooled: bool) -> str:
    """A scope as the book names it, "(pooled)" after a family."""
    return vocabulary.scope_label(scope) + (" (pooled)" if pooled and scope in vocabulary.FAMILY_DATASETS else "")


def model_paragraph(found: pd.DataFrame, model: str) -> str:
    """One paragraph for one model: each check's pooled verdicts, then how its datasets went,
    naming the datasets whose verdict differs from the family's."""
    rows = found[found["model"] == model]
    if rows.empty:
        return ""
    sentences = []
    for check in CHECKS:
        part = rows[rows["check"] == check]
        if part.empty:
            continue
        pooled_rows = part[part["pooled"]]
        head = "; ".join(f"{r.verdict} for {scope_text(r.scope, True)} (n = {r.n})" for r in pooled_rows.itertuples())
        single = part[~part["pooled"]]
        detail = ""
        if len(single):
            decided = single[single["verdict"].isin([HOLDS, FAILS])]
            detail = f"{'; ' if head else ''}per dataset {verdict_counts(single)}"
            if 0 < len(decided) <= 4:
                detail += " (" + ", ".join(f"{r.scope}: {r.verdict}" for r in decided.itertuples()) + ")"
        sentences.append(f"**{check}** {head}{detail}.")
    return f"**{model}.** " + " ".join(sentences)


def summary_text(found: pd.DataFrame) -> str:
    """Markdown: one paragraph per model."""
    if found.empty:
        return "The data read here cover none of the checks."
    models = list(dict.fromkeys(found["model"]))
    return "\n\n".join(model_paragraph(found, m) for m in models)


def format_findings(found: pd.DataFrame, pooled_only: bool = False) -> pd.DataFrame:
    """The findings for display: check, scope, verdict, n and the numbers behind the verdict."""
    if found.empty:
        return found
    rows = found[found["pooled"]] if pooled_only else found
    return pd.DataFrame(
        {
            "model": rows["model"],
            "check": rows["check"],
            "scope": [scope_text(s, p) for s, p in zip(rows["scope"], rows["pooled"])],
            "verdict": rows["verdict"],
            "n": rows["n"],
            "numbers": rows["numbers"],
        }
    )


def matrix_note(found: pd.DataFrame, profile: str | None, note: str | None) -> str:
    """The line under the verdict matrix: what each cell's number means and which run it is."""
    text = (
        f"Number in a cell: instructions behind the verdict (fewest over its parts); verdicts need at least "
        f"{MIN_VERDICT_SAMPLES}."
    )
    if profile:
        text += f" Profile: {profile}."
    return text + (f" {note}." if note else "")
