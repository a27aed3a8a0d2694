"""Shared fixtures: tiny random models saved as local model folders, and the data directory."""

from __future__ import annotations

import os
import string
from pathlib import Path

import pytest
import torch

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "layer_gradient"

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def char_tokenizer(chat_template: str | None = CHAT_TEMPLATE, bos: bool = True):
    """A character-level fast tokenizer: small, deterministic and needs no download."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
    chars = list(string.printable) + ["’", "é", "°"]
    vocab = {token: i for i, token in enumerate(specials + sorted(set(chars)))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    if bos:
        backend.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"
    )
    if chat_template:
        tokenizer.chat_template = chat_template
    return tokenizer


def tiny_model(kind: str, vocab_size: int = 110, layers: int = 3):
    """A tiny random Llama-style or Gemma3-style causal LM in float32."""
    torch.manual_seed(0)
    if kind == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(
            vocab_size=vocab_size,
            hidden_size=48,
            intermediate_size=64,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
        )
        model = LlamaForCausalLM(config)
    elif kind == "gemma3":
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig

        config = Gemma3TextConfig(
            vocab_size=vocab_size,
            hidden_size=48,
            intermediate_size=64,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=16,
            max_position_embeddings=4096,
            sliding_window=16,
        )
        model = Gemma3ForCausalLM(config)
    else:
        raise ValueError(kind)
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """Factory: a saved tiny model folder (safetensors + tokenizer) for an architecture."""
    made: dict[tuple, Path] = {}

    def make(kind: str = "llama", chat_template: str | None = CHAT_TEMPLATE, layers: int = 4) -> Path:
        key = (kind, chat_template, layers)
        if key not in made:
            folder = tmp_path_factory.mktemp(f"tiny-{kind}")
            tokenizer = char_tokenizer(chat_template)
            tiny_model(kind, vocab_size=len(tokenizer), layers=layers).save_pretrained(folder, safe_serialization=True)
            tokenizer.save_pretrained(folder)
            made[key] = folder
        return made[key]

    return make


@pytest.fixture(scope="session")
def study_data_dir() -> Path:
    """The study's data: $LAYER_GRADIENT_DATA, else the shared mirror beside the project."""
    candidate = Path(os.environ.get("LAYER_GRADIENT_DATA") or SHARED_DATA)
    if not (candidate / "cot_500").is_dir():
        pytest.skip(f"study data not found at {candidate}; set LAYER_GRADIENT_DATA")
    return candidate


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory, study_data_dir):
    """The quick profile run end to end once per session (extraction, notebooks, book build) in a
    temporary folder; the pipeline and the browser tests read the same run."""
    from analysis.study import pipeline

    root = tmp_path_factory.mktemp("quick-run")
    return pipeline.run_profile(
        "quick",
        results_dir=root / "results",
        data_dir=study_data_dir,
        book_root=root / "site",
        progress=False,
        say=lambda _: None,
    )
