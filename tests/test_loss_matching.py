"""The loss-matched condition: chain tokens drawn within a caliper of the answer tokens' losses after
the forward pass of the answer's own text, stored as a condition of their own, in one pass with it."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import char_tokenizer, tiny_model

from analysis import data
from analysis.core.settings import ExtractionSettings
from analysis.extract import gradients, loss_matching, models, plain, preparation, prompts, runner
from analysis.store import ResultsStore, read_results, read_skipped

ANSWER, MATCHED = "gsm8k/detailed_answer/correct", "gsm8k/detailed_matched_answer/correct"
DETAILED = "gsm8k/detailed/correct"
RECORDS = {  # record -> (None CoT's response, Detailed CoT's)
    0: ("42", "Six sevens make forty-two, so the answer is 42."),
    1: ("7", "Three and four make seven."),
    2: ("5", "step " * 60),  # at LENGTH, its answer after the chain is truncated away
    3: ("yes", "A cat is an animal; animals breathe. So a cat breathes: yes."),
}
LENGTH, DRAWS = 200, 3
NARROW = 1e-3  # a caliper in log loss that a random model's token losses straddle
ROW_KEYS = ["condition", "sample_index", "subset", "layer", "proj"]


# ------------------------------------------------------------------------------ the draw itself


def test_a_match_lies_within_the_caliper_of_its_answer_token_or_is_the_nearest_and_flagged():
    """Answer tokens at 1e-3 and 2 nats: the first has two chain tokens within a factor of 2, the
    second none (the nearest in log loss is 5 nats, not 0.5, which is nearer in nats)."""
    answer = loss_matching.log_losses(np.array([1e-3, 2.0]))
    chain = loss_matching.log_losses(np.array([0.5, 1.5e-3, 5.0, 7e-4, 0.02, 9.0]))
    picked = {0: set(), 1: set()}
    for seed in range(200):
        chosen, flagged = loss_matching.match_once(answer, chain, np.random.default_rng(seed), caliper=np.log(2))
        assert flagged == 1 and len(set(chosen)) == 2
        picked[0].add(chosen[0])
        picked[1].add(chosen[1])
    assert picked == {0: {1, 3}, 1: {2}}  # every token within the caliper drawn, the nearest one alone
    # without replacement: two answer tokens with one chain token within reach, the second takes the nearest unused
    chosen, flagged = loss_matching.match_once(
        loss_matching.log_losses(np.array([1.0, 1.0])),
        loss_matching.log_losses(np.array([1.1, 3.0, 0.2])),
        np.random.default_rng(0),
        caliper=np.log(2),
    )
    assert sorted(chosen) == [0, 1] and flagged == 1


def test_a_draw_records_its_tokens_flags_and_mean_position_and_fails_with_a_reason():
    request = loss_matching.MatchRequest(pool=tuple(range(10, 15)), draws=4, seed=(0, 1, 2))
    chain = np.array([2.5, 2.0, 1.0, 0.0, 8.0])  # a loss of exactly 0 is matched on the floor's log
    matched = loss_matching.draw_matched(request, np.array([0.0, 2.2]), chain)
    assert matched.failure is None and len(matched.draws) == 4 and matched.chain_start == 10
    for draw in matched.draws:
        assert 13 in draw.tokens and draw.flagged == 0 and len(draw.tokens) == 2
        assert draw.position == pytest.approx(np.mean([t - 10 for t in draw.tokens]) / 4)
    assert json.loads(matched.offsets()) == [[t - 10 for t in d.tokens] for d in matched.draws]
    assert loss_matching.draw_matched(request, np.array([0.0, 2.2]), chain) == matched  # seeded
    other = loss_matching.MatchRequest(request.pool, 4, (0, 1, 3))
    assert loss_matching.draw_matched(other, np.array([0.0, 2.2]), chain).draws != matched.draws
    short = loss_matching.draw_matched(request, np.ones(6), np.ones(5))
    assert short.draws == () and short.failure.startswith("chain too short: 5 chain tokens for 6")
    broken = loss_matching.draw_matched(request, np.array([np.nan]), chain)
    assert broken.failure.startswith("numerical failure")


# ------------------------------------------------------------------------------ on a tiny model


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A data folder of gsm8k's None and Detailed CoT holding ``RECORDS``."""
    root = tmp_path_factory.mktemp("matched-data")
    for setting, column in (("none", 0), ("detailed", 1)):
        path = root / data.get_condition(f"gsm8k/{setting}/correct").relative_path
        path.parent.mkdir(parents=True, exist_ok=True)
        records = [{"instruction": f"Question {i}?", "input": "", "output": RECORDS[i][column]} for i in RECORDS]
        path.write_text(json.dumps(records))
    return root


