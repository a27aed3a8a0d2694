"""The `original` book from part of the release: every page builds, and says what is true of its numbers.

A partial tree in the original format (random statistics of 4 layers: the math and Wiki files of one
base / instruct pair and of one base model without its instruct model, no commonsense file, one
line with NaN, one file shorter than the others) is imported through the command line, then
`run --profile original` builds the whole book. The re-execution command the reproducibility page
prints is run as printed, for the `original` and the `quick` profile.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import char_tokenizer
from made_findings import finding
from synthetic import make_results

from analysis import cli, data, profiles
from analysis.checks import REGISTRY
from analysis.core import registry
from analysis.data import sample_draws
from analysis.data.records import load_records
from analysis.findings.rules import UNRESOLVED
from analysis.report import figures, provenance
from analysis.store import ResultsStore, RunKey
from analysis.store.store_files import export_parquet
from tests import original_format as fmt

ROOT = Path(__file__).resolve().parents[1]
PAIR = ("qwen2_1_5b", "qwen2_1_5b_it_new")
LONE = "gemma2_2b"  # its instruct model gemma2_2b_it_new is not in the tree
SAMPLES = 5
CONDITIONS = tuple(
    c.key
    for c in data.study_conditions()
    if (c.dataset in ("aqua", "gsm8k") and c.setting in ("none", "simplified", "detailed"))
    or (c.dataset == "wiki" and c.setting in ("len100", "len1000"))
)
COMMONSENSE = tuple(c.key for c in data.study_conditions() if c.family == "commonsense_reasoning")


@pytest.fixture(autouse=True)
def offline_hub(monkeypatch):
    """No test here reaches the real hub: a tokenizer asked of it fails at once (R stays missing)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def write_partial_tree(root: Path, data_dir: Path) -> Path:
    """The partial release: see the module docstring."""
    for seed, folder in enumerate((*PAIR, LONE)):
        fmt.write_random(root, folder, CONDITIONS, 4, data_dir, n_samples=SAMPLES, seed=seed)
    fmt.set_nan(fmt.tree_path(root, PAIR[0], "aqua/none/correct"), 2)
    short = fmt.tree_path(root, LONE, "gsm8k/detailed/correct")
    short.write_text("".join(short.read_text().splitlines(keepends=True)[:3]))
    return root


def outputs(notebook: Path) -> str:
    """Everything a page printed (markdown and text outputs), not its static prose."""
    text = []
    for cell in json.loads(notebook.read_text())["cells"]:
        for output in cell.get("outputs", []):
            payload = output.get("data", {})
            text.append("".join(output.get("text", "")))
            text.append("".join(payload.get("text/markdown", "")) + "".join(payload.get("text/html", "")))
    return "\n".join(text)


def test_the_verdict_matrix_marks_the_base_models_f4_row():
    found = [
        finding("F1", UNRESOLVED, model="base", scope="aqua", pooled=False),
        finding("F4", UNRESOLVED, model="instruct", scope="aqua", pooled=False),
        finding("F1", UNRESOLVED, model="instruct", scope="aqua", pooled=False),
    ]
    fig = figures._matrix(figures.verdict_cells(found), note=None, pairs={"instruct": "base"}, registry=REGISTRY)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "decided on its instruct model (instruct)" in texts
    assert figures.verdict_svg(found, pairs={"instruct": "base"}).startswith("<svg")


