import json
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from analysis import profiles
from analysis.core import registry
from analysis.core.errors import StudyError
from analysis.core.registry import ModelInfo
from analysis.core.settings import ExtractionSettings
from analysis.extract import models
from analysis.store import runlog
from analysis.study import book, pipeline

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- profiles


def test_the_cpu_profile_keeps_every_condition_a_verdict_of_its_models_rests_on():
    from analysis import data

    cpu = set(profiles.get_profile("cpu").conditions)
    with_none = {c.dataset for c in data.conditions_matching(settings=("none",))}
    for condition in data.CONDITIONS.values():
        needed = (
            (condition.dataset in with_none and condition.setting in ("none", "detailed"))
            or (
                condition.dataset != "wiki"
                and condition.responses == "correct"
                and condition.setting in ("simplified", "detailed", "detailed_cut_simplified")
            )
            or condition.setting
            in ("none_answer", "detailed_answer", "detailed_scored_answer", "detailed_matched_answer")
        )
        assert (condition.key in cpu) == needed, condition.key  # F1, F3 / F2, L, L2 / S, A3; nothing else


def test_profiles_derive_their_conditions_from_the_registry():
    from analysis import data

    full = profiles.get_profile("cpu-full")
    assert len(full.conditions) == len(set(full.conditions)) == len(data.CONDITIONS)
    assert set(full.conditions) == set(data.CONDITIONS)
    cpu = profiles.get_profile("cpu")
    assert cpu.models == full.models == ("gemma-3-270m", "smollm2-135m-instruct")
    assert cpu.extraction.n_samples == full.extraction.n_samples == profiles.CPU_SAMPLES
    paper = profiles.get_profile("paper")
    assert (
        paper.models == tuple(registry.PAPER_MODELS)
        and paper.extraction.n_samples == 500
        and paper.extraction.max_length == 1024
    )
    quick = profiles.get_profile("quick")
    for family in profiles.FAMILY_NOTEBOOKS:
        assert quick.conditions_for(family), family  # the quick run feeds every notebook
    assert {c.split("/")[1] for c in quick.conditions} >= {
        "none",
        "simplified",
        "detailed",
        "detailed_cut_simplified",  # the length control L and L2 read, against Simplified CoT
        "detailed_cut_none",
        "len100",
        "len1000",
    }
    with pytest.raises(profiles.ProfileError, match="unknown profile 'fast'; profiles: quick, cpu, cpu-full, paper"):
        profiles.get_profile("fast")


def test_family_conditions_split_the_registry():
    families = [set(profiles.family_conditions(f)) for f in profiles.FAMILY_NOTEBOOKS[:3]]
    assert sum(len(f) for f in families) == 86  # the answer-scored views are read by the gap chapter only
    assert not (families[0] & families[1]) and not (families[1] & families[2])
    assert "aqua/detailed_cut_none/irrelevant" in families[0]
    assert len(profiles.family_conditions("pretrained_vs_instruct")) == 56


# --------------------------------------------------------------------------- notebooks


def test_every_page_marks_its_names_then_a_hidden_parameters_cell_then_one_checked_setup_call():
    import jupytext

    sources = book.notebook_sources(ROOT)
    assert [p.stem for p in sources] == list(profiles.NOTEBOOKS)
    for source in sources + book.notebook_sources(ROOT, profiles.pages(source="training")):
        notebook = jupytext.read(source)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        assert "names_before_parameters = names_defined(globals())" in code[0].source, source
        assert {"parameters", "remove-cell"} <= set(code[1].metadata.get("tags", [])), source
        assert "remove-cell" in code[2].metadata.get("tags", []), source
        assert "given_parameters(globals(), names_before_parameters)" in code[2].source, source
        for cell in code[3:]:  # the book shows results, not the code that made them
            assert "remove-input" in cell.metadata.get("tags", []), (source, cell.source[:60])
        assert len(notebook.cells) < 60, source


