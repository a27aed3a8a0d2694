"""The parts of ``benchmarks/gpu_check.py``, one function each: ``part(context, budget) -> dict``.

Each returns its measurements with a one-line ``summary`` and, where the part has a criterion, a
``passed``; what it could not measure it lists under ``not_checked`` with the reason. Shapes are
those of :mod:`gpu_check_setup`; in the CPU mode (``--tiny``) each full shape is replaced by a tiny
model of the same family and the samples are short.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from functools import partial

import torch
from gpu_check_setup import (
    EXACTNESS_BAR,
    TINY_STAND_IN,
    build_model,
    cuda_memory,
    difference_to_plain,
    gib,
    moved,
    parameter_count,
    paths_taken,
    planned_batches,
    prepared_samples,
    project_rows,
    release,
    rows_difference,
    rows_identical,
    timed,
)

EXACTNESS_SHAPES = ("tiny-gemma2", "tiny-qwen2", "tiny-llama")
# Two groups of similar lengths, so that each is one padded batch: the short ones take the T x T
# factor route for every projection of the tiny models, the long ones the formed gradient; all are
# longer than tiny Gemma 2's sliding window of 8.
EXACTNESS_LENGTHS = [18, 19, 20, 76, 80, 84]
SAMPLE_LENGTH = {False: 1024, True: 64}  # tokens per sample of the speed, memory and training parts
SAMPLE_COUNT = {False: 8, True: 4}  # samples of the speed part: the paper profile's batch of 8
GOAL_RATIO = 20.0  # the GPU path's goal: the project's samples per second over the plain procedure's
GOAL_MIN_PARAMETERS = 1e9  # on a model of at least this many parameters
LARGEST_PLAN_BATCH = 64  # the plan's own largest batch is measured up to this many samples
FORCED_LIMIT_SAMPLES = 2.5  # the forced memory limit, in one sample's measured peak above the model


@dataclass
class Context:
    """What every part reads: the device, the mode, the samples' source, and the models and runs
    that later parts reuse (one full-size model is kept at a time)."""

    device: torch.device
    tiny: bool
    seed: int
    texts: list
    models: dict = field(default_factory=dict)
    kept: dict = field(default_factory=dict)  # shape -> prepared samples and rows of its speed run

    def shape(self, name: str) -> str:
        return TINY_STAND_IN[name] if self.tiny else name

    def model(self, name: str):
        """The random-weight model of a shape, built once (dropping any other)."""
        shape = self.shape(name)
        if shape not in self.models:
            self.models.clear()
            release(self.device)
            self.models[shape] = build_model(shape, self.device, self.seed)
        return self.models[shape]

    def drop(self, name: str) -> None:
        self.models.pop(self.shape(name), None)
        self.kept.pop(self.shape(name), None)
        release(self.device)

    @property
    def length(self) -> int:
        return SAMPLE_LENGTH[self.tiny]

    def samples(self, count: int) -> list:
        return prepared_samples(self.texts, [self.length] * count, self.seed)


class Budget:
    """A part's time budget, counted from its start."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.started = time.perf_counter()

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.started)


def paper_settings(device: torch.device):
    """The paper profile's extraction settings (its batch size and token budget) on this device."""
    from analysis.profiles import PROFILES

    return PROFILES["paper"].extraction.but(device=str(device), n_samples=None)


def exactness(context: Context, budget: Budget) -> dict:
    """Each tiny model: the project's statistics on the device against the same on the CPU, against
    the plain procedure on the device (float64 SVD of ``param.grad``), batched against one at a time."""
    results, not_checked = {}, []
    for shape in EXACTNESS_SHAPES:
        if budget.left() <= 0:
            not_checked.append(f"{shape}: the part's {budget.seconds:.0f} s were spent")
            continue
        results[shape] = exactness_of(context, shape)
    errors = [value for result in results.values() for value in result["errors"].values() if isinstance(value, float)]
    worst = max(errors) if errors else float("inf")
    passed = (
        bool(results) and not not_checked and worst < EXACTNESS_BAR and not any(r["skipped"] for r in results.values())
    )
    return {
        "models": results,
        "largest_error": worst,
        "bar": EXACTNESS_BAR,
        "passed": passed,
        "not_checked": not_checked,
        "summary": f"{len(results)} models, largest error {worst:.1e} (bar {EXACTNESS_BAR:g}): "
        f"{'passed' if passed else 'FAILED'}",
    }


