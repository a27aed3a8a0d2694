"""T1-T3 of "During training" on simulated tables: verdicts with effects, too few seeds, false holds;
declared in the check registry and run by its engine."""

from dataclasses import replace

import numpy as np

from analysis import checks
from analysis.findings import calibration, roles, training_checks
from analysis.findings.calibration import rule, training_calibration
from analysis.findings.rules import FAILS, HOLDS, NOT_APPLICABLE, TOO_FEW, UNRESOLVED, Why, decide
from analysis.report import voice


def as_store(probes, change, model="m"):
    """The simulated tables as the store and the weight-change table hold them."""
    return training_calibration.store_tables(probes, change, model)


def run(rows, change, n_resamples=200, **given):
    """The registered training checks on store rows, by the findings engine."""
    runs = training_checks.TrainingRuns(rows, change, n_resamples=n_resamples, **given)
    return checks.run_checks({}, checks.on_chapter("during_training"), extra={training_checks.TRAINING_RUNS: runs})


def test_effects_hold_and_two_seeds_are_too_few_for_t2():
    rng = np.random.default_rng(1)
    effects = training_calibration.Effects(gap=0.5, arm_effect=1.0, follows_curve=2.0, training_set=0.0)
    probes, change = training_calibration.simulated_tables(rng, 6, 5, 8, effects=effects)
    assert training_calibration.verdicts_of_tables(probes, change) == dict.fromkeys(training_calibration.RULES, HOLDS)
    probes, change = training_calibration.simulated_tables(rng, 6, 2, 8, effects=effects)
    assert training_calibration.verdicts_of_tables(probes, change)[rule.ARM_CHANGE] == TOO_FEW


def test_reversed_effects_do_not_hold_and_a_reversed_start_gap_makes_t3_not_applicable():
    rng = np.random.default_rng(2)
    reversed_ = training_calibration.Effects(gap=-0.5, arm_effect=-1.0, follows_curve=-1.0, training_set=0.0)
    found = training_calibration.verdicts_of_tables(
        *training_calibration.simulated_tables(rng, 8, 5, 8, effects=reversed_)
    )
    assert found == {rule.RANK_CORRELATION: FAILS, rule.ARM_CHANGE: FAILS, rule.PROBE_GAP: NOT_APPLICABLE}
    shrinking = training_calibration.simulated_tables(
        rng, 8, 5, 8, effects=training_calibration.Effects(gap=0.5, gap_change=-0.5)
    )
    assert training_calibration.verdicts_of_tables(*shrinking)[rule.PROBE_GAP] == FAILS  # the gap shrank by 40%


def test_tables_without_the_step_0_probes_of_the_none_setting_leave_t1_and_t3_unresolved():
    rng = np.random.default_rng(1)
    effects = training_calibration.Effects(gap=0.5, arm_effect=1.0, follows_curve=2.0, training_set=0.0)
    probes, change = training_calibration.simulated_tables(rng, 6, 5, 8, effects=effects)
    kept = probes[~((probes["setting"] == "none") & (probes["step"] == 0))]
    found = training_calibration.verdicts_of_tables(kept, change)
    assert found == {rule.RANK_CORRELATION: UNRESOLVED, rule.ARM_CHANGE: HOLDS, rule.PROBE_GAP: UNRESOLVED}


SMALL_DESIGN = training_calibration.TrainingDesign(5, 5, 8)


def _false_holds(effects, simulated, design=SMALL_DESIGN, reps=300):
    """The share of "holds" of a training rule: its check's simulated verdict (keyed by the rule)."""
    rng, hits = np.random.default_rng(7), 0
    for rep in range(reps):
        runs = training_calibration.simulate(rng, design, effects)
        resampling = training_calibration.resampling_of(design, 200, rep)
        hits += training_calibration.simulated_verdicts(runs, resampling)[simulated] == HOLDS
    return hits / reps


def test_t2_with_a_training_set_effect_and_no_arm_effect_stays_at_its_level():
    """Each seed trains on its own instructions, so the seeds' spread covers the training set: with
    a training-set effect of the seed noise's size and no arm effect, T2 says "holds" at most at its
    level (2.5%, within the simulation's error). With one training set for every seed (the former
    design) the same effect is not averaged out and T2's false "holds" exceed that level."""
    scenarios = training_calibration.SCENARIOS
    assert _false_holds(scenarios["training-set effect of the seed noise's size"], rule.ARM_CHANGE) <= 0.04
    assert _false_holds(scenarios["training-set effect twice the seed noise"], rule.ARM_CHANGE) <= 0.04
    assert _false_holds(scenarios["one training set for every seed (former design)"], rule.ARM_CHANGE) >= 0.05


