import json
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from analysis import metrics, report
from analysis.store import ResultsStore, RunKey
from synthetic import make_results, reasoning_conditions

MODELS = {"gemma-3-270m": ("base", 18), "smollm2-135m-instruct": ("instruct", 30)}
SCALE = {"none": 3.0, "simplified": 2.0, "detailed": 1.0, "detailed_cut_none": 1.0,
         "len100": 1.0, "len1000": 1.0}
WIGGLE = {"none": 1.0, "simplified": 0.3, "detailed": 0.05, "detailed_cut_none": 0.05,
          "len100": 0.05, "len1000": 0.05}


def paper_like(model, dataset, setting, responses, proj, layers):
    """Fast thinking large and bumpy, slow thinking small and smooth; irrelevant detailed larger."""
    curve = SCALE[setting] + WIGGLE[setting] * np.sin(1.7 * layers) ** 2
    if responses == "irrelevant" and setting in ("detailed", "detailed_cut_none"):
        curve = 1.5 * curve
    return curve


def reversed_curves(model, dataset, setting, responses, proj, layers):
    """Slow thinking large and bumpy: the opposite of the paper."""
    flipped = {"none": "detailed", "detailed": "none", "simplified": "simplified"}[setting]
    return SCALE[flipped] + WIGGLE[flipped] * np.sin(1.7 * layers) ** 2


def flat(model, dataset, setting, responses, proj, layers):
    return 1.0 + 0.05 * layers


@pytest.fixture(scope="module")
def paper_rows():
    conditions = reasoning_conditions("aqua") + [("aqua", "detailed_cut_none", r) for r in ("correct", "irrelevant")]
    conditions += [("wiki", s, r) for s in ("len100", "len1000") for r in ("correct", "irrelevant")]
    return make_results(conditions, MODELS, n_samples=24, curve=paper_like, noise=0.02, sample_sd=0.1, seed=1)


@pytest.fixture(scope="module")
def paper_draws(paper_rows):
    results = _results(paper_rows)
    return report.all_curve_draws(results, n_resamples=200, seed=0)


def _results(rows):
    models = tuple(dict.fromkeys(rows["model"]))
    coverage = pd.DataFrame(columns=["model", "condition", "expected", "stored", "skipped", "missing"])
    return report.StudyResults(rows, pd.DataFrame(), coverage, models, tuple(rows["condition"].unique()), None)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# --------------------------------------------------------------------------- curves and intervals


def test_bootstrap_estimates_equal_the_layer_curves(paper_rows, paper_draws):
    curves, bands = report.curves_and_bands(paper_draws)
    expected = metrics.layer_curves(paper_rows, "nuclear_norm")
    merged = expected.merge(curves[curves["stat"] == "nuclear_norm"], on=["model", "condition", "proj", "layer"])
    assert len(merged) == len(expected)
    np.testing.assert_allclose(merged["value_x"], merged["value_y"], rtol=1e-12)
    inside = bands.merge(curves, on=["model", "condition", "proj", "layer", "stat"])
    assert (inside["low"] <= inside["value"] + 1e-12).all() and (inside["value"] <= inside["high"] + 1e-12).all()


def test_mad_and_rd_tables_match_metrics_with_intervals_around_them(paper_rows, paper_draws):
    mads = report.mad_interval_table(paper_draws, responses=("correct", "irrelevant"))
    expected = metrics.mad_table(paper_rows[paper_rows["setting"].isin(report.STUDY_SETTINGS)])
    merged = expected.merge(mads, on=["model", "dataset", "setting", "responses", "proj"])
    assert len(merged) == len(expected)
    for segment in report.SEGMENTS:
        np.testing.assert_allclose(merged[f"{segment}_x"], merged[f"{segment}_y"], rtol=1e-12)
        assert (merged[f"{segment}_low"] <= merged[f"{segment}_y"]).all()
        assert (merged[f"{segment}_y"] <= merged[f"{segment}_high"]).all()

    rds = report.rd_interval_table(paper_draws)
    expected_rd = metrics.rd_table(paper_rows[paper_rows["setting"].isin(report.STUDY_SETTINGS)])
    merged = expected_rd.merge(rds, on=["model", "dataset", "setting", "proj"])
    assert len(merged) == len(expected_rd) > 0
    np.testing.assert_allclose(merged["mean_abs_rd_x"], merged["mean_abs_rd_y"], rtol=1e-12)
    detailed = rds[rds["setting"] == "detailed"]
    np.testing.assert_allclose(detailed["mean_rd"], 0.5, atol=0.08)
    assert (detailed["mean_rd_low"] > 0.3).all()


