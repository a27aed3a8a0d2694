"""The paper's layer metrics: layer splits, layer curves, MAD and RD.

Input everywhere is the long results table: one row per (model, condition, sample, layer,
projection) with one column per gradient statistic (the methods page, "From samples to layer
curves"). The checks of the paper's findings built on them are in ``analysis.checks``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.core import layer_stats
from analysis.core.vocabulary import CORRECT, IRRELEVANT, PROJECTIONS, SEGMENTS, WIKI_DATASET  # noqa: F401

# The paper's early/middle/late splits (0-based, half-open) for the depths of its models.
PAPER_SPLITS: dict[int, tuple[int, int]] = {28: (7, 21), 26: (7, 20), 32: (10, 20), 42: (12, 30)}

CONDITION_COLUMNS = ["model", "dataset", "setting", "responses", "condition"]


# --------------------------------------------------------------------------- layer splits


def layer_splits(n_layers: int) -> dict[str, tuple[int, int]]:
    """Early/middle/late layer ranges (0-based, half-open) for a model of `n_layers` layers.

    Depths 26, 28, 32 and 42 use the paper's table. Any other depth L uses
    e = floor(L/4 + 1/2) layers for each of the early and the late part:
    early [0, e), middle [e, L - e), late [L - e, L); so 18 -> 5/8/5 and 30 -> 8/14/8.
    """
    n_layers = int(n_layers)
    if n_layers < 4:
        raise ValueError(f"need at least 4 layers to split into early/middle/late, got {n_layers}")
    if n_layers in PAPER_SPLITS:
        first_middle, first_late = PAPER_SPLITS[n_layers]
    else:
        edge = int(np.floor(n_layers / 4 + 0.5))
        first_middle, first_late = edge, n_layers - edge
    return {"early": (0, first_middle), "middle": (first_middle, first_late), "late": (first_late, n_layers)}


# --------------------------------------------------------------------------- MAD and RD


def mean_absolute_difference(values: Sequence[float] | np.ndarray) -> float | np.ndarray:
    """MAD of a curve: (1/(L-1)) * sum_i |v[i+1] - v[i]| along the last axis.

    A 1-D curve gives a float; a stack of curves (..., L) gives one MAD per curve.
    Fewer than two points give NaN.
    """
    v = np.asarray(values, dtype=float)
    if v.shape[-1] < 2:
        out = np.full(v.shape[:-1], np.nan)
    else:
        out = np.abs(np.diff(v, axis=-1)).mean(axis=-1)
    return float(out) if out.ndim == 0 else out


def relative_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-layer relative difference (b - a) / a, with `a` the reference (correct responses)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (b - a) / a


def finite_mean(values: np.ndarray) -> np.ndarray:
    """Mean over the last axis of the finite values (NaN where there are none)."""
    values = np.where(np.isfinite(values), values, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN
        return np.nanmean(values, axis=-1)


def rd_summary(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, top: int = 5) -> dict:
    """Summary of RD(a -> b): mean |RD| and mean RD over layers, and the `top` layers by |RD|.

    Layers where RD is not finite (NaN curve values, zero reference) are left out.
    `top_layers` lists 0-based layer indices, largest |RD| first.
    """
    rd = relative_difference(a, b)
    finite = np.isfinite(rd)
    if not finite.any():
        return {"mean_abs_rd": np.nan, "mean_rd": np.nan, "top_layers": ()}
    layers = np.flatnonzero(finite)
    order = np.argsort(-np.abs(rd[finite]), kind="stable")
    return {
        "mean_abs_rd": float(np.mean(np.abs(rd[finite]))),
        "mean_rd": float(np.mean(rd[finite])),
        "top_layers": tuple(int(i) for i in layers[order[:top]]),
    }


# --------------------------------------------------------------------------- samples -> curves


def _n_layers(rows: pd.DataFrame) -> int:
    if "n_layers" in rows.columns and rows["n_layers"].notna().any():
        depths = rows["n_layers"].dropna().unique()
        if len(depths) != 1:
            raise ValueError(f"one model and condition must have one depth, got {sorted(depths)}")
        return int(depths[0])
    return int(rows["layer"].max()) + 1


SUBSET = "subset"  # which of a sample's K draws of scored tokens a row scores (``runner.SUBSET_COLUMN``)
DRAW_SAMPLE = ["model", "condition", "max_length", "template", "sample_index"]


def mean_over_draws(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per sample, layer and projection where a scored-subset condition stores K draws of
    scored tokens per sample (``subset``): a positive statistic's value is the exp of its draws'
    mean log (a sample's log value is the mean over its draws), any other's their mean. Rows of
    one draw are returned as they are; a sample stored both with one draw and with K keeps its K."""
    if SUBSET not in rows.columns:
        return rows
    drawn = rows[SUBSET].notna()
    if not drawn.any():
        return rows
    sample = [c for c in DRAW_SAMPLE if c in rows.columns]
    has_draws = pd.MultiIndex.from_frame(rows.loc[drawn, sample].astype(object)).unique()
    single = rows[~drawn & ~pd.MultiIndex.from_frame(rows[sample].astype(object)).isin(has_draws)]
    statistics = [s.name for s in layer_stats.TABLE if s.name in rows.columns]
    keys = [c for c in rows.columns if c not in statistics and c not in (SUBSET, "singular_values")]
    part = rows.loc[drawn, keys + statistics]
    positive = [name for name in statistics if (part[name].dropna() > 0).all()]
    part = part.assign(**{name: np.log(part[name].astype(float)) for name in positive})
    averaged = part.groupby(keys, observed=True, dropna=False, sort=False)[statistics].mean().reset_index()
    averaged = averaged.assign(**{name: np.exp(averaged[name]) for name in positive})
    for name in statistics:  # the draws' shared token counts stay whole numbers
        if pd.api.types.is_integer_dtype(rows[name].dtype):
            averaged[name] = averaged[name].round().astype(rows[name].dtype)
    merged = pd.concat([single.drop(columns=SUBSET), averaged], ignore_index=True)
    return merged[[c for c in rows.columns if c in merged.columns]]


