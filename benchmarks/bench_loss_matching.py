"""The loss-matched condition's cost: its shared pass against separate passes, in the same run.

For each case (a model and a dataset with None CoT), the same instructions of ``detailed_answer``
and ``detailed_matched_answer`` are extracted by :func:`analysis.extract.runner.compute_samples` in
three ways, in alternating order, repeated: the answer alone (the reference's own extraction), the
loss-matched draws alone (what completes a store that already holds the answer), and both in one
forward pass per instruction (the shared pass). For each number of draws K asked for, the median
seconds per instruction of each, the shared pass over the two separate ones, and the shared pass's
extra time over the answer alone are reported; a ratio measured within one run moves less with
other work on the machine than either timing. The shared pass's rows are compared with the separate
ones' (largest relative difference of the statistics), and its draws give the share of matched
tokens flagged (outside the caliper) and their mean position in the chain.

``python benchmarks/bench_loss_matching.py --help``; the default case is Gemma 3 270M on two
instructions of gsm8k with K = 1 and 4 (the ``cpu`` and ``decide`` profiles'), written to
benchmarks/loss_matching.json.
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
from bench_extraction import machine_record

from analysis.core.settings import ExtractionSettings
from analysis.extract import models, runner
from analysis.store import ResultsStore

DEFAULT_CASES = [("gemma-3-270m", "gsm8k")]
DEFAULT_DRAWS = (1, 4)
ANSWER, MATCHED = "detailed_answer", "detailed_matched_answer"
STATISTICS = ("nuclear_norm", "sigma_max", "frobenius", "effective_rank", "loss")
ROW_KEYS = ["condition", "sample_index", "subset", "layer", "proj"]


def rows_of(loaded, work, settings: ExtractionSettings, data_dir) -> pd.DataFrame:
    """The rows of ``compute_samples`` over each (plan, indices, matched plan) of ``work``."""
    frames = []
    for plan, indices, matched in work:
        for rows, _ in runner.compute_samples(loaded, plan, indices, settings, data_dir=data_dir, matched=matched):
            frames += [] if rows is None else [rows]
    if loaded.device.type == "cuda":
        torch.cuda.synchronize(loaded.device)
    rows = pd.concat(frames, ignore_index=True)
    if runner.SUBSET_COLUMN not in rows.columns:
        rows[runner.SUBSET_COLUMN] = np.nan
    return rows.sort_values(ROW_KEYS, na_position="first").reset_index(drop=True)


def largest_difference(got: pd.DataFrame, want: pd.DataFrame) -> float:
    """Largest relative difference of the statistics of two sets of the same rows."""
    if not got[ROW_KEYS].astype(str).equals(want[ROW_KEYS].astype(str)):
        raise ValueError("the shared and the separate passes stored different rows")
    return max(
        float(
            np.max(np.abs(got[name].to_numpy(float) - want[name].to_numpy(float)) / np.abs(want[name].to_numpy(float)))
        )
        for name in STATISTICS
    )


def draw_summary(rows: pd.DataFrame) -> dict:
    """Of the loss-matched rows, the share of matched tokens flagged and their mean position."""
    draws = rows[rows["setting"] == MATCHED].drop_duplicates(["sample_index", runner.SUBSET_COLUMN])
    return {
        "flagged_share": float(draws["matched_flagged"].sum() / draws["n_response_tokens"].sum()),
        "mean_position": float(draws["matched_position"].mean()),
        "draws_made": len(draws),
    }


def run_case(loaded, dataset: str, draws: int, args, store) -> dict:
    """Median seconds per instruction of the three ways, their ratios, and the rows' agreement (the
    instructions: the dataset's first ``args.samples`` of its seeded draw)."""
    settings = ExtractionSettings(args.samples, args.max_length, scored_subsets=draws)
    answer, matched = (
        runner.plan_run(
            loaded.name, loaded.template, f"{dataset}/{s}/correct", store, settings=settings, data_dir=args.data_dir
        )
        for s in (ANSWER, MATCHED)
    )
    indices = answer.todo
    ways = {
        "answer alone": [(answer, indices, None)],
        "matched alone": [(matched, indices, None)],
        "shared": [(answer, indices, matched)],
    }

    def timed(name: str) -> pd.DataFrame:
        return rows_of(loaded, ways[name], settings, args.data_dir)

    rows = {name: timed(name) for name in ways}  # warm-up, and the rows compared
    separate = pd.concat([rows["answer alone"], rows["matched alone"]], ignore_index=True)
    separate = separate.sort_values(ROW_KEYS, na_position="first").reset_index(drop=True)
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways)
    for repeat in range(args.repeats):
        shift = repeat % len(order)
        for name in order[shift:] + order[:shift]:
            started = time.perf_counter()
            timed(name)
            seconds[name].append((time.perf_counter() - started) / len(indices))
    median = {name: statistics.median(values) for name, values in seconds.items()}
    return {
        "dataset": dataset,
        "draws": draws,
        "instructions": len(indices),
        "seconds_per_instruction": median,
        "all_seconds_per_instruction": seconds,
        "shared_over_separate": median["shared"] / (median["answer alone"] + median["matched alone"]),
        "extra_over_answer_alone": median["shared"] / median["answer alone"] - 1.0,
        "largest_relative_difference": largest_difference(rows["shared"], separate),
        **draw_summary(rows["shared"]),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="run only these models (offline name, folder or hub id)")
    parser.add_argument("--template", choices=["base", "instruct"], help="template for a model outside the registry")
    parser.add_argument("--dataset", help="a dataset with None CoT (default: the built-in case's)")
    parser.add_argument("--samples", type=int, default=2, help="instructions of the dataset")
    parser.add_argument("--draws", type=int, nargs="+", default=list(DEFAULT_DRAWS), help="K of each run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--data-dir")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's own choice)")
    parser.add_argument("--out", default=str(Path(__file__).with_name("loss_matching.json")))
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cases = [(m, args.dataset or DEFAULT_CASES[0][1]) for m in args.model] if args.model else DEFAULT_CASES
    scratch = ResultsStore(Path(args.out).parent / ".bench-store")
    payload = {"machine": machine_record(), "repeats": args.repeats, "max_length": args.max_length, "cases": []}
    for model_name, dataset in cases:
        loaded = models.load(model_name, template=args.template, device=args.device)
        for draws in args.draws:
            case = run_case(loaded, dataset, draws, args, scratch)
            case.update({"model": model_name, "device": str(loaded.device)})
            payload["cases"].append(case)
            Path(args.out).write_text(json.dumps(payload, indent=2))  # each finished case is kept
            print(
                f"{model_name:24} {dataset:10} K {draws}: shared {case['seconds_per_instruction']['shared']:.2f} "
                f"s/instruction, {case['shared_over_separate']:.2f}x the separate passes, "
                f"+{100 * case['extra_over_answer_alone']:.0f}% over the answer alone; "
                f"flagged {100 * case['flagged_share']:.0f}%, largest difference {case['largest_relative_difference']:.1e}",
                flush=True,
            )
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
