"""Where F1's and F3's gaps come from, as the chapter of that name shows them: per model, each
gap of mean log nuclear norm split per layer into averaging (-1/2 log R), token size and alignment
together, and spectral shape (``analysis.findings.averaging``); the AUROCs of the loss and of the
curves behind G1 with its sign-flip p-value (``analysis.findings.beyond_loss``); and G1's verdicts
in words."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis import profiles
from analysis.checks import GAP_SOURCES, REGISTRY, SPLIT_GAPS, Registry, get
from analysis.core import vocabulary
from analysis.core.formatting import fmt, per_model
from analysis.extract import screens
from analysis.extract.token_counts import fill_command
from analysis.findings import averaging, beyond_loss, energy_noise, roles
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.pooling import reasoning_datasets
from analysis.findings.rules import Finding, NoteKind, Role
from analysis.report import blocks, cells, plots, voice
from analysis.report.blocks import Blocks, Markdown, Table, fold
from analysis.report.load import imported_models
from analysis.report.page import Page

TERM_COLOURS = {
    averaging.AVERAGING: "#9e9e9e",
    averaging.REST: "#377eb8",
    averaging.TOKEN_SIZE: "#4daf4a",
    averaging.ALIGNMENT: "#984ea3",
    averaging.SHAPE: "#ff7f00",
}
TERM_LABELS = {
    averaging.AVERAGING: "averaging (-1/2 log R)",
    averaging.REST: "token size and alignment",
    averaging.TOKEN_SIZE: "token size (1/2 log e)",
    averaging.ALIGNMENT: "alignment (1/2 log kappa)",
    averaging.SHAPE: "spectral shape",
}
F1_ID, F3_ID = SPLIT_GAPS
CONTRASTS: dict[str, tuple[tuple[tuple[str, str], tuple[str, str]], str]] = {
    F1_ID: (averaging.F1_CONTRAST, "None CoT - Detailed CoT, correct responses"),
    F3_ID: (averaging.F3_CONTRAST, "irrelevant - correct responses, Detailed CoT"),
}
NO_ENERGY = (
    "{models}: no token energy is stored for these conditions, so token size and alignment are shown together "
    "(the sqrt(R)-scaled Frobenius norm). `{command}` computes it for the offline models (with `--results-dir` "
    "of this run), `python -m analysis extract --token-energy-passes {passes}` for any model."
)
# The profile that computes the token energy for this chapter's conditions (analysis.profiles).
NO_RELEASED_ENERGY = (
    "{models}: the original study's released statistics hold no token energy (the sum over response tokens of "
    "each token gradient's squared Frobenius norm), so token size and alignment are shown together, as the "
    "sqrt(R)-scaled Frobenius norm the stored columns give. The energy needs the model's own token gradients: an "
    "extraction of the model with `--token-energy-passes {passes}` (Running the study, the paper's models on a GPU)."
)
ENERGY_COMMAND = "python -m analysis run --profile decompose"
(G1_ID,) = GAP_SOURCES


def decomposition(page: Page, contrast: str) -> pd.DataFrame:
    """Per model, dataset and layer, the gap (first less second condition of ``CONTRASTS[contrast]``)
    of each term of the log nuclear norm; empty where the store lacks the Frobenius norm or the
    token counts."""
    (settings, responses), _ = CONTRASTS[contrast]
    rows = []
    for model, cd in page.draws.items():
        for dataset in reasoning_datasets(cd):
            first, second = averaging.conditions_of(settings, responses, dataset)
            of_first, of_second = (averaging.log_terms(cd, c) if c in cd.conditions else None for c in (first, second))
            if of_first is None or of_second is None:
                continue
            for term, values in averaging.layer_decomposition(of_first, of_second).items():
                rows += [
                    {"model": model, "dataset": dataset, "layer": layer, "term": term, "value": float(v)}
                    for layer, v in enumerate(values)
                ]
    return split_where_complete(pd.DataFrame(rows, columns=["model", "dataset", "layer", "term", "value"]))


def split_where_complete(table: pd.DataFrame) -> pd.DataFrame:
    """The table without token size and alignment for a model where some of its datasets lack them
    (no token energy there): a mean over datasets of each part then still adds up to the gap."""
    split = (averaging.TOKEN_SIZE, averaging.ALIGNMENT)
    if table.empty:
        return table
    has = table.assign(split=table["term"].isin(split)).groupby(["model", "dataset"], sort=False)["split"].any()
    complete = has.groupby(level="model", sort=False).all()
    drop = table["term"].isin(split) & ~table["model"].map(complete).astype(bool)
    return table[~drop].reset_index(drop=True)


def split_models(table: pd.DataFrame) -> list[str]:
    """The models whose gap the table splits into four parts (token energy stored), in table order."""
    split = table[table["term"] == averaging.TOKEN_SIZE]
    return list(dict.fromkeys(split["model"]))


def stacked_figure(table: pd.DataFrame, title: str, note: str | None = None) -> Figure | None:
    """One panel per model: per layer, the terms of the gap (mean over datasets) stacked as bars,
    positive ones up and negative ones down, and the gap of mean log nuclear norm as a line."""
    if table.empty:
        return None
    models = list(dict.fromkeys(table["model"]))
    rows, columns = plots.panel_rows(len(models))
    fig, axes = plt.subplots(rows, columns, figsize=plots.panels_size(rows, columns, height=2.9), squeeze=False)
    mean = table.groupby(["model", "term", "layer"], sort=False)["value"].mean()
    for ax, model in zip(axes.flat, models):
        up = down = None
        present = table.loc[table["model"] == model, "term"].unique()
        for term in averaging.stacked_terms(present):
            if (model, term) not in mean.index.droplevel("layer"):
                continue
            values = mean.loc[(model, term)].sort_index()
            layers = values.index.to_numpy()
            up = np.zeros(layers.size) if up is None else up
            down = np.zeros(layers.size) if down is None else down
            v = values.to_numpy()
            bottom = np.where(v >= 0, up, down)
            ax.bar(layers, v, bottom=bottom, color=TERM_COLOURS[term], label=TERM_LABELS[term], width=0.8)
            up, down = up + np.clip(v, 0, None), down + np.clip(v, None, 0)
        if (model, averaging.LOG_NUCLEAR) in mean.index.droplevel("layer"):
            total = mean.loc[(model, averaging.LOG_NUCLEAR)].sort_index()
            ax.plot(total.index, total.to_numpy(), color="k", marker=".", label="gap of mean log nuclear norm")
        ax.axhline(0.0, color="k", linewidth=0.6)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("layer", fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("gap of mean log (natural log)", fontsize=9)
    plots.drop_unused(axes, len(models))
    return plots.legend_below(fig, title=title, note=note)


def decomposition_section(page: Page, contrast: str) -> Blocks:
    """The stacked figure of one contrast, and how much each term adds over all layers per model."""
    table = decomposition(page, contrast)
    _, title = CONTRASTS[contrast]
    split = split_models(table)
    parts = "averaging, token size, alignment and shape" if split else "averaging, token size and alignment, and shape"
    out: Blocks = [
        blocks.Figure(
            stacked_figure(table, f"Where the {contrast} gap comes from: {title}", page.note()),
            f"Per layer, the {contrast} gap split into {parts}, per model",
            empty="The store holds no Frobenius norm or no token counts for these conditions, so the gap is not split.",
        )
    ]
    unknown = [m for m, cd in page.draws.items() if m not in set(table["model"]) and _lacks_tokens(cd)]
    if unknown:
        command = fill_command(page.params.results_dir, unknown)
        out.append(
            Markdown(f"Not split for {', '.join(unknown)}: {averaging.TOKENS_UNKNOWN}; add them with `{command}`.")
        )
    if table.empty:
        return out
    gaps, terms = mean_tables(table)
    out += [
        Markdown("Each norm's gap, mean over layers and datasets (natural log):"),
        Table(gaps, by=None),
        Markdown("Its parts, the same means:"),
        Table(terms, by=None),
    ]
    if split:
        out += energy_noise_section(page)
    unsplit = [m for m in dict.fromkeys(table["model"]) if m not in split]
    imported = set(imported_models(page.results.rows))
    for models, released in (
        ([m for m in unsplit if m not in imported], False),
        ([m for m in unsplit if m in imported], True),
    ):
        if models:
            out.append(Markdown(no_energy(models, released)))
    return out


def energy_noise_section(page: Page) -> Blocks:
    """How far the token energy's random-sign estimates bias token size (and alignment the other
    way), and the estimates left out: one sentence per model, the table per condition folded."""
    passes = page.params.profile.extraction.token_energy_passes or profiles.ENERGY_PASSES
    table = energy_noise.energy_noise_table(page.results.rows, passes=passes)
    if table.empty:
        return []
    shown = table.assign(**{c: table[c].map(fmt) for c in ("mean log bias", "median", "worst", "token size low by")})
    return [
        Markdown(energy_noise_words(table, passes=passes)),
        fold(
            "The token energy's estimates per condition: how many, left out, and the bias of their log",
            [Table(shown)],
        ),
    ]


def energy_noise_words(table: pd.DataFrame, *, passes: int) -> str:
    """Per model: the rows whose token energy was estimated from ``passes`` random-sign passes, those
    left out (0 or not finite), and the largest shift the estimates' log bias makes in a gap's
    token size (half the difference of two conditions' mean bias; alignment moves the other way)."""

    def say(_, rows: pd.DataFrame) -> str:
        estimated, left_out = int(rows["estimated"].sum()), int(rows["zero or not finite"].sum())
        low = rows["token size low by"]
        return (
            f"{estimated} of {int(rows['rows'].sum())} token energies estimated from {passes} random-sign passes "
            f"(mean log bias {fmt(rows.loc[rows['estimated'] > 0, 'mean log bias'].mean())}, worst "
            f"{fmt(rows['worst'].min())}), {left_out} exactly 0 or not finite and left out of the split; the "
            f"bias moves a gap's token size by at most {fmt(low.max() - low.min())} (alignment by the same, "
            "the other way)."
        )

    return per_model(table, say)


# The gaps the parts add up to (the parts: every other term), shown in a table of their own so
# that neither table is wider than the page.
GAP_TERMS = (averaging.LOG_NUCLEAR, averaging.LOG_FROBENIUS, averaging.SCALED_NUCLEAR)


def mean_tables(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per model, each term's mean over datasets and layers: the gaps of the norms, then the parts."""
    means = table.groupby(["model", "term"], sort=False)["value"].mean().unstack("term")

    def shown(terms: list[str]) -> pd.DataFrame:
        return pd.DataFrame(
            {"model": means.index, **{TERM_LABELS.get(t, t): means[t].map(fmt).to_numpy() for t in terms}}
        )

    gaps = [t for t in GAP_TERMS if t in means.columns]
    return shown(gaps), shown([t for t in means.columns if t not in GAP_TERMS])


def no_energy(models: list[str], released: bool = False) -> str:
    """The sentence for the models whose gap is shown in three parts: no token energy stored (for
    ``released`` statistics, which cannot hold it, what would compute it)."""
    text = NO_RELEASED_ENERGY if released else NO_ENERGY
    return text.format(models=", ".join(models), command=ENERGY_COMMAND, passes=profiles.ENERGY_PASSES)


def _lacks_tokens(cd) -> bool:
    """Whether a model's curves hold Frobenius norms of some None/Detailed pair but no token count R."""
    return any(
        averaging.tokens_unknown(DatasetContext(curves=cd, dataset=d)) is not None for d in reasoning_datasets(cd)
    )


def _value(finding: Finding, role: Role, *, facet: tuple[str, ...] | None = None) -> str:
    part = finding.part(role, facet=facet)
    return "not computed" if part is None or part.estimate is None else voice.sized(part)


def _per_model(findings: Sequence[Finding], say, *, empty: str) -> str:
    """One paragraph per model of ``findings``: "**<model>.** " and what ``say`` writes of its cells."""
    models = list(dict.fromkeys(f.model for f in findings))
    return "\n\n".join(f"**{m}.** {say([f for f in findings if f.model == m])}" for m in models) or empty


def g1_paragraph(findings: Sequence[Finding], registry: Registry = REGISTRY) -> str:
    """Markdown, one paragraph per model: the pooled (else per dataset) G1 findings in words."""
    empty = "**G1 not computed**: the store holds no loss, or no correct and irrelevant Detailed-CoT pairs."
    return _per_model(cells.of_check(findings, G1_ID), lambda found: _g1_in_words(found, registry), empty=empty)


def _g1_in_words(found: Sequence[Finding], registry: Registry) -> str:
    shown = cells.answers(found)
    words = get(G1_ID, registry).words
    deciding = (beyond_loss.DECIDING,)
    pieces = []
    for f in shown:
        scope = vocabulary.scope_label(f.scope)
        if f.not_applicable is not None:
            pieces.append(f"{scope}: G1 **{f.verdict}** ({voice.explained(f.not_applicable)})")
            continue
        said = words.of(f.verdict) if words is not None else ""
        matched = f.note(NoteKind.LOSS_MATCHED)
        decided = (beyond_loss.DECIDING, beyond_loss.MATCHED) if matched is not None else deciding
        where = f" on the pairs matched on the loss ({beyond_loss.matched_counts(f.parts)})" if matched else ""
        pieces.append(
            f"{scope}: AUROC of the curves with the loss partialled out{where} {_value(f, roles.BEYOND_LOSS, facet=decided)} "
            f"(p = {_value(f, roles.P_VALUE, facet=decided)} by sign flips of whole pairs; on all pairs the curves alone "
            f"{_value(f, roles.AUROC_CURVES, facet=deciding)}, the loss alone {_value(f, roles.AUROC_LOSS, facet=deciding)}, "
            f"{_value(f, roles.MATCHED_SHARE, facet=deciding)} of them within the caliper): "
            f"G1 **{f.verdict}**" + (f" (the curves {said})" if said else "")
        )
    covariates = next((n.text for f in shown if (n := f.note(NoteKind.COVARIATES)) is not None), "")
    said = f" ({covariates})" if covariates else ""
    return f"Under {vocabulary.setting_label(beyond_loss.DECIDING)}{said}, " + "; ".join(pieces) + "."


def auroc_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """G1 per model, scope and setting: the AUROC of the curves beyond the loss (the statistic), its
    sign-flip p-value, the AUROCs of the curves alone and of the loss alone, and the share of pairs
    the loss orders."""
    rows = []
    for f in cells.of_check(findings, G1_ID):
        for facet in dict.fromkeys(_row_facet(p.facet) for p in f.parts):
            row = {"model": f.model, "scope": vocabulary.scope_label(f.scope)}
            row["setting"] = vocabulary.setting_label(facet[0]) if facet else ""
            row["setting"] += ", matched pairs" if beyond_loss.MATCHED in facet else ""
            row |= {
                _column(p.name): voice.sized(p) if p.estimate is not None else ""
                for p in f.parts
                if _row_facet(p.facet) == facet
            }
            rows.append(row)
    return pd.DataFrame(rows)


def _row_facet(facet: tuple[str, ...]) -> tuple[str, ...]:
    """A G1 part's row: the share of the loss screen's pairs that matched sits with the matched pairs."""
    return (facet[0], beyond_loss.MATCHED) if beyond_loss.SCREENED in facet else facet


def _column(name: str) -> str:
    """A G1 part's column: the statistic on matched pairs shares the statistic's (its row says matched)."""
    return beyond_loss.STATISTIC if name == beyond_loss.MATCHED_STATISTIC else name


def verdicts(page: Page) -> Blocks:
    """G1's verdicts in words, then the table of its AUROCs and the covariates partialled out."""
    found = page.findings([G1_ID])
    out: Blocks = [
        Markdown(g1_paragraph(found, page.registry)),
        fold(
            "G1's AUROCs per model, scope and setting", [Table(auroc_table(found), empty="No AUROC is computed here.")]
        ),
    ]
    note = covariates_note(found)
    return out + ([Markdown(note)] if note else []) + screen_blocks(page)


def screen_blocks(page: Page) -> Blocks:
    """Where the run screened instructions for G1's matched pairs: what the screen read, matched
    and why it stopped, per model and dataset (``analysis.extract.screens``); nothing where it did not."""
    table = screens.summary([s for s in page.results.screens if s.model in page.models])
    if table.empty:
        return []
    caliper, target = beyond_loss.CALIPER, beyond_loss.MIN_MATCHED
    words = (
        f"**The loss screen.** The drawn pairs rarely lie within {caliper} nats of each other, so the run read "
        "the mean token losses of further instructions' correct and irrelevant Detailed-CoT responses with forward "
        f"passes only, in the draw's seeded order, until a dataset had {target} matched pairs (the drawn ones "
        "included) or its budget was spent, and computed the gradients of the screened pairs that matched. "
        "G1's statistic at matched loss reads the drawn and the screened matched pairs together; no other "
        "finding reads the screened ones."
    )
    return [Markdown(words), Table(table, empty="No screen.")]


def covariates_note(findings: Sequence[Finding]) -> str:
    """The line under G1's table that names the covariates partialled out, per model where they
    differ (as a column they would make the table wider than the page)."""
    said: dict[str, list[str]] = {}
    for f in cells.of_check(findings, G1_ID):
        note = f.note(NoteKind.COVARIATES)
        if note is not None:
            said.setdefault(", ".join(note.items), [])
            if f.model not in said[", ".join(note.items)]:
                said[", ".join(note.items)].append(f.model)
    if not said:
        return ""
    if len(said) == 1:
        return f"*Partialled out: {next(iter(said))}.*"
    return "*Partialled out: " + "; ".join(f"{c} ({', '.join(m)})" for c, m in said.items()) + ".*"


def f1_gap(page: Page) -> Blocks:
    """F1's gap (None against Detailed CoT) split per layer: ``decomposition_section``."""
    return decomposition_section(page, F1_ID)


def f3_gap(page: Page) -> Blocks:
    """F3's gap (irrelevant against correct under Detailed CoT) split per layer: ``decomposition_section``."""
    return decomposition_section(page, F3_ID)
