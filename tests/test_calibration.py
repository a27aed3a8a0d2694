"""Error rates, coverage and power of the book's rules, measured by simulation in the study's design
through the book's own functions (fixed seeds: the same numbers on every run). Each test names the
rule it would have failed on before."""

import dataclasses
import math

import numpy as np
import pytest

from analysis import checks
from analysis.core.errors import StudyError
from analysis.findings import calibration, skew, stated_rates
from analysis.findings.bootstrap import Estimate
from analysis.findings.calibration import rule, scenarios

REPS = 600
RESAMPLES = 200
# the promised 2.5% per side, allowing two Monte Carlo standard errors at REPS runs (0.64 points)
# coverage runs: enough that two Monte Carlo standard errors (0.5 points) tell a family whose Welch
# interval misses 3% on one side (one dominant noisy dataset) from one that keeps 2.5%
COVERAGE_REPS = 4000
PROMISED_AT_REPS = stated_rates.PROMISED + 2 * math.sqrt(stated_rates.PROMISED * (1 - stated_rates.PROMISED) / REPS)


def test_each_rule_is_declared_once_with_its_stated_rate_and_checks_name_rules_not_names():
    """A rule is an object (``calibration.rule.Rule``) with its name, stated rate and simulation; a
    check's stated rate is the largest of its rules'; a check naming a rule by a string is refused."""
    assert len({r.name for r in calibration.RULES}) == len(calibration.RULES)
    above = {r.name: r.stated for r in calibration.RULES if r.stated != stated_rates.PROMISED}
    assert above == {"gap": 0.10, "not better": 0.05, "equal loss": 0.05, "arm change": 0.035}
    assert stated_rates.check_rate("F3", checks.REGISTRY) == max(rule.GAP.stated, rule.SAME.stated) == 0.10
    assert (
        stated_rates.check_rate("T2", checks.REGISTRY) == rule.ARM_CHANGE.stated
        and stated_rates.check_rate("A5", checks.REGISTRY) == 0.025
    )
    with pytest.raises(StudyError, match="not rules"):
        checks.extended(checks.REGISTRY, dataclasses.replace(checks.get("F1"), id="F9", calibrated_by=("gap",)))
    with pytest.raises(StudyError, match="training run's design"):
        calibration.false_holds(rule.ARM_CHANGE, calibration.study_designs(5)["one dataset"], reps=1)


@pytest.fixture(scope="module")
def false_holds():
    # G1's permutation rule ("beyond loss") is simulated apart (below, and test_beyond_loss.py)
    rules = tuple(r for r in calibration.checks_by_rule(checks.REGISTRY) if r is not rule.BEYOND_LOSS)
    return calibration.false_holds_table(
        n=5, rules=rules, registry=checks.REGISTRY, reps=REPS, n_resamples=RESAMPLES, seed=11
    )


# Every rule of the study's design that a check is calibrated by, tested once here (not once per
# check): the former rules (``PAPER_MAD``, ``OLD_SAME``) are shown, not promised; G1's permutation
# rule is slower and has its own test below.
STUDY_RULES = tuple(
    r
    for r in calibration.RULES
    if r.simulated_in is rule.SimulatedIn.STUDY and r not in (rule.PAPER_MAD, rule.OLD_SAME, rule.BEYOND_LOSS)
)


@pytest.mark.parametrize("simulated", STUDY_RULES, ids=lambda r: r.name)
def test_no_rule_says_holds_more_than_its_stated_rate_when_its_claim_is_false(false_holds, simulated):
    """2.5% for every rule but those whose stated rate (``Rule.stated``) is what they reach in the
    study's designs (the gap rule under skew, F4's "not better", A3's "equal loss"); and, where its
    claim is also made true, "does not hold" as rarely."""
    assert calibration.FAILS_RULES == (rule.GAP, rule.SAME, rule.NOT_BETTER, rule.ROUGHNESS, rule.WITHIN)
    rows = false_holds[false_holds["rule"] == simulated.name]
    assert len(rows) == 3
    allowed = PROMISED_AT_REPS - stated_rates.PROMISED + simulated.stated
    assert (rows["holds when false"] <= allowed).all(), rows
    if simulated.fails is not None:
        assert (rows["does not hold when true"] <= PROMISED_AT_REPS).all(), rows


