"""Files in the original study's statistics format, for tests and for measuring the importer.

The original script writes ``grads_exp/<task>/<model>/grads_<data file stem>.jsonl``, one JSON
object per sample: ``instruction`` (with the input appended on a new line), ``output``, ``loss``
and per parameter ``{S_sum, S_max, S_min, frobenius_norm, M_mean, M_max, M_min}``. The writers here
build such lines from rows this project extracted (so an import can be compared with them), or
from random numbers (to measure the importer at a realistic size), and the fault injectors add
what a real tree can hold: cut, foreign, repeated and unmatched lines and NaN.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from analysis import data
from analysis.data.records import Record, load_records

STAT_COLUMNS = {
    "S_sum": "nuclear_norm",
    "S_max": "sigma_max",
    "S_min": "sigma_min",
    "frobenius_norm": "frobenius",
    "M_mean": "entry_mean",
    "M_max": "entry_max",
    "M_min": "entry_min",
}
PROJECTIONS = ("q", "k", "v", "o")


def parameter_name(layer: int, proj: str) -> str:
    return f"model.layers.{layer}.self_attn.{proj}_proj.weight"


def tree_path(root: Path, model_folder: str, condition: str) -> Path:
    """Where the original script writes a model's statistics of a condition under ``root``."""
    relative = PurePosixPath(data.get_condition(condition).relative_path)
    return Path(root) / "grads_exp" / relative.parent / model_folder / f"grads_{relative.stem}.jsonl"


def instruction_of(record: Record) -> str:
    return record.instruction + "\n" + record.input if record.input else record.instruction


def line_from_rows(record: Record, sample_rows: pd.DataFrame) -> dict:
    """One line of the original format from one sample's extracted rows (with entry statistics)."""
    line = {"instruction": instruction_of(record), "output": record.output, "loss": float(sample_rows["loss"].iloc[0])}
    for row in sample_rows.itertuples():
        line[parameter_name(int(row.layer), row.proj)] = {
            key: float(getattr(row, column)) for key, column in STAT_COLUMNS.items()
        }
    return line


def write_from_rows(root: Path, model_folder: str, rows: pd.DataFrame, data_dir: Path) -> list[Path]:
    """Write every condition of ``rows`` (extracted rows of one model) as a file of the original tree."""
    written = []
    for condition, group in rows.groupby("condition"):
        records = load_records(Path(data_dir) / data.get_condition(condition).relative_path)
        path = tree_path(root, model_folder, condition)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as handle:
            for index, sample in group.sort_values(["sample_index", "layer", "proj"]).groupby("sample_index"):
                handle.write(json.dumps(line_from_rows(records[int(index)], sample)) + "\n")
        written.append(path)
    return written


def random_line(record: Record, n_layers: int, rng: np.random.Generator) -> dict:
    """A line with random but well-formed statistics (sizes as the original's float reprs)."""
    line = {"instruction": instruction_of(record), "output": record.output, "loss": float(rng.uniform(0.5, 3))}
    for layer in range(n_layers):
        for proj in PROJECTIONS:
            s = np.sort(rng.lognormal(size=3))
            entries = rng.normal(scale=1e-4, size=3)
            line[parameter_name(layer, proj)] = {
                "M_mean": float(entries[0]),
                "M_max": float(abs(entries[1])),
                "M_min": -float(abs(entries[2])),
                "frobenius_norm": float(s[1] * 1.3),
                "S_sum": float(s.sum() * 20),
                "S_max": float(s[2]),
                "S_min": float(s[0] * 1e-9),
            }
    return line


def write_random(
    root: Path, model_folder: str, conditions, n_layers: int, data_dir: Path, n_samples: int | None = None, seed=0
) -> list[Path]:
    """Files of random statistics for the first ``n_samples`` records of each condition."""
    rng = np.random.default_rng(seed)
    written = []
    for condition in conditions:
        records = load_records(Path(data_dir) / data.get_condition(condition).relative_path)
        path = tree_path(root, model_folder, condition)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as handle:
            for record in records[:n_samples]:
                handle.write(json.dumps(random_line(record, n_layers, rng)) + "\n")
        written.append(path)
    return written


# --------------------------------------------------------------------------- faults


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def append_cut_line(path: Path) -> None:
    """A last line cut by a crash: the start of a copy of the first line, no newline."""
    first = Path(path).read_text().splitlines()[0]
    with open(path, "a") as handle:
        handle.write(first[: len(first) // 2])


def append_line(path: Path, item) -> None:
    with open(path, "a") as handle:
        handle.write(json.dumps(item) + "\n")


def append_duplicate(path: Path, line: int = 0) -> None:
    """The ``line``-th record once more at the end (the same sample twice)."""
    append_line(path, read_lines(path)[line])


def append_unmatched(path: Path) -> None:
    """A record in the format whose instruction is in no data file."""
    item = read_lines(path)[0]
    item["instruction"] = "An instruction that no data file of the study holds."
    append_line(path, item)


def append_foreign(path: Path) -> None:
    """A JSON object of another format."""
    append_line(path, {"id": 7, "text": "not a gradient record"})


def set_nan(path: Path, line: int, layer: int = 0, proj: str = "q", key: str = "S_sum") -> None:
    """Make one statistic of one line NaN, as the original's json.dumps writes it."""
    items = read_lines(path)
    items[line][parameter_name(layer, proj)][key] = float("nan")
    Path(path).write_text("".join(json.dumps(item) + "\n" for item in items))
