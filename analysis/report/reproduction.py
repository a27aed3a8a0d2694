"""The reproduction summary that opens a book: which claims were checked on which models, one plain
sentence per claim with its size, interval and verdict, and what differs from the paper's setup.

Every number comes from the page's findings (``Page.findings_table``, ``Page.part_table``); the
sentences are built here once and shown by every book's landing page (the default book, the
``original`` book, the training book).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.core import registry as models_registry
from analysis.findings.checks import REGISTRY, Registry, get, headline_parts
from analysis.findings.rules import FAILS, HOLDS, NOT_APPLICABLE, TOO_FEW, UNRESOLVED
from analysis.report import curve_tables
from analysis.report.load import imported_models, offline_models
from analysis.report.verdicts import LARGEST_SIZE_SHOWN

PAPER_INSTRUCTIONS = 500  # per file of the original study's data
# What computes a check that this store cannot support, by the kind of store.
COMPUTED_BY = {
    True: "`python -m analysis run --profile paper` on a GPU computes them",
    False: "`python -m analysis run --profile cpu-full` computes them",
}
# The checks a reader asks about first, in pairs read together: the gap and how much of it averaging
# explains; the same scored tokens with and without reasoning; correct against irrelevant responses
# and what the loss alone tells. A book's summary opens with these; its other checks follow its matrix.
LEAD = (("F1", "A1"), ("A2", "A3"), ("F3", "G1"))


def size_text(value: float, *, ratio: bool, times: bool | None = None) -> str:
    """A headline size as a reader reads it: a ratio far from 1 as "x10.4", one near 1 as "+13%",
    any other value with three significant digits. ``times``: write a ratio as "x" (True) or as a
    percentage (False) whatever its value, so that the ends of a range read alike."""
    if value is None or not math.isfinite(value):
        return "nan"
    if not ratio:
        return f"{value:.3g}"
    if times is None:
        times = not 0.5 < value < 2
    return f"x{value:.3g}" if times else f"{value - 1:+.0%}"


def _times(rows: pd.DataFrame, *, interval: bool) -> bool:
    """Whether ``rows``' sizes read as "x" (any end far from 1) rather than as percentages."""
    ends = rows[["value", "low", "high"] if interval else ["value"]].to_numpy(dtype=float).ravel()
    ends = ends[np.isfinite(ends)]
    return bool(((ends <= 0.5) | (ends >= 2)).any())


def sized(row, *, interval: bool = True, times: bool | None = None) -> str:
    """A headline part's value (with its 95% interval where defined) in the reader's units, every
    number in one style (``times``; None: by the row's own ends)."""
    ratio = str(row["part"]).endswith(" x")
    has_interval = interval and math.isfinite(row["low"]) and math.isfinite(row["high"])
    if times is None:
        times = _times(pd.DataFrame([row]), interval=has_interval)
    text = size_text(row["value"], ratio=ratio, times=times)
    if has_interval:
        low, high = (size_text(row[end], ratio=ratio, times=times) for end in ("low", "high"))
        text += f" [{low}, {high}]"
    return text


def headline_cells(found: pd.DataFrame, parts: pd.DataFrame, registry: Registry = REGISTRY) -> pd.DataFrame:
    """The findings (one row per cell) with their headline part's name, value and interval (NaN
    where a cell has none: not applicable, too few samples)."""
    heads = headline_parts(parts, registry)
    columns = ["check", "model", "scope", "pooled", "part", "value", "low", "high"]
    heads = heads[columns] if len(heads) else pd.DataFrame(columns=columns)
    return found.merge(heads, on=["check", "model", "scope", "pooled"], how="left")


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _range(cells: pd.DataFrame, *, interval: bool) -> str:
    """The headline of one cell ("x4.1", with "[x2.9, x5.8]" if ``interval``), else the smallest and
    the largest: "x4.1 to x15", all in one style."""
    sized_cells = cells[cells["value"].notna()].sort_values("value")
    if sized_cells.empty:
        return ""
    times = _times(sized_cells, interval=interval)
    ends = [sized(end, interval=interval, times=times) for end in (sized_cells.iloc[0], sized_cells.iloc[-1])]
    return ends[0] if ends[0] == ends[1] else " to ".join(ends)


