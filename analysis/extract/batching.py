"""GPU memory planning of batches: which batches of a model fit in the device's free memory.

A batch of B samples padded to T tokens keeps, until its statistics are computed, the
activations that autograd saves for the backward pass, the captured factors of every attention
projection, the logits of the positions that carry a loss and, with eager attention, B x heads x
T x T attention scores per layer. :func:`plan_for` estimates these from the model's config and
compares them with the memory the device reports free once the model is loaded, so that a 9B
model in float32 runs fewer samples per pass by itself instead of running out of memory. The
estimate errs high; what it misses is caught by the halving retry in ``analysis.extract.halving``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from analysis.extract import architectures, spectra

FLOAT32 = 4
FLOAT64 = 8
# Fraction of the free memory a batch may plan for: the allocator's fragmentation and the
# transient buffers of matrix products need the rest.
USABLE_FRACTION = 0.85
# Copies of the T x T attention scores per layer and head: eager attention keeps the soft-capped
# scores (tanh keeps its output) and the softmax for the backward pass, plus one for the
# gradients of the layer being differentiated; sdpa's fused kernels keep none, one is counted
# for its unfused fallback.
SCORE_COPIES = {"eager": 3, "sdpa": 1}
# Logits copies per loss position: the logits, the log-softmax and its gradient.
LOGIT_COPIES = 3


@dataclass(frozen=True)
class MemoryPlan:
    """How many bytes a batch may use and what one padded batch costs, on one device."""

    budget_bytes: float  # for the activations of one batch
    bytes_per_token: float  # activations, factors and logits per padded token position
    bytes_per_token_pair: float  # attention scores per (query, key) pair of one sample

    def batch_bytes(self, n_samples: int, longest: int) -> float:
        """Estimated peak bytes of one batch of ``n_samples`` padded to ``longest`` tokens."""
        return n_samples * (longest * self.bytes_per_token + longest * longest * self.bytes_per_token_pair)

    def fits(self, n_samples: int, longest: int) -> bool:
        """Whether such a batch fits; a single sample always does (if not, the retry reports it)."""
        return n_samples <= 1 or self.batch_bytes(n_samples, longest) <= self.budget_bytes

    def largest_batch(self, longest: int) -> int:
        """How many samples of ``longest`` tokens fit in one batch (at least one)."""
        per_sample = self.batch_bytes(1, longest)
        return max(1, int(self.budget_bytes // per_sample)) if per_sample > 0 else 1


def _dimensions(config) -> dict[str, int]:
    """Hidden, intermediate, query, key/value and vocabulary widths and the layer count of a config."""
    config = getattr(config, "text_config", None) or config
    names = architectures.for_config(config).config_fields  # the field names of its family

    def read(field: str, default=None):
        return getattr(config, names[field], None) or default

    hidden = int(read("hidden"))
    heads = int(read("heads"))
    head_dim = int(read("head_dim", hidden // heads))
    kv_heads = int(read("kv_heads", heads))
    return {
        "layers": int(read("layers")),
        "hidden": hidden,
        "intermediate": int(read("intermediate", 4 * hidden)),
        "heads": heads,
        "query": heads * head_dim,
        "key_value": kv_heads * head_dim,
        "vocab": int(read("vocab")),
    }


def activation_bytes_per_token(config) -> float:
    """Bytes kept per token position through a forward and backward pass (all layers, logits).

    The parameters are frozen, so autograd keeps no input of a linear layer for a weight
    gradient. Per layer: the inputs of the norms and the captured projection inputs (about 5
    hidden-wide vectors), Q, K and V after rotary embedding, three intermediate-wide MLP tensors
    (the gate before and after its activation, the up projection), the captured output gradients
    of Q, K, V and O, and one hidden-wide gradient in flight. Plus the logits of a loss position.
    """
    d = _dimensions(config)
    per_layer = 6 * d["hidden"] + 3 * d["query"] + 4 * d["key_value"] + 3 * d["intermediate"]
    return FLOAT32 * (d["layers"] * per_layer + LOGIT_COPIES * d["vocab"])


def score_bytes_per_token_pair(config, attention: str) -> float:
    """Bytes of attention scores per (query, key) pair of a sample, over all layers and heads."""
    d = _dimensions(config)
    return FLOAT32 * SCORE_COPIES.get(attention, SCORE_COPIES["eager"]) * d["layers"] * d["heads"]


def statistics_bytes(config, n_tokens: int) -> float:
    """Bytes the statistics of one sample of ``n_tokens`` need: float64 copies of its factors,
    T x T Gram matrices, and the dense gradients of the projections whose spectrum is taken
    from the gradient itself (when T is not small against the projection's shape)."""
    d = _dimensions(config)
    shapes = {
        "q": (d["query"], d["hidden"]),
        "k": (d["key_value"], d["hidden"]),
        "v": (d["key_value"], d["hidden"]),
        "o": (d["hidden"], d["query"]),
    }
    factors = n_tokens * (2 * d["hidden"] + 2 * d["query"] + 2 * d["key_value"])
    grams = 12 * n_tokens * n_tokens
    dense = sum(m * n for m, n in shapes.values() if not spectra.prefers_factored_spectrum(n_tokens, (m, n)))
    return FLOAT64 * d["layers"] * (factors + grams + dense)


def free_bytes(device: torch.device) -> int:
    """Memory free for new tensors on a CUDA device, counting what torch's allocator holds unused."""
    free, _ = torch.cuda.mem_get_info(device)
    held_unused = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int(free + max(0, held_unused))


def plan_for(
    config, attention: str, device: torch.device, longest_sample: int, *, available: int | None = None
) -> MemoryPlan:
    """The memory plan of a loaded model on a CUDA device (``available``: free bytes, measured if None).

    The model's parameters are already on the device, so the free memory measured excludes
    them; the statistics of the longest sample are set aside before batches are planned.
    """
    if available is None:
        available = free_bytes(device)
    budget = USABLE_FRACTION * available - statistics_bytes(config, longest_sample)
    return MemoryPlan(
        max(0.0, budget), activation_bytes_per_token(config), score_bytes_per_token_pair(config, attention)
    )