@pytest.mark.slow
def test_a_partial_release_builds_the_original_book_and_every_sentence_fits_it(study_data_dir, tmp_path):
    from analysis.study import pipeline

    tree = write_partial_tree(tmp_path / "release", study_data_dir)
    results = tmp_path / "results" / "original"
    command = ["import-original", str(tree), "--out", str(results), "--data-dir", str(study_data_dir), "--no-progress"]
    tokenizer = tmp_path / "tokenizer"  # the pair's tokenizer (a local folder); the lone model's: none (offline)
    char_tokenizer().save_pretrained(tokenizer)
    command += [arg for folder in PAIR for arg in ("--tokenizer", f"{folder}={tokenizer}")]
    assert cli.main(command) == 1  # the NaN line was rejected (the rest imported)
    run = pipeline.run_profile(
        "original", results, study_data_dir, book_root=tmp_path / "site", progress=False, say=lambda _: None
    )
    assert run.extraction == [] and run.book_index.is_file()
    pages = {p.stem: outputs(p) for p in (tmp_path / "site" / "book" / "notebooks").glob("*.ipynb")}
    assert set(profiles.NOTEBOOKS) <= set(pages)
    assert not [name for name, text in pages.items() if "Warning:" in text]  # no warning printed on a page
    found = "Qwen/Qwen2-1.5B, Qwen/Qwen2-1.5B-Instruct, google/gemma-2-2b"
    # coverage over the models found, the samples as released (the short file named), per origin
    assert f"3 of the run's 10 models are in the store ({found})" in pages["intro"]
    # the summary: on the released statistics, and the answer-scored checks say what computes them
    assert "the original study's released statistics." in pages["intro"]  # the abstract's scope line
    assert (
        "<strong>S</strong> no verdict: the released statistics hold none of its conditions "
        "(<code>python -m analysis run --profile paper</code> on a GPU" in pages["intro"]  # folded: as html
    )
    assert (
        f"The samples are the original study's files: {SAMPLES} samples per file "
        "(3 in google/gemma-2-2b gsm8k/detailed/correct), as released." in pages["intro"]
    )
    assert "1 samples of the original study's files are left out: 1 non-finite values" in pages["math_reasoning"]
    # a family with no rows: one sentence with the import command of every model and its conditions
    folders = " ".join(info.original_folder for info in registry.PAPER_MODELS.values())
    assert "**Nothing stored for this page.**" in pages["commonsense_reasoning"]
    assert (
        f"python -m analysis import-original {tree} --out {results} --models {folders} "
        f"--conditions {' '.join(COMMONSENSE)}`" in pages["commonsense_reasoning"]
    )
    cells = {
        name: [
            "".join(c["source"])
            for c in json.loads((tmp_path / "site" / "book" / "notebooks" / f"{name}.ipynb").read_text())["cells"]
        ]
        for name in ("commonsense_reasoning", "math_reasoning")
    }
    assert not any("## Layer curves" in c for c in cells["commonsense_reasoning"])  # the empty page ends there
    assert any("## Layer curves" in c for c in cells["math_reasoning"])
    # a model without its pair
    assert "**Without its pair:** google/gemma-2-2b without google/gemma-2-2b-it" in pages["pretrained_vs_instruct"]
    assert "--models gemma2_2b_it_new --conditions" in pages["pretrained_vs_instruct"]
    # the layer count the files hold, under the matrix and in the Models table (with the import's note)
    assert "Qwen/Qwen2-1.5B: 4 layers in the stored numbers, the model has 28" in pages["intro"]
    assert "4 (the model has 28)" in pages["reproducibility"]
    assert "4 layers in the file, but Qwen/Qwen2-1.5B has 28" in pages["reproducibility"]
    assert "n/a (too few layers)" in pages["math_reasoning"] and ">nan<" not in pages["math_reasoning"]
    assert "Left out of the length regression, token counts unknown: google/gemma-2-2b;" in pages["math_reasoning"]
    assert "-p profile original -p results_dir results.parquet" in pages["reproducibility"]
    # G1 from the loss; the split per layer of the model without R says why not, with the command
    gap = pages["where_the_gap_comes_from"]
    for model in ("Qwen/Qwen2-1.5B", "Qwen/Qwen2-1.5B-Instruct"):
        assert re.search(re.escape(f"**{model}.**") + r" Under Detailed CoT[^\n]*: G1 \*\*", gap), model
    assert "Not split for google/gemma-2-2b: token counts unknown; add them with `python -m analysis" in gap
    for name, text in pages.items():
        for wrong in (
            "about over",
            "median over",
            "random sample",
            "first records",
            "python -m analysis run --profile original",
            "python -m analysis run --profile <name>",
            "python -m analysis extract",
            "Compute them",
            "gemma-3-270m",
            "smollm2",
            "SOURCE",
        ):
            assert wrong not in text, (name, wrong)


