import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from synthetic import make_results, reasoning_conditions

from analysis.findings.bootstrap import all_curve_draws
from analysis.findings.metrics import layer_curves
from analysis.report.figures import curves_and_bands
from analysis.report.plots import (
    COLUMN_INCHES,
    MATRIX_FONT,
    cell_titles,
    condition_title,
    curve_grid,
    forest,
    model_grid,
    titled_svg,
    verdict_matrix,
)

CONDITIONS = ["aqua/none/correct", "aqua/simplified/correct", "aqua/detailed/correct"]


@pytest.fixture(scope="module")
def results():
    return make_results(reasoning_conditions("aqua"), n_samples=4)


@pytest.fixture(scope="module")
def curves(results):
    return pd.concat([layer_curves(results, s) for s in ("nuclear_norm", "sigma1_ratio", "effective_rank")])


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_nuclear_norm_figure_grid_and_lines(curves):
    fig = curve_grid(curves, "base-model", CONDITIONS, ("nuclear_norm", "sigma1_ratio"), note="synthetic numbers")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2 * 3
    for ax in fig.axes:
        assert [line.get_label() for line in ax.get_lines()] == ["Q", "K", "V", "O"]
        assert [line.get_color() for line in ax.get_lines()] == ["r", "g", "b", "gray"]
    assert fig.axes[0].get_title() == "aqua: None CoT"
    assert fig.axes[3].get_ylabel() == "s1 / nuclear norm"
    assert any(t.get_text() == "synthetic numbers" for t in fig.texts)


def test_nuclear_norm_figure_bands(results, curves):
    _, bands = curves_and_bands(
        all_curve_draws(results[results.condition.isin(CONDITIONS)], ["base-model"], ("nuclear_norm",), n_resamples=100)
    )
    fig = curve_grid(curves, "base-model", CONDITIONS, ("nuclear_norm",), bands=bands)
    assert len(fig.axes) == 3
    for ax in fig.axes:
        assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 4


def test_effective_rank_figure_and_missing_condition(curves):
    fig = curve_grid(
        curves, "base-model", CONDITIONS + ["aqua/none/irrelevant", "gsm8k/none/correct"], ("effective_rank",)
    )
    assert len(fig.axes) == 5
    assert len(fig.axes[0].get_lines()) == 4
    assert len(fig.axes[4].get_lines()) == 0  # no data for gsm8k
    assert fig.axes[3].get_title() == "aqua: None CoT (irrelevant)"


def test_condition_title():
    assert condition_title("wiki/len1000/correct") == "wiki: Wiki ~1000 words"


def test_model_grid_one_row_per_model():
    two = make_results(
        reasoning_conditions("aqua"), n_samples=3, models={"base-model": ("base", 18), "chat-model": ("instruct", 30)}
    )
    curves = layer_curves(two, "nuclear_norm")
    fig = model_grid(curves, ["base-model", "chat-model"], CONDITIONS[:2], note="two families")
    assert len(fig.axes) == 2 * 2
    assert [len(line.get_xdata()) for line in fig.axes[0].get_lines()] == [18] * 4
    assert [len(line.get_xdata()) for line in fig.axes[2].get_lines()] == [30] * 4
    assert fig.axes[2].get_ylabel().startswith("chat-model")
    assert any(t.get_text() == "two families" for t in fig.texts)


def test_verdict_matrix_colours_each_covered_cell():
    table = pd.DataFrame(
        {
            "model": ["a", "a", "b"],
            "check": ["F1", "F2", "F1"],
            "scope": ["math_reasoning", "aqua", "aqua"],
            "verdict": ["holds", "does not hold", "too few samples"],
            "n": [10, 5, 3],
        }
    )
    fig = verdict_matrix(
        table, ["F1", "F2"], ["math_reasoning", "aqua"], scope_labels={"math_reasoning": "math (pooled)"}
    )
    assert len(fig.axes) == 2
    assert len(fig.axes[0].patches) == 2 and len(fig.axes[1].patches) == 1
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["math (pooled)", "aqua"]
    assert fig.axes[0].patches[0].get_facecolor()[:3] != fig.axes[0].patches[1].get_facecolor()[:3]


