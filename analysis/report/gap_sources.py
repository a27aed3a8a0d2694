"""Where F1's and F3's gaps come from, as the chapter of that name shows them: per model, each
gap of mean log nuclear norm split per layer into averaging (-1/2 log R), token size and alignment
together, and spectral shape (``analysis.findings.averaging``); the AUROCs of the loss and of the
curves behind G1 with its sign-flip p-value (``analysis.findings.beyond_loss``); and A1's and G1's
verdicts in words."""

from __future__ import annotations

import math
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis import profiles
from analysis.core import vocabulary
from analysis.core.formatting import fmt, fmt_interval, per_model
from analysis.extract.token_counts import fill_command
from analysis.findings import averaging, beyond_loss, energy_noise
from analysis.findings.pooling import reasoning_datasets
from analysis.findings.rules import NOT_APPLICABLE, Role
from analysis.report import plots
from analysis.report.display import collapsed, show_figure, show_markdown, show_table
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
CONTRASTS = {
    "F1": (averaging.F1_CONTRAST, "None CoT - Detailed CoT, correct responses"),
    "F3": (averaging.F3_CONTRAST, "irrelevant - correct responses, Detailed CoT"),
}
NO_ENERGY = (
    "{models}: the results store holds no token energy (the sum over response tokens of each token gradient's "
    "squared Frobenius norm) for these conditions, so token size and alignment are shown together, as the "
    "sqrt(R)-scaled Frobenius norm the stored columns give. `{command}` computes it for the offline models (with "
    "`--results-dir` of this run, into this store), `python -m analysis extract --token-energy-passes {passes}` for any "
    "model; this page then shows four parts (Methods: where a gap comes from)."
)
# The profile that computes the token energy for this chapter's conditions (analysis.profiles).
NO_RELEASED_ENERGY = (
    "{models}: the original study's released statistics hold no token energy (the sum over response tokens of "
    "each token gradient's squared Frobenius norm), so token size and alignment are shown together, as the "
    "sqrt(R)-scaled Frobenius norm the stored columns give. The energy needs the model's own token gradients: an "
    "extraction of the model with `--token-energy-passes {passes}` (Running the study, the paper's models on a GPU)."
)
ENERGY_COMMAND = "python -m analysis run --profile decompose"
A1_ID, G1_ID = "A1", "G1"


def decomposition(page: Page, contrast: str) -> pd.DataFrame:
    """Per model, dataset and layer, the gap (first less second condition of ``CONTRASTS[contrast]``)
    of each term of the log nuclear norm; empty where the store lacks the Frobenius norm or the
    token counts."""
    (settings, responses), _ = CONTRASTS[contrast]
    rows = []
    for model, cd in page.draws.items():
        for dataset in reasoning_datasets(cd):
            first, second = averaging.conditions_of(settings, responses, dataset)
            terms = [averaging.log_terms(cd, c) if c in cd.conditions else None for c in (first, second)]
            if terms[0] is None or terms[1] is None:
                continue
            for term, values in averaging.layer_decomposition(*terms).items():
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


def decomposition_section(page: Page, contrast: str) -> None:
    """The stacked figure of one contrast, and how much each term adds over all layers per model."""
    table = decomposition(page, contrast)
    _, title = CONTRASTS[contrast]
    split = split_models(table)
    parts = "averaging, token size, alignment and shape" if split else "averaging, token size and alignment, and shape"
    show_figure(
        stacked_figure(table, f"Where the {contrast} gap comes from: {title}", page.note()),
        f"Per layer, the {contrast} gap split into {parts}, per model",
        empty="The store holds no Frobenius norm or no token counts for these conditions, so the gap is not split.",
    )
    unknown = [m for m, cd in page.draws.items() if m not in set(table["model"]) and _lacks_tokens(cd)]
    if unknown:
        command = fill_command(page.params.results_dir, unknown)
        show_markdown(f"Not split for {', '.join(unknown)}: {averaging.TOKENS_UNKNOWN}; add them with `{command}`.")
    if table.empty:
        return
    gaps, parts = mean_tables(table)
    show_markdown("Each norm's gap, mean over layers and datasets (natural log):")
    show_table(gaps, by=None)
    show_markdown("Its parts, the same means:")
    show_table(parts, by=None)
    if split:
        energy_noise_section(page)
    unsplit = [m for m in dict.fromkeys(table["model"]) if m not in split]
    imported = set(imported_models(page.results.rows))
    for models, released in (
        ([m for m in unsplit if m not in imported], False),
        ([m for m in unsplit if m in imported], True),
    ):
        if models:
            show_markdown(no_energy(models, released))


