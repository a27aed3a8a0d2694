"""Work spread over cores (``core.processes``): the same results, in the jobs' order, whether the
jobs run in spawned processes or here one after another."""

import numpy as np
import pandas as pd

from analysis.core import processes
from analysis.findings.calibration import rule_rates, scenarios


def _draws(*, seed: int, n: int) -> list[float]:
    return np.random.default_rng(seed).normal(size=n).tolist()


def test_each_gives_every_job_s_result_in_order_on_several_processes_and_on_one(monkeypatch):
    jobs = [{"seed": s, "n": 3} for s in range(5)]
    monkeypatch.setattr(processes, "available_cpus", lambda: 2)
    spread = processes.each(_draws, jobs)
    monkeypatch.setattr(processes, "available_cpus", lambda: 1)
    assert processes.each(_draws, jobs) == spread == [_draws(**job) for job in jobs]
    assert processes.workers_for(0) == 1 and processes.workers_for(5) == 1


def test_a_calibration_table_is_the_same_however_many_processes_compute_it(monkeypatch):
    """The tables the book commits (``make simulated-tables``) do not depend on the machine's cores."""

    def tables() -> list[pd.DataFrame]:
        return [
            rule_rates.coverage_table(n=5, reps=20, n_resamples=50, seed=3),
            scenarios.miss_table(n=5, reps=10, n_resamples=50, seed=4, intervals=("geometric",)),
        ]

    monkeypatch.setattr(processes, "available_cpus", lambda: 2)
    spread = tables()
    monkeypatch.setattr(processes, "available_cpus", lambda: 1)
    for parallel, sequential in zip(spread, tables()):
        pd.testing.assert_frame_equal(parallel, sequential)
