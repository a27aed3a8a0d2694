from pathlib import Path

import pytest

from analysis import profiles
from analysis.core.settings import MAX_LENGTH
from analysis.report.notebook_parameters import (
    ParameterError,
    given_parameters,
    names_defined,
    optional_path,
    validate,
    validate_data,
)
from analysis.store import runlog


def test_defaults_come_from_the_cpu_profile_when_no_run_is_recorded(tmp_path):
    params = validate("wiki_knowledge", {"results_dir": tmp_path})
    cpu = profiles.get_profile("cpu")
    assert not params.recorded and params.profile == cpu
    assert params.models == cpu.models
    assert params.conditions == cpu.conditions_for("wiki_knowledge")
    assert all(c.startswith("wiki/") for c in params.conditions)
    assert params.n_samples == cpu.extraction.n_samples and params.max_length == cpu.extraction.max_length
    assert validate("summary").results_dir == Path("results/cpu")


def test_the_run_log_decides_models_conditions_and_settings(tmp_path):
    quick = profiles.get_profile("quick")
    recorded = quick.as_dict() | {"models": ["gemma-3-270m"], "n_resamples": 77}
    recorded["extraction"] = recorded["extraction"] | {"n_samples": 3, "max_length": 64}
    runlog.RunLog.start(tmp_path, recorded, "local", []).save()
    params = validate("math_reasoning", {"profile": "quick", "results_dir": str(tmp_path)})
    assert params.recorded and params.models == ("gemma-3-270m",)
    assert (params.n_samples, params.max_length, params.n_resamples) == (3, 64, 77)
    assert set(params.conditions) <= set(quick.conditions) and params.conditions


def test_subsets_of_the_run_are_accepted(tmp_path):
    params = validate(
        "math_reasoning",
        {"models": "gemma-3-270m", "conditions": "aqua/none/correct", "results_dir": tmp_path, "data_dir": "/tmp/d"},
    )
    assert params.models == ("gemma-3-270m",)
    assert params.conditions == ("aqua/none/correct",)
    assert params.data_dir == Path("/tmp/d")


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("n_sample", 3, "notebook parameter n_sample: math_reasoning has no such parameter (misspelt?)"),
        ("max_length", 512, "notebook parameter max_length: math_reasoning has no such parameter"),
        ("profile", 3, "profile: expected a profile name"),
        ("profile", "fast", "no run of profile 'fast' is recorded"),
        ("results_dir", 7, "results_dir: expected a directory path"),
        ("data_dir", 7, "data_dir"),
        ("models", [], "models: expected a non-empty list"),
        ("models", ["gemma-3-270m", "gemma-3-270m"], "repeated entries"),
        ("models", ["gpt-5"], "'gpt-5' is not among this page's models in the run (gemma-3-270m, smollm2"),
        ("conditions", [1, 2], "conditions: expected a non-empty list"),
        ("conditions", ["wiki/len100/correct"], "'wiki/len100/correct' is not among this page's conditions"),
    ],
)
def test_wrong_or_unknown_parameters_are_named(name, value, message, tmp_path):
    given = {"results_dir": tmp_path, name: value}
    with pytest.raises(ParameterError, match="notebook parameter") as caught:
        validate("math_reasoning", given)
    assert message in str(caught.value)


def test_summary_pages_read_every_condition_of_the_run(tmp_path):
    given = {"conditions": ["wiki/len100/correct", "aqua/none/correct"], "results_dir": tmp_path}
    assert validate("summary", {**given, "profile": "cpu-full"})


def test_unknown_notebook():
    with pytest.raises(ParameterError, match="unknown notebook 'maths'"):
        validate("maths")


def test_page_parameters_belong_to_their_page(tmp_path):
    params = validate("reproducibility", {"benchmarks_file": "b.json", "results_dir": tmp_path})
    assert params.extra == {"benchmarks_file": "b.json", "export_file": None, "deciding_dir": None}
    with pytest.raises(ParameterError, match="benchmarks_file"):
        validate("summary", {"benchmarks_file": "b.json"})


def test_optional_path():
    assert optional_path("benchmarks_file", None) is None
    assert optional_path("benchmarks_file", "b/results.json") == Path("b/results.json")
    with pytest.raises(ParameterError, match="benchmarks_file"):
        optional_path("benchmarks_file", 3)


def test_given_parameters_are_the_names_defined_after_the_mark():
    namespace = {"Page": object, "names_defined": names_defined, "_i3": "x", "In": []}
    before = names_defined(namespace)
    namespace.update(names_before_parameters=before, profile="quick", n_sample=3, _5=None)
    assert given_parameters(namespace, before) == {"profile": "quick", "n_sample": 3}


def test_every_page_takes_the_names_and_defaults_of_its_parameters_cell(tmp_path):
    training = validate("during_training", {"results_dir": tmp_path})
    assert training.profile.name == "training" and training.results_dir == tmp_path
    with pytest.raises(ParameterError, match="notebook parameter models: during_training has no such parameter"):
        validate("during_training", {"models": ["gemma-3-270m"]})
    with pytest.raises(ParameterError, match="notebook parameter profile: expected a profile name"):
        validate("during_training", {"profile": 3})
    mine = validate_data({"data_files": "a.json"})
    assert mine.data_files == ("a.json",) and mine.n_samples == 20 and mine.max_length == MAX_LENGTH
    assert mine.template == "instruct" and mine.results_dir == Path("results/your_data")
    with pytest.raises(ParameterError, match="notebook parameter profile: your_data has no such parameter"):
        validate_data({"data_files": "a.json", "profile": "cpu"})
    with pytest.raises(ParameterError, match="unknown notebook 'your_data'"):
        validate("your_data")
