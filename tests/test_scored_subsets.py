"""K draws of scored tokens per sample through one forward pass: each draw's gradient equals the
plain procedure on its tokens alone, and the first draw is the one draw of a run with K = 1."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import tiny_model
from synthetic import make_results

from analysis import data
from analysis.core.settings import ExtractionSettings
from analysis.extract import gradients, plain, preparation, prompts, runner
from analysis.findings import gap_split, metrics
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.quantities import log_level
from analysis.store import RunKey

# (ids, prompt length): 19 response tokens (the factored spectra, T < 0.8 x 48) and 58 (dense)
SAMPLES = [(list(range(7, 30)), 4), (list(range(2, 90)), 30)]
DRAWS = 4


def drawn(index: int, size: int, count: int = DRAWS) -> prompts.EncodedSample:
    ids, prompt_length = SAMPLES[index]
    whole = prompts.EncodedSample(ids, prompt_length)
    return prompts.scored_subsets(
        whole, size, preparation.subset_rng("gsm8k/detailed_scored_answer/correct", index), count
    )


def batch_of(encoded, *, more: bool = True) -> gradients.Batch:
    return gradients.make_batch(
        [s.input_ids for s in encoded],
        [s.prompt_length for s in encoded],
        0,
        torch.device("cpu"),
        scored=[s.scored for s in encoded],
        more_scored=[s.more_scored for s in encoded] if more else None,
    )


def test_the_first_of_k_draws_is_the_one_draw_and_the_others_differ():
    one, several = drawn(1, 5, count=1), drawn(1, 5)
    alone = prompts.scored_subset(
        prompts.EncodedSample(*SAMPLES[1]), 5, preparation.subset_rng("gsm8k/detailed_scored_answer/correct", 1)
    )
    assert one.scored == several.scored == alone.scored and one.more_scored == ()
    assert len(several.more_scored) == DRAWS - 1 and len({several.scored, *several.more_scored}) == DRAWS
    assert all(len(s) == 5 and set(s) <= set(range(30, 88)) for s in several.more_scored)


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_k_draws_through_one_forward_pass_equal_the_plain_procedure_on_each(kind):
    """Two samples of K = 4 draws each beside one scored whole, with the token energy's passes after
    them on the same graph: every draw's statistics equal a materialised gradient's full SVD."""
    model = tiny_model(kind, layers=3)
    encoded = [drawn(0, 6), drawn(1, 5), prompts.EncodedSample(*SAMPLES[0])]
    results = gradients.batch_statistics(model, batch_of(encoded), token_energy_passes=2)
    worst, n_layers = 0.0, model.config.num_hidden_layers
    for result, sample in zip(results[:2], encoded[:2]):
        assert result.failure is None and len(result.further_subsets) == DRAWS - 1
        for stats, scored in zip([result, *result.further_subsets], [sample.scored, *sample.more_scored]):
            one = prompts.EncodedSample(sample.input_ids, sample.prompt_length, scored)
            expected = plain.reference_statistics(model, one)
            rows = runner.gradient_rows(stats, preparation.PreparedSample(0, one), {}, n_layers)
            worst = max(worst, plain.largest_relative_difference(rows, expected, with_loss=True))
    assert results[2].further_subsets == [] and "token_energy" in results[2].values
    print(f"largest relative difference over {2 * DRAWS} draws: {worst:.2e}")
    assert worst < 1e-4


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_the_first_draw_of_k_equals_a_run_of_one_draw(kind):
    """K = 1 takes today's pass exactly (no further position, the same numbers bit for bit); with
    K > 1 the first draw's tokens are the same, and its numbers differ only by the rounding of the
    output head evaluated at more positions."""
    model = tiny_model(kind, layers=3)
    encoded = [drawn(0, 6), drawn(1, 5)]
    several = gradients.batch_statistics(model, batch_of(encoded))
    one = gradients.batch_statistics(model, batch_of(encoded, more=False))
    k1 = gradients.batch_statistics(model, batch_of([drawn(0, 6, count=1), drawn(1, 5, count=1)]))
    worst = 0.0
    for a, b, c in zip(several, one, k1):
        assert c.loss == b.loss and c.token_losses == b.token_losses and c.further_subsets == []
        assert all(torch.equal(c.values[n].nan_to_num(-1.0), v.nan_to_num(-1.0)) for n, v in b.values.items())
        assert a.loss == pytest.approx(b.loss, rel=1e-6)
        for name, value in b.values.items():
            scale = value.abs().clamp_min(1e-12)
            worst = max(worst, float(((a.values[name] - value).abs() / scale).nan_to_num(0.0).max()))
    print(f"first of {DRAWS} draws against one draw: largest relative difference {worst:.2e}")
    assert worst < 1e-5


def test_k_draws_are_stored_as_rows_told_apart_by_subset_under_a_key_of_their_own():
    model = tiny_model("llama", layers=2)
    sample = drawn(0, 6)
    result = gradients.batch_statistics(model, batch_of([sample]))[0]
    prepared = preparation.PreparedSample(3, sample)
    identity = {"condition": "gsm8k/detailed_scored_answer/correct", runner.SUBSETS: DRAWS}
    rows = runner.sample_rows(result, prepared, identity, 2)
    assert sorted(rows.groupby(runner.SUBSET_COLUMN).size().to_dict()) == list(range(DRAWS))
    assert len(rows) == DRAWS * 2 * 4 and rows[runner.SUBSETS].eq(DRAWS).all()
    assert runner.SUBSET_COLUMN not in runner.sample_rows(result, prepared, {}, 2).columns

    key = RunKey("m", "gsm8k", "detailed_scored_answer", "correct", 1024, "base")
    assert str(key.relative_dir()).endswith("ml1024-base")
    subset, other = (
        data.get_condition("gsm8k/detailed_scored_answer/correct"),
        data.get_condition("gsm8k/detailed/correct"),
    )
    keyed, labels = runner.with_scored_subsets(key, {}, subset, ExtractionSettings(scored_subsets=DRAWS))
    assert str(keyed.relative_dir()).endswith(f"ml1024-base-k{DRAWS}") and labels == {runner.SUBSETS: DRAWS}
    assert runner.with_scored_subsets(key, {}, subset, ExtractionSettings()) == (key, {})
    assert runner.with_scored_subsets(key, {}, other, ExtractionSettings(scored_subsets=DRAWS)) == (key, {})


SUBSET = gap_split.STEPS[2].slow  # the scored-subset condition of the chain


def rows_with(*, n: int = 12, seed: int = 0) -> pd.DataFrame:
    """Rows of gsm8k's Detailed CoT and its scored subset, the subset's log nuclear norm 1 above."""
    rows = make_results(
        [("gsm8k", s, "correct") for s in ("detailed", SUBSET)],
        models={"m": ("base", 12)},
        n_samples=n,
        noise=0.05,
        seed=seed,
    )
    rows.loc[rows["setting"] == SUBSET, "nuclear_norm"] *= np.exp(1.0)
    return rows


def subset_level(rows: pd.DataFrame):
    """The subset's mean log nuclear norm as the findings read it."""
    cd = all_curve_draws(rows, ["m"], ("nuclear_norm",), n_resamples=300)["m"]
    return log_level(cd, "gsm8k", SUBSET)


