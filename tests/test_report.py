"""What the book's pages show: loading from the store, tables, figures, pages and provenance."""

import json
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from blocks_read import figures_of, tables_of, text_of, walk
from synthetic import (
    BASE,
    INSTRUCT,
    LEVEL,
    MODELS,
    REASONING_WIGGLE,
    make_results,
    reasoning_conditions,
    record_run,
    write_store,
)

from analysis import profiles
from analysis.core import vocabulary
from analysis.data import sample_draws
from analysis.findings import metrics
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.effective_rank import effective_rank_table
from analysis.findings.separability import separability_table
from analysis.report import beyond, curve_tables, display, figures, provenance, sections, verdicts
from analysis.report.blocks import Fold, Html, PageEnd
from analysis.report.blocks import Markdown as BlockMarkdown
from analysis.report.coverage import coverage_text
from analysis.report.display import styled_table
from analysis.report.load import ReportError, figure_note, load_results, require_store_rows
from analysis.report.page import Page
from analysis.store import runlog
from analysis.store.store_errors import StoreError

ROOT = Path(__file__).resolve().parents[1]
WIGGLE = {**REASONING_WIGGLE, "len100": 0.05, "len1000": 0.05}


def paper_like(model, dataset, setting, responses, proj, layers):
    """Fast thinking large and bumpy, slow thinking small and smooth; irrelevant detailed larger."""
    curve = LEVEL[setting] + WIGGLE[setting] * np.sin(1.7 * layers) ** 2
    if responses == "irrelevant" and setting in ("detailed", "detailed_cut_none"):
        curve = 1.5 * curve
    return curve


CONDITIONS = (
    reasoning_conditions("aqua")
    + reasoning_conditions("gsm8k")
    + [("aqua", s, r) for s in ("detailed_cut_none", "detailed_cut_simplified") for r in ("correct", "irrelevant")]
    + [("wiki", s, r) for s in ("len100", "len1000") for r in ("correct", "irrelevant")]
)


@pytest.fixture(scope="module")
def paper_rows():
    return make_results(CONDITIONS, MODELS, n_samples=12, curve=paper_like, noise=0.02, sample_sd=0.1, seed=1)


@pytest.fixture(scope="module")
def paper_draws(paper_rows):
    return all_curve_draws(
        paper_rows, list(MODELS), ("nuclear_norm", "sigma1_ratio", "effective_rank"), n_resamples=200
    )


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# --------------------------------------------------------------------------- tables


def _mad_of_mean_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """MAD over the early, middle and late layers (``metrics.layer_splits``) and over all layers of
    each mean curve (``metrics.layer_curves``), per model, dataset, setting, responses and
    projection: the reference for the MAD table."""
    keys = ["model", "dataset", "setting", "responses", "proj"]
    out = []
    for key, group in metrics.layer_curves(rows).groupby(keys, observed=True):
        curve = group.sort_values("layer")["value"].to_numpy()
        row = {
            s: metrics.mean_absolute_difference(curve[lo:hi])
            for s, (lo, hi) in metrics.layer_splits(len(curve)).items()
        }
        out.append({**dict(zip(keys, key)), **row, "all": metrics.mean_absolute_difference(curve)})
    return pd.DataFrame(out)


def _rd_of_mean_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """mean |RD| of the irrelevant against the correct mean curve (``metrics.layer_curves``), per
    model, dataset, setting and projection that has both: the reference for the RD table."""
    out = []
    keys = ["model", "dataset", "setting", "proj"]
    for key, group in metrics.layer_curves(rows).groupby(keys, observed=True):
        by = {r: g.sort_values("layer")["value"].to_numpy() for r, g in group.groupby("responses")}
        if {"correct", "irrelevant"} <= set(by):
            summary = metrics.rd_summary(by["correct"], by["irrelevant"])
            out.append({**dict(zip(keys, key)), "mean_abs_rd": summary["mean_abs_rd"]})
    return pd.DataFrame(out)


