"""The registry of the study's data files, validation errors, and fetching."""

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from analysis import data
from analysis.core import vocabulary
from analysis.data import data_files, sample_draws
from analysis.data.data_errors import DataError
from analysis.data.records import load_records


def test_registry_covers_the_56_study_files():
    conditions = data.study_conditions()
    assert len(conditions) == 56
    assert {c.relative_path for c in conditions} == set(data_files.expected_sha256())
    assert sum(c.responses == "irrelevant" for c in conditions) == 28
    assert {c.setting for c in conditions if c.dataset == "wiki"} == set(vocabulary.WIKI_SETTINGS)
    assert {c.setting for c in conditions if c.dataset == "math-geometry"} == {"simplified", "detailed"}


def test_length_control_conditions_reference_shorter_settings():
    cut = data.get_condition("gsm8k/detailed_cut_simplified/irrelevant")
    assert cut.relative_path == data.get_condition("gsm8k/detailed/irrelevant").relative_path
    assert cut.length_reference == "gsm8k/simplified/irrelevant"
    assert "math-algebra/detailed_cut_none/correct" not in data.CONDITIONS  # MATH has no None-CoT file


def test_unknown_condition_names_the_key():
    with pytest.raises(DataError, match="unknown condition 'aqua/slow/correct'"):
        data.get_condition("aqua/slow/correct")


def test_study_files_validate_and_match_hashes(study_data_dir):
    for condition in data.study_conditions():
        resolved = data.resolve(condition.key, study_data_dir)
        assert resolved.sha256_ok, condition.key
        records = load_records(resolved.path)
        assert len(records) == (454 if condition.setting == "unpopular" else 500)


@pytest.mark.parametrize(
    "payload,message",
    [
        ('{"instruction": "x"}', "expected a JSON list of records, found dict"),
        ('[{"instruction": "x", "output": "y"}, {"output": "y"}]', "record 1: missing field 'instruction'"),
        ('[{"instruction": "x"}]', "record 0: missing field 'output'"),
        ('[{"instruction": "x", "output": 3}]', "record 0: field 'output' must be a string, found int"),
        ('[{"instruction": "x", "input": null, "output": "y"}]', "record 0: field 'input' must be a string"),
        ('[{"instruction": "x", "output": ""}]', "record 0: field 'output' is empty"),
        ('["just text"]', "record 0: expected an object, found str"),
        ('[{"instruction": "x", "output": "y"', "malformed JSON at line 1"),
        ("[]", "no records (the file holds an empty list)"),
    ],
)
def test_bad_files_and_records_name_file_record_and_field(tmp_path, payload, message):
    path = tmp_path / "bad.json"
    path.write_text(payload)
    with pytest.raises(DataError) as error:
        load_records(path)
    assert str(path) in str(error.value)
    assert message in str(error.value)


def test_extracting_an_empty_file_says_it_has_no_records_and_keeps_what_is_stored(tiny_model_dir, tmp_path, capsys):
    from analysis.cli import main
    from analysis.store import read_results

    two = tmp_path / "two.json"
    two.write_text(json.dumps([{"instruction": "first", "output": "a"}, {"instruction": "second", "output": "b"}]))
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    out = tmp_path / "store"
    command = ["extract", "--model", str(tiny_model_dir("llama")), "--template", "base", "--out", str(out)]
    command += ["--device", "cpu", "--no-progress", "--data"]
    assert main([*command, str(two)]) == 0
    stored = read_results(out)
    capsys.readouterr()
    assert main([*command, str(two), str(empty)]) == 2  # refused before anything is computed
    captured = capsys.readouterr()
    assert captured.err == f"error: {empty}: no records (the file holds an empty list)\n"
    assert "computed" not in captured.out
    assert read_results(out).equals(stored)


def test_data_dir_prefers_argument_then_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(data_files.DATA_ENV, str(tmp_path))
    assert data_files.data_dir() == tmp_path
    assert data_files.data_dir("elsewhere") == Path("elsewhere")


