"""A4: the same Detailed-CoT text scored on all its tokens and on as few as None CoT's response has;
does scoring fewer tokens reproduce F1's gap?"""

import math

import numpy as np
import pytest
from synthetic import make_results

from analysis import checks
from analysis.findings import roles, scored_tokens
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import FAILS, HOLDS, decide

MODEL = {"m": ("base", 12)}
SETTINGS = ("none", "detailed", scored_tokens.SUBSET)


def rows_with(*, f1: float, subset: float, n: int = 12, seed: int = 0):
    """Rows of gsm8k's None CoT, Detailed CoT and its scored subset: None CoT's log nuclear norm is
    ``f1`` above Detailed CoT's, the subset's ``subset`` above it."""
    rows = make_results([("gsm8k", s, "correct") for s in SETTINGS], models=MODEL, n_samples=n, noise=0.05, seed=seed)
    for setting, shift in (("none", f1), (scored_tokens.SUBSET, subset)):
        chosen = rows["setting"] == setting
        for column in ("nuclear_norm", "frobenius"):
            rows.loc[chosen, column] *= np.exp(shift)
    return rows


def curves(rows):
    return all_curve_draws(rows, list(MODEL), ("nuclear_norm", "frobenius"), n_resamples=300)["m"]


def part_of(parts, role):
    (part,) = [p for p in parts if p.role is role]
    return part


def test_a4_holds_where_the_subset_reproduces_most_of_f1s_gap_and_gives_its_share():
    parts = scored_tokens.a4_parts(DatasetContext(curves=curves(rows_with(f1=2.0, subset=1.8)), dataset="gsm8k"))
    share = part_of(parts, scored_tokens.F1_SHARE)
    assert share.estimate.value == pytest.approx(0.9, abs=0.05)
    assert np.log(part_of(parts, scored_tokens.SUBSET_GAP).shown()[0]) == pytest.approx(1.8, abs=0.05)
    assert not part_of(parts, roles.F1_GAP).decides
    assert decide(parts) == HOLDS


def test_a4_does_not_hold_where_scoring_fewer_tokens_leaves_the_gradient_as_it_was():
    parts = scored_tokens.a4_parts(DatasetContext(curves=curves(rows_with(f1=2.0, subset=0.0)), dataset="gsm8k"))
    assert decide(parts) == FAILS


def test_a4_pairs_the_instructions_all_three_conditions_hold():
    rows = rows_with(f1=2.0, subset=1.8)
    dropped = (rows["setting"] == scored_tokens.SUBSET) & (rows["sample_index"] < 4)
    parts = scored_tokens.a4_parts(DatasetContext(curves=curves(rows[~dropped]), dataset="gsm8k"))
    assert {p.estimate.n for p in parts if p.role in (scored_tokens.SUBSET_GAP, roles.F1_GAP)} == {12 - 4}


def test_a4_needs_its_subset_condition():
    rows = rows_with(f1=2.0, subset=1.8)
    assert (
        scored_tokens.a4_parts(
            DatasetContext(curves=curves(rows[rows["setting"] != scored_tokens.SUBSET]), dataset="gsm8k")
        )
        is None
    )


def test_a4_is_registered_with_its_rules_and_runs_from_the_registry():
    check = checks.get("A4")
    assert check.calibrated_by == (rule.GAP, rule.GAP_SHARE) and check.headline is scored_tokens.F1_SHARE
    found = checks.run_checks({"m": curves(rows_with(f1=2.0, subset=1.8))}, ["A4"])
    assert [(f.check, f.scope, f.verdict) for f in found if f.scope == "gsm8k"] == [("A4", "gsm8k", HOLDS)]


def test_a4s_share_rule_keeps_its_rate_where_the_subset_reproduces_exactly_half_of_f1s_gap():
    """A4's share says "at least half" at most 2.5% of the time (plus two standard errors of the
    simulation) where the subset reproduces exactly half, in each of the study's designs."""
    from analysis.findings import calibration

    reps = 300
    bound = 0.025 + 2 * math.sqrt(0.025 * 0.975 / reps)
    for i, design in enumerate(calibration.study_designs(5).values()):
        rate = calibration.false_holds(rule.GAP_SHARE, design, reps=reps, n_resamples=200, seed=i)
        assert rate <= bound, (design, rate)
