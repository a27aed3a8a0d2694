"""The statistic table: every declared statistic has its function, and a new one is one table entry
plus its function (extracted into its own column; a store written without it computes it again)."""

import dataclasses

import pytest
import torch

from analysis.core import layer_stats
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.extract import models, original_import, runner, spectra
from analysis.report import load, your_data_page
from analysis.store import ResultsStore, read_results

TOY = layer_stats.Statistic("toy_square_sum", "sum of squared singular values", layer_stats.SPECTRUM)


def toy_square_sum(s: torch.Tensor) -> torch.Tensor:
    return (s * s).sum(-1)


def test_every_declared_statistic_has_its_function():
    for source in (layer_stats.SPECTRUM, layer_stats.ENTRIES, layer_stats.FACTORS):
        assert set(spectra.functions(source)) == set(layer_stats.names(layer_stats.of_source(source)))
    assert set(runner.SAMPLE_VALUES) == set(layer_stats.names(layer_stats.of_source(layer_stats.SAMPLE)))
    assert set(runner.MATCHED_VALUES) == set(layer_stats.names(layer_stats.of_source(layer_stats.MATCHED)))


def test_the_readers_take_their_columns_from_the_table():
    assert original_import.FIELD_STATISTICS["S_sum"] == "nuclear_norm" and "effective_rank" in original_import.ABSENT
    assert "sigma1_ratio" not in original_import.ABSENT and "loss" not in original_import.ABSENT
    assert set(layer_stats.unread_by_pages()) <= set(load.UNREAD_COLUMNS)
    assert your_data_page.STATS == ("nuclear_norm", "effective_rank", "cos_same_layer", "cos_next_layer")


def test_a_declared_statistic_without_its_function_is_one_line(monkeypatch):
    monkeypatch.setattr(layer_stats, "TABLE", (*layer_stats.TABLE, TOY))
    with pytest.raises(StudyError, match="no function toy_square_sum decorated with @of_singular_values"):
        spectra.statistics_from_singular_values(torch.ones(3, dtype=torch.float64))


def test_a_new_statistic_is_one_entry_and_its_function(tiny_model_dir, study_data_dir, tmp_path, monkeypatch):
    loaded = models.load(str(tiny_model_dir("llama")), template="base", device="cpu")
    store = ResultsStore(tmp_path / "r")
    settings = ExtractionSettings(n_samples=3, max_length=1024, shard_size=2)
    runner.extract(loaded, "aqua/none/correct", store, settings=settings, data_dir=study_data_dir, progress=False)
    before = read_results(tmp_path / "r")
    assert "toy_square_sum" not in before.columns

    monkeypatch.setattr(layer_stats, "TABLE", (*layer_stats.TABLE, TOY))
    monkeypatch.setitem(spectra.FUNCTIONS[layer_stats.SPECTRUM], "toy_square_sum", toy_square_sum)
    plan = runner.plan_run(
        loaded.name, loaded.template, "aqua/none/correct", store, settings=settings, data_dir=study_data_dir
    )
    assert len(plan.todo) == 3  # stored without the new column: to be computed

    summary = runner.extract(
        loaded, "aqua/none/correct", store, settings=settings, data_dir=study_data_dir, progress=False
    )
    assert summary.computed == 3 and summary.already_done == 0
    after = read_results(tmp_path / "r")
    assert len(after) == len(before)  # the new rows replaced the old ones
    keys = ["sample_index", "layer", "proj"]
    merged = before.merge(after, on=keys, suffixes=("", "_new"))
    assert (merged["nuclear_norm"] == merged["nuclear_norm_new"]).all()  # existing numbers unchanged
    expected = merged["frobenius_new"] ** 2
    assert ((merged["toy_square_sum"] - expected).abs() <= 1e-9 * expected).all()
    again = runner.plan_run(
        loaded.name, loaded.template, "aqua/none/correct", store, settings=settings, data_dir=study_data_dir
    )
    assert again.todo == []


def test_entry_statistics_asked_for_later_are_computed_then(tiny_model_dir, study_data_dir, tmp_path):
    loaded = models.load(str(tiny_model_dir("llama")), template="base", device="cpu")
    store = ResultsStore(tmp_path / "r")
    settings = ExtractionSettings(n_samples=2, max_length=1024)
    runner.extract(loaded, "aqua/none/correct", store, settings=settings, data_dir=study_data_dir, progress=False)
    assert "entry_mean" not in read_results(tmp_path / "r").columns
    with_entries = dataclasses.replace(settings, entry_stats=True)
    plan = runner.plan_run(
        loaded.name, loaded.template, "aqua/none/correct", store, settings=with_entries, data_dir=study_data_dir
    )
    assert len(plan.todo) == 2
    runner.extract(loaded, "aqua/none/correct", store, settings=with_entries, data_dir=study_data_dir, progress=False)
    frame = read_results(tmp_path / "r")
    assert len(frame) == 2 * loaded.n_layers * 4 and frame["entry_mean"].notna().all()
