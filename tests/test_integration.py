"""The packaged offline models end to end: `extract` writes finite rows equal to the plain procedure."""

import pytest
import torch

from analysis import cli
from analysis.core.settings import ExtractionSettings
from analysis.extract import models, plain, runner, spectra
from analysis.store import ResultsStore, read_results

pytestmark = pytest.mark.slow

OFFLINE = [("gemma-3-270m", 18), ("smollm2-135m-instruct", 30)]


@pytest.mark.parametrize("name,n_layers", OFFLINE)
def test_extract_on_offline_model_matches_plain_procedure(name, n_layers, study_data_dir, tmp_path, capsys):
    out = tmp_path / "results"
    code = cli.main(
        [
            "extract",
            "--model",
            name,
            "--data",
            "aqua/simplified/correct",
            "--out",
            str(out),
            "--n-samples",
            "2",
            "--data-dir",
            str(study_data_dir),
            "--no-progress",
        ]
    )
    assert code == 0
    assert "2 computed" in capsys.readouterr().out
    frame = read_results(out)
    assert len(frame) == 2 * n_layers * 4
    assert frame.groupby("sample_index").size().tolist() == [n_layers * 4] * 2
    assert torch.isfinite(torch.tensor(frame[list(spectra.STATISTICS)].to_numpy())).all()

    loaded = models.load(name, device="cpu")
    plan = runner.plan_run(
        name,
        loaded.template,
        "aqua/simplified/correct",
        ResultsStore(tmp_path / "scratch"),
        settings=ExtractionSettings(2),
        data_dir=study_data_dir,
    )
    assert sorted(plan.todo) == sorted(set(frame["sample_index"]))  # the same seeded sample of the file
    prepared, _ = runner.prepare_samples(loaded, plan.resolved, plan.todo, 1024)
    worst = 0.0
    for sample in prepared:
        rows = frame[frame["sample_index"] == sample.index]
        expected = plain.reference_statistics(loaded.model, sample.encoded)
        worst = max(worst, plain.largest_relative_difference(rows, expected))
    print(f"{name}: largest relative difference to the plain procedure {worst:.2e}")
    assert worst < 1e-4
