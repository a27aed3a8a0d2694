"""Extraction runs: rows in the store schema, resume after interruption, skips counted."""

import json

import pandas as pd
import pytest
import torch

from analysis.core.settings import ExtractionSettings
from analysis.extract import models, preparation, prompts, runner
from analysis.store import ResultsStore, read_results, read_skipped

SCHEMA = [
    "model",
    "dataset",
    "setting",
    "responses",
    "source_file",
    "sample_index",
    "layer",
    "proj",
    "nuclear_norm",
    "sigma_max",
    "sigma_min",
    "sigma1_ratio",
    "frobenius",
    "effective_rank",
    "loss",
    "n_tokens",
    "n_response_tokens",
    "max_length",
    "template",
]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return models.load(str(tiny_model_dir("llama")), template="base", device="cpu")


def test_condition_rows_have_the_schema(tiny, study_data_dir, tmp_path):
    store = ResultsStore(tmp_path / "r")
    summary = runner.extract(
        tiny,
        "aqua/none/correct",
        store,
        settings=ExtractionSettings(n_samples=3, max_length=1024),
        data_dir=study_data_dir,
        progress=False,
    )
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
        runner.extract(
            tiny,
            "gsm8k/simplified/correct",
            store,
            settings=ExtractionSettings(n_samples=6, max_length=1024, batch_size=1),
            data_dir=study_data_dir,
            progress=False,
        )
    assert (
        len(
            store.done_samples(
                runner.plan_run(
                    tiny.name,
                    "base",
                    "gsm8k/simplified/correct",
                    store,
                    settings=ExtractionSettings(6),
                    data_dir=study_data_dir,
                ).key
            )
        )
        == 2
    )
    monkeypatch.setattr(runner.gradients, "batch_statistics", original)
    summary = runner.extract(
        tiny,
        "gsm8k/simplified/correct",
        store,
        settings=ExtractionSettings(n_samples=6, max_length=1024, batch_size=1),
        data_dir=study_data_dir,
        progress=False,
    )
    assert (summary.already_done, summary.computed) == (2, 4)
    frame = read_results(tmp_path / "r")
    assert not frame.duplicated(["sample_index", "layer", "proj"]).any()
    clean = ResultsStore(tmp_path / "clean")
    runner.extract(
        tiny,
        "gsm8k/simplified/correct",
        clean,
        settings=ExtractionSettings(n_samples=6, max_length=1024),
        data_dir=study_data_dir,
        progress=False,
    )
    keys = ["sample_index", "layer", "proj"]
    resumed = frame.sort_values(keys).reset_index(drop=True)
    fresh = read_results(tmp_path / "clean").sort_values(keys).reset_index(drop=True)
    pd.testing.assert_series_equal(resumed["nuclear_norm"], fresh["nuclear_norm"], rtol=1e-6)


def test_truncated_away_samples_are_recorded_and_counted(tiny, tmp_path):
    path = tmp_path / "long.json"
    path.write_text(
        json.dumps(
            [
                {"instruction": "q" * 80, "input": "", "output": "a"},
                {"instruction": "short", "input": "", "output": "answer"},
            ]
        )
    )
    store = ResultsStore(tmp_path / "r")
    summary = runner.extract(tiny, str(path), store, settings=ExtractionSettings(max_length=40), progress=False)
    assert summary.computed == 1 and summary.skipped == {"response truncated away": 1}
    skipped = read_skipped(tmp_path / "r")
    assert skipped["sample_index"].tolist() == [0]
    again = runner.extract(tiny, str(path), store, settings=ExtractionSettings(max_length=40), progress=False)
    assert again.computed == 0 and again.already_done == 2


def test_length_control_cuts_to_reference_token_counts(tiny, study_data_dir, tmp_path):
    store = ResultsStore(tmp_path / "r")
    for spec in ("aqua/simplified/correct", "aqua/detailed_cut_simplified/correct"):
        runner.extract(
            tiny,
            spec,
            store,
            settings=ExtractionSettings(n_samples=3, max_length=1024),
            data_dir=study_data_dir,
            progress=False,
        )
    frame = read_results(tmp_path / "r").drop_duplicates(["condition", "sample_index"])
    counts = frame.pivot(index="sample_index", columns="setting", values="n_response_tokens")
    assert (counts["detailed_cut_simplified"] == counts["simplified"]).all()


