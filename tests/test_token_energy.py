"""The token energy: exact from one pass per token, estimated without bias from random-sign passes, and
consistent with the stored Frobenius norm; off, the extraction is what it was."""

import math

import pytest
import torch
from conftest import tiny_model

from analysis.core import layer_stats
from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.core.vocabulary import PROJECTIONS
from analysis.extract import gradients, models, plain, runner, token_energy
from analysis.store import ResultsStore, read_results

# (token ids, prompt length): 3, 6 and 29 response tokens (the last predicts nothing)
SAMPLES = [(list(range(5, 12)), 3), (list(range(9, 19)), 3), (list(range(2, 40)), 8)]
CPU = torch.device("cpu")


def one_batch(samples=SAMPLES):
    return gradients.make_batch([s for s, _ in samples], [p for _, p in samples], 0, CPU)


def token_gradients(model, ids: list[int], prompt_length: int) -> tuple[dict, dict, int]:
    """The plain loop: per response token, autograd on the projections' weights, materialised in
    float64; the sum of the squared norms (the energy) and the sum of the gradients, per (layer, proj)."""
    batch = gradients.make_batch([ids], [prompt_length], 0, CPU)
    with plain.trainable_projections(model) as projections:
        losses, mask = gradients.token_losses(model, batch)
        tokens = mask[0].nonzero().flatten().tolist()
        weights = [m.weight for m in projections.values()]
        energy = {key: 0.0 for key in projections}
        total = {key: torch.zeros_like(m.weight, dtype=torch.float64) for key, m in projections.items()}
        for r in tokens:
            grads = torch.autograd.grad(losses[0, r], weights, retain_graph=True)
            for key, grad in zip(projections, grads):
                energy[key] += float((grad.double() ** 2).sum())
                total[key] += grad.double()
    return energy, total, len(tokens)


def cell(result: gradients.SampleGradientStats, name: str, key: tuple[int, str]) -> float:
    layer, proj = key
    return float(result.values[name][layer, PROJECTIONS.index(proj)])


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_exact_energy_equals_the_plain_loop_over_tokens(kind):
    model = tiny_model(kind, layers=3)
    results = gradients.batch_statistics(model, one_batch(), token_energy_passes=40)
    for result, (ids, prompt_length) in zip(results, SAMPLES):
        expected, _, _ = token_gradients(model, ids, prompt_length)
        assert result.failure is None and (result.values[token_energy.EXACT] == 1.0).all()
        assert (result.values[token_energy.VARIANCE] == 0.0).all()
        for key, value in expected.items():
            assert cell(result, token_energy.ENERGY, key) == pytest.approx(value, rel=1e-6), key


def test_the_parts_add_up_to_the_stored_frobenius_norm():
    """log ||G||_F = 1/2 log e + 1/2 log kappa - 1/2 log R (to 1e-6 of the norm), with e and kappa of
    the plain loop's token gradients and ||G||_F the extraction's stored Frobenius norm; the
    extraction's own alignment, R^2 ||G||_F^2 / E, is the plain loop's."""
    model = tiny_model("llama", layers=3)
    results = gradients.batch_statistics(model, one_batch(), token_energy_passes=40)
    for result, (ids, prompt_length) in zip(results, SAMPLES):
        energy, total, count = token_gradients(model, ids, prompt_length)
        for key in energy:
            e = energy[key] / count
            kappa = float((total[key] ** 2).sum()) / energy[key]
            parts = 0.5 * math.log(e) + 0.5 * math.log(kappa) - 0.5 * math.log(count)
            stored = cell(result, "frobenius", key)
            assert math.exp(parts) == pytest.approx(stored, rel=1e-6), key
            own = count**2 * stored**2 / cell(result, token_energy.ENERGY, key)
            assert own == pytest.approx(kappa, rel=1e-5), key


