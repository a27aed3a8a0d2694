"""Your own data through the study's lens: input formats, kept spectra, the scratch control,
the reference classifier and the profile-data command."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from analysis import data, models, runner
from analysis.store import ResultsStore, read_results


# --------------------------------------------------------------------------- input formats


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_study_chat_and_jsonl_formats_give_the_same_records(tmp_path):
    study = [{"instruction": "What is 2+2?", "input": "", "output": "4"},
             {"instruction": "Name a colour.", "output": "Blue."}]
    chat = [{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"},
                          {"role": "assistant", "content": "4"}]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "Name a colour."}]},
                          {"role": "assistant", "content": "Blue."}]}]
    expected = [data.Record("What is 2+2?", "", "4"), data.Record("Name a colour.", "", "Blue.")]
    assert data.load_records(_write(tmp_path / "a.json", json.dumps(study))) == expected
    assert data.load_records(_write(tmp_path / "b.json", json.dumps(chat))) == expected
    lines = "\n".join(json.dumps(r) for r in [study[0], chat[1]]) + "\n\n"
    assert data.load_records(_write(tmp_path / "c.jsonl", lines)) == expected
    assert data.resolve(str(tmp_path / "c.jsonl")).condition.dataset == "c"


def test_chat_record_takes_the_last_turn_and_drops_the_system_message():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "first question"},
                {"role": "assistant", "content": "first answer"}, {"role": "user", "content": "part one"},
                {"role": "user", "content": "part two"}, {"role": "assistant", "content": "final answer"}]
    record = data.chat_record(messages, "f: record 0")
    assert record == data.Record("part one\n\npart two", "", "final answer")


@pytest.mark.parametrize(
    "name,text,message",
    [
        ("x.jsonl", '{"instruction": "a", "output": "b"}\n{"instruction": "a"}\n', "line 2 (record 1): missing field 'output'"),
        ("x.jsonl", '{"instruction": "a", "output": "b"}\n{"instruction": \n', "line 2 (record 1): malformed JSON"),
        ("x.jsonl", "\n \n", "no records"),
        ("x.json", '[{"messages": []}]', "record 0: field 'messages' must be a non-empty list"),
        ("x.json", '[{"messages": [{"role": "user", "content": "q"}]}]', "record 0: field 'messages' has no assistant message"),
        ("x.json", '[{"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]}]',
         "record 0: field 'messages' has no user message before the last assistant message"),
        ("x.json", '[{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": 5}]}]',
         "record 0: field 'messages', message 1: field 'content' must be a string, found int"),
        ("x.json", '[{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}]}]',
         "record 0: field 'messages': the last assistant message is empty"),
        ("x.json", '[{"messages": [{"role": "critic", "content": "q"}, {"role": "assistant", "content": "a"}]}]',
         "record 0: field 'messages': unknown role 'critic'"),
        ("x.json", '[{"messages": [{"content": "q"}, {"role": "assistant", "content": "a"}]}]',
         "record 0: field 'messages', message 0: field 'role' must be a string"),
    ],
)
def test_bad_records_name_the_file_the_record_and_the_field(tmp_path, name, text, message):
    path = _write(tmp_path / name, text)
    with pytest.raises(data.DataError) as error:
        data.load_records(path)
    assert str(path) in str(error.value)
    assert message in str(error.value)


# --------------------------------------------------------------------------- kept spectra, scratch control


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return models.load(str(tiny_model_dir("llama")), template="base", device="cpu")


def test_kept_spectra_round_trip_and_give_the_stored_nuclear_norm(tiny, study_data_dir, tmp_path):
    plain, kept = ResultsStore(tmp_path / "plain"), ResultsStore(tmp_path / "kept")
    for store, keep in ((plain, False), (kept, True)):
        runner.extract(tiny, "aqua/simplified/correct", store, limit=2, max_length=1024,
                       data_directory=study_data_dir, progress=False, keep_spectra=keep)
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
    assert first.name == f"{tiny.name}@scratch" and models.model_slug(first.name) != models.model_slug(tiny.name)
    weights = lambda m: dict(m.model.named_parameters())  # noqa: E731
    name = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(weights(first)[name], weights(second)[name])
    assert not torch.equal(weights(first)[name], weights(other)[name])
    assert not torch.equal(weights(first)[name], weights(tiny)[name])
    assert type(first.model) is type(tiny.model) and first.n_layers == tiny.n_layers
    assert not any(p.requires_grad for p in first.model.parameters())
