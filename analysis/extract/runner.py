"""Extraction runs: data file(s) -> prompts -> per-sample gradient statistics -> results store.

``extract`` is what ``python -m analysis extract`` and the notebooks' batch runs call. It is
resumable: samples already in the store (or recorded as skipped) are not computed again, and
results are flushed to the store in parts as they are computed, so an interrupted run loses at
most the samples since its last flush. The samples are encoded and batched by
:mod:`analysis.extract.preparation`; a batch that runs out of memory is halved by
:mod:`analysis.extract.halving`. A loss-matched condition and its reference (``detailed_answer``)
are computed in one forward pass per sample (``extract_together``), each stored as its own run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from functools import partial

import pandas as pd
import torch
from tqdm.auto import tqdm

from analysis import data
from analysis.core import layer_stats, registry
from analysis.core.settings import ExtractionSettings
from analysis.core.vocabulary import PROJECTIONS
from analysis.data import sample_draws
from analysis.data.records import load_records
from analysis.extract import batching, gradients, loss_matching, models
from analysis.extract.halving import OUT_OF_MEMORY, HalvingRetry
from analysis.extract.preparation import (
    PreparedSample,
    answer_truncated,
    batch_size_for,
    length_sorted_batches,
    prepare_samples,
)
from analysis.extract.threads import torch_threads  # noqa: F401  (callers use runner.torch_threads)
from analysis.store import ResultsStore, RunKey, run_labels, skip_record
from analysis.store.store_errors import StoreError

# The per-sample columns of analysis.core.layer_stats: how each is read off a computed sample.
SAMPLE_VALUES: dict[str, Callable] = {
    "loss": lambda stats, sample: stats.loss,
    "loss_max": lambda stats, sample: stats.token_losses["loss_max"],
    "loss_sd": lambda stats, sample: stats.token_losses["loss_sd"],
    "log_miss": lambda stats, sample: stats.token_losses["log_miss"],
    "n_tokens": lambda stats, sample: len(sample.encoded.input_ids),
    "n_response_tokens": lambda stats, sample: sample.encoded.n_response_tokens,
}
# The loss-matched draw's columns of analysis.core.layer_stats: how each is read off one draw.
MATCHED_VALUES: dict[str, Callable[[loss_matching.Draw], float]] = {
    "matched_flagged": lambda draw: draw.flagged,
    "matched_position": lambda draw: draw.position,
}
# A loss-matched sample's draws, each as its tokens' offsets in the chain (0: its first token): a
# JSON list of K lists, the same on every row of the sample (``loss_matching.Matched.offsets``).
MATCHED_TOKENS_COLUMN = "matched_tokens"


@dataclass
class ConditionSummary:
    """What one extraction of one condition did."""

    model: str
    condition: str
    requested: int
    already_done: int
    computed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    sha256_ok: bool | None = None
    # the condition whose forward passes this one shared (``extract_together``): the seconds of a
    # batch that computed both are split evenly between them
    shared_pass: str | None = None

    @property
    def seconds_per_sample(self) -> float:
        return self.seconds / self.computed if self.computed else math.nan

    def as_record(self) -> dict:
        """What the run log keeps of it."""
        fields = ("model", "condition", "requested", "already_done", "computed", "skipped", "seconds")
        record = {name: getattr(self, name) for name in fields}
        return record if self.shared_pass is None else {**record, "shared_pass": self.shared_pass}

    def count(self, rows: pd.DataFrame | None, skipped: list[dict]) -> int:
        """Count one batch's computed and skipped samples (skips by ``skip_label``); how many it held."""
        computed = 0 if rows is None else rows["sample_index"].nunique()
        for row in skipped:
            label = skip_label(row["reason"])
            self.skipped[label] = self.skipped.get(label, 0) + 1
        self.computed += computed
        return computed + len(skipped)