def test_file_outside_registry_has_no_published_hash(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([{"instruction": "a", "input": "", "output": "b"}]))
    resolved = data.resolve(str(path))
    assert resolved.condition.dataset == "mine" and resolved.sha256_ok is None


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        """No line per request on stderr."""


@contextmanager
def served(directory: Path, seconds: float = 120) -> Iterator[str]:
    """The files of ``directory`` over HTTP on 127.0.0.1; the server stops on exit or after ``seconds``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    deadline = threading.Timer(seconds, server.shutdown)
    deadline.daemon = True
    thread.start()
    deadline.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        deadline.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def small_registry(tmp_path, monkeypatch) -> dict[str, bytes]:
    """Two served files and a registry of their sha256 in place of the study's 56."""
    files = {"cot_500/a.json": b'[{"instruction": "a", "input": "", "output": "b"}]', "wiki/b.json": b"[]"}
    for relative, content in files.items():
        (tmp_path / "server" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "server" / relative).write_bytes(content)
    table = {relative: hashlib.sha256(content).hexdigest() for relative, content in files.items()}
    monkeypatch.setattr(data_files, "expected_sha256", lambda: table)
    return files


def all_files(directory: Path) -> set[str]:
    return {str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file()}


def test_fetch_downloads_verifies_and_keeps_verified_files(small_registry, tmp_path):
    mirror = tmp_path / "mirror"
    with served(tmp_path / "server") as base:
        assert data_files.fetch(mirror, base_url=base) == [mirror / "cot_500/a.json", mirror / "wiki/b.json"]
        assert all_files(mirror) == set(small_registry)
        assert all((mirror / r).read_bytes() == content for r, content in small_registry.items())
        assert data_files.fetch(mirror, base_url=base) == []  # already verified: nothing downloaded

        (mirror / "wiki/b.json").write_text("changed")
        assert data_files.fetch(mirror, base_url=base) == [mirror / "wiki/b.json"]
        assert (mirror / "wiki/b.json").read_bytes() == b"[]"

        assert len(data_files.fetch(mirror, base_url=base, force=True)) == 2
        assert all_files(mirror) == set(small_registry)


def test_fetch_of_a_file_with_another_hash_names_it_and_leaves_nothing(small_registry, tmp_path, monkeypatch):
    table = {**data_files.expected_sha256(), "wiki/b.json": "0" * 64}
    monkeypatch.setattr(data_files, "expected_sha256", lambda: table)
    mirror = tmp_path / "mirror"
    with served(tmp_path / "server") as base:
        with pytest.raises(DataError) as error:
            data_files.fetch(mirror, base_url=base)
        assert str(error.value) == f"{base}/wiki/b.json: downloaded file does not match its published sha256 {'0' * 64}"
        assert all_files(mirror) == {"cot_500/a.json"}

        with pytest.raises(DataError, match="does not match its published sha256"):
            data_files.fetch(mirror, base_url=base, force=True)
        assert all_files(mirror) == {"cot_500/a.json"}


def test_fetch_of_a_missing_file_is_an_os_error_and_leaves_nothing(small_registry, tmp_path):
    (tmp_path / "server/wiki/b.json").unlink()
    mirror = tmp_path / "mirror"
    with served(tmp_path / "server") as base, pytest.raises(OSError, match="404"):
        data_files.fetch(mirror, base_url=base)
    assert all_files(mirror) == {"cot_500/a.json"}


def test_fetch_of_the_study_files_from_a_mirror(study_data_dir, tmp_path):
    with served(study_data_dir) as base:
        written = data_files.fetch(tmp_path / "mirror", base_url=base)
    assert len(written) == 56
    assert all(
        data_files.file_sha256(path) == data_files.expected_sha256()[str(path.relative_to(tmp_path / "mirror"))]
        for path in written
    )


