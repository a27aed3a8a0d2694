"""What produced the numbers: the run log, package versions, data checksums, models and benchmarks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import data
from analysis.core.registry import OFFLINE_MODELS, known_model
from analysis.data.data_errors import DataError
from analysis.report.display import column_parts
from analysis.store.runlog import RunRecord


def profile_table(run: RunRecord | None) -> pd.DataFrame:
    """Profile parameters of a run, one row per parameter."""
    profile = dict(run.profile if run else {})
    if "conditions" in profile:
        profile["conditions"] = f"{len(profile['conditions'])} conditions"
    return pd.DataFrame({"parameter": list(profile), "value": [str(v) for v in profile.values()]})


def package_table(run: RunRecord | None, current: dict[str, str] | None = None) -> pd.DataFrame:
    """Package versions recorded by the run, next to those of the kernel that renders the book."""
    recorded = run.packages if run else {}
    names = sorted(set(recorded) | set(current or {}))
    return pd.DataFrame(
        {
            "package": names,
            "run": [recorded.get(n, "") for n in names],
            "this kernel": [(current or {}).get(n, "") for n in names],
        }
    )


def extraction_time_table(runs: Sequence[RunRecord]) -> pd.DataFrame:
    """Seconds of computation per (model, condition), summed over every run that computed samples."""
    records = [r for run in runs for r in run.extraction]
    if not records:
        return pd.DataFrame(columns=["model", "condition", "computed", "seconds", "seconds_per_sample"])
    frame = pd.DataFrame(records)
    table = (
        frame.groupby(["model", "condition"], sort=False)
        .agg(computed=("computed", "sum"), seconds=("seconds", "sum"))
        .reset_index()
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        table["seconds_per_sample"] = table["seconds"] / table["computed"].where(table["computed"] > 0)
    return table


def run_sentence(runs: Sequence[RunRecord], results_dir, imported: bool = False) -> str:
    """Markdown: which run this page describes, and whether it had finished when the page ran
    (``imported``: the numbers are the original study's, imported rather than computed)."""
    if not runs:
        made = (
            "these rows were imported without the command line (`python -m analysis import-original` records "
            "each import)"
            if imported
            else "these results were made by `python -m analysis extract` or an older version"
        )
        return f"No run log in {results_dir}: {made}, so profile, times and versions are not recorded."
    run = runs[-1]
    started = datetime.fromisoformat(run.started).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"Latest of {len(runs)} recorded runs: profile **{run.profile.get('name', '?')}**, started {started}, "
        f"executor {run.executor}, Python {run.python or '?'} on {run.platform or '?'} "
        f"({run.cpu_count or '?'} CPUs)."
    )
    if run.threads:
        text += f" {threads_sentence(run.threads)}"
    if run.failed:
        text += f" The run ended with an error ({run.failed}); what it stored before is kept."
    elif not run.finished:
        text += (
            " The run was still going when this page was executed (this page runs before the book is "
            "built), so its total is the time elapsed until then."
        )
    return text


def time_summary(runs: Sequence[RunRecord]) -> pd.DataFrame:
    """Wall time of each phase of the latest run, and total compute per model over all runs."""
    out = []
    if runs:
        run = runs[-1]
        total = "total wall time" if run.finished else "elapsed until this page was executed"
        phases = [
            ("extraction", run.extraction_seconds),
            ("notebooks", run.notebooks_seconds),
            ("book build", run.book.get("seconds")),
            (total, run.elapsed()),
        ]
        out += [{"what": f"latest run: {name}", "seconds": seconds} for name, seconds in phases if seconds is not None]
    per_model = extraction_time_table(runs).groupby("model", sort=False)[["computed", "seconds"]].sum()
    for model, r in per_model.iterrows():
        out.append({"what": f"{model}: {int(r['computed'])} samples computed over all runs", "seconds": r["seconds"]})
    for model, seconds in (runs[-1].model_loads if runs else {}).items():
        out.append({"what": f"{model}: model load (latest run)", "seconds": seconds})
    table = pd.DataFrame(out, columns=["what", "seconds"])
    table["seconds"] = table["seconds"].map(lambda s: f"{s:.1f}" if s is not None and np.isfinite(s) else "")
    return table


def data_check_table(conditions: Sequence[str], data_dir=None) -> pd.DataFrame:
    """Each condition's data file with its sha256 checked against the published value now."""
    out = []
    for key in conditions:
        condition = data.get_condition(key)
        try:
            resolved = data.resolve(key, data_dir)
            status = "matches" if resolved.sha256_ok else "DIFFERS from the published file"
            digest = resolved.sha256[:16]
        except DataError:
            status, digest = "file not found", ""
        out.append({"condition": key, "file": condition.relative_path, "sha256 (first 16)": digest, "status": status})
    return pd.DataFrame(out)