@pytest.fixture(scope="module", params=["llama", "gemma3"])
def loaded(request, tmp_path_factory):
    """A tiny random model of each architecture with the character tokenizer, loaded as a run loads it."""
    root = tmp_path_factory.mktemp(f"matched-{request.param}")
    tokenizer = char_tokenizer()
    tiny_model(request.param, vocab_size=len(tokenizer), layers=2).save_pretrained(root, safe_serialization=True)
    tokenizer.save_pretrained(root)
    return models.load(str(root), template="instruct", device="cpu")


def prepared(loaded, folder, spec, *, draws=DRAWS, with_reference=False):
    resolved = data.resolve(spec, folder)
    return preparation.prepare_samples(
        loaded, resolved, list(RECORDS), LENGTH, data_dir=folder, scored_subsets=draws, with_reference=with_reference
    )


def batch_of(samples) -> gradients.Batch:
    return gradients.make_batch(
        [s.encoded.input_ids for s in samples],
        [s.encoded.prompt_length for s in samples],
        0,
        torch.device("cpu"),
        scored=[s.encoded.scored for s in samples],
        more_scored=[s.encoded.more_scored for s in samples],
        matching=[s.encoded.matching for s in samples],
    )


def plain_token_losses(model, ids: list[int]) -> np.ndarray:
    """Every position's loss of predicting the next token, by a plain forward pass of the whole text."""
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, :-1].double()
    return torch.nn.functional.cross_entropy(logits, torch.tensor(ids[1:]), reduction="none").numpy()


def test_the_chain_tokens_and_their_losses_are_those_of_the_detailed_cot_read_alone(loaded, folder):
    """Where the two texts agree (the prompt and the chain), the loss-matched sample's chain tokens
    are the Detailed CoT's response tokens and their losses in its forward pass equal theirs."""
    matched, _ = prepared(loaded, folder, MATCHED)
    detailed, _ = preparation.prepare_samples(loaded, data.resolve(DETAILED, folder), list(RECORDS), LENGTH)
    alone = {s.index: s.encoded for s in detailed}
    worst = 0.0
    for sample in matched:
        pool, own = sample.encoded.matching.pool, alone[sample.index]
        assert pool == tuple(range(own.prompt_length, len(own.input_ids)))  # every chain token, no other
        assert [sample.encoded.input_ids[t] for t in pool] == [own.input_ids[t] for t in pool]
        both = batch_of([sample])
        by_token, _ = gradients.token_losses(loaded.model, both)
        ours = gradients.row_losses(by_token, gradients.loss_positions(both), 0, pool)
        reference = gradients.make_batch([own.input_ids], [own.prompt_length], 0, torch.device("cpu"))
        by_token, _ = gradients.token_losses(loaded.model, reference)
        theirs = gradients.row_losses(by_token, gradients.loss_positions(reference), 0, pool)
        worst = max(worst, float(np.max(np.abs(ours - theirs) / theirs)))
    print(
        f"chain token losses, loss-matched text against the Detailed CoT alone: largest relative difference {worst:.1e}"
    )
    assert worst < 1e-4


