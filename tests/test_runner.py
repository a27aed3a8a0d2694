"""Extraction runs: rows in the store schema, resume after interruption, skips counted."""

import json

import pandas as pd
import pytest
import torch

from analysis import models, runner
from analysis.store import ResultsStore, read_results, read_skipped

SCHEMA = ["model", "dataset", "setting", "responses", "source_file", "sample_index", "layer", "proj", "nuclear_norm",
          "sigma_max", "sigma_min", "sigma1_ratio", "frobenius", "effective_rank", "loss", "n_tokens",
          "n_response_tokens", "max_length", "template"]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return models.load(str(tiny_model_dir("llama")), template="base", device="cpu")


def test_condition_rows_have_the_schema(tiny, study_data_dir, tmp_path):
    store = ResultsStore(tmp_path / "r")
    summary = runner.extract(tiny, "aqua/none/correct", store, limit=3, max_length=1024, data_directory=study_data_dir, progress=False)
    assert summary.computed == 3
    frame = read_results(tmp_path / "r")
    assert set(SCHEMA) <= set(frame.columns)
    assert len(frame) == 3 * tiny.n_layers * 4
    assert frame[["nuclear_norm", "sigma_max", "frobenius", "effective_rank", "loss"]].notna().all().all()
    assert (frame["data_sha256_ok"]).all()


def test_resume_after_interruption_computes_only_missing_samples(tiny, study_data_dir, tmp_path, monkeypatch):
    store = ResultsStore(tmp_path / "r")
    original = runner.gradients.batch_statistics
    calls = {"n": 0}

    def failing_after_two_batches(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(runner.gradients, "batch_statistics", failing_after_two_batches)
    with pytest.raises(KeyboardInterrupt):
        runner.extract(tiny, "gsm8k/simplified/correct", store, limit=6, max_length=1024, batch_size=1,
                       data_directory=study_data_dir, progress=False)
    assert len(store.done_samples(runner.plan_run(tiny.name, "base", "gsm8k/simplified/correct", store, 6, 1024, study_data_dir).key)) == 2
    monkeypatch.setattr(runner.gradients, "batch_statistics", original)
    summary = runner.extract(tiny, "gsm8k/simplified/correct", store, limit=6, max_length=1024, batch_size=1,
                             data_directory=study_data_dir, progress=False)
    assert (summary.already_done, summary.computed) == (2, 4)
    frame = read_results(tmp_path / "r")
    assert not frame.duplicated(["sample_index", "layer", "proj"]).any()
    clean = ResultsStore(tmp_path / "clean")
    runner.extract(tiny, "gsm8k/simplified/correct", clean, limit=6, max_length=1024, data_directory=study_data_dir, progress=False)
    keys = ["sample_index", "layer", "proj"]
    resumed = frame.sort_values(keys).reset_index(drop=True)
    fresh = read_results(tmp_path / "clean").sort_values(keys).reset_index(drop=True)
    pd.testing.assert_series_equal(resumed["nuclear_norm"], fresh["nuclear_norm"], rtol=1e-6)


def test_truncated_away_samples_are_recorded_and_counted(tiny, tmp_path):
    path = tmp_path / "long.json"
    path.write_text(json.dumps([{"instruction": "q" * 80, "input": "", "output": "a"},
                                {"instruction": "short", "input": "", "output": "answer"}]))
    store = ResultsStore(tmp_path / "r")
    summary = runner.extract(tiny, str(path), store, max_length=40, progress=False)
    assert summary.computed == 1 and summary.skipped == {"response truncated away": 1}
    skipped = read_skipped(tmp_path / "r")
    assert skipped["sample_index"].tolist() == [0]
    again = runner.extract(tiny, str(path), store, max_length=40, progress=False)
    assert again.computed == 0 and again.already_done == 2


def test_length_control_cuts_to_reference_token_counts(tiny, study_data_dir, tmp_path):
    store = ResultsStore(tmp_path / "r")
    for spec in ("aqua/simplified/correct", "aqua/detailed_cut_simplified/correct"):
        runner.extract(tiny, spec, store, limit=3, max_length=1024, data_directory=study_data_dir, progress=False)
    frame = read_results(tmp_path / "r").drop_duplicates(["condition", "sample_index"])
    counts = frame.pivot(index="sample_index", columns="setting", values="n_response_tokens")
    assert (counts["detailed_cut_simplified"] == counts["simplified"]).all()


def test_length_sorted_batches_respect_size_and_budget():
    samples = [runner.PreparedSample(i, runner.prompts.EncodedSample([0] * n, 1)) for i, n in enumerate([5, 50, 6, 7, 400])]
    batches = runner.length_sorted_batches(samples, batch_size=2, token_budget=120, max_padding=10.0)
    assert [[s.index for s in b] for b in batches] == [[0, 2], [3, 1], [4]]


def test_length_sorted_batches_limit_padding():
    lengths = [100, 104, 109, 140, 150, 600]
    samples = [runner.PreparedSample(i, runner.prompts.EncodedSample([0] * n, 1)) for i, n in enumerate(lengths)]
    batches = runner.length_sorted_batches(samples, batch_size=8, token_budget=4096)
    assert [[s.index for s in b] for b in batches] == [[0, 1, 2], [3, 4], [5]]
    for batch in batches:
        real = sum(len(s.encoded.input_ids) for s in batch)
        assert max(len(s.encoded.input_ids) for s in batch) * len(batch) <= 1.1 * real


def test_batch_size_defaults_to_one_sample_on_a_cpu():
    assert runner.batch_size_for("cpu") == 1
    assert runner.batch_size_for(torch.device("cuda", 0)) == runner.GPU_BATCH_SIZE
    assert runner.batch_size_for("cpu", 4) == 4