class ShardWriter:
    """The rows and skips of computed samples, written to the store once ``shard_size`` samples are
    pending and at ``flush``: an interrupted run loses at most one shard."""

    def __init__(self, store: ResultsStore, key: RunKey, shard_size: int):
        self.store, self.key, self.shard_size = store, key, shard_size
        self.rows: list[pd.DataFrame] = []
        self.skips: list[dict] = []
        self.pending = 0

    def add(self, rows: pd.DataFrame | None, skipped: list[dict], samples: int) -> None:
        if rows is not None:
            self.rows.append(rows)
        self.skips.extend(skipped)
        self.pending += samples
        if self.pending >= self.shard_size:
            self.flush()

    def flush(self) -> None:
        rows = pd.concat(self.rows, ignore_index=True) if self.rows else None
        skips = pd.DataFrame(self.skips) if self.skips else None
        # Taken out before writing: if an interrupt stops this write after one of its parts is in
        # place, a flush that follows must not write those samples a second time.
        self.rows, self.skips, self.pending = [], [], 0
        self.store.write(self.key, rows, skips)


SUBSET_COLUMN = "subset"  # which of a sample's K draws of scored tokens a row's gradient scores


def sample_rows(
    stats: gradients.SampleGradientStats, sample: PreparedSample, identity: dict, n_layers: int
) -> pd.DataFrame:
    """Long-format rows of one sample: one per (layer, projection), with a column for each statistic
    of ``analysis.core.layer_stats`` that was computed (entry statistics only when asked for); in a
    run of K > 1 draws of scored tokens (``scored_subsets``), K such sets, told apart by ``subset``."""
    if SUBSETS not in identity:
        return gradient_rows(stats, sample, identity, n_layers)
    draws = [stats, *stats.further_subsets]
    frames = [gradient_rows(s, sample, identity, n_layers).assign(**{SUBSET_COLUMN: k}) for k, s in enumerate(draws)]
    return pd.concat(frames, ignore_index=True)


def matched_rows(
    draws: list[gradients.SampleGradientStats],
    matched: loss_matching.Matched | None,
    sample: PreparedSample,
    identity: dict,
    *,
    n_layers: int,
) -> pd.DataFrame:
    """The rows of a loss-matched sample: one set per draw (``draws``, in ``matched``'s order) with
    its flags and mean position (``MATCHED_VALUES``) and every draw's tokens (``MATCHED_TOKENS_COLUMN``);
    in a run of K > 1 draws told apart by ``subset``, as a scored subset's."""
    if matched is None:
        raise ValueError(f"sample {sample.index}: a loss-matched sample computed without its draws")
    frames = []
    for k, (stats, draw) in enumerate(zip(draws, matched.draws)):
        frame = gradient_rows(stats, sample, identity, n_layers)
        frame = frame.assign(**{name: value(draw) for name, value in MATCHED_VALUES.items()})
        frame[MATCHED_TOKENS_COLUMN] = matched.offsets()
        frames.append(frame.assign(**{SUBSET_COLUMN: k}) if SUBSETS in identity else frame)
    return pd.concat(frames, ignore_index=True)


def gradient_rows(
    stats: gradients.SampleGradientStats, sample: PreparedSample, identity: dict, n_layers: int
) -> pd.DataFrame:
    """The rows of one gradient of one sample (``sample_rows``)."""
    n_proj = len(PROJECTIONS)
    frame = pd.DataFrame(
        {
            **{name: [value] * (n_layers * n_proj) for name, value in identity.items()},
            "sample_index": sample.index,
            "layer": [layer for layer in range(n_layers) for _ in range(n_proj)],
            "proj": list(PROJECTIONS) * n_layers,
        }
    )
    for statistic in layer_stats.TABLE:
        if statistic.source == layer_stats.SAMPLE:
            frame[statistic.name] = SAMPLE_VALUES[statistic.name](stats, sample)
        elif statistic.name in stats.values:
            frame[statistic.name] = stats.values[statistic.name].reshape(-1).cpu().numpy()
    if stats.spectra is not None:
        frame[SPECTRUM_COLUMN] = spectrum_cells(stats.spectra, n_layers)
    return frame


SPECTRUM_COLUMN = "singular_values"


def spectrum_cells(spectra: dict[str, torch.Tensor], n_layers: int) -> list:
    """One array of descending singular values per (layer, projection), in the rows' order."""
    arrays = {proj: values.cpu().numpy() for proj, values in spectra.items()}
    return [arrays[proj][layer] for layer in range(n_layers) for proj in PROJECTIONS]


