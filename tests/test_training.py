"""Fine-tuning runs on a tiny model: reproducible, resumable, probes by the extraction, no change at step 0."""

import json

import numpy as np
import pandas as pd
import pytest

from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings, TrainingSettings
from analysis.data import sample_draws
from analysis.extract import models, runner
from analysis.store import ResultsStore, read_results
from analysis.train import checkpoint, loop, run_tables
from analysis.train.naming import TrainingRunId, parse_probe_model

SETTINGS = TrainingSettings(
    n_probes=2,
    n_train=6,
    steps=4,
    batch_size=2,
    learning_rate=1e-3,
    checkpoints=(0, 2, 4),
    probe_settings=("none", "detailed"),
)
EXTRACTION = ExtractionSettings(max_length=400, device="cpu")
STATISTICS = ["nuclear_norm", "sigma_max", "frobenius", "effective_rank", "loss"]


def fresh(tiny_model_dir):
    return models.load(str(tiny_model_dir("llama")), template="base", device="cpu")


def run_id(loaded, arm="detailed", seed=0):
    return TrainingRunId(loaded.name, "aqua", arm, "correct", seed)


def train_once(tiny_model_dir, out, study_data_dir, arm="detailed", seed=0, **kwargs):
    loaded = fresh(tiny_model_dir)
    summary = loop.train(
        loaded,
        run_id(loaded, arm, seed),
        out,
        settings=SETTINGS,
        extraction=EXTRACTION,
        data_dir=study_data_dir,
        progress=False,
        **kwargs,
    )
    return loaded, summary


def results(out):
    rows = read_results(out).sort_values(["model", "condition", "sample_index", "layer", "proj"], ignore_index=True)
    return rows, run_tables.read_table(out, run_tables.LOSSES), run_tables.read_table(out, run_tables.WEIGHT_CHANGE)


