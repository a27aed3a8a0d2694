"""The chapter's same-token comparison and loss convention, from curves whose truth is known."""

from types import SimpleNamespace

import numpy as np
import pytest
from synthetic import make_results
from test_same_tokens import MODEL, answer_rows

from analysis.findings.bootstrap import all_curve_draws
from analysis.report import answer_tokens


def _page(rows, sample_stats=("log_miss", "loss", "n_response_tokens")):
    draws = all_curve_draws(
        rows, list(MODEL), ("nuclear_norm", "frobenius"), n_resamples=100, sample_stats=sample_stats
    )
    return SimpleNamespace(draws=draws)


def test_the_layer_figure_holds_both_gaps_per_dataset_and_layer():
    full = make_results([("gsm8k", s, "correct") for s in ("none", "detailed")], models=MODEL, n_samples=12)
    full.loc[full["setting"] == "none", "nuclear_norm"] *= np.exp(2.0)
    rows = answer_rows(gap=0.5).reindex(columns=full.columns.union(["log_miss"]))
    page = _page(pd_concat(full, rows))
    table = answer_tokens.layer_gaps(page)
    gaps = table.groupby("gap")["value"].mean()
    assert gaps[answer_tokens.FULL] == pytest.approx(2.0, abs=0.05)
    assert gaps[answer_tokens.SAME] == pytest.approx(0.5, abs=0.05)
    assert len(table) == 2 * 12  # two gaps, twelve layers
    assert answer_tokens.layer_gap_figure(table) is not None


def test_without_answer_scored_conditions_the_figure_is_empty():
    full = make_results([("gsm8k", s, "correct") for s in ("none", "detailed")], models=MODEL, n_samples=6)
    assert answer_tokens.layer_gaps(_page(full, sample_stats=("loss",))).empty


def test_the_token_sum_gap_is_the_mean_gap_plus_the_log_token_ratio():
    rows = make_results([("gsm8k", s, "correct") for s in ("none", "detailed")], models=MODEL, n_samples=10)
    page = _page(rows, sample_stats=("loss", "n_response_tokens"))
    mean, total = answer_tokens.sum_gap(page.draws["m"], "gsm8k")
    tokens = rows.groupby(["setting", "sample_index"])["n_response_tokens"].first()
    log_ratio = np.log(tokens["none"]).mean() - np.log(tokens["detailed"]).mean()
    assert total.value == pytest.approx(mean.value + log_ratio)
    table = answer_tokens.loss_convention_table(page)
    assert list(table["scope"]) == ["gsm8k"] and table["_sum"].iloc[0] < table["_mean"].iloc[0]


def pd_concat(*frames):
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def test_the_verbatim_table_counts_the_run_s_instructions_whose_chain_states_the_answer():
    page = _page(answer_rows(n=12))
    page.verbatim = {"gsm8k": frozenset({0, 3, 5, 40})}  # 40: not among the run's instructions
    table = answer_tokens.verbatim_table(page)
    assert table.to_dict("records") == [
        {"model": "m", "dataset": "gsm8k", "instructions": 12, "whose Detailed CoT states the answer": 3}
    ]


def test_the_controls_section_says_when_a5_is_not_computed():
    page = _page(answer_rows(n=12))
    page.verbatim = {}
    page.findings = lambda checks: []
    said, counts = answer_tokens.controls_section(page)
    assert said.text == "A5 not computed: this run stores no shuffled chain."
    assert counts.table["whose Detailed CoT states the answer"].tolist() == [0]
