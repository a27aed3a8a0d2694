"""The sections that several pages share, each shown by one call from a notebook cell.

A section displays a figure, a short generated paragraph, or a table of exact numbers; long
tables go in their own notebook cells (``tables_*`` functions), which the notebooks tag to
collapse.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import pandas as pd

from analysis import vocabulary
from analysis.findings import questions
from analysis.findings.rules import CHECKS, SHARE_PART
from analysis.report import beyond, coverage, figures, plots, tables, verdicts
from analysis.report.display import show_figure, show_figures, show_markdown, show_table
from analysis.report.load import NOT_IMPORTED, imported_models, lacks, offline_models
from analysis.report.page import Page


def _with_rows(section: Callable) -> Callable:
    """A section shows nothing on a page whose store holds none of its rows: the page's coverage
    paragraph says what is absent and the command that brings it."""

    table = section.__annotations__.get("return") in ("pd.DataFrame", pd.DataFrame)

    @functools.wraps(section)
    def shown(page: Page, *args, **kwargs):
        if page.empty:
            return pd.DataFrame() if table else None
        return section(page, *args, **kwargs)

    return shown


def findings_table(page: Page, checks: Sequence[str] = CHECKS) -> pd.DataFrame:
    """The page's findings of ``checks`` as a table."""
    return page.findings_table(checks)


@_with_rows
def answers(page: Page, checks: Sequence[str] = CHECKS) -> None:
    """The verdict matrix figure and one paragraph per model."""
    found = findings_table(page, checks)
    if found.empty:
        show_markdown("The data read here cover none of the checks.")
        _unpaired(page, checks)
        return
    show_figure(
        figures.verdict_figure(found, pairs=page.pairs),
        "Verdict matrix: each check per model, pooled per family and per dataset",
    )
    show_markdown(f"*{verdicts.matrix_note(found, page.params.profile.name, page.note())}*")
    layers = coverage.layer_note(page.results.rows)
    if layers:
        show_markdown(f"*{layers}.*")
    imported = imported_models(page.results.rows)
    if "L" in checks and imported and not (found["check"] == "L").any():
        show_markdown(
            f"**L and L2: not available** for {', '.join(imported)}: the original study computed no "
            "length-control condition, so the length questions have no verdict on its numbers."
        )
    show_markdown(verdicts.summary_text(found))
    _unpaired(page, checks)


def _unpaired(page: Page, checks: Sequence[str]) -> None:
    """On a page that checks F4: the models present without their pair, and the command that brings it."""
    if "F4" in checks:
        p = page.params
        lonely = coverage.unpaired_sentence(page.models, p.models, p.profile, p.results_dir, p.conditions)
        if lonely:
            show_markdown(lonely)


def claims(checks: Sequence[str] = CHECKS) -> None:
    """The claims checked, as a list."""
    show_markdown(verdicts.claims_text(checks))


@_with_rows
def pooled_findings(page: Page, checks: Sequence[str] = CHECKS) -> None:
    """The pooled (family) findings with their numbers."""
    show_table(
        verdicts.format_findings(findings_table(page, checks), pooled_only=True),
        empty="No family has two datasets for a pooled verdict here.",
    )


@_with_rows
def tables_findings(page: Page, checks: Sequence[str] = CHECKS) -> None:
    """Every finding, per dataset and pooled, with its numbers (a long table)."""
    show_table(verdicts.format_findings(findings_table(page, checks)))


@_with_rows
def headline(page: Page) -> None:
    """The headline layer curves: one reasoning dataset, None / Simplified / Detailed CoT."""
    show_figure(
        figures.headline_figure(page.draws, page.curves, page.bands, page.params.n_samples),
        "Layer curves of nuclear norm under None, Simplified and Detailed CoT",
        empty="No dataset with all three CoT settings is stored.",
    )


@_with_rows
def layer_curves(page: Page, datasets: Sequence[str] | None = None) -> None:
    """The paper's figure per model and dataset."""
    show_figures(
        figures.paper_figures(page.draws, page.curves, page.bands, page.params.n_samples, datasets=datasets),
        alt="Layer curves",
    )


@_with_rows
def pair_curves(page: Page, stat: str = "nuclear_norm") -> None:
    """Per (base, instruct) pair and dataset: the base model's curves above the instruct model's."""
    show_figures(
        figures.pair_figures(page.draws, page.pairs, page.curves, page.bands, stat, page.params.n_samples),
        empty="No base and instruct model pair is present.",
        alt="Base above instruct",
    )


@_with_rows
def tables_pairs(page: Page) -> None:
    show_table(tables.pair_comparison_table(page.draws, page.pairs), empty="No pair to compare.")


@_with_rows
def tables_mad(page: Page) -> None:
    show_table(tables.format_segment_table(tables.mad_interval_table(page.draws)))


@_with_rows
def tables_rd(page: Page) -> None:
    show_table(tables.format_rd_table(tables.rd_interval_table(page.draws)))


def origin(page: Page) -> None:
    """Whose numbers these are, when the page holds the original study's imported statistics."""
    note = page.origin()
    if note:
        show_markdown(f"**Whose numbers.** {note}.")


def not_imported(page: Page, column: str, what: str) -> bool:
    """Say that ``what`` is not in the imported statistics when the page's rows lack ``column``."""
    if imported_models(page.results.rows) and lacks(page.results.rows, column):
        show_markdown(f"{what}: {NOT_IMPORTED} (models {', '.join(imported_models(page.results.rows))}).")
        return True
    return False


