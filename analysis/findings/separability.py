"""Can one sample's layer statistics tell a correct response from an irrelevant one? The
out-of-fold AUROC of the shared classifier (``analysis.findings.classifier``) per model, dataset
and setting, pooled per family, with intervals from the book's one bootstrap engine
(``analysis.findings.bootstrap``) and verdicts."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats as sps
from threadpoolctl import threadpool_limits

from analysis.core import vocabulary
from analysis.findings import bootstrap, roles, rules
from analysis.findings.bootstrap import Estimate, pooled
from analysis.findings.classifier import out_of_fold_fits, weighted_auroc
from analysis.findings.metrics import CORRECT, IRRELEVANT
from analysis.findings.pooling import scope_rank
from analysis.findings.rules import FAILS, HOLDS, TOO_FEW, UNRESOLVED, Part


def _group_bootstrap_weights(groups: np.ndarray, n_resamples: int, seed) -> np.ndarray:
    """(n_resamples, n_rows) counts from resampling whole groups (instructions) with replacement."""
    codes, inverse = np.unique(groups, return_inverse=True)
    counts = bootstrap.resample_counts(codes.size, n_resamples, np.random.default_rng(seed))
    return counts[:, inverse]


def _column_aurocs(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """AUROC of every column of x for labels y (rank formula, ties averaged)."""
    ranks = sps.rankdata(x, axis=0)
    n_pos = y.sum()
    n_neg = y.size - n_pos
    return (ranks[y == 1].sum(axis=0) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


# --------------------------------------------------------------------------- separability


def _separability_features(df: pd.DataFrame, stat: str) -> tuple[pd.DataFrame, int]:
    """One row per (responses, sample_index), one column per (proj, layer); incomplete rows
    (a NaN in any feature that some row has) are dropped and counted."""
    rows = df[df["responses"].isin([CORRECT, IRRELEVANT])]
    wide = rows.pivot(index=["responses", "sample_index"], columns=["proj", "layer"], values=stat)
    wide = wide.loc[:, wide.notna().any(axis=0)]
    complete = wide.notna().all(axis=1)
    return wide[complete], int((~complete).sum())


def _out_of_fold_scores(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, *, n_folds: int, seed: int
) -> tuple[np.ndarray, np.ndarray, list[int]] | None:
    """Out-of-fold logistic-regression scores, out-of-fold scores of the single feature chosen
    on each training fold, and the chosen feature indices; None if a fold lacks a class."""
    oof_model = np.full(y.size, np.nan)
    oof_single = np.full(y.size, np.nan)
    chosen = []
    for clf, train, test in out_of_fold_fits(x, y, groups, n_folds=n_folds, seed=seed, max_iter=2000):
        if clf is None:
            return None
        oof_model[test] = clf.decision_function(x[test])
        train_auc = _column_aurocs(x[train], y[train])
        k = int(np.argmax(np.abs(train_auc - 0.5)))
        direction = 1.0 if train_auc[k] >= 0.5 else -1.0
        oof_single[test] = direction * x[test, k]
        chosen.append(k)
    return oof_model, oof_single, chosen


def separability(
    df: pd.DataFrame,
    model: str,
    dataset: str,
    setting: str,
    *,
    stat: str = "nuclear_norm",
    n_splits: int = 5,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = bootstrap.LEVEL,
    excluded: Iterable = (),
) -> dict:
    """Can one sample's layer statistics tell a correct response from an irrelevant one?

    Features: `stat` of every (projection, layer) of one sample (log-scaled when all positive);
    labels correct = 0, irrelevant = 1. A standardised logistic regression is cross-validated
    with StratifiedGroupKFold grouped by sample_index, so an instruction never sits in both
    train and test; folds = min(n_splits, instructions per class). Reported: the pooled
    out-of-fold AUROC with a bootstrap interval that resamples instructions; the AUROC of the
    single best (projection, layer) feature chosen inside each training fold (`best_feature` is
    the one chosen most often); and, for reference, the in-sample best feature and its AUROC
    (optimistic by construction). Values are NaN with a `reason` when they cannot be computed.
    `auroc_draws` holds the AUROC under each resample of the instructions (for pooling over
    datasets); the interval is the engine's for a share (Wilson, inside [0, 1]). Instructions in
    `excluded` (e.g. those whose irrelevant response equals the correct one) are left out.
    Without signal the out-of-fold AUROC scatters around, on average a little below, 0.5 (a
    known property of cross-validation): call the responses separable only when auroc_low > 0.5.
    ``level``: the interval's level.
    """
    chosen = (df["model"] == model) & (df["dataset"] == dataset) & (df["setting"] == setting)
    rows = df[chosen & ~df["sample_index"].isin(list(excluded))]
    out = _no_separability(model, dataset, setting, stat)
    if rows.empty:
        return {**out, "reason": "no rows for this model, dataset and setting"}
    wide, n_dropped = _separability_features(rows, stat)
    y = (wide.index.get_level_values("responses") == IRRELEVANT).astype(int)
    groups = wide.index.get_level_values("sample_index").to_numpy()
    x = wide.to_numpy(dtype=float)
    if x.size and (x > 0).all():
        x = np.log(x)
    names = [f"{proj}{layer}" for proj, layer in wide.columns]
    per_class = [np.unique(groups[y == c]).size for c in (0, 1)]
    n_folds = min(n_splits, *per_class)
    out.update(n_samples=int(np.unique(groups).size), n_rows=int(y.size), n_dropped=n_dropped, n_folds=max(n_folds, 0))
    if min(per_class) == 0:
        return {**out, "reason": "needs both correct and irrelevant responses"}
    if n_folds < 2:
        return {**out, "reason": "needs at least two instructions per response type"}
    out.update(_in_sample_best(x, y, names))
    # The fits are small: BLAS threads only add contention, on a busy machine by tens of times.
    with threadpool_limits(1):
        folds = _out_of_fold_scores(x, y, groups, n_folds=n_folds, seed=seed)
    if folds is None:
        return {**out, "reason": "a training fold holds one response type only"}
    aurocs = _out_of_fold_aurocs(
        folds, names, y, groups, dataset=dataset, n_resamples=n_resamples, seed=seed, level=level
    )
    return {**out, **aurocs}


def _no_separability(model: str, dataset: str, setting: str, stat: str) -> dict:
    """The result's keys, with nothing computed yet."""
    return {
        "model": model,
        "dataset": dataset,
        "setting": setting,
        "stat": stat,
        "n_samples": 0,
        "n_rows": 0,
        "n_dropped": 0,
        "n_folds": 0,
        "auroc": np.nan,
        "auroc_low": np.nan,
        "auroc_high": np.nan,
        "auroc_draws": None,
        "best_feature_auroc": np.nan,
        "best_feature": None,
        "best_feature_auroc_in_sample": np.nan,
        "best_feature_in_sample": None,
        "reason": None,
    }