def data_check_shown(table: pd.DataFrame) -> pd.DataFrame:
    """The data check as the page shows it: each condition and its file in one column ("condition:
    file", which wraps between the two), so that two long names side by side do not make the table
    wider than the page."""
    if table.empty:
        return table
    joined = [f"{c}: {f}" for c, f in zip(table["condition"], table["file"])]
    return pd.concat(
        [pd.DataFrame({"condition: file": joined}, index=table.index), table.drop(columns=["condition", "file"])],
        axis=1,
    )


def data_check_sentence(table: pd.DataFrame) -> str:
    """Markdown: how many data files match their published sha256."""
    if table.empty:
        return "No data files were checked."
    files = table.drop_duplicates("file")
    ok = int((files["status"] == "matches").sum())
    bad = files[files["status"] != "matches"]
    text = f"{ok} of {len(files)} data files match their published sha256."
    if len(bad):
        text += " Not matching: " + "; ".join(f"{r.file} ({r.status})" for r in bad.itertuples()) + "."
    return text


def models_used_table(rows: pd.DataFrame, runs: Sequence[RunRecord] = ()) -> pd.DataFrame:
    """Models found in the results store: template, depth (with the model's own where the stored
    numbers have another), conditions and samples stored, and the import's note on the model."""
    if rows.empty:
        return pd.DataFrame(columns=["model", "template", "layers", "conditions", "samples", "source"])
    notes: dict[str, list[str]] = {}
    for run in runs:
        for item in run.imports:
            if item.get("note") and item.get("model"):
                notes.setdefault(item["model"], [])
                if item["note"] not in notes[item["model"]]:
                    notes[item["model"]].append(item["note"])
    out = []
    for model, group in rows.groupby("model", sort=False):
        info = known_model(model)
        imported = "origin" in group and group["origin"].notna().any()
        source = (
            "the original study's released statistics (imported)"
            if imported
            else "offline GGUF (quantised, dequantised to float32)"
            if model in OFFLINE_MODELS
            else "paper model (hub)"
            if info
            else "local folder or other"
        )
        out.append(
            {
                "model": model,
                "template": group["template"].iloc[0],
                "layers": _layers(int(group["n_layers"].iloc[0]), info),
                "conditions": int(group["condition"].nunique()),
                "samples": int(group.groupby("condition")["sample_index"].nunique().sum()),
                "source": source,
                "note": "; ".join(notes.get(model, [])),
            }
        )
    table = pd.DataFrame(out)
    return table if table["note"].any() else table.drop(columns="note")


def _layers(stored: int, info) -> str:
    """The stored layer count, with the model's own when they differ."""
    if info is not None and info.layers and info.layers != stored:
        return f"{stored} (the model has {info.layers})"
    return str(stored)


def _against_target(value: float, target: float | None, relation: str) -> str:
    """``value`` with its target and whether it is met, e.g. ``1.28 (target >= 1.6: missed)``."""
    if target is None:
        return f"{value:.2f}"
    met = {">=": value >= target, "<=": value <= target, "<": value < target}[relation]
    return f"{value:.2f} (target {relation} {target:g}: {'met' if met else 'missed'})"


def benchmark_table(path) -> pd.DataFrame | None:
    """One row per benchmark case of ``benchmarks/results.json``; None when there is no such file.

    Seconds per sample of the three ways to the same numbers (the original study's plain
    procedure, this project's extraction and the bare forward/backward floor), their ratios next
    to the targets, peak memory and the largest relative difference to a full SVD.
    """
    path = Path(path)
    if not path.is_file():
        return None
    payload = json.loads(path.read_text())
    rows = []
    for case in payload.get("cases", []):
        seconds = case["seconds_per_sample"]
        memory = case.get("peak_memory_mb", {})
        targets = case.get("targets", {})
        load = payload.get("cached_loads", {}).get(case["model"], {})
        rows.append(
            {
                "model": case["model"],
                "case": case["case"],
                "device": case.get("device", ""),
                "samples": case["samples"],
                "mean tokens": round(case["mean_tokens"]),
                "baseline s/sample": round(seconds["baseline"], 3),
                "project s/sample": round(seconds["project"], 3),
                "floor s/sample": round(seconds["floor"], 3),
                "baseline / project": _against_target(
                    case["baseline_over_project"], targets.get("baseline_over_project_at_least"), ">="
                ),
                "project / floor": _against_target(
                    case["project_over_floor"], targets.get("project_over_floor_at_most"), "<="
                ),
                "peak MB (baseline / project / floor)": " / ".join(
                    f"{memory.get(k, float('nan')):.0f}" for k in ("baseline", "project", "floor")
                ),
                "max rel. difference": f"{case['max_relative_difference']:.1e}",
                "cached load s": _against_target(load["load_seconds"], load.get("target_seconds"), "<") if load else "",
            }
        )
    return pd.DataFrame(rows)


# The benchmark's columns of seconds per sample (with the case's device, samples and tokens); the
# others (ratios against their targets, memory, accuracy, load time) form a second table, so that
# neither is wider than the page.
SECONDS_COLUMNS = ("device", "samples", "mean tokens", "baseline s/sample", "project s/sample", "floor s/sample")


