"""What the parts of ``benchmarks/gpu_check.py`` share: model shapes built from transformers configs
with random weights, samples built from the study's data, the project's extraction and the plain
procedure on them, how their rows are compared, and how time and CUDA memory are measured.

Nothing here needs a network, a hub or a GGUF file. Samples are token ids of the study's text: the
UTF-8 bytes of the base template's prompt and the response (no tokenizer is available offline, and
with random weights only the token count matters to speed and memory), or seeded random ids when
the data are absent, which the results then say.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pandas as pd
import torch

EXACTNESS_BAR = 1e-4  # the project's bar: any fast path equals the plain procedure within this, relative
PAD, BOS, BYTE_OFFSET = 0, 1, 3  # token ids: padding, start, and byte b as b + BYTE_OFFSET
DATA_SPEC = "aqua/detailed/correct"  # long responses: most of its samples reach 1024 bytes
COSINES = ("cos_same_layer", "cos_next_layer")  # compared absolutely: a cosine's scale is 1

# The models of the speed, memory and training parts: the shapes of the paper's Qwen2-1.5B and
# Gemma-2-2B (from their published configs), random weights.
SHAPES: dict[str, tuple[str, dict]] = {
    "qwen2-1.5b": (
        "qwen2",
        {
            "vocab_size": 151936,
            "hidden_size": 1536,
            "intermediate_size": 8960,
            "num_hidden_layers": 28,
            "num_attention_heads": 12,
            "num_key_value_heads": 2,
            "max_position_embeddings": 32768,
            "rope_theta": 1e6,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": True,
        },
    ),
    "gemma2-2b": (
        "gemma2",
        {
            "vocab_size": 256000,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 26,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "query_pre_attn_scalar": 256,
            "attn_logit_softcapping": 50.0,
            "final_logit_softcapping": 30.0,
            "sliding_window": 4096,
            "max_position_embeddings": 8192,
            "tie_word_embeddings": True,
        },
    ),
}
_TINY = {
    "vocab_size": 300,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 4096,
}
# Tiny models of the three families: Gemma 2 with soft-capping thresholds a random model's logits
# reach, a query scaling that is not head_dim and a sliding window shorter than the samples.
TINY_SHAPES: dict[str, tuple[str, dict]] = {
    "tiny-gemma2": (
        "gemma2",
        {
            **_TINY,
            "query_pre_attn_scalar": 12,
            "attn_logit_softcapping": 1.0,
            "final_logit_softcapping": 2.0,
            "sliding_window": 8,
            "initializer_range": 0.2,
        },
    ),
    "tiny-qwen2": ("qwen2", {**_TINY, "rope_theta": 1e6}),
    "tiny-llama": ("llama", dict(_TINY)),
}
# Which tiny model stands in for a full shape in the CPU mode (--tiny).
TINY_STAND_IN = {"qwen2-1.5b": "tiny-qwen2", "gemma2-2b": "tiny-gemma2"}


class ByteTokenizer:
    """What the runner asks of a tokenizer (the padding id) for models whose ids are bytes."""

    pad_token_id = PAD
    eos_token_id = None
    chat_template = None


def build_model(shape: str, device: torch.device, seed: int = 0):
    """A frozen float32 random-weight model of ``shape`` on ``device`` as a ``models.LoadedModel``,
    initialised there by the architecture's own ``from_config`` under ``seed``."""
    from transformers import CONFIG_MAPPING, AutoModelForCausalLM

    from analysis.extract import architectures, models

    family, fields = {**SHAPES, **TINY_SHAPES}[shape]
    config = CONFIG_MAPPING[family](**fields)
    attention = models.attention_implementation(config)
    started = time.perf_counter()
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, attn_implementation=attention, dtype=torch.float32)
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return models.LoadedModel(
        name=f"{shape} (random weights, seed {seed})",
        model=model,
        tokenizer=ByteTokenizer(),
        template="base",
        device=torch.device(device),
        n_layers=int(config.num_hidden_layers),
        system_message=architectures.for_config(config).system_message,
        load_seconds=time.perf_counter() - started,
        attention=attention,
        revision=f"random initialisation, seed {seed}",
    )


