"""The book's tables of exact numbers: MAD, RD and effective rank with intervals, pair comparisons."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from analysis.core import vocabulary
from analysis.core.formatting import fmt_interval
from analysis.core.registry import PAPER_PAIRS
from analysis.findings import metrics, quantities
from analysis.findings.bootstrap import CurveDraws
from analysis.findings.intervals import nonnegative

SEGMENTS = (*vocabulary.SEGMENTS, "all")
PROJECTIONS = vocabulary.PROJECTIONS


def _segment_bounds(n_layers: int, segment: str) -> tuple[int, int]:
    """A segment's layers; none for a curve too short to split into thirds (its value is undefined)."""
    if segment == "all":
        return 0, n_layers
    return metrics.layer_splits(n_layers)[segment] if n_layers >= 4 else (0, 0)


def segment_mad(curve: np.ndarray, segment: str) -> np.ndarray:
    """MAD of curve(s) (..., L) over one segment's layers."""
    lo, hi = _segment_bounds(curve.shape[-1], segment)
    return np.asarray(metrics.mean_absolute_difference(curve[..., lo:hi]))


def _segment_table(
    draws: dict[str, CurveDraws], stat: str, summary, responses: Sequence[str], *, study_only: bool = True
) -> pd.DataFrame:
    out = []
    for model, cd in draws.items():
        for dataset in cd.datasets():
            for response in responses:
                for setting in cd.settings(dataset, response, study_only):
                    condition = cd.condition_key(dataset, setting, response)
                    for proj in PROJECTIONS:
                        key = (condition, proj, stat)
                        if key not in cd.estimate:
                            continue
                        row = {
                            "model": model,
                            "dataset": dataset,
                            "setting": setting,
                            "responses": response,
                            "proj": proj,
                            "n_samples": cd.n_samples[key],
                            "n_layers": cd.n_layers,
                        }
                        for segment in SEGMENTS:
                            est, low, high = nonnegative(
                                *cd.interval(
                                    summary(cd.estimate[key], segment),
                                    summary(cd.draws[key], segment),
                                    cd.n_samples[key],
                                )
                            )
                            row.update({segment: est, f"{segment}_low": low, f"{segment}_high": high})
                        out.append(row)
    columns = ["model", "dataset", "setting", "responses", "proj", "n_samples", "n_layers"]
    columns += [c for s in SEGMENTS for c in (s, f"{s}_low", f"{s}_high")]
    return pd.DataFrame(out, columns=columns)


def mad_interval_table(
    draws: dict[str, CurveDraws],
    stat: str = "nuclear_norm",
    responses: Sequence[str] = (vocabulary.CORRECT,),
    study_only: bool = True,
) -> pd.DataFrame:
    """MAD of the mean curve over early/middle/late/all layers, with intervals, per
    (model, dataset, setting, responses, projection)."""
    return _segment_table(draws, stat, segment_mad, responses, study_only=study_only)


def format_segment_table(table: pd.DataFrame) -> pd.DataFrame:
    """A MAD or effective-rank table with "est [low, high]" cells, for display; a segment of fewer
    than two layers (a curve of few layers) has no MAD and says so."""
    out = table[["model", "dataset", "setting", "responses", "proj", "n_samples"]].copy()
    out["setting"] = out["setting"].map(vocabulary.setting_label)
    layers = table["n_layers"] if "n_layers" in table else pd.Series(np.nan, index=table.index)
    for segment in SEGMENTS:
        out[segment] = [
            fmt_interval(e, lo, hi) if np.isfinite(e) else _undefined(n, segment)
            for e, lo, hi, n in zip(table[segment], table[f"{segment}_low"], table[f"{segment}_high"], layers)
        ]
    return out.reset_index(drop=True)


def _undefined(n_layers: float, segment: str) -> str:
    """Why a segment's value is undefined: too few layers (in the segment, or to split), or no data."""
    if pd.isna(n_layers):
        return "n/a"
    n_layers = int(n_layers)
    lo, hi = _segment_bounds(n_layers, segment)
    return "n/a (too few layers)" if hi - lo < 2 else "n/a"


