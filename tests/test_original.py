"""Importing the original study's statistics: equal to this project's extraction, faults counted, resumable."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import cli
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.data import data_files
from analysis.data.records import load_records
from analysis.extract import models, original_import, original_sources, runner
from analysis.store import ResultsStore, read_results, read_skipped, runlog
from tests import original_format as fmt

CONDITIONS = ("aqua/none/correct", "aqua/none/irrelevant", "wiki/len100/correct")
FOLDER = "qwen2_1_5b"  # the original folder of Qwen/Qwen2-1.5B, a base model
MODEL = "Qwen/Qwen2-1.5B"
KEY = ["condition", "sample_index", "layer", "proj"]
COMPARED = (
    "nuclear_norm",
    "sigma_max",
    "sigma_min",
    "frobenius",
    "sigma1_ratio",
    "entry_mean",
    "entry_max",
    "entry_min",
)


@pytest.fixture(autouse=True)
def offline_hub(monkeypatch):
    """No test here reaches the real hub: a tokenizer asked of it fails at once (R stays missing)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def extracted(tiny_model_dir, study_data_dir, tmp_path_factory):
    """This project's rows of a tiny random model (with entry statistics), 3 samples per condition."""
    loaded = models.load(str(tiny_model_dir("llama")), template="base", device="cpu")
    root = tmp_path_factory.mktemp("extracted")
    store = ResultsStore(root)
    for condition in CONDITIONS:
        runner.extract(
            loaded,
            condition,
            store,
            settings=ExtractionSettings(n_samples=3, max_length=1024, entry_stats=True),
            data_dir=study_data_dir,
            progress=False,
        )
    return read_results(root)


@pytest.fixture
def tree(extracted, study_data_dir, tmp_path):
    """A grads_exp tree in the original format written from the extracted rows."""
    fmt.write_from_rows(tmp_path / "source", FOLDER, extracted, study_data_dir)
    return tmp_path / "source"


def run_import(source, out, data_dir, **kwargs):
    return original_import.import_source(str(source), ResultsStore(out), data_dir, progress=False, **kwargs)


def relative_difference(a: pd.Series, b: pd.Series) -> np.ndarray:
    a, b = a.to_numpy(float), b.to_numpy(float)
    return np.abs(a - b) / np.maximum(np.abs(b), 1e-300)


def test_import_gives_the_rows_of_an_extraction(tree, extracted, study_data_dir, tmp_path):
    result = run_import(tree, tmp_path / "out", study_data_dir, conditions=CONDITIONS)
    assert result.imported == 3 * len(CONDITIONS)
    imported = read_results(tmp_path / "out")
    assert set(imported["model"]) == {MODEL}
    assert set(imported["template"]) == {"base"} and set(imported["max_length"]) == {1024}
    assert set(imported["origin"]) == {original_import.ORIGIN}
    both = extracted.merge(imported, on=KEY, suffixes=("_x", "_i"), validate="one_to_one")
    assert len(both) == len(extracted) == len(imported)
    for column in (*COMPARED, "loss"):
        assert relative_difference(both[f"{column}_i"], both[f"{column}_x"]).max() <= 1e-6, column
    for column in ("effective_rank", "cos_same_layer", "n_response_tokens"):
        assert imported[column].isna().all()
    for column in ("dataset", "setting", "responses", "source_file", "data_sha256"):
        assert (both[f"{column}_i"] == both[f"{column}_x"]).all()


def test_imported_values_equal_the_files_values(tree, study_data_dir, tmp_path):
    run_import(tree, tmp_path / "out", study_data_dir)
    imported = read_results(tmp_path / "out").set_index(KEY)
    path = fmt.tree_path(tree, FOLDER, "aqua/none/irrelevant")
    records = original_import.sample_lookup(
        load_records(study_data_dir / original_import.data.get_condition("aqua/none/irrelevant").relative_path)
    )
    for item in fmt.read_lines(path):
        index = records[(item["instruction"], item["output"])][0]
        for layer in range(4):
            for proj in fmt.PROJECTIONS:
                row = imported.loc[("aqua/none/irrelevant", index, layer, proj)]
                for key, column in fmt.STAT_COLUMNS.items():
                    expected = item[fmt.parameter_name(layer, proj)][key]
                    assert abs(row[column] - expected) <= 1e-6 * abs(expected)
                assert row["loss"] == pytest.approx(item["loss"], rel=1e-6)
    origin = imported["origin_file"].unique()
    assert any(o.endswith("cot_500_wrong_answer_shuffle/qwen2_1_5b/grads_aqua_train_no_cot.jsonl") for o in origin)


