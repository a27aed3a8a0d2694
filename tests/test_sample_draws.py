"""Each condition's sample is drawn once: the run keeps its draw beside the store, the pages read it back."""

import numpy as np
import pytest
from synthetic import make_results, write_store

from analysis import data
from analysis.core.settings import ExtractionSettings
from analysis.data import sample_draws
from analysis.data.records import load_records
from analysis.extract import models, runner
from analysis.report.load import load_results
from analysis.store import ResultsStore

MODEL = "base-model"


def test_a_kept_draw_reads_back_and_a_damaged_one_names_its_file(tmp_path):
    sample_draws.record(tmp_path, "aqua/none/correct", 5, [7, 3, 9])
    sample_draws.record(tmp_path, "wiki/len100/correct", None, [0, 1])
    assert sample_draws.read(tmp_path) == {("aqua/none/correct", 5): [7, 3, 9], ("wiki/len100/correct", None): [0, 1]}
    assert sample_draws.read(tmp_path / "elsewhere") == {}
    path = sample_draws.draw_path(tmp_path, "aqua/none/correct", 5)
    path.write_text('{"condition": "aqua/none/correct"}')
    with pytest.raises(sample_draws.DrawsError, match=r"n-5\.json: not a kept draw of aqua/none/correct"):
        sample_draws.read(tmp_path)


def test_the_pages_read_the_samples_the_run_kept_not_a_new_draw(tmp_path):
    rows = make_results(
        [("aqua", "none", "correct"), ("aqua", "detailed", "correct")], {MODEL: ("base", 6)}, n_samples=8
    )
    root = write_store(tmp_path, rows)
    conditions = ["aqua/none/correct", "aqua/detailed/correct"]
    seeded = load_results(root, [MODEL], conditions, n_samples=3, data_dir=tmp_path / "no-data")
    ranks = sample_draws.sample_ranks("aqua", 8)
    assert set(seeded.rows["sample_index"]) == set(np.argsort(ranks, kind="stable")[:3].tolist())
    kept = sorted(set(range(8)) - set(seeded.rows["sample_index"]))[:3]  # three other ids, as another draw took
    for condition in conditions:
        sample_draws.record(root, condition, 3, kept)
    results = load_results(root, [MODEL], conditions, n_samples=3, data_dir=tmp_path / "no-data")
    for condition in conditions:
        chosen = results.rows.loc[results.rows["condition"] == condition, "sample_index"]
        assert sorted(set(chosen)) == kept
    assert results.coverage["expected"].tolist() == [3, 3] and results.coverage["missing"].tolist() == [0, 0]
    assert (
        load_results(root, [MODEL], conditions, n_samples=2, data_dir=tmp_path / "no-data")
        .rows["sample_index"]
        .nunique()
        == 2
    )  # a sample size the run did not draw: drawn by the page


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return models.load(str(tiny_model_dir("llama")), template="base", device="cpu")


def test_an_extraction_keeps_the_seeded_draw_it_computed(tiny, study_data_dir, tmp_path):
    store = ResultsStore(tmp_path / "r")
    settings = ExtractionSettings(n_samples=3, max_length=256)
    runner.extract(tiny, "aqua/none/correct", store, settings=settings, data_dir=study_data_dir, progress=False)
    records = len(load_records(data.resolve("aqua/none/correct", study_data_dir).path))
    expected = list(sample_draws.dataset_sample_ids("aqua", records, 3, directory=study_data_dir))
    assert sample_draws.read(store.root) == {("aqua/none/correct", 3): expected}
