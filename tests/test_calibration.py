"""Coverage, false-positive rate and power of the book's intervals and verdicts, measured by
simulation through the book's own engine (fixed seeds: the same numbers on every run)."""

import math

from analysis.findings import calibration
from analysis.findings.bootstrap import MIN_VERDICT_SAMPLES


def test_intervals_cover_at_the_sample_sizes_the_profiles_use():
    table = calibration.coverage_table(ns=(5, 10, 20), designs=((5, 2), (5, 6)), reps=600, seed=1)
    single = table[table["datasets"] == 1].set_index("n")["coverage"]
    assert (single.loc[[10, 20]] >= 0.93).all(), table
    # the smallest size with a verdict covers too, and so do the pooled designs of the cpu profile
    smallest = min(n for n in single.index if n >= MIN_VERDICT_SAMPLES)
    assert single.loc[smallest] >= 0.93, table
    assert (table[table["datasets"] > 1]["coverage"] >= 0.93).all(), table


def test_false_positive_rate_stays_at_the_nominal_level_and_power_grows_with_the_effect():
    reps = 1500
    # not above the nominal 2.5% (one side of a 95% interval) by more than two Monte Carlo errors
    allowed = 0.025 + 2 * math.sqrt(0.025 * 0.975 / reps)
    table = calibration.power_table(effects=(0.0, 0.2, 0.4), n=5, n_datasets=6, reps=reps, seed=2)
    holds = table.set_index("effect")["holds"]
    assert holds.loc[0.0] <= allowed, table
    assert holds.loc[0.0] < holds.loc[0.2] < holds.loc[0.4]
    assert holds.loc[0.4] >= 0.9, table  # a 1.5-fold ratio is found almost always at 6 x 5 instructions
    smaller = calibration.power_table(effects=(0.0,), n=5, n_datasets=2, reps=reps, seed=3)
    assert smaller["holds"].iloc[0] <= allowed, smaller
