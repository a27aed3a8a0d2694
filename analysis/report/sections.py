"""The sections that several pages share, each shown by one call from a notebook cell.

A section displays a figure, a short generated paragraph, or a table of exact numbers; long
tables go in their own notebook cells (``tables_*`` functions), which the notebooks tag to
collapse.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import pandas as pd

from analysis.core import vocabulary
from analysis.extract.token_counts import fill_command
from analysis.findings.averaging import TOKENS_UNKNOWN
from analysis.findings.checks import LENGTH_CHECKS, PER_PAIR, selected
from analysis.findings.effective_rank import effective_rank_table
from analysis.findings.separability import separability_table
from analysis.profiles import PAPER_SAMPLES
from analysis.report import beyond, coverage, curve_tables, figures, plots, reproduction, verdicts
from analysis.report.display import (
    collapsed,
    show_figure,
    show_figures,
    show_html,
    show_last_markdown,
    show_markdown,
    show_table,
)
from analysis.report.load import NOT_IMPORTED, figure_note, imported_models, lacks, offline_models
from analysis.report.page import Page

# The one line a reader sees of what is folded under a verdict matrix.
MATRIX_DETAILS = "Reading the matrix: legend, error rates, power, verdicts per model"


def _with_rows(section: Callable) -> Callable:
    """A section shows nothing on a page whose store holds none of its rows: ``provenance`` says what
    is absent and the command that brings it."""

    table = section.__annotations__.get("return") in ("pd.DataFrame", pd.DataFrame)

    @functools.wraps(section)
    def shown(page: Page, *args, **kwargs):
        if page.empty:
            return pd.DataFrame() if table else None
        return section(page, *args, **kwargs)

    return shown


def findings_table(page: Page, checks: Sequence[str] | None = None) -> pd.DataFrame:
    """The page's findings of ``checks`` (None: those its chapter shows) as a table."""
    return page.findings_table(checks)


@_with_rows
def answers(page: Page, *, scope: str | None = None) -> None:
    """The verdict matrix figure of the checks the chapter shows (of one scope, if given), one
    paragraph per model, and the figure of each such check that has one (``checks.Check.figure``;
    the length checks' figure is in ``length``)."""
    shown = page.checks(scope)
    found = findings_table(page, shown)
    if found.empty:
        show_markdown("The data read here cover none of the checks.")
        _unpaired(page, shown)
        return
    parts = page.part_table(shown)
    show_html(figures.verdict_svg(found, parts=parts, pairs=page.pairs, registry=page.registry) or "")
    show_markdown(verdicts.plain_summary(found, page.registry))
    with collapsed(MATRIX_DETAILS):
        note = verdicts.matrix_note(found, page.params.profile.name, page.note(), page.registry, parts=parts)
        show_markdown(f"*{note}*")
        show_table(figures.instruction_counts(found, page.registry), empty="")
        layers = coverage.layer_note(page.results.rows)
        if layers:
            show_markdown(f"*{layers}.*")
        imported = imported_models(page.results.rows)
        length = [c for c in LENGTH_CHECKS if c in shown]
        if imported and length and not found["check"].isin(length).any():
            show_markdown(
                f"**{' and '.join(length)}: not available** for {', '.join(imported)}: the original study computed "
                "no length-control condition, so the length questions have no verdict on its numbers."
            )
        for model in dict.fromkeys(found["model"]):
            show_markdown(verdicts.model_paragraph(found, model, page.registry))
    _unpaired(page, shown)  # unfolded: it says why a check has no row
    unknown = verdicts.unknown_sentence(found, page.params.results_dir)
    if unknown:
        show_markdown(unknown)  # unfolded too: why a check's cells are n/a, and the command
    check_figures(page, [c for c in shown if c not in LENGTH_CHECKS], parts)


@_with_rows
def summary(page: Page) -> None:
    """The reproduction summary that opens a book (``reproduction.page_summary``): the scope beside
    the paper's setup, then the checks a reader asks about first, each with its sizes and verdict."""
    show_markdown(reproduction.page_summary(page))