def _in_sample_best(x: np.ndarray, y: np.ndarray, names: list[str]) -> dict:
    """The single feature that separates best on all rows, and its AUROC (optimistic by construction)."""
    in_sample = _column_aurocs(x, y)
    j = int(np.argmax(np.abs(in_sample - 0.5)))
    return {
        "best_feature_in_sample": names[j],
        "best_feature_auroc_in_sample": float(max(in_sample[j], 1 - in_sample[j])),
    }


def _out_of_fold_aurocs(
    folds: tuple[np.ndarray, np.ndarray, list[int]],
    names: list[str],
    y: np.ndarray,
    groups: np.ndarray,
    *,
    dataset: str,
    n_resamples: int,
    seed: int,
    level: float,
) -> dict:
    """The out-of-fold AUROC with its draws and interval, and the AUROC of the feature chosen in each fold."""
    oof_model, oof_single, chosen_columns = folds
    chosen = [names[k] for k in chosen_columns]
    weights = _group_bootstrap_weights(groups, n_resamples, [seed, *map(ord, dataset)])
    draws = weighted_auroc(oof_model, y, weights)
    auroc = float(weighted_auroc(oof_model, y))
    n = int(np.unique(groups).size)
    low, high = bootstrap.Estimate(auroc, draws, ((dataset, n),), bounded=True).interval(level)
    values, counts = np.unique(chosen, return_counts=True)
    return {
        "auroc": auroc,
        "auroc_low": low,
        "auroc_high": high,
        "auroc_draws": draws,
        "best_feature_auroc": float(weighted_auroc(oof_single, y)),
        "best_feature": str(values[np.argmax(counts)]),
    }


