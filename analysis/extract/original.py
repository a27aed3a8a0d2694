"""The original study's released statistics, read into the results store instead of extracted.

The original script (``code_gradient/get_gradient_values.py`` of MingLiiii/Layer_Gradient) writes
one JSON Lines file per model and data file, ``grads_exp/<task>/<model>/grads_<stem>.jsonl``: one
object per finished sample with its ``instruction`` (input appended on a new line), ``output``,
``loss`` and, for every analysed parameter (``model.layers.3.self_attn.q_proj.weight``...), the
singular-value sum, maximum and minimum of its gradient (``S_sum``, ``S_max``, ``S_min``), its
Frobenius norm and the mean, maximum and minimum of its entries. This module maps each file to a
registry model and a study condition, each line to the sample of the study's data file with the
same instruction and output, and stores the numbers as rows of the results store, marked with
their origin. What the files do not hold (effective rank, cosine similarities, singular values,
token counts) stays missing.

A file is read line by line and written to the store once, whole, after its last line; a second
import skips the files whose contents are already stored and adds only samples not stored yet.
Lines that match no sample, repeated samples, a last line cut by a crash, lines that are not in the
format and non-finite values are counted per file and reported with their line numbers; none is
stored as numbers (a matched sample with non-finite values is recorded as skipped, with the reason).
No torch here: importing needs neither a GPU nor a model.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from analysis import data, layer_stats, registry
from analysis.errors import StudyError
from analysis.extract import architectures
from analysis.extract.architectures import Architecture
from analysis.settings import ORIGINAL_MAX_LENGTH
from analysis.store import ResultsStore, RunKey, StoreError, run_labels, skip_record
from analysis.vocabulary import PROJECTIONS

ORIGIN = "original study's statistics"
HUB_PREFIX = "hf://datasets/"
HUB_DATASET = "MingLiiii/Layer_Gradient"
# The file's statistic -> the store's column, and the columns the files do not hold (analysis.layer_stats).
STATISTICS = {s.original: s.name for s in layer_stats.per_layer_original()}
ABSENT = layer_stats.absent_from_original()
_FILE = re.compile(r"^grads_(.+)\.jsonl$")
PROBLEMS = {
    "unmatched": "matches no sample of the data file (instruction and output)",
    "duplicate": "repeats a sample already read from this file",
    "cut": "cut last line (the file ends inside a record)",
    "malformed": "not a JSON line",
    "foreign": "not a record of the original format",
    "non_finite": "non-finite values (stored as skipped, not as numbers)",
}


class OriginalFormatError(StudyError, ValueError):
    """A file or a request that the importer cannot map to the study."""


# --------------------------------------------------------------------------- names


def _task_folders() -> dict[tuple[str, str], str]:
    """(task folder, data file stem) -> condition key, from the study's registry."""
    table = {}
    for condition in data.study_conditions():
        path = PurePosixPath(condition.relative_path)
        table[(path.parent.name, path.stem)] = condition.key
    return table


TASK_FILES = _task_folders()
TASKS = tuple(sorted({task for task, _ in TASK_FILES}))


def condition_for(task: str, stem: str) -> str | None:
    """The study condition of ``grads_<stem>.jsonl`` in the task folder ``task``, else None."""
    return TASK_FILES.get((task, stem))


def original_path(model_folder: str, condition: str) -> str:
    """Where the original script writes a model's statistics of a condition, relative to ``grads_exp``."""
    relative = PurePosixPath(data.get_condition(condition).relative_path)
    return f"{relative.parent}/{model_folder}/grads_{relative.stem}.jsonl"


def model_for(name: str) -> str:
    """The registry name of a model given by its original folder name or registry id; else ``name``."""
    return registry.original_folder_model(name) or name


def folder_for(model: str) -> str:
    """The original folder name of a registry model (or the name itself when it has none)."""
    info = registry.known_model(model)
    return info.original_folder if info is not None and info.original_folder else model


@dataclass(frozen=True)
class OriginalFile:
    """One statistics file, with the model and condition its place in the tree names."""

    path: Path
    relative: str  # as the source names it (under its root, or in the hub dataset)
    model: str | None
    condition: str | None
    problem: str | None = None  # why the file cannot be imported (unknown folder or file name)


