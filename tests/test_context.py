"""A5: the answer's gradient after its own chain against after a context without the reasoning (the
same words shuffled, another instruction's chain)."""

import math

import numpy as np
import pytest
from synthetic import make_results

from analysis import checks
from analysis.checks import a5_context
from analysis.core import vocabulary
from analysis.findings import roles, same_tokens
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import FAILS, HOLDS, decide

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


def part_of(parts, role):
    (part,) = [p for p in parts if p.role is role]
    return part


def test_a5_holds_where_either_context_gives_the_answer_the_same_gradient():
    parts = a5_context.a5_parts(DatasetContext(curves=curves(rows_with()), dataset="gsm8k"))
    assert decide(parts) == HOLDS
    assert not part_of(parts, roles.SAME_TOKEN_GAP).decides


def test_a5_does_not_hold_where_shuffling_the_chains_words_changes_the_answers_gradient():
    parts = a5_context.a5_parts(DatasetContext(curves=curves(rows_with(shuffled=-0.8)), dataset="gsm8k"))
    assert decide(parts) == FAILS
    assert np.log(part_of(parts, a5_context.ORDER).shown()[0]) == pytest.approx(0.8, abs=0.05)


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
    found = checks.run_checks({"m": curves(rows_with())}, ["A5"])
    assert [(f.scope, f.verdict) for f in found if f.scope == "gsm8k"] == [("gsm8k", HOLDS)]


def test_a5s_within_rule_keeps_its_rates():
    """ "nearly the same" at most 2.5% of the time (plus two standard errors of the simulation) with
    the true ratio at the margin, and "does not hold" as rarely with none."""
    from analysis.findings import calibration

    reps = 300
    bound = 0.025 + 2 * math.sqrt(0.025 * 0.975 / reps)
    for i, design in enumerate(calibration.study_designs(5).values()):
        assert calibration.false_holds(rule.WITHIN, design, reps=reps, n_resamples=200, seed=i) <= bound
        assert calibration.false_fails(rule.WITHIN, design, reps=reps, n_resamples=200, seed=i) <= bound
