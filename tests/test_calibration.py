"""Error rates, coverage and power of the book's rules, measured by simulation in the study's design
through the book's own functions (fixed seeds: the same numbers on every run). Each test names the
rule it would have failed on before."""

import math

import numpy as np
import pytest

from analysis.findings import calibration
from analysis.findings.bootstrap import Estimate

REPS = 600
RESAMPLES = 200
# the largest rate that is still consistent with a true rate of 5% at REPS runs (one-sided, 2 SE)
FIVE_PERCENT = 0.05


@pytest.fixture(scope="module")
def false_holds():
    return calibration.false_holds_table(n=5, reps=REPS, n_resamples=RESAMPLES, seed=11)


@pytest.mark.parametrize("rule", ["gap", "same", "not better", "roughness"])
def test_no_rule_says_holds_more_than_5_percent_of_the_time_when_its_claim_is_false(false_holds, rule):
    rows = false_holds[false_holds["rule"] == rule]
    assert len(rows) == 3
    assert (rows["holds when false"] <= FIVE_PERCENT).all(), rows
    assert (rows["does not hold when true"] <= FIVE_PERCENT).all(), rows


def test_the_papers_mad_rule_would_fail_that_test(false_holds):
    """MAD of a noisy mean curve grows with the samples' noise: None CoT looks rougher on noise alone."""
    rows = false_holds[false_holds["rule"] == "paper MAD"]
    assert (rows["holds when false"] > 0.3).all(), rows


def test_the_former_nearly_same_rule_could_not_hold_at_5_instructions():
    """Mean |RD| < 0.1 on truly equal curves with None-CoT noise: its noise floor lies above 0.1."""
    design = calibration.study_designs(5)["4 datasets"]
    assert calibration.false_holds("old same", design, reps=200, n_resamples=RESAMPLES, seed=3) < 0.05


@pytest.fixture(scope="module")
def coverage():
    return calibration.coverage_table(n=5, reps=2 * REPS, n_resamples=RESAMPLES, seed=12)


def test_gap_intervals_cover_95_percent_with_balanced_misses(coverage):
    rows = coverage[coverage["quantity"].str.startswith("gap")]
    assert len(rows) == 3
    assert rows["coverage"].between(0.93, 0.97).all(), rows
    assert (rows[["miss below", "miss above"]] <= 0.035).all().all(), rows


def test_roughness_intervals_never_undercover(coverage):
    """The roughness difference is a U-statistic; its bootstrap spread overstates its error when the
    noise dwarfs the curve's steps, so its intervals are conservative, never liberal."""
    rows = coverage[coverage["quantity"].str.startswith("roughness")]
    assert (rows["coverage"] >= 0.93).all(), rows
    assert (rows[["miss below", "miss above"]] <= 0.035).all().all(), rows


def test_logs_of_samples_cover_where_logs_of_means_do_not_and_the_exact_factor_suffices():
    table = calibration.skew_table(ns=(5, 20), sigmas=(1.0,), reps=REPS, n_resamples=RESAMPLES, seed=13)
    chosen = table[table["quantity"] == "mean of logs"]
    assert chosen["coverage"].between(0.93, 0.97).all(), table
    assert (chosen[["miss below", "miss above"]] <= 0.035).all().all(), table
    means = table[table["quantity"] == "log of mean ratio"]
    assert (means["coverage"] < chosen["coverage"].to_numpy()).all(), table


def test_an_accuracy_interval_stays_in_0_1_and_is_never_1_1():
    low, high = Estimate(1.0, np.ones(500), (("d", 10),), bounded=True).interval()
    assert high == 1.0 and 0.6 < low < 0.8  # 10 out of 10: Wilson's interval, not [1, 1]
    from analysis.findings.closest_setting import accuracy_estimate

    perfect = accuracy_estimate(np.ones(30, dtype=bool), np.repeat(np.arange(10), 3), n_resamples=200)
    assert perfect.interval()[1] == 1.0 and perfect.interval()[0] < 1.0  # what the your-data page shows
    table = calibration.share_table(ns=(10,), shares=(0.8, 0.95), reps=300, n_resamples=RESAMPLES, seed=14)
    wilson = table[table["interval"] == "Wilson"]
    assert (wilson["outside [0, 1]"] == 0).all() and (wilson["[1, 1]"] == 0).all(), table
    assert (wilson["coverage"] >= 0.9).all(), table
    plain = table[table["interval"] == "t"]
    assert (plain["outside [0, 1]"] + plain["[1, 1]"]).max() > 0.05, table  # what the t interval did


def test_the_planned_size_gives_the_power_it_promises():
    """``rules.instructions_for_power`` (what the pages say a check would need) against simulation."""
    design = calibration.study_designs(5)["one dataset"]
    planned = calibration.planned_instructions(design, 0.3, seed=15)
    assert planned is not None and planned > 5
    bigger = calibration.Design((planned,), design.fast_sd, design.slow_sd, design.instruction_sd)
    achieved = calibration.power(bigger, 0.3, reps=400, n_resamples=RESAMPLES, seed=16)
    assert 0.7 <= achieved <= 0.92, (planned, achieved)
    at_five = calibration.power(design, 0.3, reps=400, n_resamples=RESAMPLES, seed=17)
    assert at_five < achieved


def test_welch_degrees_of_freedom_follow_the_noisy_dataset():
    rng = np.random.default_rng(0)
    quiet = [Estimate(0.0, 0.01 * rng.standard_normal(1000), ((f"q{i}", 5),)) for i in range(3)]
    noisy = Estimate(0.0, 1.0 * rng.standard_normal(1000), (("noisy", 5),))
    from analysis.findings.bootstrap import pooled

    family = pooled([*quiet, noisy])
    assert family.df == pytest.approx(4, abs=0.1)  # the noisy dataset's n - 1, not 20 - 4
    even = pooled([Estimate(0.0, rng.standard_normal(1000), ((f"e{i}", 5),)) for i in range(4)])
    assert even.df == pytest.approx(16, rel=0.15)
    assert math.isclose(family.standard_error() ** 2, family.draws.var(ddof=1) * 5 / 4, rel_tol=0.05)
