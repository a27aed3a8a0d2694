"""What the book's notebooks show: tables, figures and sentences computed from the results store.

The notebooks only call these functions and display what they return. Every sentence about a
result is generated here from the numbers, with the verdict taken from bootstrap intervals:
a claim "holds" when its interval lies on the claim's side, "does not hold" when it lies on the
other side, and is "not resolved" otherwise.

Intervals come from one bootstrap per model that resamples instructions: the conditions of a
dataset share their instructions (the same questions under No, Simplified and Detailed CoT, with
correct or irrelevant responses), so one resampling of instruction ids is applied to all of them
and every derived quantity (a MAD, an RD, a difference between settings) gets its interval from
the same resamples.
"""

from __future__ import annotations

import json
import math
import warnings
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis import data, metrics, plots, stats
from analysis.models import OFFLINE_MODELS, PAPER_PAIRS, known_model
from analysis.store import ResultsStore, StoreError

PROJECTIONS = metrics.PROJECTIONS
SEGMENTS = (*metrics.SEGMENTS, "all")
STUDY_SETTINGS = (*data.COT_SETTINGS, *data.WIKI_SETTINGS)
CUT_SETTINGS = tuple(data.LENGTH_CONTROL_SETTINGS)
FIGURE_STATS = ("nuclear_norm", "sigma1_ratio", "effective_rank")
LEVEL = 0.95
SIGNIFICANCE = 0.05
# Below this many samples per condition a bootstrap cannot estimate the spread: no verdict.
MIN_VERDICT_SAMPLES = 5
# The smallest number of pairs for which a two-sided Wilcoxon signed-rank test can reach p < 0.05.
MIN_WILCOXON_PAIRS = 6
HOLDS, FAILS, UNRESOLVED = "holds", "does not hold", "not resolved"

OFFLINE_NOTE = ("{names}: quantised (GGUF) then dequantised small offline model(s); the two offline models come "
                "from two different families and are not the paper's models")


class ReportError(RuntimeError):
    """The results store does not hold what a notebook needs."""


# --------------------------------------------------------------------------- loading


@dataclass
class StudyResults:
    """Rows of the results store that one notebook reads, with what is missing or skipped."""

    rows: pd.DataFrame
    skipped: pd.DataFrame
    coverage: pd.DataFrame  # one row per requested (model, condition)
    models: tuple[str, ...]  # requested models that have rows, in the requested order
    conditions: tuple[str, ...]  # requested conditions
    n_samples: int | None

    @property
    def templates(self) -> dict[str, str]:
        return self.rows.groupby("model")["template"].first().to_dict() if len(self.rows) else {}


def _registry_template(model: str) -> str | None:
    info = known_model(model)
    return info.template if info else None


def _expected_count(condition: str, n_samples: int | None, data_dir) -> int | None:
    """Samples a complete run holds for a condition: n_samples, or fewer if the file is shorter."""
    try:
        records = len(data.load_records(data.data_dir(data_dir) / data.get_condition(condition).relative_path))
    except data.DataError:
        return n_samples
    return records if n_samples is None else min(n_samples, records)


def load_results(results_dir, models: Sequence[str], conditions: Sequence[str], max_length: int | None = None,
                 n_samples: int | None = None, data_dir=None) -> StudyResults:
    """Stored rows of the given models and conditions (first ``n_samples`` samples of each).

    A model keeps the rows of its registry template; with several truncation lengths stored,
    ``max_length`` must say which one. Missing (model, condition) pairs are reported in
    ``coverage``, not raised: a notebook shows what is stored and says what is not.
    """
    root = Path(results_dir)
    if not (root / "store.json").is_file():
        raise ReportError(f"{root}: no results store here; run `python -m analysis run --profile cpu` "
                          f"(or pass the results_dir of the run you made)")
    store = ResultsStore(root, create=False)
    filters = [("model", "in", list(models)), ("condition", "in", list(conditions))]
    if max_length is not None:
        filters.append(("max_length", "==", int(max_length)))
    try:
        rows = store.read("rows", filters=filters)
        skipped = store.read("skipped", filters=filters)
    except (OSError, ValueError) as error:
        raise StoreError(f"{root}: cannot read the results store ({error})") from None
    rows, skipped = _one_run_per_model(rows, skipped)
    if n_samples is not None and len(rows):
        rows = rows[rows["sample_index"] < n_samples].reset_index(drop=True)
        if len(skipped):
            skipped = skipped[skipped["sample_index"] < n_samples].reset_index(drop=True)
    coverage = _coverage(rows, skipped, models, conditions, n_samples, data_dir)
    present = tuple(m for m in models if len(rows) and (rows["model"] == m).any())
    return StudyResults(rows, skipped, coverage, present, tuple(conditions), n_samples)