def test_bootstrap_is_reproducible_and_narrows_with_more_samples():
    conditions = reasoning_conditions("gsm8k", settings=("none",))
    small = make_results(conditions, n_samples=6, sample_sd=0.3, seed=2)
    large = make_results(conditions, n_samples=200, sample_sd=0.3, seed=2)
    widths = []
    for rows in (small, large):
        first = report.curve_draws(rows, "base-model", ("nuclear_norm",), n_resamples=300, seed=5)
        again = report.curve_draws(rows, "base-model", ("nuclear_norm",), n_resamples=300, seed=5)
        key = ("gsm8k/none/correct", "q", "nuclear_norm")
        np.testing.assert_array_equal(first.draws[key], again.draws[key])
        _, low, high = first.interval(first.estimate[key].mean(), first.draws[key].mean(axis=1))
        widths.append(high - low)
    assert widths[1] < widths[0] / 2  # about sqrt(200 / 6) narrower


def test_incomplete_sample_is_dropped_from_its_curve_only():
    rows = make_results(reasoning_conditions("aqua", settings=("none",)), n_samples=5)
    rows.loc[(rows["sample_index"] == 2) & (rows["proj"] == "k") & (rows["layer"] == 3), "nuclear_norm"] = np.nan
    cd = report.curve_draws(rows, "base-model", ("nuclear_norm",), n_resamples=50)
    assert cd.n_samples[("aqua/none/correct", "k", "nuclear_norm")] == 4
    assert cd.n_samples[("aqua/none/correct", "q", "nuclear_norm")] == 5
    assert np.isfinite(cd.draws[("aqua/none/correct", "k", "nuclear_norm")]).all()


# --------------------------------------------------------------------------- verdicts and findings


def test_verdict_rule():
    assert report.verdict([(0.1, 0.5), (0.2, 0.3)]) == report.HOLDS
    assert report.verdict([(0.1, 0.5), (-0.2, 0.3)]) == report.UNRESOLVED
    assert report.verdict([(0.1, 0.5), (-0.4, -0.1)]) == report.FAILS
    assert report.verdict([(math.nan, math.nan)]) == report.UNRESOLVED
    assert report.verdict([]) == report.UNRESOLVED


def test_findings_hold_on_paper_like_data(paper_rows, paper_draws):
    table = report.findings_table(paper_draws, paper_rows)
    assert set(table["check"]) == {"F1", "F2", "F3", "F4", "F5"}
    for check in ("F1", "F2", "F3", "F5"):
        assert (table.loc[table["check"] == check, "verdict"] == report.HOLDS).all(), check
    f4 = table[table["check"] == "F4"]
    assert set(f4["model"]) == {"smollm2-135m-instruct"}
    assert set(f4["scope"]) == {"aqua", "all"}
    # the same curves in both models: the instruct model is neither better nor worse
    assert (f4["verdict"] == report.UNRESOLVED).all()
    assert (table.loc[table["check"] != "F4", "point_verdict"] == report.HOLDS).all()
    f1 = table[(table["check"] == "F1") & (table["model"] == "gemma-3-270m")].iloc[0]
    assert "early layers: none / detailed = " in f1["numbers"] and "[" in f1["numbers"]


def test_findings_fail_on_reversed_data():
    rows = make_results(reasoning_conditions("aqua"), MODELS, n_samples=24, curve=reversed_curves,
                        sample_sd=0.1, seed=3)
    draws = report.all_curve_draws(_results(rows), ("nuclear_norm",), n_resamples=200)
    table = report.findings_table(draws, rows, checks=("F1", "F2"))
    assert (table["verdict"] == report.FAILS).all()
    assert (table["point_verdict"] == report.FAILS).all()


def test_findings_unresolved_without_an_effect():
    rows = make_results(reasoning_conditions("aqua"), n_samples=30, curve=flat, noise=0.3, sample_sd=0.5, seed=4)
    draws = report.all_curve_draws(_results(rows), ("nuclear_norm",), n_resamples=200)
    table = report.findings_table(draws, rows, checks=("F1", "F3"))
    assert len(table) == 2
    assert (table["verdict"] == report.UNRESOLVED).all()


