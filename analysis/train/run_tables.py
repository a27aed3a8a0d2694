"""The tables of the training runs beside the results store (no torch: pages read them).

Under ``runs/<model>/<run>/`` of a results directory: ``losses/`` (the training loss of every step)
and ``weight_change/`` (the change of every attention projection since step 0 at each
checkpoint), each a folder of Parquet parts named by the steps they cover. A part is written under
a hidden name and renamed into place; written again after a resume, it is replaced by the same
numbers. ``done.json`` marks a finished run.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.train.naming import RUNS_FOLDER

LOSSES = "losses"
WEIGHT_CHANGE = "weight_change"
DONE = "done.json"


def write_part(run_dir: Path, table: str, frame: pd.DataFrame, *, first: int, last: int) -> Path:
    """Write the rows of steps ``first``..``last`` of one table of a run, atomically."""
    directory = run_dir / table
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"part-{first:06d}-{last:06d}.parquet"
    temporary = directory / f".part-{uuid.uuid4().hex[:12]}.tmp"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), temporary)
    os.replace(temporary, final)
    return final


def read_table(results_dir: str | os.PathLike, table: str) -> pd.DataFrame:
    """One table of every run under a results directory (empty when none has written it)."""
    root = Path(results_dir) / RUNS_FOLDER
    files = sorted(root.glob(f"*/*/{table}/part-*.parquet")) if root.is_dir() else []
    if not files:
        return pd.DataFrame()
    frame = pd.concat([pd.read_parquet(path) for path in files], ignore_index=True)
    key = ["model", "run", "step"] + (["layer", "proj"] if table == WEIGHT_CHANGE else [])
    return frame.drop_duplicates(key, keep="last").sort_values(key, ignore_index=True)
