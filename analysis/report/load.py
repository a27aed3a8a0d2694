"""Reading what a page needs from the results store, and saying what is missing or skipped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import data
from analysis.checks import LENGTH_CHECKS
from analysis.core import layer_stats, vocabulary
from analysis.core.errors import StudyError
from analysis.core.registry import OFFLINE_MODELS, known_model
from analysis.data import data_files, sample_draws
from analysis.data.data_errors import DataError
from analysis.data.records import load_records
from analysis.extract import screens
from analysis.extract.screens import Screen
from analysis.findings import metrics
from analysis.store import ResultsStore
from analysis.store.store_errors import StoreError
from analysis.store.store_files import is_exported_file, null_columns, read_exported

OFFLINE_NOTE = (
    "{names}: quantised (GGUF) then dequantised small offline model(s); the two offline models come "
    "from two different families and are not the paper's models"
)


NOT_IMPORTED = "not in the imported statistics"
ORIGIN_NOTE = (
    "{names}: the numbers are the original study's released per-sample gradient statistics (Li, Li and Zhou; "
    "their script, their runs), read into this book with `python -m analysis import-original`, not computed "
    "here. Those files hold the nuclear norm, the largest and smallest singular value, the Frobenius norm, the "
    "loss and entry statistics of every attention projection; effective rank, cosine similarities and singular "
    "values are {absent}, and the original study computed no length-control condition, so the length questions "
    "({length}) are not available for these models. Each sample's response token count R is counted from its text "
    "with the model's tokenizer, as the extraction counts it, where the tokenizer could be loaded (else it is "
    "missing until `python -m analysis add-token-counts` adds it)"
)


# Columns that no book page reads: left on disk, so that the pages of ten models at 500 samples hold
# less in memory (one 42-layer model's 56 files are 4.7 million rows).
UNREAD_COLUMNS = (
    "source_file",
    "data_sha256",
    "data_sha256_ok",
    "origin_file",
    "origin_sha256",
    "singular_values",
    *layer_stats.unread_by_pages(),  # the statistics that no page reads (analysis.core.layer_stats)
)


# Statistics that no page reads (the comparison page reads the store itself): left on disk too.
UNREAD_STATISTICS = ("frobenius", "sigma_max", "sigma_min", "loss", "n_tokens")


class ReportError(StudyError, RuntimeError):
    """The results store does not hold what a notebook needs."""


@dataclass
class StudyResults:
    """Rows of the results store that one notebook reads, with what is missing or skipped."""

    rows: pd.DataFrame
    skipped: pd.DataFrame
    coverage: pd.DataFrame  # one row per requested (model, condition)
    models: tuple[str, ...]  # requested models that have rows, in the requested order
    conditions: tuple[str, ...]  # requested conditions
    n_samples: int | None
    # the loss screen's matched pairs, read beside the draw (``screened_rows``), and every screen kept
    screened: pd.DataFrame = field(default_factory=pd.DataFrame)
    screens: tuple[Screen, ...] = ()

    @property
    def templates(self) -> dict[str, str]:
        return self.rows.groupby("model")["template"].first().to_dict() if len(self.rows) else {}


def _registry_template(model: str) -> str | None:
    info = known_model(model)
    return info.template if info else None


def _expected_count(condition: str, n_samples: int | None, data_dir) -> int | None:
    """Samples a complete run holds for a condition: n_samples, or fewer if the file is shorter."""
    try:
        records = len(load_records(data_files.data_dir(data_dir) / data.get_condition(condition).relative_path))
    except DataError:
        return n_samples
    return records if n_samples is None else min(n_samples, records)


def _record_count(condition: str, data_dir) -> int | None:
    try:
        return len(load_records(data_files.data_dir(data_dir) / data.get_condition(condition).relative_path))
    except (DataError, KeyError):
        return None


def sampled_ids(
    frames: Sequence[pd.DataFrame], n_samples: int, data_dir=None, drawn: sample_draws.Drawn | None = None
) -> dict[str, set[int]]:
    """Per condition, the ids a run of ``n_samples`` per condition takes: those the run kept
    (``drawn``, ``sample_draws.read``), else ``sample_draws.dataset_sample_ids`` of its file (a seeded random
    sample, the same ids for every file of a dataset, drawn from the instructions whose None-CoT
    irrelevant answer differs from the correct one). Where neither is at hand, the ``n_samples`` ids
    of highest rank in the same random order among those stored for the dataset (in any of ``frames``)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return {}
    drawn = drawn or {}
    keys = pd.concat([f[["condition", "dataset", "sample_index"]] for f in frames], ignore_index=True)
    stored = keys.groupby("dataset")["sample_index"].agg(lambda ids: np.unique(ids.to_numpy()))
    wanted = {}
    for condition, dataset in keys[["condition", "dataset"]].drop_duplicates().itertuples(index=False):
        if (condition, n_samples) in drawn:
            wanted[condition] = set(drawn[condition, n_samples])
            continue
        count = _record_count(condition, data_dir)
        if count is not None:
            wanted[condition] = set(sample_draws.dataset_sample_ids(dataset, count, n_samples, directory=data_dir))
        else:
            ids = stored[dataset]
            ranks = sample_draws.sample_ranks(dataset, int(ids.max()) + 1)[ids]
            wanted[condition] = set(ids[np.argsort(ranks, kind="stable")[:n_samples]].tolist())
    return wanted


