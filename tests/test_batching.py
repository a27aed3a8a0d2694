"""GPU memory planning: a 9B model in float32 shrinks its batches; a small one keeps them."""

import pytest
from transformers import Gemma2Config, Qwen2Config

from analysis.extract import batching

GIB = 1024**3
GEMMA2_9B = Gemma2Config(
    vocab_size=256000,
    hidden_size=3584,
    intermediate_size=14336,
    num_hidden_layers=42,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=256,
)
QWEN2_1_5B = Qwen2Config(
    vocab_size=151936,
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
)


@pytest.mark.parametrize("device_gib", [80, 141])
def test_a_9b_model_in_float32_runs_fewer_than_8_samples_of_1024_tokens(device_gib):
    parameters = 9.24e9 * batching.FLOAT32
    plan = batching.plan_for(GEMMA2_9B, "eager", None, 1024, available=int(device_gib * GIB - parameters))
    assert not plan.fits(8, 1024)
    largest = plan.largest_batch(1024)
    assert 1 <= largest < 8
    assert plan.fits(largest, 1024) and (largest == 1 or not plan.fits(largest + 1, 1024))


def test_a_small_model_on_a_large_device_keeps_its_batches():
    parameters = 1.54e9 * batching.FLOAT32
    plan = batching.plan_for(QWEN2_1_5B, "sdpa", None, 1024, available=int(141 * GIB - parameters))
    assert plan.fits(8, 1024)


def test_eager_attention_costs_more_than_sdpa_and_grows_with_length():
    eager = batching.plan_for(GEMMA2_9B, "eager", None, 1024, available=100 * GIB)
    sdpa = batching.plan_for(GEMMA2_9B, "sdpa", None, 1024, available=100 * GIB)
    assert eager.batch_bytes(1, 1024) > sdpa.batch_bytes(1, 1024)
    assert eager.batch_bytes(1, 2048) > 2 * eager.batch_bytes(1, 1024)


def test_one_sample_always_fits_even_without_budget():
    plan = batching.plan_for(GEMMA2_9B, "eager", None, 1024, available=0)
    assert plan.budget_bytes == 0 and plan.fits(1, 1024) and not plan.fits(2, 16)
    assert plan.largest_batch(1024) == 1
