"""The original study's released statistics, read into the results store instead of extracted.

The original script (``code_gradient/get_gradient_values.py`` of MingLiiii/Layer_Gradient) writes
one JSON Lines file per model and data file, ``grads_exp/<task>/<model>/grads_<stem>.jsonl``: one
object per finished sample with its ``instruction`` (input appended on a new line), ``output``,
``loss`` and, for every analysed parameter (``model.layers.3.self_attn.q_proj.weight``...), the
singular-value sum, maximum and minimum of its gradient (``S_sum``, ``S_max``, ``S_min``), its
Frobenius norm and the mean, maximum and minimum of its entries. This module maps each file to a
registry model and a study condition, each line to the sample of the study's data file with the
same instruction and output, and stores the numbers as rows of the results store, marked with
their origin. What the files do not hold (effective rank, cosine similarities, singular values)
stays missing; R, the number of response tokens, is counted from the line's text with the model's
tokenizer (``token_counts``: the tokenizer alone, never the weights) and stays missing, with the
reason reported per model, where the tokenizer cannot be loaded.

A file is read line by line and written to the store once, whole, after its last line; a second
import skips the files whose contents are already stored and adds only samples not stored yet; a
sample stored as skipped for non-finite values is imported from a later file that holds finite ones.
Lines that match no sample, repeated samples, a last line cut by a crash, lines that are not in the
format and non-finite values are counted per file and reported with their line numbers; none is
stored as numbers (a matched sample with non-finite values is recorded as skipped, with the reason).
Importing needs neither a GPU nor a model's weights.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from analysis import data
from analysis.core import layer_stats, registry
from analysis.core.settings import ORIGINAL_MAX_LENGTH
from analysis.core.vocabulary import PROJECTIONS
from analysis.data.records import Record, load_records
from analysis.extract import architectures
from analysis.extract.architectures import Architecture
from analysis.extract.original_report import FileReport, ImportResult, absent_files
from analysis.extract.original_sources import (
    ORIGIN,
    HashingLines,
    OriginalFile,
    is_archive,
    source_files,
    streamed,
)
from analysis.extract.token_counts import TokenCounter
from analysis.store import ResultsStore, RunKey, run_labels, runlog, skip_record
from analysis.store.store_errors import StoreError

# The file's statistic -> the store's column, and the columns the files do not hold (analysis.core.layer_stats).
FIELD_STATISTICS = {s.original: s.name for s in layer_stats.per_layer_original()}
ABSENT = layer_stats.absent_from_original()
NON_FINITE_REASON = f"non-finite values in the {ORIGIN}"  # how a skip record of the importer begins


# --------------------------------------------------------------------------- one file


def sample_lookup(records: Iterable[Record]) -> dict[tuple[str, str], list[int]]:
    """(instruction as the original script wrote it, output) -> sample indices, in file order."""
    lookup: dict[tuple[str, str], list[int]] = {}
    for index, record in enumerate(records):
        instruction = record.instruction + "\n" + record.input if record.input else record.instruction
        lookup.setdefault((instruction, record.output), []).append(index)
    return lookup


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@lru_cache(maxsize=8)
def parameter_names(n_layers: int, adapter: Architecture = architectures.DEFAULT) -> tuple[str, ...]:
    """The original's parameter names of every (layer, projection), layer-major (as the adapter of
    the file's model names them)."""
    return tuple(adapter.original_name(layer, proj) for layer in range(n_layers) for proj in PROJECTIONS)


def parse_statistics(
    item: dict, n_layers: int | None, *, adapter: Architecture = architectures.DEFAULT
) -> tuple[np.ndarray, float] | str:
    """(values of shape (layers, 4, 7) in FIELD_STATISTICS order, loss), or what is wrong with the record.

    ``n_layers`` None: as many layers as the record has (the first record of a file sets it).
    """
    wrong = _record_fields_wrong(item)
    if wrong:
        return wrong
    if n_layers is None:
        layers = [key[0] for name in item if (key := adapter.original_key(name))]
        if not layers:
            return f"no statistics of {adapter.original_name('<i>', '<q|k|v|o>')}"
        n_layers = 1 + max(layers)
    flat = _flat_statistics(item, parameter_names(n_layers, adapter))
    if isinstance(flat, str):
        return flat
    if adapter.original_name(n_layers, "q") in item:
        return f"statistics of layer {n_layers} and beyond, more than the {n_layers} layers of earlier lines"
    values = np.array(flat, dtype=float).reshape(n_layers, len(PROJECTIONS), len(FIELD_STATISTICS))
    return values, float(item["loss"])


