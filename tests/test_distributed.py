"""Extraction on Ray: the same stored values as a single-process run, whatever the cluster and crashes."""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
from faults import injection

from analysis import cli
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.extract import distributed, models, preparation, runner
from analysis.store import ResultsStore, read_results, read_skipped
from analysis.store.store_errors import StoreError

CONDITIONS = ["aqua/none/correct", "aqua/detailed/correct", "aqua/detailed_cut_simplified/correct"]
PRESTORED = "aqua/none/correct"  # two of its samples are stored before the run, as by an interrupted one
LIMIT, MAX_LENGTH, BATCH_SIZE, SHARD_SIZE = 5, 96, 2, 2
ROW_KEYS = ["condition", "sample_index", "layer", "proj"]
# torch's own thread count: a Ray CPU worker of that many CPUs computes with as many threads
THREADS = torch.get_num_threads()
RAY_CPUS = max(2, THREADS)
OBJECT_STORE_BYTES = 100 * 1024 * 1024


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """A data directory laid out like the study's, with short synthetic records (one too long to fit)."""
    root = tmp_path_factory.mktemp("data")
    rng = random.Random(0)
    words = "seven apples cost three coins so each apple costs less than one coin in total".split()

    def text(n_words: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n_words))

    files = {
        "aqua_train_no_cot.json": (0, 1),
        "aqua_train_with_cot.json": (4, 8),
        "aqua_train_with_cot_gpt4o.json": (8, 16),
    }
    for name, (low, high) in files.items():
        records = [
            {"instruction": text(rng.randint(3, 8)), "input": "", "output": f"{text(rng.randint(low, high))} (B)"}
            for _ in range(LIMIT + 1)
        ]
        records[3]["instruction"] = text(30)  # longer than MAX_LENGTH: its response is truncated away
        (root / "cot_500").mkdir(exist_ok=True)
        (root / "cot_500" / name).write_text(json.dumps(records))
    return root


@pytest.fixture(scope="module")
def model_dir(tiny_model_dir) -> Path:
    return tiny_model_dir("llama")


def prestore(store_dir: Path, model_dir: Path, data_dir: Path) -> None:
    """Store the first two samples of PRESTORED with a local run."""
    loaded = models.load(str(model_dir), template="base", device="cpu")
    runner.extract(
        loaded,
        PRESTORED,
        ResultsStore(store_dir),
        settings=ExtractionSettings(n_samples=2, max_length=MAX_LENGTH, batch_size=BATCH_SIZE),
        data_dir=data_dir,
        progress=False,
    )


@pytest.fixture(scope="module")
def local_results(tmp_path_factory, model_dir, data_dir) -> Path:
    """The reference: the same run through ``runner.extract`` in this process."""
    root = tmp_path_factory.mktemp("local")
    prestore(root, model_dir, data_dir)
    loaded = models.load(str(model_dir), template="base", device="cpu")
    for spec in CONDITIONS:
        runner.extract(
            loaded,
            spec,
            ResultsStore(root),
            settings=ExtractionSettings(n_samples=LIMIT, max_length=MAX_LENGTH, batch_size=BATCH_SIZE),
            data_dir=data_dir,
            progress=False,
        )
    return root


def assert_same_store(actual: Path, expected: Path) -> None:
    """Every stored row and skipped sample identical, value for value, and no row stored twice."""
    rows = read_results(actual)
    assert not rows.duplicated(ROW_KEYS).any()
    got, want = (read_results(root).sort_values(ROW_KEYS).reset_index(drop=True) for root in (actual, expected))
    pd.testing.assert_frame_equal(got[want.columns], want, check_exact=True)
    skips = ["condition", "sample_index"]
    got, want = (read_skipped(root).sort_values(skips).reset_index(drop=True) for root in (actual, expected))
    pd.testing.assert_frame_equal(got[want.columns], want, check_exact=True)


def jobs(model_dir: Path) -> list[tuple[str, str, str]]:
    return [(str(model_dir), "base", spec) for spec in CONDITIONS]


@pytest.fixture
def clean_ray_env(monkeypatch):
    """Ray sets RAY_AUTH_MODE in this process when it starts a local instance; undo that afterwards."""
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


# -- without Ray ---------------------------------------------------------------------------------


