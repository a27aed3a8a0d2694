"""What a reader sees first under a verdict matrix: at most three plain sentences generated from
the cells, everything else folded; the pooled answers one row per part of a claim."""

import re

import pandas as pd
import pytest
from synthetic import MODELS, make_results
from test_report import CONDITIONS, paper_like

from analysis.findings import checks
from analysis.findings.bootstrap import all_curve_draws
from analysis.report import display, sections, verdicts


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


def test_the_matrix_details_line_is_short():
    assert len(sections.MATRIX_DETAILS.split()) <= 10