def test_rd_table_pairs_correct_with_irrelevant():
    def curve(model, dataset, setting, responses, proj, layers):
        scale = 1.5 if (setting == "detailed" and responses == "irrelevant") else 1.0
        return scale * (1.0 + 0.1 * layers)

    df = make_results(reasoning_conditions("ecqa", settings=("none", "detailed")), curve=curve, noise=0.0)
    df = pd.concat([df, make_results([("ecqa", "simplified", "correct")], noise=0.0)])
    table = curve_tables.rd_interval_table(all_curve_draws(df, ["base-model"], ("nuclear_norm",), n_resamples=50))
    assert set(table.setting) == {"none", "detailed"}  # simplified lacks irrelevant responses
    detailed = table[table.setting == "detailed"]
    np.testing.assert_allclose(detailed["mean_abs_rd"], 0.5)
    np.testing.assert_allclose(table[table.setting == "none"]["mean_abs_rd"], 0.0, atol=1e-12)
    assert (detailed["n_correct"] == 8).all() and (detailed["n_irrelevant"] == 8).all()


def test_intervals_of_quantities_that_cannot_be_negative_stay_at_or_above_zero():
    """Mean |RD| and MAD near 0 with noisy samples: their intervals never reach below 0."""
    df = make_results(reasoning_conditions("ecqa", settings=("none",)), n_samples=5, noise=0.3, sample_sd=0.5, seed=3)
    draws = all_curve_draws(df, ["base-model"], ("nuclear_norm",), n_resamples=100)
    rd = curve_tables.rd_interval_table(draws)
    mad = curve_tables.mad_interval_table(draws, responses=("correct", "irrelevant"))
    assert (rd["mean_abs_rd_low"] >= 0).all()
    assert all((mad[f"{s}_low"] >= 0).all() for s in curve_tables.SEGMENTS)


def test_mad_and_rd_tables_match_metrics_with_intervals_around_them(paper_rows, paper_draws):
    mads = curve_tables.mad_interval_table(paper_draws, responses=("correct", "irrelevant"))
    expected = _mad_of_mean_curves(paper_rows[paper_rows["setting"].isin(vocabulary.STUDY_SETTINGS)])
    merged = expected.merge(mads, on=["model", "dataset", "setting", "responses", "proj"])
    assert len(merged) == len(expected)
    for segment in curve_tables.SEGMENTS:
        np.testing.assert_allclose(merged[f"{segment}_x"], merged[f"{segment}_y"], rtol=1e-12)
        assert (merged[f"{segment}_low"] <= merged[f"{segment}_y"]).all()
        assert (merged[f"{segment}_y"] <= merged[f"{segment}_high"]).all()
    rds = curve_tables.rd_interval_table(paper_draws)
    expected_rd = _rd_of_mean_curves(paper_rows[paper_rows["setting"].isin(vocabulary.STUDY_SETTINGS)])
    merged = expected_rd.merge(rds, on=["model", "dataset", "setting", "proj"])
    assert len(merged) == len(expected_rd) > 0
    np.testing.assert_allclose(merged["mean_abs_rd_x"], merged["mean_abs_rd_y"], rtol=1e-12)
    detailed = rds[rds["setting"] == "detailed"]
    np.testing.assert_allclose(detailed["mean_rd"], 0.5, atol=0.08)
    assert (detailed["mean_rd_low"] > 0.25).all()


def test_formatted_tables_show_intervals(paper_draws):
    mad = curve_tables.format_segment_table(curve_tables.mad_interval_table(paper_draws))
    assert list(mad.columns[-4:]) == ["early", "middle", "late", "all"]
    assert mad["all"].str.match(r"^[\d.e+-]+ \[[\d.e+-]+, [\d.e+-]+\]$").all()
    rd = curve_tables.format_rd_table(curve_tables.rd_interval_table(paper_draws))
    assert {"mean |RD|", "mean RD", "top layers (|RD|)"} <= set(rd.columns)


# --------------------------------------------------------------------------- figures


