"""The out-of-fold classifier that separability and the closest setting share, and the AUROC of scores.

The classifier is a standardised logistic regression; it is cross-validated with
``StratifiedGroupKFold``, the folds grouped by instruction, so an instruction is never on both
sides of a fold. ``weighted_auroc`` scores its out-of-fold outputs (and G1's), under every
resample of the instructions at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler


def classifier(*, max_iter: int) -> Pipeline:
    """A standardised logistic regression, not yet fitted."""
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))


def out_of_fold_fits(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, *, n_folds: int, seed: int, max_iter: int
) -> Iterator[tuple[Pipeline | None, np.ndarray, np.ndarray]]:
    """Per fold of ``n_folds`` grouped, stratified and shuffled folds (``seed``): the classifier
    fitted on the fold's training rows (None where they hold one class only, which no classifier
    can learn from), the training rows and the test rows. The fits run as the caller iterates."""
    folds = StratifiedGroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    for train, test in folds.split(x, y, groups):
        if np.unique(y[train]).size < 2:
            yield None, train, test
            continue
        yield classifier(max_iter=max_iter).fit(x[train], y[train]), train, test


def weighted_auroc(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """AUROC of `scores` for binary `labels` (1 = positive), ties counted as one half.

    `weights` (r, n) gives r weightings of the n rows at once (bootstrap counts), returning r
    values; without weights, one AUROC. NaN where a class has no weight.
    """
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels).astype(bool)
    w = np.ones((1, scores.size)) if weights is None else np.atleast_2d(np.asarray(weights, float))
    order = np.argsort(scores, kind="stable")
    _, starts, counts = np.unique(scores[order], return_index=True, return_counts=True)
    block = np.repeat(np.arange(starts.size), counts)
    w, positive = w[:, order], labels[order]
    neg_cum = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(w * ~positive, axis=1)], axis=1)
    neg_below = neg_cum[:, starts][:, block]
    neg_tied = (neg_cum[:, starts + counts] - neg_cum[:, starts])[:, block]
    w_pos = w * positive
    numerator = (w_pos * (neg_below + 0.5 * neg_tied)).sum(axis=1)
    denominator = w_pos.sum(axis=1) * neg_cum[:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = np.where(denominator > 0, numerator / denominator, np.nan)
    return auc if weights is not None else auc[0]
