"""The plain reference procedure: what it leaves behind and how its comparison counts differences."""

import math

import pytest
import torch
from conftest import tiny_model

from analysis.extract import plain, prompts, spectra

IDS, PROMPT_LENGTH = list(range(3, 40)), 12


def test_leaves_the_model_frozen_without_gradients():
    model = tiny_model("llama", layers=2)
    result = plain.reference_statistics(model, prompts.EncodedSample(IDS, PROMPT_LENGTH), keep_gradients=True)
    assert all(p.grad is None and not p.requires_grad for p in model.parameters())
    assert sorted(result.statistics) == sorted(result.gradients) and len(result.statistics) == 2 * 4
    assert result.gradients[(0, "q")].dtype == torch.float64


def test_statistics_are_those_of_the_materialised_gradient():
    model = tiny_model("gemma3", layers=2)
    result = plain.reference_statistics(model, IDS, PROMPT_LENGTH, keep_gradients=True)
    gradient = result.gradients[(1, "v")]
    assert result.statistics[(1, "v")]["frobenius"] == pytest.approx(gradient.norm().item(), rel=1e-12)
    assert result.statistics[(1, "v")]["nuclear_norm"] == pytest.approx(
        torch.linalg.matrix_norm(gradient, ord="nuc").item(), rel=1e-12
    )


def test_token_ids_need_a_prompt_length():
    with pytest.raises(ValueError, match="prompt_length"):
        plain.reference_statistics(tiny_model("llama", layers=1), IDS)


def test_without_svd_only_the_loss_is_returned():
    result = plain.reference_statistics(tiny_model("llama", layers=1), IDS, PROMPT_LENGTH, with_svd=False)
    assert result.statistics == {} and math.isfinite(result.loss)


def test_comparison_counts_each_difference_on_its_scale():
    result = plain.reference_statistics(tiny_model("llama", layers=2), IDS, PROMPT_LENGTH)
    rows = result.rows()
    assert list(rows.columns[:2]) == ["layer", "proj"] and set(spectra.STATISTICS) <= set(rows.columns)
    assert plain.largest_relative_difference(rows, result, with_loss=True) == 0.0

    shifted = rows.copy()
    shifted.loc[3, "effective_rank"] *= 1 + 1e-3
    assert plain.largest_relative_difference(shifted, result) == pytest.approx(1e-3, rel=1e-6)

    small = rows.copy()  # sigma_min is measured against sigma_max
    small.loc[0, "sigma_min"] += 1e-3 * rows.loc[0, "sigma_max"]
    assert plain.largest_relative_difference(small, result) == pytest.approx(1e-3, rel=1e-6)

    lossy = rows.copy()
    lossy["loss"] *= 1.01
    assert plain.largest_relative_difference(lossy, result) == 0.0
    assert plain.largest_relative_difference(lossy, result, with_loss=True) == pytest.approx(0.01, rel=1e-6)

    broken = rows.copy()
    broken.loc[5, "nuclear_norm"] = math.nan
    assert plain.largest_relative_difference(broken, result) == math.inf


def test_comparison_refuses_rows_of_another_model():
    result = plain.reference_statistics(tiny_model("llama", layers=2), IDS, PROMPT_LENGTH)
    with pytest.raises(ValueError, match="projections"):
        plain.largest_relative_difference(result.rows().iloc[:-1], result)


def test_rows_are_in_the_stores_order():
    rows = plain.reference_statistics(tiny_model("llama", layers=2), IDS, PROMPT_LENGTH).rows()
    assert list(zip(rows["layer"], rows["proj"])) == [(layer, proj) for layer in range(2) for proj in "qkvo"]