def describe_place(relative: str) -> tuple[str | None, str | None, str | None]:
    """(model, condition, problem) of a path ending in ``<task>/<model>/grads_<stem>.jsonl``."""
    parts = PurePosixPath(relative).parts
    match = _FILE.match(parts[-1])
    if match is None or len(parts) < 3:
        return None, None, "not a statistics file (expected <task>/<model>/grads_<data file stem>.jsonl)"
    task, folder, stem = parts[-3], parts[-2], match.group(1)
    condition = condition_for(task, stem)
    model = registry.original_folder_model(folder)
    if condition is None:
        known = ", ".join(TASKS)
        return model, None, f"unknown task folder or data file {task}/{stem} (tasks: {known})"
    if model is None:
        known = ", ".join(info.original_folder for info in registry.PAPER_MODELS.values())
        return None, condition, f"unknown model folder {folder!r} (known: {known})"
    return model, condition, None


def find_files(root: Path) -> list[OriginalFile]:
    """Every ``grads_*.jsonl`` under ``root``, in path order, with its model and condition."""
    found = []
    for path in sorted(Path(root).rglob("grads_*.jsonl")):
        relative = path.relative_to(root).as_posix()
        model, condition, problem = describe_place(relative)
        found.append(OriginalFile(path, relative, model, condition, problem))
    return found


def wanted(file: OriginalFile, models: set[str] | None, conditions: set[str] | None) -> bool:
    """Whether a file is among the models and conditions asked for (None: all)."""
    if models is not None and file.model not in models:
        return False
    return conditions is None or file.condition in conditions


# --------------------------------------------------------------------------- the hub


def hub_dataset(source: str) -> str | None:
    """The dataset id of ``hf://datasets/<owner>/<name>``, else None."""
    if not source.startswith(HUB_PREFIX):
        return None
    repo = source[len(HUB_PREFIX) :].strip("/")
    if repo.count("/") != 1:
        raise OriginalFormatError(f"{source}: expected hf://datasets/<owner>/<name>, e.g. {HUB_PREFIX}{HUB_DATASET}")
    return repo


def hub_files(
    repo: str,
    models: set[str] | None,
    conditions: set[str] | None,
    cache_dir=None,
    revision: str | None = None,
) -> Iterator[OriginalFile]:
    """The dataset's statistics files that were asked for, each downloaded when its turn comes.

    Only the listing and the chosen files are fetched (huggingface_hub keeps them in its cache, so
    an interrupted import downloads nothing twice).
    """
    from huggingface_hub import HfApi, hf_hub_download

    try:
        names = HfApi().list_repo_files(repo, repo_type="dataset", revision=revision)
    except Exception as error:  # noqa: BLE001 - the hub client's errors (network, missing repo) in one line
        raise OriginalFormatError(f"{HUB_PREFIX}{repo}: cannot list the dataset's files ({error})") from None
    for name in sorted(n for n in names if n.endswith(".jsonl")):
        model, condition, problem = describe_place(name)
        placed = OriginalFile(Path(name), name, model, condition, problem)
        if problem is None and not wanted(placed, models, conditions):
            continue
        if problem is not None:
            yield placed
            continue
        try:
            local = hf_hub_download(repo, name, repo_type="dataset", revision=revision, cache_dir=cache_dir)
        except Exception as error:  # noqa: BLE001
            raise OriginalFormatError(f"{HUB_PREFIX}{repo}/{name}: cannot download ({error})") from None
        yield OriginalFile(Path(local), f"{HUB_PREFIX}{repo}/{name}", model, condition)


# --------------------------------------------------------------------------- one file


