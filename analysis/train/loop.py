"""Supervised fine-tuning of one model on one study condition, with probes at checkpoints.

The samples are encoded exactly as the extraction encodes them (``preparation.prepare_samples``: the
same templates, ``max_length`` and, for a length-control arm, the same response caps), and the
loss is the extraction's (``gradients.per_sample_losses``: response tokens only, each sample's
mean), averaged over the batch. Every weight is trained with AdamW. The probe instructions are
the first ``n_probes`` of the dataset's seeded random order (``sample_draws.dataset_sample_ids``, what an
extraction of ``n_probes`` samples takes); the training instructions are a seeded draw of ``n_train``
from the rest of the dataset (the pool: never a probe), one draw per seed and shared by the arms of
that seed, so the seeds replicate the training set as well as the order of the batches while the
arms of a seed stay paired. The samples of step ``s`` are a function of the seed and ``s`` alone
(seeded permutations of the seed's training set, one per pass over it), so a resumed run sees the
same batches. At each checkpoint step the probe statistics are extracted by ``runner.extract`` on the
model as it is, into the results store under :meth:`TrainingRunId.probe_model`; the weight change
and the losses are written to the run's tables; then the checkpoint is saved.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from analysis import data
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings, TrainingSettings
from analysis.data import sample_draws
from analysis.data.records import load_records
from analysis.extract import gradients, models, preparation, runner
from analysis.store import ResultsStore
from analysis.train import checkpoint, run_tables, weights
from analysis.train.naming import RUNS_FOLDER, TrainingRunId


@dataclass
class TrainingSummary:
    """What one call of :func:`train` did."""

    run: str
    condition: str
    steps: int
    resumed_from: int | None
    steps_computed: int = 0
    train_samples: int = 0
    skipped_train_samples: dict[int, str] = field(default_factory=dict)
    probes: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def as_record(self) -> dict:
        """What the run log keeps of it."""
        record = {name: getattr(self, name) for name in ("run", "condition", "steps", "resumed_from")}
        record.update(steps_computed=self.steps_computed, train_samples=self.train_samples, seconds=self.seconds)
        record["skipped_train_samples"] = len(self.skipped_train_samples)
        return record


def split_instructions(
    dataset: str, count: int, n_probes: int, n_train: int, *, seed: int, data_dir=None
) -> tuple[list[int], list[int]]:
    """(probe ids, training ids of ``seed``), disjoint, each sorted.

    The probes are the first ``n_probes`` records of the order the extraction draws a study
    dataset's samples in (``sample_draws.dataset_sample_ids``: seeded, None-CoT pairs whose irrelevant
    response equals the correct one last), the same for every seed. The training instructions are
    ``n_train`` records drawn without replacement from the others (the pool), by a generator
    seeded by the dataset and ``seed`` alone: each seed trains on its own instructions, and every
    arm of a seed on the same ones."""
    if n_probes + n_train > count:
        raise StudyError(
            f"{dataset}: {n_probes} probe and {n_train} training instructions asked for, but its files hold {count}"
        )
    order = sample_draws.sample_order(dataset, count, excluded=data.identical_response_ids(dataset, "none", data_dir))
    probes = sample_draws.dataset_sample_ids(dataset, count, n_probes, directory=data_dir)
    assert probes == sorted(int(i) for i in order[:n_probes])  # the extraction's sample of n_probes
    pool = np.sort(order[n_probes:])
    rng = np.random.default_rng([sample_draws.SAMPLE_SEED, int(seed), zlib.crc32(f"{dataset}/train".encode())])
    return probes, sorted(int(i) for i in rng.choice(pool, size=n_train, replace=False))


@lru_cache(maxsize=64)
def _epoch_order(n: int, seed: int, epoch: int) -> tuple[int, ...]:
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return tuple(torch.randperm(n, generator=generator).tolist())


def batch_positions(n: int, batch_size: int, seed: int, step: int) -> list[int]:
    """Positions in the training set of the samples of ``step`` (1-based): consecutive slices of
    seeded permutations, one permutation per pass over the set."""
    positions = []
    for offset in range((step - 1) * batch_size, step * batch_size):
        epoch, within = divmod(offset, n)
        positions.append(_epoch_order(n, seed, epoch)[within])
    return positions


@contextmanager
def trainable(model: torch.nn.Module) -> Iterator[None]:
    """Every weight requires grad and the model is in training mode; frozen and eval afterwards."""
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    model.train()
    try:
        yield
    finally:
        model.eval()
        for parameter in model.parameters():
            parameter.requires_grad_(False)
            parameter.grad = None


@contextmanager
def frozen(model: torch.nn.Module) -> Iterator[None]:
    """The model as the extraction expects it (frozen, eval mode) for the probes, then as it was."""
    was_training = model.training
    flags = [parameter.requires_grad for parameter in model.parameters()]
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter, flag in zip(model.parameters(), flags):
            parameter.requires_grad_(flag)
        model.train(was_training)


def train_step(
    loaded: models.LoadedModel, optimizer: torch.optim.Optimizer, samples: list[preparation.PreparedSample], pad_id: int
) -> tuple[float, int]:
    """One AdamW step on a batch; (the batch's loss before the step, its response tokens)."""
    batch = gradients.make_batch(
        [s.encoded.input_ids for s in samples], [s.encoded.prompt_length for s in samples], pad_id, loaded.device
    )
    loss = gradients.per_sample_losses(loaded.model, batch, train_embeddings=True).mean()
    if not torch.isfinite(loss):
        raise StudyError(f"non-finite training loss ({loss.item()}) on samples {[s.index for s in samples]}")
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss.item()), sum(s.encoded.n_response_tokens for s in samples)


