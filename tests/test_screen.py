"""The loss screen on a tiny model and the study's data: the losses it reads are the gradient pass's,
the matched pairs' gradients are stored beside the draw (a page reads them apart from it), an
interrupted screen goes on where it stopped, and a run screens only what is left."""

import pytest

from analysis.core.errors import StudyError
from analysis.core.settings import ExtractionSettings
from analysis.core.vocabulary import RESPONSES
from analysis.data import sample_draws
from analysis.extract import models, runner, screens
from analysis.extract import screen as screening
from analysis.profiles import Profile
from analysis.report.load import load_results
from analysis.store import ResultsStore, read_results
from analysis.study import pipeline

SETTINGS = ExtractionSettings(n_samples=3, max_length=1024, template="base", device="cpu", loss_screen=6)
CONDITIONS = tuple(f"aqua/detailed/{r}" for r in RESPONSES)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return models.load(str(tiny_model_dir("llama")), template="base", device="cpu")


def _draw(tiny, store, data_dir, settings=SETTINGS):
    for condition in CONDITIONS:
        runner.extract(tiny, condition, store, settings=settings, data_dir=data_dir, progress=False)


def test_matched_pairs_gradients_are_stored_beside_the_draw_with_the_screens_losses(tiny, study_data_dir, tmp_path):
    store = ResultsStore(tmp_path / "r")
    _draw(tiny, store, study_data_dir)
    screen = screening.screen_dataset(tiny, "aqua", store, settings=SETTINGS, data_dir=study_data_dir, progress=False)
    drawn = set(sample_draws.read(store.root)[CONDITIONS[0], 3])
    read = [s.index for s in screen.screened]
    assert len(drawn) == 3 and not set(read) & drawn
    assert read == screening.candidates("aqua", sorted(drawn), data_dir=study_data_dir)[: len(read)]
    assert screen.done and screen.drawn == 3 and screen.matched_ids  # a random model's two losses lie close
    rows = read_results(store.root)
    for responses in RESPONSES:
        losses = rows[rows["condition"] == f"aqua/detailed/{responses}"].groupby("sample_index")["loss"].first()
        assert set(losses.index) == drawn | set(screen.matched_ids)
        for entry in screen.screened:
            if entry.index in screen.matched_ids:
                assert losses[entry.index] == pytest.approx(getattr(entry, responses), rel=1e-5)
    # the kept draw is the run's; a page reads the screened rows apart from it
    assert sample_draws.read(store.root)[CONDITIONS[0], 3] == sorted(drawn)
    results = load_results(store.root, [tiny.name], CONDITIONS, n_samples=3, data_dir=study_data_dir)
    assert set(results.rows["sample_index"]) == drawn
    assert set(results.screened["sample_index"]) == set(screen.matched_ids)
    assert set(results.screened["condition"]) == set(CONDITIONS)
    assert [s.matched_ids for s in results.screens] == [screen.matched_ids]


def test_an_interrupted_screen_goes_on_where_it_stopped(tiny, study_data_dir, tmp_path, monkeypatch):
    store = ResultsStore(tmp_path / "r")
    _draw(tiny, store, study_data_dir)
    monkeypatch.setattr(screening, "MATCHED_PAIRS", 100)  # never reached: the budget stops it
    calls = []
    real = screening.screened_pair

    def failing_on_the_third(*args, **kwargs):
        if len(calls) == 2:
            raise RuntimeError("interrupted")
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(screening, "screened_pair", failing_on_the_third)
    with pytest.raises(RuntimeError, match="interrupted"):
        screening.screen_dataset(tiny, "aqua", store, settings=SETTINGS, data_dir=study_data_dir, progress=False)
    kept = screens.find(store.root, tiny.name, "aqua")
    assert [s.index for s in kept.screened] == calls
    monkeypatch.setattr(screening, "screened_pair", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    screen = screening.screen_dataset(tiny, "aqua", store, settings=SETTINGS, data_dir=study_data_dir, progress=False)
    assert screen.why_stopped() == screens.BUDGET
    assert [s.index for s in screen.screened] == calls and len(set(calls)) == SETTINGS.loss_screen


def test_a_run_screens_each_model_once_and_says_what_it_found(tiny, study_data_dir, tmp_path):
    profile = Profile(name="screened", models=(tiny.name,), conditions=CONDITIONS, extraction=SETTINGS)
    said: list[str] = []
    run = pipeline.RunContext(tmp_path / "r", data_dir=study_data_dir, progress=False, say=said.append)
    pipeline.extract_profile(profile, run)
    assert any(" aqua loss screen: " in line and "matched within 0.25 nats" in line for line in said)
    store = ResultsStore(tmp_path / "r")
    assert screening.pending(tiny.name, "base", ("aqua",), store, settings=SETTINGS, data_dir=study_data_dir) == []
    wider = SETTINGS.but(loss_screen=9)
    unreached = screens.find(store.root, tiny.name, "aqua")
    if unreached.why_stopped() != screens.TARGET:  # a larger budget screens on
        assert screening.pending(tiny.name, "base", ("aqua",), store, settings=wider, data_dir=study_data_dir)
    said.clear()
    pipeline.extract_profile(profile, run)
    assert said[-1] == f"{tiny.name}: all 2 conditions already stored and screened"


def test_only_datasets_with_both_detailed_conditions_are_screened():
    assert screening.screened_datasets(
        ("aqua/detailed/correct", "aqua/detailed/irrelevant", "gsm8k/detailed/correct")
    ) == ("aqua",)
    assert ExtractionSettings().loss_screen == 0
    with pytest.raises(StudyError, match="loss_screen is -1"):
        ExtractionSettings(loss_screen=-1)
