"""The samples a run draws from each condition's file: the seeded draw, and the draws kept beside
the results store.

A run with ``n_samples`` per file takes a seeded random sample of each condition's records
(``dataset_sample_ids``: the same ids for every file of a dataset, ``sample_ids`` for a file of
your own). It draws each condition's sample once and writes the ids beside the store before
computing them; the pages read them back instead of drawing again, so a page reads exactly the
samples its run took, whatever data files it can see. A store made before draws were kept (or rows
imported, or an exported file) has none: the pages then draw the same seeded sample themselves
(``analysis.report.load.sampled_ids``).

    draws/<condition, URL-quoted>/n-<N>.json   {"condition", "n_samples", "sample_index": [ids in draw order]}
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import quote, unquote

import numpy as np

from analysis.core.errors import StudyError
from analysis.data import identical_response_ids

# The seed of the instructions a profile takes from each file (a fixed, stated seed: every run
# takes the same ones).
SAMPLE_SEED = 0


def sample_ranks(dataset: str, count: int, seed: int = SAMPLE_SEED) -> np.ndarray:
    """A random rank for each record index 0..count-1 of a dataset's files, the same for every
    file of the dataset (and for index i whatever the file's length): the first of a seeded
    stream of uniform numbers, one per index."""
    rng = np.random.default_rng([int(seed), zlib.crc32(dataset.encode())])
    return rng.random(int(count))


def sample_ids(
    dataset: str, count: int, limit: int | None, *, seed: int = SAMPLE_SEED, excluded: Iterable[int] = ()
) -> list[int]:
    """The record indices a run with ``limit`` samples per file takes from a file of ``count``
    records: a seeded random sample (all of them without a limit), sorted.

    The first N records of a file are not a random sample of it (StrategyQA's None-CoT pairs
    whose irrelevant answer equals the correct one begin at index 58, for one). Every file of a
    dataset gets the same ids: the same questions under every setting, with correct and
    irrelevant responses, and on every model. Indices in ``excluded`` are passed over in the
    seeded order (the draw topped up with the next ranked ones), and taken last only when too few
    others are left.
    """
    if limit is None or limit >= count:
        return list(range(int(count)))
    return sorted(int(i) for i in sample_order(dataset, count, seed, excluded)[: int(limit)])


def sample_order(dataset: str, count: int, seed: int = SAMPLE_SEED, excluded: Iterable[int] = ()) -> np.ndarray:
    """Every record index of a file of ``count`` records in the seeded order that ``sample_ids``
    draws from (it takes the first ``limit``), the indices in ``excluded`` moved to the end."""
    order = np.argsort(sample_ranks(dataset, count, seed), kind="stable")
    skipped = np.isin(order, np.fromiter((int(i) for i in excluded), dtype=int))
    return np.concatenate([order[~skipped], order[skipped]])


def dataset_sample_ids(
    dataset: str, count: int, limit: int | None, *, directory: str | os.PathLike | None = None, seed: int = SAMPLE_SEED
) -> list[int]:
    """``sample_ids`` of a study dataset, drawn from the instructions whose None-CoT irrelevant
    response differs from the correct one (``identical_response_ids``) for every file of the
    dataset: so that F3's None-CoT comparison has the profile's n, and every setting keeps the
    same questions. Datasets without such pairs (or without None-CoT files) keep the plain draw;
    a run of all records takes all of them."""
    if limit is None or limit >= count:
        return list(range(int(count)))
    return sample_ids(dataset, count, limit, seed=seed, excluded=identical_response_ids(dataset, "none", directory))


DRAWS = "draws"

Drawn = dict[tuple[str, int | None], list[int]]
"""(condition, n_samples) -> the ids drawn, in draw order (n_samples None: all records)."""


class DrawsError(StudyError, ValueError):
    """A kept draw that cannot be read."""


def draw_path(root, condition: str, n_samples: int | None) -> Path:
    """Where the draw of ``n_samples`` of ``condition`` is kept in the store at ``root``."""
    return Path(root) / DRAWS / quote(condition, safe="") / f"n-{n_samples if n_samples else 'all'}.json"


def record(root, condition: str, n_samples: int | None, ids: Sequence[int]) -> None:
    """Keep the ids a run drew for ``condition`` (replacing an earlier draw of the same size)."""
    path = draw_path(root, condition, n_samples)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"condition": condition, "n_samples": n_samples, "sample_index": [int(i) for i in ids]}
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(payload))
    os.replace(temporary, path)


def read(root) -> Drawn:
    """Every draw kept in the store at ``root`` ({} when none is)."""
    folder = Path(root) / DRAWS
    drawn: Drawn = {}
    for path in sorted(folder.glob("*/n-*.json")) if folder.is_dir() else []:
        try:
            payload = json.loads(path.read_text())
            key = (payload["condition"], payload["n_samples"])
            ids = [int(i) for i in payload["sample_index"]]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise DrawsError(f"{path}: not a kept draw of {unquote(path.parent.name)} ({error})") from None
        drawn[key] = ids
    return drawn
