"""The results store: a directory of Parquet files that any pandas user can read.

A whole store can also travel as one Parquet file of its rows (:func:`analysis.store.store_files.export_parquet`),
which the book's pages read like a store. Layout under the store's root::

    store.json                                   format marker and version
    rows/<model>/<dataset>/<setting>/<responses>/<run>/part-*.parquet   one row per (sample, layer, projection)
    skipped/<model>/<dataset>/<setting>/<responses>/<run>/part-*.parquet  samples not computed, with the reason

``<run>`` is ``ml<max_length>-<template>``. Rows read from the original study's released
statistics instead of extracted (``python -m analysis import-original``) carry their origin in
the columns ``origin``, ``origin_file`` and ``origin_sha256``; what those files lack is missing. Rows computed with ``--keep-spectra`` also hold each
gradient's descending singular values in a list column ``singular_values``. A part file is written under a hidden temporary
name and renamed into place, so it appears whole or not at all (readers ignore hidden files).
A part damaged afterwards (cut short by a copy, say) makes every read raise ``DamagedPart``
(:mod:`analysis.store.store_errors`) naming it: a sample's rows lie in one part only, so once that file
is removed, running again the command that wrote it computes (or imports) exactly the samples it held.
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from analysis import data
from analysis.core.registry import model_slug
from analysis.store import store_files
from analysis.store.store_errors import StoreError

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


@dataclass(frozen=True)
class RunKey:
    """What identifies one extraction: the same model, data, truncation and template."""

    model_slug: str
    dataset: str
    setting: str
    responses: str
    max_length: int
    template: str
    scored_subsets: int = 1  # K draws of scored tokens per sample (scored-subset conditions), ``subsets_key``

    def relative_dir(self) -> Path:
        draws = f"-k{self.scored_subsets}" if self.scored_subsets > 1 else ""
        return Path(
            self.model_slug,
            self.dataset,
            self.setting or "-",
            self.responses or "-",
            f"ml{self.max_length}-{self.template}{draws}",
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
                store_files._atomic_write_bytes(marker, json.dumps({"format": FORMAT, "version": VERSION}).encode())
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
        complete = [
            f
            for f in store_files._part_files(self.run_dir("rows", key))
            if set(required_columns) <= store_files._columns_of(f)
        ]
        rows = store_files._read_files(complete, columns=["sample_index"])
        if rows is not None:
            done.update(int(i) for i in rows.column("sample_index").to_pylist())
        skipped = store_files._read_dir(self.run_dir("skipped", key), columns=["sample_index", "reason"])
        if skipped is not None:
            for index, reason in zip(skipped.column("sample_index").to_pylist(), skipped.column("reason").to_pylist()):
                if not (retry_reasons and str(reason).startswith(retry_reasons)):
                    done.add(int(index))
        return done

    def remove_samples(self, key: RunKey, samples: set[int]) -> None:
        """Remove the stored rows of these samples from this run's parts (each part rewritten
        atomically): before a sample computed again is written, so that it is never stored twice."""
        for path in store_files._part_files(self.run_dir("rows", key)):
            first, last = store_files._index_range(path)
            if not any(first <= s <= last for s in samples):
                continue  # a part whose name's index range misses them is not opened
            stored = store_files._reading(path, pq.read_table, columns=["sample_index"]).column("sample_index")
            if not pc.any(pc.is_in(stored, value_set=pa.array(sorted(samples), stored.type))).as_py():
                continue
            table = store_files._reading(path, pq.read_table)
            drop = pc.is_in(table.column("sample_index"), value_set=pa.array(sorted(samples), stored.type))
            kept = table.filter(pc.invert(drop))
            if kept.num_rows == 0:
                os.unlink(path)
                continue
            temporary = Path(path).with_name(f".part-{uuid.uuid4().hex[:12]}.tmp")
            pq.write_table(kept, temporary)
            store_files._fsync_and_replace(temporary, Path(path))

    def stored_values(self, key: RunKey, column: str) -> set:
        """Distinct values of one column among this run's stored rows."""
        table = store_files._read_dir(self.run_dir("rows", key), columns=[column])
        return set() if table is None else set(table.column(column).unique().to_pylist())

    def sample_values(self, key: RunKey, column: str) -> dict[int, float]:
        """One value per stored sample of this run, of a per-sample column such as the loss."""
        table = store_files._read_dir(self.run_dir("rows", key), columns=["sample_index", column])
        if table is None:
            return {}
        return dict(zip(table.column("sample_index").to_pylist(), table.column(column).to_pylist()))

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
            store_files._fsync_and_replace(temporary, final)

    def column_names(self, kind: str = "rows") -> list[str]:
        """The columns of the stored rows (the union over every part), in schema order."""
        directory = self.root / kind
        files = sorted(directory.rglob("part-*.parquet")) if directory.is_dir() else []
        if not files:
            return []
        return pa.unify_schemas(
            [store_files._reading(f, pq.read_schema) for f in files], promote_options="permissive"
        ).names

    def distinct(self, column: str, filters=None, kind: str = "rows") -> set:
        """Distinct values of one column among the stored rows that pass ``filters`` (empty set if the
        column is nowhere), without reading the rows into pandas."""
        try:
            table = store_files._read_dir(self.root / kind, columns=[column], filters=filters)
        except (pa.ArrowInvalid, KeyError):  # a column that no part holds
            return set()
        return set() if table is None else set(table.column(column).unique().to_pylist())

    def read(
        self, kind: str = "rows", filters=None, columns: list[str] | None = None, *, compact: bool = False
    ) -> pd.DataFrame:
        """All stored rows (or skipped samples) as one DataFrame; empty if there are none.

        ``compact``: labels as categories and small integers narrowed (:func:`store_files.compact_table`)."""
        if compact:
            return store_files._read_compact(store_files._part_files(self.root / kind), columns, filters)
        table = store_files._read_dir(self.root / kind, columns=columns, filters=filters)
        return pd.DataFrame(columns=columns or []) if table is None else table.to_pandas()

    def empty_columns(self, kind: str = "rows") -> set[str]:
        """Columns that hold no value in any stored part (e.g. what imported statistics lack), from
        the Parquet footers alone."""
        directory = self.root / kind
        files = sorted(directory.rglob("part-*.parquet")) if directory.is_dir() else []
        return store_files._null_columns(files, partial(store_files._reading, read=pq.read_metadata))


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