def _instructions_needed(cells: pd.DataFrame) -> str:
    """ "about 40" (or "over 1000"; "" where none is known): the median over an undecided group of
    the instructions per dataset that would give its rule 80% power."""
    sizes = cells["n_for_power"].dropna() if "n_for_power" in cells else pd.Series(dtype=float)
    if sizes.empty:
        return ""
    median = sizes.median()
    return f"over {LARGEST_SIZE_SHOWN}" if median > LARGEST_SIZE_SHOWN else f"about {int(median)}"


def verdict_phrase(cells: pd.DataFrame) -> str:
    """How a check's applicable cells went, with their headline sizes: "holds in 3 of 4 cells (x4.1
    to x15), not resolved in 1 (x1.2 [x0.9, x1.6]; about 40 would decide)"."""
    total = len(cells)
    pieces: list[str] = []
    for verdict in (HOLDS, FAILS, UNRESOLVED, TOO_FEW):
        group = cells[cells["verdict"] == verdict]
        if group.empty:
            continue
        if pieces:
            many = str(len(group))
        elif len(group) == total > 1 and verdict == FAILS:
            many = "either cell" if total == 2 else f"any of the {total} cells"
        elif len(group) == total > 1:
            many = "both cells" if total == 2 else f"all {total} cells"
        else:
            many = f"{len(group)} of {total}"
        details = [d for d in (_range(group, interval=verdict == UNRESOLVED),) if d]
        needed = _instructions_needed(group) if verdict == UNRESOLVED else ""
        if needed:
            details.append(f"{needed} would decide")
        pieces.append(f"{verdict} in {many}" + (f" ({'; '.join(details)})" if details else ""))
    return ", ".join(pieces)


def _reason(cells: pd.DataFrame) -> str:
    """Why a check has no verdict, in a few words: its cells' stated reason up to its first colon
    or semicolon ("the loss separates them")."""
    reason = str(cells["numbers"].iloc[0]).removeprefix(f"{NOT_APPLICABLE}: ")
    return re.split(r"[:;]", reason)[0].strip()


def claim_sentence(check_id: str, cells: pd.DataFrame, registry: Registry = REGISTRY) -> str:
    """One sentence for one check: the claim in plain words, then how its cells went with their
    headline sizes (or why it has no verdict). ``cells``: its rows of ``headline_cells``."""
    check = get(check_id, registry)
    applicable = cells[cells["verdict"] != NOT_APPLICABLE]
    said = verdict_phrase(applicable) if len(applicable) else f"no verdict, {_reason(cells)}"
    return f"**{check.id}** {check.plain}: {said}."


def absent_sentence(check_id: str, *, released: bool, registry: Registry = REGISTRY) -> str:
    """The sentence for a check without a cell: the store holds none of what it reads, and what computes it."""
    check = get(check_id, registry)
    store = "the released statistics hold" if released else "this run stores"
    return f"**{check.id}** {check.plain}: no verdict, {store} none of its conditions ({COMPUTED_BY[released]})."