def other_claims(page: Page) -> None:
    """What follows the matrix on a book's first page (``reproduction.other_claims``): the cells
    these sizes leave undecided, and the checks outside the summary, each with its sizes and verdict."""
    text = reproduction.other_claims(page)
    if text:
        show_markdown(text)


def _unpaired(page: Page, checks: Sequence[str]) -> None:
    """On a page with a check of base-instruct pairs: the models present without their pair, and
    the command that brings it."""
    if any(check.scope == PER_PAIR for check in selected(checks, page.registry)):
        p = page.params
        lonely = coverage.unpaired_sentence(page.models, p.models, p.profile, p.results_dir, conditions=p.conditions)
        if lonely:
            show_markdown(lonely)


@_with_rows
def check_figures(page: Page, checks: Sequence[str], parts: pd.DataFrame) -> None:
    """The figure of each of ``checks`` that declares one: a part per model and scope, with intervals."""
    for check in selected(checks, page.registry):
        figure = check.figure
        if figure is None:
            continue
        rows = parts[parts["check"] == check.id] if len(parts) else parts
        show_figure(
            figures.part_forest(rows, figure.part, figure.x_label, reference=figure.reference, note=page.note())
            if len(rows)
            else None,
            figure.caption,
            empty=figure.empty,
        )


def claims(page: Page | None = None, *, scope: str | None = None, folded: str | None = None) -> None:
    """The claims the chapter checks (of one scope, if given; no page: every check) in plain words,
    each linked to its rule on the checks page, as a list; folded under the line ``folded`` when
    given (as under the landing page's matrix)."""
    text = verdicts.claims_text() if page is None else verdicts.claims_text(page.checks(scope), page.registry)
    if folded is None:
        show_markdown(text)
        return
    with collapsed(folded):
        show_markdown(text)


@_with_rows
def pooled_findings(page: Page, *, scope: str | None = None) -> None:
    """The pooled (family) findings of the chapter's checks (of one scope, if given): one row per
    part of a claim, with its estimate, its 95% interval and whether it decides."""
    checks = page.checks(scope)
    show_table(
        verdicts.format_parts(page.part_table(checks), findings_table(page, checks), pooled_only=True),
        empty="No family has two datasets for a pooled verdict here.",
    )


@_with_rows
def tables_findings(page: Page, *, scope: str | None = None) -> None:
    """Every finding of the chapter's checks (of one scope, if given), per dataset and pooled, with
    its numbers (a long table)."""
    show_table(verdicts.format_findings(findings_table(page, page.checks(scope))))


def findings(page: Page) -> None:
    """A chapter's findings section: the claims its chapter checks, the verdict matrix with a
    paragraph per model, the pooled answers with their numbers, and, where there are findings per
    dataset, every finding (folded). What the page read is ``provenance``'s, above it."""
    if page.empty:  # ``provenance`` said what is absent and the command that brings it
        return
    claims(page)
    answers(page)
    show_markdown("The pooled answers, one row per part of a claim, with its 95% interval:")
    pooled_findings(page)
    found = findings_table(page)
    if len(found) and not found["pooled"].all():
        with collapsed("Every check per dataset, with its numbers"):
            tables_findings(page)


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
        figures.paper_figures(page.draws, page.curves, page.bands, n_samples=page.params.n_samples, datasets=datasets),
        alt="Layer curves",
    )


@_with_rows
def pair_curves(page: Page, stat: str = "nuclear_norm") -> None:
    """Per (base, instruct) pair and dataset: the base model's curves above the instruct model's."""
    show_figures(
        figures.pair_figures(
            page.draws, page.pairs, page.curves, page.bands, stat=stat, n_samples=page.params.n_samples
        ),
        empty="No base and instruct model pair is present.",
        alt="Base above instruct",
    )


@_with_rows
def tables_pairs(page: Page) -> None:
    show_table(curve_tables.pair_comparison_table(page.draws, page.pairs), empty="No pair to compare.")


