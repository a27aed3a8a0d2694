"""S: F1's gap split into four steps, decided on the reasoning step; every step, in both norms, says
what its interval decides (larger, smaller, about the same, not decided)."""

import math

import pytest
from synthetic import SPLIT_SHIFT, SPLIT_TRUE, chain_rows

from analysis import checks
from analysis.checks import s_gap_split
from analysis.findings import gap_split, roles
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.calibration import rule
from analysis.findings.dataset_context import DatasetContext
from analysis.findings.rules import FAILS, HOLDS, UNRESOLVED, Outcome

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
    assert [p.role for p in deciding] == [roles.REASONING_STEP]
    split = gap_split.dataset_split(cd, "gsm8k")
    by_role = {p.role: p for p in parts if not p.facet}
    for step in gap_split.STEPS:  # each step part is the split's own number
        assert by_role[s_gap_split.STEPS[step].role].estimate.value == pytest.approx(split[step.name].value)
    assert by_role[s_gap_split.TOTAL].estimate.value == pytest.approx(split[gap_split.TOTAL].value)
    assert roles.EARLY_LATE in by_role and not by_role[roles.EARLY_LATE].decides
    frobenius = gap_split.dataset_split(cd, "gsm8k", stat=gap_split.FROBENIUS)
    in_frobenius = {p.role: p for p in parts if p.facet == (gap_split.FROBENIUS,)}
    for step in gap_split.STEPS:  # the same split in the Frobenius norm, none of it deciding
        part = in_frobenius[s_gap_split.STEPS[step].role]
        assert part.estimate.value == pytest.approx(frobenius[step.name].value) and not part.decides


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
    assert not s_findings(rows[rows["setting"] != gap_split.REASONING.slow])  # no cell without the chain


def test_s_is_calibrated_by_the_gap_and_within_rules_and_reads_the_token_counts():
    check = checks.get(s_gap_split.CHECK.id)
    assert check.calibrated_by == (rule.GAP, rule.WITHIN) and checks.GAP_CHAPTER in check.chapters
    assert {gap_split.FROBENIUS, gap_split.TOKENS} <= set(check.reads)


def test_the_split_table_says_what_each_step_decides():
    (found,) = s_findings(chain_rows(n=10, sample_sd=0.1)).values()
    for step, true in SPLIT_TRUE.items():
        part = next(p for p in found.parts if p.name.startswith(step) and not p.facet)
        expected = Outcome.LARGER if true > 0 else Outcome.SMALLER
        assert part.outcome is expected and part.outcome.decided
    total = found.part(s_gap_split.TOTAL)
    assert total is not None and math.isfinite(total.value)