def drawn_rows(draws: int, *, n: int = 12, seed: int = 0) -> pd.DataFrame:
    """``rows_with``'s rows with the subset condition stored as ``draws`` draws: each a copy of its
    one draw's rows times a seeded factor (draw 0 unchanged)."""
    rows = rows_with(n=n, seed=seed)
    chosen = rows["setting"] == SUBSET
    factors = np.exp(np.random.default_rng(seed).normal(0.0, 0.3, size=draws))
    factors[0] = 1.0
    copies = [
        rows.loc[chosen].assign(nuclear_norm=rows.loc[chosen, "nuclear_norm"] * f, subset=k)
        for k, f in enumerate(factors)
    ]
    return pd.concat([rows[~chosen], *copies], ignore_index=True), float(np.log(factors).mean())


def test_the_findings_read_a_samples_mean_log_over_its_draws():
    rows, shift = drawn_rows(DRAWS)
    one = rows_with()
    gap = subset_level(rows).value - subset_level(one).value
    assert gap == pytest.approx(shift, abs=1e-9)
    assert metrics.mean_over_draws(one) is one  # one draw: the rows as they are
    averaged = metrics.mean_over_draws(rows)
    assert len(averaged) == len(one) and metrics.SUBSET not in averaged.columns
    assert averaged["n_tokens"].dtype == one["n_tokens"].dtype
    # a sample stored with one draw and with K keeps its K draws
    both = pd.concat([one[one["setting"] == SUBSET], rows], ignore_index=True)
    assert len(metrics.mean_over_draws(both)) == len(one)