def test_length_sorted_batches_respect_size_and_budget():
    samples = [
        preparation.PreparedSample(i, prompts.EncodedSample([0] * n, 1)) for i, n in enumerate([5, 50, 6, 7, 400])
    ]
    batches = preparation.length_sorted_batches(samples, batch_size=2, token_budget=120, max_padding=10.0)
    assert [[s.index for s in b] for b in batches] == [[0, 2], [3, 1], [4]]


def test_length_sorted_batches_limit_padding():
    lengths = [100, 104, 109, 140, 150, 600]
    samples = [preparation.PreparedSample(i, prompts.EncodedSample([0] * n, 1)) for i, n in enumerate(lengths)]
    batches = preparation.length_sorted_batches(samples, batch_size=8, token_budget=4096)
    assert [[s.index for s in b] for b in batches] == [[0, 1, 2], [3, 4], [5]]
    for batch in batches:
        real = sum(len(s.encoded.input_ids) for s in batch)
        assert max(len(s.encoded.input_ids) for s in batch) * len(batch) <= 1.1 * real


def test_batch_size_defaults_to_one_sample_on_a_cpu():
    assert preparation.batch_size_for("cpu") == 1
    assert preparation.batch_size_for(torch.device("cuda", 0)) == preparation.GPU_BATCH_SIZE
    assert preparation.batch_size_for("cpu", 4) == 4


def _out_of_memory_above(limit: int, original, calls: list):
    """batch_statistics that raises CUDA's out-of-memory error for batches of more than ``limit`` samples."""

    def statistics(model, batch, *args, **kwargs):
        calls.append(batch.input_ids.shape[0])
        if batch.input_ids.shape[0] > limit:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(model, batch, *args, **kwargs)

    return statistics


@pytest.mark.parametrize("limit", [1, 2])
def test_out_of_memory_halves_the_batch_and_gives_the_same_rows(tiny, tmp_path, monkeypatch, limit):
    path, keys = tmp_path / "same_length.json", ["sample_index", "layer", "proj"]
    path.write_text(
        json.dumps(
            [
                {"instruction": f"Add {i} and {i + 1}.", "input": "", "output": f"It is {2 * i + 1}."}
                for i in range(1, 9)
            ]
        )
    )
    runner.extract(
        tiny,
        str(path),
        ResultsStore(tmp_path / "clean"),
        settings=ExtractionSettings(max_length=1024, batch_size=4),
        progress=False,
    )
    calls: list[int] = []
    monkeypatch.setattr(
        runner.gradients, "batch_statistics", _out_of_memory_above(limit, runner.gradients.batch_statistics, calls)
    )
    summary = runner.extract(
        tiny,
        str(path),
        ResultsStore(tmp_path / "oom"),
        settings=ExtractionSettings(max_length=1024, batch_size=4),
        progress=False,
    )
    assert summary.computed == 8 and not summary.skipped
    assert calls.count(4) == 1  # the second batch of 4 is split before it is tried
    assert sum(size for size in calls if size <= limit) == 8
    fresh = read_results(tmp_path / "clean").sort_values(keys).reset_index(drop=True)
    retried = read_results(tmp_path / "oom").sort_values(keys).reset_index(drop=True)
    assert len(retried) == len(fresh) == 8 * tiny.n_layers * 4
    for column in ("nuclear_norm", "sigma_max", "frobenius", "effective_rank", "loss"):
        pd.testing.assert_series_equal(retried[column], fresh[column], rtol=1e-5)


def test_a_sample_that_does_not_fit_alone_is_recorded_not_dropped(tiny, study_data_dir, tmp_path, monkeypatch):
    original = runner.gradients.batch_statistics

    def statistics(model, batch, *args, **kwargs):
        if batch.input_ids.shape[1] == longest:
            raise RuntimeError("CUDA error: out of memory")
        return original(model, batch, *args, **kwargs)

    store = ResultsStore(tmp_path / "r")
    plan = runner.plan_run(
        tiny.name, "base", "aqua/none/correct", store, settings=ExtractionSettings(4), data_dir=study_data_dir
    )
    prepared, _ = preparation.prepare_samples(tiny, plan.resolved, plan.todo, 1024)
    longest = max(len(s.encoded.input_ids) for s in prepared)
    monkeypatch.setattr(runner.gradients, "batch_statistics", statistics)
    summary = runner.extract(
        tiny,
        "aqua/none/correct",
        store,
        settings=ExtractionSettings(n_samples=4, max_length=1024, batch_size=4),
        data_dir=study_data_dir,
        progress=False,
    )
    too_long = sum(len(s.encoded.input_ids) == longest for s in prepared)
    assert summary.skipped == {"out of memory": too_long} and summary.computed == 4 - too_long
    reasons = read_skipped(tmp_path / "r")["reason"]
    assert reasons.str.startswith(f"out of memory: one sample of {longest} tokens does not fit on cpu").all()

    # on a device where they fit, the skipped samples are computed only when asked
    monkeypatch.setattr(runner.gradients, "batch_statistics", original)
    settings = ExtractionSettings(n_samples=4, batch_size=4)
    again = runner.extract(tiny, "aqua/none/correct", store, settings=settings, data_dir=study_data_dir, progress=False)
    assert again.computed == 0 and again.already_done == 4
    retried = runner.extract(
        tiny,
        "aqua/none/correct",
        store,
        settings=settings.but(retry_out_of_memory=True),
        data_dir=study_data_dir,
        progress=False,
    )
    assert retried.computed == too_long and retried.already_done == 4 - too_long
    assert read_skipped(tmp_path / "r").empty
    assert sorted(read_results(tmp_path / "r")["sample_index"].unique()) == sorted(plan.todo)