def test_each_draw_and_the_answer_equal_the_plain_procedure_on_their_tokens(loaded, folder):
    """One forward pass, the answer's backward pass, then one per draw: each gradient's statistics
    equal a materialised gradient's full SVD on its tokens alone, and each draw is the one the draw
    makes from the losses of a plain forward pass."""
    samples, _ = prepared(loaded, folder, MATCHED, with_reference=True)
    results = gradients.batch_statistics(loaded.model, batch_of(samples))
    worst = 0.0
    for sample, result in zip(samples, results):
        encoded = sample.encoded
        losses = plain_token_losses(loaded.model, encoded.input_ids)
        request = encoded.matching
        expected = loss_matching.draw_matched(
            request, losses[encoded.prompt_length - 1 :], losses[[t - 1 for t in request.pool]]
        )
        assert result.matched.draws == expected.draws and len(result.further_subsets) == DRAWS
        scored = [None, *(draw.tokens for draw in expected.draws)]
        for stats, tokens in zip([result, *result.further_subsets], scored):
            one = prompts.EncodedSample(encoded.input_ids, encoded.prompt_length, tokens)
            rows = runner.gradient_rows(stats, preparation.PreparedSample(0, one), {}, loaded.n_layers)
            worst = max(worst, plain.largest_relative_difference(rows, plain.reference_statistics(loaded.model, one)))
    print(f"answer and {DRAWS} draws against the plain procedure: largest relative difference {worst:.1e}")
    assert worst < 1e-4


def test_a_narrow_caliper_flags_the_tokens_it_cannot_match_and_the_store_says_how_many(
    loaded, folder, tmp_path, monkeypatch
):
    """A random model's token losses lie within about 0.15 of each other in log loss: at a caliper of
    1e-3 some answer tokens find a chain token within it and some do not, and the stored draws are
    exactly those the draw makes from a plain forward pass's losses, flags counted."""
    monkeypatch.setattr(loss_matching, "CALIPER", NARROW)
    settings = ExtractionSettings(n_samples=len(RECORDS), max_length=LENGTH, scored_subsets=DRAWS)
    runner.extract(loaded, MATCHED, ResultsStore(tmp_path), settings=settings, data_dir=folder, progress=False)
    rows = read_results(tmp_path).drop_duplicates(["sample_index", "subset"])
    samples = {s.index: s.encoded for s in prepared(loaded, folder, MATCHED)[0]}
    for index, drawn in rows.groupby("sample_index"):
        encoded = samples[index]
        losses = plain_token_losses(loaded.model, encoded.input_ids)
        request = encoded.matching
        expected = loss_matching.draw_matched(
            request, losses[encoded.prompt_length - 1 :], losses[[t - 1 for t in request.pool]], caliper=NARROW
        )
        assert json.loads(drawn["matched_tokens"].iloc[0]) == json.loads(expected.offsets())
        assert drawn.sort_values("subset")["matched_flagged"].tolist() == [d.flagged for d in expected.draws]
        means = [losses[[t - 1 for t in d.tokens]].mean() for d in expected.draws]
        assert np.allclose(drawn.sort_values("subset")["loss"], means, rtol=1e-4)
    assert 0 < rows["matched_flagged"].sum() < rows["n_response_tokens"].sum()  # both kinds of match occur


# ------------------------------------------------------------------------------ in the store


def stored(root) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = read_results(root).sort_values(ROW_KEYS, na_position="first").reset_index(drop=True)
    return rows, read_skipped(root).sort_values(["condition", "sample_index"]).reset_index(drop=True)


def assert_close(got: pd.DataFrame, want: pd.DataFrame) -> float:
    """The same rows, labels and draws; statistics and singular values within 1e-4 relative."""
    assert got[ROW_KEYS].astype(str).equals(want[ROW_KEYS].astype(str))
    assert got["matched_tokens"].fillna("").equals(want["matched_tokens"].fillna(""))
    worst = 0.0
    for name in ("nuclear_norm", "sigma_max", "frobenius", "effective_rank", "loss", "matched_position"):
        a, b = got[name].to_numpy(float), want[name].to_numpy(float)
        assert np.array_equal(np.isnan(a), np.isnan(b))
        worst = max(worst, float(np.nanmax(np.abs(a - b) / np.abs(b))))
    for a, b in zip(got["singular_values"], want["singular_values"]):
        worst = max(worst, float(np.max(np.abs(a - b)) / b[0]))
    return worst


