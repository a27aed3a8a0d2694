"""The reproduction summary that opens a book: which claims were checked on which models, one plain
sentence per claim with the sizes that decided its cells, and what differs from the paper's setup.

Every number comes from the page's findings (``Page.findings``), worded by ``voice``; each cell
contributes the part that decided its verdict (``cells.printed``). The sentences are built here once
and shown by every book's landing page (the default book, the ``original`` book, the training book).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from analysis.checks import REGISTRY, Registry, get
from analysis.core import registry as models_registry
from analysis.findings.rules import (
    DISAGREE,
    FAILS,
    HOLDS,
    NOT_APPLICABLE,
    TOO_FEW,
    UNRESOLVED,
    Finding,
    Part,
    Unit,
    Verdict,
    decide_role,
)
from analysis.report import cells, voice
from analysis.report.load import offline_models

PAPER_INSTRUCTIONS = 500  # per file of the original study's data
# What computes a check that this store cannot support, by the kind of store.
COMPUTED_BY = {
    True: "`python -m analysis run --profile paper` on a GPU computes them",
    False: "`python -m analysis run --profile cpu-full` computes them",
}


def lead_groups(checks: Sequence[str], registry: Registry = REGISTRY) -> list[tuple[str, ...]]:
    """The checks a book's first page reads together, in their declared groups (``Check.lead``), each
    cut to the ``checks`` it shows."""
    groups: dict[int, list[str]] = {}
    for check in registry:
        if check.lead is not None and check.id in checks:
            groups.setdefault(check.lead, []).append(check.id)
    return [tuple(groups[k]) for k in sorted(groups)]


def _instructions_needed(found: Sequence[Finding]) -> str:
    """ "about 40" (or "over 1000"; "" where none is known): the median over an undecided group of
    the instructions per dataset that would give its rule 80% power."""
    sizes = pd.Series([f.instructions_needed() for f in found]).dropna()
    return voice.instructions(float(sizes.median())) if len(sizes) else ""


def _sizes(check_id: str, found: Sequence[Finding], *, interval: bool, registry: Registry) -> str:
    """The sizes that decided a group of cells of one verdict: per role of the parts they print, the
    range of those parts ("x4.1 to x15"), after the claim's words for that part where it is not the
    check's headline ("more so in early layers: x0.38 to x0.689")."""
    check = get(check_id, registry)
    by_role: dict = {}
    for finding in found:
        part = cells.printed(finding, registry)
        if part is not None:
            by_role.setdefault(part.role, []).append(part)
    pieces = []
    for role, parts in by_role.items():
        words = check.part_words(role) if role is not check.headline or len(by_role) > 1 else ""
        sized = voice.sized_range(parts, interval=interval)
        if sized:
            pieces.append(f"{words}: {sized}" if words else sized)
    return "; ".join(pieces)


def verdict_phrase(check_id: str, found: Sequence[Finding], registry: Registry = REGISTRY) -> str:
    """How a check's applicable cells went, with the sizes that decided them: "holds in 3 of 4 cells
    (x4.1 to x15), not resolved in 1 (more so in early layers: x1.2 [x0.9, x1.6]; about 40
    instructions per dataset would decide)"."""
    total = len(found)
    pieces: list[str] = []
    for verdict in (HOLDS, FAILS, DISAGREE, UNRESOLVED, TOO_FEW):
        group = [f for f in found if f.verdict is verdict]
        if not group:
            continue
        if pieces:
            many = str(len(group))
        elif len(group) == total > 1 and verdict is FAILS:
            many = "either cell" if total == 2 else f"any of the {total} cells"
        elif len(group) == total > 1:
            many = "both cells" if total == 2 else f"all {total} cells"
        else:
            many = f"{len(group)} of {total}"
        if verdict is DISAGREE:  # each cell's datasets, at the ends of a range they would not mean
            details = [f"{f.model} {voice.scope(f.scope, False)}: {cells.apart(f, registry)}" for f in group]
        else:
            details = [d for d in (_sizes(check_id, group, interval=verdict is UNRESOLVED, registry=registry),) if d]
        needed = _instructions_needed(group) if verdict is UNRESOLVED else ""
        if needed:
            details.append(f"{needed} instructions per dataset would decide")
        pieces.append(f"{verdict} in {many}" + (f" ({'; '.join(details)})" if details else ""))
    return ", ".join(pieces)