def _pivot_samples(rows: pd.DataFrame, stat: str, n_layers: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Samples x layers matrix of one projection's rows, incomplete samples dropped (a sample's K
    draws of scored tokens averaged first, ``mean_over_draws``)."""
    rows = mean_over_draws(rows)
    if rows.duplicated(["sample_index", "layer"]).any():
        raise ValueError(
            "several rows for one sample and layer: keep one max_length and template per model before computing curves"
        )
    table = rows.pivot(index="sample_index", columns="layer", values=stat)
    table = table.reindex(columns=range(n_layers))
    values = table.to_numpy(dtype=float)
    # A layer where no sample has a value (e.g. the next-layer cosine of the last layer) is
    # outside the statistic's curve; a NaN anywhere else drops the sample.
    defined = ~np.isnan(values).all(axis=0)
    complete = ~np.isnan(values[:, defined]).any(axis=1)
    return values[complete], table.index.to_numpy()[complete], int((~complete).sum())


def sample_matrix(df: pd.DataFrame, stat: str, proj: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Samples x layers matrix of `stat` for one projection of one (model, condition).

    Returns (matrix, kept sample ids, number of dropped samples). Column j is layer j. A sample
    with a NaN (or a missing row) at any layer of the curve is dropped and counted; layers where
    no sample has a value stay as NaN columns and drop nobody.
    """
    for column in ("model", "condition"):
        if column in df.columns and df[column].nunique() > 1:
            raise ValueError(f"sample_matrix needs rows of one {column}, got {df[column].nunique()}")
    rows = df[df["proj"] == proj]
    return _pivot_samples(rows, stat, _n_layers(df))


def per_sample(rows: pd.DataFrame, stats_: Sequence[str]) -> dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]:
    """The per-sample matrices (samples x layers) and sample ids of one model's rows, keyed
    (condition, proj, stat); a statistic with no value for a condition is left out."""
    out = {}
    for condition, condition_rows in rows.groupby("condition", sort=True, observed=True):
        for stat in dict.fromkeys(stats_):
            for proj in PROJECTIONS:
                matrix, kept, _ = sample_matrix(condition_rows, stat, proj)
                if matrix.shape[0] and np.isfinite(matrix).any():
                    out[(str(condition), proj, stat)] = (matrix, np.asarray(kept, dtype=int))
    return out


def layer_curves(df: pd.DataFrame, stat: str = "nuclear_norm") -> pd.DataFrame:
    """Sample-mean layer curve of `stat` for every (model, condition, projection).

    Columns: model, dataset, setting, responses, condition, proj, layer, value, n_samples,
    n_dropped, stat, n_layers, and template when the input has it. Projections come in
    q, k, v, o order.
    """
    extra = ["template"] if "template" in df.columns else []
    pieces = []
    for (model, condition), rows in df.groupby(["model", "condition"], sort=True):
        n_layers = _n_layers(rows)
        first = rows.iloc[0]
        for proj, proj_rows in rows.groupby("proj", sort=False):
            matrix, _, n_dropped = _pivot_samples(proj_rows, stat, n_layers)
            n_samples = matrix.shape[0]
            value = matrix.mean(axis=0) if n_samples else np.full(n_layers, np.nan)
            piece = pd.DataFrame(
                {
                    "model": model,
                    "dataset": first["dataset"],
                    "setting": first["setting"],
                    "responses": first["responses"],
                    "condition": condition,
                    "proj": proj,
                    "layer": np.arange(n_layers),
                    "value": value,
                    "n_samples": n_samples,
                    "n_dropped": n_dropped,
                    "stat": stat,
                    "n_layers": n_layers,
                }
            )
            for column in extra:
                piece[column] = first[column]
            pieces.append(piece)
    columns = CONDITION_COLUMNS + ["proj", "layer", "value", "n_samples", "n_dropped", "stat", "n_layers"] + extra
    if not pieces:
        return pd.DataFrame(columns=columns)
    out = pd.concat(pieces, ignore_index=True)[columns]
    return out.sort_values(["model", "condition", "proj", "layer"], key=_proj_sort_key, ignore_index=True)


def _proj_sort_key(column: pd.Series) -> pd.Series:
    """Sort key that puts projections in q, k, v, o order and leaves other columns alone."""
    if column.name != "proj":
        return column
    return column.map({p: i for i, p in enumerate(PROJECTIONS)}).fillna(len(PROJECTIONS))