@dataclass
class FileReport:
    """What importing one file did: counts, and the first line of each problem."""

    file: str
    sha256: str = ""
    model: str | None = None
    condition: str | None = None
    lines: int = 0
    imported: int = 0
    already_stored: int = 0
    problems: dict[str, int] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)
    detail: dict[str, str] = field(default_factory=dict)
    skipped_file: str | None = None  # why the whole file was not imported
    already_imported: bool = False  # its contents (same sha256) are in the store already
    layers: int | None = None
    note: str | None = None  # e.g. a layer count other than the registry's for this model
    megabytes: float = 0.0
    seconds: float = 0.0

    def count(self, kind: str, line: int, detail: str = "") -> None:
        self.problems[kind] = self.problems.get(kind, 0) + 1
        if kind not in self.first_line:
            self.first_line[kind] = line
            if detail:
                self.detail[kind] = detail

    def problem_lines(self) -> list[str]:
        """One line per kind of problem: file, first line, what is wrong, how many lines."""
        if self.skipped_file:
            return [f"{self.file}: not imported: {self.skipped_file}"]
        out = [f"{self.file}: note: {self.note}"] if self.note else []
        for kind, n in self.problems.items():
            extra = f" ({self.detail[kind]})" if kind in self.detail else ""
            out.append(
                f"{self.file}: line {self.first_line[kind]}: {PROBLEMS[kind]}{extra}; "
                f"{n} such line{'s' if n > 1 else ''} in this file"
            )
        return out

    def summary(self) -> str:
        """One line: where the file went and how many samples it gave."""
        if self.skipped_file:
            return f"{self.file}: not imported"
        if self.already_imported:
            return f"{self.file} -> {self.model} {self.condition}: already imported (sha256 {self.sha256[:12]})"
        return (
            f"{self.file} -> {self.model} {self.condition}: {self.imported} imported, "
            f"{self.already_stored} already stored, {sum(self.problems.values())} lines not stored"
        )

    def as_record(self) -> dict:
        """The run log's record of this file."""
        return {
            "file": self.file,
            "sha256": self.sha256,
            "origin": ORIGIN,
            "model": self.model,
            "condition": self.condition,
            "lines": self.lines,
            "imported": self.imported,
            "already_stored": self.already_stored,
            "problems": dict(self.problems),
            "first_line": dict(self.first_line),
            "not_imported": self.skipped_file,
            "already_imported": self.already_imported,
            "layers": self.layers,
            "note": self.note,
            "megabytes": round(self.megabytes, 3),
            "seconds": round(self.seconds, 3),
        }


def sample_lookup(records: Iterable[data.Record]) -> dict[tuple[str, str], list[int]]:
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
    """(values of shape (layers, 4, 7) in STATISTICS order, loss), or what is wrong with the record.

    ``n_layers`` None: as many layers as the record has (the first record of a file sets it).
    """
    if not isinstance(item, dict):
        return f"a JSON {type(item).__name__}, not an object"
    for name in ("instruction", "output"):
        if not isinstance(item.get(name), str):
            return f"no string field {name!r}"
    if not _number(item.get("loss")):
        return "no number field 'loss'"
    if n_layers is None:
        layers = [key[0] for name in item if (key := adapter.original_key(name))]
        if not layers:
            return f"no statistics of {adapter.original_name('<i>', '<q|k|v|o>')}"
        n_layers = 1 + max(layers)
    flat: list = []
    for name in parameter_names(n_layers, adapter):
        stats = item.get(name)
        if not isinstance(stats, dict):
            return f"no statistics of {name}"
        try:
            flat.extend([stats[key] for key in STATISTICS])
        except KeyError as error:
            return f"{name}: no field {error.args[0]!r}"
    if not set(map(type, flat)) <= {float, int}:
        position = next(i for i, value in enumerate(flat) if not _number(value))
        name = parameter_names(n_layers, adapter)[position // len(STATISTICS)]
        key = list(STATISTICS)[position % len(STATISTICS)]
        return f"{name}: field {key!r} is not a number"
    if adapter.original_name(n_layers, "q") in item:
        return f"statistics of layer {n_layers} and beyond, more than the {n_layers} layers of earlier lines"
    values = np.array(flat, dtype=float).reshape(n_layers, len(PROJECTIONS), len(STATISTICS))
    return values, float(item["loss"])


def non_finite(values: np.ndarray, loss: float) -> str | None:
    """Where the first non-finite number is, or None."""
    if not math.isfinite(loss):
        return f"loss is {loss}"
    bad = np.argwhere(~np.isfinite(values))
    if len(bad) == 0:
        return None
    layer, proj, stat = bad[0]
    return f"{list(STATISTICS)[stat]} of layer {layer} {PROJECTIONS[proj]} is {values[layer, proj, stat]}"


@dataclass
class ParsedFile:
    """The samples of one file, ready to store."""

    indices: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)
    n_layers: int | None = None


@dataclass(frozen=True)
class Line:
    """What one line of a file holds: a problem (its kind and detail), or a record's statistics."""

    problem: str | None = None
    detail: str = ""
    item: dict | None = None
    values: np.ndarray | None = None
    loss: float = math.nan


