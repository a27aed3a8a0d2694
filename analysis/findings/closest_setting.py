"""Which reference setting a sample is closest to: a classifier trained on reference samples.

Each sample is described by the log of its nuclear norm at every (projection, layer). A
standardised multinomial logistic regression learns the reference setting (None, Simplified or
Detailed CoT) from the reference samples; it is cross-validated with the folds grouped by
instruction (the same question under every setting stays on one side), and its out-of-fold
accuracy, with an interval over instructions from the book's bootstrap engine, says how far its
answers can be trusted. Fitted on all reference samples, it then assigns new samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.pipeline import Pipeline
from threadpoolctl import threadpool_limits

from analysis.core.errors import StudyError
from analysis.findings import bootstrap
from analysis.findings.classifier import classifier, out_of_fold_fits

FEATURE_STAT = "nuclear_norm"
SAMPLE_KEYS = ["model", "condition", "dataset", "setting", "responses", "sample_index"]
MAX_ITER = 5000  # the logistic regression's iterations


class PlacementError(StudyError, ValueError):
    """The reference samples cannot train a classifier (too few, or one class only)."""


def sample_features(rows: pd.DataFrame, stat: str = FEATURE_STAT) -> pd.DataFrame:
    """One row per sample (index: SAMPLE_KEYS), one column per (proj, layer): log of ``stat``.

    Samples with a missing or non-positive value are dropped: a log needs a positive number.
    """
    wide = rows.pivot(index=SAMPLE_KEYS, columns=["proj", "layer"], values=stat).sort_index(axis=1)
    values = wide.to_numpy(dtype=float)
    usable = np.isfinite(values).all(axis=1) & (values > 0).all(axis=1)
    return pd.DataFrame(np.log(values[usable]), index=wide.index[usable], columns=wide.columns)


@dataclass
class Placement:
    """A classifier of reference settings with its cross-validated accuracy."""

    classes: tuple[str, ...]
    columns: pd.Index  # the (proj, layer) features, in the order the classifier reads them
    classifier: Pipeline  # fitted on every reference sample
    accuracy: bootstrap.Estimate  # out-of-fold, resampled over instructions
    out_of_fold: pd.DataFrame  # per reference sample: true class, predicted class, probability per class
    n_folds: int

    @property
    def chance(self) -> float:
        """Accuracy of always guessing the most frequent reference class."""
        return float(self.out_of_fold["true"].value_counts(normalize=True).max())

    def confusion(self) -> pd.DataFrame:
        """Out-of-fold counts: rows the true setting, columns the assigned one."""
        table = pd.crosstab(self.out_of_fold["true"], self.out_of_fold["predicted"])
        return table.reindex(index=list(self.classes), columns=list(self.classes), fill_value=0)

    def assign(self, features: pd.DataFrame) -> pd.DataFrame:
        """Probability of each reference class and the assigned class, per sample of ``features``."""
        missing = [c for c in self.columns if c not in features.columns]
        if missing:
            raise PlacementError(
                f"samples lack the features {missing[:3]} that the classifier was trained on (another model or depth?)"
            )
        with threadpool_limits(1):
            probabilities = self.classifier.predict_proba(features[self.columns].to_numpy())
        table = pd.DataFrame(probabilities, index=features.index, columns=list(self.classifier.classes_))
        table = table[list(self.classes)]
        table["assigned"] = table[list(self.classes)].idxmax(axis=1)
        return table


def fit_placement(
    features: pd.DataFrame,
    labels: Sequence[str],
    groups: Sequence[str],
    classes: Sequence[str],
    *,
    n_splits: int = 5,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Placement:
    """Cross-validate and fit the classifier of ``labels`` on reference ``features`` (the shared
    out-of-fold classifier, ``classifier.out_of_fold_fits``).

    ``groups`` names each sample's instruction (dataset and index): the folds never split one.
    Folds: at most ``n_splits``, at most the instructions of the rarest class; ``n_resamples`` and
    ``seed``: the accuracy's resampling (and the folds' seed).
    """
    y, group_of = np.asarray(labels), np.asarray(groups)
    present = [c for c in classes if (y == c).any()]
    if len(present) < 2:
        raise PlacementError(f"the reference samples hold {len(present)} setting(s); a classifier needs two or more")
    n_folds = min(n_splits, *(np.unique(group_of[y == c]).size for c in present))
    if n_folds < 2:
        raise PlacementError("the reference samples need at least two instructions per setting")
    x = features.to_numpy(dtype=float)
    predicted = np.empty(y.size, dtype=object)
    probability = np.full((y.size, len(present)), np.nan)
    with threadpool_limits(1):  # small fits: BLAS threads only contend on a busy machine
        for model, _, test_rows in out_of_fold_fits(x, y, group_of, n_folds=n_folds, seed=seed, max_iter=MAX_ITER):
            if model is None:
                raise PlacementError(
                    "a training fold holds one setting only; the reference samples need more instructions"
                )
            scores = model.predict_proba(x[test_rows])
            columns = [list(model.classes_).index(c) if c in model.classes_ else None for c in present]
            probability[test_rows] = np.column_stack(
                [scores[:, j] if j is not None else np.zeros(len(test_rows)) for j in columns]
            )
            predicted[test_rows] = model.predict(x[test_rows])
        final = classifier(max_iter=MAX_ITER).fit(x, y)
    out_of_fold = pd.DataFrame(probability, index=features.index, columns=present)
    out_of_fold.insert(0, "predicted", predicted)
    out_of_fold.insert(0, "true", y)
    return Placement(
        tuple(present),
        features.columns,
        final,
        accuracy_estimate(y == predicted, group_of, n_resamples, seed),
        out_of_fold,
        n_folds,
    )


def accuracy_estimate(
    correct: np.ndarray, groups: np.ndarray, n_resamples: int = 1000, seed: int = 0
) -> bootstrap.Estimate:
    """Share of correct answers, resampled over instructions (all samples of one drawn together);
    a bounded estimate, so its interval (Wilson) stays inside [0, 1] and is never [1, 1]."""
    codes, inverse = np.unique(groups, return_inverse=True)
    counts = bootstrap.resample_counts(codes.size, n_resamples, np.random.default_rng([seed, codes.size]))
    weights = counts[:, inverse]
    hits = np.asarray(correct, dtype=float)
    draws = (weights @ hits) / weights.sum(axis=1)
    return bootstrap.Estimate(float(hits.mean()), draws, (("references", int(codes.size)),), bounded=True)


def fit_placement_on_rows(
    rows: pd.DataFrame,
    *,
    label: str = "setting",
    classes: Sequence[str] | None = None,
    n_splits: int = 5,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Placement:
    """``fit_placement`` on the rows of reference samples, learning their ``label`` column."""
    features = sample_features(rows)
    labels = features.index.get_level_values(label)
    groups = [
        f"{d}:{i}"
        for d, i in zip(features.index.get_level_values("dataset"), features.index.get_level_values("sample_index"))
    ]
    classes = list(classes) if classes is not None else sorted(set(labels))
    return fit_placement(features, labels, groups, classes, n_splits=n_splits, n_resamples=n_resamples, seed=seed)


def assignment_summary(assigned: pd.DataFrame, classes: Sequence[str]) -> pd.DataFrame:
    """Per class: the share of samples assigned to it and the mean probability given to it."""
    share = assigned["assigned"].value_counts(normalize=True).reindex(list(classes), fill_value=0.0)
    return pd.DataFrame(
        {
            "class": list(classes),
            "share assigned": share.to_numpy(),
            "mean probability": assigned[list(classes)].mean().to_numpy(),
        }
    )


def closest(summary: pd.DataFrame) -> str:
    """The class most samples are assigned to (ties: the larger mean probability)."""
    ordered = summary.sort_values(["share assigned", "mean probability"], ascending=False)
    return str(ordered["class"].iloc[0])