@dataclass
class RunPlan:
    """One condition's extraction: where it is stored, how rows are labelled, what is left to do."""

    spec: str
    resolved: data.ResolvedData
    key: RunKey
    identity: dict
    requested: int
    todo: list[int]
    drawn: tuple[int, ...] = ()  # every id of the condition's sample, in draw order (``sample_draws``)


def plan_run(
    model_name: str,
    template: str,
    spec: str,
    store: ResultsStore,
    *,
    settings: ExtractionSettings,
    data_dir=None,
    ids: Sequence[int] | None = None,
) -> RunPlan:
    """What extracting ``spec`` with this model would store, and which samples are not stored yet:
    its draw, or with ``ids`` those samples (beside the draw, e.g. a loss screen's matched pairs).

    A stored sample whose rows lack a column that this run computes (a statistic declared after it
    was stored, or entry statistics asked for now) is to be computed again; with
    ``settings.retry_out_of_memory``, so are samples skipped for lack of memory."""
    resolved = data.resolve(spec, data_dir)
    condition = resolved.condition
    max_length = settings.max_length
    records = len(load_records(resolved.path))
    is_file = condition.setting == ""
    # a seeded random sample, not the first N; a study dataset's drawn from its usable None-CoT pairs
    draw = sample_draws.sample_ids if is_file else partial(sample_draws.dataset_sample_ids, directory=data_dir)
    chosen = list(ids) if ids is not None else draw(condition.dataset, records, settings.n_samples)
    key, identity = with_scored_subsets(*run_labels(model_name, template, resolved, max_length), condition, settings)
    retried = (OUT_OF_MEMORY,) if settings.retry_out_of_memory else ()
    energy = settings.energy_passes(identity["condition"]) > 0
    required = layer_stats.computed_columns(
        entry_stats=settings.entry_stats, token_energy=energy, matched=condition.loss_matched
    )
    done = store.done_samples(key, retry_reasons=retried, required_columns=required)
    todo = [i for i in chosen if i not in done]
    return RunPlan(spec, resolved, key, identity, len(chosen), todo, tuple(chosen) if ids is None else ())


SUBSETS = "scored_subsets"  # the label of a run of K > 1 draws of scored tokens per sample


def with_scored_subsets(
    key: RunKey, identity: dict, condition: data.Condition, settings: ExtractionSettings
) -> tuple[RunKey, dict]:
    """A scored-subset condition's run of ``settings.scored_subsets`` K > 1 draws per sample: its own
    run key (its rows never mixed with one draw's on resume) and K among its row labels; any other
    run's key and labels unchanged (one draw's store reads back as before)."""
    count = settings.scored_subsets
    if condition.scored_reference is None or count == 1:
        return key, identity
    return replace(key, scored_subsets=count), {**identity, SUBSETS: count}


def skip_row(identity: dict, index: int, reason: str) -> dict:
    """One row of the skipped-samples table."""
    return skip_record(identity, index, reason)


def compute_samples(
    loaded: models.LoadedModel,
    plan: RunPlan,
    indices: list[int],
    settings: ExtractionSettings,
    *,
    data_dir=None,
    matched: RunPlan | None = None,
):
    """Yield (rows, skipped) for the given samples, one batch at a time, without touching the store.

    ``rows`` is a DataFrame in the store's schema (or None), ``skipped`` a list of skip rows.
    ``matched``: the plan of the loss-matched condition that reads ``plan``'s text (its reference's),
    whose draws the same forward pass of each sample then makes too: the rows and skips of both
    conditions come together, told apart by their ``condition``.
    """
    prepared, skipped, identities = prepared_pass(loaded, plan, indices, data_dir=data_dir, matched=matched)
    if skipped:
        yield None, skipped
    yield from compute_prepared(loaded, identities, prepared, settings)


