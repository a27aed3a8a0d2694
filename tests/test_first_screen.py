"""What a reader sees first under a verdict matrix: at most three plain sentences generated from
the cells, everything else folded; the pooled answers one row per part of a claim."""

import re
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pytest
from synthetic import MODELS, make_results
from test_report import CONDITIONS, paper_like

from analysis.findings import checks
from analysis.findings.bootstrap import all_curve_draws
from analysis.report import display, figures, sections, verdicts
from analysis.report.reproduction import size_text


@pytest.fixture(scope="module")
def found_and_parts():
    rows = make_results(CONDITIONS, MODELS, n_samples=12, curve=paper_like, noise=0.02, sample_sd=0.1, seed=1)
    draws = all_curve_draws(rows, list(MODELS), ("nuclear_norm", "sigma1_ratio", "effective_rank"), n_resamples=200)
    found = checks.run_checks(draws)
    return checks.findings_table(found), checks.part_table(found)


def _cells(rows):
    return pd.DataFrame(
        [
            {"check": c, "model": "m", "scope": "math_reasoning", "pooled": True, "verdict": v, "numbers": ""}
            for c, v in rows
        ]
    )


def test_the_plain_summary_counts_what_holds_fails_and_is_undecided():
    table = _cells(
        [("F1", "holds"), ("F1", "holds"), ("F2", "does not hold"), ("F3", "not resolved"), ("F3", "too few samples")]
        + [("F4", "not applicable")]
    )
    text = verdicts.plain_summary(table)
    sentences = [s for s in re.split(r"(?<=\.) ", text) if s]
    assert len(sentences) == 3
    assert sentences[0] == "Pooled over each family of datasets, these claims hold: F1 in 2 of 2 cells."
    assert sentences[1] == "These do not hold: F2 in 1 of 1 cells."
    assert sentences[2] == "These sample sizes cannot decide F3 in 2 of 2 cells; F4 does not apply to these models."


def test_the_plain_summary_on_nothing_decided():
    text = verdicts.plain_summary(_cells([("F3", "not resolved")]))
    assert text.startswith("Pooled over each family of datasets, no claim holds in any cell. No claim is contradicted.")


def test_the_plain_summary_of_real_findings_is_three_short_sentences(found_and_parts):
    found, _ = found_and_parts
    text = verdicts.plain_summary(found)
    assert len(re.findall(r"\.(?: |$)", text)) == 3 and len(text.split()) <= 80
    for check in set(found.loc[found["pooled"] & (found["verdict"] == "holds"), "check"]):
        assert check in text.split(";")[0]


def test_the_pooled_answers_are_one_row_per_part(found_and_parts):
    found, parts = found_and_parts
    shown = verdicts.format_parts(parts, found, pooled_only=True)
    assert list(shown.columns[:8]) == [
        "model",
        "check",
        "scope",
        "verdict",
        "part",
        "estimate [95% interval]",
        "claim",
        "decides",
    ]
    pooled_parts = parts[parts["pooled"]]
    with_parts = found[found["pooled"]].merge(pooled_parts[["check", "model", "scope"]].drop_duplicates())
    assert len(shown) == len(pooled_parts) + (found["pooled"].sum() - len(with_parts))
    assert set(shown["scope"]) == {"math reasoning (pooled)", "wiki"} & set(shown["scope"])
    row = shown[shown["decides"] == "yes"].iloc[0]
    assert re.fullmatch(r"\S+ \[\S+, \S+\]", row["estimate [95% interval]"]) and row["claim"].split()[0] in (
        "above",
        "below",
        "within",
    )
    assert "numbers" not in shown.columns


def test_a_folded_list_stays_a_list():
    html = display._markdown_html("- **F1**: a `code` claim\n- **F2**: another")
    assert (
        html == "<ul><li><strong>F1</strong>: a <code>code</code> claim</li><li><strong>F2</strong>: another</li></ul>"
    )


