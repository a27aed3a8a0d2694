"""The out-of-fold classifiers of the book, their grouped folds, and the AUROC of scores.

Separability and the closest setting use a standardised logistic regression; G1 a standardised
ridge classifier (``ridge_decisions``: least squares on +1 / -1 targets, as scikit-learn's
``StandardScaler`` then ``Ridge``, the decision scores of its ``RidgeClassifier``), whose fit is
linear in the targets, so one fit scores many labellings of the same rows at once (G1's sign
flips); it is solved here in closed form, as scikit-learn solves it, without the pipeline's checks
of its inputs, which cost many times the fit at a few dozen rows. Both are cross-validated with ``StratifiedGroupKFold``
(``grouped_folds``), the folds grouped by instruction, so an instruction is never on both sides of
a fold. ``weighted_auroc`` scores out-of-fold outputs under every resample of the instructions at
once; ``column_aurocs`` scores many columns of scores at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy import linalg
from scipy import stats as sps
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler


def classifier(*, max_iter: int) -> Pipeline:
    """A standardised logistic regression, not yet fitted."""
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))


def ridge_decisions(train: np.ndarray, targets: np.ndarray, test: np.ndarray, penalty: float) -> np.ndarray:
    """The standardised ridge classifier's decision scores (test rows, columns of ``targets``) when
    fitted on the rows ``train`` with each column of ``targets`` (+1 / -1) in turn: the features
    standardised on ``train`` (a constant one left as it is), ridge regression with an intercept
    and ``penalty`` on the squared coefficients. The fit is linear in the targets, intercept
    included: fitted once on the identity (one target per training row), its predictions times
    ``targets`` are every column's, however many labellings there are. Solved by Cholesky, on the
    rows' Gram matrix where there are more features than rows (as scikit-learn's ``Ridge``)."""
    rows, features = train.shape
    mean, variance = train.mean(axis=0), train.var(axis=0)
    eps = np.finfo(float).eps
    constant = variance <= rows * eps * variance + (rows * mean * eps) ** 2
    scale = np.where(constant, 1.0, np.sqrt(variance))
    x, z = (train - mean) / scale, (test - mean) / scale
    centre = x.mean(axis=0)
    x -= centre
    centred = np.eye(rows) - 1.0 / rows  # the identity targets less their means
    if features > rows:
        gram = x @ x.T
        gram.flat[:: rows + 1] += penalty
        coefficients = x.T @ linalg.solve(gram, centred, assume_a="pos")
    else:
        gram = x.T @ x
        gram.flat[:: features + 1] += penalty
        coefficients = linalg.solve(gram, x.T @ centred, assume_a="pos")
    return ((z - centre) @ coefficients + 1.0 / rows) @ targets


def grouped_folds(
    y: np.ndarray, groups: np.ndarray, *, n_folds: int, seed: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(training rows, test rows) of ``n_folds`` grouped, stratified and shuffled folds (``seed``)."""
    folds = StratifiedGroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    yield from folds.split(np.zeros((len(y), 1)), y, groups)


def out_of_fold_fits(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, *, n_folds: int, seed: int, max_iter: int
) -> Iterator[tuple[Pipeline | None, np.ndarray, np.ndarray]]:
    """Per fold of ``n_folds`` grouped, stratified and shuffled folds (``seed``): the classifier
    fitted on the fold's training rows (None where they hold one class only, which no classifier
    can learn from), the training rows and the test rows. The fits run as the caller iterates."""
    for train, test in grouped_folds(y, groups, n_folds=n_folds, seed=seed):
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


def column_aurocs(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """AUROC of each column: the scores of its positive rows ``positive`` (n, c) against those of
    its negative rows ``negative`` (m, c), ties counted as one half (the Mann-Whitney statistic)."""
    n, m = positive.shape[0], negative.shape[0]
    ranks = sps.rankdata(np.vstack([positive, negative]), axis=0)
    return (ranks[:n].sum(axis=0) - n * (n + 1) / 2) / (n * m)