def exactness_of(context: Context, shape: str) -> dict:
    from analysis.extract import plain

    on_cpu = build_model(shape, torch.device("cpu"), context.seed)
    loaded = on_cpu if context.device.type == "cpu" else moved(on_cpu, context.device)
    prepared = prepared_samples(context.texts, EXACTNESS_LENGTHS, context.seed)
    settings = paper_settings(context.device)
    batched, skipped = project_rows(loaded, prepared, settings)
    single, skipped_single = project_rows(loaded, prepared, settings.but(batch_size=1))
    references = {s.index: plain.reference_statistics(loaded.model, s.encoded) for s in prepared}
    batched_vs_single = rows_difference(batched, single)
    errors = {
        "batched_vs_plain": difference_to_plain(batched, references),
        "one_at_a_time_vs_plain": difference_to_plain(single, references),
        "batched_vs_one_at_a_time": batched_vs_single["relative"],
        "batched_vs_one_at_a_time_cosines_absolute": batched_vs_single["cosine_absolute"],
    }
    if context.device.type == "cpu":
        errors["device_vs_cpu"] = "not applicable: the device is the CPU"
    else:
        cpu_rows, cpu_skipped = project_rows(on_cpu, prepared, settings.but(device="cpu"))
        skipped += cpu_skipped
        device_vs_cpu = rows_difference(batched, cpu_rows)
        errors["device_vs_cpu"] = device_vs_cpu["relative"]
        errors["device_vs_cpu_cosines_absolute"] = device_vs_cpu["cosine_absolute"]
    return {
        "attention": loaded.attention,
        "sample_lengths": EXACTNESS_LENGTHS,
        "batches": planned_batches(loaded, prepared, settings),
        "spectra_by_route": paths_taken(loaded, prepared),
        "errors": errors,
        "skipped": [row["reason"] for row in skipped + skipped_single],
    }


def plain_estimate(loaded, sample, settings) -> dict:
    """Warm both paths up on one sample, then time the plain procedure's pieces: its forward and
    backward pass, and one full float32 SVD of each projection's shape (times the layers). Their sum
    says, before the plain procedure runs, whether a sample of it fits in the part's time."""
    from analysis.extract import gradients, plain

    device = loaded.device
    project_rows(loaded, [sample], settings)
    plain.reference_statistics(loaded.model, sample.encoded, with_svd=False)
    _, floor = timed(lambda: plain.reference_statistics(loaded.model, sample.encoded, with_svd=False), device)
    svd = {}
    for (_, proj), module in gradients.attention_projections(loaded.model).items():
        if proj not in svd:
            matrix = torch.randn(module.weight.shape, device=device)
            torch.linalg.svd(matrix)
            svd[proj] = timed(lambda m=matrix: torch.linalg.svd(m), device)[1]
    return {"forward_backward": floor, "svd_per_layer": svd, "total": floor + loaded.n_layers * sum(svd.values())}


