import numpy as np
import pandas as pd
import pytest

from analysis.metrics import (default_model_pairs, findings, layer_curves, layer_splits,
                              mad_by_segment, mad_table, mean_absolute_difference, rd_summary,
                              rd_table, relative_difference, sample_matrix)
from synthetic import make_results, reasoning_conditions


# --------------------------------------------------------------------------- splits

@pytest.mark.parametrize("n_layers, expected", [
    (28, {"early": (0, 7), "middle": (7, 21), "late": (21, 28)}),
    (26, {"early": (0, 7), "middle": (7, 20), "late": (20, 26)}),
    (32, {"early": (0, 10), "middle": (10, 20), "late": (20, 32)}),
    (42, {"early": (0, 12), "middle": (12, 30), "late": (30, 42)}),
    (18, {"early": (0, 5), "middle": (5, 13), "late": (13, 18)}),
    (30, {"early": (0, 8), "middle": (8, 22), "late": (22, 30)}),
    (4, {"early": (0, 1), "middle": (1, 3), "late": (3, 4)}),
])
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


def test_mad_by_segment_uses_only_inside_differences():
    curve = np.arange(28, dtype=float) ** 2  # differences 2i + 1
    mad = mad_by_segment(curve)
    assert mad["early"] == pytest.approx(36 / 6)           # layers 0..6
    assert mad["middle"] == pytest.approx((400 - 49) / 13)  # layers 7..20
    assert mad["late"] == pytest.approx((729 - 441) / 6)    # layers 21..27
    assert mad["all"] == pytest.approx(729 / 27)


def test_mad_by_segment_ignores_jumps_between_segments():
    curve = np.repeat([1.0, 5.0, 9.0], [5, 8, 5])  # an 18-layer step curve
    mad = mad_by_segment(curve)
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
    assert list(curves.columns[:10]) == ["model", "dataset", "setting", "responses", "condition",
                                         "proj", "layer", "value", "n_samples", "n_dropped"]
    assert list(curves["proj"].unique()) == ["q", "k", "v", "o"]
    q = df[df.proj == "q"].groupby("layer")["nuclear_norm"].mean().to_numpy()
    np.testing.assert_allclose(curves[curves.proj == "q"]["value"], q)
    v = df[(df.proj == "v") & (df.sample_index != 2)].groupby("layer")["nuclear_norm"].mean()
    np.testing.assert_allclose(curves[curves.proj == "v"]["value"], v.to_numpy())
    counts = curves.groupby("proj", observed=True)[["n_samples", "n_dropped"]].first()
    assert counts.loc["v"].tolist() == [4, 1] and counts.loc["q"].tolist() == [5, 0]


def test_mad_table_matches_mad_of_curves():
    df = make_results(reasoning_conditions("gsm8k"), n_samples=4)
    table = mad_table(df)
    assert len(table) == 6 * 4
    curves = layer_curves(df)
    row = table[(table.condition == "gsm8k/detailed/correct") & (table.proj == "o")].iloc[0]
    curve = curves[(curves.condition == "gsm8k/detailed/correct") & (curves.proj == "o")]
    for segment, value in mad_by_segment(curve["value"].to_numpy()).items():
        assert row[segment] == pytest.approx(value)


def test_rd_table_pairs_correct_with_irrelevant():
    def curve(model, dataset, setting, responses, proj, layers):
        scale = 1.5 if (setting == "detailed" and responses == "irrelevant") else 1.0
        return scale * (1.0 + 0.1 * layers)

    df = make_results(reasoning_conditions("ecqa", settings=("none", "detailed")), curve=curve,
                      noise=0.0)
    df = pd.concat([df, make_results([("ecqa", "simplified", "correct")], noise=0.0)])
    table = rd_table(df)
    assert set(table.setting) == {"none", "detailed"}  # simplified lacks irrelevant responses
    detailed = table[table.setting == "detailed"]
    np.testing.assert_allclose(detailed["mean_abs_rd"], 0.5)
    np.testing.assert_allclose(table[table.setting == "none"]["mean_abs_rd"], 0.0, atol=1e-12)
    assert (detailed["n_correct"] == 8).all() and (detailed["n_irrelevant"] == 8).all()


# --------------------------------------------------------------------------- findings

