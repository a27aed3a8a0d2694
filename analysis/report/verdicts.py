"""The findings as a reader sees them beside the verdict matrix: the claims, short paragraphs, the
tables of exact numbers, the error-rate and power notes. Everything is worded by ``voice`` from the
typed findings (``rules.Finding``); tables are built here only to be shown."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.checks import REGISTRY, Registry, all_ids, get
from analysis.findings.bootstrap import MIN_VERDICT_SAMPLES
from analysis.findings.rules import (
    DECIDED,
    DISAGREE,
    FAILS,
    HOLDS,
    NOT_APPLICABLE,
    POWER,
    TOO_FEW,
    UNRESOLVED,
    Finding,
    Why,
)
from analysis.findings.stated_rates import check_rate
from analysis.report import cells, voice

# The checks page as a results page (book/notebooks/<name>.html) reaches it in the built book: a
# page's generated Markdown keeps its links as they are written (myst-nb renders it as CommonMark).
CHECKS_PAGE = "../checks.html"


def anchor(check_id: str) -> str:
    """The id of a check's entry on the checks page (``claims_markdown``): one per check, the same
    in every build, so that the other pages link to its rule."""
    return f"check-{check_id.lower()}"


def claims_text(checks: Sequence[str] | None = None, registry: Registry = REGISTRY) -> str:
    """Markdown list of the claims checked (None: every check of the registry) in plain words, each
    linked to its estimand and rule on the checks page, which states them once (a check of another
    registry, not on that page: its rule beside it)."""
    paper: list[str] = []
    beyond: list[str] = []
    for check_id in all_ids(registry) if checks is None else checks:
        check = get(check_id, registry)
        rule = f"[rule]({CHECKS_PAGE}#{anchor(check_id)})" if check in REGISTRY else f"rule: {check.claim}"
        (paper if check.paper else beyond).append(f"- **{check_id}**: {check.plain} ({rule}).")
    if paper and beyond:  # two short lists, the paper's claims first, rather than one long one
        return "The paper's claims:\n\n" + "\n".join(paper) + "\n\nBeyond the paper:\n\n" + "\n".join(beyond)
    return "\n".join(paper or beyond)


# The fold under a check's plain words on the checks page, set apart from the next check's.
_RULE_FOLD = '<details style="margin-bottom: 1.5em"><summary>Estimand and rule</summary>'


def claims_markdown(registry: Registry = REGISTRY) -> str:
    """The claims on the checks page (MyST Markdown), generated from the registry when the book is
    built: each check's id, scope and plain words under its anchor, its estimand and rule folded under it."""
    entries = [
        f"({anchor(c.id)})=\n**{c.id}** ({c.scope}): {c.plain}.\n\n{_RULE_FOLD}\n\n{c.claim}.{_rates(c)}\n\n</details>"
        for c in registry
    ]
    return "\n\n".join(entries)


def _rates(check) -> str:
    """ " Error rates: ..." for a check's rules, each with its stated rate (the registry's)."""
    if not check.calibrated_by:
        return ""
    rules = ", ".join(
        f'rule `{r.name}` (its "holds" wrong at most {voice.rate(r.stated)})' for r in check.calibrated_by
    )
    return f" Error rates: {rules}."


def model_paragraph(findings: Sequence[Finding], model: str, registry: Registry = REGISTRY) -> str:
    """One paragraph for one model: each check's pooled verdicts, then how its datasets went,
    naming the datasets whose verdict differs from the family's."""
    mine = [f for f in findings if f.model == model]
    return f"**{model}.** {_checks_in_words(mine, registry)}" if mine else ""


def _checks_in_words(findings: Sequence[Finding], registry: Registry) -> str:
    sentences = []
    for check in cells.checks_of(findings, registry):
        part = cells.of_check(findings, check)
        if all(f.not_applicable is not None for f in part):
            why = part[0].not_applicable
            said = "not computed" if why is not None and why.why is Why.NOT_STORED else NOT_APPLICABLE
            sentences.append(f"**{check}** {said}: {voice.explained(why)}." if why else f"**{check}** {said}.")
            continue
        head = "; ".join(_pooled_clause(f, registry) for f in part if f.pooled)
        single = [f for f in part if not f.pooled]
        detail = ""
        if single:
            decided = [f for f in single if f.verdict in (HOLDS, FAILS)]
            detail = f"{'; ' if head else ''}per dataset {voice.verdict_counts(f.verdict for f in single)}"
            if 0 < len(decided) <= 4:
                detail += " (" + ", ".join(f"{f.scope}: {f.verdict}" for f in decided) + ")"
        sentences.append(f"**{check}** {head}{detail}.")
    return " ".join(sentences)


