"""Work spread over cores (``core.processes``): the same results, in the jobs' order, whether the
jobs run in spawned processes or here one after another."""

import subprocess
import sys
import time

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


def test_a_pool_s_workers_exit_when_the_process_that_made_them_is_killed(tmp_path):
    """A run killed inside a parallel phase leaves no idle workers behind."""
    script = tmp_path / "pool.py"
    script.write_text(
        "import os, sys\n"
        "from analysis.core import processes\n"
        "if __name__ == '__main__':\n"
        "    pool = processes.spawned_pool(2)\n"
        "    print(pool.submit(os.getpid).result(), flush=True)\n"
        "    sys.stdin.read()\n"
    )
    caller = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    workers = [int(caller.stdout.readline())]
    assert _alive(workers[0])
    caller.kill()
    caller.wait()
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a finished one not yet reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