def test_the_shared_pass_equals_separate_passes_and_completes_a_store_holding_the_answer_alone(
    loaded, folder, tmp_path
):
    """Both conditions in one pass per sample, against the answer's extraction then the loss-matched
    condition's alone (a store that already holds the answer): the same rows to the last bit, the
    answer's stored parts left as they were, and the sample whose answer is truncated away skipped
    by both."""
    settings = ExtractionSettings(n_samples=len(RECORDS), max_length=LENGTH, scored_subsets=DRAWS, keep_spectra=True)
    shared = runner.extract_together(
        loaded, (ANSWER, MATCHED), ResultsStore(tmp_path / "shared"), settings=settings, data_dir=folder, progress=False
    )
    assert [s.shared_pass for s in shared] == [MATCHED, ANSWER]
    assert [(s.computed, s.skipped) for s in shared] == [
        (3, {"answer truncated away": 1}),
        (3, {"reference scores no token": 1}),
    ]

    store = ResultsStore(tmp_path / "separate")
    runner.extract(loaded, ANSWER, store, settings=settings, data_dir=folder, progress=False)
    parts = {p: p.read_bytes() for p in (tmp_path / "separate" / "rows").rglob("part-*.parquet")}
    answer, alone = runner.extract_together(
        loaded, runner.shared_passes([ANSWER, MATCHED])[0], store, settings=settings, data_dir=folder, progress=False
    )
    assert (answer.already_done, answer.computed, alone.computed, alone.shared_pass) == (4, 0, 3, None)
    assert all(p.read_bytes() == content for p, content in parts.items())  # the stored answer untouched

    (got, got_skips), (want, want_skips) = stored(tmp_path / "separate"), stored(tmp_path / "shared")
    worst = assert_close(got, want)
    print(f"separate passes against the shared pass: largest relative difference {worst:.1e}")
    assert worst == 0.0  # batches of one: each condition's head evaluated as its own pass evaluates it
    assert got_skips[["condition", "sample_index", "reason"]].equals(
        want_skips[["condition", "sample_index", "reason"]]
    )
    assert set(want_skips["sample_index"]) == {2}


def test_the_same_draws_twice_and_a_resumed_run_computes_only_what_is_missing(loaded, folder, tmp_path):
    """The draws are seeded by the condition and the instruction: two runs store the same tokens. A
    run interrupted after the answer's rows were written and before the loss-matched ones computes
    only the loss-matched rows it lacks."""
    settings = ExtractionSettings(n_samples=len(RECORDS), max_length=LENGTH, scored_subsets=DRAWS, shard_size=1)
    specs = (ANSWER, MATCHED)
    runner.extract_together(
        loaded, specs, ResultsStore(tmp_path / "a"), settings=settings, data_dir=folder, progress=False
    )
    store = ResultsStore(tmp_path / "b")
    plans = [runner.plan_run(loaded.name, loaded.template, s, store, settings=settings, data_dir=folder) for s in specs]
    rows, skipped = [], []
    for batch_rows, batch_skips in runner.compute_samples(
        loaded, plans[0], plans[0].todo, settings, data_dir=folder, matched=plans[1]
    ):
        rows += [] if batch_rows is None else [batch_rows]
        skipped += batch_skips
    done = pd.concat(rows)
    store.write(
        plans[0].key, done[done["condition"] == ANSWER], pd.DataFrame([s for s in skipped if s["condition"] == ANSWER])
    )
    first = done[(done["condition"] == MATCHED) & (done["sample_index"] == 0)]
    store.write(plans[1].key, first, None)  # the interrupted run had written one sample of the loss-matched condition
    answer, matched = runner.extract_together(loaded, specs, store, settings=settings, data_dir=folder, progress=False)
    assert (answer.computed, matched.already_done, matched.computed) == (0, 1, 2)
    (a, _), (b, _) = stored(tmp_path / "a"), stored(tmp_path / "b")
    assert a["matched_tokens"].fillna("").equals(b["matched_tokens"].fillna(""))
    assert np.allclose(a["nuclear_norm"], b["nuclear_norm"], rtol=1e-4)


