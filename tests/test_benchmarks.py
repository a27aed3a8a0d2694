"""The benchmarks run as `make benchmark` runs them: on a tiny local model, a sample, one repeat."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_extraction_benchmark_runs_with_its_busy_core_row(tiny_model_dir, study_data_dir, tmp_path):
    out = tmp_path / "results.json"
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "bench_extraction.py"),
        "--model",
        str(tiny_model_dir("llama")),
    ]
    command += ["--template", "instruct", "--data", "aqua/none/correct", "--samples", "1", "--repeats", "1"]
    command += ["--threads", "1", "--busy-core", "--data-dir", str(study_data_dir), "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    payload = json.loads(out.read_text())
    assert payload["cases"] and payload["cached_loads"]
    (row,) = payload["busy_core"]
    assert row["busy_over_idle"] > 0 and row["threads_chosen"]["source"] == "free cores"


@pytest.mark.slow
def test_the_token_energy_benchmark_states_its_cost_against_the_plain_extraction(
    tiny_model_dir, study_data_dir, tmp_path
):
    out = tmp_path / "token_energy.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_token_energy.py"), "--model"]
    command += [str(tiny_model_dir("llama")), "--template", "instruct", "--data", "aqua/none/correct"]
    command += ["--samples", "2", "--repeats", "1", "--passes", "2", "400", "--threads", "1"]
    command += ["--data-dir", str(study_data_dir), "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (case,) = json.loads(out.read_text())["cases"]
    assert set(case["energy_over_plain"]) == {"energy k=2", "energy k=400"}
    assert all(ratio > 0 for ratio in case["energy_over_plain"].values())
    assert case["exact_share"]["energy k=400"] == 1.0 and case["exact_share"]["energy k=2"] == 0.0
    assert case["relative_standard_error"]["energy k=400"]["median"] is None  # every row exact
    assert case["relative_standard_error"]["energy k=2"]["median"] > 0


@pytest.mark.slow
def test_the_simulated_tables_benchmark_times_both_paths_and_finds_the_same_table(tmp_path):
    out = tmp_path / "simulated_tables.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_simulated_tables.py"), "--reps", "3"]
    done = subprocess.run(command + ["--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    payload = json.loads(out.read_text())
    assert payload["identical"] is True and payload["reps"] == 3
    assert payload["plain_s"] > 0 and payload["fast_s"] > 0 and payload["plain_over_fast"] > 0


@pytest.mark.slow
def test_the_loss_matching_benchmark_states_the_shared_pass_against_separate_passes(
    tiny_model_dir, study_data_dir, tmp_path
):
    out = tmp_path / "loss_matching.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_loss_matching.py"), "--model"]
    command += [str(tiny_model_dir("llama")), "--template", "instruct", "--dataset", "gsm8k", "--samples", "1"]
    command += ["--draws", "1", "2", "--repeats", "1", "--threads", "1", "--max-length", "4096"]
    command += ["--data-dir", str(study_data_dir), "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cases = json.loads(out.read_text())["cases"]
    assert [case["draws"] for case in cases] == [1, 2]
    for case in cases:
        assert case["shared_over_separate"] > 0 and case["largest_relative_difference"] < 1e-4
        assert set(case["seconds_per_instruction"]) == {"answer alone", "matched alone", "shared"}
        assert 0 <= case["flagged_share"] <= 1 and 0 <= case["mean_position"] <= 1