def _file_lines(path: Path, on_bytes: Callable[[int], None]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, whether the line is cut: the last one, without its newline) of a file."""
    with open(path, "rb") as handle:
        previous: bytes | None = None
        number = 0
        for raw in handle:
            on_bytes(len(raw))
            if previous is not None:
                yield number, previous, False
            previous, number = raw, number + 1
        if previous is not None:
            yield number, previous, not previous.endswith(b"\n")


def _read_line(raw: bytes, *, unterminated: bool, n_layers: int | None, adapter: Architecture) -> Line | None:
    """One line parsed (None for a blank line); ``n_layers`` as :func:`parse_statistics` takes it."""
    if not raw.strip():
        return None
    try:
        item = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return Line("cut", "") if unterminated else Line("malformed", str(error))
    outcome = parse_statistics(item, n_layers, adapter=adapter)
    if isinstance(outcome, str):
        return Line("foreign", outcome)
    values, loss = outcome
    return Line(item=item, values=values, loss=loss)


def read_lines(
    path: Path,
    report: FileReport,
    lookup,
    done: set[int],
    on_bytes: Callable[[int], None],
    *,
    adapter: Architecture = architectures.DEFAULT,
) -> ParsedFile:
    """Every line of one file: matched samples, and problems counted in ``report``."""
    parsed = ParsedFile()
    taken: set[int] = set()
    for number, raw, unterminated in _file_lines(path, on_bytes):
        line = _read_line(raw, unterminated=unterminated, n_layers=parsed.n_layers, adapter=adapter)
        if line is None:
            continue
        report.lines += 1
        if line.problem is not None:
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
            parsed.skipped[index] = f"non-finite values in the {ORIGIN}: {problem} (line {number})"
            continue
        parsed.indices.append(index)
        parsed.losses.append(line.loss)
        parsed.values.append(line.values)
    return parsed


def store_rows(parsed: ParsedFile, identity: dict) -> pd.DataFrame | None:
    """Long-format rows in the store's schema: one per (sample, layer, projection)."""
    if not parsed.indices:
        return None
    n, layers, n_proj = len(parsed.indices), parsed.n_layers, len(PROJECTIONS)
    values = np.stack(parsed.values).reshape(n * layers * n_proj, len(STATISTICS))
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
    for s, column in enumerate(STATISTICS.values()):
        frame[column] = values[:, s]
    for statistic in layer_stats.TABLE:
        if statistic.original is None and statistic.from_original is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                frame[statistic.name] = statistic.from_original(frame)
    for column in ABSENT:
        frame[column] = math.nan
    frame["loss"] = np.repeat(parsed.losses, per_sample)
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


def target_for(model: str, template: str, condition: str, data_dir, relative: str, sha256: str) -> Target:
    """The run key and row labels of a model's statistics of a condition (as an extraction labels them)."""
    resolved = data.resolve(condition, data_dir)
    key, labels = run_labels(model, template, resolved, ORIGINAL_MAX_LENGTH)
    identity = {**labels, "origin": ORIGIN, "origin_file": relative, "origin_sha256": sha256}
    return Target(resolved, key, identity)


def import_file(
    store: ResultsStore,
    file: OriginalFile,
    data_dir=None,
    template: str | None = None,
    on_bytes: Callable[[int], None] = lambda n: None,
) -> FileReport:
    """Import one statistics file into the store; its rows appear whole or not at all."""
    started = time.perf_counter()
    report = FileReport(file.relative, model=file.model, condition=file.condition)
    if file.problem is not None:
        report.skipped_file = file.problem
        return report
    size = file.path.stat().st_size
    report.megabytes = size / 1e6
    report.sha256 = data.file_sha256(file.path)
    chosen = registry.resolve_template(file.model, template)
    target = target_for(file.model, chosen, file.condition, data_dir, file.relative, report.sha256)
    with store.lock(target.key):
        if report.sha256 in store.stored_values(target.key, "origin_sha256"):
            report.already_imported = True
            on_bytes(size)
            return report
        other = store.stored_values(target.key, "data_sha256") - {target.resolved.sha256}
        if other:
            raise StoreError(
                f"{store.run_dir('rows', target.key)}: the stored rows of {file.condition} come from a data file with "
                f"sha256 {sorted(other)[0][:12]}…, but {target.resolved.path} has sha256 {target.resolved.sha256[:12]}…; "
                "import into a different --out"
            )
        lookup = sample_lookup(data.load_records(target.resolved.path))
        adapter = architectures.for_model_name(file.model)
        parsed = read_lines(file.path, report, lookup, store.done_samples(target.key), on_bytes, adapter=adapter)
        rows, skipped = store_rows(parsed, target.identity), skipped_rows(parsed, target.identity)
        store.write(target.key, rows, skipped)
    report.imported = len(parsed.indices)
    report.layers = parsed.n_layers
    info = registry.known_model(file.model)
    if info is not None and info.layers and parsed.n_layers and parsed.n_layers != info.layers:
        report.note = f"{parsed.n_layers} layers in the file, but {file.model} has {info.layers}"
    report.seconds = time.perf_counter() - started
    return report


