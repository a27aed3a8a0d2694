"""A5: the answer's gradient after its own chain against after a context without the reasoning (the
same words shuffled, another instruction's chain)."""

import numpy as np
from synthetic import make_results

from analysis import checks
from analysis.checks import a5_context
from analysis.core import vocabulary
from analysis.findings import same_tokens
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import FAILS, decide

MODEL = {"m": ("base", 12)}


def rows_with(*, shuffled: float = 0.0, other: float = 0.0, n: int = 12, seed: int = 0):
    """Rows of gsm8k's answer-scored settings: after the shuffled chain the answer's log nuclear
    norm is ``shuffled`` above after its own chain, after another instruction's chain ``other``."""
    rows = make_results(
        [("gsm8k", s, "correct") for s in vocabulary.ANSWER_SETTINGS], models=MODEL, n_samples=n, noise=0.05, seed=seed
    )
    for setting, shift in ((same_tokens.SHUFFLED, shuffled), (same_tokens.OTHER, other)):
        chosen = rows["setting"] == setting
        for column in ("nuclear_norm", "frobenius"):
            rows.loc[chosen, column] *= np.exp(shift)
    rows["log_miss"], rows["loss"] = -1.0, 2.0
    return rows


def curves(rows):
    stats = ("nuclear_norm", "frobenius")
    return all_curve_draws(rows, list(MODEL), stats, n_resamples=300, sample_stats=("log_miss", "loss"))["m"]


def test_a5_does_not_hold_where_another_chain_changes_it():
    assert decide(a5_context.a5_parts(DatasetContext(curves=curves(rows_with(other=0.8)), dataset="gsm8k"))) == FAILS


def test_a5_needs_both_controls():
    rows = rows_with()
    assert (
        a5_context.a5_parts(
            DatasetContext(curves=curves(rows[rows["setting"] != same_tokens.SHUFFLED]), dataset="gsm8k")
        )
        is None
    )


def test_a5_is_registered_with_its_rule():
    check = checks.get("A5")
    assert check.calibrated_by == (rule.WITHIN,) and check.headline is a5_context.ORDER