def rd_pairs(cd: CurveDraws, stat: str = "nuclear_norm") -> Iterator[tuple[str, str, str]]:
    """(dataset, setting, proj) with both correct and irrelevant curves."""
    for dataset in cd.datasets():
        for setting in cd.settings(dataset, study_only=False):
            for proj in PROJECTIONS:
                a = (cd.condition_key(dataset, setting, vocabulary.CORRECT), proj, stat)
                b = (cd.condition_key(dataset, setting, vocabulary.IRRELEVANT), proj, stat)
                if a in cd.estimate and b in cd.estimate:
                    yield dataset, setting, proj


def rd_interval_table(
    draws: dict[str, CurveDraws], stat: str = "nuclear_norm", top: int = 3, study_only: bool = True
) -> pd.DataFrame:
    """RD of irrelevant against correct curves: mean |RD| and mean RD with intervals, top layers."""
    out = []
    for model, cd in draws.items():
        for dataset, setting, proj in rd_pairs(cd, stat):
            if study_only and setting in vocabulary.CUT_SETTINGS:
                continue
            a = (cd.condition_key(dataset, setting, vocabulary.CORRECT), proj, stat)
            b = (cd.condition_key(dataset, setting, vocabulary.IRRELEVANT), proj, stat)
            n = min(cd.n_samples[a], cd.n_samples[b])
            summary = metrics.rd_summary(cd.estimate[a], cd.estimate[b], top=top)
            rd = metrics.relative_difference(cd.draws[a], cd.draws[b])
            abs_ = nonnegative(*cd.interval(summary["mean_abs_rd"], metrics.finite_mean(np.abs(rd)), n))
            signed = cd.interval(summary["mean_rd"], metrics.finite_mean(rd), n)
            out.append(
                {
                    "model": model,
                    "dataset": dataset,
                    "setting": setting,
                    "proj": proj,
                    "mean_abs_rd": abs_[0],
                    "mean_abs_rd_low": abs_[1],
                    "mean_abs_rd_high": abs_[2],
                    "mean_rd": signed[0],
                    "mean_rd_low": signed[1],
                    "mean_rd_high": signed[2],
                    "top_layers": ", ".join(str(x) for x in summary["top_layers"]),
                    "n_correct": cd.n_samples[a],
                    "n_irrelevant": cd.n_samples[b],
                }
            )
    columns = [
        "model",
        "dataset",
        "setting",
        "proj",
        "mean_abs_rd",
        "mean_abs_rd_low",
        "mean_abs_rd_high",
        "mean_rd",
        "mean_rd_low",
        "mean_rd_high",
        "top_layers",
        "n_correct",
        "n_irrelevant",
    ]
    return pd.DataFrame(out, columns=columns)


def format_rd_table(table: pd.DataFrame) -> pd.DataFrame:
    """The RD table with "est [low, high]" cells, for display."""
    out = table[["model", "dataset", "setting", "proj"]].copy()
    out["setting"] = out["setting"].map(vocabulary.setting_label)
    out["mean |RD|"] = [
        fmt_interval(*v) for v in zip(table["mean_abs_rd"], table["mean_abs_rd_low"], table["mean_abs_rd_high"])
    ]
    out["mean RD"] = [fmt_interval(*v) for v in zip(table["mean_rd"], table["mean_rd_low"], table["mean_rd_high"])]
    out["top layers (|RD|)"] = table["top_layers"]
    out["n (correct / irrelevant)"] = [f"{a} / {b}" for a, b in zip(table["n_correct"], table["n_irrelevant"])]
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------- pre-trained vs instruct


def pairs_table(pairs: dict[str, str], templates: dict[str, str], n_layers: dict[str, int]) -> pd.DataFrame:
    """The (base, instruct) pairs compared, with whether each is a matched pair of the paper."""
    matched = {(b, i) for b, i in PAPER_PAIRS}
    out = []
    for instruct, base in pairs.items():
        out.append(
            {
                "base model": base,
                "instruct model": instruct,
                "layers (base / instruct)": f"{n_layers.get(base, '?')} / {n_layers.get(instruct, '?')}",
                "matched pair": "yes" if (base, instruct) in matched else "no: different families",
            }
        )
    return pd.DataFrame(out)


