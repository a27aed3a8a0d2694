"""Per-sample statistics from one batched pass equal the plain procedure, sample by sample."""

import numpy as np
import pytest
import torch
from conftest import tiny_model

from analysis.extract import gradients, plain, preparation, prompts, runner, spectra

SAMPLES = [(list(range(5, 12)), 3), (list(range(3, 43)), 10), (list(range(2, 90)), 60), (list(range(7, 30)), 22)]


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_batch_of_four_mixed_lengths_equals_plain_procedure(kind):
    model = tiny_model(kind, layers=3)
    batch = gradients.make_batch([s for s, _ in SAMPLES], [p for _, p in SAMPLES], pad_id=0, device=torch.device("cpu"))
    results = gradients.batch_statistics(model, batch)
    worst = 0.0
    for result, (ids, prompt_length) in zip(results, SAMPLES):
        expected = plain.reference_statistics(model, ids, prompt_length)
        assert result.failure is None
        assert result.loss == pytest.approx(expected.loss, rel=1e-5)
        sample = preparation.PreparedSample(0, prompts.EncodedSample(ids, prompt_length))
        rows = runner.sample_rows(result, sample, {}, model.config.num_hidden_layers)
        worst = max(worst, plain.largest_relative_difference(rows, expected))
    assert worst < 1e-4


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_batch_equals_batch_size_one(kind):
    model = tiny_model(kind, layers=3)
    together = gradients.batch_statistics(
        model, gradients.make_batch([s for s, _ in SAMPLES], [p for _, p in SAMPLES], 0, torch.device("cpu"))
    )
    for result, (ids, prompt_length) in zip(together, SAMPLES):
        alone = gradients.batch_statistics(model, gradients.make_batch([ids], [prompt_length], 0, torch.device("cpu")))[
            0
        ]
        for name, value in alone.values.items():
            assert torch.allclose(result.values[name], value, rtol=1e-4, atol=1e-9, equal_nan=True), name


def test_similarities_match_dense_gradients():
    model = tiny_model("llama", layers=3)
    ids, prompt_length = SAMPLES[2]
    result = gradients.batch_statistics(model, gradients.make_batch([ids], [prompt_length], 0, torch.device("cpu")))[0]
    grads = plain.reference_statistics(model, ids, prompt_length, keep_gradients=True).gradients

    def cos(a, b):
        return (a * b).sum() / (a.norm() * b.norm())

    q, o = grads[(1, "q")], grads[(1, "o")]
    k, v = grads[(1, "k")], grads[(1, "v")]
    assert result.values["cos_same_layer"][1, 0].item() == pytest.approx(cos(q, o).item(), rel=1e-4)
    assert result.values["cos_same_layer"][1, 1].item() == pytest.approx(cos(k, v).item(), rel=1e-4)
    k0, k1 = grads[(0, "k")], grads[(1, "k")]
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


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_a_scored_subset_in_a_batch_equals_the_plain_procedure_on_those_tokens(kind):
    """The scored-subset samples score a random subset of their response tokens: the batched pass (with a sample
    scored whole beside it) equals the plain procedure whose labels are those tokens alone, and the
    subset's loss is the mean over its tokens only."""
    model = tiny_model(kind, layers=3)
    whole = [prompts.EncodedSample(ids, prompt_length) for ids, prompt_length in SAMPLES[:3]]
    rng = np.random.default_rng(0)
    encoded = [prompts.scored_subset(whole[0], 2, rng), whole[1], prompts.scored_subset(whole[2], 5, rng)]
    batch = gradients.make_batch(
        [s.input_ids for s in encoded],
        [s.prompt_length for s in encoded],
        0,
        torch.device("cpu"),
        scored=[s.scored for s in encoded],
    )
    results = gradients.batch_statistics(model, batch)
    worst = 0.0
    for result, sample in zip(results, encoded):
        expected = plain.reference_statistics(model, sample)
        assert result.loss == pytest.approx(expected.loss, rel=1e-5)
        rows = runner.sample_rows(result, preparation.PreparedSample(0, sample), {}, model.config.num_hidden_layers)
        assert (rows["n_response_tokens"] == sample.n_response_tokens).all()
        worst = max(worst, plain.largest_relative_difference(rows, expected))
    assert worst < 1e-4
    assert [s.n_response_tokens for s in encoded] == [2, whole[1].n_response_tokens, 5]
    assert set(encoded[0].scored) <= set(whole[0].scored_tokens())
    alone = gradients.make_batch([whole[0].input_ids], [whole[0].prompt_length], 0, torch.device("cpu"))
    assert results[0].loss != pytest.approx(gradients.batch_statistics(model, alone)[0].loss, rel=1e-6)