def _record_fields_wrong(item) -> str:
    """What is wrong with a record's instruction, output and loss fields ("": nothing)."""
    if not isinstance(item, dict):
        return f"a JSON {type(item).__name__}, not an object"
    for name in ("instruction", "output"):
        if not isinstance(item.get(name), str):
            return f"no string field {name!r}"
    if not _number(item.get("loss")):
        return "no number field 'loss'"
    return ""


def _flat_statistics(item: dict, names: tuple[str, ...]) -> list | str:
    """The FIELD_STATISTICS of every parameter in ``names``, flat in that order, or what is wrong."""
    flat: list = []
    for name in names:
        stats = item.get(name)
        if not isinstance(stats, dict):
            return f"no statistics of {name}"
        try:
            flat.extend([stats[key] for key in FIELD_STATISTICS])
        except KeyError as error:
            return f"{name}: no field {error.args[0]!r}"
    if not set(map(type, flat)) <= {float, int}:
        position = next(i for i, value in enumerate(flat) if not _number(value))
        key = list(FIELD_STATISTICS)[position % len(FIELD_STATISTICS)]
        return f"{names[position // len(FIELD_STATISTICS)]}: field {key!r} is not a number"
    return flat


def non_finite(values: np.ndarray, loss: float) -> str | None:
    """Where the first non-finite number is, or None."""
    if not math.isfinite(loss):
        return f"loss is {loss}"
    bad = np.argwhere(~np.isfinite(values))
    if len(bad) == 0:
        return None
    layer, proj, stat = bad[0]
    return f"{list(FIELD_STATISTICS)[stat]} of layer {layer} {PROJECTIONS[proj]} is {values[layer, proj, stat]}"


@dataclass
class ParsedFile:
    """The samples of one file, ready to store."""

    indices: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)
    n_layers: int | None = None


@dataclass(frozen=True)
class Rejected:
    """A line of a file that holds no sample: its problem (kind and detail)."""

    problem: str
    detail: str = ""


@dataclass(frozen=True)
class Line:
    """A line of a file that holds a sample: its record and the record's statistics."""

    item: dict
    values: np.ndarray
    loss: float


def _stream_lines(handle: Iterable[bytes], on_bytes: Callable[[int], None]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, whether the line is cut: the last one, without its newline) of a binary stream."""
    previous: bytes | None = None
    number = 0
    for raw in handle:
        on_bytes(len(raw))
        if previous is not None:
            yield number, previous, False
        previous, number = raw, number + 1
    if previous is not None:
        yield number, previous, not previous.endswith(b"\n")


def _read_line(
    raw: bytes, *, unterminated: bool, n_layers: int | None, adapter: Architecture
) -> Line | Rejected | None:
    """One line parsed (None for a blank line); ``n_layers`` as :func:`parse_statistics` takes it."""
    if not raw.strip():
        return None
    try:
        item = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return Rejected("cut", "") if unterminated else Rejected("malformed", str(error))
    outcome = parse_statistics(item, n_layers, adapter=adapter)
    if isinstance(outcome, str):
        return Rejected("foreign", outcome)
    values, loss = outcome
    return Line(item=item, values=values, loss=loss)


def read_lines(
    handle: Iterable[bytes],
    report: FileReport,
    lookup,
    done: set[int],
    *,
    on_bytes: Callable[[int], None],
    adapter: Architecture = architectures.DEFAULT,
) -> ParsedFile:
    """Every line of one file (an open binary stream): matched samples, and problems counted in ``report``."""
    parsed = ParsedFile()
    taken: set[int] = set()
    for number, raw, unterminated in _stream_lines(handle, on_bytes):
        line = _read_line(raw, unterminated=unterminated, n_layers=parsed.n_layers, adapter=adapter)
        if line is None:
            continue
        report.lines += 1
        if isinstance(line, Rejected):
            report.count(line.problem, number, line.detail)
            continue
        if parsed.n_layers is None:
            parsed.n_layers = line.values.shape[0]
        candidates = lookup.get((line.item["instruction"], line.item["output"]))
        if not candidates:
            report.count("unmatched", number)
            continue
        index = next((i for i in candidates if i not in taken), None)
        if index is None:
            report.count("duplicate", number, f"sample {candidates[0]}")
            continue
        taken.add(index)
        if index in done:
            report.already_stored += 1
            continue
        problem = non_finite(line.values, line.loss)
        if problem is not None:
            report.count("non_finite", number, problem)
            parsed.skipped[index] = f"{NON_FINITE_REASON}: {problem} (line {number})"
            continue
        parsed.indices.append(index)
        parsed.losses.append(line.loss)
        parsed.values.append(line.values)
    return parsed


def store_rows(parsed: ParsedFile, identity: dict, tokens: list[int] | None = None) -> pd.DataFrame | None:
    """Long-format rows in the store's schema: one per (sample, layer, projection); ``tokens``: R of
    each sample (None: missing)."""
    if not parsed.indices:
        return None
    n, layers, n_proj = len(parsed.indices), parsed.n_layers, len(PROJECTIONS)
    assert layers is not None, "a file's first sample sets its layers"
    values = np.stack(parsed.values).reshape(n * layers * n_proj, len(FIELD_STATISTICS))
    per_sample = layers * n_proj
    frame = pd.DataFrame(
        {
            "sample_index": np.repeat(parsed.indices, per_sample),
            "layer": np.tile(np.repeat(np.arange(layers), n_proj), n),
            "proj": np.tile(np.array(PROJECTIONS, dtype=object), n * layers),
        }
    )
    for name, value in identity.items():
        frame[name] = value
    frame["n_layers"] = layers
    for s, column in enumerate(FIELD_STATISTICS.values()):
        frame[column] = values[:, s]
    for statistic in layer_stats.TABLE:
        if statistic.original is None and statistic.from_original is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                frame[statistic.name] = statistic.from_original(frame)
    for column in ABSENT:
        frame[column] = math.nan
    frame["loss"] = np.repeat(parsed.losses, per_sample)
    if tokens is not None:
        frame["n_response_tokens"] = np.repeat(np.asarray(tokens, dtype=np.int64), per_sample)
    return frame


def skipped_rows(parsed: ParsedFile, identity: dict) -> pd.DataFrame | None:
    """The skipped-samples rows of one file (matched samples with non-finite values)."""
    if not parsed.skipped:
        return None
    return pd.DataFrame([skip_record(identity, index, reason) for index, reason in sorted(parsed.skipped.items())])


@dataclass
class Target:
    """Where one file's rows go: the condition's data, the store's run and the rows' labels."""

    resolved: data.ResolvedData
    key: RunKey
    identity: dict


def target_for(model: str, template: str, condition: str, data_dir, *, relative: str, sha256: str) -> Target:
    """The run key and row labels of a model's statistics of a condition (as an extraction labels them)."""
    resolved = data.resolve(condition, data_dir)
    key, labels = run_labels(model, template, resolved, ORIGINAL_MAX_LENGTH)
    identity = {**labels, "origin": ORIGIN, "origin_file": relative, "origin_sha256": sha256}
    return Target(resolved, key, identity)