# --------------------------------------------------------------------------- a source


@dataclass
class ImportResult:
    """Every file's report, the study files absent for the models seen, and the time taken."""

    files: list[FileReport]
    absent: dict[str, list[str]]  # model -> conditions asked for without a file
    seconds: float

    @property
    def megabytes(self) -> float:
        return sum(f.megabytes for f in self.files)

    @property
    def imported(self) -> int:
        return sum(f.imported for f in self.files)


def source_files(
    source: str,
    model: str | None = None,
    condition: str | None = None,
    models: Iterable[str] | None = None,
    conditions: Iterable[str] | None = None,
    cache_dir=None,
) -> Iterator[OriginalFile]:
    """The files of a source: a folder walked for the tree, one .jsonl file, or a hub dataset."""
    model_set = {model_for(m) for m in models} if models else None
    unknown = sorted((model_set or set()) - set(registry.PAPER_MODELS))
    if unknown:
        known = ", ".join(info.original_folder for info in registry.PAPER_MODELS.values())
        raise OriginalFormatError(
            f"--models: unknown model {unknown[0]!r} (original folders: {known}, or registry ids)"
        )
    condition_set = set(conditions) if conditions else None
    for key in condition_set or ():
        data.get_condition(key)
    repo = hub_dataset(source)
    if repo is not None:
        yield from hub_files(repo, model_set, condition_set, cache_dir)
        return
    path = Path(source)
    if path.is_file():
        if not model or not condition:
            raise OriginalFormatError(f"{path}: one file needs --model and --condition (e.g. aqua/none/correct)")
        key = data.get_condition(condition).key
        yield OriginalFile(path, str(path), model_for(model), key)
        return
    if not path.is_dir():
        raise OriginalFormatError(f"{source}: no such file or folder (nor hf://datasets/<owner>/<name>)")
    files = find_files(path)
    if not files:
        raise OriginalFormatError(f"{path}: no grads_*.jsonl file anywhere below this folder")
    for file in files:
        if file.problem is not None or wanted(file, model_set, condition_set):
            yield file


def absent_files(files: list[FileReport], models: Iterable[str] | None, conditions: Iterable[str] | None):
    """Per model (asked for, or seen), the study conditions asked for that had no file."""
    seen = {f.model for f in files if f.model and f.condition}
    chosen = [model_for(m) for m in models] if models else sorted(seen)
    keys = list(conditions) if conditions else [c.key for c in data.study_conditions()]
    present = {(f.model, f.condition) for f in files}
    return {m: [k for k in keys if (m, k) not in present] for m in chosen if any((m, k) not in present for k in keys)}


def import_source(
    source: str,
    store: ResultsStore,
    data_dir=None,
    model: str | None = None,
    condition: str | None = None,
    template: str | None = None,
    models: Iterable[str] | None = None,
    conditions: Iterable[str] | None = None,
    progress: bool = True,
    cache_dir=None,
    on_file: Callable[[FileReport], None] = lambda report: None,
) -> ImportResult:
    """Import every file of ``source`` (see :func:`source_files`) one at a time, with a progress bar."""
    started = time.perf_counter()
    files: Iterable[OriginalFile] = source_files(source, model, condition, models, conditions, cache_dir)
    total = None
    if hub_dataset(source) is None:  # a local source: the bar knows its size; hub files download one by one
        files = list(files)
        total = sum(f.path.stat().st_size for f in files if f.problem is None)
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="import", disable=not progress)
    reports = []
    try:
        for file in files:
            report = import_file(store, file, data_dir, template, bar.update)
            reports.append(report)
            on_file(report)
    finally:
        bar.close()
    single = Path(source).is_file()
    absent = {} if single else absent_files(reports, models, conditions)
    return ImportResult(reports, absent, time.perf_counter() - started)