def _pooled_clause(finding: Finding, registry: Registry) -> str:
    """ "holds for math reasoning (pooled) (n = 24)"; where its datasets disagree, each one's size
    before n."""
    apart = cells.apart(finding, registry)
    return f"{finding.verdict} for {voice.scope(finding.scope, True)} ({f'{apart}; ' if apart else ''}n = {finding.n})"


def findings_frame(findings: Sequence[Finding], *, pooled_only: bool = False) -> pd.DataFrame:
    """The findings for display: model, check, scope, verdict, n, the instructions per dataset that
    would decide it, and the numbers behind the verdict."""
    shown = [f for f in findings if f.pooled or not pooled_only]
    if not shown:
        return pd.DataFrame()
    return pd.DataFrame(
        {
            "model": [f.model for f in shown],
            "check": [f.check for f in shown],
            "scope": [voice.scope(f.scope, f.pooled) for f in shown],
            "verdict": [voice.verdict(f.verdict) for f in shown],
            "n": [f.n for f in shown],
            f"n per dataset for {POWER:.0%} power": [voice.instruction_count(f.instructions_needed()) for f in shown],
            "numbers": [voice.numbers(f) for f in shown],
        }
    )


ESTIMATE = "estimate [95% interval]"  # the column of a part's estimate in the table of the answers


def parts_frame(findings: Sequence[Finding], *, pooled_only: bool = False) -> pd.DataFrame:
    """The answers as one row per part of a claim: model, check, scope, the cell's verdict, the part,
    its estimate with its 95% interval in the reader's units (one column, so that the table fits the
    page), what the claim says of it, and whether it decides (a part shown beside the verdict does
    not). A cell without parts (not applicable, too few samples) is one row saying why."""
    rows = []
    for f in findings:
        if pooled_only and not f.pooled:
            continue
        head = {"model": f.model, "check": f.check, "scope": voice.scope(f.scope, f.pooled), "verdict": str(f.verdict)}
        if not f.parts or f.not_applicable is not None:
            rows.append({**head, "part": voice.numbers(f), ESTIMATE: "", "claim": "", "decides": "", "n": f.n})
            continue
        for part in f.parts:
            rows.append(
                {
                    **head,
                    "part": voice.part_label(part),
                    ESTIMATE: voice.sized(part) if part.estimate is not None else "not computed",
                    "claim": _side_text(part),
                    "decides": "yes" if part.decides else "no (shown beside)",
                    "n": part.n,
                }
            )
    return pd.DataFrame(rows)


def _side_text(part) -> str:
    """What a claim says of a part, in the reader's units: "above x1", "below +10%", "within ±10%"."""
    bound = part.unit.shown(part.bound)
    if part.side == "within":
        low = voice.size(part.unit.shown(-part.bound), part.unit, times=False)
        return f"within {low} to {voice.size(bound, part.unit, times=False)}"
    return f"{part.side} {voice.size(bound, part.unit, times=False)}"


def false_holds_note(findings: Sequence[Finding], rate: float | None = None, registry: Registry = REGISTRY) -> str:
    """How many "holds" the matrix would show by chance if no claim were true: each tested cell
    wrongly says "holds" at most its check's stated rate (``stated_rates.check_rate``: measured by
    ``analysis.findings.calibration`` and ``analysis.findings.skew`` at per-sample logs of skewness
    -2 to 2; ``rate`` for every cell, if given), so over the tested cells at most the sum."""
    tested = [f for f in findings if f.verdict in DECIDED]
    holds = sum(f.verdict is HOLDS for f in findings)
    if not tested:
        return "No cell was tested."
    rates = {c: rate if rate is not None else check_rate(c, registry) for c in dict.fromkeys(f.check for f in tested)}
    expected = sum(rates[f.check] for f in tested)
    each = ", ".join(f"{c} {voice.rate(r)}" for c, r in rates.items())
    return (
        f'Of the {len(tested)} tested cells, {holds} say "holds"; were no claim true, at most {expected:.1f} would '
        f"say so by chance (each cell at most its check's rate, measured with per-sample logs of skewness -2 to 2: "
        f"{each}; cells of one model share their data, so these chances are not independent)."
    )


