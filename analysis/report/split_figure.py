"""F1's gap split into its four steps (``findings.gap_split``): read from a store, drawn as bars
with intervals, and the caption that says how to read them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from analysis.core import registry, vocabulary
from analysis.core.formatting import fmt_interval
from analysis.findings import gap_split
from analysis.findings.bootstrap import CurveDraws, all_curve_draws
from analysis.findings.intervals import LEVEL
from analysis.findings.rules import SAME_MARGIN_PERCENT as MARGIN_PERCENT
from analysis.report import plots
from analysis.report.blocks import Blocks, Markdown, Table, fold
from analysis.report.blocks import Figure as FigureBlock
from analysis.report.load import ReportError, load_results
from analysis.store import ResultsStore, runlog
from analysis.store.store_files import is_exported_file, read_exported

BARS = (gap_split.TOTAL, *(s.name for s in gap_split.STEPS))  # top to bottom
EXTRACT = "python -m analysis extract"
NORM_LABELS = {gap_split.NUCLEAR: "nuclear norm", gap_split.FROBENIUS: "Frobenius norm"}


@dataclass(frozen=True)
class StoredSplit:
    """The split of a store, and the samples its five conditions skipped: model, condition, reason, samples."""

    split: gap_split.Split
    skipped: pd.DataFrame


def split_conditions(datasets: Sequence[str] = vocabulary.REASONING_DATASETS) -> list[str]:
    """The condition keys the split reads: the chain's five settings of correct responses per dataset."""
    return [f"{d}/{s}/{vocabulary.CORRECT}" for d in datasets for s in gap_split.CHAIN]


def _models(root: Path) -> list[str]:
    if is_exported_file(root):
        return sorted(map(str, read_exported(root, None, ["model"])["model"].unique()))
    if not (root / "store.json").is_file():
        raise ReportError(f"{root}: no results store here; pass the results directory of a run")
    return sorted(map(str, ResultsStore(root, create=False).distinct("model")))


def _run_profile(root: Path) -> dict:
    """The profile of the store's last recorded run ({} where none is recorded)."""
    record = runlog.latest(root) if root.is_dir() else None
    return dict(record.profile) if record is not None else {}


def extract_commands(root: Path, missing: dict[str, list[str]], n_samples: int | None) -> str:
    """The commands that compute each model's ``missing`` conditions into the store at ``root``."""
    count = f" --n-samples {n_samples}" if n_samples else ""
    return "; ".join(
        f"`{EXTRACT} --model {model} --data {' '.join(keys)} --out {root}{count}`" for model, keys in missing.items()
    )


def missing_conditions(coverage: pd.DataFrame) -> dict[str, list[str]]:
    """Per model, the chain's conditions with no stored nor skipped sample, on the datasets where the
    model holds any of them."""
    held = coverage.assign(held=(coverage["stored"] + coverage["skipped"]) > 0)
    held["dataset"] = held["condition"].str.split("/").str[0]
    out: dict[str, list[str]] = {}
    for (model, _), group in held.groupby(["model", "dataset"], sort=False):
        if group["held"].any() and not group["held"].all():
            out.setdefault(str(model), []).extend(group.loc[~group["held"], "condition"])
    return out


def load_split(results_dir, *, stat: str = gap_split.NUCLEAR, n_resamples: int | None = None) -> StoredSplit:
    """The split of every model of a store (its last run's draw of instructions, resamples and seed);
    one ``ReportError`` naming the conditions the store lacks and the commands that compute them."""
    root = Path(results_dir)
    models = _models(root)
    profile = _run_profile(root)
    n_samples = profile.get("extraction", {}).get("n_samples")
    conditions = split_conditions()
    results = load_results(root, models, conditions, n_samples=n_samples, read=(stat, gap_split.TOKENS))
    missing = missing_conditions(results.coverage)
    if missing or results.rows.empty:
        listed = "; ".join(f"{m}: {', '.join(keys)}" for m, keys in missing.items())
        lacks = f"lacks {listed}" if missing else "holds none of them"
        commands = extract_commands(root, missing, n_samples) if missing else "`python -m analysis run --profile cpu`"
        raise ReportError(
            f"{root}: the split reads five conditions of correct responses per dataset "
            f"({', '.join(gap_split.CHAIN)}); the store {lacks}. Compute them with {commands}"
        )
    if stat not in results.rows or results.rows[stat].isna().all():
        raise ReportError(f"{root}: the store holds no {NORM_LABELS[stat]} ({stat}) of the split's conditions")
    draws = all_curve_draws(
        results.rows,
        list(results.models),
        (stat,),
        n_resamples=n_resamples or profile.get("n_resamples", 1000),
        seed=profile.get("seed", 0),
        sample_stats=(gap_split.TOKENS,) if stat == gap_split.FROBENIUS else (),
    )
    skipped = results.skipped
    if len(skipped):
        skipped = (
            skipped.assign(reason=skipped["reason"].astype(str).str.split(":").str[0])
            .groupby(["model", "condition", "reason"], observed=True)["sample_index"]
            .nunique()
            .rename("samples")
            .reset_index()
        )
    else:
        skipped = pd.DataFrame(columns=["model", "condition", "reason", "samples"])
    return StoredSplit(gap_split.gap_split(draws, stat=stat), skipped)


