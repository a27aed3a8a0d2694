"""Per-sample statistics from one batched pass equal the plain procedure, sample by sample."""

import pytest
import torch
from conftest import tiny_model

from analysis import gradients, spectra


def plain_procedure(model, ids: list[int], prompt_length: int):
    """Batch size 1, Hugging Face loss with -100 labels, ``param.grad`` and a full SVD."""
    projections = gradients.attention_projections(model)
    for module in projections.values():
        module.weight.requires_grad_(True)
        module.weight.grad = None
    input_ids = torch.tensor([ids])
    labels = input_ids.clone()
    labels[0, :prompt_length] = -100
    loss = model(input_ids, labels=labels).loss
    loss.backward()
    stats = {}
    for key, module in projections.items():
        s = torch.linalg.svd(module.weight.grad.double())[1]
        stats[key] = {name: value.item() for name, value in spectra.statistics_from_singular_values(s).items()}
        stats[key]["grad"] = module.weight.grad.double().clone()
    for module in projections.values():
        module.weight.requires_grad_(False)
        module.weight.grad = None
    return loss.item(), stats


SAMPLES = [(list(range(5, 12)), 3), (list(range(3, 43)), 10), (list(range(2, 90)), 60), (list(range(7, 30)), 22)]


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_batch_of_four_mixed_lengths_equals_plain_procedure(kind):
    model = tiny_model(kind, layers=3)
    batch = gradients.make_batch([s for s, _ in SAMPLES], [p for _, p in SAMPLES], pad_id=0, device=torch.device("cpu"))
    results = gradients.batch_statistics(model, batch)
    worst = 0.0
    for result, (ids, prompt_length) in zip(results, SAMPLES):
        loss, reference = plain_procedure(model, ids, prompt_length)
        assert result.failure is None
        assert result.loss == pytest.approx(loss, rel=1e-5)
        for (layer, proj), expected in reference.items():
            column = gradients.PROJECTIONS.index(proj)
            for name in spectra.STATISTICS:
                scale = expected["sigma_max"] if name == "sigma_min" else expected[name]
                error = abs(result.values[name][layer, column].item() - expected[name]) / abs(scale)
                worst = max(worst, error)
    assert worst < 1e-4


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_batch_equals_batch_size_one(kind):
    model = tiny_model(kind, layers=3)
    together = gradients.batch_statistics(
        model, gradients.make_batch([s for s, _ in SAMPLES], [p for _, p in SAMPLES], 0, torch.device("cpu"))
    )
    for result, (ids, prompt_length) in zip(together, SAMPLES):
        alone = gradients.batch_statistics(model, gradients.make_batch([ids], [prompt_length], 0, torch.device("cpu")))[0]
        for name, value in alone.values.items():
            assert torch.allclose(result.values[name], value, rtol=1e-4, atol=1e-9, equal_nan=True), name


def test_similarities_match_dense_gradients():
    model = tiny_model("llama", layers=3)
    ids, prompt_length = SAMPLES[2]
    result = gradients.batch_statistics(model, gradients.make_batch([ids], [prompt_length], 0, torch.device("cpu")))[0]
    _, reference = plain_procedure(model, ids, prompt_length)

    def cos(a, b):
        return (a * b).sum() / (a.norm() * b.norm())

    q, o = reference[(1, "q")]["grad"], reference[(1, "o")]["grad"]
    k, v = reference[(1, "k")]["grad"], reference[(1, "v")]["grad"]
    assert result.values["cos_same_layer"][1, 0].item() == pytest.approx(cos(q, o).item(), rel=1e-4)
    assert result.values["cos_same_layer"][1, 1].item() == pytest.approx(cos(k, v).item(), rel=1e-4)
    k0, k1 = reference[(0, "k")]["grad"], reference[(1, "k")]["grad"]
    assert result.values["cos_next_layer"][0, 1].item() == pytest.approx(cos(k0, k1).item(), rel=1e-4)
    assert torch.isnan(result.values["cos_next_layer"][-1]).all()


def test_hooks_are_removed_after_capture():
    model = tiny_model("llama", layers=2)
    projections = gradients.attention_projections(model)
    with gradients.capture_factors(projections):
        assert all(len(m._forward_hooks) == 1 for m in projections.values())
    assert all(len(m._forward_hooks) == 0 for m in projections.values())


def test_parameters_stay_frozen_and_receive_no_gradient():
    model = tiny_model("gemma3", layers=2)
    ids, prompt_length = SAMPLES[1]
    gradients.batch_statistics(model, gradients.make_batch([ids], [prompt_length], 0, torch.device("cpu")))
    assert all(p.grad is None and not p.requires_grad for p in model.parameters())


def test_model_without_attention_projections_is_refused():
    with pytest.raises(ValueError, match="self_attn"):
        gradients.attention_projections(torch.nn.Sequential(torch.nn.Linear(2, 2)))
