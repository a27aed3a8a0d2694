"""The measured runs: a run log measures a run whole (machine, commit, command, install, resumed,
peak memory), ``python -m analysis measured`` appends it as one row of ``book/_data/measured.csv``,
the execution-statistics page shows the rows beside the build's own run, and the README's profiles
table states what the rows say."""

import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli.main import main
from analysis.store import runlog
from analysis.study import book, measured

ROOT = Path(__file__).resolve().parents[1]


def _run(
    results: Path,
    *,
    resumed: bool = False,
    dirty: bool = False,
    install_ago_s: float | None = 30.0,
    prefix: Path | None = None,
):
    """A finished run in ``results``'s log, with an install that finished ``install_ago_s`` before it."""
    if install_ago_s is not None and prefix is not None:
        stamp = prefix / runlog.INSTALL_FILE
        stamp.write_text("104\n")
        finished = (datetime.now(timezone.utc) - timedelta(seconds=install_ago_s)).timestamp()
        os.utime(stamp, (finished, finished))
    with runlog.recording(results, {"name": "quick"}) as log:
        with log.changing() as record:
            record.install = runlog.install_facts(prefix) if prefix else {}
            record.extraction = [{"model": "m", "condition": "c", "already_done": 3 if resumed else 0, "computed": 2}]
            record.extraction_seconds = 12.0
            record.notebooks_seconds = 5.0
            record.book = {"seconds": 4.0}
            record.threads = {"threads": 2}
            record.commit = {"sha": "0123456789abcdef" * 2, "dirty": dirty}
    return runlog.latest(results)


def test_a_run_log_measures_the_machine_the_commit_the_command_and_the_peak_memory(tmp_path, monkeypatch):
    monkeypatch.setenv(runlog.COMMAND_VARIABLE, "make book PROFILE=quick")
    run = _run(tmp_path, prefix=tmp_path)
    assert run.command == "make book PROFILE=quick"
    assert run.machine["cores"] >= 1 and run.machine["usable_cores"] >= 1 and run.machine["cpu_model"]
    assert run.machine["memory_bytes"] > 2**28
    assert re.fullmatch(r"[0-9a-f]{40}", runlog.commit_facts(ROOT)["sha"])
    assert run.peak_rss_bytes > 50 * 2**20  # this process holds pandas and torch's imports
    assert run.install["seconds"] == 104.0 and not run.resumed
    assert runlog.install_facts(tmp_path / "absent") == {}


def test_the_command_appends_one_row_per_finished_run_and_refuses_it_twice(tmp_path, capsys):
    results, file = tmp_path / "store", tmp_path / "measured.csv"
    results.mkdir()
    run = _run(results, prefix=tmp_path)
    assert main(["measured", str(results), "--file", str(file)]) == 0
    table = measured.read_measured(file)
    assert list(table.columns) == list(measured.COLUMNS) and len(table) == 1
    row = table.iloc[0]
    assert row["run"] == run.id and row["profile"] == "quick" and row["install_s"] == 104.0
    assert row["total_s"] == pytest.approx(row["run_s"] + 104.0, abs=0.11)
    assert row["extraction_s"] == 12.0 and row["notebooks_s"] == 5.0 and row["book_s"] == 4.0
    assert "the README states quick" in capsys.readouterr().out
    assert main(["measured", str(results), "--file", str(file)]) == 2
    assert "already recorded" in capsys.readouterr().err
    assert len(measured.read_measured(file)) == 1


def test_an_unfinished_or_failed_run_is_no_measurement(tmp_path):
    record = runlog.RunRecord.start({"name": "quick"}, "local", {}, [])
    with pytest.raises(measured.MeasuredRunError, match="has not finished"):
        measured.measured_row(record)
    record.finish()
    record.failed = "RuntimeError: out of memory"
    with pytest.raises(measured.MeasuredRunError, match="failed"):
        measured.measured_row(record)
    with pytest.raises(measured.MeasuredRunError, match="no run log"):
        measured.append_run(tmp_path, file=tmp_path / "m.csv")