def test_without_ray_the_command_says_how_to_install_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    data = tmp_path / "d.json"
    data.write_text(json.dumps([{"instruction": "q", "input": "", "output": "a"}]))
    code = cli.main(
        [
            "extract",
            "--model",
            "no-such-model",
            "--template",
            "base",
            "--data",
            str(data),
            "--out",
            str(tmp_path / "r"),
            "--executor",
            "ray",
        ]
    )
    message = capsys.readouterr().err
    assert code == 2
    assert "pip install '.[distributed]'" in message and "Ray" in message
    with pytest.raises(StudyError, match=r"\.\[distributed\]"):
        distributed.run_extraction([("m", "base", str(data))], tmp_path / "r")


def test_gpu_workers_one_per_gpu_and_none_asked_where_there_is_no_gpu():
    gpu_nodes = [
        {"Alive": True, "Resources": {"CPU": 32.0, "GPU": 8.0}},
        {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 2.0}},
    ]
    layout = distributed.worker_layout(gpu_nodes)
    assert (layout.count, layout.num_gpus, layout.device) == (10, 1, "cuda")
    assert layout.num_cpus == 4  # the smaller node's share per GPU; every worker fits its node
    assert distributed.worker_layout(gpu_nodes, device="cpu").num_gpus == 0
    cpu_nodes = [
        {"Alive": True, "Resources": {"CPU": 16.0}},
        {"Alive": True, "Resources": {"CPU": 8.0}},
        {"Alive": False, "Resources": {"CPU": 64.0, "GPU": 4.0}},
    ]
    layout = distributed.worker_layout(cpu_nodes)
    assert (layout.count, layout.num_cpus, layout.num_gpus) == (3, 8, 0)
    assert distributed.worker_layout(cpu_nodes, threads=4).count == 6
    with pytest.raises(StudyError, match="no node of the Ray cluster has a GPU"):
        distributed.worker_layout(cpu_nodes, device="cuda")
    with pytest.raises(StudyError, match="no node .* has 32 CPUs"):
        distributed.worker_layout(cpu_nodes, threads=32)


def test_a_shard_rebatches_into_the_batches_a_single_process_run_forms():
    rng = random.Random(1)
    samples = [
        SimpleNamespace(index=i, encoded=SimpleNamespace(input_ids=[0] * rng.randint(5, 200))) for i in range(60)
    ]
    whole_run = preparation.length_sorted_batches(samples, batch_size=4, token_budget=300)
    shards = distributed.shards_of([[s.index for s in batch] for batch in whole_run], shard_size=7)
    assert sorted(i for shard in shards for i in shard) == list(range(60))
    expected = {tuple(s.index for s in batch) for batch in whole_run}
    for shard in shards:
        assert len(shard) >= 7 or shard is shards[-1]
        again = preparation.length_sorted_batches([samples[i] for i in shard], batch_size=4, token_budget=300)
        assert {tuple(s.index for s in batch) for batch in again} <= expected


def test_index_ranges_are_compact():
    assert distributed.index_ranges([9, 0, 1, 2, 5, 10]) == "0-2, 5, 9-10"


def test_a_run_being_computed_elsewhere_is_refused_before_ray_starts(model_dir, data_dir, tmp_path):
    pytest.importorskip("ray")
    store = ResultsStore(tmp_path / "r")
    key = runner.plan_run(
        str(model_dir), "base", CONDITIONS[1], store, settings=ExtractionSettings(LIMIT, MAX_LENGTH), data_dir=data_dir
    ).key
    with store.lock(key), pytest.raises(StoreError, match="another process"):
        distributed.run_extraction(
            jobs(model_dir),
            tmp_path / "r",
            ExtractionSettings(n_samples=LIMIT, max_length=MAX_LENGTH),
            data_dir=data_dir,
        )


# -- with Ray ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_embedded_ray_stores_exactly_what_a_local_run_stores(
    model_dir, data_dir, local_results, tmp_path, clean_ray_env
):
    pytest.importorskip("ray")
    prestore(tmp_path / "r", model_dir, data_dir)
    report = distributed.run_extraction(
        jobs(model_dir),
        tmp_path / "r",
        ExtractionSettings(
            n_samples=LIMIT, max_length=MAX_LENGTH, batch_size=BATCH_SIZE, shard_size=SHARD_SIZE, threads=THREADS
        ),
        data_dir=data_dir,
        num_cpus=RAY_CPUS,
        object_store_memory=OBJECT_STORE_BYTES,
        progress=False,
    )
    assert report.ok and report.shards_stored == report.shards > len(CONDITIONS)
    counts = {s.condition: (s.already_done, s.computed, s.skipped) for s in report.conditions}
    assert counts[PRESTORED] == (2, 2, {"response truncated away": 1})
    assert counts[CONDITIONS[1]] == (0, 4, {"response truncated away": 1})
    assert [(r["condition"], r["computed"], r["failed"]) for r in report.records()] == [
        (PRESTORED, 2, 0),
        (CONDITIONS[1], 4, 0),
        (CONDITIONS[2], 4, 0),
    ]
    assert_same_store(tmp_path / "r", local_results)
    again = distributed.run_extraction(
        jobs(model_dir),
        tmp_path / "r",
        ExtractionSettings(n_samples=LIMIT, max_length=MAX_LENGTH),
        data_dir=data_dir,
        progress=False,
    )
    assert again.shards == 0 and sum(s.computed for s in again.conditions) == 0  # nothing left: Ray not even started