def test_paper_figures_share_a_scale_per_row_and_carry_the_offline_note(paper_draws):
    curves, bands = figures.curves_and_bands(paper_draws)
    made = list(figures.paper_figures(paper_draws, curves, bands, n_samples=12))
    assert [t for t, _ in made] == [f"{m}, {d}" for m in MODELS for d in ("aqua", "gsm8k", "wiki")]
    fig = made[0][1]
    assert len(fig.axes) == 2 * 3  # nuclear norm and s1 ratio for none, simplified, detailed
    top = [ax.get_ylim() for ax in fig.axes[:3]]
    assert top[0] == top[1] == top[2]  # fast and slow thinking on one scale
    assert any("quantised (GGUF) then dequantised" in t.get_text() for t in fig.texts)
    inside = bands.merge(curves, on=["model", "condition", "proj", "layer", "stat"])
    assert (inside["low"] <= inside["value"] + 1e-12).all() and (inside["value"] <= inside["high"] + 1e-12).all()
    lengths = list(figures.length_control_figures(paper_draws, curves, bands))
    assert [t for t, _ in lengths] == [f"{BASE}, aqua", f"{INSTRUCT}, aqua"]
    assert figure_note(["Qwen/Qwen2-1.5B"]) is None
    assert len(figures.headline_figure(paper_draws, curves, bands).axes) == 2 * 3


def test_verdict_matrix_has_a_panel_per_model(paper_draws):
    from xml.etree import ElementTree

    from analysis import checks

    found = checks.run_checks(paper_draws)
    fig = figures._matrix(figures.verdict_cells(found), note="note", pairs=None, registry=checks.REGISTRY)
    assert len(fig.axes) == 2
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[0] == "math reasoning (pooled)" and "aqua" in labels
    svg = ElementTree.fromstring(figures.verdict_svg(found))  # the matrix as the page shows it: one panel per model
    axes = [g for g in svg.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith("axes_")]
    assert len(axes) == 2
    assert figures.verdict_svg([]) is None
    text = "\n\n".join(verdicts.model_paragraph(found, model) for model in MODELS)
    assert text.count("**F1**") == 2 and "math reasoning (pooled)" in text


# --------------------------------------------------------------------------- beyond the paper


def test_separability_per_dataset_and_pooled(paper_rows):
    table = separability_table(paper_rows, n_resamples=100)
    detailed = table[table["setting"] == "detailed"]
    assert set(detailed["scope"]) == {"aqua", "gsm8k", "math_reasoning"}
    assert (detailed["verdict"] == "separable").all()
    pooled = detailed[detailed["pooled"]].iloc[0]
    assert pooled["n_samples"] == 24
    assert (
        beyond.separability_paragraph(table).count("in 1 of 3 (family, setting) cases: math reasoning Detailed CoT")
        == 2
    )
    left_out = separability_table(paper_rows, {"aqua": frozenset({0, 1, 2})}, n_resamples=50)
    none = left_out[(left_out["scope"] == "aqua") & (left_out["setting"] == "none")]
    assert (none["n_samples"] == 9).all() and (none["n_excluded"] == 3).all()


def test_effective_rank_and_length_regression_paragraphs(paper_rows, paper_draws):
    ranks = effective_rank_table(paper_draws)
    assert {"aqua", "math_reasoning", "wiki"} <= set(ranks["scope"])
    assert "Mean effective rank, fastest minus slowest setting" in beyond.effective_rank_paragraph(ranks)
    regression = beyond.length_regression_table(paper_rows)
    assert "Correlational" in beyond.length_regression_paragraph(regression)


# --------------------------------------------------------------------------- pages