@_with_rows
def effective_rank(page: Page) -> pd.DataFrame:
    """Effective rank under the fastest vs the slowest setting: a forest plot and a paragraph."""
    if not_imported(page, "effective_rank", "Effective rank"):
        return pd.DataFrame()
    table = questions.effective_rank_table(page.draws)
    if not table.empty:
        forest = pd.DataFrame(
            {
                "label": [verdicts.scope_text(s, p) for s, p in zip(table["scope"], table["pooled"])],
                "value": table["value"],
                "low": table["low"],
                "high": table["high"],
                "group": table["model"],
            }
        )
        show_figure(
            plots.forest(
                forest, reference=0.0, x_label="mean effective rank, fastest minus slowest setting", note=page.note()
            ),
            "Effective rank: fastest minus slowest setting, with intervals",
        )
    show_markdown(beyond.effective_rank_paragraph(table))
    return table


@_with_rows
def separability(page: Page) -> pd.DataFrame:
    """One sample's separability of correct vs irrelevant: a forest plot (pooled) and a paragraph."""
    table = questions.separability_table(page.results.rows, page.identical, page.params.n_resamples, page.params.seed)
    if not table.empty:
        shown = table[table["pooled"]] if table["pooled"].any() else table
        show_figure(
            figures.separability_forest(shown, note=page.note()),
            "Separability: out-of-fold AUROC of correct vs irrelevant, with intervals",
        )
    show_markdown(beyond.separability_paragraph(table))
    return table


@_with_rows
def length(page: Page) -> None:
    """Is the fast/slow gap only length: the share of the Simplified vs Detailed gap left when
    Detailed CoT is cut to the Simplified length, with intervals, where the gap is established."""
    found = page.findings_table(CHECKS)
    parts = page.part_table(CHECKS)
    has_length = bool(len(parts)) and bool((parts["check"] == "L").any())
    if imported_models(page.results.rows) and not has_length:
        show_markdown(
            "L (is the gap only length): not available; the original study computed no length-control "
            f"condition, and response token counts are {NOT_IMPORTED}."
        )
        return
    figure = figures.part_forest(
        parts[parts["check"] == "L"],
        SHARE_PART,
        "share of the Simplified vs Detailed gap left at equal length",
        reference=0.0,
        note=page.note(),
    )
    show_figure(
        figure,
        "Length: share of the Simplified vs Detailed gap left at equal length, with intervals",
        empty="No Simplified vs Detailed gap is established here, so no share is shown.",
    )
    show_markdown(beyond.length_paragraph(found))


@_with_rows
def length_curves(page: Page) -> None:
    """Layer curves of the length-control conditions next to the settings they are cut to."""
    show_figures(
        figures.length_control_figures(page.draws, page.curves, page.bands, page.params.n_samples),
        empty="No length-control condition is stored.",
        alt="Length-control layer curves",
    )


@_with_rows
def length_regression(page: Page) -> pd.DataFrame:
    if not_imported(page, "n_response_tokens", "Response token counts (for the length regression)"):
        return pd.DataFrame()
    table = beyond.length_regression_table(page.results.rows)
    show_markdown(beyond.length_regression_paragraph(table))
    return table


def tables_length_regression(table: pd.DataFrame) -> None:
    if table.empty:
        return
    show_table(beyond.format_length_regression(table), empty="")


def tables_separability(table: pd.DataFrame) -> None:
    if table.empty:
        return
    show_table(beyond.format_separability(table), empty="")


def tables_effective_rank(table: pd.DataFrame) -> None:
    if table.empty:
        return
    show_table(beyond.format_effective_rank(table), empty="")


def caveats(page: Page) -> None:
    """The caveats that apply to this run's numbers, as a list: offline models, the original
    study's imported statistics, sample counts."""
    items = []
    offline = offline_models(page.models)
    if offline:
        items += [
            f"**The offline models ({', '.join(offline)}) are not the paper's models.** They are quantised "
            "(GGUF, 4-bit) weights dequantised to float32, far smaller than the paper's 1.5 to 9 billion "
            "parameter models.",
        ]
        if len(offline) > 1:
            items.append(
                "**They come from two different families**, so the offline comparison of pre-trained and "
                "instruct models mixes instruction tuning with everything else that differs between them."
            )
    imported = imported_models(page.results.rows)
    if imported:
        items.append(
            f"**The numbers of {', '.join(imported)} are the original study's**, as its files were released "
            "(whatever samples each file holds); this book adds the intervals, pooled verdicts and figures, and "
            "says where those files lack a quantity."
        )
    n = page.params.n_samples
    if not coverage.imported_profile(page.params.profile) and n is not None and n < 500:
        stored = set(page.results.rows["dataset"].unique()) if len(page.results.rows) else set()
        counts = [len(stored & set(d)) for d in vocabulary.FAMILY_DATASETS.values()]
        sizes = sorted({n * c for c in counts if c > 1})
        text = f"**Sample counts.** This run uses {n} instructions per condition, the paper 500. One dataset alone then rarely decides a claim"
        if sizes:
            pooled = f"{sizes[0]} to {sizes[-1]}" if len(sizes) > 1 else f"{sizes[0]}"
            text += f"; the families pool their datasets ({pooled} instructions), which is where this run's answers come from"
        items.append(text + ".")
    items.append(
        "Verdicts, numbers and sentences are generated from the stored results when the book is built; none "
        "is written by hand."
    )
    show_markdown("\n".join(f"- {item}" for item in items))
