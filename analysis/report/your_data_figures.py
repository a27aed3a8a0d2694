"""The your-data page's figures: the user's curves over the reference settings', and on the
trained model against its randomly initialised copy (scratch)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core import vocabulary
from analysis.findings.intervals import t_band
from analysis.report import plots
from analysis.report.figures import curves_and_bands
from analysis.report.load import figure_note
from analysis.report.your_data_page import SETTING_COLOURS, UserFile, YourData


def _pooled_curve(page: YourData, conditions: Sequence[str], proj: str, stat: str):
    """Mean curve, band and instructions of conditions pooled with equal weight per dataset."""
    cd = page.draws[page.model]
    keys = [(c, proj, stat) for c in conditions if (c, proj, stat) in cd.estimate]
    if not keys:
        return None
    value = np.mean([cd.estimate[k] for k in keys], axis=0)
    draws = np.mean([cd.draws[k] for k in keys], axis=0)
    n = min(cd.n_samples[k] for k in keys)
    low, high = t_band(value, draws, n, cd.level)
    return value, low, high


def overlay_figure(page: YourData, file: UserFile, stat: str = "nuclear_norm") -> Figure:
    """One panel per projection: the reference settings' mean curves (pooled over datasets; correct
    solid with 95% bands, irrelevant dashed) and the user's curve in black with its band."""
    cd = page.draws[page.model]
    rows, columns = plots.panel_rows(len(vocabulary.PROJECTIONS))
    fig, axes = plt.subplots(
        rows, columns, figsize=plots.panels_size(rows, columns, height=2.6), sharex=True, squeeze=False
    )
    layers = np.arange(cd.n_layers)
    for ax, proj in zip(axes.flat, vocabulary.PROJECTIONS):
        for setting, responses in page.reference_groups():
            curve = _pooled_curve(page, page.reference_condition_list(setting, responses), proj, stat)
            if curve is None:
                continue
            colour = SETTING_COLOURS.get(setting, "gray")
            dashed = responses != vocabulary.CORRECT
            ax.plot(
                layers,
                curve[0],
                color=colour,
                lw=1.0,
                ls="--" if dashed else "-",
                label=f"{vocabulary.setting_label(setting)}{' (irrelevant)' if dashed else ''}",
            )
            if not dashed:
                ax.fill_between(layers, curve[1], curve[2], color=colour, alpha=0.15, lw=0)
        key = (file.condition, proj, stat)
        if key in cd.estimate:
            low, high = t_band(cd.estimate[key], cd.draws[key], cd.n_samples[key], cd.level)
            ax.plot(layers, cd.estimate[key], color="black", lw=2.0, label=f"{file.label} (yours)")
            ax.fill_between(layers, low, high, color="black", alpha=0.15, lw=0)
        if stat == "nuclear_norm":
            ax.set_yscale("log")
        ax.set_title(proj.upper(), fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("layer")
    for ax in axes[:, 0]:
        ax.set_ylabel(vocabulary.STAT_LABELS.get(stat, stat))
    return plots.legend_below(fig, title=page.model, note=figure_note(page.model, page.n_samples))


def scratch_figures(page: YourData, file: UserFile) -> list[tuple[str, Figure]]:
    """The user's curves (nuclear norm, effective rank) on the trained model and on its scratch copy."""
    curves, bands = curves_and_bands({m: cd for m, cd in page.draws.items()})
    figures = []
    for model, title in ((page.model, "trained model"), (page.scratch, "randomly initialised copy (scratch)")):
        if model not in page.draws or file.condition not in page.draws[model].conditions:
            continue
        fig = plots.curve_grid(
            curves,
            model,
            [file.condition],
            ("nuclear_norm", "effective_rank"),
            bands=bands,
            note=figure_note(page.model, page.n_samples),
        )
        figures.append((f"{file.label}: {title}", fig))
    return figures