def test_verdict_matrix_marks_a_check_that_does_not_apply():
    table = pd.DataFrame(
        {
            "model": ["a", "a"],
            "check": ["F3", "F4"],
            "scope": ["aqua", "aqua"],
            "verdict": ["not resolved", "not applicable"],
            "n": [5, 5],
        }
    )
    fig = verdict_matrix(table, ["F3", "F4"], ["aqua"])
    unresolved, not_applicable = fig.axes[0].patches
    assert not_applicable.get_hatch() and not unresolved.get_hatch()  # a mark, not a shade of grey
    assert not_applicable.get_facecolor()[:3] != unresolved.get_facecolor()[:3]
    assert "n/a" in [t.get_text() for t in fig.axes[0].texts]
    assert "not applicable" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_verdict_matrix_prints_each_cells_text_and_n_where_it_has_none():
    table = pd.DataFrame(
        {
            "model": ["a", "a", "a"],
            "check": ["F1", "F2", "F4"],
            "scope": ["aqua", "aqua", "aqua"],
            "verdict": ["holds", "not resolved", "not applicable"],
            "n": [10, 5, 5],
            "opposite_sign": [False, True, False],
            "text": ["x10.4", None, None],
        }
    )
    fig = verdict_matrix(table, ["F1", "F2", "F4"], ["aqua"])
    assert [t.get_text() for t in fig.axes[0].texts] == ["x10.4", "5±", "n/a"]
    assert min(t.get_fontsize() for t in fig.axes[0].texts) >= 8


def test_the_matrix_as_svg_has_one_title_per_cell_and_scales_to_its_column():
    from xml.etree import ElementTree

    table = pd.DataFrame(
        {
            "model": ["a", "a", "b"],
            "check": ["F1", "F4", "F1"],
            "scope": ["aqua", "aqua", "aqua"],
            "verdict": ["holds", "not applicable", "too few samples"],
            "n": [10, 5, 3],
            "title": ["F1 holds; n = 10", "F4 does not apply; n = 5", "F1 too few; n = 3"],
        }
    )
    fig = verdict_matrix(table, ["F1", "F4"], ["aqua"])
    svg = titled_svg(fig, cell_titles(table), label="Verdict matrix of F1 and F4")
    root = ElementTree.fromstring(svg)
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert sorted(titles) == sorted(table["title"])
    assert root.get("role") == "img" and root.get("aria-label").startswith("Verdict matrix")
    assert root.get("width") == "100%" and root.get("height") is None and root.get("viewBox")
    assert titled_svg(fig, cell_titles(table), label="Verdict matrix of F1 and F4") == svg  # no date, fixed ids


def test_the_matrix_is_legible_at_its_columns_width():
    scopes = ["math_reasoning", "commonsense_reasoning", "wiki_knowledge", *[f"d{k}" for k in range(10)]]
    table = pd.DataFrame(
        {"model": "a", "check": "F1", "scope": scopes, "verdict": "holds", "n": 1000, "text": "x10.4±"}
    )
    fig = verdict_matrix(table, ["F1", "F2", "F3"], scopes)
    assert fig.get_size_inches()[0] <= COLUMN_INCHES  # drawn no wider than the column: never shrunk
    assert min(MATRIX_FONT.values()) >= 8


def test_forest_one_row_per_estimate():
    table = pd.DataFrame(
        {"label": ["x", "y"], "value": [0.6, 0.4], "low": [0.55, 0.2], "high": [0.7, 0.6], "group": ["a", "b"]}
    )
    fig = forest(table, reference=0.5, x_label="AUROC")
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y"]
    assert ax.get_xlabel() == "AUROC"


def test_a_matrix_of_one_check_over_many_scopes_keeps_its_layout_without_a_warning():
    """The pre-trained vs instruct page's matrix: one row (F4) over every scope; matplotlib
    would warn that tight layout was not applied (printed on the page) were the figure too short."""
    import warnings

    from made_findings import finding

    from analysis.core import vocabulary
    from analysis.report import figures

    scopes = [*vocabulary.FAMILY_DATASETS, *vocabulary.REASONING_DATASETS]
    found = [finding("F4", "not applicable", scope=s, pooled=s in vocabulary.FAMILY_DATASETS) for s in scopes]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert figures.verdict_svg(found).startswith("<svg")


def test_every_verdict_has_its_colour_keyed_on_the_verdict_itself():
    from analysis.findings.rules import Verdict
    from analysis.report import plots

    assert list(plots.VERDICT_COLOURS) == list(Verdict) and set(plots.VERDICT_HATCHES) <= set(Verdict)
    assert all(isinstance(v, Verdict) for v in (*plots.VERDICT_COLOURS, *plots.VERDICT_HATCHES))
