"""The reproduction summary that opens a book: one plain line per claim with the size of its
headline part, its interval and its verdict, every number from the store."""

import numpy as np
import pytest
from blocks_read import text_of
from made_findings import finding, part, ratio_part
from synthetic import MODELS, make_results, record_run, write_store
from test_report import CONDITIONS, paper_like

from analysis import checks
from analysis.findings import roles
from analysis.findings.rules import FAILS, HOLDS, UNRESOLVED, Unit
from analysis.report import cells, reproduction, sections, verdicts, voice
from analysis.report.page import Page


def test_a_headline_size_is_written_as_a_reader_reads_it():
    assert voice.size(10.43, Unit.RATIO) == "x10.4"
    assert voice.size(0.3, Unit.RATIO) == "x0.300"
    assert voice.size(1.13, Unit.RATIO) == "x1.13"  # one unit for every ratio, near 1 too
    assert voice.size(0.98, Unit.RATIO) == "x0.980"
    assert voice.size(0.624, Unit.DIFFERENCE) == "0.624"
    assert voice.size(float("nan"), Unit.RATIO) == "nan"
    # one format for an estimate and its interval: never "4.78 [3.85, 5.95] times"
    assert voice.sized(ratio_part(4.78, 1.25)) == "x4.78 [x3.82, x5.97]"
    assert voice.sized(ratio_part(1.26, 1.1)) == "x1.26 [x1.15, x1.39]"


def _intro_page(tmp_path, study_data_dir, *, none_level: float) -> Page:
    def curve(model, dataset, setting, responses, proj, layers):
        # None CoT ``none_level`` times as large, and more so in the early layers when it is larger
        early = np.exp(0.05 * (none_level - 1.0) * (layers.mean() - layers))
        scale = none_level * early if setting == "none" else 1.0
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


def test_each_claim_gets_one_line_with_its_verdict_and_the_sizes_that_decided_it_from_the_store(two_pages):
    lines = []
    for page in two_pages:
        summary = text_of(sections.summary(page))
        f1 = _line(summary, "F1")
        assert f1.startswith(f"**F1** {checks.get('F1').plain}: ")
        pooled = [f for f in page.findings() if f.check == "F1" and f.pooled]
        assert pooled
        for verdict in {f.verdict for f in pooled}:  # each verdict's group, with the sizes of the parts that decided it
            group = [f for f in pooled if f.verdict is verdict]
            assert f"{verdict} in " in f1
            printed = [cells.printed(f) for f in group]
            for role in {p.role for p in printed}:
                parts = [p for p in printed if p.role is role]
                assert voice.sized_range(parts, interval=verdict is UNRESOLVED) in f1
        assert " times" not in f1
        lines.append(f1)
        # a check whose conditions the store lacks (the answer-scored ones) says so and what computes it
        split = _line(summary, "S")
        assert "none of its conditions" in split and "`python -m analysis run" in split
        assert summary.startswith("**Scope.**")
        assert len(summary.split()) <= 250, len(summary.split())
        # the checks outside the lead follow the matrix, each once
        others = text_of(sections.other_claims(page))
        assert "**F2** " in others and "**F2** " not in summary and "**F1** " not in others
        # a lead check without a cell is said there too (the first page words only what has cells)
        assert _line(others, "S") == split
    assert lines[0] != lines[1]  # None CoT's nuclear norms three times as large: another sentence


def test_the_lead_groups_are_the_checks_declared_to_lead():
    assert reproduction.lead_groups(checks.all_ids()) == [("F1", "S"), ("A3", "A5"), ("F3", "G1")]
    assert reproduction.lead_groups(("F1", "F2", "G1")) == [("F1",), ("G1",)]  # cut to the page's checks


def _cells(verdict, sizes, *, bound=1.0):
    """One F1 cell per (size, interval factor) whose headline part decides ``verdict``."""
    made = [ratio_part(v, f, bound=bound) for v, f in sizes]
    return [finding("F1", verdict, parts=(p,)) for p in made]


def test_an_undecided_cell_gives_its_interval_and_how_many_instructions_would_decide_it():
    found = _cells(UNRESOLVED, [(1.2, 1.5)]) + _cells(HOLDS, [(4.0, 2.0), (15.0, 2.0)])
    needed = voice.instructions(found[0].instructions_needed())
    assert needed.startswith("about ")
    assert reproduction.verdict_phrase("F1", found) == (
        "holds in 2 of 3 (x4.00 to x15.0), not resolved in 1 "
        f"(x1.20 [x0.800, x1.80]; {needed} instructions per dataset would decide)"
    )
    every = _cells(HOLDS, [(4.0, 2.0), (15.0, 2.0)])
    assert reproduction.verdict_phrase("F1", every) == "holds in both cells (x4.00 to x15.0)"
    none = _cells(FAILS, [(0.4, 1.1), (0.9, 1.1), (1.1, 1.1)], bound=2.0)
    assert reproduction.verdict_phrase("F1", none) == "does not hold in any of the 3 cells (x0.400 to x1.10)"