def test_notebook_parameters_and_conversion(tmp_path):
    quick = profiles.get_profile("quick")
    params = book.notebook_parameters("wiki_knowledge", quick, tmp_path / "r", data_dir="data")
    assert set(params) == {"profile", "results_dir", "data_dir"} and params["profile"] == "quick"
    assert Path(params["results_dir"]).is_absolute() and Path(params["data_dir"]).is_absolute()
    assert "benchmarks_file" in book.notebook_parameters("reproducibility", quick, tmp_path)
    converted = book.text_notebook_to_ipynb(ROOT / "notebooks" / "summary.py", tmp_path / "summary.ipynb")
    notebook = nbformat.read(converted, as_version=4)
    assert notebook.metadata["kernelspec"]["name"] == "python3"


def test_a_page_that_ends_early_leaves_its_later_sections_out_of_the_book():
    from analysis.report.display import PAGE_ENDS

    def cell(source, metadata=None):
        made = nbformat.v4.new_code_cell(source)
        made.outputs = [nbformat.v4.new_output("display_data", {"text/markdown": source}, metadata=metadata or {})]
        return made

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# A chapter"),
        cell("nothing stored: this command brings it", {PAGE_ENDS: True}),
        nbformat.v4.new_markdown_cell("## Layer curves"),
        cell("curves"),
    ]
    assert book.cut_after_page_end(notebook) == 2
    assert [c.source for c in notebook.cells] == ["# A chapter", "nothing stored: this command brings it"]
    notebook.cells.append(nbformat.v4.new_markdown_cell("## Layer curves"))
    notebook.cells[1].outputs[0].metadata = {}
    assert book.cut_after_page_end(notebook) == 0 and len(notebook.cells) == 3  # a page with results keeps all


def test_papermill_stops_a_page_at_a_misspelt_parameter_with_a_clear_message(tmp_path):
    quick = profiles.get_profile("quick")
    params = {**book.notebook_parameters("math_reasoning", quick, tmp_path), "n_sample": 3}
    output = tmp_path / "math_reasoning.ipynb"
    with pytest.raises(StudyError) as caught:
        book.execute_notebook(ROOT / "notebooks" / "math_reasoning.py", output, params)
    message = str(caught.value)
    assert "ParameterError" in message
    assert "notebook parameter n_sample: math_reasoning has no such parameter (misspelt?)" in message
    assert output.is_file()  # the partly executed notebook is kept for reading


# --------------------------------------------------------------------------- extraction and run log


@pytest.fixture
def tiny_profile(tiny_model_dir, monkeypatch):
    folder = str(tiny_model_dir("llama"))
    monkeypatch.setitem(registry.PAPER_MODELS, folder, ModelInfo("base", "tiny test model", 4))
    return profiles.Profile(
        name="tiny",
        models=(folder,),
        conditions=("aqua/none/correct", "aqua/detailed_cut_none/correct"),
        # 512 tokens: room for both drawn AQuA instructions (their None-CoT answers differ)
        extraction=ExtractionSettings(n_samples=2, max_length=512, batch_size=2, token_budget=1024, device="cpu"),
    )


def test_extraction_is_resumable_and_logged(tiny_profile, study_data_dir, tmp_path, monkeypatch):
    loads = []
    real_load = models.load
    monkeypatch.setattr(models, "load", lambda *a, **k: loads.append(a[0]) or real_load(*a, **k))
    results = tmp_path / "results"
    first = pipeline.run_profile(tiny_profile, results, study_data_dir, book=False, progress=False, say=lambda _: None)
    assert [r["computed"] for r in first.extraction] == [2, 2]
    assert len(loads) == 1  # one load for every condition of the model
    again = pipeline.run_profile(tiny_profile, results, study_data_dir, book=False, progress=False, say=lambda _: None)
    assert again.extraction == [] and len(loads) == 1  # nothing left to do: the model is not even loaded

    runs = runlog.read(results)
    assert len(runs) == 2
    run = runs[0]
    assert run.profile["name"] == "tiny" and run.profile["extraction"]["n_samples"] == 2
    assert {d["condition"] for d in run.data} == set(tiny_profile.conditions)
    assert all(d["sha256_ok"] for d in run.data)
    assert run.packages["torch"] != "not installed"
    assert [r["condition"] for r in run.extraction] == list(tiny_profile.conditions)
    assert run.finished and run.wall_seconds > 0


