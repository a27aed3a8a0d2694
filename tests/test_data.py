"""The registry of the study's data files, validation errors, and fetching."""

import http.server
import json
import threading
from functools import partial

import pytest

from analysis import data


def test_registry_covers_the_56_study_files():
    conditions = data.study_conditions()
    assert len(conditions) == 56
    assert {c.relative_path for c in conditions} == set(data.expected_sha256())
    assert sum(c.responses == "irrelevant" for c in conditions) == 28
    assert {c.setting for c in conditions if c.dataset == "wiki"} == set(data.WIKI_SETTINGS)
    assert {c.setting for c in conditions if c.dataset == "math-geometry"} == {"simplified", "detailed"}


def test_length_control_conditions_reference_shorter_settings():
    cut = data.get_condition("gsm8k/detailed_cut_simplified/irrelevant")
    assert cut.relative_path == data.get_condition("gsm8k/detailed/irrelevant").relative_path
    assert cut.length_reference == "gsm8k/simplified/irrelevant"
    assert "math-algebra/detailed_cut_none/correct" not in data.REGISTRY  # MATH has no None-CoT file


def test_unknown_condition_names_the_key():
    with pytest.raises(data.DataError, match="unknown condition 'aqua/slow/correct'"):
        data.get_condition("aqua/slow/correct")


def test_study_files_validate_and_match_hashes(study_data_dir):
    for condition in data.study_conditions():
        resolved = data.resolve(condition.key, study_data_dir)
        assert resolved.sha256_ok, condition.key
        records = data.load_records(resolved.path)
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
    ],
)
def test_bad_files_and_records_name_file_record_and_field(tmp_path, payload, message):
    path = tmp_path / "bad.json"
    path.write_text(payload)
    with pytest.raises(data.DataError) as error:
        data.load_records(path)
    assert str(path) in str(error.value)
    assert message in str(error.value)


def test_data_dir_prefers_argument_then_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(data.DATA_ENV, str(tmp_path))
    assert data.data_dir() == tmp_path
    assert data.data_dir("elsewhere") == data.Path("elsewhere")


def test_file_outside_registry_has_no_published_hash(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([{"instruction": "a", "input": "", "output": "b"}]))
    resolved = data.resolve(str(path))
    assert resolved.condition.dataset == "mine" and resolved.sha256_ok is None


def test_fetch_downloads_and_verifies(study_data_dir, tmp_path, monkeypatch):
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(study_data_dir))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        written = data.fetch(tmp_path / "mirror", base_url=base)
        assert len(written) == 56
        assert data.fetch(tmp_path / "mirror", base_url=base) == []  # already verified: nothing downloaded
        corrupt = tmp_path / "corrupt"
        (corrupt / "cot_500").mkdir(parents=True)
        monkeypatch.setattr(data, "expected_sha256", lambda: {"cot_500/aqua_train_no_cot.json": "0" * 64})
        with pytest.raises(data.DataError, match="does not match its published sha256"):
            data.fetch(corrupt, base_url=base)
        assert not (corrupt / "cot_500" / "aqua_train_no_cot.json").exists()
    finally:
        server.shutdown()
