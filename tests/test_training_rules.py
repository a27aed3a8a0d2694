"""T1-T3 of "During training" on simulated tables: verdicts with effects, too few seeds, false holds;
declared in the check registry and run by its engine."""

import numpy as np

from analysis.findings import calibration, checks, training, training_calibration
from analysis.findings.rules import FAILS, HOLDS, TOO_FEW
from analysis.train.naming import TrainingRunId


def as_store(probes, change, model="m"):
    """The simulated tables as the store and the weight-change table hold them."""
    runs = {
        (arm, seed): TrainingRunId(model, "aqua", arm, "correct", int(seed))
        for arm, seed in probes[["arm", "seed"]].drop_duplicates().itertuples(index=False)
    }
    rows = probes.assign(
        model=[runs[(a, s)].probe_model(t) for a, s, t in zip(probes["arm"], probes["seed"], probes["step"])],
        dataset="aqua",
        responses="correct",
    ).drop(columns=["arm", "seed", "step"])
    change = change.assign(model=model, run=[runs[(a, s)].run for a, s in zip(change["arm"], change["seed"])])
    return rows, change


def run(rows, change, n_resamples=200, **given):
    """The registered training checks on store rows, by the findings engine."""
    runs = training.TrainingRuns(rows, change, n_resamples=n_resamples, **given)
    return checks.run_checks({}, checks.on_chapter("during_training"), extra={training.TRAINING_RUNS: runs})


def test_effects_hold_and_two_seeds_are_too_few_for_t2():
    rng = np.random.default_rng(1)
    probes, change = training_calibration.simulated_tables(rng, 6, 5, 8, gap=0.5, arm_effect=0.5, follows_curve=1.0)
    assert training_calibration.verdicts(probes, change) == dict.fromkeys(training_calibration.RULES, HOLDS)
    probes, change = training_calibration.simulated_tables(rng, 6, 2, 8, gap=0.5, arm_effect=0.5, follows_curve=1.0)
    assert training_calibration.verdicts(probes, change)["arm change"] == TOO_FEW


def test_a_reversed_gap_does_not_hold():
    rng = np.random.default_rng(2)
    probes, change = training_calibration.simulated_tables(rng, 8, 5, 8, gap=-0.5, arm_effect=-0.5, follows_curve=-1.0)
    assert set(training_calibration.verdicts(probes, change).values()) == {FAILS}


def test_findings_from_store_rows_name_their_run_and_step():
    rng = np.random.default_rng(3)
    rows, change = as_store(*training_calibration.simulated_tables(rng, 6, 5, 8, gap=0.5, arm_effect=0.5))
    found = checks.findings_table(run(rows, change))
    assert found["check"].tolist() == ["T1", "T1", "T2", "T3", "T3"]
    assert found["claim"].tolist() == [checks.claim(c) for c in found["check"]]
    assert set(found["model"]) == {"m"}
    t3 = found[found["check"] == "T3"]
    assert (t3["verdict"] == HOLDS).all() and t3["numbers"].str.contains("at step 10").all()
    assert t3["numbers"].str.contains("at step 0").all()  # the step-0 gap is shown beside it


def test_spearman_rows_matches_scipy():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(3, 9)), rng.normal(size=(3, 9))
    expected = [spearmanr(x, y).statistic for x, y in zip(a, b)]
    np.testing.assert_allclose(training.spearman_rows(a, b), expected)


def test_false_holds_stay_near_the_level():
    rates = training_calibration.false_holds(training_calibration.TrainingDesign(5, 5, 8), reps=100, n_resamples=200)
    assert all(rate <= 0.06 for rate in rates.values()), rates


def test_the_training_checks_are_registered_with_their_rules_and_chapter():
    assert checks.on_chapter("during_training") == ("T1", "T2", "T3")
    assert not set(checks.on_chapter("during_training")) & {
        c for n in ("intro", "summary") for c in checks.on_chapter(n)
    }
    assert {r: calibration.checks_by_rule()[r] for r in training_calibration.RULES} == {
        "rank correlation": ("T1",),
        "arm change": ("T2",),
        "probe gap": ("T3",),
    }
    table = calibration.false_holds_table(reps=2, n_resamples=20, rules=training_calibration.RULES)
    assert table["checks"].tolist() == ["T1", "T2", "T3"] and (table["design"] == "training runs").all()
    assert run(*as_store(*training_calibration.simulated_tables(np.random.default_rng(6), 5, 2, 8)))
    assert checks.run_checks({}, ("T1", "T2", "T3")) == []  # no training runs: no rows in any matrix


def test_a_probe_missing_under_one_setting_is_left_out_of_every_quantity():
    rng = np.random.default_rng(5)
    rows, change = as_store(*training_calibration.simulated_tables(rng, 7, 7, 8, gap=0.5))
    some_run = rows["model"].iloc[0]
    rows = rows[~((rows["model"] == some_run) & (rows["setting"] == "detailed") & (rows["sample_index"] == 3))]
    found = run(training.with_run_columns(rows), change, n_resamples=100)
    assert all(f.n_smallest == 6 for f in found if f.check != "T2")


def test_quantities_after_training_count_the_seeds_too():
    """The weight change and the trained probes vary with the seed: with fewer than five seeds T1 and
    T3 are "too few samples", however many probe instructions there are."""
    rng = np.random.default_rng(6)
    rows, change = as_store(*training_calibration.simulated_tables(rng, 8, 2, 8, gap=0.5))
    found = run(training.with_run_columns(rows), change, n_resamples=100)
    assert found and all(f.verdict == "too few samples" and f.n_smallest == 2 for f in found)