def prepared_pass(
    loaded: models.LoadedModel, plan: RunPlan, indices: list[int], *, data_dir=None, matched: RunPlan | None = None
) -> tuple[list[PreparedSample], list[dict], tuple[dict, ...]]:
    """The samples of ``compute_samples`` encoded, the skip rows of those with nothing to score, and
    the row labels of the pass's conditions (``plan``'s, then ``matched``'s)."""
    max_length = plan.identity["max_length"]
    identity = {**plan.identity, "n_layers": loaded.n_layers}
    if matched is None:
        prepared, skips = prepare_samples(
            loaded, plan.resolved, indices, max_length, data_dir=data_dir, scored_subsets=plan.key.scored_subsets
        )
        return prepared, [skip_row(identity, index, reason) for index, reason in skips.items()], (identity,)
    other = {**matched.identity, "n_layers": loaded.n_layers}
    prepared, skips = prepare_samples(
        loaded,
        matched.resolved,
        indices,
        max_length,
        data_dir=data_dir,
        scored_subsets=matched.key.scored_subsets,
        with_reference=True,
    )
    # a loss-matched sample is skipped only where its reference's answer is truncated away
    skipped = [skip_row(identity, index, answer_truncated(max_length)) for index in skips]
    skipped += [skip_row(other, index, reason) for index, reason in skips.items()]
    return prepared, skipped, (identity, other)


def compute_prepared(
    loaded: models.LoadedModel,
    identity: dict | tuple[dict, ...],
    prepared: list[PreparedSample],
    settings: ExtractionSettings,
):
    """Yield (rows, failed) for encoded samples, one length-sorted batch at a time.

    ``identity`` labels the rows (as :func:`compute_samples` builds it; two of them where a
    loss-matched condition shares its reference's pass: the reference's, then its own);
    ``failed`` lists the samples whose numbers came out non-finite, or that did not fit in the
    device's memory even alone, as skip rows. ``settings.batch_size`` None: see :func:`batch_size_for`. On a GPU, batches are
    also planned to fit the memory the device reports free (:func:`memory_plan`), and a batch
    that runs out of memory anyway is computed again in halves (:class:`HalvingRetry`).
    """
    identities = identity if isinstance(identity, tuple) else (identity,)
    batch_size = batch_size_for(loaded.device, settings.batch_size)
    projections = gradients.attention_projections(loaded.model)
    pad_id = models.pad_token_id(loaded.tokenizer)
    plan = memory_plan(loaded, prepared)
    passes = settings.energy_passes(identities[0].get("condition", ""))
    retry = HalvingRetry(
        loaded,
        projections,
        pad_id,
        entry_stats=settings.entry_stats,
        keep_spectra=settings.keep_spectra,
        token_energy_passes=passes,
    )
    batches = length_sorted_batches(prepared, batch_size, settings.token_budget, fits=plan.fits if plan else None)
    for batch_samples in batches:
        frames, failed = [], []
        for sample, outcome in retry.compute(batch_samples):
            for labels, result in outcomes(sample, outcome, identities):
                if isinstance(result, str):
                    failed.append(skip_row(labels, sample.index, result))
                else:
                    frames.append(result(sample, labels, n_layers=loaded.n_layers))
        yield (pd.concat(frames, ignore_index=True) if frames else None), failed


RowMaker = Callable[..., pd.DataFrame]  # (sample, row labels, *, n_layers) -> its rows


def outcomes(
    sample: PreparedSample, outcome: gradients.SampleGradientStats | str, identities: tuple[dict, ...]
) -> list[tuple[dict, RowMaker | str]]:
    """What one computed sample gives each condition of its pass: (row labels, a function making
    its rows, or why it is skipped). A loss-matched sample's rows are its draws (``matched_rows``):
    after its reference's own gradient where the pass shares it (``identities``: the reference's,
    then its own), else from its first gradient on; its skip is its own, never its reference's."""
    request = sample.encoded.matching
    sharing = request is not None and request.answer_gradient
    if isinstance(outcome, str):
        return [(labels, outcome) for labels in identities]
    if request is None or not sharing:
        if outcome.failure:
            return [(identities[0], outcome.failure)]
        if request is None:
            return [(identities[0], partial(sample_rows, outcome))]
        return [(identities[0], partial(matched_rows, [outcome, *outcome.further_subsets], outcome.matched))]
    own: RowMaker | str = outcome.failure or partial(sample_rows, outcome)
    return [(identities[0], own), (identities[1], matched_outcome(outcome))]