def scope_sentence(found: pd.DataFrame, *, models: Sequence[str], n_samples: int | None, imported: bool) -> str:
    """How many of the paper's claims and of the questions beyond it, on which models and how many
    instructions (each beside the paper's where it differs), in how many datasets, and which cells
    the sentences below count (a family's pooled cells where there are any)."""
    checks_found = list(dict.fromkeys(found["check"])) if len(found) else []
    paper = sum(c.startswith("F") for c in checks_found)
    beyond = len(checks_found) - paper
    claims = " and ".join(
        text for k, text in ((paper, f"{paper} of the paper's claims"), (beyond, _count(beyond, "question"))) if k
    )
    names = " and ".join(_described(m) for m in models)
    offline = offline_models(models)
    on = f"two small 4-bit quantised models, {names} (the paper's: 1.5-9B parameters)" if offline else names
    if imported:
        samples = "the original study's released statistics, with this book's intervals"
    elif n_samples:
        samples = f"{n_samples} instructions per condition" + (
            f" (the paper's: {PAPER_INSTRUCTIONS})" if n_samples < PAPER_INSTRUCTIONS else ""
        )
    else:
        samples = "every instruction"
    datasets = set(found.loc[~found["pooled"], "scope"]) if len(found) else set()
    cells = (
        "pooled into cells per model and family of datasets"
        if len(found) and found["pooled"].any()
        else "one cell per model and dataset"
    )
    return (
        f"**Scope.** {claims}{' beyond it' if paper and beyond else ''}, on {on}, with {samples} in "
        f"{_count(len(datasets), 'dataset')}, {cells}."
    )


def _described(model: str) -> str:
    info = models_registry.known_model(model)
    return info.description.split(",")[0] if info is not None else model


def undecided_sentence(found: pd.DataFrame) -> str:
    """How many cells these sample sizes leave undecided and how many instructions would decide them."""
    tested = found[found["verdict"] != NOT_APPLICABLE] if len(found) else found
    open_ = tested[tested["verdict"] == UNRESOLVED] if len(tested) else tested
    if open_.empty:
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
    found: pd.DataFrame, parts: pd.DataFrame, *, groups: Sequence[Sequence[str]], imported: bool, registry: Registry
) -> str:
    """One bullet per group of checks, each check one ``claim_sentence`` over its pooled cells where
    it has any (``absent_sentence`` where it has none)."""
    cells = headline_cells(found, parts, registry) if len(found) else found

    def sentence(check: str) -> str:
        mine = cells[cells["check"] == check] if len(cells) else cells
        if mine.empty:
            return absent_sentence(check, released=imported, registry=registry)
        pooled = mine[mine["pooled"]]
        return claim_sentence(check, pooled if len(pooled) else mine, registry)

    return "\n".join("- " + " ".join(sentence(check) for check in group) for group in groups if group)


def summary_markdown(
    found: pd.DataFrame,
    parts: pd.DataFrame,
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
    ``lead``, and the paper's reported numbers this store can be set against (``reported``). ``scope``: the scope paragraph, where the caller words it (the training runs);
    None: ``scope_sentence``."""
    pieces = [
        scope or scope_sentence(found, models=models, n_samples=n_samples, imported=imported),
        claim_lines(found, parts, groups=lead, imported=imported, registry=registry),
        reported_sentence(reported if reported is not None else pd.DataFrame()),
    ]
    return "\n\n".join(p for p in pieces if p)


def lead_groups(checks: Sequence[str]) -> list[tuple[str, ...]]:
    """The groups of ``LEAD`` that a page shows, each cut to the checks it shows."""
    groups = [tuple(c for c in group if c in checks) for group in LEAD]
    return [group for group in groups if group]


def page_summary(page) -> str:
    """The summary that opens a page: the scope, then its checks of ``LEAD``."""
    return summary_markdown(
        page.findings_table(),
        page.part_table(),
        lead=lead_groups(page.checks()),
        models=page.models,
        n_samples=page.params.n_samples,
        imported=bool(imported_models(page.results.rows)),
        reported=curve_tables.reported_mad_comparison(page.draws),
        registry=page.registry,
    )


def other_claims(page) -> str:
    """What follows a page's matrix: how many cells are not resolved at this size, then the page's
    checks outside ``LEAD``, one sentence each."""
    found = page.findings_table()
    led = {c for group in LEAD for c in group}
    lines = claim_lines(
        found,
        page.part_table(),
        groups=[(c,) for c in page.checks() if c not in led],
        imported=bool(imported_models(page.results.rows)),
        registry=page.registry,
    )
    return "\n\n".join(p for p in (undecided_sentence(found), lines and f"**The other claims.**\n\n{lines}") if p)
