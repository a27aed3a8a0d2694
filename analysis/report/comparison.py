"""Imported vs extracted: the original study's statistics next to this project's, sample by sample.

For every model that one results store holds as imported (``python -m analysis import-original``)
and another (or the same) holds as extracted here, with the same truncation and template, each
sample's relative difference of the nuclear norm, the largest singular value and the Frobenius
norm: the largest over its layers and projections, relative to the imported value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.core.formatting import per_model
from analysis.report.coverage import HUB_SOURCE
from analysis.store import ResultsStore
from analysis.store.store_errors import StoreError

COMPARED = {"nuclear_norm": "nuclear norm", "sigma_max": "largest singular value", "frobenius": "Frobenius norm"}
TOLERANCE = 1e-3
KEY = ["model", "condition", "max_length", "template", "sample_index", "layer", "proj"]


def _read(root: Path, models: Sequence[str], conditions: Sequence[str]) -> pd.DataFrame:
    """The compared columns of one store's rows, with ``origin`` (None for extracted rows)."""
    store = ResultsStore(root, create=False)
    filters = [("model", "in", list(models)), ("condition", "in", list(conditions))]
    columns = [*KEY, *COMPARED]
    try:
        frame = store.read("rows", filters=filters, columns=[*columns, "origin"])
    except (ValueError, KeyError):  # no part of this store holds the origin column: nothing imported
        frame = store.read("rows", filters=filters, columns=columns)
        frame["origin"] = None
    return frame


def stored_rows(stores: Sequence, models: Sequence[str], conditions: Sequence[str]) -> pd.DataFrame:
    """The rows of every existing store among ``stores`` (each at most once)."""
    frames, seen = [], set()
    for root in stores:
        path = Path(root).resolve()
        if path in seen or not (path / "store.json").is_file():
            continue
        seen.add(path)
        try:
            frames.append(_read(path, models, conditions).assign(store=str(path)))
        except StoreError:
            continue
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KEY, *COMPARED, "origin"])


def compare(stores: Sequence, models: Sequence[str], conditions: Sequence[str]) -> pd.DataFrame:
    """``sample_differences`` of every model, reading one model's rows at a time (a paper model's rows
    of 56 conditions are millions)."""
    frames = [sample_differences(stored_rows(stores, [model], conditions)) for model in models]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def sample_differences(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (model, condition, sample) present both imported and extracted: the largest relative
    difference of each compared statistic over the sample's layers and projections."""
    if rows.empty:
        return pd.DataFrame()
    imported = rows[rows["origin"].notna()].drop(columns=["origin", "store"], errors="ignore")
    extracted = rows[rows["origin"].isna()].drop(columns=["origin", "store"], errors="ignore")
    both = imported.merge(extracted, on=KEY, suffixes=("_imported", "_extracted"))
    if both.empty:
        return pd.DataFrame()
    for stat in COMPARED:
        a, b = both[f"{stat}_imported"].to_numpy(float), both[f"{stat}_extracted"].to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            both[stat] = np.where(a == b, 0.0, np.abs(b - a) / np.abs(a))
    sample = ["model", "condition", "max_length", "template", "sample_index"]
    worst = both.groupby(sample)[list(COMPARED)].max().reset_index()
    return worst


def agreement_table(differences: pd.DataFrame, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """Per model, condition and statistic: samples compared, share within ``tolerance``, median and largest difference."""
    if differences.empty:
        return pd.DataFrame()
    rows = []
    for (model, condition), group in differences.groupby(["model", "condition"], sort=False):
        for stat, label in COMPARED.items():
            values = group[stat].to_numpy(float)
            rows.append(
                {
                    "model": model,
                    "condition": condition,
                    "statistic": label,
                    "samples": len(values),
                    "share within tolerance": float(np.mean(values <= tolerance)),
                    "median relative difference": float(np.median(values)),
                    "largest relative difference": float(np.max(values)),
                }
            )
    return pd.DataFrame(rows)


def mismatches(differences: pd.DataFrame, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """The samples whose difference of some statistic exceeds ``tolerance`` (or is not a number)."""
    if differences.empty:
        return pd.DataFrame()
    long = differences.melt(
        id_vars=["model", "condition", "sample_index"],
        value_vars=list(COMPARED),
        var_name="statistic",
        value_name="relative difference",
    )
    bad = long[~(long["relative difference"] <= tolerance)].copy()
    bad["statistic"] = bad["statistic"].map(COMPARED)
    return bad.sort_values(["model", "condition", "sample_index", "statistic"]).reset_index(drop=True)


def comparison_paragraph(differences: pd.DataFrame, tolerance: float = TOLERANCE, *, imported: bool = False) -> str:
    """Markdown: per model, how many samples agree within ``tolerance`` on all three statistics
    (``imported``: this book's own numbers are the imported ones, so only the extraction is lacking)."""
    if differences.empty:
        extract = "extract the same models (`python -m analysis run --profile paper`, on a GPU, into results/paper)"
        todo = (
            f"To compare, {extract}"
            if imported
            else "To compare, import the original statistics "
            f"(`python -m analysis import-original {HUB_SOURCE} --out results/original`) and {extract}"
        )
        return (
            "No model is stored both as the original study's imported statistics and as this project's "
            f"extraction (same max_length and template). {todo}, then rebuild this book."
        )
    return per_model(differences, lambda _, group: _agreement_in_words(group, tolerance))


def _agreement_in_words(group: pd.DataFrame, tolerance: float) -> str:
    within = (group[list(COMPARED)] <= tolerance).all(axis=1)
    return (
        f"{int(within.sum())} of {len(group)} samples over {group['condition'].nunique()} "
        f"conditions agree within a relative difference of {tolerance:g} on all of "
        f"{', '.join(COMPARED.values())} (every layer and projection)."
    )


def format_agreement(table: pd.DataFrame) -> pd.DataFrame:
    """The agreement table for display."""
    if table.empty:
        return table
    shown = table.copy()
    shown["share within tolerance"] = shown["share within tolerance"].map(lambda v: f"{100 * v:.1f}%")
    for column in ("median relative difference", "largest relative difference"):
        shown[column] = shown[column].map(lambda v: f"{v:.2e}")
    return shown