def test_a_page_opens_from_a_store_and_its_sections_show(tmp_path, paper_rows, study_data_dir):
    root = write_store(tmp_path, paper_rows)
    conditions = sorted(paper_rows["condition"].unique())
    record_run(root, list(MODELS), conditions, n_resamples=100)
    page = Page.open("summary", {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)})
    assert set(page.draws) == set(MODELS) and page.pairs == {INSTRUCT: BASE}
    found = page.findings()
    assert {"F1", "F2", "F3", "F4", "F5", "L", "L2"} <= {f.check for f in found}
    assert next(f for f in found if f.check == "F5").verdict in ("holds", "not resolved")
    # the offline models are two families: F4 says "not applicable", and every page says why
    assert {f.verdict for f in found if f.check == "F4"} == {"not applicable"}
    paragraphs = "\n\n".join(verdicts.model_paragraph(found, model) for model in MODELS)
    assert "**F4** not applicable: smollm2-135m-instruct is not an instruct model of gemma-3-270m" in paragraphs
    assert "not applicable: not applicable" not in paragraphs  # a reason no longer starts with its verdict
    note = verdicts.matrix_note(found, profile="cpu", note=None)
    decided = [f for f in found if f.verdict in ("holds", "does not hold", "not resolved")]
    from analysis import checks
    from analysis.findings.stated_rates import check_rate

    expected = sum(check_rate(f.check, checks.REGISTRY) for f in decided)
    assert f"Of the {len(decided)} tested cells" in note and f"at most {expected:.1f} would say so" in note
    assert (
        f"F1 {check_rate('F1', checks.REGISTRY):.1%}" in note and check_rate("F1", checks.REGISTRY) > 0.025
    )  # each check's measured rate
    formatted = verdicts.findings_frame(found, pooled_only=True)
    assert set(formatted["scope"]) == {"math reasoning (pooled)", "wiki"}

    # each section returns what it promises on a page whose store holds every condition it reads
    def html_of(blocks) -> list[str]:
        return [b.html for b in walk(blocks) if isinstance(b, Html)]

    def names_every_model(text: str) -> bool:
        return all(model in text for model in MODELS)

    answers = sections.answers(page)  # the matrix, its plain summary, then what is folded under it
    matrix, plain = answers[:2]
    assert isinstance(matrix, Html) and matrix.html.startswith("<svg") and names_every_model(matrix.html)
    assert all(check in matrix.html for check in {f.check for f in found})
    assert isinstance(plain, BlockMarkdown) and plain.text == verdicts.plain_summary(found, page.registry)
    details = [b for b in answers if isinstance(b, Fold) and b.summary == sections.MATRIX_DETAILS]
    assert len(details) == 1 and names_every_model(text_of(details))  # a paragraph per model among them
    rendered = [text for block in details for kind, text in display.outputs(block)]
    assert len(rendered) == 1 and rendered[0].startswith(f"<details><summary>{sections.MATRIX_DETAILS}</summary>")

    pooled = sections.pooled_findings(page)
    [table] = tables_of(pooled)
    assert sorted(set(table["model"])) == sorted(MODELS) and "math reasoning (pooled)" in set(table["scope"])
    shown = [o for b in pooled for o in display.outputs(b)]  # one table per model under its name
    assert [text for kind, text in shown if kind == "markdown"] == [f"**{model}**" for model in MODELS]
    assert sum("<table" in text for kind, text in shown if kind == "html") == len(MODELS)

    [every] = tables_of(sections.tables_findings(page))
    for model in MODELS:
        assert sorted(every.loc[every["model"] == model, "check"]) == sorted(f.check for f in found if f.model == model)

    assert len(figures_of(sections.headline(page))) == 1  # one reasoning dataset, three settings
    for section in (sections.length, sections.separability, sections.effective_rank):
        returned = section(page)  # a figure, a paragraph per model, the numbers folded
        assert len(figures_of(returned)) >= 1, section.__name__
        assert names_every_model(text_of(returned, folded=False)), section.__name__
        assert any(isinstance(b, Fold) and b.blocks for b in returned), section.__name__
    assert html_of(answers) == [matrix.html]


def test_coverage_names_identical_answers_left_out(tmp_path, study_data_dir):
    rows = make_results(
        reasoning_conditions("strategyqa", settings=("none",)), {BASE: ("base", 18)}, n_samples=60, seed=3
    )
    root = write_store(tmp_path, rows)
    record_run(root, [BASE], sorted(rows["condition"].unique()), n_resamples=50)
    page = Page.open(
        "commonsense_reasoning", {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)}
    )
    assert 0 < page.identical_in_store()["strategyqa"] < 60
    assert "left out of every correct-vs-irrelevant comparison: strategyqa" in page.coverage()