@pytest.mark.slow
def test_a_dead_worker_is_replaced_its_shard_retried_or_reported_and_a_rerun_completes(
    model_dir, data_dir, local_results, tmp_path, monkeypatch, clean_ray_env
):
    pytest.importorskip("ray")
    markers = tmp_path / "crashes"
    markers.mkdir()
    # the worker process exits in the middle of its first three shards: with one retry the first
    # shard fails twice and is reported, the second succeeds on its retry
    for name, value in injection.child_environment(**{injection.CRASH_ENV: f"3@{markers}"}).items():
        monkeypatch.setenv(name, value)  # read by the Ray workers, which Ray starts after this
    prestore(tmp_path / "r", model_dir, data_dir)
    report = distributed.run_extraction(
        jobs(model_dir),
        tmp_path / "r",
        ExtractionSettings(
            n_samples=LIMIT, max_length=MAX_LENGTH, batch_size=BATCH_SIZE, shard_size=SHARD_SIZE, threads=THREADS
        ),
        data_dir=data_dir,
        num_cpus=RAY_CPUS,
        max_workers=1,
        max_retries=1,
        object_store_memory=OBJECT_STORE_BYTES,
        progress=False,
    )
    assert len(list(markers.iterdir())) == 3
    [failure] = report.failures
    assert "worker died 2 time(s)" in failure.error and failure.indices
    assert report.restarts >= 1 and report.shards_stored == report.shards - 1
    assert "failed" in report.describe() and distributed.index_ranges(failure.indices) in report.describe()
    stored = read_results(tmp_path / "r")
    assert not stored.duplicated(ROW_KEYS).any()
    assert not set(failure.indices) & set(stored.loc[stored["condition"] == failure.condition, "sample_index"])
    # the driver is gone; a plain local run picks up exactly the missing samples
    loaded = models.load(str(model_dir), template="base", device="cpu")
    resumed = runner.extract(
        loaded,
        failure.condition,
        ResultsStore(tmp_path / "r"),
        settings=ExtractionSettings(n_samples=LIMIT, max_length=MAX_LENGTH, batch_size=BATCH_SIZE),
        data_dir=data_dir,
        progress=False,
    )
    assert resumed.computed == len(failure.indices)
    assert_same_store(tmp_path / "r", local_results)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_separately_started_ray_head_gives_the_same_store(model_dir, data_dir, local_results, tmp_path):
    pytest.importorskip("ray")
    port = free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env.pop("RAY_ADDRESS", None)
    head = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            "--head",
            "--block",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            f"--num-cpus={RAY_CPUS}",
            "--include-dashboard=false",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            "--disable-usage-stats",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        prestore(tmp_path / "r", model_dir, data_dir)
        command = [
            sys.executable,
            "-m",
            "analysis",
            "extract",
            "--model",
            str(model_dir),
            "--template",
            "base",
            "--data",
            *CONDITIONS,
            "--out",
            str(tmp_path / "r"),
            "--data-dir",
            str(data_dir),
            "--n-samples",
            str(LIMIT),
            "--max-length",
            str(MAX_LENGTH),
            "--batch-size",
            str(BATCH_SIZE),
            "--shard-size",
            str(SHARD_SIZE),
            "--threads",
            str(THREADS),
            "--no-progress",
            "--executor",
            "ray",
            "--ray-address",
            f"127.0.0.1:{port}",
        ]
        deadline = time.monotonic() + 120
        while True:  # the head takes a few seconds to accept drivers
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
            if done.returncode == 0 or "cannot join" not in done.stderr or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "3 condition(s)" in done.stdout and "failed: 0" in done.stdout
        assert_same_store(tmp_path / "r", local_results)
    finally:
        # `ray start --block` shares its fate with every Ray process it started: ending its
        # process group ends this head, and nothing else on the machine
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=30)