def power_note(findings: Sequence[Finding]) -> str:
    """Which checks the data lack the power to resolve, and the instructions per dataset that would
    resolve them with 80% power at the measured values (``Finding.instructions_needed``)."""
    unresolved = [f for f in findings if f.verdict is UNRESOLVED]
    if not unresolved:
        return ""
    pieces = []
    for check in dict.fromkeys(f.check for f in unresolved):
        mine = [f for f in unresolved if f.check == check]
        sizes = pd.Series([f.instructions_needed() for f in mine]).dropna()
        text = f"{check} {voice.plural(len(mine), 'cell')}"
        if len(sizes):
            amount = voice.instructions(float(sizes.median())).replace("over", "more than")
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
    findings: Sequence[Finding], *, profile: str | None, note: str | None, registry: Registry = REGISTRY
) -> str:
    """The line under the verdict matrix: what each cell's number means (the part that decided its
    colour), where n is, how many "holds" chance alone would give, what lacks power, and which run it is."""
    text = (
        "Number in a cell: the size of the part that decided its colour: its check's headline part where the "
        "claim holds, the part on the wrong side where it does not hold, the part not yet on its side where it "
        "is not resolved; x10.4 is a ratio of 10.4, +13% one of 1.13. Hovering over a cell shows its verdict, "
        "every deciding part with its 95% interval and n; the table below gives n for every cell. Verdicts need "
        f"at least {MIN_VERDICT_SAMPLES} instructions in every dataset behind a part. A hatched cell (n/a): the "
        "check does not apply here (to these models, or where its precondition is not established), or cannot "
        "be computed (a statistic it reads is not stored); its hover text says why. A purple cell (the datasets "
        "disagree): a family whose datasets are decided in opposite directions, with the sizes of the two ends; "
        "its hover text gives each dataset's. A number followed by ±: the "
        "paper's mean nuclear norm and the geometric mean (which decides) point opposite ways (one ratio above 1, the other below) in some part of the "
        f"cell. {false_holds_note(findings, registry=registry)}"
    )
    power = power_note(findings)
    if power:
        text += f" {power}"
    if profile:
        text += f" Profile: {profile}."
    return text + (f" {note}." if note else "")


def unknown_sentence(findings: Sequence[Finding], store) -> str:
    """The checks not computed for some models because a statistic they read is not stored (their
    cells say why), with the command that adds it to ``store``; "" where there are none."""
    unknown = [f for f in findings if f.not_applicable is not None and f.not_applicable.why is Why.NOT_STORED]
    if not unknown:
        return ""
    from analysis.extract.token_counts import fill_command

    models = list(dict.fromkeys(f.model for f in unknown))
    checks = " and ".join(dict.fromkeys(f.check for f in unknown))
    reason = unknown[0].not_applicable.reason  # type: ignore[union-attr]
    return (
        f"**{reason.capitalize()}:** {checks} is not computed for {', '.join(models)}: the store holds no "
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
    return voice.listed(pieces)


def plain_summary(findings: Sequence[Finding], registry: Registry = REGISTRY) -> str:
    """At most three sentences under a verdict matrix, generated from its cells: which claims hold,
    which do not, and how many cells these sample sizes leave open (the matrix shows which), and which
    claims do not apply. Counted over
    the pooled cells where there are any, since those are the answers; else over every cell."""
    if not findings:
        return ""
    shown = cells.answers(findings)
    where = "Pooled over each family of datasets" if shown[0].pooled else "Per dataset"
    applicable = [f for f in shown if f.not_applicable is None]
    order = cells.checks_of(shown, registry)

    def counts(verdicts_: tuple) -> dict[str, tuple[int, int]]:
        found = {}
        for check in order:
            mine = [f for f in applicable if f.check == check]
            k = sum(f.verdict in verdicts_ for f in mine)
            if k:
                found[check] = (k, len(mine))
        return found

    holds, fails, open_ = counts((HOLDS,)), counts((FAILS,)), counts((UNRESOLVED, TOO_FEW))
    apart = counts((DISAGREE,))
    sentences = [
        f"{where}, these claims hold: {_counted(holds)}." if holds else f"{where}, no claim holds in any cell."
    ]
    second = f"These do not hold: {_counted(fails)}" if fails else "No claim is contradicted"
    second += f"; the datasets disagree on {_counted(apart)}" if apart else ""
    sentences.append(second + ".")
    reasons = {c: [f.not_applicable for f in cells.of_check(shown, c)] for c in order}
    inapplicable = [c for c in order if all(r is not None for r in reasons[c])]
    unknown = [c for c in inapplicable if all(r.why is Why.NOT_STORED for r in reasons[c] if r is not None)]
    inapplicable = [c for c in inapplicable if c not in unknown]
    unresolved = sum(k for k, _ in open_.values())
    last = (
        f"These sample sizes leave {unresolved} of the {len(applicable)} tested cells open"
        if open_
        else "Every applicable cell is decided"
    )
    if inapplicable:
        last += f"; {voice.listed(inapplicable)} {'does' if len(inapplicable) == 1 else 'do'} not apply to these models"
    if unknown:
        why = reasons[unknown[0]][0]
        said = f" ({why.reason})" if why is not None else ""
        last += f"; {voice.listed(unknown)} {'is' if len(unknown) == 1 else 'are'} not computed{said}"
    sentences.append(last + ".")
    return " ".join(sentences)


def per_model_paragraphs(findings: Sequence[Finding], registry: Registry = REGISTRY) -> list[str]:
    """``model_paragraph`` for every model of ``findings``, in their order."""
    return [model_paragraph(findings, m, registry) for m in dict.fromkeys(f.model for f in findings)]
