"""What a reader sees first under a verdict matrix: at most three plain sentences generated from
the cells, everything else folded; the pooled answers one row per part of a claim."""

import dataclasses
import re
from xml.etree import ElementTree

import numpy as np
import pytest
from made_findings import finding, part, ratio_part, verdict_part
from synthetic import MODELS, make_results
from test_report import CONDITIONS, paper_like

from analysis import checks
from analysis.findings import roles
from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.rules import FAILS, HOLDS, NOT_APPLICABLE, UNRESOLVED
from analysis.report import cells, display, figures, sections, verdicts, voice


@pytest.fixture(scope="module")
def found():
    rows = make_results(CONDITIONS, MODELS, n_samples=12, curve=paper_like, noise=0.02, sample_sd=0.1, seed=1)
    draws = all_curve_draws(rows, list(MODELS), ("nuclear_norm", "sigma1_ratio", "effective_rank"), n_resamples=200)
    return checks.run_checks(draws)


def _cells(rows):
    return [finding(c, v) for c, v in rows]


def test_the_plain_summary_counts_what_holds_fails_and_is_undecided():
    table = _cells(
        [("F1", "holds"), ("F1", "holds"), ("F2", "does not hold"), ("F3", "not resolved"), ("F3", "too few samples")]
        + [("F4", "not applicable")]
    )
    text = verdicts.plain_summary(table)
    sentences = [s for s in re.split(r"(?<=\.) ", text) if s]
    assert len(sentences) == 3
    assert sentences[0] == "Pooled over each family of datasets, these claims hold: F1 in 2 of 2 cells."
    assert sentences[1] == "These do not hold: F2 in 1 of 1 cells."
    assert sentences[2] == "These sample sizes leave 2 of the 5 tested cells open; F4 does not apply to these models."


def test_the_plain_summary_on_nothing_decided():
    text = verdicts.plain_summary(_cells([("F3", "not resolved")]))
    assert text.startswith("Pooled over each family of datasets, no claim holds in any cell. No claim is contradicted.")


def test_the_plain_summary_of_real_findings_is_three_short_sentences(found):
    text = verdicts.plain_summary(found)
    assert len(re.findall(r"\.(?: |$)", text)) == 3 and len(text.split()) <= 80
    for check in {f.check for f in found if f.pooled and f.verdict is HOLDS}:
        assert check in text.split(";")[0]


def test_the_pooled_answers_are_one_row_per_part(found):
    shown = verdicts.parts_frame(found, pooled_only=True)
    assert list(shown.columns[:8]) == [
        "model",
        "check",
        "scope",
        "verdict",
        "part",
        "estimate [95% interval]",
        "claim",
        "decides",
    ]
    pooled = [f for f in found if f.pooled]
    with_parts = [f for f in pooled if f.parts and f.not_applicable is None]
    assert len(shown) == sum(len(f.parts) for f in with_parts) + (len(pooled) - len(with_parts))
    assert set(shown["scope"]) == {"math reasoning (pooled)", "wiki"} & set(shown["scope"])
    row = shown[shown["decides"] == "yes"].iloc[0]
    assert re.fullmatch(r"\S+ \[\S+, \S+\]", row["estimate [95% interval]"]) and row["claim"].split()[0] in (
        "above",
        "below",
        "within",
    )
    assert "numbers" not in shown.columns


def test_a_folded_list_stays_a_list():
    html = display.markdown_html("- **F1**: a `code` claim\n- **F2**: another")
    assert (
        html
        == "<ul>\n<li><strong>F1</strong>: a <code>code</code> claim</li>\n<li><strong>F2</strong>: another</li>\n</ul>"
    )


def test_a_list_of_claims_says_each_in_plain_words_and_links_its_rule_folded_or_not():
    text = verdicts.claims_text(("F1", "L2"))
    assert text.splitlines() == [
        "The paper's claims:",
        "",
        f"- **F1**: {checks.get('F1').plain} ([rule](../checks.html#check-f1)).",
        "",
        "Beyond the paper:",
        "",
        f"- **L2**: {checks.get('L2').plain} ([rule](../checks.html#check-l2)).",
    ]  # two lists, none longer than a reader scans
    assert verdicts.claims_text(("F1", "F2")).startswith("- **F1**")
    assert checks.get("F1").claim not in text
    html = display.markdown_html(text)
    assert html.count('<a href="../checks.html#check-') == 2 and "[rule]" not in html


