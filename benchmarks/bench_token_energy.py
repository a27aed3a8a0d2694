"""The token energy's cost: the extraction with it against the plain extraction, in the same run.

For each case (a model and its conditions), the same encoded samples are extracted by
:func:`analysis.extract.runner.compute_prepared` without the token energy and with it at each
number of passes asked for (``--passes``), in alternating order, repeated; the median seconds per
sample are reported, and the ratio of each energy run to the plain one. A sample with at most k
response tokens is exact (one backward pass per token), a longer one takes k random-sign passes;
the share of exact samples and the mean response length are part of the results. Other work on the
machine moves both timings; the ratio, measured within one run, moves less than either. Of the
estimated rows, the median and largest relative standard error of the energy (the square root of
the stored variance over the energy) say what the passes buy.

``python benchmarks/bench_token_energy.py --help``; the default cases are the two offline models on
None and Detailed CoT of AQuA (4 samples each), written to benchmarks/token_energy.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from bench_extraction import chosen_cases, machine_record, prepared_case

from analysis.core.settings import ExtractionSettings
from analysis.extract import models, runner, token_energy
from analysis.store import ResultsStore

DEFAULT_CASES = [
    ("smollm2-135m-instruct", ["aqua/none/correct"], "None CoT"),
    ("smollm2-135m-instruct", ["aqua/detailed/correct"], "Detailed CoT"),
    ("gemma-3-270m", ["aqua/none/correct"], "None CoT"),
    ("gemma-3-270m", ["aqua/detailed/correct"], "Detailed CoT"),
]
DEFAULT_PASSES = (4, 8)


def extraction(loaded, plans, passes: int) -> list[pd.DataFrame]:
    """Extract the prepared samples (``passes`` 0: without the token energy); the rows computed."""
    settings = ExtractionSettings(token_energy_passes=passes)
    frames = []
    for identity, prepared in plans:
        for rows, _ in runner.compute_prepared(loaded, identity, prepared, settings):
            frames += [] if rows is None else [rows]
    if loaded.device.type == "cuda":
        torch.cuda.synchronize(loaded.device)
    return frames


def relative_errors(frames: list[pd.DataFrame]) -> dict:
    """Of the estimated rows (not exact), the median and largest relative standard error of the
    energy, sqrt(variance) / energy (None where every row is exact)."""
    rows = pd.concat(frames, ignore_index=True)
    estimated = rows[rows[token_energy.EXACT] == 0.0]
    if estimated.empty:
        return {"median": None, "max": None}
    error = np.sqrt(estimated[token_energy.VARIANCE]) / estimated[token_energy.ENERGY]
    return {"median": float(error.median()), "max": float(error.max())}


def run_case(loaded, specs, n_samples, repeats, passes, data_dir, max_length, store) -> dict:
    """Median seconds per sample of the plain extraction and of each number of passes, and their ratios."""
    plans, samples = prepared_case(loaded, specs, n_samples, data_dir, max_length, store)
    n = len(samples)
    methods = {0: "plain", **{k: f"energy k={k}" for k in passes}}
    errors = {}
    for k in methods:  # warm-up of every path, and the estimates' relative standard errors
        frames = extraction(loaded, plans, k)
        if k:
            errors[methods[k]] = relative_errors(frames)
    seconds: dict[str, list[float]] = {name: [] for name in methods.values()}
    order = list(methods)
    for repeat in range(repeats):
        shift = repeat % len(order)
        for k in order[shift:] + order[:shift]:
            started = time.perf_counter()
            extraction(loaded, plans, k)
            seconds[methods[k]].append((time.perf_counter() - started) / n)
    median = {name: statistics.median(values) for name, values in seconds.items()}
    responses = [s.encoded.n_response_tokens for _, s in samples]
    return {
        "samples": n,
        "mean_tokens": sum(len(s.encoded.input_ids) for _, s in samples) / n,
        "mean_response_tokens": sum(responses) / n,
        "exact_share": {methods[k]: sum(r <= k for r in responses) / n for k in passes},
        "seconds_per_sample": median,
        "all_seconds_per_sample": seconds,
        "energy_over_plain": {methods[k]: median[methods[k]] / median["plain"] for k in passes},
        "relative_standard_error": errors,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="run only these models (offline name, folder or hub id)")
    parser.add_argument("--template", choices=["base", "instruct"], help="template for a model outside the registry")
    parser.add_argument("--data", nargs="+", help="conditions for --model (default: the built-in cases)")
    parser.add_argument("--samples", type=int, default=4, help="samples per condition")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--passes", type=int, nargs="+", default=list(DEFAULT_PASSES), help="k of each energy run")
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--data-dir")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's own choice)")
    parser.add_argument("--out", default=str(Path(__file__).with_name("token_energy.json")))
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cases = chosen_cases(args, DEFAULT_CASES)
    scratch = ResultsStore(Path(args.out).parent / ".bench-store")
    payload = {
        "machine": machine_record(),
        "samples_per_condition": args.samples,
        "repeats": args.repeats,
        "max_length": args.max_length,
        "cases": [],
    }
    loaded = None
    for model_name, specs, label in cases:
        if loaded is None or loaded.name != model_name:
            loaded = models.load(model_name, template=args.template, device=args.device)
        case = run_case(loaded, specs, args.samples, args.repeats, args.passes, args.data_dir, args.max_length, scratch)
        case.update({"model": model_name, "case": label, "conditions": specs, "device": str(loaded.device)})
        payload["cases"].append(case)
        Path(args.out).write_text(json.dumps(payload, indent=2))  # each finished case is kept
        ratios = "  ".join(f"{name} {ratio:.2f}x" for name, ratio in case["energy_over_plain"].items())
        print(
            f"{model_name:24} {label:14} R {case['mean_response_tokens']:.0f}  plain "
            f"{case['seconds_per_sample']['plain']:.3f} s/sample | {ratios}",
            flush=True,
        )
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
