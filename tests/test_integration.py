"""The packaged offline models end to end: `extract` writes finite rows equal to the plain procedure."""

import pytest
import torch

from analysis import cli, gradients, models, runner, spectra
from analysis.store import ResultsStore, read_results

pytestmark = pytest.mark.slow

OFFLINE = [("gemma-3-270m", 18), ("smollm2-135m-instruct", 30)]


def plain_statistics(loaded, encoded) -> dict:
    """Batch size 1, Hugging Face loss, materialised param.grad, full SVD in float64."""
    projections = gradients.attention_projections(loaded.model)
    for module in projections.values():
        module.weight.requires_grad_(True)
        module.weight.grad = None
    input_ids = torch.tensor([encoded.input_ids])
    labels = input_ids.clone()
    labels[0, : encoded.prompt_length] = -100
    loaded.model(input_ids, labels=labels).loss.backward()
    stats = {}
    for key, module in projections.items():
        s = torch.linalg.svd(module.weight.grad.double())[1]
        stats[key] = {k: v.item() for k, v in spectra.statistics_from_singular_values(s).items()}
    for module in projections.values():
        module.weight.requires_grad_(False)
        module.weight.grad = None
    return stats


@pytest.mark.parametrize("name,n_layers", OFFLINE)
def test_extract_on_offline_model_matches_plain_procedure(name, n_layers, study_data_dir, tmp_path, capsys):
    out = tmp_path / "results"
    code = cli.main(["extract", "--model", name, "--data", "aqua/simplified/correct", "--out", str(out),
                     "--limit", "2", "--data-dir", str(study_data_dir), "--no-progress"])
    assert code == 0
    assert "2 computed" in capsys.readouterr().out
    frame = read_results(out)
    assert len(frame) == 2 * n_layers * 4
    assert frame.groupby("sample_index").size().tolist() == [n_layers * 4] * 2
    assert torch.isfinite(torch.tensor(frame[list(spectra.STATISTICS)].to_numpy())).all()

    loaded = models.load(name, device="cpu")
    plan = runner.plan_run(name, loaded.template, "aqua/simplified/correct", ResultsStore(tmp_path / "scratch"), 2, 1024, study_data_dir)
    prepared, _ = runner.prepare_samples(loaded, plan.resolved, [0, 1], 1024)
    worst = 0.0
    for sample in prepared:
        reference = plain_statistics(loaded, sample.encoded)
        rows = frame[frame["sample_index"] == sample.index]
        for row in rows.itertuples():
            expected = reference[(row.layer, row.proj)]
            for stat in spectra.STATISTICS:
                scale = expected["sigma_max"] if stat == "sigma_min" else expected[stat]
                worst = max(worst, abs(getattr(row, stat) - expected[stat]) / abs(scale))
    print(f"{name}: largest relative difference to the plain procedure {worst:.2e}")
    assert worst < 1e-4