def speed(context: Context, budget: Budget, shape: str) -> dict:
    """Samples per second of the project's extraction (the paper profile's settings) and of the
    plain procedure (batch 1, ``param.grad``, full float32 SVD, as the original study ran it)."""
    from analysis.extract import plain

    loaded = context.model(shape)
    device, count = context.device, SAMPLE_COUNT[context.tiny]
    prepared = context.samples(count)
    settings = paper_settings(device)
    estimate = plain_estimate(loaded, prepared[0], settings)
    project_seconds = []
    with cuda_memory(device) as memory:
        (rows, skipped), seconds = timed(lambda: project_rows(loaded, prepared, settings), device)
    project_seconds.append(seconds)
    if budget.left() > 4 * seconds + 1.3 * estimate["total"]:
        project_seconds.append(timed(lambda: project_rows(loaded, prepared, settings), device)[1])
    plain_seconds, references = [], {}
    for sample in prepared:
        if budget.left() < 1.3 * max([estimate["total"], *plain_seconds]):
            break
        reference, seconds = timed(
            lambda s=sample: plain.reference_statistics(loaded.model, s.encoded, float64=False), device
        )
        plain_seconds.append(seconds)
        references[sample.index] = reference
    project_rate = count / statistics.median(project_seconds)
    measured = bool(plain_seconds)
    plain_rate = len(plain_seconds) / sum(plain_seconds) if measured else 1 / estimate["total"]
    ratio = project_rate / plain_rate
    parameters = parameter_count(loaded)
    context.kept[context.shape(shape)] = {"prepared": prepared, "rows": rows, "seconds": min(project_seconds)}
    goal_applies = device.type == "cuda" and parameters >= GOAL_MIN_PARAMETERS
    return {
        "model": loaded.name,
        "parameters": parameters,
        "attention": loaded.attention,
        "build_seconds": loaded.load_seconds,
        "samples": count,
        "tokens_per_sample": context.length,
        "batches": planned_batches(loaded, prepared, settings),
        "project": {"seconds": project_seconds, "samples_per_second": project_rate, "cuda_memory": memory},
        "plain": {
            "seconds_per_sample": plain_seconds,
            "samples_per_second": plain_rate,
            "estimated_seconds_per_sample": estimate,
        },
        "ratio": ratio,
        "ratio_from": "measured: both procedures timed in this run"
        if measured
        else f"ESTIMATED: the plain procedure ({estimate['total']:.0f} s a sample by its timed pieces) did not fit "
        f"the part's time; its pieces' sum stands in",
        "goal": {
            "ratio_at_least": GOAL_RATIO,
            "met": ratio >= GOAL_RATIO
            if goal_applies
            else f"not applicable: {parameters / 1e6:.1f}M parameters on {device.type}",
        },
        # the plain procedure's own float32 SVD, not the exactness reference (the exactness part is)
        "difference_to_plain_float32": difference_to_plain(rows, references) if references else None,
        "skipped": [row["reason"] for row in skipped],
        "not_checked": [] if measured else ["the plain procedure itself: it did not fit the part's time"],
        "summary": f"{project_rate:.3g} vs {plain_rate:.3g} samples/s: {ratio:.1f}x the plain procedure "
        f"({len(plain_seconds) or 'no'} plain samples timed{'' if measured else ', ratio ESTIMATED'})",
    }


def memory_plan(context: Context, budget: Budget, shape: str) -> dict:
    """The batch plan's predicted peak against ``torch.cuda.max_memory_allocated`` at the batch
    the runner forms under the paper profile's settings and at the plan's own largest batch."""
    from analysis.extract import batching

    loaded = context.model(shape)
    config, length = loaded.model.config, context.length
    per_sample = batching.MemoryPlan(
        0.0, batching.activation_bytes_per_token(config), batching.score_bytes_per_token_pair(config, loaded.attention)
    )
    predicted_one = per_sample.batch_bytes(1, length) + batching.statistics_bytes(config, length)
    if context.device.type != "cuda":
        return {
            "status": "not checked",
            "reason": "the memory plan is of CUDA devices, measured by torch.cuda.max_memory_allocated",
            "predicted_gib_one_sample": gib(predicted_one),
            "activation_bytes_per_token": per_sample.bytes_per_token,
        }
    kept = context.kept.get(context.shape(shape), {})
    prepared = kept.get("prepared") or context.samples(SAMPLE_COUNT[context.tiny])
    chosen = max(planned_batches(loaded, prepared, paper_settings(context.device)))
    runs = [measured_batch(loaded, prepared[:chosen], "the runner's batch under the paper profile's settings")]
    largest = min(runs[0]["plan_largest_batch"], LARGEST_PLAN_BATCH)
    not_checked = []
    estimate = kept.get("seconds", runs[0]["seconds"]) / len(prepared) * largest * 1.5
    if largest <= chosen:
        not_checked.append(f"the plan's largest batch ({largest}) is the runner's batch")
    elif estimate > budget.left():
        not_checked.append(f"the plan's largest batch of {largest}: about {estimate:.0f} s, {budget.left():.0f} s left")
    else:
        runs.append(measured_batch(loaded, context.samples(largest), "the plan's largest batch"))
    high = all(run["plan_errs_high"] for run in runs)
    return {
        "model": loaded.name,
        "tokens_per_sample": length,
        "runs": runs,
        "plan_errs_high": high,
        "not_checked": not_checked,
        "summary": "; ".join(
            f"{r['samples']} samples: measured/predicted {r['measured_over_predicted']:.2f}" for r in runs
        )
        + ("" if high else " (the plan UNDERESTIMATES)"),
    }