def test_k_draws_are_a_run_of_their_own_in_the_store_and_read_back_as_one_value(sized, tmp_path):
    """K = 1 and K = 3 runs of one condition in one store: each resumes only its own samples, the
    first draw equals the one draw's numbers, and the pages read one value per sample (the records
    of ``sized``: two computed, one skipped, whose answer is truncated away)."""
    from analysis.report.load import load_results
    from analysis.store import ResultsStore, read_results

    loaded, study_data_dir = sized
    store, spec = ResultsStore(tmp_path / "r"), "gsm8k/detailed_scored_answer/correct"
    one, three = (ExtractionSettings(n_samples=3, max_length=SIZED_LENGTH, scored_subsets=k) for k in (1, 3))
    first = runner.extract(loaded, spec, store, settings=one, data_dir=study_data_dir, progress=False)
    rows_one = read_results(tmp_path / "r")
    assert first.computed == 2 and runner.SUBSET_COLUMN not in rows_one.columns
    again = runner.extract(loaded, spec, store, settings=three, data_dir=study_data_dir, progress=False)
    assert (again.already_done, again.computed) == (0, 2)  # a K = 1 row is never a K = 3 row
    assert runner.extract(loaded, spec, store, settings=three, data_dir=study_data_dir, progress=False).computed == 0
    rows = read_results(tmp_path / "r")
    drawn = rows[rows[runner.SUBSET_COLUMN].notna()]
    assert sorted(drawn[runner.SUBSET_COLUMN].unique()) == [0, 1, 2] and (drawn[runner.SUBSETS] == 3).all()
    keys = ["sample_index", "layer", "proj"]
    zero = drawn[drawn[runner.SUBSET_COLUMN] == 0].sort_values(keys)
    single = rows_one.sort_values(keys)
    assert np.allclose(zero["nuclear_norm"], single["nuclear_norm"], rtol=1e-6)
    read = load_results(tmp_path / "r", [loaded.name], [spec]).rows
    assert len(read) == len(rows_one) and metrics.SUBSET not in read.columns
    expected = np.exp(np.log(drawn["nuclear_norm"]).groupby([drawn[k] for k in keys]).mean())
    got = read.set_index(keys)["nuclear_norm"].astype(float)
    assert np.allclose(got.loc[expected.index].to_numpy(), expected.to_numpy(), rtol=1e-12)


# ----------------------------------------------------------- the subset's size: its answer's count

MERGES = [(" ", "4"), (" 4", "2")]  # " 42" one token after a space; "42" alone two: "4", "2"
SIZED = {  # record -> (None CoT's response, Detailed CoT's)
    0: ("42", "Six sevens make forty-two."),  # the answer after the phrase is 1 token, None CoT's 2
    1: ("7", "Three and four."),  # 1 and 1
    2: ("5", "step " * 60),  # at SIZED_LENGTH, detailed fits in part, detailed_answer loses its answer
}
SIZED_LENGTH = 200


def merging_tokenizer():
    """``char_tokenizer``'s characters as a BPE whose merges cross a space (no pre-tokenizer), so
    that an answer after "The final answer is " has another token count than alone, as in a real
    tokenizer (SmolLM2's " Sentence B" and "Sentence B")."""
    from conftest import char_tokenizer
    from tokenizers import Tokenizer, models, processors
    from transformers import PreTrainedTokenizerFast

    vocab = dict(char_tokenizer().get_vocab())
    for left, right in MERGES:
        vocab[left + right] = len(vocab)
    backend = Tokenizer(models.BPE(vocab, MERGES, unk_token="<unk>"))
    backend.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"
    )
    tokenizer.chat_template = char_tokenizer().chat_template
    return tokenizer


