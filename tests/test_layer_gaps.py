"""Per layer, a chain's whole gap beside its deciding step (``report.layer_gaps``), and the gap under
a token-sum loss (``report.loss_convention``), from curves whose truth is known."""

from types import SimpleNamespace

import numpy as np
import pytest
from synthetic import make_results
from test_same_tokens import MODEL, answer_rows

from analysis.checks import s_gap_split
from analysis.findings.bootstrap import all_curve_draws
from analysis.report import layer_gaps, loss_convention


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
    table = layer_gaps.layer_gaps(page, s_gap_split.CHECK)
    gaps = table.groupby("gap")["value"].mean()
    assert gaps[layer_gaps.FULL] == pytest.approx(2.0, abs=0.05)
    assert gaps[layer_gaps.SAME] == pytest.approx(0.5, abs=0.05)
    assert len(table) == 2 * 12  # two gaps, twelve layers
    assert layer_gaps.layer_gap_figure(table) is not None
    assert layer_gaps.pairs(s_gap_split.CHECK) == {
        layer_gaps.FULL: ("none", "detailed"),
        layer_gaps.SAME: ("none_answer", "detailed_answer"),
    }


def test_without_answer_scored_conditions_the_figure_is_empty():
    full = make_results([("gsm8k", s, "correct") for s in ("none", "detailed")], models=MODEL, n_samples=6)
    assert layer_gaps.layer_gaps(_page(full, sample_stats=("loss",)), s_gap_split.CHECK).empty


def test_the_token_sum_gap_is_the_mean_gap_plus_the_log_token_ratio():
    rows = make_results([("gsm8k", s, "correct") for s in ("none", "detailed")], models=MODEL, n_samples=10)
    page = _page(rows, sample_stats=("loss", "n_response_tokens"))
    mean, total = loss_convention.sum_gap(page.draws["m"], "gsm8k")
    tokens = rows.groupby(["setting", "sample_index"])["n_response_tokens"].first()
    log_ratio = np.log(tokens["none"]).mean() - np.log(tokens["detailed"]).mean()
    assert total.value == pytest.approx(mean.value + log_ratio)
    table = loss_convention.gap_table(page)
    assert list(table["scope"]) == ["gsm8k"] and table["_sum"].iloc[0] < table["_mean"].iloc[0]


def pd_concat(*frames):
    import pandas as pd

    return pd.concat(frames, ignore_index=True)
