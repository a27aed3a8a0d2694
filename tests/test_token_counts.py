"""R (response token counts) of imported rows: counted as the extraction counts them, with the model's
tokenizer served by a local hub (never its weights); missing and said so without it; added to a store
imported before by add-token-counts, one part at a time."""

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from analysis import cli
from analysis.core.settings import ExtractionSettings
from analysis.extract import models, original_import, runner, token_counts
from analysis.store import ResultsStore, read_results, runlog, store_files
from tests import original_format as fmt
from tests.hub_server import HubServer, tree_of

ROOT = Path(__file__).resolve().parents[1]
CONDITIONS = ("aqua/none/correct", "aqua/detailed/correct")
PAIR = {"Qwen/Qwen2-1.5B": ("base", "qwen2_1_5b"), "Qwen/Qwen2-1.5B-Instruct": ("instruct", "qwen2_1_5b_it_new")}
KEY = ["model", "condition", "sample_index"]


@pytest.fixture(autouse=True)
def offline_hub(monkeypatch):
    """In this process no tokenizer is asked of the real hub (the subprocesses get a local one)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def extracted(tiny_model_dir, study_data_dir, tmp_path_factory):
    """This project's rows of a tiny model (character tokenizer with a chat template) labelled as a
    paper pair: base and instruct template, 3 samples of each condition."""
    root = tmp_path_factory.mktemp("extracted")
    for name, (template, _) in PAIR.items():
        loaded = replace(models.load(str(tiny_model_dir("llama")), template=template, device="cpu"), name=name)
        for condition in CONDITIONS:
            settings = ExtractionSettings(n_samples=3, entry_stats=True)
            runner.extract(
                loaded, condition, ResultsStore(root), settings=settings, data_dir=study_data_dir, progress=False
            )
    return read_results(root)


@pytest.fixture
def tree(extracted, study_data_dir, tmp_path):
    for name, (_, folder) in PAIR.items():
        fmt.write_from_rows(tmp_path / "release", folder, extracted[extracted["model"] == name], study_data_dir)
    return tmp_path / "release"


def per_sample(rows):
    return rows.drop_duplicates(KEY).set_index(KEY)["n_response_tokens"].sort_index()


def run_import(tree, out, data_dir, endpoint: str, *extra) -> subprocess.CompletedProcess:
    """``import-original`` in a fresh process whose hub is ``endpoint`` (a local server)."""
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0", HF_HUB_DISABLE_TELEMETRY="1")
    env.update(HF_HOME=str(Path(out).parent / "hf-home"), PYTHONPATH=str(ROOT))
    env.pop("HF_TOKEN", None)
    command = [sys.executable, "-m", "analysis", "import-original", str(tree), "--out", str(out)]
    command += ["--data-dir", str(data_dir), "--no-progress", *extra]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_import_counts_r_as_the_extraction_does_with_the_tokenizer_from_the_hub(
    tree, extracted, tiny_model_dir, study_data_dir, tmp_path
):
    served = tree_of(tiny_model_dir("llama"))  # tokenizer, config and weights: only the tokenizer may be fetched
    assert any(name.endswith(".safetensors") for name in served)
    server = HubServer({}, {name: served for name in PAIR})
    try:
        done = run_import(tree, tmp_path / "out", study_data_dir, server.endpoint)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert not [p for p in server.model_downloads() if p.endswith((".safetensors", ".bin", ".pt"))]
    assert any(p.startswith("tokenizer") for p in server.model_downloads())
    imported = read_results(tmp_path / "out")
    assert len(imported) == len(extracted)
    pd_extracted, pd_imported = per_sample(extracted), per_sample(imported)
    assert pd_imported.notna().all() and (pd_imported.to_numpy() == pd_extracted.to_numpy()).all()
    assert pd_imported.index.equals(pd_extracted.index)
    # the Detailed-CoT samples are cut at 1024 tokens after prompts of different lengths (base, instruct):
    # equal counts need each model's own template
    assert (pd_imported.xs("Qwen/Qwen2-1.5B") != pd_imported.xs("Qwen/Qwen2-1.5B-Instruct")).any()
    assert done.stdout.rstrip().endswith(f"R (response tokens) counted for {len(pd_imported)} samples, unknown for 0")
    records = [r for run in runlog.read(tmp_path / "out") for r in run.imports]
    assert {r["tokens_unknown"] for r in records} == {None} and sum(r["tokens_counted"] for r in records) == 12


def test_without_the_tokenizer_r_is_missing_and_the_import_says_so_per_model(tree, study_data_dir, tmp_path):
    server = HubServer({}, {})  # a hub that holds neither model
    try:
        done = run_import(tree, tmp_path / "out", study_data_dir, server.endpoint)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr  # nothing rejected: the statistics are all imported
    assert read_results(tmp_path / "out")["n_response_tokens"].isna().all()
    for name in PAIR:
        line = next(line for line in done.stderr.splitlines() if line.startswith(f"{name}: token counts unknown"))
        assert "for 6 samples imported (cannot load the tokenizer of" in line
        assert f"`python -m analysis add-token-counts --store {tmp_path / 'out'} --model {name}`" in line
    assert done.stdout.rstrip().endswith("counted for 0 samples, unknown for 12")
    run = runlog.latest(tmp_path / "out")
    assert set(run.profile["token_counts_unknown"]) == set(PAIR)
    assert all(r["tokens_unknown"].startswith("cannot load the tokenizer of") for r in run.imports)


def test_offline_the_hub_is_tried_once_and_every_model_says_why(tree, study_data_dir, tmp_path):
    counter = token_counts.TokenCounter()
    result = original_import.import_source(
        str(tree), ResultsStore(tmp_path / "out"), study_data_dir, progress=False, counter=counter
    )
    assert set(result.token_problems) == set(PAIR) and result.imported == 12
    for name, problem in result.token_problems.items():
        assert problem.startswith(f"cannot load the tokenizer of {name!r}: {models.HUB_UNREACHABLE}")
    assert len(result.token_lines(tmp_path / "out")) == 2
    assert read_results(tmp_path / "out")["n_response_tokens"].isna().all()


def test_add_token_counts_fills_an_existing_store_part_by_part(
    tree, extracted, tiny_model_dir, study_data_dir, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out"
    base = ["--data-dir", str(study_data_dir), "--no-progress"]
    assert cli.main(["import-original", str(tree), "--out", str(out), "--no-token-counts", *base]) == 0
    assert read_results(out)["n_response_tokens"].isna().all()
    folder = str(tiny_model_dir("llama"))
    fill = ["add-token-counts", "--store", str(out), "--data-dir", str(study_data_dir)]
    fill += ["--tokenizer", f"qwen2_1_5b={folder}"]  # an original folder name, a local folder
    # a crash after the first part's rename: that part holds R, the others are as they were
    real, renamed = store_files._fsync_and_replace, []

    def crash_on_second(temporary, final):
        if renamed:
            raise KeyboardInterrupt
        renamed.append(final)
        real(temporary, final)

    monkeypatch.setattr(store_files, "_fsync_and_replace", crash_on_second)
    assert cli.main(fill) == 130
    monkeypatch.setattr(store_files, "_fsync_and_replace", real)
    rows = read_results(out)
    assert len(rows) == len(extracted) and rows["n_response_tokens"].notna().sum() == len(rows) // 4
    capsys.readouterr()
    assert cli.main(fill) == 1  # the instruct model has no tokenizer folder and the hub is unreachable
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Qwen/Qwen2-1.5B: 3 samples got R, 0 could not, 3 had it already")
    assert lines[1].startswith("Qwen/Qwen2-1.5B-Instruct: 0 samples got R, 6 could not (cannot load the tokenizer")
    assert not list(out.rglob(".part-*.tmp"))  # the crash's temporary, removed under the run's lock
    fill += ["--tokenizer", f"Qwen/Qwen2-1.5B-Instruct={folder}"]
    assert cli.main([*fill, "--model", "qwen2_1_5b_it_new"]) == 0
    assert capsys.readouterr().out.startswith("Qwen/Qwen2-1.5B-Instruct: 6 samples got R, 0 could not")
    filled = read_results(out)
    assert (per_sample(filled).to_numpy() == per_sample(extracted).to_numpy()).all()
    assert filled["n_response_tokens"].dtype == np.int64
    records = runlog.latest(out).profile["token_counts"]
    assert json.loads(json.dumps(records)) == [
        {"model": "Qwen/Qwen2-1.5B-Instruct", "counted": 6, "unknown": 0, "already": 0, "problem": None}
    ]
    assert cli.main(["add-token-counts", "--store", str(tmp_path / "none")]) == 2
    assert cli.main(["add-token-counts", "--store", str(out), "--model", "gemma2_2b"]) == 2
