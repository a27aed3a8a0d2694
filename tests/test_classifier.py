import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from analysis.findings.classifier import weighted_auroc


def test_weighted_auroc_matches_sklearn_with_ties_and_weights():
    rng = np.random.default_rng(6)
    scores = rng.integers(0, 5, size=40).astype(float)
    labels = rng.integers(0, 2, size=40)
    assert weighted_auroc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    counts = rng.integers(0, 3, size=(3, 40)).astype(float)
    expected = [roc_auc_score(labels, scores, sample_weight=w) for w in counts]
    np.testing.assert_allclose(weighted_auroc(scores, labels, counts), expected)