def sampled(rows: pd.DataFrame, n_samples: int, data_dir=None, wanted: dict[str, set[int]] | None = None):
    """The rows of the samples a run of ``n_samples`` per condition takes (``sampled_ids``)."""
    if rows.empty:
        return rows
    wanted = wanted if wanted is not None else sampled_ids([rows], n_samples, data_dir)
    codes, conditions = pd.factorize(rows["condition"])
    ids = rows["sample_index"].to_numpy()
    taken = np.zeros((len(conditions), int(ids.max()) + 1), dtype=bool)  # condition x sample id
    for code, condition in enumerate(conditions):
        chosen = [i for i in wanted.get(condition, ()) if 0 <= i < taken.shape[1]]
        taken[code, chosen] = True
    keep = taken[codes, ids]
    return rows if keep.all() else rows[keep].reset_index(drop=True)


def load_results(
    results_dir,
    models: Sequence[str],
    conditions: Sequence[str],
    *,
    max_length: int | None = None,
    n_samples: int | None = None,
    data_dir: object = None,
    unread: Sequence[str] = (),
    read: Sequence[str] = (),
) -> StudyResults:
    """Stored rows of the given models and conditions.

    Which of a store's rows and columns a page reads: ``max_length`` (which truncation length,
    where several are stored), ``n_samples`` (of each condition, the seeded random sample
    ``sample_draws.dataset_sample_ids`` takes; None: all), ``data_dir`` (the data that sample is drawn
    from), ``unread`` (statistics the page does not show, left on disk: ten models' rows are 36
    million) and ``read`` (statistics otherwise left on disk, ``UNREAD_STATISTICS``, that the page's
    checks read).

    A model keeps the rows of its registry template; with several truncation lengths stored,
    ``max_length`` must say which one. Missing (model, condition) pairs are reported in
    ``coverage``, not raised: a notebook shows what is stored and says what is not.
    """
    root = Path(results_dir)
    left_unread = {*(s for s in (*UNREAD_COLUMNS, *UNREAD_STATISTICS) if s not in read), *unread}
    if is_exported_file(root):  # one Parquet file of a store's rows, as a book offers it for download
        return _load_exported(
            root, models, conditions, max_length=max_length, n_samples=n_samples, data_dir=data_dir, unread=left_unread
        )
    if not (root / "store.json").is_file():
        raise ReportError(
            f"{root}: no results store here; run `python -m analysis run --profile cpu` "
            f"(or pass the results_dir of the run you made)"
        )
    store = ResultsStore(root, create=False)
    filters: list[tuple[str, str, object]] = [("model", "in", list(models)), ("condition", "in", list(conditions))]
    if max_length is not None:
        filters.append(("max_length", "==", int(max_length)))
    try:
        left_out = {*left_unread, *store.empty_columns("rows")}  # empty: what imports lack
        columns = [c for c in store.column_names("rows") if c not in left_out] or None
        rows = store.read("rows", filters=filters, columns=columns, compact=True)
        skipped = store.read("skipped", filters=filters)
    except (OSError, ValueError) as error:
        raise StoreError(f"{root}: cannot read the results store ({error})") from None
    rows, skipped = _one_run_per_model(rows, skipped)
    rows = metrics.mean_over_draws(rows)  # a sample's K draws of scored tokens, one row per layer
    drawn = sample_draws.read(root)
    kept = tuple(screens.read(root))
    screened = screened_rows(rows, kept)
    if n_samples is not None and len(rows):
        wanted = sampled_ids([rows, skipped], n_samples, data_dir, drawn)
        rows = sampled(rows, n_samples, data_dir, wanted)
        skipped = sampled(skipped, n_samples, data_dir, wanted)
    coverage = _coverage(rows, skipped, models, conditions, n_samples=n_samples, data_dir=data_dir, drawn=drawn)
    present = tuple(m for m in models if len(rows) and (rows["model"] == m).any())
    return StudyResults(rows, skipped, coverage, present, tuple(conditions), n_samples, screened, kept)


