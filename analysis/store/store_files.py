"""The results store's Parquet files: parts read whole or named as damaged (:class:`DamagedPart`),
compactly when asked (:func:`compact_table`), written under a hidden name and renamed into place,
and a whole store exported as one file (:func:`export_parquet`) that the book's pages read like a store.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from analysis.core.memory import release_freed_memory
from analysis.store.store_errors import DamagedPart

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
