"""Per layer, the gap a chain splits (its total: every response token scored) beside its deciding
step (the answer's own tokens scored alone), per model and dataset: what the chapter "Where the gap
comes from" and a book's first page draw. The two pairs of settings come from the check that declares
the chain (``findings.scopes.Chain``), so nothing here names a check or a condition by hand.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis.checks import Check
from analysis.core import vocabulary
from analysis.findings import same_tokens
from analysis.findings.bootstrap import CurveDraws, rows_of
from analysis.findings.pooling import reasoning_datasets
from analysis.report import plots
from analysis.report.page import Page

FULL, SAME = "every response token", "the answer's tokens, after the same phrase (the reasoning step)"
NOT_STORED = (
    "The store holds no answer-scored pair (`{fast}` and `{slow}` of one dataset with None CoT, both "
    "computed; an answer cut off by the profile's `max_length` is skipped and counted above): the answer's own "
    "gradient is not compared here. `python -m analysis run --profile cpu` computes them for "
    "the offline models, `python -m analysis extract --data gsm8k/{fast}/correct` (and the other "
    "datasets and settings) for any model; the original study's released statistics hold none."
)
NOT_RELEASED = (
    "The original study's released statistics hold no answer-scored lines (the final answer's tokens scored "
    "alone, after the phrase alone and after the Detailed CoT), so {checks} have no verdict here: an "
    "extraction of the paper's models computes them (`python -m analysis run --profile paper`, on a GPU)."
)


def pairs(check: Check) -> dict[str, tuple[str, str]]:
    """The two gaps a chain's layer figure draws: its total (first and last settings of the chain) and
    its deciding step (the step of the check's headline role)."""
    assert check.chain is not None and check.headline is not None
    chain = check.chain
    step = chain.step(check.headline)
    return {FULL: (chain.conditions[0], chain.conditions[-1]), SAME: (step.fast, step.slow)}


def _layer_gap(cd: CurveDraws, dataset: str, fast: str, slow: str) -> np.ndarray | None:
    """Per layer, the mean over q, k, v, o of the gap of mean log nuclear norm, ``fast`` less ``slow``,
    on the instructions both hold."""
    ids = same_tokens.shared_instructions(cd, dataset, (fast, slow), (same_tokens.NUCLEAR,))
    if ids is None or ids.size == 0:
        return None
    curves = []
    for setting in (fast, slow):
        condition = cd.condition_key(dataset, setting)
        per_proj = []
        for proj in vocabulary.PROJECTIONS:
            matrix, own = cd.samples[(condition, proj, same_tokens.NUCLEAR)]
            rows = rows_of(matrix, own, ids)
            with np.errstate(divide="ignore"):
                per_proj.append(np.log(rows).mean(axis=0))
        curves.append(np.mean(per_proj, axis=0))
    gap = curves[0] - curves[1]
    return gap if np.all(np.isfinite(gap)) else None


def layer_gaps(page: Page, check: Check, *, every_token_alone: bool = False) -> pd.DataFrame:
    """Per model, dataset and layer: the chain's full-response gap and its deciding step's
    same-token gap, for the datasets where the same-token gap is stored (``every_token_alone``: also
    the full gap alone where it is not)."""
    rows = []
    compared = pairs(check)
    for model, cd in page.draws.items():
        for dataset in reasoning_datasets(cd):
            gaps = {name: _layer_gap(cd, dataset, *pair) for name, pair in compared.items()}
            if gaps[SAME] is None and not every_token_alone:
                continue
            for name, gap in gaps.items():
                if gap is not None:
                    rows += [
                        {"model": model, "dataset": dataset, "gap": name, "layer": layer, "value": float(v)}
                        for layer, v in enumerate(gap)
                    ]
    return pd.DataFrame(rows, columns=["model", "dataset", "gap", "layer", "value"])


def layer_gap_figure(table: pd.DataFrame, note: str | None = None) -> Figure | None:
    """One panel per model: per layer and dataset, the full-response gap (dashed) and the same-token
    gap (solid) of mean log nuclear norm, None less Detailed CoT; 0 is no gap."""
    if table.empty:
        return None
    models = list(dict.fromkeys(table["model"]))
    rows, columns = plots.panel_rows(len(models))
    fig, axes = plt.subplots(rows, columns, figsize=plots.panels_size(rows, columns, height=2.9), squeeze=False)
    datasets = list(dict.fromkeys(table["dataset"]))
    colours = plt.get_cmap("tab10")
    for ax, model in zip(axes.flat, models):
        mine = table[table["model"] == model]
        for dataset in dict.fromkeys(mine["dataset"]):
            named = False  # each dataset named once in the legend, by its first line
            for gap, style in ((SAME, "-"), (FULL, "--")):
                line = mine[(mine["dataset"] == dataset) & (mine["gap"] == gap)]
                if not line.empty:
                    colour, label = colours(datasets.index(dataset)), None if named else dataset
                    ax.plot(line["layer"], line["value"], style, color=colour, label=label, linewidth=1.4)
                    named = True
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("layer", fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("log(None / Detailed), nuclear norm", fontsize=9)
    first = axes.flat[0]  # the line styles, named once in the legend beside the datasets' colours
    if SAME in set(table["gap"]):
        first.plot([], [], "-", color="black", linewidth=1.4, label="answer tokens alone")
    first.plot([], [], "--", color="black", linewidth=1.4, label="every response token")
    plots.drop_unused(axes, len(models))
    return plots.legend_below(fig, note=note)
