"""Extraction runs: data file(s) -> prompts -> per-sample gradient statistics -> results store.

``extract`` is what ``python -m analysis extract`` and the notebooks' batch runs call. It is
resumable: samples already in the store (or recorded as skipped) are not computed again, and
results are flushed to the store in parts as they are computed, so an interrupted run loses at
most the samples since its last flush. The samples are encoded and batched by
:mod:`analysis.extract.preparation`; a batch that runs out of memory is halved by
:mod:`analysis.extract.halving`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
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
from analysis.extract import batching, gradients, models
from analysis.extract.halving import OUT_OF_MEMORY, HalvingRetry
from analysis.extract.preparation import PreparedSample, batch_size_for, length_sorted_batches, prepare_samples
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

    @property
    def seconds_per_sample(self) -> float:
        return self.seconds / self.computed if self.computed else math.nan

    def as_record(self) -> dict:
        """What the run log keeps of it."""
        fields = ("model", "condition", "requested", "already_done", "computed", "skipped", "seconds")
        return {name: getattr(self, name) for name in fields}

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
    required = layer_stats.computed_columns(entry_stats=settings.entry_stats, token_energy=energy)
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
):
    """Yield (rows, skipped) for the given samples, one batch at a time, without touching the store.

    ``rows`` is a DataFrame in the store's schema (or None), ``skipped`` a list of skip rows.
    """
    max_length = plan.identity["max_length"]
    identity = {**plan.identity, "n_layers": loaded.n_layers}
    draws = plan.key.scored_subsets
    prepared, skips = prepare_samples(
        loaded, plan.resolved, indices, max_length, data_dir=data_dir, scored_subsets=draws
    )
    if skips:
        yield None, [skip_row(identity, index, reason) for index, reason in skips.items()]
    yield from compute_prepared(loaded, identity, prepared, settings)


def compute_prepared(
    loaded: models.LoadedModel,
    identity: dict,
    prepared: list[PreparedSample],
    settings: ExtractionSettings,
):
    """Yield (rows, failed) for encoded samples, one length-sorted batch at a time.

    ``identity`` labels the rows (as :func:`compute_samples` builds it); ``failed`` lists the
    samples whose numbers came out non-finite, or that did not fit in the device's memory even
    alone, as skip rows. ``settings.batch_size`` None: see :func:`batch_size_for`. On a GPU, batches are
    also planned to fit the memory the device reports free (:func:`memory_plan`), and a batch
    that runs out of memory anyway is computed again in halves (:class:`HalvingRetry`).
    """
    batch_size = batch_size_for(loaded.device, settings.batch_size)
    projections = gradients.attention_projections(loaded.model)
    pad_id = models.pad_token_id(loaded.tokenizer)
    plan = memory_plan(loaded, prepared)
    passes = settings.energy_passes(identity.get("condition", ""))
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
            if isinstance(outcome, str):
                failed.append(skip_row(identity, sample.index, outcome))
            elif outcome.failure:
                failed.append(skip_row(identity, sample.index, outcome.failure))
            else:
                frames.append(sample_rows(outcome, sample, identity, loaded.n_layers))
        yield (pd.concat(frames, ignore_index=True) if frames else None), failed


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
    settings = settings or ExtractionSettings()
    first_plan = plan_run(loaded.name, loaded.template, spec, store, settings=settings, data_dir=data_dir, ids=ids)
    with store.lock(first_plan.key):
        plan = plan_run(loaded.name, loaded.template, spec, store, settings=settings, data_dir=data_dir, ids=ids)
        check_same_data(store, plan)
        if ids is None:
            sample_draws.record(store.root, plan.identity["condition"], settings.n_samples, plan.drawn)
        summary = ConditionSummary(
            loaded.name,
            plan.identity["condition"],
            plan.requested,
            plan.requested - len(plan.todo),
            sha256_ok=plan.resolved.sha256_ok,
        )
        if not plan.todo:
            return summary
        started = time.perf_counter()
        writer = ShardWriter(store, plan.key, settings.shard_size)
        bar = tqdm(
            total=len(plan.todo),
            desc=f"{registry.model_slug(loaded.name)} {plan.identity['condition']}",
            unit="sample",
            disable=not progress,
        )
        try:
            for rows, skipped in compute_samples(loaded, plan, plan.todo, settings, data_dir=data_dir):
                samples = summary.count(rows, skipped)
                writer.add(rows, skipped, samples)
                bar.update(samples)
        finally:
            writer.flush()
            bar.close()
            summary.seconds = time.perf_counter() - started
    return summary