def screened_rows(rows: pd.DataFrame, kept: Sequence[Screen]) -> pd.DataFrame:
    """The rows of the loss screens' matched pairs (``analysis.extract.screens``): per screen, its model's
    rows of the dataset's Detailed CoT, both responses, of the instructions it matched (those are
    never drawn, so a page's draw leaves them out of every other finding)."""
    if rows.empty or not kept:
        return rows.iloc[0:0]
    keys = {
        (s.model, f"{s.dataset}/{screens.SETTING}/{r}", i)
        for s in kept
        for r in vocabulary.RESPONSES
        for i in s.matched_ids
    }
    if not keys:
        return rows.iloc[0:0]
    labels = zip(rows["model"].astype(str), rows["condition"].astype(str), rows["sample_index"].astype(int))
    keep = np.fromiter(((m, c, i) in keys for m, c, i in labels), dtype=bool, count=len(rows))
    return rows[keep].reset_index(drop=True)


def _load_exported(
    path: Path, models, conditions, *, max_length: int | None, n_samples: int | None, data_dir, unread: set[str]
) -> StudyResults:
    """``load_results`` of an exported Parquet file: its rows (no skipped samples travel with it;
    ``unread``: the columns left on disk)."""
    filters: list[tuple[str, str, object]] = [("model", "in", list(models)), ("condition", "in", list(conditions))]
    if max_length is not None:
        filters.append(("max_length", "==", int(max_length)))
    try:
        import pyarrow.parquet as pq

        left_out = {*unread, *null_columns([path])}
        columns = [c for c in pq.read_schema(path).names if c not in left_out]
        rows = read_exported(path, filters, columns, compact=True)
    except (OSError, ValueError) as error:
        raise StoreError(f"{path}: cannot read the exported results ({error})") from None
    skipped = pd.DataFrame(columns=["model", "condition", "template", "max_length", "sample_index", "reason"])
    rows, skipped = _one_run_per_model(rows, skipped)
    rows = metrics.mean_over_draws(rows)
    if n_samples is not None and len(rows):  # the same seeded random sample as a store is read with
        rows = sampled(rows, n_samples, data_dir)
    coverage = _coverage(rows, skipped, models, conditions, n_samples=n_samples, data_dir=data_dir, drawn={})
    present = tuple(m for m in models if len(rows) and (rows["model"] == m).any())
    return StudyResults(rows, skipped, coverage, present, tuple(conditions), n_samples)


