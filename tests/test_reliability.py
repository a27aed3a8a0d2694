"""Reliability of extraction, seen from the command line.

Interrupted runs lose nothing and never leave the store unreadable; two runs on one store never
corrupt it; bad input gets one clear error line and leaves stored results as they were; a
sample with a NaN or an infinity is recorded as failed without taking its batch with it; and
nothing is loaded with remote code or pickle unless asked.

Runs are real ``python -m analysis`` processes. Most are forked from tests/faults/forkserver.py,
which has imported torch and transformers once, so that each of dozens of runs starts in a
fraction of a second instead of several seconds. The fork server loads the faults of
tests/faults/injection.py (stalled store writes), which each run switches on by its environment.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
import shutil
import signal
import string
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
from conftest import SHARED_DATA, tiny_model
from faults.injection import WRITE_HOLD_ENV, WRITE_PAUSE_ENV, child_environment

from analysis import cli
from analysis.core import cache
from analysis.extract import gradients, models
from analysis.store import read_results, read_skipped
from analysis.store.store_errors import StoreError

ROOT = Path(__file__).resolve().parents[1]
FORKSERVER = ROOT / "tests" / "faults" / "forkserver.py"
N_LAYERS = 4
MAX_LENGTH = 96
ROW_KEYS = ["condition", "sample_index", "layer", "proj"]
NUMBERS = [
    "nuclear_norm",
    "sigma_max",
    "sigma_min",
    "sigma1_ratio",
    "frobenius",
    "effective_rank",
    "cos_same_layer",
    "cos_next_layer",
    "loss",
    "n_tokens",
    "n_response_tokens",
]
PAUSE = 0.03  # seconds a faulted write stalls just before and just after its rename
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


# ---------------------------------------------------------------- running `python -m analysis`


@dataclass
class Finished:
    status: int  # exit code, or minus the signal number
    stdout: str
    stderr: str

    def lines(self, stream: str = "stderr") -> list[str]:
        """Non-empty lines, with progress bars (carriage returns) split out."""
        return [line for line in re.split(r"[\r\n]+", getattr(self, stream)) if line.strip()]

    def error_lines(self) -> list[str]:
        return [line for line in self.lines() if line.startswith("error:")]


@dataclass
class Started:
    pid: int
    stdout: Path
    stderr: Path

    def alive(self) -> bool:
        """Running (a finished child stays a zombie until the fork server reaps it)."""
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state not in ("Z", "X")

    def signal(self, number: int) -> None:
        os.kill(self.pid, number)


class Runs:
    """Starts ``python -m analysis`` runs: forked from the warm server, or as plain subprocesses."""

    def __init__(self, logs: Path):
        self.logs = logs
        self.count = 0
        self.unwaited: dict[int, Started] = {}
        self.server = subprocess.Popen(
            [sys.executable, str(FORKSERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, **OFFLINE, **child_environment()},
        )
        self.ready = False  # importing in the background until the first request

    def _call(self, request: dict) -> dict:
        if not self.ready:
            self.ready = True
            self._call({"op": "ping"})
        self.server.stdin.write(json.dumps(request) + "\n")
        self.server.stdin.flush()
        reply = self.server.stdout.readline()
        if not reply:
            raise RuntimeError(f"fork server stopped (exit {self.server.poll()})")
        return json.loads(reply)

    def start(self, argv: list[str], env: dict | None = None) -> Started:
        self.count += 1
        out, err = self.logs / f"run{self.count}.out", self.logs / f"run{self.count}.err"
        out.touch()
        err.touch()  # a run killed before it opens them has said nothing
        reply = self._call(
            {"op": "run", "argv": [str(a) for a in argv], "env": env or {}, "stdout": str(out), "stderr": str(err)}
        )
        started = self.unwaited[reply["pid"]] = Started(reply["pid"], out, err)
        return started

    def wait(self, started: Started) -> Finished:
        status = self._call({"op": "wait", "pid": started.pid})["status"]
        self.unwaited.pop(started.pid, None)
        return Finished(status, started.stdout.read_text(), started.stderr.read_text())

    def run(self, argv: list[str], env: dict | None = None) -> Finished:
        return self.wait(self.start(argv, env))

    @staticmethod
    def fresh_process(argv: list[str], env: dict | None = None, timeout: float = 300) -> Finished:
        """A plain ``python -m analysis`` subprocess (seconds of imports; used sparingly)."""
        done = subprocess.run(
            [sys.executable, "-m", "analysis", *map(str, argv)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, **OFFLINE, **(env or {})},
            timeout=timeout,
        )
        return Finished(done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        for started in list(self.unwaited.values()):  # left running by a failed test
            started.signal(signal.SIGKILL)
            self.wait(started)
        self.server.stdin.close()
        self.server.wait(timeout=30)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    started = Runs(tmp_path_factory.mktemp("logs"))
    yield started
    started.close()


# ---------------------------------------------------------------- data, model and reference run


def synthetic_records(rng: random.Random, count: int, too_long: set[int]) -> list[dict]:
    """Short instruction/response pairs; those in ``too_long`` have a prompt longer than MAX_LENGTH."""
    letters = string.ascii_lowercase + "     "

    def text(low: int, high: int) -> str:
        return "".join(rng.choice(letters) for _ in range(rng.randint(low, high))).strip() or "x"

    return [
        {
            "instruction": text(MAX_LENGTH + 5, MAX_LENGTH + 30) if i in too_long else text(8, 40),
            "input": "",
            "output": text(6, 40),
        }
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def data_files(tmp_path_factory) -> list[Path]:
    """Two data files of 18 samples, two of each with a prompt that leaves no response token."""
    folder = tmp_path_factory.mktemp("data")
    rng = random.Random(20250)
    files = []
    for name, too_long in (("alpha", {3, 11}), ("beta", {0, 16})):
        path = folder / f"{name}.json"
        path.write_text(json.dumps(synthetic_records(rng, 18, too_long), indent=1))
        files.append(path)
    return files


@pytest.fixture(scope="module")
def model_dir(tiny_model_dir) -> Path:
    return tiny_model_dir("llama", layers=N_LAYERS)


def extract_argv(model: Path, data: list[Path | str], out: Path, *extra: str) -> list[str]:
    return [
        "extract",
        "--model",
        str(model),
        "--template",
        "base",
        "--data",
        *map(str, data),
        "--out",
        str(out),
        "--max-length",
        str(MAX_LENGTH),
        "--batch-size",
        "2",
        "--shard-size",
        "1",
        "--device",
        "cpu",
        "--threads",
        "1",
        "--no-progress",
        *extra,
    ]


@dataclass
class Reference:
    out: Path
    rows: pd.DataFrame
    skipped: pd.DataFrame
    parts: int  # part files a clean run writes: one per write
    finished: Finished


@pytest.fixture(scope="module")
def reference(runs, model_dir, data_files, tmp_path_factory) -> Reference:
    """A clean, uninterrupted run, as a plain ``python -m analysis extract`` process (the fork server warms up meanwhile)."""
    out = tmp_path_factory.mktemp("reference") / "results"
    finished = Runs.fresh_process(extract_argv(model_dir, data_files, out))
    assert finished.status == 0, finished.stderr
    rows, skipped = checked_store(out)
    return Reference(out, rows, skipped, len(list(out.rglob("part-*.parquet"))), finished)


def checked_store(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The store read as a user reads it, with what must hold at any moment checked."""
    for part in out.rglob("part-*.parquet"):
        pq.read_metadata(part)  # every part a reader can see is whole
    rows, skipped = read_results(out), read_skipped(out)
    stored, recorded = set(), set()
    if not rows.empty:
        assert not rows.duplicated(ROW_KEYS).any(), "a (sample, layer, proj) row is stored twice"
        assert (rows.groupby(["condition", "sample_index"]).size() == N_LAYERS * 4).all(), "a sample is stored in part"
        stored = set(zip(rows["condition"], rows["sample_index"]))
    if not skipped.empty:
        assert not skipped.duplicated(["condition", "sample_index"]).any(), "a skipped sample is recorded twice"
        recorded = set(zip(skipped["condition"], skipped["sample_index"]))
    assert not stored & recorded, f"samples both stored and skipped: {sorted(stored & recorded)[:5]}"
    return rows, skipped