def test_the_permutation_rule_says_holds_wrongly_at_most_its_stated_rate():
    """G1's "beyond loss" in each of the study's designs (a permutation test per run: fewer runs)."""
    reps = 90
    bound = rule.BEYOND_LOSS.stated + 2 * math.sqrt(rule.BEYOND_LOSS.stated * (1 - rule.BEYOND_LOSS.stated) / reps)
    for i, design in enumerate(calibration.study_designs(5).values()):
        rate = calibration.false_holds(rule.BEYOND_LOSS, design, reps=reps, n_resamples=RESAMPLES, seed=20 + i)
        assert rate <= bound, (design, rate)


def test_the_papers_mad_rule_would_fail_that_test(false_holds):
    """MAD of a noisy mean curve grows with the samples' noise: None CoT looks rougher on noise alone."""
    rows = false_holds[false_holds["rule"] == rule.PAPER_MAD.name]
    assert (rows["holds when false"] > 0.3).all(), rows


def test_the_former_nearly_same_rule_could_not_hold_at_5_instructions():
    """Mean |RD| < 0.1 on truly equal curves with None-CoT noise: its noise floor lies above 0.1."""
    design = calibration.study_designs(5)["4 datasets"]
    assert calibration.false_holds(rule.OLD_SAME, design, reps=200, n_resamples=RESAMPLES, seed=3) < 0.05


def test_a_family_whose_datasets_differ_keeps_its_rule_s_rate_where_its_mean_alone_does_not():
    """Two datasets with equal, one-sided or opposite true values, decided as the checks decide a
    family: each rule's wrong verdicts stay within the promised rate; the mean alone says "about the
    same" of datasets that are not; datasets with opposite effects are found to disagree, equal ones
    are not, and true claims are found."""
    reps = 300
    table = calibration.family_table(registry=checks.REGISTRY, reps=reps, n_resamples=RESAMPLES, seed=31)
    assert set(table["rule"]) == {rule.GAP.name, rule.WITHIN.name} and len(table) == 8
    assert (table["error"] <= _bound(reps)).all(), table
    not_same = table[(table["rule"] == rule.WITHIN.name) & table["datasets"].str.startswith(("one", "opposite"))]
    assert (not_same["error of the mean alone"] > 4 * _bound(reps)).all(), not_same
    opposite = table[table["datasets"].str.startswith(("opposite", "+1.0"))]
    assert (opposite["the datasets disagree"] > 4 * _bound(reps)).all(), opposite
    equal = table[table["datasets"].str.startswith("equal")]
    assert (equal["the datasets disagree"] <= _bound(reps)).all(), equal
    assert (table.loc[table["claim"] == "true", "holds"] > 0.8).all(), table


@pytest.fixture(scope="module")
def coverage():
    return calibration.coverage_table(n=5, reps=COVERAGE_REPS, n_resamples=RESAMPLES, seed=12)


def _bound(reps: int) -> float:
    """The promised 2.5% per side plus two Monte Carlo standard errors at ``reps`` runs."""
    return stated_rates.PROMISED + 2 * math.sqrt(stated_rates.PROMISED * (1 - stated_rates.PROMISED) / reps)


def test_gap_intervals_cover_95_percent_with_balanced_misses(coverage):
    rows = coverage[coverage["quantity"].str.startswith("gap")]
    assert len(rows) == 3
    assert rows["coverage"].between(0.93, 0.97).all(), rows
    assert (rows[["miss below", "miss above"]] <= _bound(COVERAGE_REPS)).all().all(), rows


def test_a_familys_interval_covers_the_mean_of_datasets_that_differ():
    """Datasets whose true effects lie far apart (opposite sides of the family's mean): the family's
    interval covers their mean at the stated rate, each side's misses within the promised 2.5%."""
    rows = calibration.conditional_coverage_table(n=5, reps=COVERAGE_REPS, n_resamples=RESAMPLES, seed=21)
    assert len(rows) == 2
    assert rows["coverage"].between(0.93, 0.97).all(), rows
    assert (rows[["miss below", "miss above"]] <= _bound(COVERAGE_REPS)).all().all(), rows


