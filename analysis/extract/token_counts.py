"""R, the number of response tokens of a sample, for rows that were imported rather than extracted.

The original study's released lines hold no token count, yet the split of a gap into averaging and the rest reads one per
sample. R is computed here from the sample's instruction and output text with the model's tokenizer
alone (never its weights), through the extraction's own functions (``prompts.prompt_text`` and
``prompts.encode``), so it is the count an extraction of the same sample stores. A model whose
tokenizer cannot be loaded (offline, a gated repository without a login) keeps R missing, and the
reason is reported per model. :func:`add_to_store` fills R into a store imported before: each part
file is rewritten whole under a temporary name and renamed into place, so a crash leaves every part
either as it was or complete.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from analysis import data
from analysis.core import registry
from analysis.data.data_errors import DataError
from analysis.data.records import Record, load_records
from analysis.extract import architectures, prompts
from analysis.store import ResultsStore, RunKey, store_files
from analysis.store.store_errors import StoreError

COLUMN = "n_response_tokens"
COMMAND = "python -m analysis add-token-counts"


def fill_command(store, models: Sequence[str] = ()) -> str:
    """The command that adds the token counts of ``models`` (all: none named) to ``store``."""
    named = "".join(f" --model {m}" for m in models)
    return f"{COMMAND} --store {store}{named}"


@dataclass
class TokenCounter:
    """Each model's tokenizer, loaded once (or why it cannot be); counts response tokens with it.

    ``folders``: model -> a local folder holding its tokenizer, used instead of the hub.
    ``enabled`` False: no tokenizer is loaded and every count is unknown (said so).
    """

    folders: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    loader: Callable | None = None  # (model, folder or None) -> tokenizer; default models.load_tokenizer
    tokenizers: dict[str, object] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    offline: str = ""  # why the hub could not be reached, once it could not (each try waits for its retries)
    offline_model: str = ""

    def tokenizer(self, model: str):
        """The model's tokenizer, or None (then :attr:`problems` says why)."""
        if model in self.tokenizers or model in self.problems:
            return self.tokenizers.get(model)
        if not self.enabled:
            self.problems[model] = "token counts not asked for (--no-token-counts)"
            return None
        from analysis.extract import models

        load = self.loader or models.load_tokenizer
        folder = self.folders.get(model)
        if folder is None and self.offline:  # the hub was not reached for an earlier model: not tried again
            self.problems[model] = self.offline.replace(repr(self.offline_model), repr(model))
            return None
        try:
            self.tokenizers[model] = load(model, folder)
        except registry.ModelError as error:
            self.problems[model] = str(error)
            if folder is None and models.HUB_UNREACHABLE in str(error):
                self.offline, self.offline_model = str(error), model
        return self.tokenizers.get(model)

    def counts(self, model: str, template: str, records: Sequence[Record], *, indices: Iterable[int], max_length: int):
        """R of each sample index (as the extraction counts it), or None when the tokenizer is unavailable."""
        tokenizer = self.tokenizer(model)
        if tokenizer is None:
            return None
        system = architectures.for_model_name(model).system_message
        out = []
        for index in indices:
            record = records[int(index)]
            instruction = prompts.instruction_text(record.instruction, record.input)
            try:
                prompt = prompts.prompt_text(tokenizer, instruction, template, system)
            except prompts.TemplateError as error:
                self.problems[model] = f"the tokenizer of {model}: {error}"
                self.tokenizers.pop(model)
                return None
            out.append(prompts.encode(tokenizer, prompt, record.output, max_length).n_response_tokens)
        return out


# --------------------------------------------------------------------------- an existing store


@dataclass
class ModelCounts:
    """What adding token counts did for one model: samples that got R, samples that could not, why."""

    model: str
    counted: int = 0
    unknown: int = 0
    already: int = 0  # samples stored with R before
    problem: str | None = None
    seconds: float = 0.0

    def line(self) -> str:
        why = f" ({self.problem})" if self.problem else ""
        before = f", {self.already} had it already" if self.already else ""
        return f"{self.model}: {self.counted} samples got R, {self.unknown} could not{why}{before}"

    def as_record(self) -> dict:
        return {
            "model": self.model,
            "counted": self.counted,
            "unknown": self.unknown,
            "already": self.already,
            "problem": self.problem,
        }