def test_a_profile_takes_a_seeded_random_sample_the_same_for_every_file_of_a_dataset():
    ids = sample_draws.sample_ids("strategyqa", 500, 5)
    assert len(ids) == 5 and ids == sorted(ids) and ids != list(range(5))  # not the first N records
    assert ids == sample_draws.sample_ids("strategyqa", 500, 5)  # the same on every run
    assert set(sample_draws.sample_ids("strategyqa", 500, 3)) <= set(ids)  # a smaller run takes a subset
    # a record's rank does not depend on the file's length: a shorter file of the dataset takes
    # the same order, less the indices it lacks
    order = [int(i) for i in np.argsort(sample_draws.sample_ranks("wiki", 500), kind="stable")]
    assert sample_draws.sample_ids("wiki", 454, 5) == sorted([i for i in order if i < 454][:5])
    assert sample_draws.sample_ids("aqua", 4, 10) == [0, 1, 2, 3] and sample_draws.sample_ids("aqua", 4, None) == [
        0,
        1,
        2,
        3,
    ]
    assert sample_draws.sample_ids("aqua", 500, 5) != ids  # datasets are drawn independently


def test_excluded_records_are_passed_over_in_the_seeded_order_and_taken_last():
    order = [int(i) for i in np.argsort(sample_draws.sample_ranks("creak", 50), kind="stable")]
    plain = sample_draws.sample_ids("creak", 50, 5)
    assert plain == sorted(order[:5])
    skip = set(order[:2])
    assert sample_draws.sample_ids("creak", 50, 5, excluded=skip) == sorted(order[2:7])  # topped up with the next two
    nearly_all = set(order[:48])
    assert sample_draws.sample_ids("creak", 50, 5, excluded=nearly_all) == sorted(order[48:] + order[:3])
    assert sample_draws.sample_ids("creak", 50, None, excluded=skip) == list(range(50))  # all records: nothing left out


def test_every_f3_cell_of_the_cpu_profile_has_its_n_usable_none_cot_pairs(study_data_dir):
    """F3's None-CoT comparison leaves out pairs whose irrelevant answer is the correct one; the
    profile's sample is drawn from the others, for every file of the dataset."""
    from analysis import profiles

    cpu = profiles.get_profile("cpu")
    n = cpu.extraction.n_samples
    datasets = {data.get_condition(c).dataset for c in cpu.conditions if c.split("/")[1] == "none"}
    assert datasets == set(vocabulary.REASONING_DATASETS)  # the six datasets with None-CoT files
    with_pairs = 0
    for dataset in sorted(datasets):
        count = len(load_records(data.resolve(f"{dataset}/none/correct", study_data_dir).path))
        identical = data.identical_response_ids(dataset, "none", study_data_dir)
        ids = sample_draws.dataset_sample_ids(dataset, count, n, directory=study_data_dir)
        assert len(ids) == n and not set(ids) & identical, (dataset, ids)
        if not identical:
            assert ids == sample_draws.sample_ids(dataset, count, n)  # datasets without such pairs keep the plain draw
        with_pairs += bool(set(sample_draws.sample_ids(dataset, count, n)) & identical)
    assert with_pairs >= 4  # AQuA, StrategyQA, CREAK, Sensemaking: the plain draw would leave fewer than n


# --------------------------------------------------------------------------- answer-scored views


def _answer_files(root, simplified_ending="\nThe final answer is "):
    """A data folder with AQuA's None, Simplified and Detailed CoT files of three instructions whose
    answers also occur earlier in the reasoning."""
    folder = root / "cot_500"
    folder.mkdir(parents=True)
    answers = ["(B)", "12", "(B)"]
    questions = [f"question {i}" for i in range(3)]
    files = {
        "none": answers,
        "simplified": [f"Since (B) and 12 are options, {a} is it.{simplified_ending}{a}" for a in answers],
        "detailed": [f"Detailed {i}: the answer is {a}, so {a}." for i, a in enumerate(answers)],
    }
    suffix = {"none": "no_cot", "simplified": "with_cot", "detailed": "with_cot_gpt4o"}
    for setting, outputs in files.items():
        records = [{"instruction": q, "input": "", "output": o} for q, o in zip(questions, outputs)]
        (folder / f"aqua_train_{suffix[setting]}.json").write_text(json.dumps(records))
    return root, answers, files