def test_a_cell_decided_by_another_part_than_the_headline_gives_that_part_in_the_claim_s_words():
    gap = ratio_part(4.0, 1.2)
    found = [
        finding("F1", FAILS, parts=(gap, ratio_part(v, 1.05, role=roles.EARLY_LATE, name="early / late of that ratio")))
        for v in (0.38, 0.69)
    ]
    assert [cells.printed(f) for f in found] == [f.part(roles.EARLY_LATE) for f in found]
    assert reproduction.verdict_phrase("F1", found) == (
        "does not hold in either cell (more so in early layers: x0.380 to x0.690)"
    )
    alone = found[1:]  # a size near 1 alone is a ratio too
    assert reproduction.verdict_phrase("F1", alone) == "does not hold in 1 of 1 (more so in early layers: x0.690)"


def test_a_pooled_cell_whose_datasets_disagree_says_so():
    pooled = finding("F1", HOLDS, parts=(ratio_part(2.0, 1.2),))
    aqua = finding("F1", HOLDS, scope="aqua", pooled=False, parts=(ratio_part(5.54, 1.2),))
    gsm8k = finding("F1", FAILS, scope="gsm8k", pooled=False, parts=(ratio_part(0.71, 1.1),))
    every = [pooled, aqua, gsm8k]
    assert [d for d, _ in cells.disagreeing(pooled, every)] == ["aqua", "gsm8k"]
    sentence = reproduction.claim_sentence("F1", [pooled], every)
    assert sentence == (
        f"**F1** {checks.get('F1').plain}: holds in 1 of 1 (x2.00); its datasets point opposite ways in m math "
        "reasoning (aqua x5.54, gsm8k x0.710)."
    )
    agreeing = [pooled, aqua, finding("F1", HOLDS, scope="gsm8k", pooled=False, parts=(ratio_part(3.0, 1.2),))]
    assert cells.disagreeing(pooled, agreeing) == [] and "disagree" not in reproduction.claim_sentence(
        "F1", [pooled], agreeing
    )


def test_the_summaries_print_a_family_whose_datasets_disagree_with_each_dataset_s_size():
    from made_findings import family_cells

    found = family_cells("F1", {"aqua": 1.0, "gsm8k": -1.2})
    sizes = "aqua x2.72 larger, gsm8k x0.301 smaller"
    assert cells.apart(found[0]) == sizes and cells.apart(found[1]) == ""
    assert cells.disagreeing(found[0], found) == []  # said once, by the verdict
    assert (
        reproduction.verdict_phrase("F1", found[:1]) == f"the datasets disagree in 1 of 1 (m math reasoning: {sizes})"
    )
    assert reproduction.claim_sentence("F1", found[:1], found).endswith(f"(m math reasoning: {sizes}).")
    assert f"the datasets disagree for math reasoning (pooled) ({sizes}; n = 24)" in verdicts.model_paragraph(
        found, "m"
    )
    assert "the datasets disagree on F1 in 1 of 1 cells" in verdicts.plain_summary(found)
    assert voice.verdict_counts(f.verdict for f in found) == "1 holds, 1 does not hold, 1 where the datasets disagree"


def test_the_ends_of_a_range_read_in_one_style():
    """A range whose ends fall on both sides of the "x" threshold is written in "x" throughout."""
    found = _cells(UNRESOLVED, [(0.83, 16.6), (0.95, 1.2)])
    assert (
        reproduction.verdict_phrase("F1", found)
        == "not resolved in both cells (x0.830 [x0.0500, x13.8] to x0.950 [x0.792, x1.14])"
    )


def test_the_claims_table_sizes_a_claim_by_its_headline_part_in_one_unit():
    """Whatever part decided a cell's colour, the first page's table gives the claim's own number: F1's
    gap in times over the model's cells, never the early/late part that kept a cell from holding."""
    held = finding("F1", HOLDS, parts=(ratio_part(4.0, 1.2), ratio_part(1.5, 1.05, role=roles.EARLY_LATE)))
    failed = finding(
        "F1",
        FAILS,
        scope="commonsense_reasoning",
        parts=(ratio_part(8.3, 1.2), ratio_part(0.38, 1.05, role=roles.EARLY_LATE, name="early / late")),
    )
    table = reproduction.claims_table([held, failed])
    row = table[table["the paper's claim"] == checks.get("F1").plain].iloc[0]
    # a claim of two parts, part by part, each verdict with the scopes it holds for
    assert row["this study"] == (
        "larger: reproduces; more so in early layers: holds on math reasoning, does not hold on commonsense reasoning"
    )
    assert row["size"] == "x4.00 to x8.30"
    # more cells than a row can name: counted
    many = [
        finding("F1", HOLDS, scope=s, pooled=False, parts=(ratio_part(4.0, 1.2),)) for s in ("aqua", "gsm8k", "ecqa")
    ]
    many.append(finding("F1", UNRESOLVED, scope="creak", pooled=False, parts=(ratio_part(1.1, 1.5),)))
    assert reproduction.claims_table(many).iloc[0]["this study"] == "holds in 3 of 4 cells"
    # a number that is not a ratio says how it reads
    rough = part(-0.07, role=checks.get("F2").headline, sd=0.01, unit=Unit.DIFFERENCE)
    f2 = finding("F2", FAILS, parts=(rough,))
    assert reproduction.claims_table([f2]).iloc[0]["size"] == "-0.0700 (a difference; 0: none)"
