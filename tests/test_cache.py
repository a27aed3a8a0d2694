"""The cache of simulated tables: what it returns is what the simulation computes, and a change to
the code computes it afresh."""

from __future__ import annotations

import pandas as pd

from analysis.core import cache
from analysis.findings import calibration


def counted(make):
    calls = []

    def table(*, reps: int, seed: int) -> pd.DataFrame:
        calls.append((reps, seed))
        return make(reps=reps, seed=seed)

    table.__qualname__ = make.__qualname__
    table.__module__ = make.__module__
    return table, calls


def test_a_cached_table_is_the_computed_one_and_is_read_back_without_computing(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    make, calls = counted(calibration.share_table)
    first = cache.simulated_table(make, reps=20, seed=3)
    again = cache.simulated_table(make, reps=20, seed=3)
    pd.testing.assert_frame_equal(first, calibration.share_table(reps=20, seed=3))
    pd.testing.assert_frame_equal(again, first)
    assert calls == [(20, 3)]
    assert [p.parent for p in tmp_path.rglob("*.parquet")] == [tmp_path / "tables"]
    assert not list(tmp_path.rglob("*.tmp"))


def test_other_arguments_or_other_code_compute_the_table_afresh(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    make, calls = counted(calibration.share_table)
    cache.simulated_table(make, reps=20, seed=3)
    cache.simulated_table(make, reps=20, seed=4)
    monkeypatch.setattr(cache, "code_digest", lambda: "another version of the code")
    cache.simulated_table(make, reps=20, seed=3)
    assert calls == [(20, 3), (20, 4), (20, 3)]


def test_the_code_digest_covers_every_source_file_of_the_package():
    sources = list(cache.PACKAGE.rglob("*.py"))
    assert cache.PACKAGE.name == "analysis" and len(sources) > 50
    assert len(cache.code_digest()) == 64