@_with_rows
def curves(page: Page) -> None:
    """The paper's figure per model and dataset, then the MAD and RD tables with intervals (folded)."""
    layer_curves(page)
    with collapsed("MAD per layer segment and RD of irrelevant against correct, with 95% intervals"):
        show_table(curve_tables.format_segment_table(curve_tables.mad_interval_table(page.draws)))
        show_table(curve_tables.format_rd_table(curve_tables.rd_interval_table(page.draws)))


def not_imported(page: Page, column: str, what: str) -> bool:
    """Say that ``what`` is not in the imported statistics when the page's rows lack ``column``."""
    if imported_models(page.results.rows) and lacks(page.results.rows, column):
        show_markdown(f"{what}: {NOT_IMPORTED} (models {', '.join(imported_models(page.results.rows))}).")
        return True
    return False


def _answer(figure, alt: str, paragraph: str, summary: str, *, tables: Sequence[pd.DataFrame]) -> None:
    """A question's figure (if any), its paragraph and its tables of numbers (folded, if any)."""
    if figure is not None:
        show_figure(figure, alt)
    show_markdown(paragraph)
    if any(not table.empty for table in tables):
        with collapsed(summary):
            for table in tables:
                show_table(table, empty="")


@_with_rows
def effective_rank(page: Page) -> None:
    """Effective rank under the fastest vs the slowest setting: a forest plot, a paragraph and the
    table (folded)."""
    if not_imported(page, "effective_rank", "Effective rank"):
        return
    table = effective_rank_table(page.draws)
    figure = None
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
        figure = plots.forest(
            forest, reference=0.0, x_label="mean effective rank, fastest minus slowest setting", note=page.note()
        )
    _answer(
        figure,
        "Effective rank: fastest minus slowest setting, with intervals",
        beyond.effective_rank_paragraph(table),
        "Effective rank per dataset and pooled",
        tables=[beyond.format_effective_rank(table) if not table.empty else table],
    )


@_with_rows
def separability(page: Page) -> None:
    """One sample's separability of correct vs irrelevant: a forest plot (pooled), a paragraph and
    the table (folded)."""
    table = separability_table(page.results.rows, page.identical, page.params.n_resamples, page.params.seed)
    figure = None
    if not table.empty:
        shown = table[table["pooled"]] if table["pooled"].any() else table
        figure = figures.separability_forest(shown, note=page.note())
    _answer(
        figure,
        "Separability: out-of-fold AUROC of correct vs irrelevant, with intervals",
        beyond.separability_paragraph(table),
        "Separability per model, dataset and setting",
        tables=[beyond.format_separability(table) if not table.empty else table],
    )


@_with_rows
def length(page: Page) -> None:
    """Is the fast/slow gap only length: where the chapter shows the length checks, the share of the
    Simplified vs Detailed gap left when Detailed CoT is cut to the Simplified length, with
    intervals, and the length-control curves (folded); then the regression on response length."""
    if set(LENGTH_CHECKS) & set(page.checks()):
        length_control(page)
    length_regression(page)


@_with_rows
def length_control(page: Page) -> None:
    """The length checks' figure and paragraph, and the length-control layer curves (folded)."""
    found = page.findings_table()
    parts = page.part_table()
    has_length = bool(len(parts)) and bool(parts["check"].isin(LENGTH_CHECKS).any())
    if imported_models(page.results.rows) and not has_length:
        tokens = (
            f", and response token counts are {NOT_IMPORTED}" if lacks(page.results.rows, "n_response_tokens") else ""
        )
        show_markdown(
            f"L (is the gap only length): not available; the original study computed no length-control condition{tokens}."
        )
        return
    check_figures(page, LENGTH_CHECKS, parts)
    show_markdown(beyond.length_paragraph(found))
    with collapsed("Layer curves of the length-control conditions"):
        show_figures(
            figures.length_control_figures(page.draws, page.curves, page.bands, page.params.n_samples),
            empty="No length-control condition is stored.",
            alt="Length-control layer curves",
        )