def test_a_page_s_provenance_is_one_folded_block(tmp_path, study_data_dir):
    """What a page read, its sample draw and the caveats of its models are shown once, folded under
    one line; the offline models' caveat is said there and nowhere else in the block."""
    rows = make_results(reasoning_conditions("aqua", settings=("none", "detailed")), MODELS, n_samples=4, seed=3)
    root = write_store(tmp_path, rows)
    record_run(root, list(MODELS), sorted(rows["condition"].unique()), n_resamples=20)
    page = Page.open("math_reasoning", {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)})
    returned = sections.provenance(page)
    assert len(returned) == 1 and isinstance(returned[0], Fold) and returned[0].summary == sections.PROVENANCE
    text = text_of(returned)
    assert "2 of the run's 2 models are in the store" in text and "No sample was skipped." in text
    assert text.count("quantised (GGUF) then dequantised") == 1 and "two different families" in text
    assert "generated from the stored results" in text
    [(kind, block)] = display.outputs(returned[0])
    assert kind == "html" and block.startswith(f"<details><summary>{sections.PROVENANCE}</summary>")
    assert "<li>" in block and block.count("quantised (GGUF) then dequantised") == 1


# --------------------------------------------------------------------------- loading from a store


def test_load_results_reports_missing_and_skipped(tmp_path):
    rows = make_results(reasoning_conditions("aqua", settings=("none", "detailed")), {BASE: ("base", 18)}, n_samples=4)
    rows = rows[~((rows["condition"] == "aqua/detailed/irrelevant") & (rows["sample_index"] == 3))]
    skipped = pd.DataFrame(
        [
            {
                "model": BASE,
                "condition": "aqua/detailed/irrelevant",
                "dataset": "aqua",
                "setting": "detailed",
                "responses": "irrelevant",
                "source_file": "x.json",
                "max_length": 1024,
                "template": "base",
                "sample_index": 3,
                "reason": "response truncated away: prompt has 2000 tokens",
            }
        ]
    )
    root = write_store(tmp_path, rows, skipped)
    conditions = ["aqua/none/correct", "aqua/detailed/irrelevant", "aqua/simplified/correct"]
    results = load_results(root, [BASE, INSTRUCT], conditions, n_samples=3, data_dir=tmp_path / "no-data")
    assert results.models == (BASE,)
    # without the data file, the 3 ids of highest rank in the seeded random order among those stored
    ranks = sample_draws.sample_ranks("aqua", 4)
    assert set(results.rows["sample_index"]) == set(np.argsort(ranks, kind="stable")[:3].tolist())
    cpu = profiles.get_profile("cpu")
    message = coverage_text(results, cpu, root, [BASE, INSTRUCT])
    assert f"1 of the run's 2 models are in the store ({BASE}); 2 of the 3 (model, condition) pairs" in message
    assert f"**Not stored:** {BASE}: aqua/simplified/correct; {INSTRUCT}: all 3 conditions of this page." in message
    assert f"Compute them with `python -m analysis run --profile cpu --results-dir {root}`" in message
    everything = load_results(root, [BASE], conditions[:2], data_dir=tmp_path / "no-data")
    text = coverage_text(everything, cpu, root, [BASE])
    assert "1 samples were not computed and are left out: 1 response truncated away" in text
    with pytest.raises(ReportError, match="holds no rows of the run's models; first run `python -m analysis run"):
        require_store_rows(root, [INSTRUCT], "python -m analysis run --profile cpu")


def test_load_results_needs_a_store_and_one_truncation_length(tmp_path):
    with pytest.raises(ReportError, match="no results store here"):
        load_results(tmp_path, [BASE], ["aqua/none/correct"])
    rows = make_results([("aqua", "none", "correct")], {BASE: ("base", 18)}, n_samples=2)
    root = write_store(tmp_path, pd.concat([rows, rows.assign(max_length=512)]))
    with pytest.raises(ReportError, match="several max_length values"):
        load_results(root, [BASE], ["aqua/none/correct"])
    assert len(load_results(root, [BASE], ["aqua/none/correct"], max_length=512).rows) == len(rows)


# --------------------------------------------------------------------------- pre-trained vs instruct