def matched_outcome(outcome: gradients.SampleGradientStats) -> RowMaker | str:
    """A loss-matched sample's rows from the further subsets of its reference's gradient, or why not."""
    matched = outcome.matched
    if matched is None or matched.failure:
        return (matched.failure if matched else None) or outcome.failure or "no loss-matched draw made"
    broken = next((k for k, s in enumerate(outcome.further_subsets) if s.failure), None)
    if broken is not None:
        return f"{outcome.further_subsets[broken].failure} (loss-matched draw {broken + 1})"
    return partial(matched_rows, outcome.further_subsets, matched)


def memory_plan(loaded: models.LoadedModel, prepared: list[PreparedSample]) -> batching.MemoryPlan | None:
    """The memory plan of the loaded model's CUDA device (None on a CPU: batches as asked)."""
    if loaded.device.type != "cuda" or not prepared:
        return None
    longest = max(len(s.encoded.input_ids) for s in prepared)
    return batching.plan_for(loaded.model.config, loaded.attention, loaded.device, longest)


def skip_label(reason: str) -> str:
    """The short category of a skip reason (the text before its first colon)."""
    return reason.split(":")[0]


def check_same_data(store: ResultsStore, plan: RunPlan) -> None:
    """Refuse to add to stored results that were computed from other contents of the same data file.

    A study condition's results are keyed by its name, not its hash: after its file changes,
    resuming would silently mix samples of the old and the new file.
    """
    other = store.stored_values(plan.key, "data_sha256") - {plan.resolved.sha256}
    if other:
        raise StoreError(
            f"{store.run_dir('rows', plan.key)}: the stored results of {plan.identity['condition']} were computed from a "
            f"data file with sha256 {sorted(other)[0][:12]}…, but {plan.resolved.path} now has sha256 "
            f"{plan.resolved.sha256[:12]}…; use a different --out, or remove that directory to recompute"
        )


def extract(
    loaded: models.LoadedModel,
    spec: str,
    store: ResultsStore,
    *,
    settings: ExtractionSettings | None = None,
    data_dir=None,
    progress: bool = True,
    ids: Sequence[int] | None = None,
) -> ConditionSummary:
    """Compute and store the statistics of ``settings.n_samples`` samples of one condition (or
    file), a seeded random sample of its records (``sample_draws.dataset_sample_ids``), writing to the store every
    ``settings.shard_size`` samples; with ``ids``, of those samples instead, kept beside the draw
    (the draw kept with the store is not changed).

    ``settings`` None: the defaults of ``ExtractionSettings``, the one way to pass settings
    (``extract(loaded, spec, store, ExtractionSettings(n_samples=3))``). ``settings.keep_spectra``
    also stores every gradient's singular values (column ``singular_values``, for the samples
    computed by this call).
    """
    (summary,) = extract_together(
        loaded, (spec,), store, settings=settings, data_dir=data_dir, progress=progress, ids=ids
    )
    return summary


def shared_passes(specs: Sequence[str]) -> list[tuple[str, ...]]:
    """``specs`` in their order, one group per forward pass: a loss-matched condition with its
    reference (the reference first, in its place) where both are among them, any other alone."""
    wanted = set(specs)
    riders = {}
    for spec in specs:
        condition = data.CONDITIONS.get(spec)
        if condition is not None and condition.loss_matched and condition.scored_reference in wanted:
            riders[condition.scored_reference] = spec
    return [(spec, riders[spec]) if spec in riders else (spec,) for spec in specs if spec not in riders.values()]


def pass_parts(plans: Sequence[RunPlan]) -> list[tuple[RunPlan, list[int], RunPlan | None]]:
    """The work of one or two plans (a reference, then its loss-matched condition) as calls of
    ``compute_samples``: the samples both lack in one shared pass, those only one lacks alone (a
    loss-matched condition alone makes its draws without its reference's gradient)."""
    if len(plans) == 1:
        return [(plans[0], plans[0].todo, None)] if plans[0].todo else []
    reference, matched = plans
    lacking = set(matched.todo)
    both = [i for i in reference.todo if i in lacking]
    parts = [
        (reference, both, matched),
        (reference, [i for i in reference.todo if i not in lacking], None),
        (matched, [i for i in matched.todo if i not in set(both)], None),
    ]
    return [(plan, indices, rider) for plan, indices, rider in parts if indices]