def test_no_verdict_from_too_few_samples(paper_rows):
    two = paper_rows[paper_rows["sample_index"] < 2]
    draws = report.all_curve_draws(_results(two), ("nuclear_norm",), n_resamples=100)
    table = report.findings_table(draws, two, checks=("F1", "F2"))
    assert (table["verdict"] == report.UNRESOLVED).all()
    assert (table["point_verdict"] == report.HOLDS).all()
    assert "fewer than 5 samples per condition, too few for an interval, n = 2" in report.finding_sentence(table.iloc[0])
    assert "4 cases rest on fewer than 5 samples" in report.findings_summary(table)


def test_f5_uses_the_reference_data_when_given(paper_rows):
    wiki = paper_rows[paper_rows["dataset"] == "wiki"]
    aqua = paper_rows[paper_rows["dataset"] == "aqua"]
    draws = report.all_curve_draws(_results(wiki), ("nuclear_norm",), n_resamples=100)
    reference = report.all_curve_draws(_results(aqua), ("nuclear_norm",), n_resamples=100)
    with_reference = report.findings_table(draws, wiki, checks=("F5",), reference=reference)
    alone = report.findings_table(draws, wiki, checks=("F5",))
    assert len(with_reference) == len(alone) == 2
    assert "fixed bar" not in with_reference["numbers"].iloc[0]
    assert "fixed bar" in alone["numbers"].iloc[0]
    assert "F5 compares the Wiki numbers with" in report.f5_reference_sentence(reference)


def test_sentences_are_generated_from_the_verdicts(paper_rows, paper_draws):
    table = report.findings_table(paper_draws, paper_rows, checks=("F1", "F4"))
    sentences = [report.finding_sentence(row) for _, row in table.iterrows()]
    assert sentences[0].startswith("**F1** holds for gemma-3-270m on aqua")
    assert any("**F4** not resolved for smollm2-135m-instruct" in s for s in sentences)
    summary = report.findings_summary(table)
    assert "- **F1**" in summary and "2 cases: 2 holds, 0 does not hold, 0 not resolved" in summary
    matrix = report.verdict_matrix(table)
    assert matrix.loc["F1", "gemma-3-270m"] == "1 / 0 / 0"
    assert report.findings_summary(table.iloc[0:0]).startswith("The data read here cover none")


# --------------------------------------------------------------------------- figures and tables


def test_paper_figures_one_per_model_and_dataset_with_offline_note(paper_draws):
    curves, bands = report.curves_and_bands(paper_draws)
    figures = list(report.paper_figures(paper_draws, curves, bands, n_samples=24))
    assert [title for title, _ in figures] == ["gemma-3-270m, aqua", "gemma-3-270m, wiki",
                                              "smollm2-135m-instruct, aqua", "smollm2-135m-instruct, wiki"]
    _, fig = figures[0]
    assert len(fig.axes) == 2 * 3  # nuclear norm and s1 ratio for none, simplified, detailed
    assert any("quantised (GGUF) then dequantised" in t.get_text() and "two different families" in t.get_text()
               for t in fig.texts)
    lengths = list(report.length_control_figures(paper_draws, curves, bands))
    assert [t for t, _ in lengths] == ["gemma-3-270m, aqua", "smollm2-135m-instruct, aqua"]
    assert len(lengths[0][1].axes) == 4  # none, detailed cut to none, simplified, detailed
    assert report.figure_note(["Qwen/Qwen2-1.5B"]) is None


def test_formatted_tables_show_intervals(paper_draws):
    mad = report.format_segment_table(report.mad_interval_table(paper_draws))
    assert list(mad.columns[-4:]) == ["early", "middle", "late", "all"]
    assert mad["all"].str.match(r"^[\d.e+-]+ \[[\d.e+-]+, [\d.e+-]+\]$").all()
    rd = report.format_rd_table(report.rd_interval_table(paper_draws))
    assert {"mean |RD|", "mean RD", "top layers (|RD|)"} <= set(rd.columns)
    er = report.effective_rank_table(paper_draws)
    assert (er["all"] > 10).all()
    sentence = report.effective_rank_sentence(paper_draws)
    assert "the mean effective rank under None CoT" in sentence and "n = 24" in sentence