def test_on_ray_the_loss_matched_condition_shares_its_reference_s_shards_as_a_local_run_does(loaded, folder, tmp_path):
    """The driver's plan, its workers' tasks and its writes, run in this process: one task serves both
    conditions, and the store holds exactly what the local shared pass stores."""
    from analysis.extract.distributed import driver

    settings = ExtractionSettings(
        n_samples=len(RECORDS), max_length=LENGTH, scored_subsets=DRAWS, batch_size=2, shard_size=2, device="cpu"
    )
    runner.extract_together(
        loaded, (ANSWER, MATCHED), ResultsStore(tmp_path / "local"), settings=settings, data_dir=folder, progress=False
    )
    store = ResultsStore(tmp_path / "ray")
    jobs = [driver.Job(loaded.name, loaded.template, spec) for spec in (MATCHED, ANSWER)]
    planned = driver._plans(jobs, [loaded.template] * 2, store, settings, data_dir=folder)
    tasks, summaries = driver._tasks(planned, store, settings)
    assert [(t.run.identity["condition"], t.matched.identity["condition"]) for t in tasks] == [(ANSWER, MATCHED)]
    worker = driver.ShardWorker(driver.WorkerSettings(settings, str(folder), False))
    report = driver.ExtractionReport()
    while tasks:
        task = tasks.pop(0)
        result = worker.run(task)
        driver._take_result(store, task, result, summaries=summaries, report=report)
        tasks += [driver.Task("compute", task.run, s, task.matched) for s in driver.shards_of(result.batches, 2)]
    counts = {s.condition: (s.computed, s.skipped, s.shared_pass) for s in summaries.values()}
    assert counts == {
        ANSWER: (3, {"answer truncated away": 1}, MATCHED),
        MATCHED: (3, {"reference scores no token": 1}, ANSWER),
    }
    (got, got_skips), (want, want_skips) = stored(tmp_path / "ray"), stored(tmp_path / "local")
    pd.testing.assert_frame_equal(got[want.columns], want, check_exact=True)
    pd.testing.assert_frame_equal(got_skips[want_skips.columns], want_skips, check_exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemma-3-270m", "smollm2-135m-instruct"])
def test_on_an_offline_model_the_chain_is_the_detailed_cot_s_prefix_with_its_losses(name, study_data_dir):
    """One gsm8k instruction of the study's files on each offline model: the chain's tokens are the
    Detailed CoT's response tokens (but a last one that the new line after the chain may re-tokenize),
    with the same losses within 1e-4."""
    model = models.load(name, device="cpu")
    (sample,), _ = preparation.prepare_samples(
        model, data.resolve(MATCHED, study_data_dir), [0], 1024, data_dir=study_data_dir
    )
    (own,), _ = preparation.prepare_samples(model, data.resolve(DETAILED, study_data_dir), [0], 1024)
    pool = sample.encoded.matching.pool
    assert pool[0] == own.encoded.prompt_length and len(own.encoded.input_ids) - 1 <= pool[-1] + 1
    assert [sample.encoded.input_ids[t] for t in pool] == [own.encoded.input_ids[t] for t in pool]
    ours, theirs = (plain_token_losses(model.model, s.encoded.input_ids) for s in (sample, own))
    at = [t - 1 for t in pool]
    worst = float(np.max(np.abs(ours[at] - theirs[at]) / theirs[at]))
    print(f"{name}: {len(pool)} chain tokens, largest relative difference of their losses {worst:.1e}")
    assert worst < 1e-4
