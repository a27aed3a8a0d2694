"""The results store: a directory of Parquet files that any pandas user can read.

A whole store can also travel as one Parquet file of its rows (:func:`export_parquet`), which the
book's pages read like a store. Layout under the store's root::

    store.json                                   format marker and version
    rows/<model>/<dataset>/<setting>/<responses>/<run>/part-*.parquet   one row per (sample, layer, projection)
    skipped/<model>/<dataset>/<setting>/<responses>/<run>/part-*.parquet  samples not computed, with the reason

``<run>`` is ``ml<max_length>-<template>``. Rows read from the original study's released
statistics instead of extracted (``python -m analysis import-original``) carry their origin in
the columns ``origin``, ``origin_file`` and ``origin_sha256``; what those files lack is missing. Rows computed with ``--keep-spectra`` also hold each
gradient's descending singular values in a list column ``singular_values``. A part file is written under a hidden temporary
name and renamed into place, so it appears whole or not at all (readers ignore hidden files).
A part damaged afterwards (cut short by a copy, say) makes every read raise :class:`DamagedPart`
naming it: a sample's rows lie in one part only, so once that file is removed, running again the
command that wrote it computes (or imports) exactly the samples it held.
A run holds an exclusive lock on its own directory while it computes, so two processes never
write the same samples; a second one is told so before it computes anything. Re-running a
command computes only the samples that are neither stored nor recorded as skipped; a sample whose
rows lack a column the command computes (a statistic of ``analysis.core.layer_stats`` declared since) is
computed again, and its new rows replace the old ones.
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from analysis import data
from analysis.core.errors import StudyError
from analysis.core.memory import release_freed_memory
from analysis.core.registry import model_slug

FORMAT = "layer-gradient-results"
VERSION = 1
SKIP_COLUMNS = (
    "model",
    "condition",
    "dataset",
    "setting",
    "responses",
    "source_file",
    "max_length",
    "template",
    "sample_index",
    "reason",
)
ORIGIN_COLUMNS = ("origin", "origin_file", "origin_sha256")  # of rows imported rather than computed


def run_labels(model: str, template: str, resolved: data.ResolvedData, max_length: int) -> tuple[RunKey, dict]:
    """The run key and the row labels (identity columns) of a model's rows of one condition, or of a
    data file outside the registry (keyed by its contents' hash), as extraction and import store them."""
    condition = resolved.condition
    is_file = condition.setting == ""
    key = RunKey(
        model_slug(model),
        f"file-{condition.dataset}-{resolved.sha256[:8]}" if is_file else condition.dataset,
        condition.setting,
        condition.responses,
        max_length,
        template,
    )
    identity = {
        "model": model,
        "dataset": condition.dataset,
        "setting": condition.setting,
        "responses": condition.responses,
        "condition": condition.key if not is_file else f"file:{condition.dataset}",
        "source_file": condition.relative_path if not is_file else str(resolved.path),
        "data_sha256": resolved.sha256,
        "data_sha256_ok": resolved.sha256_ok,
        "max_length": max_length,
        "template": template,
    }
    return key, identity


def skip_record(identity: dict, index: int, reason: str) -> dict:
    """One row of the skipped-samples table: the row labels of SKIP_COLUMNS (and the origin columns
    of imported rows), the sample and why it was not computed."""
    labels = [name for name in (*SKIP_COLUMNS, *ORIGIN_COLUMNS) if name in identity]
    return {**{name: identity[name] for name in labels}, "sample_index": index, "reason": reason}


class StoreError(StudyError, RuntimeError):
    """The results store cannot be used as asked."""


class DamagedPart(StoreError):
    """A part file of the store cannot be read (cut short, overwritten): the message names it and
    says how to recover."""

    def __init__(self, path: str | os.PathLike, reason: str):
        self.path = Path(path)
        # <kind>/<model>/<dataset>/<setting>/<responses>/<run>/part-*.parquet
        skipped = len(self.path.parts) >= 7 and self.path.parts[-7] == "skipped"
        held = (
            "the samples it recorded as skipped are tried again"
            if skipped
            else "it stores again exactly the samples this part held"
        )
        super().__init__(
            f"{self.path}: damaged part of the results store ({reason}); remove this file and run again the "
            f"command that wrote it (extract, run or import-original): {held}, and keeps the other results"
        )


@dataclass(frozen=True)
class RunKey:
    """What identifies one extraction: the same model, data, truncation and template."""

    model_slug: str
    dataset: str
    setting: str
    responses: str
    max_length: int
    template: str

    def relative_dir(self) -> Path:
        return Path(
            self.model_slug,
            self.dataset,
            self.setting or "-",
            self.responses or "-",
            f"ml{self.max_length}-{self.template}",
        )


class ResultsStore:
    """A results directory; creating one writes its format marker."""

    def __init__(self, root: str | os.PathLike, create: bool = True):
        self.root = Path(root)
        marker = self.root / "store.json"
        if marker.is_file():
            self._check_marker(marker)
        elif create:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                _atomic_write_bytes(marker, json.dumps({"format": FORMAT, "version": VERSION}).encode())
            except OSError as error:
                raise StoreError(f"{self.root}: cannot create the results store ({error.strerror})") from None
        elif self.root.exists() and any(not entry.name.startswith(".") for entry in self.root.iterdir()):
            # hidden entries only: a store whose creation was interrupted before its marker was in place
            raise StoreError(f"{self.root}: not a results store (no store.json)")

    @staticmethod
    def _check_marker(marker: Path) -> None:
        try:
            meta = json.loads(marker.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise StoreError(f"{marker}: unreadable store marker ({error})") from None
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise StoreError(
                f"{marker}: results written by an incompatible version (format {meta.get('format')!r}, "
                f"version {meta.get('version')!r}; this code reads {FORMAT!r} version {VERSION}); "
                "use a new results directory or re-run the extraction"
            )

    def run_dir(self, kind: str, key: RunKey) -> Path:
        return self.root / kind / key.relative_dir()

    @contextmanager
    def lock(self, key: RunKey) -> Iterator[None]:
        """Exclusive right to compute ``key``; StoreError at once if another process holds it."""
        directory = self.run_dir("rows", key)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            handle = open(directory / ".lock", "a+")
        except OSError as error:
            raise StoreError(f"{directory}: cannot write to the results store ({error.strerror})") from None
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(
                    f"{directory}: another process is computing this run in the same results store; "
                    "wait for it to finish, or use a different --out"
                ) from None
            self._remove_stale_temporaries(key)
            yield
        finally:
            handle.close()

    def _remove_stale_temporaries(self, key: RunKey) -> None:
        for kind in ("rows", "skipped"):
            directory = self.run_dir(kind, key)
            if directory.is_dir():
                for leftover in directory.glob(".part-*.tmp"):
                    leftover.unlink(missing_ok=True)

    def done_samples(
        self, key: RunKey, retry_reasons: tuple[str, ...] = (), required_columns: tuple[str, ...] = ()
    ) -> set[int]:
        """Sample indices of this run already stored or recorded as skipped, except samples whose
        only record is a skip with a reason that begins with one of ``retry_reasons``, and stored
        samples whose rows lack one of ``required_columns`` (they are to be computed again)."""
        done: set[int] = set()
        complete = [f for f in _part_files(self.run_dir("rows", key)) if set(required_columns) <= _columns_of(f)]
        rows = _read_files(complete, columns=["sample_index"])
        if rows is not None:
            done.update(int(i) for i in rows.column("sample_index").to_pylist())
        skipped = _read_dir(self.run_dir("skipped", key), columns=["sample_index", "reason"])
        if skipped is not None:
            for index, reason in zip(skipped.column("sample_index").to_pylist(), skipped.column("reason").to_pylist()):
                if not (retry_reasons and str(reason).startswith(retry_reasons)):
                    done.add(int(index))
        return done

    def remove_samples(self, key: RunKey, samples: set[int]) -> None:
        """Remove the stored rows of these samples from this run's parts (each part rewritten
        atomically): before a sample computed again is written, so that it is never stored twice."""
        for path in _part_files(self.run_dir("rows", key)):
            first, last = _index_range(path)
            if not any(first <= s <= last for s in samples):
                continue  # a part whose name's index range misses them is not opened
            stored = _reading(path, pq.read_table, columns=["sample_index"]).column("sample_index")
            if not pc.any(pc.is_in(stored, value_set=pa.array(sorted(samples), stored.type))).as_py():
                continue
            table = _reading(path, pq.read_table)
            drop = pc.is_in(table.column("sample_index"), value_set=pa.array(sorted(samples), stored.type))
            kept = table.filter(pc.invert(drop))
            if kept.num_rows == 0:
                os.unlink(path)
                continue
            temporary = Path(path).with_name(f".part-{uuid.uuid4().hex[:12]}.tmp")
            pq.write_table(kept, temporary)
            _fsync_and_replace(temporary, Path(path))

    def stored_values(self, key: RunKey, column: str) -> set:
        """Distinct values of one column among this run's stored rows."""
        table = _read_dir(self.run_dir("rows", key), columns=[column])
        return set() if table is None else set(table.column(column).unique().to_pylist())

    def write(self, key: RunKey, rows: pd.DataFrame | None, skipped: pd.DataFrame | None) -> None:
        """Append one part of results (and of skipped samples) atomically. Stored rows of the same
        samples (computed again, for a column they lacked) are removed first (:meth:`remove_samples`):
        if the write is interrupted in between, those samples are missing, and computed next time."""
        tag = uuid.uuid4().hex[:12]
        for kind, frame in (("skipped", skipped), ("rows", rows)):
            if frame is None or frame.empty:
                continue
            directory = self.run_dir(kind, key)
            directory.mkdir(parents=True, exist_ok=True)
            first, last = int(frame["sample_index"].min()), int(frame["sample_index"].max())
            final = directory / f"part-{first:06d}-{last:06d}-{tag}.parquet"
            temporary = directory / f".part-{tag}.tmp"
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), temporary)
            if kind == "rows":
                self.remove_samples(key, {int(i) for i in frame["sample_index"].unique()})
            _fsync_and_replace(temporary, final)

    def column_names(self, kind: str = "rows") -> list[str]:
        """The columns of the stored rows (the union over every part), in schema order."""
        directory = self.root / kind
        files = sorted(directory.rglob("part-*.parquet")) if directory.is_dir() else []
        if not files:
            return []
        return pa.unify_schemas([_reading(f, pq.read_schema) for f in files], promote_options="permissive").names

    def distinct(self, column: str, filters=None, kind: str = "rows") -> set:
        """Distinct values of one column among the stored rows that pass ``filters`` (empty set if the
        column is nowhere), without reading the rows into pandas."""
        try:
            table = _read_dir(self.root / kind, columns=[column], filters=filters)
        except (pa.ArrowInvalid, KeyError):  # a column that no part holds
            return set()
        return set() if table is None else set(table.column(column).unique().to_pylist())

    def read(
        self, kind: str = "rows", filters=None, columns: list[str] | None = None, *, compact: bool = False
    ) -> pd.DataFrame:
        """All stored rows (or skipped samples) as one DataFrame; empty if there are none.

        ``compact``: labels as categories and small integers narrowed (:func:`compact_table`)."""
        if compact:
            return _read_compact(_part_files(self.root / kind), columns, filters)
        table = _read_dir(self.root / kind, columns=columns, filters=filters)
        return pd.DataFrame(columns=columns or []) if table is None else table.to_pandas()

    def empty_columns(self, kind: str = "rows") -> set[str]:
        """Columns that hold no value in any stored part (e.g. what imported statistics lack), from
        the Parquet footers alone."""
        directory = self.root / kind
        files = sorted(directory.rglob("part-*.parquet")) if directory.is_dir() else []
        return _null_columns(files, partial(_reading, read=pq.read_metadata))