# --------------------------------------------------------------------------- verdicts, per dataset and pooled

SEPARABLE = {HOLDS: "separable", FAILS: "worse than chance", UNRESOLVED: "not shown", TOO_FEW: TOO_FEW}


def separability_table(
    rows: pd.DataFrame, identical: dict[str, frozenset] | None = None, n_resamples: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Out-of-fold AUROC of correct vs irrelevant per (model, dataset, study setting), then pooled per
    (model, family, setting) over the family's datasets; with intervals and verdicts.

    Instructions whose None-CoT irrelevant response equals the correct one (``identical``) are
    left out: they are one input twice.
    """
    identical = identical or {}
    out = []
    study = rows[rows["setting"].isin(vocabulary.STUDY_SETTINGS)]
    for (model, dataset, setting), group in study.groupby(["model", "dataset", "setting"], sort=False):
        if group["responses"].nunique() < 2:
            continue
        excluded = identical.get(dataset, ()) if setting == "none" else ()
        result = separability(group, model, dataset, setting, n_resamples=n_resamples, seed=seed, excluded=excluded)
        draws = result.pop("auroc_draws")
        estimate = (
            None if draws is None else Estimate(result["auroc"], draws, ((dataset, result["n_samples"]),), bounded=True)
        )
        result.update(scope=dataset, pooled=False, n_excluded=len(set(excluded)), estimate=estimate)
        out.append(result)
    table = pd.DataFrame(out)
    if table.empty:
        return table
    pooled_rows = [
        _pooled_row(model, setting, family, group[group["dataset"].map(vocabulary.family_of) == family])
        for (model, setting), group in table.groupby(["model", "setting"], sort=False)
        for family in vocabulary.FAMILY_DATASETS
    ]
    pooled_rows = [row for row in pooled_rows if row is not None]
    table = pd.concat([table, pd.DataFrame(pooled_rows)], ignore_index=True)
    table["verdict"] = [_separability_verdict(r) for r in table.itertuples()]
    table["_scope"] = table["scope"].map(scope_rank)
    table["_setting"] = table["setting"].map(vocabulary.setting_rank)
    return (
        table.sort_values(["model", "_scope", "_setting"], kind="stable")
        .drop(columns=["_scope", "_setting"])
        .reset_index(drop=True)
    )


def _pooled_row(model: str, setting: str, family: str, members: pd.DataFrame) -> dict | None:
    """The row of a family pooled over its datasets' AUROCs (None: fewer than two datasets)."""
    members = members[members["estimate"].notna()]
    estimate = pooled(list(members["estimate"])) if len(members) >= 2 else None
    if estimate is None:
        return None
    low, high = estimate.interval()
    return {
        "model": model,
        "dataset": family,
        "setting": setting,
        "scope": family,
        "pooled": True,
        "n_samples": estimate.n,
        "auroc": estimate.value,
        "auroc_low": low,
        "auroc_high": high,
        "estimate": estimate,
        "n_excluded": int(members["n_excluded"].sum()),
        "reason": None,
    }


def _separability_verdict(row) -> str:
    if row.estimate is None or not np.isfinite(row.auroc):
        return "not computed"
    return SEPARABLE[
        rules.decide(
            [Part(name="AUROC", estimate=row.estimate, side="above", bound=0.5, role=roles.SIMULATED, decides=True)]
        )
    ]
