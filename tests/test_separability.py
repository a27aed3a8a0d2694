import numpy as np
from synthetic import make_results, reasoning_conditions

from analysis.findings.separability import separability


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
