"""The findings as a reader sees them: the verdict matrix, short paragraphs, the exact numbers."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.core import vocabulary
from analysis.core.formatting import fmt, per_model
from analysis.extract.token_counts import fill_command
from analysis.findings.averaging import TOKENS_UNKNOWN
from analysis.findings.bootstrap import MIN_VERDICT_SAMPLES
from analysis.findings.checks import REGISTRY, Registry, all_ids, anchor, get, headline_parts
from analysis.findings.rules import (
    DECIDED,
    FAILS,
    HOLDS,
    NOT_APPLICABLE,
    POWER,
    TOO_FEW,
    UNRESOLVED,
    VERDICTS,
)
from analysis.findings.stated_rates import check_rate

# The checks page as a results page (book/notebooks/<name>.html) reaches it in the built book: a
# page's generated Markdown keeps its links as they are written (myst-nb renders it as CommonMark).
CHECKS_PAGE = "../checks.html"


def claims_text(checks: Sequence[str] | None = None, registry: Registry = REGISTRY) -> str:
    """Markdown list of the claims checked (None: every check of the registry) in plain words, each
    linked to its estimand and rule on the checks page, which states them once (a check of another
    registry, not on that page: its rule beside it)."""
    items = []
    for check_id in all_ids(registry) if checks is None else checks:
        check = get(check_id, registry)
        rule = f"[rule]({CHECKS_PAGE}#{anchor(check_id)})" if check in REGISTRY else f"rule: {check.claim}"
        items.append(f"- **{check_id}**: {check.plain} ({rule}).")
    return "\n".join(items)


def verdict_counts(rows: pd.DataFrame) -> str:
    """ "a holds, b does not hold, ..." over the verdicts of some findings."""
    counts = rows["verdict"].value_counts()
    return ", ".join(f"{int(counts[v])} {v}" for v in VERDICTS if counts.get(v, 0))


def scope_text(scope: str, pooled: bool) -> str:
    """A scope as the book names it, "(pooled)" after a family."""
    return vocabulary.scope_label(scope) + (" (pooled)" if pooled and scope in vocabulary.FAMILY_DATASETS else "")


def model_paragraph(found: pd.DataFrame, model: str, registry: Registry = REGISTRY) -> str:
    """One paragraph for one model: each check's pooled verdicts, then how its datasets went,
    naming the datasets whose verdict differs from the family's."""
    return per_model(found[found["model"] == model], lambda _, rows: _checks_in_words(rows, registry))


def _checks_in_words(rows: pd.DataFrame, registry: Registry) -> str:
    sentences = []
    for check in all_ids(registry):
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
        reasons = set(part.loc[part["verdict"] == NOT_APPLICABLE, "numbers"])
        if reasons and (part["verdict"] == NOT_APPLICABLE).all():
            reason = next(iter(reasons)).removeprefix("not applicable: ")
            said = "not computed" if reason.startswith(TOKENS_UNKNOWN) else NOT_APPLICABLE
            sentences.append(f"**{check}** {said}: {reason}.")
            continue
        sentences.append(f"**{check}** {head}{detail}.")
    return " ".join(sentences)


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
            f"n per dataset for {POWER:.0%} power": [
                size_text(v) for v in rows.get("n_for_power", pd.Series(index=rows.index))
            ],
            "numbers": rows["numbers"],
        }
    )


LARGEST_SIZE_SHOWN = 1000


def size_text(size: float) -> str:
    """A number of instructions for the reader: empty when none, "over 1000" past that (a measured
    value near its bound makes the size explode, and its exact value means nothing then)."""
    if pd.isna(size):
        return ""
    return f"over {LARGEST_SIZE_SHOWN}" if size > LARGEST_SIZE_SHOWN else str(int(size))


def false_holds_note(found: pd.DataFrame, rate: float | None = None, registry: Registry = REGISTRY) -> str:
    """How many "holds" the matrix would show by chance if no claim were true: each tested cell
    wrongly says "holds" at most its check's stated rate (``stated_rates.check_rate``: measured by
    ``analysis.findings.calibration`` and ``analysis.findings.skew`` at per-sample logs of skewness
    -2 to 2; ``rate`` for every cell, if given), so over the tested cells at most the sum."""
    tested_rows = found[found["verdict"].isin(DECIDED)]
    tested, holds = len(tested_rows), int((found["verdict"] == HOLDS).sum())
    if tested == 0:
        return "No cell was tested."
    rates = {c: rate if rate is not None else check_rate(c, registry) for c in dict.fromkeys(tested_rows["check"])}
    expected = sum(rates[c] for c in tested_rows["check"])
    each = ", ".join(f"{c} {r:.1%}" for c, r in rates.items())
    return (
        f'Of the {tested} tested cells, {holds} say "holds"; were no claim true, at most {expected:.1f} would say '
        f"so by chance (each cell at most its check's rate, measured with per-sample logs of skewness -2 to 2: "
        f"{each}; cells of one model share their data, so these chances are not independent)."
    )