@dataclass(frozen=True)
class FileOptions:
    """How a file is imported: ``template`` (None: the model registry's), ``strict`` (nothing of a
    file with a rejected line) and ``counter``, the tokenizers that count R (None: none loaded, R
    missing)."""

    template: str | None = None
    strict: bool = False
    counter: TokenCounter | None = None


def import_file(
    store: ResultsStore,
    file: OriginalFile,
    data_dir=None,
    on_bytes: Callable[[int], None] = lambda n: None,
    *,
    options: FileOptions = FileOptions(),
    earlier: dict[str, dict] | None = None,
) -> FileReport:
    """Import one statistics file into the store; its rows appear whole or not at all.

    A sample stored before only as skipped (non-finite values) is imported when this file holds
    finite values for it; its skip record stays. ``earlier``: the run log's records by sha256 (see
    :func:`earlier_imports`), whose rejected lines a file already imported still counts.
    """
    template, strict, counter = options.template, options.strict, options.counter
    started = time.perf_counter()
    report = FileReport(file.relative, model=file.model, condition=file.condition)
    if file.problem is not None:
        report.skipped_file = file.problem
        return report
    model, condition = file.model, file.condition
    assert model is not None and condition is not None, "a file's place names both where it names no problem"
    size = file.byte_size()
    report.megabytes = size / 1e6
    report.sha256 = "" if file.once else file.sha256()  # a streamed archive member is hashed as it is read
    chosen = registry.resolve_template(model, template)
    target = target_for(model, chosen, condition, data_dir, relative=file.relative, sha256=report.sha256)
    with store.lock(target.key):
        if report.sha256 and _already_imported(store, target, report, on_bytes, size=size):
            return _recalled(report, earlier)
        records = load_records(target.resolved.path)
        lookup = sample_lookup(records)
        done = store.done_samples(target.key)
        repairable = done - store.done_samples(target.key, retry_reasons=(NON_FINITE_REASON,))
        adapter = architectures.for_model_name(model)
        with file.open() as stream:
            lines = HashingLines(stream) if file.once else stream
            parsed = read_lines(lines, report, lookup, done - repairable, on_bytes=on_bytes, adapter=adapter)
        if isinstance(lines, HashingLines):
            report.sha256 = target.identity["origin_sha256"] = lines.hexdigest()
            if _already_imported(store, target, report, lambda n: None, size=size):
                return _recalled(report, earlier)
        for index in repairable & parsed.skipped.keys():  # still non-finite: its skip record is stored
            del parsed.skipped[index]
        report.withheld = strict and report.rejected > 0
        if not report.withheld:
            tokens = _token_counts(counter, model, chosen, records, parsed=parsed, report=report)
            rows = store_rows(parsed, target.identity, tokens)
            store.write(target.key, rows, skipped_rows(parsed, target.identity))
    report.imported = 0 if report.withheld else len(parsed.indices)
    report.repaired = 0 if report.withheld else len(repairable.intersection(parsed.indices))
    report.layers = parsed.n_layers
    info = registry.known_model(model)
    if info is not None and info.layers and parsed.n_layers and parsed.n_layers != info.layers:
        report.note = f"{parsed.n_layers} layers in the file, but {model} has {info.layers}"
    report.seconds = time.perf_counter() - started
    return report