def _one_run_per_model(rows: pd.DataFrame, skipped: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keep each model's registry template and refuse an ambiguous truncation length."""
    if rows.empty:
        return rows, skipped
    runs = rows.groupby(["model", "template", "max_length"], observed=True).size().index.to_frame(index=False)
    dropped = []  # (model, template) of the rows left out
    for model, group in runs.groupby("model", observed=True):
        template = _registry_template(model)
        templates = sorted(set(group["template"]))
        if template is not None and template in templates:
            dropped += [(model, t) for t in templates if t != template]
        elif len(templates) > 1:
            raise ReportError(f"model {model!r} has results under several templates {templates}")
        lengths = sorted(set(group["max_length"]))
        if len(lengths) > 1:
            raise ReportError(
                f"model {model!r} has results for several max_length values {lengths}: "
                "pass the notebook parameter max_length"
            )
    if dropped:
        left_out = pd.MultiIndex.from_frame(rows[["model", "template"]]).isin(dropped)
        rows = rows[~left_out].reset_index(drop=True)
        kept = ~pd.MultiIndex.from_frame(runs[["model", "template"]]).isin(dropped)
        runs = runs[kept]
    if len(skipped):
        runs = runs.astype({"model": str, "template": str}).astype({"max_length": skipped["max_length"].dtype})
        skipped = skipped.merge(runs, on=["model", "template", "max_length"], how="inner")
    return rows, skipped


def _coverage(
    rows, skipped, models, conditions, *, n_samples: int | None, data_dir, drawn: sample_draws.Drawn
) -> pd.DataFrame:
    """Per model and condition: the samples expected (as many as the run drew, where it kept its draw),
    stored, skipped and missing."""
    stored = rows.groupby(["model", "condition"])["sample_index"].nunique() if len(rows) else pd.Series(dtype=int)
    skips = skipped.groupby(["model", "condition"])["sample_index"].nunique() if len(skipped) else pd.Series(dtype=int)
    expected = {
        c: len(drawn[c, n_samples]) if (c, n_samples) in drawn else _expected_count(c, n_samples, data_dir)
        for c in conditions
    }
    table = []
    for model in models:
        for condition in conditions:
            n_stored = int(stored.get((model, condition), 0))
            n_skipped = int(skips.get((model, condition), 0))
            want = expected[condition]
            missing = (n_stored + n_skipped == 0) if want is None else max(0, want - n_stored - n_skipped)
            table.append(
                {
                    "model": model,
                    "condition": condition,
                    "expected": want,
                    "stored": n_stored,
                    "skipped": n_skipped,
                    "missing": int(missing),
                }
            )
    return pd.DataFrame(table, columns=["model", "condition", "expected", "stored", "skipped", "missing"])


def require_store_rows(results_dir, models: Sequence[str], command: str) -> None:
    """Stop with ``command`` when the store holds no row of any of ``models`` (a page of a store
    that holds some rows, but none of its own conditions, says so instead)."""
    path = Path(results_dir)
    if is_exported_file(path):
        held = len(read_exported(path, [("model", "in", list(models))], ["model"])) > 0
    else:
        held = bool(ResultsStore(path, create=False).distinct("model", [("model", "in", list(models))]))
    if not held:
        raise ReportError(f"{path}: the results store holds no rows of the run's models; first run `{command}`")


def offline_models(names: Sequence[str]) -> list[str]:
    """The offline (GGUF) models among ``names``."""
    return [n for n in names if n in OFFLINE_MODELS]


def figure_note(models: Sequence[str] | str, n_samples: int | None = None) -> str | None:
    """The line printed under every figure that shows an offline model (None otherwise)."""
    names = [models] if isinstance(models, str) else list(models)
    offline = offline_models(names)
    if not offline:
        return None
    note = OFFLINE_NOTE.format(names=", ".join(offline))
    return note + (f"; {n_samples} instructions per dataset" if n_samples else "")


def imported_models(rows: pd.DataFrame) -> list[str]:
    """Models whose rows are the original study's imported statistics (column ``origin`` set)."""
    if rows.empty or "origin" not in rows:
        return []
    return [str(m) for m in rows.loc[rows["origin"].notna(), "model"].unique()]


def origin_note(rows: pd.DataFrame) -> str | None:
    """Whose numbers these are, for the imported models among ``rows`` (None when none is imported)."""
    names = imported_models(rows)
    length = " and ".join(LENGTH_CHECKS)
    return ORIGIN_NOTE.format(names=", ".join(names), absent=NOT_IMPORTED, length=length) if names else None


def lacks(rows: pd.DataFrame, column: str) -> bool:
    """Whether ``rows`` hold no value of ``column`` at all (absent from the imported statistics)."""
    return rows.empty or column not in rows or rows[column].isna().all()
