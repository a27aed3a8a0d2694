"""The bootstrap engine: curves equal to the plain means, one resampling shared by conditions and
models, intervals that widen for few instructions."""

import math

import numpy as np
import pandas as pd
import pytest
from synthetic import make_results, reasoning_conditions

from analysis.findings import bootstrap, metrics
from analysis.findings.bootstrap import Estimate, all_curve_draws, combine, pooled
from analysis.findings.intervals import t_interval, t_quantile


def test_estimates_equal_the_layer_curves():
    rows = make_results(reasoning_conditions("aqua"), n_samples=7, sample_sd=0.3, seed=1)
    cd = all_curve_draws(rows, ["base-model"], ("nuclear_norm",), n_resamples=50)["base-model"]
    expected = metrics.layer_curves(rows, "nuclear_norm")
    for (condition, proj), curve in expected.groupby(["condition", "proj"]):
        np.testing.assert_allclose(cd.estimate[(condition, proj, "nuclear_norm")], curve["value"], rtol=1e-12)
        assert cd.draws[(condition, proj, "nuclear_norm")].shape == (50, 18)


def test_resampling_is_reproducible_and_shared_by_conditions_and_models():
    rows = make_results(
        reasoning_conditions("aqua"), {"a": ("base", 18), "b": ("instruct", 18)}, n_samples=6, sample_sd=0.3, seed=2
    )
    first = all_curve_draws(rows, ["a", "b"], ("nuclear_norm",), n_resamples=100, seed=5)
    again = all_curve_draws(rows, ["a", "b"], ("nuclear_norm",), n_resamples=100, seed=5)
    key = ("aqua/none/correct", "q", "nuclear_norm")
    np.testing.assert_array_equal(first["a"].draws[key], again["a"].draws[key])
    # identical data in two models give identical draws: their instructions are resampled together
    same = rows[rows["model"] == "a"].assign(model="c")
    both = all_curve_draws(pd.concat([rows, same]), ["a", "c"], ("nuclear_norm",), n_resamples=100, seed=5)
    np.testing.assert_array_equal(both["a"].draws[key], both["c"].draws[key])
    # and so do the two response types of one instruction
    counts = both["a"].resampling.counts["aqua"]
    assert counts.shape == (100, 6) and (counts.sum(axis=1) == 6).all()


def test_intervals_narrow_with_more_instructions():
    widths = []
    for n in (6, 200):
        rows = make_results(reasoning_conditions("gsm8k", settings=("none",)), n_samples=n, sample_sd=0.3, seed=3)
        cd = all_curve_draws(rows, ["base-model"], ("nuclear_norm",), n_resamples=300)["base-model"]
        key = ("gsm8k/none/correct", "q", "nuclear_norm")
        _, low, high = cd.interval(cd.estimate[key].mean(), cd.draws[key].mean(axis=1), n)
        widths.append(high - low)
    assert widths[1] < widths[0] / 4  # sqrt(200 / 6) and a t quantile of 5 degrees of freedom


def test_incomplete_sample_is_dropped_from_its_curve_only():
    rows = make_results(reasoning_conditions("aqua", settings=("none",)), n_samples=5)
    rows.loc[(rows["sample_index"] == 2) & (rows["proj"] == "k") & (rows["layer"] == 3), "nuclear_norm"] = np.nan
    cd = all_curve_draws(rows, ["base-model"], ("nuclear_norm",), n_resamples=50)["base-model"]
    assert cd.n_samples[("aqua/none/correct", "k", "nuclear_norm")] == 4
    assert cd.n_samples[("aqua/none/correct", "q", "nuclear_norm")] == 5
    assert np.isfinite(cd.draws[("aqua/none/correct", "k", "nuclear_norm")]).all()


def test_curves_without_some_instructions():
    rows = make_results(reasoning_conditions("aqua", settings=("none",)), n_samples=6, sample_sd=0.3, seed=4)
    cd = all_curve_draws(rows, ["base-model"], ("nuclear_norm",), n_resamples=50)["base-model"]
    estimate, draws, n = cd.stacked_without("aqua/none/correct", {0, 1})
    assert n == 4 and estimate.shape == (4, 18) and draws.shape == (4, 50, 18)
    kept = rows[(rows["condition"] == "aqua/none/correct") & (rows["sample_index"] >= 2) & (rows["proj"] == "q")]
    np.testing.assert_allclose(estimate[0], kept.groupby("layer")["nuclear_norm"].mean(), rtol=1e-12)


def test_t_interval_width_and_undefined_cases():
    draws = np.random.default_rng(0).standard_normal(4000)
    low, high = t_interval(0.0, draws, 5, 4)
    from scipy import stats

    expected = math.sqrt(5 / 4) * stats.t.ppf(0.975, 4) * draws.std(ddof=1)
    assert high == pytest.approx(expected) and low == pytest.approx(-expected)
    assert all(math.isnan(x) for x in t_interval(0.0, draws, 1, 0))
    assert all(math.isnan(x) for x in t_interval(math.nan, draws, 5, 4))
    half_nan = np.where(np.arange(10) < 6, np.nan, 1.0)
    assert all(math.isnan(x) for x in t_interval(1.0, half_nan, 5, 4))


