"""Your data, sample by sample: which reference setting each sample is closest to, and the
per-sample scores ranked, with the top and bottom written for reuse in fine-tuning."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.core import vocabulary
from analysis.core.formatting import fmt
from analysis.core.registry import model_slug
from analysis.data.records import load_records
from analysis.findings import closest_setting
from analysis.report.your_data_page import TOP_K, UserFile, YourData

# --------------------------------------------------------------------------- placement


def placement_text(page: YourData) -> str:
    """Markdown: what the classifier is, how well it does on held-out references, where the data land."""
    if page.placement is None:
        return f"No placement: {page.placement_error}"
    p = page.placement
    low, high = p.accuracy.interval()
    n_groups = p.accuracy.n
    lines = [
        (
            f"A multinomial logistic regression on the log nuclear norm of every (projection, layer) learns the reference "
            f"setting ({', '.join(vocabulary.setting_label(c) for c in p.classes)}) from {len(p.out_of_fold)} reference "
            f"samples with correct responses ({n_groups} instructions). Cross-validated over {p.n_folds} folds grouped by "
            f"instruction, it assigns **{p.accuracy.value:.0%}** of the held-out reference samples to their own setting "
            f"(95% interval over instructions {_pct(low)} to {_pct(high)}; always guessing one setting gives "
            f"{p.chance:.0%})."
        ),
    ]
    if p.accuracy.value < p.chance + 0.2:
        lines.append(
            "**The classifier barely beats guessing on the references: do not read much into where your data land.**"
        )
    for file in page.files:
        summary = file_assignment(page, file)
        if summary is None:
            lines.append(f"{file.label}: no sample to place.")
            continue
        closest = closest_setting.closest(summary)
        row = summary.set_index("class").loc[closest]
        lines.append(
            f"**{file.label}** is closest to **{vocabulary.setting_label(closest)}**: "
            f"{row['share assigned']:.0%} of its {summary.attrs['n']} samples are assigned to it, with a mean "
            f"probability of {row['mean probability']:.2f}."
        )
    return "\n\n".join(lines)


def _pct(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{max(0.0, min(1.0, value)):.0%}"


def file_assignment(page: YourData, file: UserFile) -> pd.DataFrame | None:
    """Share of a file's samples assigned to each setting and the mean probability of each."""
    if page.placement is None or page.assigned.empty:
        return None
    mine = page.assigned[page.assigned.index.get_level_values("condition") == file.condition]
    if mine.empty:
        return None
    summary = closest_setting.assignment_summary(mine, page.placement.classes)
    summary.attrs["n"] = len(mine)
    return summary


def assignment_table(page: YourData) -> pd.DataFrame:
    """Per user file and reference setting: share assigned and mean probability."""
    tables = []
    for file in page.files:
        summary = file_assignment(page, file)
        if summary is not None:
            summary = summary.assign(setting=summary["class"].map(vocabulary.setting_label)).drop(columns="class")
            summary.insert(0, "data", file.label)
            tables.append(summary)
    if not tables:
        return pd.DataFrame()
    table = pd.concat(tables, ignore_index=True)
    table["share assigned"] = table["share assigned"].map(lambda v: f"{v:.0%}")
    table["mean probability"] = table["mean probability"].map(lambda v: f"{v:.2f}")
    return table[["data", "setting", "share assigned", "mean probability"]]


def confusion_table(page: YourData) -> pd.DataFrame:
    """Out-of-fold confusion of the reference classifier (rows: true setting)."""
    if page.placement is None:
        return pd.DataFrame()
    table = page.placement.confusion()
    table.index = [vocabulary.setting_label(c) for c in table.index]
    table.columns = [f"assigned {vocabulary.setting_label(c)}" for c in table.columns]
    return table.rename_axis("true setting").reset_index()


# --------------------------------------------------------------------------- per-sample scores


def sample_scores(page: YourData, file: UserFile) -> pd.DataFrame:
    """One row per sample of a file on the trained model: mean nuclear norm and effective rank
    (over projections and layers), the classifier's probabilities, and the record's text;
    ranked by mean nuclear norm, lowest first (the follow-up study's higher-quality direction)."""
    mine = page.rows[(page.rows["model"] == page.model) & (page.rows["condition"] == file.condition)]
    if mine.empty:
        return pd.DataFrame()
    scores = mine.groupby("sample_index").agg(
        mean_nuclear_norm=("nuclear_norm", "mean"),
        mean_effective_rank=("effective_rank", "mean"),
        n_response_tokens=("n_response_tokens", "first"),
    )
    if not page.assigned.empty and page.placement is not None:  # samples are assigned by a placement
        assigned = page.assigned[page.assigned.index.get_level_values("condition") == file.condition]
        assigned = assigned.reset_index(
            level=[k for k in closest_setting.SAMPLE_KEYS if k != "sample_index"], drop=True
        )
        for setting in page.placement.classes:
            scores[f"p_{setting}"] = assigned[setting]
        scores["closest_setting"] = assigned["assigned"]
    records = load_records(file.path)
    scores["instruction"] = [records[i].instruction for i in scores.index]
    scores["output"] = [records[i].output for i in scores.index]
    scores = scores.sort_values("mean_nuclear_norm").reset_index()
    scores.insert(0, "rank", np.arange(1, len(scores) + 1))
    return scores


def write_scores(page: YourData, k: int = TOP_K) -> list[Path]:
    """Per file: all samples ranked (CSV), and the top and bottom ``k`` (CSV and JSON), in the
    store's ``scores/`` folder; the paths written."""
    folder = page.results_dir / "scores"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for file in page.files:
        scores = sample_scores(page, file)
        if scores.empty:
            continue
        stem = f"{file.label}-{model_slug(page.model)}"
        parts = {"ranked": scores, "top": scores.head(k), "bottom": scores.tail(k).iloc[::-1]}
        for name, table in parts.items():
            csv = folder / f"{stem}-{name}.csv"
            table.to_csv(csv, index=False)
            written.append(csv)
            if name != "ranked":
                path = folder / f"{stem}-{name}.json"
                path.write_text(json.dumps(table.to_dict(orient="records"), indent=1, ensure_ascii=False))
                written.append(path)
    return written


def score_preview(page: YourData, file: UserFile, k: int = 5) -> pd.DataFrame:
    """The ``k`` lowest and ``k`` highest ranked samples, text shortened, for display."""
    scores = sample_scores(page, file)
    if scores.empty:
        return scores
    shown = pd.concat([scores.head(k), scores.tail(k)]).drop_duplicates("rank")
    columns = ["rank", "sample_index", "mean_nuclear_norm", "mean_effective_rank", "n_response_tokens"]
    columns += [c for c in shown.columns if c.startswith("p_") or c == "closest_setting"] + ["instruction"]
    shown = shown[columns].copy()
    for column in ("mean_nuclear_norm", "mean_effective_rank") + tuple(c for c in columns if c.startswith("p_")):
        shown[column] = shown[column].map(fmt)
    shown["instruction"] = shown["instruction"].map(lambda t: t if len(t) <= 80 else t[:77] + "...")
    return shown
