"""The loss screens kept beside the store: read back as written, why each stopped, one clear error
for a file that is not a screen."""

import json

import pytest

from analysis.extract import screens
from analysis.extract.screens import Screen, Screened


def _screen(**changes) -> Screen:
    values = dict(
        model="org/m",
        dataset="aqua",
        template="base",
        max_length=1024,
        caliper=0.25,
        target=3,
        budget=4,
        available=10,
        drawn=30,
        drawn_matched=1,
        screened=[Screened(7, 1.0, 1.2), Screened(3, 1.0, 2.0), Screened(9, None, 1.1, "correct: truncated")],
    )
    return Screen(**{**values, **changes})


def test_a_kept_screen_reads_back_as_written_with_unknown_losses_as_none(tmp_path):
    screen = _screen(screened=[Screened(7, 1.0, float("nan")), Screened(3, 1.0, 1.1)])
    screens.record(tmp_path, screen)
    back = screens.find(tmp_path, "org/m", "aqua")
    assert back.screened[0] == Screened(7, 1.0, None)
    assert back.matched_ids == [3]
    assert screens.read(tmp_path) == [back]
    assert screens.find(tmp_path, "org/m", "gsm8k") is None
    assert screens.screen_path(tmp_path, "org/m", "aqua").parent.name == "org--m"


def test_matched_pairs_are_those_within_the_caliper_with_both_losses_known():
    screen = _screen()
    assert screen.matched_ids == [7]
    assert screen.skipped == 1
    assert _screen(caliper=1.0).matched_ids == [7, 3]


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({}, screens.NOT_FINISHED),
        ({"drawn_matched": 2}, screens.TARGET),
        ({"budget": 3}, screens.BUDGET),
        ({"available": 3}, screens.EXHAUSTED),
    ],
)
def test_a_screen_stops_at_its_target_its_budget_or_the_last_instruction(changes, why):
    screen = _screen(**changes)
    assert screen.why_stopped() == why
    assert screen.done == (why != screens.NOT_FINISHED)


def test_losses_hold_for_the_same_template_and_truncation_only():
    screen = _screen()
    assert screen.reusable(template="base", max_length=1024)
    assert not screen.reusable(template="instruct", max_length=1024)
    assert not screen.reusable(template="base", max_length=512)


def test_the_summary_has_a_row_per_screen_with_its_counts():
    table = screens.summary([_screen(), _screen(dataset="gsm8k", drawn_matched=2)])
    assert table.columns[:3].tolist() == ["model", "dataset", "drawn pairs"]
    first = table.iloc[0]
    assert (first["screened"], first["skipped"], first["screened matched"]) == (3, 1, 1)
    assert table["stopped"].tolist() == [screens.NOT_FINISHED, screens.TARGET]


def test_a_file_that_is_not_a_screen_is_one_error_naming_it(tmp_path):
    path = screens.screen_path(tmp_path, "m", "aqua")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"model": "m"}))
    with pytest.raises(screens.ScreenError, match=r"aqua\.json: not a kept loss screen \(KeyError"):
        screens.read(tmp_path)