# --------------------------------------------------------------------------- loading from a store


def _store_with(tmp_path, rows, skipped=None):
    store = ResultsStore(tmp_path / "results")
    for (model, condition), group in rows.groupby(["model", "condition"]):
        first = group.iloc[0]
        key = RunKey(model.replace("/", "--"), first["dataset"], first["setting"], first["responses"],
                     int(first["max_length"]), first["template"])
        store.write(key, group, None)
    if skipped is not None:
        first = skipped.iloc[0]
        key = RunKey(first["model"], first["dataset"], first["setting"], first["responses"],
                     int(first["max_length"]), first["template"])
        store.write(key, None, skipped)
    return store.root


def test_load_results_reports_missing_and_skipped(tmp_path):
    rows = make_results(reasoning_conditions("aqua", settings=("none", "detailed")),
                        {"gemma-3-270m": ("base", 18)}, n_samples=4)
    rows = rows[~((rows["condition"] == "aqua/detailed/irrelevant") & (rows["sample_index"] == 3))]
    skipped = pd.DataFrame([{"model": "gemma-3-270m", "condition": "aqua/detailed/irrelevant", "dataset": "aqua",
                             "setting": "detailed", "responses": "irrelevant", "source_file": "x.json",
                             "max_length": 1024, "template": "base", "sample_index": 3,
                             "reason": "response truncated away: prompt has 2000 tokens"}])
    root = _store_with(tmp_path, rows, skipped)
    conditions = ["aqua/none/correct", "aqua/detailed/irrelevant", "aqua/simplified/correct"]
    results = report.load_results(root, ["gemma-3-270m", "smollm2-135m-instruct"], conditions, n_samples=3,
                                  data_dir=tmp_path / "no-data")
    assert results.models == ("gemma-3-270m",)
    assert set(results.rows["sample_index"]) == {0, 1, 2}
    assert set(results.rows["condition"]) == {"aqua/none/correct", "aqua/detailed/irrelevant"}
    message = report.coverage_message(results)
    assert "2 of 6 (model, condition) pairs are complete" in message
    assert "**Missing results:**" in message and "gemma-3-270m aqua/simplified/correct (0 of 3 stored)" in message
    assert "No sample was skipped" in message  # sample 3 is beyond n_samples

    everything = report.load_results(root, ["gemma-3-270m"], conditions[:2], data_dir=tmp_path / "no-data")
    assert "1 samples were not computed and are left out: 1 response truncated away" in \
        report.coverage_message(everything)
    empty = report.load_results(root, ["smollm2-135m-instruct"], conditions)
    with pytest.raises(report.ReportError, match="holds no rows"):
        report.require_rows(empty)


def test_load_results_needs_a_store(tmp_path):
    with pytest.raises(report.ReportError, match="no results store here"):
        report.load_results(tmp_path, ["gemma-3-270m"], ["aqua/none/correct"])


def test_several_truncation_lengths_must_be_chosen(tmp_path):
    rows = make_results([("aqua", "none", "correct")], {"gemma-3-270m": ("base", 18)}, n_samples=2)
    other = rows.assign(max_length=512)
    root = _store_with(tmp_path, pd.concat([rows, other]))
    with pytest.raises(report.ReportError, match="several max_length values"):
        report.load_results(root, ["gemma-3-270m"], ["aqua/none/correct"])
    assert len(report.load_results(root, ["gemma-3-270m"], ["aqua/none/correct"], max_length=512).rows) == len(rows)


# --------------------------------------------------------------------------- pre-trained vs instruct


def test_pairs_and_confound_statement():
    offline = report.model_pairs(list(MODELS), {m: t for m, (t, _) in MODELS.items()})
    assert offline == {"smollm2-135m-instruct": "gemma-3-270m"}
    text = report.confound_statement(offline)
    assert "confounded" in text and "different model families" in text and "PAPER_PAIRS" in text
    paper = report.model_pairs(["Qwen/Qwen2-1.5B", "Qwen/Qwen2-1.5B-Instruct", "google/gemma-2-2b"],
                               {"Qwen/Qwen2-1.5B": "base", "Qwen/Qwen2-1.5B-Instruct": "instruct",
                                "google/gemma-2-2b": "base"})
    assert paper == {"Qwen/Qwen2-1.5B-Instruct": "Qwen/Qwen2-1.5B"}
    assert "matched pairs" in report.confound_statement(paper)
    table = report.pairs_table(offline, {}, {"gemma-3-270m": 18, "smollm2-135m-instruct": 30})
    assert table.iloc[0]["matched pair"] == "no: different families"
    assert table.iloc[0]["layers (base / instruct)"] == "18 / 30"


