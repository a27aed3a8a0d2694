import numpy as np
import pandas as pd
import pytest
from synthetic import make_results, reasoning_conditions

from analysis.findings.metrics import (
    layer_curves,
    layer_splits,
    mean_absolute_difference,
    rd_summary,
    relative_difference,
    sample_matrix,
)
from analysis.report import curve_tables

# --------------------------------------------------------------------------- splits


@pytest.mark.parametrize(
    "n_layers, expected",
    [
        (28, {"early": (0, 7), "middle": (7, 21), "late": (21, 28)}),
        (26, {"early": (0, 7), "middle": (7, 20), "late": (20, 26)}),
        (32, {"early": (0, 10), "middle": (10, 20), "late": (20, 32)}),
        (42, {"early": (0, 12), "middle": (12, 30), "late": (30, 42)}),
        (18, {"early": (0, 5), "middle": (5, 13), "late": (13, 18)}),
        (30, {"early": (0, 8), "middle": (8, 22), "late": (22, 30)}),
        (4, {"early": (0, 1), "middle": (1, 3), "late": (3, 4)}),
    ],
)
def test_layer_splits_paper_table_and_general_rule(n_layers, expected):
    assert layer_splits(n_layers) == expected


def test_layer_splits_cover_every_layer_once():
    for n in range(4, 90):
        s = layer_splits(n)
        assert s["early"][0] == 0 and s["late"][1] == n
        assert s["early"][1] == s["middle"][0] and s["middle"][1] == s["late"][0]
        assert all(hi > lo for lo, hi in s.values())


def test_layer_splits_reject_shallow_models():
    with pytest.raises(ValueError):
        layer_splits(3)


# --------------------------------------------------------------------------- MAD / RD


def test_mad_hand_computed():
    assert mean_absolute_difference([1, 3, 2, 6]) == pytest.approx(7 / 3)
    assert mean_absolute_difference([5, 5, 5]) == 0
    assert np.isnan(mean_absolute_difference([1.0]))
    stacked = mean_absolute_difference(np.array([[1, 3, 2, 6], [0, 1, 2, 3]]))
    np.testing.assert_allclose(stacked, [7 / 3, 1])


def _mad_by_segment(curve: np.ndarray) -> dict[str, float]:
    """The MAD of each segment as the book's tables compute it (``curve_tables.segment_mad``)."""
    return {segment: float(curve_tables.segment_mad(curve, segment)) for segment in curve_tables.SEGMENTS}


def test_mad_by_segment_uses_only_inside_differences():
    curve = np.arange(28, dtype=float) ** 2  # differences 2i + 1
    mad = _mad_by_segment(curve)
    assert mad["early"] == pytest.approx(36 / 6)  # layers 0..6
    assert mad["middle"] == pytest.approx((400 - 49) / 13)  # layers 7..20
    assert mad["late"] == pytest.approx((729 - 441) / 6)  # layers 21..27
    assert mad["all"] == pytest.approx(729 / 27)


def test_mad_by_segment_ignores_jumps_between_segments():
    curve = np.repeat([1.0, 5.0, 9.0], [5, 8, 5])  # an 18-layer step curve
    mad = _mad_by_segment(curve)
    assert mad["early"] == mad["middle"] == mad["late"] == 0
    assert mad["all"] == pytest.approx(8 / 17)


def test_relative_difference_and_summary_hand_computed():
    a, b = [1.0, 2.0, 4.0], [2.0, 2.0, 2.0]
    np.testing.assert_allclose(relative_difference(a, b), [1.0, 0.0, -0.5])
    s = rd_summary(a, b, top=2)
    assert s["mean_abs_rd"] == pytest.approx(0.5)
    assert s["mean_rd"] == pytest.approx(1 / 6)
    assert s["top_layers"] == (0, 2)


def test_rd_summary_skips_undefined_layers():
    s = rd_summary([0.0, 1.0, np.nan], [1.0, 3.0, 2.0])
    assert s["mean_abs_rd"] == pytest.approx(2.0)
    assert s["top_layers"] == (1,)


# --------------------------------------------------------------------------- samples -> curves


def one_condition(n_samples=5):
    return make_results([("aqua", "none", "correct")], n_samples=n_samples, seed=1)


def test_sample_matrix_drops_and_counts_nan_samples():
    df = one_condition()
    df.loc[(df.sample_index == 1) & (df.layer == 3) & (df.proj == "q"), "nuclear_norm"] = np.nan
    df = df[~((df.sample_index == 4) & (df.layer == 7) & (df.proj == "q"))]  # missing row
    matrix, ids, dropped = sample_matrix(df, "nuclear_norm", "q")
    assert matrix.shape == (3, 18) and list(ids) == [0, 2, 3] and dropped == 2
    assert not np.isnan(matrix).any()
    _, ids_k, dropped_k = sample_matrix(df, "nuclear_norm", "k")  # other projections untouched
    assert len(ids_k) == 5 and dropped_k == 0


def test_sample_matrix_keeps_layers_undefined_for_everyone():
    matrix, ids, dropped = sample_matrix(one_condition(), "cos_next_layer", "q")
    assert dropped == 0 and len(ids) == 5
    assert np.isnan(matrix[:, -1]).all() and not np.isnan(matrix[:, :-1]).any()


def test_sample_matrix_refuses_mixed_conditions():
    df = make_results(reasoning_conditions("aqua", settings=("none",)))
    with pytest.raises(ValueError):
        sample_matrix(df, "nuclear_norm", "q")


def test_curves_refuse_two_runs_of_one_condition():
    df = one_condition()
    twice = pd.concat([df, df.assign(max_length=512)])
    with pytest.raises(ValueError, match="max_length"):
        layer_curves(twice)


def test_layer_curves_are_sample_means_with_counts():
    df = one_condition()
    df.loc[(df.sample_index == 2) & (df.proj == "v"), "nuclear_norm"] = np.nan
    curves = layer_curves(df)
    assert list(curves.columns[:10]) == [
        "model",
        "dataset",
        "setting",
        "responses",
        "condition",
        "proj",
        "layer",
        "value",
        "n_samples",
        "n_dropped",
    ]
    assert list(curves["proj"].unique()) == ["q", "k", "v", "o"]
    q = df[df.proj == "q"].groupby("layer")["nuclear_norm"].mean().to_numpy()
    np.testing.assert_allclose(curves[curves.proj == "q"]["value"], q)
    v = df[(df.proj == "v") & (df.sample_index != 2)].groupby("layer")["nuclear_norm"].mean()
    np.testing.assert_allclose(curves[curves.proj == "v"]["value"], v.to_numpy())
    counts = curves.groupby("proj", observed=True)[["n_samples", "n_dropped"]].first()
    assert counts.loc["v"].tolist() == [4, 1] and counts.loc["q"].tolist() == [5, 0]