def energy_noise_section(page: Page) -> None:
    """How far the token energy's random-sign estimates bias token size (and alignment the other
    way), and the estimates left out: one sentence per model, the table per condition folded."""
    passes = page.params.profile.extraction.token_energy_passes or profiles.ENERGY_PASSES
    table = energy_noise.energy_noise_table(page.results.rows, passes=passes)
    if table.empty:
        return
    show_markdown(energy_noise_words(table, passes=passes))
    with collapsed("The token energy's estimates per condition: how many, left out, and the bias of their log"):
        shown = table.assign(
            **{c: table[c].map(fmt) for c in ("mean log bias", "median", "worst", "token size low by")}
        )
        show_table(shown)


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
    return any(averaging.a1_unknown(cd, d) for d in reasoning_datasets(cd))


def _parts(page: Page, check: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    found, parts = page.findings_table([check]), page.part_table([check])
    return found, parts


def _value(parts: pd.DataFrame, role: Role) -> str:
    row = parts[parts["role"] == role.name]
    return "not computed" if row.empty else fmt_interval(*row[["value", "low", "high"]].iloc[0])


def _split(cell: pd.DataFrame) -> str:
    """ ", token size ... times and alignment ... times" where the token energy is stored, else nothing."""
    if not (cell["role"] == Role.TOKEN_SIZE.name).any():
        return ""
    size, alignment = (_value(cell, role) for role in (Role.TOKEN_SIZE, Role.ALIGNMENT))
    return f" (token size {size}, alignment {alignment})"


def a1_paragraph(found: pd.DataFrame, parts: pd.DataFrame) -> str:
    """Markdown, one paragraph per model: the pooled (else per dataset) A1 findings in words."""
    empty = "**A1 not computed**: the store holds no Frobenius norms for None and Detailed CoT."
    return per_model(found, lambda model, group: _a1_in_words(model, group, parts), empty=empty)


def _a1_in_words(model: str, group: pd.DataFrame, parts: pd.DataFrame) -> str:
    shown = group[group["pooled"]] if group["pooled"].any() else group
    if (shown["verdict"] == NOT_APPLICABLE).all():
        return f"A1 **not computed**: {shown['numbers'].iloc[0]}."
    pieces = []
    for row in shown.itertuples():
        cell = parts[(parts["model"] == model) & (parts["scope"] == row.scope)]
        words = (
            "more than averaging over more tokens predicts"
            if row.verdict == "holds"
            else "smaller than averaging over more tokens predicts: None CoT's token gradients are smaller or "
            "less aligned than Detailed CoT's"
            if row.verdict == "does not hold"
            else "not told apart from what averaging predicts"
        )
        pieces.append(
            f"{vocabulary.scope_label(row.scope)}: None CoT's Frobenius norm is "
            f"{_value(cell, Role.FROBENIUS_GAP)} times Detailed CoT's; averaging alone predicts "
            f"{_value(cell, Role.AVERAGING)}; what is left, token size and "
            f"alignment, is {_value(cell, Role.BEYOND_AVERAGING)}{_split(cell)}: A1 **{row.verdict}** (the gap is {words})"
        )
    return "; ".join(pieces) + "."


def g1_paragraph(found: pd.DataFrame, parts: pd.DataFrame) -> str:
    """Markdown, one paragraph per model: the pooled (else per dataset) G1 findings in words."""
    empty = "**G1 not computed**: the store holds no loss, or no correct and irrelevant Detailed-CoT pairs."
    return per_model(found, lambda model, group: _g1_in_words(model, group, parts), empty=empty)


def _g1_in_words(model: str, group: pd.DataFrame, parts: pd.DataFrame) -> str:
    shown = group[group["pooled"]] if group["pooled"].any() else group
    pieces = []
    for row in shown.itertuples():
        cell = parts[(parts["model"] == model) & (parts["scope"] == row.scope)]
        scope = vocabulary.scope_label(row.scope)
        if row.verdict == NOT_APPLICABLE:
            pieces.append(f"{scope}: G1 **{row.verdict}** ({row.numbers.removeprefix(NOT_APPLICABLE + ': ')})")
            continue
        words = (
            "carry information on which response is irrelevant that the token losses lack"
            if row.verdict == "holds"
            else "are not shown to carry more than the token losses (a permutation test cannot show that they carry nothing more)"
        )
        pieces.append(
            f"{scope}: AUROC of the curves with the loss partialled out {_value(cell, Role.BEYOND_LOSS)} "
            f"(p = {_value(cell, Role.P_VALUE)} by sign flips of whole pairs; the curves alone "
            f"{_value(cell, Role.AUROC_CURVES)}, the loss alone {_value(cell, Role.AUROC_LOSS)}): G1 **{row.verdict}** "
            f"(the curves {words})"
        )
    covariates = next(filter(None, map(covariates_of, shown["numbers"])), "")
    said = f" ({beyond_loss.COVARIATES_SAID}{covariates})" if covariates else ""
    return f"Under {vocabulary.setting_label('detailed')}{said}, " + "; ".join(pieces) + "."


def covariates_of(numbers: str) -> str:
    """The covariates G1 partialled out, as a finding's numbers name them ("" where they do not)."""
    found = re.search(re.escape(beyond_loss.COVARIATES_SAID) + r"([^;)]*)", str(numbers))
    return found.group(1) if found else ""


def auroc_table(parts: pd.DataFrame, found: pd.DataFrame | None = None) -> pd.DataFrame:
    """G1 per model, scope and setting: the AUROC of the curves beyond the loss (the statistic), its
    sign-flip p-value, the AUROCs of the curves alone and of the loss alone, the share of pairs the
    loss orders, and (from ``found``) the covariates partialled out."""
    if parts.empty:
        return parts
    rows = parts.copy()
    rows["setting"] = rows["group"]  # G1's parts are grouped by the setting they are computed under
    rows["quantity"] = rows["name"]
    rows["value"] = [
        fmt_interval(v, lo, hi) if not math.isnan(v) else ""
        for v, lo, hi in zip(rows["value"], rows["low"], rows["high"])
    ]
    table = rows.pivot_table(
        index=["model", "scope", "setting"], columns="quantity", values="value", aggfunc="first", sort=False
    )
    table = table.reset_index()
    if found is not None and not found.empty:
        said = {(m, s): covariates_of(n) for m, s, n in zip(found["model"], found["scope"], found["numbers"])}
        table["covariates"] = [said.get((m, s), "") for m, s in zip(table["model"], table["scope"])]
    table["scope"] = table["scope"].map(vocabulary.scope_label)
    return table


def verdicts(page: Page) -> None:
    """A1's and G1's verdicts in words, then the table of G1's AUROCs."""
    found, parts = _parts(page, A1_ID)
    show_markdown(a1_paragraph(found, parts))
    found, parts = _parts(page, G1_ID)
    show_markdown(g1_paragraph(found, parts))
    table = auroc_table(parts, found)
    show_table(table.drop(columns="covariates", errors="ignore"), empty="No AUROC is computed here.")
    note = covariates_note(table)
    if note:
        show_markdown(note)


def covariates_note(table: pd.DataFrame) -> str:
    """The line under G1's table that names the covariates partialled out, per model where they
    differ (as a column they would make the table wider than the page)."""
    if "covariates" not in table.columns or not table["covariates"].astype(bool).any():
        return ""
    said = table[table["covariates"].astype(bool)].groupby("covariates", sort=False)["model"].unique()
    if len(said) == 1:
        return f"*Partialled out: {said.index[0]}.*"
    return "*Partialled out: " + "; ".join(f"{c} ({', '.join(m)})" for c, m in said.items()) + ".*"


def f1_gap(page: Page) -> None:
    """F1's gap (None against Detailed CoT) split per layer: ``decomposition_section``."""
    decomposition_section(page, "F1")


def f3_gap(page: Page) -> None:
    """F3's gap (irrelevant against correct under Detailed CoT) split per layer: ``decomposition_section``."""
    decomposition_section(page, "F3")