def test_pair_figures_and_comparison(paper_draws):
    pairs = {"smollm2-135m-instruct": "gemma-3-270m"}
    curves, bands = report.curves_and_bands(paper_draws)
    figures = list(report.pair_figures(paper_draws, pairs, curves, bands))
    assert [t for t, _ in figures] == ["gemma-3-270m vs smollm2-135m-instruct, aqua",
                                      "gemma-3-270m vs smollm2-135m-instruct, wiki"]
    assert len(figures[0][1].axes) == 2 * 3
    table = report.pair_comparison_table(paper_draws, pairs)
    assert {"MAD base", "MAD instruct", "mean |RD| base", "mean |RD| instruct"} <= set(table.columns)
    assert len(table) == 3 + 2


# --------------------------------------------------------------------------- beyond the paper


def test_separability_table_and_sentence(paper_rows):
    table = report.separability_table(paper_rows, n_resamples=100)
    assert set(table["setting"]) == {"none", "simplified", "detailed", "len100", "len1000"}
    detailed = table[(table["setting"] == "detailed")]
    assert (detailed["verdict"] == "separable").all()
    sentence = report.separability_sentence(table)
    assert "- gemma-3-270m: correct and irrelevant responses are separable" in sentence
    assert "in 2 of 5 settings" in sentence  # detailed CoT, and the wiki settings are identical


def test_length_control_detects_a_gap_at_equal_length():
    def cut_matches_none(model, dataset, setting, responses, proj, layers):
        return {"none": 3.0, "detailed_cut_none": 1.0, "detailed": 1.0}[setting] + 0 * layers

    rows = make_results([("aqua", s, "correct") for s in ("none", "detailed", "detailed_cut_none")],
                        n_samples=20, curve=cut_matches_none, sample_sd=0.05, seed=6)
    table = report.length_control_table(rows)
    assert list(table["compared_with"]) == ["none", "detailed"]
    equal_length = table.iloc[0]
    assert equal_length["n"] == 20 and equal_length["p_value"] < 0.001 and equal_length["median_difference"] < 0
    sentence = report.length_control_sentence(table)
    assert "1 of 1 equal-length comparisons show a difference" in sentence
    assert "gives smaller per-sample nuclear norms than None CoT at equal length" in sentence
    shown = report.format_length_control(table)
    assert shown.iloc[0]["cut is"] == "smaller" and shown.iloc[1]["cut is"] == "no detectable difference"
    assert "no length-control condition" in report.length_control_sentence(report.length_control_table(
        rows[rows["setting"] != "detailed_cut_none"]))


def test_length_regression_sentence_reports_the_shrinking_gap():
    conditions = reasoning_conditions("aqua", responses=("correct",))
    rows = make_results(conditions, n_samples=30, curve=flat, length_exponent=-0.5, sample_sd=0.05, seed=7)
    table = report.length_regression_table(rows)
    assert set(table["setting"]) == {"simplified", "detailed"}
    sentence = report.length_regression_sentence(table)
    assert "Correlational" in sentence and "gap in log nuclear norm" in sentence and "its size shrinks by" in sentence


# --------------------------------------------------------------------------- reproducibility