def moved(loaded, device: torch.device):
    """A copy of a loaded model on another device (the same weights)."""
    from dataclasses import replace

    return replace(loaded, model=copy.deepcopy(loaded.model).to(device), device=torch.device(device))


def parameter_count(loaded) -> int:
    return sum(p.numel() for p in loaded.model.parameters())


def study_texts(data_dir, spec: str = DATA_SPEC) -> tuple[list[tuple[str, str]], str]:
    """(prompt, response) texts of a study condition under the base template, and a note saying
    where they come from; no texts (and the reason) when the data are absent."""
    from analysis import data
    from analysis.data.data_errors import DataError
    from analysis.data.records import load_records
    from analysis.extract import prompts

    try:
        resolved = data.resolve(spec, data_dir)
        records = load_records(resolved.path)
    except (DataError, OSError) as error:
        return [], f"synthesized token ids (seeded): the study's data are absent ({str(error).splitlines()[0]})"
    texts = [
        (prompts.prompt_text(None, prompts.instruction_text(r.instruction, r.input), "base"), r.output) for r in records
    ]
    checked = {True: "sha256 as published", False: "sha256 differs from the published one", None: "no published sha256"}
    return texts, (
        f"the study's data: {spec} ({resolved.path.name}, {checked[resolved.sha256_ok]}), prompt and response "
        "as UTF-8 bytes under the base template, cut to each sample's length"
    )


def prepared_samples(texts: list[tuple[str, str]], lengths: list[int], seed: int = 0) -> list:
    """One ``preparation.PreparedSample`` of exactly each length: the next text long enough for the
    longest, as byte ids (prompt: its own bytes, at most half the sample), else seeded random ids."""
    from analysis.extract import preparation, prompts

    usable = [t for t in texts if len((t[0] + t[1]).encode()) + 1 >= max(lengths)]
    generator = torch.Generator().manual_seed(seed)
    prepared = []
    for index, length in enumerate(lengths):
        if usable:
            prompt, response = usable[index % len(usable)]
            ids = [BOS] + [byte + BYTE_OFFSET for byte in (prompt + response).encode()[: length - 1]]
            prompt_length = min(1 + len(prompt.encode()), length // 2)
        else:
            ids = [BOS] + torch.randint(BYTE_OFFSET, 256 + BYTE_OFFSET, (length - 1,), generator=generator).tolist()
            prompt_length = length // 4
        prepared.append(preparation.PreparedSample(index, prompts.EncodedSample(ids, prompt_length)))
    return prepared


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(function: Callable, device: torch.device):
    """(result, seconds) of ``function()``, the device's queued work included."""
    synchronize(device)
    started = time.perf_counter()
    result = function()
    synchronize(device)
    return result, time.perf_counter() - started


def planned_batches(loaded, prepared: list, settings) -> list[int]:
    """The sizes of the batches the runner forms for these samples under ``settings`` (with the
    device's memory plan on a GPU), as ``runner.compute_prepared`` forms them."""
    from analysis.extract import preparation, runner

    plan = runner.memory_plan(loaded, prepared)
    batch_size = preparation.batch_size_for(loaded.device, settings.batch_size)
    batches = preparation.length_sorted_batches(
        prepared, batch_size, settings.token_budget, fits=plan.fits if plan else None
    )
    return [len(batch) for batch in batches]


def project_rows(loaded, prepared: list, settings) -> tuple[pd.DataFrame, list[dict]]:
    """The project's extraction of the samples (``runner.compute_prepared``): rows and skip records."""
    from analysis.extract import runner

    identity = {"model": loaded.name, "n_layers": loaded.n_layers}
    frames, skipped = [], []
    for rows, failed in runner.compute_prepared(loaded, identity, prepared, settings):
        if rows is not None:
            frames.append(rows)
        skipped.extend(failed)
    synchronize(loaded.device)
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), skipped