def _token_counts(counter, model: str, template: str, records, *, parsed: ParsedFile, report: FileReport):
    """R of the file's samples (``counter``), or None with the reason in ``report``."""
    if not parsed.indices:
        return None
    counts = (
        None
        if counter is None
        else counter.counts(model, template, records, indices=parsed.indices, max_length=ORIGINAL_MAX_LENGTH)
    )
    if counts is None:
        report.tokens_unknown = counter.problems.get(model, "unknown") if counter is not None else "no tokenizer"
    else:
        report.tokens_counted = len(counts)
    return counts


def earlier_imports(store: ResultsStore) -> dict[str, dict]:
    """The run log's record of each file imported into ``store`` before, by sha256."""
    records = {}
    for run in runlog.read(store.root):
        for record in run.imports:
            if record.get("sha256") and not record.get("already_imported") and not record.get("withheld"):
                records[record["sha256"]] = record
    return records


def _recalled(report: FileReport, earlier: dict[str, dict] | None) -> FileReport:
    """A file imported before keeps the rejected lines counted then (its exit status does not change)."""
    record = (earlier or {}).get(report.sha256)
    if record is not None:
        report.problems, report.first_line = dict(record["problems"]), dict(record["first_line"])
        report.lines, report.layers, report.note = record["lines"], record["layers"], record["note"]
    return report


def _already_imported(store: ResultsStore, target: Target, report: FileReport, on_bytes, *, size: int) -> bool:
    """Whether the store holds this file's contents already (same sha256); refuses another data file."""
    if report.sha256 in store.stored_values(target.key, "origin_sha256"):
        report.already_imported = True
        on_bytes(size)
        return True
    other = store.stored_values(target.key, "data_sha256") - {target.resolved.sha256}
    if other:
        raise StoreError(
            f"{store.run_dir('rows', target.key)}: the stored rows of {report.condition} come from a data file with "
            f"sha256 {sorted(other)[0][:12]}…, but {target.resolved.path} has sha256 {target.resolved.sha256[:12]}…; "
            "import into a different --out"
        )
    return False


# --------------------------------------------------------------------------- a source


def import_source(
    source: str,
    store: ResultsStore,
    data_dir=None,
    *,
    model: str | None = None,
    condition: str | None = None,
    template: str | None = None,
    models: Iterable[str] | None = None,
    conditions: Iterable[str] | None = None,
    progress: bool = True,
    cache_dir: object = None,
    on_file: Callable[[FileReport], None] = lambda report: None,
    strict: bool = False,
    counter: TokenCounter | None = None,
) -> ImportResult:
    """Import every file of ``source`` (see :func:`source_files`) one at a time, with a progress bar.

    ``model``/``condition`` (one of each, for a single file), ``models``/``conditions`` (those only;
    None: all), ``template`` (None: the model registry's), ``progress`` (a bar), ``cache_dir``
    (downloads), ``on_file`` (called with each file's report), ``strict`` (a file with a rejected line
    imports nothing, the others as usual) and ``counter`` (the tokenizers that count R; None: each
    model's from the hub, ``TokenCounter``)."""
    counter = TokenCounter() if counter is None else counter
    started = time.perf_counter()
    files: Iterable[OriginalFile] = source_files(
        source,
        model=model,
        condition=condition,
        models=models,
        conditions=conditions,
        cache_dir=cache_dir,
    )
    total = None
    if not streamed(source):  # plain local files: the bar knows their size; others come one by one
        files = list(files)
        total = sum(f.byte_size() for f in files if f.problem is None)
    earlier = earlier_imports(store)
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="import", disable=not progress)
    per_file = FileOptions(template, strict, counter)
    reports = []
    try:
        for file in files:
            report = import_file(store, file, data_dir, bar.update, options=per_file, earlier=earlier)
            reports.append(report)
            on_file(report)
    finally:
        bar.close()
    single = Path(source).is_file() and not is_archive(source)
    absent = {} if single else absent_files(reports, models, conditions)
    return ImportResult(reports, absent, time.perf_counter() - started, dict(counter.problems))