def assert_same_results(out: Path, reference: Reference) -> None:
    """Exactly the rows and skipped samples of the clean run, values within 1e-6 relative."""
    rows, skipped = checked_store(out)
    mine = rows.sort_values(ROW_KEYS).reset_index(drop=True)
    clean = reference.rows.sort_values(ROW_KEYS).reset_index(drop=True)
    assert mine[ROW_KEYS].equals(clean[ROW_KEYS])
    for column in NUMBERS:
        np.testing.assert_allclose(
            mine[column].to_numpy(float),
            clean[column].to_numpy(float),
            rtol=1e-6,
            atol=1e-12,
            equal_nan=True,
            err_msg=column,
        )
    keys = ["condition", "sample_index", "reason"]
    assert (
        skipped[keys]
        .sort_values(keys)
        .reset_index(drop=True)
        .equals(reference.skipped[keys].sort_values(keys).reset_index(drop=True))
    )


def store_snapshot(out: Path) -> tuple[dict[str, bytes], pd.DataFrame]:
    """Every file of a store (bytes) and its rows, to check that a failing command changed nothing."""
    files = {
        str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name != ".lock"
    }
    return files, read_results(out)


def test_clean_run_reports_truncated_prompts_as_skipped(reference):
    """A prompt longer than max_length is skipped, counted and recorded, not an error."""
    summaries = reference.finished.lines("stdout")
    assert len(summaries) == 2
    for line in summaries:
        assert re.search(r": 16 computed, 0 already stored, skipped: 2 response truncated away;", line), line
    assert set(reference.skipped["reason"].str.split(":").str[0]) == {"response truncated away"}
    assert sorted(zip(reference.skipped["condition"], reference.skipped["sample_index"])) == [
        ("file:alpha", 3),
        ("file:alpha", 11),
        ("file:beta", 0),
        ("file:beta", 16),
    ]
    assert reference.rows.groupby("condition")["sample_index"].nunique().to_dict() == {
        "file:alpha": 16,
        "file:beta": 16,
    }