def test_pairs_confound_statement_and_comparison(paper_draws):
    pairs = {INSTRUCT: BASE}
    text = curve_tables.confound_statement(pairs)
    assert "confounded" in text and "different model families" in text and "PAPER_PAIRS" in text
    assert "matched pairs" in curve_tables.confound_statement({"Qwen/Qwen2-1.5B-Instruct": "Qwen/Qwen2-1.5B"})
    table = curve_tables.pairs_table(pairs, {}, {BASE: 18, INSTRUCT: 30})
    assert (
        table.iloc[0]["matched pair"] == "no: different families"
        and table.iloc[0]["layers (base / instruct)"] == "18 / 30"
    )
    curves, bands = figures.curves_and_bands(paper_draws)
    made = list(figures.pair_figures(paper_draws, pairs, curves, bands))
    assert [t for t, _ in made] == [f"{BASE} vs {INSTRUCT}, {d}" for d in ("aqua", "gsm8k", "wiki")]
    comparison = curve_tables.pair_comparison_table(paper_draws, pairs)
    assert {"MAD base", "MAD instruct", "mean |RD| base", "mean |RD| instruct"} <= set(comparison.columns)
    assert len(comparison) == 3 + 3 + 2


# --------------------------------------------------------------------------- reproducibility


def test_run_log_tables():
    from analysis.store.runlog import RunRecord

    finished = RunRecord.from_dict(
        {
            "id": "1",
            "started": "2025-01-01T00:00:00+00:00",
            "finished": "2025-01-01T00:10:00+00:00",
            "wall_seconds": 600.0,
            "extraction_seconds": 500.0,
            "notebooks_seconds": 60.0,
            "book": {"seconds": 40.0},
            "profile": {"name": "quick", "conditions": ["a", "b"], "n_samples": 2},
            "packages": {"torch": "2.13.0"},
            "model_loads": {"m": 3.0},
            "a key of a later version": 1,
            "models": {
                "m": {"revision": "abc", "attention": "sdpa", "chat_template_sha256": None, "transformers": "5"}
            },
            "extraction": [{"model": "m", "condition": "a", "computed": 2, "seconds": 10.0}],
        }
    )
    going = RunRecord.from_dict(
        {
            "id": "2",
            "started": "2025-01-02T00:00:00+00:00",
            "profile": {"name": "quick"},
            "extraction": [
                {"model": "m", "condition": "a", "computed": 1, "seconds": 5.0},
                {"model": "m", "condition": "b", "computed": 0, "seconds": 0.0},
            ],
        }
    )
    runs = [finished, going]
    times = provenance.extraction_time_table(runs)
    a = times[times["condition"] == "a"].iloc[0]
    assert a["computed"] == 3 and a["seconds"] == 15.0 and a["seconds_per_sample"] == 5.0
    assert math.isnan(times[times["condition"] == "b"].iloc[0]["seconds_per_sample"])
    assert "elapsed until this page was executed" in " ".join(provenance.time_summary(runs)["what"])
    assert "still going" in provenance.run_sentence(runs, "r")
    assert list(provenance.time_summary([finished])["seconds"][:4]) == ["500.0", "60.0", "40.0", "600.0"]
    profile = provenance.profile_table(finished)
    assert dict(zip(profile["parameter"], profile["value"]))["conditions"] == "2 conditions"
    facts = provenance.model_facts_table(finished)
    assert facts.iloc[0]["revision"] == "abc" and facts.iloc[0]["chat template sha256 (first 16)"] == "none"
    assert "No run log" in provenance.run_sentence([], "r")
    assert provenance.profile_table(None).empty and provenance.time_summary([]).empty


def test_run_log_round_trip(tmp_path):

    record = runlog.RunRecord.start({"name": "cpu"}, "local", {"torch": "2.13.0"}, [])
    runlog.save(tmp_path, record)
    record.extraction.append({"model": "m", "condition": "a", "computed": 1, "seconds": 2.0})
    record.finish()
    runlog.save(tmp_path, record)
    [again] = runlog.read(tmp_path)
    assert again == record and again.finished
    (tmp_path / runlog.RUN_LOG).write_text("{not json")
    with pytest.raises(StoreError, match="unreadable run log"):
        runlog.read(tmp_path)


def test_a_run_that_fails_is_logged_with_its_error_and_every_change_before_it(tmp_path):
    with pytest.raises(RuntimeError), runlog.recording(tmp_path, {"name": "cpu"}, executor="ray") as log:
        with log.changing() as record:
            record.extraction.append({"model": "m", "condition": "a", "computed": 1})
        [on_disk] = runlog.read(tmp_path)  # saved when the block ended, not at the end of the run
        assert on_disk.extraction == [{"model": "m", "condition": "a", "computed": 1}] and not on_disk.finished
        raise RuntimeError("out of disk")
    [run] = runlog.read(tmp_path)
    assert run.executor == "ray" and run.failed == "RuntimeError: out of disk"
    assert run.finished and run.wall_seconds is not None
    assert "ended with an error (RuntimeError: out of disk)" in provenance.run_sentence([run], tmp_path)


