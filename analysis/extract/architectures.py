"""One adapter per architecture family: what the extraction needs to know about a model's code.

As TransformerLens keeps one adapter per architecture, each family the study supports is declared
once here: the ``model_type`` values of its configs, the names of its attention projection modules,
the attention implementation that computes what it was trained with, whether its chat template takes
a system message, and what the original study's released files call its parameters. The loader
(``analysis.extract.models``), the gradient hooks (``analysis.extract.gradients``), the GPU memory
plan (``analysis.extract.batching``) and the importer (``analysis.extract.original_import``) read it. A model
of another family is refused with one line naming what it lacks. Torch-free: the importer needs no torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analysis.core import registry
from analysis.core.errors import StudyError
from analysis.core.vocabulary import PROJECTIONS

SDPA = "sdpa"  # PyTorch's fused attention: the same attention as eager, except soft-capping
EAGER = "eager"


class ArchitectureError(StudyError, ValueError):
    """A model of an architecture the study has no adapter for, or that lacks what its adapter names."""


@dataclass(frozen=True)
class Architecture:
    """What the study needs to know about one architecture family."""

    name: str
    model_types: tuple[str, ...]  # config.model_type values of the family
    # module names of the attention projections: groups (layer index, projection letter q/k/v/o)
    projections: str = r"(?:^|\.)layers\.(\d+)\.self_attn\.([qkvo])_proj$"
    projection_names: str = "layers.<i>.self_attn.<q|k|v|o>_proj"  # the same, for messages
    attention: str = SDPA  # the attention implementation it is loaded with
    system_message: bool = True  # whether its chat template takes a system message
    # what the original study's released files call the weight of a (layer, projection)
    original_parameter: str = "model.layers.{layer}.self_attn.{proj}_proj.weight"
    # the config's fields for its widths (analysis.extract.batching)
    config_fields: dict = field(
        compare=False,
        default_factory=lambda: {
            "layers": "num_hidden_layers",
            "hidden": "hidden_size",
            "heads": "num_attention_heads",
            "head_dim": "head_dim",
            "kv_heads": "num_key_value_heads",
            "intermediate": "intermediate_size",
            "vocab": "vocab_size",
        },
    )

    def attention_for(self, config) -> str:
        """The attention implementation for this config: eager where the family needs it, or where
        the config soft-caps its attention logits (which sdpa does not compute)."""
        if getattr(config, "attn_logit_softcapping", None) is not None:
            return EAGER
        return self.attention

    def projection_key(self, module_name: str) -> tuple[int, str] | None:
        """(layer, projection) of an attention projection module's name, else None."""
        match = re.search(self.projections, module_name)
        return (int(match.group(1)), match.group(2)) if match else None

    def original_name(self, layer: int | str, proj: str) -> str:
        """The original study's name of a (layer, projection)'s weight (or a pattern of them, e.g. ``"<i>"``)."""
        return self.original_parameter.format(layer=layer, proj=proj)

    def original_key(self, parameter: str) -> tuple[int, str] | None:
        """(layer, projection) of one of the original study's parameter names, else None."""
        pattern = re.escape(self.original_parameter).replace(r"\{layer\}", r"(\d+)").replace(r"\{proj\}", "([qkvo])")
        match = re.fullmatch(pattern, parameter)
        return (int(match.group(1)), match.group(2)) if match else None


ADAPTERS: tuple[Architecture, ...] = (
    Architecture("llama", ("llama",)),  # Llama 2, Llama 3.1, SmolLM2
    Architecture("qwen2", ("qwen2",)),
    # transformers refuses sdpa for Gemma 2, and its attention soft-caps its logits
    Architecture("gemma2", ("gemma2",), attention=EAGER, system_message=False),
    Architecture("gemma3", ("gemma3_text", "gemma3"), system_message=False),
)
DEFAULT = ADAPTERS[0]
ADD_ONE = "; a new family is one adapter in analysis/extract/architectures.py"  # the naming the original study's files use for every paper model


def supported_model_types() -> tuple[str, ...]:
    return tuple(t for adapter in ADAPTERS for t in adapter.model_types)


def model_type_of(config) -> str:
    """A config's model type (of its text model, for multimodal configs)."""
    return getattr(config, "model_type", "") or ""


def for_config(config, what: str = "model") -> Architecture:
    """The adapter of a model's config; ArchitectureError naming the model type if there is none."""
    model_type = model_type_of(config)
    for adapter in ADAPTERS:
        if model_type in adapter.model_types:
            return adapter
    raise ArchitectureError(
        f"{what} has model_type {model_type or 'unknown'!r}, an architecture the study has no adapter for "
        f"(supported: {', '.join(supported_model_types())}{ADD_ONE})"
    )


def for_model(model) -> Architecture:
    """The adapter of a loaded model, checked against its modules (see :func:`projection_modules`)."""
    return for_config(getattr(model, "config", None), type(model).__name__)


def attention_modules(model, limit: int = 4) -> list[str]:
    """Names of the first leaf modules under a module whose name says attention (for messages)."""
    found = []
    for name, module in model.named_modules():
        if "attn" in name.lower() and not list(module.children()):
            found.append(name)
            if len(found) == limit:
                break
    return found


def _lacking(model, adapter: Architecture) -> str:
    """What a model lacks: the projection names its adapter looks for, and the attention modules it has."""
    seen = attention_modules(model)
    return f"no attention projections named {adapter.projection_names}" + (
        f" (its attention modules: {', '.join(seen)})" if seen else ""
    )


def projection_modules(model) -> dict[tuple[int, str], object]:
    """The model's attention projection modules keyed by (layer, projection), as its adapter names them.

    ArchitectureError, in one line, for a model of no supported family, or one without (or with only
    some of) the projections its adapter names. A model without a config (a bare module) is read
    with the default adapter's names.
    """
    name = type(model).__name__
    try:
        adapter = for_model(model) if getattr(model, "config", None) is not None else DEFAULT
    except ArchitectureError as error:
        raise ArchitectureError(f"{error}; it has {_lacking(model, DEFAULT)}") from None
    found = {}
    for module_name, module in model.named_modules():
        key = adapter.projection_key(module_name)
        weight = getattr(module, "weight", None)
        if key is not None and weight is not None and weight.dim() == 2:
            found[key] = module
    if not found:
        raise ArchitectureError(
            f"{name} has {_lacking(model, adapter)}; the study analyses {adapter.name}-style attention"
        )
    n_layers = 1 + max(layer for layer, _ in found)
    missing = [f"layer {i} {p}" for i in range(n_layers) for p in PROJECTIONS if (i, p) not in found]
    if missing:
        raise ArchitectureError(f"{name} lacks the attention projections {', '.join(missing[:4])}")
    return found


def output_logits(model, hidden):
    """The model's logits of final hidden states (..., hidden), as its causal-LM forward computes them
    from its output embedding: the soft-capping of its config's ``final_logit_softcapping`` after it,
    where it has one (Gemma 2), for any family (``analysis.extract.gradients`` evaluates the head at a
    few positions this way)."""
    logits = model.get_output_embeddings()(hidden)
    config = getattr(model, "config", None)
    cap = getattr(config, "final_logit_softcapping", None) or getattr(
        getattr(config, "text_config", None), "final_logit_softcapping", None
    )
    return logits if not cap else (logits / cap).tanh() * cap


def for_model_name(name: str) -> Architecture:
    """The adapter of a registry model by its declared architecture (the default one if it declares none)."""
    info = registry.known_model(name)
    declared = info.architecture if info is not None else None
    return next((a for a in ADAPTERS if a.name == declared), DEFAULT)