def paper_like_curve(hold: bool):
    """Curves built so that every check F1-F5 holds (hold=True) or fails (hold=False).

    Fast thinking is jagged and large, slow thinking smooth and small (swapped to fail).
    Irrelevant responses are scaled by 1 + RD: holding, RD is 0.5 (base) / 0.2 (instruct) under
    detailed CoT and 0 elsewhere; failing, RD is 1.5 under none and 0.1 (base) / 0.3
    (instruct) under detailed CoT, and Wiki irrelevant responses are doubled.
    """
    jagged = lambda level, amp, layers: level + amp * (-1.0) ** layers
    fast, slow = ("none", "detailed") if hold else ("detailed", "none")

    def irrelevant_factor(model, dataset, setting):
        is_base = model.startswith("base")
        if dataset == "wiki":
            return 1.0 if hold else 2.0
        if hold:
            rd = {"detailed": 0.5 if is_base else 0.2}
        else:
            rd = {"none": 1.5, "detailed": 0.1 if is_base else 0.3}
        return 1.0 + rd.get(setting, 0.0)

    def curve(model, dataset, setting, responses, proj, layers):
        if dataset == "wiki":
            base = jagged(2.0, 0.5, layers)
        else:
            base = {fast: jagged(10.0, 3.0, layers), "simplified": jagged(4.0, 1.0, layers),
                    slow: 1.0 + 0.01 * layers}[setting]
        if responses == "irrelevant":
            base = base * irrelevant_factor(model, dataset, setting)
        return base

    return curve


MODELS = {"base-model": ("base", 18), "instruct-model": ("instruct", 18)}
ALL_CONDITIONS = (reasoning_conditions("aqua")
                  + reasoning_conditions("wiki", settings=("len100", "len1000")))


def test_findings_hold_when_built_to_hold():
    df = make_results(ALL_CONDITIONS, models=MODELS, n_samples=6, curve=paper_like_curve(True))
    out = findings(df)
    assert list(out.columns) == ["check", "claim", "model", "scope", "numbers", "holds"]
    assert set(out.check) == {"F1", "F2", "F3", "F4", "F5"}
    assert out["holds"].tolist() == [True] * len(out)
    f4 = out[out.check == "F4"]
    assert set(f4.model) == {"instruct-model"} and set(f4.scope) == {"aqua", "all"}
    f1 = out[(out.check == "F1") & (out.model == "base-model")].iloc[0]
    assert f1.scope == "aqua" and "early" in f1.numbers
    assert set(out[out.check == "F5"].scope) == {"wiki"}


def test_findings_fail_when_built_to_fail():
    df = make_results(ALL_CONDITIONS, models=MODELS, n_samples=6, curve=paper_like_curve(False))
    out = findings(df)
    assert set(out.check) == {"F1", "F2", "F3", "F4", "F5"}
    assert out["holds"].tolist() == [False] * len(out)


def test_f5_fails_when_long_wiki_responses_flatten_the_curve():
    hold = paper_like_curve(True)

    def curve(model, dataset, setting, responses, proj, layers):
        if setting == "len100":
            return 6.0 + 5.0 * (-1.0) ** layers
        if setting == "len1000":
            return 0.2 + 0.0 * layers
        return hold(model, dataset, setting, responses, proj, layers)

    out = findings(make_results(ALL_CONDITIONS, models=MODELS, n_samples=6, curve=curve))
    assert out[out.check == "F5"].holds.tolist() == [False, False]
    assert out[out.check != "F5"].holds.tolist() == [True] * 8


def test_findings_only_cover_what_the_data_holds():
    curve = paper_like_curve(True)
    base_only = {"base-model": ("base", 18)}
    df = make_results(reasoning_conditions("aqua"), models=base_only, curve=curve)
    assert set(findings(df).check) == {"F1", "F2", "F3"}
    math = make_results(reasoning_conditions("math-algebra", settings=("simplified", "detailed")),
                        models=base_only, curve=curve)
    out = findings(math)
    assert out.check.tolist() == ["F2"] and out.holds.tolist() == [True]
    assert "simplified/detailed" in out.numbers.iloc[0]


def test_f5_without_reasoning_data_uses_fallbacks_and_undecided_without_len100():
    curve = paper_like_curve(True)
    wiki = make_results(reasoning_conditions("wiki", settings=("len100", "len1000")), curve=curve)
    out = findings(wiki)
    assert out.check.tolist() == ["F5"] and out.holds.tolist() == [True]
    assert "fallback" in out.numbers.iloc[0]
    partial = make_results(reasoning_conditions("wiki", settings=("len500", "len1000")), curve=curve)
    assert findings(partial).holds.tolist() == [None]


def test_default_model_pairs_by_longest_prefix():
    templates = {"Qwen/Qwen2-1.5B": "base", "Qwen/Qwen2-1.5B-Instruct": "instruct",
                 "google/gemma-2-2b": "base", "google/gemma-2-2b-it": "instruct"}
    assert default_model_pairs(templates) == {"Qwen/Qwen2-1.5B-Instruct": "Qwen/Qwen2-1.5B",
                                              "google/gemma-2-2b-it": "google/gemma-2-2b"}
    assert default_model_pairs({"a": "instruct"}) == {}