def test_t2_true_against_detailed_cot_only_stays_within_its_stated_rate():
    """T2 decides on the token-matched arm too: where the None arm leads Detailed CoT early but the
    cut arm moves as it does, or leads the cut arm evenly over depth (one part at its null), T2's
    false "holds" stay within its stated rate (within the simulation's error at 300 runs)."""
    scenarios = training_calibration.SCENARIOS
    allowed = rule.ARM_CHANGE.stated + 0.02
    assert (
        _false_holds(scenarios["None arm ahead of Detailed CoT only, as the token-matched arm"], rule.ARM_CHANGE)
        <= allowed
    )
    evenly = scenarios["None arm ahead of the token-matched arm evenly over depth"]
    assert _false_holds(evenly, rule.ARM_CHANGE) <= allowed
    # the same runs with the cut arm left behind in the early layers too: T2 is true and found
    assert _false_holds(replace(evenly, cut_arm=(0.0, -1.5)), rule.ARM_CHANGE) > 0.3


def test_t3_at_its_margin_with_a_training_set_effect_stays_near_its_level():
    effects = training_calibration.SCENARIOS["training-set effect of the seed noise's size"]
    assert effects.gap_change == -training_checks.T3_MARGIN  # the gap shrinks by exactly the margin
    assert _false_holds(effects, rule.PROBE_GAP) <= 0.05


def test_a_step_zero_curve_that_only_encodes_depth_does_not_pass_t1():
    """The curve and the weight change both follow depth: the curve's own Spearman correlation with
    the change is high, but it does not predict the change better than the layer index."""
    rng = np.random.default_rng(8)
    design = training_calibration.TrainingDesign(6, 5, 12)
    effects = training_calibration.SCENARIOS["step-0 curve and weight change follow depth only"]
    runs = training_calibration.simulate(rng, design, effects)
    resampling = training_calibration.resampling_of(design, 200, 0)
    by_curve, by_depth, beyond = training_checks.t1_from_cubes(runs.start["none"], runs.moved["none"], resampling, 10)
    assert by_curve.supports() and not by_curve.decides and by_depth.estimate.value > 0.5
    assert beyond.decides and decide([by_curve, by_depth, beyond]) != HOLDS


def test_t1_s_difference_equals_the_two_plain_spearman_correlations():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(9)
    design = training_calibration.TrainingDesign(5, 5, 10)
    runs = training_calibration.simulate(rng, design, training_calibration.Effects(follows_curve=1.0))
    resampling = training_calibration.resampling_of(design, 50, 0)
    by_curve, by_depth, beyond = training_checks.t1_from_cubes(runs.start["none"], runs.moved["none"], resampling, 10)
    curve, change = runs.start["none"].mean(axis=(0, 1)), runs.moved["none"].mean(axis=0)
    plain = [spearmanr(curve[:, p], change[:, p]).statistic for p in range(4)]
    depth = [abs(spearmanr(np.arange(10), change[:, p]).statistic) for p in range(4)]
    np.testing.assert_allclose([by_curve.estimate.value, by_depth.estimate.value], [np.mean(plain), np.mean(depth)])
    np.testing.assert_allclose(beyond.estimate.value, np.mean(plain) - np.mean(depth))


def test_t2_is_not_applicable_without_the_cut_arm():
    rng = np.random.default_rng(10)
    rows, change = as_store(
        *training_calibration.simulated_tables(rng, 6, 5, 8, effects=training_calibration.Effects(arm_effect=1.0))
    )
    keep = ~rows["model"].str.contains("detailed_cut_none")
    found = run(rows[keep], change[change["arm"] != "detailed_cut_none"])
    t2 = [f for f in found if f.check == "T2"]
    assert [f.verdict for f in t2] == [NOT_APPLICABLE] and t2[0].not_applicable.why is Why.NOT_TRAINED
    assert "detailed_cut_none" in t2[0].not_applicable.reason