def stored_ids(extracted, condition: str) -> list[int]:
    """The sample indices the extraction took of a condition (a seeded random sample), in file order."""
    return sorted(int(i) for i in extracted.loc[extracted["condition"] == condition, "sample_index"].unique())


def test_faults_are_counted_reported_and_never_stored(tree, extracted, study_data_dir, tmp_path):
    ids = stored_ids(extracted, "aqua/none/correct")
    path = fmt.tree_path(tree, FOLDER, "aqua/none/correct")
    fmt.set_nan(path, 1)
    fmt.append_duplicate(path, 0)
    fmt.append_unmatched(path)
    fmt.append_foreign(path)
    fmt.append_cut_line(path)
    unknown = fmt.tree_path(tree, "mystery_model", "aqua/none/correct")
    unknown.parent.mkdir(parents=True)
    unknown.write_text(path.read_text())
    result = run_import(tree, tmp_path / "out", study_data_dir)
    reports = {r.file: r for r in result.files}
    report = reports[path.relative_to(tree).as_posix()]
    assert report.problems == {"non_finite": 1, "duplicate": 1, "unmatched": 1, "foreign": 1, "cut": 1}
    assert report.first_line == {"non_finite": 2, "duplicate": 4, "unmatched": 5, "foreign": 6, "cut": 7}
    assert report.imported == 2
    lines = report.problem_lines()
    assert lines[0] == f"{report.file}: note: 4 layers in the file, but {MODEL} has 28"  # a tiny model stands in
    assert len(lines) == 6 and all(line.startswith(f"{report.file}: line ") for line in lines[1:])
    assert any("S_sum of layer 0 q is nan" in line for line in lines)
    unknown_report = reports[unknown.relative_to(tree).as_posix()]
    assert "unknown model folder 'mystery_model'" in unknown_report.problem_lines()[0]
    rows = read_results(tmp_path / "out", condition="aqua/none/correct")
    assert sorted(rows["sample_index"].unique()) == [ids[0], ids[2]]
    assert np.isfinite(rows["nuclear_norm"]).all() and set(rows["model"]) == {MODEL}
    skipped = read_skipped(tmp_path / "out")
    assert list(skipped["sample_index"]) == [ids[1]] and "non-finite" in skipped["reason"].iloc[0]
    # a missing folder: the other 53 study files of the model are reported absent
    assert len(result.absent[MODEL]) == 56 - len(CONDITIONS)


def test_a_second_import_adds_only_what_is_missing(tree, study_data_dir, tmp_path):
    path = fmt.tree_path(tree, FOLDER, "aqua/none/correct")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]))
    first = run_import(tree, tmp_path / "out", study_data_dir)
    assert first.imported == 2 + 3 + 3
    second = run_import(tree, tmp_path / "out", study_data_dir)
    assert second.imported == 0 and all(r.already_imported for r in second.files)
    path.write_text("".join(lines))  # the original run went on: one more sample in the file
    third = run_import(tree, tmp_path / "out", study_data_dir)
    grown = next(r for r in third.files if r.file.endswith(path.name) and "cot_500/" in r.file)
    assert grown.imported == 1 and grown.already_stored == 2
    rows = read_results(tmp_path / "out")
    assert rows.groupby("condition")["sample_index"].nunique().to_dict() == dict.fromkeys(CONDITIONS, 3)
    assert not rows.duplicated(KEY).any()


def test_an_interrupted_import_keeps_the_files_already_imported(tree, study_data_dir, tmp_path, monkeypatch):
    real = ResultsStore.write
    calls = {"n": 0}

    def failing_second_write(self, key, rows, skipped):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, key, rows, skipped)

    monkeypatch.setattr(ResultsStore, "write", failing_second_write)
    with pytest.raises(KeyboardInterrupt):
        run_import(tree, tmp_path / "out", study_data_dir)
    assert read_results(tmp_path / "out")["condition"].nunique() == 1
    monkeypatch.setattr(ResultsStore, "write", real)
    result = run_import(tree, tmp_path / "out", study_data_dir)
    assert sum(r.already_imported for r in result.files) == 1
    assert read_results(tmp_path / "out").groupby("condition")["sample_index"].nunique().min() == 3