def test_benchmark_table(tmp_path):
    assert provenance.benchmark_table(tmp_path / "missing.json") is None
    case = {
        "model": "m",
        "case": "None CoT",
        "device": "cpu",
        "samples": 4,
        "mean_tokens": 101.4,
        "seconds_per_sample": {"baseline": 3.0, "project": 0.5, "floor": 0.4},
        "baseline_over_project": 6.0,
        "project_over_floor": 1.25,
        "peak_memory_mb": {"baseline": 900.0, "project": 300.0, "floor": 850.0},
        "max_relative_difference": 2e-6,
    }
    targeted = {
        **case,
        "case": "Detailed CoT",
        "targets": {"baseline_over_project_at_least": 1.6, "project_over_floor_at_most": 1.1},
    }
    path = tmp_path / "results.json"
    path.write_text(
        json.dumps({"cases": [case, targeted], "cached_loads": {"m": {"load_seconds": 2.5, "target_seconds": 5.0}}})
    )
    table = provenance.benchmark_table(path)
    assert table.loc[1, "project / floor"] == "1.25 (target <= 1.1: missed)"
    assert table.loc[0, "cached load s"] == "2.50 (target < 5: met)"
    assert "1.25 (target &lt;= 1.1: missed)" in styled_table(table).to_html()
    seconds, rest = provenance.benchmark_parts(table)  # two tables, each narrow enough for the page
    assert list(seconds.columns[:2]) == list(rest.columns[:2]) == ["model", "case"]
    assert set(seconds.columns) | set(rest.columns) == set(table.columns) and len(rest.columns) <= 7
    assert provenance.benchmark_parts(None) == [None]


def test_data_check_tables(tmp_path, study_data_dir):
    missing = provenance.data_check_table(["aqua/none/correct", "aqua/detailed_cut_none/correct"], tmp_path)
    assert (missing["status"] == "file not found").all()
    assert provenance.data_check_sentence(missing).startswith("0 of 2 data files match")
    present = provenance.data_check_table(["aqua/none/correct", "wiki/len100/irrelevant"], study_data_dir)
    assert provenance.data_check_sentence(present) == "2 of 2 data files match their published sha256."
    shown = provenance.data_check_shown(present)  # condition and file in one column, which wraps between them
    assert list(shown.columns) == ["condition: file", "sha256 (first 16)", "status"]
    assert shown["condition: file"].iloc[0] == f"aqua/none/correct: {present['file'].iloc[0]}"


def test_a_chapter_whose_family_the_profile_leaves_out_says_so_in_one_sentence(tmp_path):
    rows = make_results(reasoning_conditions("aqua", "gsm8k"), {BASE: ("base", 6)}, n_samples=3)
    root = write_store(tmp_path, rows)
    record_run(root, [BASE], sorted(rows["condition"].unique()), n_resamples=20, name="cpu")  # no Wiki condition
    page = Page.open("wiki_knowledge", {"profile": "cpu", "results_dir": str(root)})
    assert page.empty and page.params.conditions == ()
    source = (ROOT / "notebooks" / "wiki_knowledge.py").read_text()
    calls = re.findall(r"^show\(sections\.(\w+)\(page\)\)$", source, re.MULTILINE)
    assert calls[0] == "provenance" and "findings" in calls
    returned = [block for call in calls for block in getattr(sections, call)(page)]  # as its notebook calls them
    full = "cpu-full" in profiles.PROFILES  # a profile of every condition, when the project has one
    command = (
        "python -m analysis run --profile cpu-full"
        if full
        else f"python -m analysis run --profile cpu --results-dir {root}"
    )
    assert returned == [
        PageEnd(f"**The `cpu` profile computes no condition of this chapter (Wiki knowledge).** `{command}` would.")
    ]