def test_run_log_tables():
    log = {"runs": [
        {"id": "1", "started": "2025-01-01T00:00:00+00:00", "finished": "2025-01-01T00:10:00+00:00",
         "wall_seconds": 600.0, "extraction_seconds": 500.0, "notebooks_seconds": 60.0, "book": {"seconds": 40.0},
         "profile": {"name": "quick", "conditions": ["a", "b"], "n_samples": 2},
         "packages": {"torch": "2.13.0"}, "model_loads": {"m": 3.0},
         "extraction": [{"model": "m", "condition": "a", "computed": 2, "seconds": 10.0}]},
        {"id": "2", "started": "2025-01-02T00:00:00+00:00", "profile": {"name": "quick"}, "packages": {},
         "extraction": [{"model": "m", "condition": "a", "computed": 1, "seconds": 5.0},
                        {"model": "m", "condition": "b", "computed": 0, "seconds": 0.0}]},
    ]}
    times = report.extraction_time_table(log)
    a = times[times["condition"] == "a"].iloc[0]
    assert a["computed"] == 3 and a["seconds"] == 15.0 and a["seconds_per_sample"] == 5.0
    assert math.isnan(times[times["condition"] == "b"].iloc[0]["seconds_per_sample"])
    summary = report.time_summary(log)
    assert "elapsed until this page was executed" in " ".join(summary["what"])
    assert "still going" in report.run_sentence(log, "r")
    finished = {"runs": log["runs"][:1]}
    assert list(report.time_summary(finished)["seconds"][:4]) == ["500.0", "60.0", "40.0", "600.0"]
    profile = report.profile_table(report.latest_run(finished))
    assert dict(zip(profile["parameter"], profile["value"]))["conditions"] == "2 conditions"
    packages = report.package_table(report.latest_run(finished), {"torch": "2.14.0", "numpy": "2"})
    assert packages.set_index("package").loc["torch", "run"] == "2.13.0"
    assert "No run log" in report.run_sentence({"runs": []}, "r")


def test_benchmark_table(tmp_path):
    assert report.benchmark_table(tmp_path / "missing.json") is None
    case = {"model": "m", "case": "None CoT", "device": "cpu", "samples": 4, "mean_tokens": 101.4,
            "seconds_per_sample": {"baseline": 3.0, "project": 0.5, "floor": 0.4},
            "baseline_over_project": 6.0, "project_over_floor": 1.25,
            "peak_memory_mb": {"baseline": 900.0, "project": 300.0, "floor": 850.0}, "max_relative_difference": 2e-6}
    path = tmp_path / "results.json"
    targeted = {**case, "case": "Detailed CoT",
                "targets": {"baseline_over_project_at_least": 1.6, "project_over_floor_at_most": 1.1}}
    loads = {"m": {"load_seconds": 2.5, "process_seconds": 4.0, "target_seconds": 5.0}}
    path.write_text(json.dumps({"machine": {"cpus": 2}, "cases": [case, targeted], "cached_loads": loads}))
    table = report.benchmark_table(path)
    assert list(table["case"]) == ["None CoT", "Detailed CoT"]
    assert table.loc[0, "baseline / project"] == "6.00" and table.loc[0, "project / floor"] == "1.25"
    assert table.loc[1, "baseline / project"] == "6.00 (target >= 1.6: met)"
    assert table.loc[1, "project / floor"] == "1.25 (target <= 1.1: missed)"
    assert table.loc[0, "cached load s"] == "2.50 (target < 5: met)"
    assert table.loc[0, "peak MB (baseline / project / floor)"] == "900 / 300 / 850"
    rendered = report.styled_table(table).to_html()
    assert "1.25 (target &lt;= 1.1: missed)" in rendered and "2.50 (target &lt; 5: met)" in rendered


def test_data_check_table_without_files(tmp_path):
    table = report.data_check_table(["aqua/none/correct", "aqua/detailed_cut_none/correct"], tmp_path)
    assert (table["status"] == "file not found").all()
    assert report.data_check_sentence(table) .startswith("0 of 2 data files match")


def test_data_check_table_with_study_data(study_data_dir):
    table = report.data_check_table(["aqua/none/correct", "wiki/len100/irrelevant"], study_data_dir)
    assert (table["status"] == "matches").all()
    assert report.data_check_sentence(table) == "2 of 2 data files match their published sha256."


def test_beyond_the_paper_sentences_decline_to_judge_two_samples(paper_rows):
    two = paper_rows[paper_rows["sample_index"] < 2]
    separability = report.separability_table(two, n_resamples=50)
    assert set(separability["verdict"]) == {"too few samples"}
    assert "no setting has enough instructions to judge" in report.separability_sentence(separability)
    control = report.length_control_sentence(report.length_control_table(two))
    assert "2 pairs, too few for a two-sided Wilcoxon test to reach p < 0.05" in control
    regression = report.length_regression_sentence(report.length_regression_table(two))
    assert "too few for a regression on length and setting" in regression
    draws = report.all_curve_draws(_results(two), ("effective_rank",), n_resamples=50)
    assert "too few samples to tell them apart" in report.effective_rank_sentence(draws)