def test_other_errors_are_not_taken_for_out_of_memory(tiny, study_data_dir, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(runner.gradients, "batch_statistics", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        runner.extract(
            tiny,
            "aqua/none/correct",
            ResultsStore(tmp_path / "r"),
            settings=ExtractionSettings(n_samples=2, max_length=1024),
            data_dir=study_data_dir,
            progress=False,
        )


def test_batches_follow_the_memory_plan():
    samples = [preparation.PreparedSample(i, prompts.EncodedSample([0] * 100, 1)) for i in range(8)]
    plan = runner.batching.MemoryPlan(budget_bytes=3 * 100 * 10.0, bytes_per_token=10.0, bytes_per_token_pair=0.0)
    batches = preparation.length_sorted_batches(samples, batch_size=8, token_budget=8192, fits=plan.fits)
    assert [len(b) for b in batches] == [3, 3, 2]


def test_no_memory_plan_on_a_cpu(tiny):
    samples = [preparation.PreparedSample(0, prompts.EncodedSample([0] * 10, 1))]
    assert runner.memory_plan(tiny, samples) is None


# --------------------------------------------------------------------------- torch threads


def _never() -> float:
    raise AssertionError("an explicit number of threads measures nothing")


def test_free_cores_are_the_cores_less_the_sampled_use_rounded_and_at_least_one():
    from analysis.extract.threads import free_cores

    assert free_cores(2, 0.2) == 2  # an idle machine: both cores
    assert free_cores(2, 0.97) == 1  # one other process busy
    assert free_cores(2, 1.4) == 1 and free_cores(2, 1.9) == 1  # rounded, never below one
    assert free_cores(16, 2.6) == 13 and free_cores(4, None) == 4


def test_threads_are_the_free_cores_unless_the_user_says():
    from analysis.extract import threads

    explicit = threads.choose_threads(3, cpus=_never, load=_never, busy=_never)
    assert (explicit.threads, explicit.source) == (3, "explicit")
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # torch's default on a two-core machine
        busy = threads.choose_threads(None, cpus=lambda: 2, load=lambda: 1.02, busy=lambda: 1.1)
        assert (busy.threads, busy.source, busy.cpus, busy.load_1min) == (1, "free cores", 2, 1.02)
        idle = threads.choose_threads(None, cpus=lambda: 2, load=lambda: 0.05, busy=lambda: 0.1)
        assert idle.threads == 2
        after_install = threads.choose_threads(None, cpus=lambda: 2, load=lambda: 0.95, busy=lambda: 0.08)
        assert after_install.threads == 2  # the load average still counts a finished install; the cores are free
        many = threads.choose_threads(None, cpus=lambda: 64, load=lambda: 0.0, busy=lambda: 0.0)
        assert many.threads == 2  # never more than torch's own number
    finally:
        torch.set_num_threads(previous)


def test_a_run_uses_the_chosen_threads_restores_them_and_logs_the_choice(tmp_path):
    from dataclasses import replace

    from analysis import profiles
    from analysis.extract.threads import ThreadChoice
    from analysis.report.provenance import threads_sentence
    from analysis.store import runlog
    from analysis.study import pipeline

    previous = torch.get_num_threads()
    chosen = ThreadChoice(1, "free cores", 2, 1.02, 1.1)
    with runner.torch_threads(None, choose=lambda requested: chosen) as used:
        assert used is chosen and torch.get_num_threads() == 1
    assert torch.get_num_threads() == previous
    log = runlog.RunLog.start(tmp_path, {}, "local", [])
    quick = profiles.get_profile("quick")
    profile = replace(quick, models=(), extraction=quick.extraction.but(threads=1))  # nothing to extract
    assert pipeline.extract_profile(profile, pipeline.RunContext(tmp_path, log=log, say=lambda _: None)) == []
    recorded = runlog.latest(tmp_path).threads
    assert recorded["threads"] == 1 and recorded["source"] == "explicit"  # the profile's own 1
    assert threads_sentence(chosen.as_dict()).startswith("Extraction with 1 torch threads: the cores free")
    assert "cores in use over a one-second sample 1.1; one-minute load average 1.0, recorded only" in threads_sentence(
        chosen.as_dict()
    )


def test_the_reproducibility_page_shows_the_one_core_busy_rows(tmp_path):
    from analysis.report.provenance import busy_core_table

    path = tmp_path / "results.json"
    path.write_text(json.dumps({"cases": []}))
    assert busy_core_table(path) is None and busy_core_table(tmp_path / "none.json") is None
    row = {
        "model": "m",
        "samples": 4,
        "threads_chosen": {"threads": 1, "source": "free cores"},
        "default_threads": 2,
        "seconds_per_sample": {
            "one thread, idle": 2.0,
            "project, one core busy": 2.3,
            "torch default threads, one core busy": 8.0,
        },
        "busy_over_idle": 1.15,
        "default_over_idle": 4.0,
        "target_busy_over_idle_at_most": 1.2,
    }
    path.write_text(json.dumps({"cases": [], "busy_core": [row]}))
    table = busy_core_table(path)
    assert table.loc[0, "busy / idle"] == "1.15 (target <= 1.2: met)"
    assert table.loc[0, "torch default (2 threads), busy / idle"] == "4.00"


def test_answer_scored_rows_equal_plain_autograd_on_the_answer_span(tiny, study_data_dir, tmp_path):
    from analysis import data
    from analysis.extract import plain, prompts

    store = ResultsStore(tmp_path / "r")
    spec = "gsm8k/detailed_answer/correct"
    runner.extract(
        tiny,
        spec,
        store,
        settings=ExtractionSettings(n_samples=2, max_length=4096),
        data_dir=study_data_dir,
        progress=False,
    )
    frame = read_results(tmp_path / "r")
    records = data.answer_records(data.get_condition(spec), study_data_dir)
    for index, rows in frame.groupby("sample_index"):
        record = records[index]
        answer = record.output[record.answer_start :]
        prompt = prompts.prompt_text(tiny.tokenizer, record.instruction, "base")
        ids = tiny.tokenizer(prompt + record.output)["input_ids"]  # one token per character
        reference = plain.reference_statistics(tiny.model, ids, len(ids) - len(answer))
        assert rows["n_response_tokens"].iloc[0] == len(answer)
        assert plain.largest_relative_difference(rows, reference, with_loss=True) < 1e-5


def test_an_answer_cut_off_by_max_length_is_skipped_and_counted(tiny, study_data_dir, tmp_path):
    store = ResultsStore(tmp_path / "r")
    settings = ExtractionSettings(n_samples=2, max_length=300)
    summary = runner.extract(
        tiny, "gsm8k/detailed_answer/correct", store, settings=settings, data_dir=study_data_dir, progress=False
    )
    assert summary.computed == 0 and summary.skipped == {"answer truncated away": 2}
    short = runner.extract(
        tiny, "gsm8k/none_answer/correct", store, settings=settings, data_dir=study_data_dir, progress=False
    )
    assert short.computed == 2 and not short.skipped


def test_a_sample_with_an_exactly_zero_gradient_is_skipped_with_the_reason(tiny, tmp_path, monkeypatch):
    from analysis.extract import gradients

    original = gradients.sample_statistics

    def zero_in_one_projection(*args, **kwargs):
        result = original(*args, **kwargs)
        result.values["nuclear_norm"][1, 2] = 0.0
        result.failure = gradients.zero_gradient(result.values, result.loss)
        return result

    monkeypatch.setattr(gradients, "sample_statistics", zero_in_one_projection)
    path = tmp_path / "one.json"
    path.write_text(json.dumps([{"instruction": "q", "input": "", "output": "answer"}]))
    summary = runner.extract(
        tiny, str(path), ResultsStore(tmp_path / "r"), settings=ExtractionSettings(), progress=False
    )
    assert summary.computed == 0 and summary.skipped == {"zero gradient": 1}
    reason = read_skipped(tmp_path / "r")["reason"].iloc[0]
    assert reason.startswith("zero gradient: exactly zero in 1 of ") and "layer 1 v" in reason
