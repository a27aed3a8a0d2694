"""The GPU path measured in one command (``make gpu-check``): exactness on the device, the speed of
the extraction against the original study's plain procedure, the memory plan against what CUDA
measures, the halving on out-of-memory, and one training step of the ``training-paper`` design.

Models are built from transformers configs with random weights (seeded): nothing comes from a
network, a hub or a GGUF file. It needs torch, transformers, numpy, pandas and pyarrow, and finds
this project's ``analysis`` package beside it (no install). Each part has a time budget; a part
that cannot start (the global deadline, a missing package, an error) is listed as not checked with
the reason, never left out. One JSON file, ``gpu_check.json``, is written to ``--out`` after every
part (so a run stopped from outside keeps what finished) and a one-screen summary is printed and
written beside it. ``--device cpu --tiny`` is the CPU mode the test suite runs: tiny models of the
same families, short samples; its numbers say nothing about a GPU. ``--dry-run`` lists the parts
with their budgets and runs nothing::

    PYTHONPATH=. python benchmarks/gpu_check.py --out benchmarks/out/gpu-check    # on a GPU machine
    PYTHONPATH=. python benchmarks/gpu_check.py --device cpu --tiny --out /tmp/gpu-check
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
WHEELS = HERE / "wheels"  # pure-Python wheels carried to a machine that lacks a package
sys.path[:0] = [str(ROOT), str(HERE)] + [str(wheel) for wheel in sorted(WHEELS.glob("*.whl"))]

RESULTS_FILE = "gpu_check.json"
SUMMARY_FILE = "summary.txt"
DEADLINE = {False: 480.0, True: 240.0}  # seconds after the start no new part starts (full, tiny)
# Import names whose distribution is called otherwise, for the line that names a missing package.
DISTRIBUTIONS = {"yaml": "PyYAML", "dateutil": "python-dateutil"}


@dataclass(frozen=True)
class Part:
    """One part of the check: its budget on a GPU and in the CPU mode, and what it measures."""

    name: str
    function: str  # in gpu_check_parts
    shape: str | None
    budget: float
    tiny_budget: float
    needs: tuple[str, ...]  # modules it imports
    what: str

    def budget_for(self, tiny: bool) -> float:
        return self.tiny_budget if tiny else self.budget


EXTRACTION = ("analysis.extract.runner", "analysis.extract.plain", "analysis.profiles")
PARTS = (
    Part(
        "exactness",
        "exactness",
        None,
        45,
        60,
        EXTRACTION,
        "tiny Gemma 2 (soft-capping, sliding window), Qwen2, Llama: statistics on the device vs on the CPU, "
        "vs the plain procedure (param.grad, full float64 SVD) on the device, batched vs one at a time (bar 1e-4)",
    ),
    Part(
        "speed_qwen2_1_5b",
        "speed",
        "qwen2-1.5b",
        110,
        30,
        EXTRACTION,
        "Qwen2-1.5B's shape, 8 samples of 1024 tokens: samples/s of the extraction vs the plain procedure",
    ),
    Part(
        "memory_plan_qwen2_1_5b",
        "memory_plan",
        "qwen2-1.5b",
        50,
        20,
        EXTRACTION,
        "the batch plan's predicted peak vs torch.cuda.max_memory_allocated at 1024 tokens, at the runner's "
        "batch and at the plan's largest",
    ),
    Part(
        "halving_on_out_of_memory",
        "halving",
        "qwen2-1.5b",
        40,
        20,
        EXTRACTION,
        "a memory limit forces the runner's halving retry; its rows against the unforced run's",
    ),
    Part(
        "training_step_qwen2_1_5b",
        "training_step",
        "qwen2-1.5b",
        50,
        20,
        (*EXTRACTION, "analysis.train.loop"),
        "one AdamW step of the training-paper design (8 x 1024 tokens): peak memory vs the stated plan",
    ),
    Part(
        "speed_gemma2_2b",
        "speed",
        "gemma2-2b",
        90,
        30,
        EXTRACTION,
        "time permitting: Gemma-2-2B's shape (eager attention), the same speed measurement",
    ),
    Part(
        "memory_plan_gemma2_2b",
        "memory_plan",
        "gemma2-2b",
        45,
        20,
        EXTRACTION,
        "time permitting: Gemma-2-2B's shape, the same memory plan measurement",
    ),
)


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "out" / "gpu-check", help="folder for the results"
    )
    parser.add_argument("--device", default="cuda", help="cuda[:N] (default) or cpu (with --tiny)")
    parser.add_argument("--tiny", action="store_true", help="the CPU mode: tiny models, short samples")
    parser.add_argument("--data-dir", help="the study's data (default: $LAYER_GRADIENT_DATA, else data/layer_gradient)")
    parser.add_argument("--parts", nargs="+", choices=[p.name for p in PARTS], help="only these parts")
    parser.add_argument("--deadline", type=float, help="seconds after which no part starts (default 480, tiny 240)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and ids")
    parser.add_argument("--dry-run", action="store_true", help="list the parts and their budgets; run nothing")
    return parser.parse_args(argv)


def dry_run(options: argparse.Namespace) -> str:
    """What a run would measure, each part with its budget."""
    deadline = options.deadline or DEADLINE[options.tiny]
    lines = [f"gpu-check on {options.device}{' (CPU mode, tiny shapes)' if options.tiny else ''}: would measure"]
    for part in selected(options):
        lines.append(f"  {part.name:<26} {part.budget_for(options.tiny):>4.0f} s  {part.what}")
    lines.append(f"no part starts after {deadline:.0f} s; results: {options.out / RESULTS_FILE} (dry run: nothing ran)")
    return "\n".join(lines)


def selected(options: argparse.Namespace) -> list[Part]:
    return [p for p in PARTS if not options.parts or p.name in options.parts]


def missing_package(modules: tuple[str, ...]) -> str | None:
    """One line naming the first package these modules cannot import, with how to carry it."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            name = (error.name or str(error)).split(".")[0]
            wheel = DISTRIBUTIONS.get(name, name)
            return (
                f"missing package {name}: in the working tree run `python -m pip download --no-deps "
                f"--only-binary=:all: -d benchmarks/wheels {wheel}` and carry benchmarks/wheels "
                "(gpu_check puts its wheels on sys.path; pure-Python wheels import from the zip)"
            )
    return None