# ---------------------------------------------------------------- 1. killed at random points


def temporaries(out: Path) -> list[Path]:
    return list(out.rglob(".part-*.tmp")) if out.exists() else []


def visible_parts(out: Path) -> int:
    return len(list(out.rglob("part-*.parquet"))) if out.exists() else 0


def wait_until(condition, started: Started, timeout: float = 120, every: float = 0.002) -> bool:
    """Poll ``condition`` until it holds (True) or the run ends (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if not started.alive():
            return False
        time.sleep(every)
    raise TimeoutError("run neither progressed nor ended")


def landing(out: Path, finished: Finished) -> str:
    """Where a kill landed, read from what it left behind."""
    if finished.status == 0:
        return "after the run had finished"
    left = temporaries(out)
    if left:
        whole = all(_is_whole_parquet(p) for p in left)
        return (
            "inside a write: temporary file complete, not renamed"
            if whole
            else "inside a write: temporary file partly written"
        )
    if visible_parts(out) == 0:
        return "before the first write (start-up or first batch)"
    return "between writes (computing, or just after a rename)"


def _is_whole_parquet(path: Path) -> bool:
    try:
        pq.read_metadata(path)
        return True
    except Exception:
        return False


def kill_at_random(
    runs: Runs,
    rng: random.Random,
    mode: str,
    argv: list[str],
    out: Path,
    reference: Reference,
    startup: float,
    duration: float,
) -> str:
    """Start a run with stalled writes, SIGKILL it, and say where the kill landed.

    ``random``: at a uniform time over the run's expected length; ``write``: while the temporary
    file of a randomly chosen write is on disk (at once, or a little later during the stall).
    """
    remaining = max(1, reference.parts - visible_parts(out))
    run = runs.start(argv, {WRITE_PAUSE_ENV: str(PAUSE)})
    if mode == "random":
        deadline = time.monotonic() + rng.uniform(0, startup + (duration - startup) * remaining / reference.parts)
        wait_until(lambda: time.monotonic() >= deadline, run)
    else:
        target, seen = rng.randint(1, remaining), set()

        def reached() -> bool:
            seen.update(p.name for p in temporaries(out))
            return len(seen) >= target

        if wait_until(reached, run, every=0.001):
            time.sleep(rng.choice([0.0, rng.uniform(0, 0.8 * PAUSE)]))
    run.signal(signal.SIGKILL)
    killed = runs.wait(run)
    assert killed.status in (0, -signal.SIGKILL), killed.stderr
    return f"{mode}: {landing(out, killed)}"


CHAINS = 8  # stores killed twice each


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_gives_the_clean_result(runs, model_dir, data_files, reference, tmp_path):
    """16 seeded SIGKILLs, half at random times and half aimed inside a write of the store.

    Each of 8 stores is killed twice (a fresh run, then the run resuming it), checked after
    each kill, then resumed to the end and compared with the clean run.
    """
    rng = random.Random(1234)
    timing = tmp_path / "timing"
    argv = extract_argv(model_dir, data_files, timing)
    began = time.monotonic()
    assert runs.run(argv, {WRITE_PAUSE_ENV: str(PAUSE)}).status == 0
    duration = time.monotonic() - began
    began = time.monotonic()
    assert runs.run(argv).status == 0  # nothing left to do: the fixed cost of a run
    startup = time.monotonic() - began
    assert_same_results(timing, reference)

    plan = ["random"] * CHAINS + ["write"] * CHAINS
    rng.shuffle(plan)
    landings: list[str] = []
    for chain in range(CHAINS):
        out = tmp_path / f"store{chain}"
        argv = extract_argv(model_dir, data_files, out)
        for mode in (plan[2 * chain], plan[2 * chain + 1]):
            landings.append(kill_at_random(runs, rng, mode, argv, out, reference, startup, duration))
            checked_store(out)  # reads back, no duplicates, no half-written part visible
        before = checked_store(out)[0]
        resumed = runs.run(argv)
        assert resumed.status == 0, resumed.stderr
        stored = {} if before.empty else before.groupby("condition")["sample_index"].nunique().to_dict()
        for line in resumed.lines("stdout"):
            condition, computed, already, skips = re.search(
                r"(file:\w+): (\d+) computed, (\d+) already stored, skipped: (.*);", line
            ).groups()
            newly_skipped = sum(int(n) for n in re.findall(r"(\d+) [a-z]", skips))
            assert int(computed) + int(already) + newly_skipped == 18 and int(already) >= stored.get(condition, 0), line
        assert_same_results(out, reference)
        assert not temporaries(out), "the resumed run left stale temporary files"

    counts = pd.Series(landings).value_counts()
    print(
        f"\n{len(landings)} SIGKILL trials (run: {startup:.1f} s fixed cost, {duration:.1f} s in all with stalled writes):\n"
        f"{counts.to_string()}"
    )
    inside = sum(n for where, n in counts.items() if "inside a write" in where)
    live = sum(n for where, n in counts.items() if "after the run had finished" not in where)
    assert inside >= CHAINS // 2, f"only {inside} kills landed inside a write"
    assert live >= 0.7 * len(landings), f"only {live} kills landed in a running process"


@pytest.mark.slow
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_just_after_a_part_is_renamed_stores_no_sample_twice(
    runs, model_dir, data_files, reference, tmp_path, number
):
    """Ctrl-C or SIGTERM inside a write, after its part is in place: the final flush must not write it again."""
    rng = random.Random(number)
    for trial in range(2):
        out = tmp_path / f"trial{trial}"
        run = runs.start(extract_argv(model_dir, data_files, out), {WRITE_PAUSE_ENV: str(2 * PAUSE)})
        target = rng.randint(2, reference.parts - 1)
        assert wait_until(lambda out=out, target=target: visible_parts(out) >= target, run, every=0.001)
        run.signal(number)
        stopped = runs.wait(run)
        assert stopped.status == 130, stopped.stderr
        assert stopped.lines()[-1].startswith("interrupted: results computed so far are stored")
        assert "Traceback" not in stopped.stderr
        checked_store(out)
        assert runs.run(extract_argv(model_dir, data_files, out)).status == 0
        assert_same_results(out, reference)


@pytest.mark.slow
def test_sigterm_stores_what_was_computed_since_the_last_flush(runs, model_dir, data_files, reference, tmp_path):
    out = tmp_path / "r"
    argv = [a for a in extract_argv(model_dir, data_files, out, "--shard-size", "1000") if a != "--no-progress"]
    run = runs.start(argv)

    def progress() -> int:
        """Samples done so far, from the progress bars (one per condition, 18 samples each)."""
        done: dict[str, int] = {}
        for bar in re.split(r"[\r\n]+", run.stderr.read_text()):
            match = re.search(r"(file:\w+):\s+\d+%.*?\|\s*(\d+)/18\b", bar)
            if match:
                done[match.group(1)] = max(done.get(match.group(1), 0), int(match.group(2)))
        return sum(done.values())

    assert wait_until(lambda: progress() >= 8, run, every=0.005)
    seen = progress()
    run.signal(signal.SIGTERM)
    stopped = runs.wait(run)
    assert stopped.status == 130, stopped.stderr
    rows, skipped = checked_store(out)
    stored = rows.drop_duplicates(["condition", "sample_index"]).shape[0] + len(skipped)
    assert stored >= seen, (stored, seen)
    assert runs.run(extract_argv(model_dir, data_files, out)).status == 0
    assert_same_results(out, reference)


# ---------------------------------------------------------------- 2. two runs on one store


@pytest.mark.slow
def test_second_run_on_a_busy_store_says_so_and_stops(runs, model_dir, data_files, reference, tmp_path):
    out, hold = tmp_path / "r", tmp_path / "hold"
    hold.touch()
    first = runs.start(extract_argv(model_dir, data_files, out), {WRITE_HOLD_ENV: str(hold)})
    try:
        assert wait_until(lambda: bool(temporaries(out)), first)  # holds the lock, stalled inside its first write
        second = Runs.fresh_process(extract_argv(model_dir, data_files, out))
    finally:
        hold.unlink()
    assert second.status == 2
    (message,) = second.error_lines()
    assert second.lines()[-1] == message
    assert "another process is computing this run in the same results store" in message
    assert "Traceback" not in second.stderr and second.stdout == ""
    print(f"\nsecond run on a busy store: {message}")
    assert runs.wait(first).status == 0
    assert_same_results(out, reference)


@pytest.mark.slow
def test_runs_started_together_never_store_a_sample_twice(runs, model_dir, data_files, reference, tmp_path):
    for trial, offset in enumerate((0.0, 0.15, 0.4)):
        out = tmp_path / f"r{trial}"
        first = runs.start(extract_argv(model_dir, data_files, out), {WRITE_PAUSE_ENV: "0.01"})
        time.sleep(offset)
        second = runs.start(extract_argv(model_dir, data_files, out), {WRITE_PAUSE_ENV: "0.01"})
        finished = [runs.wait(first), runs.wait(second)]
        print(f"\nstarted {offset} s apart: exit codes {[f.status for f in finished]}")
        assert {f.status for f in finished} <= {0, 2} and 0 in {f.status for f in finished}
        for f in finished:
            if f.status == 2:
                assert len(f.error_lines()) == 1 and "another process is computing this run" in f.error_lines()[0]
        if any(f.status == 2 for f in finished):  # the refused run may have left the other condition to do
            assert runs.run(extract_argv(model_dir, data_files, out)).status == 0
        assert_same_results(out, reference)


# ---------------------------------------------------------------- 3. bad input


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


BAD_FILES = {
    "malformed JSON": ('[{"instruction": "x", "output": "y"', r"bad\.json: malformed JSON at line 1, column \d+"),
    "not a list": ('{"instruction": "x", "output": "y"}', r"bad\.json: expected a JSON list of records, found dict"),
    "missing instruction": (
        '[{"instruction": "a", "output": "b"}, {"output": "y"}]',
        r"bad\.json: record 1: missing field 'instruction'",
    ),
    "missing output": ('[{"instruction": "x"}]', r"bad\.json: record 0: missing field 'output'"),
    "non-string output": (
        '[{"instruction": "x", "output": 3}]',
        r"bad\.json: record 0: field 'output' must be a string, found int",
    ),
    "non-string instruction": (
        '[{"instruction": "a", "output": "b"}, {"instruction": ["x"], "output": "y"}]',
        r"bad\.json: record 1: field 'instruction' must be a string, found list",
    ),
    "empty response": ('[{"instruction": "x", "output": ""}]', r"bad\.json: record 0: field 'output' is empty"),
}


@pytest.fixture
def prior(reference, tmp_path) -> Path:
    """A store that already holds results, to check that a failing command loses none of them."""
    out = tmp_path / "prior"
    shutil.copytree(reference.out, out)
    return out


def assert_one_error_and_nothing_lost(finished: Finished, pattern: str, out: Path, before) -> str:
    assert finished.status == 2, (finished.status, finished.stderr)
    assert "Traceback" not in finished.stderr
    errors = finished.error_lines()
    assert len(errors) == 1 and finished.lines()[-1] == errors[0], finished.stderr
    assert re.search(pattern, errors[0]), errors[0]
    assert finished.stdout == ""
    after = store_snapshot(out)
    assert after[0] == before[0]
    pd.testing.assert_frame_equal(after[1], before[1])
    return errors[0]


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_data_file_is_one_error_line_and_loses_nothing(runs, model_dir, data_files, prior, tmp_path, case):
    text, pattern = BAD_FILES[case]
    bad = _write(tmp_path / "bad.json", text)
    before = store_snapshot(prior)
    finished = runs.run(extract_argv(model_dir, [data_files[0], bad], prior))  # the good file first: nothing may run
    message = assert_one_error_and_nothing_lost(finished, pattern, prior, before)
    print(f"\n{case}: {message}")


def test_debug_shows_the_traceback(runs, model_dir, prior, tmp_path):
    bad = _write(tmp_path / "bad.json", BAD_FILES["malformed JSON"][0])
    finished = runs.run(["--debug", *extract_argv(model_dir, [bad], prior)])
    assert finished.status != 0 and "Traceback" in finished.stderr and "DataError" in finished.stderr


def _no_weights(tmp: Path, model_dir: Path) -> Path:
    folder = tmp / "no-weights"
    folder.mkdir()
    shutil.copy(model_dir / "config.json", folder)
    return folder


BAD_RUNS = {
    "unknown condition": (lambda tmp, m, d: ["--data", "aqua/slow/correct"], r"unknown condition 'aqua/slow/correct'"),
    "missing data file": (lambda tmp, m, d: ["--data", str(tmp / "absent.json")], r"absent\.json: data file not found"),
    "unreachable hub model": (
        lambda tmp, m, d: ["--model", "nobody-here/no-such-model"],
        r"cannot load model 'nobody-here/no-such-model'",
    ),
    "unknown model without a template": (
        lambda tmp, m, d: ["--model", "nobody-here/no-such-model", "--template", None],
        r"'nobody-here/no-such-model' is not in the registry.*--template",
    ),
    "model folder without weights": (
        lambda tmp, m, d: ["--model", str(_no_weights(tmp, m))],
        r"no-weights: no safetensors weights",
    ),
    "folder that is not a model": (lambda tmp, m, d: ["--model", str(tmp)], r"not a model folder \(no config\.json\)"),
    "no chat template for instruct": (
        lambda tmp, m, d: ["--model", str(d), "--template", "instruct"],
        r"has no chat template, so the instruct template cannot be used",
    ),
    "unwritable results directory": (
        lambda tmp, m, d: ["--out", str(_write(tmp / "a-file", "x") / "results")],
        r"a-file/results: cannot create the results store",
    ),
    "CUDA where none exists": (
        lambda tmp, m, d: ["--device", "cuda"],
        r"--device cuda was asked for, but no CUDA device",
    ),
    "unknown device": (lambda tmp, m, d: ["--device", "tpu"], r"--device must be auto, cpu or cuda"),
}


def _with(argv: list[str], changes: list[str | None]) -> list[str]:
    """``argv`` with the options in ``changes`` replaced (a None value removes the option)."""
    argv = list(argv)
    for option, value in zip(changes[::2], changes[1::2]):
        at = argv.index(option)
        end = at + 1
        while end < len(argv) and not argv[end].startswith("--"):
            end += 1
        argv[at:end] = [] if value is None else [option, value]
    return argv


@pytest.mark.parametrize("case", list(BAD_RUNS))
def test_bad_run_is_one_error_line_and_loses_nothing(
    runs, model_dir, tiny_model_dir, data_files, prior, tmp_path, case
):
    if case == "CUDA where none exists" and torch.cuda.is_available():
        pytest.skip("checks the message given where no CUDA device exists")
    change, pattern = BAD_RUNS[case]
    no_chat = tiny_model_dir("llama", chat_template=None, layers=N_LAYERS)
    argv = _with(extract_argv(model_dir, data_files, prior), change(tmp_path, model_dir, no_chat))
    before = store_snapshot(prior)
    message = assert_one_error_and_nothing_lost(runs.run(argv), pattern, prior, before)
    print(f"\n{case}: {message}")


def test_store_of_an_incompatible_version_is_refused_not_misread(runs, model_dir, data_files, prior):
    marker = prior / "store.json"
    marker.write_text(json.dumps({"format": "layer-gradient-results", "version": 99}))
    files = {p: p.read_bytes() for p in prior.rglob("*") if p.is_file() and p.name != ".lock"}
    finished = runs.run(extract_argv(model_dir, data_files, prior))
    assert finished.status == 2 and len(finished.error_lines()) == 1 and "Traceback" not in finished.stderr
    assert re.search(
        r"store\.json: results written by an incompatible version \(format 'layer-gradient-results', version 99",
        finished.error_lines()[0],
    )
    assert {p: p.read_bytes() for p in prior.rglob("*") if p.is_file() and p.name != ".lock"} == files
    with pytest.raises(StoreError, match="incompatible version"):
        read_results(prior)


def test_changed_registry_file_is_warned_recorded_and_read_back(runs, model_dir, prior, tmp_path):
    """A study file whose sha256 differs from the published one runs with a warning, and every row says so.

    The store then holds data_sha256_ok empty (files given by path) and boolean (study files)
    in different parts, which must still read back together.
    """
    relative = "gsm8k_train_no_cot.json"
    shared = Path(os.environ.get("LAYER_GRADIENT_DATA") or SHARED_DATA) / "cot_500" / relative
    records = json.loads(shared.read_text()) if shared.is_file() else synthetic_records(random.Random(3), 5, set())
    records[0]["output"] += " (edited)"
    changed = _write(tmp_path / "data" / "cot_500" / relative, json.dumps(records))
    before = store_snapshot(prior)
    argv = _with(
        extract_argv(
            model_dir, ["gsm8k/none/correct"], prior, "--data-dir", str(tmp_path / "data"), "--n-samples", "3"
        ),
        ["--max-length", "1024"],
    )
    finished = runs.run(argv)
    assert finished.status == 0, finished.stderr
    (warning,) = [line for line in finished.lines() if line.startswith("warning:")]
    assert warning.startswith(f"warning: {changed}: sha256 ") and "differs from the published file" in warning
    rows = read_results(prior)
    changed_rows = rows.query("condition == 'gsm8k/none/correct'")
    assert len(changed_rows) == 3 * N_LAYERS * 4 and (changed_rows["data_sha256_ok"] == False).all()  # noqa: E712
    kept = rows.query("condition != 'gsm8k/none/correct'").reset_index(drop=True)
    assert kept["data_sha256_ok"].isna().all()
    pd.testing.assert_frame_equal(kept, before[1].reset_index(drop=True), check_dtype=False)

    records[1]["output"] += " (edited again)"  # resuming now would mix samples of two different files
    changed.write_text(json.dumps(records))
    before = store_snapshot(prior)
    message = assert_one_error_and_nothing_lost(
        runs.run(_with(argv, ["--n-samples", "5"])),
        r"the stored results of gsm8k/none/correct were computed from a data file "
        r"with sha256 \w+…, but .*gsm8k_train_no_cot\.json now has sha256 \w+…; use a different --out",
        prior,
        before,
    )
    print(f"\nchanged data under stored results: {message}")


def test_store_whose_creation_was_interrupted_reads_as_empty(tmp_path):
    """Killed while writing its marker, a new store holds only a hidden temporary file: readers see no results."""
    root = tmp_path / "r"
    root.mkdir()
    (root / ".store.json.0123abcd.tmp").write_bytes(b'{"format": "layer-')
    assert read_results(root).empty and read_skipped(root).empty


# ---------------------------------------------------------------- 4. numerical faults


def _batch(samples):
    return gradients.make_batch([s for s, _ in samples], [p for _, p in samples], 0, torch.device("cpu"))


POISON = 99  # a token id found in one sample only
SAMPLES = [
    (list(range(5, 30)), 8),
    (list(range(3, 40)) + [POISON] + list(range(40, 50)), 6),
    (list(range(7, 25)), 5),
    (list(range(10, 60)), 12),
]


def _assert_same_values(result, expected, rtol, atol=1e-12):
    assert result.failure is None
    assert result.loss == pytest.approx(expected.loss, rel=rtol)
    for name, value in expected.values.items():
        # a singular value is only defined to within eps * sigma_max: sigma_min is compared on that scale
        floor = rtol * expected.values["sigma_max"] if name == "sigma_min" else atol
        close = (result.values[name] - value).abs() <= floor + rtol * value.abs()
        assert (close | (value.isnan() & result.values[name].isnan())).all(), name


def test_nan_in_one_sample_fails_that_sample_only():
    model = tiny_model("llama", layers=3)
    clean = gradients.batch_statistics(model, _batch(SAMPLES))

    def poison(module, args, output):
        return output.masked_fill((args[0] == POISON).unsqueeze(-1), float("inf"))

    handle = model.get_input_embeddings().register_forward_hook(poison)
    try:
        faulted = gradients.batch_statistics(model, _batch(SAMPLES))
    finally:
        handle.remove()
    assert faulted[1].failure == "numerical failure: non-finite loss (nan)" and not faulted[1].values
    for row in (0, 2, 3):
        _assert_same_values(faulted[row], clean[row], rtol=1e-6)
        alone = gradients.batch_statistics(model, _batch([SAMPLES[row]]))[0]
        _assert_same_values(
            faulted[row], alone, rtol=1e-4, atol=1e-9
        )  # the batched-vs-single tolerance of test_gradients


def test_infinite_gradient_with_a_finite_loss_fails_that_sample_only():
    model = tiny_model("llama", layers=3)
    clean = gradients.batch_statistics(model, _batch(SAMPLES))

    def poison_gradient(module, args, output):
        def hook(grad):
            grad = grad.clone()
            grad[2, 1] = float("inf")
            return grad

        output.register_hook(hook)

    handle = model.model.layers[1].self_attn.v_proj.register_forward_hook(poison_gradient)
    try:
        faulted = gradients.batch_statistics(model, _batch(SAMPLES))
    finally:
        handle.remove()
    assert (
        faulted[2].failure.startswith("numerical failure: non-finite gradient (") and "layer 1 v" in faulted[2].failure
    )
    assert faulted[2].loss == pytest.approx(clean[2].loss)
    for row in (0, 1, 3):
        _assert_same_values(faulted[row], clean[row], rtol=1e-6)


@pytest.mark.slow
def test_poisoned_weights_fail_one_sample_recorded_and_counted(runs, model_dir, tmp_path):
    """An infinite embedding row for a character found in one sample only, run through the command line."""
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    poisoned = tmp_path / "poisoned"
    shutil.copytree(model_dir, poisoned)
    weights = load_file(poisoned / "model.safetensors")
    token = AutoTokenizer.from_pretrained(model_dir).convert_tokens_to_ids("°")
    weights["model.embed_tokens.weight"][token] = float("inf")
    save_file(weights, poisoned / "model.safetensors", metadata={"format": "pt"})
    records = synthetic_records(random.Random(7), 8, set())
    records[5]["output"] = "it is 30° today " + records[5]["output"]
    data = _write(tmp_path / "temps.json", json.dumps(records))
    argv = ["--batch-size", "8", "--shard-size", "32"]
    faulty = runs.run(_with(extract_argv(poisoned, [data], tmp_path / "faulty"), argv))
    assert faulty.status == 0, faulty.stderr
    assert re.search(r": 7 computed, 0 already stored, skipped: 1 numerical failure;", faulty.stdout), faulty.stdout
    skipped = read_skipped(tmp_path / "faulty")
    assert skipped[["sample_index", "reason"]].values.tolist() == [[5, "numerical failure: non-finite loss (nan)"]]
    rows = read_results(tmp_path / "faulty")
    assert 5 not in set(rows["sample_index"]) and np.isfinite(rows[["nuclear_norm", "loss"]].to_numpy()).all()
    again = runs.run(_with(extract_argv(poisoned, [data], tmp_path / "faulty"), argv))
    assert ": 0 computed, 8 already stored" in again.stdout  # a failed sample is not retried on resume
    healthy = runs.run(_with(extract_argv(model_dir, [data], tmp_path / "healthy"), argv))
    assert healthy.status == 0
    expected = read_results(tmp_path / "healthy").query("sample_index != 5")
    mine, clean = (f.sort_values(ROW_KEYS).reset_index(drop=True) for f in (rows, expected))
    assert mine[ROW_KEYS].equals(clean[ROW_KEYS])
    for column in NUMBERS:
        np.testing.assert_allclose(
            mine[column].to_numpy(float),
            clean[column].to_numpy(float),
            rtol=1e-6,
            atol=1e-12,
            equal_nan=True,
            err_msg=column,
        )


# ---------------------------------------------------------------- 5. safety


class _Stop(Exception):
    pass


def _capture_loading_kwargs(monkeypatch) -> list[dict]:
    import transformers

    seen: list[dict] = []

    def capture(*args, **kwargs):
        seen.append(kwargs)
        raise _Stop

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", capture)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", capture)
    return seen


@pytest.mark.parametrize("asked", [False, True])
def test_remote_code_is_trusted_only_when_asked(monkeypatch, model_dir, data_files, tmp_path, asked):
    seen = _capture_loading_kwargs(monkeypatch)
    argv = _with(
        extract_argv(model_dir, data_files[:1], tmp_path / "r"), ["--threads", None]
    )  # in-process: keep torch's threads
    argv += ["--trust-remote-code"] if asked else []
    with pytest.raises(_Stop):
        cli.main(argv)
    assert seen[0]["trust_remote_code"] is asked
    assert seen[0]["use_safetensors"] is True  # pickled .bin weights are never a fallback


def test_offline_models_are_loaded_without_remote_code(monkeypatch, tmp_path):
    seen = _capture_loading_kwargs(monkeypatch)
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(models, "offline_gguf_file", lambda name: tmp_path / "model.gguf")
    with pytest.raises(_Stop):
        models.cached_offline_folder("gemma-3-270m")
    assert not seen[0].get("trust_remote_code", False)


UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}
UNSAFE_CALLS = {("torch", "load"), ("pd", "read_pickle"), ("pandas", "read_pickle")}


def unsafe_loading(source: str) -> list[str]:
    """Pickle-based loading in Python source: imports of pickle-like modules and calls that unpickle."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in UNSAFE_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in UNSAFE_MODULES:
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.ImportFrom) and node.module == "torch" and any(a.name == "load" for a in node.names):
            found.append("from torch import load")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in UNSAFE_CALLS:
                found.append(f"{owner.id}.{node.func.attr}()")
            if any(
                k.arg in ("allow_pickle", "weights_only")
                and isinstance(k.value, ast.Constant)
                and k.value.value is (k.arg == "allow_pickle")
                for k in node.keywords
            ):
                found.append(f"{node.func.attr}(... pickle allowed)")
    return found


def test_the_detector_finds_pickle_loading():
    assert unsafe_loading(
        "import pickle\nimport torch\nx = torch.load('f.pt')\nimport numpy as np\nnp.load('a', allow_pickle=True)"
    ) == ["import pickle", "torch.load()", "load(... pickle allowed)"]
    assert unsafe_loading("from safetensors.torch import load_file\nload_file('m.safetensors')") == []


def test_no_code_path_unpickles_user_files():
    package = ROOT / "analysis"
    found = {path.name: unsafe_loading(path.read_text()) for path in sorted(package.rglob("*.py"))}
    assert not {name: hits for name, hits in found.items() if hits}
    assert len(found) >= 10