def split_sentence(found: Sequence[Finding], every: Sequence[Finding], registry: Registry = REGISTRY) -> str:
    """The pooled cells among ``found`` whose datasets' values lie on opposite sides, none decided
    apart (``cells.disagreeing``): "its datasets point opposite ways in SmolLM2 math reasoning (gsm8k
    x5.54, aqua x0.71)"; "" where none do."""
    pieces = []
    for finding in found:
        split = cells.disagreeing(finding, every, registry)
        if split:
            times = voice.reads_as_times([p.shown()[0] for _, p in split])  # the datasets' sizes in one style
            sizes = ", ".join(f"{d} {voice.sized(p, interval=False, times=times)}" for d, p in split)
            pieces.append(f"{finding.model} {voice.scope(finding.scope, False)} ({sizes})")
    return f"its datasets point opposite ways in {'; '.join(pieces)}" if pieces else ""


def claim_sentence(
    check_id: str, found: Sequence[Finding], every: Sequence[Finding] = (), registry: Registry = REGISTRY
) -> str:
    """One sentence for one check: the claim in plain words, then how its cells went with the sizes
    that decided them (or why it has no verdict), and which pooled cells' datasets disagree."""
    check = get(check_id, registry)
    applicable = [f for f in found if f.verdict is not NOT_APPLICABLE]
    if not applicable:
        why = found[0].not_applicable
        return f"**{check.id}** {check.plain}: no verdict, {why.reason if why else 'not applicable'}."
    said = verdict_phrase(check_id, applicable, registry)
    if check.beside is not None:
        role, words = check.beside
        shown = voice.sized_range([p for f in applicable if (p := f.part(role)) is not None], interval=False)
        said += f" ({words}: {shown})" if shown else ""
    split = split_sentence(applicable, every, registry)
    return f"**{check.id}** {check.plain}: {said}" + (f"; {split}" if split else "") + "."


def absent_sentence(check_id: str, *, released: bool, registry: Registry = REGISTRY) -> str:
    """The sentence for a check without a cell: the store holds none of what it reads, and what computes it
    (its claim is on the checks page: a summary spends its words on the checks that have cells)."""
    check = get(check_id, registry)
    store = "the released statistics hold" if released else "this run stores"
    return f"**{check.id}** no verdict: {store} none of its conditions ({COMPUTED_BY[released]})."


def scope_sentence(
    found: Sequence[Finding],
    *,
    models: Sequence[str],
    n_samples: int | None,
    imported: bool,
    registry: Registry = REGISTRY,
) -> str:
    """How many of the paper's claims and of the questions beyond it, on which models and how many
    instructions (each beside the paper's where it differs), in how many datasets, and which cells
    the sentences below count (a family's pooled cells where there are any)."""
    checks_found = cells.checks_of(found, registry)
    paper = sum(get(c, registry).paper for c in checks_found)
    beyond = len(checks_found) - paper
    claims = " and ".join(
        text for k, text in ((paper, f"{paper} of the paper's claims"), (beyond, voice.plural(beyond, "question"))) if k
    )
    names = " and ".join(_described(m) for m in models)
    on = (
        f"two small 4-bit quantised models, {names} (the paper's: 1.5-9B parameters)"
        if offline_models(models)
        else names
    )
    if imported:
        samples = "the original study's released statistics, with this book's intervals"
    elif n_samples:
        samples = f"{n_samples} instructions per dataset" + (
            f" (the paper's: {PAPER_INSTRUCTIONS})" if n_samples < PAPER_INSTRUCTIONS else ""
        )
    else:
        samples = "every instruction"
    datasets = {f.scope for f in found if not f.pooled}
    pooled = any(f.pooled for f in found)
    shown = "pooled into cells per model and family of datasets" if pooled else "one cell per model and dataset"
    return (
        f"**Scope.** {claims}{' beyond it' if paper and beyond else ''}, on {on}, with {samples} in "
        f"{voice.plural(len(datasets), 'dataset')}, {shown}."
    )


def _described(model: str) -> str:
    info = models_registry.known_model(model)
    return info.description.split(",")[0] if info is not None else model