def make_optimizer(model: torch.nn.Module, settings: TrainingSettings) -> torch.optim.Optimizer:
    """AdamW over every weight (default betas and eps; the settings' rate and weight decay)."""
    return torch.optim.AdamW(
        list(model.parameters()), lr=settings.learning_rate, weight_decay=settings.weight_decay, foreach=False
    )


def checkpoint_steps(settings: TrainingSettings) -> list[int]:
    """The checkpoint steps within the run, step 0 and the last step always among them."""
    return sorted({0, settings.steps, *(s for s in settings.checkpoints if 0 <= s <= settings.steps)})


def probe_conditions(settings: TrainingSettings) -> list[str]:
    """The conditions probed at each checkpoint: each probe setting of the dataset."""
    return [f"{settings.dataset}/{setting}/{settings.responses}" for setting in settings.probe_settings]


def run_about(
    run: TrainingRunId, settings: TrainingSettings, extraction: ExtractionSettings, loaded, *, train_ids: list[int]
) -> dict:
    """What a checkpoint (or a finished run) must agree on to be continued (or reused): the run,
    its settings and the instructions it trains on."""
    kept = ("n_probes", "n_train", "steps", "batch_size", "learning_rate", "weight_decay", "checkpoints")
    return {
        "model": run.model,
        "run": run.run,
        "condition": run.condition,
        "template": loaded.template,
        "max_length": extraction.max_length,
        **{name: settings.as_dict()[name] for name in kept},
        "probe_settings": list(settings.probe_settings),
        "train_ids": [int(i) for i in train_ids],
    }


def run_directory(results_dir: Path, run: TrainingRunId) -> Path:
    return Path(results_dir) / RUNS_FOLDER / run.folder()


def train(
    loaded: models.LoadedModel,
    run: TrainingRunId,
    results_dir: str | Path,
    *,
    settings: TrainingSettings | None = None,
    extraction: ExtractionSettings | None = None,
    data_dir=None,
    progress: bool = True,
    keep_checkpoint: bool = False,
    start_from: TrainingRunId | None = None,
) -> TrainingSummary:
    """Fine-tune ``loaded`` on ``run.condition`` (see the module docstring); resumable.

    ``loaded`` must hold the weights the run starts from when the run has no checkpoint yet; it is left
    trained (frozen, eval mode). A finished run (``done.json``) is not computed again. ``progress``: a
    progress bar. ``keep_checkpoint`` keeps the last checkpoint of a finished run (else it is removed: it
    holds the model and AdamW's two moments, three times the model's size). ``start_from``: a run of the
    same model from the same released weights whose step-0 probes are stored (copied, not computed again).
    """
    settings = settings or TrainingSettings()
    extraction = (extraction or ExtractionSettings()).but(n_samples=settings.n_probes)
    run_dir = run_directory(Path(results_dir), run)
    started = time.perf_counter()
    resolved = data.resolve(run.condition, data_dir)
    count = len(load_records(resolved.path))
    _, train_ids = split_instructions(
        run.dataset, count, settings.n_probes, settings.n_train, seed=run.seed, data_dir=data_dir
    )
    about = run_about(run, settings, extraction, loaded, train_ids=train_ids)
    done = run_dir / run_tables.DONE
    if done.is_file():
        return finished(done, about)
    samples, skipped = _training_samples(
        loaded, resolved, train_ids, run=run, settings=settings, extraction=extraction, data_dir=data_dir
    )
    summary = TrainingSummary(run.run, run.condition, settings.steps, None, 0, len(samples), skipped)
    with trainable(loaded.model):
        optimizer, start = _resume(loaded, run, run_dir, settings, about=about, summary=summary)
        context = RunContext(
            loaded,
            run,
            settings,
            extraction,
            ResultsStore(results_dir),
            run_dir,
            optimizer,
            _initial_weights(run_dir),
            about,
            data_dir,
            start_from,
            keep_checkpoint,
        )
        if summary.resumed_from is None:  # a fresh run: its step-0 probes
            context.checkpoint(0, [])
        _steps(context, samples, start, summary, progress=progress)
    summary.seconds = time.perf_counter() - started
    _mark_done(done, summary, about)
    _remove_checkpoints(run_dir, f"{checkpoint.PREFIX}{settings.steps:06d}" if keep_checkpoint else None)
    return summary


