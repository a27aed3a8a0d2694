"""The test faults reach child processes through tests/faults, and production code holds none."""

import os
import subprocess
import sys
from pathlib import Path

from faults import injection

ROOT = Path(__file__).resolve().parents[1]

TIMED_WRITES = """
import sys, time
from pathlib import Path
import pandas as pd
from analysis import store
from analysis.store import store_files
out = Path(sys.argv[1])
results = store.ResultsStore(out)
key = store.RunKey("m", "d", "s", "correct", 8, "base")
frame = pd.DataFrame({"sample_index": [0], "layer": [0], "proj": ["q"]})
started = time.perf_counter()
results.write(key, frame, None)
part = time.perf_counter() - started
started = time.perf_counter()
store_files._atomic_write_bytes(out / "other.json", b"{}")
print(part, time.perf_counter() - started)
"""

CRASHING_LOOP = """
import types
import injection
runner = types.SimpleNamespace(compute_samples=lambda: iter(range(3)))
injection.patch_runner(runner)
print(list(runner.compute_samples()))
"""


def run_child(code: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LAYER_GRADIENT_") and k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**environment, **env},
        timeout=120,
    )


def test_production_modules_hold_no_fault_injection():
    names = (injection.WRITE_PAUSE_ENV, injection.WRITE_HOLD_ENV, injection.CRASH_ENV, "os._exit")
    for path in (ROOT / "analysis").rglob("*.py"):
        text = path.read_text()
        assert not [name for name in names if name in text], path


def test_store_writes_stall_only_with_the_faults_loaded(tmp_path):
    pause = {injection.WRITE_PAUSE_ENV: "0.4"}
    faulted = run_child(TIMED_WRITES, injection.child_environment(**pause), str(tmp_path / "a"))
    assert faulted.returncode == 0, faulted.stderr
    part, other = map(float, faulted.stdout.split())
    assert part >= 0.8 and other < 0.4  # before and after the rename of a part; other writes untouched
    plain = run_child(TIMED_WRITES, pause, str(tmp_path / "b"))
    assert plain.returncode == 0, plain.stderr
    assert float(plain.stdout.split()[0]) < 0.4


def test_the_crash_fault_exits_until_its_markers_are_there(tmp_path):
    env = injection.child_environment(**{injection.CRASH_ENV: f"2@{tmp_path}"})
    outcomes = [run_child(CRASHING_LOOP, env) for _ in range(3)]
    assert [o.returncode for o in outcomes] == [1, 1, 0]
    assert outcomes[-1].stdout.strip() == "[0, 1, 2]"
    assert len(list(tmp_path.glob("crash-*"))) == 2
