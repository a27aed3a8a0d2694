"""Where the gaps come from, as the chapter of that name shows them: per model, the gap of mean log
nuclear norm of every check that declares a ``LayerSplit`` split per layer into averaging
(-1/2 log R), token size and alignment together, and spectral shape (``analysis.findings.averaging``);
and what a run's loss screen read for the checks that decide on loss-matched pairs."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis import profiles
from analysis.checks import GAP_SOURCES, Check, LayerSplit
from analysis.core.formatting import fmt, per_model
from analysis.extract import screens
from analysis.extract.token_counts import fill_command
from analysis.findings import averaging, beyond_loss, energy_noise
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.pooling import reasoning_datasets
from analysis.report import blocks, plots
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


def _split(check: Check) -> LayerSplit:
    if check.layer_split is None:
        raise ValueError(f"check {check.id} declares no layer split")
    return check.layer_split


def decomposition(page: Page, check: Check) -> pd.DataFrame:
    """Per model, dataset and layer, the gap (first less second condition of the check's
    ``LayerSplit``) of each term of the log nuclear norm; empty where the store lacks the Frobenius
    norm or the token counts."""
    settings, responses = _split(check).contrast
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


def layer_splits(page: Page) -> Blocks:
    """The layer split of every check of the page's registry that declares one, each under its id."""
    out: Blocks = []
    for check in page.registry:
        if check.layer_split is not None:
            out += [Markdown(f"**{check.id}'s gap, layer by layer.**"), *decomposition_section(page, check)]
    return out


def decomposition_section(page: Page, check: Check) -> Blocks:
    """The stacked figure of one check's contrast, and how much each term adds over all layers per model."""
    table = decomposition(page, check)
    contrast, title = check.id, _split(check).title
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


def screen_blocks(page: Page) -> Blocks:
    """Where the run screened instructions for G1's matched pairs: what the screen read, matched
    and why it stopped, per model and dataset (``analysis.extract.screens``); nothing where it did not."""
    table = screens.summary([s for s in page.results.screens if s.model in page.models])
    if table.empty:
        return []
    readers = [c for c in GAP_SOURCES if c in page.checks()] or list(GAP_SOURCES)
    caliper, target = beyond_loss.CALIPER, beyond_loss.MIN_MATCHED
    words = (
        f"**The loss screen.** The drawn pairs rarely lie within {caliper} nats of each other, so the run read "
        "the mean token losses of further instructions' correct and irrelevant Detailed-CoT responses with forward "
        f"passes only, in the draw's seeded order, until a dataset had {target} matched pairs (the drawn ones "
        "included) or its budget was spent, and computed the gradients of the screened pairs that matched. "
        f"{' and '.join(readers)}'s statistic at matched loss reads the drawn and the screened matched pairs "
        "together; no other finding reads the screened ones."
    )
    return [Markdown(words), Table(table, empty="No screen.")]