def _training_samples(
    loaded: models.LoadedModel,
    resolved: data.ResolvedData,
    train_ids,
    *,
    run: TrainingRunId,
    settings: TrainingSettings,
    extraction: ExtractionSettings,
    data_dir,
) -> tuple[list[preparation.PreparedSample], dict[int, str]]:
    """The prepared training samples and the skipped ones; a StudyError if they make no batch."""
    samples, skipped = preparation.prepare_samples(
        loaded, resolved, train_ids, extraction.max_length, data_dir=data_dir
    )
    if len(samples) < settings.batch_size:
        raise StudyError(
            f"{run.condition}: {len(samples)} training samples keep a response within max_length "
            f"{extraction.max_length}, fewer than a batch of {settings.batch_size}"
        )
    return samples, skipped


def _resume(
    loaded: models.LoadedModel,
    run: TrainingRunId,
    run_dir: Path,
    settings: TrainingSettings,
    *,
    about: dict,
    summary: TrainingSummary,
) -> tuple[torch.optim.Optimizer, int]:
    """The optimizer and the step the run goes on from: its last checkpoint restored, or step 0
    (seeded, the initial projection weights saved)."""
    optimizer = make_optimizer(loaded.model, settings)
    last = checkpoint.latest(run_dir)
    if last is None:
        torch.manual_seed(run.seed)
        checkpoint.save_initial(run_dir, weights.projection_weights(loaded.model))
        return optimizer, 0
    checkpoint.restore(last, loaded.model, optimizer, about)
    summary.resumed_from = last.step
    return optimizer, last.step


def _initial_weights(run_dir: Path) -> dict[str, torch.Tensor]:
    """Step 0's projection weights, which ``_resume`` saves before any checkpoint."""
    initial = checkpoint.load_initial(run_dir)
    if initial is None:  # only a run folder changed by hand lacks them
        raise StudyError(
            f"{run_dir}: a checkpoint without the step-0 weights ({checkpoint.INITIAL}); "
            "remove the folder (and its probe rows) to train the run again"
        )
    return initial


def _remove_checkpoints(run_dir: Path, kept: str | None) -> None:
    """A finished run's checkpoints removed, but for the one named ``kept``."""
    for folder in run_dir.glob(f"{checkpoint.PREFIX}*"):
        if folder.name != kept:
            shutil.rmtree(folder, ignore_errors=True)


def _mark_done(done: Path, summary: TrainingSummary, about: dict) -> None:
    """``done.json`` written whole or not at all: a run is marked done only once its tables are written."""
    kept = {k: v for k, v in summary.__dict__.items() if k != "steps_computed"}
    record = json.dumps({**kept, "about": about}, default=str)
    staging = done.with_name(f".{done.name}.tmp")
    staging.write_text(record)
    os.replace(staging, done)


def finished(done: Path, about: dict) -> TrainingSummary:
    """The summary of a finished run, if it was made with these settings (else a StudyError)."""
    record = json.loads(done.read_text())
    recorded = record.pop("about", None)
    if recorded != json.loads(json.dumps(about)):
        raise StudyError(
            f"{done.parent}: this run was finished with other settings ({recorded}); use another --out, "
            "or remove its folder (and its probe rows) to train it again"
        )
    return TrainingSummary(**{**record, "steps_computed": 0})