# Compact reads allocate from the system's allocator: Arrow's own keeps what its reading threads
# freed (ten models' rows read: 2.5 GB resident for a 1 GB table), the system's gives it back.
READ_POOL = pa.system_memory_pool()

# Integer columns whose values are small: narrowed when read compactly (a safe cast, so exact).
NARROW = {"layer": pa.int16(), "n_layers": pa.int16(), "sample_index": pa.int32(), "max_length": pa.int32()}


def compact_table(table: pa.Table) -> pa.Table:
    """The same values in less memory: every text column dictionary-encoded (a pandas category:
    a few labels repeated over millions of rows) and the small integer columns narrowed."""
    for index, name in enumerate(table.column_names):
        column = table.column(name)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            table = table.set_column(index, name, pc.dictionary_encode(column, memory_pool=READ_POOL))
        elif name in NARROW and pa.types.is_integer(column.type):
            table = table.set_column(index, name, pc.cast(column, NARROW[name], safe=True, memory_pool=READ_POOL))
        column = table.column(name)
        if pa.types.is_dictionary(column.type):  # a byte per row for a few labels
            size = max((len(chunk.dictionary) for chunk in column.chunks), default=0)
            narrow = pa.int8() if size < 2**7 else pa.int16() if size < 2**15 else pa.int32()
            narrowed = pc.cast(column, pa.dictionary(narrow, column.type.value_type), memory_pool=READ_POOL)
            table = table.set_column(index, name, narrowed)
    return table