def test_one_file_with_model_and_condition_through_the_command(tree, study_data_dir, tmp_path, capsys):
    path = fmt.tree_path(tree, FOLDER, "wiki/len100/correct")
    out = tmp_path / "out"
    args = ["import-original", str(path), "--out", str(out), "--data-dir", str(study_data_dir), "--no-progress"]
    assert cli.main([*args, "--model", "my-model", "--condition", "wiki/len100/correct"]) == 2
    assert "--template" in capsys.readouterr().err  # a model outside the registry must name its template
    assert cli.main([*args, "--model", "my-model", "--condition", "wiki/len100/correct", "--template", "base"]) == 0
    assert "1 file: 3 samples imported, 0 already stored; rejected: none" in capsys.readouterr().out
    rows = read_results(out)
    assert set(rows["model"]) == {"my-model"} and set(rows["condition"]) == {"wiki/len100/correct"}
    assert cli.main([*args, "--model", "Qwen/Qwen2-1.5B-Instruct", "--condition", "wiki/len100/correct"]) == 0
    assert set(read_results(out, model="Qwen/Qwen2-1.5B-Instruct")["template"]) == {"instruct"}
    log = runlog.latest(out)
    assert log.profile["name"] == "import-original" and log.imports[0]["sha256"] == data_files.file_sha256(path)
    assert log.finished is not None


