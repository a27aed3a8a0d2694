import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from synthetic import make_results, reasoning_conditions

from analysis.findings.length import length_regression, per_sample_means
from analysis.findings.questions import paired_test, separability, weighted_auroc


def test_paired_test_detects_known_shift():
    rng = np.random.default_rng(4)
    y = rng.normal(size=50)
    out = paired_test(y + 1.0, y)
    assert out["p_value"] < 1e-6 and out["rank_biserial"] == 1.0
    assert out["median_difference"] == pytest.approx(1.0) and out["n"] == 50


def test_paired_test_rank_biserial_hand_computed():
    # differences 1, -2, 3, 4: ranks 1..4, W+ = 8, W- = 2
    out = paired_test(np.array([1.0, -2.0, 3.0, 4.0]), np.zeros(4))
    assert out["rank_biserial"] == pytest.approx(0.6)
    assert out["statistic"] == pytest.approx(2.0)


def test_paired_test_without_shift_and_degenerate():
    rng = np.random.default_rng(5)
    out = paired_test(rng.normal(size=200), rng.normal(size=200))
    assert out["p_value"] > 0.01 and abs(out["rank_biserial"]) < 0.2
    same = paired_test(np.ones(5), np.ones(5))
    assert np.isnan(same["p_value"]) and same["reason"]


# --------------------------------------------------------------------------- AUROC


def test_weighted_auroc_matches_sklearn_with_ties_and_weights():
    rng = np.random.default_rng(6)
    scores = rng.integers(0, 5, size=40).astype(float)
    labels = rng.integers(0, 2, size=40)
    assert weighted_auroc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    counts = rng.integers(0, 3, size=(3, 40)).astype(float)
    expected = [roc_auc_score(labels, scores, sample_weight=w) for w in counts]
    np.testing.assert_allclose(weighted_auroc(scores, labels, counts), expected)


def separable_curve(gap):
    def curve(model, dataset, setting, responses, proj, layers):
        bump = gap * (layers >= 10) if responses == "irrelevant" else 0.0
        return (1.0 + 0.05 * layers) * (1.0 + bump)

    return curve


def test_separability_near_one_on_separable_data():
    df = make_results(
        reasoning_conditions("aqua", settings=("detailed",)),
        n_samples=30,
        curve=separable_curve(0.5),
        noise=0.1,
        sample_sd=0.3,
    )
    out = separability(df, "base-model", "aqua", "detailed", n_resamples=300)
    assert out["reason"] is None and out["n_folds"] == 5 and out["n_samples"] == 30
    assert out["auroc"] > 0.95 and out["auroc_low"] > 0.85
    assert out["auroc_high"] <= 1.0  # the interval of a share stays inside [0, 1]
    # one feature cannot cancel the per-sample scale as the full model does
    assert 0.65 < out["best_feature_auroc"] < out["auroc"]
    assert int(out["best_feature"][1:]) >= 10


def shuffle_within_instructions(df, seed):
    """Swap the correct/irrelevant labels of a random half of the instructions."""
    n = df["sample_index"].max() + 1
    flip = (np.random.default_rng(seed).random(n) < 0.5)[df["sample_index"].to_numpy()]
    other = np.where(df["responses"] == "correct", "irrelevant", "correct")
    return df.assign(responses=np.where(flip, other, df["responses"]))


def test_separability_near_half_on_shuffled_labels():
    aurocs, single, in_sample = [], [], []
    for seed in range(6):
        df = make_results(
            reasoning_conditions("aqua", settings=("detailed",)),
            n_samples=60,
            curve=separable_curve(0.5),
            noise=0.1,
            sample_sd=0.3,
            seed=seed,
        )
        out = separability(
            shuffle_within_instructions(df, seed), "base-model", "aqua", "detailed", n_resamples=200, seed=seed
        )
        aurocs.append(out["auroc"])
        single.append(out["best_feature_auroc"])
        in_sample.append(out["best_feature_auroc_in_sample"])
    # out-of-fold AUROC under no signal scatters around (slightly below) one half
    assert 0.35 < np.mean(aurocs) < 0.6 and max(aurocs) < 0.7
    assert 0.35 < np.mean(single) < 0.65
    # picking the best of 72 features on all rows looks better than it is
    assert np.mean(in_sample) > np.mean(single) + 0.05


def test_separability_small_and_impossible_cases():
    df = make_results(reasoning_conditions("aqua", settings=("detailed",)), n_samples=4, curve=separable_curve(0.5))
    small = separability(df, "base-model", "aqua", "detailed", n_resamples=100)
    assert small["n_folds"] == 4 and small["reason"] is None and np.isfinite(small["auroc"])
    one = separability(df[df.sample_index == 0], "base-model", "aqua", "detailed")
    assert np.isnan(one["auroc"]) and "two instructions" in one["reason"]
    correct_only = separability(df[df.responses == "correct"], "base-model", "aqua", "detailed")
    assert np.isnan(correct_only["auroc"]) and "both" in correct_only["reason"]
    missing = separability(df, "base-model", "aqua", "none")
    assert np.isnan(missing["auroc"]) and missing["reason"]


# --------------------------------------------------------------------------- length


def test_length_regression_recovers_length_effect():
    df = make_results(
        reasoning_conditions("gsm8k", responses=("correct",)), n_samples=40, length_exponent=-0.5, noise=0.01
    )
    out = length_regression(df)
    assert list(out.setting) == ["simplified", "detailed"]
    assert (out.reference_setting == "none").all()
    assert out.slope_length_only.iloc[0] == pytest.approx(-0.5, abs=0.02)
    assert out.slope_with_setting.iloc[0] == pytest.approx(-0.5, abs=0.05)
    # the settings differ only through length: their effect vanishes once length is in
    assert (out.coef_setting_only < -0.5).all()
    np.testing.assert_allclose(out.coef_with_length, 0.0, atol=0.05)
    assert out.r2_with_setting.iloc[0] > 0.99 and out.reason.isna().all()


def test_length_regression_keeps_setting_effect_beyond_length():
    def curve(model, dataset, setting, responses, proj, layers):
        return {"none": 4.0, "simplified": 2.0, "detailed": 1.0}[setting] * np.ones(len(layers))

    df = make_results(reasoning_conditions("gsm8k", responses=("correct",)), n_samples=40, curve=curve, noise=0.01)
    out = length_regression(df, by_proj=True)
    assert len(out) == 2 * 4
    detailed = out[out.setting == "detailed"]
    np.testing.assert_allclose(detailed.coef_setting_only, np.log(0.25), atol=0.02)
    np.testing.assert_allclose(detailed.slope_with_setting, 0.0, atol=0.05)
    np.testing.assert_allclose(detailed.coef_with_length, np.log(0.25), atol=0.2)


def test_per_sample_means_drop_incomplete_samples():
    df = make_results([("aqua", "none", "correct")], n_samples=3)
    df.loc[(df.sample_index == 1) & (df.layer == 0), "nuclear_norm"] = np.nan
    means = per_sample_means(df)
    assert means.sample_index.tolist() == [0, 2]
    # the last next-layer cosine is undefined for everybody and drops nobody
    assert len(per_sample_means(df, "cos_next_layer")) == 3
    row = df[df.sample_index == 0]
    assert means.value.iloc[0] == pytest.approx(row.nuclear_norm.mean())
    assert isinstance(means, pd.DataFrame)
