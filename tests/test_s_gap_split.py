"""S: F1's gap split into four steps, decided on the reasoning step; every step says what its
interval decides (larger, smaller, about the same, not decided)."""

import math

import numpy as np
import pytest
from synthetic import SPLIT_SHIFT, SPLIT_TRUE, chain_rows

from analysis import checks
from analysis.checks import s_gap_split
from analysis.findings import gap_split, roles
from analysis.findings.bootstrap import Estimate, all_curve_draws
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import FAILS, HOLDS, SAME_MARGIN, UNRESOLVED

STEPS = [s.name for s in gap_split.STEPS]


def curves(rows, n_resamples=300):
    stats = ("nuclear_norm", "frobenius")
    return all_curve_draws(rows, ["m"], stats, n_resamples=n_resamples, sample_stats=(gap_split.TOKENS,))


def s_findings(rows):
    return {f.scope: f for f in checks.run_checks(curves(rows), [s_gap_split.CHECK.id])}


def test_the_reasoning_step_alone_decides_and_the_other_steps_stand_beside_it():
    cd = curves(chain_rows(n=10, sample_sd=0.1))["m"]
    parts = s_gap_split.s_parts(DatasetContext(curves=cd, dataset="gsm8k"))
    deciding = [p for p in parts if p.decides]
    assert [p.role for p in deciding] == [roles.SAME_TOKEN_GAP]
    split = gap_split.dataset_split(cd, "gsm8k")
    by_role = {p.role: p for p in parts if not p.facet}
    for step in gap_split.STEPS:  # each step part is the split's own number
        assert by_role[s_gap_split.STEP_ROLES[step.name]].estimate.value == pytest.approx(split[step.name].value)
    assert by_role[s_gap_split.TOTAL].estimate.value == pytest.approx(split[gap_split.TOTAL].value)
    assert roles.EARLY_LATE in by_role and not by_role[roles.EARLY_LATE].decides


def test_s_holds_where_reasoning_shrinks_the_answers_gradient_and_fails_where_it_grows_it():
    found = s_findings(chain_rows(n=10, sample_sd=0.1))
    assert found["gsm8k"].verdict == HOLDS  # the reasoning step is 0.3, its interval well above 0
    grown = dict(SPLIT_SHIFT, detailed_answer=SPLIT_SHIFT["none_answer"] + 0.3)  # the reasoning step -0.3
    assert s_findings(chain_rows(n=10, sample_sd=0.1, shift=grown))["gsm8k"].verdict == FAILS
    flat = dict(SPLIT_SHIFT, detailed_answer=SPLIT_SHIFT["none_answer"])
    assert s_findings(chain_rows(n=10, sample_sd=0.1, shift=flat))["gsm8k"].verdict == UNRESOLVED


def test_s_is_pooled_per_family_and_needs_every_condition_of_the_chain():
    found = s_findings(chain_rows(("aqua", "gsm8k"), n=8, sample_sd=0.1))
    assert {"aqua", "gsm8k", "math_reasoning"} <= set(found)
    rows = chain_rows(n=8)
    assert not s_findings(rows[rows["setting"] != gap_split.CHAIN[2]])  # no cell without the chain


def test_s_is_calibrated_by_the_gap_and_within_rules_and_reads_the_token_counts():
    check = checks.get(s_gap_split.CHECK.id)
    assert check.calibrated_by == (rule.GAP, rule.WITHIN) and checks.GAP_CHAPTER in check.chapters
    assert {gap_split.FROBENIUS, gap_split.TOKENS} <= set(check.reads)


def estimate(low: float, high: float, n: int = 10) -> Estimate:
    """An estimate whose 95% interval is about [low, high]."""
    draws = np.linspace(low, high, 4001)
    return Estimate((low + high) / 2, draws, (("d", n),))


@pytest.mark.parametrize(
    ("low", "high", "outcome"),
    [
        (0.2, 0.6, gap_split.Outcome.LARGER),
        (-0.6, -0.2, gap_split.Outcome.SMALLER),
        (-0.05, 0.05, gap_split.Outcome.SAME),
        (0.01, 0.05, gap_split.Outcome.LARGER),  # the sign first: clears 0, by less than the margin
        (-0.3, 0.3, gap_split.Outcome.UNRESOLVED),
        (-0.05, SAME_MARGIN + 0.02, gap_split.Outcome.UNRESOLVED),  # reaches 0 and leaves the margin
    ],
)
def test_a_step_is_decided_when_it_clears_0_or_lies_within_the_margin(low, high, outcome):
    found = gap_split.step_outcome(estimate(low, high))
    assert found is outcome and found.decided is (outcome is not gap_split.Outcome.UNRESOLVED)


def test_a_step_on_too_few_instructions_is_not_decided():
    assert gap_split.step_outcome(estimate(0.2, 0.6, n=4)) is gap_split.Outcome.TOO_FEW
    assert not gap_split.Outcome.TOO_FEW.decided


def test_the_split_table_says_what_each_step_decides():
    split = gap_split.gap_split(curves(chain_rows(n=10, sample_sd=0.1)))
    table = split.table().set_index("step")
    for step, true in SPLIT_TRUE.items():
        expected = "larger" if true > 0 else "smaller"
        assert table.loc[step, "outcome"] == expected and bool(table.loc[step, "decided"])
    assert math.isfinite(table.loc[gap_split.TOTAL, "estimate"])