def test_the_estimate_is_unbiased_within_its_stated_error():
    model = tiny_model("llama", layers=2)
    ids, prompt_length = SAMPLES[2]  # 29 response tokens, estimated from 4 passes
    batch = one_batch([SAMPLES[2]])
    (exact,) = gradients.batch_statistics(model, batch, token_energy_passes=40)
    estimates, variances = [], []
    for seed in range(60):
        (result,) = gradients.batch_statistics(model, batch, token_energy_passes=4, energy_seed=seed)
        assert (result.values[token_energy.EXACT] == 0.0).all()
        estimates.append(result.values[token_energy.ENERGY])
        variances.append(result.values[token_energy.VARIANCE])
    mean = torch.stack(estimates).mean(0)
    error = (torch.stack(variances).mean(0) / len(estimates)).sqrt()  # the stored variances' standard error
    truth = exact.values[token_energy.ENERGY]
    assert ((mean - truth).abs() <= 4 * error).all()
    assert (error > 0).all() and not torch.equal(estimates[0], estimates[1])  # the seeds differ


def test_the_signs_are_the_sample_s_own_in_any_batch():
    model = tiny_model("llama", layers=2)
    together = gradients.batch_statistics(model, one_batch(), token_energy_passes=4)
    alone = gradients.batch_statistics(model, one_batch([SAMPLES[2]]), token_energy_passes=4)[0]
    for name in token_energy.COLUMNS:
        assert torch.allclose(together[2].values[name], alone.values[name], rtol=1e-6, atol=0.0), name
    assert (together[0].values[token_energy.EXACT] == 1.0).all()  # 3 tokens <= 4: exact in the same batch


def test_off_leaves_every_other_number_as_it_was():
    model = tiny_model("gemma3", layers=3)
    off = gradients.batch_statistics(model, one_batch())
    on = gradients.batch_statistics(model, one_batch(), token_energy_passes=4)
    for a, b in zip(off, on):
        assert not set(token_energy.COLUMNS) & set(a.values)
        assert set(b.values) - set(a.values) == set(token_energy.COLUMNS) and a.loss == b.loss
        for name, value in a.values.items():
            torch.testing.assert_close(value, b.values[name], rtol=0, atol=0, equal_nan=True, msg=name)


def test_the_store_gains_the_columns_only_where_asked(tiny_model_dir, study_data_dir, tmp_path):
    loaded = models.load(str(tiny_model_dir("llama")), template="base", device="cpu")
    store = ResultsStore(tmp_path / "r")
    settings = ExtractionSettings(n_samples=2, max_length=256)
    runner.extract(loaded, "aqua/none/correct", store, settings=settings, data_dir=study_data_dir, progress=False)
    assert not set(token_energy.COLUMNS) & set(read_results(tmp_path / "r").columns)  # off: as before
    energy = settings.but(token_energy_passes=4, token_energy_conditions=("aqua/detailed/correct",))
    plan = runner.plan_run(
        loaded.name, loaded.template, "aqua/none/correct", store, settings=energy, data_dir=study_data_dir
    )
    assert plan.todo == []  # not asked for this condition: nothing to compute again
    runner.extract(loaded, "aqua/detailed/correct", store, settings=energy, data_dir=study_data_dir, progress=False)
    rows = read_results(tmp_path / "r")
    detailed = rows[rows["condition"] == "aqua/detailed/correct"]
    assert detailed[list(token_energy.COLUMNS)].notna().all().all() and (detailed["token_energy"] > 0).all()
    assert rows.loc[rows["condition"] == "aqua/none/correct", "token_energy"].isna().all()
    everywhere = settings.but(token_energy_passes=4)
    plan = runner.plan_run(
        loaded.name, loaded.template, "aqua/none/correct", store, settings=everywhere, data_dir=study_data_dir
    )
    stored = set(rows.loc[rows["condition"] == "aqua/none/correct", "sample_index"])
    assert stored and set(plan.todo) == stored  # asked for now: the stored samples are computed again


def test_the_columns_are_declared_once_and_one_pass_is_refused():
    assert token_energy.COLUMNS == layer_stats.names(layer_stats.of_source(layer_stats.ENERGY))
    assert set(token_energy.COLUMNS) <= set(layer_stats.computed_columns(entry_stats=False, token_energy=True))
    assert not set(token_energy.COLUMNS) & set(layer_stats.computed_columns(entry_stats=False))
    with pytest.raises(StudyError, match="token_energy_passes is 1"):
        ExtractionSettings(token_energy_passes=1)