def figure_scopes(table: pd.DataFrame, model: str) -> list[str]:
    """The scopes a model's panels show: its families, else (no family of two datasets) its datasets."""
    mine = table[table["model"] == model]
    families = [s for s in vocabulary.REASONING_FAMILIES if (mine["scope"] == s).any()]
    return families or list(dict.fromkeys(mine["scope"]))


def _datasets(table: pd.DataFrame, model: str, scope: str) -> list[str]:
    """The datasets behind a scope of a model's split (a dataset: itself)."""
    if scope not in vocabulary.FAMILY_DATASETS:
        return [scope]
    mine = table[(table["model"] == model) & (table["step"] == gap_split.TOTAL)]
    return [d for d in mine["scope"] if d in vocabulary.FAMILY_DATASETS[scope]]


def panel_title(table: pd.DataFrame, model: str, scope: str) -> str:
    """A panel's title: model, scope, its datasets and instructions."""
    (n,) = table.loc[
        (table["model"] == model) & (table["scope"] == scope) & (table["step"] == gap_split.TOTAL), "instructions"
    ]
    named = f"{', '.join(_datasets(table, model, scope))}: " if scope in vocabulary.FAMILY_DATASETS else ""
    return f"{model}\n{vocabulary.scope_label(scope)}\n{named}{int(n)} instructions"


def _panel(ax, rows: pd.DataFrame, colours: dict[str, tuple]) -> None:
    """One panel: F1's gap and its steps as horizontal bars with intervals, each labelled with its numbers."""
    rows = rows.set_index("step").reindex(list(BARS))
    y = np.arange(len(BARS))
    for i, (step, row) in enumerate(rows.iterrows()):
        if not np.isfinite(row["estimate"]):
            continue
        alpha = 1.0 if row["decided"] else 0.35
        ax.barh(i, row["estimate"], color=colours[str(step)], alpha=alpha, height=0.6)
        if np.isfinite(row["low"]) and np.isfinite(row["high"]):
            ax.plot([row["low"], row["high"]], [i, i], color="k", lw=1.2)
    ax.axvline(0.0, color="k", lw=0.7)
    labels = [f"{step}\n{fmt_interval(r['estimate'], r['low'], r['high'])}" for step, r in rows.iterrows()]
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(len(BARS) - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=7)


def split_figure(split: gap_split.Split, *, note: str | None = None) -> Figure | None:
    """Per model and family (or dataset where no family has two), F1's gap and its four steps as
    bars with their intervals, the numbers beside each bar's name; None without a row."""
    table = split.table()
    if table.empty:
        return None
    panels = [(m, s) for m in dict.fromkeys(table["model"]) for s in figure_scopes(table, m)]
    rows, columns = plots.panel_rows(len(panels))
    fig, axes = plt.subplots(rows, columns, figsize=plots.panels_size(rows, columns, height=2.6), squeeze=False)
    palette = sns.color_palette("colorblind", len(BARS))
    colours = {step: (0.3, 0.3, 0.3) if step == gap_split.TOTAL else palette[i] for i, step in enumerate(BARS)}
    for ax, (model, scope) in zip(axes.flat, panels):
        _panel(ax, table[(table["model"] == model) & (table["scope"] == scope)], colours)
        ax.set_title(panel_title(table, model, scope), fontsize=7)
    for ax in axes[-1, :]:
        ax.set_xlabel(f"gap of mean log {NORM_LABELS[split.stat]}", fontsize=8)
    plots.drop_unused(axes, len(panels))
    bottom = plots.add_note(fig, note)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def split_blocks(draws: Mapping[str, CurveDraws], *, note: str | None = None) -> Blocks:
    """What opens a book's first page: the split in at most three sentences, its figure (``note``
    under it) and how to read it, folded; nothing where no dataset holds the five conditions."""
    split = gap_split.gap_split(draws)
    figure = split_figure(split, note=note)
    if figure is None:
        return []
    alt = "F1's gap and its four steps (the phrase, the reasoning, which tokens, how many tokens) per model and family"
    return [
        Markdown(" ".join(in_words(split))),
        FigureBlock(figure, alt),
        fold("How to read the figure", [Markdown(split_caption(split))]),
    ]