def test_a_list_of_claims_says_each_in_plain_words_and_links_its_rule_folded_or_not():
    text = verdicts.claims_text(("F1", "L2"))
    assert text.splitlines() == [
        f"- **F1**: {checks.get('F1').plain} ([rule](../checks.html#check-f1)).",
        f"- **L2**: {checks.get('L2').plain} ([rule](../checks.html#check-l2)).",
    ]
    assert checks.get("F1").claim not in text
    html = display._markdown_html(text)
    assert html.count('<a href="../checks.html#check-') == 2 and "[rule]" not in html


def test_the_matrix_details_line_is_short():
    assert len(sections.MATRIX_DETAILS.split()) <= 10


def ten_times_faster(model, dataset, setting, responses, proj, layers):
    """None CoT ten times Detailed CoT over the layers (geometric mean), more so early than late."""
    if setting != "none":
        return np.ones(len(layers))
    return 10.0 * np.exp(0.05 * (layers.mean() - layers))


@pytest.fixture(scope="module")
def ten_times():
    conditions = [(d, s, "correct") for d in ("aqua", "gsm8k") for s in ("none", "detailed")]
    rows = make_results(conditions, {"m": ("base", 18)}, n_samples=12, curve=ten_times_faster, sample_sd=0.1)
    found = checks.run_checks(all_curve_draws(rows, ["m"], ("nuclear_norm",), n_resamples=200), ["F1"])
    return checks.findings_table(found), checks.part_table(found)


def test_a_matrix_cell_prints_its_headline_size_and_its_title_the_rest(ten_times):
    found, parts = ten_times
    cells = figures.verdict_cells(found, parts)
    pooled = cells[cells["pooled"]].iloc[0]
    assert pooled["verdict"] == "holds" and pooled["part"] == "None / Detailed (all layers) x"
    assert 9 < pooled["value"] < 11 and pooled["text"] == size_text(pooled["value"], ratio=True)
    assert pooled["text"].startswith("x")
    low, high = size_text(pooled["low"], ratio=True), size_text(pooled["high"], ratio=True)
    assert pooled["title"] == (
        f"F1, math reasoning (pooled): holds; None / Detailed (all layers) {pooled['text']} [{low}, {high}]; "
        f"n = {pooled['n']}"
    )
    svg = ElementTree.fromstring(figures.verdict_svg(found, parts=parts))
    titles = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert sorted(titles) == sorted(cells["title"]) and len(titles) == len(found)
    assert svg.get("aria-label") == figures.matrix_label(found) and svg.get("aria-label").startswith("Verdict matrix")


def test_a_cell_without_a_size_says_why_and_keeps_its_n():
    table = pd.DataFrame(
        [
            {"check": "F4", "model": "m", "scope": "aqua", "pooled": False, "verdict": "not applicable", "n": 5}
            | {"numbers": "not applicable: m is not an instruct model", "opposite_sign": False},
            {"check": "F1", "model": "m", "scope": "aqua", "pooled": False, "verdict": "too few samples", "n": 3}
            | {"numbers": "", "opposite_sign": False},
            {"check": "F3", "model": "m", "scope": "aqua", "pooled": False, "verdict": "not resolved", "n": 12}
            | {"numbers": "", "opposite_sign": True},
        ]
    )
    cells = figures.verdict_cells(table, None)
    assert list(cells["text"]) == ["n/a", "n=3", "n=12±"]
    assert cells["title"].iloc[0] == "F4, aqua: not applicable; m is not an instruct model; n = 5"
    assert cells["title"].iloc[2].startswith("F3, aqua: not resolved; n = 12; ± ")


def test_the_fold_names_each_headline_and_gives_n_per_cell(ten_times):
    found, parts = ten_times
    note = verdicts.matrix_note(found, "test", None, parts=parts)
    assert "Number in a cell: the size of its check's headline part (F1: None / Detailed (all layers))" in note
    assert "hovering over a cell" in note and "the table below gives n" in note
    counts = figures.instruction_counts(found)
    assert list(counts.columns) == ["model", "check", "math reasoning (pooled)", "aqua", "gsm8k"]
    assert counts.iloc[0].tolist() == ["m", "F1", *[str(n) for n in found["n"]]]