def _runs(store: ResultsStore) -> dict[RunKey, Path]:
    """Every run directory of stored rows by its key (read off its path under ``rows``)."""
    root = store.root / "rows"
    found: dict[RunKey, Path] = {}
    for directory in sorted({p.parent for p in root.rglob("part-*.parquet")}) if root.is_dir() else []:
        slug, dataset, setting, responses, run = directory.relative_to(root).parts
        length, template = run.removeprefix("ml").split("-", 1)
        blank = {"-": ""}
        key = RunKey(slug, dataset, blank.get(setting, setting), blank.get(responses, responses), int(length), template)
        found[key] = directory
    return found


def _rewrite(path: Path, table: pa.Table, counts: np.ndarray) -> None:
    """``table`` with its token counts replaced, written over ``path`` atomically."""
    column = pa.array(counts, type=pa.int64())
    names = table.column_names
    table = (
        table.set_column(names.index(COLUMN), COLUMN, column)
        if COLUMN in names
        else table.append_column(COLUMN, column)
    )
    temporary = path.with_name(f".part-{uuid.uuid4().hex[:12]}.tmp")
    pq.write_table(table, temporary)
    store_files._fsync_and_replace(temporary, path)  # the store's own atomic rename (fsync'd)


def add_to_store(
    store: ResultsStore, counter: TokenCounter, models: Sequence[str] | None = None, data_dir=None
) -> list[ModelCounts]:
    """R for every stored sample (of ``models``; None: all) that lacks it, one part file at a time."""
    wanted = None if not models else set(models)
    done: dict[str, ModelCounts] = {}
    for key, directory in _runs(store).items():
        first = sorted(directory.glob("part-*.parquet"))[0]
        labels = (
            store_files._reading(first, pq.read_table, columns=["model", "condition", "data_sha256"])
            .slice(0, 1)
            .to_pylist()[0]
        )
        model = labels["model"]
        if wanted is not None and not {model, registry.model_slug(model)} & wanted:
            continue
        report = done.setdefault(model, ModelCounts(model))
        started = time.perf_counter()
        with store.lock(key):  # no other process writes this run meanwhile
            _add_to_run(
                sorted(directory.glob("part-*.parquet")), key, labels, counter, report=report, data_dir=data_dir
            )
        report.seconds += time.perf_counter() - started
    if wanted is not None:
        missing = sorted(wanted - set(done) - {registry.model_slug(m) for m in done})
        if missing:
            raise StoreError(f"{store.root}: no stored rows of {', '.join(missing)}")
    return list(done.values())


def _add_to_run(parts: list[Path], key: RunKey, labels: dict, counter: TokenCounter, *, report: ModelCounts, data_dir):
    """The token counts of one run's parts that lack some, each part rewritten whole."""
    records = None
    for path in parts:
        table = store_files._reading(path, pq.read_table)  # a damaged part: named
        ids = np.asarray(table.column("sample_index").to_pylist(), dtype=int)
        if COLUMN in table.column_names:
            stored = np.asarray(table.column(COLUMN).to_numpy(zero_copy_only=False), dtype=float)
            if not np.isnan(stored).any():
                report.already += len(np.unique(ids))
                continue
        samples = np.unique(ids)
        if records is None:
            records, problem = _records(labels, data_dir)
            if problem:
                report.problem = problem
        counts = (
            None
            if records is None
            else counter.counts(report.model, key.template, records, indices=samples, max_length=key.max_length)
        )
        if counts is None:
            report.unknown += len(samples)
            report.problem = report.problem or counter.problems.get(report.model)
            continue
        by_id = dict(zip(samples.tolist(), counts))
        _rewrite(path, table, np.array([by_id[i] for i in ids.tolist()], dtype=np.int64))
        report.counted += len(samples)


def _records(labels: dict, data_dir) -> tuple[list[Record] | None, str | None]:
    """The records of a stored condition's study file, or why R cannot be counted from them."""
    condition = labels["condition"]
    try:
        resolved = data.resolve(condition, data_dir)
    except (DataError, KeyError) as error:
        return None, f"{condition}: {error}"
    if resolved.condition.length_reference is not None:
        return None, f"{condition}: a length-control condition (its responses are cut by token count)"
    if resolved.condition.answer is not None:
        return None, f"{condition}: an answer-scored condition (its extraction stores R, the answer's token count)"
    if resolved.condition.scored_reference is not None:
        return None, f"{condition}: a scored-subset condition (its extraction stores R, the subset's size)"
    if labels.get("data_sha256") and resolved.sha256 != labels["data_sha256"]:
        return None, f"{resolved.path} is not the data file the rows of {condition} were stored from (sha256 differs)"
    return load_records(resolved.path), None