def test_estimates_combine_and_pool_over_datasets():
    a = Estimate(2.0, np.full(10, 2.0), (("aqua", 5),))
    b = Estimate(1.0, np.full(10, 1.0), (("aqua", 4),))
    c = Estimate(4.0, np.full(10, 4.0), (("gsm8k", 5),))
    diff = combine(np.subtract, a, b)
    assert diff.value == 1.0 and diff.strata == (("aqua", 4),) and diff.n == 4 and diff.df == 3
    same = Estimate(2.0, np.full(10, 2.0), (("gsm8k", 5),))
    family = pooled([a, same])
    assert family.value == 2.0 and family.n == 10 and family.df == 8 and family.n_smallest == 5
    assert pooled([a, c]).value == 3.0
    assert pooled([]) is None
    assert bootstrap.MIN_VERDICT_SAMPLES == 5


def test_a_family_estimates_the_mean_of_its_datasets_with_their_own_noise():
    """A family's value is the mean over the datasets it names, its interval their own noise only
    (no pre-test, no t on datasets less one): two datasets each sure of an opposite sign give a
    narrow interval of their mean (the report names the datasets on each side)."""
    rng = np.random.default_rng(0)

    def noisy(value, dataset, sd=0.1):
        return Estimate(value, value + sd * rng.standard_normal(400), ((dataset, 10),))

    apart = [noisy(1.0, "aqua"), noisy(-0.6, "gsm8k")]
    assert all(e.interval()[0] > 0 or e.interval()[1] < 0 for e in apart)
    family = pooled(apart)
    assert family.value == pytest.approx(0.2)
    own = sum(e.standard_error() ** 2 for e in apart) / 4
    assert family.standard_error() == pytest.approx(math.sqrt(own), rel=0.1)  # the draws of their mean
    assert family.df > 10 and family.interval()[0] > 0  # within-dataset noise: their mean is sure


def test_map_keeps_a_share_bounded():
    share = Estimate(0.9, np.linspace(0.8, 1.0, 200), (("d", 10),), bounded=True)
    mapped = share.map(lambda x: 1 - x)
    assert mapped.bounded and mapped.value == pytest.approx(0.1)
    low, high = mapped.interval()
    assert 0.0 <= low < 0.1 < high <= 1.0  # a Wilson interval, inside [0, 1]
    assert not Estimate(0.9, np.linspace(0.8, 1.0, 200), (("d", 10),)).map(np.log).bounded


def test_bootstrap_t_of_a_log_ratio_of_arithmetic_means():
    from analysis.findings.studentized import log_mean_contrast, mean_contrast, pooled_studentized

    rng = np.random.default_rng(3)
    a, b = np.exp(rng.normal(0.3, 0.8, 12)), np.exp(rng.normal(0.0, 0.3, 12))
    weights = bootstrap.resample_counts(12, 500, rng)
    est = log_mean_contrast(np.column_stack([a, b]), (1, -1), weights, "d")
    assert est.value == pytest.approx(math.log(a.mean() / b.mean()))
    z = a / a.mean() - b / b.mean()  # the delta method's influence values
    assert est.se == pytest.approx(z.std(ddof=1) / math.sqrt(12))
    assert est.draws[0] == pytest.approx(math.log((weights[0] @ a) / (weights[0] @ b)))
    low, high = est.interval()
    assert low < est.value < high and est.interval(0.99)[0] < low
    two = pooled_studentized([est, log_mean_contrast(np.column_stack([b, a]), (1, -1), weights, "e")])
    assert two.value == pytest.approx(0.0) and two.se == pytest.approx(est.se / math.sqrt(2))
    assert two.n == 24 and two.n_smallest == 12
    plain = mean_contrast(np.log(a)[:, None], (1,), weights, "d")
    assert plain.value == pytest.approx(np.log(a).mean()) and plain.se == pytest.approx(
        np.log(a).std(ddof=1) / math.sqrt(12)
    )
    assert log_mean_contrast(np.column_stack([a, -b]), (1, -1), weights, "d") is None  # logs of positive means only


def test_the_t_quantile_is_scipys_t_ppf_exactly():
    from scipy import stats as sps

    dfs = [1e-9, 0.5, 1.0, 2.0, 3.7, 4.0, 11.25, 59.0, 1e6, math.inf]
    for level in (0.95, 0.975, 1 - 0.05 / 6):
        assert [t_quantile(df, level) for df in dfs] == [float(sps.t.ppf(1 - (1 - level) / 2, df)) for df in dfs]
    assert math.isnan(t_quantile(0.0, 0.95)) and math.isnan(float(sps.t.ppf(0.975, 0.0)))