def test_answer_views_are_registered_apart_from_the_study_files():
    views = [c for c in data.CONDITIONS.values() if c.answer is not None]
    assert {c.setting for c in views} == set(vocabulary.ANSWER_SETTINGS)
    assert {c.dataset for c in views} == {"aqua", "gsm8k", "strategyqa", "ecqa", "creak", "sensemaking"}
    assert all(c.responses == "correct" for c in views) and len(views) == 6 * len(vocabulary.ANSWER_SETTINGS)
    assert len(data.study_conditions()) == 56 and not any(c.is_view for c in data.study_conditions())
    assert not data.conditions_matching(settings=vocabulary.ANSWER_SETTINGS)
    assert len(data.conditions_matching(settings=vocabulary.ANSWER_SETTINGS, answer_scored=True)) == len(views)


def test_answer_records_place_the_answer_by_construction(tmp_path):
    root, answers, files = _answer_files(tmp_path)
    built = {s: data.answer_records(data.get_condition(f"aqua/{s}/correct"), root) for s in vocabulary.ANSWER_SETTINGS}
    for setting, records in built.items():
        for index, record in enumerate(records):
            assert record.output[record.answer_start :] == answers[index], setting
            assert record.output[: record.answer_start].endswith("The final answer is "), setting
            assert record.instruction == f"question {index}"
    # the answer also occurs earlier in the text: its place is the appended one, never the first
    detailed = built["detailed_answer"][0]
    assert detailed.output.index("(B)") < detailed.answer_start
    assert detailed.output == files["detailed"][0] + "\nThe final answer is (B)"
    assert built["none_answer"][1].output == "The final answer is 12"
    assert built["simplified_answer"][2].output == files["simplified"][2]
    # another instruction's reasoning: the next record's, the last taking the first
    assert built["detailed_other_answer"][0].output.startswith(files["detailed"][1])
    assert built["detailed_other_answer"][2].output.startswith(files["detailed"][0])


def test_a_simplified_response_without_the_answer_ending_names_the_file_and_record(tmp_path):
    root, *_ = _answer_files(tmp_path, simplified_ending=" The final answer is ")
    with pytest.raises(DataError, match=r"aqua_train_with_cot\.json: record 0: the response does not end with"):
        data.answer_records(data.get_condition("aqua/simplified_answer/correct"), root)


def test_states_finds_an_answer_as_a_whole_word_in_any_case():
    assert data.states("... so the answer is No.", "no")
    assert not data.states("it is not there", "no")
    assert data.states("The Pantry, of course", " pantry ")
    assert not data.states("anything", "  ")


def test_shuffled_words_keeps_the_words_and_changes_their_order_by_seed():
    text = "first we add two and three then we multiply the sum by four to get twenty"
    shuffled = data.shuffled_words(text, seed=3)
    assert sorted(shuffled.split()) == sorted(text.split()) and shuffled != text
    assert shuffled == data.shuffled_words(text, seed=3) != data.shuffled_words(text, seed=4)


def test_verbatim_answer_ids_are_the_chains_that_state_their_answer():
    """Each id names an instruction whose Detailed CoT states its None-CoT answer, and every other
    instruction's does not (read from the study's files)."""
    none, detailed = (data.CONDITIONS[f"gsm8k/{s}/correct"] for s in ("none", "detailed"))
    answers, chains = (load_records(data.data_dir() / c.relative_path) for c in (none, detailed))
    ids = data.verbatim_answer_ids("gsm8k")
    assert 0 < len(ids) < len(answers)
    assert ids == {i for i, (a, c) in enumerate(zip(answers, chains)) if data.states(c.output, a.output)}
    assert data.verbatim_answer_ids("wiki") == frozenset()
