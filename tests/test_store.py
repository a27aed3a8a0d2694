"""The results store: atomic parts, resume without duplicates, locks, version checks, damaged parts."""

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.store import ResultsStore, RunKey, read_results, read_skipped
from analysis.store.store_errors import DamagedPart, StoreError

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
        with pytest.raises(StoreError, match="another process"):
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

    monkeypatch.setattr("analysis.store.store_files._fsync_and_replace", interrupted)
    with pytest.raises(KeyboardInterrupt):  # stopped after the old rows went, before the new ones were in place
        store.write(KEY, rows_for([1]).assign(new_statistic=2.0), None)
    monkeypatch.undo()
    assert store.done_samples(KEY) == {0, 2}  # missing, so computed next time; never stored twice


def cut_short(part: Path) -> set[int]:
    """Truncate a part file to half its bytes (a copy interrupted, say); the samples it held."""
    held = set(pq.read_table(part, columns=["sample_index"]).column("sample_index").to_pylist())
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    return held


def assert_names_the_part_and_the_recovery(error: pytest.ExceptionInfo, part: Path) -> None:
    assert isinstance(error.value, StoreError) and isinstance(error.value, StudyError)
    message = str(error.value)
    assert message.startswith(f"{part}: damaged part of the results store (Parquet magic bytes not found in footer)")
    assert "remove this file and run again the command that wrote it" in message and "\n" not in message


def test_a_damaged_part_is_named_with_how_to_recover_and_once_removed_its_samples_are_missing(tmp_path):
    from analysis.report.load import load_results

    store = ResultsStore(tmp_path / "r")
    for indices in ([0, 1], [2, 3]):
        skip = pd.DataFrame([{"condition": "aqua/none/correct", "sample_index": 10 + indices[0], "reason": "x: y"}])
        store.write(KEY, rows_for(indices).assign(max_length=64, template="base"), skip)
    part = sorted(store.run_dir("rows", KEY).glob("part-*.parquet"))[0]
    assert cut_short(part) == {0, 1}
    readers = {
        "read_results": lambda: read_results(tmp_path / "r"),
        "read": lambda: store.read("rows"),
        "compact read": lambda: store.read("rows", compact=True),
        "columns": lambda: store.column_names("rows"),
        "done samples (resume)": lambda: store.done_samples(KEY),
        "read_skipped": lambda: read_skipped(tmp_path / "r"),
        "pages": lambda: load_results(tmp_path / "r", models=["tiny"], conditions=["aqua/none/correct"]),
    }
    for name, read in readers.items():
        with pytest.raises(DamagedPart) as error:
            read()
        assert_names_the_part_and_the_recovery(error, part)
        assert "it stores again exactly the samples this part held" in str(error.value), name

    part.unlink()
    assert set(read_results(tmp_path / "r")["sample_index"]) == {2, 3}
    assert store.done_samples(KEY) == {2, 3, 10, 12}  # 0 and 1 are computed again, nothing else

    skipped = sorted(store.run_dir("skipped", KEY).glob("part-*.parquet"))[0]
    assert cut_short(skipped) == {10}
    with pytest.raises(DamagedPart, match="the samples it recorded as skipped are tried again") as error:
        store.done_samples(KEY)
    assert_names_the_part_and_the_recovery(error, skipped)
    skipped.unlink()
    assert store.done_samples(KEY) == {2, 3, 12}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from analysis.extract import models

    return models.load(str(tiny_model_dir("llama")), template="base", device="cpu")


def test_a_resumed_extraction_names_a_damaged_part_and_once_it_is_removed_computes_exactly_its_samples(
    tiny, tiny_model_dir, tmp_path, capsys, monkeypatch
):
    from analysis.cli import main
    from analysis.extract import runner

    path = tmp_path / "mine.json"
    path.write_text(json.dumps([{"instruction": f"question {i}", "output": f"answer {i}"} for i in range(6)]))
    store = ResultsStore(tmp_path / "r")
    settings = ExtractionSettings(max_length=64, batch_size=1, shard_size=2)
    assert runner.extract(tiny, str(path), store, settings=settings, progress=False).computed == 6
    keys = ["sample_index", "layer", "proj"]
    clean = read_results(tmp_path / "r").sort_values(keys).reset_index(drop=True)
    key = runner.plan_run(tiny.name, "base", str(path), store, settings=settings).key
    parts = sorted(store.run_dir("rows", key).glob("part-*.parquet"))
    assert len(parts) == 3
    held = cut_short(parts[1])
    assert len(held) == 2

    with pytest.raises(DamagedPart) as error:
        runner.extract(tiny, str(path), store, settings=settings, progress=False)
    assert_names_the_part_and_the_recovery(error, parts[1])
    command = ["extract", "--model", str(tiny_model_dir("llama")), "--template", "base", "--data", str(path)]
    command += ["--out", str(tmp_path / "r"), "--max-length", "64", "--device", "cpu", "--no-progress"]
    assert main(command) == 2
    assert f"error: {parts[1]}: damaged part of the results store" in capsys.readouterr().err

    parts[1].unlink()
    assert sorted(runner.plan_run(tiny.name, "base", str(path), store, settings=settings).todo) == sorted(held)
    computed = []
    original = runner.compute_samples

    def recording(loaded, plan, indices, *args, **kwargs):
        computed.extend(indices)
        return original(loaded, plan, indices, *args, **kwargs)

    monkeypatch.setattr(runner, "compute_samples", recording)
    summary = runner.extract(tiny, str(path), store, settings=settings, progress=False)
    assert sorted(computed) == sorted(held) and (summary.already_done, summary.computed) == (4, 2)
    resumed = read_results(tmp_path / "r").sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(resumed[clean.columns], clean)