def power_note(found: pd.DataFrame) -> str:
    """Which checks the data lack the power to resolve, and the instructions per dataset that would
    resolve them with 80% power at the measured values (``Finding.instructions_needed``)."""
    unresolved = found[found["verdict"] == UNRESOLVED]
    if unresolved.empty:
        return ""
    pieces = []
    for check, rows in unresolved.groupby("check", sort=False):
        sizes = rows["n_for_power"].dropna() if "n_for_power" in rows else pd.Series(dtype=float)
        text = f"{check} {len(rows)} cell{'s' if len(rows) > 1 else ''}"
        if len(sizes):
            median = sizes.median()
            amount = f"more than {LARGEST_SIZE_SHOWN}" if median > LARGEST_SIZE_SHOWN else f"about {int(median)}"
            if len(sizes) == 1:
                text += f" (one of them would need {amount} instructions per dataset)"
            else:
                text += f" (the median of {len(sizes)} of them would need {amount} instructions per dataset)"
        pieces.append(text)
    return (
        f"Not resolved for lack of power at these sample sizes: {'; '.join(pieces)}. The sizes are those at which "
        f"each part would reach its side with {POWER:.0%} probability were its true value the measured one "
        '(for a "nearly the same" part a size on the safe side: its spread shrinks faster than that near 0); '
        "cells whose measured value lies against the claim have none."
    )


def matrix_note(
    found: pd.DataFrame,
    profile: str | None,
    note: str | None,
    registry: Registry = REGISTRY,
    *,
    parts: pd.DataFrame | None = None,
) -> str:
    """The line under the verdict matrix: what each cell's number means (its check's headline part,
    named from ``parts``), where n is, how many "holds" chance alone would give, what lacks power,
    and which run it is."""
    names = _headline_names(found, parts, registry)
    text = (
        f"Number in a cell: the size of its check's headline part{f' ({names})' if names else ''}; x10.4 is a "
        "ratio of 10.4, +13% one of 1.13. A grey or orange cell prints instead n, the instructions behind its "
        'verdict ("n=12", fewest over its parts); hovering over a cell shows its verdict, its size with the 95% '
        "interval and n, and the table below gives n for every cell. Verdicts need at least "
        f"{MIN_VERDICT_SAMPLES} instructions in every dataset behind a part. A hatched cell (n/a): the check does "
        "not apply here (to these models, or where its precondition is not established), or cannot be computed "
        f"(A1 where the {TOKENS_UNKNOWN}); its numbers say why. A number followed by ± : the paper's mean nuclear "
        "norm and the geometric mean (which decides) differ in sign in some part of the cell. "
        f"{false_holds_note(found, registry=registry)}"
    )
    power = power_note(found)
    if power:
        text += f" {power}"
    if profile:
        text += f" Profile: {profile}."
    return text + (f" {note}." if note else "")


def _headline_names(found: pd.DataFrame, parts: pd.DataFrame | None, registry: Registry) -> str:
    """ "F1: None / Detailed (all layers); F2: ..." — each check's headline part in the matrix by
    name (names that differ between cells joined by "or"); "" without parts."""
    if parts is None or parts.empty or found.empty:
        return ""
    heads = headline_parts(parts, registry)
    heads = heads.merge(found[["check", "model", "scope", "pooled"]], on=["check", "model", "scope", "pooled"])
    names = []
    for check in all_ids(registry):
        mine = dict.fromkeys(str(p).removesuffix(" x") for p in heads.loc[heads["check"] == check, "part"])
        if mine:
            names.append(f"{check}: {' or '.join(mine)}")
    return "; ".join(names)


def unknown_sentence(found: pd.DataFrame, store) -> str:
    """The checks not computed for some models because R is not stored (their cells say "token counts
    unknown"), with the command that adds R to ``store``; "" where there are none."""
    if found.empty:
        return ""
    cells = found[(found["verdict"] == NOT_APPLICABLE) & found["numbers"].str.startswith(TOKENS_UNKNOWN)]
    if cells.empty:
        return ""
    models = list(dict.fromkeys(cells["model"]))
    checks = " and ".join(dict.fromkeys(cells["check"]))
    return (
        f"**{TOKENS_UNKNOWN.capitalize()}:** {checks} is not computed for {', '.join(models)}: the store holds no "
        f"response token count R of {'its' if len(models) == 1 else 'their'} samples (the original study's files "
        f"hold none); add them from each model's tokenizer with `{fill_command(store, models)}`, then build the "
        "book again."
    )


# --------------------------------------------------------------------------- the first screen