@_with_rows
def length_regression(page: Page) -> None:
    """The regression of a sample's log nuclear norm on its log response length and its setting:
    a paragraph and the table (folded)."""
    if not_imported(page, "n_response_tokens", "Response token counts (for the length regression)"):
        return
    rows = page.results.rows
    known = rows["n_response_tokens"].notna().groupby(rows["model"], observed=True).any()
    unknown = [str(m) for m, has in known.items() if not has]
    if unknown:  # imported without R (no tokenizer then): left out of the regression, and said
        command = fill_command(page.params.results_dir, unknown)
        show_markdown(
            f"Left out of the length regression, {TOKENS_UNKNOWN}: {', '.join(unknown)}; `{command}` adds them."
        )
        rows = rows[~rows["model"].isin(unknown)]
    table = beyond.length_regression_table(rows)
    shown = beyond.length_regression_parts(beyond.format_length_regression(table)) if not table.empty else [table]
    _answer(
        None, "", beyond.length_regression_paragraph(table), "Length regression per model and dataset", tables=shown
    )


# The one line a reader sees of what a page read; everything behind it is folded.
PROVENANCE = "What this page read"


def provenance(page: Page) -> None:
    """What the page read, in one folded block and once per page: the models and conditions found,
    how the samples were drawn, what is absent or skipped (with the commands), and the caveats of
    the models and numbers. A page whose store holds none of its conditions says so and the command
    instead, unfolded, and ends there."""
    if page.empty:
        show_last_markdown(page.coverage())
        return
    with collapsed(PROVENANCE):
        for paragraph in page.coverage().split("\n\n"):
            show_markdown(paragraph)
        show_markdown("\n".join(f"- {item}" for item in caveats(page)))


def caveats(page: Page) -> list[str]:
    """The caveats of a page's numbers, one item each: the offline models, the original study's
    imported statistics, the sample counts, and that no number or sentence is written by hand."""
    items = [*_model_caveats(page.models), *_origin_caveats(page)]
    samples = _sample_caveat(page)
    if samples:
        items.append(samples)
    items.append(
        "Verdicts, numbers and sentences are generated from the stored results when the book is built; none "
        "is written by hand."
    )
    return items


def _model_caveats(models: Sequence[str]) -> list[str]:
    """The offline models: what they are (the line under every figure), and that two of them differ
    in more than instruction tuning."""
    note = figure_note(models)
    if note is None:
        return []
    text = (
        f"**Offline models.** {note}. Their 4-bit weights are dequantised to float32; they are far smaller than "
        "the paper's 1.5 to 9 billion parameter models."
    )
    if len(offline_models(models)) > 1:
        text += (
            " Comparing them as pre-trained and instruct mixes instruction tuning with everything else that "
            "differs between the two."
        )
    return [text]


def _origin_caveats(page: Page) -> list[str]:
    """Whose numbers these are, where some are the original study's imported statistics."""
    note = page.origin()
    if note is None:
        return []
    return [
        f"**Whose numbers.** {note}. They are used as the files were released (whatever samples each file "
        "holds); this book adds the intervals, pooled verdicts and figures, and says where those files lack a "
        "quantity."
    ]


def _sample_caveat(page: Page) -> str:
    """How few instructions a computed run has per condition, and where its answers then come from."""
    n = page.params.n_samples
    if coverage.imported_profile(page.params.profile) or n is None or n >= PAPER_SAMPLES:
        return ""
    stored = set(page.results.rows["dataset"].unique()) if len(page.results.rows) else set()
    counts = [len(stored & set(d)) for d in vocabulary.FAMILY_DATASETS.values()]
    sizes = sorted({n * c for c in counts if c > 1})
    text = (
        f"**Sample counts.** This run uses {n} instructions per condition, the paper {PAPER_SAMPLES}. One "
        "dataset alone then rarely decides a claim"
    )
    if sizes:
        pooled = f"{sizes[0]} to {sizes[-1]}" if len(sizes) > 1 else f"{sizes[0]}"
        text += (
            f"; the families pool their datasets ({pooled} instructions), which is where this run's answers come from"
        )
    return text + "."