def printed_command(markdown: str) -> str:
    """The bash block of the reproducibility page's export sentence, as printed."""
    return re.search(r"```bash\n(.*?)```", markdown, re.S).group(1)


def quick_store(root: Path) -> Path:
    """A synthetic store of the quick profile's models and conditions (2 samples, as the profile takes)."""
    profile = profiles.get_profile("quick")
    triples = [tuple(c.split("/")) for c in profile.conditions]
    models = {m: (registry.known_model(m).template, 6) for m in profile.models}
    rows = make_results(triples, models, n_samples=profile.extraction.n_samples)
    rows["max_length"] = profile.extraction.max_length
    for (
        condition
    ) in profile.conditions:  # the samples the profile takes: sample_draws.dataset_sample_ids, as a run draws them
        dataset = data.get_condition(condition).dataset
        n = len(load_records(data.resolve(condition).path))
        ids = sorted(sample_draws.dataset_sample_ids(dataset, n, profile.extraction.n_samples))
        chosen = rows["condition"] == condition
        rows.loc[chosen, "sample_index"] = rows.loc[chosen, "sample_index"].map(dict(enumerate(ids)))
    store = ResultsStore(root)
    for (model, condition), group in rows.groupby(["model", "condition"]):
        dataset, setting, responses = condition.split("/")
        key = RunKey(registry.model_slug(model), dataset, setting, responses, 128, group["template"].iloc[0])
        store.write(key, group, None)
    return root


def original_store(root: Path, tree: Path, data_dir: Path) -> Path:
    command = ["import-original", str(tree), "--out", str(root), "--data-dir", str(data_dir), "--no-progress"]
    cli.main(command)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("name", ["original", "quick"])
def test_the_printed_reexecution_command_runs_as_printed(name, study_data_dir, tmp_path):
    if name == "quick":
        store = quick_store(tmp_path / "store")
    else:
        store = original_store(
            tmp_path / "store", write_partial_tree(tmp_path / "release", study_data_dir), study_data_dir
        )
    here = tmp_path / "reader"
    shutil.copytree(ROOT / "notebooks", here / "notebooks")
    export = export_parquet(store, here / "results.parquet")
    profile = profiles.get_profile(name)
    models = sorted(ResultsStore(store).distinct("model"))
    block = printed_command(provenance.export_sentence(export, models, profile.name))
    assert f"-p profile {name} -p results_dir results.parquet" in block
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    env["LAYER_GRADIENT_DATA"] = str(study_data_dir)
    done = subprocess.run(["bash", "-ec", block], cwd=here, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    page = outputs(here / "math_reasoning.out.ipynb")
    assert f"{len(models)} of the run's {len(models)} models are in the store ({', '.join(models)})" in page


@pytest.mark.slow
def test_the_release_sized_benchmark_generates_a_store_the_book_reads(study_data_dir, tmp_path):
    """The benchmark's generator at a small scale: the importer's rows for every study file, and a page on them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_original_book", ROOT / "benchmarks" / "bench_original_book.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    facts = bench.generate(tmp_path / "store", list(PAIR), 3, study_data_dir)
    assert facts["files"] == 112 and facts["rows"] == 2 * 56 * 3 * 28 * 4
    rows = ResultsStore(tmp_path / "store").read(columns=["model", "condition", "n_layers", "origin", "frobenius"])
    assert rows.groupby("model")["condition"].nunique().tolist() == [56, 56] and set(rows["n_layers"]) == {28}
    assert rows["frobenius"].notna().all() and rows["origin"].notna().all()
    measured = bench.measure(tmp_path / "store", study_data_dir, ["summary"], tmp_path / "site")
    assert measured["seconds"] > 0 and measured["peak_resident_mb"] > 0
    page = outputs(tmp_path / "site" / "book" / "notebooks" / "summary.ipynb")
    assert "2 of the run's 10 models are in the store (Qwen/Qwen2-1.5B, Qwen/Qwen2-1.5B-Instruct)" in page
