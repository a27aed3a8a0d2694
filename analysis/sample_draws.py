"""Which samples a run drew for each condition, kept beside the results store.

A run draws each condition's sample once (``data.dataset_sample_ids``: a seeded random sample of
its records) and writes the ids here before computing them; the pages read them back instead of
drawing again, so a page reads exactly the samples its run took, whatever data files it can see.
A store made before draws were kept (or rows imported, or an exported file) has none: the pages
then draw the same seeded sample themselves (``analysis.report.load.sampled_ids``).

    draws/<condition, URL-quoted>/n-<N>.json   {"condition", "n_samples", "sample_index": [ids in draw order]}
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, unquote

from analysis.core.errors import StudyError

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
