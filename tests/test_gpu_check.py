"""``make gpu-check`` (benchmarks/gpu_check.py) in its CPU mode, so that the script a GPU machine
runs keeps working between loans: every part is reported with its results or the reason it was not
checked, the tiny models' statistics equal the plain procedure's within 1e-4, the halving path is
taken, and the dry run lists every part with its budget. Its numbers say nothing about a GPU."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import SHARED_DATA

from analysis.report import gpu_check as report

PROJECT = Path(__file__).resolve().parents[1]
SCRIPT = PROJECT / "benchmarks" / "gpu_check.py"


def run_script(*arguments: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    if SHARED_DATA.is_dir():
        env["LAYER_GRADIENT_DATA"] = str(SHARED_DATA)
    return subprocess.run(
        [sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, env=env, cwd=PROJECT, timeout=180
    )


@pytest.fixture(scope="module")
def script():
    """The script's module (its folder on the path, as when it runs)."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        yield importlib.import_module("gpu_check")
    finally:
        sys.path.remove(str(SCRIPT.parent))


@pytest.fixture(scope="module")
def cpu_mode(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check")
    done = run_script("--device", "cpu", "--tiny", "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "gpu_check.json").read_text()), (out / "summary.txt").read_text(), done.stdout


def test_the_cpu_mode_reports_every_part_with_results_or_a_reason(cpu_mode, script):
    results, summary, stdout = cpu_mode
    assert list(results["parts"]) == [part.name for part in script.PARTS]
    assert results["measured_on_gpu"] is False and results["device"]["type"] == "cpu"
    for name, part in results["parts"].items():
        assert part["status"] in ("checked", "not checked"), (name, part.get("reason"), part.get("traceback"))
        if part["status"] == "not checked":
            assert part["reason"], name
            assert any(line.startswith(f"{name}: ") for line in results["not_checked"]), name
    # on a CPU only the CUDA memory measurements are left out, each saying why
    unchecked = {n for n, p in results["parts"].items() if p["status"] != "checked"}
    assert unchecked == {"memory_plan_qwen2_1_5b", "memory_plan_gemma2_2b"}
    assert all("CUDA" in results["parts"][n]["reason"] for n in unchecked)
    assert "not a GPU measurement" in summary and summary.strip() in stdout


def test_the_cpu_mode_statistics_equal_the_plain_procedure(cpu_mode):
    exactness = cpu_mode[0]["parts"]["exactness"]
    assert set(exactness["models"]) == {"tiny-gemma2", "tiny-qwen2", "tiny-llama"}
    assert exactness["models"]["tiny-gemma2"]["attention"] == "eager"
    for name, model in exactness["models"].items():
        errors = [v for v in model["errors"].values() if isinstance(v, float)]
        assert len(errors) == 4 and all(0 <= e < 1e-4 for e in errors), (name, model["errors"])
        assert model["errors"]["device_vs_cpu"].startswith("not applicable")
        assert max(model["batches"]) > 1, name  # batched for real, with padding
        assert model["spectra_by_route"]["factored"] > 0 and model["spectra_by_route"]["dense"] > 0
        assert model["skipped"] == []
    assert exactness["passed"] is True


def test_the_cpu_mode_takes_the_halving_path_and_the_other_parts_measure(cpu_mode):
    parts = cpu_mode[0]["parts"]
    halving = parts["halving_on_out_of_memory"]
    assert halving["out_of_memory_passes"] >= 1 and halving["passes"][0][1] == "out of memory"
    assert halving["skipped"] == [] and halving["passed"] is True
    assert max(halving["difference_to_unforced"].values()) <= 1e-4
    for name in ("speed_qwen2_1_5b", "speed_gemma2_2b"):
        speed = parts[name]
        assert speed["ratio"] > 0 and math.isfinite(speed["ratio"]) and speed["plain"]["seconds_per_sample"]
        assert speed["goal"]["met"].startswith("not applicable")
    training = parts["training_step_qwen2_1_5b"]
    assert math.isfinite(training["loss"]) and training["response_tokens"] > 0
    assert training["not_checked"] and "CUDA" in training["not_checked"][0]


def test_the_dry_run_lists_every_part_with_its_budget_and_runs_nothing(tmp_path, script):
    done = run_script("--dry-run", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    for part in script.PARTS:
        line = next(line for line in done.stdout.splitlines() if line.strip().startswith(part.name))
        assert f"{part.budget:.0f} s" in line
    assert not (tmp_path / "gpu_check.json").exists()


def test_a_missing_package_is_named_with_how_to_carry_it(script):
    line = script.missing_package(("analysis.core.layer_stats", "no_such_package_here.sub"))
    assert line.startswith("missing package no_such_package_here:") and "pip download" in line
    assert script.missing_package(("analysis.core.layer_stats",)) is None


def test_row_comparisons_see_a_changed_value(script):
    import gpu_check_setup as setup

    rows = pd.DataFrame(
        {
            "sample_index": [0, 0],
            "layer": [0, 0],
            "proj": ["q", "k"],
            "nuclear_norm": [2.0, 3.0],
            "sigma_max": [1.0, 2.0],
            "sigma_min": [0.0, 0.0],
            "cos_same_layer": [0.5, 0.1],
            "loss": [1.0, 1.0],
        }
    )
    changed = rows.assign(nuclear_norm=[2.0, 3.003], cos_same_layer=[0.5, 0.102])
    assert setup.rows_difference(rows, rows) == {"relative": 0.0, "cosine_absolute": 0.0}
    difference = setup.rows_difference(changed, rows)
    assert difference["relative"] == pytest.approx(1e-3) and difference["cosine_absolute"] == pytest.approx(2e-3)
    assert setup.rows_identical(rows, rows) and not setup.rows_identical(changed, rows)
    assert setup.rows_difference(rows.iloc[:1], rows)["relative"] == math.inf


def test_the_reproducibility_page_says_whether_the_check_ran_on_a_gpu(cpu_mode, tmp_path):
    assert report.results_path(None) is None
    missing = report.results_path(tmp_path / "results.json")
    assert "has not yet run on a GPU" in report.sentence(missing) and report.table(missing) is None
    cpu_file = tmp_path / "gpu_check.json"
    cpu_file.write_text(json.dumps(cpu_mode[0]))
    said = report.sentence(cpu_file)
    assert "not yet run on a GPU" in said and "say nothing about a GPU" in said
    table = report.table(cpu_file)
    assert list(table["part"]) == list(cpu_mode[0]["parts"]) and set(table["status"]) == {"checked", "not checked"}
    gpu = {
        **cpu_mode[0],
        "measured_on_gpu": True,
        "device": {"type": "cuda", "name": "NVIDIA H200", "memory_gib": 139.8},
    }
    cpu_file.write_text(json.dumps(gpu))
    assert report.sentence(cpu_file).startswith("Measured by `make gpu-check` on NVIDIA H200 (140 GiB")
