"""Figures of layer curves and per-sample statistics. Drawing only: the numbers come from
analysis.metrics (layer_curves) and analysis.stats (curve_band_table, per_sample_means)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

PROJ_COLOURS = {"q": "r", "k": "g", "v": "b", "o": "gray"}
SETTING_LABELS = {"none": "None CoT", "simplified": "Simplified CoT", "detailed": "Detailed CoT",
                  "len100": "Wiki ~100 words", "len500": "Wiki ~500 words",
                  "len1000": "Wiki ~1000 words", "unpopular": "Wiki unpopular",
                  "detailed_cut_simplified": "Detailed CoT cut to simplified length",
                  "detailed_cut_none": "Detailed CoT cut to no-CoT length"}
STAT_LABELS = {"nuclear_norm": "nuclear norm", "sigma1_ratio": "s1 / nuclear norm",
               "effective_rank": "effective rank", "sigma_max": "largest singular value",
               "frobenius": "Frobenius norm"}


def condition_title(condition: str) -> str:
    """Readable title of a "dataset/setting/responses" key, e.g. "aqua: Detailed CoT"."""
    dataset, setting, responses = condition.split("/")
    title = f"{dataset}: {SETTING_LABELS.get(setting, setting)}"
    return title if responses == "correct" else f"{title} ({responses})"


def _select(table: pd.DataFrame, model: str, condition: str, stat: str) -> pd.DataFrame:
    sel = table[(table["model"] == model) & (table["condition"] == condition)]
    if "stat" in sel.columns:
        sel = sel[sel["stat"] == stat]
    return sel


def _draw_curves(ax, curves: pd.DataFrame, bands: pd.DataFrame | None) -> None:
    for proj, colour in PROJ_COLOURS.items():
        line = curves[curves["proj"] == proj].sort_values("layer")
        if line.empty:
            continue
        ax.plot(line["layer"], line["value"], color=colour, lw=1.2, label=proj.upper())
        if bands is not None:
            band = bands[bands["proj"] == proj].sort_values("layer")
            if not band.empty:
                ax.fill_between(band["layer"], band["low"], band["high"], color=colour,
                                alpha=0.2, lw=0)


def curve_grid(curves: pd.DataFrame, model: str, conditions: Sequence[str],
               stats: Sequence[str], bands: pd.DataFrame | None = None,
               note: str | None = None) -> Figure:
    """Grid of layer curves: one column per condition, one row per statistic, Q/K/V/O lines
    (red, green, blue, gray), with optional bootstrap bands.

    `curves`: layer_curves output (rows of several statistics told apart by its `stat` column);
    `bands`: curve_band_table output; `note`: a line printed under the figure (e.g. where the
    weights come from).
    """
    n_rows, n_cols = len(stats), len(conditions)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(3.4 * n_cols, 2.6 * n_rows), squeeze=False,
                             sharex=True)
    for i, stat in enumerate(stats):
        for j, condition in enumerate(conditions):
            ax = axes[i, j]
            selected = _select(curves, model, condition, stat)
            band = None if bands is None else _select(bands, model, condition, stat)
            if selected.empty:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            _draw_curves(ax, selected, band)
            if i == 0:
                ax.set_title(condition_title(condition), fontsize=9)
            if j == 0:
                ax.set_ylabel(STAT_LABELS.get(stat, stat))
            if i == n_rows - 1:
                ax.set_xlabel("layer")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper right", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle(model, x=0.01, ha="left", fontsize=10)
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 0.95))
    return fig


def nuclear_norm_figure(curves: pd.DataFrame, model: str, conditions: Sequence[str],
                        stats: Sequence[str] = ("nuclear_norm", "sigma1_ratio"),
                        bands: pd.DataFrame | None = None, note: str | None = None) -> Figure:
    """The paper's main figure: nuclear norm (and s1 ratio) curves per setting, Q/K/V/O lines."""
    return curve_grid(curves, model, conditions, stats, bands=bands, note=note)


def effective_rank_figure(curves: pd.DataFrame, model: str, conditions: Sequence[str],
                          bands: pd.DataFrame | None = None, note: str | None = None) -> Figure:
    """Effective-rank layer curves (2504.10766's measure), one panel per condition."""
    return curve_grid(curves, model, conditions, ("effective_rank",), bands=bands, note=note)


def length_scatter(per_sample: pd.DataFrame, model: str, dataset: str | None = None,
                   responses: str = "correct", y_label: str = "mean nuclear norm",
                   note: str | None = None) -> Figure:
    """Per-sample mean statistic against response length (log-log), one colour per setting.

    `per_sample`: stats.per_sample_means output; with a `proj` column, marker style shows the
    projection.
    """
    sel = per_sample[(per_sample["model"] == model) & (per_sample["responses"] == responses)]
    if dataset is not None:
        sel = sel[sel["dataset"] == dataset]
    fig, ax = plt.subplots(figsize=(5, 3.8))
    if sel.empty:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    else:
        hue_order = [s for s in SETTING_LABELS if s in set(sel["setting"])]
        hue_order += sorted(set(sel["setting"]) - set(hue_order))
        sns.scatterplot(data=sel, x="n_response_tokens", y="value", hue="setting",
                        hue_order=hue_order, style="proj" if "proj" in sel.columns else None,
                        s=12, alpha=0.6, linewidth=0, ax=ax)
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("response tokens")
    ax.set_ylabel(y_label)
    ax.set_title(f"{model}" + (f", {dataset}" if dataset else "") + f" ({responses})", fontsize=9)
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    return fig


def model_grid(curves: pd.DataFrame, models: Sequence[str], conditions: Sequence[str],
               stat: str = "nuclear_norm", bands: pd.DataFrame | None = None,
               note: str | None = None) -> Figure:
    """Layer curves of one statistic for several models: one row per model, one column per
    condition, Q/K/V/O lines with optional bootstrap bands (e.g. a base model above its
    instruct version). Rows do not share the y axis: models differ in scale."""
    n_rows, n_cols = len(models), len(conditions)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(3.4 * n_cols, 2.6 * n_rows), squeeze=False)
    for i, model in enumerate(models):
        for j, condition in enumerate(conditions):
            ax = axes[i, j]
            selected = _select(curves, model, condition, stat)
            band = None if bands is None else _select(bands, model, condition, stat)
            if selected.empty:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            _draw_curves(ax, selected, band)
            if i == 0:
                ax.set_title(condition_title(condition), fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{model}\n{STAT_LABELS.get(stat, stat)}", fontsize=8)
            if i == n_rows - 1:
                ax.set_xlabel("layer")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper right", ncol=len(handles), fontsize=8, frameon=False)
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 0.95))
    return fig