def benchmark_parts(table: pd.DataFrame | None) -> list[pd.DataFrame | None]:
    """The benchmark table as the book shows it: its seconds per sample, then the rest, each per
    model and case (``[None]`` for no table, which the page says)."""
    parts: list[pd.DataFrame | None] = [None]
    if table is not None:
        parts = [*column_parts(table, keys=("model", "case"), first=SECONDS_COLUMNS)]
    return parts


def busy_core_table(path) -> pd.DataFrame | None:
    """One row per model of the benchmark's one-core-busy mode (``--busy-core``): seconds per
    sample of the project's run with one other process busy on a core (the threads it chose) and
    with torch's default threads, against one thread on the idle machine; None when the file has
    no such rows."""
    path = Path(path)
    if not path.is_file():
        return None
    rows = []
    for row in json.loads(path.read_text()).get("busy_core", []):
        seconds = row["seconds_per_sample"]
        rows.append(
            {
                "model": row["model"],
                "samples": row["samples"],
                "one thread, idle s/sample": round(seconds["one thread, idle"], 3),
                "project, one core busy s/sample": round(seconds["project, one core busy"], 3),
                "threads chosen": row["threads_chosen"]["threads"],
                "busy / idle": _against_target(row["busy_over_idle"], row.get("target_busy_over_idle_at_most"), "<="),
                f"torch default ({row['default_threads']} threads), busy / idle": f"{row['default_over_idle']:.2f}",
            }
        )
    return pd.DataFrame(rows) if rows else None


def model_facts_table(run: RunRecord | None) -> pd.DataFrame:
    """Each model's revision, attention implementation, chat template hash and transformers version,
    as the run recorded them."""
    facts = run.models if run else {}
    rows = []
    for model, fact in facts.items():
        template = fact.get("chat_template_sha256")
        rows.append(
            {
                "model": model,
                "revision": fact.get("revision") or "",
                "attention": fact.get("attention") or "",
                "chat template sha256 (first 16)": template[:16] if template else "none",
                "transformers": fact.get("transformers") or "",
            }
        )
    return pd.DataFrame(rows)


def export_sentence(export: Path | None, models: Sequence[str] = (), profile: str | None = None) -> str:
    """Markdown: the book's results as one Parquet file to download, and how to re-execute a page on it
    (the command names the run's profile, whose models, conditions and samples the page reads)."""
    if export is None or not Path(export).is_file():
        return "No results file was exported with this book (the results store held no rows when it was built)."
    import hashlib

    import pyarrow.parquet as pq

    meta = pq.read_metadata(export)
    digest = hashlib.sha256()
    with open(export, "rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    name = Path(export).name
    models_option = f' -y "models: [{", ".join(models)}]"' if models else ""
    profile_option = f"-p profile {profile} " if profile else ""
    return (
        f"Every number in this book comes from one table of {meta.num_rows:,} rows (one per sample, layer and "
        f"attention projection; {meta.num_columns} columns): [download it as one Parquet file](../../{name}) "
        f"({Path(export).stat().st_size / 1e6:.1f} MB, sha256 `{digest.hexdigest()[:16]}…`). Any page re-executes "
        "on it without extracting anything, e.g.\n\n"
        "```bash\n"
        "jupytext --to ipynb notebooks/math_reasoning.py\n"
        "papermill notebooks/math_reasoning.ipynb math_reasoning.out.ipynb -k python3 \\\n"
        f"    {profile_option}-p results_dir {name}{models_option}\n"
        "```\n\n"
        f'(pandas reads the file with `pandas.read_parquet("{name}")`).'
    )


def imports_table(runs: Sequence[RunRecord]) -> pd.DataFrame:
    """The original study's files imported into the results store, from every import run's log."""
    rows = []
    for run in runs:
        for item in run.imports:
            if item.get("not_imported") or item.get("already_imported"):
                continue
            problems = ", ".join(f"{n} {kind}" for kind, n in (item.get("problems") or {}).items())
            rows.append(
                {
                    "file": item["file"],
                    "model": item["model"],
                    "condition": item["condition"],
                    "samples imported": item["imported"],
                    "lines not stored": problems or "none",
                    "sha256": str(item["sha256"])[:16],
                    "imported": run.started[:19].replace("T", " "),
                }
            )
    return pd.DataFrame(rows)


def threads_sentence(threads: dict) -> str:
    """How many torch threads the extraction used and why (the run log's ``threads``)."""
    count = threads.get("threads", "?")
    if threads.get("source") != "free cores":
        return f"Extraction with {count} torch threads, as asked."
    load, busy = threads.get("load_1min"), threads.get("busy_sampled")
    measured = [f"cores in use over a one-second sample {busy:.1f}"] if busy is not None else []
    measured += [f"one-minute load average {load:.1f}, recorded only"] if load is not None else []
    return (
        f"Extraction with {count} torch threads: the cores free when it started "
        f"({threads.get('cpus', '?')} CPUs; {'; '.join(measured) or 'no load measured'})."
    )