def test_bad_requests_get_one_line(tmp_path, study_data_dir, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["import-original", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "no grads_*.jsonl file" in capsys.readouterr().err
    assert cli.main(["import-original", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert cli.main(["import-original", str(empty), "--out", str(tmp_path / "o"), "--models", "qwen2_15b"]) == 2
    assert "--models: unknown model 'qwen2_15b'" in capsys.readouterr().err


def test_the_hub_dataset_downloads_only_the_files_asked_for(tree, study_data_dir, tmp_path, monkeypatch):
    import huggingface_hub

    names = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.jsonl"))
    downloaded = []

    class FakeApi:
        def list_repo_files(self, repo, repo_type=None, revision=None):
            assert (repo, repo_type) == ("MingLiiii/Layer_Gradient", "dataset")
            return ["README.md", *names]

    def fake_download(repo, name, repo_type=None, revision=None, cache_dir=None):
        downloaded.append(name)
        return str(tree / name)

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    result = run_import(
        "hf://datasets/MingLiiii/Layer_Gradient",
        tmp_path / "out",
        study_data_dir,
        models=["qwen2_1_5b"],
        conditions=["aqua/none/irrelevant"],
    )
    assert downloaded == ["grads_exp/cot_500_wrong_answer_shuffle/qwen2_1_5b/grads_aqua_train_no_cot.jsonl"]
    assert result.imported == 3
    assert read_results(tmp_path / "out")["origin_file"].iloc[0].startswith("hf://datasets/MingLiiii/Layer_Gradient/")


def test_no_network_gets_one_line(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    class OfflineApi:
        def list_repo_files(self, repo, repo_type=None, revision=None):
            raise ConnectionError("no route to host")

    monkeypatch.setattr(huggingface_hub, "HfApi", OfflineApi)
    source = "hf://datasets/MingLiiii/Layer_Gradient"
    assert cli.main(["import-original", source, "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {source}: cannot list the dataset's files (no route to host)"]


def test_every_study_file_and_paper_model_has_a_place_in_the_tree():
    for condition in original_import.data.study_conditions():
        for info in original_import.registry.PAPER_MODELS.values():
            relative = original_sources.original_path(info.original_folder, condition.key)
            model, key, problem = original_sources.describe_place(f"grads_exp/{relative}")
            assert problem is None and key == condition.key and original_import.registry.known_model(model) == info
    assert original_sources.describe_place("grads_exp/cot_500/gemma2_2b_it_new/grads_aqua_train_with_cot_gpt4o.jsonl")[
        :2
    ] == (
        "google/gemma-2-2b-it",
        "aqua/detailed/correct",
    )


def test_the_importer_does_not_import_torch():
    code = "import sys, analysis.extract.original_import; print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.stdout.strip() == "[]", done.stdout[:500]  # the torch modules the import pulled in


def test_non_finite_and_foreign_records_are_recognised():
    good = {"instruction": "a", "output": "b", "loss": 1.0}
    for layer in range(2):
        for proj in fmt.PROJECTIONS:
            good[fmt.parameter_name(layer, proj)] = dict.fromkeys(fmt.STAT_COLUMNS, 1.0)
    values, loss = original_import.parse_statistics(good, None)
    assert values.shape == (2, 4, 7) and loss == 1.0
    assert original_import.non_finite(values, math.inf) == "loss is inf"
    partial = dict(good)
    del partial[fmt.parameter_name(1, "k")]
    assert "no statistics of model.layers.1.self_attn.k_proj.weight" in original_import.parse_statistics(partial, None)
    assert original_import.parse_statistics([1, 2], None) == "a JSON list, not an object"
    assert json.loads(json.dumps(float("nan"))) != 0  # the original's json.dumps writes NaN, which json reads back


def test_the_comparison_page_finds_equal_samples_and_lists_mismatches(extracted, study_data_dir, tmp_path):
    from analysis.report import comparison

    model = extracted["model"].iloc[0]
    fmt.write_from_rows(tmp_path / "source", FOLDER, extracted, study_data_dir)
    changed = fmt.tree_path(tmp_path / "source", FOLDER, "aqua/none/correct")
    items = fmt.read_lines(changed)
    items[2][fmt.parameter_name(1, "v")]["S_max"] *= 1.01
    changed.write_text("".join(json.dumps(item) + "\n" for item in items))
    for condition in CONDITIONS:
        path = fmt.tree_path(tmp_path / "source", FOLDER, condition)
        run_import(path, tmp_path / "imported", study_data_dir, model=model, condition=condition, template="base")
    extracted_store = ResultsStore(tmp_path / "extracted")  # the extraction's rows, in a store of their own
    for (condition,), group in extracted.groupby(["condition"]):
        key = original_import.RunKey(original_import.registry.model_slug(model), *condition.split("/"), 1024, "base")
        extracted_store.write(key, group, None)
    differences = comparison.compare([tmp_path / "imported", tmp_path / "extracted"], [model], CONDITIONS)
    assert len(differences) == 3 * len(CONDITIONS)
    table = comparison.agreement_table(differences)
    assert set(table["samples"]) == {3}
    wrong = comparison.mismatches(differences)
    assert wrong[["condition", "sample_index", "statistic"]].values.tolist() == [
        ["aqua/none/correct", stored_ids(extracted, "aqua/none/correct")[2], "largest singular value"]
    ]
    assert wrong["relative difference"].iloc[0] == pytest.approx(1 / 1.01 * 0.01, rel=1e-3)
    assert f"{3 * len(CONDITIONS) - 1} of {3 * len(CONDITIONS)} samples" in comparison.comparison_paragraph(differences)
    assert "No model is stored both" in comparison.comparison_paragraph(
        comparison.compare([tmp_path / "imported"], [model], CONDITIONS)
    )


def test_an_imported_profile_computes_nothing_and_needs_an_import(tree, study_data_dir, tmp_path, monkeypatch):
    from analysis import profiles
    from analysis.study import pipeline

    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(pipeline.models, "load", no_loading)
    profile = profiles.get_profile("original")
    assert profile.source == "imported" and len(profile.models) == 10 and len(profile.conditions) == 56
    with pytest.raises(StudyError, match="import-original"):
        pipeline.run_profile(profile, tmp_path / "out", study_data_dir, book=False, say=lambda _: None)
    run_import(tree, tmp_path / "out", study_data_dir)
    said = []
    result = pipeline.run_profile(profile, tmp_path / "out", study_data_dir, book=False, say=said.append)
    assert result.extraction == [] and any("imported statistics of 1 of 10 models" in s for s in said)


def test_a_store_exported_as_one_parquet_file_reads_like_the_store(tree, study_data_dir, tmp_path):
    from analysis.report.load import lacks, load_results, origin_note
    from analysis.store.store_files import export_parquet

    run_import(tree, tmp_path / "out", study_data_dir)
    exported = export_parquet(tmp_path / "out", tmp_path / "book" / "results.parquet")
    from_store = load_results(tmp_path / "out", [MODEL], CONDITIONS, max_length=1024, data_dir=study_data_dir)
    from_file = load_results(exported, [MODEL], CONDITIONS, max_length=1024, data_dir=study_data_dir)
    columns = [*KEY, "nuclear_norm", "sigma1_ratio", "n_layers", "origin"]
    # columns no page reads, and those the imported statistics lack, stay on disk
    for unread in ("origin_sha256", "sigma_max", "loss", "effective_rank", "n_response_tokens"):
        assert unread not in from_file.rows and unread not in from_store.rows
    assert lacks(from_store.rows, "effective_rank") and not lacks(from_store.rows, "nuclear_norm")
    assert from_store.rows["condition"].dtype == "category" and from_store.rows["layer"].dtype == "int16"
    pd.testing.assert_frame_equal(
        from_store.rows[columns].sort_values(KEY).reset_index(drop=True),
        from_file.rows[columns].sort_values(KEY).reset_index(drop=True),
    )
    assert from_file.coverage["stored"].tolist() == from_store.coverage["stored"].tolist()
    assert "original study's released per-sample gradient statistics" in origin_note(from_file.rows)
    assert export_parquet(tmp_path / "empty-store", tmp_path / "x.parquet") is None


E2E_CONDITIONS = tuple(
    f"{dataset}/{setting}/{responses}"
    for dataset, settings in (
        ("aqua", ("none", "detailed")),
        ("gsm8k", ("none", "detailed")),
        ("wiki", ("len100", "len1000")),
    )
    for setting in settings
    for responses in ("correct", "irrelevant")
) + ("strategyqa/none/correct", "strategyqa/detailed/correct")


@pytest.mark.slow
def test_the_original_profile_builds_a_book_with_the_comparison(tiny_model_dir, study_data_dir, tmp_path):
    """A tree written from this project's extraction of two tiny models (labelled as a paper pair)
    imports, the original profile builds its book without extracting, and the comparison page
    finds every sample equal to the extraction."""
    from dataclasses import replace

    from analysis import profiles
    from analysis.study import pipeline

    pair = {"Qwen/Qwen2-1.5B": "base", "Qwen/Qwen2-1.5B-Instruct": "instruct"}
    results = tmp_path / "results"
    for name, template in pair.items():  # one tiny model (with a chat template) under both templates
        loaded = replace(models.load(str(tiny_model_dir("llama")), template=template, device="cpu"), name=name)
        store = ResultsStore(results / "paper")
        for condition in E2E_CONDITIONS:
            runner.extract(
                loaded,
                condition,
                store,
                settings=ExtractionSettings(n_samples=5, entry_stats=True),
                data_dir=study_data_dir,
                progress=False,
            )
        fmt.write_from_rows(
            tmp_path / "source",
            original_import.registry.PAPER_MODELS[name].original_folder,
            read_results(results / "paper", model=name),
            study_data_dir,
        )
    run_import(tmp_path / "source", results / "original", study_data_dir)
    original_profile = profiles.get_profile("original")
    profile = replace(
        original_profile,
        models=tuple(pair),
        conditions=E2E_CONDITIONS,
        extraction=original_profile.extraction.but(n_samples=5),
        n_resamples=200,
    )
    run = pipeline.run_profile(
        profile, results / "original", study_data_dir, book_root=tmp_path / "site", progress=False, say=lambda _: None
    )
    assert run.extraction == [] and run.book_index.is_file()
    pages = tmp_path / "site" / "book" / "notebooks"
    assert "Whose numbers." in (pages / "intro.ipynb").read_text()
    assert "L and L2: not available</strong> for" in (pages / "intro.ipynb").read_text()  # in the folded details
    assert "Effective rank: not in the imported statistics" in (pages / "math_reasoning.ipynb").read_text()
    beyond = (pages / "beyond_the_paper.ipynb").read_text()
    assert "L (is the gap only length): not available" in beyond
    assert "Response token counts (for the length regression): not in the imported statistics" in beyond
    comparison_page = (pages / "original_comparison.ipynb").read_text()
    for name in pair:
        assert f"**{name}.** {5 * len(E2E_CONDITIONS)} of {5 * len(E2E_CONDITIONS)} samples" in comparison_page
    assert "download it as one Parquet file" in (pages / "reproducibility.ipynb").read_text()
    assert (run.book_index.parent / "results.parquet").is_file()


# --------------------------------------------------------------------------- repairs, exit status, --strict


def test_a_corrected_file_repairs_a_skipped_sample(tree, extracted, study_data_dir, tmp_path):
    ids = stored_ids(extracted, "aqua/none/correct")
    path = fmt.tree_path(tree, FOLDER, "aqua/none/correct")
    good = path.read_text()
    fmt.set_nan(path, 1)
    first = run_import(path, tmp_path / "out", study_data_dir, model=FOLDER, condition="aqua/none/correct")
    assert first.imported == 2 and first.files[0].problems == {"non_finite": 1}
    fmt.append_foreign(path)  # another file, still non-finite: no second skip record
    again = run_import(path, tmp_path / "out", study_data_dir, model=FOLDER, condition="aqua/none/correct")
    assert (again.imported, again.files[0].already_stored, again.files[0].problems) == (
        0,
        2,
        {"non_finite": 1, "foreign": 1},
    )
    assert len(ResultsStore(tmp_path / "out").read("skipped")) == 1
    path.write_text(good)  # the corrected file
    repaired = run_import(path, tmp_path / "out", study_data_dir, model=FOLDER, condition="aqua/none/correct")
    report = repaired.files[0]
    assert (report.imported, report.repaired, report.already_stored, report.problems) == (1, 1, 2, {})
    assert "1 imported (1 of them stored as skipped before), 2 already stored" in report.summary()
    rows = read_results(tmp_path / "out")
    assert sorted(rows["sample_index"].unique()) == ids and not rows.duplicated(KEY).any()
    assert read_skipped(tmp_path / "out").empty  # the sample is stored now
    history = ResultsStore(tmp_path / "out").read("skipped")  # the skip record stays
    assert list(history["sample_index"]) == [ids[1]] and history["reason"].iloc[0].startswith(
        original_import.NON_FINITE_REASON
    )


def command(source, out, data_dir, *extra) -> list[str]:
    return ["import-original", str(source), "--out", str(out), "--data-dir", str(data_dir), "--no-progress", *extra]


def test_the_exit_status_tells_a_clean_import_from_a_lossy_one(tree, study_data_dir, tmp_path, capsys):
    assert cli.main(command(tree, tmp_path / "clean", study_data_dir)) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("3 files: 9 samples imported, 0 already stored; rejected: none (")
    path = fmt.tree_path(tree, FOLDER, "aqua/none/correct")
    fmt.set_nan(path, 1)
    fmt.append_duplicate(path, 0)
    fmt.append_cut_line(path)
    assert cli.main(command(tree, tmp_path / "lossy", study_data_dir)) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(
        "3 files: 8 samples imported, 0 already stored; rejected: 1 non-finite, 1 duplicate, 1 cut ("
    )
    assert cli.main(command(tree, tmp_path / "lossy", study_data_dir)) == 1  # nothing new, still lossy
    captured = capsys.readouterr()
    assert (
        "0 samples imported, 0 already stored (3 files already imported whole); rejected: 1 non-finite" in captured.out
    )
    assert "already imported (sha256 " in captured.err and ", 3 lines rejected then)" in captured.err


def test_strict_imports_nothing_from_a_file_with_a_rejected_line(tree, study_data_dir, tmp_path, capsys):
    path = fmt.tree_path(tree, FOLDER, "aqua/none/correct")
    fmt.append_unmatched(path)
    assert cli.main(command(tree, tmp_path / "out", study_data_dir, "--strict")) == 1
    captured = capsys.readouterr()
    assert "not imported (--strict: 1 lines rejected)" in captured.err
    assert "6 samples imported" in captured.out and "1 files not imported (--strict)" in captured.out
    rows = read_results(tmp_path / "out")
    assert "aqua/none/correct" not in set(rows["condition"]) and rows["condition"].nunique() == 2
    assert runlog.latest(tmp_path / "out").imports[0]["withheld"] is True
    assert cli.main(command(tree, tmp_path / "out", study_data_dir)) == 1  # without --strict: the rest of it
    assert set(read_results(tmp_path / "out")["condition"]) == set(CONDITIONS)
