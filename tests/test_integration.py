"""The packaged offline models end to end: `extract` writes finite rows equal to the plain procedure."""

import pytest
import torch

from analysis import cli
from analysis.core.settings import ExtractionSettings
from analysis.extract import models, plain, preparation, runner, spectra
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
    arguments = ["extract", "--model", name, "--data", "aqua/simplified/correct", "--out", str(out)]
    again = [*arguments, "--n-samples", "2", "--data-dir", str(study_data_dir), "--no-progress"]
    assert cli.main(again) == 0  # everything stored: said so, no "nan s/sample"
    assert "0 computed, 2 already stored, skipped: none; nothing to compute" in capsys.readouterr().out
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
    prepared, _ = preparation.prepare_samples(loaded, plan.resolved, plan.todo, 1024)
    worst = 0.0
    for sample in prepared:
        rows = frame[frame["sample_index"] == sample.index]
        expected = plain.reference_statistics(loaded.model, sample.encoded)
        worst = max(worst, plain.largest_relative_difference(rows, expected))
    print(f"{name}: largest relative difference to the plain procedure {worst:.2e}")
    assert worst < 1e-4


@pytest.mark.parametrize("name,n_layers", OFFLINE)
def test_answer_scored_extraction_on_offline_model_matches_plain_autograd_on_the_span(
    name, n_layers, study_data_dir, tmp_path
):
    from analysis import data
    from analysis.extract import prompts

    spec = "strategyqa/simplified_answer/correct"
    loaded = models.load(name, device="cpu")
    # in float64: a loss on one answer token does not average the float32 rounding of 18-30 layers
    # away (Gemma's gradients then differ between two float32 passes by up to 1.6e-4), and this
    # test is about which tokens are scored
    loaded.model.double()
    store = ResultsStore(tmp_path / "results")
    summary = runner.extract(
        loaded, spec, store, settings=ExtractionSettings(2), data_dir=study_data_dir, progress=False
    )
    assert summary.computed == 2
    frame = read_results(tmp_path / "results")
    records = data.answer_records(data.get_condition(spec), study_data_dir)
    for index, rows in frame.groupby("sample_index"):
        record = records[index]
        instruction = prompts.instruction_text(record.instruction, record.input)
        prompt = prompts.prompt_text(loaded.tokenizer, instruction, loaded.template, loaded.system_message)
        encoding = loaded.tokenizer(prompt + record.output)
        first = encoding.char_to_token(
            len(prompt) + record.answer_start
        )  # the token holding the answer's first character
        scored = loaded.tokenizer.decode(encoding["input_ids"][first:])
        assert scored.strip() == record.output[record.answer_start :]
        expected = plain.reference_statistics(loaded.model, encoding["input_ids"], first)
        assert plain.largest_relative_difference(rows, expected, with_loss=True) < 1e-4