def test_findings_from_store_rows_name_their_run_and_step():
    rng = np.random.default_rng(3)
    rows, change = as_store(
        *training_calibration.simulated_tables(
            rng, 6, 5, 8, effects=training_calibration.Effects(arm_effect=0.5, training_set=0.0)
        )
    )
    found = run(rows, change)
    assert [f.check for f in found] == ["T1", "T1", "T2", "T3", "T3", "T3"]
    assert all(checks.claim(f.check) == checks.get(f.check).claim for f in found)
    assert {f.model for f in found} == {"m"}
    t3 = [f for f in found if f.check == "T3"]
    assert all(f.verdict == HOLDS for f in t3)
    for f in t3:
        numbers = voice.numbers(f)
        after, start, change_ = (f.part(r) for r in (roles.GAP_AFTER, roles.GAP_AT_START, roles.GAP_CHANGE))
        assert after.name == "None / Detailed at step 10" and "at step 10" in numbers
        assert not start.decides and "at step 0" in numbers  # the step-0 gap is shown beside it
        assert change_.decides and change_.name == "step 10 / step 0 of that ratio"  # the change decides
        assert "step 10 / step 0 of that ratio" in numbers
    t2 = next(f for f in found if f.check == "T2")
    assert all(t2.part(roles.ARM_EARLY, facet=(arm,)).decides for arm in training_checks.T2_SLOW_ARMS)
    numbers = voice.numbers(t2)
    assert "vs Detailed:" in numbers and "vs Detailed cut to None length:" in numbers  # both contrasts shown


def test_spearman_rows_matches_scipy():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(3, 9)), rng.normal(size=(3, 9))
    expected = [spearmanr(x, y).statistic for x, y in zip(a, b)]
    np.testing.assert_allclose(training_checks.spearman_rows(a, b), expected)


def test_false_holds_stay_near_the_level():
    design = training_calibration.TrainingDesign(5, 5, 8)
    rates = training_calibration.largest_false_holds(design, reps=100, n_resamples=200)
    assert set(rates) == set(training_calibration.RULES) and all(rate <= 0.06 for rate in rates.values()), rates


def test_the_training_calibration_command_prints_each_scenario_and_rule(capsys):
    from analysis import cli

    assert cli.main(["training-calibration", "--reps", "2", "--resamples", "20", "--design", "5", "5", "8"]) == 0
    table = capsys.readouterr().out
    assert table.startswith("| rule") and all(r.name in table for r in training_calibration.RULES)
    assert all(name in table for name in training_calibration.SCENARIOS)


def test_the_training_checks_are_registered_with_their_rules_and_chapter():
    assert checks.on_chapter("during_training") == ("T1", "T2", "T3")
    assert not set(checks.on_chapter("during_training")) & {
        c for n in ("intro", "summary") for c in checks.on_chapter(n)
    }
    assert training_calibration.RULES == (rule.RANK_CORRELATION, rule.ARM_CHANGE, rule.PROBE_GAP)
    for simulated in training_calibration.RULES:  # each training rule reads the verdict of the one check it calibrates
        assert calibration.checks_by_rule(checks.REGISTRY)[simulated] == (
            {rule.RANK_CORRELATION: "T1", rule.ARM_CHANGE: "T2", rule.PROBE_GAP: "T3"}[simulated],
        )
    table = calibration.false_holds_table(
        reps=2, n_resamples=20, rules=training_calibration.RULES, registry=checks.REGISTRY
    )
    assert table["checks"].tolist() == ["T1", "T2", "T3"] and (table["design"] == "training runs").all()
    assert run(*as_store(*training_calibration.simulated_tables(np.random.default_rng(6), 5, 2, 8)))
    assert checks.run_checks({}, ("T1", "T2", "T3")) == []  # no training runs: no rows in any matrix


def test_a_probe_missing_under_one_setting_is_left_out_of_every_quantity():
    rng = np.random.default_rng(5)
    rows, change = as_store(
        *training_calibration.simulated_tables(rng, 7, 7, 8, effects=training_calibration.Effects(gap=0.5))
    )
    some_run = rows["model"].iloc[0]
    rows = rows[~((rows["model"] == some_run) & (rows["setting"] == "detailed") & (rows["sample_index"] == 3))]
    found = run(training_checks.with_run_columns(rows), change, n_resamples=100)
    assert all(f.n_smallest == 6 for f in found if f.check != "T2")


def test_quantities_after_training_count_the_seeds_too():
    """The weight change and the trained probes vary with the seed: with fewer than five seeds T1 and
    T3 are "too few samples", however many probe instructions there are."""
    rng = np.random.default_rng(6)
    rows, change = as_store(
        *training_calibration.simulated_tables(rng, 8, 2, 8, effects=training_calibration.Effects(gap=0.5))
    )
    found = run(training_checks.with_run_columns(rows), change, n_resamples=100)
    assert found and all(f.verdict == "too few samples" and f.n_smallest == 2 for f in found)