def test_missing_data_stops_before_any_compute(tiny_profile, tmp_path):
    from analysis.data.data_errors import DataError

    with pytest.raises(DataError, match="not found"):
        pipeline.run_profile(tiny_profile, tmp_path / "r", tmp_path / "no-data", book=False, say=lambda _: None)
    assert not (tmp_path / "r" / "rows").exists()


def test_unknown_executor(tiny_profile, tmp_path):
    with pytest.raises(StudyError, match="unknown executor 'dask'"):
        pipeline.run_profile(tiny_profile, tmp_path / "r", executor="dask", book=False)


def test_cli_run_reports_errors_in_one_line(tmp_path, capsys):
    from analysis.cli import main

    assert (
        main(
            [
                "run",
                "--profile",
                "quick",
                "--results-dir",
                str(tmp_path / "r"),
                "--data-dir",
                str(tmp_path),
                "--no-book",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not found" in err and "Traceback" not in err


# --------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_quick_profile_end_to_end(quick_book):
    html = quick_book.book_index.parent
    assert quick_book.book_index.is_file()
    for name in profiles.NOTEBOOKS:
        assert (html / "book" / "notebooks" / f"{name}.html").is_file(), name
        notebook = nbformat.read(quick_book.book_index.parents[2] / "notebooks" / f"{name}.ipynb", as_version=4)
        for cell in notebook.cells:
            for output in cell.get("outputs", []):
                assert output.get("output_type") != "error", (name, output.get("ename"), output.get("evalue"))
                text = json.dumps(output)
                assert "Traceback" not in text, name
    assert (html / "book" / "methods.html").is_file()
    math_page = (html / "book" / "notebooks" / "math_reasoning.html").read_text()
    assert "quantised (GGUF) then dequantised" in math_page and "<table" in math_page and "<img" in math_page
    pvi = (html / "book" / "notebooks" / "pretrained_vs_instruct.html").read_text()
    assert "This comparison is confounded" in pvi and "PAPER_PAIRS" in pvi
    run = runlog.read(quick_book.results_dir)[-1]
    assert run.book["seconds"] > 0 and len(run.notebooks) == len(profiles.NOTEBOOKS)
    computed = {(r["model"], r["condition"]) for r in run.extraction}
    assert len(computed) == len(run.extraction)  # every (model, condition) extracted once


def test_the_your_data_chapter_is_in_the_book_only_when_its_page_was_made(tmp_path):
    book.copy_book_sources(ROOT, tmp_path)
    said = []
    toc = book.table_of_contents(tmp_path, said.append)
    assert "your_data" not in toc.read_text() and "intro" in toc.read_text()
    assert said and any("profile-data" in line for line in said)
    assert pipeline.include_your_data(tmp_path, tmp_path, said.append) is None
    page = tmp_path / "results" / "your_data" / "your_data.ipynb"
    page.parent.mkdir(parents=True)
    page.write_text("{}")
    assert pipeline.include_your_data(tmp_path, tmp_path, said.append) == tmp_path / "book/notebooks/your_data.ipynb"
    assert "your_data" in book.table_of_contents(tmp_path).read_text()


def test_a_training_book_has_its_chapter_as_root_and_the_methods_only(tmp_path):
    import yaml

    book.copy_book_sources(ROOT, tmp_path)
    own = profiles.get_profile("training").notebooks()
    assert own == profiles.get_profile("training-paper").notebooks() == ("during_training",)
    toc = yaml.safe_load(book.table_of_contents(tmp_path, only=own).read_text())
    assert toc["root"] == "book/notebooks/during_training"
    assert [c["file"] for part in toc["parts"] for c in part["chapters"]] == [
        "book/methods",
        "book/checks",
        "book/gap_methods",
        "book/training_methods",
        "book/running_the_study",
        "book/execution_statistics",
        "book/code_map",
        "book/gpu_check",
        "book/references",
    ]
    assert [p.stem for p in book.notebook_sources(ROOT, profiles.get_profile("training").notebooks())] == [
        "during_training"
    ]
    assert profiles.get_profile("cpu").notebooks() is None


def test_the_decompose_profile_computes_the_token_energy_of_the_gaps_conditions_of_the_cpu_profile():
    from analysis.report import gap_sources

    decompose, cpu = profiles.get_profile("decompose"), profiles.get_profile("cpu")
    assert gap_sources.ENERGY_COMMAND.endswith(f"--profile {decompose.name}")
    energy = profiles.decomposition_conditions(decompose.conditions)
    assert set(energy) <= set(cpu.conditions) and len(energy) == 18
    assert {c.split("/", 1)[1] for c in energy} == {"none/correct", "detailed/correct", "detailed/irrelevant"}
    assert set(decompose.conditions) - set(energy) == set(
        profiles.answer_conditions()
    )  # the reasoning step's contexts beside
    assert decompose.extraction.n_samples == cpu.extraction.n_samples  # the same instructions as the cpu run
    assert [c for c in decompose.conditions if decompose.extraction.energy_passes(c)] == list(energy)
    assert all(decompose.extraction.energy_passes(c) == profiles.ENERGY_PASSES for c in energy)
    assert all(cpu.extraction.energy_passes(c) == 0 for c in cpu.conditions)
    quick = profiles.get_profile("quick").extraction
    assert [c for c in profiles.quick_conditions() if quick.energy_passes(c)] == list(
        profiles.decomposition_conditions(profiles.quick_conditions())
    )
    assert (
        profiles.Profile.from_dict(json.loads(json.dumps(decompose.as_dict()))) == decompose
    )  # as the run log keeps it


def test_the_runner_of_a_profile_comes_from_its_source_and_the_executor():
    quick, original, training = (profiles.get_profile(n) for n in ("quick", "original", "training"))
    assert pipeline.source_runner(quick, "local") is pipeline.extract_profile
    assert pipeline.source_runner(quick, "ray") is pipeline.extract_with_ray
    for executor in pipeline.EXECUTORS:  # a source that computes no extraction runs the same on either executor
        assert pipeline.source_runner(original, executor) is pipeline.check_imported
        assert pipeline.source_runner(training, executor) is pipeline.train_profile
    with pytest.raises(StudyError, match="unknown executor 'dask'"):
        pipeline.source_runner(quick, "dask")


def test_the_ray_runner_keeps_in_the_run_log_what_the_workers_did(tmp_path, monkeypatch):
    """The Ray runner records what the local one records (each condition done, each model's load
    seconds and facts) through the same ``RunContext.record``; without a log no model is described."""
    from analysis.extract import distributed
    from analysis.extract.runner import ConditionSummary

    profile = replace(profiles.get_profile("quick"), models=("m",), conditions=("aqua/none/correct",))
    summary = ConditionSummary("m", "aqua/none/correct", requested=2, already_done=0, computed=2, seconds=1.5)
    report = distributed.ExtractionReport(conditions=[summary], load_seconds={"m": 4.0})
    monkeypatch.setattr(distributed, "run_extraction", lambda *args, **kwargs: report)
    described: list[str] = []
    monkeypatch.setattr(pipeline, "model_facts", lambda model: described.append(model) or {"revision": "r"})
    log = runlog.RunLog.start(tmp_path, profile.as_dict(), "ray", [])
    records = pipeline.extract_with_ray(profile, pipeline.RunContext(tmp_path, log=log, say=lambda _: None))
    assert records == [summary.as_record()]
    kept = runlog.read(tmp_path)[-1]
    assert (kept.extraction, kept.model_loads, kept.models) == (records, {"m": 4.0}, {"m": {"revision": "r"}})
    pipeline.extract_with_ray(profile, pipeline.RunContext(tmp_path, say=lambda _: None))
    assert described == ["m"]


def test_a_training_run_of_a_profile_without_training_settings_stops_with_one_line(tmp_path):
    profile = replace(profiles.get_profile("training"), training=None)
    with pytest.raises(StudyError, match="training: a training run needs the profile's training settings"):
        pipeline.train_profile(profile, pipeline.RunContext(tmp_path, say=lambda line: None))
