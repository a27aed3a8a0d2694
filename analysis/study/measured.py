"""The measured runs: one row per run, in ``book/_data/measured.csv``, written by a command, never typed.

``python -m analysis measured RESULTS_DIR`` appends the latest finished run of a results store
(its run log, ``analysis.runlog``) as one row: profile, command, date, commit, machine, threads,
whether it resumed a store, the install's and each stage's seconds, and the peak resident memory.
The book's execution-statistics page shows the rows beside the run log of the build that made the
book (labelled as such: the published book is built elsewhere), and the README's profiles table
states each profile's whole run, rounded from the same rows (a test compares them).
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import pandas as pd

from analysis.core.errors import StudyError
from analysis.store import runlog
from analysis.store.runlog import RunRecord

MEASURED_FILE = Path("book", "_data", "measured.csv")
COLUMNS = (
    "run",
    "profile",
    "command",
    "date",
    "commit",
    "dirty",
    "cpu_model",
    "cores",
    "threads",
    "resumed",
    "install_s",
    "extraction_s",
    "notebooks_s",
    "book_s",
    "run_s",
    "total_s",
    "peak_rss_gb",
)
# An install counts as part of a run when it finished at most this long before the run started
# (``make book`` in a fresh clone: install, data, run).
INSTALL_WINDOW_S = 600


class MeasuredRunError(StudyError, ValueError):
    """A run that cannot be written as a measured row."""


def measured_row(run: RunRecord) -> dict:
    """One finished run as a row of ``COLUMNS``; an unfinished or failed run is refused."""
    if not run.finished:
        raise MeasuredRunError(f"run {run.id} has not finished (or died): only a finished run is a measurement")
    if run.failed:
        raise MeasuredRunError(f"run {run.id} failed ({run.failed[:200]}): only a successful run is a measurement")
    return row_of(run)


def row_of(run: RunRecord) -> dict:
    """A run as a row of ``COLUMNS``, also while it goes on (seconds to one decimal, memory in GB of
    10^9 bytes; a stage not yet done is blank; a run going on reports this process's peak so far)."""
    install = install_seconds(run)
    wall = run.elapsed()
    peak = run.peak_rss_bytes if run.finished else runlog.peak_rss_bytes()
    return {
        "run": run.id,
        "profile": run.profile.get("name", ""),
        "command": run.command,
        "date": run.started[:10],
        "commit": run.commit.get("sha", "")[:12],
        "dirty": run.commit.get("dirty", ""),
        "cpu_model": run.machine.get("cpu_model", ""),
        "cores": run.machine.get("usable_cores") or run.cpu_count or "",
        "threads": run.threads.get("threads", ""),
        "resumed": run.resumed,
        "install_s": _seconds(install),
        "extraction_s": _seconds(run.extraction_seconds),
        "notebooks_s": _seconds(run.notebooks_seconds),
        "book_s": _seconds(run.book.get("seconds")),
        "run_s": _seconds(wall),
        "total_s": _seconds(wall + (install or 0.0)),
        "peak_rss_gb": "" if peak is None else round(peak / 1e9, 2),
    }


def install_seconds(run: RunRecord) -> float | None:
    """The install's seconds where it belongs to this run (it finished at most ``INSTALL_WINDOW_S``
    before the run started, as in ``make book`` on a fresh clone); None otherwise."""
    if not run.install.get("finished") or run.install.get("seconds") is None:
        return None
    gap = datetime.fromisoformat(run.started) - datetime.fromisoformat(run.install["finished"])
    return float(run.install["seconds"]) if 0 <= gap.total_seconds() <= INSTALL_WINDOW_S else None


def _seconds(value: float | None) -> float | str:
    return "" if value is None else round(float(value), 1)


def append_run(results_dir: Path, *, file: Path) -> dict:
    """Append the latest run of ``results_dir`` to the measured runs in ``file``; the row written.
    A run already there, an unfinished or failed one, or a store without a run log is refused."""
    run = runlog.latest(results_dir)
    if run is None:
        raise MeasuredRunError(f"{results_dir}: no run log ({runlog.RUN_LOG}); run `python -m analysis run` first")
    row = measured_row(run)
    table = read_measured(file)
    if row["run"] in set(table["run"]):
        raise MeasuredRunError(f"{file}: run {row['run']} is already recorded")
    file.parent.mkdir(parents=True, exist_ok=True)
    new = not file.is_file()
    with open(file, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(row)
    return row


def read_rows(rows: list[dict]) -> pd.DataFrame:
    """Rows of the measured table as ``read_measured`` reads them from its file."""
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    for flag in ("resumed", "dirty"):
        table[flag] = table[flag].map(lambda v: str(v).strip().lower() == "true")
    return table


def read_measured(file: Path) -> pd.DataFrame:
    """The measured runs (an empty table with ``COLUMNS`` where the file does not exist)."""
    if not Path(file).is_file():
        return pd.DataFrame(columns=list(COLUMNS))
    table = pd.read_csv(file, dtype={"run": str, "commit": str})
    unknown = set(COLUMNS) - set(table.columns)
    if unknown:
        raise MeasuredRunError(f"{file}: missing columns {sorted(unknown)}")
    for flag in ("resumed", "dirty"):  # blank where unknown (no git): read as not set
        table[flag] = table[flag].map(lambda v: str(v).strip().lower() == "true")
    return table


def whole_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that measure a run whole: install included, no store resumed, no local changes; the
    latest per profile."""
    whole = table[table["install_s"].notna() & table["commit"].notna() & ~table["resumed"] & ~table["dirty"]]
    return whole.sort_values("run").groupby("profile", sort=False).tail(1).set_index("profile")


def duration_text(seconds: float) -> str:
    """A duration rounded for a reader: "≈ 35 min", "≈ 1 h 23 min", "≈ 50 s"."""
    if seconds < 60:
        return f"≈ {round(seconds)} s"
    minutes = round(seconds / 60)
    return f"≈ {minutes} min" if minutes < 60 else f"≈ {minutes // 60} h {minutes % 60} min"


def profile_cells(table: pd.DataFrame) -> dict[str, str]:
    """Per profile, its whole run as the README states it: "≈ 35 min, 6.3 GB"."""
    return {
        profile: f"{duration_text(float(row['total_s']))}, {float(row['peak_rss_gb']):.1f} GB"
        for profile, row in whole_runs(table).iterrows()
    }


MINUTES = {
    "install": "install_s",
    "extraction": "extraction_s",
    "notebooks": "notebooks_s",
    "book": "book_s",
    "total": "total_s",
}


def shown_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The measured runs as the page shows them, narrow enough for its column: the profile, the date,
    the commit's first seven characters, torch's threads, each stage and the whole in minutes, the
    peak memory, and whether the row measures a run whole (``whole_runs``)."""
    seconds = {column: pd.to_numeric(table[column], errors="coerce") for column in MINUTES.values()}
    commit = table["commit"].fillna("").astype(str)
    whole = seconds["install_s"].notna() & (commit != "") & ~table["resumed"] & ~table["dirty"]
    out = pd.DataFrame(
        {
            "profile": table["profile"],
            "date": table["date"],
            "commit": commit.str[:7],
            "threads": table["threads"],
            **{f"{name} (min)": (seconds[column] / 60).round(1) for name, column in MINUTES.items()},
            "peak GB": table["peak_rss_gb"],
            "whole": whole.map({True: "yes", False: "no"}),
        }
    )
    return out.fillna("")


def page_markdown(table: pd.DataFrame, this_build: RunRecord | None) -> str:
    """The execution-statistics page's generated part: the measured runs, then this build's run."""
    lines = ["## Measured runs", ""]
    if table.empty:
        lines += ["No run has been measured yet (`python -m analysis measured RESULTS_DIR` adds one).", ""]
    else:
        lines += [shown_runs(table).to_markdown(index=False), ""]
        machines = sorted(set(table["cpu_model"].dropna()))
        lines += [f"Machines: {'; '.join(machines)}.", ""]
    lines += ["## This build's run", ""]
    if this_build is None:
        lines += ["This book was built without a run of the study (no run log was given to the build).", ""]
    else:
        lines += [
            "The run that made this book, as far as its log went when the book was built (the book's "
            "build itself is not counted). Not a measured row: where the book is published it is built "
            "on another machine.",
            "",
            shown_runs(read_rows([row_of(this_build)])).to_markdown(index=False),
            "",
        ]
    return "\n".join(lines)
