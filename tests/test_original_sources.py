"""Where the original study's files come from: archives of task folders, and the hub through a local server.

The trees hold random statistics in the original format (no model, no torch); an import from an
archive or through the hub must store exactly the rows an import of the plain tree stores.
"""

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from analysis.extract import original_import, original_sources
from analysis.store import ResultsStore, read_results
from tests import original_format as fmt
from tests.hub_server import HubServer, tree_of

FOLDER = "qwen2_1_5b"
MODEL = "Qwen/Qwen2-1.5B"
CONDITIONS = ("aqua/none/correct", "aqua/detailed/correct", "aqua/none/irrelevant", "wiki/len100/correct")
KEY = ["model", "condition", "sample_index", "layer", "proj"]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def offline_hub(monkeypatch):
    """No test here reaches the real hub: a tokenizer asked of it fails at once (R stays missing)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def tree(study_data_dir, tmp_path) -> Path:
    """A grads_exp tree of random statistics: one model, four files of three task folders, 3 samples of 2 layers."""
    fmt.write_random(tmp_path / "tree", FOLDER, CONDITIONS, 2, study_data_dir, n_samples=3)
    return tmp_path / "tree"


def archived(tree: Path, out: Path) -> Path:
    """The tree as a release of archives: each task folder one archive, .tar.gz and .zip in turn."""
    out.mkdir()
    tasks = sorted(p for p in (tree / "grads_exp").iterdir() if p.is_dir())
    for number, task in enumerate(tasks):
        if number % 2 == 0:
            with tarfile.open(out / f"{task.name}.tar.gz", "w:gz") as handle:
                handle.add(task, arcname=task.name)
        else:
            with zipfile.ZipFile(out / f"{task.name}.zip", "w", zipfile.ZIP_DEFLATED) as handle:
                for path in sorted(task.rglob("*.jsonl")):
                    handle.write(path, path.relative_to(tree / "grads_exp").as_posix())
    (out / "README.md").write_text("statistics of the original study, one archive per task folder\n")
    return out


def imported(out: Path) -> pd.DataFrame:
    rows = read_results(out).drop(columns=["origin_file"])
    return rows.sort_values(KEY).reset_index(drop=True)


def test_archives_of_task_folders_stream_their_members(tree, study_data_dir, tmp_path, monkeypatch):
    original_import.import_source(str(tree), ResultsStore(tmp_path / "plain"), study_data_dir, progress=False)
    release = archived(tree, tmp_path / "release")

    def unpacking(*args, **kwargs):
        raise AssertionError("an archive was unpacked to disk")

    for cls in (tarfile.TarFile, zipfile.ZipFile):
        monkeypatch.setattr(cls, "extractall", unpacking)
        monkeypatch.setattr(cls, "extract", unpacking)
    before = sorted(p for p in tmp_path.rglob("*") if "out" not in p.parts)
    result = original_import.import_source(str(release), ResultsStore(tmp_path / "out"), study_data_dir, progress=False)
    assert sorted(p for p in tmp_path.rglob("*") if "out" not in p.parts) == before  # nothing written beside the store
    assert result.imported == 3 * len(CONDITIONS) and result.clean
    assert {r.file.split("/")[0] for r in result.files} == {
        "cot_500.tar.gz",
        "cot_500_wrong_answer_shuffle.zip",
        "wiki_popularity.tar.gz",
    }
    pd.testing.assert_frame_equal(imported(tmp_path / "out"), imported(tmp_path / "plain"))
    # the stored sha256 of a streamed member is the member's own: a second import recognises every file
    again = original_import.import_source(str(release), ResultsStore(tmp_path / "out"), study_data_dir, progress=False)
    assert all(r.already_imported for r in again.files) and again.imported == 0
    plain_sha = {
        r.sha256
        for r in original_import.import_source(
            str(tree), ResultsStore(tmp_path / "x"), study_data_dir, progress=False
        ).files
    }
    assert {r.sha256 for r in again.files} == plain_sha
    # one archive as the source, with --conditions
    one = original_import.import_source(
        str(release / "cot_500.tar.gz"),
        ResultsStore(tmp_path / "one"),
        study_data_dir,
        progress=False,
        conditions=["aqua/detailed/correct"],
    )
    assert [r.condition for r in one.files] == ["aqua/detailed/correct"] and one.imported == 3


def run_command(source: str, out: Path, data_dir, endpoint: str, cache: Path, *extra) -> subprocess.CompletedProcess:
    """``python -m analysis import-original`` in a fresh process whose hub is ``endpoint``."""
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="0", PYTHONPATH=str(ROOT))
    env.pop("HF_TOKEN", None)
    command = [
        sys.executable,
        "-m",
        "analysis",
        "import-original",
        source,
        "--out",
        str(out),
        "--data-dir",
        str(data_dir),
    ]
    command += ["--cache-dir", str(cache), "--no-progress", *extra]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_hub_path_through_a_local_server(tree, study_data_dir, tmp_path):
    """The tree and the archived release served as hub datasets; only the files asked for are downloaded."""
    original_import.import_source(str(tree), ResultsStore(tmp_path / "plain"), study_data_dir, progress=False)
    release = archived(tree, tmp_path / "release")
    server = HubServer({"MingLiiii/Layer_Gradient": tree_of(tree), "someone/archived": tree_of(release)})
    try:
        asked = ["--models", FOLDER, "--conditions", "aqua/none/irrelevant", "wiki/len100/correct"]
        done = run_command(
            f"hf://datasets/{original_sources.HUB_DATASET}",
            tmp_path / "hub",
            study_data_dir,
            server.endpoint,
            tmp_path / "cache",
            *asked,
        )
        assert done.returncode == 0, done.stderr
        assert server.downloads() == [
            "grads_exp/cot_500_wrong_answer_shuffle/qwen2_1_5b/grads_aqua_train_no_cot.jsonl",
            "grads_exp/wiki_popularity/qwen2_1_5b/grads_popular_wikipedia_100.jsonl",
        ]
        assert done.stdout.startswith("2 files: 6 samples imported, 0 already stored; rejected: none (")
        plain = imported(tmp_path / "plain")
        hub = imported(tmp_path / "hub")
        asked_rows = plain[plain["condition"].isin(asked[-2:])].reset_index(drop=True)
        pd.testing.assert_frame_equal(hub, asked_rows)
        assert (
            read_results(tmp_path / "hub")["origin_file"]
            .str.startswith("hf://datasets/MingLiiii/Layer_Gradient/grads_exp/")
            .all()
        )
        # the archived release: archives named after a task folder not asked for are not downloaded
        del server.requests[:]
        done = run_command(
            "hf://datasets/someone/archived",
            tmp_path / "archived",
            study_data_dir,
            server.endpoint,
            tmp_path / "cache",
            "--conditions",
            "aqua/none/correct",
            "aqua/detailed/correct",
        )
        assert done.returncode == 0, done.stderr
        assert server.downloads() == ["cot_500.tar.gz"]
        assert done.stdout.startswith("2 files: 6 samples imported")
        pd.testing.assert_frame_equal(
            imported(tmp_path / "archived"),
            plain[
                plain["condition"].str.startswith("aqua/") & ~plain["condition"].str.endswith("irrelevant")
            ].reset_index(drop=True),
        )
        unexpected = [
            request for request in server.requests if not ("/tree/" in request[1] or "/resolve/" in request[1])
        ]
        assert unexpected == []
    finally:
        server.close()
