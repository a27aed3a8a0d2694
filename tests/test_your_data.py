"""Your own data through the study's lens: input formats, kept spectra, the scratch control,
the reference classifier and the profile-data command."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from analysis import data
from analysis.core import registry
from analysis.core.settings import ExtractionSettings
from analysis.data.data_errors import DataError
from analysis.data.records import Record, chat_record, load_records
from analysis.extract import models, runner
from analysis.report.notebook_parameters import YOUR_DATA, DataParameters, ParameterError, validate_data
from analysis.store import ResultsStore, read_results

# --------------------------------------------------------------------------- input formats


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_study_chat_and_jsonl_formats_give_the_same_records(tmp_path):
    study = [
        {"instruction": "What is 2+2?", "input": "", "output": "4"},
        {"instruction": "Name a colour.", "output": "Blue."},
    ]
    chat = [
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4"},
            ]
        },
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Name a colour."}]},
                {"role": "assistant", "content": "Blue."},
            ]
        },
    ]
    expected = [Record("What is 2+2?", "", "4"), Record("Name a colour.", "", "Blue.")]
    assert load_records(_write(tmp_path / "a.json", json.dumps(study))) == expected
    assert load_records(_write(tmp_path / "b.json", json.dumps(chat))) == expected
    lines = "\n".join(json.dumps(r) for r in [study[0], chat[1]]) + "\n\n"
    assert load_records(_write(tmp_path / "c.jsonl", lines)) == expected
    assert data.resolve(str(tmp_path / "c.jsonl")).condition.dataset == "c"


def test_chat_record_takes_the_last_turn_and_drops_the_system_message():
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "part one"},
        {"role": "user", "content": "part two"},
        {"role": "assistant", "content": "final answer"},
    ]
    record = chat_record(messages, "f: record 0")
    assert record == Record("part one\n\npart two", "", "final answer")


@pytest.mark.parametrize(
    "name,text,message",
    [
        (
            "x.jsonl",
            '{"instruction": "a", "output": "b"}\n{"instruction": "a"}\n',
            "line 2 (record 1): missing field 'output'",
        ),
        ("x.jsonl", '{"instruction": "a", "output": "b"}\n{"instruction": \n', "line 2 (record 1): malformed JSON"),
        ("x.jsonl", "\n \n", "no records"),
        ("x.json", '[{"messages": []}]', "record 0: field 'messages' must be a non-empty list"),
        (
            "x.json",
            '[{"messages": [{"role": "user", "content": "q"}]}]',
            "record 0: field 'messages' has no assistant message",
        ),
        (
            "x.json",
            '[{"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]}]',
            "record 0: field 'messages' has no user message before the last assistant message",
        ),
        (
            "x.json",
            '[{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": 5}]}]',
            "record 0: field 'messages', message 1: field 'content' must be a string, found int",
        ),
        (
            "x.json",
            '[{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}]}]',
            "record 0: field 'messages': the last assistant message is empty",
        ),
        (
            "x.json",
            '[{"messages": [{"role": "critic", "content": "q"}, {"role": "assistant", "content": "a"}]}]',
            "record 0: field 'messages': unknown role 'critic'",
        ),
        (
            "x.json",
            '[{"messages": [{"content": "q"}, {"role": "assistant", "content": "a"}]}]',
            "record 0: field 'messages', message 0: field 'role' must be a string",
        ),
    ],
)
def test_bad_records_name_the_file_the_record_and_the_field(tmp_path, name, text, message):
    path = _write(tmp_path / name, text)
    with pytest.raises(DataError) as error:
        load_records(path)
    assert str(path) in str(error.value)
    assert message in str(error.value)


# --------------------------------------------------------------------------- kept spectra, scratch control


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return models.load(str(tiny_model_dir("llama")), template="base", device="cpu")


def test_kept_spectra_round_trip_and_give_the_stored_nuclear_norm(tiny, study_data_dir, tmp_path):
    plain, kept = ResultsStore(tmp_path / "plain"), ResultsStore(tmp_path / "kept")
    for store, keep in ((plain, False), (kept, True)):
        runner.extract(
            tiny,
            "aqua/simplified/correct",
            store,
            settings=ExtractionSettings(n_samples=2, max_length=1024, keep_spectra=keep),
            data_dir=study_data_dir,
            progress=False,
        )
    a, b = read_results(tmp_path / "plain"), read_results(tmp_path / "kept")
    assert runner.SPECTRUM_COLUMN not in a.columns
    keys = ["sample_index", "layer", "proj"]
    a, b = a.sort_values(keys).reset_index(drop=True), b.sort_values(keys).reset_index(drop=True)
    for column in ("nuclear_norm", "effective_rank", "sigma_max", "frobenius"):
        assert np.array_equal(a[column].to_numpy(), b[column].to_numpy()), column  # the default path is unchanged
    hidden = tiny.model.config.hidden_size
    kv = tiny.model.config.num_key_value_heads * hidden // tiny.model.config.num_attention_heads
    widths = {"q": hidden, "k": kv, "v": kv, "o": hidden}
    for row in b.itertuples():
        values = np.asarray(getattr(row, runner.SPECTRUM_COLUMN))
        assert values.dtype == np.float64 and values.shape == (widths[row.proj],)
        assert np.all(np.diff(values) <= 0)
        assert math.isclose(values.sum(), row.nuclear_norm, rel_tol=1e-12)
        p = values / values.sum()
        p = p[p > 0]
        assert math.isclose(math.exp(-(p * np.log(p)).sum()), row.effective_rank, rel_tol=1e-9)


def test_scratch_copy_is_random_reproducible_and_named_apart(tiny):
    first, second = models.scratch_copy(tiny, seed=3), models.scratch_copy(tiny, seed=3)
    other = models.scratch_copy(tiny, seed=4)
    assert first.name == f"{tiny.name}@scratch" and registry.model_slug(first.name) != registry.model_slug(tiny.name)
    name = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(dict(first.model.named_parameters())[name], dict(second.model.named_parameters())[name])
    assert not torch.equal(dict(first.model.named_parameters())[name], dict(other.model.named_parameters())[name])
    assert not torch.equal(dict(first.model.named_parameters())[name], dict(tiny.model.named_parameters())[name])
    assert type(first.model) is type(tiny.model) and first.n_layers == tiny.n_layers
    assert not any(p.requires_grad for p in first.model.parameters())


# --------------------------------------------------------------------------- the reference classifier


def _synthetic_features(n_instructions=8, seed=0):
    from analysis.findings import closest_setting

    rng = np.random.default_rng(seed)
    levels = {"none": 2.0, "simplified": 0.0, "detailed": -2.0}
    index, rows = [], []
    for dataset in ("a", "b"):
        for i in range(n_instructions):
            shift = rng.normal(0, 0.3)
            for setting, level in levels.items():
                index.append(("m", f"{dataset}/{setting}/correct", dataset, setting, "correct", i))
                rows.append(level + shift + rng.normal(0, 0.5, size=6))
    columns = pd.MultiIndex.from_product([["q", "k"], [0, 1, 2]], names=["proj", "layer"])
    return pd.DataFrame(
        rows, index=pd.MultiIndex.from_tuples(index, names=closest_setting.SAMPLE_KEYS), columns=columns
    )


def test_classifier_is_cross_validated_by_instruction_and_places_new_samples():
    from analysis.findings import closest_setting

    features = _synthetic_features()
    labels = features.index.get_level_values("setting")
    groups = [
        f"{d}:{i}"
        for d, i in zip(features.index.get_level_values("dataset"), features.index.get_level_values("sample_index"))
    ]
    model = closest_setting.fit_placement(features, labels, groups, ["none", "simplified", "detailed"], n_resamples=200)
    assert model.accuracy.value > 0.9 and model.accuracy.n == 16
    low, high = model.accuracy.interval()
    assert low < model.accuracy.value <= high
    assert model.confusion().to_numpy().sum() == len(features)
    assert math.isclose(model.chance, 1 / 3)
    new = _synthetic_features(n_instructions=4, seed=1)
    new = new[new.index.get_level_values("setting") == "detailed"]
    assigned = model.assign(new)
    summary = closest_setting.assignment_summary(assigned, model.classes)
    assert closest_setting.closest(summary) == "detailed"
    assert np.allclose(assigned[list(model.classes)].sum(axis=1), 1.0)


def test_classifier_without_signal_is_near_chance_and_says_so():
    from analysis.findings import closest_setting

    features = _synthetic_features()
    rng = np.random.default_rng(5)
    noise = pd.DataFrame(rng.normal(size=features.shape), index=features.index, columns=features.columns)
    labels = features.index.get_level_values("setting")
    groups = [
        f"{d}:{i}"
        for d, i in zip(features.index.get_level_values("dataset"), features.index.get_level_values("sample_index"))
    ]
    model = closest_setting.fit_placement(noise, labels, groups, ["none", "simplified", "detailed"], n_resamples=200)
    assert model.accuracy.value < 0.6
    with pytest.raises(closest_setting.PlacementError, match="two or more"):
        closest_setting.fit_placement(noise, ["none"] * len(noise), groups, ["none", "detailed"])


# --------------------------------------------------------------------------- the command


def test_profile_runs_never_execute_the_standalone_page():
    from analysis.study import book

    assert "your_data" not in [p.stem for p in book.notebook_sources()]


def test_command_refuses_a_bad_record_or_reference_before_computing(tmp_path, capsys, study_data_dir):
    from analysis.cli import main

    bad = _write(tmp_path / "mine.jsonl", '{"messages": [{"role": "user", "content": "q"}]}\n')
    assert (
        main(["profile-data", "--model", "smollm2-135m-instruct", "--data", str(bad), "--out", str(tmp_path / "store")])
        == 2
    )
    assert f"{bad}: line 1 (record 0): field 'messages' has no assistant message" in capsys.readouterr().err
    good = _write(tmp_path / "ok.json", '[{"instruction": "q", "output": "a"}]')
    assert (
        main(
            [
                "profile-data",
                "--model",
                "smollm2-135m-instruct",
                "--data",
                str(good),
                "--reference",
                "wiki",
                "--out",
                str(tmp_path / "store"),
                "--data-dir",
                str(study_data_dir),
            ]
        )
        == 2
    )
    assert "reference dataset 'wiki'" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def _user_files(folder, study_data_dir, first=100, n=6):
    """Detailed-CoT responses of AQuA questions the references do not use, in the chat format,
    and bare answers of the same questions as JSON Lines."""
    cot = study_data_dir / "cot_500"
    detailed = json.loads((cot / "aqua_train_with_cot_gpt4o.json").read_text())[first : first + n]
    bare = json.loads((cot / "aqua_train_no_cot.json").read_text())[first : first + n]
    chat = [
        {
            "messages": [
                {"role": "system", "content": "You reason step by step."},
                {"role": "user", "content": r["instruction"]},
                {"role": "assistant", "content": r["output"]},
            ]
        }
        for r in detailed
    ]
    detailed_path = _write(folder / "my data.json", json.dumps(chat))
    bare_path = _write(folder / "bare.jsonl", "\n".join(json.dumps(r) for r in bare))
    return detailed_path, bare_path


@pytest.fixture(scope="module")
def tiny_profile(tiny_model_dir, study_data_dir, tmp_path_factory):
    """profile-data on the tiny model, AQuA references, 5 samples each; the result and the inputs."""
    from analysis.study import your_data_run

    folder = tmp_path_factory.mktemp("your-data")
    files = _user_files(folder, study_data_dir, n=5)
    result = your_data_run.run(
        str(tiny_model_dir("llama")),
        [str(f) for f in files],
        ExtractionSettings(n_samples=5, template="base", device="cpu"),
        reference_datasets=["aqua"],
        reference_samples=5,
        out=folder / "store",
        html=folder / "page.html",
        data_dir=study_data_dir,
        n_resamples=200,
        seed=7,
        progress=False,
        say=lambda _: None,
    )
    return result, files, folder


@pytest.mark.slow
def test_command_places_detailed_cot_and_bare_answers_where_they_belong(tiny_profile, tiny_model_dir, study_data_dir):
    from analysis.findings import closest_setting
    from analysis.report import your_data_page, your_data_samples

    result, files, _ = tiny_profile
    page = your_data_page.YourData.read(
        DataParameters(
            tuple(str(f) for f in files),
            str(tiny_model_dir("llama")),
            "base",
            5,
            result.results_dir,
            tuple(your_data_page.profiles.reference_conditions(("aqua",))),
            seed=7,
            n_resamples=200,
        )
    )
    assert page.placement is not None and page.placement.accuracy.value > 0.6
    detailed, bare = page.files
    assert closest_setting.closest(your_data_samples.file_assignment(page, detailed)) == "detailed"
    assert closest_setting.closest(your_data_samples.file_assignment(page, bare)) == "none"
    assert page.scratch in page.draws and detailed.condition in page.draws[page.scratch].conditions
    trained = your_data_page.condition_estimate(page.draws[page.model], detailed.condition, "nuclear_norm")
    scratch = your_data_page.condition_estimate(page.draws[page.scratch], detailed.condition, "nuclear_norm")
    assert trained.value != scratch.value


@pytest.mark.slow
def test_command_writes_the_page_the_notebook_and_the_ranked_samples(tiny_profile):
    result, _, folder = tiny_profile
    html = result.html.read_text()
    assert result.html == folder / "page.html" and result.notebook.is_file()
    assert "closest to" in html and "Detailed CoT" in html and "scratch" in html
    assert "page_data" not in html and "import " not in html  # code hidden, parameters removed
    assert html.count("data:image/png;base64") >= 4
    ranked = sorted((result.results_dir / "scores").glob("*-ranked.csv"))
    assert len(ranked) == 2
    table = pd.read_csv(ranked[0])
    assert list(table["rank"]) == list(range(1, len(table) + 1))
    assert table["mean_nuclear_norm"].is_monotonic_increasing
    assert {"p_none", "p_simplified", "p_detailed", "closest_setting", "instruction", "output"} <= set(table.columns)
    top = json.loads(next((result.results_dir / "scores").glob("*-top.json")).read_text())
    assert top and {"instruction", "output", "mean_effective_rank"} <= set(top[0])


@pytest.mark.slow
def test_command_computes_only_what_the_store_lacks(tiny_profile, tiny_model_dir, study_data_dir):
    from analysis.study import your_data_run

    result, files, _ = tiny_profile
    jobs = your_data_run.plan_jobs(
        str(tiny_model_dir("llama")),
        files,
        your_data_run.profiles.reference_conditions(("aqua",)),
        your_data_run.ResultsStore(result.results_dir),
        request=your_data_run.ProfileData(
            ExtractionSettings(n_samples=5, template="base"), data_dir=study_data_dir, reference_samples=5
        ),
    )
    assert jobs == []
    more = your_data_run.plan_jobs(
        str(tiny_model_dir("llama")),
        files,
        your_data_run.profiles.reference_conditions(("aqua",)),
        your_data_run.ResultsStore(result.results_dir),
        request=your_data_run.ProfileData(
            ExtractionSettings(n_samples=5, template="base"), data_dir=study_data_dir, reference_samples=6
        ),
    )
    assert sorted(job.spec for job in more) == sorted(
        your_data_run.profiles.reference_conditions(("aqua",))
    )  # the references hold 5, the files all they need


@pytest.mark.slow
@pytest.mark.browser
def test_page_opens_in_headless_chromium_with_its_figures_and_tables(tiny_profile):
    from pathlib import Path

    chromium, driver_path = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
    if not (chromium.is_file() and driver_path.is_file()):
        pytest.skip("headless Chromium is not installed (make setup-browser installs chromium and chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(driver_path)), options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.get(tiny_profile[0].html.as_uri())
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete && i.naturalWidth > 0]);"
        )
        assert len(images) >= 4 and all(loaded for _, loaded in images), images
        assert any("over the reference settings" in alt for alt, _ in images)
        assert len(driver.find_elements(By.CSS_SELECTOR, "table tbody tr")) >= 10
        text = driver.find_element(By.TAG_NAME, "body").text
        assert "is closest to" in text and "Your samples, ranked" in text
        assert "page_data" not in text
    finally:
        driver.quit()


def test_extract_command_keeps_spectra_on_request(tiny_model_dir, study_data_dir, tmp_path):
    from analysis.cli import main

    out = tmp_path / "store"
    arguments = [
        "extract",
        "--model",
        str(tiny_model_dir("llama")),
        "--template",
        "base",
        "--data",
        "gsm8k/none/correct",
        "--out",
        str(out),
        "--n-samples",
        "2",
        "--data-dir",
        str(study_data_dir),
        "--device",
        "cpu",
        "--no-progress",
        "--keep-spectra",
    ]
    assert main(arguments) == 0
    rows = read_results(out)
    assert rows[runner.SPECTRUM_COLUMN].map(len).gt(0).all()
    sums = rows[runner.SPECTRUM_COLUMN].map(np.sum).to_numpy()
    assert np.allclose(sums, rows["nuclear_norm"].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "change,message",
    [
        ({"data_files": []}, "parameter data_files"),
        ({"n_samples": 0}, "parameter n_samples"),
        ({"reference_conditions": ["aqua/fast/correct"]}, "parameter reference_conditions"),
        ({"max_length": "1024"}, "parameter max_length"),
    ],
)
def test_page_parameters_are_checked(change, message):
    good = {
        "data_files": ["a.json"],
        "n_samples": 20,
        "reference_conditions": None,
        "max_length": 1024,
        "seed": 0,
        "n_resamples": 1000,
    }
    assert validate_data(good).data_files == ("a.json",)
    with pytest.raises(ParameterError, match=message):
        validate_data({**good, **change})


def test_a_misspelt_parameter_of_the_your_data_page_is_named():
    from analysis.report import your_data_page

    with pytest.raises(ParameterError, match="notebook parameter n_sample: your_data has no such parameter"):
        your_data_page.YourData.open(YOUR_DATA, {"data_files": ["a.json"], "n_sample": 3})