def measured_batch(loaded, samples: list, what: str) -> dict:
    """One batch of the samples through the runner, with the plan's prediction for it."""
    from analysis.extract import batching, runner

    length = max(len(s.encoded.input_ids) for s in samples)
    plan = runner.memory_plan(loaded, samples)
    settings = paper_settings(loaded.device).but(batch_size=len(samples), token_budget=len(samples) * length)
    predicted = plan.batch_bytes(len(samples), length) + batching.statistics_bytes(loaded.model.config, length)
    with cuda_memory(loaded.device) as memory:
        (_, skipped), seconds = timed(lambda: project_rows(loaded, samples, settings), loaded.device)
    measured = memory["peak_above_start_bytes"]
    return {
        "what": what,
        "samples": len(samples),
        "plan_largest_batch": plan.largest_batch(length),
        "plan_budget_gib": gib(plan.budget_bytes),
        "predicted_gib": gib(predicted),
        "measured_peak_above_model_gib": gib(measured),
        "measured_over_predicted": measured / predicted,
        "plan_errs_high": measured <= predicted and memory["out_of_memory_events"] == 0,
        "out_of_memory_events": memory["out_of_memory_events"],
        "seconds": seconds,
        "skipped": [row["reason"] for row in skipped],
    }


def forced_retry(loaded, settings, simulated_positions: int | None):
    """The runner's halving retry, recording each pass; with ``simulated_positions`` a batch of more
    padded positions raises CUDA's out-of-memory error instead of being computed (the CPU mode has
    no device memory to run out of)."""
    from analysis.extract import gradients, models
    from analysis.extract.halving import HalvingRetry, is_out_of_memory

    class RecordingRetry(HalvingRetry):
        def _statistics(self, samples):
            positions = len(samples) * max(len(s.encoded.input_ids) for s in samples)
            try:
                if simulated_positions is not None and positions > simulated_positions:
                    raise torch.cuda.OutOfMemoryError(f"simulated: {positions} positions over {simulated_positions}")
                computed = super()._statistics(samples)
            except Exception as error:
                self.passes.append([len(samples), "out of memory" if is_out_of_memory(error) else repr(error)])
                raise
            self.passes.append([len(samples), "computed"])
            return computed

    retry = RecordingRetry(
        loaded, gradients.attention_projections(loaded.model), models.pad_token_id(loaded.tokenizer), entry_stats=False
    )
    retry.passes = []
    return retry


def retried_rows(loaded, retry, prepared: list, settings) -> tuple:
    """Rows of the samples in the batches the runner forms, each through ``retry`` as
    ``runner.compute_prepared`` passes them."""
    import pandas as pd

    from analysis.extract import preparation, runner

    plan = runner.memory_plan(loaded, prepared)
    batch_size = preparation.batch_size_for(loaded.device, settings.batch_size)
    identity = {"model": loaded.name, "n_layers": loaded.n_layers}
    frames, skipped = [], []
    for batch in preparation.length_sorted_batches(
        prepared, batch_size, settings.token_budget, fits=plan.fits if plan else None
    ):
        for sample, outcome in retry.compute(batch):
            if isinstance(outcome, str) or outcome.failure:
                skipped.append(outcome if isinstance(outcome, str) else outcome.failure)
            else:
                frames.append(runner.sample_rows(outcome, sample, identity, loaded.n_layers))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), skipped


