"""The original study's plain procedure, the reference the extraction is checked against.

One sample at a time (batch size 1): the Hugging Face causal-LM loss with the prompt's labels set
to -100 (the mean over the response tokens), ``loss.backward()``, the materialised ``param.grad``
of every ``model.layers.{i}.self_attn.{q,k,v,o}_proj.weight``, and a full ``torch.linalg.svd`` of
each gradient, whose singular values give the statistics defined in ``book/methods.md``
(:func:`analysis.extract.spectra.statistics_from_singular_values`). It is slow by design: the tests and
the benchmark compare :mod:`analysis.extract.gradients` with it::

    expected = reference_statistics(model, encoded)     # an EncodedSample, or ids and a prompt length
    expected.statistics[(0, "q")]["nuclear_norm"]
    largest_relative_difference(rows_of_that_sample, expected)   # rows as the results store holds them
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn

from analysis.core.vocabulary import PROJECTIONS
from analysis.extract import gradients, prompts, spectra

LayerKey = tuple[int, str]  # (layer, projection)


@dataclass
class ReferenceSample:
    """The plain procedure's result for one sample."""

    loss: float
    statistics: dict[LayerKey, dict[str, float]]  # (layer, proj) -> statistic -> value; empty without SVD
    gradients: dict[LayerKey, torch.Tensor] | None = None  # materialised float64 gradients, if kept

    def rows(self) -> pd.DataFrame:
        """One row per (layer, projection) with ``loss`` and the statistics, as the store holds them."""
        keys = sorted(self.statistics, key=lambda key: (key[0], PROJECTIONS.index(key[1])))
        return pd.DataFrame(
            [
                {"layer": layer, "proj": proj, **self.statistics[(layer, proj)], "loss": self.loss}
                for layer, proj in keys
            ]
        )


@contextmanager
def trainable_projections(model: nn.Module) -> Iterator[dict[LayerKey, nn.Linear]]:
    """The attention projections with weights requiring grad; frozen and gradient-free again on exit."""
    projections = gradients.attention_projections(model)
    try:
        for module in projections.values():
            module.weight.requires_grad_(True)
            module.weight.grad = None
        yield projections
    finally:
        for module in projections.values():
            module.weight.requires_grad_(False)
            module.weight.grad = None


def gradient_statistics(gradient: torch.Tensor, float64: bool = True) -> dict[str, float]:
    """The study's statistics of one materialised gradient from a full SVD (float64 by default)."""
    singular_values = torch.linalg.svd(gradient.double() if float64 else gradient)[1]
    return {name: value.item() for name, value in spectra.statistics_from_singular_values(singular_values).items()}


def reference_statistics(
    model: nn.Module,
    sample: prompts.EncodedSample | Sequence[int],
    prompt_length: int | None = None,
    *,
    with_svd: bool = True,
    float64: bool = True,
    keep_gradients: bool = False,
) -> ReferenceSample:
    """The plain procedure on one sample: loss, and the statistics of every projection's ``param.grad``.

    ``sample`` is an :class:`analysis.extract.prompts.EncodedSample`, or token ids with ``prompt_length``.
    ``float64=False`` takes the SVD in the gradient's own dtype, as the original study did;
    ``with_svd=False`` stops after the backward pass (no statistics); ``keep_gradients`` also
    returns float64 copies of the gradients.
    """
    if isinstance(sample, prompts.EncodedSample):
        encoded = sample
    elif prompt_length is None:
        raise ValueError("token ids need a prompt_length")
    else:
        encoded = prompts.EncodedSample(list(sample), prompt_length)
    device = model.get_input_embeddings().weight.device
    with trainable_projections(model) as projections:
        input_ids = torch.tensor([encoded.input_ids], device=device)
        labels = torch.full_like(input_ids, -100)  # the label of every token that is not scored
        scored = list(encoded.scored_tokens())
        labels[0, scored] = input_ids[0, scored]
        loss = model(input_ids, labels=labels).loss
        loss.backward()
        statistics = {}
        if with_svd:
            statistics = {key: gradient_statistics(module.weight.grad, float64) for key, module in projections.items()}
        kept = None
        if keep_gradients:
            kept = {key: module.weight.grad.double().clone() for key, module in projections.items()}
    return ReferenceSample(loss.item(), statistics, kept)


def scaled_difference(value: float, expected: float, scale: float) -> float:
    """``|value - expected| / |scale|`` (the absolute difference where the scale is zero).

    Two NaNs agree; one NaN against a number is an infinite difference.
    """
    if math.isnan(value) or math.isnan(expected):
        return 0.0 if math.isnan(value) and math.isnan(expected) else math.inf
    difference = abs(value - expected)
    return difference / abs(scale) if scale else difference


def largest_relative_difference(rows: pd.DataFrame, reference: ReferenceSample, with_loss: bool = False) -> float:
    """Largest relative difference of one sample's stored rows to the reference statistics.

    ``rows`` holds one row per (layer, projection) with the columns ``layer``, ``proj`` and the
    statistics; they must cover exactly the reference's projections. Each statistic is compared
    on its own scale except ``sigma_min``, compared on the scale of ``sigma_max``: a singular value
    is only defined to within rounding times the largest one. ``with_loss`` also compares the
    ``loss`` column.
    """
    keys = list(zip(rows["layer"].tolist(), rows["proj"].tolist()))
    if sorted(keys) != sorted(reference.statistics):
        raise ValueError(f"rows cover {len(keys)} projections, the reference {len(reference.statistics)}")
    worst = 0.0
    if with_loss:
        worst = max(scaled_difference(float(value), reference.loss, reference.loss) for value in rows["loss"])
    for key, row in zip(keys, rows.itertuples()):
        expected = reference.statistics[key]
        for name in spectra.STATISTICS:
            scale = expected["sigma_max"] if name == "sigma_min" else expected[name]
            worst = max(worst, scaled_difference(float(getattr(row, name)), expected[name], scale))
    return worst
