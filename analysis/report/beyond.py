"""Questions beyond the paper as a page shows them: one sample's separability, response length,
effective rank. The numbers and verdicts come from ``analysis.findings.separability``,
``analysis.findings.effective_rank`` and ``analysis.findings.length``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.checks import LENGTH_CHECKS
from analysis.core import vocabulary
from analysis.core.formatting import fmt, fmt_interval, per_model
from analysis.findings import length
from analysis.findings.rules import Finding
from analysis.report import cells, voice
from analysis.report.display import column_parts

# --------------------------------------------------------------------------- separability


def format_separability(table: pd.DataFrame) -> pd.DataFrame:
    """The separability table for display."""
    if table.empty:
        return table
    out = pd.DataFrame(
        {
            "model": table["model"],
            "scope": [
                vocabulary.scope_label(s) + (" (pooled)" if p else "") for s, p in zip(table["scope"], table["pooled"])
            ],
            "setting": table["setting"].map(vocabulary.setting_label),
            "n": table["n_samples"],
            "AUROC (out of fold)": [
                fmt_interval(*v) for v in zip(table["auroc"], table["auroc_low"], table["auroc_high"])
            ],
            "verdict": table["verdict"],
            "left out (identical)": table["n_excluded"].fillna(0).astype(int),
        }
    )
    return out


def separability_paragraph(table: pd.DataFrame) -> str:
    """Markdown, one short paragraph per model: the pooled answers, then the per-dataset count."""
    empty = "No setting holds both correct and irrelevant responses, so separability is not computed."
    return per_model(table, _separability_in_words, empty=empty)


def _separability_in_words(_, group: pd.DataFrame) -> str:
    pooled_rows = group[group["pooled"]]
    separable = pooled_rows[pooled_rows["verdict"] == "separable"]
    text = (
        "Pooled over a family's datasets, one sample's layer-wise nuclear norms tell correct "
        f"from irrelevant responses in {len(separable)} of {len(pooled_rows)} (family, setting) cases"
    )
    if len(separable):
        text += ": " + ", ".join(
            f"{vocabulary.scope_label(r.scope)} {vocabulary.setting_label(r.setting)} "
            f"(AUROC {fmt_interval(r.auroc, r.auroc_low, r.auroc_high)})"
            for r in separable.itertuples()
        )
    counts = group[~group["pooled"]]["verdict"].value_counts()
    return text + ". Per dataset: " + ", ".join(f"{int(n)} {v}" for v, n in counts.items()) + "."


# --------------------------------------------------------------------------- length


def length_paragraph(findings: Sequence[Finding]) -> str:
    """Markdown: per model, whether content matters beyond length (L) and whether length matters
    (L2), on Detailed CoT cut to the Simplified-CoT length, with the share of the gap left at equal
    length where the gap is established, and the None-length cut as a second view."""
    empty = (
        "These data hold no length-control condition (Detailed CoT cut to the Simplified-CoT length, with "
        "Simplified and Detailed CoT), so the length question is answered by the regression only."
    )
    after = (
        "The share of the gap left at equal length is shown only where the Simplified vs Detailed gap is "
        "established (its interval above 1), since a ratio over a gap that may be zero has no stable interval; "
        "it decides nothing and has no bound."
    )
    shown = [f for f in findings if f.check in LENGTH_CHECKS]
    if not shown:
        return empty
    models = list(dict.fromkeys(f.model for f in shown))
    lines = [f"**{m}.** {_length_in_words([f for f in shown if f.model == m])}" for m in models]
    return "\n\n".join([*lines, after])


def _length_in_words(found: Sequence[Finding]) -> str:
    chosen = cells.answers(found)
    pieces = []
    for scope in dict.fromkeys(f.scope for f in chosen):
        mine: dict[str, Finding] = {f.check: f for f in chosen if f.scope == scope}
        content, length_ = (mine.get(c) for c in LENGTH_CHECKS)
        pieces.append(
            f"{vocabulary.scope_label(scope)}: content beyond length "
            f"{content.verdict if content is not None else 'not computed'}, length "
            f"{length_.verdict if length_ is not None else 'not computed'} (n = {min(f.n for f in mine.values())}; "
            f"{voice.numbers(content) if content is not None else ''})"
        )
    return (
        "Detailed CoT cut to the token count of the same instruction's Simplified-CoT response, "
        "against Simplified CoT (same length, different style) and full Detailed CoT, in mean log nuclear norm. "
        + "; ".join(pieces)
        + "."
    )


def length_regression_table(rows: pd.DataFrame) -> pd.DataFrame:
    """length.length_regression over the study settings (length-control views left out)."""
    study = rows[rows["setting"].isin(vocabulary.STUDY_SETTINGS)]
    if study.empty:
        return pd.DataFrame()
    return length.length_regression(study, "nuclear_norm")


# The regression's columns as the book names them (short, with spaces, so that headings wrap and
# the table fits the page): fitted on length alone, on the setting alone, and on both.
REGRESSION_COLUMNS = {
    "slope_length_only": "slope, length alone",
    "r2_length_only": "R², length alone",
    "coef_setting_only": "setting gap, setting alone",
    "coef_with_length": "setting gap, with length",
    "slope_with_setting": "slope, with setting",
    "r2_with_setting": "R², with setting",
}


def format_length_regression(table: pd.DataFrame) -> pd.DataFrame:
    """The length regression for display: per setting against its reference, slopes, setting gaps
    with and without length, R^2."""
    if table.empty:
        return table
    out = table[["model", "dataset", "responses", "n_samples"]].copy()
    out["setting vs reference"] = [
        f"{vocabulary.setting_label(s)} vs {vocabulary.setting_label(r)}"
        if isinstance(s, str)
        else f"{vocabulary.setting_label(r)} alone"
        for s, r in zip(table["setting"], table["reference_setting"])
    ]
    for column, name in REGRESSION_COLUMNS.items():
        out[name] = table[column].map(fmt)
    out["note"] = table["reason"].fillna("")
    return out


def length_regression_parts(shown: pd.DataFrame) -> list[pd.DataFrame]:
    """The formatted regression as two tables narrow enough for the page: each row's samples and
    the fits on length alone and on the setting alone, then the fit on both and the note."""
    if shown.empty:
        return [shown]
    keys = ("model", "dataset", "responses", "setting vs reference")
    alone = (
        "n_samples",
        *(REGRESSION_COLUMNS[c] for c in ("slope_length_only", "r2_length_only", "coef_setting_only")),
    )
    return column_parts(shown, keys=keys, first=alone)


def length_regression_paragraph(table: pd.DataFrame) -> str:
    """Markdown: per model, how much of the setting gaps survives adding response length (medians)."""
    if table.empty:
        return "No data for the length regression."
    rows = table[(table["responses"] == vocabulary.CORRECT) & table["setting"].notna()]
    rows = rows[np.isfinite(rows["coef_setting_only"]) & np.isfinite(rows["coef_with_length"])]
    empty = "No dataset has two settings with enough samples for the length regression."
    before = "Correlational: length and content were not randomised."
    return per_model(rows, _regression_in_words, empty=empty, before=before)


def _regression_in_words(_, group: pd.DataFrame) -> str:
    kept = (group["coef_with_length"] / group["coef_setting_only"]).replace([np.inf, -np.inf], np.nan)
    return (
        f"Over {len(group)} (dataset, setting) gaps, the median share of a setting's gap "
        f"in log nuclear norm that remains once log response length enters the regression is "
        f"{fmt(float(np.nanmedian(kept)))} (range {fmt(float(np.nanmin(kept)))} to "
        f"{fmt(float(np.nanmax(kept)))}); length alone explains a median R² of "
        f"{fmt(float(group['r2_length_only'].median()))}."
    )


# --------------------------------------------------------------------------- effective rank


def effective_rank_paragraph(table: pd.DataFrame) -> str:
    """Markdown: per model, the pooled effective-rank differences between fast and slow thinking."""
    return per_model(table, _rank_in_words, empty="No dataset has two settings with effective ranks.")


def _rank_in_words(_, group: pd.DataFrame) -> str:
    shown = group[group["pooled"]] if group["pooled"].any() else group
    parts = [
        f"{vocabulary.scope_label(r.scope)} {fmt_interval(r.value, r.low, r.high)} ({r.verdict}, n = {r.n})"
        for r in shown.itertuples()
    ]
    return "Mean effective rank, fastest minus slowest setting: " + "; ".join(parts) + "."


def format_effective_rank(table: pd.DataFrame) -> pd.DataFrame:
    """The effective-rank differences for display."""
    if table.empty:
        return table
    return pd.DataFrame(
        {
            "model": table["model"],
            "scope": [
                vocabulary.scope_label(s) + (" (pooled)" if p else "") for s, p in zip(table["scope"], table["pooled"])
            ],
            "contrast": table["contrast"],
            "n": table["n"],
            "difference": [fmt_interval(v, lo, hi) for v, lo, hi in zip(table["value"], table["low"], table["high"])],
            "verdict": table["verdict"],
        }
    )