def test_a_subset_is_drawn_from_the_response_tokens_and_never_larger_than_they_are():
    sample = prompts.EncodedSample(list(range(20)), 15)
    drawn = prompts.scored_subset(sample, 3, np.random.default_rng(1))
    assert (
        len(drawn.scored) == 3
        and all(15 <= t < 20 for t in drawn.scored)
        and list(drawn.scored) == sorted(drawn.scored)
    )
    assert prompts.scored_subset(sample, 50, np.random.default_rng(1)).scored == tuple(range(15, 20))
    assert drawn.input_ids == sample.input_ids  # the text is whole: only what is scored changes


def test_a_gradients_rank_is_bounded_by_the_tokens_up_to_its_last_scored_one():
    """The bound the effective-rank section states: a projection's per-sample gradient is a sum of one
    rank-one term per position whose output reaches the loss, so its rank is at most the tokens up to
    the last scored one (prompt included), and for the last layer's Q and O at most the scored tokens.
    Here 3 scored tokens after a prompt of 5: the earlier layers' gradients exceed rank 3."""
    model = tiny_model("llama", layers=3)
    ids, prompt_length = list(range(5, 13)), 5
    grads = plain.reference_statistics(model, ids, prompt_length, keep_gradients=True).gradients
    last = model.config.num_hidden_layers - 1
    ranks = {key: int(torch.linalg.matrix_rank(g, rtol=1e-6)) for key, g in grads.items()}
    assert all(rank <= len(ids) - 1 for rank in ranks.values())  # positions 0 .. 6 predict the scored 5 .. 7
    assert ranks[(last, "q")] <= 3 and ranks[(last, "o")] <= 3
    assert max(ranks[(0, p)] for p in "qkvo") > 3


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_gradients_scored_before_the_end_read_only_the_positions_they_reach_and_equal_the_plain_procedure(
    kind, monkeypatch
):
    """A gradient scored on tokens before the text's end has exactly zero output gradients after its last
    scored token: its factors keep the positions up to it, as views of inputs that the sample's further
    subsets share (one triangular factor per forward pass), and every statistic still equals the plain
    procedure's on those tokens."""
    model = tiny_model(kind, layers=3)
    ids, prompt_length = list(range(2, 90)), 20  # 87 positions, more than the hidden size (48)
    first, further = (62, 66), ((70, 75), (21, 24))  # the last: its T x T route, its text's inputs of rank 48
    batch = gradients.make_batch([ids], [prompt_length], 0, torch.device("cpu"), scored=[first], more_scored=[further])
    views, wholes = [], set()
    original = spectra.LayerInputs.leading

    def leading(self, n_tokens):
        view = original(self, n_tokens)
        if view is not self:
            views.append(n_tokens)
            wholes.add(id(self))
        return view

    monkeypatch.setattr(spectra.LayerInputs, "leading", leading)
    result = gradients.batch_statistics(model, batch)[0]
    assert sorted(set(views)) == [24, 66, 75]  # a scored token t is predicted at position t - 1
    assert len(wholes) == 2  # Q, K and V's inputs and O's, each shared by the three gradients
    worst = 0.0
    for stats, tokens in zip([result, *result.further_subsets], [first, *further]):
        sample = prompts.EncodedSample(ids, prompt_length, scored=tokens)
        expected = plain.reference_statistics(model, sample)
        assert stats.failure is None and stats.loss == pytest.approx(expected.loss, rel=1e-5)
        rows = runner.sample_rows(stats, preparation.PreparedSample(0, sample), {}, model.config.num_hidden_layers)
        worst = max(worst, plain.largest_relative_difference(rows, expected))
    assert worst < 1e-4