def test_only_a_whole_run_states_a_profile(tmp_path):
    """A resumed store, an install long before the run or local changes: a row, but not a whole run,
    and the README states only whole runs."""
    file = tmp_path / "measured.csv"
    parts = {"resumed": {"resumed": True}, "old": {"install_ago_s": 7200.0}, "dirty": {"dirty": True}}
    for name, kwargs in parts.items():
        (tmp_path / name).mkdir()
        _run(tmp_path / name, prefix=tmp_path, **kwargs)
        measured.append_run(tmp_path / name, file=file)
    table = measured.read_measured(file)
    assert table["resumed"].tolist() == [True, False, False] and pd.isna(table["install_s"].iloc[1])
    assert table["dirty"].tolist() == [False, False, True]
    assert measured.profile_cells(table) == {}
    (tmp_path / "whole").mkdir()
    _run(tmp_path / "whole", prefix=tmp_path)
    measured.append_run(tmp_path / "whole", file=file)
    cells = measured.profile_cells(measured.read_measured(file))
    assert list(cells) == ["quick"] and re.fullmatch(r"≈ 2 min, \d+\.\d GB", cells["quick"])


def test_durations_are_rounded_for_a_reader():
    assert measured.duration_text(49.6) == "≈ 50 s"
    assert measured.duration_text(35 * 60 + 20) == "≈ 35 min"
    assert measured.duration_text(83 * 60 + 21) == "≈ 1 h 23 min"


def test_the_execution_statistics_page_shows_the_rows_and_this_builds_run(tmp_path):
    book.copy_book_sources(ROOT, tmp_path)
    (tmp_path / "store").mkdir()
    run = _run(tmp_path / "store", prefix=tmp_path)
    file = tmp_path / measured.MEASURED_FILE
    file.unlink(missing_ok=True)
    measured.append_run(tmp_path / "store", file=file)
    book.write_generated(tmp_path, run=run)
    page = (tmp_path / book.MEASURED_RUNS_FILE).read_text()
    measured_part, this_build = page.split("## This build's run")
    assert run.id not in page  # the run's id is not shown, its date and command are
    assert measured_part.count("| quick ") == 1 and "| quick " in this_build
    assert "Not a measured row" in this_build
    page_source = (ROOT / "book" / "execution_statistics.md").read_text()
    assert f"{{include}} {book.MEASURED_RUNS_FILE.relative_to('book')}" in page_source


def test_this_build_s_run_shows_a_stage_not_yet_done_as_blank(tmp_path):
    """While the book builds, its own stage has no seconds yet: the row shows it blank, not a crash."""
    run = _run(tmp_path, prefix=tmp_path)
    with runlog.recording(tmp_path, {"name": "quick"}) as log:
        with log.changing() as record:
            record.extraction_seconds = 12.0
    going_on = runlog.latest(tmp_path)
    assert going_on.book.get("seconds") is None and run.book.get("seconds") == 4.0
    shown = measured.shown_runs(measured.read_rows([measured.row_of(going_on)]))
    assert shown.loc[0, "book (min)"] == "" and shown.loc[0, "extraction (min)"] == 0.2
    assert shown.loc[0, "whole"] == "no"  # no install measured for it
    assert "| quick " in measured.page_markdown(measured.read_measured(tmp_path / "none.csv"), going_on)


def test_the_readme_states_each_profile_as_its_latest_whole_run():
    """Each profile's line of the README's table says what ``measured.csv`` says, rounded; a profile
    with no whole run says it is not measured."""
    cells = measured.profile_cells(measured.read_measured(ROOT / measured.MEASURED_FILE))
    lines = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `([a-z-]+)`[^|]*\|[^|]*\| ([^|]+?) \|$", (ROOT / "README.md").read_text(), re.M)
    }
    assert lines, "no profiles table in the README"
    for profile, stated in lines.items():
        assert stated == cells.get(profile, "not measured"), profile


def test_the_pictures_digest_reads_the_words_of_the_page_with_numbers_masked(tmp_path):
    from analysis.study import screenshot

    page = tmp_path / "index.html"
    page.write_text("<html><body><nav>menu</nav><article><h1>Fast</h1><p>x4.72 to x11.2</p></article></body></html>")
    other = tmp_path / "other.html"
    other.write_text("<html><body><article><h1>Fast</h1>\n<p>x5.01  to x9.9</p><script>var a=1</script></article>")
    assert screenshot.page_text(page) == "Fast x#.# to x#.#"
    assert screenshot.page_digest(page) == screenshot.page_digest(other)
    other.write_text("<html><body><article><h1>Slow</h1><p>x5.01 to x9.9</p></article>")
    assert screenshot.page_digest(page) != screenshot.page_digest(other)
    # the book's root page only redirects: its digest is the first chapter's, never an empty page's
    root = tmp_path / "root.html"
    root.write_text('<html><head><meta http-equiv="Refresh" content="0; url=other.html" /></head></html>')
    assert screenshot.page_text(root) == "Slow x#.# to x#.#"