def split_caption(split: gap_split.Split) -> str:
    """How to read ``split_figure``."""
    norm = NORM_LABELS[split.stat]
    return (
        f"Each panel is one model on one family of datasets (the mean over the datasets named in its title, each "
        f"dataset weighing the same) or one dataset. The top bar is F1's gap: the mean log {norm} (over Q, K, V, O "
        "and the layers, then over instructions) of fast thinking (None CoT) less that of slow thinking (Detailed "
        "CoT), on the instructions that hold all five conditions. The four bars under it add up to it exactly, "
        "in a fixed order from fast to slow (a step's size depends on its place): the phrase (the bare answer "
        'against "The final answer is " and the answer), the reasoning (the same answer tokens after the '
        "Detailed CoT), which tokens (the answer's tokens against as many tokens of the chain) and how many "
        "tokens (those few against all the chain's tokens: averaging). Positive: that step makes fast thinking's "
        f"gradient larger. Black lines: {LEVEL:.0%} intervals, instructions resampled within each dataset. A step "
        f'is decided when its interval clears 0 or lies within {MARGIN_PERCENT} of no change ("about the same"); '
        "a pale bar is not decided. A family's value holds for the datasets named, not for others."
    )


def in_words(split: gap_split.Split) -> list[str]:
    """At most three sentences on a split, for a reader who has a minute: how much larger fast
    thinking's gradient is, on how many instructions of which models; each step's share of that gap,
    as a range over the panels; which way the reasoning step points, panel by panel."""
    table = split.table()
    if table.empty:
        return []
    models = list(dict.fromkeys(table["model"]))
    panels = [(m, s) for m in models for s in figure_scopes(table, m)]
    shown = table[[(m, s) in panels for m, s in zip(table["model"], table["scope"])]].set_index(
        ["model", "scope", "step"]
    )
    datasets = table[~table["scope"].isin(list(vocabulary.FAMILY_DATASETS)) & (table["step"] == gap_split.TOTAL)]
    counts = datasets.groupby("model", sort=False)["instructions"].sum()
    gaps = [shown.loc[(m, s, gap_split.TOTAL), "estimate"] for m, s in panels]
    norm = NORM_LABELS[split.stat]
    each = (
        f"{int(counts[models[0]])} instructions each"
        if len(set(counts)) == 1
        else ", ".join(f"{int(counts[m])} instructions" for m in models)
    )
    first = (
        f"Fast thinking's gradient (None CoT) is {_times_range(gaps)} slow thinking's (Detailed CoT, mean log "
        f"{norm}) on {each} of {_listed(models)}{_stand_ins(models)}, one panel of the figure per model and "
        "family of datasets."
    )
    shares = []
    for name, says in STEP_WORDS.items():
        values = [shown.loc[(m, s, gap_split.share_name(name)), "estimate"] for m, s in panels]
        shares.append(f"{says} {_percent_range(values)}")
    second = (
        "As shares of that gap over the panels, undecided steps (pale bars) included: "
        + ", ".join(shares[:-1])
        + f" and {shares[-1]} (a step that pushes the other way has a negative share)."
    )
    ways: dict[gap_split.Outcome, list[str]] = {}
    for model, scope in panels:
        outcome = gap_split.Outcome(shown.loc[(model, scope, "the reasoning"), "outcome"])
        ways.setdefault(outcome, []).append(f"{model} on {vocabulary.scope_label(scope)}{_apart(table, model, scope)}")
    decided = sorted(ways, key=lambda o: not o.decided)  # the decided panels first
    third = "On the same answer tokens, the reasoning before them " + "; ".join(
        f"{REASONING_WORDS.get(o, 'is not decided')} for {_listed(ways[o])}" for o in decided
    )
    return [first, second, third + "."]