def _one_run_per_model(rows: pd.DataFrame, skipped: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keep each model's registry template and refuse an ambiguous truncation length."""
    if rows.empty:
        return rows, skipped
    keep = pd.Series(True, index=rows.index)
    for model, group in rows.groupby("model"):
        template = _registry_template(model)
        if template is not None and (group["template"] == template).any():
            keep &= ~((rows["model"] == model) & (rows["template"] != template))
        elif group["template"].nunique() > 1:
            raise ReportError(f"model {model!r} has results under several templates {sorted(group['template'].unique())}")
        lengths = sorted(group["max_length"].unique())
        if len(lengths) > 1:
            raise ReportError(f"model {model!r} has results for several max_length values {lengths}: "
                              "pass the notebook parameter max_length")
    rows = rows[keep].reset_index(drop=True)
    if len(skipped):
        runs = rows[["model", "template", "max_length"]].drop_duplicates()
        skipped = skipped.merge(runs, on=["model", "template", "max_length"], how="inner")
    return rows, skipped


def _coverage(rows, skipped, models, conditions, n_samples, data_dir) -> pd.DataFrame:
    stored = rows.groupby(["model", "condition"])["sample_index"].nunique() if len(rows) else pd.Series(dtype=int)
    skips = skipped.groupby(["model", "condition"])["sample_index"].nunique() if len(skipped) else pd.Series(dtype=int)
    expected = {c: _expected_count(c, n_samples, data_dir) for c in conditions}
    table = []
    for model in models:
        for condition in conditions:
            n_stored = int(stored.get((model, condition), 0))
            n_skipped = int(skips.get((model, condition), 0))
            want = expected[condition]
            missing = (n_stored + n_skipped == 0) if want is None else max(0, want - n_stored - n_skipped)
            table.append({"model": model, "condition": condition, "expected": want, "stored": n_stored,
                          "skipped": n_skipped, "missing": int(missing)})
    return pd.DataFrame(table, columns=["model", "condition", "expected", "stored", "skipped", "missing"])


def coverage_message(results: StudyResults) -> str:
    """Markdown: how many samples each (model, condition) holds, what is missing or skipped."""
    cov = results.coverage
    if cov.empty:
        return "No models or conditions were requested."
    lines = []
    complete = cov[cov["missing"] == 0]
    counts = sorted(set(complete["stored"]))
    per = f"{counts[0]}" if len(counts) == 1 else f"{min(counts)} to {max(counts)}" if counts else "0"
    lines.append(f"{len(complete)} of {len(cov)} (model, condition) pairs are complete, with {per} samples each "
                 f"({int(cov['stored'].sum())} samples in all).")
    missing = cov[cov["missing"] > 0]
    if len(missing):
        listed = "; ".join(f"{r.model} {r.condition} ({r.stored} of {r.expected if r.expected is not None else '?'} stored)"
                           for r in missing.head(12).itertuples())
        more = f" and {len(missing) - 12} more" if len(missing) > 12 else ""
        lines.append(f"**Missing results:** {listed}{more}. Compute them with `python -m analysis run` (the same "
                     "profile) or `python -m analysis extract`; everything below uses only what is stored.")
    if len(results.skipped):
        reasons = results.skipped["reason"].map(lambda r: r.split(":")[0]).value_counts()
        text = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
        lines.append(f"{len(results.skipped)} samples were not computed and are left out: {text}.")
    else:
        lines.append("No sample was skipped.")
    return "\n\n".join(lines)


def require_rows(results: StudyResults) -> None:
    """Stop with a clear message when nothing at all is stored for the request."""
    if results.rows.empty:
        raise ReportError(
            f"the results store holds no rows for models {list(results.coverage['model'].unique())} and the "
            f"{len(results.conditions)} requested conditions; run `python -m analysis run --profile <name>` first"
        )


def offline_models(names: Sequence[str]) -> list[str]:
    """The offline (GGUF) models among ``names``."""
    return [n for n in names if n in OFFLINE_MODELS]


def figure_note(models: Sequence[str] | str, n_samples: int | None = None) -> str | None:
    """The line printed under every figure that shows an offline model (None otherwise)."""
    names = [models] if isinstance(models, str) else list(models)
    offline = offline_models(names)
    if not offline:
        return None
    note = OFFLINE_NOTE.format(names=", ".join(offline))
    return note + (f"; {n_samples} samples per condition" if n_samples else "")


def show_figures(figures: Iterator[tuple[str, Figure]]) -> None:
    """Display (title, figure) pairs in a notebook, closing each figure."""
    import matplotlib.pyplot as plt
    from IPython.display import Markdown, display

    shown = 0
    for title, fig in figures:
        display(Markdown(f"**{title}**"))
        display(fig)
        plt.close(fig)
        shown += 1
    if not shown:
        display(Markdown("No figure: the data read here have no condition for it."))


# Columns left out of a displayed table when they hold one value, which is named above it instead.
CONSTANT_COLUMNS = ("responses", "n_samples", "n", "n (correct / irrelevant)", "n_folds")
# Long text columns that wrap (every other column keeps each cell on one line).
WRAP_COLUMNS = ("numbers", "note", "claim")


def show_table(table: pd.DataFrame | None, empty: str = "No rows.", by: str | None = "model") -> None:
    """Display a table without its index, one table per value of ``by`` (a bold line names it),
    with single-valued bookkeeping columns moved into that line; or a line saying why there is none."""
    from IPython.display import Markdown, display

    if table is None or table.empty:
        if empty:
            display(Markdown(empty))
        return
    groups = list(table.groupby(by, sort=False)) if by in table.columns else [(None, table)]
    for key, part in groups:
        if key is not None:
            part = part.drop(columns=[by])
        constant = [c for c in CONSTANT_COLUMNS if c in part.columns and len(part) > 1 and part[c].nunique() == 1]
        notes = [f"{c.replace('_', ' ')}: {part[c].iloc[0]}" for c in constant]
        if key is not None or notes:
            display(Markdown((f"**{key}**" if key is not None else "") + (f" ({'; '.join(notes)})" if notes else "")))
        display(styled_table(part.drop(columns=constant)))


def styled_table(table: pd.DataFrame):
    """A table as the book shows it: no index, compact cells, text escaped for HTML (``<=`` stays text)."""
    styled = table.style.format(escape="html").hide(axis="index").set_table_styles(
        [{"selector": "td, th", "props": "white-space: nowrap; font-size: 0.85em; padding: 0.2em 0.6em;"}])
    wrapped = {c: [{"selector": "td", "props": "white-space: normal; min-width: 28em;"}]
               for c in WRAP_COLUMNS if c in table.columns}
    if wrapped:
        styled = styled.set_table_styles(wrapped, overwrite=False)
    return styled.set_table_attributes('style="margin-left: 0"')


def show_markdown(text: str) -> None:
    """Display generated Markdown text in a notebook."""
    from IPython.display import Markdown, display

    if text:
        display(Markdown(text))


# --------------------------------------------------------------------------- bootstrap of curves


def _stable_seed(seed: int, *names: str) -> list[int]:
    return [int(seed)] + [zlib.crc32(n.encode()) for n in names]


def _resample_counts(n: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n) counts of each row in a bootstrap resample of n rows."""
    draws = rng.integers(0, n, size=(n_resamples, n))
    offsets = (np.arange(n_resamples) * n)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=n_resamples * n).reshape(n_resamples, n).astype(float)


@dataclass
class CurveDraws:
    """Mean layer curves of one model with their bootstrap resamples, keyed (condition, proj, stat).

    ``estimate[key]`` is the sample-mean curve (L,), equal to ``metrics.layer_curves``;
    ``draws[key]`` holds the same mean under each resample of the instructions (R, L).
    """

    model: str
    n_layers: int
    n_resamples: int
    level: float
    conditions: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    estimate: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    draws: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    n_samples: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def has(self, condition: str, stat: str = "nuclear_norm") -> bool:
        return all((condition, p, stat) in self.estimate for p in PROJECTIONS)

    def stacked(self, condition: str, stat: str = "nuclear_norm") -> tuple[np.ndarray, np.ndarray]:
        """Curves of q, k, v, o stacked: estimate (4, L) and draws (4, R, L)."""
        keys = [(condition, p, stat) for p in PROJECTIONS]
        return np.stack([self.estimate[k] for k in keys]), np.stack([self.draws[k] for k in keys])

    def condition_key(self, dataset: str, setting: str, responses: str = metrics.CORRECT) -> str:
        return f"{dataset}/{setting}/{responses}"

    def datasets(self) -> list[str]:
        return sorted({d for d, _, _ in self.conditions.values()}, key=_dataset_order)

    def settings(self, dataset: str, responses: str = metrics.CORRECT, study_only: bool = True) -> list[str]:
        present = {s for d, s, r in self.conditions.values() if d == dataset and r == responses}
        order = STUDY_SETTINGS if study_only else STUDY_SETTINGS + CUT_SETTINGS
        return [s for s in order if s in present]

    def interval(self, estimate, draws) -> tuple[float, float, float]:
        """(estimate, low, high) of a scalar quantity from its value and its resampled values."""
        draws = np.asarray(draws, dtype=float)
        finite = draws[np.isfinite(draws)]
        if not np.isfinite(estimate) or finite.size < 0.5 * draws.size:
            return float(estimate), math.nan, math.nan
        alpha = (1 - self.level) / 2
        low, high = np.quantile(finite, [alpha, 1 - alpha])
        return float(estimate), float(low), float(high)


def _dataset_order(dataset: str) -> int:
    order = [*data.MATH_REASONING, *data.COMMONSENSE_REASONING, "wiki"]
    return order.index(dataset) if dataset in order else len(order)


def curve_draws(rows: pd.DataFrame, model: str, stats_: Sequence[str] = FIGURE_STATS, n_resamples: int = 1000,
                seed: int = 0, level: float = LEVEL) -> CurveDraws:
    """Bootstrap the mean curves of one model, resampling instruction ids once per dataset.

    A sample with a NaN in a projection's curve is dropped from that curve (``metrics.sample_matrix``);
    a resample's mean uses the resampled instructions that the curve holds.
    """
    model_rows = rows[rows["model"] == model]
    if model_rows.empty:
        raise ReportError(f"no rows for model {model!r}")
    n_layers = int(model_rows["n_layers"].iloc[0])
    result = CurveDraws(model, n_layers, n_resamples, level)
    for dataset, dataset_rows in model_rows.groupby("dataset", sort=True):
        ids = np.sort(dataset_rows["sample_index"].unique())
        position = {int(s): i for i, s in enumerate(ids)}
        counts = _resample_counts(len(ids), n_resamples, np.random.default_rng(_stable_seed(seed, model, dataset)))
        for condition, condition_rows in dataset_rows.groupby("condition", sort=True):
            first = condition_rows.iloc[0]
            result.conditions[condition] = (first["dataset"], first["setting"], first["responses"])
            for stat in stats_:
                for proj in PROJECTIONS:
                    matrix, kept, _ = metrics.sample_matrix(condition_rows, stat, proj)
                    if matrix.shape[0] == 0:
                        continue
                    weights = counts[:, [position[int(s)] for s in kept]]
                    total = weights.sum(axis=1, keepdims=True)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        resampled = (weights @ np.nan_to_num(matrix)) / total
                    resampled[:, np.isnan(matrix).all(axis=0)] = np.nan
                    key = (condition, proj, stat)
                    result.estimate[key] = matrix.mean(axis=0)
                    result.draws[key] = resampled
                    result.n_samples[key] = int(matrix.shape[0])
    return result


def all_curve_draws(results: StudyResults, stats_: Sequence[str] = FIGURE_STATS, n_resamples: int = 1000,
                    seed: int = 0) -> dict[str, CurveDraws]:
    """``curve_draws`` of every model present, keyed by model name."""
    return {m: curve_draws(results.rows, m, stats_, n_resamples, seed) for m in results.models}


def curves_and_bands(draws: dict[str, CurveDraws]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean curves (layer_curves layout) and per-layer bands (curve_band_table layout) for plotting."""
    curve_rows, band_rows = [], []
    for model, cd in draws.items():
        layers = np.arange(cd.n_layers)
        alpha = (1 - cd.level) / 2
        for (condition, proj, stat), estimate in cd.estimate.items():
            dataset, setting, responses = cd.conditions[condition]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # layers undefined for every resample
                low, high = np.nanquantile(cd.draws[(condition, proj, stat)], [alpha, 1 - alpha], axis=0)
            curve_rows.append(pd.DataFrame({"model": model, "dataset": dataset, "setting": setting,
                                            "responses": responses, "condition": condition, "proj": proj,
                                            "layer": layers, "value": estimate, "stat": stat,
                                            "n_samples": cd.n_samples[(condition, proj, stat)]}))
            band_rows.append(pd.DataFrame({"model": model, "condition": condition, "proj": proj, "layer": layers,
                                           "stat": stat, "low": low, "high": high}))
    curves = pd.concat(curve_rows, ignore_index=True) if curve_rows else pd.DataFrame()
    bands = pd.concat(band_rows, ignore_index=True) if band_rows else pd.DataFrame()
    return curves, bands


# --------------------------------------------------------------------------- formatting


def fmt(value: float) -> str:
    """A number with three significant digits ("nan" when undefined)."""
    if value is None or not np.isfinite(value):
        return "nan"
    return f"{value:.3g}"


def fmt_interval(estimate: float, low: float, high: float) -> str:
    """"est [low, high]", or just the estimate when the interval is undefined."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return fmt(estimate)
    return f"{fmt(estimate)} [{fmt(low)}, {fmt(high)}]"


def _label(setting: str) -> str:
    return plots.SETTING_LABELS.get(setting, setting)


def _scope(dataset: str, setting: str) -> str:
    """"aqua, Detailed CoT"; Wiki settings name their dataset already."""
    label = _label(setting)
    return label if label.lower().startswith(dataset.lower()) else f"{dataset}, {label}"


# --------------------------------------------------------------------------- figures


def paper_figures(draws: dict[str, CurveDraws], curves: pd.DataFrame, bands: pd.DataFrame,
                  n_samples: int | None = None) -> Iterator[tuple[str, Figure]]:
    """The paper's figure per (model, dataset): nuclear norm per layer for q, k, v, o, one panel
    per setting (correct responses), s1 ratio in the second row, with bootstrap bands."""
    for model, cd in draws.items():
        for dataset in cd.datasets():
            conditions = [cd.condition_key(dataset, s) for s in cd.settings(dataset)]
            if conditions:
                fig = plots.nuclear_norm_figure(curves, model, conditions, bands=bands,
                                                note=figure_note(model, n_samples))
                yield f"{model}, {dataset}", fig


def effective_rank_figures(draws: dict[str, CurveDraws], curves: pd.DataFrame, bands: pd.DataFrame,
                           n_samples: int | None = None) -> Iterator[tuple[str, Figure]]:
    """Effective-rank layer curves per (model, dataset), one panel per setting (correct responses)."""
    for model, cd in draws.items():
        for dataset in cd.datasets():
            conditions = [cd.condition_key(dataset, s) for s in cd.settings(dataset) if cd.has(cd.condition_key(dataset, s), "effective_rank")]
            if conditions:
                yield f"{model}, {dataset}", plots.effective_rank_figure(curves, model, conditions, bands=bands,
                                                                        note=figure_note(model, n_samples))


def length_control_figures(draws: dict[str, CurveDraws], curves: pd.DataFrame, bands: pd.DataFrame,
                           n_samples: int | None = None) -> Iterator[tuple[str, Figure]]:
    """Per (model, dataset) with a length-control condition: nuclear-norm curves of the reference
    settings next to Detailed CoT cut to their response lengths (correct responses)."""
    order = ("none", "detailed_cut_none", "simplified", "detailed_cut_simplified", "detailed")
    for model, cd in draws.items():
        for dataset in cd.datasets():
            present = cd.settings(dataset, study_only=False)
            if not set(present) & set(CUT_SETTINGS):
                continue
            conditions = [cd.condition_key(dataset, s) for s in order if s in present]
            yield f"{model}, {dataset}", plots.curve_grid(curves, model, conditions, ("nuclear_norm",), bands=bands,
                                                         note=figure_note(model, n_samples))


def pair_figures(draws: dict[str, CurveDraws], pairs: dict[str, str], curves: pd.DataFrame, bands: pd.DataFrame,
                 stat: str = "nuclear_norm", n_samples: int | None = None) -> Iterator[tuple[str, Figure]]:
    """Per (base, instruct) pair and dataset: one row of panels per model, one column per setting."""
    for instruct, base in pairs.items():
        if base not in draws or instruct not in draws:
            continue
        for dataset in draws[base].datasets():
            settings = [s for s in draws[base].settings(dataset) if s in draws[instruct].settings(dataset)]
            if not settings:
                continue
            conditions = [f"{dataset}/{s}/{metrics.CORRECT}" for s in settings]
            fig = plots.model_grid(curves, [base, instruct], conditions, stat, bands=bands,
                                   note=figure_note([base, instruct], n_samples))
            yield f"{base} vs {instruct}, {dataset}", fig


# --------------------------------------------------------------------------- MAD, RD, effective rank


def _segment_bounds(n_layers: int, segment: str) -> tuple[int, int]:
    return (0, n_layers) if segment == "all" else metrics.layer_splits(n_layers)[segment]


def _mad(curve: np.ndarray, segment: str) -> np.ndarray:
    lo, hi = _segment_bounds(curve.shape[-1], segment)
    return np.asarray(metrics.mean_absolute_difference(curve[..., lo:hi]))


def _segment_mean(curve: np.ndarray, segment: str) -> np.ndarray:
    lo, hi = _segment_bounds(curve.shape[-1], segment)
    return np.asarray(curve[..., lo:hi].mean(axis=-1))


def _segment_table(draws: dict[str, CurveDraws], stat: str, summary, responses: Sequence[str],
                   study_only: bool = True) -> pd.DataFrame:
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
                        row = {"model": model, "dataset": dataset, "setting": setting, "responses": response,
                               "proj": proj, "n_samples": cd.n_samples[key]}
                        for segment in SEGMENTS:
                            est, low, high = cd.interval(summary(cd.estimate[key], segment),
                                                         summary(cd.draws[key], segment))
                            row.update({segment: est, f"{segment}_low": low, f"{segment}_high": high})
                        out.append(row)
    columns = ["model", "dataset", "setting", "responses", "proj", "n_samples"]
    columns += [c for s in SEGMENTS for c in (s, f"{s}_low", f"{s}_high")]
    return pd.DataFrame(out, columns=columns)


def mad_interval_table(draws: dict[str, CurveDraws], stat: str = "nuclear_norm",
                       responses: Sequence[str] = (metrics.CORRECT,), study_only: bool = True) -> pd.DataFrame:
    """MAD of the mean curve over early/middle/late/all layers, with bootstrap intervals, per
    (model, dataset, setting, responses, projection)."""
    return _segment_table(draws, stat, _mad, responses, study_only)


def effective_rank_table(draws: dict[str, CurveDraws], responses: Sequence[str] = (metrics.CORRECT,)) -> pd.DataFrame:
    """Mean effective rank over early/middle/late/all layers, with bootstrap intervals."""
    return _segment_table(draws, "effective_rank", _segment_mean, responses)


def format_segment_table(table: pd.DataFrame) -> pd.DataFrame:
    """A MAD or effective-rank table with "est [low, high]" cells, for display."""
    out = table[["model", "dataset", "setting", "responses", "proj", "n_samples"]].copy()
    out["setting"] = out["setting"].map(_label)
    for segment in SEGMENTS:
        out[segment] = [fmt_interval(e, lo, hi) for e, lo, hi in
                        zip(table[segment], table[f"{segment}_low"], table[f"{segment}_high"])]
    return out.reset_index(drop=True)


def _finite_mean(values: np.ndarray) -> np.ndarray:
    """Mean over the last axis of the finite values (NaN where there are none)."""
    values = np.where(np.isfinite(values), values, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN
        return np.nanmean(values, axis=-1)


def _mean_abs_rd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean |RD| over layers of curves a (reference) and b, along the last axis."""
    return _finite_mean(np.abs(metrics.relative_difference(a, b)))


def _mean_rd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean signed RD over layers (positive: b larger)."""
    return _finite_mean(metrics.relative_difference(a, b))


def rd_pairs(cd: CurveDraws, stat: str = "nuclear_norm") -> Iterator[tuple[str, str, str]]:
    """(dataset, setting, proj) with both correct and irrelevant curves."""
    for dataset in cd.datasets():
        for setting in cd.settings(dataset, study_only=False):
            for proj in PROJECTIONS:
                a = (cd.condition_key(dataset, setting, metrics.CORRECT), proj, stat)
                b = (cd.condition_key(dataset, setting, metrics.IRRELEVANT), proj, stat)
                if a in cd.estimate and b in cd.estimate:
                    yield dataset, setting, proj


def rd_interval_table(draws: dict[str, CurveDraws], stat: str = "nuclear_norm", top: int = 3,
                      study_only: bool = True) -> pd.DataFrame:
    """RD of irrelevant against correct curves: mean |RD| and mean RD with intervals, top layers."""
    out = []
    for model, cd in draws.items():
        for dataset, setting, proj in rd_pairs(cd, stat):
            if study_only and setting in CUT_SETTINGS:
                continue
            a = (cd.condition_key(dataset, setting, metrics.CORRECT), proj, stat)
            b = (cd.condition_key(dataset, setting, metrics.IRRELEVANT), proj, stat)
            summary = metrics.rd_summary(cd.estimate[a], cd.estimate[b], top=top)
            abs_ = cd.interval(summary["mean_abs_rd"], _mean_abs_rd(cd.draws[a], cd.draws[b]))
            signed = cd.interval(summary["mean_rd"], _mean_rd(cd.draws[a], cd.draws[b]))
            out.append({"model": model, "dataset": dataset, "setting": setting, "proj": proj,
                        "mean_abs_rd": abs_[0], "mean_abs_rd_low": abs_[1], "mean_abs_rd_high": abs_[2],
                        "mean_rd": signed[0], "mean_rd_low": signed[1], "mean_rd_high": signed[2],
                        "top_layers": ", ".join(str(x) for x in summary["top_layers"]),
                        "n_correct": cd.n_samples[a], "n_irrelevant": cd.n_samples[b]})
    columns = ["model", "dataset", "setting", "proj", "mean_abs_rd", "mean_abs_rd_low", "mean_abs_rd_high", "mean_rd",
               "mean_rd_low", "mean_rd_high", "top_layers", "n_correct", "n_irrelevant"]
    return pd.DataFrame(out, columns=columns)


def format_rd_table(table: pd.DataFrame) -> pd.DataFrame:
    """The RD table with "est [low, high]" cells, for display."""
    out = table[["model", "dataset", "setting", "proj"]].copy()
    out["setting"] = out["setting"].map(_label)
    out["mean |RD|"] = [fmt_interval(*v) for v in zip(table["mean_abs_rd"], table["mean_abs_rd_low"], table["mean_abs_rd_high"])]
    out["mean RD"] = [fmt_interval(*v) for v in zip(table["mean_rd"], table["mean_rd_low"], table["mean_rd_high"])]
    out["top layers (|RD|)"] = table["top_layers"]
    out["n (correct / irrelevant)"] = [f"{a} / {b}" for a, b in zip(table["n_correct"], table["n_irrelevant"])]
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------- findings with intervals


def verdict(parts: Sequence[tuple[float, float]]) -> str:
    """Verdict of a claim made of parts "quantity > 0", each given as its interval (low, high).

    "does not hold" when an interval lies below zero, "holds" when every interval lies above
    zero, otherwise (an interval includes zero, or is undefined) "not resolved".
    """
    if any(np.isfinite(high) and high < 0 for _, high in parts):
        return FAILS
    if parts and all(np.isfinite(low) and low > 0 for low, _ in parts):
        return HOLDS
    return UNRESOLVED


def _proj_mean(cd: CurveDraws, condition: str, fn, stat: str = "nuclear_norm") -> tuple[float, np.ndarray]:
    """A per-curve quantity averaged over q, k, v, o: (estimate, draws (R,))."""
    est, dr = cd.stacked(condition, stat)
    return float(np.mean(fn(est))), np.mean(fn(dr), axis=0)


def _finding(check: str, claim: str, model: str, scope: str, numbers: str, parts, n: int) -> dict:
    decided = verdict(parts) if n >= MIN_VERDICT_SAMPLES else UNRESOLVED
    return {"check": check, "claim": claim, "model": model, "scope": scope, "numbers": numbers,
            "verdict": decided, "n_samples": n}


def _reasoning_datasets(cd: CurveDraws) -> list[str]:
    return [d for d in cd.datasets() if d != metrics.WIKI_DATASET]


def _f1(cd: CurveDraws) -> list[dict]:
    rows = []
    for dataset in _reasoning_datasets(cd):
        none, det = cd.condition_key(dataset, "none"), cd.condition_key(dataset, "detailed")
        if not (cd.has(none) and cd.has(det)):
            continue
        parts, texts = [], []
        for segment in ("early", "all"):
            a = _proj_mean(cd, none, lambda c: _segment_mean(c, segment))
            b = _proj_mean(cd, det, lambda c: _segment_mean(c, segment))
            ratio = cd.interval(a[0] / b[0], a[1] / b[1])
            parts.append((ratio[1] - 1, ratio[2] - 1))
            texts.append(f"{segment} layers: none / detailed = {fmt_interval(*ratio)}")
        n = min(cd.n_samples[(none, "q", "nuclear_norm")], cd.n_samples[(det, "q", "nuclear_norm")])
        rows.append(_finding("F1", metrics.F1_CLAIM, cd.model, dataset, "; ".join(texts), parts, n))
    return rows


def _f2(cd: CurveDraws) -> list[dict]:
    rows = []
    for dataset in _reasoning_datasets(cd):
        settings = [s for s in data.COT_SETTINGS if cd.has(cd.condition_key(dataset, s))]
        if len(settings) < 2:
            continue
        parts, texts = [], []
        for proj in PROJECTIONS:
            keys = [(cd.condition_key(dataset, s), proj, "nuclear_norm") for s in settings]
            mads = [(_mad(cd.estimate[k], "all"), _mad(cd.draws[k], "all")) for k in keys]
            texts.append(f"{proj}: " + " > ".join(fmt_interval(*cd.interval(e, d)) for e, d in mads))
            for (e1, d1), (e2, d2) in zip(mads, mads[1:]):
                _, low, high = cd.interval(e1 - e2, d1 - d2)
                parts.append((low, high))
        n = min(cd.n_samples[(cd.condition_key(dataset, s), "q", "nuclear_norm")] for s in settings)
        numbers = "all-layer MAD " + " / ".join(settings) + ": " + "; ".join(texts)
        rows.append(_finding("F2", metrics.F2_CLAIM, cd.model, dataset, numbers, parts, n))
    return rows


def _rd_quantity(cd: CurveDraws, dataset: str, setting: str, fn) -> tuple[float, np.ndarray] | None:
    a = cd.condition_key(dataset, setting, metrics.CORRECT)
    b = cd.condition_key(dataset, setting, metrics.IRRELEVANT)
    if not (cd.has(a) and cd.has(b)):
        return None
    (ea, da), (eb, db) = cd.stacked(a), cd.stacked(b)
    return float(np.mean(fn(ea, eb))), np.mean(fn(da, db), axis=0)


def _rd_count(cd: CurveDraws, dataset: str, setting: str) -> int:
    """Samples behind an RD: the smaller of the correct and irrelevant curves' counts."""
    return min(cd.n_samples[(cd.condition_key(dataset, setting, r), p, "nuclear_norm")]
               for r in (metrics.CORRECT, metrics.IRRELEVANT) for p in PROJECTIONS)


def _f3(cd: CurveDraws) -> list[dict]:
    rows = []
    for dataset in _reasoning_datasets(cd):
        none = _rd_quantity(cd, dataset, "none", _mean_abs_rd)
        det = _rd_quantity(cd, dataset, "detailed", _mean_abs_rd)
        signed = _rd_quantity(cd, dataset, "detailed", _mean_rd)
        if none is None or det is None:
            continue
        gap = cd.interval(det[0] - none[0], det[1] - none[1])
        sign = cd.interval(*signed)
        numbers = (f"mean |RD| none {fmt_interval(*cd.interval(*none))}, detailed {fmt_interval(*cd.interval(*det))}, "
                   f"difference {fmt_interval(*gap)}; mean RD detailed {fmt_interval(*sign)}")
        n = min(_rd_count(cd, dataset, "none"), _rd_count(cd, dataset, "detailed"))
        rows.append(_finding("F3", metrics.F3_CLAIM, cd.model, dataset, numbers, [gap[1:], sign[1:]], n))
    return rows


def model_pairs(models: Sequence[str], templates: dict[str, str]) -> dict[str, str]:
    """instruct -> base: the paper's matched pairs where both are present, the rest by
    ``metrics.default_model_pairs``."""
    pairs = {ins: base for base, ins in PAPER_PAIRS if base in models and ins in models}
    rest = {m: t for m, t in templates.items() if m in models and m not in pairs and m not in pairs.values()}
    if any(t == "base" for t in rest.values()) and any(t == "instruct" for t in rest.values()):
        pairs.update(metrics.default_model_pairs(rest))
    elif any(t == "instruct" for t in rest.values()):
        bases = {m: t for m, t in templates.items() if t == "base" and m in models}
        pairs.update({k: v for k, v in metrics.default_model_pairs({**bases, **rest}).items() if k in rest})
    return pairs


def _f4(draws: dict[str, CurveDraws], pairs: dict[str, str]) -> list[dict]:
    rows = []
    for instruct, base in pairs.items():
        if instruct not in draws or base not in draws:
            continue
        ci, cb = draws[instruct], draws[base]
        per_dataset, counts = {}, {}
        for dataset in _reasoning_datasets(ci):
            qi = _rd_quantity(ci, dataset, "detailed", _mean_abs_rd)
            qb = _rd_quantity(cb, dataset, "detailed", _mean_abs_rd)
            if qi is not None and qb is not None:
                per_dataset[dataset] = (qi, qb)
                counts[dataset] = min(_rd_count(ci, dataset, "detailed"), _rd_count(cb, dataset, "detailed"))
        scopes = [(d, [d]) for d in per_dataset] + ([("all", list(per_dataset))] if per_dataset else [])
        for scope, names in scopes:
            ins = (np.mean([per_dataset[d][0][0] for d in names]), np.mean([per_dataset[d][0][1] for d in names], axis=0))
            bas = (np.mean([per_dataset[d][1][0] for d in names]), np.mean([per_dataset[d][1][1] for d in names], axis=0))
            gap = ci.interval(bas[0] - ins[0], bas[1] - ins[1])
            numbers = (f"mean |RD| detailed: instruct {fmt_interval(*ci.interval(*ins))} vs base ({base}) "
                       f"{fmt_interval(*cb.interval(*bas))}; base minus instruct {fmt_interval(*gap)}")
            rows.append(_finding("F4", metrics.F4_CLAIM, instruct, scope, numbers, [gap[1:]],
                                 min(counts[d] for d in names)))
    return rows


def _f5(cd: CurveDraws, reference: CurveDraws | None) -> list[dict]:
    wiki = metrics.WIKI_DATASET
    short, long_ = cd.condition_key(wiki, "len100"), cd.condition_key(wiki, "len1000")
    if not (cd.has(short) and cd.has(long_)):
        return []
    ratio = (np.mean([_mad(cd.estimate[(long_, p, "nuclear_norm")], "all") / _mad(cd.estimate[(short, p, "nuclear_norm")], "all")
                      for p in PROJECTIONS]),
             np.mean([_mad(cd.draws[(long_, p, "nuclear_norm")], "all") / _mad(cd.draws[(short, p, "nuclear_norm")], "all")
                      for p in PROJECTIONS], axis=0))
    wiki_rds = [q for s in cd.settings(wiki) if (q := _rd_quantity(cd, wiki, s, _mean_abs_rd)) is not None]
    ref = reference if reference is not None else cd
    mad_bars, rd_bars = [], []
    for dataset in _reasoning_datasets(ref):
        none, det = ref.condition_key(dataset, "none"), ref.condition_key(dataset, "detailed")
        if ref.has(none) and ref.has(det):
            mad_bars.append((np.mean([_mad(ref.estimate[(det, p, "nuclear_norm")], "all") / _mad(ref.estimate[(none, p, "nuclear_norm")], "all") for p in PROJECTIONS]),
                             np.mean([_mad(ref.draws[(det, p, "nuclear_norm")], "all") / _mad(ref.draws[(none, p, "nuclear_norm")], "all") for p in PROJECTIONS], axis=0)))
        if (q := _rd_quantity(ref, dataset, "detailed", _mean_abs_rd)) is not None:
            rd_bars.append(q)
    mad_bar = ((np.mean([b[0] for b in mad_bars]), np.mean([b[1] for b in mad_bars], axis=0)) if mad_bars
               else (metrics.WIKI_FALLBACK_MAD_RATIO, np.full(cd.n_resamples, metrics.WIKI_FALLBACK_MAD_RATIO)))
    rd_bar = ((np.mean([b[0] for b in rd_bars]), np.mean([b[1] for b in rd_bars], axis=0)) if rd_bars
              else (metrics.WIKI_FALLBACK_RD, np.full(cd.n_resamples, metrics.WIKI_FALLBACK_RD)))
    parts = [cd.interval(ratio[0] - mad_bar[0], ratio[1] - mad_bar[1])[1:]]
    rd_text = "mean |RD| wiki not computed (no irrelevant responses)"
    if wiki_rds:
        wiki_rd = (np.mean([q[0] for q in wiki_rds]), np.mean([q[1] for q in wiki_rds], axis=0))
        parts.append(cd.interval(rd_bar[0] - wiki_rd[0], rd_bar[1] - wiki_rd[1])[1:])
        rd_text = (f"mean |RD| wiki {fmt_interval(*cd.interval(*wiki_rd))} vs reasoning detailed "
                   f"{fmt_interval(*cd.interval(*rd_bar)) if rd_bars else fmt(rd_bar[0]) + ' (fixed bar, no reasoning data)'}")
    else:
        parts.append((math.nan, math.nan))
    numbers = (f"MAD len1000 / len100 {fmt_interval(*cd.interval(*ratio))} vs reasoning detailed / none "
               f"{fmt_interval(*cd.interval(*mad_bar)) if mad_bars else fmt(mad_bar[0]) + ' (fixed bar, no reasoning data)'}; "
               + rd_text)
    n = cd.n_samples[(long_, "q", "nuclear_norm")]
    return [_finding("F5", metrics.F5_CLAIM, cd.model, wiki, numbers, parts, n)]


FINDING_COLUMNS = ["check", "claim", "model", "scope", "numbers", "verdict", "point_verdict", "n_samples"]


def findings_table(draws: dict[str, CurveDraws], rows: pd.DataFrame, checks: Sequence[str] = ("F1", "F2", "F3", "F4", "F5"),
                   reference: dict[str, CurveDraws] | None = None, pairs: dict[str, str] | None = None) -> pd.DataFrame:
    """The paper's checks with bootstrap intervals: one row per (check, model, scope).

    ``verdict`` uses the intervals (see ``verdict``); ``point_verdict`` is what the point
    estimates alone say (``metrics.findings``). ``reference``: curves of reasoning data that
    F5 compares the Wiki numbers with, when ``draws`` holds Wiki data only.
    """
    templates = rows.groupby("model")["template"].first().to_dict() if len(rows) else {}
    pairs = model_pairs(list(draws), templates) if pairs is None else pairs
    out = []
    for model, cd in draws.items():
        if "F1" in checks:
            out += _f1(cd)
        if "F2" in checks:
            out += _f2(cd)
        if "F3" in checks:
            out += _f3(cd)
        if "F5" in checks:
            out += _f5(cd, (reference or {}).get(model))
    if "F4" in checks:
        out += _f4(draws, pairs)
    table = pd.DataFrame(out, columns=[c for c in FINDING_COLUMNS if c != "point_verdict"])
    point = metrics.findings(rows, pairs=pairs) if len(rows) else pd.DataFrame(columns=metrics.FINDING_COLUMNS)
    labels = {True: HOLDS, False: FAILS, None: "undecided"}
    point = point.assign(point_verdict=point["holds"].map(lambda h: labels.get(h, "undecided")))
    if "F5" in checks and reference:
        point = point[point["check"] != "F5"]  # its bar needs the reference data, which `rows` lacks
    table = table.merge(point[["check", "model", "scope", "point_verdict"]], on=["check", "model", "scope"], how="left")
    table["point_verdict"] = table["point_verdict"].fillna("see verdict")
    return table[FINDING_COLUMNS].sort_values(["check", "model", "scope"], ignore_index=True, kind="stable")


def finding_sentence(row) -> str:
    """One sentence for one finding row, stating its verdict and the numbers behind it."""
    n = int(row["n_samples"])
    reason = {HOLDS: "every interval lies on the claim's side",
              FAILS: "an interval lies on the other side",
              UNRESOLVED: "an interval includes no difference"}[row["verdict"]]
    if n < MIN_VERDICT_SAMPLES:
        reason = f"fewer than {MIN_VERDICT_SAMPLES} samples per condition, too few for an interval"
    reason += f", n = {n}"
    return (f"**{row['check']}** {row['verdict']} for {row['model']} on {row['scope']} ({reason}): "
            f"{row['numbers']}.")


def findings_summary(table: pd.DataFrame) -> str:
    """Markdown: per check, how many (model, scope) cases hold, fail or stay unresolved."""
    if table.empty:
        return "The data read here cover none of the paper's checks."
    lines = []
    for check, group in table.groupby("check", sort=True):
        counts = group["verdict"].value_counts()
        parts = [f"{int(counts.get(v, 0))} {v}" for v in (HOLDS, FAILS, UNRESOLVED)]
        cases = "1 case" if len(group) == 1 else f"{len(group)} cases"
        lines.append(f"- **{check}**: {cases}: " + ", ".join(parts) + ".")
    level = int(round(100 * LEVEL))
    few = int((table["n_samples"] < MIN_VERDICT_SAMPLES).sum())
    caveat = (f" {few} cases rest on fewer than {MIN_VERDICT_SAMPLES} samples per condition and get no verdict."
              if few else "")
    return (f"Verdicts use {level}% bootstrap intervals over instructions: a claim holds only when the intervals "
            f"support it.{caveat}\n\n" + "\n".join(lines))


def verdict_matrix(table: pd.DataFrame) -> pd.DataFrame:
    """check x model: counts "holds / does not hold / not resolved" over scopes."""
    if table.empty:
        return pd.DataFrame()

    def cell(verdicts: pd.Series) -> str:
        counts = verdicts.value_counts()
        return " / ".join(str(int(counts.get(v, 0))) for v in (HOLDS, FAILS, UNRESOLVED))

    return table.pivot_table(index="check", columns="model", values="verdict", aggfunc=cell).fillna("")


def format_findings(table: pd.DataFrame) -> pd.DataFrame:
    """The findings table for display (claims are listed once, above it)."""
    return table[["check", "model", "scope", "verdict", "point_verdict", "numbers"]].rename(
        columns={"point_verdict": "point estimate alone"})


def claims_text(table: pd.DataFrame) -> str:
    """Markdown list of the claims checked in ``table``."""
    if table.empty:
        return ""
    claims = table.drop_duplicates("check")[["check", "claim"]]
    return "\n".join(f"- **{r.check}**: {r.claim}." for r in claims.itertuples())


# --------------------------------------------------------------------------- beyond the paper


def separability_table(rows: pd.DataFrame, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """stats.separability for every (model, dataset, study setting) holding both response types."""
    out = []
    study = rows[rows["setting"].isin(STUDY_SETTINGS)]
    for (model, dataset, setting), group in study.groupby(["model", "dataset", "setting"], sort=False):
        if group["responses"].nunique() < 2:
            continue
        result = stats.separability(group, model, dataset, setting, n_resamples=n_resamples, seed=seed)
        low = result["auroc_low"]
        if not np.isfinite(low):
            result["verdict"] = "not computed"
        elif result["n_samples"] < MIN_VERDICT_SAMPLES:
            result["verdict"] = "too few samples"
        else:
            result["verdict"] = "separable" if low > 0.5 else "not shown"
        out.append(result)
    table = pd.DataFrame(out)
    if table.empty:
        return table
    table["_d"] = table["dataset"].map(_dataset_order)
    table["_s"] = table["setting"].map(lambda s: STUDY_SETTINGS.index(s))
    return table.sort_values(["model", "_d", "_s"]).drop(columns=["_d", "_s"]).reset_index(drop=True)


def format_separability(table: pd.DataFrame) -> pd.DataFrame:
    """The separability table for display."""
    if table.empty:
        return table
    out = table[["model", "dataset", "setting", "n_samples", "n_folds"]].copy()
    out["setting"] = out["setting"].map(_label)
    out["AUROC (out of fold)"] = [fmt_interval(*v) for v in zip(table["auroc"], table["auroc_low"], table["auroc_high"])]
    out["best single feature"] = [f"{f} ({fmt(a)})" if f else "" for f, a in zip(table["best_feature"], table["best_feature_auroc"])]
    out["verdict"] = table["verdict"]
    out["note"] = table["reason"].fillna("")
    return out


def separability_sentence(table: pd.DataFrame) -> str:
    """Markdown: in how many settings one sample's gradients tell correct from irrelevant."""
    if table.empty:
        return "No setting holds both correct and irrelevant responses, so separability is not computed."
    lines = []
    for model, group in table.groupby("model", sort=False):
        judged = group[group["verdict"].isin(["separable", "not shown"])]
        separable = judged[judged["verdict"] == "separable"]
        if len(judged):
            text = (f"- {model}: correct and irrelevant responses are separable from one sample's layer-wise nuclear "
                    f"norms (lower end of the AUROC interval above 0.5) in {len(separable)} of {len(judged)} settings")
        else:
            text = f"- {model}: no setting has enough instructions to judge"
        if len(separable):
            best = separable.sort_values("auroc", ascending=False).iloc[0]
            text += (f"; the clearest is {_scope(best['dataset'], best['setting'])} with AUROC "
                     f"{fmt_interval(best['auroc'], best['auroc_low'], best['auroc_high'])}")
        few = int((group["verdict"] == "too few samples").sum())
        if few:
            text += f"; {few} settings have fewer than {MIN_VERDICT_SAMPLES} instructions, too few to judge"
        not_computed = group[group["verdict"] == "not computed"]
        if len(not_computed):
            text += f"; {len(not_computed)} settings could not be computed ({not_computed['reason'].dropna().iloc[0]})"
        lines.append(text + ".")
    return "\n".join(lines)


def _per_sample(rows: pd.DataFrame) -> pd.DataFrame:
    return stats.per_sample_means(rows, "nuclear_norm")


def length_control_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Paired Wilcoxon tests of per-sample mean nuclear norms (over layers and q, k, v, o).

    For every Detailed CoT response cut to the token count of the same instruction's No-CoT
    (or Simplified-CoT) response: cut vs that reference (is there a gap at equal length?) and
    cut vs the full Detailed CoT response (what does the cut change?).
    """
    cut_rows = rows[rows["setting"].isin(CUT_SETTINGS)]
    if cut_rows.empty:
        return pd.DataFrame()
    per = _per_sample(rows[rows["setting"].isin((*CUT_SETTINGS, *data.COT_SETTINGS))])
    out = []
    keyed = per.set_index(["model", "dataset", "setting", "responses", "sample_index"])
    for (model, dataset, responses, cut), group in per[per["setting"].isin(CUT_SETTINGS)].groupby(
            ["model", "dataset", "responses", "setting"], sort=True):
        for other in (data.LENGTH_CONTROL_SETTINGS[cut], "detailed"):
            try:
                ref = keyed.loc[(model, dataset, other, responses)]
            except KeyError:
                continue
            joined = group.merge(ref.reset_index(), on="sample_index", how="inner", suffixes=("", "_ref"))
            test = stats.paired_test(joined["value"].to_numpy(), joined["value_ref"].to_numpy())
            out.append({"model": model, "dataset": dataset, "responses": responses, "cut": cut, "compared_with": other,
                        "n": test["n"], "tokens_cut": float(joined["n_response_tokens"].mean()),
                        "tokens_other": float(joined["n_response_tokens_ref"].mean()),
                        "median_difference": test["median_difference"], "rank_biserial": test["rank_biserial"],
                        "p_value": test["p_value"], "reason": test["reason"]})
    return pd.DataFrame(out)


def _direction(table_row) -> str:
    p, d = table_row["p_value"], table_row["median_difference"]
    if not np.isfinite(p) or p >= SIGNIFICANCE:
        return "no detectable difference"
    return "larger" if d > 0 else "smaller"


def format_length_control(table: pd.DataFrame) -> pd.DataFrame:
    """The length-control table for display."""
    if table.empty:
        return table
    out = table[["model", "dataset", "responses", "n"]].copy()
    out["comparison"] = [f"{_label(c)} vs {_label(o)}" for c, o in zip(table["cut"], table["compared_with"])]
    out["mean response tokens"] = [f"{a:.0f} vs {b:.0f}" for a, b in zip(table["tokens_cut"], table["tokens_other"])]
    out["median difference"] = table["median_difference"].map(fmt)
    out["rank-biserial"] = table["rank_biserial"].map(fmt)
    out["Wilcoxon p"] = table["p_value"].map(fmt)
    out["cut is"] = [_direction(r) for _, r in table.iterrows()]
    return out[["model", "dataset", "responses", "comparison", "n", "mean response tokens", "median difference",
                "rank-biserial", "Wilcoxon p", "cut is"]]


def length_control_sentence(table: pd.DataFrame) -> str:
    """Markdown: at equal response length, does Detailed CoT still differ from the faster setting?"""
    if table.empty:
        return ("These data hold no length-control condition (Detailed CoT cut to a shorter response), so the "
                "length question is answered by the regression below only.")
    lines = []
    equal = table[table["compared_with"] != "detailed"]
    for row in equal.itertuples():
        direction = _direction(row._asdict())
        if row.n < MIN_WILCOXON_PAIRS:
            what = (f"Detailed CoT cut to the {_label(row.compared_with)} length against {_label(row.compared_with)}: "
                    f"{row.n} pairs, too few for a two-sided Wilcoxon test to reach p < {SIGNIFICANCE} "
                    f"(median difference {fmt(row.median_difference)})")
        elif direction == "no detectable difference":
            what = (f"Detailed CoT cut to the {_label(row.compared_with)} length shows no detectable difference from "
                    f"{_label(row.compared_with)} (Wilcoxon p = {fmt(row.p_value)}, n = {row.n})")
        else:
            what = (f"Detailed CoT cut to the {_label(row.compared_with)} length gives {direction} per-sample nuclear "
                    f"norms than {_label(row.compared_with)} at equal length (median difference "
                    f"{fmt(row.median_difference)}, rank-biserial {fmt(row.rank_biserial)}, p = {fmt(row.p_value)}, "
                    f"n = {row.n}): the gap is not only response length")
        lines.append(f"- {row.model}, {row.dataset} ({row.responses}): {what}.")
    resolved = sum(_direction(r) != "no detectable difference" for _, r in equal.iterrows())
    head = (f"{resolved} of {len(equal)} equal-length comparisons show a difference at p < {SIGNIFICANCE} "
            "(two-sided, paired by instruction).")
    return head + "\n\n" + "\n".join(lines)


def length_regression_table(rows: pd.DataFrame) -> pd.DataFrame:
    """stats.length_regression over the study settings (length-control views left out)."""
    study = rows[rows["setting"].isin(STUDY_SETTINGS)]
    if study.empty:
        return pd.DataFrame()
    return stats.length_regression(study, "nuclear_norm")


def format_length_regression(table: pd.DataFrame) -> pd.DataFrame:
    """The length regression for display: slopes, setting gaps with and without length, R^2."""
    if table.empty:
        return table
    out = table[["model", "dataset", "responses", "n_samples", "reference_setting", "setting"]].copy()
    for column in ("slope_length_only", "r2_length_only", "coef_setting_only", "coef_with_length",
                   "slope_with_setting", "r2_with_setting"):
        out[column] = table[column].map(fmt)
    out["note"] = table["reason"].fillna("")
    return out


def length_regression_sentence(table: pd.DataFrame) -> str:
    """Markdown: how much of each setting gap (log nuclear norm) remains once length is in the model."""
    if table.empty:
        return "No data for the length regression."
    lines = []
    for row in table[table["responses"] == metrics.CORRECT].itertuples():
        if row.setting is None or not (np.isfinite(row.coef_setting_only) and np.isfinite(row.coef_with_length)):
            lines.append(f"- {row.model}, {row.dataset}: not identified ({row.reason or 'one setting only'}).")
            continue
        if row.n_samples < 2 * MIN_VERDICT_SAMPLES:
            lines.append(f"- {row.model}, {row.dataset}: {row.n_samples} samples, too few for a regression on length "
                         "and setting.")
            continue
        before, after = row.coef_setting_only, row.coef_with_length
        share = 1 - abs(after) / abs(before) if before != 0 else math.nan
        if not np.isfinite(share):
            change = "there was no gap to explain"
        else:
            change = f"its size {'shrinks' if share > 0 else 'grows'} by {fmt(100 * abs(share))}%"
            if np.sign(after) != np.sign(before) and share < 0.9:
                change += " and it changes sign"
        lines.append(f"- {row.model}, {row.dataset}: the {_label(row.setting)} vs {_label(row.reference_setting)} gap "
                     f"in log nuclear norm is {fmt(before)} without length and {fmt(after)} with it ({change}); "
                     f"length alone explains R² = {fmt(row.r2_length_only)} (slope {fmt(row.slope_length_only)}, "
                     f"n = {row.n_samples}).")
    return ("Correlational: length and content were not randomised.\n\n" + "\n".join(lines)) if lines else \
        "No correct-response groups for the length regression."


def effective_rank_sentence(draws: dict[str, CurveDraws]) -> str:
    """Markdown: is the mean effective rank (all layers, q/k/v/o averaged) higher under the fast
    setting than under the slow one, per model and dataset, with an interval on the difference."""
    lines = []
    for model, cd in draws.items():
        for dataset in cd.datasets():
            settings = cd.settings(dataset)
            if len(settings) < 2:
                continue
            fast, slow = settings[0], settings[-1]
            a, b = cd.condition_key(dataset, fast), cd.condition_key(dataset, slow)
            if not (cd.has(a, "effective_rank") and cd.has(b, "effective_rank")):
                continue
            qa = _proj_mean(cd, a, lambda c: _segment_mean(c, "all"), "effective_rank")
            qb = _proj_mean(cd, b, lambda c: _segment_mean(c, "all"), "effective_rank")
            diff = cd.interval(qa[0] - qb[0], qa[1] - qb[1])
            n = min(cd.n_samples[(a, "q", "effective_rank")], cd.n_samples[(b, "q", "effective_rank")])
            numbers = f"difference {fmt_interval(*diff)}, n = {n}"
            if n < MIN_VERDICT_SAMPLES:
                lines.append(f"- {model}, {dataset}: mean effective rank {fmt(qa[0])} under {_label(fast)} and "
                             f"{fmt(qb[0])} under {_label(slow)} ({numbers}): too few samples to tell them apart.")
                continue
            word = {HOLDS: "higher than", FAILS: "lower than",
                    UNRESOLVED: "not distinguishable from"}[verdict([diff[1:]])]
            lines.append(f"- {model}, {dataset}: the mean effective rank under {_label(fast)} ({fmt(qa[0])}) is {word} "
                         f"that under {_label(slow)} ({fmt(qb[0])}); {numbers}.")
    return "\n".join(lines) if lines else "No dataset has two settings with effective ranks."


# --------------------------------------------------------------------------- pre-trained vs instruct


def pairs_table(pairs: dict[str, str], templates: dict[str, str], n_layers: dict[str, int]) -> pd.DataFrame:
    """The (base, instruct) pairs compared, with whether each is a matched pair of the paper."""
    matched = {(b, i) for b, i in PAPER_PAIRS}
    out = []
    for instruct, base in pairs.items():
        out.append({"base model": base, "instruct model": instruct, "layers (base / instruct)":
                    f"{n_layers.get(base, '?')} / {n_layers.get(instruct, '?')}",
                    "matched pair": "yes" if (base, instruct) in matched else "no: different families"})
    return pd.DataFrame(out)


def confound_statement(pairs: dict[str, str]) -> str:
    """Markdown: whether the base/instruct comparison is between matched models, and what that means."""
    matched = {(b, i) for b, i in PAPER_PAIRS}
    unmatched = [(base, ins) for ins, base in pairs.items() if (base, ins) not in matched]
    paper = ", ".join(f"{b} / {i}" for b, i in PAPER_PAIRS)
    if not pairs:
        return ("These results hold no base and instruct model to compare. The paper profile runs the matched "
                f"pairs of `models.PAPER_PAIRS`: {paper}.")
    if not unmatched:
        return ("Each instruct model here is compared with its own pre-trained version (the matched pairs of "
                "`models.PAPER_PAIRS`), so differences come from instruction tuning.")
    listed = "; ".join(f"{b} (pre-trained) with {i} (instruct)" for b, i in unmatched)
    return (f"**This comparison is confounded.** It pairs {listed}: these come from different model families, "
            "so any difference mixes instruction tuning with differences in architecture, depth, tokenizer and "
            "training data. Read it as a demonstration of the analysis, not as evidence about instruction tuning. "
            f"The paper profile (`--profile paper`) runs the matched pairs of `models.PAPER_PAIRS`: {paper}.")


def pair_comparison_table(draws: dict[str, CurveDraws], pairs: dict[str, str]) -> pd.DataFrame:
    """Per pair, dataset and setting: all-layer MAD (q/k/v/o mean) and mean |RD| of both models."""
    out = []
    for instruct, base in pairs.items():
        if instruct not in draws or base not in draws:
            continue
        cb, ci = draws[base], draws[instruct]
        for dataset in cb.datasets():
            for setting in cb.settings(dataset):
                key = cb.condition_key(dataset, setting)
                if not (cb.has(key) and ci.has(key)):
                    continue
                row = {"base": base, "instruct": instruct, "dataset": dataset, "setting": _label(setting)}
                for label, cd in (("base", cb), ("instruct", ci)):
                    mad = _proj_mean(cd, key, lambda c: _mad(c, "all"))
                    row[f"MAD {label}"] = fmt_interval(*cd.interval(*mad))
                    rd = _rd_quantity(cd, dataset, setting, _mean_abs_rd)
                    row[f"mean |RD| {label}"] = fmt_interval(*cd.interval(*rd)) if rd else ""
                out.append(row)
    return pd.DataFrame(out)


def f5_reference_conditions() -> list[str]:
    """Reasoning conditions (No and Detailed CoT, both response types) that F5 compares Wiki with."""
    reasoning = (*data.MATH_REASONING, *data.COMMONSENSE_REASONING)
    return [c.key for c in data.conditions_matching(datasets=reasoning, settings=("none", "detailed"))]


def f5_reference(results_dir, models: Sequence[str], max_length: int | None = None, n_samples: int | None = None,
                 n_resamples: int = 1000, seed: int = 0) -> dict[str, CurveDraws]:
    """Curves of whatever reasoning No/Detailed CoT data the store holds for these models (for F5)."""
    reference = load_results(results_dir, models, f5_reference_conditions(), max_length, n_samples)
    return all_curve_draws(reference, ("nuclear_norm",), n_resamples, seed) if len(reference.rows) else {}


def f5_reference_sentence(reference: dict[str, CurveDraws]) -> str:
    """Markdown: which reasoning data F5's bars come from."""
    if not reference:
        return (f"No reasoning data with No and Detailed CoT is stored for these models, so F5 uses fixed bars "
                f"(MAD ratio {metrics.WIKI_FALLBACK_MAD_RATIO}, mean |RD| {metrics.WIKI_FALLBACK_RD}).")
    parts = [f"{m}: {', '.join(d for d in cd.datasets())}" for m, cd in reference.items()]
    return "F5 compares the Wiki numbers with the reasoning datasets stored for the same model (" + "; ".join(parts) + ")."


# All-layer MADs reported for Qwen2-1.5B on AQuA, q/k/v/o (secondary source: indicative only).
REPORTED_MAD = {("Qwen/Qwen2-1.5B", "aqua"): {"none": (4.42, 7.06, 17.32, 12.91),
                                             "simplified": (0.69, 0.81, 2.36, 1.97),
                                             "detailed": (0.28, 0.27, 0.64, 0.64)}}


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
                est, low, high = cd.interval(_mad(cd.estimate[key], "all"), _mad(cd.draws[key], "all"))
                inside = "yes" if np.isfinite(low) and low <= reported <= high else "no"
                out.append({"model": model, "dataset": dataset, "setting": _label(setting), "proj": proj,
                            "reported": reported, "this run": fmt_interval(est, low, high),
                            "reported value inside the interval": inside})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- reproducibility


def latest_run(log: dict) -> dict:
    """The last run recorded in a run log (an empty dict when there is none)."""
    runs = log.get("runs") or []
    return runs[-1] if runs else {}


def profile_table(run: dict) -> pd.DataFrame:
    """Profile parameters of a run, one row per parameter."""
    profile = dict(run.get("profile") or {})
    if "conditions" in profile:
        profile["conditions"] = f"{len(profile['conditions'])} conditions"
    return pd.DataFrame({"parameter": list(profile), "value": [str(v) for v in profile.values()]})


def package_table(run: dict, current: dict[str, str] | None = None) -> pd.DataFrame:
    """Package versions recorded by the run, next to those of the kernel that renders the book."""
    recorded = run.get("packages") or {}
    names = sorted(set(recorded) | set(current or {}))
    return pd.DataFrame({"package": names, "run": [recorded.get(n, "") for n in names],
                         "this kernel": [(current or {}).get(n, "") for n in names]})


def extraction_time_table(log: dict) -> pd.DataFrame:
    """Seconds of computation per (model, condition), summed over every run that computed samples."""
    records = [r for run in log.get("runs") or [] for r in run.get("extraction") or []]
    if not records:
        return pd.DataFrame(columns=["model", "condition", "computed", "seconds", "seconds_per_sample"])
    frame = pd.DataFrame(records)
    table = frame.groupby(["model", "condition"], sort=False).agg(computed=("computed", "sum"),
                                                                   seconds=("seconds", "sum")).reset_index()
    with np.errstate(invalid="ignore", divide="ignore"):
        table["seconds_per_sample"] = table["seconds"] / table["computed"].where(table["computed"] > 0)
    return table


def _elapsed(run: dict) -> float | None:
    """Wall seconds of a run: recorded when it finished, else from its start until now."""
    if run.get("finished") and run.get("wall_seconds") is not None:
        return run["wall_seconds"]
    if not run.get("started"):
        return None
    started = datetime.fromisoformat(run["started"])
    return (datetime.now(timezone.utc) - started).total_seconds()


def run_sentence(log: dict, results_dir) -> str:
    """Markdown: which run this page describes, and whether it had finished when the page ran."""
    run = latest_run(log)
    if not run:
        return (f"No run log in {results_dir}: these results were made by `python -m analysis extract` or an "
                "older version, so profile, times and versions are not recorded.")
    profile = (run.get("profile") or {}).get("name", "?")
    started = datetime.fromisoformat(run["started"]).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"Latest of {len(log.get('runs', []))} recorded runs: profile **{profile}**, started {started}, "
            f"executor {run.get('executor', 'local')}, Python {run.get('python', '?')} on {run.get('platform', '?')} "
            f"({run.get('cpu_count', '?')} CPUs).")
    if not run.get("finished"):
        text += (" The run was still going when this page was executed (this page runs before the book is "
                 "built), so its total is the time elapsed until then.")
    return text


def time_summary(log: dict) -> pd.DataFrame:
    """Wall time of each phase of the latest run, and total compute per model over all runs."""
    run = latest_run(log)
    total = "total wall time" if run.get("finished") else "elapsed until this page was executed"
    phases = [("extraction", run.get("extraction_seconds")), ("notebooks", run.get("notebooks_seconds")),
              ("book build", (run.get("book") or {}).get("seconds")), (total, _elapsed(run))]
    out = [{"what": f"latest run: {name}", "seconds": seconds} for name, seconds in phases if seconds is not None]
    per_model = extraction_time_table(log).groupby("model", sort=False)[["computed", "seconds"]].sum()
    for model, r in per_model.iterrows():
        out.append({"what": f"{model}: {int(r['computed'])} samples computed over all runs", "seconds": r["seconds"]})
    for model, seconds in (run.get("model_loads") or {}).items():
        out.append({"what": f"{model}: model load (latest run)", "seconds": seconds})
    table = pd.DataFrame(out, columns=["what", "seconds"])
    table["seconds"] = table["seconds"].map(lambda s: f"{s:.1f}" if s is not None and np.isfinite(s) else "")
    return table


def data_check_table(conditions: Sequence[str], data_dir=None) -> pd.DataFrame:
    """Each condition's data file with its sha256 checked against the published value now."""
    out = []
    for key in conditions:
        condition = data.get_condition(key)
        try:
            resolved = data.resolve(key, data_dir)
            status = "matches" if resolved.sha256_ok else "DIFFERS from the published file"
            digest = resolved.sha256[:16]
        except data.DataError:
            status, digest = "file not found", ""
        out.append({"condition": key, "file": condition.relative_path, "sha256 (first 16)": digest, "status": status})
    return pd.DataFrame(out)


def data_check_sentence(table: pd.DataFrame) -> str:
    """Markdown: how many data files match their published sha256."""
    if table.empty:
        return "No data files were checked."
    files = table.drop_duplicates("file")
    ok = int((files["status"] == "matches").sum())
    bad = files[files["status"] != "matches"]
    text = f"{ok} of {len(files)} data files match their published sha256."
    if len(bad):
        text += " Not matching: " + "; ".join(f"{r.file} ({r.status})" for r in bad.itertuples()) + "."
    return text


def models_used_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Models found in the results store: template, depth, conditions and samples stored."""
    if rows.empty:
        return pd.DataFrame(columns=["model", "template", "layers", "conditions", "samples", "source"])
    out = []
    for model, group in rows.groupby("model", sort=False):
        info = known_model(model)
        source = ("offline GGUF (quantised, dequantised to float32)" if model in OFFLINE_MODELS
                  else "paper model (hub)" if info else "local folder or other")
        out.append({"model": model, "template": group["template"].iloc[0], "layers": int(group["n_layers"].iloc[0]),
                    "conditions": int(group["condition"].nunique()),
                    "samples": int(group.groupby("condition")["sample_index"].nunique().sum()), "source": source})
    return pd.DataFrame(out)


def _against_target(value: float, target: float | None, relation: str) -> str:
    """``value`` with its target and whether it is met, e.g. ``1.28 (target >= 1.6: missed)``."""
    if target is None:
        return f"{value:.2f}"
    met = {">=": value >= target, "<=": value <= target, "<": value < target}[relation]
    return f"{value:.2f} (target {relation} {target:g}: {'met' if met else 'missed'})"


def benchmark_table(path) -> pd.DataFrame | None:
    """One row per benchmark case of ``benchmarks/results.json``; None when there is no such file.

    Seconds per sample of the three ways to the same numbers (the original study's plain
    procedure, this project's extraction and the bare forward/backward floor), their ratios next
    to the targets, peak memory and the largest relative difference to a full SVD.
    """
    path = Path(path)
    if not path.is_file():
        return None
    payload = json.loads(path.read_text())
    rows = []
    for case in payload.get("cases", []):
        seconds = case["seconds_per_sample"]
        memory = case.get("peak_memory_mb", {})
        targets = case.get("targets", {})
        load = payload.get("cached_loads", {}).get(case["model"], {})
        rows.append({
            "model": case["model"], "case": case["case"], "device": case.get("device", ""),
            "samples": case["samples"], "mean tokens": round(case["mean_tokens"]),
            "baseline s/sample": round(seconds["baseline"], 3), "project s/sample": round(seconds["project"], 3),
            "floor s/sample": round(seconds["floor"], 3),
            "baseline / project": _against_target(case["baseline_over_project"], targets.get("baseline_over_project_at_least"), ">="),
            "project / floor": _against_target(case["project_over_floor"], targets.get("project_over_floor_at_most"), "<="),
            "peak MB (baseline / project / floor)": " / ".join(
                f"{memory.get(k, float('nan')):.0f}" for k in ("baseline", "project", "floor")),
            "max rel. difference": f"{case['max_relative_difference']:.1e}",
            "cached load s": _against_target(load["load_seconds"], load.get("target_seconds"), "<") if load else "",
        })
    return pd.DataFrame(rows)