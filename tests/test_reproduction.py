"""The reproduction summary that opens a book: one plain line per claim with the size of its
headline part, its interval and its verdict, every number from the store."""

import numpy as np
import pytest
from synthetic import MODELS, make_results, record_run, write_store
from test_report import CONDITIONS, paper_like

from analysis.findings import checks
from analysis.report import reproduction
from analysis.report.page import Page


def test_a_headline_size_is_written_as_a_reader_reads_it():
    assert reproduction.size_text(10.43, ratio=True) == "x10.4"
    assert reproduction.size_text(0.3, ratio=True) == "x0.3"
    assert reproduction.size_text(1.13, ratio=True) == "+13%"
    assert reproduction.size_text(0.98, ratio=True) == "-2%"
    assert reproduction.size_text(0.624, ratio=False) == "0.624"
    assert reproduction.size_text(float("nan"), ratio=True) == "nan"


def _intro_page(tmp_path, study_data_dir, *, none_level: float) -> Page:
    def curve(model, dataset, setting, responses, proj, layers):
        scale = none_level if setting == "none" else 1.0
        return scale * paper_like(model, dataset, setting, responses, proj, layers)

    rows = make_results(CONDITIONS, MODELS, n_samples=8, curve=curve, noise=0.02, sample_sd=0.1, seed=4)
    root = write_store(tmp_path, rows)
    record_run(root, list(MODELS), sorted(rows["condition"].unique()), n_resamples=100)
    given = {"profile": "test", "results_dir": str(root), "data_dir": str(study_data_dir)}
    return Page.open("intro", given, stats=("nuclear_norm",))


def _line(summary: str, check: str) -> str:
    """The sentence of ``check`` in a summary (a bullet may hold a pair)."""
    bullet = next(line for line in summary.splitlines() if f"**{check}** " in line)
    return f"**{check}** " + bullet.split(f"**{check}** ", 1)[1].split(" **", 1)[0]


@pytest.fixture(scope="module")
def two_pages(tmp_path_factory, study_data_dir):
    return [_intro_page(tmp_path_factory.mktemp(f"s{level}"), study_data_dir, none_level=level) for level in (1.0, 3.0)]


def test_each_claim_gets_one_line_with_its_verdict_and_its_headline_size_from_the_store(two_pages):
    lines = []
    for page in two_pages:
        summary = reproduction.page_summary(page)
        f1 = _line(summary, "F1")
        assert f1.startswith(f"**F1** {checks.get('F1').plain}: ")
        heads = checks.headline_parts(page.part_table(), checks.REGISTRY)
        pooled = heads[(heads["check"] == "F1") & heads["pooled"]].sort_values("value")
        for end in (pooled.iloc[0], pooled.iloc[-1]):  # the smallest and the largest pooled size, as written
            assert reproduction.sized(end, interval=False) in f1
        lines.append(f1)
        # a check whose conditions the store lacks (the answer-scored ones) says so and what computes it
        a2 = _line(summary, "A2")
        assert "none of its conditions" in a2 and "`python -m analysis run" in a2
        assert summary.startswith("**Scope.**")
        assert len(summary.split()) <= 250, len(summary.split())
        # the checks outside the lead follow the matrix, each once
        others = reproduction.other_claims(page)
        assert "**F2** " in others and "**F2** " not in summary and "**F1** " not in others
    assert lines[0] != lines[1]  # None CoT's nuclear norms three times as large: another sentence


def _cells(verdicts, values, n_for_power):
    import pandas as pd

    return pd.DataFrame(
        {
            "verdict": verdicts,
            "n_smallest": [5] * len(verdicts),
            "n_for_power": n_for_power,
            "numbers": [""] * len(verdicts),
            "part": ["a / b x"] * len(verdicts),
            "value": [v[0] for v in values],
            "low": [v[1] for v in values],
            "high": [v[2] for v in values],
        }
    )


def test_an_undecided_cell_gives_its_interval_and_how_many_instructions_would_decide_it():
    cells = _cells(
        ["not resolved", "holds", "holds"],
        [(1.2, 0.8, 1.9), (4.0, 3.0, 6.0), (15.0, 9.0, 25.0)],
        [40.0, np.nan, np.nan],
    )
    assert reproduction.verdict_phrase(cells) == (
        "holds in 2 of 3 (x4 to x15), not resolved in 1 (+20% [-20%, +90%]; about 40 would decide)"
    )
    every = _cells(["holds", "holds"], [(4.0, 3.0, 6.0), (15.0, 9.0, 25.0)], [np.nan, np.nan])
    assert reproduction.verdict_phrase(every) == "holds in both cells (x4 to x15)"
    none = _cells(["does not hold"] * 3, [(0.4, 0.3, 0.6), (0.9, 0.8, 0.95), (1.1, 1.05, 1.2)], [np.nan] * 3)
    assert reproduction.verdict_phrase(none) == "does not hold in any of the 3 cells (x0.4 to x1.1)"


def test_the_ends_of_a_range_read_in_one_style():
    """A range whose ends fall on both sides of the "x" threshold is written in "x" throughout."""
    cells = _cells(["not resolved"] * 2, [(0.83, 0.05, 14.4), (1.05, 0.9, 1.2)], [np.nan] * 2)
    assert (
        reproduction.verdict_phrase(cells) == "not resolved in both cells (x0.83 [x0.05, x14.4] to x1.05 [x0.9, x1.2])"
    )
