"""The paper's four architectures, each as a tiny random model saved to a folder, through the
paper profile's code path (``models.load`` -> ``runner.extract`` -> results store): every stored
statistic equals the plain procedure (batch size 1, ``param.grad``, full SVD) within 1e-4.

Each config keeps what distinguishes the real model: Qwen2's q/k/v biases and GQA, Llama 2's
multi-head attention, Llama 3.1's llama3 rope scaling and GQA, Gemma 2's soft-capped attention
and final logits, its query scaling and its alternating sliding-window layers (a window shorter
than the samples, so the sliding layers see less than the global ones).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import CHAT_TEMPLATE, char_tokenizer, tiny_model

from analysis import cli, profiles
from analysis.core import registry
from analysis.core.settings import ExtractionSettings
from analysis.extract import architectures, gradients, models, plain, preparation, runner, spectra
from analysis.store import ResultsStore, read_results, runlog
from analysis.study import pipeline

PROJECT = Path(__file__).resolve().parents[1]
SMALL = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4, "max_position_embeddings": 512}
SLIDING_WINDOW = 8


def qwen2(vocab: int):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=vocab, num_attention_heads=4, num_key_value_heads=2, rope_theta=1e6, **SMALL)
    return Qwen2ForCausalLM(config)


def llama2(vocab: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=vocab, num_attention_heads=4, num_key_value_heads=4, **SMALL)
    return LlamaForCausalLM(config)


def llama31(vocab: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    rope = {
        "rope_type": "llama3",
        "rope_theta": 500000.0,
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    }
    config = LlamaConfig(vocab_size=vocab, num_attention_heads=4, num_key_value_heads=1, rope_parameters=rope, **SMALL)
    return LlamaForCausalLM(config)


def gemma2(vocab: int, sliding_window: int = SLIDING_WINDOW):
    from transformers import Gemma2Config, Gemma2ForCausalLM

    # Soft-capping thresholds low enough for a random model's logits to reach them (the real
    # models' 50 and 30 act on logits that large), and a query scaling that is not head_dim.
    config = Gemma2Config(
        vocab_size=vocab,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        query_pre_attn_scalar=12,
        attn_logit_softcapping=1.0,
        final_logit_softcapping=2.0,
        sliding_window=sliding_window,
        initializer_range=0.2,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        **SMALL,
    )
    return Gemma2ForCausalLM(config)


ARCHITECTURES = {"qwen2": qwen2, "llama2": llama2, "llama3.1": llama31, "gemma2": gemma2}
EXPECTED_ATTENTION = {"qwen2": "sdpa", "llama2": "sdpa", "llama3.1": "sdpa", "gemma2": "eager"}

# Samples long enough for a window of 8 tokens to matter, of mixed lengths so that batches pad.
RECORDS = [
    {"instruction": "What is 12 times 7?", "input": "", "output": "12 times 7 is 84, so the answer is 84."},
    {"instruction": "Name a prime.", "input": "", "output": "Seven."},
    {
        "instruction": "Is the sky green? Answer yes or no.",
        "input": "",
        "output": "No. The sky looks blue on a clear day because air scatters short wavelengths more.",
    },
    {"instruction": "Add 3 and 4.", "input": "", "output": "3 + 4 = 7. The final answer is 7."},
    {"instruction": "Say hello.", "input": "", "output": "Hello there, friend!"},
]


def save_model(folder: Path, architecture: str, **options) -> Path:
    """A tiny random model of the architecture with a character tokenizer, as safetensors."""
    torch.manual_seed(0)
    tokenizer = char_tokenizer(CHAT_TEMPLATE)
    ARCHITECTURES[architecture](len(tokenizer), **options).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    return {name: save_model(tmp_path_factory.mktemp(name), name) for name in ARCHITECTURES}


@pytest.fixture(scope="module")
def records_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "samples.json"
    path.write_text(json.dumps(RECORDS))
    return path


def largest_difference(frame, loaded: models.LoadedModel, prepared: list[preparation.PreparedSample]) -> float:
    """Largest relative difference of any stored statistic (and loss) to the plain procedure."""
    worst = 0.0
    for sample in prepared:
        rows = frame[frame["sample_index"] == sample.index]
        assert len(rows) == loaded.n_layers * len(gradients.PROJECTIONS)
        expected = plain.reference_statistics(loaded.model, sample.encoded)
        worst = max(worst, plain.largest_relative_difference(rows, expected, with_loss=True))
    return worst


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_loads_with_the_attention_that_computes_the_model(architecture, model_dirs):
    loaded = models.load(str(model_dirs[architecture]), template="base", device="cpu")
    assert loaded.attention == EXPECTED_ATTENTION[architecture]
    assert loaded.model.config._attn_implementation == EXPECTED_ATTENTION[architecture]
    facts = loaded.facts()
    assert facts.revision.startswith("local folder ")
    assert facts.attention == EXPECTED_ATTENTION[architecture]
    assert facts.chat_template_sha256 is not None and len(facts.chat_template_sha256) == 64


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_stored_statistics_equal_the_plain_procedure(architecture, model_dirs, records_file, tmp_path):
    loaded = models.load(str(model_dirs[architecture]), template="base", device="cpu")
    store = ResultsStore(tmp_path / "results")
    summary = runner.extract(
        loaded,
        str(records_file),
        store,
        settings=ExtractionSettings(max_length=128, batch_size=3, token_budget=4096),
        progress=False,
    )
    assert summary.computed == len(RECORDS) and not summary.skipped
    frame = read_results(tmp_path / "results")
    plan = runner.plan_run(loaded.name, "base", str(records_file), store, settings=ExtractionSettings(max_length=128))
    prepared, _ = preparation.prepare_samples(loaded, plan.resolved, list(range(len(RECORDS))), 128)
    if architecture == "gemma2":
        assert min(len(s.encoded.input_ids) for s in prepared) > 2 * SLIDING_WINDOW
    worst = largest_difference(frame, loaded, prepared)
    print(f"{architecture}: largest relative difference to the plain procedure {worst:.2e}")
    assert worst < 1e-4


def test_gemma2_soft_capping_and_sliding_window_change_the_gradients(model_dirs, tmp_path):
    """The settings the attention path must honour: leaving either out changes the statistics,
    so a path that skipped them would not pass the comparison above with the real model."""
    ids, prompt_length = list(range(5, 45)), 10
    batch = gradients.make_batch([ids], [prompt_length], 0, torch.device("cpu"))

    def nuclear_norms(model) -> torch.Tensor:
        return gradients.batch_statistics(model, batch)[0].values["nuclear_norm"]

    loaded = models.load(str(model_dirs["gemma2"]), template="base", device="cpu")
    reference = nuclear_norms(loaded.model)
    wide = models.load(str(save_model(tmp_path / "wide", "gemma2", sliding_window=4096)), template="base", device="cpu")
    assert not torch.allclose(nuclear_norms(wide.model), reference, rtol=1e-3)
    for layer in loaded.model.model.layers:
        layer.self_attn.attn_logit_softcapping = None
    assert not torch.allclose(nuclear_norms(loaded.model), reference, rtol=1e-3)


def test_gemma2_is_refused_sdpa_and_chosen_eager():
    from transformers import Gemma2Config, Gemma3TextConfig, LlamaConfig, Qwen2Config

    assert models.attention_implementation(Gemma2Config()) == "eager"
    assert models.attention_implementation(Gemma3TextConfig()) == "sdpa"
    assert models.attention_implementation(Gemma3TextConfig(attn_logit_softcapping=50.0)) == "eager"
    assert models.attention_implementation(LlamaConfig()) == "sdpa"
    assert models.attention_implementation(Qwen2Config()) == "sdpa"


def test_gemma2_folder_runs_end_to_end_through_the_command_line(model_dirs, study_data_dir, tmp_path):
    out = tmp_path / "results"
    command = [
        sys.executable,
        "-m",
        "analysis",
        "extract",
        "--model",
        str(model_dirs["gemma2"]),
        "--template",
        "base",
        "--data",
        "aqua/none/correct",
        "--n-samples",
        "2",
        "--max-length",
        "512",  # room for both drawn AQuA instructions
        "--out",
        str(out),
        "--data-dir",
        str(study_data_dir),
        "--device",
        "cpu",
        "--threads",
        "1",
        "--no-progress",
    ]
    done = subprocess.run(
        command,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert done.returncode == 0, done.stderr
    assert "2 computed" in done.stdout
    frame = read_results(out)
    assert len(frame) == 2 * 4 * 4
    assert torch.isfinite(torch.tensor(frame[list(spectra.STATISTICS)].to_numpy())).all()


def test_gemma2_through_the_profile_extraction_records_its_facts(model_dirs, study_data_dir, tmp_path, monkeypatch):
    folder = str(model_dirs["gemma2"])
    monkeypatch.setitem(registry.PAPER_MODELS, folder, registry.ModelInfo("base", "tiny Gemma 2", 4))
    profile = profiles.Profile(
        name="paper-tiny",
        models=(folder,),
        conditions=("aqua/none/correct",),
        extraction=ExtractionSettings(n_samples=2, max_length=512, batch_size=8, token_budget=8192, device="cpu"),
    )
    results = tmp_path / "results"
    results.mkdir()
    log = runlog.RunLog.start(results, profile.as_dict(), "local", [])
    run = pipeline.RunContext(results, data_dir=study_data_dir, log=log, progress=False, say=lambda _: None)
    records = pipeline.extract_profile(profile, run)
    assert records[0]["computed"] == 2
    facts = runlog.read(results)[-1].models[folder]
    assert facts["attention"] == "eager"
    assert facts["revision"].startswith("local folder ")
    assert facts["chat_template_sha256"] == models.chat_template_sha256(char_tokenizer(CHAT_TEMPLATE))
    assert facts["transformers"] == runlog.package_versions(["transformers"])["transformers"]
    assert not math.isnan(read_results(results)["nuclear_norm"].iloc[0])


def gpt2(vocab: int = 64):
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(
        GPT2Config(vocab_size=vocab, n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=1, eos_token_id=2)
    )


def test_a_model_of_an_unsupported_architecture_is_one_line_naming_what_it_lacks():
    with pytest.raises(architectures.ArchitectureError) as refused:
        gradients.attention_projections(gpt2())
    message = str(refused.value)
    assert "\n" not in message and "'gpt2'" in message and "self_attn" in message and "attn.c_attn" in message


def test_an_unsupported_model_folder_is_refused_before_its_weights_load(tmp_path, study_data_dir, capsys):
    folder = tmp_path / "gpt2"
    tokenizer = char_tokenizer()
    gpt2(len(tokenizer)).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    with pytest.raises(architectures.ArchitectureError, match="model_type 'gpt2'.*no adapter"):
        models.load(str(folder), template="base", device="cpu")
    capsys.readouterr()
    code = cli.main(
        [
            "extract",
            "--model",
            str(folder),
            "--template",
            "base",
            "--device",
            "cpu",
            "--data",
            "aqua/none/correct",
            "--out",
            str(tmp_path / "r"),
            "--data-dir",
            str(study_data_dir),
        ]
    )
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(error) == 1 and "'gpt2'" in error[0] and "no adapter" in error[0]


def test_every_paper_model_names_an_adapter_and_its_original_parameters_round_trip():
    names = {adapter.name for adapter in architectures.ADAPTERS}
    for name, info in registry.PAPER_MODELS.items():
        assert info.architecture in names, name
        adapter = architectures.for_model_name(name)
        assert adapter.original_name(3, "k") == "model.layers.3.self_attn.k_proj.weight"
        assert adapter.original_key(adapter.original_name(3, "k")) == (3, "k")
    assert architectures.for_model_name("google/gemma-2-9b").attention == "eager"


@pytest.mark.parametrize("kind, cap", [("llama", None), ("gemma3", None), ("gemma3", 0.1)])
def test_the_output_logits_of_hidden_states_are_the_model_s_own(kind, cap):
    """The head evaluated at a few positions from the final hidden states gives the logits of the
    model's own forward pass, its final soft-capping included where the config has one (a cap of 0.1,
    below a random model's logits, so that it changes them)."""
    model = tiny_model(kind, layers=2)
    if cap is not None:
        model.config.final_logit_softcapping = cap
    ids = torch.tensor([[5, 17, 3, 60, 42, 9, 11]])
    with torch.no_grad():
        hidden = model.model(ids).last_hidden_state
        own = model(ids).logits
        ours = architectures.output_logits(model, hidden[:, [1, 4, 6]])
    assert torch.allclose(ours, own[:, [1, 4, 6]], rtol=1e-6, atol=1e-6)
    if cap is not None:
        assert own.abs().max() < cap and not torch.allclose(model.lm_head(hidden), own, atol=1e-3)
