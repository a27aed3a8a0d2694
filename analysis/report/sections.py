"""The sections that several pages share: each returns the blocks it shows (``analysis.report.blocks``),
and a notebook cell shows them with ``display.show``.

A section returns a figure, a short generated paragraph, or a table of exact numbers; long tables
are folded. A section of a page whose store holds none of its rows returns nothing (``provenance``
says what is absent and the command that brings it).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.checks import LENGTH_CHECKS, PER_PAIR, Check, Scope, selected
from analysis.core import vocabulary
from analysis.extract.token_counts import fill_command
from analysis.findings import same_tokens
from analysis.findings.averaging import TOKENS_UNKNOWN
from analysis.findings.effective_rank import effective_rank_table
from analysis.findings.separability import separability_table
from analysis.profiles import PAPER_SAMPLES
from analysis.report import (
    abstract,
    beyond,
    chain,
    check_sections,
    coverage,
    curve_tables,
    figures,
    layer_gaps,
    plots,
    reproduction,
    verdicts,
    voice,
)
from analysis.report.blocks import Blocks, Figure, Html, Markdown, PageEnd, Table, fold
from analysis.report.blocks import figures as figure_blocks
from analysis.report.load import NOT_IMPORTED, figure_note, imported_models, lacks, offline_models
from analysis.report.page import ChecksPage, Page

# The one line a reader sees of what is folded under a verdict matrix.
MATRIX_DETAILS = "Reading the matrix: legend, error rates, power, verdicts per model"


def verdict_matrix(page: ChecksPage, checks: Sequence[str]) -> Blocks:
    """The verdict matrix of ``checks`` (inline SVG, each cell printing the size that decided it) and
    the three sentences under it."""
    found = page.findings(checks)
    return [
        Html(figures.verdict_svg(found, pairs=page.pairs, registry=page.registry) or ""),
        Markdown(verdicts.plain_summary(found, page.registry)),
    ]


def answers(page: Page, *, scope: Scope | None = None) -> Blocks:
    """The verdict matrix of the checks the chapter shows (of one scope, if given), its legend, error
    rates and one paragraph per model (folded), the figure of each such check that has one
    (``checks.Check.figure``; the length checks' figure is in ``length``), and, all scopes shown, each
    such check's own section (``check_sections``)."""
    if page.empty:
        return []
    shown = page.checks(scope)
    found = page.findings(shown)
    if not found:
        return [Markdown("The data read here cover none of the checks."), *_unpaired(page, shown)]
    note = verdicts.matrix_note(found, profile=page.params.profile.name, note=page.note(), registry=page.registry)
    details: Blocks = [
        Markdown(f"*{note}*"),
        Table(figures.instruction_counts(found, page.registry), empty=""),
    ]
    layers = coverage.layer_note(page.results.rows)
    if layers:
        details.append(Markdown(f"*{layers}.*"))
    imported = imported_models(page.results.rows)
    length = [c for c in LENGTH_CHECKS if c in shown]
    if imported and length and not any(f.check in length for f in found):
        details.append(
            Markdown(
                f"**{' and '.join(length)}: not available** for {', '.join(imported)}: the original study computed "
                "no length-control condition, so the length questions have no verdict on its numbers."
            )
        )
    details += [Markdown(text) for text in verdicts.per_model_paragraphs(found, page.registry)]
    out: Blocks = [*verdict_matrix(page, shown), fold(MATRIX_DETAILS, details), *_unpaired(page, shown)]
    unknown = verdicts.unknown_sentence(found, page.params.results_dir)
    if unknown:
        out.append(Markdown(unknown))  # unfolded: why a check's cells are n/a, and the command
    own = check_sections.check_sections(page) if scope is None else []
    return out + check_figures(page, [c for c in shown if c not in LENGTH_CHECKS]) + own


def reasoning_layers(page: Page) -> Blocks:
    """The gap chapter's per-layer figure of the chain's whole gap beside its deciding step, or why
    the store cannot show the deciding step (not extracted, or the original study's statistics)."""
    check = chain.chain_check(page.registry)
    if check is None or check.chain is None or check.headline is None:
        return []
    shown = layer_gap_figure(page, check)
    if shown:
        return shown
    imported = set(imported_models(page.results.rows))
    if imported and imported >= set(page.draws):
        readers = [c.id for c in page.registry if same_tokens.LOG_MISS in c.reads and c.id in page.checks()]
        return [Markdown(layer_gaps.NOT_RELEASED.format(checks=" and ".join(readers)))]
    fast, slow = layer_gaps.pairs(check)[layer_gaps.SAME]
    return [Markdown(layer_gaps.NOT_STORED.format(fast=fast, slow=slow))]


def verbatim_counts(page: Page) -> Blocks:
    """How many of the run's Detailed CoTs state the appended answer word for word (``coverage.verbatim_counts``)."""
    counts = coverage.verbatim_counts(page)
    return [Table(counts, by=None)] if not counts.empty else []


def layer_gap_figure(page: Page, check: Check, *, every_token_alone: bool = False) -> Blocks:
    """Per layer, a chain's whole gap with every response token scored and its deciding step with
    the answer's tokens alone (``layer_gaps``); nothing where neither is stored."""
    table = layer_gaps.layer_gaps(page, check, every_token_alone=every_token_alone)
    figure = layer_gaps.layer_gap_figure(table, page.note()) if not table.empty else None
    if figure is None:
        return []
    alt = "Per layer, the gap of fast over slow thinking with every response token scored"
    if layer_gaps.SAME in set(table["gap"]):
        alt += " and with the answer's tokens scored alone"
    return [Figure(figure, alt)]


def opening(page: Page) -> Blocks:
    """What opens a book's first page: its scope in one line and at most three sentences of what was
    found (``abstract.sentences``), one bullet each, then the one figure that shows it, with its
    caption in view."""
    if page.empty:
        return []
    facts = abstract.Facts.of_page(page)
    said = "\n".join(f"- {sentence}" for sentence in abstract.sentences(facts))  # one line per claim, to scan
    out: Blocks = [Markdown(abstract.scope_line(facts) + ("\n\n" + said if said else ""))]
    drawn = abstract.figure(facts, note=page.note())
    if drawn is not None:
        alt = "Per model and family: fast over slow thinking's gradient, its early over late layers, comparisons"
        out += [Figure(drawn, alt), Markdown(abstract.caption(facts))]
    return out


def claims_table(page: ChecksPage) -> Blocks:
    """The paper's claims, one row per claim and model: what this study finds in a word, one number."""
    if page.empty:
        return []
    return [
        Table(reproduction.claims_table(page.findings(), page.registry), empty="No claim of the paper is tested here.")
    ]


def split(page: Page) -> Blocks:
    """The split of the gap into its steps (``chain.blocks``): the figure and how to read it."""
    check = chain.chain_check(page.registry, among=page.checks())
    if page.empty or check is None:
        return []
    return chain.blocks(page, check)


def summary(page: ChecksPage) -> Blocks:
    """The reproduction summary that opens a book: the scope beside the paper's setup, then the checks
    a reader asks about first, each with the sizes that decided its cells."""
    if page.empty:
        return []
    text = reproduction.summary_markdown(
        page.findings(),
        lead=reproduction.lead_groups(page.checks(), page.registry),
        models=page.models,
        n_samples=page.n_samples,
        imported=page.imported,
        reported=page.reported(),
        scope=page.scope(),
        registry=page.registry,
    )
    return [Markdown(text)]


def other_claims(page: ChecksPage, *, folded: str | None = None) -> Blocks:
    """What follows the matrix on a book's first page: the cells these sizes leave undecided, and the
    checks outside the summary, each with the sizes that decided its cells (folded under the line
    ``folded`` where given)."""
    text = reproduction.other_claims(
        page.findings(), checks=page.checks(), imported=page.imported, registry=page.registry
    )
    if not text:
        return []
    return [Markdown(text)] if folded is None else [fold(folded, [Markdown(text)])]


MATRIX_LEGEND = (
    "Each cell is one claim for one model and one scope: a family of datasets pooled (first columns) or one "
    "dataset. Green: the claim holds (every interval on the claim's side); red: it does not hold; purple: the "
    "family's datasets are decided in opposite directions; grey: the intervals do not decide; orange: too few "
    "samples for a verdict; hatched: the check does not apply to these models. The number in a cell is the size "
    "of the part that decided its colour (x3.20: 3.2 times): the claim's headline where it holds, the part on "
    "the wrong side where it does not hold, the undecided part where it is not resolved; hovering over a cell "
    "shows every part with its interval and verdict, and the instructions behind the cell."
)


def matrix_legend() -> Blocks:
    """How to read the verdict matrix, folded under one line."""
    return [fold("How to read the matrix", [Markdown(MATRIX_LEGEND)])]


def _unpaired(page: Page, checks: Sequence[str]) -> Blocks:
    """On a page with a check of base-instruct pairs: the models present without their pair, and
    the command that brings it."""
    paired = [check.id for check in selected(checks, page.registry) if check.scope == PER_PAIR]
    if not paired:
        return []
    p = page.params
    lonely = coverage.unpaired_sentence(
        page.models, p.models, p.profile, p.results_dir, conditions=p.conditions, checks=paired
    )
    return [Markdown(lonely)] if lonely else []


def chains(page: Page) -> Blocks:
    """The tables of every check of the chapter that declares a chain (``chain.tables``)."""
    return [
        b
        for check in selected(page.checks(), page.registry)
        if check.chain is not None
        for b in chain.tables(page, check)
    ]


def check_figures(page: Page, checks: Sequence[str]) -> Blocks:
    """The figure of each of ``checks`` that declares one: a part per model and scope, with intervals."""
    out: Blocks = []
    for check in selected(checks, page.registry):
        figure = check.figure
        if figure is None:
            continue
        found = [f for f in page.findings(page.checks()) if f.check == check.id]
        fig = figures.part_forest(found, figure.part, figure.x_label, reference=figure.reference, note=page.note())
        out.append(Figure(fig, figure.caption, empty=figure.empty))
    return out


def claims(page: ChecksPage | None = None, *, scope: Scope | None = None, folded: str | None = None) -> Blocks:
    """The claims the chapter checks (of one scope, if given; no page: every check) in plain words,
    each linked to its rule on the checks page, as a list; folded under the line ``folded`` when
    given (as under the landing page's matrix)."""
    text = verdicts.claims_text() if page is None else verdicts.claims_text(page.checks(scope), page.registry)
    return [Markdown(text)] if folded is None else [fold(folded, [Markdown(text)])]


def pooled_findings(page: Page, *, scope: Scope | None = None) -> Blocks:
    """The pooled (family) findings of the chapter's checks (of one scope, if given): one row per
    part of a claim, with its estimate, its 95% interval and whether it decides."""
    if page.empty:
        return []
    found = page.findings(page.checks(scope))
    return [
        Table(
            verdicts.parts_frame(found, pooled_only=True),
            empty="No family has two datasets for a pooled verdict here.",
        )
    ]


def tables_findings(page: Page, *, scope: Scope | None = None) -> Blocks:
    """Every finding of the chapter's checks (of one scope, if given), per dataset and pooled, with
    its numbers (a long table)."""
    if page.empty:
        return []
    return [Table(verdicts.findings_frame(page.findings(page.checks(scope))))]


def findings(page: Page) -> Blocks:
    """A chapter's findings section: the claims its chapter checks, the verdict matrix with a
    paragraph per model, the pooled answers with their numbers, and, where there are findings per
    dataset, every finding (folded). What the page read is ``provenance``'s, above it."""
    if page.empty:  # ``provenance`` said what is absent and the command that brings it
        return []
    out = [
        *claims(page),
        *answers(page),
        Markdown("The pooled answers, one row per part of a claim, with its 95% interval:"),
    ]
    out += pooled_findings(page)
    if not all(f.pooled for f in page.findings()):
        out.append(fold("Every check per dataset, with its numbers", tables_findings(page)))
    return out


def headline(page: Page) -> Blocks:
    """The headline layer curves: one reasoning dataset, None / Simplified / Detailed CoT."""
    if page.empty:
        return []
    return [
        Figure(
            figures.headline_figure(page.draws, page.curves, page.bands, page.params.n_samples),
            "Layer curves of nuclear norm under None, Simplified and Detailed CoT",
            empty="No dataset with all three CoT settings is stored.",
        )
    ]


def layer_curves(page: Page, datasets: Sequence[str] | None = None) -> Blocks:
    """The paper's figure per model and dataset."""
    if page.empty:
        return []
    found = figures.paper_figures(
        page.draws, page.curves, page.bands, n_samples=page.params.n_samples, datasets=datasets
    )
    return figure_blocks(found, alt="Layer curves", empty="No figure: the data read here have no condition for it.")


def pair_curves(page: Page, stat: str = "nuclear_norm") -> Blocks:
    """Per (base, instruct) pair and dataset: the base model's curves above the instruct model's."""
    if page.empty:
        return []
    found = figures.pair_figures(
        page.draws, page.pairs, page.curves, page.bands, stat=stat, n_samples=page.params.n_samples
    )
    return figure_blocks(found, empty="No base and instruct model pair is present.", alt="Base above instruct")


def model_pairs(page: Page) -> Blocks:
    """Which models are compared as base and instruct, and what else differs between them."""
    layers = {m: cd.n_layers for m, cd in page.draws.items()}
    return [
        Table(
            curve_tables.pairs_table(page.pairs, page.results.templates, layers),
            empty="No base and instruct model pair is present.",
            by=None,
        ),
        Markdown(curve_tables.confound_statement(page.pairs)),
    ]


def tables_pairs(page: Page) -> Blocks:
    if page.empty:
        return []
    return [Table(curve_tables.pair_comparison_table(page.draws, page.pairs), empty="No pair to compare.")]


def curves(page: Page) -> Blocks:
    """The paper's figure per model and dataset, then the MAD and RD tables with intervals (folded)."""
    if page.empty:
        return []
    tables = [
        Table(curve_tables.format_segment_table(curve_tables.mad_interval_table(page.draws))),
        Table(curve_tables.format_rd_table(curve_tables.rd_interval_table(page.draws))),
    ]
    return [
        *layer_curves(page),
        fold("MAD per layer segment and RD of irrelevant against correct, with 95% intervals", tables),
    ]


def not_imported(page: Page, column: str, what: str) -> Blocks:
    """That ``what`` is not in the imported statistics where the page's rows lack ``column`` (else nothing)."""
    if imported_models(page.results.rows) and lacks(page.results.rows, column):
        return [Markdown(f"{what}: {NOT_IMPORTED} (models {', '.join(imported_models(page.results.rows))}).")]
    return []


def _answer(figure, alt: str, paragraph: str, summary_: str, *, tables: Sequence[pd.DataFrame]) -> Blocks:
    """A question's figure (if any), its paragraph and its tables of numbers (folded, if any)."""
    out: Blocks = [Figure(figure, alt)] if figure is not None else []
    out.append(Markdown(paragraph))
    if any(not table.empty for table in tables):
        out.append(fold(summary_, [Table(table, empty="") for table in tables]))
    return out


def effective_rank(page: Page) -> Blocks:
    """Effective rank under the fastest vs the slowest setting: a forest plot, a paragraph and the
    table (folded)."""
    if page.empty:
        return []
    missing = not_imported(page, "effective_rank", "Effective rank")
    if missing:
        return missing
    table = effective_rank_table(page.draws)
    figure = None
    if not table.empty:
        forest = pd.DataFrame(
            {
                "label": [voice.scope(s, p) for s, p in zip(table["scope"], table["pooled"])],
                "value": table["value"],
                "low": table["low"],
                "high": table["high"],
                "group": table["model"],
            }
        )
        figure = plots.forest(
            forest, reference=0.0, x_label="mean effective rank, fastest minus slowest setting", note=page.note()
        )
    return _answer(
        figure,
        "Effective rank: fastest minus slowest setting, with intervals",
        beyond.effective_rank_paragraph(table),
        "Effective rank per dataset and pooled",
        tables=[beyond.format_effective_rank(table) if not table.empty else table],
    )


def separability(page: Page) -> Blocks:
    """One sample's separability of correct vs irrelevant: a forest plot (pooled), a paragraph and
    the table (folded)."""
    if page.empty:
        return []
    table = separability_table(page.results.rows, page.identical, page.params.n_resamples, page.params.seed)
    figure = None
    if not table.empty:
        shown = table[table["pooled"]] if table["pooled"].any() else table
        figure = figures.separability_forest(shown, note=page.note())
    return _answer(
        figure,
        "Separability: out-of-fold AUROC of correct vs irrelevant, with intervals",
        beyond.separability_paragraph(table),
        "Separability per model, dataset and setting",
        tables=[beyond.format_separability(table) if not table.empty else table],
    )


def length(page: Page) -> Blocks:
    """Is the fast/slow gap only length: where the chapter shows the length checks, the share of the
    Simplified vs Detailed gap left when Detailed CoT is cut to the Simplified length, with
    intervals, and the length-control curves (folded); then the regression on response length."""
    if page.empty:
        return []
    control = length_control(page) if set(LENGTH_CHECKS) & set(page.checks()) else []
    return control + length_regression(page)


def length_control(page: Page) -> Blocks:
    """The length checks' figure and paragraph, and the length-control layer curves (folded)."""
    found = page.findings()
    has_length = any(f.check in LENGTH_CHECKS and f.parts for f in found)
    if imported_models(page.results.rows) and not has_length:
        tokens = (
            f", and response token counts are {NOT_IMPORTED}" if lacks(page.results.rows, "n_response_tokens") else ""
        )
        return [
            Markdown(
                f"{LENGTH_CHECKS[0]} (is the gap only length): not available; the original study computed no length-control "
                f"condition{tokens}."
            )
        ]
    curves_ = figure_blocks(
        figures.length_control_figures(page.draws, page.curves, page.bands, page.params.n_samples),
        empty="No length-control condition is stored.",
        alt="Length-control layer curves",
    )
    return [
        *check_figures(page, LENGTH_CHECKS),
        Markdown(beyond.length_paragraph(found)),
        fold("Layer curves of the length-control conditions", curves_),
    ]


def length_regression(page: Page) -> Blocks:
    """The regression of a sample's log nuclear norm on its log response length and its setting:
    a paragraph and the table (folded)."""
    missing = not_imported(page, "n_response_tokens", "Response token counts (for the length regression)")
    if missing:
        return missing
    rows = page.results.rows
    known = rows["n_response_tokens"].notna().groupby(rows["model"], observed=True).any()
    unknown = [str(m) for m, has in known.items() if not has]
    out: Blocks = []
    if unknown:  # imported without R (no tokenizer then): left out of the regression, and said
        command = fill_command(page.params.results_dir, unknown)
        out.append(
            Markdown(
                f"Left out of the length regression, {TOKENS_UNKNOWN}: {', '.join(unknown)}; `{command}` adds them."
            )
        )
        rows = rows[~rows["model"].isin(unknown)]
    table = beyond.length_regression_table(rows)
    shown = beyond.length_regression_parts(beyond.format_length_regression(table)) if not table.empty else [table]
    return out + _answer(
        None, "", beyond.length_regression_paragraph(table), "Length regression per model and dataset", tables=shown
    )


# The one line a reader sees of what a page read; everything behind it is folded.
PROVENANCE = "What this page read"


def provenance(page: Page) -> Blocks:
    """What the page read, in one folded block and once per page: the models and conditions found,
    how the samples were drawn, what is absent or skipped (with the commands), and the caveats of
    the models and numbers. A page whose store holds none of its conditions says so and the command
    instead, unfolded, and ends there."""
    if page.empty:
        return [PageEnd(page.coverage())]
    paragraphs = [Markdown(p) for p in page.coverage().split("\n\n")]
    return [fold(PROVENANCE, [*paragraphs, Markdown("\n".join(f"- {item}" for item in caveats(page)))])]


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
    sizes = sorted({c for c in counts if c > 1})
    text = (
        f"**Sample counts.** This run uses {n} instructions per dataset (the same under every condition), the "
        f"paper {PAPER_SAMPLES}. One "
        "dataset alone then rarely decides a claim"
    )
    if sizes:
        pooled = f"{sizes[0]} to {sizes[-1]}" if len(sizes) > 1 else f"{sizes[0]}"
        text += f"; a family pools {pooled} datasets, which is where this run's answers come from"
    return text + "."