def paths_taken(loaded, prepared: list) -> dict[str, int]:
    """How many (sample, projection) spectra come from the T x T factors and how many from the
    formed gradient (``spectra.prefers_factored_spectrum``), so that a check says which it covered."""
    from analysis.extract import gradients, spectra

    shapes = {
        proj: tuple(module.weight.shape)
        for (layer, proj), module in gradients.attention_projections(loaded.model).items()
        if layer == 0
    }
    counts = {"factored": 0, "dense": 0}
    for sample in prepared:
        for shape in shapes.values():
            factored = spectra.prefers_factored_spectrum(len(sample.encoded.input_ids) - 1, shape)
            counts["factored" if factored else "dense"] += 1
    return counts


def difference_to_plain(rows: pd.DataFrame, references: dict) -> float:
    """Largest relative difference of the rows to the plain procedure's statistics and loss, over
    the samples of ``references`` (``plain.largest_relative_difference``, the project's measure)."""
    from analysis.extract import plain

    if rows.empty:
        return float("inf")
    return max(
        plain.largest_relative_difference(rows[rows["sample_index"] == index], reference, with_loss=True)
        for index, reference in references.items()
    )


def rows_difference(rows: pd.DataFrame, expected: pd.DataFrame) -> dict[str, float]:
    """Largest difference between two extractions of the same samples: relative over the
    statistics of singular values and the loss (``sigma_min`` on the scale of ``sigma_max``, as
    ``plain.largest_relative_difference`` compares it), absolute over the cosines; infinite when
    they hold different rows."""
    from analysis.extract import plain, spectra

    keys = ["sample_index", "layer", "proj"]
    if rows.empty or len(rows) != len(expected):
        return {"relative": float("inf"), "cosine_absolute": float("inf")}
    merged = rows.merge(expected, on=keys, suffixes=("", "_expected"))
    if len(merged) != len(rows):
        return {"relative": float("inf"), "cosine_absolute": float("inf")}
    worst = {"relative": 0.0, "cosine_absolute": 0.0}
    for name in (*spectra.STATISTICS, "loss", *COSINES):
        if name not in rows or name not in expected:
            continue
        scale = "sigma_max_expected" if name == "sigma_min" else f"{name}_expected"
        kind = "cosine_absolute" if name in COSINES else "relative"
        for value, reference, size in zip(merged[name], merged[f"{name}_expected"], merged[scale]):
            size = 1.0 if kind == "cosine_absolute" else size
            worst[kind] = max(worst[kind], plain.scaled_difference(float(value), float(reference), float(size)))
    return worst


def rows_identical(rows: pd.DataFrame, expected: pd.DataFrame) -> bool:
    """Whether two extractions hold bit-for-bit the same numbers for the same rows."""
    keys = ["sample_index", "layer", "proj"]
    if rows.empty or len(rows) != len(expected):
        return False
    left = rows.sort_values(keys).reset_index(drop=True)
    right = expected.sort_values(keys).reset_index(drop=True)[left.columns]
    numeric = left.select_dtypes("number").columns
    return bool(left[numeric].equals(right[numeric]))


@contextmanager
def cuda_memory(device: torch.device) -> Iterator[dict]:
    """Peak CUDA memory of the block (``torch.cuda.max_memory_allocated``) above what was allocated
    at its start, and the allocator's out-of-memory events in it; an empty dict on a CPU."""
    measured: dict = {}
    if device.type != "cuda":
        yield measured
        return
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    start = torch.cuda.memory_allocated(device)
    ooms = torch.cuda.memory_stats(device).get("num_ooms", 0)
    try:
        yield measured
    finally:
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device)
        measured.update(
            start_bytes=start,
            peak_bytes=peak,
            peak_above_start_bytes=peak - start,
            out_of_memory_events=torch.cuda.memory_stats(device).get("num_ooms", 0) - ooms,
        )


def release(device: torch.device) -> None:
    """Give freed memory back before the next part (models of a finished part are dropped by then)."""
    import gc

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def gib(value: float) -> float:
    return round(value / 2**30, 3)