def confound_statement(pairs: dict[str, str]) -> str:
    """Markdown: whether the base/instruct comparison is between matched models, and what that means."""
    matched = {(b, i) for b, i in PAPER_PAIRS}
    unmatched = [(base, ins) for ins, base in pairs.items() if (base, ins) not in matched]
    paper = ", ".join(f"{b} / {i}" for b, i in PAPER_PAIRS)
    if not pairs:
        return (
            "These results hold no base and instruct model to compare. The paper profile runs the matched "
            f"pairs of `registry.PAPER_PAIRS`: {paper}."
        )
    if not unmatched:
        return (
            "Each instruct model here is compared with its own pre-trained version (the matched pairs of "
            "`registry.PAPER_PAIRS`), so differences come from instruction tuning."
        )
    listed = "; ".join(f"{b} (pre-trained) with {i} (instruct)" for b, i in unmatched)
    return (
        f"**This comparison is confounded.** It pairs {listed}: these come from different model families, "
        "so any difference mixes instruction tuning with differences in architecture, depth, tokenizer and "
        "training data. Read it as a demonstration of the analysis, not as evidence about instruction tuning. "
        f"The paper profile (`--profile paper`) runs the matched pairs of `registry.PAPER_PAIRS`: {paper}."
    )


def pair_comparison_table(draws: dict[str, CurveDraws], pairs: dict[str, str]) -> pd.DataFrame:
    """Per pair, dataset and setting: all-layer MAD and mean |RD| (q/k/v/o mean) of both models."""
    from analysis.findings.bootstrap import combine

    out = []
    for instruct, base in pairs.items():
        if instruct not in draws or base not in draws:
            continue
        cb, ci = draws[base], draws[instruct]
        for dataset in cb.datasets():
            for setting in cb.settings(dataset):
                if not (cb.has(cb.condition_key(dataset, setting)) and ci.has(ci.condition_key(dataset, setting))):
                    continue
                row = {"dataset": dataset, "setting": vocabulary.setting_label(setting)}
                for label, cd in (("base", cb), ("instruct", ci)):
                    mads = [m for p in PROJECTIONS if (m := quantities.mad(cd, dataset, setting, p)) is not None]
                    mad = combine(lambda *m: np.mean(np.stack(m), axis=0), *mads)
                    row[f"MAD {label}"] = fmt_interval(*nonnegative(mad.value, *mad.interval()))
                    rd = quantities.rd_level(cd, dataset, setting)
                    row[f"mean |RD| {label}"] = fmt_interval(*nonnegative(rd.value, *rd.interval())) if rd else ""
                out.append({"model": f"{base} vs {instruct}", **row})
    return pd.DataFrame(out)


# All-layer MADs reported for Qwen2-1.5B on AQuA, q/k/v/o (secondary source: indicative only).
REPORTED_MAD = {
    ("Qwen/Qwen2-1.5B", "aqua"): {
        "none": (4.42, 7.06, 17.32, 12.91),
        "simplified": (0.69, 0.81, 2.36, 1.97),
        "detailed": (0.28, 0.27, 0.64, 0.64),
    }
}


def reported_mad_comparison(draws: dict[str, CurveDraws]) -> pd.DataFrame:
    """The reported all-layer MADs next to this run's, for the models and datasets that have them."""
    out = []
    for (model, dataset), by_setting in REPORTED_MAD.items():
        cd = draws.get(model)
        if cd is None:
            continue
        for setting, values in by_setting.items():
            condition = cd.condition_key(dataset, setting)
            for proj, reported in zip(PROJECTIONS, values):
                key = (condition, proj, "nuclear_norm")
                if key not in cd.estimate:
                    continue
                est, low, high = nonnegative(
                    *cd.interval(
                        segment_mad(cd.estimate[key], "all"), segment_mad(cd.draws[key], "all"), cd.n_samples[key]
                    )
                )
                inside = "yes" if np.isfinite(low) and low <= reported <= high else "no"
                out.append(
                    {
                        "model": model,
                        "dataset": dataset,
                        "setting": vocabulary.setting_label(setting),
                        "proj": proj,
                        "reported": reported,
                        "this run": fmt_interval(est, low, high),
                        "reported value inside the interval": inside,
                    }
                )
    return pd.DataFrame(out)