def undecided_sentence(found: Sequence[Finding]) -> str:
    """How many cells these sample sizes leave undecided and how many instructions would decide them."""
    tested = [f for f in found if f.verdict is not NOT_APPLICABLE]
    open_ = [f for f in tested if f.verdict is UNRESOLVED]
    if not open_:
        return ""
    needed = _instructions_needed(open_)
    return f"**Not resolved** at this size: {len(open_)} of {len(tested)} cells" + (
        f"; {needed} instructions per dataset would decide them (median)." if needed else "."
    )


def reported_sentence(reported: pd.DataFrame) -> str:
    """How many of the paper's reported numbers that this store can be set against lie inside this
    book's intervals (``curve_tables.reported_mad_comparison``); "" where none can."""
    if reported.empty:
        return ""
    inside = int((reported["reported value inside the interval"] == "yes").sum())
    cases = ", ".join(f"{m} on {d}" for m, d in reported[["model", "dataset"]].drop_duplicates().to_numpy())
    return (
        f"**Against the paper's reported numbers.** {inside} of the {len(reported)} all-layer MADs reported "
        f"for {cases} lie inside this book's 95% intervals (the summary page's last table)."
    )


def claim_lines(
    found: Sequence[Finding], *, groups: Sequence[Sequence[str]], imported: bool, registry: Registry
) -> str:
    """One bullet per group of checks, each check one ``claim_sentence`` over its pooled cells where
    it has any (``absent_sentence`` where it has none)."""

    def sentence(check: str) -> str:
        mine = cells.of_check(found, check)
        if not mine:
            return absent_sentence(check, released=imported, registry=registry)
        return claim_sentence(check, cells.answers(mine), found, registry)

    return "\n".join("- " + " ".join(sentence(check) for check in group) for group in groups if group)


def summary_markdown(
    found: Sequence[Finding],
    *,
    lead: Sequence[Sequence[str]],
    models: Sequence[str],
    n_samples: int | None,
    imported: bool,
    reported: pd.DataFrame | None = None,
    scope: str | None = None,
    registry: Registry = REGISTRY,
) -> str:
    """The reproduction summary: the scope beside the paper's setup, one bullet per group of checks in
    ``lead``, and the paper's reported numbers this store can be set against (``reported``).
    ``scope``: the scope paragraph, where the caller words it (the training runs); None:
    ``scope_sentence``."""
    pieces = [
        scope or scope_sentence(found, models=models, n_samples=n_samples, imported=imported, registry=registry),
        claim_lines(found, groups=lead, imported=imported, registry=registry),
        reported_sentence(reported if reported is not None else pd.DataFrame()),
    ]
    return "\n\n".join(p for p in pieces if p)


def other_claims(found: Sequence[Finding], *, checks: Sequence[str], imported: bool, registry: Registry) -> str:
    """What follows a page's matrix: how many cells are not resolved at this size, then the page's
    checks outside its lead groups, one sentence each, and its lead checks without a cell (the first
    page words only what has cells: this says why the others have none and what computes them)."""
    led = {c for group in lead_groups(checks, registry) for c in group if cells.of_check(found, c)}
    lines = claim_lines(found, groups=[(c,) for c in checks if c not in led], imported=imported, registry=registry)
    return "\n\n".join(p for p in (undecided_sentence(found), lines and f"**The other claims.**\n\n{lines}") if p)


# What a row of the claims table says of a model's cells of one claim, by how they went.
REPRODUCES, NOT_REPRODUCED = "reproduces", "does not reproduce"


def _claim_word(found: Sequence[Finding], registry: Registry = REGISTRY) -> str:
    """One model's cells of one claim in words (``_verdicts_word``); a claim of several parts
    (``says``) part by part, each by ``decide_role`` ("larger: reproduces; more so in early layers:
    holds on commonsense reasoning, not resolved on math reasoning"), so that a row never reads as
    contradicting a sentence about one of its parts."""
    tested = [f for f in found if f.verdict is not NOT_APPLICABLE]
    check = get(found[0].check, registry) if found else None
    said = [
        (r, w)
        for r, w in (check.says if check else ())
        if any(p.role is r and p.decides for f in tested for p in f.parts)
    ]
    if len(said) < 2:
        return _verdicts_word([(f.scope, f.verdict) for f in found])
    return "; ".join(
        f"{words}: {_verdicts_word([(f.scope, decide_role(f.parts, role)) for f in tested])}" for role, words in said
    )