def test_the_matrix_details_line_is_short():
    assert len(sections.MATRIX_DETAILS.split()) <= 10


def ten_times_faster(model, dataset, setting, responses, proj, layers):
    """None CoT ten times Detailed CoT over the layers (geometric mean), more so early than late."""
    if setting != "none":
        return np.ones(len(layers))
    return 10.0 * np.exp(0.05 * (layers.mean() - layers))


@pytest.fixture(scope="module")
def ten_times():
    conditions = [(d, s, "correct") for d in ("aqua", "gsm8k") for s in ("none", "detailed")]
    rows = make_results(conditions, {"m": ("base", 18)}, n_samples=12, curve=ten_times_faster, sample_sd=0.1)
    return checks.run_checks(all_curve_draws(rows, ["m"], ("nuclear_norm",), n_resamples=200), ["F1"])


def test_a_matrix_cell_prints_the_size_that_decided_it_and_its_title_each_part(ten_times):
    found = ten_times
    table = figures.verdict_cells(found)
    pooled = next(f for f in found if f.pooled)
    cell = table[table["pooled"]].iloc[0]
    printed = cells.printed(pooled)
    assert cell["verdict"] == "holds" and printed is pooled.part(roles.F1_GAP)
    assert printed.name == "None / Detailed (all layers)"
    assert 9 < printed.shown()[0] < 11 and cell["text"] == voice.sized(printed, interval=False)
    assert cell["text"].startswith("x") and not cell["text"].endswith(" x")
    value, low, high = printed.shown()
    times = voice.reads_as_times([value, low, high])
    interval = f"[{voice.size(low, printed.unit, times=times)}, {voice.size(high, printed.unit, times=times)}]"
    early = pooled.part(roles.EARLY_LATE)
    beside = ", ".join(f"{voice.part_label(p)} {voice.sized(p)}" for p in pooled.parts if not p.decides)
    assert cell["title"] == (
        f"F1, math reasoning (pooled): holds; larger: holds, {voice.size(value, printed.unit)} {interval}; "
        f"more so in early layers: holds, {voice.sized(early)}; beside: {beside}; n = {pooled.n}"
    )
    assert "paper's mean nuclear norm: None / Detailed (all layers)" in beside
    assert "its datasets point opposite ways" not in cell["title"]  # both datasets ten times faster
    svg = ElementTree.fromstring(figures.verdict_svg(found))
    titles = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert sorted(titles) == sorted(table["title"]) and len(titles) == len(found)
    assert svg.get("aria-label") == figures.matrix_label(table) and svg.get("aria-label").startswith("Verdict matrix")


def test_every_cell_prints_its_deciding_size_grey_ones_too_and_n_only_without_one():
    paper = part(0.5, role=roles.F3_GAP, paper=True, decides=False, opposite=True)
    unsized = part(0.1, role=roles.F1_GAP)
    unsized = dataclasses.replace(unsized, estimate=None)
    table = [
        finding("F4", NOT_APPLICABLE, scope="aqua", pooled=False),
        finding("F1", "too few samples", scope="aqua", pooled=False),
        finding(
            "F3",
            UNRESOLVED,
            scope="aqua",
            pooled=False,
            parts=(verdict_part(UNRESOLVED, role=roles.F3_GAP), paper),
        ),
        finding("F1", UNRESOLVED, scope="gsm8k", pooled=False, parts=(unsized,)),
    ]
    shown = figures.verdict_cells(table)
    few, open_ = cells.printed(table[1]), cells.printed(table[2])
    assert list(shown["text"]) == [
        "n/a",
        voice.sized(few, interval=False),  # a grey cell prints its size, not "n=3"
        voice.sized(open_, interval=False) + "±",
        "n=0",  # no size: its n
    ]
    assert shown["text"].iloc[1] == "x4.00" and shown["text"].iloc[2] == "x1.11±"
    titles = list(shown["title"])
    assert titles[0] == "F4, aqua: not applicable; m is not an instruct model; n = 0"
    assert titles[1].startswith("F1, aqua: too few samples; larger: ")
    assert titles[1].endswith(f", {voice.sized(few)}; n = 3")
    opened = f"F3, aqua: not resolved; irrelevant larger under Detailed CoT: not resolved, {voice.sized(open_)}; "
    assert titles[2].startswith(opened + "beside: ")
    assert titles[2].endswith(
        "; n = 12; ± the paper's mean nuclear norm and the geometric mean point opposite ways (one ratio above 1, the other below)"
    )