def _stand_ins(models: Sequence[str]) -> str:
    """ " (small offline models standing in for the paper's)" where every model is an offline one."""
    return " (small offline models standing in for the paper's)" if set(models) <= set(registry.OFFLINE_MODELS) else ""


def _listed(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# Each step in a reader's words, in the order the sentence gives them (largest usual share first).
STEP_WORDS = {
    "how many tokens": "how many tokens the loss averages over",
    "which tokens": "which tokens are scored",
    "the phrase": 'the phrase "The final answer is"',
    "the reasoning": "the reasoning itself",
}
# What the reasoning step's outcome says of the reasoning before the same answer tokens.
REASONING_WORDS = {
    gap_split.Outcome.LARGER: "makes their gradient smaller, as the paper's reading predicts,",
    gap_split.Outcome.SMALLER: "makes their gradient larger, against the paper's reading,",
    gap_split.Outcome.SAME: f"changes their gradient by less than {MARGIN_PERCENT}",
}


def _times_range(log_values: Sequence[float]) -> str:
    """Log ratios as the range of their ratios ("x4.8 to x9.5")."""
    ratios = sorted(math.exp(v) for v in log_values if math.isfinite(v))
    low, high = (f"x{r:.2g}" if r < 10 else f"x{r:.0f}" for r in (ratios[0], ratios[-1]))
    return low if low == high else f"{low} to {high}"


def _percent_range(values: Sequence[float]) -> str:
    """Shares as the range of their percentages ("26% to 117%"; "undefined" where none is finite)."""
    finite = sorted(v for v in values if math.isfinite(v))
    if not finite:
        return "undefined"
    low, high = (f"{v:.0%}" for v in (finite[0], finite[-1]))
    return low if low == high else f"{low} to {high}"


def _apart(table: pd.DataFrame, model: str, scope: str) -> str:
    """ " (its datasets disagree: aqua x0.71, gsm8k x5.5)" where a family's datasets lie on opposite
    sides of no change in the reasoning step, as ratios ("" where they do not)."""
    mine = table[(table["model"] == model) & (table["step"] == "the reasoning")].set_index("scope")["estimate"]
    values = {d: mine[d] for d in _datasets(table, model, scope) if d in mine.index and math.isfinite(mine[d])}
    if len(values) < 2 or not (min(values.values()) < 0 < max(values.values())):
        return ""
    return " (its datasets disagree: " + ", ".join(f"{d} {_times_range([v])}" for d, v in values.items()) + ")"


def wide_table(split: gap_split.Split) -> pd.DataFrame:
    """One line per model and scope (each dataset, then each family): F1's gap and each step as "gap
    [low, high] outcome" in mean log norm, what averaging alone predicts in the Frobenius norm, and the
    instructions."""
    table = split.table()
    shown = [n for n in gap_split.ORDER if n in set(table["step"])]
    lines = []
    for (model, scope), rows in table.groupby(["model", "scope"], sort=False):
        by_step = rows.set_index("step")
        line = {"model": model, "scope": vocabulary.scope_label(str(scope))}
        for name in shown:
            if name in by_step.index:
                row = by_step.loc[name]
                outcome = f" {row['outcome']}" if name in BARS else ""
                line[name] = fmt_interval(row["estimate"], row["low"], row["high"]) + outcome
        line["instructions"] = int(by_step.loc[gap_split.TOTAL, "instructions"])
        lines.append(line)
    return pd.DataFrame(lines)


def split_tables(draws: Mapping[str, CurveDraws]) -> Blocks:
    """The split per dataset and family in the nuclear norm, each step with what its interval decides,
    the same in the Frobenius norm (folded, beside what averaging alone predicts) and the
    instructions a condition dropped; a sentence where no dataset holds the five conditions."""
    out: Blocks = []
    for stat in gap_split.STATS:
        split = gap_split.gap_split(draws, stat=stat)
        if not split.rows:
            continue
        heading = f"In the {NORM_LABELS[stat]}: the gap of mean log norm [{LEVEL:.0%} interval] and what it decides"
        if stat == gap_split.NUCLEAR:
            out += [Markdown(f"**{heading}.**"), Table(wide_table(split))]
        else:
            out.append(fold(heading, [Table(wide_table(split))]))
        dropped = split.dropped_table()
        if stat == gap_split.NUCLEAR and not dropped.empty:
            out.append(fold("Instructions a condition lacks (too long, a zero gradient)", [Table(dropped, by=None)]))
    return out or [Markdown(f"No dataset holds the split's five conditions ({', '.join(gap_split.CHAIN)}).")]
