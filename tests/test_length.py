import numpy as np
import pandas as pd
import pytest
from synthetic import make_results, reasoning_conditions

from analysis.findings.length import length_regression, per_sample_means


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