def test_a_pooled_cell_s_title_names_its_datasets_where_they_lie_on_opposite_sides():
    pooled = finding("F1", HOLDS, parts=(ratio_part(2.0, 1.2),))
    aqua = finding("F1", HOLDS, scope="aqua", pooled=False, parts=(ratio_part(5.54, 1.2),))
    gsm8k = finding("F1", "does not hold", scope="gsm8k", pooled=False, parts=(ratio_part(0.71, 1.1),))
    table = figures.verdict_cells([pooled, aqua, gsm8k])
    title = table["title"].iloc[0]
    assert title == (
        f"F1, math reasoning (pooled): holds; larger: holds, {voice.sized(pooled.parts[0])}; "
        "its datasets point opposite ways: aqua x5.54, gsm8k x0.710; n = 12"
    )
    assert "disagree" not in table["title"].iloc[1] and "disagree" not in table["title"].iloc[2]


def test_a_family_whose_datasets_disagree_is_purple_and_prints_each_dataset_s_size():
    """+1.0 and -1.2 (x2.72 and x0.301): the family's cell is neither a mean near 1 nor "about the same"."""
    from made_findings import family_cells

    from analysis.findings.rules import DISAGREE
    from analysis.report import plots

    found = family_cells("F1", {"aqua": 1.0, "gsm8k": -1.2})
    assert [f.verdict for f in found] == [DISAGREE, HOLDS, FAILS]
    table = figures.verdict_cells(found)
    assert list(table["text"]) == ["x2.72\nx0.301", "x2.72", "x0.301"]
    part = found[0].parts[0]
    assert table["title"].iloc[0] == (
        "F1, math reasoning (pooled): the datasets disagree; larger: the datasets disagree, "
        f"{voice.sized(part)} ({voice.dataset_sizes(part, interval=True)}); n = 24"
    )
    assert "aqua x2.72 [" in table["title"].iloc[0] and "] larger, gsm8k x0.301 [" in table["title"].iloc[0]
    colour = plots.VERDICT_COLOURS[DISAGREE]
    assert colour not in [c for v, c in plots.VERDICT_COLOURS.items() if v is not DISAGREE]
    assert DISAGREE.value in figures.verdict_svg(found)  # in the legend where a cell has it
    assert DISAGREE.value not in figures.verdict_svg(found[1:])
    assert "A purple cell (the datasets disagree)" in verdicts.matrix_note(found, profile=None, note=None)


def test_the_fold_says_what_a_cell_prints_and_gives_n_per_cell(ten_times):
    found = ten_times
    note = verdicts.matrix_note(found, profile="test", note=None)
    assert note.startswith("Number in a cell: the size of the part that decided its colour: its check's headline part")
    assert "Hovering over a cell" in note and "the table below gives n" in note and "Profile: test." in note
    counts = figures.instruction_counts(found)
    assert list(counts.columns) == ["model", "check", "math reasoning (pooled)", "aqua", "gsm8k"]
    by_scope = {f.scope: f.n for f in found}
    assert counts.iloc[0].tolist() == ["m", "F1", *[str(by_scope[s]) for s in ("math_reasoning", "aqua", "gsm8k")]]


def test_no_cell_prints_a_size_that_did_not_decide_its_colour():
    """In the default profile's design (every check, both models, 5 samples): a red cell prints a part
    whose interval is not on its claim's side, a grey one a part neither on it nor against it, a
    green one a part on it; the text is that part's size and the hover title gives it with its
    interval and its own verdict, beside every other deciding part."""
    from synthetic import cpu_design_findings

    found = [f for f in cpu_design_findings() if f.verdict in (HOLDS, FAILS, UNRESOLVED)]
    table = figures.verdict_cells(found)
    assert {HOLDS, FAILS, UNRESOLVED} <= {f.verdict for f in found}
    for found_cell, (_, cell) in zip(found, table.iterrows()):
        shown = cells.printed(found_cell)
        assert cells.part_verdict(shown, found_cell) is found_cell.verdict, (found_cell.check, found_cell.scope)
        assert shown.supports() is (found_cell.verdict is HOLDS)  # a red or grey cell's interval is not on its side
        assert cell["text"].removesuffix("±") == voice.sized(shown, interval=False)
        assert f"{cells.part_verdict(shown, found_cell)}, {voice.sized(shown)}" in cell["title"]
        for deciding in found_cell.deciding:
            assert voice.sized(deciding) in cell["title"]
