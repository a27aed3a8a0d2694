"""The GPU check on the reproducibility page: what ``make gpu-check`` measured, and on what.

``benchmarks/gpu_check.json`` (written by ``benchmarks/gpu_check.py``, kept beside the extraction
benchmark's results) says which device it ran on. Until a run on a GPU is kept there, the page
says that the GPU path has not been measured on one; a file of the check's CPU mode is shown as
what it is, never as a GPU measurement.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

RESULTS_NAME = "gpu_check.json"


def results_path(benchmarks_file) -> Path | None:
    """Where the GPU check's results are kept: beside the benchmark results file."""
    return Path(benchmarks_file).with_name(RESULTS_NAME) if benchmarks_file else None


def _read(path) -> dict | None:
    return json.loads(Path(path).read_text()) if path is not None and Path(path).is_file() else None


def sentence(path) -> str:
    """One paragraph: on what the check ran, or that it has not yet run on a GPU."""
    payload = _read(path)
    if payload is None:
        return (
            "The GPU check (`make gpu-check`: exactness on the device, the speed against the plain procedure, "
            "the memory plan, the halving on out-of-memory, one training step) has not yet run on a GPU, so no "
            "statement of this book about GPU speed or memory is measured; they are estimates."
        )
    device = payload.get("device", {})
    versions = payload.get("versions", {})
    when = f"commit {str(payload.get('commit', 'unknown'))[:7]}, {payload.get('started', '')}"
    if not payload.get("measured_on_gpu"):
        return (
            f"`{Path(path).name}` holds the check's {payload.get('mode', 'CPU mode')} ({when}): not yet run on a GPU. "
            "Its numbers come from tiny models on a CPU and say nothing about a GPU."
        )
    return (
        f"Measured by `make gpu-check` on {device.get('name', 'a GPU')} ({device.get('memory_gib', 0):.0f} GiB; "
        f"torch {versions.get('torch', '?')}, CUDA {versions.get('cuda', '?')}, transformers "
        f"{versions.get('transformers', '?')}), {when}, with random-weight models of the stated shapes; "
        "absolute times are that device's."
    )


def table(path) -> pd.DataFrame | None:
    """One row per part of the check: whether it was checked, its result or the reason it was not."""
    payload = _read(path)
    if payload is None:
        return None
    rows = [
        {
            "part": name,
            "status": part.get("status", ""),
            "result": part.get("summary") or part.get("reason", ""),
            "seconds": round(part["seconds"]) if "seconds" in part else None,
        }
        for name, part in payload.get("parts", {}).items()
    ]
    return pd.DataFrame(rows)