@pytest.fixture(scope="module")
def reference(tiny_model_dir, study_data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    train_once(tiny_model_dir, out, study_data_dir)
    return out


def test_each_seed_trains_on_its_own_instructions_and_never_on_a_probe(study_data_dir):
    probes, trained = loop.split_instructions("aqua", 500, 8, 64, seed=0, data_dir=study_data_dir)
    assert probes == sample_draws.dataset_sample_ids(
        "aqua", 500, 8, directory=study_data_dir
    )  # what the extraction draws
    assert len(trained) == len(set(trained)) == 64 and not set(probes) & set(trained)
    other_probes, other = loop.split_instructions("aqua", 500, 8, 64, seed=1, data_dir=study_data_dir)
    assert other_probes == probes and len(other) == 64 and not set(probes) & set(other)
    assert set(trained) != set(other)  # the seeds replicate the training set, not only the batch order
    assert [trained, other] == [
        loop.split_instructions("aqua", 500, 8, 64, seed=s, data_dir=study_data_dir)[1] for s in (0, 1)
    ]
    # the whole pool asked for: every record but the probes, under any seed
    assert loop.split_instructions("aqua", 500, 8, 492, seed=3, data_dir=study_data_dir)[1] == sorted(
        set(range(500)) - set(probes)
    )
    with pytest.raises(StudyError, match="500"):
        loop.split_instructions("aqua", 500, 8, 493, seed=0)


def test_batches_depend_on_seed_and_step_only():
    first = [loop.batch_positions(6, 4, 0, step) for step in (1, 2, 3)]
    assert sorted(first[0] + first[1][:2]) == list(range(6))  # one pass over the set, then the next
    assert first == [loop.batch_positions(6, 4, 0, step) for step in (1, 2, 3)]
    assert first != [loop.batch_positions(6, 4, 1, step) for step in (1, 2, 3)]


def test_a_run_stores_losses_weight_change_and_probes_at_each_checkpoint(reference):
    rows, losses, change = results(reference)
    assert losses["step"].tolist() == [1, 2, 3, 4] and np.isfinite(losses["loss"]).all()
    assert sorted(change["step"].unique()) == [0, 2, 4]
    parsed = pd.DataFrame([parse_probe_model(m) for m in rows["model"].unique()])
    assert sorted(parsed["step"]) == [0, 2, 4] and set(parsed["arm"]) == {"detailed"}
    assert set(rows["setting"]) == {"none", "detailed"}
    # every probe the extraction draws is stored, or recorded as skipped (a prompt past max_length)
    skipped = ResultsStore(reference, create=False).read("skipped")
    for (model, condition), stored in rows.groupby(["model", "condition"])["sample_index"]:
        passed = skipped[(skipped["model"] == model) & (skipped["condition"] == condition)]["sample_index"]
        assert len(set(stored) | set(passed)) == SETTINGS.n_probes and not set(stored) & set(passed)
    assert (change[change["step"] > 0]["frobenius"] > 0).all()
    assert not list((reference / "runs").rglob("checkpoint-*"))  # removed once the run is done


def test_the_weight_change_at_step_zero_is_zero(reference):
    _, _, change = results(reference)
    start = change[change["step"] == 0]
    assert (
        len(start) == 4 * 4
        and (start[["nuclear_norm", "sigma_max", "frobenius", "relative_frobenius"]] == 0).all().all()
    )


def test_the_relative_change_is_the_change_over_the_step_zero_weights(reference):
    from safetensors.torch import load_file

    _, _, change = results(reference)
    initial = load_file(str(next((reference / "runs").rglob(checkpoint.INITIAL))))
    last = change[change["step"] == 4]
    norms = [float(initial[f"{layer}.{proj}"].double().norm()) for layer, proj in zip(last["layer"], last["proj"])]
    assert (last["relative_frobenius"] > 0).all()
    np.testing.assert_allclose(last["relative_frobenius"] * norms, last["frobenius"], rtol=1e-12)


def test_step_zero_probes_equal_a_plain_extraction(reference, tiny_model_dir, study_data_dir, tmp_path):
    loaded = fresh(tiny_model_dir)
    store = ResultsStore(tmp_path / "plain")
    for spec in loop.probe_conditions(SETTINGS):
        runner.extract(
            loaded,
            spec,
            store,
            settings=EXTRACTION.but(n_samples=SETTINGS.n_probes),
            data_dir=study_data_dir,
            progress=False,
        )
    plain = read_results(tmp_path / "plain").sort_values(["condition", "sample_index", "layer", "proj"])
    rows, _, _ = results(reference)
    step0 = rows[rows["model"] == run_id(loaded).probe_model(0)].sort_values(
        ["condition", "sample_index", "layer", "proj"]
    )
    assert len(step0) == len(plain) > 0
    np.testing.assert_allclose(step0[STATISTICS].to_numpy(), plain[STATISTICS].to_numpy(), rtol=1e-6, atol=1e-6)
    later = rows[rows["model"] == run_id(loaded).probe_model(4)].sort_values(
        ["condition", "sample_index", "layer", "proj"]
    )
    assert not np.allclose(later["nuclear_norm"].to_numpy(), plain["nuclear_norm"].to_numpy())


def test_a_seeded_run_is_reproducible(reference, tiny_model_dir, study_data_dir, tmp_path):
    train_once(tiny_model_dir, tmp_path, study_data_dir)
    for mine, theirs in zip(results(tmp_path), results(reference)):
        pd.testing.assert_frame_equal(mine.drop(columns=[], errors="ignore"), theirs)
    _, other_seed = train_once(tiny_model_dir, tmp_path / "seed1", study_data_dir, seed=1)
    assert not results(tmp_path / "seed1")[1]["loss"].equals(results(reference)[1]["loss"])
    done = [next((root / "runs").rglob(run_tables.DONE)) for root in (tmp_path, tmp_path / "seed1", reference)]
    trained = [json.loads(path.read_text())["about"]["train_ids"] for path in done]
    assert trained[0] == trained[2] != trained[1] and len(trained[1]) == SETTINGS.n_train  # recorded with the run


@pytest.mark.parametrize("stopped_at, resumed_from", [(1, None), (3, 2)])
def test_an_interrupted_run_resumes_to_equal_numbers(
    reference, tiny_model_dir, study_data_dir, tmp_path, monkeypatch, stopped_at, resumed_from
):
    original = loop.train_step
    calls = {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == stopped_at:  # step 1: before any checkpoint; step 3: after the one of step 2
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(loop, "train_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_once(tiny_model_dir, tmp_path, study_data_dir)
    left = list((tmp_path / "runs").rglob("checkpoint-*"))
    assert [p.name for p in left] == ([] if resumed_from is None else [f"checkpoint-{resumed_from:06d}"])
    monkeypatch.setattr(loop, "train_step", original)
    _, summary = train_once(tiny_model_dir, tmp_path, study_data_dir)
    assert summary.resumed_from == resumed_from and summary.steps_computed == 4 - (resumed_from or 0)
    for mine, theirs in zip(results(tmp_path), results(reference)):
        pd.testing.assert_frame_equal(mine, theirs)
    _, again = train_once(tiny_model_dir, tmp_path, study_data_dir)
    assert again.steps_computed == 0  # a finished run is not computed again
    loaded = fresh(tiny_model_dir)
    with pytest.raises(StudyError, match="finished with other settings"):
        loop.train(
            loaded,
            run_id(loaded),
            tmp_path,
            settings=SETTINGS.but(learning_rate=0.5),
            extraction=EXTRACTION,
            data_dir=study_data_dir,
        )


def test_the_last_checkpoint_is_kept_when_asked(tiny_model_dir, study_data_dir, tmp_path):
    train_once(tiny_model_dir, tmp_path, study_data_dir, keep_checkpoint=True)
    assert [p.name for p in (tmp_path / "runs").rglob("checkpoint-*")] == ["checkpoint-000004"]


def test_a_checkpoint_of_other_settings_is_refused(tiny_model_dir, study_data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(loop, "checkpoint_steps", lambda settings: [0])
    loaded = fresh(tiny_model_dir)
    run = run_id(loaded)
    run_dir = loop.run_directory(tmp_path, run)
    optimizer = loop.make_optimizer(loaded.model, SETTINGS)
    about = loop.run_about(run, SETTINGS, EXTRACTION, loaded, train_ids=[1, 2, 3])
    saved = checkpoint.save(run_dir, 2, loaded.model, optimizer, about=about)
    changed = {**about, "learning_rate": 1.0}
    with pytest.raises(StudyError, match="learning_rate"):
        checkpoint.restore(saved, loaded.model, optimizer, changed)
    assert json.loads((saved.folder / "state.json").read_text())["step"] == 2


def test_the_train_command_runs_the_arms_and_the_cut_arm_matches_the_none_arm_s_tokens(
    tiny_model_dir, study_data_dir, tmp_path, capsys
):
    from analysis.cli import main

    arguments = ["train", "--model", str(tiny_model_dir("llama")), "--out", str(tmp_path), "--template", "base"]
    arguments += ["--data", "aqua/none/correct", "aqua/detailed_cut_none/correct", "--data-dir", str(study_data_dir)]
    arguments += ["--seeds", "0", "--steps", "2", "--train-batch-size", "2", "--n-probes", "1", "--n-train", "4"]
    arguments += ["--checkpoints", "0", "2", "--probe-settings", "none", "--max-length", "400", "--no-progress"]
    assert main(arguments) == 0
    assert capsys.readouterr().out.count("2 steps computed") == 2
    losses = run_tables.read_table(tmp_path, run_tables.LOSSES)
    tokens = losses.pivot(index="step", columns="arm", values="n_response_tokens")
    assert tokens["none"].tolist() == tokens["detailed_cut_none"].tolist()
    rows = read_results(tmp_path)
    start = rows[rows["model"].str.endswith(":step0")].drop(columns="model")
    by_run = [group.drop(columns="model") for _, group in rows[rows["model"].str.endswith(":step0")].groupby("model")]
    assert len(by_run) == 2 and len(start) == 2 * len(by_run[0])  # the second run's step 0 copied from the first
    pd.testing.assert_frame_equal(by_run[0].reset_index(drop=True), by_run[1].reset_index(drop=True))
    assert main(arguments) == 0  # both runs done: nothing computed again
    assert "steps computed" not in capsys.readouterr().out
    assert main([*arguments[:7], "--data", "aqua/none/correct", "gsm8k/none/correct"]) == 2


def test_a_training_profile_runs_and_its_page_reads_the_runs(tiny_model_dir, study_data_dir, tmp_path):
    from dataclasses import replace

    from blocks_read import tables_of, text_of

    from analysis import profiles
    from analysis.findings.calibration import training_calibration
    from analysis.report import sections
    from analysis.report import training_chapter as page_module
    from analysis.report.blocks import Html
    from analysis.study import pipeline

    settings = SETTINGS.but(seeds=(0, 1))  # the three arms
    profile = replace(
        profiles.get_profile("training"),
        name="tiny-training",
        models=(str(tiny_model_dir("llama")),),
        conditions=profiles.training_conditions(settings),
        extraction=EXTRACTION.but(template="base", n_samples=settings.n_probes),
        training=settings,
        n_resamples=100,
    )
    result = pipeline.run_profile(profile, tmp_path, study_data_dir, book=False, progress=False, say=lambda _: None)
    assert len(result.extraction) == 6 and {r["kind"] for r in result.extraction} == {"training"}
    chapter = page_module.CHAPTER
    page = page_module.TrainingPage.open(chapter, {"profile": "tiny-training", "results_dir": str(tmp_path)})
    with pytest.raises(page_module.notebook_parameters.ParameterError, match="n_probe"):
        page_module.TrainingPage.open(chapter, {"profile": "tiny-training", "n_probe": 3})
    with pytest.raises(page_module.TrainingPageError, match="not a training profile"):
        page_module.TrainingPage.open(chapter, {"profile": "cpu", "results_dir": str(tmp_path)})
    assert page.last_step == 4 and "AdamW, learning rate 0.001" in page.setup()
    section = page_module.verdicts_section(page)
    (verdicts,) = tables_of(section)  # the verdicts with their numbers, as every page shows them
    assert verdicts["check"].tolist() == ["T1", "T1", "T2", "T3", "T3", "T3"]
    assert set(verdicts["verdict"]) == {"too few samples"}  # 2 probes, 2 seeds
    assert "vs Detailed cut to None length" in verdicts.loc[verdicts["check"] == "T2", "numbers"].iloc[0]
    for figures in (
        page_module.loss_curves(page),
        page_module.probe_curves(page),
        page_module.weight_change(page),
        page_module.relative_change(page),
    ):
        assert len(figures) == 1
    (matrix,) = [b.html for b in section if isinstance(b, Html)]
    assert matrix.startswith("<svg") and 'aria-label="Verdict matrix' in matrix, matrix[:200]
    relative = page_module.relative_change_table(page)
    assert len(relative) == 3 and (relative["relative change (geometric mean)"] > 0).all()
    rates = page_module.error_rates(page, reps=3)
    assert set(rates["checks"]) == {"T1", "T2", "T3"} and rates["scenario"].nunique() == len(
        training_calibration.SCENARIOS
    )
    assert "**T2**: " in text_of(sections.claims(page))


@pytest.mark.slow
def test_a_training_profile_builds_its_book(tiny_model_dir, study_data_dir, tmp_path):
    from dataclasses import replace

    from analysis import profiles
    from analysis.study import pipeline

    settings = SETTINGS.but(n_probes=5, n_train=8, seeds=(0, 1))
    profile = replace(
        profiles.get_profile("training"),
        name="tiny-training",
        models=(str(tiny_model_dir("llama")),),
        conditions=profiles.training_conditions(settings),
        extraction=EXTRACTION.but(template="base", n_samples=settings.n_probes),
        training=settings,
        n_resamples=200,
    )
    result = pipeline.run_profile(
        profile, tmp_path / "results", study_data_dir, book_root=tmp_path / "site", progress=False, say=lambda _: None
    )
    assert [n["notebook"] for n in result.notebooks] == ["during_training"]
    page = (result.book_index.parent / "book" / "notebooks" / "during_training.html").read_text()
    # the verdict matrix (inline SVG); the losses, the probe curves, the weight change and the relative change
    # (one model) as images
    assert page.count('aria-label="Verdict matrix') == 1 and page.count("<img") == 4
    assert "T3" in page and "too few samples" in page
    assert (result.book_index.parent / "book" / "references.html").is_file()
