"""The cache of simulated tables: what it returns is what the simulation computes; its key changes
with the code a table runs and with nothing else; the tables committed with the code are read where
they are this code's, and are this code's."""

from __future__ import annotations

import shutil

import grimp
import pandas as pd
import pytest

from analysis.checks import rule_tables
from analysis.core import cache
from analysis.findings import calibration
from analysis.report import reproducibility


def counted(make):
    calls = []

    def table(*, reps: int, seed: int) -> pd.DataFrame:
        calls.append((reps, seed))
        return make(reps=reps, seed=seed)

    table.__qualname__ = make.__qualname__
    table.__module__ = make.__module__
    return table, calls


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    """An empty cache folder and no committed tables."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "COMMITTED", tmp_path / "committed")
    return tmp_path


def test_a_cached_table_is_the_computed_one_and_is_read_back_without_computing(empty_cache):
    make, calls = counted(calibration.share_table)
    first = cache.simulated_table(make, reps=20, seed=3)
    again = cache.simulated_table(make, reps=20, seed=3)
    pd.testing.assert_frame_equal(first, calibration.share_table(reps=20, seed=3))
    pd.testing.assert_frame_equal(again, first)
    assert calls == [(20, 3)]
    assert [p.parent for p in empty_cache.rglob("*.parquet")] == [empty_cache / "cache" / "tables"]
    assert not list(empty_cache.rglob("*.tmp"))


def test_other_arguments_or_other_code_compute_the_table_afresh(monkeypatch, empty_cache):
    make, calls = counted(calibration.share_table)
    cache.simulated_table(make, reps=20, seed=3)
    cache.simulated_table(make, reps=20, seed=4)
    monkeypatch.setattr(cache, "code_digest", lambda module, root: "another version of the code")
    cache.simulated_table(make, reps=20, seed=3)
    assert calls == [(20, 3), (20, 4), (20, 3)]


def _copy(tmp_path):
    """The package's sources copied under ``tmp_path``, and its root there."""
    shutil.copytree(cache.PACKAGE, tmp_path / "analysis", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tmp_path / "analysis"


def _digest(module: str, root) -> str:
    cache.code_digest.cache_clear()
    cache.module_closure.cache_clear()
    return cache.code_digest(module, root=root)


@pytest.mark.parametrize(
    ("edited", "changes"),
    [
        ("report/voice.py", False),  # the page's words
        ("report/reproducibility.py", False),  # the page that shows the table
        ("study/pipeline.py", False),
        ("findings/calibration/rule.py", True),  # the rules simulated
        ("findings/beyond_loss.py", True),  # G1's statistic and its null
        ("checks/g1_beyond_loss.py", True),  # which rules the study's checks name
        ("findings/bootstrap.py", True),
    ],
)
def test_a_tables_key_changes_with_the_code_it_runs_and_with_nothing_else(tmp_path, edited, changes):
    root = _copy(tmp_path)
    module = rule_tables.false_holds_table.__module__
    before = _digest(module, root)
    with (root / edited).open("a") as source:
        source.write("\n# an edit\n")
    assert (_digest(module, root) != before) is changes
    cache.code_digest.cache_clear()
    cache.module_closure.cache_clear()


def test_the_closure_is_what_importing_the_tables_module_runs_and_leaves_the_report_out():
    closure = set(cache.module_closure(rule_tables.false_holds_table.__module__))
    assert {"analysis", "analysis.checks", "analysis.checks.g1_beyond_loss", "analysis.findings.beyond_loss"} <= closure
    assert not {m for m in closure if m.startswith(("analysis.report", "analysis.study", "analysis.cli"))}
    rates = set(cache.module_closure(calibration.share_table.__module__))
    assert "analysis.findings.calibration.rule" in rates and not {m for m in rates if m.startswith("analysis.checks")}
    # the same closure from import-linter's graph (grimp): the imports, and the packages above each
    graph = grimp.build_graph("analysis", cache_dir=None)
    for module, found in (
        (rule_tables.false_holds_table.__module__, closure),
        (calibration.share_table.__module__, rates),
    ):
        expected: set[str] = set()
        waiting = [module]
        while waiting:
            name = waiting.pop()
            for step in cache._with_packages(name):
                if step not in expected:
                    expected.add(step)
                    waiting += sorted(graph.find_modules_directly_imported_by(step))
        assert found == expected


def test_a_committed_table_is_read_where_it_is_this_codes_and_computed_elsewhere(monkeypatch, empty_cache):
    folder = empty_cache / "committed"
    make, calls = counted(calibration.share_table)
    folder.mkdir()
    (folder / "gone.parquet").write_bytes(b"")  # a table no longer committed
    (path,) = cache.commit_tables([make], reps=20, seed=3)
    assert path.parent == folder and calls == [(20, 3)]
    assert sorted(folder.iterdir()) == [path, folder / cache.MANIFEST]
    entry = cache.manifest()[f"{make.__module__}.{make.__qualname__}"]
    assert entry["code"] == cache.code_key(make, reps=20, seed=3) and entry["libraries"] == cache.library_versions()
    shutil.rmtree(empty_cache / "cache")  # no cached copy: only the committed one
    pd.testing.assert_frame_equal(
        cache.simulated_table(make, reps=20, seed=3), calibration.share_table(reps=20, seed=3)
    )
    assert calls == [(20, 3)]
    cache.simulated_table(make, reps=20, seed=4)  # other arguments
    monkeypatch.setattr(cache, "library_versions", lambda: {"numpy": "0"})
    cache.simulated_table(make, reps=20, seed=3)  # other libraries
    assert calls == [(20, 3), (20, 4), (20, 3)]


def test_the_committed_tables_are_this_codes():
    """``make simulated-tables`` wrote every simulated table of the reproducibility page for the
    current code (the libraries' versions are the machine's: a mismatch computes, it is not wrong)."""
    entries = cache.manifest()
    for table in reproducibility.SIMULATED_TABLES:
        name = f"{table.__module__}.{table.__qualname__}"
        key = cache.code_key(table, reps=reproducibility.CALIBRATION_REPS, seed=0)
        assert name in entries and entries[name]["code"] == key, f"{name}: stale, run `make simulated-tables`"
        assert (cache.COMMITTED / entries[name]["file"]).is_file()
    assert set(entries) == {f"{t.__module__}.{t.__qualname__}" for t in reproducibility.SIMULATED_TABLES}


def test_make_simulated_tables_writes_the_pages_tables_into_the_repository(monkeypatch, empty_cache):
    from analysis import cli

    make, calls = counted(calibration.share_table)
    monkeypatch.setattr(reproducibility, "SIMULATED_TABLES", (make,))
    monkeypatch.setattr(reproducibility, "CALIBRATION_REPS", 20)
    assert cli.main(["simulated-tables"]) == 0
    assert calls == [(20, 0)]
    assert list(cache.manifest()) == [f"{make.__module__}.{make.__qualname__}"]
    assert (empty_cache / "committed" / "share_table.parquet").is_file()
