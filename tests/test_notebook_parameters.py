from pathlib import Path

import pytest

from analysis import profiles
from analysis.report.notebook_parameters import ParameterError, optional_path, validate


def test_defaults_come_from_the_cpu_profile():
    params = validate("wiki_knowledge")
    cpu = profiles.get_profile("cpu")
    assert params.models == cpu.models
    assert params.conditions == cpu.conditions_for("wiki_knowledge")
    assert all(c.startswith("wiki/") for c in params.conditions)
    assert params.results_dir == Path("results/cpu")
    assert params.n_samples is None and params.data_dir is None


def test_single_names_and_paths_are_accepted():
    params = validate(
        "math_reasoning",
        models="gemma-3-270m",
        conditions="aqua/none/correct",
        n_samples=3,
        results_dir=Path("/tmp/r"),
        data_dir="/tmp/d",
    )
    assert params.models == ("gemma-3-270m",)
    assert params.conditions == ("aqua/none/correct",)
    assert params.n_samples == 3
    assert params.data_dir == Path("/tmp/d")


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("n_samples", "ten", "n_samples: expected an integer >= 1 or None, got 'ten' (str)"),
        ("n_samples", 0, "n_samples: expected an integer >= 1"),
        ("n_samples", True, "n_samples"),
        ("max_length", -5, "max_length: expected an integer >= 1, got -5"),
        ("max_length", 10.5, "max_length"),
        ("seed", -1, "seed: expected an integer >= 0"),
        ("n_resamples", 3, "n_resamples: expected an integer >= 10"),
        ("results_dir", "", "results_dir: expected a directory path"),
        ("data_dir", 7, "data_dir"),
        ("models", [], "models: expected a non-empty list"),
        ("models", ["gemma-3-270m", "gemma-3-270m"], "repeated entries"),
        ("conditions", [1, 2], "conditions: expected a non-empty list"),
    ],
)
def test_wrong_values_name_the_parameter(name, value, message):
    with pytest.raises(ParameterError, match="notebook parameter") as caught:
        validate("math_reasoning", **{name: value})
    assert message in str(caught.value)


def test_unknown_model_lists_the_registered_ones():
    with pytest.raises(ParameterError, match="unknown model 'gpt-5'.*gemma-3-270m"):
        validate("summary", models=["gpt-5"])


def test_local_model_folder_is_accepted(tmp_path):
    assert validate("summary", models=[str(tmp_path)]).models == (str(tmp_path),)


def test_unknown_condition_and_condition_of_another_family():
    with pytest.raises(ParameterError, match="unknown condition 'aqua/long/correct'"):
        validate("math_reasoning", conditions=["aqua/long/correct"])
    with pytest.raises(ParameterError, match="'wiki/len100/correct' is not a condition of the math_reasoning notebook"):
        validate("math_reasoning", conditions=["wiki/len100/correct"])
    # the summary pages read every condition
    assert validate("summary", conditions=["wiki/len100/correct", "aqua/none/correct"]).conditions


def test_unknown_notebook():
    with pytest.raises(ParameterError, match="unknown notebook 'maths'"):
        validate("maths")


def test_optional_path():
    assert optional_path("benchmarks_file", None) is None
    assert optional_path("benchmarks_file", "b/results.json") == Path("b/results.json")
    with pytest.raises(ParameterError, match="benchmarks_file"):
        optional_path("benchmarks_file", 3)


def test_parameters_that_nothing_reads_are_refused():
    with pytest.raises(TypeError):
        validate("summary", batch_size=4)