def test_roughness_intervals_never_undercover(coverage):
    """The roughness difference is a U-statistic; its bootstrap spread overstates its error when the
    noise dwarfs the curve's steps, so its intervals are conservative, never liberal."""
    rows = coverage[coverage["quantity"].str.startswith("roughness")]
    assert (rows["coverage"] >= 0.93).all(), rows
    assert (rows[["miss below", "miss above"]] <= _bound(COVERAGE_REPS)).all().all(), rows


def test_logs_of_samples_cover_where_logs_of_means_do_not_and_the_exact_factor_suffices():
    table = calibration.log_ratio_coverage_table(ns=(5, 20), sigmas=(1.0,), reps=REPS, n_resamples=RESAMPLES, seed=13)
    chosen = table[table["quantity"] == "mean of logs"]
    assert chosen["coverage"].between(0.93, 0.97).all(), table
    assert (chosen[["miss below", "miss above"]] <= _bound(REPS)).all().all(), table
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


# --------------------------------------------------------------------------- the promised 2.5% per side

# Runs per scenario: the Monte Carlo s.e. of a 2.5% rate is 0.25 points at 4000. Twenty rates are
# tested at once (ten scenarios, two sides), so each gets three standard errors (a true 2.5%
# passes them all 97% of the time) where one rate alone would get two.
SCENARIO_REPS = 4000
# Where the book's interval cannot keep the promised 2.5% (skewed logs): the most it may miss on the
# side opposite the skew at 5 instructions per dataset, as book/methods.md states.
STATED_WORST_CASE = {
    "skewed logs": 0.06,
    "strongly skewed logs": 0.10,
    "left-skewed logs": 0.06,
    "strongly left-skewed logs": 0.10,
}
LEFT_SKEWED = ("left-skewed logs", "strongly left-skewed logs")  # a long lower tail: the other side misses
SKEWED = tuple(STATED_WORST_CASE)


def _many(reps: int) -> float:
    """The promised 2.5% per side plus three Monte Carlo standard errors at ``reps`` runs."""
    return stated_rates.PROMISED + 3 * math.sqrt(stated_rates.PROMISED * (1 - stated_rates.PROMISED) / reps)


@pytest.fixture(scope="module")
def misses():
    return scenarios.miss_table(n=5, reps=SCENARIO_REPS, n_resamples=RESAMPLES, seed=21, intervals=("geometric",))


def _rows(table, interval, skewed=False):
    rows = table[table["interval"] == interval]
    return rows[rows["scenario"].isin(SKEWED) == skewed]


def test_the_deciding_interval_misses_at_most_2_5_percent_per_side_in_every_hard_scenario(misses):
    """Log-normal 0.5/1/1.5, t with 3 df, one dataset 4x noisier, unequal n, AR(1) 0.9 layers,
    noise growing across layers: the mean log difference's t interval (F1, F3, F4, L, L2)."""
    rows = _rows(misses, "geometric")
    assert len(rows) == 8
    assert (rows[["miss below", "miss above"]] <= _many(SCENARIO_REPS)).all().all(), rows


def test_under_skewed_logs_it_misses_no_more_than_methods_states_and_only_against_the_skew(misses):
    """Skewed to the right, the interval misses above the truth (a false "holds" of a "below"
    claim); to the left, below it (a false "holds" of a "larger than" claim: F1, L, L2)."""
    rows = _rows(misses, "geometric", skewed=True)
    assert len(rows) == 4
    for _, row in rows.iterrows():
        against, along = (
            ("miss below", "miss above") if row["scenario"] in LEFT_SKEWED else ("miss above", "miss below")
        )
        assert row[against] <= STATED_WORST_CASE[row["scenario"]], rows
        assert row[against] > _many(SCENARIO_REPS), rows  # the level is indeed not held: stated, not hidden
        assert row[along] <= _many(SCENARIO_REPS), rows  # the other side stays within