def halving(context: Context, budget: Budget, shape: str) -> dict:
    """The halving on out-of-memory forced by a small memory limit: rows equal to an unforced run."""
    loaded, device = context.model(shape), context.device
    settings = paper_settings(device)
    kept = context.kept.get(context.shape(shape)) or {}
    prepared = kept.get("prepared") or context.samples(SAMPLE_COUNT[context.tiny])
    unforced = kept.get("rows")
    if unforced is None:
        unforced, _ = project_rows(loaded, prepared, settings)
    if device.type == "cuda":
        with cuda_memory(device) as one:
            project_rows(loaded, prepared[:1], settings)
        limit = torch.cuda.memory_allocated(device) + FORCED_LIMIT_SAMPLES * one["peak_above_start_bytes"]
        total = torch.cuda.get_device_properties(device).total_memory
        forced_by = f"torch.cuda.set_per_process_memory_fraction: {gib(limit)} GiB of {gib(total)} GiB"
        torch.cuda.set_per_process_memory_fraction(min(1.0, limit / total), device)
        retry = forced_retry(loaded, settings, None)
    else:
        forced_by = f"simulated: a batch of more than {2 * context.length} padded positions raises OutOfMemoryError"
        retry = forced_retry(loaded, settings, 2 * context.length)
    try:
        rows, skipped = retried_rows(loaded, retry, prepared, settings)
    finally:
        if device.type == "cuda":
            torch.cuda.set_per_process_memory_fraction(1.0, device)
        release(device)
    difference = rows_difference(rows, unforced)
    halved = sum(outcome == "out of memory" for _, outcome in retry.passes)
    passed = halved > 0 and not skipped and max(difference.values()) <= EXACTNESS_BAR
    return {
        "model": loaded.name,
        "forced_by": forced_by,
        "passes": retry.passes,
        "out_of_memory_passes": halved,
        "skipped": skipped,
        "rows_identical": rows_identical(rows, unforced),
        "difference_to_unforced": difference,
        "passed": passed,
        "summary": f"{halved} out-of-memory passes, then {[n for n, o in retry.passes if o == 'computed']}; "
        f"rows vs unforced {max(difference.values()):.1e}: {'passed' if passed else 'FAILED'}",
    }


def training_step(context: Context, budget: Budget, shape: str) -> dict:
    """One AdamW step of the ``training-paper`` design (every weight, its batch of 8 at 1024 tokens)
    and its CUDA memory against the plan the book states (16 bytes per weight before activations)."""
    from analysis.extract import models
    from analysis.extract.halving import is_out_of_memory
    from analysis.profiles import TRAINING_PAPER
    from analysis.train import loop

    loaded, device = context.model(shape), context.device
    samples = context.samples(TRAINING_PAPER.batch_size)
    parameters = parameter_count(loaded)
    stated = 16 * parameters
    outcome: dict = {}
    with loop.trainable(loaded.model):
        optimizer = loop.make_optimizer(loaded.model, TRAINING_PAPER)
        step = partial(loop.train_step, loaded, optimizer, samples, models.pad_token_id(loaded.tokenizer))
        with cuda_memory(device) as memory:
            try:
                (loss, tokens), seconds = timed(step, device)
                outcome = {"loss": loss, "response_tokens": tokens, "seconds": seconds}
            except Exception as error:  # noqa: BLE001 - only out of memory is a result, the rest is raised
                if not is_out_of_memory(error):
                    raise
                outcome = {"out_of_memory": str(error).splitlines()[0]}
        after = torch.cuda.memory_allocated(device) if device.type == "cuda" else None
        step = optimizer = None  # AdamW's moments go with them
    context.drop(shape)  # its weights are trained now
    result = {
        "model": loaded.name,
        "parameters": parameters,
        "batch": f"{len(samples)} samples of {context.length} tokens, learning rate {TRAINING_PAPER.learning_rate}",
        **outcome,
        "stated_plan": "16 bytes per weight (weight, gradient, AdamW's two moments) before activations "
        "(book/training_methods.md); no plan is stated for the activations",
        "stated_plan_gib": gib(stated),
    }
    if device.type != "cuda":
        result["not_checked"] = ["its memory: needs a CUDA device (torch.cuda.max_memory_allocated)"]
        result["summary"] = f"one step, loss {outcome.get('loss', float('nan')):.3f}; memory not measured on a CPU"
        return result
    result.update(
        measured_peak_gib=gib(memory["peak_bytes"]),
        measured_peak_over_stated=memory["peak_bytes"] / stated,
        beyond_stated_plan_gib=gib(memory["peak_bytes"] - stated),
        after_step_gib=gib(after),
        after_step_over_12_bytes_per_weight=after / (12 * parameters),
    )
    result["summary"] = (
        f"peak {gib(memory['peak_bytes']):.1f} GiB against {gib(stated):.1f} GiB stated before activations"
        + (f"; OUT OF MEMORY: {outcome['out_of_memory']}" if "out_of_memory" in outcome else "")
    )
    return result
