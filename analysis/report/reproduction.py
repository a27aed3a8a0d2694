"""The reproduction summary that opens a book: which claims were checked on which models, one plain
sentence per claim with its size, interval and verdict, and what differs from the paper's setup.

Every number comes from the page's findings (``Page.findings_table``, ``Page.part_table``); the
sentences are built here once and shown by every book's landing page (the default book, the
``original`` book, the training book).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
    "released": "an extraction of the paper's models computes it (`python -m analysis run --profile paper`, on a GPU)",
    "run": "`python -m analysis run --profile cpu-full` computes it",
}


def size_text(value: float, *, ratio: bool) -> str:
    """A headline size as a reader reads it: a ratio far from 1 as "x10.4", one near 1 as "+13%",
    any other value with three significant digits."""
    if value is None or not math.isfinite(value):
        return "nan"
    if not ratio:
        return f"{value:.3g}"
    if value >= 2 or value <= 0.5:
        return f"x{value:.3g}"
    return f"{value - 1:+.0%}"


def sized(row, *, interval: bool = True) -> str:
    """A headline part's value (with its 95% interval where defined) in the reader's units."""
    ratio = str(row["part"]).endswith(" x")
    text = size_text(row["value"], ratio=ratio)
    if interval and math.isfinite(row["low"]) and math.isfinite(row["high"]):
        text += f" [{size_text(row['low'], ratio=ratio)}, {size_text(row['high'], ratio=ratio)}]"
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
    """The headline of one cell ("x4.1", with "[2.9, 5.8]" if ``interval``), else the smallest and
    the largest: "x4.1 to x15"."""
    sized_cells = cells[cells["value"].notna()].sort_values("value")
    if sized_cells.empty:
        return ""
    ends = [sized(end, interval=interval) for end in (sized_cells.iloc[0], sized_cells.iloc[-1])]
    return ends[0] if ends[0] == ends[1] else " to ".join(ends)


def _undecided(cells: pd.DataFrame) -> str:
    """ "these 5 instructions per dataset cannot decide; about 40 would" (or "over 1000")."""
    n = int(cells["n_smallest"].min()) if "n_smallest" in cells and cells["n_smallest"].notna().any() else None
    if not n:
        return ""
    text = f"these {n} instructions per dataset cannot decide"
    sizes = cells["n_for_power"].dropna() if "n_for_power" in cells else pd.Series(dtype=float)
    if len(sizes):
        median = sizes.median()
        text += f"; {'over ' + str(LARGEST_SIZE_SHOWN) if median > LARGEST_SIZE_SHOWN else 'about ' + str(int(median))} would"
    return text


def verdict_phrase(cells: pd.DataFrame) -> str:
    """How a check's applicable cells went, with their headline sizes: "holds in all 4 cells (x4.1
    to x15)"; an undecided group with its intervals and the instructions that would decide it."""
    total = len(cells)
    pieces = []
    for verdict in (HOLDS, FAILS, UNRESOLVED, TOO_FEW):
        group = cells[cells["verdict"] == verdict]
        if group.empty:
            continue
        every = "both cells" if total == 2 else f"all {total} cells"
        many = every if len(group) == total and total > 1 else f"{len(group)} of {total}"
        many += " cell" if total == 1 else ""
        size = _range(group, interval=verdict == UNRESOLVED)
        details = [size] if size else []
        if verdict == UNRESOLVED and _undecided(group):
            details.append(_undecided(group))
        pieces.append(f"{verdict} in {many}" + (f" ({', '.join(details)})" if details else ""))
    text = "; ".join(pieces)
    return text[:1].upper() + text[1:]


def claim_sentence(check_id: str, cells: pd.DataFrame, registry: Registry = REGISTRY) -> str:
    """One line for one check: the claim in plain words, then how its cells went with their
    headline sizes. ``cells``: its rows of ``headline_cells``."""
    check = get(check_id, registry)
    applicable = cells[cells["verdict"] != NOT_APPLICABLE]
    if applicable.empty:
        reason = str(cells["numbers"].iloc[0]).removeprefix(f"{NOT_APPLICABLE}: ").split(";")[0]
        return f"**{check.id}**: {check.plain}. No verdict: {reason}."
    return f"**{check.id}**: {check.plain}. {verdict_phrase(applicable)}."


def absent_sentence(check_id: str, *, released: bool, registry: Registry = REGISTRY) -> str:
    """The line for a check without a cell: the store holds none of what it reads, and what computes it."""
    check = get(check_id, registry)
    store = "the original study's released statistics hold" if released else "this run stores"
    how = COMPUTED_BY["released" if released else "run"]
    return f"**{check.id}**: {check.plain}. No verdict: {store} none of the conditions it reads; {how}."