def _counted(counts: dict[str, tuple[int, int]]) -> str:
    """ "F1 in 4 of 6 cells and F2 in 2 of 6" from check -> (cells with the verdict, cells)."""
    pieces = [
        f"{check} in {k} of {n}" + (" cells" if i == 0 else "") for i, (check, (k, n)) in enumerate(counts.items())
    ]
    return pieces[0] if len(pieces) == 1 else ", ".join(pieces[:-1]) + " and " + pieces[-1]


def plain_summary(found: pd.DataFrame, registry: Registry = REGISTRY) -> str:
    """At most three sentences under a verdict matrix, generated from its cells: which claims hold,
    which do not, and which these sample sizes cannot decide (and which do not apply). Counted over
    the pooled cells where there are any, since those are the answers; else over every cell."""
    if found.empty:
        return ""
    pooled = bool(found["pooled"].any())
    cells = found[found["pooled"]] if pooled else found
    where = "Pooled over each family of datasets" if pooled else "Per dataset"
    applicable = cells[cells["verdict"] != NOT_APPLICABLE]
    order = [c for c in all_ids(registry) if c in set(cells["check"])]

    def counts(verdicts_: tuple[str, ...]) -> dict[str, tuple[int, int]]:
        found_ = {}
        for check in order:
            rows = applicable[applicable["check"] == check]
            k = int(rows["verdict"].isin(verdicts_).sum())
            if k:
                found_[check] = (k, len(rows))
        return found_

    holds, fails, open_ = counts((HOLDS,)), counts((FAILS,)), counts((UNRESOLVED, TOO_FEW))
    sentences = [
        f"{where}, these claims hold: {_counted(holds)}." if holds else f"{where}, no claim holds in any cell."
    ]
    sentences.append(f"These do not hold: {_counted(fails)}." if fails else "No claim is contradicted.")
    inapplicable = [c for c in order if (cells[cells["check"] == c]["verdict"] == NOT_APPLICABLE).all()]
    unknown = [
        c for c in inapplicable if cells.loc[cells["check"] == c, "numbers"].str.startswith(TOKENS_UNKNOWN).all()
    ]
    inapplicable = [c for c in inapplicable if c not in unknown]
    last = f"These sample sizes cannot decide {_counted(open_)}" if open_ else "Every applicable cell is decided"
    if inapplicable:
        last += f"; {' and '.join(inapplicable)} {'does' if len(inapplicable) == 1 else 'do'} not apply to these models"
    if unknown:
        last += f"; {' and '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not computed ({TOKENS_UNKNOWN})"
    sentences.append(last + ".")
    return " ".join(sentences)


ESTIMATE = "estimate [95% interval]"  # the column of a part's estimate in the table of the answers


def format_parts(parts: pd.DataFrame, found: pd.DataFrame, pooled_only: bool = False) -> pd.DataFrame:
    """The answers as one row per part of a claim: model, check, scope, the cell's verdict, the part,
    its estimate with its 95% interval in the reader's units (one column, so that the table fits the
    page), what the claim says of it, and whether it decides (a part shown beside the verdict does
    not). A cell without parts (not applicable, too few samples) is one row saying why."""
    if found.empty:
        return pd.DataFrame()
    cells = found[found["pooled"]] if pooled_only else found
    rows = []
    for cell in cells.itertuples():
        mine = (
            parts[
                (parts["check"] == cell.check)
                & (parts["model"] == cell.model)
                & (parts["scope"] == cell.scope)
                & (parts["pooled"] == cell.pooled)
            ]
            if len(parts)
            else parts
        )
        head = {
            "model": cell.model,
            "check": cell.check,
            "scope": scope_text(cell.scope, cell.pooled),
            "verdict": cell.verdict,
        }
        if mine.empty:
            blank = dict.fromkeys((ESTIMATE, "claim", "decides"), "")
            rows.append({**head, "part": cell.numbers, **blank, "n": cell.n})
            continue
        for part in mine.itertuples():
            rows.append(
                {
                    **head,
                    "part": part.part,
                    ESTIMATE: f"{fmt(part.value)} {_interval_text(part.low, part.high)}".strip(),
                    "claim": _side_text(part.side, part.bound),
                    "decides": "yes" if part.decides else "no (shown beside)",
                    "n": part.n,
                }
            )
    return pd.DataFrame(rows)


def _side_text(side: str, bound: float) -> str:
    """What a claim says of a part: "above 1", "below 0", "within ±0.05"."""
    return f"within ±{fmt(bound)}" if side == "within" else f"{side} {fmt(bound)}"


def _interval_text(low: float, high: float) -> str:
    """ "[low, high]", empty when the interval is undefined."""
    return f"[{fmt(low)}, {fmt(high)}]" if pd.notna(low) and pd.notna(high) else ""
