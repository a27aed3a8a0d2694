"""The results store: atomic parts, resume without duplicates, locks and version checks."""

import json

import pandas as pd
import pytest

from analysis.store import ResultsStore, RunKey, StoreBusy, StoreError, read_results

KEY = RunKey("tiny", "aqua", "none", "correct", 64, "base")


def rows_for(indices):
    return pd.DataFrame(
        [
            {
                "model": "tiny",
                "condition": "aqua/none/correct",
                "sample_index": i,
                "layer": layer,
                "proj": "q",
                "nuclear_norm": float(i + layer),
            }
            for i in indices
            for layer in range(2)
        ]
    )


def test_written_parts_read_back_and_count_as_done(tmp_path):
    store = ResultsStore(tmp_path / "r")
    store.write(KEY, rows_for([0, 1]), pd.DataFrame([{"sample_index": 5, "reason": "response truncated away: x"}]))
    assert store.done_samples(KEY) == {0, 1, 5}
    frame = read_results(tmp_path / "r")
    assert len(frame) == 4 and set(frame["sample_index"]) == {0, 1}


def test_a_compact_read_holds_the_same_rows_as_categories_and_narrow_integers(tmp_path):
    store = ResultsStore(tmp_path / "r")
    store.write(KEY, rows_for([0, 1]), None)
    other = RunKey("other", "gsm8k", "none", "correct", 64, "base")
    store.write(other, rows_for([7]).assign(model="other", condition="gsm8k/none/correct", proj="k"), None)
    plain = store.read("rows").sort_values(["model", "sample_index", "layer"]).reset_index(drop=True)
    compact = store.read("rows", compact=True).sort_values(["model", "sample_index", "layer"]).reset_index(drop=True)
    assert str(compact["model"].dtype) == "category" and set(compact["model"].cat.categories) == {"tiny", "other"}
    assert compact["sample_index"].dtype == "int32" and compact["layer"].dtype == "int16"
    pd.testing.assert_frame_equal(compact.astype(plain.dtypes.to_dict()), plain)  # parts read with their own labels
    filtered = store.read("rows", filters=[("model", "in", ["other"])], columns=["model", "proj"], compact=True)
    assert list(filtered.columns) == ["model", "proj"] and list(filtered["proj"]) == ["k", "k"]
    none = store.read("rows", filters=[("model", "in", [])], columns=["model", "layer"], compact=True)
    assert none.empty and list(none.columns) == ["model", "layer"]


def test_hidden_temporaries_are_invisible_and_cleaned(tmp_path):
    store = ResultsStore(tmp_path / "r")
    store.write(KEY, rows_for([0]), None)
    directory = store.run_dir("rows", KEY)
    (directory / ".part-deadbeef.tmp").write_bytes(b"half a parquet file")
    assert len(read_results(tmp_path / "r")) == 2
    with store.lock(KEY):
        assert not (directory / ".part-deadbeef.tmp").exists()


def test_second_writer_is_refused_before_computing(tmp_path):
    store = ResultsStore(tmp_path / "r")
    other = ResultsStore(tmp_path / "r")
    with store.lock(KEY):
        with pytest.raises(StoreBusy, match="another process"):
            with other.lock(KEY):
                pass
    with other.lock(KEY):
        pass


def test_incompatible_version_is_refused(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "store.json").write_text(json.dumps({"format": "layer-gradient-results", "version": 99}))
    with pytest.raises(StoreError, match="incompatible version"):
        ResultsStore(root)


def test_unwritable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot create the results store"):
        ResultsStore(blocker / "r")


def test_reading_an_empty_store_gives_an_empty_frame(tmp_path):
    assert read_results(tmp_path / "nothing").empty


def test_a_sample_lacking_a_required_column_is_not_done_and_its_new_rows_replace_the_old(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path / "r")
    store.write(KEY, rows_for([0, 1, 2]), None)
    assert store.done_samples(KEY, required_columns=("new_statistic",)) == set()
    store.write(KEY, rows_for([0, 2]).assign(new_statistic=1.5), None)
    frame = read_results(tmp_path / "r")
    assert len(frame) == len(rows_for([0, 1, 2])) and not frame.duplicated(["sample_index", "layer", "proj"]).any()
    assert set(frame.loc[frame["sample_index"] != 1, "new_statistic"]) == {1.5}
    assert frame.loc[frame["sample_index"] == 1, "new_statistic"].isna().all()
    assert store.done_samples(KEY, required_columns=("new_statistic",)) == {0, 2}
    assert store.done_samples(KEY) == {0, 1, 2}

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("analysis.store._fsync_and_replace", interrupted)
    with pytest.raises(KeyboardInterrupt):  # stopped after the old rows went, before the new ones were in place
        store.write(KEY, rows_for([1]).assign(new_statistic=2.0), None)
    monkeypatch.undo()
    assert store.done_samples(KEY) == {0, 2}  # missing, so computed next time; never stored twice