def scope_sentence(found: pd.DataFrame, *, models: Sequence[str], n_samples: int | None, imported: bool) -> str:
    """Which claims, on which models, on how many instructions and datasets, and which cells the
    lines below count (a family's pooled cells where there are any)."""
    checks_found = list(dict.fromkeys(found["check"])) if len(found) else []
    paper = [c for c in checks_found if c.startswith("F")]
    beyond = [c for c in checks_found if not c.startswith("F")]
    datasets = set(found.loc[~found["pooled"], "scope"]) if len(found) else set()
    samples = (
        "the original study's released statistics"
        if imported
        else f"{n_samples} instructions per condition"
        if n_samples
        else "every instruction"
    )
    cells = "pooled per family of datasets" if len(found) and found["pooled"].any() else "per dataset"
    claims = f"The paper's claims {', '.join(paper)}" if paper else "Questions"
    return (
        f"**Scope.** {claims}"
        + (f" and {', '.join(beyond)} beyond it" if paper and beyond else f" {', '.join(beyond)}" if beyond else "")
        + f", on {' and '.join(_described(m) for m in models)}; {samples} in {_count(len(datasets), 'dataset')}; "
        f"a cell is one model {cells}."
    )


def _described(model: str) -> str:
    info = models_registry.known_model(model)
    return info.description.split(",")[0] if info is not None else model


def differences_sentence(found: pd.DataFrame, *, models: Sequence[str], n_samples: int | None, imported: bool) -> str:
    """What differs from the paper's setup: the models, their weights, the sample size, and what
    these sizes leave undecided."""
    pieces = []
    offline = offline_models(models)
    if offline:
        pieces.append(
            f"{' and '.join(_described(m) for m in offline)} are small quantised models (4-bit GGUF weights "
            "dequantised to float32), not the paper's 1.5-9 billion parameter models"
        )
    if imported:
        pieces.append("the numbers are the original study's released statistics, to which this book adds intervals")
    elif n_samples is not None and n_samples < PAPER_INSTRUCTIONS:
        pieces.append(f"{n_samples} instructions per condition against the paper's {PAPER_INSTRUCTIONS}")
    tested = found[found["verdict"] != NOT_APPLICABLE] if len(found) else found
    open_ = tested[tested["verdict"] == UNRESOLVED] if len(tested) else tested
    if len(open_):
        sizes = open_["n_for_power"].dropna()
        would = ""
        if len(sizes):
            median = sizes.median()
            amount = f"over {LARGEST_SIZE_SHOWN}" if median > LARGEST_SIZE_SHOWN else f"about {int(median)}"
            would = f"; {amount} instructions per dataset would decide them (median)"
        pieces.append(f"{len(open_)} of {len(tested)} cells are not resolved at this size{would}")
    return "**Unlike the paper.** " + "; ".join(pieces) + "." if pieces else ""


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


def summary_markdown(
    found: pd.DataFrame,
    parts: pd.DataFrame,
    *,
    checks: Sequence[str],
    models: Sequence[str],
    n_samples: int | None,
    imported: bool,
    reported: pd.DataFrame | None = None,
    scope: str | None = None,
    registry: Registry = REGISTRY,
) -> str:
    """The reproduction summary: the scope, one line per check in ``checks`` (its pooled cells where
    it has any), what differs from the paper's setup, and the paper's reported numbers this store
    can be set against (``reported``). ``scope``: the scope paragraph, where the caller words it
    (the training runs); None: ``scope_sentence``."""
    cells = headline_cells(found, parts, registry) if len(found) else found
    lines = []
    for check in checks:
        mine = cells[cells["check"] == check] if len(cells) else cells
        if mine.empty:
            lines.append(absent_sentence(check, released=imported, registry=registry))
            continue
        pooled = mine[mine["pooled"]]
        lines.append(claim_sentence(check, pooled if len(pooled) else mine, registry))
    pieces = [
        scope or scope_sentence(found, models=models, n_samples=n_samples, imported=imported),
        "\n".join(f"- {line}" for line in lines),
        differences_sentence(found, models=models, n_samples=n_samples, imported=imported),
        reported_sentence(reported if reported is not None else pd.DataFrame()),
    ]
    return "\n\n".join(p for p in pieces if p)


def page_summary(page) -> str:
    """The summary of a page's own findings (its chapter's checks)."""
    found, parts = page.findings_table(), page.part_table()
    return summary_markdown(
        found,
        parts,
        checks=page.checks(),
        models=page.models,
        n_samples=page.params.n_samples,
        imported=bool(imported_models(page.results.rows)),
        reported=curve_tables.reported_mad_comparison(page.draws),
        registry=page.registry,
    )