@pytest.fixture(scope="module")
def sized(tmp_path_factory):
    """A tiny Llama with ``merging_tokenizer`` and a data folder of gsm8k's None and Detailed CoT
    holding the ``SIZED`` records."""
    import json

    from analysis.extract import models

    root = tmp_path_factory.mktemp("sized")
    tokenizer = merging_tokenizer()
    tiny_model("llama", vocab_size=len(tokenizer), layers=2).save_pretrained(root / "model", safe_serialization=True)
    tokenizer.save_pretrained(root / "model")
    for setting, column in (("none", 0), ("detailed", 1)):
        path = root / "data" / data.get_condition(f"gsm8k/{setting}/correct").relative_path
        path.parent.mkdir(parents=True, exist_ok=True)
        records = [{"instruction": f"Question {i}?", "input": "", "output": SIZED[i][column]} for i in SIZED]
        path.write_text(json.dumps(records))
    return models.load(str(root / "model"), template="instruct", device="cpu"), root / "data"


def answer_counts(loaded, data_dir) -> dict[int, int]:
    """Each record's answer tokens as ``detailed_answer`` scores them (``prompts.encode_answer``)."""
    records = data.answer_records(data.get_condition("gsm8k/detailed_answer/correct"), data_dir)
    counts = {}
    for index, record in enumerate(records):
        prompt = prompts.prompt_text(loaded.tokenizer, record.instruction, loaded.template, loaded.system_message)
        encoded = prompts.encode_answer(
            loaded.tokenizer, prompt, record.output, answer_start=record.answer_start, max_length=SIZED_LENGTH
        )
        counts[index] = encoded.n_response_tokens
    return counts


def test_a_subset_scores_as_many_tokens_as_its_answer_in_detailed_answer_not_as_none_cot(sized):
    loaded, data_dir = sized
    expected = answer_counts(loaded, data_dir)
    none = data.resolve("gsm8k/none/correct", data_dir)
    plain_none, _ = preparation.prepare_samples(loaded, none, list(SIZED), SIZED_LENGTH, data_dir=data_dir)
    none_counts = {s.index: s.encoded.n_response_tokens for s in plain_none}
    assert (none_counts[0], expected[0]) == (2, 1)  # the sample where None CoT's count is not the answer's
    assert (none_counts[1], expected[1], expected[2]) == (1, 1, 0)

    subset = data.resolve("gsm8k/detailed_scored_answer/correct", data_dir)
    prepared, skips = preparation.prepare_samples(
        loaded, subset, list(SIZED), SIZED_LENGTH, data_dir=data_dir, scored_subsets=3
    )
    assert [s.index for s in prepared] == [0, 1]
    for sample in prepared:
        draws = [sample.encoded.scored, *sample.encoded.more_scored]
        assert len(draws) == 3 and {len(d) for d in draws} == {expected[sample.index]}
        assert min(sample.encoded.scored) >= sample.encoded.prompt_length  # drawn from the chain's tokens
    assert preparation.reference_counts(loaded, subset.condition, list(SIZED), SIZED_LENGTH, data_dir=data_dir) == (
        expected
    )
    # detailed_answer lost its answer at this length: the subset has no count, a skip that says so
    assert list(skips) == [2] and skips[2].startswith("reference scores no token: gsm8k/detailed_answer/correct")
    detailed = data.resolve("gsm8k/detailed/correct", data_dir)
    assert preparation.prepare_samples(loaded, detailed, [2], SIZED_LENGTH, data_dir=data_dir)[1] == {}


def test_a_run_stores_the_subset_with_the_answer_s_count_and_counts_its_skip(sized, tmp_path):
    from analysis.store import ResultsStore, read_results, read_skipped

    loaded, data_dir = sized
    store = ResultsStore(tmp_path / "r")
    settings = ExtractionSettings(n_samples=3, max_length=SIZED_LENGTH)
    for spec in ("gsm8k/detailed_answer/correct", "gsm8k/detailed_scored_answer/correct"):
        summary = runner.extract(
            loaded, spec, store, settings=settings, data_dir=data_dir, progress=False, ids=[0, 1, 2]
        )
        assert summary.computed == 2 and sum(summary.skipped.values()) == 1
    rows = read_results(tmp_path / "r").drop_duplicates(["setting", "sample_index"])
    counts = rows.pivot(index="sample_index", columns="setting", values="n_response_tokens")
    assert counts["detailed_scored_answer"].tolist() == counts["detailed_answer"].tolist() == [1, 1]
    skipped = read_skipped(tmp_path / "r")
    reasons = dict(zip(skipped["setting"], skipped["reason"]))
    assert reasons["detailed_scored_answer"].startswith("reference scores no token")
