"""The reproducibility page's table of false "holds" (``calibration.false_holds_table`` of the
study's checks): its fast paths against the plain computations they replace, in the same run, and
the two tables compared.

The plain run puts back what the fast paths replace: G1's ridge classifier fitted by scikit-learn's
pipeline (``StandardScaler`` then ``Ridge``) in every fold, its folds split afresh for every
simulated run, and the t quantile from ``scipy.stats.t.ppf``. Both runs compute the table from an
empty cache; the seconds (wall and process CPU) of each and their ratio are reported, with whether
the tables are identical (``pandas.testing.assert_frame_equal``). Other work on the machine moves
both timings; the ratio, measured within one run, moves less than either.

``python benchmarks/bench_simulated_tables.py [--reps R] [--seed S] [--out FILE]`` (default: the
page's runs, written to benchmarks/out/simulated_tables.json).
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from analysis.checks import REGISTRY
from analysis.findings import beyond_loss, bootstrap, calibration, classifier, intervals
from analysis.report.reproducibility import CALIBRATION_REPS


def pipeline_decisions(train: np.ndarray, targets: np.ndarray, test: np.ndarray, penalty: float) -> np.ndarray:
    """``classifier.ridge_decisions`` through scikit-learn's pipeline."""
    model = make_pipeline(StandardScaler(), Ridge(alpha=penalty)).fit(train, np.eye(train.shape[0]))
    return model.predict(test).reshape(test.shape[0], -1) @ targets


def scipy_quantile(df: float, level: float) -> float:
    """``intervals.t_quantile`` through ``scipy.stats.t.ppf``."""
    return float(sps.t.ppf(1 - (1 - level) / 2, df))


@contextmanager
def plain():
    """The plain computations in place of the fast paths, put back on leaving."""
    saved = (classifier.ridge_decisions, intervals.t_quantile, bootstrap.t_quantile, beyond_loss.pair_folds)
    classifier.ridge_decisions = pipeline_decisions
    intervals.t_quantile = bootstrap.t_quantile = scipy_quantile
    beyond_loss.pair_folds = beyond_loss.pair_folds.__wrapped__  # split afresh every time
    try:
        yield
    finally:
        classifier.ridge_decisions, intervals.t_quantile, bootstrap.t_quantile, beyond_loss.pair_folds = saved


def timed(reps: int, seed: int) -> tuple[pd.DataFrame, float, float]:
    """The table, its wall seconds and its process CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    table = calibration.false_holds_table(registry=REGISTRY, reps=reps, seed=seed)
    return table, time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=CALIBRATION_REPS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/simulated_tables.json"))
    args = parser.parse_args(argv)
    with plain():
        before, plain_wall, plain_cpu = timed(args.reps, args.seed)
    beyond_loss.pair_folds.cache_clear()  # the fast run makes its folds itself
    after, fast_wall, fast_cpu = timed(args.reps, args.seed)
    try:
        pd.testing.assert_frame_equal(before, after)
        identical = True
    except AssertionError:
        identical = False
    result = {
        "reps": args.reps,
        "seed": args.seed,
        "plain_s": plain_wall,
        "fast_s": fast_wall,
        "plain_cpu_s": plain_cpu,
        "fast_cpu_s": fast_cpu,
        "plain_over_fast": plain_wall / fast_wall,
        "plain_over_fast_cpu": plain_cpu / fast_cpu,
        "identical": identical,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
