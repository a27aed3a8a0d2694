"""T1-T3 of "During training" on simulated tables: verdicts with effects, too few seeds, false holds."""

import numpy as np

from analysis.findings import training, training_calibration
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


def test_effects_hold_and_two_seeds_are_too_few_for_t2():
    rng = np.random.default_rng(1)
    probes, change = training_calibration.simulated_tables(rng, 6, 5, 8, gap=0.5, arm_effect=0.5, follows_curve=1.0)
    assert training_calibration.verdicts(probes, change) == {"T1": HOLDS, "T2": HOLDS, "T3": HOLDS}
    probes, change = training_calibration.simulated_tables(rng, 6, 2, 8, gap=0.5, arm_effect=0.5, follows_curve=1.0)
    assert training_calibration.verdicts(probes, change)["T2"] == TOO_FEW


def test_a_reversed_gap_does_not_hold():
    rng = np.random.default_rng(2)
    probes, change = training_calibration.simulated_tables(rng, 8, 5, 8, gap=-0.5, arm_effect=-0.5, follows_curve=-1.0)
    assert set(training_calibration.verdicts(probes, change).values()) == {FAILS}


def test_findings_from_store_rows_name_their_run_and_step():
    rng = np.random.default_rng(3)
    rows, change = as_store(*training_calibration.simulated_tables(rng, 6, 5, 8, gap=0.5, arm_effect=0.5))
    found = training.findings_table(training.training_findings(rows, change, n_resamples=200))
    assert found["check"].tolist() == ["T1", "T1", "T2", "T3", "T3"]
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
    rates = training_calibration.false_holds(reps=100, n_resamples=200)
    assert all(rate <= 0.06 for rate in rates.values()), rates


def test_a_probe_missing_under_one_setting_is_left_out_of_every_quantity():
    rng = np.random.default_rng(5)
    rows, change = as_store(*training_calibration.simulated_tables(rng, 7, 5, 8, gap=0.5))
    some_run = rows["model"].iloc[0]
    rows = rows[~((rows["model"] == some_run) & (rows["setting"] == "detailed") & (rows["sample_index"] == 3))]
    found = training.training_findings(training.with_run_columns(rows), change, n_resamples=100)
    assert all(f.n_smallest == 6 for f in found if f.check != "T2")