def test_a_statistic_no_page_shows_is_read_where_a_check_reads_it(tmp_path, study_data_dir):
    from synthetic import write_store

    from analysis.report.load import load_results

    rows = make_results(reasoning_conditions("aqua"), MODELS, n_samples=3, seed=2)
    rows["log_miss"] = -0.5  # a per-sample column no page shows; A3 reads it
    root = write_store(tmp_path, rows)
    conditions = sorted(rows["condition"].unique())
    assert "log_miss" not in load_results(root, list(MODELS), conditions).rows
    assert "log_miss" in load_results(root, list(MODELS), conditions, read=("log_miss",)).rows


def test_the_reproducibility_page_counts_resolution_over_the_cells_tested():
    """Resolved: holds or does not hold, of the cells tested (not "not applicable", not "too few
    samples"); the split's family steps decided where their intervals clear 0."""
    from made_findings import family_cells, finding

    from analysis.checks import s_gap_split
    from analysis.findings.rules import FAILS, HOLDS, NOT_APPLICABLE, TOO_FEW, UNRESOLVED
    from analysis.profiles import ResolutionGoals
    from analysis.report.reproducibility import resolution_text

    findings = [finding("F1", HOLDS), finding("F1", FAILS, scope="aqua", pooled=False)]
    findings += [finding("F3", UNRESOLVED), finding("F4", NOT_APPLICABLE), finding("F1", TOO_FEW, scope="gsm8k")]
    findings += family_cells("L", {"aqua": 1.0, "gsm8k": -1.2}, model="n")[:1]  # resolved: they disagree
    check = s_gap_split.CHECK
    names = [s.name for s in check.chain.steps]
    outcomes = ["not decided", "larger", "the datasets disagree", "about the same"]
    steps = [
        {"scope": "math_reasoning", "step": s, "decided": i != 0, "outcome": o}
        for i, (s, o) in enumerate(zip(names, outcomes))
    ]
    text = resolution_text(findings, pd.DataFrame(steps), check=check)
    assert text.startswith("Of the 4 cells tested") and "2 others are not applicable" in text
    assert "3 are resolved (75%): 1 holds, 1 does not hold, 1 where the datasets disagree, 1 not resolved." in text
    assert text.endswith(
        "The split of F1's gap into five steps decides 3 of its 4 family steps (every dataset's interval clears 0 "
        "the same way, or lies within 10% of no change; 1 of them as datasets decided in opposite directions)."
    )
    assert resolution_text([finding("F4", NOT_APPLICABLE)], pd.DataFrame(steps)).startswith("No cell was tested")
    # a profile's goals, each said met or not (no split's cell here: none is met)
    goals = ResolutionGoals(step_half_width=0.35, mean_half_width=0.15, design_inside=10 / 12)
    said = resolution_text(findings, pd.DataFrame(steps), goals=goals, check=check)
    assert said.endswith(
        "This profile's goals: every per-dataset interval of which tokens at equal loss and how surprising narrower "
        "than ±0.35 (0 of 0; not met); each model's mean of each over its datasets narrower than ±0.15 (0 of 0; "
        "not met); the step at equal loss by design inside the regression's interval in at least 83% of the model "
        "and dataset cells (0 of 0; not met)."
    )


def test_the_verbatim_counts_are_the_run_s_instructions_whose_chain_states_the_answer(monkeypatch):
    from types import SimpleNamespace

    from test_same_tokens import MODEL, answer_rows

    from analysis import data
    from analysis.findings.bootstrap import all_curve_draws
    from analysis.report import coverage

    draws = all_curve_draws(answer_rows(n=12), list(MODEL), ("nuclear_norm",), n_resamples=20)
    page = SimpleNamespace(draws=draws, params=SimpleNamespace(data_dir="/the/data"))
    asked = []
    monkeypatch.setattr(data, "verbatim_answer_ids", lambda d, directory: asked.append(directory) or {0, 3, 5, 40})
    table = coverage.verbatim_counts(page)  # 40: not among the run's instructions
    assert table.to_dict("records") == [
        {"model": "m", "dataset": "gsm8k", "instructions": 12, "whose Detailed CoT states the answer": 3}
    ]
    assert asked == ["/the/data"]