def environment(device, tiny: bool) -> dict:
    """The device, the versions and the float32 matmul precision the numbers were measured with."""
    import numpy
    import pandas
    import pyarrow
    import torch
    import transformers

    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        described = {
            "type": "cuda",
            "name": torch.cuda.get_device_name(device),
            "memory_gib": properties.total_memory / 2**30,
        }
    else:
        described = {"type": "cpu", "name": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    return {
        "mode": f"{'tiny shapes (CPU mode)' if tiny else 'full shapes'} on {device.type}",
        "measured_on_gpu": device.type == "cuda",
        "device": described,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "transformers": transformers.__version__,
            "numpy": numpy.__version__,
            "pandas": pandas.__version__,
            "pyarrow": pyarrow.__version__,
        },
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "torch_cpu_threads": torch.get_num_threads(),
        "commit": commit(),
        "analysis_package": str(Path(importlib.import_module("analysis").__file__).parent),
    }


def commit() -> str:
    """The checkout's commit, where git and the repository are there."""
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return done.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def write(out: Path, results: dict) -> None:
    """The results file, whole or not at all."""
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".{RESULTS_FILE}.tmp"
    staging.write_text(json.dumps(results, indent=1, default=str, allow_nan=True))
    os.replace(staging, out / RESULTS_FILE)


def run_part(part: Part, context, tiny: bool, time_left: float) -> dict:
    """One part's result: its measurements, or why it was not checked or failed."""
    import gpu_check_parts

    budget = part.budget_for(tiny)
    missing = missing_package(part.needs)
    if missing:
        print(missing, flush=True)
        return {"status": "not checked", "reason": missing}
    if time_left < budget:
        return {
            "status": "not checked",
            "reason": f"global deadline: {time_left:.0f} s left, the part needs {budget:.0f} s",
        }
    started = time.perf_counter()
    try:
        function = getattr(gpu_check_parts, part.function)
        shape = {"shape": part.shape} if part.shape else {}
        result = {"status": "checked", **function(context, gpu_check_parts.Budget(budget), **shape)}
    except Exception as error:  # noqa: BLE001 - a failed part is a result; the next part still runs
        result = {"status": "failed", "reason": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
    finally:
        gpu_check_parts.release(context.device)
    result["seconds"] = time.perf_counter() - started
    result["budget_seconds"] = budget
    return result


def summary(results: dict) -> str:
    """One screen: the device, then one line per part."""
    device = results.get("device", {})
    lines = [
        f"gpu-check: {results.get('mode', '')}, {device.get('name', '')}; {results['elapsed_seconds']:.0f} s",
        f"data: {results.get('data', '')}",
    ]
    for name, part in results["parts"].items():
        text = part.get("summary") or part.get("reason", "")
        lines.append(f"  {name:<26} {part['status']:<12} {text}"[:160])
    if not results.get("measured_on_gpu"):
        lines.append("not a GPU measurement: nothing here says how the GPU path behaves on a GPU")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    options = arguments(argv)
    if options.dry_run:
        print(dry_run(options))
        return 0
    import torch

    device = torch.device(options.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(f"--device {options.device}: no CUDA device here; the CPU mode is --device cpu --tiny", file=sys.stderr)
        return 2
    if device.type == "cpu" and not options.tiny:
        print("--device cpu runs the tiny shapes only: add --tiny", file=sys.stderr)
        return 2
    if device.type == "cpu":
        torch.set_num_threads(1)  # tiny models gain nothing from more, and lose much on a busy machine
    started = time.perf_counter()
    deadline = options.deadline or DEADLINE[options.tiny]
    results = {
        "check": "make gpu-check (benchmarks/gpu_check.py)",
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **environment(device, options.tiny),
        "deadline_seconds": deadline,
        "parts": {},
    }
    missing = missing_package(EXTRACTION)
    context, results["data"] = None, "not read: " + str(missing)
    if missing is None:
        import gpu_check_parts
        from gpu_check_setup import study_texts

        texts, results["data"] = study_texts(options.data_dir)
        context = gpu_check_parts.Context(device, options.tiny, options.seed, texts)
    for part in PARTS:
        if part not in selected(options):
            results["parts"][part.name] = {"status": "not checked", "reason": "not selected (--parts)"}
            continue
        if context is None:
            results["parts"][part.name] = {"status": "not checked", "reason": missing}
            continue
        results["parts"][part.name] = {"status": "running", "reason": "stopped from outside while this part ran"}
        results["elapsed_seconds"] = time.perf_counter() - started
        write(options.out, results)
        results["parts"][part.name] = run_part(part, context, options.tiny, deadline - (time.perf_counter() - started))
        results["elapsed_seconds"] = time.perf_counter() - started
        write(options.out, results)
    results["not_checked"] = [f"{n}: {p['reason']}" for n, p in results["parts"].items() if p["status"] != "checked"]
    results["not_checked"] += [f"{n}: {item}" for n, p in results["parts"].items() for item in p.get("not_checked", [])]
    results["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    results["elapsed_seconds"] = time.perf_counter() - started
    write(options.out, results)
    text = summary(results)
    (options.out / SUMMARY_FILE).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