def _verdicts_word(scoped_verdicts: Sequence[tuple[str, Verdict]]) -> str:
    """Cells' verdicts in a word: reproduces (every cell holds), does not reproduce (every cell does not
    hold), the datasets disagree, not resolved, not tested here; where they differ, each verdict with
    the scopes it holds for ("holds on commonsense reasoning, not resolved on math reasoning"), or
    counted where more than three cells would make a row too long to read."""
    if not scoped_verdicts:
        return ""
    verdicts = {v for _, v in scoped_verdicts}
    if verdicts == {HOLDS}:
        return REPRODUCES
    if verdicts == {FAILS}:
        return NOT_REPRODUCED
    if verdicts == {DISAGREE}:
        return voice.verdict(DISAGREE)
    if verdicts <= {UNRESOLVED, TOO_FEW}:
        return voice.verdict(UNRESOLVED) if UNRESOLVED in verdicts else voice.verdict(TOO_FEW)
    if verdicts == {NOT_APPLICABLE}:
        return "not tested here"
    tested = [(scope, v) for scope, v in scoped_verdicts if v is not NOT_APPLICABLE]
    if len(tested) > 3:
        held = sum(v is HOLDS for _, v in tested)
        return f"holds in {held} of {len(tested)} cells" if held else voice.verdict_counts(v for _, v in tested)
    by_verdict = [(v, [voice.scope(scope, False) for scope, w in tested if w is v]) for v in Verdict]
    return ", ".join(f"{voice.verdict(v)} on {voice.listed(scopes)}" for v, scopes in by_verdict if scopes)


def _size(parts: Sequence) -> str:
    """The sizes of some cells as one number in one unit: ratios in times ("x4.80 to x9.50"), anything
    else as the book writes it; "" without a part."""
    if not parts:
        return ""
    if all(p.unit.is_ratio for p in parts):
        shown = sorted(p.shown()[0] for p in parts if math.isfinite(p.value))
        ends = [f"x{voice.three(v)}" for v in (shown[0], shown[-1])] if shown else []
        return "" if not ends else ends[0] if ends[0] == ends[1] else f"{ends[0]} to {ends[1]}"
    unit = parts[0].unit
    return voice.sized_range(parts, interval=False) + (f" ({UNIT_READS[unit]})" if unit in UNIT_READS else "")


# How a number that is not a ratio reads, beside it in the claims table.
UNIT_READS = {
    Unit.DIFFERENCE: "a difference; 0: none",
    Unit.SHARE: "a share of the gap; 1: all of it",
    Unit.AUROC: "AUROC; 0.5: chance",
    Unit.CORRELATION: "a correlation",
    Unit.LOSS: "nats",
}


def _claim_size(finding: Finding, check, registry: Registry) -> Part | None:
    """The part a claim's size reads in one cell: its check's headline where the headline decides (the
    claim's own number, whichever part decided the colour), else the part that decided the colour."""
    headline = finding.part(check.headline)
    if headline is not None and headline.decides and headline.estimate is not None:
        return headline
    return cells.printed(finding, registry)


def claims_table(found: Sequence[Finding], registry: Registry = REGISTRY) -> pd.DataFrame:
    """One row per claim of the paper and model: the claim in plain words, what this study finds in a
    word (over the model's pooled cells where it has any), and one number: the size of the claim in
    those cells (``_claim_size``), in one unit (a ratio in times), a range where its cells differ."""
    rows = []
    for check in registry:
        if not check.paper:
            continue
        mine = cells.of_check(found, check.id)
        for model in dict.fromkeys(f.model for f in mine):
            answered = cells.answers([f for f in mine if f.model == model])
            printed = [
                p for f in answered if f.not_applicable is None and (p := _claim_size(f, check, registry)) is not None
            ]
            rows.append(
                {
                    "the paper's claim": check.plain,
                    "model": model,
                    "this study": _claim_word(answered, registry),
                    "size": _size(printed),
                }
            )
    return pd.DataFrame(rows, columns=["the paper's claim", "model", "this study", "size"])