def extract_together(
    loaded: models.LoadedModel,
    specs: Sequence[str],
    store: ResultsStore,
    *,
    settings: ExtractionSettings | None = None,
    data_dir=None,
    progress: bool = True,
    ids: Sequence[int] | None = None,
) -> list[ConditionSummary]:
    """``extract`` of one condition, or of a reference and its loss-matched condition in one pass
    (``shared_passes``): each condition's run locked, planned, written to the store as its own; a
    summary per condition."""
    settings = settings or ExtractionSettings()

    def planned() -> list[RunPlan]:
        return [
            plan_run(loaded.name, loaded.template, spec, store, settings=settings, data_dir=data_dir, ids=ids)
            for spec in specs
        ]

    with ExitStack() as locks:
        for first in planned():
            locks.enter_context(store.lock(first.key))
        plans = planned()
        parts = pass_parts(plans)
        shared = any(matched is not None for _, _, matched in parts)
        summaries = {}
        for plan in plans:
            check_same_data(store, plan)
            if ids is None:
                sample_draws.record(store.root, plan.identity["condition"], settings.n_samples, plan.drawn)
            summaries[plan.identity["condition"]] = ConditionSummary(
                loaded.name,
                plan.identity["condition"],
                plan.requested,
                plan.requested - len(plan.todo),
                sha256_ok=plan.resolved.sha256_ok,
                shared_pass=next((p.identity["condition"] for p in plans if p is not plan and shared), None),
            )
        if parts:
            writers = {plan.identity["condition"]: ShardWriter(store, plan.key, settings.shard_size) for plan in plans}
            compute_parts(
                loaded, parts, settings, data_dir=data_dir, writers=writers, summaries=summaries, progress=progress
            )
    return list(summaries.values())


def compute_parts(
    loaded: models.LoadedModel,
    parts: list[tuple[RunPlan, list[int], RunPlan | None]],
    settings: ExtractionSettings,
    *,
    data_dir,
    writers: dict[str, ShardWriter],
    summaries: dict[str, ConditionSummary],
    progress: bool,
) -> None:
    """Compute ``pass_parts``' work, each batch's rows and skips counted in its condition's summary
    and handed to its writer (every writer flushed at the end, however it ends); a batch's seconds
    split evenly between the conditions it computed."""
    samples = {index for _, indices, _ in parts for index in indices}
    label = " + ".join(summaries)
    bar = tqdm(
        total=len(samples), desc=f"{registry.model_slug(loaded.name)} {label}", unit="sample", disable=not progress
    )
    started = time.perf_counter()
    try:
        for plan, indices, matched in parts:
            for rows, skipped in compute_samples(loaded, plan, indices, settings, data_dir=data_dir, matched=matched):
                seconds, started = time.perf_counter() - started, time.perf_counter()
                done: set[int] = set()
                present = [c for c in summaries if c in conditions_of(rows, skipped)]
                for condition in present:
                    own_rows = None if rows is None else rows[rows["condition"] == condition]
                    own_rows = None if own_rows is None or own_rows.empty else own_rows
                    own_skips = [row for row in skipped if row["condition"] == condition]
                    held = summaries[condition].count(own_rows, own_skips)
                    summaries[condition].seconds += seconds / len(present)
                    writers[condition].add(own_rows, own_skips, held)
                    done.update(row["sample_index"] for row in own_skips)
                    done.update([] if own_rows is None else own_rows["sample_index"].unique().tolist())
                bar.update(len(done))
    finally:
        for writer in writers.values():
            writer.flush()
        bar.close()


def conditions_of(rows: pd.DataFrame | None, skipped: list[dict]) -> set[str]:
    """The conditions whose rows or skips one batch holds."""
    return {row["condition"] for row in skipped} | (set() if rows is None else set(rows["condition"].unique()))