def test_the_roughness_interval_misses_at_most_2_5_percent_per_side_everywhere():
    table = scenarios.miss_table(n=5, reps=1000, n_resamples=RESAMPLES, seed=23, intervals=("roughness",))
    assert len(table) == len(scenarios.scenarios())
    assert (table[["miss below", "miss above"]] <= _many(1000)).all().all(), table


def test_the_mean_curves_roughness_says_rougher_wrongly_at_most_2_5_percent():
    """F2 decides None vs Simplified on it where None's log-scale spread changes across layers: its
    interval lies above the truth (a false "rougher") no more than promised in any scenario."""
    table = scenarios.miss_table(n=5, reps=1000, n_resamples=RESAMPLES, seed=25, intervals=("mean-curve roughness",))
    defined = table.dropna(subset=["miss below"])
    assert len(defined) == len(scenarios.scenarios()) - 1  # t noise of 3 df: no finite mean
    assert (defined["miss below"] <= _many(1000)).all(), table


def test_the_papers_arithmetic_mean_ratio_does_not_hold_the_level_so_it_does_not_decide():
    """The log ratio of arithmetic means, with a t or a bootstrap-t interval, misses far more than
    2.5% on one side under log-normal noise: why the geometric mean decides and it is shown beside."""
    arithmetic = ("arithmetic t", "arithmetic bootstrap-t")
    table = scenarios.miss_table(n=5, reps=500, n_resamples=RESAMPLES, seed=24, intervals=arithmetic)
    for interval in arithmetic:
        rows = table[(table["interval"] == interval) & table["scenario"].str.startswith("log-normal")]
        assert (rows["miss above"] > _many(500)).sum() >= 2, rows
    assert table.loc[table["scenario"] == "t, 3 df", "miss above"].isna().all()  # no finite mean


@pytest.mark.slow
def test_at_20_instructions_the_same_holds():
    table = scenarios.miss_table(n=20, reps=SCENARIO_REPS, n_resamples=RESAMPLES, seed=22, intervals=("geometric",))
    rows = _rows(table, "geometric")
    assert (rows[["miss below", "miss above"]] <= _many(SCENARIO_REPS)).all().all(), rows
    skewed = _rows(table, "geometric", skewed=True)
    assert all(r["miss above"] <= STATED_WORST_CASE[r["scenario"]] for _, r in skewed.iterrows()), skewed


# --------------------------------------------------------------------------- skew in both directions


def test_every_rule_keeps_its_stated_rate_at_skewness_minus_2_and_plus_2():
    """The per-sample logs skewed either way (a long lower tail: bare answers with a near-zero
    loss): each rule's false "holds" stays within the rate it states (``Rule.stated``), and
    the gap rule's stated rate above 2.5% is needed (left skew), not a margin for nothing."""
    reps = 200
    table = skew.false_holds_by_skew(
        n=5, registry=checks.REGISTRY, reps=reps, n_resamples=RESAMPLES, seed=41, skews=(-2.0, 2.0)
    )
    allowed = table["stated"] + 2 * np.sqrt(table["stated"] * (1 - table["stated"]) / reps)
    assert (table["holds when false"] <= allowed).all(), table
    left_gap = table[(table["rule"] == rule.GAP.name) & (table["skewness"] == -2.0)]
    assert left_gap["holds when false"].max() > _bound(reps), table


def test_the_skew_of_a_stores_values_is_measured():
    from synthetic import make_results, reasoning_conditions

    from analysis.findings.bootstrap import all_curve_draws

    rows = make_results(reasoning_conditions("aqua", ("none",), ("correct",)), n_samples=400, sample_sd=0.0, noise=0.01)
    rng = np.random.default_rng(0)
    factor = np.exp(-0.5 * rng.exponential(1.0, 400))  # logs with a long lower tail: skewness -2
    rows["nuclear_norm"] *= factor[rows["sample_index"].to_numpy()]
    draws = all_curve_draws(rows, ["base-model"], ("nuclear_norm",), n_resamples=50)
    measured = skew.measured_skew(draws)
    assert len(measured) == 1
    assert measured["skewness per sample (median)"].iloc[0] == pytest.approx(-2.0, abs=0.5)