@dataclass
class RunContext:
    """What one run's checkpoints need."""

    loaded: models.LoadedModel
    run: TrainingRunId
    settings: TrainingSettings
    extraction: ExtractionSettings
    store: ResultsStore
    run_dir: Path
    optimizer: torch.optim.Optimizer
    initial: dict[str, torch.Tensor]
    about: dict
    data_dir: object = None
    start_from: TrainingRunId | None = None  # a run of the same model whose step-0 probes are stored
    keep_checkpoint: bool = False

    def identity(self) -> dict:
        run = self.run
        return {
            "model": run.model,
            "run": run.run,
            "dataset": run.dataset,
            "arm": run.arm,
            "responses": run.responses,
            "seed": run.seed,
            "condition": run.condition,
        }

    def checkpoint(self, step: int, losses: list[dict]) -> list[dict]:
        """Probes, weight change and losses of ``step``, then the checkpoint; the probe records."""
        records = self.probe(step)
        change = weights.change_rows(self.loaded.model, self.initial, step, self.identity())
        run_tables.write_part(self.run_dir, run_tables.WEIGHT_CHANGE, change, first=step, last=step)
        if losses:
            frame = pd.DataFrame(losses)
            run_tables.write_part(self.run_dir, run_tables.LOSSES, frame, first=int(frame["step"].min()), last=step)
        # Step 0 is the released weights with a fresh optimiser, which a restart recreates; after
        # the last step the run is done. Neither needs a checkpoint to continue from (the last one
        # is kept when asked for).
        if 0 < step < self.settings.steps or (step == self.settings.steps and self.keep_checkpoint):
            checkpoint.save(self.run_dir, step, self.loaded.model, self.optimizer, about=self.about)
        return records

    def probe(self, step: int) -> list[dict]:
        """The probe statistics of the model as it is at ``step``, by the extraction itself.

        At step 0 the model holds the released weights, the same for every run of the model: the
        rows of ``start_from`` (another run's step 0, complete in the store) are copied instead of
        computed again.
        """
        named = replace(self.loaded, name=self.run.probe_model(step))
        records = []
        with frozen(self.loaded.model):
            for spec in probe_conditions(self.settings):
                if step == 0 and self.start_from is not None and self._copy_start(self.start_from, spec):
                    continue
                summary = runner.extract(
                    named, spec, self.store, settings=self.extraction, data_dir=self.data_dir, progress=False
                )
                records.append(summary.as_record())
        return records

    def _copy_start(self, start_from: TrainingRunId, spec: str) -> bool:
        """Copy ``start_from``'s step-0 rows of ``spec`` to this run; False if they are incomplete."""
        source = start_from.probe_model(0)
        template = self.loaded.template
        plan = runner.plan_run(source, template, spec, self.store, settings=self.extraction, data_dir=self.data_dir)
        if plan.todo:
            return False
        target = runner.plan_run(
            self.run.probe_model(0), template, spec, self.store, settings=self.extraction, data_dir=self.data_dir
        )
        if not target.todo:
            return True
        with self.store.lock(target.key):
            for kind in ("rows", "skipped"):
                frame = self.store.read(
                    kind, filters=[("model", "==", source), ("condition", "==", plan.identity["condition"])]
                )
                if not frame.empty:
                    frame = frame.assign(model=self.run.probe_model(0))
                    self.store.write(
                        target.key, frame if kind == "rows" else None, frame if kind == "skipped" else None
                    )
        return True


def _steps(context: RunContext, samples, start: int, summary: TrainingSummary, *, progress: bool) -> None:
    settings, run = context.settings, context.run
    pad_id = models.pad_token_id(context.loaded.tokenizer)
    marks = set(checkpoint_steps(settings))
    pending: list[dict] = []
    bar = tqdm(total=settings.steps, initial=start, desc=run.run, unit="step", disable=not progress)
    for step in range(start + 1, settings.steps + 1):
        chosen = [samples[i] for i in batch_positions(len(samples), settings.batch_size, run.seed, step)]
        loss, tokens = train_step(context.loaded, context.optimizer, chosen, pad_id)
        pending.append({**context.identity(), "step": step, "loss": loss, "n_response_tokens": tokens})
        summary.steps_computed += 1
        bar.update(1)
        if step in marks:
            summary.probes += context.checkpoint(step, pending)
            pending = []
    bar.close()