def _compact_batches(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """``compact_table`` applied batch by batch as the rows are read, so that the rows never stand
    in memory at full width (ten models' rows are 36 million). Each batch keeps its own dictionaries
    (pandas merges them into one category per column); a column whose batches needed different
    index widths takes the widest."""
    parts = [compact_table(pa.Table.from_batches([batch])) for batch in batches]
    if not parts:
        return compact_table(schema.empty_table())
    for name in parts[0].column_names:
        types = {part.schema.field(name).type for part in parts}
        if len(types) > 1:
            widest = max(types, key=lambda t: t.index_type.bit_width)
            parts = [
                part.set_column(
                    part.column_names.index(name), name, pc.cast(part.column(name), widest, memory_pool=READ_POOL)
                )
                for part in parts
            ]
    return pa.concat_tables(parts)


def null_columns(files) -> set[str]:
    """Columns null in every row of every file (by the footers' null counts; unknown counts: not null)."""
    return _null_columns(files, pq.read_metadata)


def _null_columns(files, read_metadata) -> set[str]:
    empty: set[str] | None = None
    for path in files:
        meta = read_metadata(path)
        here = set(meta.schema.names)
        for group in range(meta.num_row_groups):
            row_group = meta.row_group(group)
            for index in range(row_group.num_columns):
                column = row_group.column(index)
                stats = column.statistics
                if stats is None or not stats.has_null_count or stats.null_count != row_group.num_rows:
                    here.discard(column.path_in_schema)
        empty = here if empty is None else empty & here
    return empty or set()


def _read_compact(files: list[str], columns=None, filters=None) -> pd.DataFrame:
    """The files' rows compacted as they are read (:func:`compact_table`), as pandas column by column
    (no block of columns copied together), the memory the reading freed handed back to the system."""
    table = _read_files(files, columns, filters, compact=True)
    if table is None:
        return pd.DataFrame(columns=columns or [])
    converted = {}
    for name in table.column_names:  # each column's Arrow buffers freed once converted
        column = table.column(name)
        table = table.drop_columns([name])
        converted[name] = column.to_pandas(memory_pool=READ_POOL)
        del column
        release_freed_memory()
    return pd.DataFrame(converted, copy=False)


def _part_files(directory: Path) -> list[str]:
    """The part files below a directory, in path order (hidden temporaries left out)."""
    return sorted(str(p) for p in directory.rglob("part-*.parquet")) if directory.is_dir() else []


def _index_range(path: str) -> tuple[int, int]:
    """The first and last sample index a part holds, from its name ``part-<first>-<last>-<tag>``."""
    try:
        _, first, last, _ = Path(path).name.split("-", 3)
        return int(first), int(last)
    except ValueError:  # a part named otherwise: its samples are not bounded by its name
        return -1, 1 << 62


def _columns_of(path: str) -> set[str]:
    return set(_reading(path, pq.read_schema).names)


def _is_damage(error: BaseException) -> bool:
    """Whether pyarrow's error is about a Parquet file's bytes: invalid contents, or an I/O error
    that is not the operating system's (a missing file or a refused permission has an errno)."""
    return isinstance(error, pa.ArrowInvalid) or (isinstance(error, OSError) and error.errno is None)


def _reason(error: BaseException) -> str:
    """pyarrow's first line, without the path it sometimes prefixes (the message names the file)."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    text = text.split("': ", 1)[1] if text.startswith("Could not open Parquet input source '") else text
    return text.split(". ")[0].rstrip(".")  # "Parquet magic bytes not found in footer. Either the file is ..."


def _reading(path, read, **options):
    """``read(path, **options)`` of one part file; a damaged file raises DamagedPart naming it."""
    try:
        return read(path, **options)
    except (pa.ArrowInvalid, OSError) as error:
        if not _is_damage(error):
            raise
        raise DamagedPart(path, _reason(error)) from None


def _damaged_part_among(files, columns=None) -> DamagedPart | None:
    """The first of these parts whose data cannot be read (its footer can), as the error to raise."""
    for path in files:
        try:
            part = pq.ParquetFile(path)
            names = part.schema_arrow.names
            part.read(columns=None if columns is None else [c for c in columns if c in names])
        except (pa.ArrowInvalid, OSError) as error:
            if _is_damage(error):
                return DamagedPart(path, _reason(error))
    return None


def _read_dir(directory: Path, columns=None, filters=None) -> pa.Table | None:
    return _read_files(_part_files(directory), columns, filters)


def _read_files(files: list[str], columns=None, filters=None, compact: bool = False) -> pa.Table | None:
    if not files:
        return None
    # One schema for all parts: a column that is all null in one part (data_sha256_ok of a file
    # outside the registry) and boolean in another must not make the others unreadable.
    schema = pa.unify_schemas([_reading(path, pq.read_schema) for path in files], promote_options="permissive")
    try:
        return _scan(_parquet_dataset(files, schema, compact), columns, filters, compact)
    except OSError as error:  # a part whose footer reads but whose data does not
        damaged = _damaged_part_among(files, columns) if _is_damage(error) else None
        if damaged is None:
            raise
        raise damaged from None


def _parquet_dataset(files, schema: pa.Schema | None = None, compact: bool = False) -> ds.Dataset:
    """The Parquet files as one dataset; ``compact``: text columns read straight into dictionaries
    (labels never decoded into text, a few bytes a row instead of tens)."""
    if not compact:
        return ds.dataset(files, schema=schema, format="parquet")
    schema = schema if schema is not None else ds.dataset(files, format="parquet").schema
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    schema = pa.schema(
        [pa.field(f.name, pa.dictionary(pa.int32(), pa.string())) if f.name in text else f for f in schema],
        metadata=schema.metadata,
    )
    read_options = ds.ParquetReadOptions(dictionary_columns=text)
    return ds.dataset(files, schema=schema, format=ds.ParquetFileFormat(read_options=read_options))


def _scan(dataset: ds.Dataset, columns=None, filters=None, compact: bool = False) -> pa.Table:
    """The dataset's rows that pass ``filters`` (``compact``: compacted as they are read); an ``in``
    filter of no values passes none (pyarrow cannot bind an empty list to a column's type), e.g. a
    page whose profile has none of its conditions."""
    if filters and any(isinstance(f, tuple) and f[1] == "in" and len(f[2]) == 0 for f in filters):
        table = dataset.schema.empty_table()
        table = table.select(columns) if columns is not None else table
        return compact_table(table) if compact else table
    expression = pq.filters_to_expression(filters) if filters else None
    if compact:
        schema = pa.schema([dataset.schema.field(c) for c in columns]) if columns is not None else dataset.schema
        return _compact_batches(dataset.to_batches(columns=columns, filter=expression, memory_pool=READ_POOL), schema)
    return dataset.to_table(columns=columns, filter=expression)


def _fsync_and_replace(temporary: Path, final: Path) -> None:
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, final)
    directory = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _atomic_write_bytes(path: Path, payload: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    temporary.write_bytes(payload)
    _fsync_and_replace(temporary, path)


def export_parquet(root: str | os.PathLike, path: str | os.PathLike, kind: str = "rows") -> Path | None:
    """Every stored row of a results store in one Parquet file (None when nothing is stored).

    Written part by part, so memory holds one part at a time; columns that some parts lack are null
    there. The file replaces ``path`` only once it is complete.
    """
    directory = Path(root) / kind
    files = sorted(str(p) for p in directory.rglob("part-*.parquet")) if directory.is_dir() else []
    if not files:
        return None
    schema = pa.unify_schemas([_reading(f, pq.read_schema) for f in files], promote_options="permissive")
    schema = schema.remove_metadata()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    with pq.ParquetWriter(temporary, schema, compression="zstd") as writer:
        for batch in ds.dataset(files, schema=schema, format="parquet").to_batches():
            writer.write_batch(batch)
    _fsync_and_replace(temporary, target)
    return target


def is_exported_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is one Parquet file of rows (as :func:`export_parquet` writes), not a store directory."""
    return Path(path).suffix == ".parquet" and Path(path).is_file()


def read_exported(
    path: str | os.PathLike, filters=None, columns: list[str] | None = None, *, compact: bool = False
) -> pd.DataFrame:
    """Rows of an exported Parquet file, filtered (and compacted) as :meth:`ResultsStore.read` does."""
    if compact:
        return _read_compact([str(path)], columns, filters)
    return _scan(_parquet_dataset(str(path)), columns, filters).to_pandas()


def read_results(root: str | os.PathLike, **filters) -> pd.DataFrame:
    """Stored rows of a results directory, optionally filtered by column equality (e.g. model=...)."""
    store = ResultsStore(root, create=False)
    expression = [(name, "==", value) for name, value in filters.items()] or None
    return store.read("rows", filters=expression)


def read_skipped(root: str | os.PathLike) -> pd.DataFrame:
    """Samples that were not computed, with the reason, as one DataFrame (a skip that a later
    retry computed is left out: its rows are stored)."""
    store = ResultsStore(root, create=False)
    skipped = store.read("skipped")
    if skipped.empty:
        return skipped
    keys = ["model", "condition", "max_length", "template", "sample_index"]
    computed = store.read("rows", columns=keys).drop_duplicates()
    if computed.empty:
        return skipped
    merged = skipped.merge(computed.assign(_computed=True), on=keys, how="left")
    return merged[merged["_computed"].isna()].drop(columns="_computed").reset_index(drop=True)
